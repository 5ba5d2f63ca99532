// The remote compile cache over TLS (rediss://) against a real
// redis-server with a TLS port (runtime/testing/redis_server.h), its
// certificates made by a throwaway CA at test time (test_certs.h): a round
// trip with AUTH, by IP address and by host name; a server whose CA is not
// trusted, or whose certificate names another host, refused with one
// warning and nothing stored; rediss:// to a plaintext server and redis://
// to a TLS port failing within the timeouts; mutual TLS with and without a
// client certificate; a TLS reply announcing more than the cap refused
// from its header; TLS files that cannot be used refused by Create; many
// threads on one TLS connection.

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cache_backend.h"
#include "runtime/checksum.h"
#include "runtime/redis_cache.h"
#include "runtime/testing/lying_redis_server.h"
#include "runtime/testing/redis_server.h"
#include "runtime/testing/test_certs.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::RedisServer;
using ::lathe::testing::StatusIs;
using ::lathe::testing::TestCa;
using ::lathe::testing::TestCert;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kKey = Sha256Hex("key");

// The payload a Get finds, or "<miss>" / "<error: ...>".
std::string Lookup(CacheBackend& cache, const std::string& key) {
  absl::StatusOr<std::optional<CacheHit>> hit = cache.Get(key);
  if (!hit.ok()) return absl::StrCat("<error: ", hit.status().ToString(), ">");
  if (!hit->has_value()) return "<miss>";
  return absl::StrCat((*hit)->tier, ":", (*hit)->bytes);
}

// What a cache that cannot use its server does: a Get that misses within
// the bound, a Put that stores nothing, and then one warning on stderr
// (returned) that names `shown_url`.
std::string OneWarning(RedisCache& cache, RedisServer& server,
                       const std::string& shown_url) {
  ::testing::internal::CaptureStderr();
  const absl::Time start = absl::Now();
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_OK(cache.Put(kKey, "dropped"));
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, cache.warning() + "\n");
  EXPECT_THAT(
      cache.warning(),
      StartsWith("lathe: warning: remote compile cache " + shown_url + " "));
  EXPECT_THAT(cache.warning(),
              HasSubstr("; using the local compile cache only"));
  absl::StatusOr<std::optional<std::string>> stored =
      server.Get(RedisCache::RedisKey(kKey));
  EXPECT_OK(stored.status());
  if (stored.ok()) {
    EXPECT_EQ(*stored, std::nullopt);  // nothing got through
  }
  return cache.warning();
}

class RedisCacheTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(ca_, TestCa::Create(lathe::testing::TestTmpPath("ca"),
                                             "lathe test CA"));
    ASSERT_OK_AND_ASSIGN(server_cert_,
                         ca_->Issue("server", "DNS:localhost,IP:127.0.0.1"));
    ASSERT_OK_AND_ASSIGN(redis_, RedisServer::StartTls({server_cert_.cert_file,
                                                        server_cert_.key_file,
                                                        ca_->cert_file()}));
    options_.tls_ca_file = ca_->cert_file();
  }

  // "rediss://USERINFO127.0.0.1:TLS_PORT" with `host` for 127.0.0.1.
  std::string TlsUrl(const std::string& userinfo,
                     const std::string& host = "127.0.0.1") const {
    return absl::StrCat("rediss://", userinfo, host, ":", redis_->tls_port());
  }

  std::unique_ptr<TestCa> ca_;
  TestCert server_cert_;
  std::unique_ptr<RedisServer> redis_;
  RedisCache::Options options_;  // trusts ca_
};

TEST_F(RedisCacheTlsTest, PutThenGetOverTlsWithAuth) {
  ASSERT_OK(redis_->Run(
      {"ACL", "SETUSER", "lathe", "on", ">s3cret", "~lathe:*", "+@all"}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(TlsUrl("lathe:s3cret@"), options_));
  EXPECT_EQ(cache->url(), TlsUrl("lathe:***@"));
  EXPECT_EQ(Lookup(*cache, kKey), "<miss>");
  ASSERT_OK(cache->Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(*cache, kKey), "redis:so bytes");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> stored,
                       redis_->Get(RedisCache::RedisKey(kKey)));
  EXPECT_EQ(stored, EncodeCacheEntry(kKey, "so bytes"));
  // A large entry crosses many TLS records each way.
  const std::string big(3 << 20, 'b');
  ASSERT_OK(cache->Put(kKey, big));
  EXPECT_EQ(Lookup(*cache, kKey), "redis:" + big);
  EXPECT_EQ(cache->warning(), "");

  // A wrong password over TLS: one warning naming the user only.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> wrong,
                       RedisCache::Create(TlsUrl("lathe:guess@"), options_));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(*wrong, kKey), "<miss>");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(wrong->warning(),
              HasSubstr("refused the credentials of user 'lathe' (WRONGPASS"));
  EXPECT_THAT(printed, Not(HasSubstr("guess")));

  // By host name (SNI, and the certificate's DNS name checked), with
  // requirepass (after which the fixture's raw commands are refused).
  ASSERT_OK(redis_->Run({"CONFIG", "SET", "requirepass", "hunter2"}));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisCache> by_name,
      RedisCache::Create(TlsUrl(":hunter2@", "localhost"), options_));
  EXPECT_EQ(by_name->url(), TlsUrl(":***@", "localhost"));
  EXPECT_EQ(Lookup(*by_name, kKey), "redis:" + big);
  EXPECT_EQ(by_name->warning(), "");
}

TEST_F(RedisCacheTlsTest, ManyThreadsShareOneTlsConnection) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(TlsUrl(""), options_));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 20; ++i) {
        std::string key = Sha256Hex(absl::StrCat(t, ":", i));
        std::string value = absl::StrCat("value ", t, ":", i);
        EXPECT_OK(cache->Put(key, value));
        EXPECT_EQ(Lookup(*cache, key), "redis:" + value);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cache->warning(), "");
}

TEST_F(RedisCacheTlsTest, AServerOfAnUntrustedCaIsRefused) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<TestCa> other,
      TestCa::Create(lathe::testing::TestTmpPath("other_ca"), "other CA"));
  RedisCache::Options options;
  options.tls_ca_file = other->cert_file();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(TlsUrl(":pw@"), options));
  const std::string warning = OneWarning(*cache, *redis_, TlsUrl(":***@"));
  // OpenSSL's reason follows (the server may send the root it chains to).
  EXPECT_THAT(warning,
              HasSubstr("cannot be connected to (TLS handshake failed: "
                        "certificate verify failed: "));
  EXPECT_THAT(warning, Not(HasSubstr(":pw@")));
  // Nor does the system's trust store know the test CA.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> system,
                       RedisCache::Create(TlsUrl("")));
  EXPECT_THAT(OneWarning(*system, *redis_, TlsUrl("")),
              HasSubstr("TLS handshake failed: certificate verify failed"));
}

TEST_F(RedisCacheTlsTest, ACertificateForAnotherHostIsRefused) {
  ASSERT_OK_AND_ASSIGN(
      TestCert elsewhere,
      ca_->Issue("elsewhere", "DNS:cache.example,IP:10.9.9.9"));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisServer> impostor,
      RedisServer::StartTls(
          {elsewhere.cert_file, elsewhere.key_file, ca_->cert_file()}));
  const std::string by_ip =
      absl::StrCat("rediss://127.0.0.1:", impostor->tls_port());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(by_ip, options_));
  EXPECT_THAT(OneWarning(*cache, *impostor, by_ip),
              HasSubstr("cannot be connected to (TLS handshake failed: "
                        "certificate verify failed: IP address mismatch)"));
  const std::string by_name =
      absl::StrCat("rediss://localhost:", impostor->tls_port());
  ASSERT_OK_AND_ASSIGN(cache, RedisCache::Create(by_name, options_));
  EXPECT_THAT(OneWarning(*cache, *impostor, by_name),
              HasSubstr("cannot be connected to (TLS handshake failed: "
                        "certificate verify failed: hostname mismatch)"));
  // The same CA and options reach the server whose certificate names it.
  ASSERT_OK_AND_ASSIGN(cache, RedisCache::Create(TlsUrl(""), options_));
  ASSERT_OK(cache->Put(kKey, "x"));
  EXPECT_EQ(Lookup(*cache, kKey), "redis:x");
}

TEST_F(RedisCacheTlsTest, RedissToAPlaintextServerFailsWithinTheBound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> plain,
                       RedisServer::Start());
  const std::string url = absl::StrCat("rediss://127.0.0.1:", plain->port());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(url, options_));
  EXPECT_THAT(OneWarning(*cache, *plain, url),
              HasSubstr("cannot be connected to (TLS handshake failed: "));
}

TEST_F(RedisCacheTlsTest, RedisToATlsPortFailsWithinTheBound) {
  const std::string url =
      absl::StrCat("redis://127.0.0.1:", redis_->tls_port());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(url));
  EXPECT_THAT(OneWarning(*cache, *redis_, url),
              HasSubstr("failed during GETRANGE ("));
  // With AUTH, the password is never sent readable: the server hangs up on
  // the first bytes that are not TLS.
  const std::string auth_url =
      absl::StrCat("redis://:pw@127.0.0.1:", redis_->tls_port());
  ASSERT_OK_AND_ASSIGN(cache, RedisCache::Create(auth_url));
  EXPECT_THAT(
      OneWarning(*cache, *redis_,
                 absl::StrCat("redis://:***@127.0.0.1:", redis_->tls_port())),
      HasSubstr("failed during AUTH ("));
}

TEST_F(RedisCacheTlsTest, MutualTlsNeedsAClientCertificateOfTheCa) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisServer> mutual,
      RedisServer::StartTls({server_cert_.cert_file, server_cert_.key_file,
                             ca_->cert_file(), /*auth_clients=*/true}));
  const std::string url =
      absl::StrCat("rediss://127.0.0.1:", mutual->tls_port());
  // Without a certificate. TLS 1.3 finishes the client's side of the
  // handshake before the server checks it, so the refusal can come with
  // the first reply instead.
  const auto refused_by_the_server =
      AnyOf(HasSubstr("cannot be connected to (TLS handshake failed: "),
            HasSubstr("failed during GETRANGE ("));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> anonymous,
                       RedisCache::Create(url, options_));
  EXPECT_THAT(OneWarning(*anonymous, *mutual, url), refused_by_the_server);
  // With one from another CA.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<TestCa> other,
      TestCa::Create(lathe::testing::TestTmpPath("client_ca"), "other CA"));
  ASSERT_OK_AND_ASSIGN(TestCert stranger, other->Issue("stranger", "DNS:x"));
  RedisCache::Options options = options_;
  options.tls_cert_file = stranger.cert_file;
  options.tls_key_file = stranger.key_file;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> refused,
                       RedisCache::Create(url, options));
  EXPECT_THAT(OneWarning(*refused, *mutual, url), refused_by_the_server);
  // With one the server's CA signed.
  ASSERT_OK_AND_ASSIGN(TestCert client, ca_->Issue("client", "DNS:lathe"));
  options.tls_cert_file = client.cert_file;
  options.tls_key_file = client.key_file;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(url, options));
  ASSERT_OK(cache->Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(*cache, kKey), "redis:so bytes");
  EXPECT_EQ(cache->warning(), "");
}

TEST_F(RedisCacheTlsTest, TlsFilesThatCannotBeUsedAreRefusedByCreate) {
  RedisCache::Options options;
  options.tls_ca_file = lathe::testing::TestTmpPath("absent.pem");
  EXPECT_THAT(RedisCache::Create(TlsUrl(":pw@"), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "remote cache " + TlsUrl(":***@") + ": TLS CA file '" +
                           options.tls_ca_file +
                           "' cannot be read (No such file or directory)"));
  options.tls_ca_file = server_cert_.key_file;  // not a certificate
  EXPECT_THAT(RedisCache::Create(TlsUrl(""), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("TLS CA file '" + server_cert_.key_file +
                                 "' cannot be loaded (")));
  options = options_;
  options.tls_cert_file = server_cert_.cert_file;
  EXPECT_THAT(RedisCache::Create(TlsUrl(""), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs both a certificate file and a key")));
  ASSERT_OK_AND_ASSIGN(TestCert other, ca_->Issue("other", "DNS:other"));
  options.tls_key_file = other.key_file;  // not this certificate's key
  EXPECT_THAT(RedisCache::Create(TlsUrl(""), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("TLS key file '" + other.key_file +
                                 "' cannot be loaded (")));
  // TLS files with a plaintext URL: never a silent downgrade.
  EXPECT_THAT(RedisCache::Create(redis_->url(), options_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is plaintext but TLS files are given; use "
                                 "rediss:// for TLS")));
}

TEST_F(RedisCacheTlsTest, AReplyOverTheCapIsRefusedBeforeItIsBuffered) {
  ::lathe::testing::ExpectAReplyOverTheCapIsRefusedUnread(
      options_, {.tls_cert_file = server_cert_.cert_file,
                 .tls_key_file = server_cert_.key_file});
}

}  // namespace
}  // namespace lathe
