#include "passes/decompose.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "passes/decompose_attention.h"
#include "passes/decompose_backward.h"
#include "passes/decompose_grid_sampler.h"
#include "passes/decompose_pointwise_backward.h"
#include "passes/rewriter.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::passes {
namespace {

// What the rules share (passes/rewriter.h).
using decomp::A;
using decomp::AllDims;
using decomp::Arg;
using decomp::AttentionDecompositions;
using decomp::BackwardDecompositions;
using decomp::DecomposeFn;
using decomp::Decomposition;
using decomp::DefaultArg;
using decomp::Expr;
using decomp::F;
using decomp::Full;
using decomp::GridSamplerDecompositions;
using decomp::I;
using decomp::IntList;
using decomp::Iota;
using decomp::IsConstant;
using decomp::IsNumber;
using decomp::IsTensor;
using decomp::Node;
using decomp::NumberOf;
using decomp::OpMath;
using decomp::Outputs;
using decomp::PointwiseBackwardDecompositions;
using decomp::Rewriter;
using decomp::SizeOp;
using decomp::SizePlus;
using decomp::TensorMeta;
using decomp::TM;
using decomp::Unsqueezed;

// ---- Shared pieces ----------------------------------------------------------

struct Moments {
  Node* var = nullptr;   // reduced as keepdim says
  Node* mean = nullptr;  // always with the reduced dims kept (size 1)
};

// `x` without the (size-1) `dims` unless `keepdim`.
absl::StatusOr<Node*> Squeeze(Rewriter& r, Node* x,
                              const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim || dims.empty()) return x;
  return r.Call("aten.squeeze.dims", {A(x), IntList(dims)});
}

// The variance (with `correction`) and mean of `x` over `dims`: one
// var_mean (Inductor's choice too: the cpu backend lowers it as one Welford
// reduction), both kept as [.., 1, ..], the variance then squeezed unless
// `keepdim`.
absl::StatusOr<Moments> VarMean(Rewriter& r, Node* x,
                                const std::vector<int64_t>& dims,
                                double correction, bool keepdim) {
  ASSIGN_OR_RETURN(
      Node * vm,
      r.Call("aten.var_mean.correction", {A(x), IntList(dims)},
             {{"correction", F(correction)}, {"keepdim", Arg::Bool(true)}}));
  Moments m;
  ASSIGN_OR_RETURN(Node * var, r.Call("getitem", {A(vm), I(0)}));
  ASSIGN_OR_RETURN(m.mean, r.Call("getitem", {A(vm), I(1)}));
  ASSIGN_OR_RETURN(m.var, Squeeze(r, var, dims, keepdim));
  return m;
}

// `x` with trailing size-1 dims up to `rank` dims (_unsqueeze_to_dim).
absl::StatusOr<Node*> UnsqueezeTo(Rewriter& r, Node* x, int64_t rank) {
  for (int64_t k = TM(x).dim(); k < rank; ++k) {
    ASSIGN_OR_RETURN(x, r.Binary("aten.unsqueeze.default", x, I(-1)));
  }
  return x;
}

// The variance correction of a var/std call: `unbiased` (1 or 0) or
// `correction` (None: 1); nullopt when symbolic.
std::optional<double> Correction(const Rewriter& r) {
  const ir::OpSchema& s = r.node()->op()->schema;
  if (s.ArgumentIndex("unbiased") >= 0) {
    std::optional<bool> u = r.Bool("unbiased");
    if (!u.has_value()) return std::nullopt;
    return *u ? 1.0 : 0.0;
  }
  Arg c = r.Get("correction");
  if (c.kind == Arg::Kind::kNone) return 1.0;
  if (!IsNumber(c)) return std::nullopt;
  return NumberOf(c);
}

// ---- Decompositions ---------------------------------------------------------

// _softmax / _log_softmax (decompositions.py): in the computation dtype,
// x - amax(x) and its exp, normalized by (or log of) their sum. In f32 a
// weight exp would make below FLT_MIN is 0 (the sum is at least 1, so a
// softmax moves by less than FLT_MIN and a log_softmax not at all).
absl::StatusOr<Outputs> SoftmaxFamily(Rewriter& r, bool log) {
  Node* x = r.Tensor("self");
  std::optional<int64_t> dim = r.Int("dim");
  std::optional<bool> half_to_float = r.Bool("half_to_float");
  // half_to_float changes the result dtype, which lathe's op does not.
  if (!IsTensor(x) || !dim.has_value() || half_to_float.value_or(true)) {
    return Outputs{};
  }
  const TensorMeta& m = TM(x);
  if (!IsFloatingPoint(m.dtype)) return Outputs{};
  int64_t rank = std::max<int64_t>(m.dim(), 1);
  if (*dim < -rank || *dim >= rank) return Outputs{};
  // amax has no identity: the dim must not be empty (PyTorch pads an
  // empty one with -inf; lathe leaves such a call alone).
  if (m.dim() > 0 && !r.Positive(m.sizes[(*dim + rank) % rank])) {
    return Outputs{};
  }
  ASSIGN_OR_RETURN(Node * xc, r.Contiguous(x));
  ASSIGN_OR_RETURN(xc, r.To(xc, OpMath(m.dtype)));
  ASSIGN_OR_RETURN(
      Node * amax,
      r.Call("aten.amax.default", {A(xc), IntList({*dim}), Arg::Bool(true)}));
  ASSIGN_OR_RETURN(Node * shifted, r.Binary("aten.sub.Tensor", xc, A(amax)));
  // In f32, a lane far below its row's max is exp's slow path and a weight
  // under FLT_MIN: 0 instead (ExpUnmasked), as the attention's softmax.
  ASSIGN_OR_RETURN(Node * exp,
                   OpMath(m.dtype) == DType::kFloat32
                       ? decomp::ExpUnmasked(r, shifted, decomp::MaskedLanes())
                       : r.Unary("aten.exp.default", shifted));
  ASSIGN_OR_RETURN(Node * sum,
                   r.Call("aten.sum.dim_IntList",
                          {A(exp), IntList({*dim}), Arg::Bool(true)}));
  Node* out;
  if (log) {
    ASSIGN_OR_RETURN(Node * lse, r.Unary("aten.log.default", sum));
    ASSIGN_OR_RETURN(out, r.Binary("aten.sub.Tensor", shifted, A(lse)));
  } else {
    ASSIGN_OR_RETURN(out, r.Binary("aten.div.Tensor", exp, A(sum)));
  }
  ASSIGN_OR_RETURN(out, r.To(out, m.dtype));
  return Outputs{out};
}

absl::StatusOr<Outputs> Softmax(Rewriter& r) { return SoftmaxFamily(r, false); }
absl::StatusOr<Outputs> LogSoftmax(Rewriter& r) {
  return SoftmaxFamily(r, true);
}

// logsumexp (_refs): amax with infinite maxima replaced by 0, then
// log(sum(exp(x - max))) + max; integers as float32.
absl::StatusOr<Outputs> LogSumExp(Rewriter& r) {
  Node* x = r.Tensor("self");
  if (!IsTensor(x)) return Outputs{};
  const TensorMeta& m = TM(x);
  std::optional<std::vector<int64_t>> dims = r.Dims("dim", m.dim());
  std::optional<bool> keepdim = r.Bool("keepdim");
  if (!dims.has_value() || !keepdim.has_value()) return Outputs{};
  DType out_dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(out_dtype)) return Outputs{};
  ASSIGN_OR_RETURN(Node * xc, r.To(x, OpMath(out_dtype)));
  bool empty = false, nonempty = true;
  for (const Expr& s : m.sizes) {
    if (s.is_constant(0)) empty = true;
    if (!r.Positive(s)) nonempty = false;
  }
  if (empty) {  // sum(exp(x)).log()
    ASSIGN_OR_RETURN(Node * exp, r.Unary("aten.exp.default", xc));
    ASSIGN_OR_RETURN(Node * sum,
                     r.Call("aten.sum.dim_IntList",
                            {A(exp), IntList(*dims), Arg::Bool(*keepdim)}));
    ASSIGN_OR_RETURN(Node * out, r.Unary("aten.log.default", sum));
    ASSIGN_OR_RETURN(out, r.To(out, out_dtype));
    return Outputs{out};
  }
  if (!nonempty) return Outputs{};
  ASSIGN_OR_RETURN(
      Node * amax,
      r.Call("aten.amax.default", {A(xc), IntList(*dims), Arg::Bool(true)}));
  ASSIGN_OR_RETURN(Node * abs, r.Unary("aten.abs.default", amax));
  ASSIGN_OR_RETURN(Node * inf,
                   r.Binary("aten.eq.Scalar", abs,
                            F(std::numeric_limits<double>::infinity())));
  ASSIGN_OR_RETURN(Node * zero, r.ScalarTensor(I(0), TM(xc).dtype, m.device));
  ASSIGN_OR_RETURN(Node * maxes,
                   r.Call("aten.where.self", {A(inf), A(zero), A(amax)}));
  ASSIGN_OR_RETURN(Node * shifted, r.Binary("aten.sub.Tensor", xc, A(maxes)));
  ASSIGN_OR_RETURN(Node * exp, r.Unary("aten.exp.default", shifted));
  ASSIGN_OR_RETURN(Node * sum,
                   r.Call("aten.sum.dim_IntList",
                          {A(exp), IntList(*dims), Arg::Bool(*keepdim)}));
  ASSIGN_OR_RETURN(Node * log, r.Unary("aten.log.default", sum));
  ASSIGN_OR_RETURN(Node * squeezed, Squeeze(r, maxes, *dims, *keepdim));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.add.Tensor", log, A(squeezed)));
  ASSIGN_OR_RETURN(out, r.To(out, out_dtype));
  return Outputs{out};
}

// mean (_refs): the sum in the computation dtype, converted to the result
// dtype, divided by the element count.
absl::StatusOr<Outputs> Mean(Rewriter& r) {
  Node* x = r.Tensor("self");
  if (!IsTensor(x)) return Outputs{};
  bool has_dim = r.node()->op()->schema.ArgumentIndex("dim") >= 0;
  std::optional<std::vector<int64_t>> dims =
      has_dim ? r.Dims("dim", TM(x).dim()) : AllDims(TM(x).dim());
  std::optional<bool> keepdim =
      has_dim ? r.Bool("keepdim") : std::optional<bool>(false);
  if (!dims.has_value() || !keepdim.has_value()) return Outputs{};
  DType out_dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(out_dtype)) return Outputs{};
  ASSIGN_OR_RETURN(Node * xc, r.To(x, OpMath(out_dtype)));
  ASSIGN_OR_RETURN(Node * sum,
                   r.Call("aten.sum.dim_IntList",
                          {A(xc), IntList(*dims), Arg::Bool(*keepdim)}));
  ASSIGN_OR_RETURN(sum, r.To(sum, out_dtype));
  ASSIGN_OR_RETURN(Arg n, r.Count(x, *dims));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.div.Tensor", sum, n));
  return Outputs{out};
}

// var / std (_refs): var_mean in the computation dtype, the variance's
// square root for std.
absl::StatusOr<Outputs> VarFamily(Rewriter& r, bool sqrt) {
  Node* x = r.Tensor("self");
  if (!IsTensor(x)) return Outputs{};
  const ir::OpSchema& s = r.node()->op()->schema;
  std::optional<std::vector<int64_t>> dims = s.ArgumentIndex("dim") >= 0
                                                 ? r.Dims("dim", TM(x).dim())
                                                 : AllDims(TM(x).dim());
  std::optional<bool> keepdim = s.ArgumentIndex("keepdim") >= 0
                                    ? r.Bool("keepdim")
                                    : std::optional<bool>(false);
  std::optional<double> correction = Correction(r);
  if (!dims.has_value() || !keepdim.has_value() || !correction.has_value()) {
    return Outputs{};
  }
  DType in = TM(x).dtype;
  if (!IsFloatingPoint(in)) return Outputs{};
  ASSIGN_OR_RETURN(Node * xc, r.To(x, OpMath(in)));
  ASSIGN_OR_RETURN(Moments m, VarMean(r, xc, *dims, *correction, *keepdim));
  Node* out = m.var;
  if (sqrt) {
    ASSIGN_OR_RETURN(out, r.Unary("aten.sqrt.default", out));
  }
  ASSIGN_OR_RETURN(out, r.To(out, in));
  return Outputs{out};
}

absl::StatusOr<Outputs> Var(Rewriter& r) { return VarFamily(r, false); }
absl::StatusOr<Outputs> Std(Rewriter& r) { return VarFamily(r, true); }

// native_layer_norm (_refs): normalize over the trailing dims in the
// computation dtype; mean and rstd keep the normalized dims as size 1.
absl::StatusOr<Outputs> LayerNorm(Rewriter& r) {
  Node* input = r.Tensor("input");
  Arg shape = r.Get("normalized_shape");
  Node* weight = r.Tensor("weight");
  Node* bias = r.Tensor("bias");
  Arg eps = r.Get("eps");
  if (!IsTensor(input) || shape.kind != Arg::Kind::kList ||
      shape.list.empty()) {
    return Outputs{};
  }
  const TensorMeta& m = TM(input);
  int64_t axis = m.dim() - static_cast<int64_t>(shape.list.size());
  if (axis < 0 || !IsFloatingPoint(m.dtype)) return Outputs{};
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < m.dim(); ++d) dims.push_back(d);
  ASSIGN_OR_RETURN(Node * x, r.Contiguous(input));
  ASSIGN_OR_RETURN(x, r.To(x, OpMath(m.dtype)));
  ASSIGN_OR_RETURN(Moments mo, VarMean(r, x, dims, 0, /*keepdim=*/true));
  ASSIGN_OR_RETURN(Node * var_eps, r.Binary("aten.add.Tensor", mo.var, eps));
  ASSIGN_OR_RETURN(Node * rstd, r.Unary("aten.rsqrt.default", var_eps));
  ASSIGN_OR_RETURN(Node * centered, r.Binary("aten.sub.Tensor", x, A(mo.mean)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.mul.Tensor", centered, A(rstd)));
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", out, A(weight)));
  }
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(out, r.Binary("aten.add.Tensor", out, A(bias)));
  }
  ASSIGN_OR_RETURN(out, r.To(out, m.dtype));
  return Outputs{out, mo.mean, rstd};
}

// native_group_norm (_refs): the input viewed as [N, group, C / group,
// HxW], normalized over the last two dims; weight and bias per channel. C
// may be a SymInt whose value the env knows (the op's meta specializes it).
absl::StatusOr<Outputs> GroupNorm(Rewriter& r) {
  Node* input = r.Tensor("input");
  Node* weight = r.Tensor("weight");
  Node* bias = r.Tensor("bias");
  Arg n = r.Get("N"), hxw = r.Get("HxW"), eps = r.Get("eps");
  Arg channels = r.Get("C");
  std::optional<int64_t> group = r.Int("group");
  if (!IsTensor(input) || !group.has_value() || *group <= 0 ||
      TM(input).dim() < 2) {
    return Outputs{};
  }
  std::optional<int64_t> c = r.KnownInt(channels);
  if (!c.has_value() || *c % *group != 0) return Outputs{};
  const TensorMeta& m = TM(input);
  if (!IsFloatingPoint(m.dtype)) return Outputs{};
  for (const Node* p : {weight, bias}) {
    if (p != nullptr && TM(p).dim() != 1) return Outputs{};
  }
  ASSIGN_OR_RETURN(Node * x, r.Contiguous(input));
  ASSIGN_OR_RETURN(x, r.To(x, OpMath(m.dtype)));
  ASSIGN_OR_RETURN(
      Node * grouped,
      r.Call("aten.view.default",
             {A(x), Arg::List({n, I(*group), I(*c / *group), hxw})}));
  ASSIGN_OR_RETURN(Moments mo, VarMean(r, grouped, {2, 3}, 0, true));
  ASSIGN_OR_RETURN(Node * var_eps, r.Binary("aten.add.Tensor", mo.var, eps));
  ASSIGN_OR_RETURN(Node * rstd, r.Unary("aten.rsqrt.default", var_eps));
  ASSIGN_OR_RETURN(Node * centered,
                   r.Binary("aten.sub.Tensor", grouped, A(mo.mean)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.mul.Tensor", centered, A(rstd)));
  ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(input));
  ASSIGN_OR_RETURN(out,
                   r.Call("aten.view.default", {A(out), Arg::List(sizes)}));
  // weight/bias [C] -> [1, C, 1, ...].
  auto per_channel = [&](Node* p) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(p, r.Binary("aten.unsqueeze.default", p, I(0)));
    for (int64_t d = 2; d < m.dim(); ++d) {
      ASSIGN_OR_RETURN(p, r.Binary("aten.unsqueeze.default", p, I(d)));
    }
    return p;
  };
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(Node * w, per_channel(weight));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", out, A(w)));
  }
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(Node * b, per_channel(bias));
    ASSIGN_OR_RETURN(out, r.Binary("aten.add.Tensor", out, A(b)));
  }
  ASSIGN_OR_RETURN(out, r.To(out, m.dtype));
  ASSIGN_OR_RETURN(Node * mean, Squeeze(r, mo.mean, {2, 3}, false));
  ASSIGN_OR_RETURN(Node * rstd_out, Squeeze(r, rstd, {2, 3}, false));
  return Outputs{out, mean, rstd_out};
}

// The batch-norm family (native_batch_norm_helper): batch statistics over
// every dim but the channels in training, the running ones otherwise.
// `stats_out`: also the new running statistics (the functional op).
absl::StatusOr<Outputs> BatchNormCore(Rewriter& r, Node* rm, Node* rv,
                                      bool training, bool stats_out) {
  Node* input = r.Tensor("input");
  Node* weight = r.Tensor("weight");
  Node* bias = r.Tensor("bias");
  Arg eps = r.Get("eps");
  std::optional<double> momentum = r.Number("momentum");
  if (!IsTensor(input) || !momentum.has_value() || TM(input).dim() < 2) {
    return Outputs{};
  }
  const TensorMeta& m = TM(input);
  int64_t rank = m.dim();
  if (!IsFloatingPoint(m.dtype)) return Outputs{};
  for (const Node* p : {weight, bias, rm, rv}) {
    if (p != nullptr && TM(p).dim() != 1) return Outputs{};
  }
  if (!training && (rm == nullptr || rv == nullptr)) return Outputs{};
  DType compute = OpMath(m.dtype);
  Node* out = nullptr;
  Node* save_mean = nullptr;
  Node* save_rstd = nullptr;
  Node* new_rm = rm;
  Node* new_rv = rv;
  if (training) {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
    ASSIGN_OR_RETURN(Node * x, r.To(input, compute));
    ASSIGN_OR_RETURN(Moments mo, VarMean(r, x, dims, 0, true));
    ASSIGN_OR_RETURN(Node * var_eps, r.Binary("aten.add.Tensor", mo.var, eps));
    ASSIGN_OR_RETURN(Node * rstd, r.Unary("aten.rsqrt.default", var_eps));
    ASSIGN_OR_RETURN(Node * centered,
                     r.Binary("aten.sub.Tensor", input, A(mo.mean)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", centered, A(rstd)));
    ASSIGN_OR_RETURN(save_mean, Squeeze(r, mo.mean, dims, false));
    ASSIGN_OR_RETURN(save_rstd, Squeeze(r, rstd, dims, false));
    if (stats_out) {
      // momentum * batch + (1 - momentum) * running; the variance unbiased.
      auto update = [&](Node* batch, Node* running) -> absl::StatusOr<Node*> {
        ASSIGN_OR_RETURN(Node * a,
                         r.Binary("aten.mul.Tensor", batch, F(*momentum)));
        ASSIGN_OR_RETURN(
            Node * b, r.Binary("aten.mul.Tensor", running, F(1 - *momentum)));
        return r.Binary("aten.add.Tensor", a, A(b));
      };
      ASSIGN_OR_RETURN(new_rm, update(save_mean, rm));
      ASSIGN_OR_RETURN(Arg n, r.Count(input, dims));
      Arg factor;
      if (n.kind == Arg::Kind::kInt) {
        factor = F(static_cast<double>(n.i) / static_cast<double>(n.i - 1));
      } else {
        ASSIGN_OR_RETURN(Node * n1, r.Binary("operator.sub", n.node, I(1)));
        ASSIGN_OR_RETURN(Node * f, r.Binary("operator.truediv", n.node, A(n1)));
        factor = A(f);
      }
      ASSIGN_OR_RETURN(Node * var, Squeeze(r, mo.var, dims, false));
      ASSIGN_OR_RETURN(Node * unbiased,
                       r.Binary("aten.mul.Tensor", var, factor));
      ASSIGN_OR_RETURN(new_rv, update(unbiased, rv));
    }
  } else {
    ASSIGN_OR_RETURN(Node * mean, r.To(rm, compute));
    ASSIGN_OR_RETURN(Node * var, r.To(rv, compute));
    ASSIGN_OR_RETURN(Node * var_eps, r.Binary("aten.add.Tensor", var, eps));
    ASSIGN_OR_RETURN(Node * invstd, r.Unary("aten.rsqrt.default", var_eps));
    // The CPU kernel returns empty statistics in evaluation mode.
    const ir::ValueMeta& old = r.node()->meta();
    for (int k : {1, 2}) {
      ASSIGN_OR_RETURN(Node * empty,
                       r.Factory("aten.full.default", {IntList({0}), I(0)},
                                 old.elements[k].tensor.dtype, m.device));
      (k == 1 ? save_mean : save_rstd) = empty;
    }
    // The new running statistics are copies (never the inputs themselves).
    new_rm = mean != rm ? mean : nullptr;
    new_rv = var != rv ? var : nullptr;
    if (stats_out && new_rm == nullptr) {
      ASSIGN_OR_RETURN(new_rm, r.Unary("aten.clone.default", rm));
    }
    if (stats_out && new_rv == nullptr) {
      ASSIGN_OR_RETURN(new_rv, r.Unary("aten.clone.default", rv));
    }
    ASSIGN_OR_RETURN(Node * mean_b, UnsqueezeTo(r, mean, rank - 1));
    ASSIGN_OR_RETURN(Node * invstd_b, UnsqueezeTo(r, invstd, rank - 1));
    ASSIGN_OR_RETURN(Node * centered,
                     r.Binary("aten.sub.Tensor", input, A(mean_b)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", centered, A(invstd_b)));
  }
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(Node * w, UnsqueezeTo(r, weight, rank - 1));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", out, A(w)));
  }
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(Node * b, UnsqueezeTo(r, bias, rank - 1));
    ASSIGN_OR_RETURN(out, r.Binary("aten.add.Tensor", out, A(b)));
  }
  ASSIGN_OR_RETURN(out, r.To(out, m.dtype));
  if (stats_out) return Outputs{out, save_mean, save_rstd, new_rm, new_rv};
  return Outputs{out, save_mean, save_rstd};
}

// native_batch_norm: lathe's kernel does not write the running statistics.
absl::StatusOr<Outputs> NativeBatchNorm(Rewriter& r) {
  std::optional<bool> training = r.Bool("training");
  if (!training.has_value()) return Outputs{};
  return BatchNormCore(r, r.Tensor("running_mean"), r.Tensor("running_var"),
                       *training, false);
}

// _native_batch_norm_legit: in training it writes the running statistics,
// which a rewrite without copy_ would lose; evaluation only.
absl::StatusOr<Outputs> BatchNormLegit(Rewriter& r) {
  std::optional<bool> training = r.Bool("training");
  if (training.value_or(true)) return Outputs{};
  return BatchNormCore(r, r.Tensor("running_mean"), r.Tensor("running_var"),
                       false, false);
}

absl::StatusOr<Outputs> BatchNormNoStats(Rewriter& r) {
  std::optional<bool> training = r.Bool("training");
  if (!training.value_or(false)) return Outputs{};
  return BatchNormCore(r, nullptr, nullptr, true, false);
}

absl::StatusOr<Outputs> BatchNormNoTraining(Rewriter& r) {
  return BatchNormCore(r, r.Tensor("running_mean"), r.Tensor("running_var"),
                       false, false);
}

absl::StatusOr<Outputs> BatchNormFunctional(Rewriter& r) {
  std::optional<bool> training = r.Bool("training");
  Node* rm = r.Tensor("running_mean");
  Node* rv = r.Tensor("running_var");
  if (!training.has_value() || rm == nullptr || rv == nullptr) {
    return Outputs{};
  }
  return BatchNormCore(r, rm, rv, *training, true);
}

// gelu (_refs.nn.functional): erf form, or the tanh approximation.
absl::StatusOr<Outputs> Gelu(Rewriter& r) {
  Node* self = r.Tensor("self");
  Arg approximate = r.Get("approximate");
  if (!IsTensor(self) || approximate.kind != Arg::Kind::kString) {
    return Outputs{};
  }
  DType dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(dtype)) return Outputs{};
  constexpr double kSqrt2 = 1.41421356237309504880;
  constexpr double kSqrt1_2 = 0.70710678118654752440;
  constexpr double k2SqrtPi = 1.12837916709551257390;
  ASSIGN_OR_RETURN(Node * a, r.To(self, OpMath(dtype)));
  Node* out;
  if (approximate.s == "tanh") {
    ASSIGN_OR_RETURN(Node * sq, r.Binary("aten.mul.Tensor", a, A(a)));
    ASSIGN_OR_RETURN(Node * cube, r.Binary("aten.mul.Tensor", sq, A(a)));
    ASSIGN_OR_RETURN(Node * k, r.Binary("aten.mul.Tensor", cube, F(0.044715)));
    ASSIGN_OR_RETURN(Node * sum, r.Binary("aten.add.Tensor", a, A(k)));
    ASSIGN_OR_RETURN(Node * inner, r.Binary("aten.mul.Tensor", sum,
                                            F(kSqrt2 * k2SqrtPi * 0.5)));
    ASSIGN_OR_RETURN(Node * half, r.Binary("aten.mul.Tensor", a, F(0.5)));
    ASSIGN_OR_RETURN(Node * tanh, r.Unary("aten.tanh.default", inner));
    ASSIGN_OR_RETURN(Node * one_plus, r.Binary("aten.add.Tensor", tanh, I(1)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", half, A(one_plus)));
  } else if (approximate.s == "none") {
    ASSIGN_OR_RETURN(Node * half, r.Binary("aten.mul.Tensor", a, F(0.5)));
    ASSIGN_OR_RETURN(Node * scaled,
                     r.Binary("aten.mul.Tensor", a, F(kSqrt1_2)));
    ASSIGN_OR_RETURN(Node * erf, r.Unary("aten.erf.default", scaled));
    ASSIGN_OR_RETURN(Node * one_plus, r.Binary("aten.add.Tensor", erf, I(1)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", half, A(one_plus)));
  } else {
    return Outputs{};
  }
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// celu(x, alpha): elu(x, alpha, 1, 1 / alpha), PyTorch's own definition.
absl::StatusOr<Outputs> Celu(Rewriter& r) {
  Node* self = r.Tensor("self");
  std::optional<double> alpha = r.Number("alpha");
  if (!IsTensor(self) || !alpha.has_value() || *alpha == 0) return Outputs{};
  ASSIGN_OR_RETURN(
      Node * out,
      r.Call("aten.elu.default", {A(self), F(*alpha), F(1), F(1 / *alpha)}));
  return Outputs{out};
}

// logit(x, eps): log(x / (1 - x)) in the math type, x first clamped to
// [eps, 1 - eps] when eps is given (as the CPU kernel: NaN stays NaN).
absl::StatusOr<Outputs> Logit(Rewriter& r) {
  Node* self = r.Tensor("self");
  if (!IsTensor(self) || !IsTensor(r.node())) return Outputs{};
  const DType dtype = TM(r.node()).dtype;
  Arg eps = r.Get("eps");
  if (eps.kind != Arg::Kind::kNone && !IsNumber(eps)) return Outputs{};
  ASSIGN_OR_RETURN(Node * x, r.To(self, OpMath(dtype)));
  if (eps.kind != Arg::Kind::kNone) {
    const double lo = NumberOf(eps), hi = 1 - lo;
    ASSIGN_OR_RETURN(Node * above, r.Binary("aten.gt.Scalar", x, F(hi)));
    ASSIGN_OR_RETURN(x,
                     r.Call("aten.where.ScalarSelf", {A(above), F(hi), A(x)}));
    ASSIGN_OR_RETURN(Node * below, r.Binary("aten.lt.Scalar", x, F(lo)));
    ASSIGN_OR_RETURN(x,
                     r.Call("aten.where.ScalarSelf", {A(below), F(lo), A(x)}));
  }
  ASSIGN_OR_RETURN(Node * rest, r.Binary("aten.rsub.Scalar", x, F(1)));
  ASSIGN_OR_RETURN(Node * odds, r.Binary("aten.div.Tensor", x, A(rest)));
  ASSIGN_OR_RETURN(Node * out, r.Unary("aten.log.default", odds));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// hardswish (decompositions.py): x * hardtanh(x + 3, 0, 6) / 6.
absl::StatusOr<Outputs> Hardswish(Rewriter& r) {
  Node* self = r.Tensor("self");
  if (!IsTensor(self) || !IsTensor(r.node())) return Outputs{};
  const DType dtype = TM(r.node()).dtype;
  ASSIGN_OR_RETURN(Node * x, r.To(self, OpMath(dtype)));
  ASSIGN_OR_RETURN(Node * shifted, r.Binary("aten.add.Tensor", x, F(3)));
  ASSIGN_OR_RETURN(Node * gate,
                   r.Call("aten.hardtanh.default", {A(shifted), F(0), F(6)}));
  ASSIGN_OR_RETURN(Node * xg, r.Binary("aten.mul.Tensor", x, A(gate)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.div.Tensor", xg, F(6)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// mish: x * tanh(softplus(x)).
absl::StatusOr<Outputs> Mish(Rewriter& r) {
  Node* self = r.Tensor("self");
  if (!IsTensor(self) || !IsTensor(r.node())) return Outputs{};
  const DType dtype = TM(r.node()).dtype;
  ASSIGN_OR_RETURN(Node * x, r.To(self, OpMath(dtype)));
  ASSIGN_OR_RETURN(Node * sp, r.Unary("aten.softplus.default", x));
  ASSIGN_OR_RETURN(Node * t, r.Unary("aten.tanh.default", sp));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.mul.Tensor", x, A(t)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// binary_cross_entropy (decompositions.py): (t - 1) * max(log1p(-x), -100)
// - t * max(log(x), -100), times weight, reduced; and, as the kernel
// checks it, an assert that every input and target element is in [0, 1].
absl::StatusOr<Outputs> BinaryCrossEntropy(Rewriter& r) {
  Node* self = r.Tensor("self");
  Node* target = r.Tensor("target");
  Node* weight = r.Tensor("weight");
  std::optional<int64_t> reduction = r.Int("reduction");
  if (!IsTensor(self) || !IsTensor(target) || !reduction || *reduction < 0 ||
      *reduction > 2 || (weight != nullptr && !IsTensor(weight)) ||
      TM(target).sizes != TM(self).sizes) {
    return Outputs{};
  }
  const DType dtype = TM(self).dtype, math = OpMath(dtype);
  for (auto [v, what] :
       {std::pair{self, "input"}, std::pair{target, "target"}}) {
    ASSIGN_OR_RETURN(Node * lo, r.Binary("aten.ge.Scalar", v, F(0)));
    ASSIGN_OR_RETURN(Node * hi, r.Binary("aten.le.Scalar", v, F(1)));
    ASSIGN_OR_RETURN(Node * in,
                     r.Binary("aten.logical_and.default", lo, A(hi)));
    ASSIGN_OR_RETURN(Node * all, r.Unary("aten.all.default", in));
    ASSIGN_OR_RETURN(Node * ok,
                     r.Unary("aten._local_scalar_dense.default", all));
    RETURN_IF_ERROR(
        r.Call("aten._assert_scalar.default",
               {A(ok), Arg::String(absl::StrCat("all elements of ", what,
                                                " should be between 0 and 1"))})
            .status());
  }
  ASSIGN_OR_RETURN(Node * x, r.To(self, math));
  ASSIGN_OR_RETURN(Node * t, r.To(target, math));
  auto floored = [&](Node* v) -> absl::StatusOr<Node*> {  // max(v, -100)
    ASSIGN_OR_RETURN(Node * low, r.Binary("aten.lt.Scalar", v, F(-100)));
    return r.Call("aten.where.ScalarSelf", {A(low), F(-100), A(v)});
  };
  ASSIGN_OR_RETURN(Node * neg, r.Unary("aten.neg.default", x));
  ASSIGN_OR_RETURN(Node * l1p, r.Unary("aten.log1p.default", neg));
  ASSIGN_OR_RETURN(l1p, floored(l1p));
  ASSIGN_OR_RETURN(Node * lx, r.Unary("aten.log.default", x));
  ASSIGN_OR_RETURN(lx, floored(lx));
  ASSIGN_OR_RETURN(Node * t1, r.Binary("aten.sub.Tensor", t, I(1)));
  ASSIGN_OR_RETURN(Node * a, r.Binary("aten.mul.Tensor", t1, A(l1p)));
  ASSIGN_OR_RETURN(Node * b, r.Binary("aten.mul.Tensor", t, A(lx)));
  ASSIGN_OR_RETURN(Node * loss, r.Binary("aten.sub.Tensor", a, A(b)));
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(Node * w, r.To(weight, math));
    ASSIGN_OR_RETURN(loss, r.Binary("aten.mul.Tensor", loss, A(w)));
  }
  if (*reduction != 0) {
    ASSIGN_OR_RETURN(Node * sum, r.Unary("aten.sum.default", loss));
    loss = sum;
    if (*reduction == 1) {  // the mean, as a sum over the count
      ASSIGN_OR_RETURN(Arg n, r.Count(x, AllDims(TM(x).dim())));
      ASSIGN_OR_RETURN(loss, r.Binary("aten.div.Tensor", sum, n));
    }
  }
  ASSIGN_OR_RETURN(loss, r.To(loss, dtype));
  return Outputs{loss};
}

// sgn of a real tensor: sign.
absl::StatusOr<Outputs> Sgn(Rewriter& r) {
  Node* self = r.Tensor("self");
  if (!IsTensor(self) || TM(self).dtype == DType::kBool) return Outputs{};
  ASSIGN_OR_RETURN(Node * out, r.Unary("aten.sign.default", self));
  return Outputs{out};
}

// nll_loss2d_forward (decompositions.py's _nll_loss_forward, classes along
// dim 1): the gathered -self[n, t, h, w] (times weight[t]) where t is not
// ignore_index, unreduced [N, H, W] with total_weight 0, else summed or
// over the summed weights. The gather keeps the target's range check.
absl::StatusOr<Outputs> NllLoss2dForward(Rewriter& r) {
  Node* self = r.Tensor("self");
  Node* target = r.Tensor("target");
  Node* weight = r.Tensor("weight");
  std::optional<int64_t> reduction = r.Int("reduction");
  std::optional<int64_t> ignore = r.Int("ignore_index");
  if (!IsTensor(self) || !IsTensor(target) || !reduction || !ignore ||
      *reduction < 0 || *reduction > 2 || TM(self).dim() != 4 ||
      TM(target).dim() != 3 || (weight != nullptr && !IsTensor(weight)) ||
      !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  const DType dtype = TM(self).dtype;
  Node* x = self;
  Node* w = nullptr;
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(
        w, r.Binary("aten.view.default", weight, IntList({1, -1, 1, 1})));
    ASSIGN_OR_RETURN(x, r.Binary("aten.mul.Tensor", x, A(w)));
  }
  ASSIGN_OR_RETURN(Node * kept, r.Binary("aten.ne.Scalar", target, I(*ignore)));
  ASSIGN_OR_RETURN(Node * safe, r.Call("aten.where.ScalarOther",
                                       {A(kept), A(target), I(0)}));
  ASSIGN_OR_RETURN(Node * safe1,
                   r.Binary("aten.unsqueeze.default", safe, I(1)));
  ASSIGN_OR_RETURN(Node * picked,
                   r.Call("aten.gather.default", {A(x), I(1), A(safe1)}));
  ASSIGN_OR_RETURN(picked,
                   r.Call("aten.squeeze.dims", {A(picked), IntList({1})}));
  ASSIGN_OR_RETURN(Node * loss, r.Unary("aten.neg.default", picked));
  ASSIGN_OR_RETURN(loss,
                   r.Call("aten.where.ScalarOther", {A(kept), A(loss), F(0)}));
  if (*reduction == 0) {
    ASSIGN_OR_RETURN(Node * zero,
                     r.Factory("aten.full.default", {IntList({}), F(0)}, dtype,
                               TM(self).device));
    return Outputs{loss, zero};
  }
  Node* total = nullptr;
  if (w != nullptr) {  // the summed weights of the kept targets
    ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(self));
    ASSIGN_OR_RETURN(Node * we, r.Call("aten.expand.default",
                                       {A(w), Arg::List(std::move(sizes))}));
    ASSIGN_OR_RETURN(Node * ws,
                     r.Call("aten.gather.default", {A(we), I(1), A(safe1)}));
    ASSIGN_OR_RETURN(ws, r.Call("aten.squeeze.dims", {A(ws), IntList({1})}));
    ASSIGN_OR_RETURN(ws,
                     r.Call("aten.where.ScalarOther", {A(kept), A(ws), F(0)}));
    ASSIGN_OR_RETURN(total, r.Unary("aten.sum.default", ws));
  } else {
    ASSIGN_OR_RETURN(total, r.Unary("aten.sum.default", kept));
    ASSIGN_OR_RETURN(total, r.To(total, dtype));
  }
  ASSIGN_OR_RETURN(Node * sum, r.Unary("aten.sum.default", loss));
  if (*reduction == 1) {
    ASSIGN_OR_RETURN(sum, r.Binary("aten.div.Tensor", sum, A(total)));
  }
  return Outputs{sum, total};
}

// silu (Inductor's, the form that matches eager): x / (1 + exp(-x)).
absl::StatusOr<Outputs> Silu(Rewriter& r) {
  Node* self = r.Tensor("self");
  if (!IsTensor(self)) return Outputs{};
  DType dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(dtype)) return Outputs{};
  ASSIGN_OR_RETURN(Node * x, r.To(self, OpMath(dtype)));
  ASSIGN_OR_RETURN(Node * neg, r.Unary("aten.neg.default", x));
  ASSIGN_OR_RETURN(Node * exp, r.Unary("aten.exp.default", neg));
  ASSIGN_OR_RETURN(Node * denom, r.Binary("aten.add.Tensor", exp, I(1)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.div.Tensor", x, A(denom)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// addcmul / addcdiv (_refs): self + value * tensor1 (* or /) tensor2, in
// the computation dtype.
absl::StatusOr<Outputs> AddcFamily(Rewriter& r, bool divide) {
  Node* self = r.Tensor("self");
  Node* t1 = r.Tensor("tensor1");
  Node* t2 = r.Tensor("tensor2");
  Arg value = r.Get("value");
  if (!IsTensor(self) || !IsTensor(t1) || !IsTensor(t2) || !IsNumber(value)) {
    return Outputs{};
  }
  DType dtype = TM(r.node()).dtype;
  if (dtype == DType::kBool) return Outputs{};
  DType compute = OpMath(dtype);
  ASSIGN_OR_RETURN(Node * s, r.To(self, compute));
  ASSIGN_OR_RETURN(Node * a, r.To(t1, compute));
  ASSIGN_OR_RETURN(Node * b, r.To(t2, compute));
  if (NumberOf(value) != 1) {
    ASSIGN_OR_RETURN(a, r.Binary("aten.mul.Tensor", a, value));
  }
  ASSIGN_OR_RETURN(
      Node * p,
      r.Binary(divide ? "aten.div.Tensor" : "aten.mul.Tensor", a, A(b)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.add.Tensor", s, A(p)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

absl::StatusOr<Outputs> Addcmul(Rewriter& r) { return AddcFamily(r, false); }
absl::StatusOr<Outputs> Addcdiv(Rewriter& r) { return AddcFamily(r, true); }

// lerp.Scalar (Inductor's): start + w * (end - start) for |w| < 0.5, else
// end + (w - 1) * (end - start), as eager computes it.
absl::StatusOr<Outputs> LerpScalar(Rewriter& r) {
  Node* start = r.Tensor("self");
  Node* end = r.Tensor("end");
  std::optional<double> w = r.Number("weight");
  if (!IsTensor(start) || !IsTensor(end) || !w.has_value()) return Outputs{};
  DType dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(dtype)) return Outputs{};
  DType compute = OpMath(dtype);
  ASSIGN_OR_RETURN(Node * s, r.To(start, compute));
  ASSIGN_OR_RETURN(Node * e, r.To(end, compute));
  ASSIGN_OR_RETURN(Node * diff, r.Binary("aten.sub.Tensor", e, A(s)));
  bool far = std::fabs(*w) >= 0.5;
  ASSIGN_OR_RETURN(Node * out,
                   r.Call("aten.add.Tensor", {A(far ? e : s), A(diff)},
                          {{"alpha", F(far ? *w - 1 : *w)}}));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// lerp.Tensor (_refs / Inductor's): the same two formulas chosen per
// element by where(|w| >= 0.5).
absl::StatusOr<Outputs> LerpTensor(Rewriter& r) {
  Node* start = r.Tensor("self");
  Node* end = r.Tensor("end");
  Node* weight = r.Tensor("weight");
  if (!IsTensor(start) || !IsTensor(end) || !IsTensor(weight)) {
    return Outputs{};
  }
  DType dtype = TM(r.node()).dtype;
  if (!IsFloatingPoint(dtype)) return Outputs{};
  DType compute = OpMath(dtype);
  ASSIGN_OR_RETURN(Node * s, r.To(start, compute));
  ASSIGN_OR_RETURN(Node * e, r.To(end, compute));
  ASSIGN_OR_RETURN(Node * w, r.To(weight, compute));
  ASSIGN_OR_RETURN(Node * diff, r.Binary("aten.sub.Tensor", e, A(s)));
  ASSIGN_OR_RETURN(Node * abs, r.Unary("aten.abs.default", w));
  ASSIGN_OR_RETURN(Node * far, r.Binary("aten.ge.Scalar", abs, F(0.5)));
  ASSIGN_OR_RETURN(Node * w1, r.Binary("aten.sub.Tensor", w, I(1)));
  ASSIGN_OR_RETURN(Node * coeff,
                   r.Call("aten.where.self", {A(far), A(w1), A(w)}));
  ASSIGN_OR_RETURN(Node * base,
                   r.Call("aten.where.self", {A(far), A(e), A(s)}));
  ASSIGN_OR_RETURN(Node * step, r.Binary("aten.mul.Tensor", coeff, A(diff)));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.add.Tensor", base, A(step)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  return Outputs{out};
}

// The range of an integer dtype.
std::pair<double, double> IntRange(DType d) {
  switch (d) {
    case DType::kInt8:
      return {-128, 127};
    case DType::kInt16:
      return {-32768, 32767};
    case DType::kInt32:
      return {-2147483648.0, 2147483647.0};
    case DType::kUInt8:
      return {0, 255};
    default:
      return {-9223372036854775808.0, 9223372036854775807.0};
  }
}

// clamp / clamp_min / clamp_max with Scalar bounds: maximum with the lower
// and minimum with the upper bound, each a 0-d tensor of the result dtype.
// Both propagate NaN (from the input or a bound) as clamp does. For
// integers a bound outside the dtype is a no-op (_refs drops it).
absl::StatusOr<Outputs> ClampScalar(Rewriter& r) {
  Node* self = r.Tensor("self");
  const ir::OpSchema& s = r.node()->op()->schema;
  Arg lo = s.ArgumentIndex("min") >= 0 ? r.Get("min") : Arg::None();
  Arg hi = s.ArgumentIndex("max") >= 0 ? r.Get("max") : Arg::None();
  if (!IsTensor(self)) return Outputs{};
  for (const Arg* b : {&lo, &hi}) {
    if (b->kind != Arg::Kind::kNone && !IsNumber(*b)) return Outputs{};
  }
  DType dtype = TM(r.node()).dtype;
  if (dtype == DType::kBool) return Outputs{};
  if (IsIntegral(dtype, false)) {
    auto [min, max] = IntRange(dtype);
    if (lo.kind != Arg::Kind::kNone) {
      if (NumberOf(lo) > max) return Outputs{};  // PyTorch refuses it
      if (NumberOf(lo) < min) lo = Arg::None();
    }
    if (hi.kind != Arg::Kind::kNone) {
      if (NumberOf(hi) < min) return Outputs{};
      if (NumberOf(hi) > max) hi = Arg::None();
    }
  }
  if (lo.kind == Arg::Kind::kNone && hi.kind == Arg::Kind::kNone &&
      !IsIntegral(dtype, false)) {
    return Outputs{};  // an error in the op itself
  }
  ASSIGN_OR_RETURN(Node * x, r.To(self, dtype));
  if (lo.kind == Arg::Kind::kNone && hi.kind == Arg::Kind::kNone) {
    ASSIGN_OR_RETURN(x, r.Unary("aten.clone.default", x));
    return Outputs{x};
  }
  if (lo.kind != Arg::Kind::kNone) {
    ASSIGN_OR_RETURN(Node * b, r.ScalarTensor(lo, dtype, TM(self).device));
    ASSIGN_OR_RETURN(x, r.Binary("aten.maximum.default", x, A(b)));
  }
  if (hi.kind != Arg::Kind::kNone) {
    ASSIGN_OR_RETURN(Node * b, r.ScalarTensor(hi, dtype, TM(self).device));
    ASSIGN_OR_RETURN(x, r.Binary("aten.minimum.default", x, A(b)));
  }
  return Outputs{x};
}

// clamp.Tensor: maximum / minimum with the bounds, all in the result dtype.
absl::StatusOr<Outputs> ClampTensor(Rewriter& r) {
  Node* self = r.Tensor("self");
  Node* lo = r.Tensor("min");
  Node* hi = r.Tensor("max");
  if (!IsTensor(self) || (lo == nullptr && hi == nullptr)) return Outputs{};
  DType dtype = TM(r.node()).dtype;
  if (dtype == DType::kBool) return Outputs{};
  ASSIGN_OR_RETURN(Node * x, r.To(self, dtype));
  if (lo != nullptr) {
    ASSIGN_OR_RETURN(Node * b, r.To(lo, dtype));
    ASSIGN_OR_RETURN(x, r.Binary("aten.maximum.default", x, A(b)));
  }
  if (hi != nullptr) {
    ASSIGN_OR_RETURN(Node * b, r.To(hi, dtype));
    ASSIGN_OR_RETURN(x, r.Binary("aten.minimum.default", x, A(b)));
  }
  return Outputs{x};
}

// upsample_bilinear2d (_upsample_linear): for each spatial dim, the source
// coordinate of every output index (clamped at 0), its floor x and x + 1
// (clamped to the last input index), and the fraction between them; the
// four corners are read with _unsafe_index and blended along W, then H.
// Static spatial sizes only (the scale is a number); the result is laid
// out as the op's (channels-last for a channels-last input).
absl::StatusOr<Outputs> UpsampleBilinear2d(Rewriter& r) {
  // The .vec overload (`input`) gives scale factors (or an output size) as
  // lists; the output size is the meta's either way.
  const bool vec = r.node()->op()->schema.overload == "vec";
  Node* input = r.Tensor(vec ? "input" : "self");
  std::optional<bool> align_corners = r.Bool("align_corners");
  if (!IsTensor(input) || TM(input).dim() != 4 || !align_corners.has_value()) {
    return Outputs{};
  }
  Arg factors = vec ? r.Get("scale_factors") : Arg();
  const TensorMeta& m = TM(input);
  if (!IsFloatingPoint(m.dtype)) return Outputs{};
  DType compute = OpMath(m.dtype);
  struct Axis {
    Node* frac;  // the source coordinate minus its floor, in [0, 1]
    Node* lo;    // floor, int64
    Node* hi;    // min(floor + 1, in - 1)
  };
  std::vector<Axis> axes;
  for (int k = 0; k < 2; ++k) {
    Expr in_e = m.sizes[2 + k], out_e = TM(r.node()).sizes[2 + k];
    if (!IsConstant(in_e) || !IsConstant(out_e)) return Outputs{};
    int64_t in = in_e.int_value(), out = out_e.int_value();
    std::optional<double> given;
    if (!vec) {
      given = r.Number(k == 0 ? "scales_h" : "scales_w");
    } else if (factors.kind == Arg::Kind::kList && factors.list.size() == 2) {
      const Arg& f = factors.list[k];
      if (f.kind == Arg::Kind::kFloat) given = f.f;
      if (f.kind == Arg::Kind::kInt) given = static_cast<double>(f.i);
    }
    double scale;
    if (*align_corners) {
      scale = out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0;
    } else {
      scale = given.has_value() && *given > 0
                  ? 1.0 / *given
                  : static_cast<double>(in) / static_cast<double>(out);
    }
    ASSIGN_OR_RETURN(Node * i, r.Factory("aten.arange.default", {I(out)},
                                         DType::kInt64, m.device));
    ASSIGN_OR_RETURN(Node * src, r.To(i, compute));
    if (*align_corners) {
      ASSIGN_OR_RETURN(src, r.Binary("aten.mul.Tensor", src, F(scale)));
    } else {
      ASSIGN_OR_RETURN(src, r.Binary("aten.add.Tensor", src, F(0.5)));
      ASSIGN_OR_RETURN(src, r.Binary("aten.mul.Tensor", src, F(scale)));
      ASSIGN_OR_RETURN(src, r.Binary("aten.sub.Tensor", src, F(0.5)));
    }
    ASSIGN_OR_RETURN(src, r.Binary("aten.clamp_min.default", src, F(0.0)));
    if (k == 0) {  // H: [out, 1], to broadcast against W
      ASSIGN_OR_RETURN(src, r.Binary("aten.unsqueeze.default", src, I(1)));
    }
    Axis a;
    ASSIGN_OR_RETURN(a.lo, r.To(src, DType::kInt64));
    ASSIGN_OR_RETURN(Node * up, r.Binary("aten.add.Tensor", a.lo, I(1)));
    ASSIGN_OR_RETURN(a.hi, r.Binary("aten.clamp_max.default", up, I(in - 1)));
    ASSIGN_OR_RETURN(Node * diff, r.Binary("aten.sub.Tensor", src, A(a.lo)));
    ASSIGN_OR_RETURN(a.frac,
                     r.Call("aten.clamp.default", {A(diff), F(0.0), F(1.0)}));
    axes.push_back(a);
  }
  ASSIGN_OR_RETURN(Node * x, r.To(input, compute));
  auto corner = [&](Node* h, Node* w) {
    return r.Call("aten._unsafe_index.Tensor",
                  {A(x), Arg::List({Arg::None(), Arg::None(), A(h), A(w)})});
  };
  // x1 + (x2 - x1) * alpha
  auto blend = [&](Node* a, Node* b, Node* alpha) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(Node * d, r.Binary("aten.sub.Tensor", b, A(a)));
    ASSIGN_OR_RETURN(Node * s, r.Binary("aten.mul.Tensor", d, A(alpha)));
    return r.Binary("aten.add.Tensor", a, A(s));
  };
  ASSIGN_OR_RETURN(Node * v00, corner(axes[0].lo, axes[1].lo));
  ASSIGN_OR_RETURN(Node * v01, corner(axes[0].lo, axes[1].hi));
  ASSIGN_OR_RETURN(Node * v10, corner(axes[0].hi, axes[1].lo));
  ASSIGN_OR_RETURN(Node * v11, corner(axes[0].hi, axes[1].hi));
  ASSIGN_OR_RETURN(Node * top, blend(v00, v01, axes[1].frac));
  ASSIGN_OR_RETURN(Node * bottom, blend(v10, v11, axes[1].frac));
  ASSIGN_OR_RETURN(Node * out, blend(top, bottom, axes[0].frac));
  ASSIGN_OR_RETURN(out, r.Contiguous(out));
  ASSIGN_OR_RETURN(out, r.To(out, m.dtype));
  ASSIGN_OR_RETURN(out, LaidOutAs(r, out, TM(r.node())));
  return Outputs{out};
}

// _pdist_forward: the p-norm distances of the rows i < j, row-major. The
// flat indices i * n + j of those pairs come from the strict upper
// triangle's mask: its running count places each pair (the others go to a
// spare last slot), scattered into [n (n - 1) / 2 + 1] and sliced; the
// rows are gathered with index_select and reduced by linalg_vector_norm.
absl::StatusOr<Outputs> Pdist(Rewriter& r) {
  Node* self = r.Tensor("self");
  std::optional<double> p = r.Number("p");
  if (!IsTensor(self) || !p.has_value() || *p < 0 || TM(self).dim() != 2 ||
      !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  const Device& device = TM(self).device;
  ASSIGN_OR_RETURN(Arg n, r.Size(self, 0));
  ASSIGN_OR_RETURN(Arg n1, SizePlus(r, n, -1));
  ASSIGN_OR_RETURN(Arg nn, SizeOp(r, "operator.mul", n, n));
  ASSIGN_OR_RETURN(Arg twice, SizeOp(r, "operator.mul", n, n1));
  ASSIGN_OR_RETURN(Arg pairs, SizeOp(r, "operator.floordiv", twice, I(2)));
  ASSIGN_OR_RETURN(Arg slots, SizePlus(r, pairs, 1));
  ASSIGN_OR_RETURN(Node * rows, Iota(r, n, device));
  ASSIGN_OR_RETURN(Node * cols, Iota(r, n, device));
  ASSIGN_OR_RETURN(rows, r.Binary("aten.unsqueeze.default", rows, I(1)));
  ASSIGN_OR_RETURN(Node * upper, r.Binary("aten.gt.Tensor", cols, A(rows)));
  ASSIGN_OR_RETURN(upper,
                   r.Call("aten.view.default", {A(upper), IntList({-1})}));
  ASSIGN_OR_RETURN(Node * count,
                   r.Call("aten.cumsum.default", {A(upper), I(0)},
                          {{"dtype", Arg::OfDType(DType::kInt64)}}));
  ASSIGN_OR_RETURN(Node * slot, r.Binary("aten.sub.Tensor", count, I(1)));
  ASSIGN_OR_RETURN(
      slot, r.Call("aten.where.ScalarOther", {A(upper), A(slot), pairs}));
  ASSIGN_OR_RETURN(Node * flat, Iota(r, nn, device));
  ASSIGN_OR_RETURN(Node * base,
                   r.Factory("aten.zeros.default", {Arg::List({slots})},
                             DType::kInt64, device));
  ASSIGN_OR_RETURN(Node * placed, r.Call("aten.scatter.src",
                                         {A(base), I(0), A(slot), A(flat)}));
  ASSIGN_OR_RETURN(Node * pair,
                   r.Call("aten.slice.Tensor", {A(placed), I(0), I(0), pairs}));
  ASSIGN_OR_RETURN(Node * i, r.Binary("aten.floor_divide.Scalar", pair, n));
  ASSIGN_OR_RETURN(Node * j, r.Binary("aten.remainder.Scalar", pair, n));
  ASSIGN_OR_RETURN(Node * xi,
                   r.Call("aten.index_select.default", {A(self), I(0), A(i)}));
  ASSIGN_OR_RETURN(Node * xj,
                   r.Call("aten.index_select.default", {A(self), I(0), A(j)}));
  ASSIGN_OR_RETURN(Node * diff, r.Binary("aten.sub.Tensor", xi, A(xj)));
  ASSIGN_OR_RETURN(Node * out,
                   r.Call("aten.linalg_vector_norm.default",
                          {A(diff), F(*p), IntList({1}), Arg::Bool(false)}));
  return Outputs{out};
}

// _embedding_bag_forward_only (sum, mean, max): each index's bag is the
// running count of the bag starts offsets[1:B] at or before it (index_add
// of ones, then cumsum), as PyTorch's offset2bag; an index past the last
// bag (include_last_offset) or equal to padding_idx goes to a spare bag B.
// The rows are gathered with index_select (times per_sample_weights) and
// reduced per bag: index_add for sum and mean (divided by the bag's
// count, at least 1), scatter_reduce amax for max, whose max_indices are
// the first index reaching the maximum (scatter_reduce amin of positions).
// offset2bag, bag_size and max_indices have the shapes and values of
// lathe's kernel.
absl::StatusOr<Outputs> EmbeddingBag(Rewriter& r) {
  Node* weight = r.Tensor("weight");
  Node* indices = r.Tensor("indices");
  Node* offsets = r.Tensor("offsets");
  Node* psw = r.Tensor("per_sample_weights");
  std::optional<int64_t> mode = r.Int("mode");
  std::optional<bool> last = r.Bool("include_last_offset");
  std::optional<int64_t> padding_idx = r.Int("padding_idx");
  if (!IsTensor(weight) || !IsTensor(indices) || !IsTensor(offsets) ||
      !mode.has_value() || *mode < 0 || *mode > 2 || !last.has_value() ||
      !padding_idx.has_value() || TM(weight).dim() != 2 ||
      TM(indices).dim() != 1 || TM(offsets).dim() != 1 ||
      (psw != nullptr && *mode != 0) || !IsFloatingPoint(TM(weight).dtype)) {
    return Outputs{};
  }
  const ir::ValueMeta& meta = r.node()->meta();
  const Device& device = TM(weight).device;
  DType compute = OpMath(TM(weight).dtype);
  constexpr DType kLong = DType::kInt64;
  ASSIGN_OR_RETURN(Arg n, r.Size(indices, 0));
  ASSIGN_OR_RETURN(Arg dim, r.Size(weight, 1));
  ASSIGN_OR_RETURN(Arg offsets_len, r.Size(offsets, 0));
  ASSIGN_OR_RETURN(Arg bags, SizePlus(r, offsets_len, *last ? -1 : 0));
  ASSIGN_OR_RETURN(Arg bags1, SizePlus(r, bags, 1));
  ASSIGN_OR_RETURN(Node * ix, r.To(indices, kLong));
  ASSIGN_OR_RETURN(Node * off, r.To(offsets, kLong));
  // offset2bag: the bag starts offsets[1:B] at or before each position.
  ASSIGN_OR_RETURN(Node * bag, Offset2Bag(r, off, bags, n, device));
  // Which indices count: before the end of the last bag, not padding.
  ASSIGN_OR_RETURN(Node * pos, Iota(r, n, device));
  Node* valid = nullptr;
  if (*last) {
    ASSIGN_OR_RETURN(Node * end,
                     r.Call("aten.select.int", {A(off), I(0), I(-1)}));
    ASSIGN_OR_RETURN(valid, r.Binary("aten.lt.Tensor", pos, A(end)));
  }
  if (*padding_idx >= 0) {
    ASSIGN_OR_RETURN(Node * real,
                     r.Binary("aten.ne.Scalar", ix, I(*padding_idx)));
    if (valid == nullptr) {
      valid = real;
    } else {
      ASSIGN_OR_RETURN(valid,
                       r.Binary("aten.logical_and.default", valid, A(real)));
    }
  }
  Node* target = bag;  // the bag each row reduces into (B: none)
  if (valid != nullptr) {
    ASSIGN_OR_RETURN(
        target, r.Call("aten.where.ScalarOther", {A(valid), A(bag), bags}));
  }
  ASSIGN_OR_RETURN(Node * w, r.To(weight, compute));
  ASSIGN_OR_RETURN(Node * rows,
                   r.Call("aten.index_select.default", {A(w), I(0), A(ix)}));
  Node* out;
  Node* counts = nullptr;  // [B] int64, for mean and max
  Node* max_indices = nullptr;
  if (*mode != 0) {
    ASSIGN_OR_RETURN(Node * zero, Full(r, {bags1}, I(0), kLong, device));
    ASSIGN_OR_RETURN(Node * one, Full(r, {n}, I(1), kLong, device));
    ASSIGN_OR_RETURN(counts, r.Call("aten.index_add.default",
                                    {A(zero), I(0), A(target), A(one)}));
    ASSIGN_OR_RETURN(
        counts, r.Call("aten.slice.Tensor", {A(counts), I(0), I(0), bags}));
  }
  if (*mode == 2) {
    ASSIGN_OR_RETURN(Node * t,
                     r.Binary("aten.unsqueeze.default", target, I(1)));
    ASSIGN_OR_RETURN(
        t, r.Call("aten.expand.default", {A(t), Arg::List({n, dim})}));
    ASSIGN_OR_RETURN(Node * base, Full(r, {bags1, dim}, I(0), compute, device));
    ASSIGN_OR_RETURN(Node * amax,
                     r.Call("aten.scatter_reduce.two",
                            {A(base), I(0), A(t), A(rows), Arg::String("amax")},
                            {{"include_self", Arg::Bool(false)}}));
    // The first position whose row reaches its bag's maximum.
    ASSIGN_OR_RETURN(Node * reached,
                     r.Call("aten.gather.default", {A(amax), I(0), A(t)}));
    ASSIGN_OR_RETURN(reached, r.Binary("aten.eq.Tensor", rows, A(reached)));
    ASSIGN_OR_RETURN(Node * p, r.Binary("aten.unsqueeze.default", pos, I(1)));
    ASSIGN_OR_RETURN(p,
                     r.Call("aten.where.ScalarOther", {A(reached), A(p), n}));
    ASSIGN_OR_RETURN(Node * never, Full(r, {bags1, dim}, n, kLong, device));
    ASSIGN_OR_RETURN(Node * first,
                     r.Call("aten.scatter_reduce.two",
                            {A(never), I(0), A(t), A(p), Arg::String("amin")},
                            {{"include_self", Arg::Bool(false)}}));
    ASSIGN_OR_RETURN(first,
                     r.Call("aten.slice.Tensor", {A(first), I(0), I(0), bags}));
    // indices[first], 0 for an empty bag (first == n).
    ASSIGN_OR_RETURN(Node * zero, Full(r, {I(1)}, I(0), kLong, device));
    ASSIGN_OR_RETURN(Node * padded,
                     r.Call("aten.cat.default", {Arg::List({A(ix), A(zero)})}));
    ASSIGN_OR_RETURN(Node * flat,
                     r.Call("aten.view.default", {A(first), IntList({-1})}));
    ASSIGN_OR_RETURN(max_indices, r.Call("aten.index_select.default",
                                         {A(padded), I(0), A(flat)}));
    ASSIGN_OR_RETURN(
        max_indices,
        r.Call("aten.view.default", {A(max_indices), Arg::List({bags, dim})}));
    ASSIGN_OR_RETURN(out,
                     r.Call("aten.slice.Tensor", {A(amax), I(0), I(0), bags}));
  } else {
    if (psw != nullptr) {
      ASSIGN_OR_RETURN(Node * s, r.To(psw, compute));
      ASSIGN_OR_RETURN(s, r.Binary("aten.unsqueeze.default", s, I(1)));
      ASSIGN_OR_RETURN(rows, r.Binary("aten.mul.Tensor", rows, A(s)));
    }
    ASSIGN_OR_RETURN(Node * base, Full(r, {bags1, dim}, I(0), compute, device));
    ASSIGN_OR_RETURN(out, r.Call("aten.index_add.default",
                                 {A(base), I(0), A(target), A(rows)}));
    ASSIGN_OR_RETURN(out,
                     r.Call("aten.slice.Tensor", {A(out), I(0), I(0), bags}));
    if (*mode == 1) {
      ASSIGN_OR_RETURN(Node * c,
                       r.Binary("aten.clamp_min.default", counts, I(1)));
      ASSIGN_OR_RETURN(c, r.Binary("aten.unsqueeze.default", c, I(1)));
      ASSIGN_OR_RETURN(out, r.Binary("aten.div.Tensor", out, A(c)));
    }
  }
  ASSIGN_OR_RETURN(out, r.To(out, TM(weight).dtype));
  // offset2bag: empty on the sum fast path (the op's meta says which).
  Node* offset2bag = bag;
  if (meta.elements[1].tensor.sizes[0].is_constant(0)) {
    ASSIGN_OR_RETURN(offset2bag, Full(r, {I(0)}, I(0), kLong, device));
  }
  Node* bag_size = counts;
  if (bag_size == nullptr) {
    ASSIGN_OR_RETURN(bag_size, Full(r, {bags}, I(0), kLong, device));
  }
  if (max_indices == nullptr) {  // bag_size's values, in its own storage
    ASSIGN_OR_RETURN(max_indices, r.Unary("aten.clone.default", bag_size));
  }
  return Outputs{out, offset2bag, bag_size, max_indices};
}

// ---- The table --------------------------------------------------------------

// Every op the pass decomposes, and how.
constexpr Decomposition kDecompositions[] = {
    {"aten._embedding_bag.default", EmbeddingBag},
    {"aten._embedding_bag_forward_only.default", EmbeddingBag},
    {"aten._log_softmax.default", LogSoftmax},
    {"aten._native_batch_norm_legit.default", BatchNormLegit},
    {"aten._native_batch_norm_legit.no_stats", BatchNormNoStats},
    {"aten._native_batch_norm_legit_functional.default", BatchNormFunctional},
    {"aten._native_batch_norm_legit_no_training.default", BatchNormNoTraining},
    {"aten._pdist_forward.default", Pdist},
    {"aten._softmax.default", Softmax},
    {"aten.addcdiv.default", Addcdiv},
    {"aten.addcmul.default", Addcmul},
    {"aten.binary_cross_entropy.default", BinaryCrossEntropy},
    {"aten.celu.default", Celu},
    {"aten.clamp.Tensor", ClampTensor},
    {"aten.clamp.default", ClampScalar},
    {"aten.clamp_max.default", ClampScalar},
    {"aten.clamp_min.default", ClampScalar},
    {"aten.gelu.default", Gelu},
    {"aten.hardswish.default", Hardswish},
    {"aten.lerp.Scalar", LerpScalar},
    {"aten.lerp.Tensor", LerpTensor},
    {"aten.logit.default", Logit},
    {"aten.logsumexp.default", LogSumExp},
    {"aten.mean.default", Mean},
    {"aten.mean.dim", Mean},
    {"aten.mish.default", Mish},
    {"aten.native_batch_norm.default", NativeBatchNorm},
    {"aten.native_group_norm.default", GroupNorm},
    {"aten.native_layer_norm.default", LayerNorm},
    {"aten.nll_loss2d_forward.default", NllLoss2dForward},
    {"aten.sgn.default", Sgn},
    {"aten.silu.default", Silu},
    {"aten.std.correction", Std},
    {"aten.std.default", Std},
    {"aten.std.dim", Std},
    {"aten.upsample_bilinear2d.default", UpsampleBilinear2d},
    {"aten.upsample_bilinear2d.vec", UpsampleBilinear2d},
    {"aten.var.correction", Var},
    {"aten.var.dim", Var},
};

// ---- Scatter chains (reference §2.2) ----------------------------------------

// The view op whose elements scatter node `n` writes back
// (OpDef::scattered_view), or null when `n` is no scatter.
const ir::OpDef* ScatteredView(const Node& n) {
  if (n.op() == nullptr || n.op()->scattered_view.empty()) return nullptr;
  return ir::OpRegistry::Global().Find(n.op()->scattered_view);
}

bool SameArgs(const std::vector<Arg>& a, const std::vector<Arg>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind) return false;
    switch (a[i].kind) {
      case Arg::Kind::kNode:
        if (a[i].node != b[i].node) return false;
        break;
      case Arg::Kind::kInt:
        if (a[i].i != b[i].i) return false;
        break;
      case Arg::Kind::kBool:
        if (a[i].b != b[i].b) return false;
        break;
      case Arg::Kind::kNone:
        break;
      case Arg::Kind::kList:
        if (!SameArgs(a[i].list, b[i].list)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

// The scatter's view arguments (after self and src), positional only.
std::optional<std::vector<Arg>> ViewArgs(const Node& scatter) {
  if (!scatter.kwargs().empty() || scatter.args().size() < 2) {
    return std::nullopt;
  }
  return std::vector<Arg>(scatter.args().begin() + 2, scatter.args().end());
}

// In `inner = scatter2(view1(x), src); outer = scatter1(x, inner)` where
// view1 is the view scatter1 writes through, the users of `inner` other
// than `outer` read view1(outer) instead (Inductor's canonicalization into
// one generalized scatter, then its decomposition back into the nested
// functional form). Returns whether it rewired anything.
absl::StatusOr<bool> StraightenScatter(ir::Graph& graph, Node* outer,
                                       PassContext& ctx) {
  const ir::OpDef* view = ScatteredView(*outer);
  if (view == nullptr || outer->args().size() < 2) return false;
  const Arg& src = outer->args()[1];
  if (src.kind != Arg::Kind::kNode) return false;
  Node* inner = src.node;
  if (ScatteredView(*inner) == nullptr || inner->args().empty() ||
      inner->args()[0].kind != Arg::Kind::kNode) {
    return false;
  }
  Node* base = inner->args()[0].node;  // must be view1(x)
  std::optional<std::vector<Arg>> view_args = ViewArgs(*outer);
  if (!view_args.has_value() || base->op() != view || !base->kwargs().empty() ||
      base->args().empty() || base->args()[0].kind != Arg::Kind::kNode ||
      outer->args()[0].kind != Arg::Kind::kNode ||
      base->args()[0].node != outer->args()[0].node ||
      !SameArgs(std::vector<Arg>(base->args().begin() + 1, base->args().end()),
                *view_args)) {
    return false;
  }
  // as_strided reads storage positions: outer must be laid out as x.
  const Node* x = outer->args()[0].node;
  if (view == ir::Known().as_strided) {
    const TensorMeta &a = TM(x), &b = TM(outer);
    if (a.strides != b.strides || a.storage_offset != b.storage_offset) {
      return false;
    }
  }
  std::vector<Node*> others;
  for (Node* u : inner->users()) {
    if (u == outer) continue;
    if (u->kind() == Node::Kind::kOutput) return false;  // would alias
    if (std::find(others.begin(), others.end(), u) == others.end()) {
      others.push_back(u);
    }
  }
  if (others.empty()) return false;
  // outer moves up to just after inner when its other arguments allow.
  for (Node* in : outer->Inputs()) {
    if (in != inner && !graph.IsBefore(in, inner)) return false;
  }
  graph.MoveAfter(outer, inner);
  std::vector<Arg> args = {A(outer)};
  args.insert(args.end(), view_args->begin(), view_args->end());
  // Every other user is after inner, so after outer now.
  Node* first = others[0];
  for (Node* u : others) {
    if (graph.IsBefore(u, first)) first = u;
  }
  ASSIGN_OR_RETURN(Node * v,
                   graph.InsertCall(first, view->target, std::move(args)));
  for (Node* u : others) u->ReplaceInput(inner, v);
  ctx.Log("decompose: ", inner->name(), " read as ", v->name(), " (a view of ",
          outer->name(), ")");
  return true;
}

// ---- The pass ---------------------------------------------------------------

// Whether every use of a multi-result node is a getitem of one of its
// results.
bool OnlyGetitemUsers(const Node& n) {
  int64_t count = static_cast<int64_t>(n.meta().elements.size());
  for (const Node* u : n.users()) {
    if (u->op() != ir::Known().getitem || u->args().size() != 2 ||
        u->args()[1].kind != Arg::Kind::kInt || u->args()[1].i < 0 ||
        u->args()[1].i >= count) {
      return false;
    }
  }
  return true;
}

bool IsPlaceholderStorage(const ir::Graph& graph, ir::StorageId s) {
  for (const Node* p : graph.Placeholders()) {
    if (p->meta().kind == ir::ValueMeta::Kind::kTensor &&
        p->meta().tensor.storage == s) {
      return true;
    }
  }
  return false;
}

// The table, with each in-place op whose functional twin it holds (addcmul_,
// gelu_, lerp_): the twin's decomposition, then copy_ into self.
struct Table {
  absl::flat_hash_map<std::string, DecomposeFn> fns;
  absl::flat_hash_set<std::string> inplace;
};
const Table& TheTable() {
  static const Table* table = [] {
    auto* t = new Table;
    for (const Decomposition& d : kDecompositions) t->fns[d.target] = d.fn;
    for (auto more :
         {BackwardDecompositions(), PointwiseBackwardDecompositions(),
          GridSamplerDecompositions(), AttentionDecompositions()}) {
      for (const Decomposition& d : more) t->fns[d.target] = d.fn;
    }
    const ir::OpRegistry& registry = ir::OpRegistry::Global();
    for (const std::string& target : registry.Targets()) {
      const ir::OpDef* op = registry.Find(target);
      if (!op->HasTag(ir::OpTag::kInplace) || op->functional.empty()) continue;
      auto twin = t->fns.find(op->functional);
      if (twin == t->fns.end()) continue;
      DecomposeFn fn = twin->second;
      t->fns[target] = fn;
      t->inplace.insert(target);
    }
    return t;
  }();
  return *table;
}

// The graph's tensor outputs and their metas, in output order.
std::vector<std::pair<Node*, TensorMeta>> OutputMetas(const ir::Graph& graph) {
  std::vector<std::pair<Node*, TensorMeta>> out;
  for (Node* v : graph.output()->Inputs()) {
    if (v->meta().kind == ir::ValueMeta::Kind::kTensor) {
      out.emplace_back(v, v->meta().tensor);
    }
  }
  return out;
}

// Whether the ShapeEnv proves `a` and `b` (sizes or strides) equal element
// by element, with no guard: forms that differ but are equal over the
// symbols' ranges (((s1 - 1)//32) + 1 and 1 when s1 <= 32) are the same.
bool ProvedEqual(symbolic::ShapeEnv& env, const std::vector<symbolic::Expr>& a,
                 const std::vector<symbolic::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] != b[d] && !env.StaticallyKnownTrue(symbolic::Eq(a[d], b[d]))) {
      return false;
    }
  }
  return true;
}

// Each output in `before` whose value was replaced or restrided by the
// decompositions, and was dense, copied back into its layout (a
// channels-last gradient whose op became a scatter_add stays
// channels-last), as Inductor keeps its outputs' strides. An output that
// shares its storage with an input or another output (a view of it, or
// AOTAutograd's intermediate base) is left alone: a copy would cut the
// alias.
absl::Status KeepOutputLayouts(ir::Graph& graph, PassContext& ctx,
                               const std::vector<TensorMeta>& before) {
  std::vector<std::pair<Node*, TensorMeta>> after = OutputMetas(graph);
  if (after.size() != before.size()) return absl::OkStatus();
  symbolic::ShapeEnv& env = ctx.env();
  auto strides = [&](const TensorMeta& m) {
    return ir::ApplyReplacements(ir::ValueMeta::Tensor(m), env).tensor.strides;
  };
  absl::flat_hash_map<ir::StorageId, absl::flat_hash_set<Node*>> holders;
  for (const auto& [node, meta] : after) holders[meta.storage].insert(node);
  Node* output = graph.output();
  absl::flat_hash_set<Node*> done;  // an output returned twice is one value
  for (size_t k = 0; k < after.size(); ++k) {
    auto& [node, meta] = after[k];
    const TensorMeta& want = before[k];
    if (done.contains(node) || holders[meta.storage].size() > 1 ||
        ProvedEqual(env, strides(meta), strides(want)) ||
        ir::EmptyLikeStrides(&env, ir::Value::OfMeta(want)) != want.strides ||
        IsPlaceholderStorage(graph, meta.storage)) {
      continue;
    }
    done.insert(node);
    Rewriter r(graph, output, env);
    absl::StatusOr<Node*> laid = LaidOutAs(r, node, want);
    if (!laid.ok() || !ProvedEqual(env, strides(TM(*laid)), strides(want))) {
      r.Rollback();
      continue;
    }
    output->ReplaceInput(node, *laid);
    ctx.Log("decompose: output ", k, " (", node->name(),
            ") copied back into its layout ", want.ToAnnotation());
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> DecomposedTargets() {
  std::vector<std::string> out;
  for (const auto& [target, fn] : TheTable().fns) out.push_back(target);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<bool> Decompose::Run(ir::Graph& graph, PassContext& ctx) {
  const auto& table = TheTable().fns;
  std::vector<Node*> work;
  for (const auto& n : graph.nodes()) {
    if (n->kind() == Node::Kind::kCall && table.contains(n->target())) {
      work.push_back(n.get());
    }
  }
  std::vector<TensorMeta> outputs;  // the outputs' metas before any rule
  for (const auto& [node, meta] : OutputMetas(graph)) outputs.push_back(meta);
  bool changed = false;
  absl::flat_hash_set<Node*> refresh;  // users of replaced values
  for (Node* n : work) {
    if (n->meta().kind == ir::ValueMeta::Kind::kTuple && !OnlyGetitemUsers(*n))
      continue;
    Rewriter r(graph, n, ctx.env());
    absl::StatusOr<Outputs> outs = table.at(n->target())(r);
    if (!outs.ok()) {
      r.Rollback();
      return absl::Status(
          outs.status().code(),
          absl::StrCat("decompose ", n->name(), " (", n->target(),
                       "): ", outs.status().message()));
    }
    if (outs->empty()) {
      r.Rollback();
      continue;
    }
    const bool inplace = TheTable().inplace.contains(n->target());
    if (inplace) {
      Node* self = n->args()[0].node;
      LATHE_CHECK(self != nullptr && outs->size() == 1) << n->target();
      ASSIGN_OR_RETURN((*outs)[0],
                       r.Call("aten.copy_.default", {A(self), A((*outs)[0])}));
    }
    // Each result in the dtype of the value it replaces, never an input.
    std::string mismatch;
    bool tuple = n->meta().kind == ir::ValueMeta::Kind::kTuple;
    size_t count = tuple ? n->meta().elements.size() : 1;
    LATHE_CHECK(outs->size() == count)
        << n->target() << " decomposed into " << outs->size() << " results";
    for (size_t k = 0; k < count && mismatch.empty(); ++k) {
      const ir::ValueMeta& want_meta =
          tuple ? n->meta().elements[k] : n->meta();
      Node*& got = (*outs)[k];
      // A None result (a backward op's output_mask) is null, and no getitem
      // may read it; so is a number result a rule does not make (cuDNN
      // attention's max_q): the op stays where a getitem reads it.
      if (want_meta.kind == ir::ValueMeta::Kind::kNone || got == nullptr) {
        if ((want_meta.kind != ir::ValueMeta::Kind::kNone &&
             want_meta.kind != ir::ValueMeta::Kind::kSym) ||
            got != nullptr) {
          r.Rollback();
          return absl::InternalError(absl::StrCat("decompose ", n->name(), " (",
                                                  n->target(), "): result ", k,
                                                  " is None on one side only"));
        }
        for (const Node* u : n->users()) {
          if (tuple && u->args()[1].i == static_cast<int64_t>(k)) {
            mismatch = absl::StrCat("decompose: kept ", n->name(), " (",
                                    n->target(), "): result ", k,
                                    " is None and read by ", u->name());
          }
        }
        continue;
      }
      const TensorMeta& want = want_meta.tensor;
      ASSIGN_OR_RETURN(got, r.To(got, want.dtype));
      if (!inplace && IsPlaceholderStorage(graph, TM(got).storage)) {
        ASSIGN_OR_RETURN(got, r.Unary("aten.clone.default", got));
      }
      // Both with what the env learned since the metas were made (an
      // earlier node's meta function may have specialized a symbol).
      auto sizes = [&](const TensorMeta& m) {
        return ir::ApplyReplacements(ir::ValueMeta::Tensor(m), ctx.env())
            .tensor.sizes;
      };
      if (!ProvedEqual(ctx.env(), sizes(TM(got)), sizes(want))) {
        // Sizes the ShapeEnv cannot show equal (symbolic forms that differ):
        // the op stays as it is rather than change a meta.
        mismatch =
            absl::StrCat("decompose: kept ", n->name(), " (", n->target(),
                         "): result ", k, " is ", TM(got).ToAnnotation(),
                         ", the op's is ", want.ToAnnotation());
        break;
      }
    }
    if (!mismatch.empty()) {
      r.Rollback();
      ctx.Log(mismatch);
      continue;
    }
    // Rewire the users, then erase the node and what nothing uses.
    if (tuple) {
      std::vector<Node*> getitems(n->users().begin(), n->users().end());
      for (Node* g : getitems) {
        for (Node* u : g->users()) refresh.insert(u);
        graph.ReplaceAllUsesWith(g, (*outs)[g->args()[1].i]);
        refresh.erase(g);
        RETURN_IF_ERROR(graph.Erase(g));
      }
    } else {
      for (Node* u : n->users()) refresh.insert(u);
      graph.ReplaceAllUsesWith(n, (*outs)[0]);
    }
    refresh.erase(n);
    std::string name = n->name(), target = n->target();
    RETURN_IF_ERROR(graph.Erase(n));
    std::vector<Node*> created = r.created();
    int kept = 0;
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      if ((*it)->users().empty()) {
        RETURN_IF_ERROR(graph.Erase(*it));
      } else {
        ++kept;
      }
    }
    ctx.Log("decompose: ", name, " (", target, ") into ", kept, " nodes");
    changed = true;
  }
  // Scatter chains.
  std::vector<Node*> scatters;
  for (const auto& n : graph.nodes()) {
    if (ScatteredView(*n) != nullptr) scatters.push_back(n.get());
  }
  for (Node* s : scatters) {
    ASSIGN_OR_RETURN(bool rewired, StraightenScatter(graph, s, ctx));
    changed = changed || rewired;
  }
  std::vector<Node*> stale(refresh.begin(), refresh.end());
  RETURN_IF_ERROR(ir::RefreshMetas(graph, ctx.env(), stale).status());
  if (changed) RETURN_IF_ERROR(KeepOutputLayouts(graph, ctx, outputs));
  return changed;
}

}  // namespace lathe::passes
