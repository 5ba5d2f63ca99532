// What several op families' lowering rules share (rule_helpers.h).

#include "codegen/lower/rule_helpers.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/scalar_ops.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
const TensorMeta& OutMeta(Lowerer& L, const Call& c) {
  return L.TMeta(&c.node());
}

// The metas of a call's two results (values and indices, output and total
// weight); `what` names them in the error when the call has not two.
absl::StatusOr<std::pair<const TensorMeta*, const TensorMeta*>> OutPair(
    Lowerer& L, const Call& c, absl::string_view what) {
  const ir::ValueMeta& vm = L.Meta(&c.node());
  if (vm.kind != ir::ValueMeta::Kind::kTuple || vm.elements.size() != 2) {
    return c.Error(absl::StrCat("expects ", what));
  }
  return std::make_pair(&vm.elements[0].tensor, &vm.elements[1].tensor);
}

NodeValue TensorValue(TBox t) {
  NodeValue v;
  v.kind = NodeValue::Kind::kTensor;
  v.t = std::move(t);
  return v;
}

NodeValue TupleValue(std::vector<NodeValue> elements) {
  NodeValue v;
  v.kind = NodeValue::Kind::kTuple;
  v.elements = std::move(elements);
  return v;
}

// f applied to each element of `t`, giving `to`.
TBox MapBox(const TBox& t, DType to,
            std::function<int(KernelBuilder&, int)> f) {
  TBox out = t;
  out.buffer = -1;
  out.dtype = to;
  TBox in = t;
  out.load = [in, f](KernelBuilder& kb,
                     const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, in.load(kb, idx));
    return f(kb, v);
  };
  return out;
}

// `t` converted to `to` element by element.
TBox CastBox(const TBox& t, DType to) {
  if (t.dtype == to) return t;
  return MapBox(t, to,
                [to](KernelBuilder& kb, int v) { return kb.Cast(v, to); });
}

// What a mean does with a reduced sum: divides it by the count.
std::function<int(KernelBuilder&, int, Expr)> MeanOf(DType acc) {
  return [acc](KernelBuilder& kb, int v, Expr count) {
    return kb.Call("truediv", {v, kb.Cast(kb.Index(count), acc)}, acc);
  };
}

// A number argument (Scalar or float); nullopt when None.
absl::StatusOr<std::optional<double>> NumberArg(const Call& c,
                                                absl::string_view name) {
  int i = c.Index(name);
  if (i < 0 || c.at(i).is_none()) return std::nullopt;
  const Bound& b = c.at(i);
  if (b.arg != nullptr) {
    if (b.arg->kind == Arg::Kind::kFloat) return b.arg->f;
    if (b.arg->kind == Arg::Kind::kInt) return static_cast<double>(b.arg->i);
    if (b.arg->kind == Arg::Kind::kBool) return b.arg->b ? 1.0 : 0.0;
    return c.Error(absl::StrCat("argument '", name, "' is not a known number"));
  }
  if (b.def->kind == ir::DefaultValue::Kind::kFloat) return b.def->float_value;
  if (b.def->kind == ir::DefaultValue::Kind::kInt) {
    return static_cast<double>(b.def->int_value);
  }
  return c.Error(absl::StrCat("argument '", name, "' has no number default"));
}

TBox Remap(const TBox& in, std::vector<Expr> sizes, IndexMap map,
           IndexMask valid, double fill) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = std::move(sizes);
  t.cost = in.cost + (valid ? 4 : 0);
  DType compute = ComputeDType(in.dtype);
  DType dtype = in.dtype;
  t.load = [in, map, valid, fill, compute, dtype](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(std::vector<Expr> sub, map(idx));
    ASSIGN_OR_RETURN(int v, in.load(kb, sub));
    if (!valid) return v;
    int keep = valid(kb, idx);
    int w = kb.Call("where",
                    {keep, kb.Cast(v, compute), kb.Constant(fill, compute)},
                    compute);
    return kb.Cast(w, dtype);
  };
  return t;
}

// The bool `lo <= e < hi`.
int InRange(KernelBuilder& kb, Expr e, Expr lo, Expr hi) {
  int v = kb.Index(e);
  int a = kb.Call("ge", {v, kb.Index(lo)}, DType::kBool);
  int b = kb.Call("lt", {v, kb.Index(hi)}, DType::kBool);
  return kb.Call("logical_and", {a, b}, DType::kBool);
}

// e clamped into [0, size - 1].
Expr ClampIndex(Expr e, Expr size) {
  return symbolic::Max(
      {symbolic::Int(0),
       symbolic::Min({e, symbolic::Sub(size, symbolic::Int(1))})});
}

// A new buffer laid out as the call's result meta `m` says, the buffer of
// its storage from now on.
int ResultBuffer(Lowerer& L, const TensorMeta& m) {
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  L.storage_buffer()[m.storage] = b;
  return b;
}

int64_t WrapDim(int64_t dim, size_t rank) {
  int64_t r = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  return dim < 0 ? dim + r : dim;
}

// In-memory `x` read at `sub`, whose IndirectVar(k) stand for values[k]
// (check-index ops).
int IndirectLoad(KernelBuilder& kb, const TBox& x, const std::vector<Expr>& sub,
                 std::vector<int> values) {
  ScalarOp op;
  op.kind = ScalarOp::Kind::kLoad;
  op.dtype = x.dtype;
  op.buffer = x.buffer;
  op.index = Linear(sub, x.strides, x.offset);
  op.args = std::move(values);
  return kb.Add(std::move(op));
}

}  // namespace lathe::codegen::lower
