// SplitLoopAtDivisions through the scheduler: graph text in, lowered and
// scheduled; FileCheck lines on the split kernel's loops and indices and on
// the log. Compiled and run against the interpreter: cpu_ops_test.

#include "codegen/split_loops.h"

#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
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

}  // namespace
}  // namespace lathe::codegen
