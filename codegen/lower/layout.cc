// The layout family's lowering rules: ops that move elements by index
// arithmetic without computing (tril/triu, flip, roll, repeat, the pads,
// diag_embed, cat, stack).

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

Expr AbsIndex(Expr e) { return symbolic::Max({e, symbolic::Neg(e)}); }

// tril / triu(self, diagonal): elements off the triangle are 0.
LowerFn TriangleFn(bool lower) {
  return [lower](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(int64_t diagonal, c.Int("diagonal"));
    size_t n = x.sizes.size();
    if (n < 2) return c.Error("needs at least 2 dims");
    auto identity =
        [](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
      return idx;
    };
    auto keep = [lower, diagonal, n](KernelBuilder& kb,
                                     const std::vector<Expr>& idx) {
      int d = kb.Index(symbolic::Sub(idx[n - 1], idx[n - 2]));
      return kb.Call(lower ? "le" : "ge",
                     {d, kb.IntConstant(diagonal, DType::kInt64)},
                     DType::kBool);
    };
    return TensorValue(Remap(x, x.sizes, identity, keep, 0));
  };
}

absl::StatusOr<NodeValue> LowerFlip(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, c.IntList(1));
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> flip(rank, false);
  for (int64_t d : dims.value_or(std::vector<int64_t>{})) {
    flip[d < 0 ? d + rank : d] = true;
  }
  std::vector<Expr> sizes = x.sizes;
  return TensorValue(Remap(
      x, sizes,
      [flip, sizes](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        std::vector<Expr> sub = idx;
        for (size_t d = 0; d < idx.size(); ++d) {
          if (flip[d]) {
            sub[d] = symbolic::Sub(symbolic::Sub(sizes[d], symbolic::Int(1)),
                                   idx[d]);
          }
        }
        return sub;
      }));
}

// roll(self, shifts, dims): with no dims, the flattened tensor rolls.
absl::StatusOr<NodeValue> LowerRoll(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shifts, c.IntList(1));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims,
                   c.IntList(c.Index("dims")));
  std::vector<int64_t> dl = dims.value_or(std::vector<int64_t>{});
  std::vector<int64_t> sl = shifts.value_or(std::vector<int64_t>{});
  TBox in = x;
  if (dl.empty()) {  // flatten, roll, restore
    if (sl.size() != 1) return c.Error("expects one shift without dims");
    in = ReshapeLoader(x, {Product(x.sizes)});
    dl = {0};
  }
  if (dl.size() != sl.size()) return c.Error("shifts and dims differ in size");
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  std::vector<Expr> shift(rank, symbolic::Int(0));
  for (size_t k = 0; k < dl.size(); ++k) {
    int64_t d = dl[k] < 0 ? dl[k] + rank : dl[k];
    shift[d] = symbolic::Add(shift[d], symbolic::Int(sl[k]));
  }
  std::vector<Expr> sizes = in.sizes;
  TBox r = Remap(
      in, sizes,
      [shift, sizes](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        std::vector<Expr> sub = idx;
        for (size_t d = 0; d < idx.size(); ++d) {
          if (shift[d] == symbolic::Int(0)) continue;
          // (i - shift) mod size, kept non-negative.
          ASSIGN_OR_RETURN(Expr s, symbolic::PythonMod(shift[d], sizes[d]));
          ASSIGN_OR_RETURN(
              sub[d],
              symbolic::Mod(symbolic::Add(symbolic::Sub(idx[d], s), sizes[d]),
                            sizes[d]));
        }
        return sub;
      });
  if (dims.value_or(std::vector<int64_t>{}).empty()) {
    r = ReshapeLoader(r, m.sizes);
  }
  return TensorValue(r);
}

// repeat(self, repeats): result index i reads self at i mod size.
absl::StatusOr<NodeValue> LowerRepeat(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  std::vector<Expr> in = x.sizes;
  return TensorValue(Remap(
      x, m.sizes,
      [in](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        size_t off = idx.size() - in.size();
        std::vector<Expr> sub;
        for (size_t d = 0; d < in.size(); ++d) {
          if (IsOne(in[d])) {
            sub.push_back(symbolic::Int(0));
            continue;
          }
          ASSIGN_OR_RETURN(Expr e, symbolic::Mod(idx[off + d], in[d]));
          sub.push_back(e);
        }
        return sub;
      }));
}

// The (left, right) padding of each dim from pad lists given from the last
// dim backwards ([l_last, r_last, l_prev, r_prev, ...]).
std::vector<std::pair<int64_t, int64_t>> PadsByDim(
    const std::vector<int64_t>& pad, size_t rank) {
  std::vector<std::pair<int64_t, int64_t>> out(rank, {0, 0});
  for (size_t k = 0; k < pad.size() && k / 2 < rank; k += 2) {
    size_t d = rank - 1 - k / 2;
    out[d] = {pad[k], k + 1 < pad.size() ? pad[k + 1] : 0};
  }
  return out;
}

// constant_pad_nd / reflection_pad / replication_pad.
enum class PadMode { kConstant, kReflect, kReplicate };

LowerFn PadFn(PadMode mode) {
  return [mode](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> pad, c.IntList(1));
    double value = 0;
    if (mode == PadMode::kConstant) {
      ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, "value"));
      value = v.value_or(0);
    }
    auto pads = PadsByDim(pad.value_or(std::vector<int64_t>{}), x.sizes.size());
    std::vector<Expr> in = x.sizes;
    IndexMap map =
        [mode, pads, in](
            const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
      std::vector<Expr> sub = idx;
      for (size_t d = 0; d < idx.size(); ++d) {
        if (pads[d].first == 0 && pads[d].second == 0) continue;
        Expr i = symbolic::Sub(idx[d], symbolic::Int(pads[d].first));
        Expr last = symbolic::Sub(in[d], symbolic::Int(1));
        if (mode == PadMode::kReflect) {  // last - |last - |i||
          i = symbolic::Sub(last, AbsIndex(symbolic::Sub(last, AbsIndex(i))));
        }
        sub[d] = ClampIndex(i, in[d]);
      }
      return sub;
    };
    IndexMask valid = nullptr;
    if (mode == PadMode::kConstant) {
      valid = [pads, in](KernelBuilder& kb, const std::vector<Expr>& idx) {
        int keep = kb.Constant(1, DType::kBool);
        for (size_t d = 0; d < idx.size(); ++d) {
          if (pads[d].first <= 0 && pads[d].second <= 0) continue;
          Expr i = symbolic::Sub(idx[d], symbolic::Int(pads[d].first));
          keep = kb.Call("logical_and",
                         {keep, InRange(kb, i, symbolic::Int(0), in[d])},
                         DType::kBool);
        }
        return keep;
      };
    }
    return TensorValue(Remap(x, m.sizes, map, valid, value));
  };
}

// diag_embed(self, offset, dim1, dim2): self's last dim on a diagonal of
// two new dims, zeros elsewhere.
absl::StatusOr<NodeValue> LowerDiagEmbed(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t offset, c.Int("offset"));
  ASSIGN_OR_RETURN(int64_t dim1, c.Int("dim1"));
  ASSIGN_OR_RETURN(int64_t dim2, c.Int("dim2"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim1 < 0) dim1 += rank;
  if (dim2 < 0) dim2 += rank;
  Expr n = x.sizes.back();
  IndexMap map =
      [=](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
    std::vector<Expr> sub;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != dim1 && d != dim2) sub.push_back(idx[d]);
    }
    sub.push_back(ClampIndex(offset >= 0 ? idx[dim1] : idx[dim2], n));
    return sub;
  };
  IndexMask on_diagonal = [=](KernelBuilder& kb, const std::vector<Expr>& idx) {
    int d = kb.Index(symbolic::Sub(idx[dim2], idx[dim1]));
    return kb.Call("eq", {d, kb.IntConstant(offset, DType::kInt64)},
                   DType::kBool);
  };
  return TensorValue(Remap(x, m.sizes, map, on_diagonal, 0));
}

// The tensors of list argument i (cat's and stack's `tensors`).
absl::StatusOr<std::vector<TBox>> TensorList(Lowerer& L, const Call& c, int i) {
  const Bound& list = c.at(i);
  if (list.arg == nullptr || list.arg->kind != Arg::Kind::kList) {
    return c.Error(absl::StrCat("argument ", i, " is not a list"));
  }
  std::vector<TBox> out;
  for (const Arg& a : list.arg->list) {
    const NodeValue* v =
        a.kind == Arg::Kind::kNode ? &L.value(a.node) : nullptr;
    if (v == nullptr || v->kind != NodeValue::Kind::kTensor) {
      return c.Error(
          absl::StrCat("an element of argument ", i, " is not a tensor"));
    }
    out.push_back(v->t);
  }
  return out;
}

// cat(tensors, dim): each input stored into its slice of one buffer.
absl::StatusOr<NodeValue> LowerCat(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::vector<TBox> inputs, TensorList(L, c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim < 0) dim += rank;
  int b = ResultBuffer(L, m);
  Expr start = symbolic::Int(0);
  for (const TBox& t : inputs) {
    // PyTorch skips 1-d empty inputs of any other shape.
    if (t.sizes.size() == 1 && t.sizes[0] == symbolic::Int(0) && rank != 1) {
      continue;
    }
    Expr offset =
        symbolic::Add(m.storage_offset, symbolic::Mul(start, m.strides[dim]));
    RETURN_IF_ERROR(L.Store(b, m.strides, offset, t));
    start = symbolic::Add(start, t.sizes[dim]);
  }
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// stack(tensors, dim): input k stored at index k of the new dim.
absl::StatusOr<NodeValue> LowerStack(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::vector<TBox> inputs, TensorList(L, c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim < 0) dim += rank;
  int b = ResultBuffer(L, m);
  std::vector<Expr> sizes = m.sizes, strides = m.strides;
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Expr offset = symbolic::Add(
        m.storage_offset,
        symbolic::Mul(symbolic::Int(static_cast<int64_t>(k)), m.strides[dim]));
    RETURN_IF_ERROR(L.Store(b, strides, offset, L.Broadcast(inputs[k], sizes)));
  }
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

}  // namespace

void RegisterLayout(LoweringTable& T) {
  T.Add(Op("aten.tril.default"), TriangleFn(true));
  T.Add(Op("aten.triu.default"), TriangleFn(false));
  T.Add(Op("aten.flip.default"), LowerFlip);
  T.Add(Op("aten.roll.default"), LowerRoll);
  T.Add(Op("aten.repeat.default"), LowerRepeat);
  T.Add(Op("aten.constant_pad_nd.default"), PadFn(PadMode::kConstant));
  for (const char* d : {"1d", "2d", "3d"}) {
    T.Add(Op(absl::StrCat("aten.reflection_pad", d, ".default")),
          PadFn(PadMode::kReflect));
    T.Add(Op(absl::StrCat("aten.replication_pad", d, ".default")),
          PadFn(PadMode::kReplicate));
  }
  T.Add(Op("aten.diag_embed.default"), LowerDiagEmbed);
  T.Add(Op("aten.cat.default"), LowerCat);
  T.Add(Op("aten.stack.default"), LowerStack);
}

}  // namespace lathe::codegen::lower
