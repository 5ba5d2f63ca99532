#include "runtime/compile_cache.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/checksum.h"
#include "runtime/file_io.h"
#include "runtime/kernel_abi.h"
#include "runtime/redis_cache.h"
#include "status_macros.h"

namespace lathe {
namespace {

// The most bytes a secret file may hold.
constexpr int64_t kMaxSecretBytes = 4096;

// The value of environment variable `name`, "" when unset.
std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

std::string CacheKey(absl::string_view source,
                     absl::string_view compiler_identity,
                     absl::Span<const std::string> flags) {
  std::string text =
      absl::StrCat("lathe-cache-key 1\nabi ", LATHE_KERNEL_ABI_VERSION, "\n",
                   source.size(), ":", source, "\n", compiler_identity.size(),
                   ":", compiler_identity, "\n", flags.size(), "\n");
  for (const std::string& flag : flags) {
    absl::StrAppend(&text, flag.size(), ":", flag, "\n");
  }
  return Sha256Hex(text);
}

absl::StatusOr<std::optional<CacheHit>> MemoryCache::Get(
    absl::string_view key) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return CacheHit{it->second->second, name()};
}

absl::Status MemoryCache::Put(absl::string_view key, absl::string_view bytes) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size > max_bytes_) return CacheEntryTooLarge(name(), size, max_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    bytes_ -= static_cast<int64_t>(it->second->second.size());
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (bytes_ + size > max_bytes_) {
    bytes_ -= static_cast<int64_t>(lru_.back().second.size());
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(std::string(key), std::string(bytes));
  index_[lru_.front().first] = lru_.begin();
  bytes_ += size;
  return absl::OkStatus();
}

int64_t MemoryCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

DiskCache::DiskCache(std::string dir, Options options)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      codec_(absl::StrCat("disk compile cache ", dir_), options_.secret) {}

std::string DiskCache::EntryPath(absl::string_view key) const {
  return absl::StrCat(dir_, "/", key, ".entry");
}

std::string DiskCache::warning() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warning_;
}

bool DiskCache::Trusted() {
  const int state = state_.load(std::memory_order_acquire);
  if (state != kUnchecked) return state == kTrusted;
  std::lock_guard<std::mutex> lock(mu_);
  if (state_.load() != kUnchecked) return state_.load() == kTrusted;
  absl::Status s = CheckPrivateDirectory(dir_, options_.owner);
  if (absl::IsNotFound(s)) return false;  // not yet: a Put creates it
  if (s.ok()) {
    state_.store(kTrusted, std::memory_order_release);
    return true;
  }
  warning_ = absl::StrCat(
      "lathe: warning: not using the compile cache directory: ", s.message(),
      " (it must belong to the user running lathe and be closed to others, "
      "as ~/.ssh is)");
  std::fprintf(stderr, "%s\n", warning_.c_str());
  state_.store(kRefused, std::memory_order_release);
  return false;
}

bool DiskCache::MakeTrusted() {
  return MakeDirectories(dir_, 0700).ok() && Trusted();
}

absl::StatusOr<std::optional<CacheHit>> DiskCache::Get(absl::string_view key) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  if (!Trusted()) return std::nullopt;
  // Any entry that cannot be read whole (absent, over the cap, unreadable,
  // not a regular file of this user's) or decoded is a miss; a Put
  // replaces it.
  absl::StatusOr<std::string> entry = ReadPrivateFile(
      EntryPath(key), options_.max_entry_bytes + kMaxCacheEntryHeaderBytes,
      options_.owner);
  if (!entry.ok()) return std::nullopt;
  std::optional<std::string> payload = codec_.Decode(key, *entry);
  if (!payload) return std::nullopt;
  return CacheHit{*std::move(payload), name()};
}

absl::Status DiskCache::Put(absl::string_view key, absl::string_view bytes) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size > options_.max_entry_bytes)
    return CacheEntryTooLarge(name(), size, options_.max_entry_bytes);
  // Made again if it was removed since (as the first Put made it).
  RETURN_IF_ERROR(MakeDirectories(dir_, 0700));
  if (!Trusted()) return absl::OkStatus();  // refused: not used at all
  return WriteFileAtomic(EntryPath(key), codec_.Encode(key, bytes),
                         /*durable=*/true, 0600);
}

absl::StatusOr<std::optional<CacheHit>> TieredCache::Get(
    absl::string_view key) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    ASSIGN_OR_RETURN(std::optional<CacheHit> hit, tiers_[i]->Get(key));
    if (!hit) continue;
    // Filling a faster tier is best effort: a hit is a hit.
    for (size_t j = 0; j < i; ++j) {
      tiers_[j]->Put(key, hit->bytes).IgnoreError();
    }
    return hit;
  }
  return std::nullopt;
}

absl::Status TieredCache::Put(absl::string_view key, absl::string_view bytes) {
  absl::Status first;
  for (const std::unique_ptr<CacheBackend>& tier : tiers_) {
    absl::Status s = tier->Put(key, bytes);
    if (first.ok()) first = s;
  }
  return first;
}

std::string DiskCache::PrivateDirectory() {
  return !codec_.signs() && MakeTrusted() ? dir_ : "";
}

std::string TieredCache::PrivateDirectory() {
  for (const std::unique_ptr<CacheBackend>& tier : tiers_) {
    std::string dir = tier->PrivateDirectory();
    if (!dir.empty()) return dir;
  }
  return "";
}

bool BeginsWithPrelude(absl::string_view source, absl::string_view prelude) {
  return absl::EndsWith(prelude, "\n") && !absl::EndsWith(prelude, "\\\n") &&
         absl::StartsWith(source, prelude);
}

std::string PrivateCacheDirectory(CacheBackend* cache) {
  return cache == nullptr ? "" : cache->PrivateDirectory();
}

std::string TieredCache::name() const {
  std::vector<std::string> names;
  for (const std::unique_ptr<CacheBackend>& tier : tiers_) {
    names.push_back(tier->name());
  }
  return absl::StrCat("tiered(", absl::StrJoin(names, ","), ")");
}

absl::StatusOr<std::string> CacheSecretFromEnvironment() {
  const std::string secret = Env("LATHE_CACHE_SECRET");
  const std::string file = Env("LATHE_CACHE_SECRET_FILE");
  if (file.empty()) return secret;
  if (!secret.empty()) {
    return absl::InvalidArgumentError(
        "LATHE_CACHE_SECRET and LATHE_CACHE_SECRET_FILE are both set; set "
        "one");
  }
  absl::StatusOr<std::string> text = ReadFileLimited(file, kMaxSecretBytes);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LATHE_CACHE_SECRET_FILE: ", text.status().message()));
  }
  absl::string_view key = absl::StripTrailingAsciiWhitespace(*text);
  if (key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LATHE_CACHE_SECRET_FILE: ", file, " is empty (expected a secret)"));
  }
  return std::string(key);
}

absl::StatusOr<CompileCacheConfig> CompileCacheConfigFromEnvironment() {
  CompileCacheConfig c;
  ASSIGN_OR_RETURN(c.secret, CacheSecretFromEnvironment());
  c.dir = Env("LATHE_CACHE_DIR");
  if (c.dir.empty() && !Env("XDG_CACHE_HOME").empty()) {
    c.dir = Env("XDG_CACHE_HOME") + "/lathe";
  }
  if (c.dir.empty() && !Env("HOME").empty()) {
    c.dir = Env("HOME") + "/.cache/lathe";
  }
  if (c.dir.empty()) c.dir = "off";
  c.remote = Env("LATHE_REMOTE_CACHE");
  c.tls_ca_file = Env("LATHE_REMOTE_CACHE_CA_FILE");
  c.tls_cert_file = Env("LATHE_REMOTE_CACHE_CERT_FILE");
  c.tls_key_file = Env("LATHE_REMOTE_CACHE_KEY_FILE");
  return c;
}

absl::StatusOr<std::unique_ptr<TieredCache>> NewCompileCache(
    const CompileCacheConfig& config) {
  std::vector<std::unique_ptr<CacheBackend>> tiers;
  tiers.push_back(std::make_unique<MemoryCache>());
  if (!config.dir.empty() && config.dir != "off") {
    DiskCache::Options options;
    options.secret = config.secret;
    tiers.push_back(std::make_unique<DiskCache>(config.dir, options));
  }
  if (!config.remote.empty()) {
    RedisCache::Options options;
    options.secret = config.secret;
    options.tls_ca_file = config.tls_ca_file;
    options.tls_cert_file = config.tls_cert_file;
    options.tls_key_file = config.tls_key_file;
    absl::StatusOr<std::unique_ptr<RedisCache>> redis =
        RedisCache::Create(config.remote, options);
    if (!redis.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("LATHE_REMOTE_CACHE: ", redis.status().message()));
    }
    tiers.push_back(*std::move(redis));
  }
  return std::make_unique<TieredCache>(std::move(tiers));
}

absl::StatusOr<std::unique_ptr<TieredCache>> NewCompileCacheFromEnvironment() {
  ASSIGN_OR_RETURN(CompileCacheConfig config,
                   CompileCacheConfigFromEnvironment());
  return NewCompileCache(config);
}

absl::StatusOr<CacheBackend*> DefaultCompileCache() {
  static const auto* const cache =
      new absl::StatusOr<std::unique_ptr<TieredCache>>(
          NewCompileCacheFromEnvironment());
  if (!cache->ok()) return cache->status();
  return cache->value().get();
}

}  // namespace lathe
