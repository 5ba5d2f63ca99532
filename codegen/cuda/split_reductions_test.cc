// Split reductions: graph text in, lowered and scheduled, split; FileCheck
// lines on the program and the log ("log: ..." after it). A long reduction
// over few rows becomes a partial kernel over (row, chunk) and the kernel
// reducing the partials, the workspace planned between them; what stays
// whole says why. Their results on the device: driver/compile_cuda_test.

#include "codegen/cuda/split_reductions.h"

#include <string>
#include <vector>

#include "codegen/codegen_testing.h"
#include "codegen/loop_ir.h"
#include "gtest/gtest.h"
#include "status_macros.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::RunFileCheck;

// Schedules `text`, splits it, and FileChecks the program and the log.
absl::Status SplitAndFileCheck(const std::string& text,
                               const std::string& checks) {
  ASSIGN_OR_RETURN(Scheduled s, ScheduleText(text));
  std::vector<std::string> log;
  SplitReductions(s.lowered.program, &log);
  std::string printed = PrintProgram(s.lowered.program);
  for (const std::string& line : log) printed += "log: " + line + "\n";
  return RunFileCheck(printed, checks);
}

TEST(SplitReductionsTest, AWholeTensorSumSplitsIntoChunks) {
  // 100000 points: at most 100000 / 2048 = 48 chunks; 40 divides it.
  EXPECT_OK(SplitAndFileCheck(R"IR(
def forward(self, x: "f32[100000]"):
    sum_1 = torch.ops.aten.sum.default(x)
    mul = torch.ops.aten.mul.Tensor(sum_1, 2.0)
    return (mul,)
)IR",
                              R"(
CHECK:      buffer k0_partial1 : f32[40] freed after k0
CHECK:      kernel k0_part ranges=[40]
CHECK-NEXT:   section 0 reduction r0_1 in 2500
CHECK-NEXT:     %0 = load in0[r0_1 + 2500*x0] : f32
CHECK-NEXT:     %1 = reduce sum(%0) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     store k0_partial1[x0] = %1
CHECK-NEXT: kernel k0 ranges=[]
CHECK-NEXT:   section 0 reduction r0_0 in 40
CHECK-NEXT:     %0 = load k0_partial1[r0_0] : f32
CHECK-NEXT:     %1 = reduce sum(%0) : f32
CHECK-NEXT:   section 1 pointwise
CHECK:          %[[M:[0-9]+]] = mul(%1, %{{[0-9]+}}) : f32
CHECK-NEXT:     store buf2[0] = %[[M]]
CHECK:      log: split k0's reduction over 100000 points into 40 chunks of 2500 (k0_part, then k0)
)"));
}

TEST(SplitReductionsTest, RowsAndSeveralReducedDimensions) {
  // Two rows of 128 * 256 contiguous points: a chunk's point is the row's
  // flat position again. The sum is the max's sibling (scheduler.cc: one
  // loop over x for both), so both split: each its own partials.
  EXPECT_OK(SplitAndFileCheck(R"IR(
def forward(self, x: "f32[2, 128, 256]"):
    amax = torch.ops.aten.amax.default(x, [1, 2])
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1, 2])
    add = torch.ops.aten.add.Tensor(amax, sum_1)
    return (add,)
)IR",
                              R"(
CHECK:      buffer k0_partial1 : f32[32] freed after k0
CHECK-NEXT: buffer k0_partial3 : f32[32] freed after k0
CHECK:      kernel k0_part ranges=[2, 16]
CHECK-NEXT:   section 0 reduction r0_2 in 2048
CHECK-NEXT:     %0 = load in0[r0_2 + 32768*x0 + 2048*x1] : f32
CHECK-NEXT:     %1 = reduce max(%0) : f32
CHECK-NEXT:     %3 = load in0[r0_2 + 32768*x0 + 2048*x1] : f32
CHECK-NEXT:     %4 = reduce sum(%3) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:     store k0_partial1[16*x0 + x1] = %1
CHECK-NEXT:     store k0_partial3[16*x0 + x1] = %4
CHECK-NEXT: kernel k0 ranges=[2]
CHECK-NEXT:   section 0 reduction r0_0 in 16
CHECK-NEXT:     %0 = load k0_partial1[r0_0 + 16*x0] : f32
CHECK-NEXT:     %1 = reduce max(%0) : f32
CHECK-NEXT:     %2 = load k0_partial3[r0_0 + 16*x0] : f32
CHECK-NEXT:     %3 = reduce sum(%2) : f32
CHECK-NEXT:   section 1 pointwise
CHECK-NEXT:   section 2 pointwise
CHECK-NEXT:     %4 = add(%1, %3) : f32
CHECK-NEXT:     store buf3[x0] = %4
CHECK:      log: split k0's reduction over 32768 points into 16 chunks of 2048
)"));
}

TEST(SplitReductionsTest, APointOfAChunkIsItsPointInTheRow) {
  // A transposed row (x.t().sum()): its points are not a contiguous walk,
  // so each variable comes from the chunk's point by its own formula.
  EXPECT_OK(SplitAndFileCheck(R"IR(
def forward(self, x: "f32[3000, 10]"):
    t = torch.ops.aten.t.default(x)
    sum_1 = torch.ops.aten.sum.dim_IntList(t, [0, 1])
    return (sum_1,)
)IR",
                              R"(
CHECK:      kernel k0_part ranges=[12]
CHECK-NEXT:   section 0 reduction r0_{{[0-9]+}} in 2500
CHECK-NEXT:     %0 = load in0[{{.*}}ModularIndexing{{.*}}] : f32
CHECK:      log: split k0's reduction over 30000 points into 12 chunks of 2500
)"));
}

TEST(SplitReductionsTest, WhatStaysInOneBlockPerRowSaysWhy) {
  EXPECT_OK(SplitAndFileCheck(R"IR(
def forward(self, x: "f32[100000]"):
    argmax = torch.ops.aten.argmax.default(x)
    return (argmax,)
)IR",
                              R"(
CHECK-NOT:  k0_part
CHECK:      log: keep k0's reduction in one block per row: its argmax carries more than one value
)"));
  EXPECT_OK(SplitAndFileCheck(R"IR(
def forward(self, x: "f32[100003]"):
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1,)
)IR",
                              R"(
CHECK-NOT:  k0_part
CHECK:      log: keep k0's reduction in one block per row: no chunk count from 8 to 48 divides its 100003 points
)"));
  // Rows enough to fill a GPU, and short rows: no split, nothing to say.
  for (const char* text : {R"IR(
def forward(self, x: "f32[128, 20000]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    return (sum_1,)
)IR",
                           R"IR(
def forward(self, x: "f32[4, 1000]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    return (sum_1,)
)IR"}) {
    EXPECT_OK(SplitAndFileCheck(text, R"(
CHECK-NOT: k0_part
CHECK-NOT: log:
)"));
  }
}

}  // namespace
}  // namespace lathe::codegen
