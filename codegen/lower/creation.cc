// The creation family's lowering rules: full/zeros/ones/empty and their
// _like and new_ forms, fill, arange/iota, linspace and eye.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "codegen/scalar_ops.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
namespace {

// full / scalar_tensor / zeros / ones / *_like: a constant loader.
LowerFn FillFn(int value_arg, double fixed) {
  return [value_arg, fixed](Lowerer& L,
                            const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    TBox v;
    if (value_arg >= 0) {
      ASSIGN_OR_RETURN(v, L.Operand(c, value_arg, m.dtype));
    } else {
      v = L.NumberBox(symbolic::Float(fixed), m.dtype);
    }
    return TensorValue(CastBox(L.Broadcast(v, m.sizes), m.dtype));
  };
}

// arange(start, end, step) and prims.iota(length, start, step) as index
// arithmetic.
absl::StatusOr<NodeValue> LowerArange(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = IsFloatingPoint(m.dtype) ? DType::kFloat64 : DType::kInt64;
  TBox start = L.NumberBox(symbolic::Int(0), compute);
  TBox step = L.NumberBox(symbolic::Int(1), compute);
  std::string overload = c.op().schema.overload;
  const bool iota = c.op().target == "prims.iota.default";
  if (overload == "start" || overload == "start_step" || iota) {
    ASSIGN_OR_RETURN(start, L.Operand(c, c.Index("start"), compute));
  }
  if (overload == "start_step" || iota) {
    ASSIGN_OR_RETURN(step, L.Operand(c, c.Index("step"), compute));
  }
  TBox t;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType out = m.dtype;
  t.load = [start, step, compute, out](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    int i = kb.Cast(kb.Index(idx[0]), compute);
    ASSIGN_OR_RETURN(int s0, start.load(kb, {}));
    ASSIGN_OR_RETURN(int s1, step.load(kb, {}));
    int v = kb.Call("add", {s0, kb.Call("mul", {i, s1}, compute)}, compute);
    return kb.Cast(v, out);
  };
  return TensorValue(t);
}

// linspace(start, end, steps) as PyTorch's CPU kernel computes it: from
// start for the first half, from end for the second.
absl::StatusOr<NodeValue> LowerLinspace(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::optional<double> start, NumberArg(c, "start"));
  ASSIGN_OR_RETURN(std::optional<double> end, NumberArg(c, "end"));
  ASSIGN_OR_RETURN(int64_t steps, c.Int("steps"));
  if (!start.has_value() || !end.has_value()) {
    return c.Error("start and end must be known numbers");
  }
  double a = *start, b = *end;
  double step = steps > 1 ? (b - a) / static_cast<double>(steps - 1) : 0;
  int64_t half = steps / 2;
  DType out = m.dtype;
  TBox t;
  t.dtype = out;
  t.sizes = m.sizes;
  t.load = [=](KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    DType f = DType::kFloat64;
    int i = kb.Cast(kb.Index(idx[0]), f);
    int lo = kb.Call(
        "add",
        {kb.Constant(a, f), kb.Call("mul", {i, kb.Constant(step, f)}, f)}, f);
    int back =
        kb.Call("sub", {kb.Constant(static_cast<double>(steps - 1), f), i}, f);
    int hi = kb.Call(
        "sub",
        {kb.Constant(b, f), kb.Call("mul", {back, kb.Constant(step, f)}, f)},
        f);
    int first =
        kb.Call("lt", {kb.Index(idx[0]), kb.IntConstant(half, DType::kInt64)},
                DType::kBool);
    return kb.Cast(kb.Call("where", {first, lo, hi}, f), out);
  };
  return TensorValue(t);
}

// eye(n, m): ones on the diagonal.
absl::StatusOr<NodeValue> LowerEye(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  TBox t;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType out = m.dtype;
  t.load = [out](KernelBuilder& kb,
                 const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    int d = kb.Call("eq", {kb.Index(idx[0]), kb.Index(idx[1])}, DType::kBool);
    return kb.Cast(d, out);
  };
  return TensorValue(t);
}

}  // namespace

void RegisterCreation(LoweringTable& T) {
  T.Add(Op("aten.full.default"), FillFn(1, 0));
  T.Add(Op("aten.fill.Scalar"), FillFn(1, 0));
  T.Add(Op("aten.zero.default"), FillFn(-1, 0));
  // Uninitialized memory: zeros are one of its values.
  for (const char* op :
       {"aten.empty.memory_format", "aten.empty_like.default",
        "aten.empty_strided.default", "aten.new_empty.default",
        "aten.new_empty_strided.default", "aten.empty_permuted.default"}) {
    T.Add(Op(op), FillFn(-1, 0));
  }
  T.Add(Op("aten.full_like.default"), FillFn(1, 0));
  T.Add(Op("aten.scalar_tensor.default"), FillFn(0, 0));
  T.Add(Op("aten.zeros.default"), FillFn(-1, 0));
  T.Add(Op("aten.zeros_like.default"), FillFn(-1, 0));
  T.Add(Op("aten.ones.default"), FillFn(-1, 1));
  T.Add(Op("aten.ones_like.default"), FillFn(-1, 1));
  T.Add(Op("aten.new_zeros.default"), FillFn(-1, 0));
  T.Add(Op("aten.new_ones.default"), FillFn(-1, 1));
  T.Add(Op("aten.new_full.default"), FillFn(2, 0));
  T.Add(Op("aten.arange.default"), LowerArange);
  T.Add(Op("aten.arange.start"), LowerArange);
  T.Add(Op("aten.arange.start_step"), LowerArange);
  T.Add(Op("prims.iota.default"), LowerArange);
  T.Add(Op("aten.linspace.default"), LowerLinspace);
  T.Add(Op("aten.eye.default"), LowerEye);
  T.Add(Op("aten.eye.m"), LowerEye);
}

}  // namespace lathe::codegen::lower
