// -----------------------------------------------------------------------------
// File: checksum.h
// -----------------------------------------------------------------------------
//
// SHA-256 (OpenSSL's libcrypto) as lowercase hex: the checksum of every file
// of an artifact and of every compile cache entry, and the cache's content
// addresses; and HMAC-SHA256, which signs a shared cache's entries under a
// fleet's secret.
//
// Example:
//
//   std::string sum = Sha256Hex(bytes);                  // 64 hex digits
//   std::string mac = HmacSha256Hex(secret, message);    // 64 hex digits
//   bool same = ConstantTimeEquals(mac, stored_mac);

#ifndef LATHE_RUNTIME_CHECKSUM_H_
#define LATHE_RUNTIME_CHECKSUM_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lathe {

// Sha256Hex()
//
// The SHA-256 digest of `bytes`, as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

// HmacSha256Hex()
//
// The HMAC-SHA256 (RFC 2104) of `message` under `key`, as 64 lowercase hex
// digits.
std::string HmacSha256Hex(absl::string_view key, absl::string_view message);

// ConstantTimeEquals()
//
// Whether `a` and `b` are equal, in a time that depends only on their
// lengths (for comparing MACs).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CHECKSUM_H_
