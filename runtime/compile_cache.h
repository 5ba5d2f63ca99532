// -----------------------------------------------------------------------------
// File: compile_cache.h
// -----------------------------------------------------------------------------
//
// The compile cache: compiled .so files content-addressed by CacheKey (a
// SHA-256 of the generated source, the compiler's identity and its flags),
// in tiers: MemoryCache (this process, bounded), DiskCache (a directory
// shared by every process of a user, safe with many writers and after
// `kill -9` at any point) and RedisCache (runtime/redis_cache.h: a fleet),
// composed by TieredCache. DefaultCompileCache() is the one a process uses,
// configured by the environment:
//
//   LATHE_CACHE_DIR      the disk tier's directory (default
//                        $XDG_CACHE_HOME/lathe, else $HOME/.cache/lathe);
//                        "off" disables the disk tier
//   LATHE_REMOTE_CACHE   redis://[USER:PASSWORD@]HOST:PORT enables the
//                        remote tier (rediss://... over TLS)
//   LATHE_REMOTE_CACHE_CA_FILE, LATHE_REMOTE_CACHE_CERT_FILE,
//   LATHE_REMOTE_CACHE_KEY_FILE
//                        rediss:// only: PEM files of the CAs trusted to
//                        sign the server's certificate (default: the
//                        system's), and a client certificate and its key
//                        for mutual TLS (redis-cli's --cacert, --cert,
//                        --key)
//   LATHE_CACHE_SECRET   a fleet's secret: every entry stored on disk or in
//                        Redis carries an HMAC-SHA256 under it, and one
//                        without that HMAC is a miss (LATHE_CACHE_SECRET_FILE
//                        names a file that holds it instead)
//
// A cache directory is used only when it belongs to the user running lathe
// and neither its group nor others can write it; entries are files of mode
// 0600, and anything else at an entry's path (another user's file, a
// symlink, a FIFO, a device, a directory) is a miss.
//
// Example:
//
//   std::string key = CacheKey(source, "g++ (Debian 12.2.0-14) 12.2.0",
//                              CompilerFlags());
//   ASSIGN_OR_RETURN(CacheBackend* cache, DefaultCompileCache());
//   ASSIGN_OR_RETURN(std::optional<CacheHit> hit, cache->Get(key));
//   if (!hit) RETURN_IF_ERROR(cache->Put(key, Compile(source)));

#ifndef LATHE_RUNTIME_COMPILE_CACHE_H_
#define LATHE_RUNTIME_COMPILE_CACHE_H_

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/cache_backend.h"

namespace lathe {

// The default bounds: the memory tier's total bytes, and the largest entry
// the disk tier stores (a compiled graph's .so is far smaller).
inline constexpr int64_t kDefaultMemoryCacheBytes = int64_t{256} << 20;
inline constexpr int64_t kDefaultMaxDiskEntryBytes = int64_t{256} << 20;

// CacheKey()
//
// The content address of a compiled library: the SHA-256 (hex) of lathe's
// kernel ABI version, `source`, `compiler_identity` and `flags`, each field
// length-prefixed, so no two different inputs share an encoding.
std::string CacheKey(absl::string_view source,
                     absl::string_view compiler_identity,
                     absl::Span<const std::string> flags);

// This process's entries, least recently used evicted first once they hold
// more than `max_bytes`.
class MemoryCache : public CacheBackend {
 public:
  explicit MemoryCache(int64_t max_bytes = kDefaultMemoryCacheBytes)
      : max_bytes_(max_bytes) {}

  absl::StatusOr<std::optional<CacheHit>> Get(absl::string_view key) override;
  // An entry larger than max_bytes is refused (ResourceExhausted).
  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  std::string name() const override { return "memory"; }

  // The payload bytes held now.
  int64_t bytes() const;

 private:
  using Lru = std::list<std::pair<std::string, std::string>>;  // key, bytes

  const int64_t max_bytes_;
  // std::mutex: ThreadSanitizer sees it through pthreads, where the
  // system Abseil is not instrumented.
  mutable std::mutex mu_;
  Lru lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Entries as files DIR/<key>.entry (EncodeCacheEntry's format, mode 0600),
// each written whole to a unique temporary file beside it, fsync'd and
// renamed into place, so a reader sees an old entry or a new one, never a
// mix. A damaged, truncated or foreign entry is a miss that the next Put
// replaces; a writer's leftover temporary file is never read. The
// directory is created (mode 0700) on the first Put. A directory that is
// not the owner's alone is never used: Get misses, Put does nothing, and
// one warning says why.
class DiskCache : public CacheBackend {
 public:
  struct Options {
    // A payload larger than this is refused by Put and missed by Get.
    int64_t max_entry_bytes = kDefaultMaxDiskEntryBytes;
    // With a secret, entries are signed, and unsigned ones are misses.
    std::string secret;
    // The user the directory and its entries must belong to.
    uid_t owner = ::geteuid();
  };

  explicit DiskCache(std::string dir,
                     int64_t max_entry_bytes = kDefaultMaxDiskEntryBytes)
      : DiskCache(std::move(dir), Options{max_entry_bytes}) {}
  DiskCache(std::string dir, Options options);

  absl::StatusOr<std::optional<CacheHit>> Get(absl::string_view key) override;
  // A payload larger than max_entry_bytes is refused (ResourceExhausted).
  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  std::string name() const override { return "disk"; }
  // dir() when the entries are not signed and MakeTrusted() holds.
  std::string PrivateDirectory() override;

  // The file that holds `key`'s entry (the key unchecked).
  std::string EntryPath(absl::string_view key) const;
  const std::string& dir() const { return dir_; }
  // The warning printed when the directory was refused ("" while it was
  // not).
  std::string warning() const;
  // Entries refused for lacking the secret's HMAC, and that warning.
  const CacheEntryCodec& codec() const { return codec_; }
  // Whether the directory may be used, made (mode 0700) if missing:
  // checked once, then trusted or refused for this object's life.
  bool MakeTrusted();

 private:
  enum DirState { kUnchecked, kTrusted, kRefused };
  // Whether the directory may be used: checked once it exists, then
  // trusted or refused for this object's life.
  bool Trusted();

  const std::string dir_;
  const Options options_;
  CacheEntryCodec codec_;
  std::atomic<int> state_{kUnchecked};
  // std::mutex: ThreadSanitizer sees it through pthreads.
  mutable std::mutex mu_;
  std::string warning_ ABSL_GUARDED_BY(mu_);
};

// Tiers in order, fastest first: a Get asks each in turn and copies a hit
// into the tiers before the one that had it; a Put stores into every tier.
class TieredCache : public CacheBackend {
 public:
  explicit TieredCache(std::vector<std::unique_ptr<CacheBackend>> tiers)
      : tiers_(std::move(tiers)) {}

  // CacheHit::tier names the tier that held the entry.
  absl::StatusOr<std::optional<CacheHit>> Get(absl::string_view key) override;
  // Stores into every tier; the first tier's error, if any, after trying
  // them all.
  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  // "tiered(memory,disk,redis)".
  std::string name() const override;
  // The first tier's that has one.
  std::string PrivateDirectory() override;

  const std::vector<std::unique_ptr<CacheBackend>>& tiers() const {
    return tiers_;
  }

 private:
  const std::vector<std::unique_ptr<CacheBackend>> tiers_;
};

// PrivateCacheDirectory()
//
// `cache`'s PrivateDirectory() (a disk tier's, itself or one of a
// TieredCache's: one it trusts, made if missing, and does not sign), or ""
// for no cache.
std::string PrivateCacheDirectory(CacheBackend* cache);

// BeginsWithPrelude()
//
// Whether `source` begins with `prelude` as a compiler may take it apart:
// whole lines, the last not continued (a trailing backslash) onto the
// rest, so the prelude can be precompiled and the rest compiled after it.
bool BeginsWithPrelude(absl::string_view source, absl::string_view prelude);

// CacheSecretFromEnvironment()
//
// The fleet secret LATHE_CACHE_SECRET holds, or the contents of the file
// LATHE_CACHE_SECRET_FILE names (without trailing whitespace); "" when
// neither is set. An error naming the variable when both are set, or the
// file cannot be read, is empty or is over 4 KiB.
absl::StatusOr<std::string> CacheSecretFromEnvironment();

// What a compile cache is made of: the disk tier's directory ("off": none),
// the Redis URL (empty: none) with its TLS files, and the fleet's secret.
struct CompileCacheConfig {
  std::string dir = "off";
  std::string remote;
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  std::string secret;
};

// CompileCacheConfigFromEnvironment()
//
// The configuration the variables above give (an error for a bad secret).
absl::StatusOr<CompileCacheConfig> CompileCacheConfigFromEnvironment();

// NewCompileCache()
//
// A new TieredCache: memory, then disk unless `config.dir` is "off", then
// Redis when `config.remote` is set; an error for a URL that is not
// redis[s]://[USER:PASSWORD@]HOST:PORT or TLS files that cannot be loaded
// (or given with redis://).
absl::StatusOr<std::unique_ptr<TieredCache>> NewCompileCache(
    const CompileCacheConfig& config);

// NewCompileCacheFromEnvironment()
//
// NewCompileCache(CompileCacheConfigFromEnvironment()): a LATHE_REMOTE_CACHE
// error names the variable.
absl::StatusOr<std::unique_ptr<TieredCache>> NewCompileCacheFromEnvironment();

// DefaultCompileCache()
//
// This process's compile cache: NewCompileCacheFromEnvironment()'s result
// (or error), made on the first call and shared by every later one.
absl::StatusOr<CacheBackend*> DefaultCompileCache();

}  // namespace lathe

#endif  // LATHE_RUNTIME_COMPILE_CACHE_H_
