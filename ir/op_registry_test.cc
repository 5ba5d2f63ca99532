// Reference kernels against hand-derived values. Every call also runs the
// op's meta function on the arguments' metadata and checks that it predicts
// the kernel's sizes, strides and dtype.

#include "ir/op_registry.h"

#include <cmath>
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

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor T(std::vector<int64_t> sizes, std::vector<double> values,
         DType dtype = DType::kFloat32) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  size_t k = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    t.SetDouble(i, values.at(k++));
  });
  EXPECT_EQ(k, values.size());
  return t;
}

// The elements of `t` in row-major order.
std::vector<double> Elements(const Tensor& t) {
  std::vector<double> out;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    out.push_back(t.GetDouble(i));
  });
  return out;
}

Tensor RunT(const std::string& target, std::vector<Value> args,
            std::vector<std::pair<std::string, Value>> kwargs = {}) {
  absl::StatusOr<Value> v = RunOp(target, std::move(args), std::move(kwargs));
  EXPECT_TRUE(v.ok()) << target << ": " << v.status();
  return v.ok() ? v->tensor : Tensor();
}

std::string RunError(const std::string& target, std::vector<Value> args,
                     std::vector<std::pair<std::string, Value>> kwargs = {}) {
  absl::StatusOr<Value> v = RunOp(target, std::move(args), std::move(kwargs));
  EXPECT_FALSE(v.ok()) << target << " unexpectedly succeeded";
  return std::string(v.status().message());
}

Value V(const Tensor& t) { return Value::OfTensor(t); }

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
  ASSERT_TRUE(RunOp("aten.addcdiv_.default",
                    {V(p), V(T({2}, {1, 2})), V(T({2}, {4, 4}))},
                    {{"value", Value::Float(-1)}})
                  .ok());
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
  ASSERT_TRUE(RunOp("aten.lerp_.Scalar", {V(p), V(e), Value::Float(1)}).ok());
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
  ASSERT_TRUE(RunOp("aten.fill_.Scalar", {V(t), Value::Float(2.5)}).ok());
  EXPECT_THAT(Elements(t), ElementsAre(2.5, 2.5, 2.5, 2.5, 2.5, 2.5));
  ASSERT_TRUE(RunOp("aten.zero_.default", {V(t)}).ok());
  EXPECT_THAT(Elements(t), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(IndexTest, GatherScatterIndexSelectEmbedding) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = T({2, 2}, {2, 0, 1, -1}, DType::kInt64);
  EXPECT_THAT(
      Elements(RunT("aten.gather.default", {V(x), Value::Int(1), V(idx)})),
      ElementsAre(3, 1, 5, 6));
  EXPECT_EQ(RunError("aten.gather.default",
                     {V(x), Value::Int(1), V(T({1, 1}, {3}, DType::kInt64))}),
            "aten.gather.default: index 3 is out of bounds for dimension 1 "
            "with size 3");
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
  EXPECT_THAT(RunError("aten.index.Tensor",
                       {V(x), Value::List({V(T({1}, {1}, DType::kBool))})}),
              HasSubstr("boolean mask"));
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
  ASSERT_TRUE(RunOp("aten.index_put_.default",
                    {V(z), Value::List({V(at)}), V(T({1}, {9}))})
                  .ok());
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

}  // namespace
}  // namespace lathe::ir
