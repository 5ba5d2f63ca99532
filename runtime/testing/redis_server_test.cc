// The test Redis server: it starts, answers raw SET/GET on loopback, dies
// on Kill(), starts a TLS port beside the plain one, and a missing program
// is an error that says what to install.

#include "runtime/testing/redis_server.h"

#include <signal.h>

#include <memory>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/testing/test_certs.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(RedisServerTest, StartsAnswersAndDiesOnKill) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> redis,
                       RedisServer::Start());
  EXPECT_THAT(redis->url(), StartsWith("redis://127.0.0.1:"));
  EXPECT_EQ(redis->url(), "redis://127.0.0.1:" + std::to_string(redis->port()));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> absent, redis->Get("k"));
  EXPECT_EQ(absent, std::nullopt);
  ASSERT_OK(redis->Set("k", std::string("v\0w", 3)));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> value, redis->Get("k"));
  EXPECT_EQ(value, std::string("v\0w", 3));
  const pid_t pid = redis->pid();
  redis->Kill();
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
  EXPECT_THAT(redis->Get("k").status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("redis-server on port")));
}

TEST(RedisServerTest, AMissingProgramSaysWhatToInstall) {
  EXPECT_THAT(
      RedisServer::Start("/nonexistent/redis-server").status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("no redis-server at /nonexistent/redis-server: these "
                         "tests need a real Redis server; install Debian's "
                         "redis-server package")));
}

TEST(RedisServerTest, StartsATlsPortBesideThePlainOne) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TestCa> ca,
                       TestCa::Create(TestTmpPath("ca"), "test CA"));
  ASSERT_OK_AND_ASSIGN(TestCert cert, ca->Issue("server", "IP:127.0.0.1"));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisServer> redis,
      RedisServer::StartTls({cert.cert_file, cert.key_file, ca->cert_file()}));
  EXPECT_GT(redis->tls_port(), 0);
  EXPECT_NE(redis->tls_port(), redis->port());
  EXPECT_EQ(redis->tls_url(),
            "rediss://127.0.0.1:" + std::to_string(redis->tls_port()));
  ASSERT_OK(redis->Set("k", "v"));  // raw commands on the plain port
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> value, redis->Get("k"));
  EXPECT_EQ(value, "v");
  // A certificate it cannot load: the server's own complaint.
  EXPECT_THAT(RedisServer::StartTls(
                  {TestTmpPath("absent.crt"), cert.key_file, ca->cert_file()})
                  .status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("redis-server exited at start: ")));
}

}  // namespace
}  // namespace lathe::testing
