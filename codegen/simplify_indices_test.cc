// SimplifyIndices through the scheduler: graph text in, lowered and
// scheduled; FileCheck lines on the kernels' indices. The views' nested
// ModularIndexing / FloorDiv terms become affine in the loop variables.

#include "codegen/simplify_indices.h"

#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// A transformer's head split: [B, S, H*D] + bias, viewed [B, S, H, D],
// transposed to [B, H, S, D] and made contiguous. Lowered, the load of the
// sum's input goes through the view and the transpose: ModularIndexing of
// the flat index by each size. With the ranges (x0 < 2, x1 < 3, x2 < 4,
// x3 < 5) every term is a plain multiple of one variable.
constexpr char kHeadSplit[] = R"IR(
def forward(self, x: "f32[2, 4, 15]", b: "f32[15]"):
    add = torch.ops.aten.add.Tensor(x, b)
    view = torch.ops.aten.view.default(add, [2, 4, 3, 5])
    transpose = torch.ops.aten.transpose.int(view, 1, 2)
    clone = torch.ops.aten.clone.default(transpose, memory_format = torch.contiguous_format)
    view_1 = torch.ops.aten.view.default(clone, [6, 4, 5])
    return (view_1,)
)IR";

TEST(SimplifyIndicesTest, HeadSplitIsAffine) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(kHeadSplit));
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      kernel k0 ranges=[2, 3, 4, 5]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %0 = load in0[60*x0 + 5*x1 + 15*x2 + x3] : f32
CHECK-NEXT:     %1 = load in1[5*x1 + x3] : f32
CHECK-NEXT:     %2 = add(%0, %1) : f32
CHECK-NEXT:     store buf2[60*x0 + 20*x1 + 5*x2 + x3] = %2
)"));
  // As lowered, before the scheduler simplifies it: the view's terms.
  EXPECT_OK(LowerAndFileCheck(kHeadSplit,
                              "CHECK: load in0[ModularIndexing(5*x1 + x3, 1, "
                              "15) + 15*ModularIndexing("));
}

// A head split of an empty batch: a kernel that runs no iteration is left
// as lowered (its ranges would be empty), and the graph compiles. (The
// view once lowered to ModularIndexing terms dividing by its zero sizes.)
TEST(SimplifyIndicesTest, AnEmptyKernelIsLeftAlone) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[0, 4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y)
    view = torch.ops.aten.view.default(add, [0, 2, 2])
    transpose = torch.ops.aten.transpose.int(view, 1, 2)
    clone = torch.ops.aten.clone.default(transpose, memory_format = torch.contiguous_format)
    return (clone,)
)IR"));
  EXPECT_OK(FileCheckScheduled(s, "CHECK: kernel k0 ranges=[0, 2, 2]"));
}

}  // namespace
}  // namespace lathe::codegen
