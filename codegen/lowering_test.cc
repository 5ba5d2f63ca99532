// Lowering's tests: graph text in, the unscheduled loop IR (PrintProgram)
// out, FileCheck CHECK lines on what lowering decides — which values are
// inlined as scalar ops and which are realized into buffers, the index
// arithmetic of broadcasting and views, symbolic ranges, reductions and
// stores into mutated inputs — and the errors for what it cannot lower
// (the matrix products' extern calls: lowering_linalg_test.cc). Fusion is the
// scheduler's (scheduler_test.cc); the numbers come out right in
// tools/cpu_differential_test.

#include "codegen/lowering.h"

#include "codegen/codegen_testing.h"
#include "codegen/loop_ir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::StatusIs;

// ---- Pointwise ops and broadcasting -----------------------------------------

// A chain of pointwise ops is one kernel: each op a scalar op on the
// previous one's value, one load of the input and one store of the result.
TEST(LoweringTest, PointwiseChainIsInlinedIntoOneKernel) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    exp = torch.ops.aten.exp.default(neg)
    mul = torch.ops.aten.mul.Tensor(exp, 2.0)
    return (mul,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[32] input 0
CHECK-NEXT: buffer buf1 : f32[32]
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[8*x0 + x1] : f32
CHECK-NEXT:     %[[NEG:[0-9]+]] = neg(%[[X]]) : f32
CHECK-NEXT:     %[[EXP:[0-9]+]] = exp(%[[NEG]]) : f32
CHECK-NEXT:     %[[TWO:[0-9]+]] = constant 2.0 : f32
CHECK-NEXT:     %[[MUL:[0-9]+]] = mul(%[[EXP]], %[[TWO]]) : f32
CHECK-NEXT:     store buf1[8*x0 + x1] = %[[MUL]]
CHECK-NOT:  {{kernel|store|buffer}}
)"));
}

// [4, 1] + [1, 8] broadcasts to [4, 8] by index arithmetic: each operand is
// loaded at an index without the broadcast dim; nothing is copied.
TEST(LoweringTest, BroadcastingIsIndexArithmetic) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, a: "f32[4, 1]", b: "f32[1, 8]"):
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[4] input 0
CHECK-NEXT: buffer in1 : f32[8] input 1
CHECK-NEXT: buffer buf2 : f32[32]
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK:        %[[A:[0-9]+]] = load in0[x0] : f32
CHECK-NEXT:   %[[B:[0-9]+]] = load in1[x1] : f32
CHECK-NEXT:   %[[ADD:[0-9]+]] = add(%[[A]], %[[B]]) : f32
CHECK-NEXT:   store buf2[8*x0 + x1] = %[[ADD]]
CHECK-NOT:  kernel
)"));
}

// add's alpha scales the second operand: x + 2 * y.
TEST(LoweringTest, AddAlphaScalesTheOtherOperand) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y, alpha=2)
    return (add,)
)IR",
                              R"(
CHECK:      %[[X:[0-9]+]] = load in0[x0] : f32
CHECK-NEXT: %[[Y:[0-9]+]] = load in1[x0] : f32
CHECK-NEXT: %[[TWO:[0-9]+]] = constant 2.0 : f32
CHECK-NEXT: %[[SCALED:[0-9]+]] = mul(%[[Y]], %[[TWO]]) : f32
CHECK-NEXT: %[[SUM:[0-9]+]] = add(%[[X]], %[[SCALED]]) : f32
CHECK-NEXT: store buf2[x0] = %[[SUM]]
)"));
}

// ---- Views ------------------------------------------------------------------

// permute of an input: the [4, 8, 2] input (strides 16, 2, 1) read as
// [2, 4, 8] through the permuted strides (1, 16, 2); the result keeps that
// layout (an elementwise op preserves its input's dense layout).
TEST(LoweringTest, PermuteOfAnInputReadsThroughItsStrides) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8, 2]"):
    permute = torch.ops.aten.permute.default(x, [2, 0, 1])
    neg = torch.ops.aten.neg.default(permute)
    return (neg,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[64] input 0
CHECK-NEXT: buffer buf1 : f32[64]
CHECK-NEXT: kernel k0 ranges=[2, 4, 8]
CHECK:        %[[X:[0-9]+]] = load in0[x0 + 16*x1 + 2*x2] : f32
CHECK-NEXT:   %[[NEG:[0-9]+]] = neg(%[[X]]) : f32
CHECK-NEXT:   store buf1[x0 + 16*x1 + 2*x2] = %[[NEG]]
CHECK-NOT:  kernel
)"));
}

// A transpose of a value not in memory composes with its loader: neg is
// still inlined, read at the swapped index.
TEST(LoweringTest, TransposeOfALoaderComposes) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    transpose = torch.ops.aten.transpose.int(neg, 0, 1)
    exp = torch.ops.aten.exp.default(transpose)
    return (exp,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[8, 4]
CHECK:        %[[X:[0-9]+]] = load in0[x0 + 8*x1] : f32
CHECK-NEXT:   %[[NEG:[0-9]+]] = neg(%[[X]]) : f32
CHECK-NEXT:   %[[EXP:[0-9]+]] = exp(%[[NEG]]) : f32
CHECK-NEXT:   store buf1[x0 + 8*x1] = %[[EXP]]
CHECK-NOT:  kernel
)"));
}

// x[:, 1:9:3] of a [4, 10] input: sizes [4, 3], strides (10, 3), offset 1.
TEST(LoweringTest, SliceWithAStepIsAStrideAndAnOffset) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 10]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 1, 1, 9, 3)
    neg = torch.ops.aten.neg.default(slice_1)
    return (neg,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[40] input 0
CHECK-NEXT: buffer buf1 : f32[12]
CHECK-NEXT: kernel k0 ranges=[4, 3]
CHECK:        %[[X:[0-9]+]] = load in0[10*x0 + 3*x1 + 1] : f32
CHECK:        store buf1[3*x0 + x1] =
)"));
}

// expand [4, 1] -> [4, 6]: stride 0 on the expanded dim, no copy.
TEST(LoweringTest, ExpandIsAZeroStride) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 1]"):
    expand = torch.ops.aten.expand.default(x, [4, 6])
    neg = torch.ops.aten.neg.default(expand)
    return (neg,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[4] input 0
CHECK-NEXT: buffer buf1 : f32[24]
CHECK-NEXT: kernel k0 ranges=[4, 6]
CHECK:        load in0[x0] : f32
CHECK:        store buf1[6*x0 + x1] =
CHECK-NOT:  kernel
)"));
}

// view [4, 8] -> [2, 16] of a loader: the row-major linear index
// 16*x0 + x1 split back into [4, 8]'s row (lin // 8) % 4 and column
// lin % 8 (which only x1 reaches).
TEST(LoweringTest, ViewOfALoaderSplitsTheLinearIndex) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    view = torch.ops.aten.view.default(neg, [2, 16])
    exp = torch.ops.aten.exp.default(view)
    return (exp,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[2, 16]
CHECK:        load in0[ModularIndexing(x1, 1, 8) + 8*ModularIndexing(16*x0 + x1, 8, 4)] : f32
CHECK-NEXT:   neg(
CHECK-NEXT:   exp(
CHECK-NEXT:   store buf1[16*x0 + x1] =
CHECK-NOT:  kernel
)"));
}

// A strided slice of a loader is not composed: the base is realized and
// the slice read from its buffer (row stride 8, column stride 2).
TEST(LoweringTest, SliceOfALoaderRealizesTheBase) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    slice_1 = torch.ops.aten.slice.Tensor(neg, 1, 0, 8, 2)
    exp = torch.ops.aten.exp.default(slice_1)
    return (exp,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 8]
CHECK:        neg(
CHECK:        store buf1[8*x0 + x1] =
CHECK:      kernel k1 ranges=[4, 4]
CHECK:        %[[V:[0-9]+]] = load buf1[8*x0 + 2*x1] : f32
CHECK-NEXT:   exp(%[[V]])
CHECK-NEXT:   store buf2[4*x0 + x1] =
)"));
}

// ---- Symbolic sizes ---------------------------------------------------------

// A [4, s0] input: the buffer holds 4*s0 elements, s0 is a program symbol,
// the transposed read strides by s0 over the range [s0, 4], and mean's
// reduction runs over r0_0 in s0 and divides by s0.
TEST(LoweringTest, SymbolicSizesGiveSymbolicRangesAndIndices) {
  EXPECT_OK(LowerAndFileCheck(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[4, s0]"):
    t = torch.ops.aten.t.default(x)
    neg = torch.ops.aten.neg.default(t)
    mean = torch.ops.aten.mean.dim(x, [1])
    return (neg, mean)
)IR",
                              R"(
CHECK:      symbols s0
CHECK-NEXT: buffer in0 : f32[4*s0] input 0
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in s0
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r0_0 + s0*x0] : f32
CHECK-NEXT:     %[[SUM:[0-9]+]] = reduce sum(%[[X]]) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     %[[N:[0-9]+]] = index s0 : i64
CHECK-NEXT:     %[[NF:[0-9]+]] = cast(%[[N]]) : f32
CHECK-NEXT:     %[[MEAN:[0-9]+]] = truediv(%[[SUM]], %[[NF]]) : f32
CHECK-NEXT:     store buf1[x0] = %[[MEAN]]
CHECK:      kernel k1 ranges=[s0, 4]
CHECK:          load in0[x0 + s0*x1] : f32
)"));
}

// A size read with sym_size is a number: the index value s0, cast to the
// computation's dtype.
TEST(LoweringTest, SymSizeIsAnIndexValue) {
  EXPECT_OK(LowerAndFileCheck(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[s0, 8]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    mul = torch.ops.aten.mul.Tensor(x, sym_size_int)
    return (mul,)
)IR",
                              R"(
CHECK:      symbols s0
CHECK-NEXT: buffer in0 : f32[8*s0] input 0
CHECK-NEXT: buffer buf1 : f32[8*s0]
CHECK-NEXT: kernel k0 ranges=[s0, 8]
CHECK:        %[[X:[0-9]+]] = load in0[8*x0 + x1] : f32
CHECK-NEXT:   %[[N:[0-9]+]] = index s0 : i64
CHECK-NEXT:   %[[NF:[0-9]+]] = cast(%[[N]]) : f32
CHECK-NEXT:   mul(%[[X]], %[[NF]]) : f32
)"));
}

// ---- Reductions -------------------------------------------------------------

// sum over dim 1: outer range [4], a reduction section over the 8 columns,
// the store in the section after it.
TEST(LoweringTest, SumOverADim) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    return (sum_1,)
)IR",
                              R"(
CHECK:      buffer buf1 : f32[4]
CHECK-NEXT: kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r0_0 + 8*x0] : f32
CHECK-NEXT:     %[[R:[0-9]+]] = reduce sum(%[[X]]) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     store buf1[x0] = %[[R]]
)"));
}

// sum of an int32 tensor over every dim accumulates in int64 (PyTorch's
// promotion) into a one-element buffer; the kernel has no outer range.
TEST(LoweringTest, SumOfEverythingPromotesIntegers) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "i32[4, 8]"):
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1,)
)IR",
                              R"(
CHECK:      buffer buf1 : i64[1]
CHECK-NEXT: kernel k0 ranges=[]
CHECK-NEXT:   section 0 reduction r0_0 in 4, r0_1 in 8
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[8*r0_0 + r0_1] : i32
CHECK-NEXT:     %[[C:[0-9]+]] = cast(%[[X]]) : i64
CHECK-NEXT:     %[[R:[0-9]+]] = reduce sum(%[[C]]) : i64
CHECK:          store buf1[0] = %[[R]]
)"));
}

// amax over dim 0 with keepdim: the output [1, 8] is stored at column x0.
TEST(LoweringTest, AmaxOverDimZeroKeepdim) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    amax = torch.ops.aten.amax.default(x, [0], True)
    return (amax,)
)IR",
                              R"(
CHECK:      buffer buf1 : f32[8]
CHECK-NEXT: kernel k0 ranges=[8]
CHECK-NEXT:   section 0 reduction r0_0 in 4
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[8*r0_0 + x0] : f32
CHECK-NEXT:     %[[R:[0-9]+]] = reduce max(%[[X]]) : f32
CHECK:          store buf1[x0] = %[[R]]
)"));
}

// argmax reduces the value together with the index being reduced over, and
// stores an int64.
TEST(LoweringTest, ArgmaxReducesWithTheIndex) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    argmax = torch.ops.aten.argmax.default(x, 1)
    return (argmax,)
)IR",
                              R"(
CHECK:      buffer buf1 : i64[4]
CHECK-NEXT: kernel k0 ranges=[4]
CHECK-NEXT:   section 0 reduction r0_0 in 8
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r0_0 + 8*x0] : f32
CHECK-NEXT:     %[[I:[0-9]+]] = index r0_0 : i64
CHECK-NEXT:     %[[R:[0-9]+]] = reduce argmax(%[[X]], index %[[I]]) : i64
CHECK:          store buf1[x0] = %[[R]]
)"));
}

// max.dim gives (values, indices): a max and an argmax reduction.
TEST(LoweringTest, MaxDimGivesValuesAndIndices) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    getitem_1 = max_1[1]
    return (getitem, getitem_1)
)IR",
                              R"(
CHECK:      buffer buf1 : f32[4]
CHECK-NEXT: buffer buf2 : i64[4]
CHECK:      reduce max(
CHECK:      store buf1[x0]
CHECK:      reduce argmax(
CHECK:      store buf2[x0]
)"));
}

// The grad-mode switch lowers to nothing: the program is the one lowered
// without it.
TEST(LoweringTest, GradModeSwitchLowersToNothing) {
  ASSERT_OK_AND_ASSIGN(LoweredGraph with, LowerText(R"IR(
def forward(self, x: "f32[4, 8]"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    return (getitem,)
)IR"));
  ASSERT_OK_AND_ASSIGN(LoweredGraph without, LowerText(R"IR(
def forward(self, x: "f32[4, 8]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    return (getitem,)
)IR"));
  EXPECT_EQ(PrintProgram(with.program), PrintProgram(without.program));
}

// mean is a sum whose epilogue divides by the element count, in f32.
TEST(LoweringTest, MeanDividesTheSumByTheCount) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    mean = torch.ops.aten.mean.dim(x, [1])
    return (mean,)
)IR",
                              R"(
CHECK:      section 0 reduction r0_0 in 8
CHECK:        %[[R:[0-9]+]] = reduce sum(%{{[0-9]+}}) : f32
CHECK-NEXT: section 1 pointwise
CHECK-NEXT:   %[[N:[0-9]+]] = index 8 : i64
CHECK-NEXT:   %[[NF:[0-9]+]] = cast(%[[N]]) : f32
CHECK-NEXT:   %[[M:[0-9]+]] = truediv(%[[R]], %[[NF]]) : f32
CHECK-NEXT:   store buf1[x0] = %[[M]]
)"));
}

// ---- Realization ------------------------------------------------------------

// A value with two readers (exp) is computed once into a buffer; the
// kernel of its readers loads it once and does not recompute it.
TEST(LoweringTest, AValueReadTwiceIsRealized) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    add = torch.ops.aten.add.Tensor(exp, 1.0)
    mul = torch.ops.aten.mul.Tensor(exp, 2.0)
    sub = torch.ops.aten.sub.Tensor(add, mul)
    return (sub,)
)IR",
                              R"(
CHECK:      buffer buf1 : f32[32]
CHECK-NEXT: buffer buf2 : f32[32]
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK:        exp(
CHECK-NEXT:   store buf1[8*x0 + x1] =
CHECK-NEXT: kernel k1 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[E:[0-9]+]] = load buf1[8*x0 + x1] : f32
CHECK-NOT:      {{load|exp}}
CHECK:          %[[A:[0-9]+]] = add(%[[E]], %{{[0-9]+}}) : f32
CHECK:          %[[M:[0-9]+]] = mul(%[[E]], %{{[0-9]+}}) : f32
CHECK-NEXT:     %[[S:[0-9]+]] = sub(%[[A]], %[[M]]) : f32
CHECK-NEXT:     store buf2[8*x0 + x1] = %[[S]]
)"));
}

// ---- Mutation ---------------------------------------------------------------

// add_ on an input stores into the input's own buffer at the element it
// read; nothing is allocated.
TEST(LoweringTest, AddInPlaceStoresIntoTheInput) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[4, 8]"):
    add_ = torch.ops.aten.add_.Tensor(x, y)
    return (add_,)
)IR",
                              R"(
CHECK:      buffer in0 : f32[32] input 0
CHECK-NEXT: buffer in1 : f32[32] input 1
CHECK-NEXT: kernel k0 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[8*x0 + x1] : f32
CHECK-NEXT:     %[[Y:[0-9]+]] = load in1[8*x0 + x1] : f32
CHECK-NEXT:     %[[S:[0-9]+]] = add(%[[X]], %[[Y]]) : f32
CHECK-NEXT:     store in0[8*x0 + x1] = %[[S]]
CHECK-NOT:  {{buffer|kernel}}
)"));
}

// copy_ of a [8] source into a [4, 8] input broadcasts the source.
TEST(LoweringTest, CopyInPlaceBroadcastsIntoTheInput) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[8]"):
    copy_ = torch.ops.aten.copy_.default(x, y)
    return ()
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[Y:[0-9]+]] = load in1[x1] : f32
CHECK-NEXT:     store in0[8*x0 + x1] = %[[Y]]
CHECK-NOT:  {{buffer|kernel}}
)"));
}

// add_ on a slice of an input writes only the slice's elements (columns
// 2..5: offset 2, row stride 8).
TEST(LoweringTest, InPlaceOnAViewWritesTheViewedElements) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 1, 2, 6)
    add_ = torch.ops.aten.add_.Tensor(slice_1, 1.0)
    return ()
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 4]
CHECK:        %[[X:[0-9]+]] = load in0[8*x0 + x1 + 2] : f32
CHECK:        store in0[8*x0 + x1 + 2] =
CHECK-NOT:  kernel
)"));
}

// A value read after its input is overwritten (neg of x, then copy_ into
// x) is computed before the write.
TEST(LoweringTest, AReaderOfAnInputIsComputedBeforeTheWrite) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]", y: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    copy_ = torch.ops.aten.copy_.default(x, y)
    return (neg,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 8]
CHECK:        load in0[8*x0 + x1]
CHECK:        neg(
CHECK:        store buf2[8*x0 + x1] =
CHECK:      kernel k1 ranges=[4, 8]
CHECK:        load in1[8*x0 + x1]
CHECK:        store in0[8*x0 + x1] =
CHECK-NOT:  kernel
)"));
}

// ---- Convolution, scans and indirect indexing ------------------------------

// An f64 convolution (f32 calls the library, below) is a sum over (input
// channel, kernel offset) per output element; padding is a mask over a
// clamped input index, never a padded copy. Output o reads input position
// o + k - 1 (stride 1, padding 1).
TEST(LoweringTest, ConvolutionIsAMaskedReduction) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f64[1, 2, 5]", w: "f64[3, 2, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1], [1], [1], False, [0], 1)
    return (convolution,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[1, 3, 5]
CHECK-NEXT:   section 0 reduction r0_0 in 2, r0_1 in 3
CHECK-NEXT:     %[[POS:[0-9]+]] = index r0_1 + x2 - 1 : i64
CHECK:          %[[IN:[0-9]+]] = logical_and(
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[5*r0_0 + 10*x0 + Max(0, Min(4, r0_1 + x2 - 1))] : f64
CHECK-NEXT:     %[[W:[0-9]+]] = load in1[3*r0_0 + r0_1 + 6*x1] : f64
CHECK-NEXT:     %[[P:[0-9]+]] = mul(%[[X]], %[[W]]) : f64
CHECK-NEXT:     %[[Z:[0-9]+]] = constant 0.0 : f64
CHECK-NEXT:     %[[M:[0-9]+]] = where(%[[IN]], %[[P]], %[[Z]]) : f64
CHECK-NEXT:     %[[S:[0-9]+]] = reduce sum(%[[M]]) : f64
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     store buf2[15*x0 + 5*x1 + x2] = %[[S]]
CHECK-NOT:  kernel
)"));
}

// An f32 convolution is one call of the runtime's sconv (oneDNN) with
// the geometry array runtime/convolution.h lays out: spatial dims 1,
// groups 1, N 1, C 2, O 3, input 5, kernel 3, output 5, stride 1, padding
// 1, dilation 1, then each operand's offset and strides (x, w, out). The
// bias is an epilogue that reads the call's output.
TEST(LoweringTest, Float32ConvolutionCallsTheLibrary) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[1, 2, 5]", w: "f32[3, 2, 3]", b: "f32[3]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1], [1], [1], False, [0], 1)
    return (convolution,)
)IR",
                              R"(
CHECK:      kernel k0 extern sconv(buf3, in0, in1; 1, 1, 1, 2, 3, 5, 3, 5, 1, 1, 1, 0, 10, 5, 1, 0, 6, 3, 1, 0, 15, 5, 1, 0)
CHECK:      kernel k1 ranges=[1, 3, 5]
CHECK-DAG:    load buf3[15*x0 + 5*x1 + x2] : f32
CHECK-DAG:    load in2[x1] : f32
CHECK:        store buf4[15*x0 + 5*x1 + x2]
)"));
}

// sort and topk are one library call each (runtime/sort.h) writing two
// buffers, values then indices. The geometry, by hand: dtype f32 (2), rank
// 2, dim 1, descending/largest, k (-1 for sort; 2), sorted (topk; for sort
// 2 when stable: sort.stable with stable=True), keep order, sizes [4, 6], x at
// offset 0 with strides [6, 1], then the values' and the indices' offsets
// and strides ([6, 1] for sort, [2, 1] for topk). An input eager PyTorch
// sees expanded (stride 0 along dim) keeps its order: keep order is 1.
TEST(LoweringTest, SortAndTopkCallTheLibrary) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 6]", y: "f32[4, 1]"):
    sort = torch.ops.aten.sort.default(x, -1, True)
    getitem = sort[0]
    getitem_1 = sort[1]
    topk = torch.ops.aten.topk.default(x, 2)
    getitem_2 = topk[0]
    getitem_3 = topk[1]
    expand = torch.ops.aten.expand.default(y, [4, 6])
    sort_1 = torch.ops.aten.sort.default(expand, 1)
    getitem_4 = sort_1[1]
    sort_2 = torch.ops.aten.sort.stable(x, stable = True, dim = 0)
    getitem_5 = sort_2[1]
    return (getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5)
)IR",
                              R"(
CHECK:      kernel k0 extern sort([[V:buf[0-9]+]], [[I:buf[0-9]+]], in0; 2, 2, 1, 1, -1, 1, 0, 4, 6, 0, 6, 1, 0, 6, 1, 0, 6, 1)
CHECK:      kernel k1 extern sort({{buf[0-9]+}}, {{buf[0-9]+}}, in0; 2, 2, 1, 1, 2, 1, 0, 4, 6, 0, 6, 1, 0, 2, 1, 0, 2, 1)
CHECK:      kernel k2 extern sort({{buf[0-9]+}}, {{buf[0-9]+}}, in1; 2, 2, 1, 0, -1, 1, 1, 4, 6, 0, 1, 0, 0, 6, 1, 0, 6, 1)
CHECK:      kernel k3 extern sort({{buf[0-9]+}}, {{buf[0-9]+}}, in0; 2, 2, 0, 0, -1, 2, 0, 4, 6, 0, 6, 1, 0, 6, 1, 0, 6, 1)
)"));
}

// upsample_nearest2d by 2 reads input row h // 2 and column w // 2; to
// output size [6, 6] from [3, 4], row h // 2 and column floor(w * 4 / 6) =
// 2 * w // 3.
TEST(LoweringTest, UpsampleNearestReadsAtAQuotient) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[1, 2, 3, 4]"):
    up = torch.ops.aten.upsample_nearest2d.vec(x, None, [2.0, 2.0])
    up_1 = torch.ops.aten.upsample_nearest2d.default(x, [6, 6])
    return (up, up_1)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[1, 2, 6, 8]
CHECK:        load in0[24*x0 + 12*x1 + 4*(x2//2) + (x3//2)] : f32
CHECK:      kernel k1 ranges=[1, 2, 6, 6]
CHECK:        load in0[24*x0 + 12*x1 + 4*(x2//2) + (2*x3//3)] : f32
)"));
}

// cumsum is a scan: the running sum along dim 1 stored at every step.
TEST(LoweringTest, CumsumIsAScan) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 6]"):
    cumsum = torch.ops.aten.cumsum.default(x, 1)
    return (cumsum,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4]
CHECK-NEXT:   section 0 pointwise r0_0 in 6
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[r0_0 + 6*x0] : f32
CHECK-NEXT:     %[[S:[0-9]+]] = scan sum(%[[X]]) : f32
CHECK-NEXT:     store buf1[r0_0 + 6*x0] = %[[S]]
)"));
}

// logcumsumexp is a scan too, accumulated in double for f32 (as PyTorch's
// CPU kernel) and rounded once per element.
TEST(LoweringTest, LogcumsumexpIsALogAddExpScanInDouble) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 6]"):
    logcumsumexp = torch.ops.aten.logcumsumexp.default(x, 0)
    return (logcumsumexp,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[6]
CHECK-NEXT:   section 0 pointwise r0_0 in 4
CHECK-NEXT:     %[[X:[0-9]+]] = load in0[6*r0_0 + x0] : f32
CHECK-NEXT:     %[[D:[0-9]+]] = cast(%[[X]]) : f64
CHECK-NEXT:     %[[S:[0-9]+]] = scan logaddexp(%[[D]]) : f64
CHECK-NEXT:     %[[R:[0-9]+]] = cast(%[[S]]) : f32
CHECK-NEXT:     store buf1[6*r0_0 + x0] = %[[R]]
)"));
}

// gather reads x at an index loaded from i: the loaded value is checked
// against dim 1's size (no wrap for gather) and stands for ind0.
TEST(LoweringTest, GatherIsACheckedIndirectLoad) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 6]", i: "i64[4, 2]"):
    gather = torch.ops.aten.gather.default(x, 1, i)
    return (gather,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 2]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[I:[0-9]+]] = load in1[2*x0 + x1] : i64
CHECK-NEXT:     %[[C:[0-9]+]] = check_index(%[[I]]) in [0, 6), check 0 : i64
CHECK-NEXT:     %[[V:[0-9]+]] = load in0[ind0 + 6*x0] (ind0=%[[C]]) : f32
CHECK-NEXT:     store buf2[2*x0 + x1] = %[[V]]
)"));
}

// index_put with accumulate: self copied into the result, then a kernel
// over the indices adds each value at its (wrapped, checked) element.
TEST(LoweringTest, IndexPutAccumulatesThroughAnIndirectStore) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[5]", i: "i64[3]", v: "f32[3]"):
    index_put = torch.ops.aten.index_put.default(x, [i], v, True)
    return (index_put,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[5]
CHECK:          store buf[[OUT:[0-9]+]][x0] =
CHECK:      kernel k1 ranges=[3]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[I:[0-9]+]] = load in1[x0] : i64
CHECK-NEXT:     %[[C:[0-9]+]] = check_index(%[[I]]) in [0, 5) wrap, check 0 : i64
CHECK-NEXT:     %[[V:[0-9]+]] = load in2[x0] : f32
CHECK-NEXT:     %[[OLD:[0-9]+]] = load buf[[OUT]][ind0] (ind0=%[[C]]) : f32
CHECK-NEXT:     %[[SUM:[0-9]+]] = add(%[[OLD]], %[[V]]) : f32
CHECK-NEXT:     store buf[[OUT]][ind0] = %[[SUM]] (ind0=%[[C]])
)"));
}

// ---- Errors -----------------------------------------------------------------

// An op with no lowering: Unimplemented, naming the node and the op.
TEST(LoweringTest, AnOpWithoutALoweringIsNamed) {
  EXPECT_THAT(LowerText(R"IR(
def forward(self, x: "f32[4, 3]"):
    _pdist_forward = torch.ops.aten._pdist_forward.default(x, 2.0)
    return (_pdist_forward,)
)IR")
                  .status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "node '_pdist_forward': aten._pdist_forward.default "
                       "has no cpu lowering"));
}

// An in-place op whose functional twin has no lowering (gelu is decomposed
// by the pipeline, so gelu_ reaches the backend only without it) names the
// in-place op.
TEST(LoweringTest, AnInPlaceOpWithoutALoweredTwinIsNamed) {
  EXPECT_THAT(LowerText(R"IR(
def forward(self, x: "f32[4]"):
    gelu_ = torch.ops.aten.gelu_.default(x)
    return (gelu_,)
)IR")
                  .status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "node 'gelu_': aten.gelu_.default has no "
                       "cpu lowering"));
}

// A graph constant (self.c) is an input after the placeholders, given by
// name at run time.
TEST(LoweringTest, AConstantIsAnInputAfterThePlaceholders) {
  absl::StatusOr<LoweredGraph> lowered = LowerText(R"IR(
def forward(self, x: "f32[4]"):
    c: "f32[4]" = self.c
    add = torch.ops.aten.add.Tensor(x, c)
    return (add,)
)IR");
  ASSERT_OK(lowered);
  EXPECT_THAT(lowered->constants, ::testing::ElementsAre("c"));
  EXPECT_EQ(lowered->input_buffers.size(), 2u);
  EXPECT_OK(testing::RunFileCheck(PrintProgram(lowered->program), R"(
CHECK: buffer in1 : f32[4] input 1
CHECK: kernel k0 ranges=[4]
CHECK:   load in0[x0]
CHECK:   load in1[x0]
)"));
}

// x.item() (an unbacked u0) is a host step binding the symbol to x's
// element where the program stands; kernels after it read u0 like any
// size. The length of y[:u0] is bound next, as Python slicing computes it.
TEST(LoweringTest, ItemBindsItsSymbolAndASliceToItItsLength) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "i64[]", y: "f32[6]"):
    item = torch.ops.aten._local_scalar_dense.default(x)
    slice_1 = torch.ops.aten.slice.Tensor(y, 0, 0, item)
    mul = torch.ops.aten.mul.Tensor(slice_1, item)
    return (mul,)
)IR",
                              R"(
CHECK:      symbols u0, u1
CHECK:      kernel k0 bind u0 = in0[0]
CHECK-NEXT: kernel k1 bind u1 = Min(6, Max(0, Piecewise((u0 + 6, u0 < 0), (u0, True))))
CHECK-NEXT: kernel k2 ranges=[u1]
CHECK:        index u0 : i64
)"));
}

// nonzero: x != 0 is put in memory (the count and the walk must agree), a
// reduction counts it, a host step binds u0 to the count, and one scan
// kernel stores each nonzero element's coordinates at row (running count -
// 1) of the column-major [u0, 2] result, masked where the element is zero
// or the row is not below u0.
TEST(LoweringTest, NonzeroCountsBindsAndCompacts) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 5]"):
    nonzero = torch.ops.aten.nonzero.default(x)
    return (nonzero,)
)IR",
                              R"(
CHECK:      buffer buf3 : i64[
CHECK:      kernel k0 ranges=[4, 5]
CHECK:        store buf1[
CHECK:      kernel k1 ranges=[]
CHECK:        load buf1[
CHECK:        reduce sum
CHECK:      kernel k2 bind u0 = buf2[0]
CHECK-NEXT: kernel k3 ranges=[]
CHECK-NEXT:   section 0 pointwise r0_0 in 4, r0_1 in 5
CHECK-NEXT:     [[KEEP:%[0-9]+]] = load buf1[5*r0_0 + r0_1] : b8
CHECK:          scan sum
CHECK:          [[ROW:%[0-9]+]] = where([[KEEP]],
CHECK:          [[LT:%[0-9]+]] = lt([[ROW]],
CHECK-NEXT:     [[MASK:%[0-9]+]] = logical_and([[KEEP]], [[LT]]) : b8
CHECK-NEXT:     [[I:%[0-9]+]] = index r0_0 : i64
CHECK-NEXT:     store buf3[ind0] = [[I]] if [[MASK]] (ind0=[[ROW]])
CHECK:          [[J:%[0-9]+]] = index r0_1 : i64
CHECK-NEXT:     store buf3[ind0 + u0] = [[J]] if [[MASK]] (ind0=[[ROW]])
)"));
}

// A runtime assertion is a host step with its check message, even when the
// ShapeEnv already assumes it (it learned it from the assertion).
TEST(LoweringTest, AssertScalarIsAHostCheckUnlessDecided) {
  ASSERT_OK_AND_ASSIGN(LoweredGraph lowered, LowerText(R"IR(
def forward(self, x: "i64[]"):
    item = torch.ops.aten._local_scalar_dense.default(x)
    le = item <= 3
    _assert_scalar = torch.ops.aten._assert_scalar.default(le, "u0 <= 3 failed")
    new_zeros = torch.ops.aten.new_zeros.default(x, [item])
    return (new_zeros,)
)IR"));
  EXPECT_OK(testing::RunFileCheck(PrintProgram(lowered.program), R"(
CHECK:      kernel k0 bind u0 = in0[0]
CHECK-NEXT: kernel k1 assert u0 <= 3, check 1{{$}}
CHECK-NEXT: kernel k2 assert 0 <= u0, check 2 reports [u0]
)"));
  // Check 0 is the bind's: an int read from data outside int32's range.
  EXPECT_THAT(lowered.program.checks,
              ::testing::ElementsAre(
                  "node 'item': the data-dependent u0 is outside [-2^31, "
                  "2^31), the values the compiled program admits",
                  "node '_assert_scalar' (aten._assert_scalar.default): u0 "
                  "<= 3 failed",
                  // u0 as a size: negative, it stops the program, and
                  // reports u0 for the hole (kernel_abi.h's "{k:TEXT}").
                  "node 'new_zeros': aten.new_zeros.default: Trying to create "
                  "tensor with negative dimension {0:u0}: [{0:u0}]"));
  // A literal True checks nothing (a literal False never gets here: shape
  // propagation refuses it).
  ASSERT_OK_AND_ASSIGN(LoweredGraph literal, LowerText(R"IR(
def forward(self, x: "f32[4]"):
    _assert_scalar = torch.ops.aten._assert_scalar.default(True, "never")
    return (x,)
)IR"));
  EXPECT_TRUE(literal.program.kernels.empty());
  EXPECT_TRUE(literal.program.checks.empty());
}

// split (a view op returning several tensors): each piece is a view of x,
// read at its offset (rows 0-1 at 0, rows 2-3 at 16), and no copy.
TEST(LoweringTest, SplitPiecesAreViews) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[4, 8]"):
    split = torch.ops.aten.split.Tensor(x, 2)
    getitem = split[0]
    getitem_1 = split[1]
    add = torch.ops.aten.add.Tensor(getitem, getitem_1)
    return (add,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[2, 8]
CHECK:        load in0[8*x0 + x1] : f32
CHECK-NEXT:   load in0[8*x0 + x1 + 16] : f32
CHECK-NOT:  kernel
)"));
}

// The 0-norm of a 0-d value counts whether it is nonzero (no reduction).
TEST(LoweringTest, TheZeroNormOfOneValueIsWhetherItIsNonzero) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[]"):
    linalg_vector_norm = torch.ops.aten.linalg_vector_norm.default(x, 0)
    return (linalg_vector_norm,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[]
CHECK:        %[[X:[0-9]+]] = load in0[0] : f32
CHECK-NEXT:   %[[A:[0-9]+]] = abs(%[[X]]) : f32
CHECK:        ne(%[[A]], %{{[0-9]+}}) : b8
CHECK-NOT:    reduce
CHECK:        store buf1[0]
)"));
}

// ---- Random ops -------------------------------------------------------------

// Each random op reserves its draws in graph order: rand's element at
// row-major position p is draw p of the call's seed (rng_seed, bound from
// the runtime), randn's takes draws 12 + 2p and the next (the 12 rand
// reserved before it), and randperm is one serial routine over the 6 draws
// after randn's 2*2*3 (its kernel comes first: the others are realized as
// outputs).
TEST(LoweringTest, RandomOpsReserveTheirDrawsInGraphOrder) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[2]"):
    rand = torch.ops.aten.rand.default([3, 4])
    randn = torch.ops.aten.randn.default([2, 3])
    randperm = torch.ops.aten.randperm.default(6)
    return (rand, randn, randperm)
)IR",
                              R"(
CHECK:      kernel k0 extern randperm(buf1; 6, rng_seed, 24)
CHECK:      kernel k1 ranges=[3, 4]
CHECK:        %[[AT:[0-9]+]] = index 0 : i64
CHECK-NEXT:   %[[P:[0-9]+]] = index 4*x0 + x1 : i64
CHECK-NEXT:   %[[C:[0-9]+]] = add(%[[AT]], %[[P]]) : i64
CHECK-NEXT:   %[[S:[0-9]+]] = index rng_seed : i64
CHECK-NEXT:   %[[B:[0-9]+]] = constant 24 : i64
CHECK-NEXT:   %[[U:[0-9]+]] = rand(%[[S]], %[[C]], %[[B]]) : f64
CHECK-NEXT:   cast(%[[U]]) : f32
CHECK:      kernel k2 ranges=[2, 3]
CHECK:        %[[AT1:[0-9]+]] = index 12 : i64
CHECK-NEXT:   %[[P1:[0-9]+]] = index 6*x0 + 2*x1 : i64
CHECK-NEXT:   %[[C1:[0-9]+]] = add(%[[AT1]], %[[P1]]) : i64
CHECK-NEXT:   %[[S1:[0-9]+]] = index rng_seed : i64
CHECK-NEXT:   randn(%[[S1]], %[[C1]]) : f64
)"));
}

// native_dropout's p outside [0, 1] is the interpreter's error, at compile
// time.
TEST(LoweringTest, ADropoutProbabilityOutOfRangeIsRefused) {
  EXPECT_THAT(
      LowerText(R"IR(
def forward(self, x: "f32[4]"):
    native_dropout = torch.ops.aten.native_dropout.default(x, 1.5, True)
    getitem = native_dropout[0]
    return (getitem,)
)IR")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               ::testing::HasSubstr("bernoulli_ expects p to be in [0, 1], but "
                                    "got p=-0.5")));
}

}  // namespace
}  // namespace lathe::codegen
