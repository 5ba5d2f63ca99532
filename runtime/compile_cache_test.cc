// The compile cache's local tiers: CacheKey against its encoding written
// out by hand; MemoryCache's LRU bound; DiskCache's files (their exact
// bytes and modes, every kind of damage and a killed writer's leftovers as
// misses that a Put repairs, key validation, the size cap, many threads
// and many processes writing one key while every read sees a whole
// entry); what DiskCache refuses to trust (a directory others can write or
// another user owns, an entry of another user's, a symlink, FIFO, device
// or directory at an entry's path, an entry without the secret's HMAC);
// TieredCache's fills; the environment's configuration.

#include "runtime/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cache_backend.h"
#include "runtime/checksum.h"
#include "runtime/file_io.h"
#include "runtime/kernel_abi.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kKey = Sha256Hex("key");
const std::string kOtherKey = Sha256Hex("other key");

// A fresh directory named after the running test.
std::string TestDir() {
  std::string dir = absl::StrCat(
      std::getenv("TEST_TMPDIR"), "/",
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  EXPECT_OK(RemoveTree(dir));
  return dir;
}

// The entries of `dir` (none when it cannot be read).
std::vector<std::string> List(const std::string& dir) {
  return ListDirectory(dir).value_or(std::vector<std::string>());
}

// The payload a Get finds, or "<miss>" / "<error: ...>".
std::string Lookup(CacheBackend& cache, const std::string& key) {
  absl::StatusOr<std::optional<CacheHit>> hit = cache.Get(key);
  if (!hit.ok()) return absl::StrCat("<error: ", hit.status().ToString(), ">");
  if (!hit->has_value()) return "<miss>";
  return (*hit)->bytes;
}

// The tier a Get's hit came from, or "<miss>".
std::string TierOf(CacheBackend& cache, const std::string& key) {
  absl::StatusOr<std::optional<CacheHit>> hit = cache.Get(key);
  EXPECT_OK(hit.status());
  return hit.ok() && hit->has_value() ? (*hit)->tier : "<miss>";
}

TEST(CacheKeyTest, HashesTheLengthPrefixedFieldsAndTheAbi) {
  const std::vector<std::string> flags = {"-O3", "-march=native"};
  EXPECT_EQ(CacheKey("int f();", "g++ 12.2.0", flags),
            Sha256Hex(absl::StrCat("lathe-cache-key 1\nabi ",
                                   LATHE_KERNEL_ABI_VERSION,
                                   "\n8:int f();\n10:g++ 12.2.0\n2\n"
                                   "3:-O3\n13:-march=native\n")));
}

TEST(CacheKeyTest, EveryFieldAndEveryBoundaryCounts) {
  const std::vector<std::string> none;
  const std::vector<std::string> one = {"-a -b"};
  const std::vector<std::string> two = {"-a", "-b"};
  const std::vector<std::string> swapped = {"-b", "-a"};
  const std::string base = CacheKey("ab", "c", two);
  EXPECT_OK(ValidateCacheKey(base));
  EXPECT_EQ(base, CacheKey("ab", "c", two));
  EXPECT_NE(base, CacheKey("a", "bc", two));      // source/identity boundary
  EXPECT_NE(base, CacheKey("ab", "c", one));      // flag boundaries
  EXPECT_NE(base, CacheKey("ab", "c", swapped));  // flag order
  EXPECT_NE(base, CacheKey("ab", "c", none));
  EXPECT_NE(base, CacheKey("ab ", "c", two));
  EXPECT_NE(base, CacheKey("ab", "c ", two));
  EXPECT_NE(CacheKey("", "", none), CacheKey("", "", {""}));
}

TEST(MemoryCacheTest, RoundTripsAndMisses) {
  MemoryCache cache;
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_OK(cache.Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(cache, kKey), "so bytes");
  EXPECT_EQ(TierOf(cache, kKey), "memory");
  EXPECT_EQ(Lookup(cache, kOtherKey), "<miss>");
  ASSERT_OK(cache.Put(kKey, "new"));
  EXPECT_EQ(Lookup(cache, kKey), "new");
  EXPECT_EQ(cache.bytes(), 3);
}

TEST(MemoryCacheTest, EvictsTheLeastRecentlyUsedPastItsBound) {
  MemoryCache cache(10);
  const std::string a = Sha256Hex("a"), b = Sha256Hex("b"), c = Sha256Hex("c");
  ASSERT_OK(cache.Put(a, "aaaa"));
  ASSERT_OK(cache.Put(b, "bbbb"));
  EXPECT_EQ(Lookup(cache, a), "aaaa");  // a is now the most recent
  ASSERT_OK(cache.Put(c, "cccc"));      // 12 > 10: b goes
  EXPECT_EQ(Lookup(cache, b), "<miss>");
  EXPECT_EQ(Lookup(cache, a), "aaaa");
  EXPECT_EQ(Lookup(cache, c), "cccc");
  EXPECT_EQ(cache.bytes(), 8);
  ASSERT_OK(cache.Put(b, "0123456789"));  // exactly the bound: all else goes
  EXPECT_EQ(cache.bytes(), 10);
  EXPECT_EQ(Lookup(cache, a), "<miss>");
  EXPECT_THAT(cache.Put(a, "0123456789x"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("a compile cache entry of 11 bytes is over "
                                 "the memory cache's limit of 10 bytes")));
  EXPECT_EQ(Lookup(cache, b), "0123456789");
}

TEST(MemoryCacheTest, ManyThreadsStayWithinTheBound) {
  MemoryCache cache(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 200; ++i) {
        std::string key = Sha256Hex(absl::StrCat(t, ":", i % 20));
        std::string value(50, static_cast<char>('a' + t));
        ASSERT_OK(cache.Put(key, value));
        std::string got = Lookup(cache, key);
        EXPECT_TRUE(got == value || got == "<miss>") << got;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(cache.bytes(), 1000);
  EXPECT_EQ(cache.bytes() % 50, 0);
}

TEST(CacheKeyValidationTest, EveryTierRefusesAKeyThatIsNotASha256) {
  std::string dir = TestDir();
  MemoryCache memory;
  DiskCache disk(dir + "/cache");
  for (CacheBackend* cache : std::vector<CacheBackend*>{&memory, &disk}) {
    EXPECT_THAT(cache->Put("../../escape", "x"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("compile cache key '../../escape' is not "
                                   "64 lowercase hex digits")));
    EXPECT_THAT(cache->Get("../../escape").status(),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(List(dir), IsEmpty());  // nothing written anywhere
}

TEST(DiskCacheTest, WritesOneEntryFileWithTheDocumentedBytes) {
  std::string dir = TestDir() + "/a/b";
  DiskCache cache(dir);
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  EXPECT_THAT(List(dir), IsEmpty());  // a Get creates nothing
  ASSERT_OK(cache.Put(kKey, "so bytes"));
  EXPECT_THAT(List(dir), ElementsAre(kKey + ".entry"));
  EXPECT_EQ(cache.EntryPath(kKey), dir + "/" + kKey + ".entry");
  ASSERT_OK_AND_ASSIGN(std::string file,
                       ReadFileLimited(cache.EntryPath(kKey), 1 << 20));
  EXPECT_EQ(file, "lathe-cache-entry 2 " + kKey + " 8 " +
                      Sha256Hex("so bytes") + " -\nso bytes");
  // Closed to others: the directory 0700, the entry 0600.
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(cache.EntryPath(kKey).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Lookup(cache, kKey), "so bytes");
  EXPECT_EQ(TierOf(cache, kKey), "disk");
  // Another cache object (another process) on the same directory.
  DiskCache again(dir);
  EXPECT_EQ(Lookup(again, kKey), "so bytes");
  EXPECT_EQ(Lookup(again, kOtherKey), "<miss>");
  // The directory removed while in use (rm -rf ~/.cache/lathe): made again.
  ASSERT_OK(RemoveTree(dir));
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_OK(cache.Put(kKey, "so bytes"));
  EXPECT_EQ(Lookup(cache, kKey), "so bytes");
}

TEST(DiskCacheTest, EachDamagedEntryIsAMissThatAPutReplaces) {
  std::string dir = TestDir();
  DiskCache cache(dir);
  const std::string good = EncodeCacheEntry(kKey, "payload");
  std::string flipped = good;
  flipped.back() ^= 1;
  std::string header = good;
  header[0] = 'X';
  const std::vector<std::string> damaged = {
      "",
      flipped,
      good.substr(0, good.size() - 3),       // truncated payload
      good.substr(0, 30),                    // truncated header
      header,                                // not an entry
      EncodeCacheEntry(kOtherKey, "other"),  // another key's entry
      good + "trailing",
  };
  for (const std::string& bad : damaged) {
    ASSERT_OK(MakeDirectories(dir));
    ASSERT_OK(WriteFileAtomic(cache.EntryPath(kKey), bad));
    EXPECT_EQ(Lookup(cache, kKey), "<miss>") << bad;
    ASSERT_OK(cache.Put(kKey, "payload"));
    EXPECT_EQ(Lookup(cache, kKey), "payload") << bad;
  }
  // A directory where the entry should be is a miss too (and Put says so).
  ASSERT_OK(RemoveTree(cache.EntryPath(kKey)));
  ASSERT_EQ(::mkdir(cache.EntryPath(kKey).c_str(), 0755), 0);
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  EXPECT_THAT(cache.Put(kKey, "payload"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("cannot rename into place")));
}

// A uid no test runs as (nobody).
constexpr uid_t kOtherUser = 65534;

TEST(DiskCacheTest, ADirectoryOthersCanWriteIsNeverUsedWithOneWarning) {
  const std::string dir = TestDir();
  ASSERT_OK(MakeDirectories(dir));
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  // A whole, well-formed entry someone in the group planted.
  ASSERT_OK(WriteFileAtomic(dir + "/" + kKey + ".entry",
                            EncodeCacheEntry(kKey, "planted code")));
  DiskCache cache(dir);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  EXPECT_OK(cache.Put(kOtherKey, "mine"));  // not used: nothing written
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache.warning(),
            "lathe: warning: not using the compile cache directory: " + dir +
                " is writable by its group or others (mode 0775) (it must "
                "belong to the user running lathe and be closed to others, "
                "as ~/.ssh is)");
  EXPECT_EQ(err, cache.warning() + "\n");  // once
  EXPECT_THAT(List(dir), ElementsAre(kKey + ".entry"));
}

TEST(DiskCacheTest, ADirectoryOfAnotherUserIsNeverUsed) {
  const std::string dir = TestDir();
  ASSERT_OK(MakeDirectories(dir));
  ASSERT_OK(WriteFileAtomic(dir + "/" + kKey + ".entry",
                            EncodeCacheEntry(kKey, "planted code")));
  // As a user who does not own it (the directory is this process's).
  DiskCache::Options as_other;
  as_other.owner = ::geteuid() + 1;
  DiskCache other(dir, as_other);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(other, kKey), "<miss>");
  ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(other.warning(),
              HasSubstr(absl::StrCat(dir, " is owned by uid ", ::geteuid(),
                                     ", not by uid ", ::geteuid() + 1,
                                     " (the user running lathe)")));
  // On a directory another user really owns, where this process may give
  // one away (root outside a sandbox's user namespace).
  if (::chown(dir.c_str(), kOtherUser, kOtherUser) == 0) {
    DiskCache cache(dir);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(Lookup(cache, kKey), "<miss>");
    ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(cache.warning(),
                HasSubstr(" is owned by uid 65534, not by uid 0"));
  }
}

TEST(DiskCacheTest, AnEntryOthersCouldHaveWrittenIsAMiss) {
  const std::string dir = TestDir();
  DiskCache cache(dir);
  ASSERT_OK(cache.Put(kKey, "mine"));
  ASSERT_EQ(::chmod(cache.EntryPath(kKey).c_str(), 0666), 0);
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_OK(cache.Put(kKey, "mine"));
  EXPECT_EQ(Lookup(cache, kKey), "mine");
  // An entry another user owns, where this process may give one away.
  if (::chown(cache.EntryPath(kKey).c_str(), kOtherUser, kOtherUser) == 0) {
    EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  }
  EXPECT_EQ(cache.warning(), "");  // the directory itself is fine
}

TEST(DiskCacheTest, ASymlinkFifoDeviceOrDirectoryAtAnEntryPathIsAPromptMiss) {
  const std::string dir = TestDir();
  DiskCache cache(dir);
  ASSERT_OK(cache.Put(kOtherKey, "elsewhere"));
  const std::string path = cache.EntryPath(kKey);
  // A symlink to a good entry (of another key's name) is not followed.
  const std::string target = dir + "/target";
  ASSERT_OK(
      WriteFileAtomic(target, EncodeCacheEntry(kKey, "linked"), true, 0600));
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_EQ(::unlink(path.c_str()), 0);
  // A FIFO: a blocking open would wait for a writer forever.
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::future<std::string> got =
      std::async(std::launch::async, [&] { return Lookup(cache, kKey); });
  if (got.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "Get blocked on a FIFO at " << path;
    int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // unblock it
    if (w >= 0) ::close(w);
  }
  EXPECT_EQ(got.get(), "<miss>");
  ASSERT_EQ(::unlink(path.c_str()), 0);
  // A directory.
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_EQ(::rmdir(path.c_str()), 0);
  // A device (/dev/zero's numbers: an endless read), where one can be made.
  if (::mknod(path.c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0) {
    EXPECT_EQ(Lookup(cache, kKey), "<miss>");
    ASSERT_EQ(::unlink(path.c_str()), 0);
  }
  EXPECT_EQ(Lookup(cache, kOtherKey), "elsewhere");
}

TEST(DiskCacheTest, UnderASecretAnEntryWithoutItsHmacIsAMiss) {
  const std::string dir = TestDir();
  DiskCache::Options options;
  options.secret = "fleet secret";
  DiskCache cache(dir, options);
  ASSERT_OK(cache.Put(kKey, "signed"));
  EXPECT_EQ(Lookup(cache, kKey), "signed");
  ASSERT_OK_AND_ASSIGN(std::string file,
                       ReadFileLimited(cache.EntryPath(kKey), 1 << 20));
  EXPECT_EQ(file, EncodeCacheEntry(kKey, "signed", "fleet secret"));
  // An entry written without the secret (by hand, or by an older lathe).
  ASSERT_OK(WriteFileAtomic(cache.EntryPath(kKey),
                            EncodeCacheEntry(kKey, "planted"), true, 0600));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache.codec().untrusted(), 2);
  EXPECT_THAT(err, HasSubstr("disk compile cache " + dir +
                             ": refused an entry: compile cache entry has no "
                             "HMAC, and a cache secret is set"));
  EXPECT_EQ(err, cache.codec().warning() + "\n");  // once
  ASSERT_OK(cache.Put(kKey, "signed"));
  EXPECT_EQ(Lookup(cache, kKey), "signed");
  // Without a secret, the same directory's signed entries still read.
  DiskCache open_cache(dir);
  EXPECT_EQ(Lookup(open_cache, kKey), "signed");
}

TEST(DiskCacheTest, AKilledWritersLeftoversAreMissesNeverErrors) {
  std::string dir = TestDir();
  DiskCache cache(dir);
  ASSERT_OK(MakeDirectories(dir));
  const std::string good = EncodeCacheEntry(kKey, std::string(4096, 'x'));
  // Killed before its rename: a partial temporary file, no entry.
  const std::string leftover = dir + "/." + kKey + ".entry.tmp-Ab12Cd";
  ASSERT_OK(WriteFileAtomic(leftover, good.substr(0, 1000)));
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  // A final file cut short (a copy or a file system that lost the tail).
  ASSERT_OK(WriteFileAtomic(cache.EntryPath(kKey), good.substr(0, 2000)));
  EXPECT_EQ(Lookup(cache, kKey), "<miss>");
  ASSERT_OK(cache.Put(kKey, std::string(4096, 'x')));
  EXPECT_EQ(Lookup(cache, kKey), std::string(4096, 'x'));
  // The leftover is ignored, not read, not an error.
  EXPECT_THAT(List(dir),
              ElementsAre("." + kKey + ".entry.tmp-Ab12Cd", kKey + ".entry"));
}

TEST(DiskCacheTest, RefusesAnEntryOverItsCapAndMissesOneOnDisk) {
  std::string dir = TestDir();
  DiskCache small(dir, 10);
  EXPECT_THAT(small.Put(kKey, std::string(11, 'x')),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("a compile cache entry of 11 bytes is over "
                                 "the disk cache's limit of 10 bytes")));
  ASSERT_OK(small.Put(kKey, std::string(10, 'x')));
  EXPECT_EQ(Lookup(small, kKey), std::string(10, 'x'));
  DiskCache large(dir);
  ASSERT_OK(large.Put(kOtherKey, std::string(1000, 'y')));
  EXPECT_EQ(Lookup(small, kOtherKey), "<miss>");  // never read whole
  EXPECT_EQ(Lookup(large, kOtherKey), std::string(1000, 'y'));
}

// Payload w of the concurrent writers (large, so writes take a while).
std::string Payload(int w) {
  return std::string(256 << 10, static_cast<char>('A' + w)) + absl::StrCat(w);
}

// Reads `cache`'s entry for kKey, raw and through Get, until `done`: every
// read must be absent or one writer's whole entry.
void ReadWhileWriting(DiskCache& cache, int writers,
                      const std::function<bool()>& done) {
  std::vector<std::string> entries;
  for (int w = 0; w < writers; ++w) {
    entries.push_back(EncodeCacheEntry(kKey, Payload(w)));
  }
  while (!done()) {
    absl::StatusOr<std::string> raw =
        ReadFileLimited(cache.EntryPath(kKey), 1 << 24);
    if (raw.ok()) {
      bool is_whole =
          std::find(entries.begin(), entries.end(), *raw) != entries.end();
      EXPECT_TRUE(is_whole) << "a torn entry of " << raw->size() << " bytes";
      if (!is_whole) return;
    } else {
      EXPECT_THAT(raw.status(), StatusIs(absl::StatusCode::kNotFound));
    }
    std::string got = Lookup(cache, kKey);
    if (got != "<miss>") {
      EXPECT_TRUE(got.size() == Payload(0).size() &&
                  got == Payload(got.back() - '0'))
          << got.size();
    }
  }
}

TEST(DiskCacheTest, ManyThreadsWritingOneKeyLeaveEveryReadWhole) {
  std::string dir = TestDir();
  DiskCache cache(dir);
  constexpr int kWriters = 6;
  std::atomic<int> running{kWriters};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&cache, &running, w] {
      for (int i = 0; i < 15; ++i) EXPECT_OK(cache.Put(kKey, Payload(w)));
      running--;
    });
  }
  ReadWhileWriting(cache, kWriters, [&] { return running == 0; });
  for (std::thread& t : threads) t.join();
  std::string last = Lookup(cache, kKey);
  EXPECT_EQ(last, Payload(last.back() - '0'));
  EXPECT_THAT(List(dir), ElementsAre(kKey + ".entry"));  // no temporaries
}

TEST(DiskCacheTest, ManyProcessesWritingOneKeyLeaveEveryReadWhole) {
  std::string dir = TestDir();
  DiskCache cache(dir);
  constexpr int kWriters = 6;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child only writes, then leaves without running any destructor.
      bool ok = true;
      for (int i = 0; i < 15; ++i) ok = ok && cache.Put(kKey, Payload(w)).ok();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  std::vector<int> exit_codes;
  auto all_exited = [&] {
    for (auto it = children.begin(); it != children.end();) {
      int status;
      if (::waitpid(*it, &status, WNOHANG) == *it) {
        exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        it = children.erase(it);
      } else {
        ++it;
      }
    }
    return children.empty();
  };
  ReadWhileWriting(cache, kWriters, all_exited);
  EXPECT_THAT(exit_codes, ::testing::Each(0));
  EXPECT_EQ(exit_codes.size(), static_cast<size_t>(kWriters));
  std::string last = Lookup(cache, kKey);
  EXPECT_EQ(last, Payload(last.back() - '0'));
  EXPECT_THAT(List(dir), ElementsAre(kKey + ".entry"));
}

TEST(TieredCacheTest, AHitInALowerTierFillsTheOnesAbove) {
  std::string dir = TestDir();
  auto memory = std::make_unique<MemoryCache>();
  auto disk = std::make_unique<DiskCache>(dir);
  MemoryCache* memory_tier = memory.get();
  DiskCache* disk_tier = disk.get();
  std::vector<std::unique_ptr<CacheBackend>> tiers;
  tiers.push_back(std::move(memory));
  tiers.push_back(std::move(disk));
  TieredCache cache(std::move(tiers));
  EXPECT_EQ(cache.name(), "tiered(memory,disk)");
  EXPECT_EQ(TierOf(cache, kKey), "<miss>");
  ASSERT_OK(disk_tier->Put(kKey, "from disk"));
  EXPECT_EQ(TierOf(cache, kKey), "disk");
  EXPECT_EQ(Lookup(*memory_tier, kKey), "from disk");  // filled
  EXPECT_EQ(TierOf(cache, kKey), "memory");
  ASSERT_OK(cache.Put(kOtherKey, "both"));
  EXPECT_EQ(Lookup(*memory_tier, kOtherKey), "both");
  EXPECT_EQ(Lookup(*disk_tier, kOtherKey), "both");
  EXPECT_THAT(cache.Get("nope").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("compile cache key 'nope'")));
}

TEST(TieredCacheTest, PutTriesEveryTierAndReportsTheFirstError) {
  std::string dir = TestDir();
  auto memory = std::make_unique<MemoryCache>(4);
  MemoryCache* memory_tier = memory.get();
  std::vector<std::unique_ptr<CacheBackend>> tiers;
  tiers.push_back(std::move(memory));
  tiers.push_back(std::make_unique<DiskCache>(dir));
  TieredCache cache(std::move(tiers));
  EXPECT_THAT(cache.Put(kKey, "too long"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("memory cache's limit of 4 bytes")));
  EXPECT_EQ(Lookup(*memory_tier, kKey), "<miss>");
  // Stored on disk all the same; a hit too large for the memory tier
  // stays a disk hit.
  EXPECT_EQ(TierOf(cache, kKey), "disk");
  EXPECT_EQ(TierOf(cache, kKey), "disk");
}

// Sets (or, for nullptr, unsets) environment variable `name` for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The tiers' names and the disk tier's directory ("" without one).
std::string Describe(const TieredCache& cache) {
  std::string out = cache.name();
  for (const std::unique_ptr<CacheBackend>& tier : cache.tiers()) {
    if (auto* disk = dynamic_cast<DiskCache*>(tier.get())) {
      absl::StrAppend(&out, " ", disk->dir());
    }
  }
  return out;
}

// A prelude a compiler can precompile apart: whole lines at the source's
// start, the last not continued onto the rest.
TEST(BeginsWithPreludeTest, WholeLinesAtTheStartOnly) {
  EXPECT_TRUE(BeginsWithPrelude("int a;\nint b;\n", "int a;\n"));
  EXPECT_FALSE(BeginsWithPrelude("int a;\nint b;\n", "int a;"));
  EXPECT_FALSE(BeginsWithPrelude("#define A \\\n 1\n", "#define A \\\n"));
  EXPECT_FALSE(BeginsWithPrelude("int b;\nint a;\n", "int a;\n"));
  EXPECT_FALSE(BeginsWithPrelude("int a;\n", ""));
}

TEST(PrivateCacheDirectoryTest, IsATrustedUnsignedDiskTiersDirectory) {
  const std::string root = TestDir();
  const std::string dir = root + "/made";
  std::vector<std::unique_ptr<CacheBackend>> tiers;
  tiers.push_back(std::make_unique<MemoryCache>());
  tiers.push_back(std::make_unique<DiskCache>(dir));
  TieredCache tiered(std::move(tiers));
  EXPECT_EQ(PrivateCacheDirectory(&tiered), dir);
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);  // made, as a Put makes it
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  MemoryCache memory;
  EXPECT_EQ(PrivateCacheDirectory(&memory), "");
  EXPECT_EQ(PrivateCacheDirectory(nullptr), "");
  // Signed entries are read whole and checked; a file read in place
  // cannot be.
  DiskCache::Options options;
  options.secret = "fleet";
  DiskCache signs(root + "/signed", options);
  EXPECT_EQ(PrivateCacheDirectory(&signs), "");
  // A directory others can write is not used for anything.
  const std::string open = root + "/open";
  ASSERT_OK(MakeDirectories(open));
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  DiskCache refused(open);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(PrivateCacheDirectory(&refused), "");
  ::testing::internal::GetCapturedStderr();
}

TEST(CompileCacheFromEnvironmentTest, NamesItsTiersAsTheEnvironmentSays) {
  ScopedEnv remote("LATHE_REMOTE_CACHE", nullptr);
  {
    ScopedEnv dir("LATHE_CACHE_DIR", "/x/cache");
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory,disk) /x/cache");
  }
  {
    ScopedEnv dir("LATHE_CACHE_DIR", "off");
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory)");
  }
  ScopedEnv dir("LATHE_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnv home("HOME", "/home/u");
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory,disk) /xdg/lathe");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/u");
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory,disk) /home/u/.cache/lathe");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory)");
  }
}

TEST(CompileCacheFromEnvironmentTest, ARemoteCacheIsARedisUrl) {
  ScopedEnv dir("LATHE_CACHE_DIR", "off");
  {
    // Parsed, not connected to: nothing listens on port 1.
    ScopedEnv remote("LATHE_REMOTE_CACHE", "redis://127.0.0.1:1");
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory,redis)");
  }
  ScopedEnv remote("LATHE_REMOTE_CACHE", "http://127.0.0.1:6379");
  EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("LATHE_REMOTE_CACHE: remote cache URL "
                                 "'http://127.0.0.1:6379' is not a redis:// "
                                 "URL")));
}

TEST(CompileCacheFromEnvironmentTest, ARemoteCacheOverTlsTakesItsFiles) {
  ScopedEnv dir("LATHE_CACHE_DIR", "off");
  ScopedEnv cert("LATHE_REMOTE_CACHE_CERT_FILE", nullptr);
  ScopedEnv key("LATHE_REMOTE_CACHE_KEY_FILE", nullptr);
  {
    // The system's trust store; parsed and loaded, not connected to.
    ScopedEnv remote("LATHE_REMOTE_CACHE", "rediss://127.0.0.1:1");
    ScopedEnv ca("LATHE_REMOTE_CACHE_CA_FILE", nullptr);
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(Describe(*cache), "tiered(memory,redis)");
  }
  const std::string absent = TestDir() + "/absent-ca.pem";
  ScopedEnv ca("LATHE_REMOTE_CACHE_CA_FILE", absent.c_str());
  {
    ScopedEnv remote("LATHE_REMOTE_CACHE", "rediss://:pw@127.0.0.1:1");
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "LATHE_REMOTE_CACHE: remote cache "
                         "rediss://:***@127.0.0.1:1: TLS CA file '" +
                             absent +
                             "' cannot be read (No such file or "
                             "directory)"));
  }
  {
    // Never plaintext when TLS files are set.
    ScopedEnv remote("LATHE_REMOTE_CACHE", "redis://127.0.0.1:1");
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is plaintext but TLS files are given")));
  }
  ScopedEnv no_ca("LATHE_REMOTE_CACHE_CA_FILE", nullptr);
  ScopedEnv only_cert("LATHE_REMOTE_CACHE_CERT_FILE", absent.c_str());
  ScopedEnv remote("LATHE_REMOTE_CACHE", "rediss://127.0.0.1:1");
  EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs both a certificate file and a key")));
}

// The last field of `entry`'s header line (its HMAC, or "-").
std::string HmacField(const std::string& entry) {
  size_t eol = entry.find('\n');
  size_t space = entry.rfind(' ', eol);
  return entry.substr(space + 1, eol - space - 1);
}

// How a cache from the environment signs: the HMAC field of the entry its
// disk tier writes for "x".
std::string DiskSecretMark(const TieredCache& cache) {
  for (const std::unique_ptr<CacheBackend>& tier : cache.tiers()) {
    if (auto* disk = dynamic_cast<DiskCache*>(tier.get())) {
      if (!disk->Put(kKey, "x").ok()) return "<put failed>";
      absl::StatusOr<std::string> file =
          ReadFileLimited(disk->EntryPath(kKey), 1 << 20);
      return file.ok() ? HmacField(*file) : "<none>";
    }
  }
  return "<no disk tier>";
}

TEST(CompileCacheFromEnvironmentTest, TheSecretIsAVariableOrAFile) {
  const std::string dir = TestDir();
  ScopedEnv remote("LATHE_REMOTE_CACHE", nullptr);
  ScopedEnv cache_dir("LATHE_CACHE_DIR", (dir + "/cache").c_str());
  const std::string mark = HmacField(EncodeCacheEntry(kKey, "x", "s3cret"));
  ASSERT_EQ(mark.size(), 64u);
  {
    ScopedEnv secret("LATHE_CACHE_SECRET", "s3cret");
    ScopedEnv file("LATHE_CACHE_SECRET_FILE", nullptr);
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(DiskSecretMark(*cache), mark);
  }
  ASSERT_OK(MakeDirectories(dir));
  const std::string key_file = dir + "/key";
  ASSERT_OK(WriteFileAtomic(key_file, "s3cret\n", true, 0600));
  {
    ScopedEnv secret("LATHE_CACHE_SECRET", nullptr);
    ScopedEnv file("LATHE_CACHE_SECRET_FILE", key_file.c_str());
    ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
    EXPECT_EQ(DiskSecretMark(*cache), mark);
    ScopedEnv both("LATHE_CACHE_SECRET", "s3cret");
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "LATHE_CACHE_SECRET and LATHE_CACHE_SECRET_FILE are "
                         "both set; set one"));
  }
  {
    ScopedEnv secret("LATHE_CACHE_SECRET", nullptr);
    ScopedEnv file("LATHE_CACHE_SECRET_FILE", (dir + "/absent").c_str());
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("LATHE_CACHE_SECRET_FILE: " + dir +
                                   "/absent: cannot open")));
    ASSERT_OK(WriteFileAtomic(key_file, " \n"));
    ScopedEnv empty("LATHE_CACHE_SECRET_FILE", key_file.c_str());
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "LATHE_CACHE_SECRET_FILE: " + key_file +
                             " is empty (expected a secret)"));
    ASSERT_OK(WriteFileAtomic(key_file, std::string(5000, 'k')));
    EXPECT_THAT(NewCompileCacheFromEnvironment().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("larger than the limit of 4096 bytes")));
  }
  ScopedEnv secret("LATHE_CACHE_SECRET", nullptr);
  ScopedEnv file("LATHE_CACHE_SECRET_FILE", nullptr);
  ASSERT_OK_AND_ASSIGN(auto cache, NewCompileCacheFromEnvironment());
  EXPECT_EQ(DiskSecretMark(*cache), "-");
}

TEST(DefaultCompileCacheTest, IsMadeOnceAndShared) {
  ScopedEnv dir("LATHE_CACHE_DIR", (TestDir() + "/default").c_str());
  ScopedEnv remote("LATHE_REMOTE_CACHE", nullptr);
  ASSERT_OK_AND_ASSIGN(CacheBackend * cache, DefaultCompileCache());
  ASSERT_OK_AND_ASSIGN(CacheBackend * again, DefaultCompileCache());
  EXPECT_EQ(cache, again);
  EXPECT_EQ(cache->name(), "tiered(memory,disk)");
  ASSERT_OK(cache->Put(kKey, "shared"));
  EXPECT_EQ(Lookup(*again, kKey), "shared");
}

}  // namespace
}  // namespace lathe
