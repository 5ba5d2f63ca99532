// The reduction family's lowering rules: sum/prod/mean/amax/amin/max/min,
// argmax/argmin, any/all, var/var_mean (Welford), vector norms and cdist
// (p-norms), and the scans cumsum/cumprod/logcumsumexp.

#include <algorithm>
#include <cmath>
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
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
namespace {

// Reductions over `dim` (an int list; None or [] = all dims).
LowerFn ReduceFn(ReduceKind kind, bool mean = false) {
  return [kind, mean](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    const ir::ValueMeta& vm = L.Meta(&c.node());
    const TensorMeta& m = vm.kind == ir::ValueMeta::Kind::kTuple
                              ? vm.elements[0].tensor
                              : vm.tensor;
    int64_t rank = static_cast<int64_t>(x.sizes.size());
    std::vector<int64_t> dims;
    int di = c.Index("dim");
    if (di >= 0) {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d, c.IntList(di));
      if (d.has_value()) dims = *d;
    }
    if (dims.empty()) {
      for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    }
    for (int64_t& d : dims) d = d < 0 ? d + rank : d;
    if (rank == 0) {  // a 0-d reduction is the value itself
      NodeValue v;
      if (kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin) {
        return TensorValue(L.NumberBox(symbolic::Int(0), DType::kInt64));
      }
      ASSIGN_OR_RETURN(v, LowerCopyLike(L, c));
      return v;
    }
    DType acc = ComputeDType(m.dtype);
    if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
      acc = ComputeDType(x.dtype);
    }
    ASSIGN_OR_RETURN(TBox out, L.Reduce(x, dims, kind, acc, m,
                                        mean ? MeanOf(acc) : nullptr));
    if (vm.kind != ir::ValueMeta::Kind::kTuple) return TensorValue(out);
    // max.dim / min.dim: (values, indices).
    ReduceKind arg =
        kind == ReduceKind::kMax ? ReduceKind::kArgMax : ReduceKind::kArgMin;
    ASSIGN_OR_RETURN(TBox idx, L.Reduce(x, dims, arg, DType::kInt64,
                                        vm.elements[1].tensor, nullptr));
    return TupleValue({TensorValue(out), TensorValue(idx)});
  };
}

// The p-norm of values |d|: each |d|'s term, how the terms reduce, and the
// root taken of the result (none for p = 0, 1 and +-inf).
struct PNorm {
  ReduceKind kind = ReduceKind::kSum;
  std::function<int(KernelBuilder&, int)> term;
  std::function<int(KernelBuilder&, int, Expr)> root;
};

PNorm PNormOf(double p, DType acc) {
  PNorm n;
  n.term = [p, acc](KernelBuilder& kb, int v) {
    if (p == 0) {
      return kb.Cast(kb.Call("ne", {v, kb.Constant(0, acc)}, DType::kBool),
                     acc);
    }
    if (p == 1 || std::isinf(p)) return v;
    if (p == 2) return kb.Call("mul", {v, v}, acc);
    return kb.Call("pow", {v, kb.Constant(p, acc)}, acc);
  };
  if (std::isinf(p)) n.kind = p > 0 ? ReduceKind::kMax : ReduceKind::kMin;
  if (p == 2) {
    n.root = [acc](KernelBuilder& kb, int v, Expr) {
      return kb.Call("sqrt", {v}, acc);
    };
  } else if (p != 0 && p != 1 && !std::isinf(p)) {
    n.root = [acc, p](KernelBuilder& kb, int v, Expr) {
      return kb.Call("pow", {v, kb.Constant(1 / p, acc)}, acc);
    };
  }
  return n;
}

// linalg_vector_norm(self, ord, dim, keepdim, dtype).
absl::StatusOr<NodeValue> LowerVectorNorm(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, acc));
  ASSIGN_OR_RETURN(std::optional<double> ord, NumberArg(c, "ord"));
  PNorm norm = PNormOf(ord.value_or(2), acc);
  TBox terms = MapBox(x, acc, [acc, norm](KernelBuilder& kb, int v) {
    return norm.term(kb, kb.Call("abs", {v}, acc));
  });
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (rank == 0) {  // the norm of one value
    DType out = m.dtype;
    return TensorValue(
        MapBox(terms, out, [norm, out](KernelBuilder& kb, int v) {
          return kb.Cast(norm.root ? norm.root(kb, v, symbolic::Int(1)) : v,
                         out);
        }));
  }
  std::vector<int64_t> dims;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d,
                   c.IntList(c.Index("dim")));
  if (d.has_value()) dims = *d;
  if (dims.empty()) {
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  }
  for (int64_t& k : dims) k = k < 0 ? k + rank : k;
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(terms, dims, norm.kind, acc, m, norm.root));
  return TensorValue(out);
}

// _cdist_forward(x1, x2, p, compute_mode): the p-norm distance of every
// row pair, [..., P, M] x [..., R, M] -> [..., P, R].
absl::StatusOr<NodeValue> LowerCdist(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x1, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox x2, L.Tensor(c, 1));
  ASSIGN_OR_RETURN(std::optional<double> p, NumberArg(c, "p"));
  PNorm norm = PNormOf(p.value_or(2), acc);
  TBox d;
  d.dtype = acc;
  d.sizes = m.sizes;
  d.sizes.push_back(x1.sizes.back());
  d.reads = x1.reads;
  d.reads.insert(x2.reads.begin(), x2.reads.end());
  size_t rank = d.sizes.size();
  d.load = [x1, x2, acc, norm, rank](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    auto at = [&](const TBox& x, Expr row) {
      std::vector<Expr> sub;
      size_t batch = x.sizes.size() - 2;
      for (size_t b = 0; b < batch; ++b) {
        Expr i = idx[rank - 3 - batch + b];
        sub.push_back(IsOne(x.sizes[b]) ? symbolic::Int(0) : i);
      }
      sub.push_back(row);
      sub.push_back(idx[rank - 1]);
      return sub;
    };
    ASSIGN_OR_RETURN(int a, x1.load(kb, at(x1, idx[rank - 3])));
    ASSIGN_OR_RETURN(int b, x2.load(kb, at(x2, idx[rank - 2])));
    int diff = kb.Call(
        "abs", {kb.Call("sub", {kb.Cast(a, acc), kb.Cast(b, acc)}, acc)}, acc);
    return norm.term(kb, diff);
  };
  ASSIGN_OR_RETURN(TBox out, L.Reduce(d, {static_cast<int64_t>(rank) - 1},
                                      norm.kind, acc, m, norm.root));
  return TensorValue(out);
}

// var_mean / var (the correction overloads; decompose turns std and the
// other var forms into var_mean): one Welford reduction in the computation
// dtype, var = M2 / max(count - correction, 0).
absl::StatusOr<NodeValue> LowerVarMean(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("expects a floating-point input");
  }
  const ir::ValueMeta& vm = L.Meta(&c.node());
  const bool with_mean = vm.kind == ir::ValueMeta::Kind::kTuple;
  const TensorMeta& var_meta = with_mean ? vm.elements[0].tensor : vm.tensor;
  const TensorMeta& mean_meta = with_mean ? vm.elements[1].tensor : vm.tensor;
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d,
                   c.IntList(c.Index("dim")));
  std::vector<int64_t> dims = d.value_or(std::vector<int64_t>());
  if (rank == 0) dims.clear();  // dim 0 (or -1) of a 0-d tensor is itself
  if (dims.empty()) {
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  }
  for (int64_t& k : dims) k = k < 0 ? k + rank : k;
  ASSIGN_OR_RETURN(std::optional<double> correction,
                   NumberArg(c, "correction"));
  ASSIGN_OR_RETURN(auto vm_boxes,
                   L.VarMean(x, dims, ComputeDType(x.dtype),
                             correction.value_or(1.0), var_meta, mean_meta));
  if (!with_mean) return TensorValue(vm_boxes.first);
  return TupleValue(
      {TensorValue(vm_boxes.first), TensorValue(vm_boxes.second)});
}

// cumsum / cumprod(self, dim, dtype) / logcumsumexp(self, dim): per
// position of the other dims, a scan along dim in the result's compute type
// (logcumsumexp's f32 in double, as PyTorch's CPU kernel), stored as the
// meta says.
LowerFn ScanFn(ReduceKind kind) {
  return [kind](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    if (x.sizes.empty()) return TensorValue(CastBox(x, m.dtype));
    ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
    dim = WrapDim(dim, x.sizes.size());
    std::vector<Expr> outer;
    for (size_t d = 0; d < x.sizes.size(); ++d) {
      if (static_cast<int64_t>(d) != dim) outer.push_back(x.sizes[d]);
    }
    Kernel k = L.NewKernel(outer);
    Section& sec = k.sections[0];
    sec.vars = {SectionVar(0, 0)};
    sec.ranges = {x.sizes[dim]};
    std::vector<Expr> idx;
    for (size_t d = 0, o = 0; d < x.sizes.size(); ++d) {
      idx.push_back(static_cast<int64_t>(d) == dim ? sec.vars[0] : k.vars[o++]);
    }
    KernelBuilder kb(&k);
    DType acc = ComputeDType(m.dtype);
    if (kind == ReduceKind::kLogAddExp && m.dtype == DType::kFloat32) {
      acc = DType::kFloat64;
    }
    ASSIGN_OR_RETURN(int v, x.load(kb, idx));
    ScalarOp scan;
    scan.kind = ScalarOp::Kind::kScan;
    scan.reduce = kind;
    scan.dtype = acc;
    scan.args = {kb.Cast(v, acc)};
    int running = kb.Add(std::move(scan));
    int b = L.NewBuffer(m.dtype,
                        StorageNumel(m.sizes, m.strides, m.storage_offset));
    kb.Store(b, m.dtype, Linear(idx, m.strides, m.storage_offset), running);
    L.Emit(std::move(k));
    return TensorValue(
        L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
  };
}

}  // namespace

void RegisterReductions(LoweringTable& T) {
  T.Add(Op("aten.sum.default"), ReduceFn(ReduceKind::kSum));
  T.Add(Op("aten.sum.dim_IntList"), ReduceFn(ReduceKind::kSum));
  T.Add(Op("aten.prod.default"), ReduceFn(ReduceKind::kProd));
  T.Add(Op("aten.prod.dim_int"), ReduceFn(ReduceKind::kProd));
  T.Add(Op("aten.mean.default"), ReduceFn(ReduceKind::kSum, true));
  T.Add(Op("aten.mean.dim"), ReduceFn(ReduceKind::kSum, true));
  T.Add(Op("aten.amax.default"), ReduceFn(ReduceKind::kMax));
  T.Add(Op("aten.amin.default"), ReduceFn(ReduceKind::kMin));
  T.Add(Op("aten.max.default"), ReduceFn(ReduceKind::kMax));
  T.Add(Op("aten.min.default"), ReduceFn(ReduceKind::kMin));
  T.Add(Op("aten.max.dim"), ReduceFn(ReduceKind::kMax));
  T.Add(Op("aten.min.dim"), ReduceFn(ReduceKind::kMin));
  T.Add(Op("aten.argmax.default"), ReduceFn(ReduceKind::kArgMax));
  T.Add(Op("aten.argmin.default"), ReduceFn(ReduceKind::kArgMin));
  T.Add(Op("aten.any.default"), ReduceFn(ReduceKind::kAny));
  T.Add(Op("aten.any.dim"), ReduceFn(ReduceKind::kAny));
  T.Add(Op("aten.any.dims"), ReduceFn(ReduceKind::kAny));
  T.Add(Op("aten.all.default"), ReduceFn(ReduceKind::kAll));
  T.Add(Op("aten.all.dim"), ReduceFn(ReduceKind::kAll));
  T.Add(Op("aten.var_mean.correction"), LowerVarMean);
  T.Add(Op("aten.var.correction"), LowerVarMean);
  T.Add(Op("aten.linalg_vector_norm.default"), LowerVectorNorm);
  T.Add(Op("aten._cdist_forward.default"), LowerCdist);
  T.Add(Op("aten.cumsum.default"), ScanFn(ReduceKind::kSum));
  T.Add(Op("aten.cumprod.default"), ScanFn(ReduceKind::kProd));
  T.Add(Op("aten.logcumsumexp.default"), ScanFn(ReduceKind::kLogAddExp));
}

}  // namespace lathe::codegen::lower
