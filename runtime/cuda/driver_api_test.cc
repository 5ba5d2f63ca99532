// The driver table loaded with dlopen on machines without a GPU: a library
// that is not there, the toolkit's stub libcuda (every function resolves,
// cuInit refuses), stand-ins built here (one complete, one that lacks a
// function), each error one line naming the call and the driver's words;
// and the ABI types and codes against cuda.h where the toolkit is.

#include "runtime/cuda/driver_api.h"

#include <sys/stat.h>

#include <cstddef>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

#ifdef LATHE_HAS_CUDA_TOOLKIT
#include "cuda.h"
#endif

namespace lathe {
namespace {

using ::lathe::testing::RunfilePath;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CudaDriverTest, NoLibraryIsOneLineNamingIt) {
  absl::StatusOr<const CudaDriver*> cu =
      LoadCudaDriver("/nonexistent/libcuda.so.1");
  EXPECT_THAT(cu.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("no CUDA device: /nonexistent/libcuda.so.1 "
                                  "not found (")));
  EXPECT_EQ(cu.status().message().find('\n'), absl::string_view::npos);
  // Asked again, the same answer (the outcome is kept per path).
  EXPECT_EQ(LoadCudaDriver("/nonexistent/libcuda.so.1").status(), cu.status());
}

TEST(CudaDriverTest, TheToolkitsStubResolvesEverythingAndRefusesInit) {
  const char* env = std::getenv("CUDA_PATH");
  const std::string stub =
      std::string(env != nullptr ? env : "/usr/local/cuda") +
      "/lib64/stubs/libcuda.so";
  struct stat st;
  if (::stat(stub.c_str(), &st) != 0) GTEST_SKIP() << "no " << stub;
  EXPECT_THAT(LoadCudaDriver(stub).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no CUDA device: cuInit: CUDA_ERROR_STUB_LIBRARY "
                       "(libcuda is the toolkit's stub, not a driver)"));
}

TEST(CudaDriverTest, ADriverLackingAFunctionIsRefusedNamingIt) {
  const std::string old = RunfilePath("runtime/cuda/testdata/old_libcuda.so");
  EXPECT_THAT(LoadCudaDriver(old).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no CUDA device: " + old +
                           " has no cuLaunchKernel (a driver older than "
                           "lathe needs?)"));
}

TEST(CudaDriverTest, ErrorsNameTheCallAndTheDriversWords) {
  const std::string fake = RunfilePath("runtime/cuda/testdata/fake_libcuda.so");
  ASSERT_OK_AND_ASSIGN(const CudaDriver* cu, LoadCudaDriver(fake));
  EXPECT_EQ(cu->source, fake);
  ASSERT_OK_AND_ASSIGN(const CudaDriver* again, LoadCudaDriver(fake));
  EXPECT_EQ(again, cu);  // one table per library
  // A round trip through the table.
  CuDevicePtr p = 0;
  ASSERT_OK(CudaCall(*cu, cu->mem_alloc(&p, 64), "cuMemAlloc"));
  int value = 42, back = 0;
  ASSERT_OK(CudaCall(*cu, cu->memcpy_htod_async(p, &value, 4, nullptr),
                     "cuMemcpyHtoDAsync"));
  ASSERT_OK(CudaCall(*cu, cu->memcpy_dtoh_async(&back, p, 4, nullptr),
                     "cuMemcpyDtoHAsync"));
  EXPECT_EQ(back, 42);
  ASSERT_OK(CudaCall(*cu, cu->mem_free(p), "cuMemFree"));
  // Out of memory is ResourceExhausted, in the driver's words.
  EXPECT_THAT(CudaCall(*cu, cu->mem_alloc(&p, size_t{2} << 30), "cuMemAlloc"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"));
  EXPECT_THAT(
      CudaCall(*cu, cu->module_load_data(nullptr, ""), "cuModuleLoadData"),
      StatusIs(absl::StatusCode::kInternal,
               "cuModuleLoadData: CUDA_ERROR_INVALID_VALUE (invalid "
               "argument)"));
  // A code the driver cannot name: its number.
  EXPECT_THAT(
      CudaCall(*cu, 999, "cuLaunchKernel"),
      StatusIs(absl::StatusCode::kInternal, "cuLaunchKernel: CUDA error 999"));
  EXPECT_OK(CudaCall(*cu, kCudaSuccess, "cuInit"));
}

#ifdef LATHE_HAS_CUDA_TOOLKIT
// The table's types and codes are the driver ABI's.
static_assert(sizeof(CUresult) == sizeof(CuResult));
static_assert(sizeof(CUdevice) == sizeof(CuDevice));
static_assert(sizeof(CUdeviceptr) == sizeof(CuDevicePtr));
static_assert(CUDA_SUCCESS == kCudaSuccess);
static_assert(CUDA_ERROR_OUT_OF_MEMORY == kCudaErrorOutOfMemory);
static_assert(CUDA_ERROR_STUB_LIBRARY == kCudaErrorStubLibrary);
static_assert(CUDA_ERROR_NO_DEVICE == kCudaErrorNoDevice);
static_assert(CUDA_ERROR_NOT_READY == kCudaErrorNotReady);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
              kCuAttrComputeCapabilityMajor);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
              kCuAttrComputeCapabilityMinor);
static_assert(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
              kCuAttrMultiprocessorCount);
static_assert(CU_MEMORYTYPE_DEVICE == kCuMemoryTypeDevice);
// The graph nodes' parameter structs, field by field.
#define LATHE_SAME_FIELD(ours, theirs, a, b)                \
  static_assert(offsetof(ours, a) == offsetof(theirs, b) && \
                sizeof(ours::a) == sizeof(theirs::b))
static_assert(sizeof(CuKernelNodeParams) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2));
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, func, func);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, grid_x,
                 gridDimX);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, block_z,
                 blockDimZ);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, shared_bytes,
                 sharedMemBytes);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, params,
                 kernelParams);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, extra, extra);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, kernel, kern);
LATHE_SAME_FIELD(CuKernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, ctx, ctx);
static_assert(sizeof(CuMemcpy3D) == sizeof(CUDA_MEMCPY3D_v2));
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, src_memory_type, srcMemoryType);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, src_device, srcDevice);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, src_pitch, srcPitch);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, src_height, srcHeight);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, dst_memory_type, dstMemoryType);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, dst_device, dstDevice);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, dst_pitch, dstPitch);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, dst_height, dstHeight);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, width_bytes, WidthInBytes);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, height, Height);
LATHE_SAME_FIELD(CuMemcpy3D, CUDA_MEMCPY3D_v2, depth, Depth);
#undef LATHE_SAME_FIELD
#endif

}  // namespace
}  // namespace lathe
