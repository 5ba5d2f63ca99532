// SplitLoopAtDivisions through the scheduler: graph text in, lowered and
// scheduled; FileCheck lines on the split kernel's loops and indices and on
// the log. Compiled and run against the interpreter: cpu_ops_test.

#include "codegen/split_loops.h"

#include <optional>

#include "codegen/codegen_testing.h"
#include "codegen/loop_ir.h"
#include "gtest/gtest.h"
#include "symbolic/expr.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// Attention's output going into its projection: [B, H, S, D] transposed
// to [B, S, H, D] and read as [B*S, H*D] rows by the product, scaled on
// the way. The kernel realizing the product's operand runs over [8, 48];
// its read of x divides the inner variable by D = 16. Split, the inner
// loop runs over D and both accesses are contiguous in it.
TEST(SplitLoopsTest, AHeadMergeRunsOverTheHeadDimension) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[2, 3, 4, 16]", w: "f32[48, 5]"):
    mul = torch.ops.aten.mul.Tensor(x, 0.5)
    permute = torch.ops.aten.permute.default(mul, [0, 2, 1, 3])
    view = torch.ops.aten.reshape.default(permute, [8, 48])
    mm = torch.ops.aten.mm.default(view, w)
    return (mm,)
)IR"));
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[8, 3, 16]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %0 = load in0[64*x1 + x2 + 192*(x0//4) + 16*ModularIndexing(x0, 1, 4)] : f32
CHECK:          store buf{{[0-9]+}}[48*x0 + 16*x1 + x2] =
CHECK:      kernel k1 extern sgemm
CHECK:      log: split k0's innermost loop at its indices' divisors: [8, 48] to [8, 3, 16]
)"));
}

// A divisor below kMinSplitInner leaves the loop whole: a split would
// leave a simd loop of 4.
TEST(SplitLoopsTest, ASmallDivisorIsNotSplit) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[2, 3, 4, 4]", w: "f32[12, 5]"):
    permute = torch.ops.aten.permute.default(x, [0, 2, 1, 3])
    view = torch.ops.aten.reshape.default(permute, [8, 12])
    mm = torch.ops.aten.mm.default(view, w)
    return (mm,)
)IR"));
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:     kernel k0 ranges=[8, 12]
CHECK-NOT: log: split
)"));
}

// A pointwise kernel over a reduction's elements viewed in other loops:
// the softmax over [2, 3, 4, 8], its weights cast over their [6, 4, 8] view
// (attention's p before p @ v). The cast's loops split to the reduction's
// outer and inner ranges ([6] to [2, 3]), and it joins the softmax's kernel
// as a section of its own.
TEST(SplitLoopsTest, APointwiseKernelOverAViewJoinsTheReduction) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[2, 3, 4, 8]"):
    amax = torch.ops.aten.amax.default(x, [-1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    exp = torch.ops.aten.exp.default(sub)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    view = torch.ops.aten.view.default(div, [6, 4, 8])
    cast = torch.ops.prims.convert_element_type.default(view, torch.bfloat16)
    return (cast,)
)IR"));
  EXPECT_EQ(s.lowered.program.kernels.size(), 1u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[2, 3, 4]
CHECK:          reduce sum(
CHECK:        section {{[0-9]+}} pointwise r{{[0-9]+}}_0 in 8
CHECK:          cast(%{{[0-9]+}}) : bf16
CHECK-NEXT:     store buf{{[0-9]+}}[r{{[0-9]+}}_0 + 96*x0 + 32*x1 + 8*x2] =
CHECK:      log: fuse k{{[0-9]+}} into k0: pointwise over the reduction's outer ranges and its inner ones, its loops split to [2, 3, 4, 8]
)"));
}

// SplitToRanges on kernels built by hand: a loop over 96 becomes two over
// 8 and 12, its index x0 = 12*x0 + x1; a kernel without loops, one whose
// loop is no product of consecutive ranges, and ranges its loops do not
// cover all are refused.
TEST(SplitLoopsTest, SplitToRangesKeepsTheIterationsOrRefuses) {
  using symbolic::Int;
  Kernel k;
  k.sections.push_back(Section());
  ScalarOp load;
  load.kind = ScalarOp::Kind::kLoad;
  load.buffer = 0;
  load.index = symbolic::Add(Int(5), IndexVar(0));
  k.ops.push_back(load);
  k.vars = {IndexVar(0)};
  k.ranges = {Int(96)};
  std::optional<Kernel> split = SplitToRanges(k, {Int(8), Int(12)});
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(PrintExprs(split->ranges), "8, 12");
  EXPECT_EQ(
      split->ops[0].index,
      symbolic::Add(Int(5), symbolic::Add(symbolic::Mul(Int(12), IndexVar(0)),
                                          IndexVar(1))));
  EXPECT_FALSE(SplitToRanges(k, {Int(8), Int(10)}).has_value());
  EXPECT_FALSE(SplitToRanges(k, {Int(2), Int(8), Int(12)}).has_value());
  Kernel scalar = k;
  scalar.vars.clear();
  scalar.ranges.clear();
  scalar.ops[0].index = Int(0);
  EXPECT_FALSE(SplitToRanges(scalar, {Int(4), Int(8)}).has_value());
}

}  // namespace
}  // namespace lathe::codegen
