// Proves @local_cuda is wired: NVRTC compiles a small CUDA kernel to PTX on a
// machine without a GPU, and reports a compile error with its log. Skips when
// no CUDA toolkit was found at configure time.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifdef LATHE_HAS_CUDA_TOOLKIT
#include "nvrtc.h"
#endif

namespace {

using ::testing::HasSubstr;

#ifdef LATHE_HAS_CUDA_TOOLKIT

struct Compiled {
  nvrtcResult result;
  std::string ptx;
  std::string log;
};

Compiled Compile(const char* source, const char* name) {
  Compiled out;
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, source, name, 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const char* options[] = {"--gpu-architecture=compute_80", "--std=c++17"};
  out.result = nvrtcCompileProgram(prog, 2, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  nvrtcGetProgramLog(prog, out.log.data());
  if (out.result == NVRTC_SUCCESS) {
    size_t ptx_size = 0;
    nvrtcGetPTXSize(prog, &ptx_size);
    out.ptx.resize(ptx_size);
    nvrtcGetPTX(prog, out.ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

TEST(NvrtcSmokeTest, CompilesAKernelToPtx) {
  const char* kSource = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";
  Compiled c = Compile(kSource, "saxpy.cu");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  EXPECT_THAT(c.ptx, HasSubstr(".target sm_80"));
  EXPECT_THAT(c.ptx, HasSubstr(".visible .entry saxpy("));
  EXPECT_THAT(c.ptx, HasSubstr("fma.rn.f32"));
}

TEST(NvrtcSmokeTest, ReportsCompileErrorsWithALog) {
  Compiled c = Compile("__global__ void k() { undefined_name = 1; }", "bad.cu");
  EXPECT_EQ(c.result, NVRTC_ERROR_COMPILATION);
  EXPECT_THAT(c.log, HasSubstr("undefined_name"));
}

#else

TEST(NvrtcSmokeTest, CompilesAKernelToPtx) {
  GTEST_SKIP() << "no CUDA toolkit found at configure time (CUDA_PATH or "
                  "/usr/local/cuda)";
}

#endif

}  // namespace
