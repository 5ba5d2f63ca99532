// The data-dependent family's lowering rules: ops whose result sizes come
// from the data (nonzero, masked_select, masked_scatter's source positions)
// through a count, a host bind step and a running-count scan, and
// _assert_scalar's host check.

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
#include "symbolic/printer.h"

namespace lathe::codegen::lower {
namespace {

// A kernel whose one section walks `sizes` in row-major order, the order a
// scan counts in.
Kernel RowMajorWalk(Lowerer& L, const std::vector<Expr>& sizes) {
  Kernel k = L.NewKernel({});
  Section& sec = k.sections[0];
  for (size_t d = 0; d < sizes.size(); ++d) {
    sec.vars.push_back(SectionVar(0, static_cast<int>(d)));
  }
  sec.ranges = sizes;
  return k;
}

// Where bool `flag` holds, how many elements before this one in the walk it
// held for (a running count, minus 1); 0 elsewhere.
int TruePosition(KernelBuilder& kb, int flag) {
  ScalarOp scan;
  scan.kind = ScalarOp::Kind::kScan;
  scan.reduce = ReduceKind::kSum;
  scan.dtype = DType::kInt64;
  scan.args = {kb.Cast(flag, DType::kInt64)};
  int running = kb.Add(std::move(scan));
  return kb.Call("where",
                 {flag,
                  kb.Call("sub", {running, kb.IntConstant(1, DType::kInt64)},
                          DType::kInt64),
                  kb.IntConstant(0, DType::kInt64)},
                 DType::kInt64);
}

// masked_scatter(self, mask, source): one kernel whose single section walks
// the broadcast result in row-major order, counting the mask's true
// elements with a scan; where mask is true the element is source's
// (count - 1)-th in row-major order (source flattened into a contiguous
// buffer, the position checked against its size), elsewhere self's.
absl::StatusOr<NodeValue> LowerMaskedScatter(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox mask, L.Tensor(c, 1));
  ASSIGN_OR_RETURN(TBox source, L.Tensor(c, 2));
  Expr numel = symbolic::Int(1);
  for (Expr e : source.sizes) numel = symbolic::Mul(numel, e);
  if (numel == symbolic::Int(0)) return c.Error("an empty source");
  ASSIGN_OR_RETURN(TBox flat,
                   L.Realize(ReshapeLoader(source, {numel}), nullptr));
  self = L.Broadcast(self, m.sizes);
  mask = L.Broadcast(mask, m.sizes);
  Kernel k = RowMajorWalk(L, m.sizes);
  const std::vector<Expr> idx = k.sections[0].vars;
  KernelBuilder kb(&k);
  ASSIGN_OR_RETURN(int keep, mask.load(kb, idx));
  keep = kb.Cast(keep, DType::kBool);
  // Source position where mask is true, 0 elsewhere (not read).
  int at = TruePosition(kb, keep);
  int checked = L.CheckIndex(kb, c.node(), at, numel, false, 0);
  int from_source = IndirectLoad(kb, flat, {IndirectVar(0)}, {checked});
  ASSIGN_OR_RETURN(int from_self, self.load(kb, idx));
  DType compute = ComputeDType(m.dtype);
  int v = kb.Call(
      "where",
      {keep, kb.Cast(from_source, compute), kb.Cast(from_self, compute)},
      compute);
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  kb.Store(b, m.dtype, Linear(idx, m.strides, m.storage_offset),
           kb.Cast(v, m.dtype));
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// `flags` realized as bools, and the host step that binds data-dependent
// size `u` to how many are true (a sum reduction of them): the count and
// any later walk must read the same booleans (an expression recomputed in
// a vector and a scalar loop could round differently and disagree at a
// threshold), so they are in memory first.
absl::StatusOr<TBox> BindTrueCount(Lowerer& L, const TBox& flags, Expr u) {
  ASSIGN_OR_RETURN(TBox keep, L.Realize(CastBox(flags, DType::kBool), nullptr));
  TensorMeta count_meta;
  count_meta.dtype = DType::kInt64;
  std::vector<int64_t> all;
  for (size_t d = 0; d < flags.sizes.size(); ++d) {
    all.push_back(static_cast<int64_t>(d));
  }
  ASSIGN_OR_RETURN(TBox count,
                   L.Reduce(CastBox(keep, DType::kInt64), all, ReduceKind::kSum,
                            DType::kInt64, count_meta, nullptr));
  L.EmitBind(u, count.buffer, count.offset);
  return keep;
}

// nonzero(x): the coordinates of x's nonzero elements in row-major order,
// an i64 [u0, rank] laid out column-major as PyTorch's CPU kernel writes
// it. A reduction counts them and a host step binds u0 to the count; then
// one kernel walks x in row-major order with a running count (a scan) and
// stores each nonzero element's coordinates in row count - 1 (a masked
// store: elsewhere nothing is written).
absl::StatusOr<NodeValue> LowerNonzero(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  const size_t rank = x.sizes.size();
  if (m.sizes.size() != 2 || !m.sizes[0].is_symbol() || L.IsBound(m.sizes[0])) {
    return c.Error("expected a result of a fresh data-dependent size");
  }
  const Expr u = m.sizes[0];
  ASSIGN_OR_RETURN(TBox keep, BindTrueCount(L, x, u));
  int b = L.NewBuffer(DType::kInt64,
                      StorageNumel(m.sizes, m.strides, m.storage_offset));
  Kernel k = RowMajorWalk(L, x.sizes);
  const std::vector<Expr> idx = k.sections[0].vars;
  KernelBuilder kb(&k);
  ASSIGN_OR_RETURN(int nz, keep.load(kb, idx));
  // The element's row where x is nonzero (within [0, u0): the count kernel
  // saw the same elements), 0 elsewhere (not written).
  int row = TruePosition(kb, nz);
  // The count kernel read the same buffer, so the row is below u0; the mask
  // says so too, so no store can leave the buffer.
  int in_range = kb.Call("lt", {row, kb.Index(u)}, DType::kBool);
  int mask = kb.Call("logical_and", {nz, in_range}, DType::kBool);
  for (size_t d = 0; d < rank; ++d) {
    Expr at = symbolic::Add(
        {m.storage_offset, symbolic::Mul(IndirectVar(0), m.strides[0]),
         symbolic::Mul(symbolic::Int(static_cast<int64_t>(d)), m.strides[1])});
    kb.MaskedStore(b, DType::kInt64, at, kb.Index(idx[d]), mask, {row});
  }
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

}  // namespace

// x [P..., M..., R...] (`lead` dims P) and a mask over M: the result
// [P..., u, R...] (m), whose row j holds x's elements at the mask's j-th
// true position in row-major order, as masked_select and x[mask] give. A
// reduction counts the mask's true elements and a host step binds u to the
// count; one kernel walks the mask with a running count (a scan) and
// stores each true position's row; one kernel walks x and stores each
// element whose mask is true into its row (a masked store: the row is below
// u, since the count kernel saw the same booleans).
absl::StatusOr<NodeValue> MaskedRows(Lowerer& L, const Call& c, TBox x,
                                     const TBox& mask, size_t lead) {
  const TensorMeta& m = OutMeta(L, c);
  const size_t mrank = mask.sizes.size();
  if (m.sizes.size() != x.sizes.size() - mrank + 1 ||
      !m.sizes[lead].is_symbol() || L.IsBound(m.sizes[lead])) {
    return c.Error("expected a result of a fresh data-dependent size");
  }
  const Expr u = m.sizes[lead];
  ASSIGN_OR_RETURN(TBox keep, BindTrueCount(L, mask, u));
  // The row of each true position (0 elsewhere), over the mask's dims.
  Expr zero = symbolic::Int(0);
  std::vector<Expr> row_strides = Contiguous(mask.sizes);
  int rows_b =
      L.NewBuffer(DType::kInt64, StorageNumel(mask.sizes, row_strides, zero));
  {
    Kernel k = RowMajorWalk(L, mask.sizes);
    const std::vector<Expr> idx = k.sections[0].vars;
    KernelBuilder kb(&k);
    ASSIGN_OR_RETURN(int nz, keep.load(kb, idx));
    kb.Store(rows_b, DType::kInt64, Linear(idx, row_strides, zero),
             TruePosition(kb, nz));
    L.Emit(std::move(k));
  }
  TBox rows =
      L.FromBuffer(rows_b, DType::kInt64, mask.sizes, row_strides, zero);
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  Kernel k = L.NewKernel(x.sizes);
  KernelBuilder kb(&k);
  std::vector<Expr> at_mask(k.vars.begin() + lead,
                            k.vars.begin() + lead + mrank);
  ASSIGN_OR_RETURN(int nz, keep.load(kb, at_mask));
  ASSIGN_OR_RETURN(int row, rows.load(kb, at_mask));
  int in_range = kb.Call("lt", {row, kb.Index(u)}, DType::kBool);
  int store = kb.Call("logical_and", {kb.Cast(nz, DType::kBool), in_range},
                      DType::kBool);
  std::vector<Expr> terms = {m.storage_offset};
  for (size_t d = 0; d < lead; ++d) {
    terms.push_back(symbolic::Mul(k.vars[d], m.strides[d]));
  }
  terms.push_back(symbolic::Mul(IndirectVar(0), m.strides[lead]));
  for (size_t d = lead + mrank; d < x.sizes.size(); ++d) {
    terms.push_back(symbolic::Mul(k.vars[d], m.strides[d - mrank + 1]));
  }
  ASSIGN_OR_RETURN(int v, x.load(kb, k.vars));
  kb.MaskedStore(b, m.dtype, symbolic::Add(terms), kb.Cast(v, m.dtype), store,
                 {row});
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

namespace {

// masked_select(self, mask): MaskedRows over the two broadcast.
absl::StatusOr<NodeValue> LowerMaskedSelect(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox mask, L.Tensor(c, 1));
  std::vector<Expr> sizes =
      self.sizes.size() >= mask.sizes.size() ? self.sizes : mask.sizes;
  // The broadcast shape: a 1 takes the other's size (the meta checked it).
  for (const TBox* t : {&self, &mask}) {
    for (size_t e = 0; e < t->sizes.size(); ++e) {
      Expr& s = sizes[sizes.size() - t->sizes.size() + e];
      if (IsOne(s)) s = t->sizes[e];
    }
  }
  return MaskedRows(L, c, L.Broadcast(self, sizes), L.Broadcast(mask, sizes),
                    0);
}

// _assert_scalar(cond, message): a host step checks the condition where it
// stands (a data-dependent u0's range), unless it is a literal. What the
// ShapeEnv knows is not used to drop it: the assertion itself taught it.
absl::StatusOr<NodeValue> LowerAssertScalar(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(std::string message, c.String("assert_msg"));
  Expr cond;
  const Bound& b = c.at(0);
  if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
    const NodeValue& v = L.value(b.arg->node);
    if (v.kind != NodeValue::Kind::kNumber) {
      return c.Error("argument 0 is not a number");
    }
    cond = v.number;
  } else {
    ASSIGN_OR_RETURN(int64_t v, c.Int(0));
    cond = symbolic::Bool(v != 0);
  }
  if (cond.kind() == symbolic::ExprKind::kBoolean ||
      cond.kind() == symbolic::ExprKind::kInteger) {
    bool holds = cond.kind() == symbolic::ExprKind::kBoolean
                     ? cond.bool_value()
                     : cond.int_value() != 0;
    if (!holds) return c.Error(absl::StrCat("always fails: ", message));
    return NodeValue();
  }
  L.EmitAssert(cond,
               absl::StrCat("node '", c.node().name(),
                            "' (aten._assert_scalar.default): ", message));
  return NodeValue();
}

}  // namespace

void RegisterDataDependent(LoweringTable& T) {
  T.Add(Op("aten.nonzero.default"), LowerNonzero);
  T.Add(Op("aten.masked_select.default"), LowerMaskedSelect);
  T.Add(Op("aten.masked_scatter.default"), LowerMaskedScatter);
  T.Add(Op("aten._assert_scalar.default"), LowerAssertScalar);
}

}  // namespace lathe::codegen::lower
