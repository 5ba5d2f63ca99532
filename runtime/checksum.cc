#include "runtime/checksum.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"

namespace lathe {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string HmacSha256Hex(absl::string_view key, absl::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // A null key pointer makes OpenSSL reuse a context's key: never pass one.
  static const unsigned char kEmpty = 0;
  HMAC(EVP_sha256(),
       key.empty() ? &kEmpty
                   : reinterpret_cast<const unsigned char*>(key.data()),
       static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
       digest, &size);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace lathe
