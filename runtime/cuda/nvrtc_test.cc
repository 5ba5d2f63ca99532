// NVRTC loaded with dlopen and compiling CUDA C++ on a machine without a
// GPU: a kernel for sm_80 and sm_90 gives an ELF cubin and PTX for that
// target; source that does not compile is an error with NVRTC's log;
// libraries that are not there, or not NVRTC, are one line. Skips where
// no CUDA toolkit was found when the build was configured.

#include "runtime/cuda/nvrtc.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
