// NVRTC loaded with dlopen and compiling CUDA C++ on a machine without a
// GPU: a kernel for sm_80 and sm_90 gives an ELF cubin and PTX for that
// target; source that does not compile is an error with NVRTC's log;
// libraries that are not there, or not NVRTC, are one line. Skips where
// no CUDA toolkit was found when the build was configured.

#include "runtime/cuda/nvrtc.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/compile_cache.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::RunfilePath;
using ::lathe::testing::StatusIs;
using ::lathe::testing::TestTmpPath;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kScale[] = R"(
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

const Nvrtc* Get() {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  return nullptr;
#else
  absl::StatusOr<const Nvrtc*> nvrtc = LoadNvrtc();
  EXPECT_OK(nvrtc.status());
  return nvrtc.ok() ? *nvrtc : nullptr;
#endif
}

// Version comparisons: a later major counts whatever its minor.
TEST(NvrtcTest, AtLeastComparesMajorThenMinor) {
  Nvrtc n;
  n.major = 12;
  n.minor = 8;
  EXPECT_TRUE(NvrtcAtLeast(n, 12, 8));
  EXPECT_FALSE(NvrtcAtLeast(n, 12, 9));
  EXPECT_TRUE(NvrtcAtLeast(n, 11, 9));
  EXPECT_FALSE(NvrtcAtLeast(n, 13, 0));
  n.major = 13;
  n.minor = 0;
  EXPECT_TRUE(NvrtcAtLeast(n, 12, 8));
  EXPECT_TRUE(NvrtcPrecompiles(n));
}

TEST(NvrtcTest, CompilesAKernelForEachArchitectureWithoutAGpu) {
  const Nvrtc* nvrtc = Get();
  if (nvrtc == nullptr) GTEST_SKIP() << "no CUDA toolkit";
  EXPECT_GE(nvrtc->major, 11);
  for (int arch : {80, 90}) {
    ASSERT_OK_AND_ASSIGN(CudaImage image,
                         CompileCuda(*nvrtc, kScale, "scale.cu", arch));
    EXPECT_EQ(image.arch, arch);
    EXPECT_THAT(image.cubin, StartsWith("\x7f"
                                        "ELF"));
    EXPECT_THAT(image.ptx, HasSubstr(".target sm_" + std::to_string(arch)));
    EXPECT_THAT(image.ptx, HasSubstr(".entry scale("));
    EXPECT_NE(image.ptx.back(), '\0');
  }
}

TEST(NvrtcTest, SourceThatDoesNotCompileCarriesTheLog) {
  const Nvrtc* nvrtc = Get();
  if (nvrtc == nullptr) GTEST_SKIP() << "no CUDA toolkit";
  EXPECT_THAT(CompileCuda(*nvrtc, "__global__ void k() { undefined_thing(); }",
                          "broken.cu", 90)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(
                           StartsWith("broken.cu does not compile for sm_90 ("),
                           HasSubstr("undefined_thing"))));
  // An option NVRTC does not know, and an architecture that cannot be.
  EXPECT_THAT(
      CompileCuda(*nvrtc, kScale, "scale.cu", 90, {"--no-such-flag"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               StartsWith("scale.cu does not compile for sm_90")));
  EXPECT_THAT(CompileCuda(*nvrtc, kScale, "scale.cu", 7).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scale.cu: no architecture sm_7"));
}

// A warm build runs no NVRTC: the second build of the same source comes
// from the cache, the bytes NVRTC made; another architecture, other
// options or a damaged entry build again.
TEST(NvrtcTest, AWarmBuildComesFromTheCompileCache) {
  const Nvrtc* nvrtc = Get();
  if (nvrtc == nullptr) GTEST_SKIP() << "no CUDA toolkit";
  MemoryCache cache;
  ASSERT_OK_AND_ASSIGN(
      CachedCudaImage cold,
      CompileCudaCached(*nvrtc, kScale, "scale.cu", 90, {}, &cache));
  EXPECT_EQ(cold.cache_hit, "");
  EXPECT_GT(cold.seconds, 0);
  ASSERT_OK_AND_ASSIGN(
      CachedCudaImage warm,
      CompileCudaCached(*nvrtc, kScale, "scale.cu", 90, {}, &cache));
  EXPECT_EQ(warm.cache_hit, "memory");
  EXPECT_EQ(warm.seconds, 0);
  EXPECT_EQ(warm.image.cubin, cold.image.cubin);
  EXPECT_EQ(warm.image.ptx, cold.image.ptx);
  EXPECT_EQ(warm.image.arch, 90);
  ASSERT_OK_AND_ASSIGN(
      CachedCudaImage other_arch,
      CompileCudaCached(*nvrtc, kScale, "scale.cu", 80, {}, &cache));
  EXPECT_EQ(other_arch.cache_hit, "");
  EXPECT_THAT(other_arch.image.ptx, HasSubstr(".target sm_80"));
  ASSERT_OK_AND_ASSIGN(
      CachedCudaImage other_options,
      CompileCudaCached(*nvrtc, kScale, "scale.cu", 90, {"-lineinfo"}, &cache));
  EXPECT_EQ(other_options.cache_hit, "");
}

// A prelude: libcu++'s math and a helper every kernel calls.
constexpr char kPrelude[] = R"(#include <cuda/std/cmath>
__device__ __forceinline__ float twice(float v) { return 2 * v; }
)";

// A new directory with `mode`.
std::string MakeDir(const std::string& name, mode_t mode) {
  std::string dir = TestTmpPath(name);
  EXPECT_EQ(mkdir(dir.c_str(), mode), 0) << dir;
  EXPECT_EQ(chmod(dir.c_str(), mode), 0) << dir;
  return dir;
}

// The entries of `dir` whose names begin with `prefix`, with those of the
// directories among them (one level down) after a '/'.
std::vector<std::string> Entries(const std::string& dir,
                                 const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!absl::StartsWith(name, prefix)) continue;
    out.push_back(name);
    if (!e.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(e.path())) {
      out.push_back(absl::StrCat(name, "/", f.path().filename().string()));
    }
  }
  return out;
}

// With NVRTC 12.8 or later, a prelude is precompiled (from its second
// use) into a directory of this process's own inside the one given, and
// sources that begin with it compile after it to the very image the whole
// text gives; their lines keep their numbers in NVRTC's messages.
TEST(NvrtcTest, APreludeIsPrecompiledOnceAndChangesNothing) {
  const Nvrtc* nvrtc = Get();
  if (nvrtc == nullptr) GTEST_SKIP() << "no CUDA toolkit";
  if (!NvrtcPrecompiles(*nvrtc)) GTEST_SKIP() << "NVRTC before 12.8";
  const std::string dir = MakeDir("nvrtc_prelude", 0700);
  const NvrtcPrelude prelude = {kPrelude, dir};
  // Line 5 of each source declares a variable it never reads (a warning
  // naming the line).
  const std::string a = absl::StrCat(kPrelude, R"(
extern "C" __global__ void a(float* x) {
  int unused_a;
  x[threadIdx.x] = twice(cuda::std::exp(x[threadIdx.x]));
}
)");
  const std::string b = absl::StrCat(kPrelude, R"(
extern "C" __global__ void b(float* x) {
  int unused_b;
  x[threadIdx.x] = twice(x[threadIdx.x]) + 1;
}
)");
  // The first compile of the prelude is the whole text's; the second
  // precompiles it; the third reads what the second made.
  auto check = [&](const std::string& source, bool precompiled) {
    ASSERT_OK_AND_ASSIGN(CudaImage whole,
                         CompileCuda(*nvrtc, source, "k.cu", 90));
    ASSERT_OK_AND_ASSIGN(CudaImage after,
                         CompileCuda(*nvrtc, source, "k.cu", 90, {}, prelude));
    EXPECT_FALSE(whole.precompiled_prelude);
    EXPECT_EQ(after.precompiled_prelude, precompiled);
    EXPECT_EQ(after.ptx, whole.ptx);
    EXPECT_EQ(after.cubin, whole.cubin);
    EXPECT_THAT(after.log, HasSubstr("k.cu(5): warning"));
    EXPECT_THAT(after.log, Not(HasSubstr("lathe_prelude")));
    EXPECT_THAT(after.log, Not(HasSubstr("PCH")));
  };
  check(a, false);
  check(b, true);
  // NVRTC's precompiled prelude, in this process's directory.
  const std::string own = absl::StrCat("nvrtc-pch-", getpid(), "-");
  std::vector<std::string> made = Entries(dir, own);
  ASSERT_EQ(made.size(), 2u) << ::testing::PrintToString(made);
  EXPECT_THAT(made[1], ::testing::EndsWith(".pch"));
  struct stat st;
  ASSERT_EQ(stat(absl::StrCat(dir, "/", made[0]).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  struct stat pch_before, pch_after;
  const std::string pch = absl::StrCat(dir, "/", made[1]);
  ASSERT_EQ(stat(pch.c_str(), &pch_before), 0);
  check(a, true);
  ASSERT_EQ(stat(pch.c_str(), &pch_after), 0);
  EXPECT_EQ(pch_after.st_ino, pch_before.st_ino);
  EXPECT_EQ(pch_after.st_mtim.tv_sec, pch_before.st_mtim.tv_sec);
  EXPECT_EQ(pch_after.st_mtim.tv_nsec, pch_before.st_mtim.tv_nsec);
  EXPECT_EQ(Entries(dir, own), made);
  // Source that does not begin with the prelude compiles as it is.
  ASSERT_OK_AND_ASSIGN(CudaImage plain, CompileCuda(*nvrtc, kScale, "scale.cu",
                                                    90, {}, prelude));
  EXPECT_THAT(plain.ptx, HasSubstr(".entry scale("));
  EXPECT_FALSE(plain.precompiled_prelude);
  // An error in the rest is reported as the whole text gives it.
  EXPECT_THAT(
      CompileCuda(*nvrtc,
                  absl::StrCat(kPrelude, "__global__ void k() { x(); }\n"),
                  "broken.cu", 90, {}, prelude)
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               ::testing::AllOf(StartsWith("broken.cu does not compile"),
                                HasSubstr("broken.cu(3)"))));
}

// The directory of a process that no longer runs is removed when another
// first precompiles there; a running one's is kept; a directory others
// can write is not used at all.
TEST(NvrtcTest, PrecompiledPreludesLeaveNothingBehind) {
  const Nvrtc* nvrtc = Get();
  if (nvrtc == nullptr) GTEST_SKIP() << "no CUDA toolkit";
  if (!NvrtcPrecompiles(*nvrtc)) GTEST_SKIP() << "NVRTC before 12.8";
  const std::string dir = MakeDir("nvrtc_stale", 0700);
  // Directories carry the pid and the machine: <pid>-<host>-XXXXXX.
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  auto named = [&](const std::string& pid, const std::string& machine) {
    return absl::StrCat(dir, "/nvrtc-pch-", pid, "-", machine, "-abcdef");
  };
  // Past any pid_max (2^22): no such process, here or elsewhere.
  const std::string dead = named("999999999", host);
  const std::string elsewhere = named("999999999", "another-machine");
  const std::string alive = named(std::to_string(getppid()), host);
  // A killed process's whose pid this one now has.
  const std::string reused = named(std::to_string(getpid()), host);
  for (const std::string& d : {dead, elsewhere, alive, reused}) {
    ASSERT_EQ(mkdir(d.c_str(), 0700), 0) << d;
  }
  // A symlink planted under a dead process's name: the link goes, not what
  // it points at.
  const std::string target = MakeDir("nvrtc_victim", 0700);
  const std::string victim = absl::StrCat(target, "/keep");
  ASSERT_EQ(mkdir(victim.c_str(), 0700), 0);
  const std::string planted = named("999999998", host);
  ASSERT_EQ(symlink(target.c_str(), planted.c_str()), 0);
  // The second compile of a prelude precompiles it (the first does not:
  // nothing was made yet).
  const std::string source = absl::StrCat(kPrelude, kScale);
  const std::vector<std::string> options = {"-DSECOND_TEST"};
  const NvrtcPrelude prelude = {kPrelude, dir};
  ASSERT_OK(CompileCuda(*nvrtc, source, "k.cu", 80, options, prelude).status());
  EXPECT_TRUE(std::filesystem::exists(dead));
  ASSERT_OK(CompileCuda(*nvrtc, source, "k.cu", 80, options, prelude).status());
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(reused));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
  EXPECT_FALSE(std::filesystem::is_symlink(planted));
  EXPECT_TRUE(std::filesystem::exists(victim));
  const std::string own = absl::StrCat("nvrtc-pch-", getpid(), "-");
  EXPECT_EQ(Entries(dir, own).size(), 2u);
  // A forked child's exit leaves the parent's directory alone.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);     // a lock held at fork() fails the test, never hangs it
    std::exit(0);  // runs the atexit handlers
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // (NVRTC's own exit in the child deletes the .pch it made; the parent's
  // next compile makes it again, precompiled as before.)
  const std::vector<std::string> kept = Entries(dir, own);
  ASSERT_FALSE(kept.empty());
  EXPECT_TRUE(std::filesystem::is_directory(absl::StrCat(dir, "/", kept[0])));
  ASSERT_OK_AND_ASSIGN(CudaImage again, CompileCuda(*nvrtc, source, "k.cu", 80,
                                                    options, prelude));
  EXPECT_TRUE(again.precompiled_prelude);
  EXPECT_EQ(Entries(dir, own).size(), 2u);

  const std::string shared = MakeDir("nvrtc_shared", 0777);
  CudaImage image;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(image, CompileCuda(*nvrtc, source, "k.cu", 80, options,
                                            {kPrelude, shared}));
  }
  EXPECT_THAT(image.ptx, HasSubstr(".entry scale("));
  EXPECT_THAT(Entries(shared, "nvrtc-pch-"), ::testing::IsEmpty());
}

TEST(NvrtcTest, CacheEntriesParseStrictly) {
  CudaImage image;
  image.arch = 90;
  image.cubin = std::string(
      "\x7f"
      "ELF\0\1",
      6);
  image.ptx = ".version 9.0";
  const std::string bytes = SerializeCudaImage(image);
  ASSERT_OK_AND_ASSIGN(CudaImage back, ParseCudaImage(bytes));
  EXPECT_EQ(back.arch, 90);
  EXPECT_EQ(back.cubin, image.cubin);
  EXPECT_EQ(back.ptx, image.ptx);
  for (const std::string& bad :
       {std::string(""), bytes.substr(0, bytes.size() - 1), bytes + "x",
        std::string("lathe-cuda-image 2 90 6 12\n") + image.cubin + image.ptx,
        std::string("lathe-cuda-image 1 90 99999999999999999999 0\n"),
        std::string("lathe-cuda-image 1 90 -1 13\n") + image.cubin +
            image.ptx}) {
    EXPECT_THAT(ParseCudaImage(bad).status(),
                StatusIs(absl::StatusCode::kDataLoss))
        << bad;
  }
}

TEST(NvrtcTest, LibrariesThatAreNotThereOrNotNvrtcAreOneLine) {
  EXPECT_THAT(LoadNvrtc("/nonexistent/libnvrtc.so").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("no NVRTC: /nonexistent/libnvrtc.so not "
                                  "found (")));
  // A shared library that is not NVRTC: it lacks the first function.
  const std::string other =
      RunfilePath("runtime/cuda/testdata/fake_libcuda.so");
  EXPECT_THAT(LoadNvrtc(other).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "NVRTC " + other +
                           " has no nvrtcVersion (a toolkit older than lathe "
                           "needs?)"));
}

}  // namespace
}  // namespace lathe
