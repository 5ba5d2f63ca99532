// -----------------------------------------------------------------------------
// File: cache_backend.h
// -----------------------------------------------------------------------------
//
// What every tier of the compile cache (runtime/compile_cache.h: memory,
// disk; runtime/redis_cache.h: Redis) is: a map from a content address (a
// SHA-256 as 64 lowercase hex digits) to the bytes of a compiled .so, and
// the one format an entry has wherever it is stored outside memory: a
// header line naming the format version, the key, the payload's size and
// its SHA-256, then the payload. An entry that does not decode whole
// (damaged, truncated, written for another key or format) is a miss, never
// a wrong .so.
//
// Example:
//
//   RETURN_IF_ERROR(ValidateCacheKey(key));
//   std::string entry = EncodeCacheEntry(key, so_bytes);
//   ASSIGN_OR_RETURN(std::string payload, DecodeCacheEntry(key, entry));
//
//   ASSIGN_OR_RETURN(std::optional<CacheHit> hit, cache.Get(key));
//   if (hit) Use(hit->bytes);   // hit->tier: "memory", "disk" or "redis"

#ifndef LATHE_RUNTIME_CACHE_BACKEND_H_
#define LATHE_RUNTIME_CACHE_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

// The format of a stored entry (the number in its header line).
inline constexpr int kCacheEntryFormat = 1;
// The longest header line an entry may start with.
inline constexpr int64_t kMaxCacheEntryHeaderBytes = 256;

// A cache's answer to a Get that found the key.
struct CacheHit {
  std::string bytes;  // the payload Put stored
  std::string tier;   // the name() of the backend that held it
};

// A compile cache, or one tier of one. Thread-safe in every implementation.
class CacheBackend {
 public:
  virtual ~CacheBackend() = default;

  // Get()
  //
  // The payload stored under `key`, or nullopt on a miss (absent, damaged,
  // too large, or the backend unreachable); an error only for a malformed
  // key.
  virtual absl::StatusOr<std::optional<CacheHit>> Get(
      absl::string_view key) = 0;

  // Put()
  //
  // Stores `bytes` under `key`, replacing what was there; an error for a
  // malformed key, an entry over the backend's size cap, or a failed write
  // (an unreachable remote is not an error: it is a no-op).
  virtual absl::Status Put(absl::string_view key, absl::string_view bytes) = 0;

  // The tier's name as CacheHit::tier reports it ("memory", "disk", ...).
  virtual std::string name() const = 0;
};

// ValidateCacheKey()
//
// OK when `key` is 64 lowercase hex digits (a SHA-256), the only keys a
// backend accepts, so no key can name a path outside a cache directory.
absl::Status ValidateCacheKey(absl::string_view key);

// EncodeCacheEntry()
//
// The stored form of `payload` under `key`: the header line
// "lathe-cache-entry <format> <key> <size> <sha256>\n", then the payload.
std::string EncodeCacheEntry(absl::string_view key, absl::string_view payload);

// DecodeCacheEntry()
//
// The payload of `entry` if it is a whole entry of this format for `key`;
// otherwise a DataLoss error saying what is wrong with it.
absl::StatusOr<std::string> DecodeCacheEntry(absl::string_view key,
                                             absl::string_view entry);

// CacheEntryTooLarge()
//
// The ResourceExhausted error of a Put whose `bytes` exceed `tier`'s cap.
absl::Status CacheEntryTooLarge(absl::string_view tier, int64_t bytes,
                                int64_t cap);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CACHE_BACKEND_H_
