// The linear-algebra and extern-call family's lowering rules: mm, bmm (and
// their out_dtype forms), addmm, baddbmm (a matmul routine; bf16 through bgemm
// where the target has it, f16 and other bf16 through the f32 one), mv (a
// contraction), sort and topk (a sort routine).

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

// `t`'s values converted to `to`, as a loader (not in memory).
TBox Converted(const TBox& t, DType to) {
  TBox out = t;
  out.dtype = to;
  out.buffer = -1;
  out.cost = t.cost + 1;
  out.load = [t, to](KernelBuilder& kb,
                     const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, t.load(kb, idx));
    return kb.Cast(v, to);
  };
  return out;
}

absl::StatusOr<NodeValue> LowerMatmul(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  std::string name = c.op().schema.name;
  bool addmm = name == "addmm" || name == "baddbmm";
  int ai = addmm ? 1 : 0;
  ASSIGN_OR_RETURN(TBox a, L.Tensor(c, ai));
  ASSIGN_OR_RETURN(TBox b, L.Tensor(c, ai + 1));
  bool batched = a.sizes.size() == 3;
  // f16 and bf16 products accumulate in f32 and round once (PyTorch's
  // CPU; cuBLAS's half GEMMs accumulate in f32 too), or not at all for
  // mm.dtype / bmm.dtype's f32 result: bf16 ones through the target's bf16
  // routine where it has one (bgemm reads the operands as they are), the
  // rest through the f32 routine on converted operands.
  const bool half = a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16;
  if (a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64 || half) {
    const DType gemm = half ? DType::kFloat32 : a.dtype;
    const bool bgemm = a.dtype == DType::kBFloat16 && L.routines().bgemm &&
                       b.dtype == DType::kBFloat16;
    if (half && !bgemm) {
      a = Converted(a, gemm);
      b = Converted(b, gemm);
    }
    ASSIGN_OR_RETURN(a, L.Realize(a, nullptr));
    ASSIGN_OR_RETURN(b, L.Realize(b, nullptr));
    std::vector<Expr> strides = Contiguous(m.sizes);
    int out = L.NewBuffer(gemm, Product(m.sizes));
    Expr zero = symbolic::Int(0);
    auto st = [&](const TBox& t, int d) {
      return batched ? t.strides[d] : (d == 0 ? zero : t.strides[d - 1]);
    };
    size_t r = batched ? 1 : 0;
    std::vector<Expr> args = {batched ? m.sizes[0] : symbolic::Int(1),
                              m.sizes[r],
                              m.sizes[r + 1],
                              a.sizes[r + 1],
                              a.offset,
                              st(a, 0),
                              st(a, 1),
                              st(a, 2),
                              b.offset,
                              st(b, 0),
                              st(b, 1),
                              st(b, 2),
                              zero,
                              batched ? strides[0] : zero,
                              strides[r],
                              strides[r + 1]};
    L.EmitExtern(bgemm                     ? "bgemm"
                 : gemm == DType::kFloat32 ? "sgemm"
                                           : "dgemm",
                 {out, a.buffer, b.buffer}, args);
    TBox prod = L.FromBuffer(out, gemm, m.sizes, strides, zero);
    if (!addmm) {
      return TensorValue(m.dtype != gemm ? Converted(prod, m.dtype) : prod);
    }
    // beta * self + alpha * product, as a loader the epilogue fuses into.
    ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(TBox beta, L.Operand(c, c.Index("beta"), gemm));
    ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), gemm));
    TBox sb = L.Pointwise("mul", {self, beta}, gemm, gemm, m.sizes);
    TBox pa = L.Pointwise("mul", {prod, alpha}, gemm, gemm, m.sizes);
    return TensorValue(L.Pointwise("add", {sb, pa}, gemm, m.dtype, m.sizes));
  }
  // Integer dtypes: a sum-of-products reduction, computed in the opmath
  // type.
  DType acc = ComputeDType(m.dtype);
  size_t r = batched ? 1 : 0;
  Expr k = a.sizes[r + 1];
  // prod[b, i, j, kk] = a[b, i, kk] * b[b, kk, j], reduced over kk.
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  p.sizes.push_back(k);
  p.reads = a.reads;
  p.reads.insert(b.reads.begin(), b.reads.end());
  p.load = [a, b, acc, batched](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> ia, ib;
    if (batched) {
      ia = {idx[0], idx[1], idx[3]};
      ib = {idx[0], idx[3], idx[2]};
    } else {
      ia = {idx[0], idx[2]};
      ib = {idx[2], idx[1]};
    }
    ASSIGN_OR_RETURN(int va, a.load(kb, ia));
    ASSIGN_OR_RETURN(int vb, b.load(kb, ib));
    return kb.Call("mul", {kb.Cast(va, acc), kb.Cast(vb, acc)}, acc);
  };
  ASSIGN_OR_RETURN(TBox prod,
                   L.Reduce(p, {static_cast<int64_t>(p.sizes.size()) - 1},
                            ReduceKind::kSum, acc, m, nullptr));
  if (!addmm) return TensorValue(prod);
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox beta, L.Operand(c, c.Index("beta"), acc));
  ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), acc));
  TBox sb = L.Pointwise("mul", {self, beta}, acc, acc, m.sizes);
  TBox pa = L.Pointwise("mul", {prod, alpha}, acc, acc, m.sizes);
  return TensorValue(L.Pointwise("add", {sb, pa}, acc, m.dtype, m.sizes));
}

// mv(self, vec) and dot(self, other): a sum of products.
absl::StatusOr<NodeValue> LowerContraction(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox a, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox v, L.Tensor(c, 1));
  TBox p;
  p.dtype = acc;
  p.sizes = a.sizes;  // [m, k] or [k]
  p.reads = a.reads;
  p.reads.insert(v.reads.begin(), v.reads.end());
  p.load = [a, v, acc](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int x, a.load(kb, idx));
    ASSIGN_OR_RETURN(int y, v.load(kb, {idx.back()}));
    return kb.Call("mul", {kb.Cast(x, acc), kb.Cast(y, acc)}, acc);
  };
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(p, {static_cast<int64_t>(a.sizes.size()) - 1},
                            ReduceKind::kSum, acc, m, nullptr));
  return TensorValue(out);
}

// sort(self, dim, descending) and topk(self, k, dim, largest, sorted): one
// call of the runtime's sort (runtime/sort.h: PyTorch's CPU order, ties
// included) on the realized input, into values and indices buffers laid
// out as the metas say. A dimension eager PyTorch sees with stride 0 (an
// expanded input) keeps its order, as PyTorch's kernel does.
absl::StatusOr<NodeValue> SortCall(Lowerer& L, const Call& c, bool topk) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(values, indices)"));
  const TensorMeta& mv = *metas.first;
  const TensorMeta& mi = *metas.second;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  if (dim < 0) dim += std::max<int64_t>(rank, 1);
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1)) {
    return c.Error("dim out of range");
  }
  ASSIGN_OR_RETURN(bool descending, c.Bool(topk ? "largest" : "descending"));
  // topk's sorted; for sort 1, or 2 for a stable sort (sort.stable with
  // stable=True; None is False), in the same slot.
  int64_t sorted = 1;
  if (topk) {
    ASSIGN_OR_RETURN(bool s, c.Bool("sorted"));
    sorted = s ? 1 : 0;
  } else if (c.Has("stable")) {
    ASSIGN_OR_RETURN(bool stable, c.Bool("stable"));
    sorted = stable ? 2 : 1;
  }
  Expr k = symbolic::Int(-1);
  if (topk) k = rank == 0 ? symbolic::Int(1) : mv.sizes[dim];
  bool keep_order = false;
  if (const Node* in = c.NodeAt(0);
      !topk && rank > 0 && in != nullptr &&
      in->meta().kind == ir::ValueMeta::Kind::kTensor) {
    keep_order = in->meta().tensor.strides[dim] == symbolic::Int(0);
  }
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  Expr zero = symbolic::Int(0);
  int values = L.NewBuffer(mv.dtype, StorageNumel(mv.sizes, mv.strides, zero));
  int indices =
      L.NewBuffer(DType::kInt64, StorageNumel(mi.sizes, mi.strides, zero));
  std::vector<Expr> g = {symbolic::Int(static_cast<int64_t>(x.dtype)),
                         symbolic::Int(rank),
                         symbolic::Int(dim),
                         symbolic::Int(descending ? 1 : 0),
                         k,
                         symbolic::Int(sorted),
                         symbolic::Int(keep_order ? 1 : 0)};
  g.insert(g.end(), x.sizes.begin(), x.sizes.end());
  for (const auto& [offset, strides] :
       {std::pair{x.offset, x.strides}, std::pair{zero, mv.strides},
        std::pair{zero, mi.strides}}) {
    g.push_back(offset);
    g.insert(g.end(), strides.begin(), strides.end());
  }
  L.EmitExtern("sort", {values, indices, x.buffer}, std::move(g),
               /*outputs=*/2);
  return TupleValue(
      {TensorValue(L.FromBuffer(values, mv.dtype, mv.sizes, mv.strides, zero)),
       TensorValue(
           L.FromBuffer(indices, DType::kInt64, mi.sizes, mi.strides, zero))});
}

}  // namespace

void RegisterLinalg(LoweringTable& T) {
  T.Add(Op("aten.mm.default"), LowerMatmul);
  T.Add(Op("aten.bmm.default"), LowerMatmul);
  T.Add(Op("aten.mm.dtype"), LowerMatmul);
  T.Add(Op("aten.bmm.dtype"), LowerMatmul);
  T.Add(Op("aten.addmm.default"), LowerMatmul);
  T.Add(Op("aten.baddbmm.default"), LowerMatmul);
  T.Add(Op("aten.mv.default"), LowerContraction);
  LowerFn sort = [](Lowerer& L, const Call& c) {
    return SortCall(L, c, /*topk=*/false);
  };
  T.Add(Op("aten.sort.default"), sort);
  T.Add(Op("aten.sort.stable"), sort);
  T.Add(Op("aten.topk.default"), [](Lowerer& L, const Call& c) {
    return SortCall(L, c, /*topk=*/true);
  });
  for (const char* op : {"aten._fft_r2c.default", "aten._fft_c2r.default"}) {
    T.Refuse(Op(op),
             "not lowered yet: the cpu backend has no FFT routine (the "
             "interpreter's kernel computes it)");
  }
}

}  // namespace lathe::codegen::lower
