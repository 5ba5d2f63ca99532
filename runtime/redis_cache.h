// -----------------------------------------------------------------------------
// File: redis_cache.h
// -----------------------------------------------------------------------------
//
// The compile cache's remote tier: compiled .so files shared by a fleet
// through a Redis server, under keys "lathe:<kernel ABI>:<key>", stored in
// EncodeCacheEntry's checksummed format (a damaged or foreign value is a
// miss). With a fleet secret (Options::secret), every entry is signed with
// an HMAC and one without the secret's HMAC (a value SET by hand) is a
// miss, counted, with one warning; without one, the server and everyone
// who can write to it are trusted. A connection can authenticate
// (redis://USER:PASSWORD@HOST:PORT, an ACL user; redis://:PASSWORD@... for
// requirepass) and use TLS (rediss://...: the server's certificate checked
// against Options::tls_ca_file or the system's CAs and the host name, a
// client certificate for mutual TLS; see redis_connection.h). Commands are
// formatted and replies parsed by hiredis; the bytes go through
// RedisConnection. Every connect and command has a bounded timeout, and a
// whole command a bound on its total time; when the server is down, slow,
// drops the connection, fails the TLS handshake, refuses the credentials
// (or asks for some: NOAUTH) or answers out of bounds, Get is a miss and
// Put a no-op, one warning goes to stderr (and stays readable through
// warning()), and this object never asks the server again (nor falls back
// to plaintext): the local tiers carry on. Entries over a size cap are
// refused by Put and never read whole by Get (GETRANGE), and a reply
// announcing more bytes than the cap is refused from its header line,
// before any of it is buffered.
//
// Example:
//
//   RedisCache::Options options;
//   options.tls_ca_file = "/etc/lathe/redis-ca.pem";
//   ASSIGN_OR_RETURN(
//       std::unique_ptr<RedisCache> redis,
//       RedisCache::Create("rediss://lathe:pw@cache-1:6380", options));
//   ASSIGN_OR_RETURN(std::optional<CacheHit> hit, redis->Get(key));

#ifndef LATHE_RUNTIME_REDIS_CACHE_H_
#define LATHE_RUNTIME_REDIS_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/cache_backend.h"
#include "runtime/redis_connection.h"

struct redisReply;

namespace lathe {

// A parsed redis[s]://[USER:PASSWORD@]HOST:PORT.
struct RedisAddress {
  bool tls = false;  // rediss://
  std::string host;
  int port = 0;
  std::string user;      // "" for the default user
  std::string password;  // "" for no AUTH
};

// ParseRedisUrl()
//
// `url` as redis://[[USER]:PASSWORD@]HOST:PORT, or rediss://... for TLS
// (USER and PASSWORD percent-encoded where they hold ':', '@' or '%'; HOST
// a name or an IPv4 address, PORT 1..65535, nothing after it); an
// InvalidArgument error saying what is wrong otherwise (the password never
// in it).
absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url);

// RedactRedisUrl()
//
// `url` with its password, if any, replaced by "***", for messages.
std::string RedactRedisUrl(absl::string_view url);

class RedisCache : public CacheBackend {
 public:
  struct Options {
    // The TCP connect.
    absl::Duration connect_timeout = absl::Milliseconds(200);
    // Each wait for the server to take or send bytes (TLS handshake too).
    absl::Duration command_timeout = absl::Milliseconds(200);
    // The longest one command (or the TLS handshake) may take in all, its
    // reply read whole (a server that trickles a reply is cut off).
    absl::Duration transfer_timeout = absl::Seconds(5);
    // The largest stored entry (header + payload) Put writes and Get reads.
    int64_t max_entry_bytes = int64_t{64} << 20;
    // A fleet's secret: entries are signed, and unsigned ones are misses.
    std::string secret;
    // rediss:// only (an error with redis://): the PEM file of the CAs
    // that sign the server's certificate ("" for the system's), and a
    // client certificate and its key for mutual TLS (both or neither).
    std::string tls_ca_file;
    std::string tls_cert_file;
    std::string tls_key_file;
  };

  // Create()
  //
  // A cache on the server `url` names (see ParseRedisUrl); it connects on
  // first use. An InvalidArgument error for a bad URL, TLS files with a
  // redis:// URL, or TLS files that cannot be loaded.
  static absl::StatusOr<std::unique_ptr<RedisCache>> Create(
      absl::string_view url, Options options);
  static absl::StatusOr<std::unique_ptr<RedisCache>> Create(
      absl::string_view url) {
    return Create(url, Options());
  }

  ~RedisCache() override;

  absl::StatusOr<std::optional<CacheHit>> Get(absl::string_view key) override;
  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  std::string name() const override { return "redis"; }

  // The server key that holds `key`'s entry: "lathe:<kernel ABI>:<key>".
  static std::string RedisKey(absl::string_view key);

  // The one warning printed when the server failed ("" while it has not);
  // from then on this object is local-only.
  std::string warning() const;

  // The URL, its password redacted.
  const std::string& url() const { return url_; }
  // Entries refused for lacking the secret's HMAC, and that warning.
  const CacheEntryCodec& codec() const { return codec_; }

 private:
  RedisCache(std::string url, RedisAddress address, Options options,
             std::shared_ptr<const RedisTlsContext> tls)
      : url_(std::move(url)),
        address_(std::move(address)),
        options_(std::move(options)),
        tls_(std::move(tls)),
        codec_(absl::StrCat("remote compile cache ", url_), options_.secret) {}

  // The live connection, connecting (and authenticating) first if needed;
  // null once failed.
  RedisConnection* Connection() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends one command (`what` names it in the warning) and reads its
  // reply, which is refused (Fail) before it is buffered when its header
  // line announces more than max_entry_bytes + 1 bytes; null after Fail.
  redisReply* Run(RedisConnection* c, int argc, const char** argv,
                  const size_t* lens, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up on the server for good: frees the connection, records and
  // prints the warning.
  void Fail(absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `reply` (to `what`) says these credentials may not run it
  // (NOAUTH, NOPERM); if so, Fail has said so.
  bool Refused(const redisReply* reply, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string url_;
  const RedisAddress address_;
  const Options options_;
  // rediss://: the loaded CAs and client certificate; null for redis://.
  const std::shared_ptr<const RedisTlsContext> tls_;
  CacheEntryCodec codec_;
  // std::mutex: ThreadSanitizer sees it through pthreads, where the
  // system Abseil is not instrumented.
  mutable std::mutex mu_;
  std::unique_ptr<RedisConnection> connection_ ABSL_GUARDED_BY(mu_);
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  std::string warning_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_REDIS_CACHE_H_
