// Kernels for emulated_driver_test, built as an emulated CUDA module (a
// host shared library against cuda_emulation.h).

#include "runtime/cuda/cuda_emulation.h"

extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
LATHE_CUDA_KERNEL(scale, false)

// Writes x[at] (past the end, for the tests).
extern "C" __global__ void write_at(float* x, long at) {
  if (threadIdx.x == 0) x[at] = 1.0f;
}
LATHE_CUDA_KERNEL(write_at, false)

// Reads x[at] into out[0].
extern "C" __global__ void read_at(const float* x, long at, float* out) {
  if (threadIdx.x == 0) out[0] = x[at];
}
LATHE_CUDA_KERNEL(read_at, false)

extern "C" __global__ void divergent_barrier(int* x) {
  if (threadIdx.x < 16) __syncthreads();
  x[threadIdx.x] = 1;
}
LATHE_CUDA_KERNEL(divergent_barrier, true)
