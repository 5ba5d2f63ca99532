// The scheduler's tests: graph text in, lowered, scheduled; FileCheck CHECK
// lines on the fused program and on the fusion log (PrintScheduled: one
// "log: ..." line per decision after the program), plus the kernel counts
// before and after. Lowering's own decisions are lowering_test.cc's.

#include "codegen/scheduler.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// ---- Pointwise fusion -------------------------------------------------------

// exp has two readers, so lowering realizes it (k0) and its readers are a
// second kernel (k1) over the same range loading it at the element k0
// stores. Fused: the load becomes exp's value, buf1 has no reader left, so
// it is local and no longer stored; one kernel remains.
TEST(SchedulerTest, PointwiseIntoPointwise) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    add = torch.ops.aten.add.Tensor(exp, 1.0)
    mul = torch.ops.aten.mul.Tensor(exp, 2.0)
    sub = torch.ops.aten.sub.Tensor(add, mul)
    return (sub,)
)IR"));
  EXPECT_EQ(s.kernels_before, 2);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      buffer buf1 : f32[32] local
CHECK-NEXT: buffer buf2 : f32[32]{{$}}
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[8*x0 + x1] : f32
CHECK-NEXT:     %[[E:[0-9]+]] = exp(%[[X]]) : f32
CHECK-NOT:      {{load|store}}
CHECK:          %[[A:[0-9]+]] = add(%[[E]], %{{[0-9]+}}) : f32
CHECK:          %[[M:[0-9]+]] = mul(%[[E]], %{{[0-9]+}}) : f32
CHECK-NEXT:     %[[S:[0-9]+]] = sub(%[[A]], %[[M]]) : f32
CHECK-NEXT:     store buf2[8*x0 + x1] = %[[S]]
CHECK-NEXT: log: fuse k1 into k0: pointwise over the same ranges
CHECK-NEXT: log: buf1: kept in registers (every read was fused)
CHECK-NOT:  log:
)"));
}

// An in-place chain (what reinplace leaves: ops writing back into the
// buffer they read) fuses into one kernel: each load takes the value the
// last store at its element gave, and only the final store remains. (x is
// loaded twice, once per op that reads it: left for a later CSE.)
TEST(SchedulerTest, AnInPlaceChainFusesWithOneStore) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    sigmoid = torch.ops.aten.sigmoid.default(x)
    mul_ = torch.ops.aten.mul_.Tensor(sigmoid, x)
    add_ = torch.ops.aten.add_.Tensor(sigmoid, 1.0)
    return (sigmoid,)
)IR"));
  EXPECT_EQ(s.kernels_before, 3);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4, 8]
CHECK:        %[[X:[0-9]+]] = load in0[8*x0 + x1] : f32
CHECK-NEXT:   %[[S:[0-9]+]] = sigmoid(%[[X]]) : f32
CHECK-NOT:    {{store|load buf1}}
CHECK:        %[[M:[0-9]+]] = mul(%[[S]], %{{[0-9]+}}) : f32
CHECK-NOT:    {{store|load buf1}}
CHECK:        %[[A:[0-9]+]] = add(%[[M]], %{{[0-9]+}}) : f32
CHECK-NEXT:   store buf1[8*x0 + x1] = %[[A]]
CHECK-NOT:    store
CHECK:      log: fuse k1 into k0: pointwise over the same ranges
CHECK-NEXT: log: fuse k2 into k0: pointwise over the same ranges
)"));
}

// What reinplace leaves of gelu in bf16 (computed in f32, rounded once):
// in-place ops on f32 intermediates, each a kernel as lowered (the
// converted input has two readers, so it is in memory). They fuse into one
// kernel from the bf16 load to the bf16 store, the f32 values in
// registers.
TEST(SchedulerTest, AnInPlaceGeluInBf16FusesIntoOneKernel) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "bf16[4, 8]"):
    convert_element_type = torch.ops.prims.convert_element_type.default(x, torch.float32)
    mul = torch.ops.aten.mul.Tensor(convert_element_type, 0.5)
    mul_1 = torch.ops.aten.mul_.Tensor(convert_element_type, 0.7071067811865476)
    erf = torch.ops.aten.erf_.default(mul_1)
    add = torch.ops.aten.add_.Tensor(erf, 1)
    mul_2 = torch.ops.aten.mul_.Tensor(mul, add)
    convert_element_type_1 = torch.ops.prims.convert_element_type.default(mul_2, torch.bfloat16)
    return (convert_element_type_1,)
)IR"));
  EXPECT_EQ(s.kernels_before, 7);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      buffer in0 : bf16[32] input 0
CHECK-NEXT: buffer buf1 : f32[32] local
CHECK-NEXT: buffer buf2 : f32[32] local
CHECK-NEXT: buffer buf3 : bf16[32]{{$}}
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %0 = load in0[8*x0 + x1] : bf16
CHECK-NOT:      {{load|store}}
CHECK:          erf(
CHECK-NOT:      {{load|store}}
CHECK:          %[[R:[0-9]+]] = cast(%{{[0-9]+}}) : bf16
CHECK-NEXT:     store buf3[8*x0 + x1] = %[[R]]
CHECK-NOT:      store
)"));
}

// Two independent kernels over the same range fuse horizontally: one loop,
// both stores (both buffers are outputs, so neither becomes local).
TEST(SchedulerTest, IndependentPointwiseOverTheSameRangesFuse) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    exp = torch.ops.aten.exp.default(y)
    return (neg, exp)
)IR"));
  EXPECT_EQ(s.kernels_before, 2);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK-NOT:  local
CHECK:      kernel k0 ranges=[4, 8]
CHECK:        store buf2[8*x0 + x1] =
CHECK:        load in1[8*x0 + x1]
CHECK:        store buf3[8*x0 + x1] =
CHECK-NEXT: log: fuse k1 into k0: pointwise over the same ranges
CHECK-NOT:  log:
)"));
}

// A value with two readers that are both outputs: the readers fuse with
// its kernel, the value is local, the outputs stay stored.
TEST(SchedulerTest, OutputsStayStoredWhenTheirProducerFuses) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    add = torch.ops.aten.add.Tensor(exp, 1.0)
    mul = torch.ops.aten.mul.Tensor(exp, 2.0)
    return (add, mul)
)IR",
                                 R"(
CHECK:      buffer buf1 : f32[32] local
CHECK-NEXT: buffer buf2 : f32[32]{{$}}
CHECK-NEXT: buffer buf3 : f32[32]{{$}}
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK-NOT:    store buf1
CHECK:        store buf2[8*x0 + x1] =
CHECK-NOT:    store buf1
CHECK:        store buf3[8*x0 + x1] =
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0: pointwise over the same ranges
CHECK-NEXT: log: fuse k2 into k0: pointwise over the same ranges
CHECK-NEXT: log: buf1: kept in registers (every read was fused)
)"));
}

// ---- Kernels kept apart -----------------------------------------------------

// Kernels over different ranges ([4, 8] and [8]) are not fused; the log
// says why.
TEST(SchedulerTest, DifferentRangesAreNotFused) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[8]"):
    neg = torch.ops.aten.neg.default(x)
    exp = torch.ops.aten.exp.default(y)
    return (neg, exp)
)IR"));
  EXPECT_EQ(s.lowered.program.kernels.size(), 2u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4, 8]
CHECK:      kernel k1 ranges=[8]
CHECK:      log: keep k1 apart from k0: different ranges or an access at another element
CHECK-NOT:  log:
)"));
}

// A reader of the transposed value loads it at another element than the
// one the producer's iteration stores: not fused, and the buffer stays
// allocated and stored.
TEST(SchedulerTest, AReadAtAnotherElementIsNotFused) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[8, 8]"):
    exp = torch.ops.aten.exp.default(x)
    t = torch.ops.aten.t.default(exp)
    add = torch.ops.aten.add.Tensor(exp, t)
    return (add,)
)IR",
                                 R"(
CHECK:      buffer buf1 : f32[64] freed after k1{{$}}
CHECK:      kernel k0 ranges=[8, 8]
CHECK:        store buf1[8*x0 + x1] =
CHECK:      kernel k1 ranges=[8, 8]
CHECK:        load buf1[8*x0 + x1]
CHECK:        load buf1[x0 + 8*x1]
CHECK:      log: keep k1 apart from k0: different ranges or an access at another element
)"));
}

// A kernel that overwrites an input (add_) at another element than the one
// an earlier kernel reads (the transpose) must stay after it, unfused.
TEST(SchedulerTest, AWriteAtAnotherElementIsNotFused) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[8, 8]"):
    t = torch.ops.aten.t.default(x)
    neg = torch.ops.aten.neg.default(t)
    add_ = torch.ops.aten.add_.Tensor(x, 1.0)
    return (neg,)
)IR",
                                 R"(
CHECK:      kernel k0 ranges=[8, 8]
CHECK:        load in0[x0 + 8*x1]
CHECK:      kernel k1 ranges=[8, 8]
CHECK:        store in0[8*x0 + x1] =
CHECK:      log: keep k1 apart from k0
)"));
}

// An extern kernel (sgemm) is never fused with the kernel reading its
// output. (The log gives the generic reason; an extern one would be
// clearer.)
TEST(SchedulerTest, AnExternKernelIsNotFused) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, a: "f32[4, 16]", b: "f32[16, 8]"):
    mm = torch.ops.aten.mm.default(a, b)
    relu = torch.ops.aten.relu.default(mm)
    return (relu,)
)IR",
                                 R"(
CHECK:      buffer buf2 : f32[32] freed after k1{{$}}
CHECK:      kernel k0 extern sgemm(buf2, in0, in1;
CHECK-NEXT: kernel k1 ranges=[4, 8]
CHECK:        load buf2[8*x0 + x1]
CHECK:      log: keep k1 apart from k0:
)"));
}

// ---- Reductions
// ---------------------------------------------------------------

// sum then * 2: the pointwise kernel over the reduction's outer range is
// its epilogue, using the reduced value directly; buf1 becomes local.
TEST(SchedulerTest, AReductionEpilogueIsFused) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    mul = torch.ops.aten.mul.Tensor(sum_1, 2.0)
    return (mul,)
)IR"));
  EXPECT_EQ(s.kernels_before, 2);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      buffer buf1 : f32[4] local
CHECK-NEXT: buffer buf2 : f32[4]{{$}}
CHECK-NEXT: kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r0_0 + 8*x0] : f32
CHECK-NEXT:     %[[R:[0-9]+]] = reduce sum(%[[X]]) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     %[[TWO:[0-9]+]] = constant 2.0 : f32
CHECK-NEXT:     %[[M:[0-9]+]] = mul(%[[R]], %[[TWO]]) : f32
CHECK-NEXT:     store buf2[x0] = %[[M]]
CHECK-NEXT: log: fuse k1 into k0: epilogue over the reduction's outer ranges
CHECK-NEXT: log: buf1: kept in registers (every read was fused)
)"));
}

// Symbolic ranges fuse when they are the same expression: the row sums of
// an [s0, 8] input and their relu are one kernel over [s0].
TEST(SchedulerTest, SymbolicRangesFuse) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[s0, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    relu = torch.ops.aten.relu.default(sum_1)
    return (relu,)
)IR",
                                 R"(
CHECK:      buffer buf1 : f32[s0] local
CHECK:      kernel k0 ranges=[s0]
CHECK:          %[[R:[0-9]+]] = reduce sum(
CHECK:          %[[Y:[0-9]+]] = relu(%[[R]]) : f32
CHECK-NEXT:     store buf2[x0] = %[[Y]]
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0: epilogue over the reduction's outer ranges
)"));
}

// x - mean(x) summed per row: the second reduction reads the first one's
// value (stored in a straight section) at the same row, so it becomes a new
// loop nest of the same kernel using the mean directly.
TEST(SchedulerTest, AReductionAfterAReductionOverTheSameRows) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    mean = torch.ops.aten.mean.dim(x, [1], True)
    sub = torch.ops.aten.sub.Tensor(x, mean)
    sum_1 = torch.ops.aten.sum.dim_IntList(sub, [1])
    return (sum_1,)
)IR",
                                 R"(
CHECK:      buffer buf1 : f32[4] local
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK:          reduce sum(
CHECK:        section 1 pointwise
CHECK:          %[[MEAN:[0-9]+]] = truediv(
CHECK-NEXT:   section 2 reduction r2_0 in 8
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r2_0 + 8*x0] : f32
CHECK-NEXT:     %[[D:[0-9]+]] = sub(%[[X]], %[[MEAN]]) : f32
CHECK-NEXT:     %[[R:[0-9]+]] = reduce sum(%[[D]]) : f32
CHECK-NEXT:   section 3 pointwise
CHECK-NEXT:     store buf2[x0] = %[[R]]
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0: reduction over the same outer ranges
)"));
}

// Softmax is one kernel: max per row, exp(x - max) stored by a loop nest
// (it has two readers), the sum of exp reading that row back from memory
// in a later loop nest of the same row iteration, then the quotient.
TEST(SchedulerTest, SoftmaxIsOneKernel) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    amax = torch.ops.aten.amax.default(x, [1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    exp = torch.ops.aten.exp.default(sub)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    return (div,)
)IR"));
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK:        reduce max(
CHECK:        exp(
CHECK:        reduce sum(
CHECK:        truediv(
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0
CHECK:      log: fuse k2 into k0
CHECK:      log: fuse k3 into k0
)"));
}

// Softmax after reinplace (exp_ and div_ write back into sub's buffer) is
// one kernel too. exp_ joins the loop of the subtraction it follows (the
// value it reads is the one just computed, and only the last store stays);
// the sum is a section of its own, and div_ a loop after it that reads and
// writes the row element the earlier section wrote.
TEST(SchedulerTest, InPlaceSoftmaxIsOneKernel) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    amax = torch.ops.aten.amax.default(x, [1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    exp_ = torch.ops.aten.exp_.default(sub)
    sum_1 = torch.ops.aten.sum.dim_IntList(sub, [1], True)
    div_ = torch.ops.aten.div_.Tensor(sub, sum_1)
    return (sub,)
)IR"));
  EXPECT_EQ(s.kernels_before, 5);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK:        reduce max(
CHECK:        section 2 pointwise r2_0 in 8
CHECK-NEXT:     load in0[r2_0 + 8*x0]
CHECK-NEXT:     sub(
CHECK-NEXT:     exp(
CHECK-NEXT:     store buf2[r2_0 + 8*x0]
CHECK-NEXT:   section 3 reduction r3_0 in 8
CHECK-NEXT:     load buf2[r3_0 + 8*x0]
CHECK-NEXT:     reduce sum(
CHECK:        section 5 pointwise r5_0 in 8
CHECK:          truediv(
CHECK-NEXT:     store buf2[r5_0 + 8*x0]
CHECK-NOT:  kernel
CHECK:      log: fuse k2 into k0: pointwise into the reduction epilogue's loop over the same ranges
CHECK:      log: fuse k4 into k0
)"));
}

// A pointwise op joins the epilogue's loop only when it reads what that loop
// stored at the same element: a flip of the row reads other elements, which
// the loop has not all written yet, so it stays a kernel of its own.
TEST(SchedulerTest, AnOpReadingOtherElementsDoesNotJoinTheEpilogueLoop) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    amax = torch.ops.aten.amax.default(x, [1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    flip = torch.ops.aten.flip.default(sub, [1])
    mul = torch.ops.aten.mul.Tensor(flip, 2)
    return (sub, mul)
)IR"));
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK:        section 2 pointwise r2_0 in 8
CHECK:          store buf2[r2_0 + 8*x0]
CHECK:      kernel k2 ranges=[4, 8]
CHECK:          load buf2[8*x0 - x1 + 7]
CHECK:      log: keep k2 apart from k0
)"));
}

// x.sum() beside x.var_mean() (the bench's reduction row, per row here):
// the second reduction reads nothing the first writes, so it joins the
// first's loop as a sibling (one pass over x for both); its epilogue
// follows the first's.
TEST(SchedulerTest, SiblingReductionsShareOneLoop) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = var_mean[0]
    getitem_1 = var_mean[1];  var_mean = None
    return (sum_1, getitem, getitem_1)
)IR",
                                 R"(
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK:          reduce sum(
CHECK:          reduce welford_mean(
CHECK:        section 1 pointwise
CHECK:          store buf{{[0-9]+}}[x0]
CHECK-NEXT:   section 2 pointwise
CHECK-NOT:    section 3
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0: reduction beside the reduction over the same ranges
)"));
}

// Reductions of the same rows that stay in loops of their own: two
// Welford reductions (the emitter's blocked pass takes one), and an argmax
// beside a sum (the argmax's loop runs in order, on one thread, which would
// take the sum's vectorized, pooled loop with it).
TEST(SchedulerTest, SiblingsNeedOneWelfordAndArgmaxOnBothOrNeither) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[4, 8]"):
    vm_x = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    var_x = vm_x[0]
    vm_y = torch.ops.aten.var_mean.correction(y, [1], correction = 1)
    var_y = vm_y[0]
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    argmax = torch.ops.aten.argmax.default(x, 1)
    return (var_x, var_y, sum_1, argmax)
)IR",
                                 R"(
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK:          reduce welford_mean(
CHECK:          reduce sum(
CHECK-NOT:      reduce welford_mean(
CHECK-NOT:      reduce argmax(
CHECK:        section {{[0-9]+}} reduction r{{[0-9]+}}_0 in 8
CHECK:          reduce welford_mean(
CHECK:      log: fuse k1 into k0: reduction over the same outer ranges
CHECK:      log: fuse k2 into k0: reduction beside the reduction over the same ranges
CHECK:      log: fuse k3 into k0: reduction over the same outer ranges
)"));
}

// A kernel holds at most 8 sections: four row reductions, each reading
// the one before's result (so not siblings: two sections each), fill k0;
// the fifth stays a kernel of its own. (The log gives the generic reason,
// not the limit.)
TEST(SchedulerTest, AtMostEightSections) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1], True)
    add_1 = torch.ops.aten.add.Tensor(x, sum_1)
    amax = torch.ops.aten.amax.default(add_1, [1], True)
    add_2 = torch.ops.aten.add.Tensor(x, amax)
    amin = torch.ops.aten.amin.default(add_2, [1], True)
    add_3 = torch.ops.aten.add.Tensor(x, amin)
    prod = torch.ops.aten.prod.dim_int(add_3, 1, True)
    add_4 = torch.ops.aten.add.Tensor(x, prod)
    mean = torch.ops.aten.mean.dim(add_4, [1])
    return (sum_1, amax, amin, prod, mean)
)IR"));
  EXPECT_EQ(s.kernels_before, 5);
  EXPECT_EQ(s.lowered.program.kernels.size(), 2u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK:        section 6 reduction r6_0 in 8
CHECK:          reduce prod(
CHECK:        section 7 pointwise
CHECK-NOT:    section 8
CHECK:      kernel k4 ranges=[4]
CHECK:      log: fuse k1 into k0: reduction over the same outer ranges
CHECK-NEXT: log: fuse k2 into k0: reduction over the same outer ranges
CHECK-NEXT: log: fuse k3 into k0: reduction over the same outer ranges
CHECK-NEXT: log: keep k4 apart from k0:
)"));
}

// Five reductions of the same rows that read only x are siblings: one loop
// for all five, then their epilogues (six sections).
TEST(SchedulerTest, FiveSiblingReductionsShareOneLoop) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    amax = torch.ops.aten.amax.default(x, [1])
    amin = torch.ops.aten.amin.default(x, [1])
    prod = torch.ops.aten.prod.dim_int(x, 1)
    mean = torch.ops.aten.mean.dim(x, [1])
    return (sum_1, amax, amin, prod, mean)
)IR"));
  EXPECT_EQ(s.kernels_before, 5);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK-COUNT-5:  reduce
CHECK:        section 5 pointwise
CHECK-NOT:    section 6
CHECK:      log: fuse k1 into k0: reduction beside the reduction over the same ranges
)"));
}

// gather reads exp's buffer at loaded indices: any element, so the gather
// kernel cannot run inside the loop that is still writing exp, even over
// the same ranges. Two kernels stay.
TEST(SchedulerTest, AnIndirectLoadOfAStoredBufferIsNotFused) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 6]", i: "i64[4, 6]"):
    exp = torch.ops.aten.exp.default(x)
    gather = torch.ops.aten.gather.default(exp, 1, i)
    return (gather,)
)IR"));
  EXPECT_EQ(s.kernels_before, 2);
  EXPECT_EQ(s.lowered.program.kernels.size(), 2u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k1 ranges=[4, 6]
CHECK:        load buf2[ind0 + 6*x0]
CHECK:      log: keep k1 apart from k0
)"));
}

// An in-place op on a keepdim reduction's [4, 1] result (what reinplace
// makes of layer norm's mean) loops over [4, 1]: its extent-1 loop is
// dropped, so it is the reduction's epilogue over [4], and the subtraction
// over [4, 8] joins as a section. One kernel, as without reinplace.
TEST(SchedulerTest, AnInPlaceOpOnAKeepdimReductionFuses) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1], True)
    div_ = torch.ops.aten.div_.Tensor(sum_1, 8)
    sub = torch.ops.aten.sub.Tensor(x, div_)
    return (sub,)
)IR"));
  EXPECT_EQ(s.kernels_before, 3);
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[4]
CHECK:      log: fuse k1 into k0: epilogue over the reduction's outer ranges
CHECK-NEXT: log: fuse k2 into k0: pointwise over the reduction's outer ranges and its inner ones
)"));
}

// ---- Loop order ------------------------------------------------------------

// t * 2 for t = x.t(): the result keeps x's layout (strides [1, 128], as
// eager's TensorIterator gives it), so over x0 in 128, x1 in 64 both the
// load and the store move by 128 elements per step of x1 and by 1 per step
// of x0: x0 becomes the inner loop.
TEST(SchedulerTest, TheLoopWithContiguousAccessGoesInnermost) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[64, 128]"):
    t = torch.ops.aten.t.default(x)
    mul = torch.ops.aten.mul.Tensor(t, 2)
    return (mul,)
)IR",
                                 R"(
CHECK:      kernel k0 ranges=[64, 128] order=[x1, x0]
CHECK:        load in0[x0 + 128*x1]
CHECK:        store buf1[x0 + 128*x1]
CHECK:      log: reorder k0: x0 innermost (8 bytes per iteration at stride 1, against 0)
)"));
}

// A kernel that reads a buffer it writes at another element (here: no
// such kernel is made, so a contiguous kernel) keeps its order; so does one
// whose innermost loop is already the contiguous one.
TEST(SchedulerTest, AContiguousKernelKeepsItsOrder) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[64, 128]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)IR",
                                 R"(
CHECK:      kernel k0 ranges=[64, 128]{{$}}
CHECK-NOT:  log: reorder
)"));
}

// ---- Memory plan -----------------------------------------------------------

// A chain of matrix products with a relu between each: every product and
// relu is its own kernel (a library call reads its operands from memory).
// Each buffer is dead after the kernel that reads it, so the third kernel's
// buffer takes over the first's memory, the fourth the second's, and the
// output (the last product) the third's; only the fourth's memory is given
// back, after the last kernel.
TEST(SchedulerTest, ADeadBufferOfTheSameSizeIsReused) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]", w: "f32[8, 8]"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm)
    mm_1 = torch.ops.aten.mm.default(relu, w)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    mm_2 = torch.ops.aten.mm.default(relu_1, w)
    return (mm_2,)
)IR",
                                 R"(
CHECK:      buffer [[MM:buf[0-9]+]] : f32[32]{{$}}
CHECK-NEXT: buffer [[RELU:buf[0-9]+]] : f32[32]{{$}}
CHECK-NEXT: buffer [[MM1:buf[0-9]+]] : f32[32] reuses [[MM]]{{$}}
CHECK-NEXT: buffer [[RELU1:buf[0-9]+]] : f32[32] reuses [[RELU]] freed after [[K4:k[0-9]+]]{{$}}
CHECK-NEXT: buffer [[MM2:buf[0-9]+]] : f32[32] reuses [[MM1]]{{$}}
CHECK:      kernel [[K4]] extern sgemm([[MM2]], [[RELU1]], in1;
CHECK:      log: [[MM1]]: reuses the memory of [[MM]] (128 bytes)
CHECK-NEXT: log: [[RELU1]]: reuses the memory of [[RELU]] (128 bytes)
CHECK-NEXT: log: [[MM2]]: reuses the memory of [[MM1]] (128 bytes)
)"));
}

// Buffers of different sizes (mm's [4, 8], then [4, 4] and [4, 2]) take
// over nothing; each is given back after its last reader. Symbolic sizes
// match only as the same expression.
TEST(SchedulerTest, ABufferOfAnotherSizeIsNotReused) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[s0, 8]", w: "f32[8, 8]", v: "f32[8, 4]", u: "f32[4, 2]"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm)
    mm_1 = torch.ops.aten.mm.default(relu, v)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    mm_2 = torch.ops.aten.mm.default(relu_1, u)
    return (mm_2,)
)IR",
                                 R"(
CHECK-NOT:  reuses
CHECK:      buffer [[MM:buf[0-9]+]] : f32[8*s0] freed after [[K1:k[0-9]+]]{{$}}
CHECK:      kernel [[K1]] ranges=[s0, 8]
CHECK-NOT:  log: {{.*}}reuses
)"));
}

// ---- Convolution epilogues
// ---------------------------------------------------

// A convolution (channels-last result, as the layout choice gives it) whose
// bias, ReLU and max pool follow.
constexpr char kConvPool[] = R"IR(
def forward(self, x: "f32[4, 3, 8, 8]", w: "f32[16, 3, 3, 3]", b: "f32[16]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [2, 2])
    getitem = max_pool2d_with_indices[0]
    return (getitem,)
)IR";

// With sconv's epilogue (the cpu's routines), the pointwise kernel after
// the convolution becomes its epilogue over one image: its image variable
// dropped, each buffer's stride per image kept (the bias: 0), the pooled
// result allocated before the convolution, since the epilogue writes it
// while the convolution runs; the windows, inside the input, need no
// range mask; the result, a graph output, stays contiguous. Without it, two
// kernels.
TEST(SchedulerTest, TheKernelAfterAConvolutionIsItsEpilogue) {
  ASSERT_OK_AND_ASSIGN(Scheduled s,
                       ScheduleText(kConvPool, {.sconv_epilogue = true}));
  ASSERT_EQ(s.lowered.program.kernels.size(), 1u) << PrintScheduled(s);
  const Kernel& k = s.lowered.program.kernels[0];
  EXPECT_EQ(s.lowered.program.buffers[k.ops.back().buffer].allocate_before, 0);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 extern sconv([[OUT:buf[0-9]+]], in0, in1; 2, 1, 4, 3, 16,
CHECK-NEXT:   epilogue per image strides=[in2: 0, [[OUT]]: 1024, [[POOL:buf[0-9]+]]: 256] ranges=[4, 4, 16]
CHECK-NEXT:   section 0 pointwise
CHECK-NOT:      lt(
CHECK:          load [[OUT]][256*x0 + 32*x1 + x2] : f32
CHECK:          store [[POOL]][4*x0 + x1 + 16*x2] =
CHECK:      log: fuse k1 into k0: the convolution's epilogue, over each image (x0)
)"));
  ASSERT_OK_AND_ASSIGN(Scheduled apart, ScheduleText(kConvPool));
  EXPECT_EQ(apart.lowered.program.kernels.size(), 2u);
}

// Kernels that cannot run image by image stay apart: one reading another
// image of the convolution's result (a flip of the batch), one reducing
// over the batch, one reading another input's images backwards (a pointer
// moved to image n would start before its buffer).
TEST(SchedulerTest, AKernelAcrossImagesIsNoEpilogue) {
  for (const char* tail : {
           "    flip = torch.ops.aten.flip.default(convolution, [0])\n"
           "    return (flip,)\n",
           "    sum_1 = torch.ops.aten.sum.dim_IntList(convolution, [0])\n"
           "    return (sum_1,)\n",
           "    flip = torch.ops.aten.flip.default(r, [0])\n"
           "    add = torch.ops.aten.add.Tensor(convolution, flip)\n"
           "    return (add,)\n",
       }) {
    const std::string text = absl::StrCat(R"IR(
def forward(self, x: "f32[4, 3, 8, 8]", w: "f32[16, 3, 3, 3]", r: "f32[4, 16, 8, 8]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
)IR",
                                          tail);
    ASSERT_OK_AND_ASSIGN(Scheduled s,
                         ScheduleText(text, {.sconv_epilogue = true}));
    EXPECT_EQ(s.lowered.program.kernels.size(), 2u) << PrintScheduled(s);
    EXPECT_TRUE(s.lowered.program.kernels[0].ops.empty()) << tail;
  }
}

// ---- Kernels over views of the same elements ------------------------------

// gelu (as reinplace leaves it) over x [2, 4, 8] plus a bias of shape
// `bias`, read through an [8, 8] view by a product.
std::string GeluThroughAView(absl::string_view bias) {
  return absl::StrCat(R"IR(
def forward(self, x: "f32[2, 4, 8]", b: "f32[)IR",
                      bias, R"IR(]", w: "f32[8, 8]"):
    add = torch.ops.aten.add.Tensor(x, b)
    mul = torch.ops.aten.mul.Tensor(add, 0.5)
    mul_1 = torch.ops.aten.mul_.Tensor(add, 0.7071067811865476)
    erf = torch.ops.aten.erf.default(mul_1)
    add_1 = torch.ops.aten.add.Tensor(erf, 1)
    mul_2 = torch.ops.aten.mul.Tensor(mul, add_1)
    view = torch.ops.aten.view.default(mul_2, [8, 8])
    mm = torch.ops.aten.mm.default(view, w)
    return (mm,)
)IR");
}

// With a per-column bias, the first kernels run over [2, 4, 8], the one
// that realizes the view over [8, 8]. The bias kernel's two outer loops
// run as one (each stride is the next one's times its range); its inner
// boundary (the bias is per column) stays, and the view's kernel has it
// too, so both fit [8, 8] and fuse: the gelu's intermediates stay in
// registers.
TEST(SchedulerTest, KernelsOverViewsOfTheSameElementsFuse) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(GeluThroughAView("8")));
  EXPECT_EQ(s.lowered.program.kernels.size(), 2u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      buffer buf3 : f32[64] local
CHECK-NEXT: buffer buf4 : f32[64] local
CHECK:      kernel k0 ranges=[8, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %0 = load in0[8*x0 + x1] : f32
CHECK-NEXT:     %1 = load in1[x1] : f32
CHECK-NOT:      {{load|store}}
CHECK:          erf(
CHECK-NOT:      {{load|store}}
CHECK:          store buf5[8*x0 + x1] =
CHECK-NEXT: kernel k4 extern sgemm
CHECK:      log: fuse k3 into k0: pointwise over the same ranges, its loops merged to [8, 8]
)"));
}

// With a bias per row of x's [4, 8] matrices, the bias kernel needs both
// its loop boundaries (after 32 and after 8 iterations), the view's [8, 8]
// has only the second, so they stay apart.
TEST(SchedulerTest, AViewWithoutALoopBoundaryTheOtherNeedsIsNotFused) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(GeluThroughAView("4, 1")));
  EXPECT_EQ(s.lowered.program.kernels.size(), 3u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[2, 4, 8]
CHECK:      kernel k3 ranges=[8, 8]
CHECK:      log: keep k3 apart from k0: different ranges or an access at another element
)"));
}

// A softmax as reinplace leaves it: x - max written in place over the
// scaled scores, which the exp then reads. Fused, the exp takes the value,
// and no later op reads the buffer: its store is dropped. The exps' store
// stays (the sum and the division read it).
TEST(SchedulerTest, AStoreNothingReadsAfterIsDropped) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[4, 8]"):
    mul = torch.ops.aten.mul.Tensor(x, 2.0)
    amax = torch.ops.aten.amax.default(mul, [-1], True)
    sub_ = torch.ops.aten.sub_.Tensor(mul, amax)
    exp = torch.ops.aten.exp.default(mul)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    return (div,)
)IR"));
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k{{[0-9]+}} ranges=[4]
CHECK:        section 0 reduction
CHECK:          load [[B:buf[0-9]+]][
CHECK:          reduce max(
CHECK-NOT:      store [[B]]
CHECK:          sub(
CHECK-NOT:      store [[B]]
CHECK:          exp(
CHECK-NEXT:     store [[E:buf[0-9]+]][
CHECK:          load [[E]][
CHECK-NEXT:     reduce sum(
CHECK:      log: [[B]]: k{{[0-9]+}}'s store dropped (nothing reads it after)
)"));
}

}  // namespace
}  // namespace lathe::codegen
