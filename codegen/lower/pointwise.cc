// The pointwise family's lowering rules: unary math, binary arithmetic and
// comparisons (Tensor and Scalar overloads), where/masked_fill, clamp, the
// copies and casts, and the activations, each a loader over the scalar op of
// scalar_ops.h that stays inlined into its readers.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "codegen/scalar_ops.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
namespace {

// Promotion of the pointwise op's operands: the meta says the result dtype;
// comparisons compute in the promoted operands' type.
absl::StatusOr<DType> OperandsType(Lowerer& L, const Call& c,
                                   const std::vector<int>& operands) {
  std::vector<ir::Value> vals;
  for (int i : operands) {
    const Bound& b = c.at(i);
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
      const ir::ValueMeta& m = L.Meta(b.arg->node);
      if (m.kind == ir::ValueMeta::Kind::kTensor) {
        vals.push_back(ir::Value::OfMeta(m.tensor));
      } else if (m.kind == ir::ValueMeta::Kind::kSym) {
        vals.push_back(ir::Value::Number(m.sym));
      }
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kInt) {
      vals.push_back(ir::Value::Int(b.arg->i));
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kFloat) {
      vals.push_back(ir::Value::Float(b.arg->f));
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kBool) {
      vals.push_back(ir::Value::Bool(b.arg->b));
    }
  }
  return ir::ResultType(vals);
}

// fn(operands...) with the output dtype the meta gives.
LowerFn PointwiseFn(std::string fn, std::vector<int> operands,
                    bool compare = false) {
  return [fn, operands, compare](Lowerer& L,
                                 const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    if (compare || m.dtype == DType::kBool) {
      ASSIGN_OR_RETURN(DType common, OperandsType(L, c, operands));
      compute = ComputeDType(common);
    }
    const ScalarFn* f = FindScalarFn(fn);
    if (f->float_only && !IsFloatingPoint(compute)) compute = DType::kFloat32;
    std::vector<TBox> boxes;
    for (int i : operands) {
      ASSIGN_OR_RETURN(TBox b, L.Operand(c, i, compute));
      boxes.push_back(std::move(b));
    }
    return TensorValue(L.Pointwise(fn, boxes, compute, m.dtype, m.sizes));
  };
}

// self +- alpha * other.
LowerFn AddSubFn(std::string fn, bool reversed) {
  return
      [fn, reversed](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
        const TensorMeta& m = OutMeta(L, c);
        DType compute = ComputeDType(m.dtype);
        ASSIGN_OR_RETURN(TBox a, L.Operand(c, 0, compute));
        ASSIGN_OR_RETURN(TBox b, L.Operand(c, 1, compute));
        if (reversed) std::swap(a, b);
        int ai = c.Index("alpha");
        if (ai >= 0 && c.at(ai).arg != nullptr) {
          ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, ai, compute));
          b = L.Pointwise("mul", {b, alpha}, compute, compute, b.sizes);
        }
        return TensorValue(L.Pointwise(fn, {a, b}, compute, m.dtype, m.sizes));
      };
}

absl::StatusOr<NodeValue> LowerDiv(Lowerer& L, const Call& c) {
  std::string fn = "truediv";
  int mi = c.Index("rounding_mode");
  if (mi >= 0) {
    ASSIGN_OR_RETURN(std::string mode, c.String("rounding_mode"));
    if (mode == "floor") fn = "floordiv";
    if (mode == "trunc") fn = "truncdiv";
  }
  if (absl::StartsWith(c.op().schema.name, "floor_divide")) fn = "floordiv";
  return PointwiseFn(fn, {0, 1})(L, c);
}

// where(cond, a, b) over the arguments at those positions (where: 0, 1, 2;
// masked_fill(self, mask, value): 1, 2, 0).
LowerFn WhereFn(int cond_arg, int a_arg, int b_arg) {
  return [=](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    ASSIGN_OR_RETURN(TBox cond, L.Operand(c, cond_arg, DType::kBool));
    ASSIGN_OR_RETURN(TBox a, L.Operand(c, a_arg, compute));
    ASSIGN_OR_RETURN(TBox b, L.Operand(c, b_arg, compute));
    return TensorValue(
        L.Pointwise("where", {cond, a, b}, compute, m.dtype, m.sizes));
  };
}

absl::StatusOr<NodeValue> LowerClamp(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  TBox t = x;
  std::string name = c.op().schema.name;
  auto apply = [&](absl::string_view arg, const char* fn) -> absl::Status {
    int i = c.Index(arg);
    if (i < 0 || c.at(i).is_none()) return absl::OkStatus();
    ASSIGN_OR_RETURN(TBox bound, L.Operand(c, i, compute));
    t = L.Pointwise(fn, {t, bound}, compute, compute, m.sizes);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(apply("min", "maximum"));
  RETURN_IF_ERROR(apply("max", "minimum"));
  return TensorValue(CastBox(t, m.dtype));
}

}  // namespace

// A cast of self to the meta's dtype (clone, _to_copy, convert_element_type,
// contiguous, ...): a loader; realized only when needed.
absl::StatusOr<NodeValue> LowerCopyLike(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  TBox t = x;
  t.buffer = -1;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType to = m.dtype;
  TBox in = x;
  t.load = [in, to](KernelBuilder& kb,
                    const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, in.load(kb, idx));
    return kb.Cast(v, to);
  };
  return TensorValue(t);
}

namespace {

// An activation over self with the given number arguments, built by `f`.
using ActivationBody =
    std::function<TBox(Expression&, TBox x, const std::vector<double>& args)>;

LowerFn ActivationFn(std::vector<std::string> arg_names, ActivationBody f) {
  return
      [arg_names, f](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
        const TensorMeta& m = OutMeta(L, c);
        DType compute = ComputeDType(m.dtype);
        if (!IsFloatingPoint(compute)) compute = DType::kFloat32;
        std::vector<double> args;
        for (const std::string& a : arg_names) {
          ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, a));
          if (!v.has_value()) return c.Error(absl::StrCat("'", a, "' is None"));
          args.push_back(*v);
        }
        ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
        Expression e(L, compute, m.sizes);
        return TensorValue(CastBox(f(e, x, args), m.dtype));
      };
}

void AddActivations(LoweringTable& T) {
  // x > 0 ? x : x * negative_slope
  T.Add(Op("aten.leaky_relu.default"),
        ActivationFn({"negative_slope"}, [](Expression& e, TBox x, auto& a) {
          return e("where", {e("gt", {x, e.Number(0)}), x,
                             e("mul", {x, e.Number(a[0])})});
        }));
  T.Add(
      Op("aten.hardtanh.default"),
      ActivationFn({"min_val", "max_val"}, [](Expression& e, TBox x, auto& a) {
        return e("minimum",
                 {e("maximum", {x, e.Number(a[0])}), e.Number(a[1])});
      }));
  // x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale
  T.Add(Op("aten.elu.default"),
        ActivationFn({"alpha", "scale", "input_scale"}, [](Expression& e,
                                                           TBox x, auto& a) {
          TBox neg = e("mul", {e("expm1", {e("mul", {x, e.Number(a[2])})}),
                               e.Number(a[0] * a[1])});
          return e("where", {e("gt", {x, e.Number(0)}),
                             e("mul", {x, e.Number(a[1])}), neg});
        }));
  // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
  T.Add(Op("aten.softplus.default"),
        ActivationFn({"beta", "threshold"}, [](Expression& e, TBox x, auto& a) {
          TBox xb = e("mul", {x, e.Number(a[0])});
          TBox soft =
              e("truediv", {e("log1p", {e("exp", {xb})}), e.Number(a[0])});
          return e("where", {e("gt", {xb, e.Number(a[1])}), x, soft});
        }));
  // min(max(x + 3, 0), 6) / 6.
  T.Add(Op("aten.hardsigmoid.default"),
        ActivationFn({}, [](Expression& e, TBox x, auto&) {
          TBox r = e("maximum", {e("add", {x, e.Number(3)}), e.Number(0)});
          return e("truediv", {e("minimum", {r, e.Number(6)}), e.Number(6)});
        }));
}

// nan_to_num(self, nan, posinf, neginf): NaN and infinities replaced; the
// infinities by the dtype's largest finite values unless given.
absl::StatusOr<NodeValue> LowerNanToNum(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  if (!IsFloatingPoint(m.dtype)) return LowerCopyLike(L, c);
  double big = MaxFinite(m.dtype);
  ASSIGN_OR_RETURN(std::optional<double> nan, NumberArg(c, "nan"));
  ASSIGN_OR_RETURN(std::optional<double> posinf, NumberArg(c, "posinf"));
  ASSIGN_OR_RETURN(std::optional<double> neginf, NumberArg(c, "neginf"));
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  Expression e(L, compute, m.sizes);
  TBox inf = e("isinf", {x});
  TBox r = e("where", {e("logical_and", {inf, e("gt", {x, e.Number(0)})}),
                       e.Number(posinf.value_or(big)), x});
  r = e("where", {e("logical_and", {inf, e("lt", {x, e.Number(0)})}),
                  e.Number(neginf.value_or(-big)), r});
  r = e("where", {e("isnan", {x}), e.Number(nan.value_or(0)), r});
  return TensorValue(CastBox(r, m.dtype));
}

// round.decimals: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for
// d <= 0, half to even, in float (double for f64) as PyTorch computes it.
absl::StatusOr<NodeValue> LowerRoundDecimals(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  if (!IsFloatingPoint(m.dtype)) {
    return c.Error("expects a floating-point input");
  }
  ASSIGN_OR_RETURN(int64_t decimals, c.Int("decimals"));
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  Expression e(L, compute, m.sizes);
  double ten = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  if (compute != DType::kFloat64) ten = static_cast<float>(ten);
  TBox r = decimals > 0
               ? e("truediv",
                   {e("round", {e("mul", {x, e.Number(ten)})}), e.Number(ten)})
               : e("mul", {e("round", {e("truediv", {x, e.Number(ten)})}),
                           e.Number(ten)});
  return TensorValue(CastBox(r, m.dtype));
}

// prims.fma(a, b, c): a * b + c.
absl::StatusOr<NodeValue> LowerFma(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = ComputeDType(m.dtype);
  std::vector<TBox> x;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(TBox t, L.Operand(c, i, compute));
    x.push_back(std::move(t));
  }
  Expression e(L, compute, m.sizes);
  return TensorValue(
      CastBox(e("add", {e("mul", {x[0], x[1]}), x[2]}), m.dtype));
}

}  // namespace

void RegisterPointwise(LoweringTable& T) {
  // Unary math: the op name is the scalar function's (where the registry
  // has that op).
  for (const ScalarFn& f : ScalarFns()) {
    if (f.arity != 1) continue;
    const OpDef* op = ir::OpRegistry::Global().Find(
        absl::StrCat("aten.", f.name, ".default"));
    if (op != nullptr) T.Add(op, PointwiseFn(f.name, {0}));
  }
  // Binary: the scalar function of the op's name.
  for (const char* target :
       {"aten.mul.Tensor",          "aten.mul.Scalar",
        "aten.maximum.default",     "aten.minimum.default",
        "aten.fmax.default",        "aten.fmin.default",
        "aten.atan2.default",       "aten.hypot.default",
        "aten.copysign.Tensor",     "aten.remainder.Tensor",
        "aten.remainder.Scalar",    "aten.fmod.Tensor",
        "aten.fmod.Scalar",         "aten.pow.Scalar",
        "aten.pow.Tensor_Tensor",   "aten.pow.Tensor_Scalar",
        "aten.bitwise_and.Tensor",  "aten.bitwise_and.Scalar",
        "aten.bitwise_or.Tensor",   "aten.bitwise_or.Scalar",
        "aten.bitwise_xor.Tensor",  "aten.bitwise_xor.Scalar",
        "aten.logical_and.default", "aten.logical_or.default",
        "aten.logical_xor.default"}) {
    const OpDef* op = Op(target);
    T.Add(op, PointwiseFn(op->schema.name, {0, 1}));
  }
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    for (const char* ov : {"Tensor", "Scalar"}) {
      T.Add(Op(absl::StrCat("aten.", op, ".", ov)),
            PointwiseFn(op, {0, 1}, true));
    }
  }
  for (const char* ov : {"Tensor", "Scalar"}) {
    T.Add(Op(absl::StrCat("aten.__lshift__.", ov)),
          PointwiseFn("lshift", {0, 1}));
    T.Add(Op(absl::StrCat("aten.__rshift__.", ov)),
          PointwiseFn("rshift", {0, 1}));
    T.Add(Op(absl::StrCat("aten.add.", ov)), AddSubFn("add", false));
    T.Add(Op(absl::StrCat("aten.sub.", ov)), AddSubFn("sub", false));
    T.Add(Op(absl::StrCat("aten.rsub.", ov)), AddSubFn("sub", true));
    T.Add(Op(absl::StrCat("aten.div.", ov)), LowerDiv);
    T.Add(Op(absl::StrCat("aten.div.", ov, "_mode")), LowerDiv);
    T.Add(Op(absl::StrCat("aten.true_divide.", ov)), LowerDiv);
  }
  T.Add(Op("aten.floor_divide.default"), LowerDiv);
  T.Add(Op("aten.floor_divide.Scalar"), LowerDiv);
  T.Add(Op("aten.where.self"), WhereFn(0, 1, 2));
  T.Add(Op("aten.where.ScalarSelf"), WhereFn(0, 1, 2));
  T.Add(Op("aten.where.ScalarOther"), WhereFn(0, 1, 2));
  T.Add(Op("aten.where.Scalar"), WhereFn(0, 1, 2));
  T.Add(Op("aten.masked_fill.Scalar"), WhereFn(1, 2, 0));
  T.Add(Op("aten.masked_fill.Tensor"), WhereFn(1, 2, 0));
  T.Add(Op("aten.clamp.default"), LowerClamp);
  T.Add(Op("aten.clamp.Tensor"), LowerClamp);
  T.Add(Op("aten.clamp_min.default"), LowerClamp);
  T.Add(Op("aten.clamp_max.default"), LowerClamp);
  for (const char* op :
       {"aten.clone.default", "aten._to_copy.default",
        "prims.convert_element_type.default", "aten.lift_fresh_copy.default"}) {
    T.Add(Op(op), LowerCopyLike);
  }
  AddActivations(T);
  T.Add(Op("aten.nan_to_num.default"), LowerNanToNum);
  T.Add(Op("prims.fma.default"), LowerFma);
  T.Add(Op("aten.round.decimals"), LowerRoundDecimals);
}

}  // namespace lathe::codegen::lower
