// The CUDA kernels' text: graph text in, lowered and scheduled, EmitCuda's
// source out, FileCheck CHECK lines on what the emitter decides: the
// vector path (which accesses move 16 bytes at once, its width, the
// conditions its kernel checks before taking it) and the scalar loop
// behind it. That the source computes the interpreter's results on the
// emulated device and compiles with NVRTC is driver:compile_cuda_test's.

#include "codegen/cuda/cuda_emitter.h"

#include "absl/strings/match.h"
#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
#include "status_macros.h"
#include "symbolic/printer.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::RunFileCheck;

absl::StatusOr<std::string> Emit(absl::string_view text) {
  ASSIGN_OR_RETURN(Scheduled s, ScheduleText(text));
  return EmitCuda(s.lowered.program);
}

// Every source begins with the prelude the compiler precompiles once
// (CompileSharedLibrary's `prelude`): text before it would make every
// build parse the prelude again.
TEST(CudaEmitterTest, EverySourceBeginsWithThePrelude) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    return (exp,)
)IR"));
  EXPECT_TRUE(absl::StartsWith(source, CudaSourcePrelude()));
  EXPECT_GT(source.size(), CudaSourcePrelude().size());
  EXPECT_TRUE(absl::EndsWith(CudaSourcePrelude(), "\n"));
}

// The swish chain with a broadcast bias: x and the output move four floats
// at a time, and so does the bias (its index steps by one with the inner
// loop too), when all three are 16-byte aligned; the scalar loop is the
// fallback. A launch needs a quarter of the threads.
TEST(CudaEmitterTest, ContiguousAccessesMoveSixteenBytes) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[64, 96]", b: "f32[96]"):
    sig = torch.ops.aten.sigmoid.default(x)
    mul = torch.ops.aten.mul.Tensor(x, sig)
    add = torch.ops.aten.add.Tensor(mul, b)
    return (add,)
)IR"));
  ASSERT_OK_AND_ASSIGN(std::string source, EmitCuda(s.lowered.program));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      struct alignas(sizeof(T) * N) lathe_vec {
CHECK:      void __launch_bounds__(256) k0(const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2, int64_t n) {
CHECK-NEXT:   if ((uint64_t)(const void*)b0 % 16 == 0 && (uint64_t)(const void*)b1 % 16 == 0 && (uint64_t)(const void*)b2 % 16 == 0) {
CHECK-NEXT:   for (int32_t t = {{.*}}; t < (int32_t)(n / 4); t += {{.*}}) {
CHECK-NEXT:     const int32_t i = t * 4;
CHECK:          const int32_t xv = r % (int32_t)(96); r /= (int32_t)(96);
CHECK-NEXT:     const int32_t x0 = r;
CHECK-NEXT:     const lathe_vec<float, 4> w0 = *reinterpret_cast<const lathe_vec<float, 4>*>(b0 + (((96 * x0) + xv)));
CHECK-NEXT:     const lathe_vec<float, 4> w3 = *reinterpret_cast<const lathe_vec<float, 4>*>(b1 + (xv));
CHECK-NEXT:     lathe_vec<float, 4> w5;
CHECK-NEXT:     for (int l = 0; l < 4; ++l) {
CHECK-NEXT:       const int32_t x1 = xv + l;
CHECK:            const float v0 = w0.v[l];
CHECK:            const float v3 = w3.v[l];
CHECK:            w5.v[l] = v4;
CHECK-NEXT:     }
CHECK-NEXT:     *reinterpret_cast<lathe_vec<float, 4>*>(b2 + (((96 * x0) + xv))) = w5;
CHECK-NEXT:   }
CHECK-NEXT:   return;
CHECK-NEXT:   }
CHECK-NEXT:   for (int32_t i = {{.*}}; i < (int32_t)(n); i += {{.*}}) {
CHECK:          const float v0 = b0[((96 * x0) + x1)];
)"));
  EXPECT_EQ(
      DeviceKernelLaunch(s.lowered.program, s.lowered.program.kernels[0]).width,
      4);
}

// Symbolic sizes: the row stride s1 and the inner extent must be multiples
// of four, which only the call knows: the kernel checks them. The [s0, 1]
// operand's index does not step with the inner loop: one scalar load per
// lane.
TEST(CudaEmitterTest, SymbolicStridesAreCheckedInTheKernel) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[s0, s1]", c: "f32[s0, 1]"):
    add = torch.ops.aten.add.Tensor(x, c)
    return (add,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      if ((s1) % 4 == 0 && (uint64_t)(const void*)b0 % 16 == 0 && (uint64_t)(const void*)b2 % 16 == 0) {
CHECK:        const lathe_vec<float, 4> w0 = {{.*}}(b0 + ((xv + (s1 * x0))));
CHECK:        for (int l = 0; l < 4; ++l) {
CHECK:          const float v1 = b1[x0];
CHECK:        }
CHECK-NEXT:   *reinterpret_cast<lathe_vec<float, 4>*>(b2 + ((xv + (s1 * x0)))) = w3;
)"));
}

// A slice starting at column 1 of 9: its rows start off a multiple of four,
// so its loads stay scalar in the lane loop; the contiguous output is still
// stored as vectors.
TEST(CudaEmitterTest, AnOffsetViewLoadsOneElementAtATime) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[8, 9]"):
    sl = torch.ops.aten.slice.Tensor(x, 1, 1, 9)
    neg = torch.ops.aten.neg.default(sl)
    return (neg,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      if ((uint64_t)(const void*)b1 % 16 == 0) {
CHECK-NOT:  w0
CHECK:        for (int l = 0; l < 4; ++l) {
CHECK:          const float v0 = b0[(1 + (9 * x0) + x1)];
CHECK:          w2.v[l] = v1;
CHECK:        *reinterpret_cast<lathe_vec<float, 4>*>(b1 + (((8 * x0) + xv))) = w2;
)"));
}

// The widest vector buffer sets the width: two doubles (16 bytes) and two
// floats per step. The transposed operand steps by 8 with the inner loop:
// scalar loads.
TEST(CudaEmitterTest, DoublesSetTheWidthToTwo) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f64[8, 16]", y: "f32[16, 8]"):
    c = torch.ops.prims.convert_element_type.default(x, torch.float32)
    t = torch.ops.aten.t.default(y)
    add = torch.ops.aten.add.Tensor(c, t)
    return (add,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      if ((uint64_t)(const void*)b0 % 16 == 0 && (uint64_t)(const void*)b2 % 8 == 0) {
CHECK:        const lathe_vec<double, 2> w0 =
CHECK:        lathe_vec<float, 2> w4;
CHECK:        for (int l = 0; l < 2; ++l) {
CHECK:          const float v2 = b1[(x0 + (8 * x1))];
)"));
}

// Half-precision inputs and a bool output: eight halves (16 bytes) and
// eight bools per step.
TEST(CudaEmitterTest, HalvesMoveEightAtATime) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f16[64]", y: "f16[64]"):
    gt = torch.ops.aten.gt.Tensor(x, y)
    return (gt,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      (uint64_t)(const void*)b2 % 8 == 0) {
CHECK:        const lathe_vec<lathe_half, 8> w0 =
CHECK:        lathe_vec<bool, 8> w5;
)"));
}

// A bool input moves eight at a time too, each element read as its byte
// (lathe_load_bool), as the scalar loads read it.
TEST(CudaEmitterTest, BoolsLoadAsTheirBytes) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, m: "b8[64]", x: "f16[64]"):
    where = torch.ops.aten.where.ScalarSelf(m, 0.0, x)
    return (where,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:        const lathe_vec<bool, 8> w0 =
CHECK:        const bool v0 = lathe_load_bool(&w0.v[l]);
)"));
}

// An input written in place is loaded and stored by one kernel: its
// accesses keep their order, one element at a time; the other operand
// still loads as vectors.
TEST(CudaEmitterTest, ABufferLoadedAndStoredStaysScalar) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[32]", y: "f32[32]"):
    add_ = torch.ops.aten.add_.Tensor(x, y)
    return (add_,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      k0(float* __restrict__ b0, const float* __restrict__ b1, int64_t n) {
CHECK-NEXT:   if ((uint64_t)(const void*)b1 % 16 == 0) {
CHECK:          const float v0 = b0[x0];
CHECK-NEXT:     const float v1 = w1.v[l];
CHECK-NEXT:     const float v2 = lathe_op_add(v0, v1);
CHECK-NEXT:     b0[x0] = v2;
)"));
}

// An inner extent of 5 is never a multiple of four: no vector path.
TEST(CudaEmitterTest, AnInnerExtentNotAMultipleHasNoVectorPath) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[3, 5]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)IR"));
  ASSERT_OK_AND_ASSIGN(std::string source, EmitCuda(s.lowered.program));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:     k0(const float* __restrict__ b0, float* __restrict__ b1, int64_t n) {
CHECK-NOT: lathe_vec<
CHECK:     for (int32_t i =
)"));
  EXPECT_EQ(
      DeviceKernelLaunch(s.lowered.program, s.lowered.program.kernels[0]).width,
      1);
}

// Softmax's decomposition, a variance and an argmax: row kernels, a block
// per row. The max and the variance of x are siblings (scheduler.cc): one
// strided loop accumulates both per thread, then each goes across the
// block in turn (the argmax, which the cpu backend runs in order, keeps a
// loop of its own); the exp written in one section and read back in the
// next waits at a barrier; a straight-line section's store is thread 0's.
TEST(CudaEmitterTest, ReductionsAreRowKernels) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 40]"):
    amax = torch.ops.aten.amax.default(x, [1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    exp = torch.ops.aten.exp.default(sub)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = vm[0]
    am = torch.ops.aten.argmax.default(x, 1)
    return (div, getitem, am)
)IR"));
  ASSERT_OK_AND_ASSIGN(std::string source, EmitCuda(s.lowered.program));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      __global__ void __launch_bounds__(256) k0(
CHECK-NEXT:   __shared__ lathe_slot slots[8];
CHECK-NEXT:   for (int32_t i = (int32_t)blockIdx.x; i < (int32_t)n; i += (int32_t)gridDim.x) {
CHECK:          float [[MAX:acc[0-9]+]] = -lathe_std::numeric_limits<float>::infinity();
CHECK-NEXT:     lathe_welford_run<float> acc[[W:[0-9]+]] = {{[{][{]0, 0, 0[}], 0, 0, 0, 0[}]}};
CHECK-NEXT:     for (int32_t j = (int32_t)threadIdx.x; j < (int32_t)(40); j += (int32_t)blockDim.x) {
CHECK:            [[MAX]] = lathe_red_max{}([[MAX]], static_cast<float>(v0));
CHECK:            acc[[W]] = lathe_welford_run_add(acc[[W]], static_cast<float>(v{{[0-9]+}}));
CHECK-NEXT:     }
CHECK-NEXT:     [[MAX]] = lathe_block_reduce([[MAX]], lathe_red_max{}, slots);
CHECK:          const lathe_welford w[[W]] = lathe_block_reduce(lathe_welford_of(acc[[W]]), lathe_red_welford{}, slots);
CHECK:          static_cast<double>(w[[W]].m2);
CHECK:          b2[{{.*}}] = v4;
CHECK-NEXT:     }
CHECK-NEXT:     __syncthreads();
CHECK:          lathe_red_sum{}
CHECK:          lathe_argacc<float> [[A:acc[0-9]+]] = {-lathe_std::numeric_limits<float>::infinity(), lathe_std::numeric_limits<int64_t>::max()};
CHECK-NEXT:     for (int32_t j = (int32_t)threadIdx.x; j < (int32_t)(40); j += (int32_t)blockDim.x) {
CHECK:            [[A]] = lathe_red_arg<true>{}([[A]], lathe_argacc<float>{v{{[0-9]+}}, static_cast<int64_t>(v{{[0-9]+}})});
CHECK:      LATHE_CUDA_KERNEL(k0, true)
)"));
  const DeviceLaunch launch =
      DeviceKernelLaunch(s.lowered.program, s.lowered.program.kernels[0]);
  EXPECT_EQ(symbolic::ToString(launch.n), "4");
  EXPECT_EQ(symbolic::ToString(launch.row), "40");
}

// A cumsum: every thread runs every chunk of the row (the block scan's
// barriers), a thread past the end at the last point without storing, the
// running sum carried across chunks.
TEST(CudaEmitterTest, AScanRunsTheRowInChunksWithACarry) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 300]"):
    cumsum = torch.ops.aten.cumsum.default(x, 1)
    return (cumsum,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      float [[C:acc[0-9]+]] = float(0);
CHECK-NEXT: for (int32_t base = 0; base < (int32_t)(300); base += (int32_t)blockDim.x) {
CHECK-NEXT:   const int32_t j0 = base + (int32_t)threadIdx.x;
CHECK-NEXT:   const bool live = j0 < (int32_t)(300);
CHECK-NEXT:   const int32_t j = live ? j0 : (int32_t)(300) - 1;
CHECK:        const float [[V:v[0-9]+]] = lathe_block_scan(live ? static_cast<float>(v{{[0-9]+}}) : float(0), lathe_red_sum{}, &[[C]], slots);
CHECK:        if (live) b{{[0-9]+}}[{{.*}}] = [[V]];
CHECK:      LATHE_CUDA_KERNEL(k0, true)
)"));
}

// An index by loaded values: the kernel takes the call's check record
// (ck) before n; the index wraps when negative and, out of range, records
// the failure and reads row 0.
TEST(CudaEmitterTest, AnIndexIsCheckedIntoTheCallsRecord) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[10, 12]", i: "i64[5]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    return (index,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      k0(const float* __restrict__ b0, const int64_t* __restrict__ b1, float* __restrict__ b2, int64_t* __restrict__ ck, int64_t n) {
CHECK:        int64_t [[I:v[0-9]+]] = static_cast<int64_t>([[G:v[0-9]+]]);
CHECK-NEXT:   {
CHECK-NEXT:     const int64_t bound = (int64_t)(10);
CHECK-NEXT:     if ([[I]] < 0) [[I]] += bound;
CHECK-NEXT:     if (__builtin_expect([[I]] < 0 || [[I]] >= bound, 0)) { lathe_device_check_failed(ck, 1, static_cast<int64_t>([[G]]), bound); [[I]] = 0; }
CHECK-NEXT:   }
CHECK:        = b0[{{.*}}12 * [[I]]{{.*}}];
)"));
}

// A store at loaded indices makes its kernel serial (one thread, its
// points in order: the repeated index's last write wins), with no vector
// path; the copy of x before it keeps its vector accesses. The matrix
// product is no device kernel: the host function calls the device's
// routine.
TEST(CudaEmitterTest, AScatterIsSerialAndAProductIsNoDeviceKernel) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[64, 96]", i: "i64[8]", v: "f32[8, 96]", a: "f32[4, 4]"):
    index_put = torch.ops.aten.index_put.default(x, [i], v)
    mm = torch.ops.aten.mm.default(a, a)
    return (index_put, mm)
)IR"));
  const Program& p = s.lowered.program;
  ASSERT_OK_AND_ASSIGN(std::string source, EmitCuda(p));
  std::vector<std::string> serial, vector, externs;
  for (const Kernel& k : p.kernels) {
    if (k.kind == Kernel::Kind::kExtern) externs.push_back(k.routine);
    if (k.kind != Kernel::Kind::kLoops) continue;
    const DeviceLaunch launch = DeviceKernelLaunch(p, k);
    if (launch.serial) serial.push_back(k.name);
    if (launch.width > 1) vector.push_back(k.name);
  }
  EXPECT_THAT(externs, ::testing::ElementsAre("sgemm"));
  EXPECT_THAT(DeviceKernelNames(p), ::testing::ElementsAre("k0", "k1"));
  EXPECT_THAT(serial, ::testing::ElementsAre("k1"));
  EXPECT_THAT(vector, ::testing::ElementsAre("k0"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      void __launch_bounds__(256) k0(
CHECK:      lathe_vec<float, 4>
CHECK:      void __launch_bounds__(256) k1(
CHECK-NOT:  lathe_vec
CHECK:      LATHE_CUDA_KERNEL(k1, false)
CHECK-NOT:  k2(
)"));
}

}  // namespace
}  // namespace lathe::codegen
