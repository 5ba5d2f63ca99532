// Indexing ops: gather/scatter along a dim, index_select, embedding,
// advanced indexing (index.Tensor, index_put) and the *_scatter ops that
// write a source into a view of a copy (slice_scatter, select_scatter,
// diagonal_scatter, as_strided_scatter). Gathered results are contiguous;
// scattered ones keep self's dense layout (preserve_format), as in PyTorch.
// Also roll and diag_embed. Index values are checked against the sizes they
// index. Also the copies that reorder or select elements: flip, repeat, sort,
// topk, nonzero (a data-dependent size), masked_scatter and scatter_reduce.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/sort.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

bool Running(const Value& v) { return v.tensor.defined(); }

absl::Status CheckIndexDType(const OpCall& c, const Value& index,
                             absl::string_view what) {
  DType d = DTypeOf(index);
  if (d != DType::kInt64 && d != DType::kInt32) {
    return c.Error(
        absl::StrCat(what, "(): Expected dtype int32/int64 for index but got ",
                     ScalarTypeName(d)));
  }
  return absl::OkStatus();
}

// An index value checked against `size`; negative counts from the end when
// `wrap` (index.Tensor), and is out of bounds otherwise (gather, scatter).
absl::StatusOr<int64_t> CheckedIndex(const OpCall& c, int64_t i, int64_t size,
                                     int64_t dim, bool wrap) {
  if (i < (wrap ? -size : 0) || i >= size) {
    return c.Error(IndexOutOfBounds(absl::StrCat(i), dim, absl::StrCat(size)));
  }
  return i < 0 ? i + size : i;
}

// A copy of `self` in its own layout (clone with preserve_format, as
// PyTorch's scatter ops start from): the result they write into.
absl::StatusOr<Value> CopyOf(const OpCall& c, const Value& self, DType dtype) {
  std::vector<Expr> sizes = SizesOf(self);
  ASSIGN_OR_RETURN(
      Value out,
      ResultOrEmpty(c, Running(self), dtype, DeviceOf(self), sizes,
                    PreservedStrides(c.env(), sizes, StridesOf(self))));
  if (Running(self)) RETURN_IF_ERROR(CopyInto(out.tensor, self.tensor));
  return out;
}

// ---- gather / scatter
// --------------------------------------------------------

// Where index element `i` points in `target` (gather's source, scatter's
// destination): `i` with its `dim` coordinate replaced by the index value,
// bounds-checked; empty for a 0-d target.
absl::StatusOr<std::vector<int64_t>> IndexTarget(const OpCall& c,
                                                 const Tensor& index,
                                                 absl::Span<const int64_t> i,
                                                 const Tensor& target,
                                                 int64_t dim) {
  std::vector<int64_t> at;
  if (target.dim() > 0) at.assign(i.begin(), i.end());
  ASSIGN_OR_RETURN(
      int64_t k, CheckedIndex(c, LoadInt(index, i),
                              target.dim() == 0 ? 1 : target.sizes()[dim], dim,
                              /*wrap=*/false));
  if (target.dim() > 0) at[dim] = k;
  return at;
}

absl::StatusOr<int64_t> GatherDim(const OpCall& c, const Value& self,
                                  const Value& index) {
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  int64_t rank = RankOf(self);
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  if (RankOf(index) != rank && !(RankOf(index) <= 1 && rank <= 1)) {
    return c.Error(
        "Index tensor must have the same number of dimensions as input tensor");
  }
  RETURN_IF_ERROR(CheckIndexDType(c, index, c.op().schema.name));
  return dim;
}

// PyTorch's gather_shape_check: index no larger than self outside `dim`
// (an oversized index would read out of bounds).
absl::Status GatherShapeCheck(const OpCall& c, int64_t dim, const Value& self,
                              const Value& index) {
  std::vector<Expr> is = SizesOf(index), ss = SizesOf(self);
  for (size_t d = 0; d < is.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    ASSIGN_OR_RETURN(
        bool fits,
        Decide(c,
               symbolic::Le(is[d], ss.size() > d ? ss[d] : symbolic::Int(1))));
    if (!fits) {
      return c.Error(absl::StrCat(
          "Size does not match at dimension ", d, " expected index ",
          ShapeString(is), " to be no larger than self ", ShapeString(ss),
          " apart from dimension ", dim));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Gather(const OpCall& c) {
  const Value &self = c.arg(0), &index = c.arg(2);
  ASSIGN_OR_RETURN(int64_t dim, GatherDim(c, self, index));
  RETURN_IF_ERROR(GatherShapeCheck(c, dim, self, index));
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), SizesOf(index)));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  absl::Status status;
  ForEachIndex(index.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    absl::StatusOr<std::vector<int64_t>> target =
        IndexTarget(c, index.tensor, i, s, dim);
    if (!target.ok()) {
      status = target.status();
      return;
    }
    const std::vector<int64_t>& at = *target;
    CopyElement(out.tensor, i, s, at);
  });
  RETURN_IF_ERROR(status);
  return out;
}

enum class Combine { kSet, kAdd, kMultiply };

absl::StatusOr<Combine> ReduceMode(const OpCall& c) {
  int r = c.op().schema.ArgumentIndex("reduce");
  if (r < 0)
    return c.op().schema.name == "scatter_add" ? Combine::kAdd : Combine::kSet;
  const std::string& m = c.arg(r).string;
  if (m == "add" || m == "sum") return Combine::kAdd;
  if (m == "multiply" || m == "prod") return Combine::kMultiply;
  return c.Error(absl::StrCat(
      "reduce argument must be either add or multiply, got '", m, "'"));
}

// PyTorch's scatter_shape_check: index no larger than self outside `dim`,
// nor (when src is a tensor) than src anywhere. Without it an oversized
// index would write out of bounds.
absl::Status ScatterShapeCheck(const OpCall& c, int64_t dim, const Value& self,
                               const Value& index, const Value& src) {
  std::vector<Expr> is = SizesOf(index), ss = SizesOf(self);
  std::vector<Expr> rs;
  if (src.is_tensor()) rs = SizesOf(src);
  bool fits = true;
  for (size_t d = 0; fits && d < is.size(); ++d) {
    Expr small = symbolic::Bool(true);
    if (src.is_tensor()) {
      small = symbolic::Le(is[d], rs.size() > d ? rs[d] : symbolic::Int(1));
    }
    if (static_cast<int64_t>(d) != dim) {
      small = symbolic::And(
          small, symbolic::Le(is[d], ss.size() > d ? ss[d] : symbolic::Int(1)));
    }
    ASSIGN_OR_RETURN(fits, Decide(c, small));
  }
  if (fits) return absl::OkStatus();
  std::string message = absl::StrCat(
      "Expected index ", ShapeString(is), " to be no larger than self ",
      ShapeString(ss), " apart from dimension ", dim);
  if (src.is_tensor()) {
    absl::StrAppend(&message, " and to be no larger size than src ",
                    ShapeString(rs));
  }
  return c.Error(message);
}

// scatter(self, dim, index, src | value [, reduce]) and scatter_add.
absl::StatusOr<Value> Scatter(const OpCall& c) {
  const Value &self = c.arg(0), &index = c.arg(2), &src = c.arg(3);
  ASSIGN_OR_RETURN(int64_t dim, GatherDim(c, self, index));
  ASSIGN_OR_RETURN(Combine mode, ReduceMode(c));
  if (src.is_tensor() && RankOf(src) != RankOf(index) && RankOf(index) > 1) {
    return c.Error(
        "Index tensor must have the same number of dimensions as src tensor");
  }
  RETURN_IF_ERROR(ScatterShapeCheck(c, dim, self, index, src));
  ASSIGN_OR_RETURN(Value out, CopyOf(c, self, DTypeOf(self)));
  if (!Running(self)) return out;
  Tensor source;
  if (src.is_tensor()) {
    source = src.tensor;
  } else {
    ASSIGN_OR_RETURN(Tensor scalar, ScalarTensor(src, DTypeOf(self)));
    ASSIGN_OR_RETURN(source, BroadcastView(scalar, index.tensor.sizes()));
  }
  const Tensor& o = out.tensor;
  bool ints = IsIntegral(o.dtype(), true);
  absl::Status status;
  ForEachIndex(index.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    for (int64_t d = 0; d < source.dim(); ++d) {
      if (i[d] >= source.sizes()[d]) {
        status = c.Error("index shape exceeds the source shape");
        return;
      }
    }
    absl::StatusOr<std::vector<int64_t>> target =
        IndexTarget(c, index.tensor, i, o, dim);
    if (!target.ok()) {
      status = target.status();
      return;
    }
    const std::vector<int64_t>& at = *target;
    if (ints) {
      int64_t a = LoadInt(o, at), b = LoadInt(source, i);
      uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
      StoreInt(o, at,
               mode == Combine::kSet   ? b
               : mode == Combine::kAdd ? static_cast<int64_t>(ua + ub)
                                       : static_cast<int64_t>(ua * ub));
    } else {
      double a = LoadDouble(o, at), b = LoadDouble(source, i);
      StoreDouble(o, at,
                  mode == Combine::kSet   ? b
                  : mode == Combine::kAdd ? a + b
                                          : a * b);
    }
  });
  RETURN_IF_ERROR(status);
  return out;
}

// ---- index_select / embedding ----------------------------------------------

// self's rows `index` (any shape) along dim: sizes self[:dim] + index +
// self[dim+1:].
absl::StatusOr<Value> SelectRows(const OpCall& c, const Value& self,
                                 int64_t dim, const Value& index,
                                 absl::string_view what) {
  RETURN_IF_ERROR(CheckIndexDType(c, index, what));
  std::vector<Expr> in = SizesOf(self), idx = SizesOf(index), sizes;
  sizes.insert(sizes.end(), in.begin(), in.begin() + dim);
  sizes.insert(sizes.end(), idx.begin(), idx.end());
  if (!in.empty()) sizes.insert(sizes.end(), in.begin() + dim + 1, in.end());
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), sizes));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  int64_t ni = index.tensor.dim();
  absl::Status status;
  ForEachIndex(out.tensor.sizes(), [&](absl::Span<const int64_t> o) {
    if (!status.ok()) return;
    std::vector<int64_t> at(o.begin(), o.begin() + dim);
    std::vector<int64_t> ii(o.begin() + dim, o.begin() + dim + ni);
    int64_t size = s.dim() == 0 ? 1 : s.sizes()[dim];
    int64_t k = LoadInt(index.tensor, ii);
    if (k < 0 || k >= size) {
      status =
          c.Error(IndexOutOfRangeInSelf(absl::StrCat(k), absl::StrCat(size)));
      return;
    }
    if (s.dim() > 0) at.push_back(k);
    at.insert(at.end(), o.begin() + dim + ni, o.end());
    CopyElement(out.tensor, o, s, at);
  });
  RETURN_IF_ERROR(status);
  return out;
}

absl::StatusOr<Value> IndexSelect(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(c.arg(0))));
  if (RankOf(c.arg(2)) > 1)
    return c.Error("index_select(): Index is supposed to be a vector");
  if (RankOf(c.arg(0)) == 0) dim = 0;
  return SelectRows(c, c.arg(0), dim, c.arg(2), "index_select");
}

absl::StatusOr<Value> Embedding(const OpCall& c) {
  if (RankOf(c.arg(0)) != 2) return c.Error("'weight' must be 2-D");
  return SelectRows(c, c.arg(0), 0, c.arg(1), "embedding");
}

// ---- advanced indexing
// -------------------------------------------------------

struct AdvancedIndex {
  std::vector<int64_t> dims;    // self dims indexed by a tensor
  std::vector<Value> tensors;   // their index tensors
  std::vector<Expr> broadcast;  // the index tensors' broadcast shape
  std::vector<Expr> sizes;      // the result's shape
  int64_t insert_at = 0;        // where the broadcast dims go in it
};

absl::StatusOr<AdvancedIndex> InferIndex(const OpCall& c, const Value& self,
                                         const Value& indices) {
  AdvancedIndex ix;
  std::vector<Expr> in = SizesOf(self);
  if (indices.list.size() > in.size()) {
    return c.Error(absl::StrCat("too many indices for tensor of dimension ",
                                in.size(), " (got ", indices.list.size(), ")"));
  }
  std::vector<std::vector<Expr>> shapes;
  for (size_t d = 0; d < indices.list.size(); ++d) {
    const Value& t = indices.list[d];
    if (t.is_none()) continue;
    DType dt = DTypeOf(t);
    if (dt == DType::kBool || dt == DType::kUInt8) {
      return c.Error(
          "indexing with a boolean mask together with other index tensors is "
          "not supported yet (its size depends on data)");
    }
    if (!IsIntegral(dt, false)) {
      return c.Error(
          "tensors used as indices must be long, int, byte or bool tensors");
    }
    ix.dims.push_back(static_cast<int64_t>(d));
    ix.tensors.push_back(t);
    shapes.push_back(SizesOf(t));
  }
  if (ix.dims.empty()) return c.Error("at least one index must be a tensor");
  ASSIGN_OR_RETURN(ix.broadcast, BroadcastShapes(c, shapes));
  bool adjacent = ix.dims.back() - ix.dims.front() + 1 ==
                  static_cast<int64_t>(ix.dims.size());
  ix.insert_at = adjacent ? ix.dims.front() : 0;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (std::find(ix.dims.begin(), ix.dims.end(), d) == ix.dims.end())
      ix.sizes.push_back(in[d]);
  }
  ix.sizes.insert(ix.sizes.begin() + ix.insert_at, ix.broadcast.begin(),
                  ix.broadcast.end());
  return ix;
}

// Calls `fn(result_index, self_index)` for every element of the indexing
// result; errors for out-of-range index values.
template <typename Fn>
absl::Status ForEachIndexed(const OpCall& c, const Tensor& self,
                            const AdvancedIndex& ix, Fn fn) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, ix.sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> bshape, ConcreteSizes(c, ix.broadcast));
  std::vector<Tensor> views;
  for (const Value& t : ix.tensors) {
    ASSIGN_OR_RETURN(Tensor v, BroadcastView(t.tensor, bshape));
    views.push_back(v);
  }
  int64_t nb = static_cast<int64_t>(bshape.size());
  absl::Status status;
  ForEachIndex(sizes, [&](absl::Span<const int64_t> o) {
    if (!status.ok()) return;
    std::vector<int64_t> b(o.begin() + ix.insert_at,
                           o.begin() + ix.insert_at + nb);
    std::vector<int64_t> rest(o.begin(), o.begin() + ix.insert_at);
    rest.insert(rest.end(), o.begin() + ix.insert_at + nb, o.end());
    std::vector<int64_t> at(self.dim());
    size_t r = 0, t = 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (t < ix.dims.size() && ix.dims[t] == d) {
        absl::StatusOr<int64_t> k =
            CheckedIndex(c, LoadInt(views[t], b), self.sizes()[d], d,
                         /*wrap=*/true);
        if (!k.ok()) {
          status = k.status();
          return;
        }
        at[d] = *k;
        ++t;
      } else {
        at[d] = rest[r++];
      }
    }
    fn(o, at);
  });
  return status;
}

// The one boolean (or uint8) mask of an index list whose other entries are
// None: the mask's position (the first dim it covers), or -1 when the list
// has no such mask.
absl::StatusOr<int64_t> MaskPosition(const OpCall& c, const Value& self,
                                     const Value& indices) {
  int64_t at = -1, tensors = 0;
  for (size_t d = 0; d < indices.list.size(); ++d) {
    const Value& t = indices.list[d];
    if (t.is_none()) continue;
    ++tensors;
    if (DTypeOf(t) == DType::kBool || DTypeOf(t) == DType::kUInt8) {
      at = static_cast<int64_t>(d);
    }
  }
  if (at < 0 || tensors != 1) return -1;
  if (DTypeOf(indices.list[at]) == DType::kUInt8) {
    return c.Error(
        "indexing with a uint8 mask is deprecated in PyTorch; use "
        "a bool mask");
  }
  // The mask covers dims [at, at + rank) of self, which must match it.
  const Value& mask = indices.list[at];
  std::vector<Expr> in = SizesOf(self), ms = SizesOf(mask);
  if (at + ms.size() > in.size()) {
    return c.Error(absl::StrCat("too many indices for tensor of dimension ",
                                in.size(), " (got ", at + ms.size(), ")"));
  }
  for (size_t k = 0; k < ms.size(); ++k) {
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(ms[k], in[at + k])));
    if (!same) {
      return c.Error(
          absl::StrCat("The shape of the mask ", ShapeString(ms), " at index ",
                       k, " does not match the shape of the indexed tensor ",
                       ShapeString(in), " at index ", at + k));
    }
  }
  return at;
}

// The meta of a result of `sizes` whose dim `at` is the number of true
// elements of a mask: a fresh unbacked size there, contiguous, self's dtype
// and device.
absl::StatusOr<Value> MaskedRowsMeta(const OpCall& c, const Value& self,
                                     std::vector<Expr> sizes, size_t at) {
  if (c.env() == nullptr) return c.Error("no ShapeEnv for an unbacked value");
  TensorMeta m;
  m.dtype = DTypeOf(self);
  m.device = DeviceOf(self);
  sizes[at] = c.env()->CreateUnbackedSizeLike();
  m.sizes = std::move(sizes);
  m.strides = ContiguousStrides(m.sizes);
  return Value::OfMeta(m);
}

// self[mask] (the mask at `at`, covering as many dims as it has): the
// elements, or rows, where the mask is true, in row-major order: self's
// dims before the mask, then one of the number of true elements, then
// self's dims after the mask. Contiguous. In meta mode the count is a fresh
// unbacked size.
absl::StatusOr<Value> IndexByMask(const OpCall& c, int64_t at) {
  const Value& self = c.arg(0);
  const Value& mask = c.arg(1).list[at];
  std::vector<Expr> in = SizesOf(self);
  const size_t mrank = SizesOf(mask).size();
  if (!Running(self)) {
    std::vector<Expr> sizes(in.begin(), in.begin() + at);
    sizes.push_back(symbolic::Int(0));  // the count, filled in
    sizes.insert(sizes.end(), in.begin() + at + mrank, in.end());
    return MaskedRowsMeta(c, self, std::move(sizes), at);
  }
  const Tensor& s = self.tensor;
  const Tensor& mk = mask.tensor;
  std::vector<std::vector<int64_t>> trues;
  ForEachIndex(mk.sizes(), [&](absl::Span<const int64_t> i) {
    if (LoadInt(mk, i) != 0) trues.emplace_back(i.begin(), i.end());
  });
  std::vector<int64_t> sizes(s.sizes().begin(), s.sizes().begin() + at);
  sizes.push_back(static_cast<int64_t>(trues.size()));
  sizes.insert(sizes.end(), s.sizes().begin() + at + mrank, s.sizes().end());
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(sizes, s.dtype()));
  ForEachIndex(sizes, [&](absl::Span<const int64_t> o) {
    std::vector<int64_t> from(o.begin(), o.begin() + at);
    const std::vector<int64_t>& m = trues[o[at]];
    from.insert(from.end(), m.begin(), m.end());
    from.insert(from.end(), o.begin() + at + 1, o.end());
    CopyElement(out, o, s, from);
  });
  return Value::OfTensor(out);
}

absl::StatusOr<Value> Index(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(int64_t mask_at, MaskPosition(c, self, c.arg(1)));
  if (mask_at >= 0) return IndexByMask(c, mask_at);
  ASSIGN_OR_RETURN(AdvancedIndex ix, InferIndex(c, self, c.arg(1)));
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), ix.sizes));
  if (!Running(self)) return out;
  RETURN_IF_ERROR(ForEachIndexed(c, self.tensor, ix,
                                 [&](auto o, const std::vector<int64_t>& at) {
                                   CopyElement(out.tensor, o, self.tensor, at);
                                 }));
  return out;
}

// index_put(self, indices, values, accumulate) into `dst` (a copy or self).
absl::StatusOr<Value> IndexPutInto(const OpCall& c, const Value& dst) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(AdvancedIndex ix, InferIndex(c, self, c.arg(1)));
  ASSIGN_OR_RETURN(bool accumulate, c.arg(3).AsBool());
  const Value& values = c.arg(2);
  if (DTypeOf(values) != DTypeOf(self)) {
    return c.Error(absl::StrCat(
        "Index put requires the source and destination dtypes match, got ",
        ScalarTypeName(DTypeOf(self)), " for the destination and ",
        ScalarTypeName(DTypeOf(values)), " for the source."));
  }
  RETURN_IF_ERROR(BroadcastShapes(c, {ix.sizes, SizesOf(values)}).status());
  if (!Running(self)) return dst;
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, ix.sizes));
  absl::StatusOr<Tensor> v = BroadcastView(values.tensor, sizes);
  if (!v.ok()) {
    return c.Error(absl::StrCat(
        "shape mismatch: value tensor of shape ", values.tensor.ToString(),
        " cannot be broadcast to indexing result of shape ",
        ShapeString(ix.sizes)));
  }
  const Tensor& d = dst.tensor;
  bool ints = IsIntegral(d.dtype(), true);
  RETURN_IF_ERROR(ForEachIndexed(
      c, self.tensor, ix, [&](auto o, const std::vector<int64_t>& at) {
        if (ints) {
          uint64_t a = accumulate ? static_cast<uint64_t>(LoadInt(d, at)) : 0;
          StoreInt(
              d, at,
              static_cast<int64_t>(a + static_cast<uint64_t>(LoadInt(*v, o))));
        } else {
          StoreDouble(d, at,
                      (accumulate ? LoadDouble(d, at) : 0) + LoadDouble(*v, o));
        }
      }));
  return dst;
}

absl::StatusOr<Value> IndexPut(const OpCall& c) {
  ASSIGN_OR_RETURN(Value out, CopyOf(c, c.arg(0), DTypeOf(c.arg(0))));
  return IndexPutInto(c, out);
}

absl::StatusOr<Value> IndexPutInplace(const OpCall& c) {
  return IndexPutInto(c, c.arg(0));
}

// ---- *_scatter: src written into a view of a copy of self -----------------

// Runs the view op `target` on `base` with `rest` arguments (meta or kernel
// as base is).
absl::StatusOr<Value> ViewOf(const OpCall& c, absl::string_view target,
                             const Value& base, std::vector<Value> rest) {
  const OpDef* op = OpRegistry::Global().Find(target);
  LATHE_CHECK(op != nullptr) << target;
  rest.insert(rest.begin(), base);
  ASSIGN_OR_RETURN(std::vector<Value> bound,
                   BindArguments(op->schema, std::move(rest), {}, target));
  OpCall call(*op, std::move(bound), c.env());
  return Running(base) ? op->kernel(call) : op->meta(call);
}

absl::StatusOr<Value> ScatterInto(const OpCall& c,
                                  absl::string_view view_target) {
  const Value &self = c.arg(0), &src = c.arg(1);
  std::vector<Value> rest;
  for (int i = 2; i < c.num_args(); ++i) rest.push_back(c.arg(i));
  ASSIGN_OR_RETURN(Value out, CopyOf(c, self, DTypeOf(self)));
  ASSIGN_OR_RETURN(Value view, ViewOf(c, view_target, out, rest));
  std::vector<Expr> want = SizesOf(view), got = SizesOf(src);
  bool same = want.size() == got.size();
  for (size_t d = 0; same && d < want.size(); ++d) {
    ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(want[d], got[d])));
  }
  if (!same) {
    return c.Error(absl::StrCat(
        "expected src to have a size equal to the slice of self. src size = ",
        ShapeString(got), ", slice size = ", ShapeString(want)));
  }
  if (Running(self)) RETURN_IF_ERROR(CopyInto(view.tensor, src.tensor));
  return out;
}

// ---- flip / repeat ----------------------------------------------------------

// flip(self, dims): a copy laid out as empty_like(self), `dims` reversed.
absl::StatusOr<Value> Flip(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.arg(1).AsIntList());
  int64_t rank = RankOf(self);
  std::vector<bool> flipped(rank, false);
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
    if (rank == 0) continue;
    if (flipped[w]) {
      return c.Error(absl::StrCat(
          "dim ", w, " appears multiple times in the list of dims"));
    }
    flipped[w] = true;
  }
  std::vector<Expr> sizes = SizesOf(self);
  ASSIGN_OR_RETURN(
      Value out, ResultOrEmpty(c, Running(self), DTypeOf(self), DeviceOf(self),
                               sizes, EmptyLikeStrides(c.env(), self)));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  ForEachIndex(s.sizes(), [&](absl::Span<const int64_t> i) {
    std::vector<int64_t> at(i.begin(), i.end());
    for (int64_t d = 0; d < rank; ++d) {
      if (flipped[d]) at[d] = s.sizes()[d] - 1 - i[d];
    }
    CopyElement(out.tensor, i, s, at);
  });
  return out;
}

// roll(self, shifts, dims): out[(i + shift) mod n] = self[i] along each
// dim; with no dims and one shift, over the flattened tensor. Contiguous
// (PyTorch rolls a contiguous copy), except that an empty tensor is cloned.
absl::StatusOr<Value> Roll(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(std::vector<Expr> shifts, c.arg(1).AsExprList());
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.arg(2).AsIntList());
  int64_t rank = RankOf(self);
  if (shifts.empty()) return c.Error("`shifts` required");
  bool flat = dims.empty() && shifts.size() == 1;
  if (!flat && shifts.size() != dims.size()) {
    return c.Error(absl::StrCat("shifts and dimensions must align. shifts: ",
                                shifts.size(), ", dims:", dims.size()));
  }
  for (int64_t& d : dims) {
    if (rank == 0) {
      return c.Error(absl::StrCat("Dimension specified as ", d,
                                  " but tensor has no dimensions"));
    }
    ASSIGN_OR_RETURN(d, WrapDim(c, d, rank));
  }
  std::vector<Expr> sizes = SizesOf(self);
  bool empty = false;
  for (const Expr& s : sizes) empty = empty || s.is_constant(0);
  std::vector<Expr> strides =
      empty ? PreservedStrides(c.env(), sizes, StridesOf(self))
            : ContiguousStrides(sizes);
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), sizes, strides));
  if (!Running(self) || empty) return out;
  const Tensor& s = self.tensor;
  std::vector<int64_t> shift(rank, 0);
  int64_t flat_shift = 0;
  for (size_t k = 0; k < shifts.size(); ++k) {
    ASSIGN_OR_RETURN(std::vector<int64_t> v, ConcreteSizes(c, {shifts[k]}));
    if (flat) {
      flat_shift = v[0];
    } else {
      shift[dims[k]] += v[0];
    }
  }
  int64_t numel = s.numel();
  ForEachIndex(s.sizes(), [&](absl::Span<const int64_t> i) {
    std::vector<int64_t> at(i.begin(), i.end());
    if (flat) {
      int64_t linear = 0;
      for (int64_t d = 0; d < rank; ++d) linear = linear * s.sizes()[d] + i[d];
      linear = ((linear + flat_shift) % numel + numel) % numel;
      for (int64_t d = rank; d-- > 0;) {
        at[d] = linear % s.sizes()[d];
        linear /= s.sizes()[d];
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t n = s.sizes()[d];
        at[d] = ((i[d] + shift[d]) % n + n) % n;
      }
    }
    CopyElement(out.tensor, at, s, i);
  });
  return out;
}

// diag_embed(self, offset, dim1, dim2): zeros with self's last dim written
// on the offset diagonal of the new dims dim1 and dim2 (of size
// n + |offset|); the other dims are self's leading ones. Contiguous.
absl::StatusOr<Value> DiagEmbed(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(int64_t offset, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(int64_t d1, c.arg(2).AsInt());
  ASSIGN_OR_RETURN(int64_t d2, c.arg(3).AsInt());
  int64_t rank = RankOf(self) + 1;
  ASSIGN_OR_RETURN(int64_t w1, WrapDim(c, d1, rank));
  ASSIGN_OR_RETURN(int64_t w2, WrapDim(c, d2, rank));
  if (w1 == w2) {
    return c.Error(
        absl::StrCat("diagonal dimensions cannot be identical ", d1, ", ", d2));
  }
  if (RankOf(self) == 0) {
    return c.Error(absl::StrCat(
        "Dimension out of range (expected to be in range of [-1, 0], but got "
        "-1)"));
  }
  if (w1 > w2) {  // swapping the dims is negating the offset
    std::swap(w1, w2);
    offset = -offset;
  }
  std::vector<Expr> in = SizesOf(self);
  Expr n = symbolic::Add(in.back(), symbolic::Int(std::abs(offset)));
  std::vector<Expr> sizes(in.begin(), in.end() - 1);
  sizes.insert(sizes.begin() + w1, n);
  sizes.insert(sizes.begin() + w2, n);
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), sizes));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  ASSIGN_OR_RETURN(Tensor zero, ScalarTensor(Value::Int(0), s.dtype()));
  RETURN_IF_ERROR(CopyInto(out.tensor, zero));
  ForEachIndex(s.sizes(), [&](absl::Span<const int64_t> i) {
    int64_t k = i.back();
    std::vector<int64_t> at(i.begin(), i.end() - 1);
    int64_t a = offset >= 0 ? k : k - offset, b = offset >= 0 ? k + offset : k;
    at.insert(at.begin() + w1, a);
    at.insert(at.begin() + w2, b);
    CopyElement(out.tensor, at, s, i);
  });
  return out;
}

// repeat(self, repeats): self tiled; more repeats than dims add leading
// dims (self is viewed with leading 1s). Contiguous.
absl::StatusOr<Value> Repeat(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(std::vector<Expr> repeats, c.arg(1).AsExprList());
  int64_t rank = RankOf(self), n = static_cast<int64_t>(repeats.size());
  if (n < rank) {
    return c.Error(
        "Number of dimensions of repeat dims can not be smaller than number of "
        "dimensions of tensor");
  }
  std::vector<Expr> in = SizesOf(self);
  in.insert(in.begin(), n - rank, symbolic::Int(1));
  std::vector<Expr> sizes;
  for (int64_t d = 0; d < n; ++d)
    sizes.push_back(symbolic::Mul(in[d], repeats[d]));
  for (const Expr& e : sizes) {
    ASSIGN_OR_RETURN(bool negative,
                     Decide(c, symbolic::Lt(e, symbolic::Int(0))));
    if (negative) {
      return c.Error(NegativeDimension(e, sizes));
    }
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), sizes));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  ForEachIndex(out.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    std::vector<int64_t> at(i.begin() + (n - rank), i.end());
    for (int64_t d = 0; d < rank; ++d) at[d] %= s.sizes()[d];
    CopyElement(out.tensor, i, s, at);
  });
  return out;
}

// ---- sort / topk ------------------------------------------------------------

// One line along `dim` as (key, index) pairs: int64 keys for integer and bool
// tensors (exact), double keys for floats.
template <typename K>
using Line = std::vector<std::pair<K, int64_t>>;

// Calls `fn(line, base)` for each line of `t` along `dim` (base: the index of
// the line's first element); a 0-d tensor is one line of one element.
template <typename K, typename Fn>
void ForEachLine(const Tensor& t, int64_t dim, Fn fn) {
  std::vector<int64_t> outer = t.sizes();
  int64_t len = t.dim() == 0 ? 1 : outer[dim];
  if (t.dim() > 0) outer[dim] = std::min<int64_t>(outer[dim], 1);
  if (len == 0) return;
  ForEachIndex(outer, [&](absl::Span<const int64_t> base) {
    std::vector<int64_t> i(base.begin(), base.end());
    Line<K> line(len);
    for (int64_t k = 0; k < len; ++k) {
      if (t.dim() > 0) i[dim] = k;
      if constexpr (std::is_same_v<K, double>) {
        line[k] = {LoadDouble(t, i), k};
      } else {
        line[k] = {LoadInt(t, i), k};
      }
    }
    fn(line, std::vector<int64_t>(base.begin(), base.end()));
  });
}

// Writes `line` (value and index pairs) along `dim` from `base`.
template <typename K>
void StoreLine(const Line<K>& line, std::vector<int64_t> i, int64_t dim,
               const Tensor& values, const Tensor& indices) {
  for (size_t k = 0; k < line.size(); ++k) {
    if (values.dim() > 0) i[dim] = static_cast<int64_t>(k);
    if constexpr (std::is_same_v<K, double>) {
      StoreDouble(values, i, line[k].first);
    } else {
      StoreInt(values, i, line[k].first);
    }
    StoreInt(indices, i, line[k].second);
  }
}

// sort(self, dim, descending): values and indices laid out as
// empty_like(self) (EmptyLikeStrides). Ties come out in the order PyTorch's CPU
// kernel gives them (stable=False: std::sort over (value, index) pairs with its
// comparators; the same algorithm, so the same order, verified against
// torch 2.15); a dim of stride 0 keeps indices 0..n-1, as PyTorch does.
// An ascending sort of a 1-d integer tensor of at least 32768 (PyTorch's
// GRAIN_SIZE) elements takes PyTorch's radix sort path, which is stable.
template <typename K>
void SortLines(const Tensor& s, int64_t dim, bool descending, bool stable,
               const Tensor& values, const Tensor& indices) {
  bool broadcast = s.dim() > 0 && s.strides()[dim] == 0;
  bool radix = s.dim() == 1 && !descending &&
               IsIntegral(s.dtype(), /*include_bool=*/false) &&
               s.numel() >= 32768;
  ForEachLine<K>(s, dim, [&](Line<K>& line, std::vector<int64_t> base) {
    if (radix) {
      std::stable_sort(line.begin(), line.end(), SortLess<K>);
    } else if (!broadcast) {
      auto comp = descending ? SortGreater<K> : SortLess<K>;
      if (stable) {
        std::stable_sort(line.begin(), line.end(), comp);
      } else {
        std::sort(line.begin(), line.end(), comp);
      }
    }
    StoreLine(line, base, dim, values, indices);
  });
}

absl::StatusOr<Value> Sort(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(int64_t dim, c.arg("dim").AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(self)));
  ASSIGN_OR_RETURN(bool descending, c.arg("descending").AsBool());
  bool stable = false;  // sort.stable's stable=None is False
  if (int at = c.op().schema.ArgumentIndex("stable");
      at >= 0 && !c.arg(at).is_none()) {
    ASSIGN_OR_RETURN(stable, c.arg(at).AsBool());
  }
  std::vector<Expr> sizes = SizesOf(self);
  std::vector<Expr> strides = EmptyLikeStrides(c.env(), self);
  ASSIGN_OR_RETURN(Value values, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                               DeviceOf(self), sizes, strides));
  ASSIGN_OR_RETURN(Value indices,
                   ResultOrEmpty(c, Running(self), DType::kInt64,
                                 DeviceOf(self), sizes, strides));
  if (Running(self)) {
    if (IsFloatingPoint(DTypeOf(self))) {
      SortLines<double>(self.tensor, dim, descending, stable, values.tensor,
                        indices.tensor);
    } else {
      SortLines<int64_t>(self.tensor, dim, descending, stable, values.tensor,
                         indices.tensor);
    }
  }
  return Value::List({values, indices});
}

// topk(self, k, dim, largest, sorted): contiguous results. The order (ties
// included) is PyTorch's CPU kernel's: std::partial_sort when k * 64 <= n,
// otherwise std::nth_element and, when sorted, std::sort of the first k - 1.
template <typename K>
void TopkLines(const Tensor& s, int64_t dim, int64_t k, bool largest,
               bool sorted, const Tensor& values, const Tensor& indices) {
  ForEachLine<K>(s, dim, [&](Line<K>& line, std::vector<int64_t> base) {
    if (k == 0) return;
    auto comp = largest ? SortGreater<K> : SortLess<K>;
    int64_t n = static_cast<int64_t>(line.size());
    if (k * 64 <= n) {
      std::partial_sort(line.begin(), line.begin() + k, line.end(), comp);
    } else {
      std::nth_element(line.begin(), line.begin() + k - 1, line.end(), comp);
      if (sorted) std::sort(line.begin(), line.begin() + k - 1, comp);
    }
    line.resize(k);
    StoreLine(line, base, dim, values, indices);
  });
}

absl::StatusOr<Value> Topk(const OpCall& c) {
  const Value& self = c.arg(0);
  Expr k = c.arg(1).number;
  ASSIGN_OR_RETURN(int64_t dim, c.arg(2).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(self)));
  ASSIGN_OR_RETURN(bool largest, c.arg(3).AsBool());
  ASSIGN_OR_RETURN(bool sorted, c.arg(4).AsBool());
  if (DTypeOf(self) == DType::kBool) {
    return c.Error("topk does not support bool dtypes on CPU");
  }
  std::vector<Expr> sizes = SizesOf(self);
  Expr len = sizes.empty() ? symbolic::Int(1) : sizes[dim];
  ASSIGN_OR_RETURN(bool in_range,
                   Decide(c, symbolic::And(symbolic::Ge(k, symbolic::Int(0)),
                                           symbolic::Le(k, len))));
  if (!in_range) return c.Error("selected index k out of range");
  if (!sizes.empty()) sizes[dim] = k;
  ASSIGN_OR_RETURN(Value values, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                               DeviceOf(self), sizes));
  ASSIGN_OR_RETURN(Value indices, ResultOrEmpty(c, Running(self), DType::kInt64,
                                                DeviceOf(self), sizes));
  if (Running(self)) {
    ASSIGN_OR_RETURN(int64_t kk, c.arg(1).AsInt());
    if (IsFloatingPoint(DTypeOf(self))) {
      TopkLines<double>(self.tensor, dim, kk, largest, sorted, values.tensor,
                        indices.tensor);
    } else {
      TopkLines<int64_t>(self.tensor, dim, kk, largest, sorted, values.tensor,
                         indices.tensor);
    }
  }
  return Value::List({values, indices});
}

// ---- nonzero ----------------------------------------------------------------

// nonzero(self): the indices of nonzero elements (NaN counts), one row each
// in row-major order: i64[n, ndim] with strides [1, n] (PyTorch fills the
// transpose). n depends on the data: the meta function gives a fresh
// unbacked size-like symbol from the call's ShapeEnv.
absl::StatusOr<Value> NonzeroMeta(const OpCall& c) {
  const Value& self = c.arg(0);
  if (c.env() == nullptr) return c.Error("no ShapeEnv for an unbacked value");
  Expr n = c.env()->CreateUnbackedSizeLike();
  TensorMeta m;
  m.dtype = DType::kInt64;
  m.device = DeviceOf(self);
  m.sizes = {n, symbolic::Int(RankOf(self))};
  m.strides = {symbolic::Int(1), n};
  return Value::OfMeta(m);
}

absl::StatusOr<Value> Nonzero(const OpCall& c) {
  const Tensor& s = c.arg(0).tensor;
  std::vector<std::vector<int64_t>> rows;
  bool ints = IsIntegral(s.dtype(), true);
  ForEachIndex(s.sizes(), [&](absl::Span<const int64_t> i) {
    bool nz = ints ? LoadInt(s, i) != 0 : LoadDouble(s, i) != 0;
    if (nz) rows.emplace_back(i.begin(), i.end());
  });
  int64_t n = static_cast<int64_t>(rows.size());
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::EmptyStrided({n, s.dim()}, {1, n}, DType::kInt64));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t d = 0; d < s.dim(); ++d) StoreInt(out, {r, d}, rows[r][d]);
  }
  return Value::OfTensor(out);
}

// masked_select(self, mask): self's elements where mask is true (the two
// broadcast), in row-major order: a 1-d tensor of a data-dependent size.
absl::StatusOr<Value> MaskedSelect(const OpCall& c) {
  const Value &self = c.arg(0), &mask = c.arg(1);
  if (DTypeOf(mask) != DType::kBool) {
    return c.Error(
        absl::StrCat("masked_select: expected BoolTensor for mask, but got ",
                     ScalarTypeName(DTypeOf(mask))));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> sizes,
                   BroadcastShapes(c, {SizesOf(self), SizesOf(mask)}));
  if (!Running(self)) return MaskedRowsMeta(c, self, {symbolic::Int(0)}, 0);
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor s, BroadcastView(self.tensor, shape));
  ASSIGN_OR_RETURN(Tensor m, BroadcastView(mask.tensor, shape));
  std::vector<std::vector<int64_t>> trues;
  ForEachIndex(shape, [&](absl::Span<const int64_t> i) {
    if (LoadInt(m, i) != 0) trues.emplace_back(i.begin(), i.end());
  });
  ASSIGN_OR_RETURN(
      Tensor out,
      Tensor::Empty({static_cast<int64_t>(trues.size())}, s.dtype()));
  for (size_t k = 0; k < trues.size(); ++k) {
    CopyElement(out, {static_cast<int64_t>(k)}, s, trues[k]);
  }
  return Value::OfTensor(out);
}

// ---- masked_scatter / scatter_reduce ----------------------------------------

// masked_scatter(self, mask, source): self and mask broadcast; where mask
// is true, the next element of source (row-major) is written. Contiguous.
absl::StatusOr<Value> MaskedScatter(const OpCall& c) {
  const Value &self = c.arg(0), &mask = c.arg(1), &source = c.arg(2);
  if (DTypeOf(mask) != DType::kBool) {
    return c.Error(absl::StrCat(
        "masked_scatter_ only supports boolean masks, but got mask with dtype ",
        ScalarTypeName(DTypeOf(mask))));
  }
  if (DTypeOf(self) != DTypeOf(source)) {
    return c.Error(absl::StrCat(
        "masked_scatter: expected self and source to have same dtypes but got",
        ScalarTypeName(DTypeOf(self)), " and ",
        ScalarTypeName(DTypeOf(source))));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> sizes,
                   BroadcastShapes(c, {SizesOf(self), SizesOf(mask)}));
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), sizes));
  if (!Running(self)) return out;
  const Tensor& o = out.tensor;
  ASSIGN_OR_RETURN(Tensor s, BroadcastView(self.tensor, o.sizes()));
  ASSIGN_OR_RETURN(Tensor m, BroadcastView(mask.tensor, o.sizes()));
  const Tensor& src = source.tensor;
  std::vector<int64_t> src_strides = ::lathe::ContiguousStrides(src.sizes());
  int64_t next = 0;
  absl::Status status;
  ForEachIndex(o.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    if (LoadInt(m, i) == 0) {
      CopyElement(o, i, s, i);
      return;
    }
    if (next >= src.numel()) {
      status = c.Error(MaskedScatterSourceTooSmall());
      return;
    }
    std::vector<int64_t> at(src.dim());
    for (int64_t d = 0, rest = next; d < src.dim(); ++d) {
      at[d] = rest / src_strides[d];
      rest %= src_strides[d];
    }
    ++next;
    CopyElement(o, i, src, at);
  });
  RETURN_IF_ERROR(status);
  return out;
}

// scatter_reduce.two(self, dim, index, src, reduce, include_self): a
// contiguous copy of self in which each src element is combined into the
// position index names (sum, prod, mean, amax, amin; NaN propagates through
// amax/amin). include_self=False: positions some index names start from the
// reduction's identity instead of self's value (untouched ones keep self's).
// mean divides by the count of combined values (self counting once when
// included), by floor division for integers. Combining happens in self's
// dtype, element by element, as PyTorch's CPU kernel does.
absl::StatusOr<Value> ScatterReduce(const OpCall& c) {
  const Value &self = c.arg(0), &index = c.arg(2), &src = c.arg(3);
  ASSIGN_OR_RETURN(int64_t dim, GatherDim(c, self, index));
  const std::string& reduce = c.arg(4).string;
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" &&
      reduce != "amax" && reduce != "amin") {
    return c.Error(absl::StrCat(
        "reduce argument must be either sum, prod, mean, amax or amin, got ",
        reduce));
  }
  ASSIGN_OR_RETURN(bool include_self, c.arg(5).AsBool());
  if (DTypeOf(self) != DTypeOf(src)) {
    return c.Error("scatter(): Expected self.dtype to be equal to src.dtype");
  }
  if (RankOf(src) != RankOf(index) && RankOf(index) > 1) {
    return c.Error(
        "Index tensor must have the same number of dimensions as src tensor");
  }
  RETURN_IF_ERROR(ScatterShapeCheck(c, dim, self, index, src));
  DType dtype = DTypeOf(self);
  if (reduce == "mean" && dtype == DType::kBool) {
    return c.Error(
        "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), dtype,
                                            DeviceOf(self), SizesOf(self)));
  if (!Running(self)) return out;
  const Tensor& o = out.tensor;
  RETURN_IF_ERROR(CopyInto(o, self.tensor));
  const Tensor& source = src.tensor;
  bool ints = IsIntegral(dtype, true);
  std::vector<int64_t> count_strides = ::lathe::ContiguousStrides(o.sizes());
  std::vector<int64_t> count(o.numel(), include_self ? 1 : 0);
  std::vector<bool> seen(o.numel(), false);
  absl::Status status;
  ForEachIndex(index.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    absl::StatusOr<std::vector<int64_t>> target =
        IndexTarget(c, index.tensor, i, o, dim);
    if (!target.ok()) {
      status = target.status();
      return;
    }
    const std::vector<int64_t>& at = *target;
    int64_t slot = 0;
    for (int64_t d = 0; d < o.dim(); ++d) slot += at[d] * count_strides[d];
    bool first = !include_self && !seen[slot];
    seen[slot] = true;
    ++count[slot];
    if (ints) {
      int64_t b = LoadInt(source, i);
      if (first) {
        StoreInt(o, at, b);
        return;
      }
      int64_t a = LoadInt(o, at);
      uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
      int64_t v = reduce == "prod"   ? static_cast<int64_t>(ua * ub)
                  : reduce == "amax" ? std::max(a, b)
                  : reduce == "amin" ? std::min(a, b)
                                     : static_cast<int64_t>(ua + ub);
      StoreInt(o, at, v);
    } else {
      double b = LoadDouble(source, i);
      if (first) {  // the identity combined with b (0 + -0.0 is 0.0)
        StoreDouble(o, at, reduce == "sum" || reduce == "mean" ? 0.0 + b : b);
        return;
      }
      double a = LoadDouble(o, at);
      double v =
          reduce == "prod" ? a * b
          : reduce == "amax"
              ? (std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b))
          : reduce == "amin"
              ? (std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b))
              : a + b;
      StoreDouble(o, at, v);
    }
  });
  RETURN_IF_ERROR(status);
  if (reduce == "mean") {
    int64_t slot = 0;
    ForEachIndex(o.sizes(), [&](absl::Span<const int64_t> i) {
      int64_t n = std::max<int64_t>(count[slot++], 1);
      if (ints) {
        int64_t a = LoadInt(o, i), q = a / n;
        if (a % n != 0 && a < 0) --q;  // floor division (n > 0)
        StoreInt(o, i, q);
      } else {
        StoreDouble(o, i, LoadDouble(o, i) / n);
      }
    });
  }
  return out;
}

}  // namespace

absl::Status RegisterIndexOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      r.Add("gather(Tensor self, int dim, Tensor index, *, bool "
            "sparse_grad=False) -> Tensor",
            Gather));
  RETURN_IF_ERROR(r.Add(
      "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
      Scatter));
  RETURN_IF_ERROR(
      r.Add("scatter.value(Tensor self, int dim, Tensor index, "
            "Scalar value) -> Tensor",
            Scatter));
  RETURN_IF_ERROR(
      r.Add("scatter.reduce(Tensor self, int dim, Tensor index, "
            "Tensor src, *, str reduce) -> Tensor",
            Scatter));
  RETURN_IF_ERROR(
      r.Add("scatter.value_reduce(Tensor self, int dim, Tensor "
            "index, Scalar value, *, "
            "str reduce) -> Tensor",
            Scatter));
  RETURN_IF_ERROR(r.Add(
      "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
      Scatter));
  RETURN_IF_ERROR(
      r.Add("index_select(Tensor self, int dim, Tensor index) -> Tensor",
            IndexSelect));
  RETURN_IF_ERROR(r.Add(
      "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
      "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
      Embedding));
  RETURN_IF_ERROR(
      r.Add("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", Index));
  // _unsafe_index: index without PyTorch's bounds promise; lathe's kernel
  // still checks every index (an error, never a wild read).
  RETURN_IF_ERROR(r.Add(
      "_unsafe_index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", Index));
  RETURN_IF_ERROR(
      r.Add("index_put(Tensor self, Tensor?[] indices, Tensor values, bool "
            "accumulate=False) -> Tensor",
            IndexPut));
  // _unsafe_index_put (upsampling's backward): index_put, every index still
  // checked.
  RETURN_IF_ERROR(
      r.Add("_unsafe_index_put(Tensor self, Tensor?[] indices, Tensor values, "
            "bool accumulate=False) -> Tensor",
            IndexPut));
  RETURN_IF_ERROR(r.Add(
      "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
      "accumulate=False) -> Tensor(a!)",
      IndexPutInplace));
  RETURN_IF_ERROR(r.Pair("aten.index_put_.default", "aten.index_put.default"));
  RETURN_IF_ERROR(r.Add(
      "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
      "SymInt? end=None, SymInt step=1) -> Tensor",
      [](const OpCall& c) { return ScatterInto(c, "aten.slice.Tensor"); }));
  RETURN_IF_ERROR(
      r.Add("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> "
            "Tensor",
            [](const OpCall& c) { return ScatterInto(c, "aten.select.int"); }));
  RETURN_IF_ERROR(r.Add(
      "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int "
      "dim2=1) -> Tensor",
      [](const OpCall& c) { return ScatterInto(c, "aten.diagonal.default"); }));
  RETURN_IF_ERROR(r.Add(
      "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] "
      "stride, SymInt? storage_offset=None) -> Tensor",
      [](const OpCall& c) {
        return ScatterInto(c, "aten.as_strided.default");
      }));
  RETURN_IF_ERROR(
      r.PairScatter("aten.slice.Tensor", "aten.slice_scatter.default"));
  RETURN_IF_ERROR(
      r.PairScatter("aten.select.int", "aten.select_scatter.default"));
  RETURN_IF_ERROR(
      r.PairScatter("aten.diagonal.default", "aten.diagonal_scatter.default"));
  RETURN_IF_ERROR(r.PairScatter("aten.as_strided.default",
                                "aten.as_strided_scatter.default"));
  RETURN_IF_ERROR(r.Add("flip(Tensor self, int[] dims) -> Tensor", Flip));
  RETURN_IF_ERROR(r.Add(
      "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", Roll));
  RETURN_IF_ERROR(r.Add(
      "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> "
      "Tensor",
      DiagEmbed));
  RETURN_IF_ERROR(
      r.Add("repeat(Tensor self, SymInt[] repeats) -> Tensor", Repeat));
  RETURN_IF_ERROR(
      r.Add("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor "
            "values, Tensor indices)",
            Sort));
  RETURN_IF_ERROR(
      r.Add("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool "
            "descending=False) -> (Tensor values, Tensor indices)",
            Sort));
  RETURN_IF_ERROR(
      r.Add("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool "
            "sorted=True) -> (Tensor values, Tensor indices)",
            Topk));
  RETURN_IF_ERROR(
      r.Add("nonzero(Tensor self) -> Tensor", NonzeroMeta, Nonzero));
  RETURN_IF_ERROR(
      r.Add("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
            MaskedScatter));
  RETURN_IF_ERROR(
      r.Add("masked_select(Tensor self, Tensor mask) -> Tensor", MaskedSelect));
  RETURN_IF_ERROR(r.Add(
      "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str "
      "reduce, *, bool include_self=True) -> Tensor",
      ScatterReduce));
  return absl::OkStatus();
}

}  // namespace lathe::ir
