// -----------------------------------------------------------------------------
// File: checksum.h
// -----------------------------------------------------------------------------
//
// SHA-256 (OpenSSL's libcrypto) as lowercase hex: the checksum of every file
// of an artifact and of every compile cache entry, and the cache's content
// addresses.
//
// Example:
//
//   std::string sum = Sha256Hex(bytes);   // 64 hex digits

#ifndef LATHE_RUNTIME_CHECKSUM_H_
#define LATHE_RUNTIME_CHECKSUM_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lathe {

// Sha256Hex()
//
// The SHA-256 digest of `bytes`, as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CHECKSUM_H_
