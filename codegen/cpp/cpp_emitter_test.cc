// The kernels' C++ text: graph text in, lowered and scheduled, EmitCpp's
// source out, FileCheck CHECK lines on what the emitter decides: the index
// type of the loops and the form of a library call. That the source
// compiles, vectorizes and computes the interpreter's results is
// vectorization_test's and tools/cpu_differential_test's.

#include "codegen/cpp/cpp_emitter.h"

#include "absl/strings/match.h"
#include "codegen/codegen_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "status_macros.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::RunFileCheck;

absl::StatusOr<std::string> Emit(absl::string_view text) {
  ASSIGN_OR_RETURN(Scheduled s, ScheduleText(text));
  return EmitCpp(s.lowered.program);
}

// Every source begins with the prelude the compiler precompiles once
// (CompileSharedLibrary's `prelude`): text before it would make every
// build parse the prelude again.
TEST(CppEmitterTest, EverySourceBeginsWithThePrelude) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    return (exp,)
)IR"));
  EXPECT_TRUE(absl::StartsWith(source, CppSourcePrelude()));
  EXPECT_GT(source.size(), CppSourcePrelude().size());
  EXPECT_TRUE(absl::EndsWith(CppSourcePrelude(), "\n"));
}

// Static sizes, every buffer under 2^31 elements: the loops count in int32.
TEST(CppEmitterTest, StaticSizesIndexInInt32) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [1])
    return (sum_1,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:     static void lathe_k0(
CHECK:       for (int32_t x0 = static_cast<int32_t>(lathe_lo); x0 < static_cast<int32_t>(lathe_hi); ++x0) {
CHECK:         for (int32_t r0_0 = 0; r0_0 < 8; ++r0_0) {
CHECK-NOT: int64_t x
)"));
}

// A Welford reduction runs its innermost loop in blocks of 256, each
// shifted by its first value (the exp at the block's first index): one simd
// pass sums the shifted values, a second the squared deviations from the
// block's mean, recomputing the exp; a block whose sums overflowed f32 takes
// the two passes again in double; the block is merged into the double
// accumulator, and an empty row is NaN (M2 is double, as the var after it). The
// max over the same rows is its sibling (it reads only x): it accumulates
// in the block's first pass, once per element.
TEST(CppEmitterTest, WelfordRunsInShiftedBlocksOfTwoPasses) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 1000]"):
    exp = torch.ops.aten.exp.default(x)
    vm = torch.ops.aten.var_mean.correction(exp, [1], correction = 1)
    getitem = vm[0]
    amax = torch.ops.aten.amax.default(x, [1])
    add = torch.ops.aten.add.Tensor(getitem, amax)
    return (add,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      lathe_welford [[WF:wf[0-9]+]]{0, 0, 0};
CHECK-NEXT: for (int32_t blk = 0; blk < 1000; blk += 256) {
CHECK-NEXT:   const int32_t end = static_cast<int32_t>(std::min<int64_t>(int64_t{blk} + 256, 1000));
CHECK-NEXT:   float [[BK:bk[0-9]+]];
CHECK-NEXT:   {
CHECK-NEXT:     const int32_t r0_0 = blk;
CHECK:          lathe_op_exp
CHECK-NEXT:     [[BK]] = lathe_op_isfinite([[V:v[0-9]+]]) ? [[V]] : float(0);
CHECK-NEXT:   }
CHECK-NEXT:   float [[BS:bs[0-9]+]] = 0;
CHECK-NEXT:   #pragma omp simd reduction(|:[[NAN:nan[0-9]+]]) reduction(max:[[MAX:acc[0-9]+]]) reduction(+:[[BS]])
CHECK-NEXT:   for (int32_t r0_0 = blk; r0_0 < end; ++r0_0) {
CHECK:          lathe_op_exp
CHECK-NEXT:     [[BS]] += v{{[0-9]+}} - [[BK]];
CHECK-NEXT:     const float [[X:v[0-9]+]] = p0[
CHECK-NEXT:     [[MAX]] = [[X]] > [[MAX]] ? [[X]] : [[MAX]];
CHECK-NEXT:     [[NAN]] |= [[X]] != [[X]];
CHECK-NEXT:   }
CHECK-NEXT:   const float [[BC:bc[0-9]+]] = [[BS]] / static_cast<float>(end - blk);
CHECK-NEXT:   float [[BQ:bq[0-9]+]] = 0;
CHECK-NEXT:   #pragma omp simd reduction(+:[[BQ]])
CHECK-NEXT:   for (int32_t r0_0 = blk; r0_0 < end; ++r0_0) {
CHECK:          lathe_op_exp
CHECK-NEXT:     { const float d = (v{{[0-9]+}} - [[BK]]) - [[BC]]; [[BQ]] += d * d; }
CHECK-NEXT:   }
CHECK-NEXT:   double [[DC:dc[0-9]+]] = [[BC]], [[DQ:dq[0-9]+]] = [[BQ]];
CHECK-NEXT:   if (!lathe_op_isfinite([[BQ]])) {
CHECK-NEXT:     [[DC]] = 0; [[DQ]] = 0;
CHECK-NEXT:     for (int32_t r0_0 = blk; r0_0 < end; ++r0_0) {
CHECK:            lathe_op_exp
CHECK-NEXT:       [[DC]] += (static_cast<double>(v{{[0-9]+}}) - static_cast<double>([[BK]]));
CHECK-NEXT:     }
CHECK-NEXT:     [[DC]] /= static_cast<double>(end - blk);
CHECK-NEXT:     for (int32_t r0_0 = blk; r0_0 < end; ++r0_0) {
CHECK:            lathe_op_exp
CHECK-NEXT:       { const double d = (static_cast<double>(v{{[0-9]+}}) - static_cast<double>([[BK]])) - [[DC]]; [[DQ]] += d * d; }
CHECK-NEXT:     }
CHECK-NEXT:   }
CHECK-NEXT:   [[WF]] = lathe_welford_merge([[WF]], {static_cast<double>([[BK]]) + [[DC]], [[DQ]], static_cast<int64_t>(end - blk)});
CHECK-NEXT: }
CHECK:      = [[NAN]] ? std::numeric_limits<float>::quiet_NaN() : [[MAX]];
CHECK:      [[WF]].n > 0 ? static_cast<double>([[WF]].m2) : std::numeric_limits<double>::quiet_NaN();
CHECK-NOT:  reduction(max:
)"));
}

// Reductions to one value run on the pool: the max and the var_mean of x
// are siblings, one Welford section whose chunks are of its outer loop and
// its last loop's blocks, flattened, each with its own accumulators (the
// max's NaN flag too) folded into the kernel's under one lock; no OpenMP
// team.
TEST(CppEmitterTest, ReductionsToOneValueFoldTheirChunksUnderALock) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[300, 600]"):
    amax = torch.ops.aten.amax.default(x, [0, 1])
    vm = torch.ops.aten.var_mean.correction(x, [0, 1], correction = 1)
    getitem = vm[0]
    add = torch.ops.aten.add.Tensor(getitem, amax)
    return (add,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK-NOT:  omp parallel
CHECK:      float [[ACC:acc[0-9]+]] = -lathe_std::numeric_limits<float>::infinity();
CHECK-NEXT: int [[NAN:nan[0-9]+]] = 0;
CHECK-NEXT: lathe_welford [[WF:wf[0-9]+]]{0, 0, 0};
CHECK-NEXT: {
CHECK-NEXT:   int lathe_held = 0;
CHECK-NEXT:   lathe_parallel(rt, 900, 1, 180000 > 32768, 0, [](int64_t lathe_lo, int64_t lathe_hi, {{.*}}, int* lathe_held, float* lathe_[[ACC]], int* lathe_[[NAN]], lathe_welford* lathe_[[WF]]) {
CHECK-NEXT:     float [[ACC]] = -lathe_std::numeric_limits<float>::infinity();
CHECK-NEXT:     int [[NAN]] = 0;
CHECK-NEXT:     lathe_welford [[WF]]{0, 0, 0};
CHECK-NEXT:     int32_t r{{[0-9]}}_0 = static_cast<int32_t>(lathe_lo / (3));
CHECK-NEXT:     int32_t lathe_blk = static_cast<int32_t>(lathe_lo % (3));
CHECK-NEXT:     for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; ++lathe_f) {
CHECK-NEXT:       const int32_t blk = static_cast<int32_t>(lathe_blk * 256);
CHECK-NEXT:       const int32_t end = static_cast<int32_t>(std::min<int64_t>(int64_t{blk} + 256, 600));
CHECK:            #pragma omp simd reduction(|:[[NAN]]) reduction(max:[[ACC]]) reduction(+:
CHECK:            if (++lathe_blk == 3) { lathe_blk = 0; ++r{{[0-9]}}_0; }
CHECK-NEXT:     }
CHECK-NEXT:     lathe_lock(lathe_held);
CHECK-NEXT:     *lathe_[[ACC]] = [[ACC]] > *lathe_[[ACC]] ? [[ACC]] : *lathe_[[ACC]];
CHECK-NEXT:     *lathe_[[NAN]] |= [[NAN]];
CHECK-NEXT:     *lathe_[[WF]] = lathe_welford_merge(*lathe_[[WF]], [[WF]]);
CHECK-NEXT:     lathe_unlock(lathe_held);
CHECK-NOT:  lathe_parallel
)"));
}

// A reduction to one value over a few long rows splits the rows into
// blocks of 4096 too, so the pool has chunks for every thread: the flat
// loop is of (row, block), the simd loop the block's elements.
TEST(CppEmitterTest, AReductionOverFewLongRowsSplitsTheRows) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[2, 100000]"):
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      lathe_parallel(rt, 50, 1, 200000 > 32768, 0,
CHECK:      int32_t [[R:r[0-9]_0]] = static_cast<int32_t>(lathe_lo / (25));
CHECK-NEXT: int32_t lathe_blk = static_cast<int32_t>(lathe_lo % (25));
CHECK-NEXT: for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; ++lathe_f) {
CHECK-NEXT:   const int32_t blk = static_cast<int32_t>(lathe_blk * 4096);
CHECK-NEXT:   #pragma omp simd reduction(+:[[ACC:acc[0-9]+]])
CHECK-NEXT:   for (int32_t [[C:r[0-9]_1]] = blk; [[C]] < static_cast<int32_t>(std::min<int64_t>(int64_t{blk} + 4096, 100000)); ++[[C]]) {
CHECK:        }
CHECK-NEXT:   if (++lathe_blk == 25) { lathe_blk = 0; ++[[R]]; }
CHECK-NEXT: }
CHECK-NEXT: lathe_lock(lathe_held);
)"));
}

// A flat f32 kernel storing 2^22 elements or more, one element further at
// each step of its innermost loop, streams its store: the row up to the
// first 64-byte aligned element, then blocks of 16 computed into an aligned
// array and written with streaming stores, then the rest, and a fence.
// Below the threshold, over a symbolic size, or for a buffer a later kernel
// reads (the matrix product's operand stays in the cache), the loop is the
// plain one.
TEST(CppEmitterTest, LargeContiguousOutputsAreStreamed) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[2048, 2048]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      static void lathe_k0(
CHECK:        lathe_parallel(rt, 2048, 1, 4194304 > 32768, 0, [](int64_t lathe_lo, int64_t lathe_hi, {{.*}}) {
CHECK-NEXT:   for (int32_t x0 = static_cast<int32_t>(lathe_lo); x0 < static_cast<int32_t>(lathe_hi); ++x0) {
CHECK-NEXT:     const int32_t lo = static_cast<int32_t>(lathe_stream_peel(p0 + (2048 * x0), 2048));
CHECK-NEXT:     #pragma omp simd
CHECK-NEXT:     for (int32_t x1 = 0; x1 < lo; ++x1) {
CHECK:            p0[((2048 * x0) + x1)] = v
CHECK:          int32_t xb = lo;
CHECK-NEXT:     for (; xb + 16 <= 2048; xb += 16) {
CHECK-NEXT:       alignas(64) float lathe_t[16];
CHECK:              const int32_t x1 = xb + j;
CHECK:              lathe_t[j] = v
CHECK:            lathe_stream16(p0 + ((2048 * x0) + xb), lathe_t);
CHECK:          for (int32_t x1 = xb; x1 < 2048; ++x1) {
CHECK:          lathe_stream_fence();
CHECK-NEXT:   }
CHECK-NEXT: }, p0, p1, S, F, rt, E);
)"));
  for (const char* small : {R"IR(
def forward(self, x: "f32[1024, 2048]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)IR",
                            R"IR(
def forward(self, x: "f32[s0, 2048]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)IR",
                            R"IR(
def forward(self, x: "f32[2048, 2048]", w: "f32[2048, 8]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    mm = torch.ops.aten.mm.default(mul, w)
    return (mm,)
)IR"}) {
    ASSERT_OK_AND_ASSIGN(std::string plain, Emit(small));
    EXPECT_OK(RunFileCheck(plain, R"(
CHECK:     static void lathe_k0(
CHECK-NOT: lathe_stream16(
)"));
  }
}

// A parallel loop is a lambda over a chunk of its outer loops flattened,
// which the runtime's pool splits (runtime/thread_pool.h): the chunk's
// first indices by division, then a step with carries per iteration, and
// the innermost loop inside it vectorized.
TEST(CppEmitterTest, ParallelLoopsAreChunksOfTheFlattenedOuterLoops) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 8, 16]"):
    permute = torch.ops.aten.permute.default(x, [1, 0, 2])
    mul = torch.ops.aten.mul.Tensor(permute, 2)
    return (mul,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      static void lathe_k0(
CHECK:        lathe_parallel(rt, 32, 1, 512 > 32768, 0, [](int64_t lathe_lo, int64_t lathe_hi, {{.*}}) {
CHECK-NEXT:     int32_t x0 = static_cast<int32_t>(lathe_lo / (4));
CHECK-NEXT:     int32_t x1 = static_cast<int32_t>(lathe_lo % (4));
CHECK-NEXT:     for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; ++lathe_f) {
CHECK-NEXT:       #pragma omp simd
CHECK-NEXT:       for (int32_t x2 = 0; x2 < 16; ++x2) {
CHECK:            if (++x1 == 4) { x1 = 0; ++x0; }
CHECK-NEXT:     }
CHECK-NEXT:   }, p0, p1, S, F, rt, E);
CHECK-NOT:  omp parallel
)"));
}

// A program calling oneDNN's convolution runs its loops on the pool too:
// the routine runs its pieces there, single-threaded in oneDNN
// (runtime/onednn.h), so no OpenMP team is left to spin beside the pool.
TEST(CppEmitterTest, LoopsBesideAConvolutionRunOnThePool) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    return (relu,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      rt->sconv(
CHECK:      lathe_parallel(rt,
CHECK-NOT:  omp parallel
)"));
}

// A symbolic size may exceed 2^31 (no bound says otherwise): int64.
TEST(CppEmitterTest, SymbolicSizesIndexInInt64) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[s0, 8]"):
    exp = torch.ops.aten.exp.default(x)
    return (exp,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:     static void lathe_k0(
CHECK:       for (int64_t x0 = static_cast<int64_t>(lathe_lo); x0 < static_cast<int64_t>(lathe_hi); ++x0) {
CHECK-NOT: int32_t x
)"));
}

// A head split whose batch and heads _unsafe_view merged into one loop
// variable (the transformer block's q, k and v): its load divides that
// variable, nonnegative, by the heads with C++'s / and %, which GCC
// vectorizes (lathe_floordiv's and lathe_pymod's sign tests kept the bf16
// block's loop scalar).
TEST(CppEmitterTest, ALoopVariableDividesAsCpp) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[8, 128, 512]", b: "f32[512]"):
    add = torch.ops.aten.add.Tensor(x, b)
    view = torch.ops.aten.view.default(add, [8, 128, 8, 64])
    transpose = torch.ops.aten.transpose.int(view, 1, 2)
    expand = torch.ops.aten.expand.default(transpose, [8, 8, 128, 64])
    clone = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format)
    _unsafe_view = torch.ops.aten._unsafe_view.default(clone, [64, 128, 64])
    return (_unsafe_view,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:     static void lathe_k0(
CHECK:       p0[((512 * x1) + x2 + (65536 * (x0 / 8)) + (64 * (x0 % 8)))]
CHECK:       p1[(x2 + (64 * (x0 % 8)))]
CHECK-NOT: lathe_floordiv(x
)"));
}

// An index computed from a loaded value (gather's) is int64 arithmetic,
// so its kernel cannot be bounded: int64.
TEST(CppEmitterTest, AnIndirectIndexKeepsInt64) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 6]", i: "i64[4, 2]"):
    gather = torch.ops.aten.gather.default(x, 1, i)
    return (gather,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:     static void lathe_k0(
CHECK:       for (int64_t x0 = static_cast<int64_t>(lathe_lo); x0 < static_cast<int64_t>(lathe_hi); ++x0) {
)"));
}

// An index check that fails reports the index as the op gave it (before
// index.Tensor wraps it) and the dim's size, through the ABI's helper that
// lets the first failing thread set the kernel's code (check 0 + 1), and
// goes on with index 0.
TEST(CppEmitterTest, AFailingIndexCheckReportsTheIndexAndTheSize) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[s0]", i: "i64[2]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    return (index,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      int64_t [[V:v[0-9]+]] = static_cast<int64_t>([[I:v[0-9]+]]);
CHECK-NEXT: {
CHECK-NEXT:   const int64_t bound = (int64_t)(S[0]);
CHECK-NEXT:   if ([[V]] < 0) [[V]] += bound;
CHECK-NEXT:   if (__builtin_expect([[V]] < 0 || [[V]] >= bound, 0)) { const int64_t cv[] = {static_cast<int64_t>([[I]]), bound}; lathe_kernel_check_failed(E, rt, 1, cv, 2); [[V]] = 0; }
CHECK-NEXT: }
)"));
}

// A library call with a geometry array passes the inputs, then the
// outputs: sort(x) writes values (buf1) and indices (buf2) from in0.
TEST(CppEmitterTest, AGeometryCallPassesInputsThenOutputs) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[4, 6]"):
    sort = torch.ops.aten.sort.default(x)
    getitem = sort[0]
    getitem_1 = sort[1]
    return (getitem, getitem_1)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      static void lathe_k0(
CHECK:        const int64_t g[] = {2, 2, 1, 0, (-1), 1, 0, 4, 6, 0, 6, 1, 0, 6, 1, 0, 6, 1};
CHECK-NEXT:   rt->sort(g, p0, p1, p2);
CHECK:      static void k0(
CHECK-NEXT:   lathe_k0(static_cast<float*>(B[0]), static_cast<float*>(B[1]), static_cast<int64_t*>(B[2]), S, F, rt, E);
)"));
}

// Kernels that do the same work on other buffers share one function, its
// buffers parameters named in the order of their first use: the three
// products are lathe_k0 and the two relus lathe_k1, and each k<N> passes
// its own buffers (a relu's result is the next product's input).
TEST(CppEmitterTest, KernelsDoingTheSameWorkShareOneFunction) {
  ASSERT_OK_AND_ASSIGN(std::string source, Emit(R"IR(
def forward(self, x: "f32[64, 64]", w: "f32[64, 64]"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm)
    mm_1 = torch.ops.aten.mm.default(relu, w)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    mm_2 = torch.ops.aten.mm.default(relu_1, w)
    return (mm_2,)
)IR"));
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      __attribute__((noinline)) static void lathe_k0(float* p0, float* p1, float* p2, const int64_t* S,
CHECK-NEXT:   (void)S;
CHECK-NEXT:   rt->sgemm(1, 64, 64, 64, p0 + 0, 0, 64, 1, p1 + 0, 0, 64, 1, p2 + 0, 0, 64, 1);
CHECK:      __attribute__((noinline)) static void lathe_k1(float* p0, float* p1, const int64_t* S,
CHECK:          const float v0 = p0[((64 * x0) + x1)];
CHECK:          p1[((64 * x0) + x1)] = v1;
CHECK-NOT:  static void lathe_k
CHECK:      static void k0(
CHECK-NEXT:   lathe_k0(static_cast<float*>(B[0]), static_cast<float*>(B[1]), static_cast<float*>(B[[[MM:[0-9]+]]]), S, F, rt, E);
CHECK:      static void k1(
CHECK-NEXT:   lathe_k1(static_cast<float*>(B[[[MM]]]), static_cast<float*>(B[[[R:[0-9]+]]]), S, F, rt, E);
CHECK:      static void k2(
CHECK-NEXT:   lathe_k0(static_cast<float*>(B[[[R]]]), static_cast<float*>(B[1]), static_cast<float*>(B[[[MM1:[0-9]+]]]), S, F, rt, E);
CHECK:      static void k3(
CHECK-NEXT:   lathe_k1(static_cast<float*>(B[[[MM1]]]), static_cast<float*>(B[[[R1:[0-9]+]]]), S, F, rt, E);
CHECK:      static void k4(
CHECK-NEXT:   lathe_k0(static_cast<float*>(B[[[R1]]]), static_cast<float*>(B[1]),
)"));
}

// The autotuner's build: each tunable kernel (a parallel loop, an sgemm)
// takes its threads from the exported table (0: the whole team) and adds
// its time to lathe_tune_ns; a scan, which runs on one thread, is not
// tunable and not timed.
constexpr char kTunedGraph[] = R"IR(
def forward(self, x: "f32[64, 64]", w: "f32[64, 64]", y: "f32[4096]"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm)
    cumsum = torch.ops.aten.cumsum.default(y, 0)
    return (relu, cumsum)
)IR";

TEST(CppEmitterTest, TheTuningTableSetsEachKernelsThreadsAndTimesIt) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(kTunedGraph));
  TunableKernels tunable;
  const std::string source =
      EmitCpp(s.lowered.program, {.tuning_table = true, .tunable = &tunable});
  EXPECT_EQ(tunable.threads, (std::vector<int>{0, 2}));
  EXPECT_TRUE(tunable.split_batch.empty());
  EXPECT_EQ(s.lowered.program.kernels.size(), 3);
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      LATHE_TUNE_EXPORT int32_t lathe_tune_threads[[[N:[0-9]+]]] = {};
CHECK-NEXT: LATHE_TUNE_EXPORT int64_t lathe_tune_ns[[[N]]] = {};
CHECK-NEXT: LATHE_TUNE_EXPORT const int64_t lathe_tune_kernels = [[N]];
CHECK:      static void lathe_k0({{.*}}int* E, int nt) {
CHECK:        const int lathe_team = omp_get_max_threads();
CHECK-NEXT:   omp_set_num_threads(nt);
CHECK-NEXT:   rt->sgemm(
CHECK-NEXT:   omp_set_num_threads(lathe_team);
CHECK:      static void lathe_k1({{.*}}int* E) {
CHECK-NOT:  num_threads
CHECK:      static void lathe_k2({{.*}}int* E, int nt) {
CHECK:      lathe_parallel(rt, {{.*}}, nt, [](int64_t lathe_lo, int64_t lathe_hi, {{.*}}) {
CHECK:      static void k0(
CHECK-NEXT:   const int64_t t0 = lathe_tune_now();
CHECK-NEXT:   lathe_k0({{.*}}, S, F, rt, E, lathe_tune_threads[0] != 0 ? lathe_tune_threads[0] : omp_get_max_threads());
CHECK-NEXT:   lathe_tune_ns[0] += lathe_tune_now() - t0;
CHECK:      static void k1(
CHECK-NEXT:   lathe_k1({{.*}}, S, F, rt, E);
CHECK-NEXT: }
CHECK:      static void k2(
CHECK-NEXT:   const int64_t t0 = lathe_tune_now();
CHECK:        lathe_tune_ns[2] +=
)"));
}

// The tuner's choice, Kernel::threads, fixed in the source: the sgemm runs
// with the caller's thread count set to it and restored, the loop on that
// many threads; without a choice nothing of the tuning is written.
TEST(CppEmitterTest, ChosenThreadsAreFixedInTheSource) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(kTunedGraph));
  const std::string plain = EmitCpp(s.lowered.program);
  EXPECT_FALSE(absl::StrContains(plain, "num_threads")) << plain;
  EXPECT_FALSE(absl::StrContains(plain, "lathe_tune")) << plain;
  s.lowered.program.kernels[0].threads = 1;
  s.lowered.program.kernels[2].threads = 3;
  EXPECT_OK(RunFileCheck(EmitCpp(s.lowered.program), R"(
CHECK-NOT:  lathe_tune_threads
CHECK:      static void lathe_k0({{.*}}int* E) {
CHECK:        omp_set_num_threads(lathe_threads(1));
CHECK-NEXT:   rt->sgemm(
CHECK-NEXT:   omp_set_num_threads(lathe_team);
CHECK:      lathe_parallel(rt, {{.*}}, lathe_threads(3), [](int64_t lathe_lo, int64_t lathe_hi, {{.*}}) {
CHECK:      static void k0(
CHECK-NEXT:   lathe_k0(
CHECK-NEXT: }
)"));
  EXPECT_TRUE(absl::StrContains(PrintProgram(s.lowered.program), "threads=3\n"))
      << PrintProgram(s.lowered.program);
}

// A batched product: the tuning build splits its batch when the table
// says -1 (a parallel loop over the matrices, each product one sgemm of
// batch 1 at its matrix's offsets), else sets the thread count around the
// call; Kernel::split_batch fixes the split.
TEST(CppEmitterTest, ABatchedProductsBatchIsSplitOverTheThreads) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, q: "f32[16, 32, 8]", k: "f32[16, 8, 32]"):
    bmm = torch.ops.aten.bmm.default(q, k)
    return (bmm,)
)IR"));
  TunableKernels tunable;
  EXPECT_OK(RunFileCheck(
      EmitCpp(s.lowered.program, {.tuning_table = true, .tunable = &tunable}),
      R"(
CHECK:      if (nt < 0) {
CHECK-NEXT:   lathe_parallel(rt, 16, 1, true, 0, [](int64_t lathe_lo, int64_t lathe_hi, float* p0, float* p1, float* p2, {{.*}}, int nt) {
CHECK-NEXT:     for (int64_t lathe_b = lathe_lo; lathe_b < lathe_hi; ++lathe_b) rt->sgemm(1, 32, 32, 8, p0 + 0 + lathe_b * (256), 256, 8, 1, p1 + 0 + lathe_b * (256), 256, 32, 1, p2 + 0 + lathe_b * (1024), 1024, 32, 1);
CHECK-NEXT:   }, p0, p1, p2, S, F, rt, E, nt);
CHECK-NEXT: } else {
CHECK-NEXT:   const int lathe_team = omp_get_max_threads();
CHECK-NEXT:   omp_set_num_threads(nt);
CHECK-NEXT:   rt->sgemm(16, 32, 32, 8,
)"));
  EXPECT_EQ(tunable.threads, (std::vector<int>{0}));
  EXPECT_EQ(tunable.split_batch, (std::vector<int>{0}));
  s.lowered.program.kernels[0].split_batch = true;
  s.lowered.program.kernels[0].threads = 2;
  EXPECT_OK(RunFileCheck(EmitCpp(s.lowered.program), R"(
CHECK-NOT:  lathe_team
CHECK:      lathe_parallel(rt, 16, 1, true, lathe_threads(2), [](int64_t lathe_lo,
CHECK-NEXT: for (int64_t lathe_b = lathe_lo; lathe_b < lathe_hi; ++lathe_b) rt->sgemm(1,
CHECK-NOT:  omp parallel
)"));
  EXPECT_THAT(PrintProgram(s.lowered.program),
              ::testing::HasSubstr("threads=2 split_batch\n"));
}

// A convolution with an epilogue (the kernel after it, fused by the
// scheduler): the epilogue's loops over one image are a function of their
// own; k0_image calls it with each buffer moved to the image sconv hands
// it (the bias by 0, the result and the pooled values by their image
// strides), reading k0's buffers and arguments from the LatheEpilogueArgs
// k0 passes sconv with it. A convolution without one (k2: nothing after
// it) passes none.
TEST(CppEmitterTest, AConvolutionPassesItsEpilogueToSconv) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 3, 8, 8]", w: "f32[16, 3, 3, 3]", b: "f32[16]", v: "f32[8, 16, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [2, 2])
    getitem = max_pool2d_with_indices[0]
    convolution_1 = torch.ops.aten.convolution.default(getitem, v, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_1,)
)IR",
                                                 {.sconv_epilogue = true}));
  const std::string source = EmitCpp(s.lowered.program);
  EXPECT_OK(RunFileCheck(source, R"(
CHECK:      static void lathe_k0_loops(float* p0, float* p1, float* p2, const int64_t* S, const double* F, const LatheKernelRuntime* rt, int* E) {
CHECK:        const float v{{[0-9]+}} = p0[(
CHECK:      struct LatheEpilogueArgs {
CHECK:      static void k0_image(void* ctx, int64_t image) {
CHECK-NEXT:   const LatheEpilogueArgs& a = *static_cast<const LatheEpilogueArgs*>(ctx);
CHECK-NEXT:   lathe_k0_loops(static_cast<float*>(a.B[[[C:[0-9]+]]]) + image * (1024), static_cast<float*>(a.B[2]) + image * (0), static_cast<float*>(a.B[[[P:[0-9]+]]]) + image * (256), a.S, a.F, a.rt, a.E);
CHECK:      static void lathe_k0({{.*}}, int* E, void (*epi)(void*, int64_t), void* epi_ctx) {
CHECK:        rt->sconv(g, p0, p1, p2, epi, epi_ctx);
CHECK:      rt->sconv(g, p0, p1, p2, nullptr, nullptr);
CHECK:      static void k0(
CHECK-NEXT:   LatheEpilogueArgs lathe_epilogue = {B, S, F, rt, E};
CHECK-NEXT:   lathe_k0(static_cast<float*>(B[0]), static_cast<float*>(B[1]), static_cast<float*>(B[[[C]]]), S, F, rt, E, k0_image, &lathe_epilogue);
CHECK:      static void k2(
CHECK-NOT:    lathe_epilogue
CHECK:      }
)"));
}

// A 3x3 convolution of stride 1 is tunable for Winograd's algorithm: the
// tuning build ORs runtime/convolution.h's flag (2) into its geometry when
// the table says -2, and times it; Kernel::winograd fixes the flag. A
// strided, dilated or 5x5 convolution, a 1-d one, is not tunable.
TEST(CppEmitterTest, AConvolutionsAlgorithmIsTunable) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[2, 16, 12, 12]", w: "f32[32, 16, 3, 3]", v: "f32[32, 16, 3, 3]", u: "f32[32, 16, 5, 5]", y: "f32[2, 16, 40]", z: "f32[32, 16, 3]"):
    a = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    b = torch.ops.aten.convolution.default(x, v, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    c = torch.ops.aten.convolution.default(x, w, None, [1, 1], [2, 2], [2, 2], False, [0, 0], 1)
    d = torch.ops.aten.convolution.default(x, u, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1)
    e = torch.ops.aten.convolution.default(y, z, None, [1], [1], [1], False, [0], 1)
    return (a, b, c, d, e)
)IR"));
  TunableKernels tunable;
  const std::string tuning =
      EmitCpp(s.lowered.program, {.tuning_table = true, .tunable = &tunable});
  ASSERT_EQ(s.lowered.program.kernels.size(), 5);
  EXPECT_EQ(tunable.winograd, (std::vector<int>{0}));
  EXPECT_TRUE(tunable.threads.empty());
  EXPECT_OK(RunFileCheck(tuning, R"(
CHECK:      static void lathe_k0({{.*}}int* E, int nt) {
CHECK-NEXT:   (void)S;
CHECK-NEXT:   const int64_t g[] = {2, 1, 2, 16, 32, 12, 12, 3, 3, 12, 12, 1, 1, 1, 1, 1, 1, {{.*}}, (0 | (nt == -2 ? 2 : 0))};
CHECK-NEXT:   rt->sconv(g,
CHECK:      static void lathe_k1({{.*}}int* E) {
CHECK-NOT:  nt ==
CHECK:      static void k0(
CHECK-NEXT:   const int64_t t0 = lathe_tune_now();
CHECK-NEXT:   lathe_k0({{.*}}, S, F, rt, E, lathe_tune_threads[0] != 0 ? lathe_tune_threads[0] : omp_get_max_threads());
CHECK-NEXT:   lathe_tune_ns[0] += lathe_tune_now() - t0;
CHECK:      static void k1(
CHECK-NEXT:   lathe_k1({{.*}}, S, F, rt, E);
)"));
  const std::string plain = EmitCpp(s.lowered.program);
  EXPECT_FALSE(absl::StrContains(plain, "| 2)")) << plain;
  s.lowered.program.kernels[0].winograd = true;
  EXPECT_OK(RunFileCheck(EmitCpp(s.lowered.program), R"(
CHECK-NOT:  lathe_tune
CHECK:      const int64_t g[] = {2, 1, 2, 16, 32, {{.*}}, (0 | 2)};
CHECK-NEXT: rt->sconv(g,
CHECK-NOT:  | 2)
)"));
  EXPECT_THAT(PrintProgram(s.lowered.program),
              ::testing::HasSubstr(" winograd\n"));
}

}  // namespace
}  // namespace lathe::codegen
