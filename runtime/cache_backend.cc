#include "runtime/cache_backend.h"

#include <cstdint>
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

std::string EncodeCacheEntry(absl::string_view key, absl::string_view payload) {
  return absl::StrCat(kMagic, " ", kCacheEntryFormat, " ", key, " ",
                      payload.size(), " ", Sha256Hex(payload), "\n", payload);
}

absl::StatusOr<std::string> DecodeCacheEntry(absl::string_view key,
                                             absl::string_view entry) {
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
  uint64_t size = 0;
  if (fields.size() != 5 || !absl::SimpleAtoi(fields[1], &format) ||
      !absl::SimpleAtoi(fields[3], &size)) {
    return bad("has a malformed header line");
  }
  if (format != kCacheEntryFormat) {
    return bad(
        absl::StrCat("has format ", format, ", not ", kCacheEntryFormat));
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
  return std::string(payload);
}

absl::Status CacheEntryTooLarge(absl::string_view tier, int64_t bytes,
                                int64_t cap) {
  return absl::ResourceExhaustedError(
      absl::StrCat("a compile cache entry of ", bytes, " bytes is over the ",
                   tier, " cache's limit of ", cap, " bytes"));
}

}  // namespace lathe
