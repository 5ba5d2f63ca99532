// A second process on a remote compile cache, for redis_cache_test:
//
//   cache_probe URL get KEY        prints "hit <sha256 of the payload>" or
//                                  "miss"
//   cache_probe URL put KEY TEXT   stores TEXT under KEY, prints "stored"
//
// Exits 1 with the error on stderr when the cache refuses.

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "runtime/checksum.h"
#include "runtime/redis_cache.h"

int main(int argc, char** argv) {
  using ::lathe::CacheHit;
  using ::lathe::RedisCache;
  if (argc < 4) {
    std::fprintf(stderr, "usage: cache_probe URL get KEY | URL put KEY TEXT\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<RedisCache>> cache =
      RedisCache::Create(argv[1]);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    return 1;
  }
  if (std::strcmp(argv[2], "get") == 0) {
    absl::StatusOr<std::optional<CacheHit>> hit = (*cache)->Get(argv[3]);
    if (!hit.ok()) {
      std::fprintf(stderr, "%s\n", hit.status().ToString().c_str());
      return 1;
    }
    if (*hit) {
      std::printf("hit %s\n", lathe::Sha256Hex((*hit)->bytes).c_str());
    } else {
      std::printf("miss\n");
    }
    return 0;
  }
  if (std::strcmp(argv[2], "put") == 0 && argc == 5) {
    absl::Status s = (*cache)->Put(argv[3], argv[4]);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("stored\n");
    return 0;
  }
  std::fprintf(stderr, "cache_probe: unknown command %s\n", argv[2]);
  return 2;
}
