// -----------------------------------------------------------------------------
// File: test_certs.h
// -----------------------------------------------------------------------------
//
// Throwaway X.509 certificates for TLS tests, made with OpenSSL's C API at
// test time: a self-signed CA (P-256, valid for a day) that issues
// certificates for the names and addresses a test gives (subjectAltName,
// usable by servers and clients), written as PEM files into a directory.
//
// Example:
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<TestCa> ca,
//                        TestCa::Create(TestTmpPath("ca"), "test CA"));
//   ASSERT_OK_AND_ASSIGN(TestCert server,
//                        ca->Issue("server", "DNS:localhost,IP:127.0.0.1"));
//   // ca->cert_file(), server.cert_file, server.key_file

#ifndef LATHE_RUNTIME_TESTING_TEST_CERTS_H_
#define LATHE_RUNTIME_TESTING_TEST_CERTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct evp_pkey_st;
struct x509_st;

namespace lathe::testing {

// A certificate and its private key, as PEM files.
struct TestCert {
  std::string cert_file;
  std::string key_file;
};

class TestCa {
 public:
  // Create()
  //
  // A new CA named `common_name`, its certificate written to
  // `dir`/ca.crt (`dir` is created if needed); an error saying which step
  // failed.
  static absl::StatusOr<std::unique_ptr<TestCa>> Create(
      const std::string& dir, const std::string& common_name);

  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;
  ~TestCa();

  // Issue()
  //
  // A certificate signed by this CA for `alt_names` (a subjectAltName
  // value, such as "DNS:localhost,IP:127.0.0.1"), written with its key to
  // `dir`/`name`.crt and `dir`/`name`.key.
  absl::StatusOr<TestCert> Issue(const std::string& name,
                                 const std::string& alt_names);

  // The CA's certificate, a PEM file (a trust store with this CA only).
  const std::string& cert_file() const { return cert_file_; }

 private:
  TestCa(std::string dir, evp_pkey_st* key, x509_st* cert)
      : dir_(std::move(dir)), key_(key), cert_(cert) {}

  std::string dir_;
  std::string cert_file_;
  evp_pkey_st* key_;
  x509_st* cert_;
  long serial_ = 1;
};

}  // namespace lathe::testing

#endif  // LATHE_RUNTIME_TESTING_TEST_CERTS_H_
