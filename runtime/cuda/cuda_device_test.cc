// Choosing the CUDA device from LATHE_CUDA_DEVICE on a machine without a
// GPU: the emulated device when asked; otherwise one line naming what is
// missing and how to get the emulated device; a value the variable does
// not take, named.

#include "runtime/cuda/cuda_device.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/emulated_driver.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(CudaDeviceTest, TheEmulatedDeviceWhenAsked) {
  ::setenv(kCudaDeviceVariable, "emulated", 1);
  ASSERT_OK_AND_ASSIGN(const CudaDriver* cu, CudaDevice());
  EXPECT_EQ(cu, &EmulatedCudaDriver());
  EXPECT_EQ(cu->source, "emulated");
  EXPECT_OK(MakeCudaContextCurrent(*cu));
  EXPECT_OK(MakeCudaContextCurrent(*cu));  // again, on this thread
  char name[64];
  ASSERT_OK(CudaCall(*cu, cu->device_get_name(name, sizeof(name), 0),
                     "cuDeviceGetName"));
  EXPECT_STREQ(name, "lathe emulated CUDA device");
}

TEST(CudaDeviceTest, AValueTheVariableDoesNotTakeIsNamed) {
  ::setenv(kCudaDeviceVariable, "tpu", 1);
  EXPECT_THAT(CudaDevice().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "LATHE_CUDA_DEVICE='tpu': expected 'emulated' or 'gpu' "
                       "(or unset: the GPU)"));
}

TEST(CudaDeviceTest, NoGpuSaysHowToGetTheEmulatedDevice) {
  ::unsetenv(kCudaDeviceVariable);
  absl::StatusOr<const CudaDriver*> cu = CudaDevice();
  if (cu.ok()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_THAT(cu.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(
                           StartsWith("no CUDA device: "),
                           EndsWith("; LATHE_CUDA_DEVICE=emulated runs on the "
                                    "emulated device"))));
  EXPECT_EQ(cu.status().message().find('\n'), absl::string_view::npos);
}

}  // namespace
}  // namespace lathe
