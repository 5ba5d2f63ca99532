// The indexing family's lowering rules: reads through index tensors
// (gather, index_select, embedding, index, _unsafe_index) and writes through
// them (index_put, index_add, scatter, scatter_add, scatter_reduce), each
// index checked at run time as the interpreter checks it.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
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

// A loader over `sizes` reading in-memory `x` at x_index(idx), where some
// dims are indirect: `lookups` gives, per indirect dim, the value loaded at
// idx (before its check).
struct Lookup {
  int64_t dim;  // x's dim it indexes
  Loader value;
  bool wrap;  // negative values count from the end
};

TBox IndirectBox(
    Lowerer& L, const Call& c, const TBox& x, std::vector<Expr> sizes,
    std::vector<Lookup> lookups,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> direct) {
  TBox t;
  t.dtype = x.dtype;
  t.sizes = std::move(sizes);
  t.reads = x.reads;
  t.cost = x.cost + 4 * static_cast<int>(lookups.size());
  Lowerer* lp = &L;
  const Node* node = &c.node();
  t.load = [lp, node, x, lookups, direct](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> sub = direct(idx);
    std::vector<int> values;
    for (size_t k = 0; k < lookups.size(); ++k) {
      const Lookup& l = lookups[k];
      ASSIGN_OR_RETURN(int v, l.value(kb, idx));
      Expr size = x.sizes.empty() ? symbolic::Int(1) : x.sizes[l.dim];
      values.push_back(lp->CheckIndex(kb, *node, v, size, l.wrap, l.dim));
      if (!x.sizes.empty()) sub[l.dim] = IndirectVar(static_cast<int>(k));
    }
    return IndirectLoad(kb, x, sub, values);
  };
  return t;
}

// A Lookup's loader: `index` read at the dims of idx that `pick` chooses.
Loader ReadAt(const TBox& index,
              std::function<std::vector<Expr>(const std::vector<Expr>&)> pick) {
  return [index, pick](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    return index.load(kb, pick(idx));
  };
}

// In-memory `x` read over `sizes` with dim `dim` taken from `index`: at
// output index i, x's coordinates are direct(i) with dim replaced by the
// (checked, unwrapped) value of index at pick(i). gather, index_select and
// embedding differ only in pick and direct.
TBox LookupAlong(
    Lowerer& L, const Call& c, const TBox& x, const TBox& index, int64_t dim,
    std::vector<Expr> sizes,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> pick,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> direct) {
  TBox t = IndirectBox(L, c, x, std::move(sizes),
                       {{dim, ReadAt(index, std::move(pick)), false}},
                       std::move(direct));
  t.reads.insert(index.reads.begin(), index.reads.end());
  return t;
}

// gather(self, dim, index): out[i] = self[i with dim replaced by index[i]].
absl::StatusOr<NodeValue> LowerGather(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  return TensorValue(LookupAlong(
      L, c, x, index, dim, m.sizes,
      [](const std::vector<Expr>& i) { return i; },
      [](const std::vector<Expr>& i) { return i; }));
}

// index_select(self, dim, index): self's slices at index's values along dim.
absl::StatusOr<NodeValue> LowerIndexSelect(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  bool scalar = index.sizes.empty() || x.sizes.empty();
  return TensorValue(LookupAlong(
      L, c, x, index, dim, m.sizes,
      [dim, scalar](const std::vector<Expr>& i) {
        return scalar ? std::vector<Expr>{} : std::vector<Expr>{i[dim]};
      },
      [](const std::vector<Expr>& i) { return i; }));
}

// embedding(weight, indices, ...): out[..., j] = weight[indices[...], j].
absl::StatusOr<NodeValue> LowerEmbedding(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 1));
  if (w.sizes.size() != 2) return c.Error("expects a 2-d weight");
  return TensorValue(LookupAlong(
      L, c, w, index, 0, m.sizes,
      [](const std::vector<Expr>& i) {
        return std::vector<Expr>(i.begin(), i.end() - 1);
      },
      [](const std::vector<Expr>& i) {
        return std::vector<Expr>{symbolic::Int(0), i.back()};
      }));
}

// Advanced indexing by a list of integer tensors (None keeps a dim), as
// index.Tensor and index_put see it. The index tensors broadcast to one
// shape B; when they are adjacent B's dims replace theirs in place, else
// they come first; x's other dims keep their order. Negative indices count
// from the end.
struct AdvancedIndex {
  std::vector<Expr> sizes;  // the indexing result's
  std::vector<Lookup> lookups;
  std::function<std::vector<Expr>(const std::vector<Expr>&)> direct;
  std::set<int> reads;  // of the index tensors
};

absl::StatusOr<AdvancedIndex> AdvancedIndexOf(Lowerer& L, const Call& c,
                                              const TBox& x) {
  const Bound& list = c.at(1);
  if (list.arg == nullptr || list.arg->kind != Arg::Kind::kList) {
    return c.Error("argument 1 is not a list");
  }
  std::vector<std::optional<TBox>> indices;
  std::vector<Expr> b_sizes;  // B, right-aligned broadcast
  for (const Arg& a : list.arg->list) {
    if (a.kind == Arg::Kind::kNone) {
      indices.push_back(std::nullopt);
      continue;
    }
    if (a.kind != Arg::Kind::kNode) return c.Error("an index is not a tensor");
    const NodeValue& v = L.value(a.node);
    if (v.kind != NodeValue::Kind::kTensor) {
      return c.Error("an index is not a tensor");
    }
    if (v.t.dtype == DType::kBool || v.t.dtype == DType::kUInt8) {
      return c.Error(
          "boolean mask indices are data-dependent; the cpu backend does not "
          "support them yet");
    }
    indices.push_back(v.t);
    const std::vector<Expr>& s = v.t.sizes;
    if (s.size() > b_sizes.size()) {
      b_sizes.insert(b_sizes.begin(), s.size() - b_sizes.size(),
                     symbolic::Int(1));
    }
    for (size_t e = 0; e < s.size(); ++e) {
      Expr& b = b_sizes[b_sizes.size() - s.size() + e];
      if (IsOne(b)) b = s[e];
    }
  }
  if (indices.size() > x.sizes.size()) return c.Error("too many indices");
  std::vector<size_t> indexed;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d].has_value()) indexed.push_back(d);
  }
  if (indexed.empty()) return c.Error("expects at least one index tensor");
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  size_t b_at = adjacent ? indexed.front() : 0;
  size_t b_rank = b_sizes.size();
  size_t rank = x.sizes.size();
  AdvancedIndex ai;
  std::vector<size_t> kept;
  for (size_t d = 0; d < rank; ++d) {
    if (d >= indices.size() || !indices[d].has_value()) kept.push_back(d);
  }
  for (size_t k = 0; k <= kept.size(); ++k) {
    if (k == b_at)
      ai.sizes.insert(ai.sizes.end(), b_sizes.begin(), b_sizes.end());
    if (k < kept.size()) ai.sizes.push_back(x.sizes[kept[k]]);
  }
  for (size_t d : indexed) {
    const TBox& ix = *indices[d];
    ai.reads.insert(ix.reads.begin(), ix.reads.end());
    size_t r = ix.sizes.size();
    std::vector<Expr> isz = ix.sizes;
    ai.lookups.push_back(
        {static_cast<int64_t>(d),
         ReadAt(ix,
                [b_at, b_rank, r, isz](const std::vector<Expr>& i) {
                  std::vector<Expr> sub;
                  for (size_t e = 0; e < r; ++e) {
                    sub.push_back(IsOne(isz[e]) ? symbolic::Int(0)
                                                : i[b_at + b_rank - r + e]);
                  }
                  return sub;
                }),
         true});
  }
  ai.direct = [kept, b_at, b_rank, rank](const std::vector<Expr>& i) {
    std::vector<Expr> sub(rank, symbolic::Int(0));
    size_t o = 0;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (k == b_at) o += b_rank;
      sub[kept[k]] = i[o++];
    }
    return sub;
  };
  return ai;
}

// index.Tensor / _unsafe_index.Tensor(self, indices).
absl::StatusOr<NodeValue> LowerIndex(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  // x[mask] (a bool mask, every other index None): MaskedRows.
  if (const Bound& list = c.at(1);
      list.arg != nullptr && list.arg->kind == Arg::Kind::kList) {
    std::optional<size_t> mask_at;
    int tensors = 0;
    for (size_t d = 0; d < list.arg->list.size(); ++d) {
      const Arg& a = list.arg->list[d];
      if (a.kind != Arg::Kind::kNode) continue;
      ++tensors;
      const NodeValue& v = L.value(a.node);
      if (v.kind == NodeValue::Kind::kTensor && v.t.dtype == DType::kBool) {
        mask_at = d;
      }
    }
    if (mask_at.has_value() && tensors == 1) {
      return MaskedRows(L, c, x, L.value(list.arg->list[*mask_at].node).t,
                        *mask_at);
    }
  }
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(AdvancedIndex ai, AdvancedIndexOf(L, c, x));
  TBox t = IndirectBox(L, c, x, m.sizes, ai.lookups, ai.direct);
  t.reads.insert(ai.reads.begin(), ai.reads.end());
  return TensorValue(t);
}

// One kernel over `sizes`, run in order (indices may repeat), storing
// value(idx) into in-memory `target` at the element `lookups` and `direct`
// pick, or combining it with the element's value by `combine` ("add",
// "mul", "maximum", "minimum") when given.
using IndexFn = std::function<std::vector<Expr>(const std::vector<Expr>&)>;

absl::Status IndirectStore(Lowerer& L, const Call& c, const TBox& target,
                           std::vector<Expr> sizes,
                           const std::vector<Lookup>& lookups,
                           const IndexFn& direct, const TBox& value,
                           const std::string& combine) {
  DType compute = ComputeDType(target.dtype);
  Kernel k = L.NewKernel(sizes);
  KernelBuilder kb(&k);
  std::vector<Expr> sub = direct(k.vars);
  std::vector<int> checked;
  for (size_t j = 0; j < lookups.size(); ++j) {
    const Lookup& l = lookups[j];
    ASSIGN_OR_RETURN(int v, l.value(kb, k.vars));
    bool scalar = target.sizes.empty();
    checked.push_back(L.CheckIndex(
        kb, c.node(), v, scalar ? symbolic::Int(1) : target.sizes[l.dim],
        l.wrap, l.dim));
    if (!scalar) sub[l.dim] = IndirectVar(static_cast<int>(j));
  }
  ASSIGN_OR_RETURN(int v, value.load(kb, k.vars));
  v = kb.Cast(v, compute);
  if (!combine.empty()) {
    int old = kb.Cast(IndirectLoad(kb, target, sub, checked), compute);
    v = kb.Call(combine, {old, v}, compute);
  }
  kb.Store(target.buffer, target.dtype,
           Linear(sub, target.strides, target.offset), v, checked);
  L.Emit(std::move(k));
  return absl::OkStatus();
}

// A copy of `self` laid out as the call's meta, then IndirectStore into it.
absl::StatusOr<NodeValue> ScatterInto(Lowerer& L, const Call& c,
                                      const TBox& self, std::vector<Expr> sizes,
                                      const std::vector<Lookup>& lookups,
                                      const IndexFn& direct, const TBox& value,
                                      const std::string& combine) {
  const TensorMeta& m = OutMeta(L, c);
  int b = ResultBuffer(L, m);
  RETURN_IF_ERROR(L.Store(b, m.strides, m.storage_offset, self));
  TBox out = L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset);
  RETURN_IF_ERROR(IndirectStore(L, c, out, std::move(sizes), lookups, direct,
                                value, combine));
  return TensorValue(out);
}

// index_put(self, indices, values, accumulate): values (broadcast to the
// indexing result's sizes) stored at, or added to, self[indices].
absl::StatusOr<NodeValue> LowerIndexPut(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(AdvancedIndex ai, AdvancedIndexOf(L, c, x));
  ASSIGN_OR_RETURN(TBox values, L.Tensor(c, 2));
  ASSIGN_OR_RETURN(bool accumulate, c.Bool("accumulate"));
  return ScatterInto(L, c, x, ai.sizes, ai.lookups, ai.direct,
                     L.Broadcast(values, ai.sizes), accumulate ? "add" : "");
}

// The lowest (or highest) value of the integer `dtype`.
int64_t IntLimit(DType dtype, bool lowest) {
  switch (dtype) {
    case DType::kBool:
      return lowest ? 0 : 1;
    case DType::kUInt8:
      return lowest ? 0 : 255;
    case DType::kInt8:
      return lowest ? -128 : 127;
    case DType::kInt16:
      return lowest ? -32768 : 32767;
    case DType::kInt32:
      return lowest ? std::numeric_limits<int32_t>::min()
                    : std::numeric_limits<int32_t>::max();
    default:
      return lowest ? std::numeric_limits<int64_t>::min()
                    : std::numeric_limits<int64_t>::max();
  }
}

// scatter(self, dim, index, src | value [, reduce]), scatter_add and
// scatter_reduce (sum, prod, mean, amax, amin; include_self): for every
// element i of index, self[i with dim replaced by index[i]] is set to (or
// combined with) src[i]. Without include_self the elements index reaches
// start from the reduction's identity; a mean divides by how many values
// each element combined (at least 1).
absl::StatusOr<NodeValue> LowerScatterDim(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  std::string combine = c.op().schema.name == "scatter_add" ? "add" : "";
  bool include_self = true, mean = false;
  double identity = 0;
  if (c.Has("reduce")) {
    ASSIGN_OR_RETURN(std::string reduce, c.String("reduce"));
    if (c.Index("include_self") >= 0) {
      ASSIGN_OR_RETURN(include_self, c.Bool("include_self"));
    }
    mean = reduce == "mean";
    if (reduce == "add" || reduce == "sum" || mean) {
      combine = "add";
    } else if (reduce == "multiply" || reduce == "prod") {
      combine = "mul";
      identity = 1;
    } else if (reduce == "amax" || reduce == "amin") {
      combine = reduce == "amax" ? "maximum" : "minimum";
      identity =
          (reduce == "amax" ? -1 : 1) * std::numeric_limits<double>::infinity();
    } else {
      return c.Error(absl::StrCat("reduce '", reduce, "' is not supported"));
    }
  }
  ASSIGN_OR_RETURN(TBox src, L.Operand(c, 3, x.dtype));
  // A tensor src is read at index's elements; a number is broadcast.
  TBox value = src.sizes.empty() ? L.Broadcast(src, index.sizes) : src;
  value.sizes = index.sizes;
  bool scalar = x.sizes.empty();
  std::vector<Lookup> lookups = {
      {dim, ReadAt(index, [](const std::vector<Expr>& i) { return i; }),
       false}};
  IndexFn direct = [scalar](const std::vector<Expr>& i) {
    return scalar ? std::vector<Expr>{} : i;
  };
  if (include_self && !mean) {
    return ScatterInto(L, c, x, index.sizes, lookups, direct, value, combine);
  }
  const TensorMeta& m = OutMeta(L, c);
  int b = ResultBuffer(L, m);
  RETURN_IF_ERROR(L.Store(b, m.strides, m.storage_offset, x));
  TBox out = L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset);
  if (!include_self) {
    // Integers' amax / amin start from the dtype's lowest / highest.
    Expr start = IsFloatingPoint(m.dtype) ? symbolic::Float(identity)
                 : std::isinf(identity)
                     ? symbolic::Int(IntLimit(m.dtype, identity < 0))
                     : symbolic::Int(static_cast<int64_t>(identity));
    RETURN_IF_ERROR(IndirectStore(L, c, out, index.sizes, lookups, direct,
                                  L.NumberBox(start, m.dtype), ""));
  }
  RETURN_IF_ERROR(
      IndirectStore(L, c, out, index.sizes, lookups, direct, value, combine));
  if (!mean) return TensorValue(out);
  // The count of each element: include_self's 1 (or 0), plus one per value.
  int counts = L.NewBuffer(DType::kInt64, Product(m.sizes));
  std::vector<Expr> cs = Contiguous(m.sizes);
  TBox start = L.Broadcast(
      L.NumberBox(symbolic::Int(include_self ? 1 : 0), DType::kInt64), m.sizes);
  RETURN_IF_ERROR(L.Store(counts, cs, symbolic::Int(0), start));
  TBox count =
      L.FromBuffer(counts, DType::kInt64, m.sizes, cs, symbolic::Int(0));
  RETURN_IF_ERROR(IndirectStore(L, c, count, index.sizes, lookups, direct,
                                L.NumberBox(symbolic::Int(1), DType::kInt64),
                                "add"));
  DType compute = ComputeDType(m.dtype);
  TBox n = L.Pointwise("maximum",
                       {count, L.NumberBox(symbolic::Int(1), DType::kInt64)},
                       DType::kInt64, compute, m.sizes);
  // PyTorch divides an integer mean with rounding_mode="floor".
  return TensorValue(
      L.Pointwise(IsFloatingPoint(m.dtype) ? "truediv" : "floordiv", {out, n},
                  compute, m.dtype, m.sizes));
}

// index_add(self, dim, index, source, alpha): source's slice k (along dim)
// times alpha added to self's slice index[k].
absl::StatusOr<NodeValue> LowerIndexAdd(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  ASSIGN_OR_RETURN(TBox source, L.Tensor(c, 3));
  DType compute = ComputeDType(x.dtype);
  ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), compute));
  TBox value =
      L.Pointwise("mul", {source, alpha}, compute, compute, source.sizes);
  bool scalar = x.sizes.empty() || source.sizes.empty();
  return ScatterInto(
      L, c, x, source.sizes,
      {{dim,
        ReadAt(index,
               [dim, scalar](const std::vector<Expr>& i) {
                 return scalar ? std::vector<Expr>{}
                               : std::vector<Expr>{i[dim]};
               }),
        false}},
      [scalar](const std::vector<Expr>& i) {
        return scalar ? std::vector<Expr>{} : i;
      },
      value, "add");
}

}  // namespace

void RegisterIndexing(LoweringTable& T) {
  T.Add(Op("aten.gather.default"), LowerGather);
  T.Add(Op("aten.index_select.default"), LowerIndexSelect);
  T.Add(Op("aten.embedding.default"), LowerEmbedding);
  T.Add(Op("aten.index.Tensor"), LowerIndex);
  T.Add(Op("aten._unsafe_index.Tensor"), LowerIndex);
  T.Add(Op("aten.index_put.default"), LowerIndexPut);
  T.Add(Op("aten._unsafe_index_put.default"), LowerIndexPut);
  T.Add(Op("aten.index_add.default"), LowerIndexAdd);
  for (const char* op :
       {"aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
        "aten.scatter.value_reduce", "aten.scatter_add.default",
        "aten.scatter_reduce.two"}) {
    T.Add(Op(op), LowerScatterDim);
  }
}

}  // namespace lathe::codegen::lower
