// -----------------------------------------------------------------------------
// File: cache_backend.h
// -----------------------------------------------------------------------------
//
// What every tier of the compile cache (runtime/compile_cache.h: memory,
// disk; runtime/redis_cache.h: Redis) is: a map from a content address (a
// SHA-256 as 64 lowercase hex digits) to the bytes of a compiled .so, and
// the one format an entry has wherever it is stored outside memory: a
// header line naming the format version, the key, the payload's size, its
// SHA-256 and, under a fleet's secret, an HMAC-SHA256 of those fields
// (which the SHA-256 ties to the payload), then the payload. An entry that
// does not decode whole (damaged, truncated, written for another key or
// format) is a miss, never a wrong .so; so is, when a secret is set, an
// entry without the secret's HMAC (planted, or written by hand): a SHA-256
// detects damage, only the HMAC detects substitution.
//
// Example:
//
//   RETURN_IF_ERROR(ValidateCacheKey(key));
//   std::string entry = EncodeCacheEntry(key, so_bytes, secret);
//   ASSIGN_OR_RETURN(std::string payload,
//                    DecodeCacheEntry(key, entry, secret));
//
//   CacheEntryCodec codec("remote compile cache redis://h:6379", secret);
//   std::optional<std::string> payload = codec.Decode(key, entry);
//
//   ASSIGN_OR_RETURN(std::optional<CacheHit> hit, cache.Get(key));
//   if (hit) Use(hit->bytes);   // hit->tier: "memory", "disk" or "redis"

#ifndef LATHE_RUNTIME_CACHE_BACKEND_H_
#define LATHE_RUNTIME_CACHE_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

// The format of a stored entry (the number in its header line).
inline constexpr int kCacheEntryFormat = 2;
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

  // PrivateDirectory()
  //
  // A directory of this backend's where lathe may keep files a compiler
  // reads in place (a precompiled header): one only this user can write
  // and whose entries are not signed (a file read in place cannot be
  // checked against a secret's HMAC). "" when there is none, the default.
  virtual std::string PrivateDirectory() { return ""; }
};

// ValidateCacheKey()
//
// OK when `key` is 64 lowercase hex digits (a SHA-256), the only keys a
// backend accepts, so no key can name a path outside a cache directory.
absl::Status ValidateCacheKey(absl::string_view key);

// EncodeCacheEntry()
//
// The stored form of `payload` under `key`: the header line
// "lathe-cache-entry <format> <key> <size> <sha256> <hmac>\n", then the
// payload. <hmac> is the HMAC-SHA256 under `secret` of the header line's
// text before it ("lathe-cache-entry ... <sha256>"), or "-" without one.
std::string EncodeCacheEntry(absl::string_view key, absl::string_view payload,
                             absl::string_view secret = "");

// DecodeCacheEntry()
//
// The payload of `entry` if it is a whole entry of this format for `key`;
// otherwise a DataLoss error saying what is wrong with it. With a
// `secret`, an entry whose HMAC is missing or is not the secret's is a
// PermissionDenied error (it was not written by a holder of the secret);
// without one, the HMAC is not looked at.
absl::StatusOr<std::string> DecodeCacheEntry(absl::string_view key,
                                             absl::string_view entry,
                                             absl::string_view secret = "");

// The entry format of one tier stored outside memory, under its secret (if
// any), counting the entries it refuses as untrusted. Thread-safe.
class CacheEntryCodec {
 public:
  // `where` names the tier in its warning ("disk compile cache /c/lathe").
  CacheEntryCodec(std::string where, std::string secret)
      : where_(std::move(where)), secret_(std::move(secret)) {}

  // EncodeCacheEntry under this codec's secret.
  std::string Encode(absl::string_view key, absl::string_view payload) const {
    return EncodeCacheEntry(key, payload, secret_);
  }

  // Decode()
  //
  // The payload, or nullopt: for a damaged entry silently (a Put replaces
  // it), for one without the secret's HMAC counted in untrusted() and, the
  // first time, with one warning on stderr.
  std::optional<std::string> Decode(absl::string_view key,
                                    absl::string_view entry);

  // Whether entries are signed (a secret is set).
  bool signs() const { return !secret_.empty(); }
  // The entries refused for a missing or wrong HMAC so far.
  int64_t untrusted() const { return untrusted_.load(); }
  // The warning printed for the first of them ("" before it).
  std::string warning() const;

 private:
  const std::string where_;
  const std::string secret_;
  std::atomic<int64_t> untrusted_{0};
  // std::mutex: ThreadSanitizer sees it through pthreads.
  mutable std::mutex mu_;
  std::string warning_ ABSL_GUARDED_BY(mu_);
};

// CacheEntryTooLarge()
//
// The ResourceExhausted error of a Put whose `bytes` exceed `tier`'s cap.
absl::Status CacheEntryTooLarge(absl::string_view tier, int64_t bytes,
                                int64_t cap);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CACHE_BACKEND_H_
