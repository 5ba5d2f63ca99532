// The view family's lowering rules: every view op as index arithmetic over
// its meta (or composed with a loader that is not in memory), _unsafe_view,
// copy, and the scatters that write back what a view sees (slice_scatter,
// ...). generic_rules.cc applies LowerView and LowerScatter by op property.

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
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {
// `in` read in row-major order as a tensor of `sizes` (view/reshape of a
// value that is not in memory).
TBox ReshapeLoader(const TBox& in, std::vector<Expr> sizes) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = sizes;
  t.load = [in, sizes](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    Expr lin = Linear(idx, Contiguous(sizes), symbolic::Int(0));
    std::vector<Expr> st = Contiguous(in.sizes);
    // An empty value is never read (its strides here may be 0): every
    // index is as good as 0.
    bool empty = false;
    for (const Expr& size : in.sizes) empty = empty || size.is_constant(0);
    std::vector<Expr> sub;
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      if (empty || IsOne(in.sizes[d])) {
        sub.push_back(symbolic::Int(0));
        continue;
      }
      ASSIGN_OR_RETURN(Expr e,
                       symbolic::ModularIndexing(lin, st[d], in.sizes[d]));
      sub.push_back(e);
    }
    return in.load(kb, sub);
  };
  return t;
}

namespace {

// `in` with its dims permuted: result dim d is in's dim perm[d].
TBox PermuteLoader(const TBox& in, std::vector<int64_t> perm,
                   std::vector<Expr> sizes) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = sizes;
  t.load = [in, perm](KernelBuilder& kb,
                      const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> sub(idx.size());
    for (size_t d = 0; d < perm.size(); ++d) sub[perm[d]] = idx[d];
    return in.load(kb, sub);
  };
  return t;
}

// The view `m` of in-memory `b` (the value of `base`): index arithmetic over
// the view's meta.
absl::StatusOr<TBox> ViewLayoutOfBuffer(Lowerer& L, const Call& c,
                                        const Node* base, const TBox& b,
                                        const TensorMeta& m) {
  auto it = L.storage_buffer().find(m.storage);
  if (it != L.storage_buffer().end() && it->second == b.buffer) {
    return L.FromStorage(b.buffer, m);
  }
  // The base's buffer does not hold the view's storage coordinates (a
  // realized view of a loader): translate through the base's own meta.
  const TensorMeta& bm = L.TMeta(base);
  ASSIGN_OR_RETURN(
      Expr delta,
      InUnitsOf(symbolic::Sub(b.offset, bm.storage_offset), bm.dtype, m.dtype));
  if (b.strides == bm.strides) {
    return L.FromBuffer(b.buffer, m.dtype, m.sizes, m.strides,
                        symbolic::Add(m.storage_offset, delta));
  }
  if (L.Mutated(m.storage)) {
    // A copy would not alias the storage the program writes.
    return c.Error("a view of a value whose layout differs from its meta");
  }
  // The base is in memory in another layout than its meta's (a value
  // realized before its view was known): a copy of it in the meta's
  // layout, which the view's meta then indexes.
  TBox loader = b;
  loader.buffer = -1;
  ASSIGN_OR_RETURN(TBox copy, L.Realize(loader, &bm));
  return L.FromBuffer(copy.buffer, m.dtype, m.sizes, m.strides,
                      m.storage_offset);
}

// The view `m` of in-memory `b` (the value of `base`): index arithmetic over
// the view's meta, refused where it reaches outside the buffer (as_strided
// may ask for any layout).
absl::StatusOr<TBox> ViewOfBuffer(Lowerer& L, const Call& c, const Node* base,
                                  const TBox& b, const TensorMeta& m) {
  ASSIGN_OR_RETURN(TBox t, ViewLayoutOfBuffer(L, c, base, b, m));
  RETURN_IF_ERROR(
      L.CheckViewInBuffer(c.node(), t.buffer, t.sizes, t.strides, t.offset));
  return t;
}

// The most a loader may cost and still be read through a reshape.
constexpr int kReshapedLoaderCost = 8;

// _reshape_copy (a reshape whose input's layout allows no view): the input
// read in row-major order, a new tensor wherever it is realized; a costly
// input (a pool's window) computed once first, as for a reshape.
absl::StatusOr<NodeValue> LowerReshapeCopy(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  Node* base = c.NodeAt(0);
  if (base == nullptr) return c.Error("the reshaped argument is not a tensor");
  TBox x = L.value(base).t;
  if (x.buffer < 0 && x.cost > kReshapedLoaderCost) {
    RETURN_IF_ERROR(L.RealizeNode(base));
    x = L.value(base).t;
  }
  return TensorValue(ReshapeLoader(x, m.sizes));
}

}  // namespace

// A view op: index arithmetic over the view's meta when the base is in
// memory; otherwise a few structural views compose with the base's loader,
// and the rest realize the base first. Ops returning several views (split,
// unbind, ...) give a tuple of them.
absl::StatusOr<NodeValue> LowerView(Lowerer& L, const Call& c) {
  const ir::ValueMeta& vm = L.Meta(&c.node());
  Node* base = c.NodeAt(0);
  if (base == nullptr) return c.Error("the viewed argument is not a tensor");
  TBox b = L.value(base).t;
  std::string name = c.op().schema.name;
  if (ir::MutatesMetadata(c.node())) name.pop_back();  // t_ views as t
  if (vm.kind == ir::ValueMeta::Kind::kTuple) {
    RETURN_IF_ERROR(L.RealizeNode(base));
    b = L.value(base).t;
    std::vector<NodeValue> pieces;
    for (const ir::ValueMeta& e : vm.elements) {
      if (e.kind != ir::ValueMeta::Kind::kTensor) {
        return c.Error("a view op result that is not a tensor");
      }
      ASSIGN_OR_RETURN(TBox t, ViewOfBuffer(L, c, base, b, e.tensor));
      pieces.push_back(TensorValue(std::move(t)));
    }
    return TupleValue(std::move(pieces));
  }
  const TensorMeta& m = vm.tensor;
  // A reshape a pass made after shape propagation renamed the copying ones
  // (ir/shape_prop.cc) may copy too: its storage is then its own.
  if (name == "reshape" && m.storage != L.TMeta(base).storage) {
    return LowerReshapeCopy(L, c);
  }
  if (b.buffer < 0) {
    if (name == "expand" || name == "expand_copy") {
      return TensorValue(L.Broadcast(b, m.sizes));
    }
    int64_t rank = static_cast<int64_t>(b.sizes.size());
    if (name == "permute") {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> p, c.IntList(1));
      if (!p.has_value()) return c.Error("permute without its dims");
      std::vector<int64_t> perm = *p;
      for (int64_t& d : perm) d = d < 0 ? d + rank : d;
      return TensorValue(PermuteLoader(b, perm, m.sizes));
    }
    if (name == "transpose" || name == "t") {
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
      int64_t d0 = 0, d1 = 1;
      if (name == "transpose") {
        ASSIGN_OR_RETURN(d0, c.Int(1));
        ASSIGN_OR_RETURN(d1, c.Int(2));
      }
      if (d0 < 0) d0 += rank;
      if (d1 < 0) d1 += rank;
      if (rank >= 2) std::swap(perm[d0], perm[d1]);
      return TensorValue(PermuteLoader(b, perm, m.sizes));
    }
    // A reshape reads its base at divided and wrapped indices, which keep a
    // kernel from running its loops in another order or in vector lanes:
    // a costly base (a pool's window) is computed once, in its own shape.
    bool reshapes =
        name == "view" || name == "reshape" || name == "_unsafe_view";
    if ((reshapes && b.cost <= kReshapedLoaderCost) || name == "unsqueeze" ||
        name == "squeeze" || name == "alias") {
      return TensorValue(ReshapeLoader(b, m.sizes));
    }
    RETURN_IF_ERROR(L.RealizeNode(base));
    b = L.value(base).t;
  }
  ASSIGN_OR_RETURN(TBox t, ViewOfBuffer(L, c, base, b, m));
  return TensorValue(std::move(t));
}

namespace {

// _unsafe_view (a reshape that PyTorch does not count as a view): the
// buffer reread when it is contiguous, else the row-major loader.
absl::StatusOr<NodeValue> LowerUnsafeView(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (x.buffer >= 0 && x.strides == Contiguous(x.sizes)) {
    return TensorValue(L.FromBuffer(x.buffer, m.dtype, m.sizes,
                                    Contiguous(m.sizes), x.offset));
  }
  return TensorValue(ReshapeLoader(x, m.sizes));
}

// copy(self, src): src broadcast to self's sizes in self's dtype.
absl::StatusOr<NodeValue> LowerCopy(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox src, L.Operand(c, 1, m.dtype));
  return TensorValue(CastBox(L.Broadcast(src, m.sizes), m.dtype));
}

}  // namespace

// scatter(self, src, *args): a copy of self (laid out as the result's meta)
// with src stored where view(result, *args) sees; the view's layout comes
// from the paired view op's meta function.
absl::StatusOr<NodeValue> LowerScatter(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  const OpDef* view = ir::OpRegistry::Global().Find(c.op().scattered_view);
  if (view == nullptr) return c.Error("no paired view op");
  std::vector<ir::Value> positional = {ir::Value::OfMeta(m)};
  absl::flat_hash_map<const Node*, ir::Value> env;
  for (const Node* in : c.node().Inputs()) {
    env[in] = ir::ValueOfMeta(L.Meta(in));
  }
  for (size_t i = 2; i < c.node().args().size(); ++i) {
    ASSIGN_OR_RETURN(ir::Value v, ir::ArgValue(c.node().args()[i], env));
    positional.push_back(std::move(v));
  }
  std::vector<std::pair<std::string, ir::Value>> kwargs;
  for (const auto& [name, a] : c.node().kwargs()) {
    ASSIGN_OR_RETURN(ir::Value v, ir::ArgValue(a, env));
    kwargs.emplace_back(name, std::move(v));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Value> bound,
                   ir::BindArguments(view->schema, std::move(positional),
                                     std::move(kwargs), view->target));
  ir::OpCall call(*view, std::move(bound), &L.env());
  ASSIGN_OR_RETURN(ir::Value vm, view->meta(call));
  if (!vm.is_tensor()) return c.Error("the paired view is not a tensor");
  TensorMeta region =
      ir::ApplyReplacements(ir::ValueMeta::Tensor(vm.meta), L.env()).tensor;
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox src, L.Tensor(c, 1));
  TBox fresh = CastBox(self, m.dtype);
  fresh.buffer = -1;  // a new copy, never self's memory
  ASSIGN_OR_RETURN(TBox out, L.Realize(fresh, &m));
  RETURN_IF_ERROR(L.CheckViewInBuffer(c.node(), out.buffer, region.sizes,
                                      region.strides, region.storage_offset));
  TBox dst = L.FromBuffer(out.buffer, m.dtype, region.sizes, region.strides,
                          region.storage_offset);
  RETURN_IF_ERROR(L.WriteInto(&c.node(), dst, CastBox(src, m.dtype)));
  return TensorValue(out);
}

void RegisterViews(LoweringTable& T) {
  T.Add(Op("aten._unsafe_view.default"), LowerUnsafeView);
  T.Add(Op("aten._reshape_copy.default"), LowerReshapeCopy);
  T.Add(Op("aten.copy.default"), LowerCopy);
}

}  // namespace lathe::codegen::lower
