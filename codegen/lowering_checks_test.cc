// What lowering checks so that compiled code refuses what the interpreter
// refuses (issue 25): graph text in, the unscheduled loop IR out, FileCheck
// CHECK lines on the checks a kernel or the host function makes, and the
// errors for what is refused at compile time. The runs themselves, on both
// backends, are tools/refusals_test's.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codegen/codegen_testing.h"
#include "codegen/loop_ir.h"
#include "codegen/lowering.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::StatusIs;

// Integer floor division checks its divisor (an index into [0, 1) that is 1
// when it is zero) before dividing; a float one does not.
TEST(LoweringChecksTest, IntegerDivisionChecksItsDivisor) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "i64[4]", y: "i64[4]", f: "f32[4]"):
    floor_divide = torch.ops.aten.floor_divide.default(x, y)
    div = torch.ops.aten.div.Tensor_mode(f, f, rounding_mode = 'floor')
    return (floor_divide, div)
)IR",
                              R"(
CHECK:      kernel k0 ranges=[4]
CHECK:        %[[Y:[0-9]+]] = load in1[x0] : i64
CHECK-NEXT:   %[[ZERO:[0-9]+]] = constant 0 : i64
CHECK-NEXT:   %[[IS:[0-9]+]] = eq(%[[Y]], %[[ZERO]]) : b8
CHECK-NEXT:   %[[I:[0-9]+]] = cast(%[[IS]]) : i64
CHECK-NEXT:   {{%[0-9]+}} = check_index(%[[I]]) in [0, 1), check 0 : i64
CHECK-NEXT:   {{%[0-9]+}} = floordiv({{%[0-9]+}}, %[[Y]]) : i64
CHECK:      kernel k1 ranges=[4]
CHECK-NOT:    check_index
CHECK:        floordiv
)"));
  ASSERT_OK_AND_ASSIGN(LoweredGraph lowered, LowerText(R"IR(
def forward(self, x: "i64[4]"):
    remainder = torch.ops.aten.remainder.Scalar(x, 3)
    return (remainder,)
)IR"));
  EXPECT_EQ(lowered.program.checks,
            (std::vector<std::string>{
                "node 'remainder': aten.remainder.Scalar: ZeroDivisionError"}));
}

// A view outside its buffer is refused at compile time when its sizes are
// known, with the interpreter's message.
TEST(LoweringChecksTest, AViewOutsideItsBufferIsRefused) {
  EXPECT_THAT(LowerText(R"IR(
def forward(self, x: "f32[64]"):
    as_strided = torch.ops.aten.as_strided.default(x, [100, 100], [100, 1])
    mul = torch.ops.aten.mul.Tensor(as_strided, 2)
    return (mul,)
)IR")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'as_strided': view of 40000 bytes (sizes [100, "
                       "100], strides [100, 1], offset 0) exceeds its storage "
                       "of 256 bytes"));
  EXPECT_THAT(LowerText(R"IR(
def forward(self, x: "f32[64]"):
    as_strided = torch.ops.aten.as_strided.default(x, [8], [-1], 8)
    mul = torch.ops.aten.mul.Tensor(as_strided, 2)
    return (mul,)
)IR")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'as_strided': negative stride -1 in dimension 0"));
}

// Over a symbolic input the view is a host step before the kernel reading
// it; so is every view lowering cannot prove in bounds for all sizes (the
// slice's clamped length u1 is a symbol bound in the host), as the
// interpreter checks every view it makes.
TEST(LoweringChecksTest, ADynamicAsStridedIsAHostStep) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[s0]"):
    as_strided = torch.ops.aten.as_strided.default(x, [8], [1])
    mul = torch.ops.aten.mul.Tensor(as_strided, 2)
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
    add = torch.ops.aten.add.Tensor(slice_1, 1)
    return (mul, add)
)IR",
                              R"(
CHECK:      kernel k0 assert 8 <= s0, check 0
CHECK:      kernel {{k[0-9]+}} assert Or(Eq(u1, 0), u1 + 1 <= s0), check 1
CHECK:      kernel {{k[0-9]+}} ranges=[8]
CHECK-NOT:  assert
)"));
}

// An op over a product of symbolic sizes checks its element count in double
// (it cannot overflow) against the limit; one symbolic size needs nothing.
TEST(LoweringChecksTest, AProductOfSizesIsCheckedAgainstTheElementLimit) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[s0]", y: "f32[s1]"):
    neg = torch.ops.aten.neg.default(x)
    unsqueeze = torch.ops.aten.unsqueeze.default(neg, 1)
    mul = torch.ops.aten.mul.Tensor(unsqueeze, y)
    return (mul,)
)IR",
                              R"(
CHECK-NOT:  assert
CHECK:      kernel {{k[0-9]+}} assert ToFloat(s0)*ToFloat(s1) <= 1099511627776.0, check 0
CHECK-NEXT: kernel {{k[0-9]+}} ranges=[s0, s1]
)"));
  EXPECT_THAT(LowerText(R"IR(
def forward(self, x: "f32[4]"):
    expand = torch.ops.aten.expand.default(x, [1048576, 1048576, 4])
    sum_1 = torch.ops.aten.sum.default(expand)
    return (sum_1,)
)IR")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'sum_1': aten.sum.default: an input of "
                       "4398046511104 elements (f32[1048576, 1048576, 4]) is "
                       "more than the 1099511627776 one op may take "
                       "(--max-elements)"));
}

// A size read from data (x.item()) is checked not to be negative before the
// kernel that needs it.
TEST(LoweringChecksTest, ASizeReadFromDataIsCheckedNotNegative) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, n: "i64[]"):
    item = torch.ops.aten._local_scalar_dense.default(n)
    zeros = torch.ops.aten.zeros.default([item], dtype = torch.float32)
    return (zeros,)
)IR",
                              R"(
CHECK:      kernel k0 bind u0 = in0[0]
CHECK-NEXT: kernel k1 assert 0 <= u0, check 1
CHECK-NEXT: kernel k2 ranges=[u0]
)"));
}

}  // namespace
}  // namespace lathe::codegen
