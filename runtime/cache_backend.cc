#include "runtime/cache_backend.h"

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/checksum.h"

namespace lathe {
namespace {

constexpr absl::string_view kMagic = "lathe-cache-entry";

bool IsLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

}  // namespace

absl::Status ValidateCacheKey(absl::string_view key) {
  bool ok = key.size() == 64;
  for (char c : key) ok = ok && IsLowerHex(c);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("compile cache key '", absl::CEscape(key.substr(0, 80)),
                     "' is not 64 lowercase hex digits (a SHA-256)"));
  }
  return absl::OkStatus();
}

std::string EncodeCacheEntry(absl::string_view key, absl::string_view payload,
                             absl::string_view secret) {
  std::string header =
      absl::StrCat(kMagic, " ", kCacheEntryFormat, " ", key, " ",
                   payload.size(), " ", Sha256Hex(payload));
  const std::string hmac = secret.empty() ? "-" : HmacSha256Hex(secret, header);
  return absl::StrCat(header, " ", hmac, "\n", payload);
}

absl::StatusOr<std::string> DecodeCacheEntry(absl::string_view key,
                                             absl::string_view entry,
                                             absl::string_view secret) {
  auto bad = [](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("compile cache entry ", why));
  };
  size_t eol = entry.substr(0, kMaxCacheEntryHeaderBytes).find('\n');
  if (eol == absl::string_view::npos) return bad("has no header line");
  std::vector<absl::string_view> fields =
      absl::StrSplit(entry.substr(0, eol), ' ');
  if (fields[0] != kMagic)
    return bad(absl::StrCat("does not start with ", kMagic));
  int format = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &format)) {
    return bad("has a malformed header line");
  }
  if (format != kCacheEntryFormat) {
    return bad(
        absl::StrCat("has format ", format, ", not ", kCacheEntryFormat));
  }
  uint64_t size = 0;
  if (fields.size() != 6 || !absl::SimpleAtoi(fields[3], &size)) {
    return bad("has a malformed header line");
  }
  if (fields[2] != key) {
    return bad(absl::StrCat("is for key ", fields[2], ", not ", key));
  }
  absl::string_view payload = entry.substr(eol + 1);
  if (payload.size() != size) {
    return bad(absl::StrCat("holds ", payload.size(),
                            " payload bytes, its header says ", size));
  }
  if (Sha256Hex(payload) != fields[4]) {
    return bad("payload does not match its SHA-256");
  }
  if (!secret.empty()) {
    // The header's text before the HMAC field, exactly as it was signed.
    absl::string_view signed_text = entry.substr(0, eol - fields[5].size() - 1);
    if (fields[5] == "-") {
      return absl::PermissionDeniedError(
          "compile cache entry has no HMAC, and a cache secret is set");
    }
    if (!ConstantTimeEquals(HmacSha256Hex(secret, signed_text), fields[5])) {
      return absl::PermissionDeniedError(
          "compile cache entry's HMAC is not the cache secret's");
    }
  }
  return std::string(payload);
}

std::optional<std::string> CacheEntryCodec::Decode(absl::string_view key,
                                                   absl::string_view entry) {
  absl::StatusOr<std::string> payload = DecodeCacheEntry(key, entry, secret_);
  if (payload.ok()) return *std::move(payload);
  if (payload.status().code() != absl::StatusCode::kPermissionDenied) {
    return std::nullopt;
  }
  if (untrusted_.fetch_add(1) == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    warning_ = absl::StrCat(
        "lathe: warning: ", where_,
        ": refused an entry: ", payload.status().message(),
        " (not written by a holder of LATHE_CACHE_SECRET; compiling instead)");
    std::fprintf(stderr, "%s\n", warning_.c_str());
  }
  return std::nullopt;
}

std::string CacheEntryCodec::warning() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warning_;
}

absl::Status CacheEntryTooLarge(absl::string_view tier, int64_t bytes,
                                int64_t cap) {
  return absl::ResourceExhaustedError(
      absl::StrCat("a compile cache entry of ", bytes, " bytes is over the ",
                   tier, " cache's limit of ", cap, " bytes"));
}

}  // namespace lathe
