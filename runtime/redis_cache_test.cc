// The remote compile cache against a real redis-server on a loopback port
// (runtime/testing/redis_server.h): URL parsing and its messages; Put then
// Get and the stored value's exact bytes; a hit from a second process
// (testdata/cache_probe); the server killed mid-run, hung (SIGSTOP) or
// never there: a miss within a bounded time, exactly one warning, and a
// TieredCache that still serves its disk hits; corrupted and foreign remote
// values as misses that a Put replaces; the size cap on Put and on Get;
// under a fleet secret, values SET by hand as counted misses; AUTH as an
// ACL user and with requirepass; a lying server (a bulk header of 3 GB, a
// trickled reply) refused within bounds, before the value is buffered.

#include "runtime/redis_cache.h"

#include <cstdio>
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
#include "runtime/compile_cache.h"
#include "runtime/file_io.h"
#include "runtime/kernel_abi.h"
#include "runtime/testing/lying_redis_server.h"
#include "runtime/testing/redis_server.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::LyingRedisServer;
using ::lathe::testing::RedisServer;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kKey = Sha256Hex("key");
const std::string kOtherKey = Sha256Hex("other key");

// The payload a Get finds, or "<miss>" / "<error: ...>".
std::string Lookup(CacheBackend& cache, const std::string& key) {
  absl::StatusOr<std::optional<CacheHit>> hit = cache.Get(key);
  if (!hit.ok()) return absl::StrCat("<error: ", hit.status().ToString(), ">");
  if (!hit->has_value()) return "<miss>";
  return absl::StrCat((*hit)->tier, ":", (*hit)->bytes);
}

TEST(ParseRedisUrlTest, TakesHostAndPort) {
  ASSERT_OK_AND_ASSIGN(RedisAddress a, ParseRedisUrl("redis://127.0.0.1:6379"));
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6379);
  ASSERT_OK_AND_ASSIGN(a, ParseRedisUrl("redis://cache-1.fleet_a:1"));
  EXPECT_EQ(a.host, "cache-1.fleet_a");
  EXPECT_EQ(a.port, 1);
  ASSERT_OK_AND_ASSIGN(a, ParseRedisUrl("redis://h:65535"));
  EXPECT_EQ(a.port, 65535);
  EXPECT_EQ(a.user, "");
  EXPECT_EQ(a.password, "");
  EXPECT_FALSE(a.tls);
}

TEST(ParseRedisUrlTest, RedissAsksForTls) {
  ASSERT_OK_AND_ASSIGN(RedisAddress a,
                       ParseRedisUrl("rediss://lathe:s3cret@cache-1:6380"));
  EXPECT_TRUE(a.tls);
  EXPECT_EQ(a.host, "cache-1");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.user, "lathe");
  EXPECT_EQ(a.password, "s3cret");
  EXPECT_EQ(RedactRedisUrl("rediss://lathe:s3cret@h:1"),
            "rediss://lathe:***@h:1");
}

TEST(ParseRedisUrlTest, TakesAUserAndPasswordAndNeverShowsThePassword) {
  ASSERT_OK_AND_ASSIGN(RedisAddress a,
                       ParseRedisUrl("redis://lathe:s3cret@10.0.0.5:6379"));
  EXPECT_EQ(a.user, "lathe");
  EXPECT_EQ(a.password, "s3cret");
  EXPECT_EQ(a.host, "10.0.0.5");
  EXPECT_EQ(a.port, 6379);
  // requirepass: the default user; percent-escapes for ':', '@' and '%'.
  ASSERT_OK_AND_ASSIGN(a, ParseRedisUrl("redis://:p%40ss%3a%25w@h:1"));
  EXPECT_EQ(a.user, "");
  EXPECT_EQ(a.password, "p@ss:%w");
  EXPECT_EQ(RedactRedisUrl("redis://lathe:s3cret@h:1"),
            "redis://lathe:***@h:1");
  EXPECT_EQ(RedactRedisUrl("redis://:s3cret@h:1"), "redis://:***@h:1");
  EXPECT_EQ(RedactRedisUrl("redis://h:1"), "redis://h:1");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create("redis://lathe:s3cret@h:1"));
  EXPECT_EQ(cache->url(), "redis://lathe:***@h:1");
  EXPECT_THAT(ParseRedisUrl("redis://lathe:s3cret@h:x").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "remote cache URL 'redis://lathe:***@h:x' has a port "
                       "that is not a number from 1 to 65535 (expected "
                       "redis://[USER:PASSWORD@]HOST:PORT)"));
}

TEST(ParseRedisUrlTest, SaysWhatIsWrongWithAnythingElse) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://h:1", "is not a redis:// URL"},
      {"h:6379", "is not a redis:// URL"},
      {"", "is not a redis:// URL"},
      {"redis:/h:1", "is not a redis:// URL"},
      {"rediss://h", "has no :PORT"},
      {"redis://h", "has no :PORT"},
      {"redis://:1", "has no host"},
      {"redis://user@h:1", "names a user without a password (USER:PASSWORD@)"},
      {"redis://user:@h:1", "has an empty password"},
      {"redis://u:p%4@h:1",
       "has a malformed %XX escape in its user or password"},
      {"redis://u:p%zz@h:1",
       "has a malformed %XX escape in its user or password"},
      {"redis://h/x:1", "has a host that is not a name or an IPv4"},
      {"redis://[::1]:1", "has a host that is not a name or an IPv4"},
      {"redis://h:0", "has a port that is not a number from 1 to 65535"},
      {"redis://h:65536", "has a port that is not a number from 1 to 65535"},
      {"redis://h:", "has a port that is not a number from 1 to 65535"},
      {"redis://h:+1", "has a port that is not a number from 1 to 65535"},
      {"redis://h:1/0", "has a port that is not a number from 1 to 65535"},
  };
  for (const auto& [url, why] : cases) {
    EXPECT_THAT(
        ParseRedisUrl(url).status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(absl::StrCat("remote cache URL '",
                                        RedactRedisUrl(url), "' ", why))))
        << url;
    EXPECT_THAT(
        RedisCache::Create(url).status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr("(expected redis://[USER:PASSWORD@]HOST:PORT)")))
        << url;
  }
}

TEST(RedisCacheKeyTest, NamespacesKeysByKernelAbi) {
  EXPECT_EQ(RedisCache::RedisKey(kKey),
            absl::StrCat("lathe:", LATHE_KERNEL_ABI_VERSION, ":", kKey));
}

class RedisCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(redis_, RedisServer::Start());
    ASSERT_OK_AND_ASSIGN(cache_, RedisCache::Create(redis_->url()));
  }
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<RedisCache> cache_;
};

TEST_F(RedisCacheTest, PutThenGetStoresAChecksummedEntry) {
  EXPECT_EQ(Lookup(*cache_, kKey), "<miss>");
  ASSERT_OK(cache_->Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(*cache_, kKey), "redis:so bytes");
  EXPECT_EQ(Lookup(*cache_, kOtherKey), "<miss>");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> stored,
                       redis_->Get(RedisCache::RedisKey(kKey)));
  EXPECT_EQ(stored, EncodeCacheEntry(kKey, "so bytes"));
  EXPECT_EQ(cache_->warning(), "");
  EXPECT_THAT(cache_->Put("KEY", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("compile cache key 'KEY' is not 64")));
  EXPECT_THAT(cache_->Get("KEY").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Runs testdata/cache_probe with `args`; its stdout.
std::string Probe(const std::string& args) {
  std::string command = absl::StrCat(
      lathe::testing::RunfilePath("runtime/testdata/cache_probe"), " ", args);
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return "";
  std::string out;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << command << ": " << out;
  return out;
}

TEST_F(RedisCacheTest, ASecondProcessHitsWhatThisOnePut) {
  const std::string payload(200 << 10, 'p');
  ASSERT_OK(cache_->Put(kKey, payload));
  EXPECT_EQ(Probe(absl::StrCat(redis_->url(), " get ", kKey)),
            "hit " + Sha256Hex(payload) + "\n");
  EXPECT_EQ(Probe(absl::StrCat(redis_->url(), " get ", kOtherKey)), "miss\n");
  // And the other way round.
  EXPECT_EQ(Probe(absl::StrCat(redis_->url(), " put ", kOtherKey, " shared")),
            "stored\n");
  EXPECT_EQ(Lookup(*cache_, kOtherKey), "redis:shared");
}

// Runs `get` and returns how long it took, checking it is a miss.
absl::Duration TimedMiss(CacheBackend& cache, const std::string& key) {
  absl::Time start = absl::Now();
  EXPECT_EQ(Lookup(cache, key), "<miss>");
  return absl::Now() - start;
}

TEST_F(RedisCacheTest, AServerKilledMidRunIsOneWarningThenLocalOnly) {
  std::string dir = lathe::testing::TestTmpPath("killed_mid_run");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> remote,
                       RedisCache::Create(redis_->url()));
  RedisCache* remote_tier = remote.get();
  std::vector<std::unique_ptr<CacheBackend>> tiers;
  tiers.push_back(std::make_unique<DiskCache>(dir));
  tiers.push_back(std::move(remote));
  TieredCache tiered(std::move(tiers));
  ASSERT_OK(tiered.Put(kKey, "on disk and remote"));
  ASSERT_OK(cache_->Put(kOtherKey, "remote only"));
  EXPECT_EQ(Lookup(*cache_, kKey), "redis:on disk and remote");
  EXPECT_EQ(Lookup(tiered, kOtherKey), "redis:remote only");
  ASSERT_OK(RemoveTree(dir + "/" + kOtherKey + ".entry"));  // undo the fill

  redis_->Kill();
  ::testing::internal::CaptureStderr();
  EXPECT_LT(TimedMiss(*cache_, kKey), absl::Seconds(5));
  EXPECT_EQ(Lookup(*cache_, kKey), "<miss>");
  EXPECT_OK(cache_->Put(kKey, "dropped"));  // a no-op, not an error
  EXPECT_EQ(Lookup(tiered, kKey), "disk:on disk and remote");
  EXPECT_LT(TimedMiss(tiered, kOtherKey), absl::Seconds(5));
  EXPECT_OK(tiered.Put(kOtherKey, "disk now"));
  EXPECT_EQ(Lookup(tiered, kOtherKey), "disk:disk now");
  std::string printed = ::testing::internal::GetCapturedStderr();

  const std::string prefix =
      absl::StrCat("lathe: warning: remote compile cache ", redis_->url(),
                   " failed during GETRANGE (");
  EXPECT_THAT(cache_->warning(), StartsWith(prefix));
  EXPECT_THAT(cache_->warning(),
              HasSubstr("); using the local compile cache only"));
  EXPECT_THAT(remote_tier->warning(), StartsWith(prefix));
  // Exactly one line from each cache object, whatever it did after.
  EXPECT_EQ(printed, cache_->warning() + "\n" + remote_tier->warning() + "\n");
}

TEST_F(RedisCacheTest, AHungServerTimesOutWithinTheBound) {
  ASSERT_OK(cache_->Put(kKey, "x"));
  redis_->Pause();
  ::testing::internal::CaptureStderr();
  EXPECT_LT(TimedMiss(*cache_, kKey), absl::Seconds(5));
  EXPECT_OK(cache_->Put(kKey, "y"));
  std::string printed = ::testing::internal::GetCapturedStderr();
  redis_->Resume();
  EXPECT_THAT(cache_->warning(), HasSubstr("failed during GETRANGE ("));
  EXPECT_EQ(printed, cache_->warning() + "\n");
  // It never asks again, even now that the server answers.
  EXPECT_EQ(Lookup(*cache_, kKey), "<miss>");
}

TEST_F(RedisCacheTest, AServerThatIsNotThereIsOneWarning) {
  const std::string url = redis_->url();
  redis_->Kill();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(url));
  ::testing::internal::CaptureStderr();
  EXPECT_LT(TimedMiss(*cache, kKey), absl::Seconds(5));
  EXPECT_OK(cache->Put(kKey, "x"));
  EXPECT_EQ(Lookup(*cache, kKey), "<miss>");
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(cache->warning(),
              StartsWith(absl::StrCat("lathe: warning: remote compile cache ",
                                      url, " cannot be connected to (")));
  EXPECT_EQ(printed, cache->warning() + "\n");
}

TEST_F(RedisCacheTest, ACorruptedRemoteEntryIsAMissThatAPutReplaces) {
  const std::string redis_key = RedisCache::RedisKey(kKey);
  std::string flipped = EncodeCacheEntry(kKey, "payload");
  flipped.back() ^= 1;
  for (const std::string& bad :
       {std::string("garbage"), flipped,
        EncodeCacheEntry(kKey, "payload").substr(0, 40),
        EncodeCacheEntry(kOtherKey, "another key's entry")}) {
    ASSERT_OK(redis_->Set(redis_key, bad));
    EXPECT_EQ(Lookup(*cache_, kKey), "<miss>") << bad;
    ASSERT_OK(cache_->Put(kKey, "payload"));
    EXPECT_EQ(Lookup(*cache_, kKey), "redis:payload") << bad;
  }
  EXPECT_EQ(cache_->warning(), "");  // damage is not an outage
}

TEST_F(RedisCacheTest, EntriesOverTheCapAreRefusedAndNeverReadWhole) {
  RedisCache::Options options;
  options.max_entry_bytes = 1000;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> small,
                       RedisCache::Create(redis_->url(), options));
  // The header of a payload of three digits' size.
  const int64_t header =
      EncodeCacheEntry(kKey, std::string(900, 'f')).size() - 900;
  const std::string fits(1000 - header, 'f');
  ASSERT_EQ(EncodeCacheEntry(kKey, fits).size(), 1000u);
  ASSERT_OK(small->Put(kKey, fits));
  EXPECT_EQ(Lookup(*small, kKey), "redis:" + fits);
  EXPECT_THAT(small->Put(kKey, fits + "x"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("a compile cache entry of 1001 bytes is over "
                                 "the redis cache's limit of 1000 bytes")));
  // A whole, valid entry one byte over the cap, stored by a cache with a
  // larger cap, and a huge value: misses.
  ASSERT_OK(cache_->Put(kOtherKey, fits + "x"));
  EXPECT_EQ(Lookup(*small, kOtherKey), "<miss>");
  EXPECT_EQ(Lookup(*cache_, kOtherKey), "redis:" + fits + "x");
  ASSERT_OK(
      redis_->Set(RedisCache::RedisKey(kKey), std::string(32 << 20, 'h')));
  EXPECT_EQ(Lookup(*small, kKey), "<miss>");
  EXPECT_EQ(small->warning(), "");
}

TEST_F(RedisCacheTest, UnderASecretAValueSetByHandIsAMiss) {
  RedisCache::Options options;
  options.secret = "fleet secret";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> fleet,
                       RedisCache::Create(redis_->url(), options));
  const std::string redis_key = RedisCache::RedisKey(kKey);
  // A whole, well-formed entry, as anyone who can reach the server can SET.
  ASSERT_OK(redis_->Set(redis_key, EncodeCacheEntry(kKey, "planted code")));
  // Without a secret the remote tier is trusted, as documented.
  EXPECT_EQ(Lookup(*cache_, kKey), "redis:planted code");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(*fleet, kKey), "<miss>");
  ASSERT_OK(redis_->Set(redis_key,
                        EncodeCacheEntry(kKey, "planted code", "a guess")));
  EXPECT_EQ(Lookup(*fleet, kKey), "<miss>");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(fleet->codec().untrusted(), 2);
  EXPECT_EQ(printed, fleet->codec().warning() + "\n");  // once
  EXPECT_EQ(fleet->codec().warning(),
            "lathe: warning: remote compile cache " + redis_->url() +
                ": refused an entry: compile cache entry has no HMAC, and a "
                "cache secret is set (not written by a holder of "
                "LATHE_CACHE_SECRET; compiling instead)");
  EXPECT_EQ(fleet->warning(), "");  // the server itself is still used
  ASSERT_OK(fleet->Put(kKey, "compiled"));
  EXPECT_EQ(Lookup(*fleet, kKey), "redis:compiled");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> stored,
                       redis_->Get(redis_key));
  EXPECT_EQ(stored, EncodeCacheEntry(kKey, "compiled", "fleet secret"));
}

TEST_F(RedisCacheTest, AuthenticatesAsAnAclUser) {
  ASSERT_OK(redis_->Run(
      {"ACL", "SETUSER", "lathe", "on", ">s3cret p@ss", "~lathe:*", "+@all"}));
  ASSERT_OK(redis_->Run({"ACL", "SETUSER", "default", "off"}));
  const std::string host_port = redis_->url().substr(8);  // after redis://
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisCache> user,
      RedisCache::Create("redis://lathe:s3cret%20p%40ss@" + host_port));
  ASSERT_OK(user->Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(*user, kKey), "redis:so bytes");
  EXPECT_EQ(user->warning(), "");
  // A second client with the same credentials sees it.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisCache> again,
      RedisCache::Create("redis://lathe:s3cret%20p%40ss@" + host_port));
  EXPECT_EQ(Lookup(*again, kKey), "redis:so bytes");
  // Without AUTH (the default user is off) nothing is read or written.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(*cache_, kKey), "<miss>");
  ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(cache_->warning(), HasSubstr("refused GETRANGE (NOAUTH"));
  // A wrong password is one warning naming the user, never the password.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> wrong,
                       RedisCache::Create("redis://lathe:guess@" + host_port));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(*wrong, kKey), "<miss>");
  EXPECT_OK(wrong->Put(kKey, "x"));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, wrong->warning() + "\n");
  EXPECT_THAT(wrong->warning(),
              HasSubstr("remote compile cache redis://lathe:***@" + host_port +
                        " refused the credentials of user 'lathe' (WRONGPASS"));
  EXPECT_THAT(printed, Not(HasSubstr("guess")));
}

TEST_F(RedisCacheTest, AuthenticatesWithRequirepass) {
  ASSERT_OK(redis_->Run({"CONFIG", "SET", "requirepass", "hunter2"}));
  const std::string host_port = redis_->url().substr(8);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> auth,
                       RedisCache::Create("redis://:hunter2@" + host_port));
  ASSERT_OK(auth->Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(*auth, kKey), "redis:so bytes");
  EXPECT_EQ(auth->warning(), "");
  // Without credentials: NOAUTH, a miss and one warning saying what to do.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(*cache_, kKey), "<miss>");
  EXPECT_OK(cache_->Put(kKey, "x"));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, cache_->warning() + "\n");
  EXPECT_THAT(cache_->warning(),
              HasSubstr("refused GETRANGE (NOAUTH Authentication required.; "
                        "give credentials as "
                        "redis://USER:PASSWORD@HOST:PORT)"));
}

TEST(RedisCacheReplyTest, AReplyOverTheCapIsRefusedBeforeItIsBuffered) {
  ::lathe::testing::ExpectAReplyOverTheCapIsRefusedUnread(
      RedisCache::Options(), LyingRedisServer::Reply());
}

TEST(RedisCacheReplyTest, ATrickledReplyIsCutOffAtTheTransferTimeout) {
  // A value within the cap, a byte every 20 ms: no single read times out.
  LyingRedisServer server({.announced = 1 << 20,
                           .stream = 1 << 20,
                           .chunk = 1,
                           .pause = absl::Milliseconds(20)});
  RedisCache::Options options;
  options.transfer_timeout = absl::Milliseconds(500);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> cache,
                       RedisCache::Create(server.url(), options));
  ::testing::internal::CaptureStderr();
  const absl::Time start = absl::Now();
  EXPECT_EQ(Lookup(*cache, kKey), "<miss>");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(
      cache->warning(),
      HasSubstr("failed during GETRANGE (no whole reply within 500ms)"));
}

TEST_F(RedisCacheTest, ManyThreadsShareOneConnection) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 20; ++i) {
        std::string key = Sha256Hex(absl::StrCat(t, ":", i));
        std::string value = absl::StrCat("value ", t, ":", i);
        EXPECT_OK(cache_->Put(key, value));
        EXPECT_EQ(Lookup(*cache_, key), "redis:" + value);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cache_->warning(), "");
}

}  // namespace
}  // namespace lathe
