// The matrix products' reference kernels (ops_linalg.cc): values by hand,
// and their errors.

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_testing.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LinalgTest, MatrixProducts) {
  Tensor a = T({2, 3}, {1, 2, 3, 4, 5, 6}), b = T({3, 1}, {1, 0, -1});
  EXPECT_THAT(Elements(RunT("aten.mm.default", {V(a), V(b)})),
              ElementsAre(-2, -2));
  // Non-contiguous operand: a^T @ [1, 1]^T.
  Tensor at = RunT("aten.t.default", {V(a)});
  EXPECT_THAT(Elements(RunT("aten.mm.default", {V(at), V(T({2, 1}, {1, 1}))})),
              ElementsAre(5, 7, 9));
  EXPECT_EQ(RunError("aten.mm.default", {V(a), V(a)}),
            "aten.mm.default: mat1 and mat2 shapes cannot be multiplied (2x3 "
            "and 2x3)");
  EXPECT_THAT(RunError("aten.mm.default",
                       {V(a), V(T({3, 1}, {1, 0, -1}, DType::kFloat64))}),
              HasSubstr("expected m1 and m2 to have the same dtype"));
  Tensor zero =
      RunT("aten.mm.default", {V(*Tensor::Empty({2, 0}, DType::kFloat32)),
                               V(*Tensor::Empty({0, 3}, DType::kFloat32))});
  EXPECT_THAT(Elements(zero), ElementsAre(0, 0, 0, 0, 0, 0));
  Tensor bm = RunT("aten.bmm.default",
                   {V(T({2, 1, 1}, {2, 3})), V(T({2, 1, 2}, {1, 2, 3, 4}))});
  EXPECT_THAT(Elements(bm), ElementsAre(2, 4, 9, 12));
  EXPECT_EQ(
      RunError("aten.bmm.default",
               {V(T({2, 1, 1}, {2, 3})), V(T({3, 1, 1}, {1, 2, 3}))}),
      "aten.bmm.default: batch1 and batch2 must have the same batch size");
  EXPECT_THAT(Elements(RunT("aten.addmm.default", {V(T({1}, {1})), V(a), V(b)},
                            {{"alpha", Value::Int(2)}})),
              ElementsAre(-3, -3));
}

// mm.dtype / bmm.dtype: bf16 operands with an f32 result keep the sums
// unrounded; the operands' dtype gives what mm / bmm give; another
// out_dtype is refused with PyTorch's message.
TEST(LinalgTest, ProductsInAnotherDtype) {
  // 1 + 2^-7 is a bf16 value; (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 is not: f32
  // keeps it, bf16 rounds it to 1 + 2^-6.
  const double x = 1 + 0x1p-7;
  Tensor a = T({1, 1, 1}, {x}, DType::kBFloat16);
  Tensor f =
      RunT("aten.bmm.dtype", {V(a), V(a), Value::OfDType(DType::kFloat32)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(f), ElementsAre(x * x));
  Tensor same =
      RunT("aten.bmm.dtype", {V(a), V(a), Value::OfDType(DType::kBFloat16)});
  EXPECT_EQ(same.dtype(), DType::kBFloat16);
  EXPECT_THAT(Elements(same), ElementsAre(1 + 0x1p-6));
  Tensor m = T({2, 2}, {1, 2, 3, 4}, DType::kFloat16);
  Tensor mf =
      RunT("aten.mm.dtype", {V(m), V(m), Value::OfDType(DType::kFloat32)});
  EXPECT_EQ(mf.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(mf), ElementsAre(7, 10, 15, 22));
  for (DType bad : {DType::kFloat64, DType::kFloat16}) {
    EXPECT_EQ(RunError("aten.bmm.dtype", {V(a), V(a), Value::OfDType(bad)}),
              "aten.bmm.dtype: out_dtype only supported for torch.float32 "
              "output with float16/bfloat16 inputs or same as input dtypes");
  }
  Tensor f32 = T({2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(RunError("aten.mm.dtype",
                       {V(f32), V(f32), Value::OfDType(DType::kBFloat16)}),
              HasSubstr("out_dtype only supported"));
  EXPECT_THAT(RunError("aten.mm.dtype",
                       {V(m), V(f32), Value::OfDType(DType::kFloat32)}),
              HasSubstr("expected m1 and m2 to have the same dtype"));
  // The shapes are checked before out_dtype, as PyTorch's meta does.
  EXPECT_EQ(
      RunError("aten.bmm.dtype", {V(m), V(m), Value::OfDType(DType::kFloat64)}),
      "aten.bmm.dtype: batch1 must be a 3D tensor");
  EXPECT_EQ(RunError("aten.mm.dtype",
                     {V(m), V(T({3, 2}, {1, 2, 3, 4, 5, 6}, DType::kFloat16)),
                      Value::OfDType(DType::kFloat32)}),
            "aten.mm.dtype: mat1 and mat2 shapes cannot be multiplied (2x2 "
            "and 3x2)");
}

}  // namespace
}  // namespace lathe::ir
