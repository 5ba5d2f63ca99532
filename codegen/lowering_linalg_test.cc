// Lowering's tests for the matrix products (codegen/lower/linalg.cc): graph
// text in, the unscheduled loop IR out, FileCheck lines on the extern
// routine each product calls, its operands' strides, and the epilogue that
// reads its result. The numbers come out right in codegen/cpp:cpu_ops_test
// and tools/cpu_differential_test.

#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// ---- Extern kernels ---------------------------------------------------------

// mm is an sgemm call on whole buffers: (batch 1, M 4, N 8, K 16), then
// offset and (batch, row, column) strides of A, B and the output; the relu
// after it is a kernel reading the product.
TEST(LoweringTest, MmIsAnExternSgemm) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, a: "f32[4, 16]", b: "f32[16, 8]"):
    mm = torch.ops.aten.mm.default(a, b)
    relu = torch.ops.aten.relu.default(mm)
    return (relu,)
)IR",
                              R"(
CHECK:      buffer buf2 : f32[32]
CHECK-NEXT: buffer buf3 : f32[32]
CHECK-NEXT: kernel k0 extern sgemm(buf2, in0, in1; 1, 4, 8, 16, 0, 0, 16, 1, 0, 0, 8, 1, 0, 0, 8, 1)
CHECK-NEXT: kernel k1 ranges=[4, 8]
CHECK:        %[[P:[0-9]+]] = load buf2[8*x0 + x1] : f32
CHECK-NEXT:   %[[R:[0-9]+]] = relu(%[[P]]) : f32
CHECK-NEXT:   store buf3[8*x0 + x1] = %[[R]]
)"));
}

// A transposed operand is passed by its strides (B's row stride 1, column
// stride 16), not copied; an operand still a loader (neg) is realized.
TEST(LoweringTest, MmReadsATransposeByStridesAndRealizesALoader) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, a: "f32[4, 16]", b: "f32[8, 16]"):
    t = torch.ops.aten.t.default(b)
    neg = torch.ops.aten.neg.default(a)
    mm = torch.ops.aten.mm.default(neg, t)
    return (mm,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 16]
CHECK:        neg(
CHECK:        store buf2[16*x0 + x1] =
CHECK-NEXT: kernel k1 extern sgemm(buf3, buf2, in1; 1, 4, 8, 16, 0, 0, 16, 1, 0, 0, 1, 16, 0, 0, 8, 1)
CHECK-NOT:  kernel
)"));
}

// addmm = bias + a @ b: the product is an sgemm; the bias (broadcast along
// rows: read at column x1) times beta plus the product times alpha is a
// loader the next kernel (relu) inlines.
TEST(LoweringTest, AddmmBiasIsReadByTheFollowingKernel) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, bias: "f32[8]", a: "f32[4, 16]", b: "f32[16, 8]"):
    addmm = torch.ops.aten.addmm.default(bias, a, b)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)IR",
                              R"(
CHECK:      kernel k0 extern sgemm(buf3, in1, in2; 1, 4, 8, 16,
CHECK-NEXT: kernel k1 ranges=[4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[BIAS:[0-9]+]] = load in0[x1] : f32
CHECK-NEXT:     %[[ONE:[0-9]+]] = constant 1.0 : f32
CHECK-NEXT:     %[[SB:[0-9]+]] = mul(%[[BIAS]], %[[ONE]]) : f32
CHECK-NEXT:     %[[P:[0-9]+]] = load buf3[8*x0 + x1] : f32
CHECK-NEXT:     %[[PA:[0-9]+]] = mul(%[[P]], %[[ONE]]) : f32
CHECK-NEXT:     %[[SUM:[0-9]+]] = add(%[[SB]], %[[PA]]) : f32
CHECK-NEXT:     %[[R:[0-9]+]] = relu(%[[SUM]]) : f32
CHECK-NEXT:     store buf4[8*x0 + x1] = %[[R]]
CHECK-NOT:  kernel
)"));
}

// A bf16 product is the f32 routine's: each operand converted into an f32
// buffer, the product in f32, rounded to bf16 once where it is read.
TEST(LoweringTest, HalfProductsRunTheF32Routine) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, a: "bf16[4, 16]", b: "bf16[16, 8]"):
    mm = torch.ops.aten.mm.default(a, b)
    relu = torch.ops.aten.relu.default(mm)
    return (relu,)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4, 16]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[A:[0-9]+]] = load in0[16*x0 + x1] : bf16
CHECK-NEXT:     %[[AF:[0-9]+]] = cast(%[[A]]) : f32
CHECK-NEXT:     store [[BA:buf[0-9]+]][16*x0 + x1] = %[[AF]]
CHECK-NEXT: kernel k1 ranges=[16, 8]
CHECK:          cast({{.*}}) : f32
CHECK-NEXT:     store [[BB:buf[0-9]+]][8*x0 + x1] =
CHECK-NEXT: kernel k2 extern sgemm([[P:buf[0-9]+]], [[BA]], [[BB]]; 1, 4, 8, 16,
CHECK-NEXT: kernel k3 ranges=[4, 8]
CHECK:          %[[PV:[0-9]+]] = load [[P]][8*x0 + x1] : f32
CHECK-NEXT:     %[[PH:[0-9]+]] = cast(%[[PV]]) : bf16
CHECK:          relu(
CHECK:          store
CHECK-NOT:  kernel
)"));
}

// bmm.dtype with an f32 result from bf16 operands: the same f32 product,
// read as it is (no rounding to bf16 after it).
TEST(LoweringTest, AnF32ProductOfBf16OperandsIsNotRounded) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, a: "bf16[2, 4, 16]", b: "bf16[2, 16, 8]"):
    bmm = torch.ops.aten.bmm.dtype(a, b, torch.float32)
    relu = torch.ops.aten.relu.default(bmm)
    return (relu,)
)IR",
                              R"(
CHECK:      kernel k2 extern sgemm([[P:buf[0-9]+]], {{buf[0-9]+}}, {{buf[0-9]+}}; 2, 4, 8, 16,
CHECK-NEXT: kernel k3 ranges=[2, 4, 8]
CHECK-NEXT:   section 0 pointwise
CHECK-NEXT:     %[[PV:[0-9]+]] = load [[P]][{{.*}}] : f32
CHECK-NEXT:     %[[R:[0-9]+]] = relu(%[[PV]]) : f32
CHECK-NEXT:     store
CHECK-NOT:  kernel
)"));
}

}  // namespace
}  // namespace lathe::codegen
