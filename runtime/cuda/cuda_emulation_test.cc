// The emulated device's kernel side (cuda_emulation.h) on hand-written CUDA
// kernels compiled as host C++: indices over grids and blocks in three
// dimensions, a shared-memory reduction with its barriers (right) and
// without one (wrong: the emulator's thread order shows the race), a
// divergent barrier and a divergent warp op refused naming the kernel,
// warp shuffles and votes (partial warps too), atomics across blocks, and
// launches CUDA would refuse.

#include "runtime/cuda/cuda_emulation.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/emulated_grid.h"

// ---- The kernels, as lathe's CUDA emitter would write them ----------------

extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
LATHE_CUDA_KERNEL(scale, false)

// Each thread writes its global linear index, from 3-D grids and blocks.
extern "C" __global__ void where_am_i(int* out) {
  int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  int threads = blockDim.x * blockDim.y * blockDim.z;
  int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[block * threads + t] = block * threads + t;
}
LATHE_CUDA_KERNEL(where_am_i, false)

// One sum per block of 256: a tree in shared memory.
template <bool kBarriers>
__device__ void BlockSum(const float* x, float* sums) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
  if (kBarriers) __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) s[t] += s[t + half];
    if (kBarriers) __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
}
extern "C" __global__ void block_sum(const float* x, float* sums) {
  BlockSum<true>(x, sums);
}
LATHE_CUDA_KERNEL(block_sum, true)
extern "C" __global__ void block_sum_no_barrier(const float* x, float* sums) {
  BlockSum<false>(x, sums);
}
LATHE_CUDA_KERNEL(block_sum_no_barrier, true)

extern "C" __global__ void divergent_barrier(int* x) {
  if (threadIdx.x < 16) __syncthreads();
  x[threadIdx.x] = 1;
}
LATHE_CUDA_KERNEL(divergent_barrier, true)

extern "C" __global__ void barrier_unannounced(int* x) {
  __syncthreads();
  x[threadIdx.x] = 1;
}
LATHE_CUDA_KERNEL(barrier_unannounced, false)

// Per warp: the sum by shuffles down and by butterfly, and the ballot of
// odd values; lanes past the block's end are not there.
extern "C" __global__ void warp_ops(const int* x, int* down, int* xored,
                                    unsigned* odd, int* all_positive) {
  const int t = threadIdx.x;
  int v = x[t];
  int sum = v;
  for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
  int butterfly = v;
  for (int m = 16; m > 0; m /= 2) {
    butterfly += __shfl_xor_sync(0xffffffffu, butterfly, m);
  }
  unsigned bits = __ballot_sync(0xffffffffu, v % 2 != 0);
  int positive = __all_sync(0xffffffffu, v > 0);
  if (t % 32 == 0) {
    down[t / 32] = sum;
    odd[t / 32] = bits;
    all_positive[t / 32] = positive;
  }
  xored[t] = butterfly;
}
LATHE_CUDA_KERNEL(warp_ops, true)

extern "C" __global__ void divergent_shuffle(int* x) {
  if (threadIdx.x % 32 < 16) x[threadIdx.x] = __shfl_sync(0xffffu, 1, 0);
}
LATHE_CUDA_KERNEL(divergent_shuffle, true)

extern "C" __global__ void count(int* n, float* total) {
  atomicAdd(n, 1);
  atomicAdd(total, 0.5f);
  atomicMax(n + 1, static_cast<int>(blockIdx.x));
}
LATHE_CUDA_KERNEL(count, false)

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs a launcher; "" or its error.
template <typename F>
std::string Launch(F launch, dim3 grid, dim3 block, std::vector<void*> params) {
  lathe_emu_bind(&lathe::EmulatedGrid());  // as the emulated driver does
  lathe_emu::LaunchConfig config{grid, block};
  char error[512] = "";
  int rc = launch(&config, params.data(), error, sizeof(error));
  EXPECT_EQ(rc != 0, error[0] != '\0');
  return error;
}

// A module binds only to a runner of the table it was built against; one
// the driver did not bind runs nothing and says so, naming the kernel.
TEST(CudaEmulationTest, AnUnboundModuleSaysSo) {
  // A runner's table of another version (or size) does not bind.
  lathe_emu::GridHost other = lathe::EmulatedGrid();
  other.version += 1;
  EXPECT_EQ(lathe_emu_bind(&other), -1);
  other = lathe::EmulatedGrid();
  other.size -= 8;
  EXPECT_EQ(lathe_emu_bind(&other), -1);
  EXPECT_EQ(lathe_emu_bind(&lathe::EmulatedGrid()), 0);
  lathe_emu_bind(nullptr);
  lathe_emu::LaunchConfig config{dim3(1), dim3(1)};
  std::vector<float> x(1, 2.0f);
  float* p = x.data();
  float a = 3.0f;
  int n = 1;
  void* params[] = {&p, &a, &n};
  char error[512] = "";
  EXPECT_EQ(lathe_emu_launch_scale(&config, params, error, sizeof(error)), 1);
  EXPECT_STREQ(error,
               "kernel scale: its module was not bound to a grid runner "
               "(lathe_emu_bind)");
  EXPECT_EQ(x[0], 2.0f);
}

TEST(CudaEmulationTest, APointwiseKernelCoversTheGridAndNoMore) {
  std::vector<float> x(1024, 2.0f);
  float* p = x.data();
  float a = 3.0f;
  int n = 1000;
  EXPECT_EQ(Launch(lathe_emu_launch_scale, dim3(8), dim3(128), {&p, &a, &n}),
            "");
  EXPECT_EQ(x[0], 6.0f);
  EXPECT_EQ(x[999], 6.0f);
  EXPECT_EQ(x[1000], 2.0f);  // i >= n: untouched
}

TEST(CudaEmulationTest, IndicesInThreeDimensions) {
  const int total = 2 * 3 * 2 * (4 * 2 * 3);
  std::vector<int> out(total, -1);
  int* p = out.data();
  EXPECT_EQ(
      Launch(lathe_emu_launch_where_am_i, dim3(2, 3, 2), dim3(4, 2, 3), {&p}),
      "");
  for (int i = 0; i < total; ++i) ASSERT_EQ(out[i], i);
}

TEST(CudaEmulationTest, ABarrierMakesASharedMemoryReductionRight) {
  std::vector<float> x(3 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  std::vector<float> sums(3, -1);
  const float* px = x.data();
  float* ps = sums.data();
  EXPECT_EQ(Launch(lathe_emu_launch_block_sum, dim3(3), dim3(256), {&px, &ps}),
            "");
  for (int b = 0; b < 3; ++b) {
    float want = 0;
    for (int i = 0; i < 256; ++i) want += x[b * 256 + i];
    EXPECT_EQ(sums[b], want) << "block " << b;
  }
  // Without its barriers the same kernel reads what the threads after the
  // reader have not written yet: a wrong sum, as on a GPU (by luck or not).
  std::vector<float> racy(3, -1);
  float* pr = racy.data();
  EXPECT_EQ(Launch(lathe_emu_launch_block_sum_no_barrier, dim3(3), dim3(256),
                   {&px, &pr}),
            "");
  for (int b = 0; b < 3; ++b) EXPECT_NE(racy[b], sums[b]) << "block " << b;
}

TEST(CudaEmulationTest, ADivergentBarrierIsAnError) {
  std::vector<int> x(64);
  int* p = x.data();
  EXPECT_EQ(Launch(lathe_emu_launch_divergent_barrier, dim3(1), dim3(64), {&p}),
            "kernel divergent_barrier: __syncthreads reached by 16 of the "
            "block's 64 threads; the others returned (a divergent barrier)");
  EXPECT_EQ(
      Launch(lathe_emu_launch_barrier_unannounced, dim3(1), dim3(64), {&p}),
      "kernel barrier_unannounced: __syncthreads in a kernel exported "
      "as not synchronizing");
}

TEST(CudaEmulationTest, WarpShufflesAndVotes) {
  // 80 threads: two whole warps and one of 16 lanes.
  std::vector<int> x(80);
  for (int i = 0; i < 80; ++i) x[i] = i + 1;
  std::vector<int> down(3), xored(80), positive(3);
  std::vector<unsigned> odd(3);
  const int* px = x.data();
  int* pd = down.data();
  int* pxo = xored.data();
  unsigned* po = odd.data();
  int* pp = positive.data();
  EXPECT_EQ(Launch(lathe_emu_launch_warp_ops, dim3(1), dim3(80),
                   {&px, &pd, &pxo, &po, &pp}),
            "");
  // By hand: lanes 1..32 sum to 528, 33..64 to 1552; the partial warp's
  // 16 lanes (65..80) shuffle down among themselves only where the source
  // lane is there: lanes past the end keep their own value.
  EXPECT_EQ(down[0], 528);
  EXPECT_EQ(down[1], 1552);
  EXPECT_EQ(xored[0], 528);
  EXPECT_EQ(xored[31], 528);
  EXPECT_EQ(xored[63], 1552);
  // x = i + 1 is odd at even lanes.
  EXPECT_EQ(odd[0], 0x55555555u);
  EXPECT_EQ(odd[2], 0x5555u);  // 16 lanes
  EXPECT_THAT(positive, ElementsAre(1, 1, 1));
}

TEST(CudaEmulationTest, AWarpOpSomeLanesSkipIsAnError) {
  std::vector<int> x(32);
  int* p = x.data();
  EXPECT_EQ(Launch(lathe_emu_launch_divergent_shuffle, dim3(1), dim3(32), {&p}),
            "kernel divergent_shuffle: a warp op that 16 of warp 0's 32 lanes "
            "returned before reaching (a divergent warp op)");
}

TEST(CudaEmulationTest, AtomicsAcrossBlocks) {
  int n[2] = {0, -1};
  float total = 0;
  int* pn = n;
  float* pt = &total;
  EXPECT_EQ(Launch(lathe_emu_launch_count, dim3(10), dim3(64), {&pn, &pt}), "");
  EXPECT_EQ(n[0], 640);
  EXPECT_EQ(n[1], 9);
  EXPECT_EQ(total, 320.0f);
}

TEST(CudaEmulationTest, LaunchesCudaRefusesAreErrors) {
  std::vector<float> x(4);
  float* p = x.data();
  float a = 1;
  int n = 4;
  EXPECT_EQ(Launch(lathe_emu_launch_scale, dim3(1), dim3(2048), {&p, &a, &n}),
            "kernel scale: a launch of grid (1, 1, 1) and block (2048, 1, 1) "
            "(CUDA allows 1 to 1024 threads a block)");
  EXPECT_THAT(Launch(lathe_emu_launch_scale, dim3(0), dim3(32), {&p, &a, &n}),
              HasSubstr("a launch of grid (0, 1, 1)"));
}

}  // namespace
