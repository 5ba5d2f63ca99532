// Reference kernels against hand-derived values. Every call also runs the
// op's meta function on the arguments' metadata and checks that it predicts
// the kernel's sizes, strides and dtype.

#include "ir/op_registry.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_testing.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A 2x3 tensor stored transposed (strides [1, 2]).
Tensor Transposed(std::vector<double> row_major) {
  Tensor t = *Tensor::EmptyStrided({2, 3}, {1, 2}, DType::kFloat32);
  size_t k = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    t.SetDouble(i, row_major[k++]);
  });
  return t;
}

TEST(PointwiseTest, RemainderAndFmodFollowTheDivisorAndDividendSigns) {
  Tensor a = T({4}, {5, -5, 5, -5}), b = T({4}, {3, 3, -3, -3});
  EXPECT_THAT(Elements(RunT("aten.remainder.Tensor", {V(a), V(b)})),
              ElementsAre(2, 1, -1, -2));
  EXPECT_THAT(Elements(RunT("aten.fmod.Tensor", {V(a), V(b)})),
              ElementsAre(2, -2, 2, -2));
  Tensor ai = T({4}, {5, -5, 5, -5}, DType::kInt64);
  Tensor r = RunT("aten.remainder.Scalar", {V(ai), Value::Int(-3)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(r), ElementsAre(-1, -2, -1, -2));
  EXPECT_THAT(RunError("aten.fmod.Scalar", {V(ai), Value::Int(0)}),
              HasSubstr("ZeroDivisionError"));
  // A float Python number promotes an int tensor to the default dtype.
  EXPECT_EQ(RunT("aten.remainder.Scalar", {V(ai), Value::Float(2.5)}).dtype(),
            DType::kFloat32);
}

TEST(PointwiseTest, Atan2PromotesIntsToFloat) {
  Tensor y = T({2}, {1, -1}, DType::kInt32), x = T({2}, {0, 0}, DType::kInt32);
  Tensor r = RunT("aten.atan2.default", {V(y), V(x)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_NEAR(r.GetDouble({0}), M_PI / 2, 1e-6);
  EXPECT_NEAR(r.GetDouble({1}), -M_PI / 2, 1e-6);
}

// copysign: |self| with other's sign, also of a zero, an infinity and a
// NaN (its sign bit); ints promote to the default float dtype, as atan2.
TEST(PointwiseTest, CopysignTakesTheSignBit) {
  Tensor a = T({5}, {2, -3, 0, INFINITY, 1}),
         b = T({5}, {-1, 5, -0.0, -2, -NAN});
  Tensor r = RunT("aten.copysign.Tensor", {V(a), V(b)});
  EXPECT_THAT(Elements(r), ElementsAre(-2, 3, 0, -INFINITY, -1));
  EXPECT_TRUE(std::signbit(r.GetDouble({2})));
  EXPECT_TRUE(std::signbit(r.GetDouble({4})));
  Tensor i = T({2}, {4, -7}, DType::kInt32), j = T({2}, {-1, 1}, DType::kInt32);
  Tensor ri = RunT("aten.copysign.Tensor", {V(i), V(j)});
  EXPECT_EQ(ri.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(ri), ElementsAre(-4, 7));
}

TEST(PointwiseTest, LogicalAndBitwiseOps) {
  Tensor a = T({4}, {0, 1, 2, NAN}), b = T({4}, {0, 0, -1, 0});
  Tensor land = RunT("aten.logical_and.default", {V(a), V(b)});
  EXPECT_EQ(land.dtype(), DType::kBool);
  EXPECT_THAT(Elements(land), ElementsAre(0, 0, 1, 0));
  EXPECT_THAT(Elements(RunT("aten.logical_or.default", {V(a), V(b)})),
              ElementsAre(0, 1, 1, 1));
  EXPECT_THAT(Elements(RunT("aten.logical_not.default", {V(a)})),
              ElementsAre(1, 0, 0, 0));
  Tensor i = T({3}, {12, -1, 5}, DType::kInt32),
         j = T({3}, {10, 7, 0}, DType::kInt32);
  EXPECT_THAT(Elements(RunT("aten.bitwise_and.Tensor", {V(i), V(j)})),
              ElementsAre(8, 7, 0));
  EXPECT_THAT(Elements(RunT("aten.bitwise_or.Tensor", {V(i), V(j)})),
              ElementsAre(14, -1, 5));
  EXPECT_THAT(Elements(RunT("aten.bitwise_xor.Scalar", {V(i), Value::Int(1)})),
              ElementsAre(13, -2, 4));
  EXPECT_THAT(Elements(RunT("aten.bitwise_not.default", {V(i)})),
              ElementsAre(-13, 0, -6));
  Tensor t = T({2}, {1, 0}, DType::kBool);
  Tensor nt = RunT("aten.bitwise_not.default", {V(t)});
  EXPECT_EQ(nt.dtype(), DType::kBool);
  EXPECT_THAT(Elements(nt), ElementsAre(0, 1));
  EXPECT_EQ(RunError("aten.bitwise_and.Tensor", {V(a), V(b)}),
            "aten.bitwise_and.Tensor: \"bitwise_and_cpu\" not implemented for "
            "'Float'");
  EXPECT_EQ(RunError("aten.bitwise_not.default", {V(a)}),
            "aten.bitwise_not.default: \"bitwise_not_cpu\" not implemented for "
            "'Float'");
}

TEST(PointwiseTest, PowScalarBase) {
  Tensor e = T({3}, {0, 1, 3}, DType::kInt64);
  Tensor r = RunT("aten.pow.Scalar", {Value::Int(2), V(e)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(r), ElementsAre(1, 2, 8));
  EXPECT_EQ(RunT("aten.pow.Scalar", {Value::Float(2), V(e)}).dtype(),
            DType::kFloat32);
}

TEST(PointwiseTest, ClampBroadcastsPropagatesNanAndPromotes) {
  Tensor x = T({5}, {-2, 0.5, 3, NAN, 1});
  std::vector<double> got = Elements(
      RunT("aten.clamp.default", {V(x), Value::Float(0), Value::Float(2)}));
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(got[1], 0.5);
  EXPECT_EQ(got[2], 2);
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_THAT(Elements(RunT("aten.clamp_min.default",
                            {V(T({3}, {-1, 0, 1})), Value::Int(0)})),
              ElementsAre(0, 0, 1));
  EXPECT_THAT(Elements(RunT("aten.clamp_max.default",
                            {V(T({3}, {-1, 0, 1})), Value::Int(0)})),
              ElementsAre(-1, 0, 0));
  // Only max given; min=None.
  EXPECT_THAT(Elements(RunT("aten.clamp.default", {V(T({2}, {5, -5}))},
                            {{"max", Value::Int(1)}})),
              ElementsAre(1, -5));
  // Tensor bounds broadcast: [2, 1] lows against [3] values.
  Tensor lo = T({2, 1}, {0, 10});
  Tensor r = RunT("aten.clamp.Tensor", {V(T({3}, {-1, 5, 20})), V(lo)});
  EXPECT_THAT(r.sizes(), ElementsAre(2, 3));
  EXPECT_THAT(Elements(r), ElementsAre(0, 5, 20, 10, 10, 20));
  // Ints clamped by a float bound give floats.
  Tensor ints = T({2}, {1, 7}, DType::kInt64);
  Tensor f = RunT("aten.clamp.default", {V(ints), Value::Float(1.5)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(f), ElementsAre(1.5, 7));
  EXPECT_EQ(RunError("aten.clamp.default", {V(x)}),
            "aten.clamp.default: torch.clamp: At least one of 'min' or 'max' "
            "must not be None");
}

TEST(PointwiseTest, ClampInPlaceWritesThroughAView) {
  Tensor x = Transposed({-3, 1, 9, 4, -8, 2});
  Value r = *RunOp("aten.clamp_.default", {V(x), Value::Int(0), Value::Int(5)});
  EXPECT_EQ(r.tensor.storage(), x.storage());
  EXPECT_THAT(Elements(x), ElementsAre(0, 1, 5, 4, 0, 2));
}

TEST(PointwiseTest, AddcmulAndAddcdiv) {
  Tensor s = T({2}, {1, 2}), a = T({2, 1}, {2, 4}), b = T({2}, {3, 5});
  Tensor m = RunT("aten.addcmul.default", {V(s), V(a), V(b)},
                  {{"value", Value::Float(0.5)}});
  EXPECT_THAT(m.sizes(), ElementsAre(2, 2));
  // s + 0.5 * a * b: row 0: 1+3, 2+5; row 1: 1+6, 2+10.
  EXPECT_THAT(Elements(m), ElementsAre(4, 7, 7, 12));
  Tensor d =
      RunT("aten.addcdiv.default", {V(s), V(T({2}, {3, 5})), V(T({2}, {2, 4}))},
           {{"value", Value::Int(2)}});
  EXPECT_THAT(Elements(d), ElementsAre(4, 4.5));
  Tensor i = T({2}, {1, 2}, DType::kInt64);
  EXPECT_THAT(Elements(RunT("aten.addcmul.default", {V(i), V(i), V(i)})),
              ElementsAre(2, 6));
  EXPECT_THAT(
      RunError("aten.addcdiv.default", {V(i), V(i), V(i)}),
      HasSubstr("Integer division with addcdiv is no longer supported"));
  // In place on a parameter (Adam's update).
  Tensor p = T({2}, {1, 1});
  ASSERT_OK(RunOp("aten.addcdiv_.default",
                  {V(p), V(T({2}, {1, 2})), V(T({2}, {4, 4}))},
                  {{"value", Value::Float(-1)}}));
  EXPECT_THAT(Elements(p), ElementsAre(0.75, 0.5));
  // In place cannot broadcast self.
  EXPECT_THAT(RunError("aten.addcmul_.default", {V(s), V(a), V(b)}),
              HasSubstr("doesn't match the broadcast shape"));
}

TEST(PointwiseTest, Lerp) {
  Tensor s = T({3}, {0, 10, -4}), e = T({3}, {10, 20, 4});
  EXPECT_THAT(
      Elements(RunT("aten.lerp.Scalar", {V(s), V(e), Value::Float(0.25)})),
      ElementsAre(2.5, 12.5, -2));
  EXPECT_THAT(
      Elements(RunT("aten.lerp.Tensor", {V(s), V(e), V(T({3}, {0, 1, 0.75}))})),
      ElementsAre(0, 20, 2));
  Tensor p = T({3}, {0, 10, -4});
  ASSERT_OK(RunOp("aten.lerp_.Scalar", {V(p), V(e), Value::Float(1)}));
  EXPECT_THAT(Elements(p), ElementsAre(10, 20, 4));
  Tensor i = T({1}, {1}, DType::kInt64);
  EXPECT_EQ(
      RunError("aten.lerp.Scalar", {V(i), V(i), Value::Float(0.5)}),
      "aten.lerp.Scalar: \"lerp_kernel_scalar\" not implemented for 'Long'");
  EXPECT_EQ(
      RunError("aten.lerp.Scalar", {V(s), V(T({3}, {0, 0, 0}, DType::kFloat64)),
                                    Value::Float(0.5)}),
      "aten.lerp.Scalar: expected dtype Float for `end` but got dtype Double");
}

TEST(PointwiseTest, ZeroSizeAndNonContiguousInputs) {
  Tensor empty = *Tensor::Empty({0, 3}, DType::kFloat32);
  Tensor r = RunT("aten.add.Tensor", {V(empty), V(T({3}, {1, 2, 3}))});
  EXPECT_THAT(r.sizes(), ElementsAre(0, 3));
  Tensor x = Transposed({1, 2, 3, 4, 5, 6});
  EXPECT_THAT(
      Elements(RunT("aten.mul.Tensor", {V(x), V(T({3}, {1, 10, 100}))})),
      ElementsAre(1, 20, 300, 4, 50, 600));
  EXPECT_THAT(
      RunError("aten.add.Tensor", {V(T({2}, {1, 2})), V(T({3}, {1, 2, 3}))}),
      HasSubstr("aten.add.Tensor:"));
}

TEST(ReductionTest, VarMeanProdAnyAllArgmax) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 4, 4});
  Value vm =
      *RunOp("aten.var_mean.correction", {V(x), Value::List({Value::Int(-1)})},
             {{"keepdim", Value::Bool(true)}});
  ASSERT_EQ(vm.list.size(), 2u);
  EXPECT_THAT(vm.list[0].tensor.sizes(), ElementsAre(2, 1));
  EXPECT_THAT(Elements(vm.list[0].tensor), ElementsAre(1, 0));  // correction=1
  EXPECT_THAT(Elements(vm.list[1].tensor), ElementsAre(2, 4));
  Tensor v0 =
      RunT("aten.var.correction", {V(x)}, {{"correction", Value::Int(0)}});
  EXPECT_EQ(v0.dim(), 0);
  // mean 3, squares 4+1+0+1+1+1 = 8, / 6.
  EXPECT_FLOAT_EQ(v0.GetDouble({}), 8.0 / 6);
  EXPECT_EQ(RunError("aten.var.correction", {V(T({2}, {1, 2}, DType::kInt64))}),
            "aten.var.correction: std and var only support floating point and "
            "complex dtypes");
  Tensor xi = T({2, 2}, {2, 3, 4, 5}, DType::kInt32);
  Tensor p = RunT("aten.prod.dim_int", {V(xi), Value::Int(0)});
  EXPECT_EQ(p.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(p), ElementsAre(8, 15));
  EXPECT_DOUBLE_EQ(RunT("aten.prod.default", {V(x)}).GetDouble({}), 384);
  Tensor b = T({2, 2}, {0, 1, 0, 0});
  EXPECT_THAT(Elements(RunT("aten.any.dim", {V(b), Value::Int(1)})),
              ElementsAre(1, 0));
  EXPECT_THAT(Elements(RunT("aten.all.dim",
                            {V(T({2, 2}, {1, 1, 0, 1})), Value::Int(1)})),
              ElementsAre(1, 0));
  EXPECT_EQ(RunT("aten.any.default", {V(b)}).dtype(), DType::kBool);
  // argmax: first maximum; NaN wins; dim=None flattens.
  Tensor a = T({2, 3}, {1, 5, 5, NAN, 0, 9});
  EXPECT_THAT(Elements(RunT("aten.argmax.default", {V(a), Value::Int(1)})),
              ElementsAre(1, 0));
  EXPECT_THAT(Elements(RunT("aten.argmin.default", {V(a), Value::Int(-1)})),
              ElementsAre(0, 0));
  Tensor flat = RunT("aten.argmax.default", {V(T({2, 2}, {1, 7, 3, 2}))});
  EXPECT_EQ(flat.dim(), 0);
  EXPECT_EQ(flat.GetDouble({}), 1);
  Value mx =
      *RunOp("aten.max.dim", {V(T({2, 3}, {1, 5, 2, 8, 0, 8})), Value::Int(1)});
  EXPECT_THAT(Elements(mx.list[0].tensor), ElementsAre(5, 8));
  EXPECT_THAT(Elements(mx.list[1].tensor), ElementsAre(1, 0));
  EXPECT_EQ(mx.list[1].tensor.dtype(), DType::kInt64);
  EXPECT_EQ(RunError("aten.argmax.default",
                     {V(*Tensor::Empty({0}, DType::kFloat32))}),
            "aten.argmax.default: argmax(): Expected reduction dim 0 to have "
            "non-zero size.");
}

TEST(ReductionTest, NativeLayerNorm) {
  Tensor x = T({2, 2}, {1, 3, 10, 10});
  Value r = *RunOp("aten.native_layer_norm.default",
                   {V(x), Value::List({Value::Int(2)}), V(T({2}, {2, 2})),
                    V(T({2}, {0, 1})), Value::Float(0)});
  ASSERT_EQ(r.list.size(), 3u);
  // Row 0: mean 2, var 1, rstd 1: (-1, 1) * 2 + (0, 1). Row 1: var 0, eps 0:
  // 0/0.
  std::vector<double> out = Elements(r.list[0].tensor);
  EXPECT_EQ(out[0], -2);
  EXPECT_EQ(out[1], 3);
  EXPECT_THAT(r.list[1].tensor.sizes(), ElementsAre(2, 1));
  EXPECT_THAT(Elements(r.list[1].tensor), ElementsAre(2, 10));
  EXPECT_EQ(r.list[2].tensor.GetDouble({0, 0}), 1);
  EXPECT_THAT(RunError("aten.native_layer_norm.default",
                       {V(x), Value::List({Value::Int(3)}), Value::None(),
                        Value::None(), Value::Float(1e-5)}),
              HasSubstr("Given normalized_shape=[3], expected input with shape "
                        "[*, 3], but got "
                        "input of size[2, 2]"));
}

TEST(ViewTest, NarrowSplitUnbindAsStridedShareStorage) {
  Tensor x = T({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor n = RunT("aten.narrow.default",
                  {V(x), Value::Int(0), Value::Int(-3), Value::Int(2)});
  EXPECT_EQ(n.storage(), x.storage());
  EXPECT_THAT(Elements(n), ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(RunError("aten.narrow.default",
                       {V(x), Value::Int(0), Value::Int(3), Value::Int(2)}),
              HasSubstr("start (3) + length (2) exceeds dimension size (4)."));
  Value parts = *RunOp("aten.split.Tensor", {V(x), Value::Int(3)});
  ASSERT_EQ(parts.list.size(), 2u);
  EXPECT_THAT(parts.list[1].tensor.sizes(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(parts.list[1].tensor), ElementsAre(6, 7));
  Value ws = *RunOp(
      "aten.split_with_sizes.default",
      {V(x), Value::List({Value::Int(1), Value::Int(1)}), Value::Int(1)});
  EXPECT_THAT(Elements(ws.list[1].tensor), ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(
      RunError("aten.split_with_sizes.default",
               {V(x), Value::List({Value::Int(1), Value::Int(2)})}),
      HasSubstr("Split sizes add up to 3 but got the tensor's size of 4"));
  Value u = *RunOp("aten.unbind.int", {V(x), Value::Int(-1)});
  ASSERT_EQ(u.list.size(), 2u);
  EXPECT_THAT(Elements(u.list[0].tensor), ElementsAre(0, 2, 4, 6));
  Tensor s = RunT("aten.as_strided.default",
                  {V(x), Value::List({Value::Int(2), Value::Int(2)}),
                   Value::List({Value::Int(1), Value::Int(2)}), Value::Int(1)});
  EXPECT_THAT(Elements(s), ElementsAre(1, 3, 2, 4));
}

TEST(CreationTest, ArangeCatStackFill) {
  Tensor a = RunT("aten.arange.start_step",
                  {Value::Int(1), Value::Int(10), Value::Int(3)});
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(a), ElementsAre(1, 4, 7));
  Tensor f = RunT("aten.arange.default", {Value::Float(2.5)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(f), ElementsAre(0, 1, 2));
  EXPECT_THAT(Elements(RunT("aten.arange.start_step",
                            {Value::Int(5), Value::Int(0), Value::Int(-2)})),
              ElementsAre(5, 3, 1));
  EXPECT_EQ(RunError("aten.arange.start_step",
                     {Value::Int(0), Value::Int(5), Value::Int(-1)}),
            "aten.arange.start_step: upper bound and larger bound inconsistent "
            "with step sign");
  // A step that is not finite, before the range (torch 2.15's order and
  // words): a NaN step gave "invalid size", an infinite one an empty tensor.
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(RunError("aten.arange.start_step",
                     {Value::Float(kNaN), Value::Float(1), Value::Float(kNaN)}),
            "aten.arange.start_step: step must be finite but got nan");
  EXPECT_EQ(RunError("aten.arange.start_step",
                     {Value::Float(0), Value::Float(1), Value::Float(-kInf)}),
            "aten.arange.start_step: step must be finite but got -inf");
  // More elements than int64 holds: PyTorch's error (torch 2.15 says so for
  // both).
  for (double end : {1e19, 1e300}) {
    EXPECT_EQ(RunError("aten.arange.start_step",
                       {Value::Float(0), Value::Float(end),
                        Value::Float(end == 1e19 ? 1.0 : 1e-300)}),
              "aten.arange.start_step: invalid size, possible overflow?")
        << end;
  }
  Tensor x = T({2, 2}, {1, 2, 3, 4}), y = T({2, 1}, {9, 8}, DType::kInt64);
  Tensor cat =
      RunT("aten.cat.default", {Value::List({V(x), V(y)}), Value::Int(-1)});
  EXPECT_EQ(cat.dtype(), DType::kFloat32);
  EXPECT_THAT(cat.sizes(), ElementsAre(2, 3));
  EXPECT_THAT(Elements(cat), ElementsAre(1, 2, 9, 3, 4, 8));
  // Legacy: 1-d empty tensors are skipped.
  Tensor skip =
      RunT("aten.cat.default",
           {Value::List({V(*Tensor::Empty({0}, DType::kFloat32)), V(x)})});
  EXPECT_THAT(skip.sizes(), ElementsAre(2, 2));
  EXPECT_EQ(RunError("aten.cat.default", {Value::List({V(x), V(y)})}),
            "aten.cat.default: Sizes of tensors must match except in dimension "
            "0. Expected size 2 "
            "but got size 1 for tensor number 1 in the list.");
  Tensor st =
      RunT("aten.stack.default", {Value::List({V(x), V(x)}), Value::Int(2)});
  EXPECT_THAT(st.sizes(), ElementsAre(2, 2, 2));
  EXPECT_THAT(Elements(st), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4));
  EXPECT_EQ(RunError("aten.stack.default", {Value::List({V(x), V(y)})}),
            "aten.stack.default: stack expects each tensor to be equal size, "
            "but got [2, 2] at "
            "entry 0 and [2, 1] at entry 1");
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});
  ASSERT_OK(RunOp("aten.fill_.Scalar", {V(t), Value::Float(2.5)}));
  EXPECT_THAT(Elements(t), ElementsAre(2.5, 2.5, 2.5, 2.5, 2.5, 2.5));
  Tensor filled = RunT("aten.fill.Scalar", {V(t), Value::Int(4)});
  EXPECT_EQ(filled.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_THAT(Elements(filled), ElementsAre(4, 4, 4, 4, 4, 4));
  EXPECT_THAT(Elements(t),
              ElementsAre(2.5, 2.5, 2.5, 2.5, 2.5, 2.5));  // functional
  EXPECT_THAT(Elements(RunT("aten.zero.default", {V(t)})),
              ElementsAre(0, 0, 0, 0, 0, 0));
  ASSERT_OK(RunOp("aten.zero_.default", {V(t)}));
  EXPECT_THAT(Elements(t), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(IndexTest, GatherScatterIndexSelectEmbedding) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = T({2, 2}, {2, 0, 1, 2}, DType::kInt64);
  EXPECT_THAT(
      Elements(RunT("aten.gather.default", {V(x), Value::Int(1), V(idx)})),
      ElementsAre(3, 1, 5, 6));
  // gather does not wrap a negative index, as PyTorch's does not.
  EXPECT_EQ(RunError("aten.gather.default",
                     {V(x), Value::Int(1), V(T({1, 1}, {-1}, DType::kInt64))}),
            "aten.gather.default: index -1 is out of bounds for dimension 1 "
            "with size 3");
  EXPECT_EQ(RunError("aten.gather.default",
                     {V(x), Value::Int(1), V(T({1, 1}, {3}, DType::kInt64))}),
            "aten.gather.default: index 3 is out of bounds for dimension 1 "
            "with size 3");
  // torch's gather_shape_check (an oversized index used to abort on a
  // CHECK instead of being an error).
  EXPECT_EQ(
      RunError("aten.gather.default",
               {V(x), Value::Int(1), V(T({3, 1}, {0, 0, 0}, DType::kInt64))}),
      "aten.gather.default: Size does not match at dimension 0 expected "
      "index [3, 1] to be no larger than self [2, 3] apart from "
      "dimension 1");
  EXPECT_THAT(RunError("aten.gather.default",
                       {V(x), Value::Int(1), V(T({2}, {0, 0}, DType::kInt64))}),
              HasSubstr("Index tensor must have the same number of dimensions "
                        "as input tensor"));
  Tensor zeros = T({2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor src = T({2, 2}, {10, 20, 30, 40});
  Tensor si = T({2, 2}, {2, 2, 0, 1}, DType::kInt64);
  // Row 0 writes 10 then 20 to column 2 (last write wins); row 1: 30 -> 0, 40
  // -> 1.
  EXPECT_THAT(Elements(RunT("aten.scatter.src",
                            {V(zeros), Value::Int(1), V(si), V(src)})),
              ElementsAre(0, 0, 20, 30, 40, 0));
  EXPECT_THAT(Elements(RunT("aten.scatter_add.default",
                            {V(zeros), Value::Int(1), V(si), V(src)})),
              ElementsAre(0, 0, 30, 30, 40, 0));
  EXPECT_THAT(Elements(RunT("aten.scatter.value",
                            {V(zeros), Value::Int(1), V(si), Value::Float(7)})),
              ElementsAre(0, 0, 7, 7, 7, 0));
  EXPECT_THAT(
      Elements(RunT("aten.scatter.reduce", {V(x), Value::Int(1), V(si), V(src)},
                    {{"reduce", Value::String("multiply")}})),
      ElementsAre(1, 2, 600, 120, 200, 6));
  EXPECT_THAT(
      RunError("aten.scatter.reduce", {V(x), Value::Int(1), V(si), V(src)},
               {{"reduce", Value::String("max")}}),
      HasSubstr("reduce argument must be either add or multiply"));
  Tensor rows = T({3}, {1, 1, 0}, DType::kInt64);
  Tensor sel =
      RunT("aten.index_select.default", {V(x), Value::Int(0), V(rows)});
  EXPECT_THAT(sel.sizes(), ElementsAre(3, 3));
  EXPECT_THAT(Elements(sel), ElementsAre(4, 5, 6, 4, 5, 6, 1, 2, 3));
  EXPECT_THAT(RunError("aten.index_select.default",
                       {V(x), Value::Int(0), V(T({1}, {2}, DType::kInt64))}),
              HasSubstr("index out of range in self"));
  EXPECT_THAT(RunError("aten.index_select.default",
                       {V(x), Value::Int(0), V(T({1}, {0}))}),
              HasSubstr("Expected dtype int32/int64 for index but got Float"));
  Tensor ids = T({2, 2}, {1, 0, 1, 1}, DType::kInt64);
  Tensor e = RunT("aten.embedding.default", {V(x), V(ids)});
  EXPECT_THAT(e.sizes(), ElementsAre(2, 2, 3));
  EXPECT_THAT(Elements(e), ElementsAre(4, 5, 6, 1, 2, 3, 4, 5, 6, 4, 5, 6));
}

TEST(IndexTest, AdvancedIndexingAndIndexPut) {
  Tensor x = T({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  Tensor i = T({2}, {2, -3}, DType::kInt64);
  // x[i]: rows 2 and 0.
  Tensor rows = RunT("aten.index.Tensor", {V(x), Value::List({V(i)})});
  EXPECT_THAT(rows.sizes(), ElementsAre(2, 4));
  EXPECT_THAT(Elements(rows), ElementsAre(20, 21, 22, 23, 0, 1, 2, 3));
  // x[:, j] with j of shape [2, 1]: the indexed dim is replaced in place.
  Tensor j = T({2, 1}, {3, 1}, DType::kInt64);
  Tensor cols =
      RunT("aten.index.Tensor", {V(x), Value::List({Value::None(), V(j)})});
  EXPECT_THAT(cols.sizes(), ElementsAre(3, 2, 1));
  EXPECT_THAT(Elements(cols), ElementsAre(3, 1, 13, 11, 23, 21));
  // x[i, k] broadcast together: pointwise pairs.
  Tensor k = T({2}, {1, 3}, DType::kInt64);
  EXPECT_THAT(
      Elements(RunT("aten.index.Tensor", {V(x), Value::List({V(i), V(k)})})),
      ElementsAre(21, 3));
  EXPECT_EQ(RunError("aten.index.Tensor",
                     {V(x), Value::List({V(T({1}, {3}, DType::kInt64))})}),
            "aten.index.Tensor: index 3 is out of bounds for dimension 0 with "
            "size 3");
  // A boolean mask of the indexed dims picks the rows where it is true; it
  // must match those dims, with PyTorch's message.
  Tensor rows_of =
      RunT("aten.index.Tensor",
           {V(x), Value::List({V(T({3}, {1, 0, 1}, DType::kBool))})});
  EXPECT_THAT(rows_of.sizes(), ElementsAre(2, 4));
  EXPECT_THAT(Elements(rows_of), ElementsAre(0, 1, 2, 3, 20, 21, 22, 23));
  EXPECT_EQ(RunError("aten.index.Tensor",
                     {V(x), Value::List({V(T({1}, {1}, DType::kBool))})}),
            "aten.index.Tensor: The shape of the mask [1] at index 0 does not "
            "match the shape of the indexed tensor [3, 4] at index 0");
  // index_put with accumulate: repeated indices add up.
  Tensor v = T({3}, {1, 2, 3}, DType::kFloat32);
  Tensor z = T({4}, {0, 0, 0, 0});
  Tensor at = T({3}, {1, 1, 3}, DType::kInt64);
  EXPECT_THAT(
      Elements(RunT("aten.index_put.default",
                    {V(z), Value::List({V(at)}), V(v), Value::Bool(true)})),
      ElementsAre(0, 3, 0, 3));
  EXPECT_THAT(Elements(z),
              ElementsAre(0, 0, 0, 0));  // functional: self untouched
  ASSERT_OK(RunOp("aten.index_put_.default",
                  {V(z), Value::List({V(at)}), V(T({1}, {9}))}));
  EXPECT_THAT(Elements(z), ElementsAre(0, 9, 0, 9));
  EXPECT_THAT(
      RunError(
          "aten.index_put.default",
          {V(z), Value::List({V(at)}), V(T({3}, {1, 2, 3}, DType::kFloat64))}),
      HasSubstr("Index put requires the source and destination dtypes match"));
}

TEST(IndexTest, ScatterIntoViews) {
  Tensor x = T({2, 3}, {0, 0, 0, 0, 0, 0});
  EXPECT_THAT(Elements(RunT("aten.slice_scatter.default",
                            {V(x), V(T({2, 2}, {1, 2, 3, 4})), Value::Int(1),
                             Value::Int(1)})),
              ElementsAre(0, 1, 2, 0, 3, 4));
  EXPECT_THAT(Elements(RunT(
                  "aten.select_scatter.default",
                  {V(x), V(T({3}, {7, 8, 9})), Value::Int(0), Value::Int(-1)})),
              ElementsAre(0, 0, 0, 7, 8, 9));
  EXPECT_THAT(Elements(RunT("aten.diagonal_scatter.default",
                            {V(x), V(T({2}, {5, 6})), Value::Int(1)})),
              ElementsAre(0, 5, 0, 0, 0, 6));
  EXPECT_THAT(
      Elements(RunT("aten.as_strided_scatter.default",
                    {V(x), V(T({2}, {1, 2})), Value::List({Value::Int(2)}),
                     Value::List({Value::Int(4)})})),
      ElementsAre(1, 0, 0, 0, 2, 0));
  EXPECT_THAT(RunError("aten.slice_scatter.default",
                       {V(x), V(T({2}, {1, 2})), Value::Int(1)}),
              HasSubstr("expected src to have a size equal to the slice of "
                        "self. src size = [2], "
                        "slice size = [2, 3]"));
}

TEST(CreationTest, LikeOpsCloneAndCopyPreserveDenseLayouts) {
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});  // strides [1, 2]
  Tensor c = RunT("aten.clone.default", {V(t)});
  EXPECT_EQ(c.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_THAT(Elements(c), ElementsAre(1, 2, 3, 4, 5, 6));
  Tensor cc = RunT("aten.clone.default", {V(t)},
                   {{"memory_format", Value::String("contiguous_format")}});
  EXPECT_EQ(cc.ToString(), "f32[2, 3][3, 1]cpu");
  // torch: clone(memory_format=torch.channels_last) of a [1, 2, 2, 2]
  // tensor has strides [8, 1, 4, 2], its elements where the layout puts them.
  Tensor nchw = T({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor cl = RunT("aten.clone.default", {V(nchw)},
                   {{"memory_format", Value::String("channels_last")}});
  EXPECT_EQ(cl.ToString(), "f32[1, 2, 2, 2][8, 1, 4, 2]cpu");
  EXPECT_EQ(cl.GetDouble({0, 1, 0, 1}), 6);
  EXPECT_EQ(static_cast<const float*>(cl.data_ptr())[1], 5);  // c=1, h=w=0
  EXPECT_EQ(RunError("aten.clone.default", {V(t)},
                     {{"memory_format", Value::String("channels_last")}}),
            "aten.clone.default: required rank 4 tensor to use channels_last "
            "format");
  EXPECT_EQ(RunError("aten.clone.default", {V(nchw)},
                     {{"memory_format", Value::String("channels_last_3d")}}),
            "aten.clone.default: required rank 5 tensor to use "
            "channels_last_3d format");
  // Not dense (every other column): contiguous.
  Tensor x = T({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor stepped = *x.AsStrided({2, 2}, {4, 2}, 0);
  EXPECT_EQ(RunT("aten.clone.default", {V(stepped)}).ToString(),
            "f32[2, 2][2, 1]cpu");
  Tensor z = RunT("aten.zeros_like.default", {V(t)},
                  {{"dtype", Value::OfDType(DType::kInt32)}});
  EXPECT_EQ(z.ToString(), "i32[2, 3][1, 2]cpu");
  EXPECT_THAT(Elements(z), ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_THAT(
      Elements(RunT("aten.full_like.default", {V(x), Value::Float(2.5)})),
      ElementsAre(2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5));
  EXPECT_THAT(Elements(RunT("aten.ones_like.default", {V(T({2}, {7, 7}))})),
              ElementsAre(1, 1));
  Tensor cp =
      RunT("aten.copy.default", {V(t), V(T({3}, {9, 8, 7}, DType::kInt64))});
  EXPECT_EQ(cp.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_THAT(Elements(cp), ElementsAre(9, 8, 7, 9, 8, 7));
  EXPECT_THAT(Elements(t), ElementsAre(1, 2, 3, 4, 5, 6));  // functional
  EXPECT_EQ(RunError("aten.copy_.default",
                     {V(T({2}, {1, 2})), V(T({2, 2}, {1, 2, 3, 4}))}),
            "aten.copy_.default: output with shape [2] doesn't match the "
            "broadcast shape [2, 2]");
  Tensor st = RunT("aten.scalar_tensor.default", {Value::Int(3)});
  EXPECT_EQ(st.ToString(), "f32[][]cpu");
  EXPECT_EQ(st.GetDouble({}), 3);
  Tensor es = RunT("aten.empty_strided.default",
                   {Value::List({Value::Int(2), Value::Int(3)}),
                    Value::List({Value::Int(1), Value::Int(2)})});
  EXPECT_EQ(es.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_EQ(RunT("aten.empty.memory_format",
                 {Value::List({Value::Int(0), Value::Int(2)})})
                .numel(),
            0);
  Value n = *RunOp("aten.sym_numel.default", {V(x)});
  EXPECT_EQ(*n.AsInt(), 8);
  EXPECT_EQ(*RunOp("aten.sym_stride.int", {V(t), Value::Int(-1)})->AsInt(), 2);
}

TEST(CreationTest, ConstantPadPadsAndCrops) {
  Tensor x = T({2, 2}, {1, 2, 3, 4});
  Tensor p = RunT("aten.constant_pad_nd.default",
                  {V(x),
                   Value::List({Value::Int(1), Value::Int(0), Value::Int(0),
                                Value::Int(1)}),
                   Value::Float(-1)});
  EXPECT_THAT(p.sizes(), ElementsAre(3, 3));
  EXPECT_THAT(Elements(p), ElementsAre(-1, 1, 2, -1, 3, 4, -1, -1, -1));
  Tensor crop = RunT("aten.constant_pad_nd.default",
                     {V(x), Value::List({Value::Int(-1), Value::Int(1)})});
  EXPECT_THAT(Elements(crop), ElementsAre(2, 0, 4, 0));
  EXPECT_EQ(RunError("aten.constant_pad_nd.default",
                     {V(x), Value::List({Value::Int(1)})}),
            "aten.constant_pad_nd.default: Length of pad must be even but "
            "instead it equals 1");
  EXPECT_THAT(RunError("aten.constant_pad_nd.default",
                       {V(x), Value::List({Value::Int(-3), Value::Int(0)})}),
              HasSubstr("resulted in a negative output size"));
}

TEST(ViewTest, ReshapeSqueezeViewDType) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = RunT("aten.reshape.default",
                  {V(x), Value::List({Value::Int(3), Value::Int(-1)})});
  EXPECT_EQ(r.storage(), x.storage());  // a view when possible
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});
  Tensor flat =
      RunT("aten.reshape.default", {V(t), Value::List({Value::Int(-1)})});
  EXPECT_NE(flat.storage(), t.storage());  // a copy otherwise
  EXPECT_THAT(Elements(flat), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(
      RunError("aten.view.default", {V(t), Value::List({Value::Int(-1)})}),
      HasSubstr("view size is not compatible"));
  Tensor ones = *Tensor::Empty({1, 3, 1}, DType::kFloat32);
  EXPECT_THAT(RunT("aten.squeeze.default", {V(ones)}).sizes(), ElementsAre(3));
  EXPECT_THAT(RunT("aten.squeeze.dims",
                   {V(ones), Value::List({Value::Int(-1), Value::Int(1)})})
                  .sizes(),
              ElementsAre(1, 3));
  Tensor f = T({2}, {1, -2});
  Tensor bits = RunT("aten.view.dtype", {V(f), Value::OfDType(DType::kInt32)});
  EXPECT_EQ(bits.GetDouble({0}), 0x3f800000);  // 1.0f
  Tensor halves =
      RunT("aten.view.dtype", {V(f), Value::OfDType(DType::kInt16)});
  EXPECT_THAT(halves.sizes(), ElementsAre(4));
  EXPECT_EQ(halves.GetDouble({1}), 0x3f80);  // little-endian high half of 1.0f
  EXPECT_THAT(
      RunError("aten.view.dtype", {V(t), Value::OfDType(DType::kInt16)}),
      HasSubstr("self.stride(-1) must be 1"));
}

TEST(LinalgTest, BaddbmmAndBetaZeroIgnoresSelf) {
  Tensor a = T({2, 1, 2}, {1, 2, 3, 4}), b = T({2, 2, 1}, {1, 1, 2, 0});
  Tensor r = RunT("aten.baddbmm.default", {V(T({1}, {10})), V(a), V(b)},
                  {{"beta", Value::Float(0.5)}, {"alpha", Value::Int(2)}});
  EXPECT_THAT(r.sizes(), ElementsAre(2, 1, 1));
  // 0.5 * 10 + 2 * (1 + 2) = 11; 5 + 2 * 6 = 17.
  EXPECT_THAT(Elements(r), ElementsAre(11, 17));
  Tensor m = RunT("aten.addmm.default",
                  {V(T({1}, {NAN})), V(T({1, 1}, {2})), V(T({1, 1}, {3}))},
                  {{"beta", Value::Int(0)}});
  EXPECT_THAT(Elements(m), ElementsAre(6));
}

TEST(ReductionTest, CumsumAndDivScalarMode) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(Elements(RunT("aten.cumsum.default", {V(x), Value::Int(-1)})),
              ElementsAre(1, 3, 6, 4, 9, 15));
  Tensor i = T({3}, {1, 2, 3}, DType::kInt32);
  Tensor ci = RunT("aten.cumsum.default", {V(i), Value::Int(0)});
  EXPECT_EQ(ci.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(ci), ElementsAre(1, 3, 6));
  EXPECT_THAT(
      Elements(RunT("aten.div.Scalar_mode", {V(T({2}, {7, -7})), Value::Int(2)},
                    {{"rounding_mode", Value::String("floor")}})),
      ElementsAre(3, -4));
}

TEST(PointwiseTest, UnaryValues) {
  Tensor x = T({5}, {-1.5, -0.5, 0, 0.5, 2.5});
  auto run = [&](const char* op) {
    return Elements(RunT(absl::StrCat("aten.", op, ".default"), {V(x)}));
  };
  EXPECT_THAT(run("abs"), ElementsAre(1.5, 0.5, 0, 0.5, 2.5));
  EXPECT_THAT(run("neg"), ElementsAre(1.5, 0.5, 0, -0.5, -2.5));
  EXPECT_THAT(run("relu"), ElementsAre(0, 0, 0, 0.5, 2.5));
  EXPECT_THAT(run("floor"), ElementsAre(-2, -1, 0, 0, 2));
  EXPECT_THAT(run("ceil"), ElementsAre(-1, -0.0, 0, 1, 3));
  EXPECT_THAT(run("trunc"), ElementsAre(-1, -0.0, 0, 0, 2));
  EXPECT_THAT(run("round"), ElementsAre(-2, -0.0, 0, 0, 2));  // half to even
  EXPECT_THAT(run("sign"), ElementsAre(-1, -1, 0, 1, 1));
  std::vector<double> sig = run("sigmoid");
  EXPECT_FLOAT_EQ(sig[2], 0.5);
  EXPECT_FLOAT_EQ(sig[4], 1 / (1 + std::exp(-2.5)));
  std::vector<double> silu = run("silu");
  EXPECT_FLOAT_EQ(silu[4], 2.5 / (1 + std::exp(-2.5)));
  EXPECT_FLOAT_EQ(run("exp")[4], std::exp(2.5f));
  EXPECT_FLOAT_EQ(run("expm1")[3], std::expm1(0.5f));
  EXPECT_FLOAT_EQ(run("erf")[3], std::erf(0.5f));
  EXPECT_FLOAT_EQ(run("tanh")[0], std::tanh(-1.5f));
  EXPECT_FLOAT_EQ(run("sin")[4], std::sin(2.5f));
  EXPECT_FLOAT_EQ(run("cos")[4], std::cos(2.5f));
  EXPECT_TRUE(std::isnan(run("sqrt")[0]));
  EXPECT_FLOAT_EQ(run("sqrt")[4], std::sqrt(2.5f));
  EXPECT_EQ(run("rsqrt")[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(run("reciprocal")[3], 2);
  EXPECT_EQ(run("log")[2], -std::numeric_limits<double>::infinity());
  EXPECT_FLOAT_EQ(run("log1p")[4], std::log1p(2.5f));
  // gelu: exact (erf) and tanh approximations.
  Tensor one = T({1}, {1});
  EXPECT_FLOAT_EQ(RunT("aten.gelu.default", {V(one)}).GetDouble({0}),
                  0.5 * (1 + std::erf(1 / std::sqrt(2.0))));
  EXPECT_FLOAT_EQ(RunT("aten.gelu.default", {V(one)},
                       {{"approximate", Value::String("tanh")}})
                      .GetDouble({0}),
                  0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715))));
  EXPECT_THAT(RunError("aten.gelu.default", {V(one)},
                       {{"approximate", Value::String("fast")}}),
              HasSubstr("approximate argument must be either none or tanh"));
  // Integer inputs: exact for abs/neg, promoted to float for exp.
  Tensor i = T({2}, {-3, 4}, DType::kInt64);
  Tensor ai = RunT("aten.abs.default", {V(i)});
  EXPECT_EQ(ai.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(ai), ElementsAre(3, 4));
  EXPECT_EQ(RunT("aten.exp.default", {V(i)}).dtype(), DType::kFloat32);
  // f16 results are rounded to f16.
  Tensor h = T({1}, {1}, DType::kFloat16);
  Tensor eh = RunT("aten.exp.default", {V(h)});
  EXPECT_EQ(eh.dtype(), DType::kFloat16);
  EXPECT_EQ(eh.GetDouble({0}), 2.71875);  // e rounded to f16
}

TEST(PointwiseTest, BinaryPromotionAndBroadcasting) {
  Tensor i = T({2}, {1, 2}, DType::kInt32);
  // int tensor + float number -> default float dtype.
  Tensor a = RunT("aten.add.Tensor", {V(i), Value::Float(0.5)});
  EXPECT_EQ(a.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(a), ElementsAre(1.5, 2.5));
  // int32 tensor + int number stays int32; int32 + int64 0-d tensor stays
  // int32.
  EXPECT_EQ(RunT("aten.add.Tensor", {V(i), Value::Int(7)}).dtype(),
            DType::kInt32);
  EXPECT_EQ(
      RunT("aten.add.Tensor", {V(i), V(T({}, {7}, DType::kInt64))}).dtype(),
      DType::kInt32);
  // int32 + int64 dimensioned tensor -> int64; bool + bool add -> bool.
  EXPECT_EQ(
      RunT("aten.mul.Tensor", {V(i), V(T({2}, {1, 1}, DType::kInt64))}).dtype(),
      DType::kInt64);
  EXPECT_EQ(RunT("aten.add.Tensor",
                 {V(T({1}, {1}, DType::kBool)), V(T({1}, {1}, DType::kBool))})
                .dtype(),
            DType::kBool);
  // f16 with f32 0-d tensor stays f16; bf16 with f16 -> f32.
  EXPECT_EQ(
      RunT("aten.mul.Tensor", {V(T({1}, {1}, DType::kFloat16)), V(T({}, {2}))})
          .dtype(),
      DType::kFloat16);
  EXPECT_EQ(RunT("aten.mul.Tensor", {V(T({1}, {1}, DType::kFloat16)),
                                     V(T({1}, {2}, DType::kBFloat16))})
                .dtype(),
            DType::kFloat32);
  // Integer division: true division gives floats; floor/trunc follow Python/C.
  Tensor n = T({4}, {7, -7, 7, -7}, DType::kInt64),
         d = T({4}, {2, 2, -2, -2}, DType::kInt64);
  Tensor q = RunT("aten.div.Tensor", {V(n), V(d)});
  EXPECT_EQ(q.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(q), ElementsAre(3.5, -3.5, -3.5, 3.5));
  EXPECT_THAT(Elements(RunT("aten.div.Tensor_mode", {V(n), V(d)},
                            {{"rounding_mode", Value::String("floor")}})),
              ElementsAre(3, -4, -4, 3));
  EXPECT_THAT(Elements(RunT("aten.div.Tensor_mode", {V(n), V(d)},
                            {{"rounding_mode", Value::String("trunc")}})),
              ElementsAre(3, -3, -3, 3));
  EXPECT_THAT(
      RunError("aten.div.Tensor_mode", {V(n), V(T({1}, {0}, DType::kInt64))},
               {{"rounding_mode", Value::String("floor")}}),
      HasSubstr("ZeroDivisionError"));
  // alpha; integral tensors reject a float alpha.
  EXPECT_THAT(
      Elements(RunT("aten.sub.Tensor", {V(T({2}, {10, 10})), V(T({2}, {1, 2}))},
                    {{"alpha", Value::Int(3)}})),
      ElementsAre(7, 4));
  EXPECT_THAT(
      RunError("aten.add.Tensor", {V(i), V(i)}, {{"alpha", Value::Float(0.5)}}),
      HasSubstr("argument alpha must not be a floating point number"));
  // Broadcasting [3, 1] with [2]: [3, 2].
  Tensor col = T({3, 1}, {0, 10, 20}), row = T({2}, {1, 2});
  Tensor b = RunT("aten.add.Tensor", {V(col), V(row)});
  EXPECT_THAT(b.sizes(), ElementsAre(3, 2));
  EXPECT_THAT(Elements(b), ElementsAre(1, 2, 11, 12, 21, 22));
  EXPECT_THAT(Elements(RunT("aten.maximum.default",
                            {V(T({2}, {1, NAN})), V(T({2}, {3, 0}))}))[0],
              3);
  EXPECT_TRUE(std::isnan(Elements(RunT(
      "aten.minimum.default", {V(T({2}, {1, NAN})), V(T({2}, {3, 0}))}))[1]));
  EXPECT_THAT(
      Elements(RunT("aten.pow.Tensor_Scalar",
                    {V(T({3}, {1, 2, 3}, DType::kInt64)), Value::Int(2)})),
      ElementsAre(1, 4, 9));
  EXPECT_THAT(
      RunError("aten.pow.Tensor_Scalar",
               {V(T({1}, {2}, DType::kInt64)), Value::Int(-1)}),
      HasSubstr("Integers to negative integer powers are not allowed."));
  Tensor cmp =
      RunT("aten.lt.Scalar", {V(T({3}, {1, 2, 3})), Value::Float(2.5)});
  EXPECT_EQ(cmp.dtype(), DType::kBool);
  EXPECT_THAT(Elements(cmp), ElementsAre(1, 1, 0));
  Tensor w = RunT("aten.where.self", {V(T({2}, {1, 0}, DType::kBool)),
                                      V(T({2}, {1, 2})), V(T({}, {9}))});
  EXPECT_THAT(Elements(w), ElementsAre(1, 9));
  EXPECT_THAT(RunError("aten.where.self", {V(T({2}, {1, 0})), V(T({2}, {1, 2})),
                                           V(T({2}, {1, 2}))}),
              HasSubstr("where expected condition to be a boolean tensor"));
}

TEST(ReductionTest, SumMeanAmaxWithDimsKeepdimAndEmptyInputs) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(Elements(RunT("aten.sum.dim_IntList",
                            {V(x), Value::List({Value::Int(-1)})})),
              ElementsAre(6, 15));
  Tensor k = RunT("aten.sum.dim_IntList",
                  {V(x), Value::List({Value::Int(0)}), Value::Bool(true)});
  EXPECT_EQ(k.ToString(), "f32[1, 3][3, 1]cpu");
  EXPECT_THAT(Elements(k), ElementsAre(5, 7, 9));
  EXPECT_EQ(RunT("aten.sum.default", {V(x)}).GetDouble({}), 21);
  EXPECT_EQ(RunT("aten.sum.default", {V(T({2}, {1, 1}, DType::kBool))}).dtype(),
            DType::kInt64);
  EXPECT_THAT(
      Elements(RunT("aten.mean.dim", {V(x), Value::List({Value::Int(1)})})),
      ElementsAre(2, 5));
  EXPECT_THAT(RunError("aten.mean.default", {V(T({1}, {1}, DType::kInt64))}),
              HasSubstr("mean(): could not infer output dtype"));
  EXPECT_THAT(
      Elements(RunT("aten.amax.default", {V(x), Value::List({Value::Int(0)})})),
      ElementsAre(4, 5, 6));
  EXPECT_THAT(Elements(RunT("aten.amin.default",
                            {V(x), Value::List({Value::Int(-1)})})),
              ElementsAre(1, 4));
  EXPECT_THAT(
      RunError("aten.sum.dim_IntList", {V(x), Value::List({Value::Int(2)})}),
      HasSubstr("Dimension out of range (expected to be in range of [-2, 1], "
                "but got 2)"));
  EXPECT_THAT(RunError("aten.sum.dim_IntList",
                       {V(x), Value::List({Value::Int(0), Value::Int(-2)})}),
              HasSubstr("dim 0 appears multiple times in the list of dims"));
  // Non-contiguous input.
  EXPECT_THAT(
      Elements(RunT("aten.sum.dim_IntList", {V(Transposed({1, 2, 3, 4, 5, 6})),
                                             Value::List({Value::Int(0)})})),
      ElementsAre(5, 7, 9));
  // Empty inputs: sum 0, mean NaN, amax an error.
  Tensor e = *Tensor::Empty({0, 2}, DType::kFloat32);
  EXPECT_THAT(Elements(RunT("aten.sum.dim_IntList",
                            {V(e), Value::List({Value::Int(0)})})),
              ElementsAre(0, 0));
  EXPECT_TRUE(std::isnan(RunT("aten.mean.default", {V(e)}).GetDouble({})));
  EXPECT_THAT(
      RunError("aten.amax.default", {V(e), Value::List({Value::Int(0)})}),
      HasSubstr("Expected reduction dim 0 to have non-zero size."));
  // softmax on a row with -inf entries.
  Tensor sm =
      RunT("aten._softmax.default",
           {V(T({3}, {0, -INFINITY, 0})), Value::Int(0), Value::Bool(false)});
  EXPECT_THAT(Elements(sm), ElementsAre(0.5, 0, 0.5));
}

TEST(ViewTest, BasicViewsAndTheirErrors) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor p = RunT("aten.permute.default",
                  {V(x), Value::List({Value::Int(-1), Value::Int(0)})});
  EXPECT_EQ(p.ToString(), "f32[3, 2][1, 3]cpu");
  EXPECT_EQ(p.storage(), x.storage());
  EXPECT_THAT(RunError("aten.permute.default",
                       {V(x), Value::List({Value::Int(0), Value::Int(0)})}),
              HasSubstr("permute"));
  Tensor s = RunT("aten.select.int", {V(x), Value::Int(1), Value::Int(-1)});
  EXPECT_THAT(Elements(s), ElementsAre(3, 6));
  EXPECT_EQ(s.storage_offset(), 2);
  EXPECT_THAT(RunError("aten.select.int", {V(x), Value::Int(0), Value::Int(2)}),
              HasSubstr("select(): index 2 out of range for tensor of size [2, "
                        "3] at dimension 0"));
  Tensor sl = RunT("aten.slice.Tensor", {V(x), Value::Int(1), Value::Int(-2),
                                         Value::Int(100), Value::Int(2)});
  EXPECT_THAT(Elements(sl), ElementsAre(2, 5));
  EXPECT_EQ(RunT("aten.slice.Tensor",
                 {V(x), Value::Int(1), Value::Int(2), Value::Int(1)})
                .numel(),
            0);
  Tensor e =
      RunT("aten.expand.default",
           {V(T({3, 1}, {1, 2, 3})),
            Value::List({Value::Int(2), Value::Int(-1), Value::Int(4)})});
  EXPECT_EQ(e.ToString(), "f32[2, 3, 4][0, 1, 0]cpu");
  EXPECT_THAT(RunError("aten.expand.default",
                       {V(x), Value::List({Value::Int(3), Value::Int(3)})}),
              HasSubstr("expand"));
  EXPECT_THAT(
      RunError("aten.t.default",
               {V(*Tensor::Empty({1, 1, 1}, DType::kFloat32))}),
      HasSubstr("t() expects a tensor with <= 2 dimensions, but self is 3D"));
  EXPECT_THAT(RunError("aten.view.default",
                       {V(x), Value::List({Value::Int(4), Value::Int(-1)})}),
              HasSubstr("shape '[4, -1]' is invalid for input of size 6"));
  Tensor d = RunT("aten.diagonal.default", {V(x), Value::Int(1)});
  EXPECT_THAT(Elements(d), ElementsAre(2, 6));
  EXPECT_EQ(RunT("aten.unsqueeze.default", {V(x), Value::Int(-1)}).ToString(),
            "f32[2, 3, 1][3, 1, 1]cpu");
  EXPECT_EQ(RunT("aten.squeeze.dim", {V(x), Value::Int(0)}).ToString(),
            "f32[2, 3][3, 1]cpu");
}

TEST(CreationTest, FullAndConversions) {
  Tensor f =
      RunT("aten.full.default", {Value::List({Value::Int(2)}), Value::Int(3)});
  EXPECT_EQ(f.dtype(), DType::kInt64);  // inferred from the fill value
  EXPECT_EQ(RunT("aten.full.default",
                 {Value::List({Value::Int(1)}), Value::Bool(true)})
                .dtype(),
            DType::kBool);
  EXPECT_EQ(RunT("aten.zeros.default", {Value::List({Value::Int(2)})}).dtype(),
            DType::kFloat32);
  EXPECT_THAT(RunError("aten.full.default",
                       {Value::List({Value::Int(-1)}), Value::Int(0)}),
              HasSubstr("Trying to create tensor with negative dimension -1"));
  // Conversions: float -> int truncates, -> bool is nonzero, -> f16 rounds.
  Tensor x = T({3}, {-1.7, 0, 2.5});
  Tensor i = RunT("aten._to_copy.default", {V(x)},
                  {{"dtype", Value::OfDType(DType::kInt32)}});
  EXPECT_THAT(Elements(i), ElementsAre(-1, 0, 2));
  EXPECT_THAT(Elements(RunT("aten._to_copy.default", {V(x)},
                            {{"dtype", Value::OfDType(DType::kBool)}})),
              ElementsAre(1, 0, 1));
  Tensor h = RunT("aten._to_copy.default", {V(T({1}, {0.1}))},
                  {{"dtype", Value::OfDType(DType::kFloat16)}});
  EXPECT_EQ(h.GetDouble({0}), 0.0999755859375);
}

// TensorIterator's output layout: a dense layout shared by all operands is
// kept; otherwise dims follow the first operand's stride order.
TEST(PointwiseTest, OutputLayoutFollowsTheOperandsLikeTensorIterator) {
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});  // [2, 3] strides [1, 2]
  Tensor c = T({2, 3}, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(RunT("aten.abs.default", {V(t)}).ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_EQ(RunT("aten.isnan.default", {V(t)}).ToString(), "b8[2, 3][1, 2]cpu");
  EXPECT_EQ(RunT("aten.add.Tensor", {V(t), V(t)}).ToString(),
            "f32[2, 3][1, 2]cpu");
  Tensor tc = RunT("aten.add.Tensor", {V(t), V(c)});
  EXPECT_EQ(tc.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_THAT(Elements(tc), ElementsAre(2, 3, 4, 5, 6, 7));
  EXPECT_EQ(RunT("aten.add.Tensor", {V(c), V(t)}).ToString(),
            "f32[2, 3][3, 1]cpu");
  // Broadcast operand (stride 0) does not vote.
  EXPECT_EQ(RunT("aten.mul.Tensor", {V(t), V(T({3}, {1, 2, 3}))}).ToString(),
            "f32[2, 3][1, 2]cpu");
  EXPECT_EQ(RunT("aten.mul.Tensor", {V(T({3}, {1, 2, 3})), V(t)}).ToString(),
            "f32[2, 3][1, 2]cpu");
  // A Python number does not either.
  EXPECT_EQ(RunT("aten.mul.Tensor", {V(t), Value::Float(2)}).ToString(),
            "f32[2, 3][1, 2]cpu");
  // Non-dense input: dims ordered by its strides, packed densely.
  Tensor base = T({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor stepped_t =
      *base.AsStrided({2, 3}, {2, 4}, 0);  // every other column, transposed
  EXPECT_EQ(RunT("aten.neg.default", {V(stepped_t)}).ToString(),
            "f32[2, 3][1, 2]cpu");
  EXPECT_EQ(RunT("aten.where.self",
                 {V(T({2, 3}, {1, 0, 1, 0, 1, 0}, DType::kBool)), V(t), V(t)})
                .ToString(),
            "f32[2, 3][3, 1]cpu");
}

// Every op issue 4 names, by the overloads PyTorch graphs use.
TEST(OpRegistryTest, TheOpsLatheNeedsAreRegisteredWithKernelsAndMetas) {
  const char* kTargets[] = {
      // unary
      "abs.default", "neg.default", "exp.default", "expm1.default",
      "log.default", "log1p.default", "sqrt.default", "rsqrt.default",
      "sin.default", "cos.default", "tanh.default", "sigmoid.default",
      "relu.default", "gelu.default", "silu.default", "erf.default",
      "reciprocal.default", "floor.default", "ceil.default", "round.default",
      "trunc.default", "sign.default", "isnan.default", "logical_not.default",
      "bitwise_not.default",
      // binary / ternary
      "add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "mul.Tensor",
      "mul.Scalar", "div.Tensor", "div.Scalar", "div.Tensor_mode",
      "div.Scalar_mode", "remainder.Tensor", "remainder.Scalar", "fmod.Tensor",
      "fmod.Scalar", "pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar",
      "maximum.default", "minimum.default", "atan2.default", "eq.Tensor",
      "ne.Scalar", "lt.Tensor", "le.Scalar", "gt.Tensor", "ge.Scalar",
      "logical_and.default", "logical_or.default", "bitwise_and.Tensor",
      "bitwise_or.Scalar", "bitwise_xor.Tensor", "where.self", "clamp.default",
      "clamp.Tensor", "clamp_min.default", "clamp_max.default",
      "addcmul.default", "addcdiv.default", "lerp.Scalar", "lerp.Tensor",
      // reductions
      "sum.default", "sum.dim_IntList", "mean.default", "mean.dim",
      "prod.default", "prod.dim_int", "amax.default", "amin.default", "max.dim",
      "min.dim", "argmax.default", "argmin.default", "var.correction",
      "var_mean.correction", "any.default", "any.dim", "all.default", "all.dim",
      "_softmax.default", "_log_softmax.default", "cumsum.default",
      // views
      "view.default", "_unsafe_view.default", "reshape.default",
      "permute.default", "transpose.int", "t.default", "expand.default",
      "unsqueeze.default", "squeeze.dim", "squeeze.default", "squeeze.dims",
      "slice.Tensor", "select.int", "narrow.default", "as_strided.default",
      "alias.default", "diagonal.default", "unbind.int", "split.Tensor",
      "split_with_sizes.default", "view.dtype",
      // scatter / gather
      "slice_scatter.default", "select_scatter.default",
      "as_strided_scatter.default", "diagonal_scatter.default", "scatter.src",
      "scatter.value", "scatter.reduce", "scatter_add.default",
      "index_select.default", "gather.default", "index.Tensor",
      "index_put.default", "embedding.default",
      // creation and copy
      "full.default", "zeros.default", "ones.default", "empty.memory_format",
      "empty_strided.default", "arange.default", "arange.start",
      "arange.start_step", "scalar_tensor.default", "zeros_like.default",
      "ones_like.default", "empty_like.default", "full_like.default",
      "_to_copy.default", "clone.default", "copy.default", "cat.default",
      "stack.default", "constant_pad_nd.default", "native_layer_norm.default",
      // linear algebra
      "mm.default", "bmm.default", "addmm.default", "baddbmm.default",
      // in-place
      "add_.Tensor", "sub_.Tensor", "mul_.Tensor", "div_.Tensor",
      "copy_.default", "zero_.default", "fill_.Scalar", "addcmul_.default",
      "addcdiv_.default", "clamp_.default", "lerp_.Scalar",
      "index_put_.default", "set_.source_Tensor", "as_strided_.default",
      "transpose_.default", "t_.default", "unsqueeze_.default",
      // symbolic and scalar
      "sym_size.int", "sym_stride.int", "sym_numel.default",
      "_local_scalar_dense.default", "_assert_scalar.default"};
  for (const char* t : kTargets) {
    const OpDef* op = OpRegistry::Global().Find(absl::StrCat("aten.", t));
    ASSERT_NE(op, nullptr) << t;
    EXPECT_TRUE(op->meta != nullptr && op->kernel != nullptr) << t;
  }
  // Functional twins of in-place ops, for functionalization.
  EXPECT_EQ(OpRegistry::Global().Find("aten.add_.Tensor")->functional,
            "aten.add.Tensor");
  EXPECT_EQ(OpRegistry::Global().Find("aten.index_put.default")->inplace,
            "aten.index_put_.default");
  EXPECT_EQ(OpRegistry::Global().Find("aten.copy_.default")->functional,
            "aten.copy.default");
  std::printf("%zu ops registered\n", OpRegistry::Global().Targets().size());
}

// The ops whose value depends on where an argument begins in its storage
// (the driver guards an input's storage offset only for graphs with one).
TEST(OpRegistryTest, OpsThatReadStorageOffsetsAreTagged) {
  const OpRegistry& r = OpRegistry::Global();
  for (const char* t :
       {"aten.as_strided.default", "aten.as_strided_.default",
        "aten.as_strided_scatter.default", "aten.set_.source_Tensor",
        "aten.sym_storage_offset.default", "aten.view.dtype"}) {
    ASSERT_NE(r.Find(t), nullptr) << t;
    EXPECT_TRUE(r.Find(t)->HasTag(OpTag::kStorageOffset)) << t;
  }
  for (const char* t :
       {"aten.view.default", "aten.slice.Tensor", "aten.slice_scatter.default",
        "aten.sym_size.int", "aten.t.default"}) {
    const OpDef* op = r.Find(t);
    ASSERT_NE(op, nullptr) << t;
    EXPECT_FALSE(op->HasTag(OpTag::kStorageOffset)) << t;
  }
}

TEST(OpsTest, RemainingKernelsAgainstHandValues) {
  Tensor x = T({2, 3}, {1, 5, 2, 8, 0, 8});
  // Comparisons, Tensor and Scalar overloads, with broadcasting.
  Tensor row = T({3}, {1, 0, 8});
  EXPECT_THAT(Elements(RunT("aten.eq.Tensor", {V(x), V(row)})),
              ElementsAre(1, 0, 0, 0, 1, 1));
  EXPECT_THAT(Elements(RunT("aten.ne.Scalar", {V(x), Value::Int(8)})),
              ElementsAre(1, 1, 1, 0, 1, 0));
  EXPECT_THAT(Elements(RunT("aten.le.Tensor", {V(x), V(row)})),
              ElementsAre(1, 0, 1, 0, 1, 1));
  EXPECT_THAT(Elements(RunT("aten.gt.Scalar", {V(x), Value::Float(4.5)})),
              ElementsAre(0, 1, 0, 1, 0, 1));
  EXPECT_THAT(Elements(RunT("aten.ge.Tensor", {V(x), V(row)})),
              ElementsAre(1, 1, 0, 1, 1, 1));
  // min.dim: first minimum's index; all() over everything.
  Value mn = *RunOp("aten.min.dim", {V(x), Value::Int(-1), Value::Bool(true)});
  EXPECT_THAT(mn.list[0].tensor.sizes(), ElementsAre(2, 1));
  EXPECT_THAT(Elements(mn.list[0].tensor), ElementsAre(1, 0));
  EXPECT_THAT(Elements(mn.list[1].tensor), ElementsAre(0, 1));
  EXPECT_EQ(RunT("aten.all.default", {V(x)}).GetDouble({}), 0);
  EXPECT_EQ(RunT("aten.all.default", {V(row)}).GetDouble({}), 0);
  EXPECT_EQ(RunT("aten.all.default", {V(*Tensor::Empty({0}, DType::kFloat32))})
                .GetDouble({}),
            1);
  EXPECT_EQ(RunT("aten.any.default", {V(*Tensor::Empty({0}, DType::kFloat32))})
                .GetDouble({}),
            0);
  EXPECT_EQ(RunT("aten.prod.default", {V(T({3}, {-2, 3, 4}, DType::kInt8))})
                .GetDouble({}),
            -24);
  Tensor md =
      RunT("aten.mean.dim",
           {V(T({2}, {1, 2}, DType::kInt64)), Value::List({Value::Int(0)})},
           {{"dtype", Value::OfDType(DType::kFloat64)}});
  EXPECT_EQ(md.dtype(), DType::kFloat64);
  EXPECT_EQ(md.GetDouble({}), 1.5);
  EXPECT_THAT(Elements(RunT("aten.scatter.value_reduce",
                            {V(T({3}, {1, 1, 1})), Value::Int(0),
                             V(T({2}, {2, 2}, DType::kInt64)), Value::Int(3)},
                            {{"reduce", Value::String("add")}})),
              ElementsAre(1, 1, 7));
  // log_softmax of a constant row: -log(n).
  EXPECT_FLOAT_EQ(
      RunT("aten._log_softmax.default",
           {V(T({4}, {2, 2, 2, 2})), Value::Int(0), Value::Bool(false)})
          .GetDouble({1}),
      -std::log(4.0));
  // Views that share storage.
  Tensor a = RunT("aten.alias.default", {V(x)});
  EXPECT_EQ(a.storage(), x.storage());
  Tensor uv = RunT("aten._unsafe_view.default",
                   {V(x), Value::List({Value::Int(3), Value::Int(2)})});
  EXPECT_THAT(Elements(uv), ElementsAre(1, 5, 2, 8, 0, 8));
  Tensor tr =
      RunT("aten.transpose_.default", {V(x), Value::Int(0), Value::Int(-1)});
  EXPECT_EQ(tr.ToString(), "f32[3, 2][1, 3]cpu");
  Tensor as = RunT("aten.as_strided_.default",
                   {V(x), Value::List({Value::Int(2)}),
                    Value::List({Value::Int(3)}), Value::Int(1)});
  EXPECT_THAT(Elements(as), ElementsAre(5, 0));
  Tensor other = T({2}, {7, 9});
  Tensor set = RunT("aten.set_.source_Tensor", {V(x), V(other)});
  EXPECT_EQ(set.storage(), other.storage());
  EXPECT_THAT(
      RunError("aten.set_.source_Tensor",
               {V(x), V(T({1}, {1}, DType::kInt64))}),
      HasSubstr("Could not set tensor of type Float to a tensor of type Long"));
  EXPECT_EQ(RunT("aten.empty_like.default", {V(Transposed({1, 2, 3, 4, 5, 6}))})
                .ToString(),
            "f32[2, 3][1, 2]cpu");
  // Scalars: item(), sizes, assertions.
  EXPECT_EQ(
      *RunOp("aten._local_scalar_dense.default", {V(T({}, {2.5}))})->AsDouble(),
      2.5);
  EXPECT_EQ(*RunOp("aten._local_scalar_dense.default",
                   {V(T({1}, {7}, DType::kInt32))})
                 ->AsInt(),
            7);
  EXPECT_THAT(
      RunError("aten._local_scalar_dense.default", {V(row)}),
      HasSubstr(
          "a Tensor with more than one element cannot be converted to Scalar"));
  EXPECT_EQ(*RunOp("aten.sym_size.int", {V(x), Value::Int(-1)})->AsInt(), 3);
  EXPECT_OK(RunOp("aten._assert_scalar.default",
                  {Value::Bool(true), Value::String("never")}));
  EXPECT_EQ(RunError("aten._assert_scalar.default",
                     {Value::Bool(false), Value::String("u0 >= 0 failed")}),
            "aten._assert_scalar.default: u0 >= 0 failed");
}

}  // namespace
}  // namespace lathe::ir

namespace lathe::ir {
namespace {

// As PyTorch's torch.ops binding: a Python number stands for a Tensor
// argument only for add/sub/mul/div (and aliases), true_divide,
// floor_divide, the copies, and prims; any other op refuses it (found by
// lathec_fuzzer: sum.dim_IntList of a SymInt crashed the kernel).
TEST(BindArgumentsTest, NumbersStandForTensorsOnlyWherePyTorchAllows) {
  Tensor x = *Tensor::Empty({3}, DType::kInt32);
  EXPECT_OK(RunOp("aten.add.Tensor", {Value::Int(2), Value::OfTensor(x)}));
  EXPECT_OK(RunOp("aten.mul.Tensor", {Value::OfTensor(x), Value::Float(2.5)}));
  EXPECT_EQ(RunOp("aten.sum.dim_IntList",
                  {Value::Int(3), Value::List({Value::Int(0)})})
                .status()
                .message(),
            "aten.sum.dim_IntList: argument 'self' expects Tensor, got 3");
  EXPECT_EQ(RunOp("aten.maximum.default", {Value::OfTensor(x), Value::Int(2)})
                .status()
                .message(),
            "aten.maximum.default: argument 'other' expects Tensor, got 2");
}

}  // namespace
}  // namespace lathe::ir
