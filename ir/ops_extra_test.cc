// The non-core ops (ops_extra.cc and the pointwise additions): prims,
// new_*, masked_fill, tril/triu, floor_divide, nan_to_num, fmax/fmin,
// logsumexp, std, linalg_vector_norm, cumprod, index_add, the Scalar where
// overloads, the derived in-place twins, and scatter's index shape check
// (their meta functions on symbolic shapes and the in-place twins' pairing
// and schemas are ops_extra_meta_test.cc's).
// Expected values are hand-derived or captured from PyTorch 2.15 on CPU on
// this machine (marked "torch:"; lathe does not depend on torch). Every
// RunOp call also checks that the op's meta function predicts the kernel's
// result (dtype, sizes, strides, storage offset).

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/shape_prop.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

Value I(int64_t v) { return Value::Int(v); }
Value F(double v) { return Value::Float(v); }
// Element-wise equality where NaN equals NaN.
void ExpectSame(const std::vector<double>& got, const std::vector<double>& want,
                double tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << "element " << k << ": " << got[k];
    } else if (std::isinf(want[k])) {
      EXPECT_EQ(got[k], want[k]) << "element " << k;
    } else {
      EXPECT_NEAR(got[k], want[k], tol) << "element " << k;
    }
  }
}

// arange(6.).reshape(3, 2).t(): [[0, 2, 4], [1, 3, 5]] with strides [1, 2].
Tensor Transposed(DType dtype = DType::kFloat32) {
  Tensor base = T({3, 2}, {0, 1, 2, 3, 4, 5}, dtype);
  return *base.AsStrided({2, 3}, {1, 2}, 0);
}

// ---- Registry ---------------------------------------------------------------

TEST(ExtraOpsTest, PrimsRegisteredUnderTheirNamespace) {
  // torch: str(torch.ops.prims.<op>.default._schema).
  const OpDef* cet =
      OpRegistry::Global().Find("prims.convert_element_type.default");
  ASSERT_NE(cet, nullptr);
  EXPECT_EQ(cet->schema.ToString(),
            "prims::convert_element_type(Tensor a, ScalarType dtype) -> "
            "Tensor");
  const OpDef* iota = OpRegistry::Global().Find("prims.iota.default");
  ASSERT_NE(iota, nullptr);
  EXPECT_EQ(iota->schema.ToString(),
            "prims::iota(SymInt length, *, SymInt start, SymInt step, "
            "ScalarType dtype, Device device, bool requires_grad) -> Tensor");
  EXPECT_EQ(OpRegistry::Global().Find("aten.convert_element_type.default"),
            nullptr);
}

// ---- prims ------------------------------------------------------------------

TEST(ExtraOpsTest, ConvertElementType) {
  // torch: a transposed input keeps its layout; floats truncate to ints;
  // anything nonzero (NaN too) is true.
  Tensor t = RunT("prims.convert_element_type.default",
                  {V(Transposed()), Value::OfDType(DType::kInt32)});
  EXPECT_EQ(t.dtype(), DType::kInt32);
  EXPECT_THAT(t.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(t), ElementsAre(0, 2, 4, 1, 3, 5));
  Tensor i = RunT("prims.convert_element_type.default",
                  {V(T({2}, {-1.7, 2.5})), Value::OfDType(DType::kInt64)});
  EXPECT_THAT(Elements(i), ElementsAre(-1, 2));
  Tensor b = RunT("prims.convert_element_type.default",
                  {V(T({3}, {-1.7, 0, NAN})), Value::OfDType(DType::kBool)});
  EXPECT_THAT(Elements(b), ElementsAre(1, 0, 1));
  // torch: an expanded input gives a contiguous result.
  Tensor e = *T({3, 1}, {1, 2, 3}).AsStrided({3, 4}, {1, 0}, 0);
  Tensor d = RunT("prims.convert_element_type.default",
                  {V(e), Value::OfDType(DType::kFloat64)});
  EXPECT_THAT(d.strides(), ElementsAre(4, 1));
}

// prims.fma (Inductor's prim, in AOT graphs of optimizers): (a * b) + c
// with two roundings, promoting as mul and add do (values hand-derived).
TEST(ExtraOpsTest, Fma) {
  Tensor t = RunT(
      "prims.fma.default",
      {V(T({2, 2}, {1, 2, 3, 4})), Value::Float(0.5), V(T({2}, {10, 20}))});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(t), ElementsAre(10.5, 21, 11.5, 22));
  // f16 rounds the product first: 2049 * 1 = 2048 in f16, + 1 = 2049 -> 2048.
  Tensor h = RunT("prims.fma.default", {V(T({1}, {2049}, DType::kFloat16)),
                                        V(T({1}, {1}, DType::kFloat16)),
                                        V(T({1}, {1}, DType::kFloat16))});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_THAT(Elements(h), ElementsAre(2048));
  // An int tensor times a float number is float (wrapped-number promotion).
  Tensor i = RunT("prims.fma.default", {V(T({2}, {1, 3}, DType::kInt64)),
                                        Value::Float(0.5), Value::Int(1)});
  EXPECT_EQ(i.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(i), ElementsAre(1.5, 2.5));
  EXPECT_THAT(
      RunError("prims.fma.default",
               {V(T({2}, {1, 2})), V(T({3}, {1, 2, 3})), Value::Int(0)}),
      HasSubstr("prims.fma.default: "));
}

TEST(ExtraOpsTest, Iota) {
  std::vector<std::pair<std::string, Value>> kw = {
      {"start", I(2)},
      {"step", I(3)},
      {"dtype", Value::OfDType(DType::kInt64)},
      {"device", Value::OfDevice(Device::Cpu())},
      {"requires_grad", Value::Bool(false)}};
  Tensor t = RunT("prims.iota.default", {I(4)}, kw);
  EXPECT_THAT(Elements(t), ElementsAre(2, 5, 8, 11));  // torch
  // torch's messages.
  auto with = [&](const std::string& key, Value v) {
    auto k = kw;
    for (auto& [name, value] : k) {
      if (name == key) value = v;
    }
    return k;
  };
  EXPECT_EQ(RunError("prims.iota.default", {I(3)},
                     with("dtype", Value::OfDType(DType::kFloat32))),
            "prims.iota.default: prims.iota only supports integer dtypes");
  EXPECT_EQ(RunError("prims.iota.default", {I(3)}, with("step", I(0))),
            "prims.iota.default: step must be nonzero");
  EXPECT_EQ(RunError("prims.iota.default", {I(-1)}, kw),
            "prims.iota.default: Trying to create tensor with negative "
            "dimension -1: [-1]");
}

// ---- Copies and factories ---------------------------------------------------

TEST(ExtraOpsTest, LiftFreshCopyAndNewFactories) {
  // torch: lift_fresh_copy of a transposed tensor is contiguous.
  Tensor l = RunT("aten.lift_fresh_copy.default", {V(Transposed())});
  EXPECT_THAT(l.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(l), ElementsAre(0, 2, 4, 1, 3, 5));
  Tensor i64 = T({2}, {1, 1}, DType::kInt64);
  // torch: new_full takes self's dtype and casts the fill value (1.5 -> 1).
  Tensor f = RunT("aten.new_full.default", {V(i64), Ints({2}), F(1.5)});
  EXPECT_EQ(f.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(f), ElementsAre(1, 1));
  Tensor o = RunT("aten.new_ones.default", {V(Transposed()), Ints({2, 2})},
                  {{"dtype", Value::OfDType(DType::kInt32)}});
  EXPECT_EQ(o.dtype(), DType::kInt32);
  EXPECT_THAT(o.strides(), ElementsAre(2, 1));
  EXPECT_THAT(Elements(o), ElementsAre(1, 1, 1, 1));
  Tensor z = RunT("aten.new_zeros.default", {V(Transposed()), Ints({3})});
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(z), ElementsAre(0, 0, 0));
  Tensor e = RunT("aten.new_empty.default", {V(i64), Ints({0, 2})});
  EXPECT_EQ(e.dtype(), DType::kInt64);
  EXPECT_THAT(e.sizes(), ElementsAre(0, 2));
  Tensor s = RunT("aten.new_empty_strided.default",
                  {V(Transposed()), Ints({2, 3}), Ints({1, 2})});
  EXPECT_THAT(s.strides(), ElementsAre(1, 2));
}

// ---- masked_fill ------------------------------------------------------------

TEST(ExtraOpsTest, MaskedFill) {
  Tensor mask = T({1, 3}, {1, 0, 1}, DType::kBool);
  // torch: contiguous result, self's dtype.
  Tensor t =
      RunT("aten.masked_fill.Scalar", {V(Transposed()), V(mask), F(-1.5)});
  EXPECT_THAT(t.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(t), ElementsAre(-1.5, 2, -1.5, -1.5, 3, -1.5));
  // torch: self broadcasts with the mask.
  Tensor b =
      RunT("aten.masked_fill.Scalar",
           {V(T({3}, {0, 0, 0})), V(T({2, 1}, {1, 0}, DType::kBool)), I(2)});
  EXPECT_THAT(b.sizes(), ElementsAre(2, 3));
  EXPECT_THAT(Elements(b), ElementsAre(2, 2, 2, 0, 0, 0));
  // torch: 1.5 into int64 is 1.
  Tensor i = RunT("aten.masked_fill.Scalar",
                  {V(T({3}, {0, 0, 0}, DType::kInt64)),
                   V(T({3}, {1, 0, 1}, DType::kBool)), F(1.5)});
  EXPECT_THAT(Elements(i), ElementsAre(1, 0, 1));
  Tensor v = RunT("aten.masked_fill.Tensor",
                  {V(T({3}, {0, 0, 0}, DType::kInt64)),
                   V(T({3}, {1, 0, 1}, DType::kBool)), V(T({}, {2.5}))});
  EXPECT_THAT(Elements(v), ElementsAre(2, 0, 2));
  // torch: filling -0.0 over 0.0 writes the sign.
  Tensor z = T({3}, {0, 0, 0});
  RunT("aten.masked_fill_.Tensor",
       {V(z), V(T({3}, {1, 0, 1}, DType::kBool)), V(T({}, {-0.0}))});
  EXPECT_TRUE(std::signbit(z.GetDouble({0})));
  EXPECT_FALSE(std::signbit(z.GetDouble({1})));
  // In place: self keeps its storage and layout.
  Tensor x = Transposed();
  Tensor r = RunT("aten.masked_fill_.Scalar", {V(x), V(mask), I(7)});
  EXPECT_EQ(r.data_ptr(), x.data_ptr());
  EXPECT_THAT(Elements(x), ElementsAre(7, 2, 7, 7, 3, 7));
  // torch's messages.
  EXPECT_EQ(RunError("aten.masked_fill.Scalar",
                     {V(T({2}, {0, 0})), V(T({2}, {1, 1})), I(1)}),
            "aten.masked_fill.Scalar: masked_fill_ only supports boolean "
            "masks, but got mask with dtype float");
  EXPECT_EQ(
      RunError("aten.masked_fill.Scalar",
               {V(T({2}, {0, 0})), V(T({2}, {1, 1}, DType::kInt64)), I(1)}),
      "aten.masked_fill.Scalar: masked_fill_ only supports boolean "
      "masks, but got mask with dtype long int");
  EXPECT_EQ(RunError("aten.masked_fill.Tensor",
                     {V(T({2}, {0, 0})), V(T({2}, {1, 1}, DType::kBool)),
                      V(T({1}, {1}))}),
            "aten.masked_fill.Tensor: masked_fill_ only supports a "
            "0-dimensional value tensor, but got tensor with 1 dimension(s).");
  EXPECT_EQ(RunError("aten.masked_fill_.Scalar",
                     {V(T({3}, {0, 0, 0})), V(T({2, 1}, {1, 0}, DType::kBool)),
                      I(2)}),
            "aten.masked_fill_.Scalar: output with shape [3] doesn't match "
            "the broadcast shape [2, 3]");
}

// ---- tril / triu ------------------------------------------------------------

TEST(ExtraOpsTest, TrilTriu) {
  // torch: contiguous results.
  Tensor l = RunT("aten.tril.default", {V(Transposed())});
  EXPECT_THAT(l.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(l), ElementsAre(0, 0, 0, 1, 3, 0));
  Tensor u = RunT("aten.triu.default",
                  {V(T({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})), I(-1)});
  EXPECT_THAT(Elements(u), ElementsAre(1, 2, 3, 4, 5, 6, 0, 8, 9));
  Tensor batched = RunT("aten.tril.default",
                        {V(T({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})), I(0)});
  EXPECT_THAT(Elements(batched), ElementsAre(1, 0, 3, 4, 5, 0, 7, 8));
  // torch: ones(3, 3).t().triu_(1), in place.
  Tensor ones = T({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  Tensor x = *ones.AsStrided({3, 3}, {1, 3}, 0);
  RunT("aten.triu_.default", {V(x), I(1)});
  EXPECT_THAT(x.strides(), ElementsAre(1, 3));
  EXPECT_THAT(Elements(x), ElementsAre(0, 1, 1, 0, 0, 1, 0, 0, 0));
  EXPECT_EQ(RunError("aten.tril.default", {V(T({3}, {1, 2, 3}))}),
            "aten.tril.default: tril: input tensor must have at least 2 "
            "dimensions");
}

// ---- Pointwise additions
// -----------------------------------------------------

TEST(ExtraOpsTest, FloorAndTrueDivide) {
  // torch: floor division rounds toward -inf; ints stay ints.
  Tensor i = RunT(
      "aten.floor_divide.default",
      {V(T({2}, {7, -7}, DType::kInt64)), V(T({2}, {2, 2}, DType::kInt64))});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(i), ElementsAre(3, -4));
  Tensor f = RunT("aten.floor_divide.Scalar", {V(T({2}, {7, -7})), I(2)});
  EXPECT_THAT(Elements(f), ElementsAre(3, -4));
  Tensor t = RunT(
      "aten.true_divide.Tensor",
      {V(T({2}, {7, -7}, DType::kInt64)), V(T({2}, {2, 2}, DType::kInt64))});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(t), ElementsAre(3.5, -3.5));
  Tensor s = RunT("aten.true_divide.Scalar", {V(T({1}, {1})), I(4)});
  EXPECT_THAT(Elements(s), ElementsAre(0.25));
  EXPECT_EQ(
      RunError("aten.floor_divide.default",
               {V(T({1}, {1}, DType::kBool)), V(T({1}, {1}, DType::kBool))}),
      "aten.floor_divide.default: \"div_floor_cpu\" not implemented for "
      "'Bool'");
  EXPECT_THAT(RunError("aten.floor_divide.Scalar",
                       {V(T({2}, {7, -7}, DType::kInt64)), I(0)}),
              HasSubstr("ZeroDivisionError"));
}

TEST(ExtraOpsTest, NanToNum) {
  // torch: NaN -> 0, +-inf -> the dtype's extremes.
  Tensor t =
      RunT("aten.nan_to_num.default", {V(T({4}, {NAN, kInf, -kInf, 1}))});
  ExpectSame(Elements(t),
             {0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1});
  Tensor h = RunT("aten.nan_to_num.default",
                  {V(T({4}, {NAN, kInf, -kInf, 1}, DType::kFloat16))});
  ExpectSame(Elements(h), {0, 65504, -65504, 1});
  Tensor a = RunT("aten.nan_to_num.default",
                  {V(T({4}, {NAN, kInf, -kInf, 1})), F(1), F(2), F(-3)});
  ExpectSame(Elements(a), {1, 2, -3, 1});
  // torch: layouts kept for floats (TensorIterator) and ints (clone).
  EXPECT_THAT(RunT("aten.nan_to_num.default", {V(Transposed())}).strides(),
              ElementsAre(1, 2));
  Tensor i = RunT("aten.nan_to_num.default", {V(Transposed(DType::kInt64))});
  EXPECT_THAT(i.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(i), ElementsAre(0, 2, 4, 1, 3, 5));
}

TEST(ExtraOpsTest, FmaxFminSquareExp2Isfinite) {
  // torch: a NaN loses to a number; two NaNs give NaN.
  Tensor a = T({3}, {NAN, 1, NAN}), b = T({3}, {2, NAN, NAN});
  ExpectSame(Elements(RunT("aten.fmax.default", {V(a), V(b)})), {2, 1, NAN});
  ExpectSame(Elements(RunT("aten.fmin.default", {V(a), V(b)})), {2, 1, NAN});
  Tensor p = RunT("aten.fmin.default",
                  {V(T({1}, {3}, DType::kInt64)), V(T({1}, {2.5}))});
  EXPECT_EQ(p.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(p), ElementsAre(2.5));
  Tensor bb = RunT("aten.fmax.default", {V(T({1}, {1}, DType::kBool)),
                                         V(T({1}, {0}, DType::kBool))});
  EXPECT_EQ(bb.dtype(), DType::kBool);
  EXPECT_THAT(Elements(bb), ElementsAre(1));
  // torch: square of bool is int64 (pow(self, 2)); int32 stays int32.
  Tensor sq = RunT("aten.square.default", {V(T({2}, {1, 0}, DType::kBool))});
  EXPECT_EQ(sq.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(sq), ElementsAre(1, 0));
  Tensor sq32 = RunT("aten.square.default", {V(T({1}, {3}, DType::kInt32))});
  EXPECT_EQ(sq32.dtype(), DType::kInt32);
  EXPECT_THAT(Elements(sq32), ElementsAre(9));
  Tensor e = RunT("aten.exp2.default", {V(T({2}, {3, -1}, DType::kInt64))});
  EXPECT_EQ(e.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(e), ElementsAre(8, 0.5));
  Tensor f = RunT("aten.isfinite.default", {V(T({3}, {NAN, kInf, 1}))});
  EXPECT_EQ(f.dtype(), DType::kBool);
  EXPECT_THAT(Elements(f), ElementsAre(0, 0, 1));
  Tensor fi = RunT("aten.isfinite.default", {V(Transposed(DType::kInt64))});
  EXPECT_THAT(fi.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(fi), ElementsAre(1, 1, 1, 1, 1, 1));
}

TEST(ExtraOpsTest, WhereScalarOverloads) {
  Tensor cond = T({2}, {1, 0}, DType::kBool);
  // torch: two ints give int64, a float the default dtype, bools bool.
  Tensor i = RunT("aten.where.Scalar", {V(cond), I(1), I(0)});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(i), ElementsAre(1, 0));
  Tensor f = RunT("aten.where.Scalar", {V(cond), F(1.5), I(0)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(f), ElementsAre(1.5, 0));
  Tensor b = RunT("aten.where.Scalar",
                  {V(cond), Value::Bool(true), Value::Bool(false)});
  EXPECT_EQ(b.dtype(), DType::kBool);
  Tensor o = RunT("aten.where.ScalarOther",
                  {V(cond), V(T({2}, {1, 2}, DType::kInt32)), F(2.5)});
  EXPECT_EQ(o.dtype(), DType::kFloat32);
  EXPECT_THAT(Elements(o), ElementsAre(1, 2.5));
  Tensor s = RunT("aten.where.ScalarSelf",
                  {V(cond), I(7), V(T({2}, {1, 2}, DType::kInt32))});
  EXPECT_EQ(s.dtype(), DType::kInt32);
  EXPECT_THAT(Elements(s), ElementsAre(7, 2));
}

// ---- Reductions -------------------------------------------------------------

TEST(ExtraOpsTest, LogSumExp) {
  // torch: values; an infinite max counts as 0 in the shift.
  Tensor t = RunT("aten.logsumexp.default",
                  {V(T({2, 3}, {1, 2, 3, kInf, 0, 1})), Ints({1})});
  ExpectSame(Elements(t), {3.4076058864593506, kInf}, 1e-6);
  Tensor i = RunT(
      "aten.logsumexp.default",
      {V(T({1, 3}, {1, 2, 3}, DType::kInt64)), Ints({1}), Value::Bool(true)});
  EXPECT_EQ(i.dtype(), DType::kFloat32);
  EXPECT_THAT(i.sizes(), ElementsAre(1, 1));
  ExpectSame(Elements(i), {3.4076058864593506}, 1e-6);
  Tensor k = RunT("aten.logsumexp.default",
                  {V(Transposed()), Ints({0}), Value::Bool(true)});
  EXPECT_THAT(k.strides(), ElementsAre(3, 1));
  ExpectSame(Elements(k),
             {1.31326162815094, 3.3132617473602295, 5.31326150894165}, 1e-6);
  Tensor n =
      RunT("aten.logsumexp.default", {V(T({2}, {-kInf, -kInf})), Ints({0})});
  ExpectSame(Elements(n), {-kInf});
  Tensor e = RunT("aten.logsumexp.default", {V(T({0, 3}, {})), Ints({0})});
  ExpectSame(Elements(e), {-kInf, -kInf, -kInf});
  EXPECT_EQ(
      RunError("aten.logsumexp.default", {V(T({2}, {1, 2})), Ints({0, -1})}),
      "aten.logsumexp.default: dim 0 appears multiple times in the "
      "list of dims");
}

TEST(ExtraOpsTest, Std) {
  Tensor x = T({2, 3}, {1, 2, 4, 0, 0, 1});
  // torch values.
  ExpectSame(Elements(RunT("aten.std.correction", {V(x), Ints({1})},
                           {{"correction", I(0)}})),
             {1.2472190856933594, 0.4714045226573944}, 1e-6);
  Tensor d = RunT("aten.std.dim",
                  {V(x), Ints({1}), Value::Bool(true), Value::Bool(true)});
  EXPECT_THAT(d.sizes(), ElementsAre(2, 1));
  ExpectSame(Elements(d), {1.5275251865386963, 0.5773502588272095}, 1e-6);
  ExpectSame(Elements(RunT("aten.std.default", {V(x)})), {1.5055452585220337},
             1e-6);
  Tensor k = RunT("aten.std.correction", {V(Transposed()), Ints({0})},
                  {{"keepdim", Value::Bool(true)}});
  EXPECT_THAT(k.strides(), ElementsAre(3, 1));
  ExpectSame(Elements(k),
             {0.7071067690849304, 0.7071067690849304, 0.7071067690849304},
             1e-6);
  EXPECT_EQ(RunError("aten.std.correction", {V(T({2}, {1, 2}, DType::kInt64))}),
            "aten.std.correction: std and var only support floating point "
            "and complex dtypes");
}

TEST(ExtraOpsTest, LinalgVectorNorm) {
  Tensor x = T({2, 2}, {3, -4, 1, 1});
  const std::string norm = "aten.linalg_vector_norm.default";
  // torch values.
  ExpectSame(Elements(RunT(norm, {V(x), I(2), Ints({1})})),
             {5, 1.4142135381698608}, 1e-6);
  ExpectSame(Elements(RunT(norm, {V(x), F(kInf)})), {4});
  ExpectSame(Elements(RunT(norm, {V(x), F(-kInf), Ints({0})})), {1, 1});
  ExpectSame(
      Elements(RunT(norm, {V(T({2, 2}, {3, 0, 1, 1})), I(0), Ints({1})})),
      {1, 2});
  Tensor k = RunT(norm, {V(Transposed()), I(1), Ints({0}), Value::Bool(true)});
  EXPECT_THAT(k.strides(), ElementsAre(3, 1));
  ExpectSame(Elements(k), {1, 5, 9});
  ExpectSame(Elements(RunT(norm, {V(T({2}, {1, 2})), I(3)})),
             {2.0800838470458984}, 1e-6);
  ExpectSame(Elements(RunT(norm, {V(T({3}, {1, 2, 0})), I(-1)})), {0});
  Tensor h = RunT(norm, {V(T({2}, {1, 2}, DType::kFloat16))});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  ExpectSame(Elements(h), {2.236328125});
  Tensor d = RunT(norm, {V(T({2}, {1, 2}))},
                  {{"dtype", Value::OfDType(DType::kFloat64)}});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  ExpectSame(Elements(d), {2.23606797749979}, 1e-12);
  // torch: a 0-d input takes dim 0 or -1 (was an out-of-bounds read).
  ExpectSame(Elements(RunT(norm, {V(T({}, {-3})), F(kInf), Ints({0})})), {3});
  ExpectSame(Elements(RunT(norm, {V(T({}, {-3})), I(-1), Ints({-1})})), {3});
  // torch's messages (the missing space is PyTorch's).
  EXPECT_EQ(RunError(norm, {V(T({2}, {1, 2}, DType::kInt64))}),
            "aten.linalg_vector_norm.default: linalg.vector_norm: Expected a "
            "floating point or complex tensor as input. Got Long");
  EXPECT_EQ(RunError(norm, {V(T({0, 2}, {})), F(kInf), Ints({0})}),
            "aten.linalg_vector_norm.default: linalg.vector_norm cannot "
            "compute the inf norm on the dimension 0because this dimension is "
            "empty and the operation does not have an identity");
  EXPECT_EQ(RunError(norm, {V(T({2}, {1, 2}))},
                     {{"dtype", Value::OfDType(DType::kInt64)}}),
            "aten.linalg_vector_norm.default: linalg.vector_norm: dtype should "
            "be floating point or complex, but got Long");
}

TEST(ExtraOpsTest, CumProd) {
  // torch values.
  Tensor i = RunT("aten.cumprod.default",
                  {V(T({2, 3}, {1, 2, 3, 2, 2, 2}, DType::kInt64)), I(1)});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(i), ElementsAre(1, 2, 6, 2, 4, 8));
  Tensor b =
      RunT("aten.cumprod.default", {V(T({3}, {1, 1, 0}, DType::kBool)), I(0)});
  EXPECT_EQ(b.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(b), ElementsAre(1, 1, 0));
  Tensor t = RunT("aten.cumprod.default", {V(Transposed()), I(-1)});
  EXPECT_THAT(t.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(t), ElementsAre(0, 0, 0, 1, 3, 15));
  Tensor f =
      RunT("aten.cumprod.default", {V(T({2}, {1, 2}, DType::kInt64)), I(0)},
           {{"dtype", Value::OfDType(DType::kFloat32)}});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(RunError("aten.cumprod.default", {V(T({2}, {1, 2})), I(1)}),
              HasSubstr("Dimension out of range"));
}

// logcumsumexp: values by hand (log(1 + 1) = log 2, ...), the infinities
// and NaN as PyTorch's _log_add_exp_helper gives them, no overflow at 1000,
// a contiguous result, f32 computed in double, and PyTorch's refusals.
TEST(ExtraOpsTest, LogCumSumExp) {
  const std::string op = "aten.logcumsumexp.default";
  const double inf = std::numeric_limits<double>::infinity();
  Tensor t = RunT(op, {V(T({2, 3}, {0, 0, 0, 1000, 1000, -inf})), I(1)});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  // (f32 rounds 1000 + log 2 to within 3e-5.)
  ExpectSame(Elements(t),
             {0, std::log(2.0), std::log(3.0), 1000, 1000 + std::log(2.0),
              1000 + std::log(2.0)},
             1e-4);
  Tensor d0 = RunT(op, {V(T({2, 2}, {0, 1, 0, 1}, DType::kFloat64)), I(-2)});
  ExpectSame(Elements(d0), {0, 1, std::log(2.0), 1 + std::log(2.0)}, 1e-15);
  // -inf stays -inf, +inf then anything is +inf, NaN propagates.
  Tensor edge = RunT(
      op, {V(T({3, 3}, {-inf, -inf, 0, inf, inf, -inf, 1, NAN, 2})), I(1)});
  std::vector<double> e = Elements(edge);
  EXPECT_EQ(e[0], -inf);
  EXPECT_EQ(e[1], -inf);
  EXPECT_EQ(e[2], 0);
  EXPECT_EQ(e[3], inf);
  EXPECT_EQ(e[4], inf);
  EXPECT_EQ(e[5], inf);
  EXPECT_EQ(e[6], 1);
  EXPECT_TRUE(std::isnan(e[7]));
  EXPECT_TRUE(std::isnan(e[8]));
  // A 0-d input is itself.
  ExpectSame(Elements(RunT(op, {V(T({}, {-3})), I(0)})), {-3});
  // torch: a transposed input gives a contiguous result.
  Tensor x = RunT(op, {V(Transposed()), I(0)});
  EXPECT_THAT(x.strides(), ElementsAre(3, 1));
  EXPECT_EQ(RunError(op, {V(T({2}, {1, 2}, DType::kInt64)), I(0)}),
            "aten.logcumsumexp.default: \"logcumsumexp_out_cpu\" not "
            "implemented for 'Long'");
  EXPECT_THAT(RunError(op, {V(T({2}, {1, 2})), I(1)}),
              HasSubstr("Dimension out of range"));
}

// ---- index_add --------------------------------------------------------------

TEST(ExtraOpsTest, IndexAdd) {
  const std::string op = "aten.index_add.default";
  Tensor zeros = T({3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor index = T({3}, {0, 2, 0}, DType::kInt64);
  // torch: repeated indices accumulate; alpha scales.
  Tensor t =
      RunT(op, {V(zeros), I(0), V(index), V(T({3, 2}, {1, 1, 1, 1, 1, 1}))},
           {{"alpha", I(2)}});
  EXPECT_THAT(Elements(t), ElementsAre(4, 4, 0, 0, 2, 2));
  EXPECT_THAT(Elements(zeros), ElementsAre(0, 0, 0, 0, 0, 0));
  // torch: a transposed self gives a contiguous result.
  Tensor x = RunT(op, {V(Transposed()), I(1), V(T({2}, {0, 2}, DType::kInt64)),
                       V(T({2, 2}, {1, 1, 1, 1}))});
  EXPECT_THAT(x.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(x), ElementsAre(1, 2, 5, 2, 3, 6));
  // torch: alpha is cast to an integer self's dtype (1.5 -> 1).
  Tensor a =
      RunT(op,
           {V(T({2}, {0, 0}, DType::kInt64)), I(0),
            V(T({1}, {0}, DType::kInt64)), V(T({1}, {1}, DType::kInt64))},
           {{"alpha", F(1.5)}});
  EXPECT_THAT(Elements(a), ElementsAre(1, 0));
  // In place.
  Tensor self = T({3, 2}, {0, 0, 0, 0, 0, 0});
  RunT("aten.index_add_.default",
       {V(self), I(0), V(T({1}, {1}, DType::kInt64)), V(T({1, 2}, {5, 6}))});
  EXPECT_THAT(Elements(self), ElementsAre(0, 0, 5, 6, 0, 0));
  // torch's messages.
  Tensor one = T({1, 2}, {1, 1});
  EXPECT_EQ(RunError(op, {V(zeros), I(0), V(T({1}, {0})), V(one)}),
            "aten.index_add.default: index_add_(): Expected dtype "
            "int32/int64 for index but got: Float");
  EXPECT_EQ(RunError(op, {V(zeros), I(0), V(T({1}, {0}, DType::kInt64)),
                          V(T({1, 2}, {1, 1}, DType::kFloat64))}),
            "aten.index_add.default: index_add_(): self (Float) and source "
            "(Double) must have the same scalar type");
  EXPECT_EQ(
      RunError(op, {V(zeros), I(0), V(T({2}, {0, 1}, DType::kInt64)), V(one)}),
      "aten.index_add.default: index_add_(): Number of indices (2) "
      "should be equal to source.size(dim): (1), for dim: 0");
  EXPECT_EQ(
      RunError(op, {V(zeros), I(0), V(T({1}, {3}, DType::kInt64)), V(one)}),
      "aten.index_add.default: index 3 is out of bounds for dimension 0 "
      "with size 3");
  EXPECT_EQ(
      RunError(op, {V(zeros), I(0), V(T({1}, {-1}, DType::kInt64)), V(one)}),
      "aten.index_add.default: index -1 is out of bounds for dimension "
      "0 with size 3");
  EXPECT_EQ(
      RunError(op, {V(zeros), I(0), V(T({1, 1}, {0}, DType::kInt64)), V(one)}),
      "aten.index_add.default: index_add_(): Index is supposed to be a "
      "vector, but got dim: 2 with type: Long and size: [1, 1]");
  EXPECT_EQ(RunError(op, {V(zeros), I(0), V(T({1}, {0}, DType::kInt64)),
                          V(T({1, 3}, {1, 1, 1}))}),
            "aten.index_add.default: source tensor shape must match self "
            "tensor shape, excluding the specified dimension. Got self.shape "
            "= [3, 2] source.shape = [1, 3]");
}

// ---- scatter's index shape check --------------------------------------------

TEST(ExtraOpsTest, ScatterRefusesAnIndexLargerThanSelf) {
  Tensor self = T({2, 2}, {0, 0, 0, 0});
  Tensor index = T({2, 3}, {0, 0, 0, 0, 0, 0}, DType::kInt64);
  // torch's messages; before the check this wrote out of bounds.
  EXPECT_EQ(RunError("aten.scatter.src", {V(self), I(0), V(index),
                                          V(T({2, 3}, {1, 1, 1, 1, 1, 1}))}),
            "aten.scatter.src: Expected index [2, 3] to be no larger than self "
            "[2, 2] apart from dimension 0 and to be no larger size than src "
            "[2, 3]");
  EXPECT_EQ(RunError("aten.scatter.value", {V(self), I(0), V(index), F(1)}),
            "aten.scatter.value: Expected index [2, 3] to be no larger than "
            "self [2, 2] apart from dimension 0");
  EXPECT_EQ(RunError("aten.scatter.src",
                     {V(self), I(0), V(T({1, 2}, {0, 0}, DType::kInt64)),
                      V(T({1, 1}, {1}))}),
            "aten.scatter.src: Expected index [1, 2] to be no larger than self "
            "[2, 2] apart from dimension 0 and to be no larger size than src "
            "[1, 1]");
  // Larger than self along `dim` is fine (it is src that must fit).
  Tensor ok = RunT("aten.scatter.src",
                   {V(self), I(0), V(T({3, 1}, {1, 0, 1}, DType::kInt64)),
                    V(T({3, 1}, {1, 2, 3}))});
  EXPECT_THAT(Elements(ok), ElementsAre(2, 0, 3, 0));
}

// ---- What the differential run against torch turned up -------------------

// arange(6.) as [3, 1, 2] with strides [2, 1, 1]: dense, with a size-1 dim
// whose stride differs from the contiguous one.
Tensor DenseOddStride(DType dtype = DType::kFloat32) {
  Tensor base = T({6}, {0, 1, 2, 3, 4, 5}, dtype);
  return *base.AsStrided({3, 1, 2}, {2, 1, 1}, 0);
}

TEST(ExtraOpsTest, WrappedNumbersRuleOutTensorIteratorsFastSetup) {
  // torch: a Scalar operand is a wrapped 0-d tensor, so the result's dims
  // follow the input's strides ([2, 1, 1]); a Tensor operand of the same
  // layout, or a Scalar that is a kernel parameter (pow's exponent,
  // clamp's bound), keeps the fast (contiguous) setup: [2, 2, 1].
  Tensor x = DenseOddStride();
  EXPECT_THAT(RunT("aten.add.Scalar", {V(x), I(1)}).strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.eq.Scalar", {V(x), I(1)}).strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.floor_divide.Scalar", {V(x), I(2)}).strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.where.ScalarOther",
                   {V(RunT("aten.gt.Scalar", {V(x), I(2)})), V(x), F(0.5)})
                  .strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.add.Tensor", {V(x), V(DenseOddStride())}).strides(),
              ElementsAre(2, 2, 1));
  EXPECT_THAT(RunT("aten.pow.Tensor_Scalar", {V(x), I(2)}).strides(),
              ElementsAre(2, 2, 1));
  EXPECT_THAT(RunT("aten.clamp.default", {V(x), I(0)}).strides(),
              ElementsAre(2, 2, 1));
  // torch: isinf / isfinite of integers are zeros_like / ones_like
  // (empty_like's layout), isnan is self != self.
  Tensor xi = DenseOddStride(DType::kInt64);
  EXPECT_THAT(RunT("aten.isinf.default", {V(xi)}).strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.isfinite.default", {V(xi)}).strides(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(RunT("aten.isnan.default", {V(xi)}).strides(),
              ElementsAre(2, 2, 1));
  // torch: nan_to_num writes into empty_like(self).
  EXPECT_THAT(RunT("aten.nan_to_num.default", {V(x)}).strides(),
              ElementsAre(2, 1, 1));
}

TEST(ExtraOpsTest, PointwiseEdgeCasesMatchTorch) {
  // torch: sign(NaN) is 0; a Scalar exponent of 0.5 is sqrt (NaN for -inf),
  // a Tensor one is pow (inf).
  ExpectSame(Elements(RunT("aten.sign.default", {V(T({2}, {NAN, -2}))})),
             {0, -1});
  ExpectSame(
      Elements(RunT("aten.pow.Tensor_Scalar", {V(T({2}, {-kInf, 4})), F(0.5)})),
      {NAN, 2});
  ExpectSame(Elements(RunT("aten.pow.Tensor_Tensor",
                           {V(T({1}, {-kInf})), V(T({1}, {0.5}))})),
             {kInf});
  ExpectSame(
      Elements(RunT("aten.pow.Tensor_Scalar", {V(T({1}, {-0.0})), F(-0.5)})),
      {-kInf});
  // torch's refusals of bool (and integer) inputs.
  Tensor b = T({1}, {1}, DType::kBool);
  EXPECT_EQ(RunError("aten.neg.default", {V(b)}),
            "aten.neg.default: Negation, the `-` operator, on a bool tensor is "
            "not supported. If you are trying to invert a mask, use the `~` "
            "or `logical_not()` operator instead.");
  EXPECT_EQ(RunError("aten.abs.default", {V(b)}),
            "aten.abs.default: \"abs_cpu\" not implemented for 'Bool'");
  EXPECT_EQ(RunError("aten.relu.default", {V(b)}),
            "aten.relu.default: Boolean inputs not supported for relu");
  EXPECT_EQ(RunError("aten.sub.Scalar", {V(b), I(1)}),
            "aten.sub.Scalar: Subtraction, the `-` operator, with a bool "
            "tensor is not supported. If you are trying to invert a mask, use "
            "the `~` or `logical_not()` operator instead.");
  EXPECT_EQ(RunError("aten.sub.Tensor", {V(b), V(b)}),
            "aten.sub.Tensor: Subtraction, the `-` operator, with two bool "
            "tensors is not supported. Use the `^` or `logical_xor()` "
            "operator instead.");
  EXPECT_EQ(RunError("aten.remainder.Tensor", {V(b), V(b)}),
            "aten.remainder.Tensor: \"remainder_cpu\" not implemented for "
            "'Bool'");
  EXPECT_EQ(RunError("aten.div.Tensor_mode", {V(b), V(b)},
                     {{"rounding_mode", Value::String("trunc")}}),
            "aten.div.Tensor_mode: \"div_trunc_cpu\" not implemented for "
            "'Bool'");
  EXPECT_EQ(RunError("aten.gelu.default", {V(T({1}, {1}, DType::kInt64))}),
            "aten.gelu.default: \"GeluKernelImpl\" not implemented for "
            "'Long'");
  // torch: masked_fill's value is converted with an overflow check (a
  // negative integer wraps into uint8, a negative double does not).
  Tensor mask = T({1}, {1}, DType::kBool);
  EXPECT_EQ(RunError("aten.masked_fill.Scalar",
                     {V(T({1}, {0}, DType::kInt32)), V(mask), F(kInf)}),
            "aten.masked_fill.Scalar: value cannot be converted to type int "
            "without overflow");
  EXPECT_THAT(Elements(RunT("aten.masked_fill.Scalar",
                            {V(T({1}, {0}, DType::kUInt8)), V(mask), I(-1)})),
              ElementsAre(255));
  EXPECT_EQ(RunError("aten.masked_fill.Tensor",
                     {V(T({1}, {0}, DType::kUInt8)), V(mask),
                      V(T({}, {-1}, DType::kFloat64))}),
            "aten.masked_fill.Tensor: value cannot be converted to type "
            "uint8_t without overflow");
  EXPECT_EQ(RunError("aten.masked_fill.Scalar",
                     {V(T({1}, {0}, DType::kFloat16)), V(mask), F(1e10)}),
            "aten.masked_fill.Scalar: value cannot be converted to type "
            "c10::Half without overflow");
}

TEST(ExtraOpsTest, ReductionAndIndexEdgeCasesMatchTorch) {
  // torch: logsumexp over dim=[] without keepdim trips over its own max.
  EXPECT_EQ(RunError("aten.logsumexp.default",
                     {V(T({2, 2}, {1, 2, 3, 4})), Ints({})}),
            "aten.logsumexp.default: output with shape [] doesn't match the "
            "broadcast shape [1, 1]");
  Tensor all = RunT("aten.logsumexp.default",
                    {V(T({2}, {0, 0})), Ints({}), Value::Bool(true)});
  ExpectSame(Elements(all), {std::log(2.0)}, 1e-6);
  // torch: the norm names the dim as given.
  EXPECT_EQ(RunError("aten.linalg_vector_norm.default",
                     {V(T({0, 3}, {})), F(-kInf), Ints({-2, 1})}),
            "aten.linalg_vector_norm.default: linalg.vector_norm cannot "
            "compute the -inf norm on the dimension -2because this dimension "
            "is empty and the operation does not have an identity");
  // torch: a 1-D self words an index error differently; an empty
  // multi-dimensional self takes nothing.
  EXPECT_EQ(RunError("aten.index_add.default",
                     {V(T({2}, {0, 0})), I(0), V(T({1}, {2}, DType::kInt64)),
                      V(T({1}, {1}))}),
            "aten.index_add.default: index out of range in self");
  Tensor empty = RunT("aten.index_add.default",
                      {V(T({1, 0}, {})), I(1), V(T({2}, {0, 0}, DType::kInt64)),
                       V(T({1, 2}, {1, 1}))});
  EXPECT_THAT(empty.sizes(), ElementsAre(1, 0));
  // torch: cumprod_ computes in self's dtype: int32 stays int32, a bool self
  // is refused.
  Tensor i32 = T({3}, {2, 3, 4}, DType::kInt32);
  RunT("aten.cumprod_.default", {V(i32), I(0)});
  EXPECT_THAT(Elements(i32), ElementsAre(2, 6, 24));
  EXPECT_EQ(RunError("aten.cumprod_.default",
                     {V(T({2}, {1, 1}, DType::kBool)), I(0)}),
            "aten.cumprod_.default: \"cumprod_out_cpu\" not implemented for "
            "'Bool'");
}

TEST(ExtraOpsTest, InplaceTwinsCheckInPyTorchsOrder) {
  // torch: the op's own argument check comes before the overlap check...
  Tensor b = *T({3, 1}, {1, 0, 1}, DType::kBool).AsStrided({3, 2}, {1, 0}, 0);
  EXPECT_THAT(RunError("aten.neg_.default", {V(b)}), HasSubstr("Negation"));
  // ...the result dtype before data errors (ZeroDivisionError)...
  EXPECT_EQ(
      RunError("aten.div_.Tensor_mode",
               {V(T({1}, {1}, DType::kBool)), V(T({1}, {0}, DType::kInt64))},
               {{"rounding_mode", Value::String("trunc")}}),
      "aten.div_.Tensor_mode: result type Long can't be cast to the "
      "desired output type Bool");
  // ...and the Scalar clamp family names the output type as TypeMeta does.
  EXPECT_EQ(RunError("aten.clamp_min_.default",
                     {V(T({2}, {1, 2}, DType::kInt32)), F(0.5)}),
            "aten.clamp_min_.default: result type Float can't be cast to the "
            "desired output type int");
  EXPECT_EQ(RunError("aten.clamp_.default",
                     {V(T({2}, {1, 2}, DType::kInt64)), F(0.5)}),
            "aten.clamp_.default: result type Float can't be cast to the "
            "desired output type long int");
  // torch: masked_fill_ and tril_ write an overlapping self, only where
  // they change it (the shared element takes the written value).
  Tensor base = T({1, 2}, {0, 0});
  Tensor e = *base.AsStrided({3, 2}, {0, 1}, 0);
  RunT("aten.masked_fill_.Scalar",
       {V(e), V(T({3, 2}, {1, 0, 0, 0, 0, 0}, DType::kBool)), F(5)});
  EXPECT_THAT(Elements(base), ElementsAre(5, 0));
  Tensor one = T({1, 1}, {2.5});
  RunT("aten.tril_.default", {V(*one.AsStrided({4, 1}, {0, 1}, 0)), I(-1)});
  EXPECT_THAT(Elements(one), ElementsAre(0));
}

TEST(ExtraOpsTest, MixedDtypeInputsAreConvertedBeforeTheLayout) {
  // torch: an int32 input of an int64 op is first converted with .to()
  // (made dense), so the int64 input's strides break the tie: [4, 1, 4].
  Tensor xs = *Tensor::Empty({81}, DType::kInt32);
  Tensor x = *xs.AsStrided({1, 4, 1}, {54, 6, 2}, 1);
  Tensor y = *T({4}, {1, 2, 3, 4}, DType::kInt64).AsStrided({4, 1}, {1, 4}, 0);
  ForEachIndex(x.sizes(),
               [&](absl::Span<const int64_t> i) { x.SetDouble(i, 1); });
  EXPECT_THAT(RunT("aten.fmax.default", {V(x), V(y)}).strides(),
              ElementsAre(4, 1, 4));
  EXPECT_THAT(RunT("aten.add.Tensor", {V(x), V(y)}).strides(),
              ElementsAre(4, 1, 4));
  // The same with one dtype keeps x's order: [4, 1, 1].
  Tensor x64 =
      *Tensor::Empty({81}, DType::kInt64)->AsStrided({1, 4, 1}, {54, 6, 2}, 1);
  ForEachIndex(x64.sizes(),
               [&](absl::Span<const int64_t> i) { x64.SetDouble(i, 1); });
  EXPECT_THAT(RunT("aten.add.Tensor", {V(x64), V(y)}).strides(),
              ElementsAre(4, 1, 1));
}

TEST(ExtraOpsTest, DerivedTwinsOfFormerlyHandWrittenOps) {
  // torch: add_ now refuses an overlapping self too.
  Tensor e = *T({3, 1}, {1, 2, 3}).AsStrided({3, 2}, {1, 0}, 0);
  EXPECT_THAT(RunError("aten.add_.Scalar", {V(e), I(1)}),
              HasSubstr("more than one element of the written-to tensor"));
  Tensor p = T({2}, {1, 1});
  RunT("aten.addcdiv_.default", {V(p), V(T({2}, {1, 2})), V(T({2}, {2, 4}))},
       {{"value", I(2)}});
  EXPECT_THAT(Elements(p), ElementsAre(2, 2));
  // torch: integer pow by a negative Tensor exponent is 0 unless |base| is
  // 1; only Tensor_Scalar refuses it.
  EXPECT_THAT(Elements(RunT("aten.pow.Tensor_Tensor",
                            {V(T({4}, {2, 1, -1, 0}, DType::kInt64)),
                             V(T({4}, {-1, -2, -3, -1}, DType::kInt64))})),
              ElementsAre(0, 1, -1, 0));
  // torch: silu does not promote integers; addcdiv looks at tensor1 and
  // tensor2 only.
  EXPECT_EQ(RunError("aten.silu.default", {V(T({1}, {1}, DType::kInt64))}),
            "aten.silu.default: \"silu_cpu\" not implemented for 'Long'");
  EXPECT_THAT(RunError("aten.addcdiv.default", {V(T({1}, {0}, DType::kFloat64)),
                                                V(T({1}, {1}, DType::kInt64)),
                                                V(T({1}, {1}, DType::kInt64))}),
              HasSubstr("The future addcdiv behavior is just the latter "
                        "implementation"));
}

TEST(ExtraOpsTest, RoundDecimals) {
  // torch: float32 rounds in float arithmetic (2.675f * 100 is 267.5).
  Tensor x = T({8}, {1.005, 2.675, -0.125, 1234.5678, NAN, 0.5, 1.5, 2.5});
  ExpectSame(
      Elements(RunT("aten.round.decimals", {V(x)}, {{"decimals", I(2)}})),
      {1.0, 2.680000066757202, -0.11999999731779099, 1234.5699462890625, NAN,
       0.5, 1.5, 2.5});
  ExpectSame(
      Elements(RunT("aten.round.decimals", {V(x)}, {{"decimals", I(-2)}})),
      {0, 0, 0, 1200, NAN, 0, 0, 0});
  ExpectSame(
      Elements(RunT("aten.round.decimals", {V(x)}, {{"decimals", I(0)}})),
      {1, 3, 0, 1235, NAN, 0, 2, 2});
  Tensor d = T({3}, {1.005, 2.675, -0.125}, DType::kFloat64);
  ExpectSame(
      Elements(RunT("aten.round.decimals", {V(d)}, {{"decimals", I(2)}})),
      {1.0, 2.68, -0.12}, 1e-15);  // torch: 2.675 * 100 is 267.5 in double
  EXPECT_THAT(
      RunT("aten.round.decimals", {V(Transposed())}, {{"decimals", I(1)}})
          .strides(),
      ElementsAre(1, 2));
  EXPECT_EQ(RunError("aten.round.decimals", {V(T({1}, {15}, DType::kInt64))},
                     {{"decimals", I(-1)}}),
            "aten.round.decimals: \"round_cpu\" not implemented for 'Long'");
  Tensor in = T({2}, {0.25, 0.35});
  RunT("aten.round_.decimals", {V(in)}, {{"decimals", I(1)}});
  ExpectSame(Elements(in), {0.2, 0.4}, 1e-7);  // torch
}

TEST(ExtraOpsTest, ChannelsLastInputsGiveChannelsLastResults) {
  // torch: x.contiguous(memory_format=torch.channels_last) for [3, 2, 1, 3]
  // has strides [6, 1, 6, 2]; one with the size-1 dim's stride 1 is still
  // channels-last contiguous, and TensorIterator allocates channels-last.
  Tensor x = *Tensor::Empty({18}, DType::kFloat16)
                  ->AsStrided({3, 2, 1, 3}, {6, 1, 1, 2}, 0);
  ForEachIndex(x.sizes(),
               [&](absl::Span<const int64_t> i) { x.SetDouble(i, 1); });
  EXPECT_THAT(RunT("aten.abs.default", {V(x)}).strides(),
              ElementsAre(6, 1, 6, 2));
  EXPECT_THAT(RunT("aten.isnan.default", {V(x)}).strides(),
              ElementsAre(6, 1, 6, 2));
  EXPECT_THAT(
      RunT("aten.round.decimals", {V(x)}, {{"decimals", I(1)}}).strides(),
      ElementsAre(6, 1, 6, 2));
  // channels_last_3d: [2, 3, 1, 2, 2] -> [12, 1, 12, 6, 3].
  Tensor y = *Tensor::Empty({24}, DType::kFloat32)
                  ->AsStrided({2, 3, 1, 2, 2}, {12, 1, 12, 6, 3}, 0);
  ForEachIndex(y.sizes(),
               [&](absl::Span<const int64_t> i) { y.SetDouble(i, 1); });
  EXPECT_THAT(RunT("aten.add.Tensor", {V(y), V(y)}).strides(),
              ElementsAre(12, 1, 12, 6, 3));
  // torch: more edge messages.
  EXPECT_EQ(RunError("aten.linalg_vector_norm.default",
                     {V(T({2}, {1, 2}, DType::kFloat64))},
                     {{"dtype", Value::OfDType(DType::kFloat16)}}),
            "aten.linalg_vector_norm.default: linalg.vector_norm: the dtype "
            "of the input (Double) should be convertible without narrowing to "
            "the specified dtype (Half)");
  EXPECT_EQ(
      RunError("aten.linalg_vector_norm.default", {V(T({2, 0}, {})), F(kInf)}),
      "aten.linalg_vector_norm.default: linalg.vector_norm cannot "
      "compute the inf norm on an empty tensor because the operation "
      "does not have an identity");
  EXPECT_EQ(RunError("aten.round.decimals", {V(T({1}, {1}, DType::kInt64))},
                     {{"decimals", I(0)}}),
            "aten.round.decimals: \"round_vml_cpu\" not implemented for "
            "'Long'");
  EXPECT_EQ(RunError("aten.pow.Scalar",
                     {Value::Bool(true), V(T({1}, {1}, DType::kBool))}),
            "aten.pow.Scalar: \"pow\" not implemented for 'Bool'");
  // torch: cumprod with dtype=int32 converts the input first (-inf becomes
  // INT32_MIN on x86).
  Tensor c = RunT("aten.cumprod.default", {V(T({2}, {-kInf, 1})), I(0)},
                  {{"dtype", Value::OfDType(DType::kInt32)}});
  EXPECT_THAT(Elements(c), ElementsAre(-2147483648.0, -2147483648.0));
}

// ---- In graphs
// ---------------------------------------------------------------

// The form make_fx prints: prims targets, an in-place twin on a placeholder,
// symbolic sizes through shape propagation (the twins' checks guard).
constexpr char kGraph[] =
    R"g(def forward(self, x: "f32[s0, 3][3, 1]cpu", m: "b8[s0, 3][3, 1]cpu"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    convert_element_type: "f64[s0, 3][3, 1]cpu" = torch.ops.prims.convert_element_type.default(x, torch.float64)
    iota: "i64[s0][1]cpu" = torch.ops.prims.iota.default(sym_size_int, start = 0, step = 1, dtype = torch.int64, device = device(type='cpu'), requires_grad = False)
    masked_fill_: "f32[s0, 3][3, 1]cpu" = torch.ops.aten.masked_fill_.Scalar(x, m, 0.5)
    logsumexp: "f32[s0][1]cpu" = torch.ops.aten.logsumexp.default(x, [1])
    abs_: "f32[s0, 3][3, 1]cpu" = torch.ops.aten.abs_.default(convert_element_type)
    return (convert_element_type, iota, logsumexp)
)g";

TEST(ExtraOpsTest, PrimsAndInplaceTwinsInAGraph) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kGraph));
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(2);
  ASSERT_OK(PropagateShapes(*g, env, options));
  EXPECT_EQ(g->Find("iota")->meta().ToAnnotation(), "i64[s0][1]cpu");
  EXPECT_EQ(g->Find("logsumexp")->meta().ToAnnotation(), "f32[s0][1]cpu");
  EXPECT_EQ(g->Find("abs_")->meta().ToAnnotation(), "f64[s0, 3][3, 1]cpu");

  Tensor x = T({2, 3}, {-1, 0, 1, 2, 3, 4});
  Tensor m = T({2, 3}, {1, 0, 0, 0, 0, 1}, DType::kBool);
  ASSERT_OK_AND_ASSIGN(Interpretation r, Interpret(*g, {V(x), V(m)}));
  EXPECT_THAT(r.mutated_inputs, ElementsAre(true, false));
  EXPECT_THAT(Elements(x), ElementsAre(0.5, 0, 1, 2, 3, 0.5));
  // convert_element_type ran before masked_fill_, abs_ after it.
  EXPECT_EQ(r.outputs[0].tensor.dtype(), DType::kFloat64);
  EXPECT_THAT(Elements(r.outputs[0].tensor), ElementsAre(1, 0, 1, 2, 3, 4));
  EXPECT_THAT(Elements(r.outputs[1].tensor), ElementsAre(0, 1));
  // log(e^0.5 + 1 + e) and log(e^2 + e^3 + e^0.5).
  ExpectSame(Elements(r.outputs[2].tensor),
             {std::log(std::exp(0.5) + 1 + std::exp(1.0)),
              std::log(std::exp(2.0) + std::exp(3.0) + std::exp(0.5))},
             1e-6);
}

}  // namespace
}  // namespace lathe::ir
