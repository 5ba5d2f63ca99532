// -----------------------------------------------------------------------------
// File: lying_redis_server.h
// -----------------------------------------------------------------------------
//
// A hostile "Redis" for the remote cache's tests: a server on a loopback
// port that answers its first command with a bulk header announcing
// `announced` bytes, then streams up to `stream` bytes of the value,
// `chunk` bytes at a time `pause` apart, for as long as the client reads
// (its send buffer kept small, so what it got out is about what the client
// took). Plaintext (redis://), or TLS (rediss://) with a certificate a test
// made (test_certs.h). ExpectAReplyOverTheCapIsRefusedUnread is the check
// both transports share.
//
// Example:
//
//   LyingRedisServer server({.announced = 3000000000, .stream = 256 << 20});
//   RedisCache::Create(server.url());  // "redis://127.0.0.1:PORT"
//   ... server.sent() ...              // bytes the client took

#ifndef LATHE_RUNTIME_TESTING_LYING_REDIS_SERVER_H_
#define LATHE_RUNTIME_TESTING_LYING_REDIS_SERVER_H_

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "runtime/redis_cache.h"

namespace lathe::testing {

class LyingRedisServer {
 public:
  struct Reply {
    int64_t announced = 0;  // the bulk header's length
    int64_t stream = 0;     // how many bytes of it to send at most
    int64_t chunk = 64 << 10;
    absl::Duration pause = absl::ZeroDuration();
    // Both set: TLS with this certificate chain and key (PEM files).
    std::string tls_cert_file;
    std::string tls_key_file;
  };

  explicit LyingRedisServer(Reply reply);
  LyingRedisServer(const LyingRedisServer&) = delete;
  LyingRedisServer& operator=(const LyingRedisServer&) = delete;
  ~LyingRedisServer();

  // redis://127.0.0.1:PORT, or rediss:// with TLS.
  std::string url() const;
  // The value's bytes the server got out so far.
  int64_t sent() const { return sent_.load(); }

 private:
  // Sends `n` bytes on the connection (TLS when ssl is set); <= 0 when the
  // client has gone.
  int64_t Send(int fd, SSL* ssl, const char* data, int64_t n);

  Reply reply_;
  SSL_CTX* ctx_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int64_t> sent_{0};
  std::thread thread_;
};

// ExpectAReplyOverTheCapIsRefusedUnread()
//
// A cache made with `options` (TLS files included, for a TLS server) on a
// server announcing 3,000,000,000 bytes and streaming 256 MB: a Get misses
// within 2 s with one warning naming the cap, and the server gets out
// nowhere near 256 MB (the reply was refused from its header, unread).
void ExpectAReplyOverTheCapIsRefusedUnread(
    const RedisCache::Options& options,
    const LyingRedisServer::Reply& transport);

}  // namespace lathe::testing

#endif  // LATHE_RUNTIME_TESTING_LYING_REDIS_SERVER_H_
