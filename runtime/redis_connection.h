// -----------------------------------------------------------------------------
// File: redis_connection.h
// -----------------------------------------------------------------------------
//
// The byte stream under the compile cache's remote tier (redis_cache.h): a
// TCP connection to a Redis server, plain (redis://) or TLS through OpenSSL
// (rediss://), where every wait is bounded. The TCP connect has its own
// timeout; every later wait for the socket (a handshake step, a read, a
// write) has a per-wait timeout and a caller's deadline, whichever comes
// first. Writes never raise SIGPIPE. TLS is 1.2 or later, and the server's
// certificate must chain to a trusted CA (the system's trust store, or the
// PEM file RedisTlsOptions::ca_file names) and name the host dialled (a
// DNS name, sent as SNI too, or an IPv4 address); a server that asks for a
// client certificate gets RedisTlsOptions::cert_file. A TLS connection
// never falls back to plaintext.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const RedisTlsContext> tls,
//                    RedisTlsContext::Create({.ca_file = "ca.pem"}));
//   ASSIGN_OR_RETURN(std::unique_ptr<RedisConnection> c,
//                    RedisConnection::Connect("cache-1", 6380, tls.get(),
//                                             timeouts));
//   RETURN_IF_ERROR(c->Write("*1\r\n$4\r\nPING\r\n", deadline));
//   ASSIGN_OR_RETURN(size_t n, c->Read(buf, sizeof(buf), deadline));

#ifndef LATHE_RUNTIME_REDIS_CONNECTION_H_
#define LATHE_RUNTIME_REDIS_CONNECTION_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct ssl_st;
struct ssl_ctx_st;

namespace lathe {

// What a TLS client trusts and shows (redis-cli's --cacert, --cert, --key).
struct RedisTlsOptions {
  // PEM file of the CAs that sign servers' certificates; "" for the
  // system's trust store.
  std::string ca_file;
  // PEM files of a client certificate (its chain) and its private key, for
  // servers that ask for one (mutual TLS); both or neither.
  std::string cert_file;
  std::string key_file;
};

// An OpenSSL client context, loaded once and shared by connections.
class RedisTlsContext {
 public:
  // Create()
  //
  // A TLS 1.2+ client context that verifies servers against `options`'
  // CAs and offers its client certificate; an InvalidArgument error naming
  // a file that cannot be read or loaded, or a certificate without its key.
  static absl::StatusOr<std::shared_ptr<const RedisTlsContext>> Create(
      const RedisTlsOptions& options);

  RedisTlsContext(const RedisTlsContext&) = delete;
  RedisTlsContext& operator=(const RedisTlsContext&) = delete;
  ~RedisTlsContext();

  ssl_ctx_st* ctx() const { return ctx_; }

 private:
  explicit RedisTlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

class RedisConnection {
 public:
  struct Timeouts {
    // The TCP connect (every address the host name has, together).
    absl::Duration connect = absl::Milliseconds(200);
    // Each later wait for the socket to be readable or writable.
    absl::Duration io = absl::Milliseconds(200);
    // The TLS handshake in all.
    absl::Duration handshake = absl::Seconds(5);
  };

  // Connect()
  //
  // A connection to `host`:`port`, over TLS when `tls` is not null (the
  // handshake done and the server's certificate verified); an Unavailable
  // error saying what failed otherwise (for TLS, OpenSSL's reason).
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(
      const std::string& host, int port, const RedisTlsContext* tls,
      const Timeouts& timeouts);

  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;
  ~RedisConnection();

  // Write()
  //
  // Sends all of `bytes`; a DeadlineExceeded error when a wait runs past
  // the io timeout or `deadline`, an Unavailable one when the connection
  // fails.
  absl::Status Write(absl::string_view bytes, absl::Time deadline);

  // Read()
  //
  // Receives between 1 and `size` bytes into `buf`; a DeadlineExceeded
  // error when none came within the io timeout or by `deadline`, an
  // Unavailable one when the server closed the connection or it failed.
  absl::StatusOr<size_t> Read(char* buf, size_t size, absl::Time deadline);

  bool tls() const { return ssl_ != nullptr; }

 private:
  RedisConnection(int fd, absl::Duration io_timeout)
      : fd_(fd), io_timeout_(io_timeout) {}

  // The TLS handshake with `host` by `deadline`.
  absl::Status Handshake(const RedisTlsContext& tls, const std::string& host,
                         absl::Time deadline);
  // Runs the OpenSSL call `op` (`what` names it) until it makes progress,
  // waiting for the socket as it asks; its positive result.
  template <typename Op>
  absl::StatusOr<int> SslCall(Op op, absl::string_view what,
                              absl::Time deadline);

  int fd_;
  absl::Duration io_timeout_;
  ssl_st* ssl_ = nullptr;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_REDIS_CONNECTION_H_
