// LoadCudaKernels on the emulated device: the module loads with the kernels
// its host library names, a launch through the device ABI (kernel_abi.h)
// runs and its result comes back; a kernel the module lacks, an index past
// the table, and a device library loaded without its kernels are errors
// naming what is wrong.

#include "runtime/cuda/cuda_kernels.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"
#include "runtime/tensor.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::ReadRunfile;
using ::lathe::testing::RunfilePath;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

class CudaKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("LATHE_CUDA_DEVICE", "emulated", 0); }
  void SetUp() override {
    // The module is testdata/emulated_kernels.so: the emulated device's.
    if (std::string(std::getenv("LATHE_CUDA_DEVICE")) != "emulated") {
      GTEST_SKIP() << "the kernels here are the emulated device's";
    }
    ASSERT_OK_AND_ASSIGN(
        image_, ReadRunfile("runtime/cuda/testdata/emulated_kernels.so"));
  }
  absl::StatusOr<SharedLibrary> Host(const std::string& name) {
    return SharedLibrary::Open(RunfilePath("runtime/cuda/testdata/" + name));
  }
  std::string image_;
};

TEST_F(CudaKernelsTest, AKernelLaunchedByIndexRunsOnTheDevice) {
  ASSERT_OK_AND_ASSIGN(SharedLibrary host, Host("kernel_names.so"));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const DeviceKernels> k,
                       LoadCudaKernels(image_, host));
  EXPECT_EQ(k->device(), Device::Cuda(0));
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Empty({300}, DType::kFloat32));
  for (int64_t i = 0; i < 300; ++i) x.SetDouble({i}, i - 100.0);
  ASSERT_OK_AND_ASSIGN(Tensor d, k->ToDevice(x));
  LatheKernelRuntime rt = SeededKernelRuntime(kDefaultSeed);
  k->Prepare(&rt);
  ASSERT_NE(rt.device, nullptr);
  // scale(float* x, float a, int n), 2 blocks of 256.
  void* data = d.storage().data();
  float a = 2.5f;
  int n = 300;
  void* params[] = {&data, &a, &n};
  const uint32_t grid[3] = {2, 1, 1}, block[3] = {256, 1, 1};
  ASSERT_EQ(rt.device->launch(rt.device->self, 0, grid, block, 0, params), 0);
  std::vector<float> back(300);
  ASSERT_EQ(rt.device->to_host(rt.device->self, back.data(), data, 1200), 0);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(back[i], 2.5f * (i - 100)) << i;
  // Device storage through the call's allocator, given back by release.
  void* at = nullptr;
  void* handle = rt.alloc(64, &at);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(static_cast<Storage*>(handle)->device(), Device::Cuda(0));
  rt.release(handle);
}

TEST_F(CudaKernelsTest, AnIndexPastTheTableIsADeviceError) {
  ASSERT_OK_AND_ASSIGN(SharedLibrary host, Host("kernel_names.so"));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const DeviceKernels> k,
                       LoadCudaKernels(image_, host));
  LatheKernelRuntime rt = SeededKernelRuntime(kDefaultSeed);
  k->Prepare(&rt);
  const uint32_t one[3] = {1, 1, 1};
  EXPECT_NE(rt.device->launch(rt.device->self, 1, one, one, 0, nullptr), 0);
  EXPECT_THAT(TakeDeviceError(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("no device kernel 1 (the library has 1)")));
}

TEST_F(CudaKernelsTest, AKernelTheModuleLacksIsNamed) {
  ASSERT_OK_AND_ASSIGN(SharedLibrary host, Host("kernel_names_missing.so"));
  EXPECT_THAT(LoadCudaKernels(image_, host),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("cuModuleGetFunction no_such_kernel")));
}

TEST_F(CudaKernelsTest, AnImageThatIsNotAModuleIsRefused) {
  ASSERT_OK_AND_ASSIGN(SharedLibrary host, Host("kernel_names.so"));
  EXPECT_THAT(
      LoadCudaKernels("not a module", host),
      StatusIs(absl::StatusCode::kInternal, HasSubstr("cuModuleLoadData")));
  EXPECT_THAT(LoadCudaKernels("", host),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("an empty CUDA module image")));
}

TEST(DeviceImageTest, AnArtifactsImageIsTheOneForTheDevice) {
  const std::vector<std::pair<std::string, std::string>> all = {
      {CubinFile(80), "sm_80"},
      {CubinFile(90), "sm_90"},
      {kPtxFile, "ptx"},
      {kEmulatedModuleFile, "library"}};
  auto pick = [&](int arch) {
    absl::StatusOr<std::string> image = ImageForArchitecture(all, arch);
    return image.ok() ? *image : std::string(image.status().message());
  };
  EXPECT_EQ(pick(0), "library");
  EXPECT_EQ(pick(90), "sm_90");
  // sm_80's cubin runs on sm_86 and sm_89; a newer major takes the PTX.
  EXPECT_EQ(pick(86), "sm_80");
  EXPECT_EQ(pick(89), "sm_80");
  EXPECT_EQ(pick(100), "ptx");
  EXPECT_THAT(ImageForArchitecture({{CubinFile(90), "sm_90"}}, 75),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no kernels for this device (sm_75): the artifact "
                       "holds kernels.sm_90.cubin"));
  EXPECT_THAT(ImageForArchitecture({{CubinFile(80), "c"}, {kPtxFile, "p"}}, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no kernels for this device (the emulated one): the "
                       "artifact holds kernels.sm_80.cubin, kernels.ptx"));
}

TEST_F(CudaKernelsTest, ADeviceLibraryNeedsItsKernelsAndAHostOneNone) {
  ASSERT_OK_AND_ASSIGN(SharedLibrary host, Host("kernel_names.so"));
  EXPECT_THAT(LoadedGraph::OpenGraph(std::move(host), CallSignature()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("its kernels run on a device, and no "
                                 "device kernels were loaded for it")));
}

}  // namespace
}  // namespace lathe
