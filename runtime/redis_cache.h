// -----------------------------------------------------------------------------
// File: redis_cache.h
// -----------------------------------------------------------------------------
//
// The compile cache's remote tier: compiled .so files shared by a fleet
// through a Redis server (hiredis), under keys "lathe:<kernel ABI>:<key>",
// stored in EncodeCacheEntry's checksummed format (a damaged or foreign
// value is a miss). Every connect and command has a bounded timeout; when
// the server is down, slow or drops the connection, Get is a miss and Put
// a no-op, one warning goes to stderr (and stays readable through
// warning()), and this object never asks the server again: the local
// tiers carry on. Entries over a size cap are refused by Put and never
// read whole by Get (GETRANGE), however large a value the server holds.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<RedisCache> redis,
//                    RedisCache::Create("redis://10.0.0.5:6379"));
//   ASSIGN_OR_RETURN(std::optional<CacheHit> hit, redis->Get(key));

#ifndef LATHE_RUNTIME_REDIS_CACHE_H_
#define LATHE_RUNTIME_REDIS_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/cache_backend.h"

struct redisContext;

namespace lathe {

// A parsed redis://HOST:PORT.
struct RedisAddress {
  std::string host;
  int port = 0;
};

// ParseRedisUrl()
//
// `url` as redis://HOST:PORT (HOST a name or an IPv4 address, PORT
// 1..65535, nothing after it); an InvalidArgument error saying what is
// wrong otherwise.
absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url);

class RedisCache : public CacheBackend {
 public:
  struct Options {
    absl::Duration connect_timeout = absl::Milliseconds(200);
    absl::Duration command_timeout = absl::Milliseconds(200);
    // The largest stored entry (header + payload) Put writes and Get reads.
    int64_t max_entry_bytes = int64_t{64} << 20;
  };

  // Create()
  //
  // A cache on the server `url` names (see ParseRedisUrl); it connects on
  // first use.
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

  const std::string& url() const { return url_; }

 private:
  RedisCache(std::string url, RedisAddress address, Options options)
      : url_(std::move(url)), address_(std::move(address)), options_(options) {}

  // The live connection, connecting first if needed; null once failed.
  redisContext* Connection() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up on the server for good: frees the connection, records and
  // prints the warning.
  void Fail(absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string url_;
  const RedisAddress address_;
  const Options options_;
  // std::mutex: ThreadSanitizer sees it through pthreads, where the
  // system Abseil is not instrumented.
  mutable std::mutex mu_;
  redisContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  std::string warning_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_REDIS_CACHE_H_
