// The emulated CUDA device through its driver table, with a module of
// kernels built against cuda_emulation.h (testdata/emulated_kernels.cc):
// copies and launches that run when the host waits (so a read without a
// synchronize sees nothing yet), events and stream waits, out-of-bounds
// accesses (past the page, in the slack, before the start) and a divergent
// barrier as sticky errors naming the kernel, memory that starts as NaN,
// bad handles and images, graphs replaying their nodes, and the caching
// allocator's cross-stream reuse and out-of-memory path on it.

#include "runtime/cuda/emulated_driver.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/device_allocator.h"
#include "runtime/cuda/driver_api.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::ReadRunfile;
using ::lathe::testing::StatusIs;

class EmulatedDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetEmulatedDevice();
    SetEmulatedDeviceMemory(size_t{4} << 30);
    ASSERT_OK_AND_ASSIGN(
        image_, ReadRunfile("runtime/cuda/testdata/emulated_kernels.so"));
    ASSERT_OK(Call(cu_.module_load_data(&module_, image_.data()),
                   "cuModuleLoadData"));
    ASSERT_OK(Call(cu_.stream_create(&s1_, 0), "cuStreamCreate"));
    ASSERT_OK(Call(cu_.stream_create(&s2_, 0), "cuStreamCreate"));
  }
  void TearDown() override { ResetEmulatedDevice(); }

  absl::Status Call(CuResult r, absl::string_view what) {
    return CudaCall(cu_, r, what);
  }
  CuFunction Function(const char* name) {
    CuFunction f = nullptr;
    EXPECT_OK(Call(cu_.module_get_function(&f, module_, name),
                   "cuModuleGetFunction"));
    return f;
  }
  // Launches `name` on one block of 32 threads (grid `blocks`).
  CuResult Launch(const char* name, std::vector<void*> params, CuStream stream,
                  unsigned blocks = 1) {
    return cu_.launch_kernel(Function(name), blocks, 1, 1, 32, 1, 1, 0, stream,
                             params.data(), nullptr);
  }
  CuDevicePtr Alloc(size_t bytes) {
    CuDevicePtr p = 0;
    EXPECT_OK(Call(cu_.mem_alloc(&p, bytes), "cuMemAlloc"));
    return p;
  }

  const CudaDriver& cu_ = EmulatedCudaDriver();
  std::string image_;
  CuModule module_ = nullptr;
  CuStream s1_ = nullptr;
  CuStream s2_ = nullptr;
};

TEST_F(EmulatedDriverTest, WorkRunsWhenTheHostWaitsForIt) {
  std::vector<float> host(100);
  for (int i = 0; i < 100; ++i) host[i] = static_cast<float>(i);
  CuDevicePtr x = Alloc(100 * sizeof(float));
  ASSERT_OK(Call(cu_.memcpy_htod_async(x, host.data(), 400, s1_), "HtoD"));
  host[0] = -1;  // the copy took the values at the call
  float a = 2;
  int n = 100;
  ASSERT_EQ(Launch("scale", {&x, &a, &n}, s1_, 4), kCudaSuccess);
  a = 100;  // the launch took its arguments at the call
  std::vector<float> back(100, -7);
  ASSERT_OK(Call(cu_.memcpy_dtoh_async(back.data(), x, 400, s1_), "DtoH"));
  // Nothing has run: the host has not waited.
  EXPECT_EQ(back[5], -7);
  ASSERT_OK(Call(cu_.stream_synchronize(s1_), "cuStreamSynchronize"));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(back[i], 2.0f * i) << i;
}

TEST_F(EmulatedDriverTest, EventsAndStreamWaits) {
  CuDevicePtr x = Alloc(4 * 32);
  float one[32];
  for (float& v : one) v = 1;
  float a = 3;
  int n = 32;
  CuEvent e = nullptr;
  ASSERT_OK(Call(cu_.event_create(&e, 0), "cuEventCreate"));
  EXPECT_EQ(cu_.event_query(e), kCudaSuccess);  // never recorded
  ASSERT_OK(Call(cu_.memcpy_htod_async(x, one, sizeof(one), s1_), "HtoD"));
  ASSERT_EQ(Launch("scale", {&x, &a, &n}, s1_), kCudaSuccess);
  ASSERT_OK(Call(cu_.event_record(e, s1_), "cuEventRecord"));
  EXPECT_EQ(cu_.event_query(e), kCudaErrorNotReady);
  // s2 scales again after s1's event: waiting for s2 runs s1's work first.
  ASSERT_OK(Call(cu_.stream_wait_event(s2_, e, 0), "cuStreamWaitEvent"));
  ASSERT_EQ(Launch("scale", {&x, &a, &n}, s2_), kCudaSuccess);
  float back[32] = {};
  ASSERT_OK(Call(cu_.memcpy_dtoh_async(back, x, sizeof(back), s2_), "DtoH"));
  ASSERT_OK(Call(cu_.stream_synchronize(s2_), "cuStreamSynchronize"));
  EXPECT_EQ(back[0], 9.0f);
  EXPECT_EQ(back[31], 9.0f);
  EXPECT_EQ(cu_.event_query(e), kCudaSuccess);
  ASSERT_OK(Call(cu_.event_destroy(e), "cuEventDestroy"));
}

// Events time the work between them, as it runs on the host: not ready
// until both ran; then the kernel's host time, at least the time it took.
TEST_F(EmulatedDriverTest, EventsTimeTheWorkBetweenThem) {
  const int n = 256 * 64;
  CuDevicePtr x = Alloc(4 * n);
  CuEvent start = nullptr, end = nullptr;
  ASSERT_OK(Call(cu_.event_create(&start, 0), "cuEventCreate"));
  ASSERT_OK(Call(cu_.event_create(&end, 0), "cuEventCreate"));
  float ms = -1;
  float a = 2;
  int count = n;
  ASSERT_OK(Call(cu_.event_record(start, s1_), "cuEventRecord"));
  ASSERT_EQ(Launch("scale", {&x, &a, &count}, s1_, n / 32), kCudaSuccess);
  ASSERT_OK(Call(cu_.event_record(end, s1_), "cuEventRecord"));
  EXPECT_EQ(cu_.event_elapsed_time(&ms, start, end), kCudaErrorNotReady);
  auto before = std::chrono::steady_clock::now();
  ASSERT_OK(Call(cu_.event_synchronize(end), "cuEventSynchronize"));
  const double host_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - before)
                             .count();
  ASSERT_OK(Call(cu_.event_elapsed_time(&ms, start, end), "elapsed"));
  EXPECT_GT(ms, 0);
  EXPECT_LE(ms, host_ms + 0.01);
  ASSERT_OK(Call(cu_.event_destroy(start), "cuEventDestroy"));
  ASSERT_OK(Call(cu_.event_destroy(end), "cuEventDestroy"));
}

TEST_F(EmulatedDriverTest, MemoryStartsAsNaN) {
  CuDevicePtr x = Alloc(16);
  float back[4] = {};
  ASSERT_OK(Call(cu_.memcpy_dtoh_async(back, x, 16, nullptr), "DtoH"));
  ASSERT_OK(Call(cu_.ctx_synchronize(), "cuCtxSynchronize"));
  EXPECT_TRUE(std::isnan(back[0]));
  EXPECT_TRUE(std::isnan(back[3]));
}

// An access past a buffer is the kernel's error, sticky until the device
// is reset, in the words of every later call.
TEST_F(EmulatedDriverTest, AWritePastTheEndStopsTheKernel) {
  CuDevicePtr x = Alloc(4096);  // ends at a page
  long at = 1024;               // byte 4096
  ASSERT_EQ(Launch("write_at", {&x, &at}, s1_), kCudaSuccess);
  EXPECT_THAT(Call(cu_.stream_synchronize(s1_), "cuStreamSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       "cuStreamSynchronize: CUDA_ERROR_LAUNCH_FAILED (kernel "
                       "write_at: an access at byte 4096 of a device buffer "
                       "of 4096 bytes (past its end))"));
  CuDevicePtr y = 0;
  EXPECT_EQ(cu_.mem_alloc(&y, 64), kCudaErrorLaunchFailed);
  ResetEmulatedDevice();
  EXPECT_EQ(cu_.mem_alloc(&y, 64), kCudaSuccess);
}

TEST_F(EmulatedDriverTest, AWriteIntoTheSlackIsFoundAfterTheKernel) {
  CuDevicePtr x = Alloc(4000);  // 96 bytes of slack before the page
  long at = 1000;               // byte 4000
  ASSERT_EQ(Launch("write_at", {&x, &at}, s1_), kCudaSuccess);
  EXPECT_THAT(Call(cu_.ctx_synchronize(), "cuCtxSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       "cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED (kernel "
                       "write_at wrote byte 4000 of a device buffer of 4000 "
                       "bytes (past its end))"));
}

TEST_F(EmulatedDriverTest, ReadsBeforeTheStartAndPastTheEndStopTheKernel) {
  CuDevicePtr x = Alloc(4096);
  CuDevicePtr out = Alloc(4);
  long at = -100;  // byte -400: the page before
  ASSERT_EQ(Launch("read_at", {&x, &at, &out}, s1_), kCudaSuccess);
  EXPECT_THAT(Call(cu_.ctx_synchronize(), "cuCtxSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       ::testing::HasSubstr(
                           "kernel read_at: an access at byte -400 of a "
                           "device buffer of 4096 bytes (before its start)")));
  ResetEmulatedDevice();
  ASSERT_OK(Call(cu_.module_load_data(&module_, image_.data()), "load"));
  x = Alloc(4096);
  out = Alloc(4);
  at = 1030;
  ASSERT_EQ(Launch("read_at", {&x, &at, &out}, nullptr), kCudaSuccess);
  EXPECT_THAT(Call(cu_.ctx_synchronize(), "cuCtxSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       ::testing::HasSubstr("an access at byte 4120 of a "
                                            "device buffer of 4096 bytes (past "
                                            "its end)")));
}

TEST_F(EmulatedDriverTest, ADivergentBarrierIsTheKernelsError) {
  CuDevicePtr x = Alloc(4 * 32);
  ASSERT_EQ(Launch("divergent_barrier", {&x}, s1_), kCudaSuccess);
  EXPECT_THAT(Call(cu_.stream_synchronize(s1_), "cuStreamSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       "cuStreamSynchronize: CUDA_ERROR_LAUNCH_FAILED (kernel "
                       "divergent_barrier: __syncthreads reached by 16 of the "
                       "block's 32 threads; the others returned (a divergent "
                       "barrier))"));
}

TEST_F(EmulatedDriverTest, BadHandlesImagesAndRangesAreErrors) {
  CuModule bad = nullptr;
  EXPECT_EQ(cu_.module_load_data(&bad, "not an ELF image"),
            200);  // CUDA_ERROR_INVALID_IMAGE
  // A shared library that does not bind to the grid runner.
  ASSERT_OK_AND_ASSIGN(std::string unbound,
                       ReadRunfile("runtime/cuda/testdata/unbound_module.so"));
  EXPECT_EQ(cu_.module_load_data(&bad, unbound.data()), 200);
  CuFunction f = nullptr;
  EXPECT_EQ(cu_.module_get_function(&f, module_, "no_such_kernel"), 500);
  EXPECT_EQ(cu_.launch_kernel(reinterpret_cast<CuFunction>(&f), 1, 1, 1, 1, 1,
                              1, 0, nullptr, nullptr, nullptr),
            400);  // CUDA_ERROR_INVALID_HANDLE
  CuDevicePtr x = Alloc(64);
  char host[128];
  EXPECT_EQ(cu_.memcpy_htod_async(x, host, 65, nullptr), 1);
  EXPECT_EQ(cu_.memcpy_dtoh_async(host, x + 8, 64, nullptr), 1);
  EXPECT_EQ(cu_.mem_free(x + 8), 1);
  EXPECT_EQ(cu_.mem_free(x), kCudaSuccess);
  EXPECT_EQ(cu_.mem_free(x), 1);  // twice
}

// The caching allocator on the emulated device: a block given back on s1
// while a kernel there may still use it is not s2's until s1's work has
// run; an out-of-memory empties the cache and retries.
// A graph runs its nodes in order each time it is launched, with the
// parameters they had when added; a node whose buffer is gone fails the
// launch before any node runs.
TEST_F(EmulatedDriverTest, GraphsReplayTheirLaunchesAndCopies) {
  std::vector<float> host(64);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i);
  CuDevicePtr x = Alloc(64 * sizeof(float));
  CuDevicePtr y = Alloc(64 * sizeof(float));
  ASSERT_OK(Call(cu_.memcpy_htod_async(x, host.data(), 256, nullptr), "HtoD"));
  CuGraph graph = nullptr;
  ASSERT_OK(Call(cu_.graph_create(&graph, 0), "cuGraphCreate"));
  float a = 2;
  int n = 64;
  void* params[] = {&x, &a, &n};
  CuKernelNodeParams k;
  k.func = Function("scale");
  k.grid_x = 2;
  k.block_x = 32;
  k.params = params;
  CuGraphNode scale = nullptr, copy = nullptr;
  ASSERT_OK(Call(cu_.graph_add_kernel_node(&scale, graph, nullptr, 0, &k),
                 "cuGraphAddKernelNode"));
  a = 100;  // the node took its arguments when added
  const CuMemcpy3D c = MemcpyNodeParams(y, x, 256);
  CuContext ctx = nullptr;
  ASSERT_OK(Call(cu_.ctx_get_current(&ctx), "cuCtxGetCurrent"));
  ASSERT_OK(Call(cu_.graph_add_memcpy_node(&copy, graph, &scale, 1, &c, ctx),
                 "cuGraphAddMemcpyNode"));
  CuGraphExec exec = nullptr;
  ASSERT_OK(Call(cu_.graph_instantiate(&exec, graph, 0), "cuGraphInstantiate"));
  std::vector<float> back(64);
  for (int launch = 1; launch <= 2; ++launch) {
    ASSERT_OK(Call(cu_.graph_launch(exec, nullptr), "cuGraphLaunch"));
    ASSERT_OK(
        Call(cu_.memcpy_dtoh_async(back.data(), y, 256, nullptr), "DtoH"));
    ASSERT_OK(Call(cu_.stream_synchronize(nullptr), "cuStreamSynchronize"));
    const float factor = launch == 1 ? 2.0f : 4.0f;
    for (int i = 0; i < 64; ++i) ASSERT_EQ(back[i], factor * i) << i;
  }
  // Dependencies must be nodes of the graph; copies are between device
  // addresses inside buffers.
  CuGraphNode bogus = reinterpret_cast<CuGraphNode>(uintptr_t{99}), node;
  EXPECT_EQ(cu_.graph_add_kernel_node(&node, graph, &bogus, 1, &k), 1);
  CuMemcpy3D wide = MemcpyNodeParams(y, x, 4096);
  EXPECT_EQ(cu_.graph_add_memcpy_node(&node, graph, nullptr, 0, &wide, ctx), 1);
  CuMemcpy3D from_host = c;
  from_host.src_memory_type = 1;
  EXPECT_EQ(
      cu_.graph_add_memcpy_node(&node, graph, nullptr, 0, &from_host, ctx), 1);
  // A buffer the graph uses is gone: the launch fails, and runs nothing.
  ASSERT_OK(Call(cu_.mem_free(y), "cuMemFree"));
  EXPECT_EQ(cu_.graph_launch(exec, nullptr), 1);
  ASSERT_OK(Call(cu_.ctx_synchronize(), "cuCtxSynchronize"));
  ASSERT_OK(Call(cu_.graph_exec_destroy(exec), "cuGraphExecDestroy"));
  ASSERT_OK(Call(cu_.graph_destroy(graph), "cuGraphDestroy"));
  EXPECT_EQ(cu_.graph_launch(exec, nullptr), 400);  // a handle gone
  EXPECT_EQ(cu_.graph_destroy(graph), 400);
}

TEST_F(EmulatedDriverTest, TheAllocatorWaitsForTheDevice) {
  CudaAllocator allocator(cu_);
  ASSERT_OK_AND_ASSIGN(CudaBlock b, allocator.Allocate(4096, s1_));
  float a = 2;
  int n = 1024;
  ASSERT_EQ(Launch("scale", {&b.ptr, &a, &n}, s1_, 32), kCudaSuccess);
  ASSERT_OK(allocator.Free(b));
  ASSERT_OK_AND_ASSIGN(CudaBlock other, allocator.Allocate(4096, s2_));
  EXPECT_NE(other.ptr, b.ptr);  // s1's kernel has not run
  ASSERT_OK(Call(cu_.stream_synchronize(s1_), "cuStreamSynchronize"));
  ASSERT_OK_AND_ASSIGN(CudaBlock reused, allocator.Allocate(4096, s2_));
  EXPECT_EQ(reused.ptr, b.ptr);
  ASSERT_OK(allocator.Free(other));
  ASSERT_OK(allocator.Free(reused));

  SetEmulatedDeviceMemory(8 << 20);
  ASSERT_OK(allocator.EmptyCache());
  ASSERT_OK_AND_ASSIGN(CudaBlock big, allocator.Allocate(6 << 20, s1_));
  ASSERT_OK(allocator.Free(big));
  ASSERT_OK_AND_ASSIGN(CudaBlock other_class, allocator.Allocate(4 << 20, s1_));
  EXPECT_EQ(allocator.stats().cache_flushes, 1);
  EXPECT_THAT(allocator.Allocate(6 << 20, s1_).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::HasSubstr("cannot allocate 6291456 bytes")));
  ASSERT_OK(allocator.Free(other_class));
}

}  // namespace
}  // namespace lathe
