// NVRTC loaded with dlopen and compiling CUDA C++ on a machine without a
// GPU: a kernel for sm_80 and sm_90 gives an ELF cubin and PTX for that
// target; source that does not compile is an error with NVRTC's log;
// libraries that are not there, or not NVRTC, are one line. Skips where
// no CUDA toolkit was found when the build was configured.

#include "runtime/cuda/nvrtc.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/compile_cache.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::RunfilePath;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
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
