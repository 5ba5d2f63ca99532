// View ops: t, transpose, permute, unsqueeze, squeeze, expand, slice, select,
// view/_unsafe_view, alias. Kernels return views sharing the input's
// storage; meta functions compute the same sizes, strides and offset
// symbolically (and keep the storage identity).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// A layout being computed, symbolic in both meta functions and kernels.
struct Layout {
  std::vector<Expr> sizes, strides;
  Expr offset = symbolic::Int(0);
};

Layout LayoutOf(const Value& v) {
  Layout l;
  l.sizes = SizesOf(v);
  l.strides = StridesOf(v);
  l.offset = v.tensor.defined() ? symbolic::Int(v.tensor.storage_offset())
                                : v.meta.storage_offset;
  return l;
}

// The view as a Value: a real view for tensors, metadata otherwise.
absl::StatusOr<Value> Emit(const OpCall& c, const Value& self,
                           const Layout& l) {
  if (self.tensor.defined()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, l.sizes));
    ASSIGN_OR_RETURN(std::vector<int64_t> strides, ConcreteSizes(c, l.strides));
    if (l.offset.kind() != symbolic::ExprKind::kInteger)
      return c.Error("offset is not concrete");
    ASSIGN_OR_RETURN(
        Tensor v, self.tensor.AsStrided(sizes, strides, l.offset.int_value()));
    return Value::OfTensor(v);
  }
  TensorMeta m = self.meta;
  m.sizes = l.sizes;
  m.strides = l.strides;
  m.storage_offset = l.offset;
  return Value::OfMeta(m);
}

absl::StatusOr<Value> Transpose(const OpCall& c, int64_t d0, int64_t d1) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  ASSIGN_OR_RETURN(d0, WrapDim(c, d0, rank));
  ASSIGN_OR_RETURN(d1, WrapDim(c, d1, rank));
  if (rank > 0) {
    std::swap(l.sizes[d0], l.sizes[d1]);
    std::swap(l.strides[d0], l.strides[d1]);
  }
  return Emit(c, c.arg(0), l);
}

absl::StatusOr<Value> Permute(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.arg(1).AsIntList());
  if (static_cast<int64_t>(dims.size()) != rank) {
    return c.Error(absl::StrCat(
        "permute(sparse_coo): number of dimensions in the tensor input does "
        "not match the length of the desired ordering of dimensions i.e. "
        "input.dim() = ",
        rank, " is not equal to len(dims) = ", dims.size()));
  }
  Layout out;
  out.offset = l.offset;
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
    if (seen[w]) return c.Error("permute(): duplicate dims are not allowed.");
    seen[w] = true;
    out.sizes.push_back(l.sizes[w]);
    out.strides.push_back(l.strides[w]);
  }
  return Emit(c, c.arg(0), out);
}

absl::StatusOr<Value> Unsqueeze(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank + 1));
  Expr stride = dim >= rank ? symbolic::Int(1)
                            : symbolic::Mul(l.sizes[dim], l.strides[dim]);
  l.sizes.insert(l.sizes.begin() + dim, symbolic::Int(1));
  l.strides.insert(l.strides.begin() + dim, stride);
  return Emit(c, c.arg(0), l);
}

absl::StatusOr<Value> Expand(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  ASSIGN_OR_RETURN(std::vector<Expr> target, c.arg(1).AsExprList());
  if (target.size() < l.sizes.size()) {
    return c.Error(absl::StrCat("the number of sizes provided (", target.size(),
                                ") must be greater or equal to the number of "
                                "dimensions in the tensor (",
                                l.sizes.size(), ")"));
  }
  Layout out;
  out.offset = l.offset;
  size_t lead = target.size() - l.sizes.size();
  for (size_t i = 0; i < target.size(); ++i) {
    Expr want = target[i];
    if (i < lead) {
      if (want.is_constant(-1)) {
        return c.Error(absl::StrCat(
            "The expanded size of the tensor (-1) isn't allowed in a leading, "
            "non-existing dimension ",
            i));
      }
      out.sizes.push_back(want);
      out.strides.push_back(symbolic::Int(0));
      continue;
    }
    Expr have = l.sizes[i - lead];
    if (want.is_constant(-1) || want == have) {
      out.sizes.push_back(have);
      out.strides.push_back(l.strides[i - lead]);
      continue;
    }
    ASSIGN_OR_RETURN(bool one, Decide(c, symbolic::Eq(have, symbolic::Int(1))));
    if (!one) {
      return c.Error(absl::StrCat(
          "The expanded size of the tensor (", symbolic::ToString(want),
          ") must match the existing size (", symbolic::ToString(have),
          ") at non-singleton dimension ", i, ".  Target sizes: ",
          ShapeString(target), ".  Tensor sizes: ", ShapeString(l.sizes)));
    }
    out.sizes.push_back(want);
    out.strides.push_back(symbolic::Int(0));
  }
  return Emit(c, c.arg(0), out);
}

// A slice bound clamped to [0, size] (negative: from the end), deciding
// comparisons concretely or by guarding, as PyTorch's meta does.
absl::StatusOr<Expr> ClampBound(const OpCall& c, Expr v, Expr size) {
  if (v.kind() == symbolic::ExprKind::kInteger && v.int_value() < 0)
    v = symbolic::Add(v, size);
  ASSIGN_OR_RETURN(bool below, Decide(c, symbolic::Lt(v, symbolic::Int(0))));
  if (below) return symbolic::Int(0);
  ASSIGN_OR_RETURN(bool above, Decide(c, symbolic::Gt(v, size)));
  return above ? size : v;
}

absl::StatusOr<Value> Slice(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  if (rank == 0) return c.Error("slice() cannot be applied to a 0-dim tensor.");
  Expr size = l.sizes[dim];
  Expr start = symbolic::Int(0), end = size;
  if (!c.arg(2).is_none()) {
    ASSIGN_OR_RETURN(start, ClampBound(c, c.arg(2).number, size));
  }
  Expr step = c.arg(4).number;
  ASSIGN_OR_RETURN(bool positive,
                   Decide(c, symbolic::Gt(step, symbolic::Int(0))));
  if (!positive) return c.Error("slice step must be positive");
  std::optional<Expr> len;
  if (!c.arg(3).is_none()) {
    absl::StatusOr<Expr> clamped = ClampBound(c, c.arg(3).number, size);
    if (clamped.ok()) {
      end = *clamped;
    } else if (symbolic::IsDataDependentError(clamped.status()) &&
               c.env() != nullptr) {
      // An end that depends on data (x[:u0]): as PyTorch, the length is a
      // fresh unbacked size, bound to the result's size.
      len = c.env()->CreateUnbackedSizeLike();
    } else {
      return clamped.status();
    }
  }
  if (!len) {
    ASSIGN_OR_RETURN(bool empty, Decide(c, symbolic::Lt(end, start)));
    if (empty) end = start;
    ASSIGN_OR_RETURN(len, symbolic::CeilDiv(symbolic::Sub(end, start), step));
  }
  l.offset = symbolic::Add(l.offset, symbolic::Mul(start, l.strides[dim]));
  l.sizes[dim] = *len;
  l.strides[dim] = symbolic::Mul(l.strides[dim], step);
  return Emit(c, c.arg(0), l);
}

absl::StatusOr<Value> Select(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  if (rank == 0)
    return c.Error("select() cannot be applied to a 0-dim tensor.");
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  Expr index = c.arg(2).number;
  Expr size = l.sizes[dim];
  ASSIGN_OR_RETURN(
      bool in_range,
      Decide(c, symbolic::And(symbolic::Le(symbolic::Neg(size), index),
                              symbolic::Lt(index, size))));
  if (!in_range) {
    return c.Error(absl::StrCat("select(): index ", symbolic::ToString(index),
                                " out of range for tensor of size ",
                                ShapeString(l.sizes), " at dimension ", dim));
  }
  if (index.kind() == symbolic::ExprKind::kInteger && index.int_value() < 0) {
    index = symbolic::Add(index, size);
  }
  l.offset = symbolic::Add(l.offset, symbolic::Mul(index, l.strides[dim]));
  l.sizes.erase(l.sizes.begin() + dim);
  l.strides.erase(l.strides.begin() + dim);
  return Emit(c, c.arg(0), l);
}

// PyTorch's computeStride on symbolic sizes and strides: the strides of a
// view of `sizes`/`strides` as `new_sizes`, or nullopt when no view can
// have that shape. Each comparison is decided through the call (guards
// during shape propagation, as PyTorch's symbolic computeStride does), so
// a symbolic size stays symbolic rather than being specialized to its hint.
absl::StatusOr<std::optional<std::vector<Expr>>> ComputeStride(
    const OpCall& c, const std::vector<Expr>& sizes,
    const std::vector<Expr>& strides, const std::vector<Expr>& new_sizes) {
  using symbolic::Int;
  using symbolic::Mul;
  Expr numel = Int(1);
  for (const Expr& s : sizes) numel = Mul(numel, s);
  ASSIGN_OR_RETURN(bool empty, Decide(c, symbolic::Eq(numel, Int(0))));
  if (empty) return {ContiguousStrides(new_sizes)};
  std::vector<Expr> out(new_sizes.size(), Int(0));
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  Expr chunk_base_stride = strides.empty() ? Int(1) : strides.back();
  Expr tensor_numel = Int(1), view_numel = Int(1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel = Mul(tensor_numel, sizes[d]);
    bool chunk_end = d == 0;
    if (!chunk_end) {
      ASSIGN_OR_RETURN(bool not_one,
                       Decide(c, symbolic::Ne(sizes[d - 1], Int(1))));
      if (not_one) {
        ASSIGN_OR_RETURN(
            chunk_end,
            Decide(c, symbolic::Ne(strides[d - 1],
                                   Mul(tensor_numel, chunk_base_stride))));
      }
    }
    if (!chunk_end) continue;
    while (view_d >= 0) {
      ASSIGN_OR_RETURN(bool less,
                       Decide(c, symbolic::Lt(view_numel, tensor_numel)));
      if (!less) {
        ASSIGN_OR_RETURN(less,
                         Decide(c, symbolic::Eq(new_sizes[view_d], Int(1))));
      }
      if (!less) break;
      out[view_d] = Mul(view_numel, chunk_base_stride);
      view_numel = Mul(view_numel, new_sizes[view_d]);
      --view_d;
    }
    ASSIGN_OR_RETURN(bool same,
                     Decide(c, symbolic::Eq(view_numel, tensor_numel)));
    if (!same) return {std::nullopt};
    if (d > 0) {
      chunk_base_stride = strides[d - 1];
      tensor_numel = Int(1);
      view_numel = Int(1);
    }
  }
  if (view_d != -1) return {std::nullopt};
  return {out};
}

absl::StatusOr<Value> View(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  ASSIGN_OR_RETURN(std::vector<Expr> target, c.arg(1).AsExprList());
  const std::vector<Expr> requested = target;  // for messages
  // Infer one -1.
  Expr numel = symbolic::Int(1);
  for (Expr s : l.sizes) numel = symbolic::Mul(numel, s);
  int infer = -1;
  Expr known = symbolic::Int(1);
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].is_constant(-1)) {
      if (infer >= 0) return c.Error("only one dimension can be inferred");
      infer = static_cast<int>(i);
    } else {
      known = symbolic::Mul(known, target[i]);
    }
  }
  if (infer >= 0) {
    ASSIGN_OR_RETURN(Expr q, symbolic::FloorDiv(numel, known));
    target[infer] = q;
  }
  Expr target_numel = symbolic::Int(1);
  for (Expr s : target) target_numel = symbolic::Mul(target_numel, s);
  ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(numel, target_numel)));
  if (!same) {
    return c.Error(absl::StrCat("shape '", ShapeString(requested),
                                "' is invalid for input of size ",
                                symbolic::ToString(numel)));
  }
  Layout out;
  out.offset = l.offset;
  out.sizes = target;
  if (l.strides == ContiguousStrides(l.sizes)) {
    out.strides = ContiguousStrides(target);
  } else {
    ASSIGN_OR_RETURN(std::optional<std::vector<Expr>> s,
                     ComputeStride(c, l.sizes, l.strides, target));
    if (!s) {
      return c.Error(
          "view size is not compatible with input tensor's size and stride (at "
          "least one "
          "dimension spans across two contiguous subspaces). Use .reshape(...) "
          "instead.");
    }
    out.strides = *std::move(s);
  }
  return Emit(c, c.arg(0), out);
}

absl::StatusOr<Value> Diagonal(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  ASSIGN_OR_RETURN(int64_t offset, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(int64_t d1, c.arg(2).AsInt());
  ASSIGN_OR_RETURN(int64_t d2, c.arg(3).AsInt());
  ASSIGN_OR_RETURN(d1, WrapDim(c, d1, rank));
  ASSIGN_OR_RETURN(d2, WrapDim(c, d2, rank));
  if (d1 == d2) {
    return c.Error(
        absl::StrCat("diagonal dimensions cannot be identical ", d1, ", ", d2));
  }
  Expr s1 = l.sizes[d1], s2 = l.sizes[d2];
  // Length max(min(s1, s2 - offset), 0) for offset >= 0, else
  // max(min(s1 + offset, s2), 0); the start moves along d2 or d1.
  Expr len = offset >= 0
                 ? symbolic::Min(s1, symbolic::Sub(s2, symbolic::Int(offset)))
                 : symbolic::Min(symbolic::Add(s1, symbolic::Int(offset)), s2);
  len = symbolic::Max(len, symbolic::Int(0));
  Expr start = offset >= 0
                   ? symbolic::Mul(symbolic::Int(offset), l.strides[d2])
                   : symbolic::Mul(symbolic::Int(-offset), l.strides[d1]);
  Layout out;
  out.offset = symbolic::Add(l.offset, start);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == d1 || d == d2) continue;
    out.sizes.push_back(l.sizes[d]);
    out.strides.push_back(l.strides[d]);
  }
  out.sizes.push_back(len);
  out.strides.push_back(symbolic::Add(l.strides[d1], l.strides[d2]));
  return Emit(c, c.arg(0), out);
}

// narrow(self, dim, start, length): slice [start, start + length).
absl::StatusOr<Value> Narrow(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  if (rank == 0)
    return c.Error("narrow() cannot be applied to a 0-dim tensor.");
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  Expr size = l.sizes[dim], start = c.arg(2).number, length = c.arg(3).number;
  ASSIGN_OR_RETURN(
      bool start_ok,
      Decide(c, symbolic::And(symbolic::Le(symbolic::Neg(size), start),
                              symbolic::Le(start, size))));
  if (!start_ok) {
    return c.Error(absl::StrCat(
        "start out of range (expected to be in range of [",
        symbolic::ToString(symbolic::Neg(size)), ", ", symbolic::ToString(size),
        "], but got ", symbolic::ToString(start), ")"));
  }
  if (start.kind() == symbolic::ExprKind::kInteger && start.int_value() < 0) {
    start = symbolic::Add(start, size);
  }
  ASSIGN_OR_RETURN(
      bool fits,
      Decide(c,
             symbolic::And(symbolic::Ge(length, symbolic::Int(0)),
                           symbolic::Le(symbolic::Add(start, length), size))));
  if (!fits) {
    return c.Error(absl::StrCat("start (", symbolic::ToString(start),
                                ") + length (", symbolic::ToString(length),
                                ") exceeds dimension size (",
                                symbolic::ToString(size), ")."));
  }
  l.offset = symbolic::Add(l.offset, symbolic::Mul(start, l.strides[dim]));
  l.sizes[dim] = length;
  return Emit(c, c.arg(0), l);
}

// Views of consecutive chunks of `sizes[k]` along `dim`.
absl::StatusOr<Value> Chunks(const OpCall& c, int64_t dim,
                             const std::vector<Expr>& sizes) {
  Layout l = LayoutOf(c.arg(0));
  std::vector<Value> out;
  Expr start = symbolic::Int(0);
  for (Expr n : sizes) {
    Layout part = l;
    part.offset = symbolic::Add(l.offset, symbolic::Mul(start, l.strides[dim]));
    part.sizes[dim] = n;
    ASSIGN_OR_RETURN(Value v, Emit(c, c.arg(0), part));
    out.push_back(std::move(v));
    start = symbolic::Add(start, n);
  }
  return Value::List(std::move(out));
}

// split.Tensor(self, split_size, dim): chunks of split_size, the last smaller.
absl::StatusOr<Value> Split(const OpCall& c) {
  int64_t rank = RankOf(c.arg(0));
  if (rank == 0)
    return c.Error("split expects at least a 1-dimensional tensor");
  ASSIGN_OR_RETURN(int64_t dim, c.arg(2).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  Expr size = SizesOf(c.arg(0))[dim];
  ASSIGN_OR_RETURN(std::vector<int64_t> total, ConcreteSizes(c, {size}));
  // A symbolic split size (chunk(3) of a symbolic dim: (s0 + 2) // 3) is
  // specialized to its value, as the dim is.
  if (!c.arg(1).is_number()) return c.Error("split_size must be an int");
  ASSIGN_OR_RETURN(std::vector<int64_t> split_size,
                   ConcreteSizes(c, {c.arg(1).number}));
  int64_t split = split_size[0];
  if (split < 0 || (split == 0 && total[0] != 0)) {
    return c.Error(
        absl::StrCat("split_size can only be 0 if dimension size is 0, but got "
                     "dimension size of ",
                     total[0]));
  }
  std::vector<Expr> sizes;
  int64_t chunks =
      split == 0 ? 1 : std::max<int64_t>(1, (total[0] + split - 1) / split);
  for (int64_t k = 0; k < chunks; ++k) {
    sizes.push_back(symbolic::Int(std::min(split, total[0] - k * split)));
  }
  return Chunks(c, dim, sizes);
}

absl::StatusOr<Value> SplitWithSizes(const OpCall& c) {
  int64_t rank = RankOf(c.arg(0));
  if (rank == 0)
    return c.Error("split expects at least a 1-dimensional tensor");
  ASSIGN_OR_RETURN(int64_t dim, c.arg(2).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  std::vector<Expr> sizes;
  Expr sum = symbolic::Int(0);
  for (const Value& v : c.arg(1).list) {
    sizes.push_back(v.number);
    sum = symbolic::Add(sum, v.number);
  }
  Expr size = SizesOf(c.arg(0))[dim];
  ASSIGN_OR_RETURN(bool ok, Decide(c, symbolic::Eq(sum, size)));
  if (!ok) {
    return c.Error(absl::StrCat(
        "Split sizes add up to ", symbolic::ToString(sum),
        " but got the tensor's size of ", symbolic::ToString(size)));
  }
  return Chunks(c, dim, sizes);
}

// unbind(self, dim): select(dim, k) for every k.
absl::StatusOr<Value> Unbind(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  if (rank == 0)
    return c.Error("Dimension specified as 0 but tensor has no dimensions");
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  ASSIGN_OR_RETURN(std::vector<int64_t> n, ConcreteSizes(c, {l.sizes[dim]}));
  std::vector<Value> out;
  for (int64_t k = 0; k < n[0]; ++k) {
    Layout part;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == dim) continue;
      part.sizes.push_back(l.sizes[d]);
      part.strides.push_back(l.strides[d]);
    }
    part.offset = symbolic::Add(
        l.offset, symbolic::Mul(symbolic::Int(k), l.strides[dim]));
    ASSIGN_OR_RETURN(Value v, Emit(c, c.arg(0), part));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
}

// as_strided(self, size, stride, storage_offset): any layout on the storage.
absl::StatusOr<Value> AsStrided(const OpCall& c) {
  Layout l;
  for (const Value& v : c.arg(1).list) l.sizes.push_back(v.number);
  for (const Value& v : c.arg(2).list) l.strides.push_back(v.number);
  if (l.sizes.size() != l.strides.size()) {
    return c.Error(absl::StrCat(
        "mismatch in length of strides and shape: ", l.sizes.size(),
        " sizes and ", l.strides.size(), " strides"));
  }
  l.offset = c.arg(3).is_none() ? LayoutOf(c.arg(0)).offset : c.arg(3).number;
  for (Expr e : l.sizes) {
    ASSIGN_OR_RETURN(bool neg, Decide(c, symbolic::Lt(e, symbolic::Int(0))));
    if (neg) return c.Error(NegativeDimension(e, l.sizes));
  }
  return Emit(c, c.arg(0), l);
}

// _reshape_copy: a contiguous copy of self, viewed in the new shape (what
// reshape does when self's layout allows no view; shape propagation names
// such a reshape so).
absl::StatusOr<Value> ReshapeCopy(const OpCall& c) {
  const Value& self = c.arg(0);
  Value copy;
  if (self.tensor.defined()) {
    ASSIGN_OR_RETURN(copy, ResultOrEmpty(c, true, DTypeOf(self), DeviceOf(self),
                                         SizesOf(self)));
    RETURN_IF_ERROR(CopyInto(copy.tensor, self.tensor));
  } else {
    copy = MetaResult(DTypeOf(self), DeviceOf(self), SizesOf(self));
  }
  OpCall on_copy(c.op(), {copy, c.arg(1)}, c.env());
  return View(on_copy);
}

// reshape: a view when the layout allows one, else _reshape_copy.
absl::StatusOr<Value> Reshape(const OpCall& c) {
  absl::StatusOr<Value> view = View(c);
  if (view.ok() || !absl::StrContains(view.status().message(),
                                      "view size is not compatible")) {
    return view;
  }
  return ReshapeCopy(c);
}

// squeeze() / squeeze.dim(dim) / squeeze.dims(dims): drops the given (or
// all) dims of size 1.
absl::StatusOr<Value> SqueezeDims(const OpCall& c) {
  Layout l = LayoutOf(c.arg(0));
  int64_t rank = static_cast<int64_t>(l.sizes.size());
  std::vector<bool> drop(rank, c.num_args() == 1);
  if (c.num_args() > 1) {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.arg(1).AsIntList());
    for (int64_t d : dims) {
      ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
      if (rank > 0) drop[w] = true;
    }
  }
  Layout out;
  out.offset = l.offset;
  for (int64_t d = 0; d < rank; ++d) {
    if (drop[d]) {
      ASSIGN_OR_RETURN(bool one,
                       Decide(c, symbolic::Eq(l.sizes[d], symbolic::Int(1))));
      if (one) continue;
    }
    out.sizes.push_back(l.sizes[d]);
    out.strides.push_back(l.strides[d]);
  }
  return Emit(c, c.arg(0), out);
}

// view.dtype: the same bytes as another dtype; a different element size
// rescales the last dim, which must have stride 1.
absl::StatusOr<Value> ViewDType(const OpCall& c) {
  const Value& self = c.arg(0);
  DType from = DTypeOf(self), to = c.arg(1).dtype;
  Layout l = LayoutOf(self);
  int64_t a = ItemSize(from), b = ItemSize(to);
  if (a != b) {
    int64_t rank = static_cast<int64_t>(l.sizes.size());
    if (rank == 0) {
      return c.Error(
          "self.dim() cannot be 0 to view a tensor as a dtype with a different "
          "size");
    }
    if (!l.strides[rank - 1].is_constant(1)) {
      return c.Error(
          "self.stride(-1) must be 1 to view a tensor as a dtype with a "
          "different size");
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> last,
                     ConcreteSizes(c, {l.sizes[rank - 1]}));
    ASSIGN_OR_RETURN(std::vector<int64_t> strides, ConcreteSizes(c, l.strides));
    ASSIGN_OR_RETURN(std::vector<int64_t> offset, ConcreteSizes(c, {l.offset}));
    auto divisible = [&](int64_t v) { return (v * a) % b == 0; };
    if (!divisible(last[0])) {
      return c.Error(absl::StrCat("self.size(-1) must be divisible by ",
                                  b / std::min(a, b), " to view ",
                                  ShortName(from), " as ", ShortName(to)));
    }
    for (int64_t d = 0; d + 1 < rank; ++d) {
      if (!divisible(strides[d])) {
        return c.Error(
            "self.stride(i) must be divisible by the element size ratio for "
            "all i < -1");
      }
    }
    if (!divisible(offset[0]))
      return c.Error("self.storage_offset() must be divisible");
    l.sizes[rank - 1] = symbolic::Int(last[0] * a / b);
    for (int64_t d = 0; d + 1 < rank; ++d)
      l.strides[d] = symbolic::Int(strides[d] * a / b);
    l.offset = symbolic::Int(offset[0] * a / b);
  }
  if (!self.tensor.defined()) {
    TensorMeta m = self.meta;
    m.dtype = to;
    m.sizes = l.sizes;
    m.strides = l.strides;
    m.storage_offset = l.offset;
    return Value::OfMeta(m);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, l.sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, ConcreteSizes(c, l.strides));
  ASSIGN_OR_RETURN(std::vector<int64_t> offset, ConcreteSizes(c, {l.offset}));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Wrap(self.tensor.storage(), to, sizes,
                                          strides, offset[0]));
  return Value::OfTensor(t);
}

// set_(self, source): self takes source's storage and layout.
absl::StatusOr<Value> Set(const OpCall& c) {
  if (DTypeOf(c.arg(0)) != DTypeOf(c.arg(1))) {
    return c.Error(absl::StrCat(
        "Could not set tensor of type ", ScalarTypeName(DTypeOf(c.arg(0))),
        " to a tensor of type ", ScalarTypeName(DTypeOf(c.arg(1)))));
  }
  return c.arg(1);
}

// t / t_: transposes a matrix; fewer dims are returned as they are.
absl::StatusOr<Value> TransposeMatrix(const OpCall& c) {
  if (RankOf(c.arg(0)) > 2) {
    return c.Error(
        absl::StrCat(c.op().schema.name,
                     "() expects a tensor with <= 2 dimensions, but self is ",
                     RankOf(c.arg(0)), "D"));
  }
  return RankOf(c.arg(0)) < 2 ? Emit(c, c.arg(0), LayoutOf(c.arg(0)))
                              : Transpose(c, 0, 1);
}

// transpose.int / transpose_: swaps two dims.
absl::StatusOr<Value> TransposeDims(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t d0, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(int64_t d1, c.arg(2).AsInt());
  return Transpose(c, d0, d1);
}

}  // namespace

absl::Status RegisterViewOps(OpRegistry& r) {
  RETURN_IF_ERROR(r.Add("t(Tensor(a) self) -> Tensor(a)", TransposeMatrix));
  RETURN_IF_ERROR(
      r.Add("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
            TransposeDims));
  RETURN_IF_ERROR(
      r.Add("permute(Tensor(a) self, int[] dims) -> Tensor(a)", Permute));
  RETURN_IF_ERROR(
      r.Add("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", Unsqueeze));
  RETURN_IF_ERROR(
      r.Add("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", SqueezeDims));
  RETURN_IF_ERROR(
      r.Add("expand(Tensor(a) self, SymInt[] size, *, bool "
            "implicit=False) -> Tensor(a)",
            Expand));
  RETURN_IF_ERROR(
      r.Add("slice.Tensor(Tensor(a) self, int dim=0, SymInt? "
            "start=None, SymInt? end=None, "
            "SymInt step=1) -> Tensor(a)",
            Slice));
  RETURN_IF_ERROR(
      r.Add("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
            Select));
  RETURN_IF_ERROR(
      r.Add("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", View));
  RETURN_IF_ERROR(
      r.Add("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", View));
  RETURN_IF_ERROR(
      r.Add("diagonal(Tensor(a) self, int offset=0, int dim1=0, int "
            "dim2=1) -> Tensor(a)",
            Diagonal));
  RETURN_IF_ERROR(
      r.Add("narrow(Tensor(a) self, int dim, SymInt start, SymInt "
            "length) -> Tensor(a)",
            Narrow));
  RETURN_IF_ERROR(
      r.Add("split.Tensor(Tensor(a -> *) self, SymInt split_size, "
            "int dim=0) -> Tensor(a)[]",
            Split));
  RETURN_IF_ERROR(
      r.Add("split_with_sizes(Tensor(a -> *) self, SymInt[] "
            "split_sizes, int dim=0) -> "
            "Tensor(a)[]",
            SplitWithSizes));
  RETURN_IF_ERROR(r.Add(
      "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", Unbind));
  RETURN_IF_ERROR(r.Add(
      "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? "
      "storage_offset=None) -> Tensor(a)",
      AsStrided));
  RETURN_IF_ERROR(
      r.Add("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", Reshape));
  RETURN_IF_ERROR(r.Add("_reshape_copy(Tensor self, SymInt[] size) -> Tensor",
                        ReshapeCopy));
  RETURN_IF_ERROR(r.Add("squeeze(Tensor(a) self) -> Tensor(a)", SqueezeDims));
  RETURN_IF_ERROR(r.Add("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
                        SqueezeDims));
  RETURN_IF_ERROR(r.Add(
      "view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", ViewDType));
  // In-place views: the result replaces self's metadata (MutatesMetadata).
  RETURN_IF_ERROR(r.Add("t_(Tensor(a!) self) -> Tensor(a!)", TransposeMatrix));
  RETURN_IF_ERROR(
      r.Add("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
            TransposeDims));
  RETURN_IF_ERROR(
      r.Add("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", Unsqueeze));
  RETURN_IF_ERROR(r.Add(
      "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? "
      "storage_offset=None) -> Tensor(a!)",
      AsStrided));
  RETURN_IF_ERROR(r.Add(
      "set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)", Set));
  // alias and detach are the same view here; detach only matters to
  // autograd (its result does not require grad), which
  // view_and_mutation_meta tracks.
  auto same_view = [](const OpCall& c) {
    return Emit(c, c.arg(0), LayoutOf(c.arg(0)));
  };
  RETURN_IF_ERROR(r.Add("alias(Tensor(a) self) -> Tensor(a)", same_view));
  RETURN_IF_ERROR(r.Add("detach(Tensor(a) self) -> Tensor(a)", same_view));
  return absl::OkStatus();
}

}  // namespace lathe::ir
