#include "passes/decompose_backward.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "passes/rewriter.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::passes::decomp {
namespace {

// A literal bool[3] output_mask; nullopt otherwise.
std::optional<std::vector<bool>> OutputMask(const Rewriter& r) {
  Arg a = r.Get("output_mask");
  if (a.kind != Arg::Kind::kList || a.list.size() != 3) return std::nullopt;
  std::vector<bool> mask;
  for (const Arg& e : a.list) {
    if (e.kind != Arg::Kind::kBool) return std::nullopt;
    mask.push_back(e.b);
  }
  return mask;
}

// `x` contiguous and viewed as `sizes`.
absl::StatusOr<Node*> ViewAs(Rewriter& r, Node* x, std::vector<Arg> sizes) {
  ASSIGN_OR_RETURN(x, r.Contiguous(x));
  return r.Call("aten.view.default", {A(x), Arg::List(std::move(sizes))});
}

// native_layer_norm_backward (decompositions.py), in the computation dtype
// over contiguous copies: x_hat = (x - mean) * rstd and g = grad * weight;
// d_input = rstd / N * (N g - sum(g) - x_hat * sum(g x_hat)) over the N
// normalized elements; d_weight = sum(grad * x_hat) and d_bias = sum(grad)
// over the other dims. mean and rstd may have any shape of the right count
// (the kernel reads them flat); a gradient asked of a None parameter is
// left to the op (its error).
absl::StatusOr<Outputs> LayerNormBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_out");
  Node* input = r.Tensor("input");
  Node* mean = r.Tensor("mean");
  Node* rstd = r.Tensor("rstd");
  Node* weight = r.Tensor("weight");
  Node* bias = r.Tensor("bias");
  Arg shape = r.Get("normalized_shape");
  std::optional<std::vector<bool>> mask = OutputMask(r);
  if (!IsTensor(grad) || !IsTensor(input) || !IsTensor(mean) ||
      !IsTensor(rstd) || !mask.has_value() || shape.kind != Arg::Kind::kList ||
      shape.list.empty() || ((*mask)[1] && weight == nullptr) ||
      ((*mask)[2] && bias == nullptr)) {
    return Outputs{};
  }
  const TensorMeta& m = TM(input);
  int64_t axis = m.dim() - static_cast<int64_t>(shape.list.size());
  if (axis < 0 || !IsFloatingPoint(m.dtype)) return Outputs{};
  int64_t n = 1;
  for (const Arg& s : shape.list) {
    if (s.kind != Arg::Kind::kInt) return Outputs{};
    n *= s.i;
  }
  std::vector<int64_t> inner, outer;
  for (int64_t d = 0; d < m.dim(); ++d) (d < axis ? outer : inner).push_back(d);
  DType compute = OpMath(m.dtype);
  auto cast = [&](Node* t) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(t, r.To(t, compute));
    return r.Contiguous(t);
  };
  ASSIGN_OR_RETURN(Node * dy, cast(grad));
  ASSIGN_OR_RETURN(Node * x, cast(input));
  // mean and rstd as [outer..., 1, ...].
  ASSIGN_OR_RETURN(std::vector<Arg> stat_sizes, r.Sizes(input));
  for (int64_t d : inner) stat_sizes[d] = I(1);
  ASSIGN_OR_RETURN(Node * mu, r.To(mean, compute));
  ASSIGN_OR_RETURN(mu, ViewAs(r, mu, stat_sizes));
  ASSIGN_OR_RETURN(Node * rs, r.To(rstd, compute));
  ASSIGN_OR_RETURN(rs, ViewAs(r, rs, stat_sizes));
  ASSIGN_OR_RETURN(Node * centered, r.Binary("aten.sub.Tensor", x, A(mu)));
  ASSIGN_OR_RETURN(Node * x_hat, r.Binary("aten.mul.Tensor", centered, A(rs)));
  Outputs outs(3, nullptr);
  if ((*mask)[0]) {
    Node* g = dy;
    if (weight != nullptr) {
      ASSIGN_OR_RETURN(Node * w, cast(weight));
      ASSIGN_OR_RETURN(g, r.Binary("aten.mul.Tensor", dy, A(w)));
    }
    ASSIGN_OR_RETURN(Node * a, r.Binary("aten.mul.Tensor", g, I(n)));
    ASSIGN_OR_RETURN(Node * b, Sum(r, g, inner, true));
    ASSIGN_OR_RETURN(Node * gx, r.Binary("aten.mul.Tensor", g, A(x_hat)));
    ASSIGN_OR_RETURN(Node * c2, Sum(r, gx, inner, true));
    ASSIGN_OR_RETURN(Node * c3, r.Binary("aten.mul.Tensor", x_hat, A(c2)));
    ASSIGN_OR_RETURN(Node * in, r.Binary("aten.sub.Tensor", a, A(b)));
    ASSIGN_OR_RETURN(in, r.Binary("aten.sub.Tensor", in, A(c3)));
    ASSIGN_OR_RETURN(Node * scale, r.Binary("aten.div.Tensor", rs, I(n)));
    ASSIGN_OR_RETURN(outs[0], r.Binary("aten.mul.Tensor", scale, A(in)));
  }
  if ((*mask)[1]) {
    ASSIGN_OR_RETURN(Node * gx, r.Binary("aten.mul.Tensor", dy, A(x_hat)));
    ASSIGN_OR_RETURN(outs[1], Sum(r, gx, outer, false));
  }
  if ((*mask)[2]) {
    ASSIGN_OR_RETURN(outs[2], Sum(r, dy, outer, false));
    if (outs[2] == dy) {
      ASSIGN_OR_RETURN(outs[2], r.Unary("aten.clone.default", dy));
    }
  }
  const Node* like[] = {input, weight, bias};
  for (int k = 0; k < 3; ++k) {
    if (outs[k] == nullptr) continue;
    ASSIGN_OR_RETURN(outs[k], r.To(outs[k], TM(like[k]).dtype));
    ASSIGN_OR_RETURN(outs[k], r.Contiguous(outs[k]));
  }
  return outs;
}

// native_group_norm_backward (decompositions.py), in the computation dtype
// over contiguous copies viewed as [N, C, HxW]: per channel ds = sum(grad *
// x) and db = sum(grad); per group (s = 1 / (C / group * HxW)) c1 = rstd *
// weight, c2 = (sum(db w) mean - sum(ds w)) rstd^3 s and c3 = -c2 mean -
// sum(db w) rstd s, d_input = grad c1 + x c2 + c3; d_weight = sum over N of
// (ds - db mean) rstd; d_bias = sum over N of db. C is an int or a SymInt
// the env knows.
absl::StatusOr<Outputs> GroupNormBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_out");
  Node* input = r.Tensor("input");
  Node* mean = r.Tensor("mean");
  Node* rstd = r.Tensor("rstd");
  Node* weight = r.Tensor("weight");
  Arg n = r.Get("N"), hxw = r.Get("HxW");
  std::optional<int64_t> c = r.KnownInt(r.Get("C"));
  std::optional<int64_t> group = r.Int("group");
  std::optional<std::vector<bool>> mask = OutputMask(r);
  if (!IsTensor(grad) || !IsTensor(input) || !IsTensor(mean) ||
      !IsTensor(rstd) || !mask.has_value() || !c.has_value() ||
      !group.has_value() || *group <= 0 || *c % *group != 0 ||
      !IsFloatingPoint(TM(input).dtype) ||
      (weight != nullptr && TM(weight).dim() != 1)) {
    return Outputs{};
  }
  for (const Arg* a : {&n, &hxw}) {
    if (a->kind != Arg::Kind::kInt &&
        !(a->kind == Arg::Kind::kNode &&
          a->node->meta().kind == ir::ValueMeta::Kind::kSym)) {
      return Outputs{};
    }
  }
  const TensorMeta& m = TM(input);
  DType compute = OpMath(m.dtype);
  int64_t cpg = *c / *group;
  auto cast = [&](Node* t, std::vector<Arg> sizes) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(t, r.To(t, compute));
    return ViewAs(r, t, std::move(sizes));
  };
  ASSIGN_OR_RETURN(Node * dy, cast(grad, {n, I(*c), hxw}));
  ASSIGN_OR_RETURN(Node * x, cast(input, {n, I(*c), hxw}));
  ASSIGN_OR_RETURN(Node * mu, cast(mean, {n, I(*group)}));
  ASSIGN_OR_RETURN(Node * rs, cast(rstd, {n, I(*group)}));
  ASSIGN_OR_RETURN(Node * prod, r.Binary("aten.mul.Tensor", dy, A(x)));
  ASSIGN_OR_RETURN(Node * ds, Sum(r, prod, {2}, false));  // [N, C]
  ASSIGN_OR_RETURN(Node * db, Sum(r, dy, {2}, false));
  Node* w = nullptr;
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(w, r.To(weight, compute));
  }
  Outputs outs(3, nullptr);
  if ((*mask)[0]) {
    // Per group: sum over its channels of ds * w and db * w.
    auto per_group = [&](Node* t) -> absl::StatusOr<Node*> {
      if (w != nullptr) {
        ASSIGN_OR_RETURN(t, r.Binary("aten.mul.Tensor", t, A(w)));
      }
      ASSIGN_OR_RETURN(t, ViewAs(r, t, {n, I(*group), I(cpg)}));
      return Sum(r, t, {2}, false);
    };
    ASSIGN_OR_RETURN(Node * ds_val, per_group(ds));
    ASSIGN_OR_RETURN(Node * db_val, per_group(db));
    // c1 = rstd * w as [N, group, cpg, 1].
    ASSIGN_OR_RETURN(Node * c1, r.Binary("aten.unsqueeze.default", rs, I(-1)));
    if (w != nullptr) {
      ASSIGN_OR_RETURN(Node * wg, ViewAs(r, w, {I(1), I(*group), I(cpg)}));
      ASSIGN_OR_RETURN(c1, r.Binary("aten.mul.Tensor", c1, A(wg)));
    }
    ASSIGN_OR_RETURN(c1, r.Binary("aten.unsqueeze.default", c1, I(-1)));
    double s = 1.0 / static_cast<double>(cpg);
    ASSIGN_OR_RETURN(Node * dbm, r.Binary("aten.mul.Tensor", db_val, A(mu)));
    ASSIGN_OR_RETURN(Node * c2, r.Binary("aten.sub.Tensor", dbm, A(ds_val)));
    for (int k = 0; k < 3; ++k) {
      ASSIGN_OR_RETURN(c2, r.Binary("aten.mul.Tensor", c2, A(rs)));
    }
    ASSIGN_OR_RETURN(c2, r.Binary("aten.mul.Tensor", c2, F(s)));
    ASSIGN_OR_RETURN(c2, r.Binary("aten.div.Tensor", c2, hxw));
    ASSIGN_OR_RETURN(Node * c3, r.Binary("aten.mul.Tensor", c2, A(mu)));
    ASSIGN_OR_RETURN(c3, r.Unary("aten.neg.default", c3));
    ASSIGN_OR_RETURN(Node * dbr, r.Binary("aten.mul.Tensor", db_val, A(rs)));
    ASSIGN_OR_RETURN(dbr, r.Binary("aten.mul.Tensor", dbr, F(s)));
    ASSIGN_OR_RETURN(dbr, r.Binary("aten.div.Tensor", dbr, hxw));
    ASSIGN_OR_RETURN(c3, r.Binary("aten.sub.Tensor", c3, A(dbr)));
    ASSIGN_OR_RETURN(c2, Unsqueezed(r, c2, {2, 3}));
    ASSIGN_OR_RETURN(c3, Unsqueezed(r, c3, {2, 3}));
    std::vector<Arg> grouped = {n, I(*group), I(cpg), hxw};
    ASSIGN_OR_RETURN(Node * gg, ViewAs(r, dy, grouped));
    ASSIGN_OR_RETURN(Node * xg, ViewAs(r, x, grouped));
    ASSIGN_OR_RETURN(Node * t1, r.Binary("aten.mul.Tensor", gg, A(c1)));
    ASSIGN_OR_RETURN(Node * t2, r.Binary("aten.mul.Tensor", xg, A(c2)));
    ASSIGN_OR_RETURN(Node * dx, r.Binary("aten.add.Tensor", t1, A(t2)));
    ASSIGN_OR_RETURN(dx, r.Binary("aten.add.Tensor", dx, A(c3)));
    ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(input));
    ASSIGN_OR_RETURN(outs[0], ViewAs(r, dx, sizes));
  }
  if ((*mask)[1]) {
    ASSIGN_OR_RETURN(Node * dsg, ViewAs(r, ds, {n, I(*group), I(cpg)}));
    ASSIGN_OR_RETURN(Node * dbg, ViewAs(r, db, {n, I(*group), I(cpg)}));
    ASSIGN_OR_RETURN(Node * mu1, r.Binary("aten.unsqueeze.default", mu, I(-1)));
    ASSIGN_OR_RETURN(Node * rs1, r.Binary("aten.unsqueeze.default", rs, I(-1)));
    ASSIGN_OR_RETURN(Node * t, r.Binary("aten.mul.Tensor", dbg, A(mu1)));
    ASSIGN_OR_RETURN(t, r.Binary("aten.sub.Tensor", dsg, A(t)));
    ASSIGN_OR_RETURN(t, r.Binary("aten.mul.Tensor", t, A(rs1)));
    ASSIGN_OR_RETURN(t, Sum(r, t, {0}, false));
    ASSIGN_OR_RETURN(outs[1], ViewAs(r, t, {I(*c)}));
  }
  if ((*mask)[2]) {
    ASSIGN_OR_RETURN(outs[2], Sum(r, db, {0}, false));
  }
  return outs;
}

// `g` (a row per index of `ix`, 1-d or 2-d) with the rows whose index is
// padding_idx zeroed; g itself when padding_idx is negative (none).
absl::StatusOr<Node*> ZeroPaddingRows(Rewriter& r, Node* g, Node* ix,
                                      int64_t padding_idx) {
  if (padding_idx < 0) return g;
  ASSIGN_OR_RETURN(Node * keep, r.Binary("aten.ne.Scalar", ix, I(padding_idx)));
  if (TM(g).dim() > 1) {
    ASSIGN_OR_RETURN(keep, r.Binary("aten.unsqueeze.default", keep, I(1)));
  }
  return r.Call("aten.where.ScalarOther", {A(keep), A(g), F(0.0)});
}

// embedding_dense_backward (decompositions.py, with index_add for its
// masked index_put): grad_output as [n, D] in the computation dtype, the
// rows whose index is padding_idx zeroed (and each divided by its index's
// count with scale_grad_by_freq), index_add-ed into zeros [num_weights, D].
// index_add checks the indices as the kernel does (a negative one is an
// error, not wrapped).
absl::StatusOr<Outputs> EmbeddingDenseBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_output");
  Node* indices = r.Tensor("indices");
  Arg num_weights = r.Get("num_weights");
  std::optional<int64_t> padding_idx = r.KnownInt(r.Get("padding_idx"));
  std::optional<bool> scale = r.Bool("scale_grad_by_freq");
  if (!IsTensor(grad) || !IsTensor(indices) || !padding_idx.has_value() ||
      !scale.has_value() || TM(grad).dim() < 1 ||
      !IsFloatingPoint(TM(grad).dtype) ||
      (TM(indices).dtype != DType::kInt64 &&
       TM(indices).dtype != DType::kInt32) ||
      (num_weights.kind != Arg::Kind::kInt &&
       (num_weights.kind != Arg::Kind::kNode ||
        num_weights.node->meta().kind != ir::ValueMeta::Kind::kSym))) {
    return Outputs{};
  }
  const Device& device = TM(grad).device;
  DType compute = OpMath(TM(grad).dtype);
  constexpr DType kLong = DType::kInt64;
  ASSIGN_OR_RETURN(Arg dim, r.Size(grad, TM(grad).dim() - 1));
  ASSIGN_OR_RETURN(Arg count, r.Count(indices, AllDims(TM(indices).dim())));
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  ASSIGN_OR_RETURN(g, ViewAs(r, g, {count, dim}));
  ASSIGN_OR_RETURN(Node * ix, r.To(indices, kLong));
  ASSIGN_OR_RETURN(ix, ViewAs(r, ix, {count}));
  ASSIGN_OR_RETURN(g, ZeroPaddingRows(r, g, ix, *padding_idx));
  if (*scale) {
    ASSIGN_OR_RETURN(Node * zeros, Full(r, {num_weights}, I(0), kLong, device));
    ASSIGN_OR_RETURN(Node * ones, r.Unary("aten.ones_like.default", ix));
    ASSIGN_OR_RETURN(Node * counts, r.Call("aten.index_add.default",
                                           {A(zeros), I(0), A(ix), A(ones)}));
    ASSIGN_OR_RETURN(Node * freq, r.Call("aten.index_select.default",
                                         {A(counts), I(0), A(ix)}));
    ASSIGN_OR_RETURN(freq, r.Binary("aten.unsqueeze.default", freq, I(1)));
    ASSIGN_OR_RETURN(g, r.Binary("aten.div.Tensor", g, A(freq)));
  }
  ASSIGN_OR_RETURN(Node * base,
                   Full(r, {num_weights, dim}, I(0), compute, device));
  ASSIGN_OR_RETURN(Node * out, r.Call("aten.index_add.default",
                                      {A(base), I(0), A(ix), A(g)}));
  return Outputs{out};
}

// The bag of each of an embedding_bag's `n` indices: offset2bag when the
// forward made it (its size is n), else rebuilt from all of offsets[1:]
// (make_offset2bag; the fast sum path leaves it empty); null when the size
// cannot be told.
absl::StatusOr<Node*> BagOfIndices(Rewriter& r, Node* offset2bag, Node* offsets,
                                   const Arg& n) {
  const Expr& size = TM(offset2bag).sizes[0];
  const Expr want =
      n.kind == Arg::Kind::kInt ? symbolic::Int(n.i) : n.node->meta().sym;
  if (r.env().StaticallyKnownTrue(symbolic::Eq(size, want))) {
    return r.To(offset2bag, DType::kInt64);
  }
  if (!size.is_constant(0)) return nullptr;
  ASSIGN_OR_RETURN(Node * off, r.To(offsets, DType::kInt64));
  ASSIGN_OR_RETURN(Arg len, r.Size(offsets, 0));
  return Offset2Bag(r, off, len, n, TM(offsets).device);
}

// _embedding_bag_backward, dense (as PyTorch's CPU kernel): sum and mean
// gather each index's bag gradient row (index_select by offset2bag),
// divided by its bag's size (mean) and its index's count
// (scale_grad_by_freq), times its per_sample_weight, zeroed at padding_idx,
// and index_add them into zeros [num_weights, D]; max scatter_adds each
// bag's gradient to the rows max_indices names, empty bags (bag_size 0)
// contributing zeros. In the computation dtype; index_select, index_add and
// scatter_add check the indices as the kernels do.
absl::StatusOr<Outputs> EmbeddingBagBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad");
  Node* indices = r.Tensor("indices");
  Node* offsets = r.Tensor("offsets");
  Node* offset2bag = r.Tensor("offset2bag");
  Node* bag_size = r.Tensor("bag_size");
  Node* max_indices = r.Tensor("maximum_indices");
  Node* psw = r.Tensor("per_sample_weights");
  Arg num_weights = r.Get("num_weights");
  std::optional<bool> scale = r.Bool("scale_grad_by_freq");
  std::optional<int64_t> mode = r.Int("mode");
  std::optional<bool> sparse = r.Bool("sparse");
  std::optional<int64_t> padding_idx = r.Int("padding_idx");
  if (!IsTensor(grad) || !IsTensor(indices) || !IsTensor(offsets) ||
      !IsTensor(offset2bag) || !IsTensor(bag_size) || !scale.has_value() ||
      !mode.has_value() || *mode < 0 || *mode > 2 || sparse != false ||
      !padding_idx.has_value() || TM(grad).dim() != 2 ||
      TM(indices).dim() != 1 || TM(offsets).dim() != 1 ||
      TM(offset2bag).dim() != 1 || !IsFloatingPoint(TM(grad).dtype) ||
      (psw != nullptr && *mode != 0) ||
      (*mode == 2 && (!IsTensor(max_indices) || TM(max_indices).dim() != 2)) ||
      (num_weights.kind != Arg::Kind::kInt &&
       (num_weights.kind != Arg::Kind::kNode ||
        num_weights.node->meta().kind != ir::ValueMeta::Kind::kSym))) {
    return Outputs{};
  }
  const Device& device = TM(grad).device;
  DType compute = OpMath(TM(grad).dtype);
  constexpr DType kLong = DType::kInt64;
  ASSIGN_OR_RETURN(Arg dim, r.Size(grad, 1));
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  ASSIGN_OR_RETURN(Node * base,
                   Full(r, {num_weights, dim}, I(0), compute, device));
  Node* out;
  if (*mode == 2) {
    ASSIGN_OR_RETURN(Node * full, r.Binary("aten.ne.Scalar", bag_size, I(0)));
    ASSIGN_OR_RETURN(full, r.Binary("aten.unsqueeze.default", full, I(1)));
    ASSIGN_OR_RETURN(g,
                     r.Call("aten.where.ScalarOther", {A(full), A(g), F(0.0)}));
    ASSIGN_OR_RETURN(Node * at, r.To(max_indices, kLong));
    ASSIGN_OR_RETURN(at,
                     r.Call("aten.where.ScalarOther", {A(full), A(at), I(0)}));
    ASSIGN_OR_RETURN(
        out, r.Call("aten.scatter_add.default", {A(base), I(0), A(at), A(g)}));
    ASSIGN_OR_RETURN(out, r.To(out, TM(grad).dtype));
    return Outputs{out};
  }
  ASSIGN_OR_RETURN(Arg n, r.Size(indices, 0));
  ASSIGN_OR_RETURN(Node * bag, BagOfIndices(r, offset2bag, offsets, n));
  if (bag == nullptr) {
    r.Rollback();
    return Outputs{};
  }
  ASSIGN_OR_RETURN(Node * ix, r.To(indices, kLong));
  ASSIGN_OR_RETURN(g,
                   r.Call("aten.index_select.default", {A(g), I(0), A(bag)}));
  Node* f = nullptr;  // each row's factor, [n]
  auto times = [&](Node* x) -> absl::Status {
    if (f == nullptr) {
      f = x;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(f, r.Binary("aten.mul.Tensor", f, A(x)));
    return absl::OkStatus();
  };
  if (psw != nullptr) {
    ASSIGN_OR_RETURN(Node * w, r.To(psw, compute));
    RETURN_IF_ERROR(times(w));
  }
  auto divide_by = [&](Node* counts, Node* at) -> absl::Status {
    ASSIGN_OR_RETURN(Node * c, r.Call("aten.index_select.default",
                                      {A(counts), I(0), A(at)}));
    ASSIGN_OR_RETURN(c, r.To(c, compute));
    ASSIGN_OR_RETURN(c, r.Unary("aten.reciprocal.default", c));
    return times(c);
  };
  if (*mode == 1) {  // a bag of size 0 is not divided, as PyTorch
    ASSIGN_OR_RETURN(Node * sizes,
                     r.Binary("aten.clamp_min.default", bag_size, I(1)));
    RETURN_IF_ERROR(divide_by(sizes, bag));
  }
  if (*scale) {
    ASSIGN_OR_RETURN(Node * zeros, Full(r, {num_weights}, I(0), kLong, device));
    ASSIGN_OR_RETURN(Node * ones, r.Unary("aten.ones_like.default", ix));
    ASSIGN_OR_RETURN(Node * counts, r.Call("aten.index_add.default",
                                           {A(zeros), I(0), A(ix), A(ones)}));
    RETURN_IF_ERROR(divide_by(counts, ix));
  }
  if (f != nullptr) {
    ASSIGN_OR_RETURN(f, r.Binary("aten.unsqueeze.default", f, I(1)));
    ASSIGN_OR_RETURN(g, r.Binary("aten.mul.Tensor", g, A(f)));
  }
  ASSIGN_OR_RETURN(g, ZeroPaddingRows(r, g, ix, *padding_idx));
  ASSIGN_OR_RETURN(
      out, r.Call("aten.index_add.default", {A(base), I(0), A(ix), A(g)}));
  ASSIGN_OR_RETURN(out, r.To(out, TM(grad).dtype));
  return Outputs{out};
}

// _embedding_bag_per_sample_weights_backward (sum): each index's weight
// row times its bag's gradient row, summed over D, zeroed at padding_idx;
// in the computation dtype.
absl::StatusOr<Outputs> EmbeddingBagPerSampleWeightsBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad");
  Node* weight = r.Tensor("weight");
  Node* indices = r.Tensor("indices");
  Node* offsets = r.Tensor("offsets");
  Node* offset2bag = r.Tensor("offset2bag");
  std::optional<int64_t> mode = r.Int("mode");
  std::optional<int64_t> padding_idx = r.Int("padding_idx");
  if (!IsTensor(grad) || !IsTensor(weight) || !IsTensor(indices) ||
      !IsTensor(offsets) || !IsTensor(offset2bag) || mode != 0 ||
      !padding_idx.has_value() || TM(grad).dim() != 2 ||
      TM(weight).dim() != 2 || TM(indices).dim() != 1 ||
      TM(offsets).dim() != 1 || TM(offset2bag).dim() != 1 ||
      !IsFloatingPoint(TM(grad).dtype)) {
    return Outputs{};
  }
  DType compute = OpMath(TM(grad).dtype);
  ASSIGN_OR_RETURN(Arg n, r.Size(indices, 0));
  ASSIGN_OR_RETURN(Node * bag, BagOfIndices(r, offset2bag, offsets, n));
  if (bag == nullptr) {
    r.Rollback();
    return Outputs{};
  }
  ASSIGN_OR_RETURN(Node * ix, r.To(indices, DType::kInt64));
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  ASSIGN_OR_RETURN(g,
                   r.Call("aten.index_select.default", {A(g), I(0), A(bag)}));
  ASSIGN_OR_RETURN(Node * w, r.To(weight, compute));
  ASSIGN_OR_RETURN(w, r.Call("aten.index_select.default", {A(w), I(0), A(ix)}));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.mul.Tensor", g, A(w)));
  ASSIGN_OR_RETURN(out, Sum(r, out, {1}, false));
  ASSIGN_OR_RETURN(out, ZeroPaddingRows(r, out, ix, *padding_idx));
  ASSIGN_OR_RETURN(out, r.To(out, TM(grad).dtype));
  return Outputs{out};
}

// max_pool{nsp}d_with_indices_backward (decompositions.py): grad_output and
// indices as [planes, out_plane], grad scatter_add-ed (in the computation
// dtype) along dim 1 into zeros [planes, in_plane] at the flat indices,
// viewed as self.
absl::StatusOr<Outputs> MaxPoolBackward(Rewriter& r, int64_t nsp) {
  Node* grad = r.Tensor("grad_output");
  Node* self = r.Tensor("self");
  Node* indices = r.Tensor("indices");
  if (!IsTensor(grad) || !IsTensor(self) || !IsTensor(indices) ||
      (TM(self).dim() != nsp + 1 && TM(self).dim() != nsp + 2) ||
      TM(grad).dim() != TM(self).dim() || TM(indices).dim() != TM(self).dim() ||
      TM(indices).dtype != DType::kInt64 || !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  int64_t rank = TM(self).dim();
  std::vector<int64_t> lead = AllDims(rank - nsp), plane;
  for (int64_t d = rank - nsp; d < rank; ++d) plane.push_back(d);
  const Device& device = TM(self).device;
  DType compute = OpMath(TM(self).dtype);
  ASSIGN_OR_RETURN(Arg planes, r.Count(self, lead));
  ASSIGN_OR_RETURN(Arg in_plane, r.Count(self, plane));
  ASSIGN_OR_RETURN(Arg out_plane, r.Count(grad, plane));
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  ASSIGN_OR_RETURN(g, ViewAs(r, g, {planes, out_plane}));
  ASSIGN_OR_RETURN(Node * ix, ViewAs(r, indices, {planes, out_plane}));
  ASSIGN_OR_RETURN(Node * base,
                   Full(r, {planes, in_plane}, I(0), compute, device));
  ASSIGN_OR_RETURN(Node * out, r.Call("aten.scatter_add.default",
                                      {A(base), I(1), A(ix), A(g)}));
  ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(self));
  ASSIGN_OR_RETURN(out, ViewAs(r, out, sizes));
  return Outputs{out};
}
template <int kDims>
absl::StatusOr<Outputs> MaxPoolBackwardOf(Rewriter& r) {
  return MaxPoolBackward(r, kDims);
}

// The ints of an int or int-list argument; nullopt unless literal.
std::optional<std::vector<int64_t>> LiteralInts(const Rewriter& r,
                                                absl::string_view name) {
  Arg a = r.Get(name);
  std::vector<int64_t> v;
  if (a.kind == Arg::Kind::kInt) {
    v = {a.i};
  } else if (a.kind == Arg::Kind::kList) {
    for (const Arg& e : a.list) {
      if (e.kind != Arg::Kind::kInt) return std::nullopt;
      v.push_back(e.i);
    }
  } else {
    return std::nullopt;
  }
  return v;
}

// A pair of ints from an int[2] argument (one value stands for both; an
// empty list is `empty`); nullopt unless literal.
std::optional<std::pair<int64_t, int64_t>> IntPair(
    const Rewriter& r, absl::string_view name,
    std::optional<std::pair<int64_t, int64_t>> empty = std::nullopt) {
  std::optional<std::vector<int64_t>> ints = LiteralInts(r, name);
  if (!ints.has_value()) return std::nullopt;
  const std::vector<int64_t>& v = *ints;
  if (v.empty()) return empty;
  if (v.size() == 1) return std::make_pair(v[0], v[0]);
  if (v.size() != 2) return std::nullopt;
  return std::make_pair(v[0], v[1]);
}

// `v` as `n` values (one value stands for all); nullopt for another count.
std::optional<std::vector<int64_t>> NValues(std::vector<int64_t> v, size_t n) {
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) return std::nullopt;
  return v;
}

// An int list argument of `n` values (one value stands for all); nullopt
// unless literal.
std::optional<std::vector<int64_t>> IntsArg(const Rewriter& r,
                                            absl::string_view name, size_t n) {
  std::optional<std::vector<int64_t>> ints = LiteralInts(r, name);
  if (!ints.has_value()) return std::nullopt;
  return NValues(*std::move(ints), n);
}

// The window positions [k, blocks] of one spatial axis: block b's k-th
// element at b * stride + k * dilation (_im2col_col2im_indices_along_dim).
absl::StatusOr<Node*> WindowIndex(Rewriter& r, int64_t blocks, int64_t k,
                                  int64_t stride, int64_t dilation,
                                  const Device& device) {
  ASSIGN_OR_RETURN(Node * b, Iota(r, I(blocks), device));
  ASSIGN_OR_RETURN(b, r.Binary("aten.mul.Tensor", b, I(stride)));
  ASSIGN_OR_RETURN(Node * e, Iota(r, I(k), device));
  ASSIGN_OR_RETURN(e, r.Binary("aten.mul.Tensor", e, I(dilation)));
  ASSIGN_OR_RETURN(e, r.Binary("aten.unsqueeze.default", e, I(1)));
  return r.Binary("aten.add.Tensor", e, A(b));
}

// Zeros of [lead..., padded...] (in `dtype`) with `values` [lead..., k0,
// o0, k1, o1, ...] accumulated at the window positions index[d] ([k_d,
// o_d], from WindowIndex) of each spatial axis d (index_put with
// accumulate: windows overlap where the stride is shorter than the kernel).
absl::StatusOr<Node*> AccumulateWindows(Rewriter& r, Node* values,
                                        std::vector<Arg> lead,
                                        const std::vector<int64_t>& padded,
                                        std::vector<Node*> index, DType dtype,
                                        const Device& device) {
  std::vector<Arg> sizes = lead;
  for (int64_t p : padded) sizes.push_back(I(p));
  ASSIGN_OR_RETURN(Node * base, Full(r, sizes, I(0), dtype, device));
  const int64_t n = static_cast<int64_t>(index.size());
  std::vector<Arg> at(lead.size(), Arg::None());
  for (int64_t d = 0; d < n; ++d) {
    // [k_d, o_d, 1, 1, ...]: two unit dims per later axis.
    std::vector<int64_t> units;
    for (int64_t u = 2; u < 2 * (n - d); ++u) units.push_back(u);
    if (!units.empty()) {
      ASSIGN_OR_RETURN(index[d], Unsqueezed(r, index[d], units));
    }
    at.push_back(A(index[d]));
  }
  return r.Call("aten.index_put.default", {A(base), Arg::List(std::move(at)),
                                           A(values), Arg::Bool(true)});
}

// `x` cut to [start[d], start[d] + size[d]) along each of its last
// start.size() dims, contiguous.
absl::StatusOr<Node*> Crop(Rewriter& r, Node* x,
                           const std::vector<int64_t>& start,
                           const std::vector<int64_t>& size) {
  const int64_t rank = TM(x).dim();
  const int64_t n = static_cast<int64_t>(start.size());
  for (int64_t d = 0; d < n; ++d) {
    const int64_t dim = rank - n + d;
    if (start[d] != 0 || !TM(x).sizes[dim].is_constant(size[d])) {
      ASSIGN_OR_RETURN(
          x, r.Call("aten.slice.Tensor",
                    {A(x), I(dim), I(start[d]), I(start[d] + size[d])}));
    }
  }
  return r.Contiguous(x);
}

// col2im (decompositions.py): the input [B, C * kh * kw, bh * bw] viewed
// as [B, C, kh, kw, bh, bw] and permuted to [B, C, kh, bh, kw, bw],
// accumulated in the computation dtype into zeros of the padded output at
// the window positions, then cropped by the padding. Static sizes only.
absl::StatusOr<Outputs> Col2Im(Rewriter& r) {
  Node* self = r.Tensor("self");
  auto k = IntPair(r, "kernel_size");
  auto dil = IntPair(r, "dilation");
  auto pad = IntPair(r, "padding");
  auto st = IntPair(r, "stride");
  Arg os = r.Get("output_size");
  if (!IsTensor(self) || !k || !dil || !pad || !st ||
      os.kind != Arg::Kind::kList || os.list.size() != 2 ||
      (TM(self).dim() != 2 && TM(self).dim() != 3) ||
      !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  const TensorMeta& m = TM(self);
  int64_t rank = m.dim();
  std::optional<int64_t> oh = r.KnownInt(os.list[0]);
  std::optional<int64_t> ow = r.KnownInt(os.list[1]);
  const Expr& rows_e = m.sizes[rank - 2];
  if (!oh || !ow || !IsConstant(rows_e) || k->first <= 0 || k->second <= 0 ||
      dil->first <= 0 || dil->second <= 0 || st->first <= 0 ||
      st->second <= 0 || pad->first < 0 || pad->second < 0) {
    return Outputs{};
  }
  int64_t kk = k->first * k->second;
  if (rows_e.int_value() % kk != 0) return Outputs{};
  int64_t channels = rows_e.int_value() / kk;
  int64_t bh =
      (*oh + 2 * pad->first - dil->first * (k->first - 1) - 1) / st->first + 1;
  int64_t bw =
      (*ow + 2 * pad->second - dil->second * (k->second - 1) - 1) / st->second +
      1;
  if (bh < 1 || bw < 1 || !m.sizes[rank - 1].is_constant(bh * bw)) {
    return Outputs{};
  }
  const Device& device = m.device;
  DType compute = OpMath(m.dtype);
  ASSIGN_OR_RETURN(Node * x, r.To(self, compute));
  std::vector<Arg> lead;
  if (rank == 3) {
    ASSIGN_OR_RETURN(Arg b, r.Size(self, 0));
    lead.push_back(b);
  }
  std::vector<Arg> blocked = lead;
  for (int64_t v : {channels, k->first, k->second, bh, bw}) {
    blocked.push_back(I(v));
  }
  ASSIGN_OR_RETURN(x, ViewAs(r, x, blocked));
  std::vector<int64_t> perm = AllDims(rank - 1);
  int64_t at = rank - 1;  // the kh dim
  for (int64_t d : {at, at + 2, at + 1, at + 3}) perm.push_back(d);
  ASSIGN_OR_RETURN(x, r.Call("aten.permute.default", {A(x), IntList(perm)}));
  ASSIGN_OR_RETURN(Node * rows,
                   WindowIndex(r, bh, k->first, st->first, dil->first, device));
  ASSIGN_OR_RETURN(Node * cols, WindowIndex(r, bw, k->second, st->second,
                                            dil->second, device));
  std::vector<Arg> out_lead = lead;
  out_lead.push_back(I(channels));
  ASSIGN_OR_RETURN(
      Node * out,
      AccumulateWindows(r, x, out_lead,
                        {*oh + 2 * pad->first, *ow + 2 * pad->second},
                        {rows, cols}, compute, device));
  ASSIGN_OR_RETURN(out, Crop(r, out, {pad->first, pad->second}, {*oh, *ow}));
  return Outputs{out};
}

// avg_pool{2,3}d_backward (`nsp` spatial dims): each output's gradient
// divided by its window's divisor (divisor_override, or the window's size
// within the padded input with count_include_pad, else its part inside the
// input; per axis from an arange), broadcast over the window and
// accumulated (index_put) into zeros of the padded input, large enough for
// a ceil_mode window that runs past it, then cropped to the input. In the
// computation dtype; static spatial sizes only.
absl::StatusOr<Outputs> AvgPoolBackward(Rewriter& r, int64_t nsp) {
  Node* grad = r.Tensor("grad_output");
  Node* self = r.Tensor("self");
  auto k = IntsArg(r, "kernel_size", nsp);
  std::optional<std::vector<int64_t>> st = LiteralInts(r, "stride");
  if (st.has_value()) {
    st = st->empty() ? k : NValues(*std::move(st), nsp);  // []: the kernel's
  }
  auto pad = IntsArg(r, "padding", nsp);
  std::optional<bool> include_pad = r.Bool("count_include_pad");
  Arg divisor = r.Get("divisor_override");
  if (!IsTensor(grad) || !IsTensor(self) || !k || !st || !pad ||
      !include_pad.has_value() ||
      (divisor.kind != Arg::Kind::kNone &&
       (divisor.kind != Arg::Kind::kInt || divisor.i == 0)) ||
      (TM(self).dim() != nsp + 1 && TM(self).dim() != nsp + 2) ||
      TM(grad).dim() != TM(self).dim() || !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  const int64_t rank = TM(self).dim();
  std::vector<int64_t> in(nsp), out(nsp);
  for (int64_t d = 0; d < nsp; ++d) {
    if ((*k)[d] <= 0 || (*st)[d] <= 0 || (*pad)[d] < 0) return Outputs{};
    const Expr& i = TM(self).sizes[rank - nsp + d];
    const Expr& o = TM(grad).sizes[rank - nsp + d];
    if (!IsConstant(i) || !IsConstant(o)) return Outputs{};
    in[d] = i.int_value();
    out[d] = o.int_value();
  }
  const Device& device = TM(self).device;
  DType compute = OpMath(TM(self).dtype);
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  if (divisor.kind == Arg::Kind::kInt) {
    ASSIGN_OR_RETURN(g, r.Binary("aten.div.Tensor", g, I(divisor.i)));
  } else {
    // Per axis: start = o * s - p, end = min(start + k, in + p); the size
    // end - start, or min(end, in) - max(start, 0) without the padding;
    // the divisor the product over the axes ([o0, 1, ...] * [o1, 1] * ...).
    Node* divisors = nullptr;
    for (int64_t d = 0; d < nsp; ++d) {
      const int64_t s = (*st)[d], p = (*pad)[d];
      ASSIGN_OR_RETURN(Node * start, Iota(r, I(out[d]), device));
      ASSIGN_OR_RETURN(start, r.Binary("aten.mul.Tensor", start, I(s)));
      ASSIGN_OR_RETURN(start, r.Binary("aten.sub.Tensor", start, I(p)));
      ASSIGN_OR_RETURN(Node * end,
                       r.Binary("aten.add.Tensor", start, I((*k)[d])));
      ASSIGN_OR_RETURN(end,
                       r.Binary("aten.clamp_max.default", end, I(in[d] + p)));
      if (!*include_pad) {
        ASSIGN_OR_RETURN(end,
                         r.Binary("aten.clamp_max.default", end, I(in[d])));
        ASSIGN_OR_RETURN(start,
                         r.Binary("aten.clamp_min.default", start, I(0)));
      }
      ASSIGN_OR_RETURN(Node * size, r.Binary("aten.sub.Tensor", end, A(start)));
      std::vector<int64_t> units;
      for (int64_t u = 1; u < nsp - d; ++u) units.push_back(u);
      if (!units.empty()) {
        ASSIGN_OR_RETURN(size, Unsqueezed(r, size, units));
      }
      if (divisors == nullptr) {
        divisors = size;
      } else {
        ASSIGN_OR_RETURN(divisors,
                         r.Binary("aten.mul.Tensor", divisors, A(size)));
      }
    }
    ASSIGN_OR_RETURN(g, r.Binary("aten.div.Tensor", g, A(divisors)));
  }
  // [lead..., o0, o1, ...] -> [lead..., k0, o0, k1, o1, ...].
  ASSIGN_OR_RETURN(std::vector<Arg> lead, r.Sizes(grad));
  lead.resize(rank - nsp);
  std::vector<int64_t> units;
  for (int64_t d = 0; d < nsp; ++d) units.push_back(rank - nsp + 2 * d);
  ASSIGN_OR_RETURN(g, Unsqueezed(r, g, units));
  std::vector<Arg> expanded = lead;
  std::vector<Node*> index;
  std::vector<int64_t> padded, starts;
  for (int64_t d = 0; d < nsp; ++d) {
    expanded.push_back(I((*k)[d]));
    expanded.push_back(I(out[d]));
    ASSIGN_OR_RETURN(Node * at,
                     WindowIndex(r, out[d], (*k)[d], (*st)[d], 1, device));
    index.push_back(at);
    padded.push_back(
        std::max(in[d] + 2 * (*pad)[d], (out[d] - 1) * (*st)[d] + (*k)[d]));
  }
  ASSIGN_OR_RETURN(g,
                   r.Call("aten.expand.default", {A(g), Arg::List(expanded)}));
  ASSIGN_OR_RETURN(Node * acc, AccumulateWindows(r, g, lead, padded, index,
                                                 compute, device));
  ASSIGN_OR_RETURN(acc, Crop(r, acc, *pad, in));
  return Outputs{acc};
}
template <int kDims>
absl::StatusOr<Outputs> AvgPoolBackwardOf(Rewriter& r) {
  return AvgPoolBackward(r, kDims);
}

// _adaptive_avg_pool2d_backward: output o's window along an axis is
// [o * in / out, ceil((o + 1) * in / out)); its gradient divided by the
// window's size is broadcast over kmax (the longest window) positions and
// accumulated (index_put) into zeros [..., H + 1, W + 1], the positions
// past a window's end sent to the spare last row / column, then cropped.
// In the computation dtype; static spatial sizes only.
absl::StatusOr<Outputs> AdaptiveAvgPool2dBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_output");
  Node* self = r.Tensor("self");
  if (!IsTensor(grad) || !IsTensor(self) ||
      (TM(self).dim() != 3 && TM(self).dim() != 4) ||
      TM(grad).dim() != TM(self).dim() || !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  int64_t rank = TM(self).dim();
  int64_t in[2], out[2], kmax[2] = {0, 0};
  for (int d = 0; d < 2; ++d) {
    const Expr& i = TM(self).sizes[rank - 2 + d];
    const Expr& o = TM(grad).sizes[rank - 2 + d];
    if (!IsConstant(i) || !IsConstant(o) || o.int_value() <= 0 ||
        i.int_value() <= 0) {
      return Outputs{};
    }
    in[d] = i.int_value();
    out[d] = o.int_value();
    for (int64_t q = 0; q < out[d]; ++q) {
      int64_t lo = q * in[d] / out[d];
      int64_t hi = ((q + 1) * in[d] + out[d] - 1) / out[d];
      kmax[d] = std::max(kmax[d], hi - lo);
    }
  }
  const Device& device = TM(self).device;
  DType compute = OpMath(TM(self).dtype);
  Node* index[2];
  Node* length[2];
  for (int d = 0; d < 2; ++d) {
    ASSIGN_OR_RETURN(Node * o, Iota(r, I(out[d]), device));
    ASSIGN_OR_RETURN(Node * start, r.Binary("aten.mul.Tensor", o, I(in[d])));
    ASSIGN_OR_RETURN(start,
                     r.Binary("aten.floor_divide.Scalar", start, I(out[d])));
    ASSIGN_OR_RETURN(Node * end, r.Binary("aten.add.Tensor", o, I(1)));
    ASSIGN_OR_RETURN(end, r.Binary("aten.mul.Tensor", end, I(in[d])));
    ASSIGN_OR_RETURN(end, r.Binary("aten.add.Tensor", end, I(out[d] - 1)));
    ASSIGN_OR_RETURN(end, r.Binary("aten.floor_divide.Scalar", end, I(out[d])));
    ASSIGN_OR_RETURN(length[d], r.Binary("aten.sub.Tensor", end, A(start)));
    // [kmax, out]: start + j where below end, else the spare slot.
    ASSIGN_OR_RETURN(Node * j, Iota(r, I(kmax[d]), device));
    ASSIGN_OR_RETURN(j, r.Binary("aten.unsqueeze.default", j, I(1)));
    ASSIGN_OR_RETURN(Node * at, r.Binary("aten.add.Tensor", j, A(start)));
    ASSIGN_OR_RETURN(Node * inside, r.Binary("aten.lt.Tensor", at, A(end)));
    ASSIGN_OR_RETURN(index[d], r.Call("aten.where.ScalarOther",
                                      {A(inside), A(at), I(in[d])}));
  }
  ASSIGN_OR_RETURN(length[0],
                   r.Binary("aten.unsqueeze.default", length[0], I(1)));
  ASSIGN_OR_RETURN(Node * count,
                   r.Binary("aten.mul.Tensor", length[0], A(length[1])));
  ASSIGN_OR_RETURN(Node * g, r.To(grad, compute));
  ASSIGN_OR_RETURN(g, r.Binary("aten.div.Tensor", g, A(count)));
  ASSIGN_OR_RETURN(std::vector<Arg> lead, r.Sizes(grad));
  lead.resize(rank - 2);
  ASSIGN_OR_RETURN(g, Unsqueezed(r, g, {rank - 2, rank}));
  std::vector<Arg> expanded = lead;
  for (int64_t v : {kmax[0], out[0], kmax[1], out[1]}) {
    expanded.push_back(I(v));
  }
  ASSIGN_OR_RETURN(g,
                   r.Call("aten.expand.default", {A(g), Arg::List(expanded)}));
  ASSIGN_OR_RETURN(Node * acc,
                   AccumulateWindows(r, g, lead, {in[0] + 1, in[1] + 1},
                                     {index[0], index[1]}, compute, device));
  ASSIGN_OR_RETURN(acc, Crop(r, acc, {0, 0}, {in[0], in[1]}));
  return Outputs{acc};
}

// A call of aten.convolution (no bias).
absl::StatusOr<Node*> Conv(Rewriter& r, Node* input, Node* weight,
                           const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding,
                           const std::vector<int64_t>& dilation,
                           bool transposed,
                           const std::vector<int64_t>& output_padding,
                           int64_t groups) {
  return r.Call("aten.convolution.default",
                {A(input), A(weight), Arg::None(), IntList(stride),
                 IntList(padding), IntList(dilation), Arg::Bool(transposed),
                 IntList(output_padding), I(groups)});
}

// `t` cut down to `sizes[d]` (an int or a SymInt, of value `exprs[d]`) in
// dimension first + d, each from its start: narrow, whose result has
// exactly the size asked for (a slice of a symbolic size would be a Min the
// ShapeEnv cannot always resolve).
absl::StatusOr<Node*> CropTo(Rewriter& r, Node* t, int64_t first,
                             const std::vector<Arg>& sizes,
                             const std::vector<symbolic::Expr>& exprs) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t dim = first + static_cast<int64_t>(d);
    if (r.env()
            .Simplify(symbolic::Sub(TM(t).sizes[dim], exprs[d]))
            .is_constant(0)) {
      continue;
    }
    ASSIGN_OR_RETURN(
        t, r.Call("aten.narrow.default", {A(t), I(dim), I(0), sizes[d]}));
  }
  return t;
}

// The weight gradient [groups * cb, ca, k...] of a convolution from `a`
// [n, groups * ca, ...] to `b` [n, groups * cb, ...] (b the gradient of its
// output): a convolution of a as [ca, groups * n, ...] with b as
// [groups * cb, n, ...] (groups groups) whose stride is the forward's
// dilation and dilation its stride, cropped to the kernel's sizes `k` and
// reordered. Static channel counts.
absl::StatusOr<Node*> ConvWeightGrad(Rewriter& r, Node* a, Node* b,
                                     const std::vector<int64_t>& k,
                                     const std::vector<int64_t>& stride,
                                     const std::vector<int64_t>& padding,
                                     const std::vector<int64_t>& dilation,
                                     int64_t groups) {
  int64_t rank = TM(a).dim();
  int64_t nsp = rank - 2;
  int64_t ca = TM(a).sizes[1].int_value() / groups;
  int64_t cb = TM(b).sizes[1].int_value() / groups;
  ASSIGN_OR_RETURN(std::vector<Arg> as, r.Sizes(a));
  ASSIGN_OR_RETURN(std::vector<Arg> bs, r.Sizes(b));
  const Arg n = as[0];
  // [n, g, c, sp...] permuted by `lead` then the spatial dims, viewed as
  // [first, second, sp...].
  auto regroup = [&](Node* t, const std::vector<Arg>& sizes, int64_t c,
                     std::vector<int64_t> perm, Arg first,
                     Arg second) -> absl::StatusOr<Node*> {
    std::vector<Arg> split = {n, I(groups), I(c)};
    std::vector<Arg> merged = {first, second};
    for (int64_t d = 0; d < nsp; ++d) {
      split.push_back(sizes[2 + d]);
      merged.push_back(sizes[2 + d]);
      perm.push_back(3 + d);
    }
    ASSIGN_OR_RETURN(t, ViewAs(r, t, split));
    ASSIGN_OR_RETURN(t, r.Call("aten.permute.default", {A(t), IntList(perm)}));
    return ViewAs(r, t, merged);
  };
  ASSIGN_OR_RETURN(Arg gn, SizeOp(r, "operator.mul", n, I(groups)));
  ASSIGN_OR_RETURN(Node * input, regroup(a, as, ca, {2, 1, 0}, I(ca), gn));
  ASSIGN_OR_RETURN(Node * weight,
                   regroup(b, bs, cb, {1, 2, 0}, I(groups * cb), n));
  std::vector<int64_t> zeros(nsp, 0);
  ASSIGN_OR_RETURN(Node * out, Conv(r, input, weight, dilation, padding, stride,
                                    false, zeros, groups));
  std::vector<Arg> kernel;
  std::vector<symbolic::Expr> kernel_exprs;
  for (int64_t v : k) {
    kernel.push_back(I(v));
    kernel_exprs.push_back(symbolic::Int(v));
  }
  ASSIGN_OR_RETURN(out, CropTo(r, out, 2, kernel, kernel_exprs));
  // [ca, g * cb, k...] -> [g * cb, ca, k...].
  std::vector<Arg> split = {I(ca), I(groups * cb)};
  std::vector<int64_t> perm = {1, 0};
  std::vector<Arg> sizes = {I(groups * cb), I(ca)};
  for (int64_t d = 0; d < nsp; ++d) {
    perm.push_back(2 + d);
    sizes.push_back(I(k[d]));
  }
  ASSIGN_OR_RETURN(out,
                   r.Call("aten.permute.default", {A(out), IntList(perm)}));
  return ViewAs(r, out, sizes);
}

// convolution_backward: grad_input by the transposed convolution of the
// gradient with the same weight (output_padding making up the input's
// size), or for a transposed convolution by the plain one; grad_weight by
// ConvWeightGrad (the roles of input and gradient swapped when
// transposed); grad_bias = sum of the gradient over all but the channels.
// output_mask says which; static channel and spatial sizes only.
absl::StatusOr<Outputs> ConvolutionBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_output");
  Node* input = r.Tensor("input");
  Node* weight = r.Tensor("weight");
  std::optional<bool> transposed = r.Bool("transposed");
  std::optional<int64_t> groups = r.Int("groups");
  std::optional<std::vector<bool>> mask = OutputMask(r);
  if (!IsTensor(grad) || !IsTensor(input) || !IsTensor(weight) ||
      !transposed.has_value() || !groups.has_value() || *groups <= 0 ||
      !mask.has_value() || TM(input).dim() < 3 || TM(input).dim() > 5 ||
      TM(weight).dim() != TM(input).dim() ||
      TM(grad).dim() != TM(input).dim() || !IsFloatingPoint(TM(input).dtype)) {
    return Outputs{};
  }
  int64_t rank = TM(input).dim();
  size_t nsp = rank - 2;
  auto stride = IntsArg(r, "stride", nsp);
  auto padding = IntsArg(r, "padding", nsp);
  auto dilation = IntsArg(r, "dilation", nsp);
  auto output_padding = IntsArg(r, "output_padding", nsp);
  if (!stride || !padding || !dilation || !output_padding) return Outputs{};
  // Static channels and kernel; the batch and the spatial sizes may be
  // symbolic (dynamic=True).
  for (const TensorMeta* t : {&TM(input), &TM(weight), &TM(grad)}) {
    if (!IsConstant(t->sizes[1])) return Outputs{};
  }
  for (int64_t d = 2; d < rank; ++d) {
    if (!IsConstant(TM(weight).sizes[d])) return Outputs{};
  }
  for (size_t d = 0; d < nsp; ++d) {
    if ((*stride)[d] <= 0 || (*dilation)[d] <= 0 || (*padding)[d] < 0) {
      return Outputs{};
    }
  }
  std::vector<int64_t> k;
  std::vector<symbolic::Expr> in, out;
  for (size_t d = 0; d < nsp; ++d) {
    k.push_back(TM(weight).sizes[2 + d].int_value());
    in.push_back(TM(input).sizes[2 + d]);
    out.push_back(TM(grad).sizes[2 + d]);
  }
  Outputs outs(3, nullptr);
  if ((*mask)[0]) {
    if (!*transposed) {
      // The transposed convolution's output_padding: what its size formula
      // leaves of the input's size (below the stride).
      // With symbolic sizes it depends on the input's size modulo the
      // stride: specialized, under a guard, as PyTorch's guard_int does.
      std::vector<int64_t> extra;
      for (size_t d = 0; d < nsp; ++d) {
        symbolic::Expr size =
            symbolic::Add(symbolic::Mul(symbolic::Sub(out[d], symbolic::Int(1)),
                                        symbolic::Int((*stride)[d])),
                          symbolic::Int(-2 * (*padding)[d] +
                                        (*dilation)[d] * (k[d] - 1) + 1));
        symbolic::Expr e = r.env().Simplify(symbolic::Sub(in[d], size));
        int64_t value;
        if (IsConstant(e)) {
          value = e.int_value();
        } else {
          absl::StatusOr<int64_t> guarded = r.env().GuardInt(e);
          if (!guarded.ok()) return Outputs{};
          value = *guarded;
        }
        if (value < 0 || value >= (*stride)[d]) return Outputs{};
        extra.push_back(value);
      }
      ASSIGN_OR_RETURN(outs[0], Conv(r, grad, weight, *stride, *padding,
                                     *dilation, true, extra, *groups));
      // The input's sizes as the input has them: equal under the guard
      // above, not always provably so.
      std::vector<Arg> in_sizes;
      for (size_t d = 0; d < nsp; ++d) {
        ASSIGN_OR_RETURN(Arg size, r.Size(input, 2 + static_cast<int64_t>(d)));
        in_sizes.push_back(size);
      }
      ASSIGN_OR_RETURN(outs[0], CropTo(r, outs[0], 2, in_sizes, in));
    } else {
      for (size_t d = 0; d < nsp; ++d) {
        if ((*output_padding)[d] >= (*stride)[d]) return Outputs{};
      }
      std::vector<int64_t> zeros(nsp, 0);
      ASSIGN_OR_RETURN(outs[0], Conv(r, grad, weight, *stride, *padding,
                                     *dilation, false, zeros, *groups));
    }
  }
  if ((*mask)[1]) {
    ASSIGN_OR_RETURN(
        outs[1], *transposed ? ConvWeightGrad(r, grad, input, k, *stride,
                                              *padding, *dilation, *groups)
                             : ConvWeightGrad(r, input, grad, k, *stride,
                                              *padding, *dilation, *groups));
  }
  if ((*mask)[2]) {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
    ASSIGN_OR_RETURN(outs[2], Sum(r, grad, dims, false));
  }
  for (Node*& o : outs) {
    if (o != nullptr) {
      ASSIGN_OR_RETURN(o, r.Contiguous(o));
    }
  }
  return outs;
}

// native_batch_norm_backward (decompositions.py), in the computation dtype,
// over every dim but the channels (n elements each):
//   training:   grad_input = (dy - (x - mean) * dot * invstd^2 / n
//                             - sum(dy) / n) * invstd * weight;
//   evaluation: grad_input = dy * invstd * weight, invstd = rsqrt(var + eps)
// with dot = sum(dy * (x - mean)); grad_weight = dot * invstd, grad_bias =
// sum(dy). Each result in its dtype (the weight's for its gradients).
absl::StatusOr<Outputs> BatchNormBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_out");
  Node* input = r.Tensor("input");
  Node* weight = r.Tensor("weight");
  std::optional<bool> train = r.Bool("train");
  std::optional<double> eps = r.Number("eps");
  std::optional<std::vector<bool>> mask = OutputMask(r);
  if (!IsTensor(grad) || !IsTensor(input) || !train || !eps || !mask ||
      TM(input).dim() < 2 || !IsFloatingPoint(TM(input).dtype) ||
      (weight != nullptr && (!IsTensor(weight) || TM(weight).dim() != 1))) {
    return Outputs{};
  }
  Node* mean = r.Tensor(*train ? "save_mean" : "running_mean");
  Node* stat = r.Tensor(*train ? "save_invstd" : "running_var");
  if (!IsTensor(mean) || !IsTensor(stat) || TM(mean).dim() != 1 ||
      TM(stat).dim() != 1) {
    return Outputs{};
  }
  const int64_t rank = TM(input).dim();
  const DType in_dtype = TM(input).dtype, compute = OpMath(in_dtype);
  const DType w_dtype = weight != nullptr ? TM(weight).dtype : in_dtype;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != 1) axes.push_back(d);
  }
  // A per-channel vector as [1, C, 1, ...].
  std::vector<int64_t> shape(rank, 1);
  shape[1] = -1;
  auto channelwise = [&](Node* v) {
    return r.Binary("aten.view.default", v, IntList(shape));
  };
  ASSIGN_OR_RETURN(Node * dy, r.To(grad, compute));
  ASSIGN_OR_RETURN(Node * x, r.To(input, compute));
  ASSIGN_OR_RETURN(Node * mu, r.To(mean, compute));
  ASSIGN_OR_RETURN(Node * invstd, r.To(stat, compute));
  if (!*train) {
    ASSIGN_OR_RETURN(Node * var, r.Binary("aten.add.Tensor", invstd, F(*eps)));
    ASSIGN_OR_RETURN(invstd, r.Unary("aten.rsqrt.default", var));
  }
  ASSIGN_OR_RETURN(Node * mu_b, channelwise(mu));
  ASSIGN_OR_RETURN(Node * centered, r.Binary("aten.sub.Tensor", x, A(mu_b)));
  ASSIGN_OR_RETURN(Node * dy_sum, Sum(r, dy, axes, false));
  ASSIGN_OR_RETURN(Node * dyx, r.Binary("aten.mul.Tensor", dy, A(centered)));
  ASSIGN_OR_RETURN(Node * dot, Sum(r, dyx, axes, false));
  Node* scale = invstd;
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(Node * w, r.To(weight, compute));
    ASSIGN_OR_RETURN(scale, r.Binary("aten.mul.Tensor", invstd, A(w)));
  }
  ASSIGN_OR_RETURN(Node * scale_b, channelwise(scale));
  Outputs outs(3, nullptr);
  if ((*mask)[0]) {
    Node* dx = dy;
    if (*train) {
      ASSIGN_OR_RETURN(Arg n, r.Count(input, axes));
      ASSIGN_OR_RETURN(Node * mean_dy, r.Binary("aten.div.Tensor", dy_sum, n));
      ASSIGN_OR_RETURN(Node * dot_n, r.Binary("aten.div.Tensor", dot, n));
      ASSIGN_OR_RETURN(Node * inv2,
                       r.Binary("aten.mul.Tensor", invstd, A(invstd)));
      ASSIGN_OR_RETURN(Node * proj_scale,
                       r.Binary("aten.mul.Tensor", dot_n, A(inv2)));
      ASSIGN_OR_RETURN(Node * proj_b, channelwise(proj_scale));
      ASSIGN_OR_RETURN(Node * proj,
                       r.Binary("aten.mul.Tensor", centered, A(proj_b)));
      ASSIGN_OR_RETURN(Node * mean_b, channelwise(mean_dy));
      ASSIGN_OR_RETURN(dx, r.Binary("aten.sub.Tensor", dy, A(proj)));
      ASSIGN_OR_RETURN(dx, r.Binary("aten.sub.Tensor", dx, A(mean_b)));
    }
    ASSIGN_OR_RETURN(dx, r.Binary("aten.mul.Tensor", dx, A(scale_b)));
    ASSIGN_OR_RETURN(outs[0], r.To(dx, in_dtype));
  }
  if ((*mask)[1]) {
    ASSIGN_OR_RETURN(Node * dw, r.Binary("aten.mul.Tensor", dot, A(invstd)));
    ASSIGN_OR_RETURN(outs[1], r.To(dw, w_dtype));
  }
  if ((*mask)[2]) {
    ASSIGN_OR_RETURN(outs[2], r.To(dy_sum, w_dtype));
  }
  return outs;
}

// reflection_pad{1,2,3}d_backward and replication_pad{1,2,3}d_backward:
// per padded dim, innermost first, the gradient index_add'ed along it into
// zeros of the input's size there, at each padded position's source
// (replicate: clamp(j - lo, 0, n - 1); reflect: n - 1 - |n - 1 - |j -
// lo||), in the math type. Static padded sizes and a contiguous input
// (whose gradient PyTorch lays out contiguous too); else the call stays.
absl::StatusOr<Outputs> PadBackward(Rewriter& r, int nsp, bool reflect) {
  Node* grad = r.Tensor("grad_output");
  Node* self = r.Tensor("self");
  Arg padding = r.Get("padding");
  if (!IsTensor(grad) || !IsTensor(self) || !TM(self).IsContiguous() ||
      padding.kind != Arg::Kind::kList ||
      padding.list.size() != static_cast<size_t>(2 * nsp) ||
      !IsFloatingPoint(TM(self).dtype) || TM(grad).dim() != TM(self).dim()) {
    return Outputs{};
  }
  std::vector<int64_t> pad;
  for (const Arg& a : padding.list) {
    if (a.kind != Arg::Kind::kInt) return Outputs{};
    pad.push_back(a.i);
  }
  const int64_t rank = TM(self).dim();
  for (int64_t d = rank - nsp; d < rank; ++d) {
    if (d < 0 || !IsConstant(TM(self).sizes[d]) ||
        !IsConstant(TM(grad).sizes[d])) {
      return Outputs{};
    }
  }
  const DType dtype = TM(self).dtype, math = OpMath(dtype);
  const Device device = TM(self).device;
  ASSIGN_OR_RETURN(Node * t, r.To(grad, math));
  for (int k = 0; k < nsp; ++k) {  // k = 0: the last dim
    const int64_t d = rank - 1 - k, lo = pad[2 * k];
    const int64_t n = TM(self).sizes[d].int_value();
    ASSIGN_OR_RETURN(Node * idx,
                     Iota(r, I(TM(t).sizes[d].int_value()), device));
    ASSIGN_OR_RETURN(idx, r.Binary("aten.sub.Tensor", idx, I(lo)));
    if (reflect) {
      ASSIGN_OR_RETURN(idx, r.Unary("aten.abs.default", idx));
      ASSIGN_OR_RETURN(idx, r.Binary("aten.rsub.Scalar", idx, I(n - 1)));
      ASSIGN_OR_RETURN(idx, r.Unary("aten.abs.default", idx));
      ASSIGN_OR_RETURN(idx, r.Binary("aten.rsub.Scalar", idx, I(n - 1)));
    } else {
      ASSIGN_OR_RETURN(Node * below, r.Binary("aten.lt.Scalar", idx, I(0)));
      ASSIGN_OR_RETURN(
          idx, r.Call("aten.where.ScalarSelf", {A(below), I(0), A(idx)}));
      ASSIGN_OR_RETURN(Node * above, r.Binary("aten.gt.Scalar", idx, I(n - 1)));
      ASSIGN_OR_RETURN(
          idx, r.Call("aten.where.ScalarSelf", {A(above), I(n - 1), A(idx)}));
    }
    ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(t));
    sizes[d] = I(n);
    ASSIGN_OR_RETURN(Node * zeros,
                     Full(r, std::move(sizes), F(0), math, device));
    ASSIGN_OR_RETURN(
        t, r.Call("aten.index_add.default", {A(zeros), I(d), A(idx), A(t)}));
  }
  ASSIGN_OR_RETURN(t, r.To(t, dtype));
  return Outputs{t};
}
template <int kDims, bool kReflect>
absl::StatusOr<Outputs> PadBackwardOf(Rewriter& r) {
  return PadBackward(r, kDims, kReflect);
}

// Every backward op the pass decomposes, and how.
constexpr Decomposition kBackwardDecompositions[] = {
    {"aten._adaptive_avg_pool2d_backward.default", AdaptiveAvgPool2dBackward},
    {"aten._embedding_bag_backward.default", EmbeddingBagBackward},
    {"aten._embedding_bag_per_sample_weights_backward.default",
     EmbeddingBagPerSampleWeightsBackward},
    {"aten.avg_pool2d_backward.default", AvgPoolBackwardOf<2>},
    {"aten.avg_pool3d_backward.default", AvgPoolBackwardOf<3>},
    {"aten.col2im.default", Col2Im},
    {"aten.convolution_backward.default", ConvolutionBackward},
    {"aten.embedding_dense_backward.default", EmbeddingDenseBackward},
    {"aten.max_pool2d_with_indices_backward.default", MaxPoolBackwardOf<2>},
    {"aten.max_pool3d_with_indices_backward.default", MaxPoolBackwardOf<3>},
    {"aten.native_batch_norm_backward.default", BatchNormBackward},
    {"aten.native_group_norm_backward.default", GroupNormBackward},
    {"aten.native_layer_norm_backward.default", LayerNormBackward},
    {"aten.reflection_pad1d_backward.default", PadBackwardOf<1, true>},
    {"aten.reflection_pad2d_backward.default", PadBackwardOf<2, true>},
    {"aten.reflection_pad3d_backward.default", PadBackwardOf<3, true>},
    {"aten.replication_pad1d_backward.default", PadBackwardOf<1, false>},
    {"aten.replication_pad2d_backward.default", PadBackwardOf<2, false>},
    {"aten.replication_pad3d_backward.default", PadBackwardOf<3, false>},
};

}  // namespace

absl::Span<const Decomposition> BackwardDecompositions() {
  return kBackwardDecompositions;
}

}  // namespace lathe::passes::decomp
