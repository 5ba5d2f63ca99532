// The non-core ops' meta functions on symbolic shapes (shape propagation
// alone, against the annotations PyTorch's fake tensors print), and the
// derived in-place twins: each paired with its functional op, its schema
// PyTorch's, writing self and refusing what PyTorch refuses. Expected values
// are hand-derived or captured from PyTorch 2.15 on CPU (marked "torch:").

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/shape_prop.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Value I(int64_t v) { return Value::Int(v); }
Value F(double v) { return Value::Float(v); }

TEST(ExtraOpsTest, MetaFunctionsOnSymbolicShapes) {
  // Shape propagation alone (no kernels): every new op's meta function on
  // symbolic sizes, with the annotations PyTorch's fake tensors print.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Graph> g,
      ParseGraph(
          R"g(def forward(self, x: "f32[s0, s1][s1, 1]cpu", i: "i64[s2][1]cpu", src: "f32[s2, s1][s1, 1]cpu"):
    tril: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.tril.default(x, 1)
    gt: "b8[s0, s1][s1, 1]cpu" = torch.ops.aten.gt.Scalar(x, 0)
    masked_fill: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.masked_fill.Scalar(tril, gt, -1.0)
    std: "f32[s0][1]cpu" = torch.ops.aten.std.correction(masked_fill, [1], correction = 0)
    norm: "f32[1, s1][s1, 1]cpu" = torch.ops.aten.linalg_vector_norm.default(x, 2, [0], True)
    cumprod: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.cumprod.default(x, 1)
    index_add: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.index_add.default(x, 0, i, src)
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    new_zeros: "f32[s0][1]cpu" = torch.ops.aten.new_zeros.default(x, [sym_size_int])
    floor_divide: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.floor_divide.default(x, cumprod)
    fmax: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.fmax.default(floor_divide, index_add)
    return (std, norm, fmax, new_zeros)
)g"));
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(3);
  options.hints["s1"] = symbolic::Value::Int(4);
  options.hints["s2"] = symbolic::Value::Int(2);
  ASSERT_OK(PropagateShapes(*g, env, options));
  EXPECT_EQ(g->Find("std")->meta().ToAnnotation(), "f32[s0][1]cpu");
  EXPECT_EQ(g->Find("norm")->meta().ToAnnotation(), "f32[1, s1][s1, 1]cpu");
  EXPECT_EQ(g->Find("fmax")->meta().ToAnnotation(), "f32[s0, s1][s1, 1]cpu");
}

// ---- In-place twins ---------------------------------------------------------

// torch: every pointwise op lathe has whose aten::<name>_ exists (pow's
// in-place overloads are Scalar/Tensor, floor_divide's Tensor; isnan,
// isinf, isfinite, maximum, minimum, fmax, fmin and where have none).
const std::pair<const char*, const char*> kTorchInplace[] = {
    {"aten.abs.default", "aten.abs_.default"},
    // torch: the twins of the ops the corpus needed later.
    {"aten.hypot.default", "aten.hypot_.default"},
    {"aten.hardsigmoid.default", "aten.hardsigmoid_.default"},
    {"aten.__lshift__.Scalar", "aten.__ilshift__.Scalar"},
    {"aten.__lshift__.Tensor", "aten.__ilshift__.Tensor"},
    {"aten.__rshift__.Scalar", "aten.__irshift__.Scalar"},
    {"aten.__rshift__.Tensor", "aten.__irshift__.Tensor"},
    {"aten.neg.default", "aten.neg_.default"},
    {"aten.relu.default", "aten.relu_.default"},
    {"aten.exp.default", "aten.exp_.default"},
    {"aten.expm1.default", "aten.expm1_.default"},
    {"aten.log.default", "aten.log_.default"},
    {"aten.log1p.default", "aten.log1p_.default"},
    {"aten.sqrt.default", "aten.sqrt_.default"},
    {"aten.rsqrt.default", "aten.rsqrt_.default"},
    {"aten.sin.default", "aten.sin_.default"},
    {"aten.cos.default", "aten.cos_.default"},
    {"aten.tanh.default", "aten.tanh_.default"},
    {"aten.sigmoid.default", "aten.sigmoid_.default"},
    {"aten.silu.default", "aten.silu_.default"},
    {"aten.erf.default", "aten.erf_.default"},
    {"aten.reciprocal.default", "aten.reciprocal_.default"},
    {"aten.floor.default", "aten.floor_.default"},
    {"aten.ceil.default", "aten.ceil_.default"},
    {"aten.trunc.default", "aten.trunc_.default"},
    {"aten.logical_not.default", "aten.logical_not_.default"},
    {"aten.round.default", "aten.round_.default"},
    {"aten.round.decimals", "aten.round_.decimals"},
    {"aten.sign.default", "aten.sign_.default"},
    {"aten.acos.default", "aten.acos_.default"},
    {"aten.acosh.default", "aten.acosh_.default"},
    {"aten.asin.default", "aten.asin_.default"},
    {"aten.asinh.default", "aten.asinh_.default"},
    {"aten.atan.default", "aten.atan_.default"},
    {"aten.atanh.default", "aten.atanh_.default"},
    {"aten.cosh.default", "aten.cosh_.default"},
    {"aten.sinh.default", "aten.sinh_.default"},
    {"aten.tan.default", "aten.tan_.default"},
    {"aten.log10.default", "aten.log10_.default"},
    {"aten.log2.default", "aten.log2_.default"},
    {"aten.gelu.default", "aten.gelu_.default"},
    {"aten.elu.default", "aten.elu_.default"},
    {"aten.hardtanh.default", "aten.hardtanh_.default"},
    {"aten.leaky_relu.default", "aten.leaky_relu_.default"},
    {"aten.add.Tensor", "aten.add_.Tensor"},
    {"aten.add.Scalar", "aten.add_.Scalar"},
    {"aten.sub.Tensor", "aten.sub_.Tensor"},
    {"aten.sub.Scalar", "aten.sub_.Scalar"},
    {"aten.mul.Tensor", "aten.mul_.Tensor"},
    {"aten.mul.Scalar", "aten.mul_.Scalar"},
    {"aten.div.Tensor", "aten.div_.Tensor"},
    {"aten.div.Scalar", "aten.div_.Scalar"},
    {"aten.div.Tensor_mode", "aten.div_.Tensor_mode"},
    {"aten.div.Scalar_mode", "aten.div_.Scalar_mode"},
    {"aten.pow.Tensor_Scalar", "aten.pow_.Scalar"},
    {"aten.pow.Tensor_Tensor", "aten.pow_.Tensor"},
    {"aten.remainder.Tensor", "aten.remainder_.Tensor"},
    {"aten.remainder.Scalar", "aten.remainder_.Scalar"},
    {"aten.fmod.Tensor", "aten.fmod_.Tensor"},
    {"aten.fmod.Scalar", "aten.fmod_.Scalar"},
    {"aten.bitwise_and.Tensor", "aten.bitwise_and_.Tensor"},
    {"aten.bitwise_and.Scalar", "aten.bitwise_and_.Scalar"},
    {"aten.bitwise_or.Tensor", "aten.bitwise_or_.Tensor"},
    {"aten.bitwise_or.Scalar", "aten.bitwise_or_.Scalar"},
    {"aten.bitwise_xor.Tensor", "aten.bitwise_xor_.Tensor"},
    {"aten.bitwise_xor.Scalar", "aten.bitwise_xor_.Scalar"},
    {"aten.atan2.default", "aten.atan2_.default"},
    {"aten.copysign.Tensor", "aten.copysign_.Tensor"},
    {"aten.logical_and.default", "aten.logical_and_.default"},
    {"aten.logical_or.default", "aten.logical_or_.default"},
    {"aten.logical_xor.default", "aten.logical_xor_.default"},
    {"aten.clamp.default", "aten.clamp_.default"},
    {"aten.clamp.Tensor", "aten.clamp_.Tensor"},
    {"aten.clamp_min.default", "aten.clamp_min_.default"},
    {"aten.clamp_max.default", "aten.clamp_max_.default"},
    {"aten.addcmul.default", "aten.addcmul_.default"},
    {"aten.addcdiv.default", "aten.addcdiv_.default"},
    {"aten.lerp.Scalar", "aten.lerp_.Scalar"},
    {"aten.lerp.Tensor", "aten.lerp_.Tensor"},
    {"aten.bitwise_not.default", "aten.bitwise_not_.default"},
    {"aten.eq.Tensor", "aten.eq_.Tensor"},
    {"aten.eq.Scalar", "aten.eq_.Scalar"},
    {"aten.ne.Tensor", "aten.ne_.Tensor"},
    {"aten.ne.Scalar", "aten.ne_.Scalar"},
    {"aten.lt.Tensor", "aten.lt_.Tensor"},
    {"aten.lt.Scalar", "aten.lt_.Scalar"},
    {"aten.le.Tensor", "aten.le_.Tensor"},
    {"aten.le.Scalar", "aten.le_.Scalar"},
    {"aten.gt.Tensor", "aten.gt_.Tensor"},
    {"aten.gt.Scalar", "aten.gt_.Scalar"},
    {"aten.ge.Tensor", "aten.ge_.Tensor"},
    {"aten.ge.Scalar", "aten.ge_.Scalar"},
    {"aten.exp2.default", "aten.exp2_.default"},
    {"aten.square.default", "aten.square_.default"},
    {"aten.floor_divide.default", "aten.floor_divide_.Tensor"},
    {"aten.floor_divide.Scalar", "aten.floor_divide_.Scalar"},
    {"aten.true_divide.Tensor", "aten.true_divide_.Tensor"},
    {"aten.true_divide.Scalar", "aten.true_divide_.Scalar"},
    {"aten.nan_to_num.default", "aten.nan_to_num_.default"},
    {"aten.masked_fill.Scalar", "aten.masked_fill_.Scalar"},
    {"aten.masked_fill.Tensor", "aten.masked_fill_.Tensor"},
    {"aten.tril.default", "aten.tril_.default"},
    {"aten.triu.default", "aten.triu_.default"},
    {"aten.celu.default", "aten.celu_.default"},
    {"aten.logit.default", "aten.logit_.default"},
    {"aten.hardswish.default", "aten.hardswish_.default"},
    {"aten.mish.default", "aten.mish_.default"},
    {"aten.sgn.default", "aten.sgn_.default"},
};

TEST(ExtraOpsTest, EveryPointwiseOpHasItsInplaceTwinPaired) {
  const OpRegistry& registry = OpRegistry::Global();
  for (const auto& [functional, inplace] : kTorchInplace) {
    const OpDef* f = registry.Find(functional);
    const OpDef* i = registry.Find(inplace);
    ASSERT_NE(f, nullptr) << functional;
    ASSERT_NE(i, nullptr) << inplace;
    EXPECT_EQ(f->inplace, inplace);
    EXPECT_EQ(i->functional, functional);
    EXPECT_TRUE(i->schema.IsInplace()) << inplace;
  }
  // And the other way: every functional pointwise op with a Tensor self
  // has a twin, except those PyTorch has none of.
  const std::set<std::string> none = {"isnan",   "isinf",   "isfinite",
                                      "maximum", "minimum", "fmax",
                                      "fmin",    "rsub",    "softplus"};
  int checked = 0;
  for (const std::string& target : registry.Targets()) {
    const OpDef* op = registry.Find(target);
    if (!op->HasTag(OpTag::kPointwise) || op->schema.IsMutable() ||
        op->schema.arguments[0].name != "self" ||
        op->schema.arguments[0].type.ToString() != "Tensor" ||
        none.count(op->schema.name)) {
      continue;
    }
    ++checked;
    ASSERT_FALSE(op->inplace.empty()) << target << " has no in-place twin";
    const OpDef* twin = registry.Find(op->inplace);
    ASSERT_NE(twin, nullptr) << op->inplace;
    EXPECT_EQ(twin->functional, target);
  }
  int pointwise = 0;
  for (const auto& [functional, inplace] : kTorchInplace) {
    pointwise += registry.Find(functional)->HasTag(OpTag::kPointwise);
  }
  EXPECT_EQ(checked, pointwise);
  EXPECT_GT(checked, 80);
}

TEST(ExtraOpsTest, DerivedInplaceSchemasAreTorchs) {
  // torch: str(torch.ops.aten.<name>_.<overload>._schema), "aten::" dropped
  // (and gelu_'s default quoted as lathe writes it).
  const std::pair<const char*, const char*> kWant[] = {
      {"aten.abs_.default", "abs_(Tensor(a!) self) -> Tensor(a!)"},
      {"aten.gelu_.default",
       "gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)"},
      {"aten.pow_.Scalar",
       "pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)"},
      {"aten.pow_.Tensor",
       "pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)"},
      {"aten.clamp_min_.default",
       "clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)"},
      {"aten.eq_.Scalar",
       "eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)"},
      {"aten.div_.Scalar_mode",
       "div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? "
       "rounding_mode) -> Tensor(a!)"},
      {"aten.floor_divide_.Tensor",
       "floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"},
      {"aten.nan_to_num_.default",
       "nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, "
       "float? neginf=None) -> Tensor(a!)"},
      {"aten.masked_fill_.Tensor",
       "masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> "
       "Tensor(a!)"},
      {"aten.tril_.default",
       "tril_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)"},
      {"aten.cumprod_.default",
       "cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> "
       "Tensor(a!)"},
      {"aten.index_add_.default",
       "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, "
       "Scalar alpha=1) -> Tensor(a!)"},
      {"aten.elu_.default",
       "elu_(Tensor(a!) self, Scalar alpha=1, Scalar scale=1, Scalar "
       "input_scale=1) -> Tensor(a!)"},
  };
  for (const auto& [target, schema] : kWant) {
    const OpDef* op = OpRegistry::Global().Find(target);
    ASSERT_NE(op, nullptr) << target;
    EXPECT_EQ(op->schema.ToString(), schema);
  }
}

TEST(ExtraOpsTest, InplaceTwinsWriteSelfAndRefuseWhatPyTorchRefuses) {
  // relu_ writes self through its own (transposed) layout and returns it.
  Tensor x = T({3, 2}, {-1, 2, -3, 4, -5, 6});
  Tensor xt = *x.AsStrided({2, 3}, {1, 2}, 0);
  ASSERT_OK_AND_ASSIGN(Value r, RunOp("aten.relu_.default", {V(xt)}));
  EXPECT_EQ(r.tensor.data_ptr(), x.data_ptr());
  EXPECT_THAT(r.tensor.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(x), ElementsAre(0, 2, 0, 4, 0, 6));
  // torch: eq_ on floats writes 1.0 / 0.0.
  Tensor f = T({2}, {1, 2});
  RunT("aten.eq_.Scalar", {V(f), I(1)});
  EXPECT_THAT(Elements(f), ElementsAre(1, 0));
  // pow_.Scalar on int64: exact integer powers.
  Tensor p = T({2}, {3, -2}, DType::kInt64);
  RunT("aten.pow_.Scalar", {V(p), I(3)});
  EXPECT_THAT(Elements(p), ElementsAre(27, -8));
  // sub_.Scalar / div_.Scalar, created from their functional twins.
  Tensor s = T({2}, {1, 2});
  RunT("aten.sub_.Scalar", {V(s), F(0.5)}, {});
  RunT("aten.div_.Scalar", {V(s), I(2)});
  EXPECT_THAT(Elements(s), ElementsAre(0.25, 0.75));
  // The int64 self of f16 mul_ keeps its dtype: the result rounds into it.
  Tensor h = T({2}, {1.5, 2.5}, DType::kFloat16);
  RunT("aten.mul_.Tensor", {V(h), V(T({2}, {2, 2}, DType::kFloat32))});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_THAT(Elements(h), ElementsAre(3, 5));
  // torch's messages.
  EXPECT_EQ(
      RunError("aten.sigmoid_.default", {V(T({2}, {1, 2}, DType::kInt64))}),
      "aten.sigmoid_.default: result type Float can't be cast to the "
      "desired output type Long");
  EXPECT_EQ(RunError("aten.add_.Scalar", {V(T({1}, {1}, DType::kBool)), I(1)}),
            "aten.add_.Scalar: result type Long can't be cast to the desired "
            "output type Bool");
  EXPECT_EQ(RunError("aten.atan2_.default",
                     {V(T({3}, {0, 0, 0})), V(T({2, 3}, {0, 0, 0, 0, 0, 0}))}),
            "aten.atan2_.default: output with shape [3] doesn't match the "
            "broadcast shape [2, 3]");
  Tensor expanded = *T({3, 1}, {1, 2, 3}).AsStrided({3, 2}, {1, 0}, 0);
  EXPECT_EQ(RunError("aten.neg_.default", {V(expanded)}),
            "aten.neg_.default: unsupported operation: more than one element "
            "of the written-to tensor refers to a single memory location. "
            "Please clone() the tensor before performing the operation.");
}

}  // namespace
}  // namespace lathe::ir
