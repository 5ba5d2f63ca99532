// Indexing ops: gather/scatter along a dim, index_select, embedding,
// advanced indexing (index.Tensor, index_put) and the *_scatter ops that
// write a source into a view of a copy (slice_scatter, select_scatter,
// diagonal_scatter, as_strided_scatter). Gathered results are contiguous;
// scattered ones keep self's dense layout (preserve_format), as in PyTorch.
// Index values are checked against the sizes they index.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
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

// An index value checked against `size` (negative counts from the end).
absl::StatusOr<int64_t> CheckedIndex(const OpCall& c, int64_t i, int64_t size,
                                     int64_t dim) {
  if (i < -size || i >= size) {
    return c.Error(absl::StrCat("index ", i, " is out of bounds for dimension ",
                                dim, " with size ", size));
  }
  return i < 0 ? i + size : i;
}

// A copy of `self` in its own layout (clone with preserve_format, as
// PyTorch's scatter ops start from): the result they write into.
absl::StatusOr<Value> CopyOf(const OpCall& c, const Value& self, DType dtype) {
  std::vector<Expr> sizes = SizesOf(self);
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, Running(self), dtype, DeviceOf(self), sizes,
                                 PreservedStrides(sizes, StridesOf(self))));
  if (Running(self)) RETURN_IF_ERROR(CopyInto(out.tensor, self.tensor));
  return out;
}

// ---- gather / scatter
// --------------------------------------------------------

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

absl::StatusOr<Value> Gather(const OpCall& c) {
  const Value &self = c.arg(0), &index = c.arg(2);
  ASSIGN_OR_RETURN(int64_t dim, GatherDim(c, self, index));
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, Running(self), DTypeOf(self),
                                            DeviceOf(self), SizesOf(index)));
  if (!Running(self)) return out;
  const Tensor& s = self.tensor;
  absl::Status status;
  ForEachIndex(index.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    std::vector<int64_t> at(i.begin(), i.end());
    if (s.dim() == 0) at.clear();
    absl::StatusOr<int64_t> k = CheckedIndex(
        c, LoadInt(index.tensor, i), s.dim() == 0 ? 1 : s.sizes()[dim], dim);
    if (!k.ok()) {
      status = k.status();
      return;
    }
    if (s.dim() > 0) at[dim] = *k;
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

// scatter(self, dim, index, src | value [, reduce]) and scatter_add.
absl::StatusOr<Value> Scatter(const OpCall& c) {
  const Value &self = c.arg(0), &index = c.arg(2), &src = c.arg(3);
  ASSIGN_OR_RETURN(int64_t dim, GatherDim(c, self, index));
  ASSIGN_OR_RETURN(Combine mode, ReduceMode(c));
  if (src.is_tensor() && RankOf(src) != RankOf(index) && RankOf(index) > 1) {
    return c.Error(
        "Index tensor must have the same number of dimensions as src tensor");
  }
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
    std::vector<int64_t> at(i.begin(), i.end());
    if (o.dim() == 0) at.clear();
    absl::StatusOr<int64_t> k = CheckedIndex(
        c, LoadInt(index.tensor, i), o.dim() == 0 ? 1 : o.sizes()[dim], dim);
    if (!k.ok()) {
      status = k.status();
      return;
    }
    if (o.dim() > 0) at[dim] = *k;
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
      status = c.Error(absl::StrCat("index out of range in self (index ", k,
                                    ", size ", size, ")"));
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
          "indexing with a boolean mask is not supported yet (its size depends "
          "on data)");
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
            CheckedIndex(c, LoadInt(views[t], b), self.sizes()[d], d);
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

absl::StatusOr<Value> Index(const OpCall& c) {
  const Value& self = c.arg(0);
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
  RETURN_IF_ERROR(
      r.Add("index_put(Tensor self, Tensor?[] indices, Tensor values, bool "
            "accumulate=False) -> Tensor",
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
  return absl::OkStatus();
}

}  // namespace lathe::ir
