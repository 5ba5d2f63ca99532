#include "runtime/testing/test_certs.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe::testing {
namespace {

// An error for the step `what`, with OpenSSL's reason.
absl::Status Failed(absl::string_view what) {
  char reason[256] = "unknown";
  const unsigned long error = ERR_get_error();
  if (error != 0) ERR_error_string_n(error, reason, sizeof(reason));
  ERR_clear_error();
  return absl::InternalError(
      absl::StrCat("test certificate: ", what, " (", reason, ")"));
}

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Cert = std::unique_ptr<X509, X509Deleter>;
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;

// Adds the extension `nid` = `value` to `cert`, issued by `issuer`.
absl::Status AddExtension(X509* cert, X509* issuer, int nid,
                          const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return Failed(absl::StrCat("extension ", value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Failed(absl::StrCat("extension ", value));
  return absl::OkStatus();
}

// A certificate for `key` named `common_name`, valid from an hour ago for
// a day, with `serial`; unsigned, its issuer not set.
absl::StatusOr<Cert> NewCert(EVP_PKEY* key, const std::string& common_name,
                             long serial) {
  Cert cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), 2) != 1 ||
      ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) == nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return Failed("new certificate");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_UTF8,
          reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
          0) != 1) {
    return Failed("subject name");
  }
  return cert;
}

// Writes `text` (PEM, by `write`) to `path`.
template <typename Write>
absl::Status WritePem(const std::string& path, Write write) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  const bool ok = write(f) == 1;
  if (std::fclose(f) != 0 || !ok) return Failed(absl::StrCat("write ", path));
  return absl::OkStatus();
}

absl::Status WriteCert(const std::string& path, X509* cert) {
  return WritePem(path, [&](FILE* f) { return PEM_write_X509(f, cert); });
}

absl::Status WriteKey(const std::string& path, EVP_PKEY* key) {
  return WritePem(path, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestCa>> TestCa::Create(
    const std::string& dir, const std::string& common_name) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  Key key(EVP_EC_gen("P-256"));
  if (key == nullptr) return Failed("CA key");
  absl::StatusOr<Cert> cert = NewCert(key.get(), common_name, 1);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  if (X509_set_issuer_name(c, X509_get_subject_name(c)) != 1) {
    return Failed("CA issuer");
  }
  absl::Status extensions =
      AddExtension(c, c, NID_basic_constraints, "critical,CA:TRUE");
  if (extensions.ok()) {
    extensions =
        AddExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  if (extensions.ok()) {
    extensions = AddExtension(c, c, NID_subject_key_identifier, "hash");
  }
  if (!extensions.ok()) return extensions;
  if (X509_sign(c, key.get(), EVP_sha256()) == 0) return Failed("CA sign");
  std::unique_ptr<TestCa> ca(new TestCa(dir, key.release(), cert->release()));
  ca->cert_file_ = dir + "/ca.crt";
  absl::Status written = WriteCert(ca->cert_file_, ca->cert_);
  if (!written.ok()) return written;
  return ca;
}

TestCa::~TestCa() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

absl::StatusOr<TestCert> TestCa::Issue(const std::string& name,
                                       const std::string& alt_names) {
  Key key(EVP_EC_gen("P-256"));
  if (key == nullptr) return Failed("key");
  absl::StatusOr<Cert> cert = NewCert(key.get(), name, ++serial_);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  if (X509_set_issuer_name(c, X509_get_subject_name(cert_)) != 1) {
    return Failed("issuer");
  }
  for (const auto& [nid, value] :
       {std::pair<int, std::string>{NID_basic_constraints, "CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature,keyAgreement"},
        {NID_ext_key_usage, "serverAuth,clientAuth"},
        {NID_authority_key_identifier, "keyid"},
        {NID_subject_alt_name, alt_names}}) {
    absl::Status added = AddExtension(c, cert_, nid, value);
    if (!added.ok()) return added;
  }
  if (X509_sign(c, key_, EVP_sha256()) == 0) return Failed("sign");
  TestCert files{absl::StrCat(dir_, "/", name, ".crt"),
                 absl::StrCat(dir_, "/", name, ".key")};
  absl::Status written = WriteCert(files.cert_file, c);
  if (written.ok()) written = WriteKey(files.key_file, key.get());
  if (!written.ok()) return written;
  return files;
}

}  // namespace lathe::testing
