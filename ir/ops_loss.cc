// Loss ops: nll_loss and nll_loss2d's forwards, the pointwise losses (mse,
// smooth_l1, huber), binary_cross_entropy and its with-logits form.
// Kernels compute in double and round to the output dtype; results are
// contiguous.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "ir/ops_nn_util.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// ---------------------------------------------------------------------------
// Losses.

// PyTorch's Reduction enum: 0 none, 1 mean, 2 sum.
absl::StatusOr<int64_t> ReductionArg(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t reduction, c.arg("reduction").AsInt());
  if (reduction < 0 || reduction > 2) {
    return c.Error(
        absl::StrCat(reduction, " is not a valid value for reduction"));
  }
  return reduction;
}

// nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight): -weight[t] * self[n, t] per sample (0 where t is
// ignore_index), summed, or divided by the summed weights (mean). A 1-d
// self is one sample with a 0-d output whatever the reduction; with a 2-d
// self and no reduction, the output is [N] and total_weight 0.
absl::StatusOr<Value> NllLossForward(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  ASSIGN_OR_RETURN(int64_t ignore, c.arg("ignore_index").AsInt());
  int64_t rank = RankOf(self);
  if (rank < 1 || rank > 2) return c.Error("input tensor should be 1D or 2D");
  if (RankOf(target) > 1) {
    return c.Error(
        "0D or 1D target tensor expected, multi-target not supported");
  }
  DType tdt = DTypeOf(target);
  if (tdt != DType::kInt64 && tdt != DType::kUInt8) {
    return c.Error(
        absl::StrCat("expected target dtype to be Long or Byte, but got ",
                     ScalarTypeName(tdt)));
  }
  DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "nll_loss_out_frame"));
  std::vector<Expr> in = SizesOf(self), ts = SizesOf(target);
  bool batched = rank == 2;
  if (batched) {
    ASSIGN_OR_RETURN(
        bool same,
        Decide(c, symbolic::Eq(in[0], ts.empty() ? symbolic::Int(1) : ts[0])));
    if (!same || ts.empty()) {
      return c.Error(absl::StrCat("size mismatch (got input: ", ShapeString(in),
                                  ", target: ", ShapeString(ts), ")"));
    }
  } else if (!ts.empty()) {  // as PyTorch: a 1-d target must match self
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(in[0], ts[0])));
    if (!same) {
      return c.Error(absl::StrCat("size mismatch (got input: ", ShapeString(in),
                                  ", target: ", ShapeString(ts), ")"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> classes, ConcreteSizes(c, {in.back()}));
  int64_t n_classes = classes[0];
  RETURN_IF_ERROR(VectorOf(c, weight, n_classes, "weight"));
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes;
  if (batched && reduction == 0) out_sizes.push_back(in[0]);
  ASSIGN_OR_RETURN(Value out, Result(c, running, dt, self, out_sizes));
  ASSIGN_OR_RETURN(Value total, Result(c, running, dt, self, {}));
  if (!running) return Value::List({out, total});
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<int64_t> t = IntElements(target.tensor);
  std::vector<double> w = weight.is_none() ? std::vector<double>(n_classes, 1.0)
                                           : RowMajorValues(weight.tensor);
  int64_t n = batched ? self.tensor.sizes()[0] : 1;
  std::vector<double> losses(n, 0.0);
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = t[i];
    if (k == ignore) continue;
    if (k < 0 || k >= n_classes) {
      return c.Error(TargetOutOfBounds(absl::StrCat(k)));
    }
    losses[i] = -w[k] * x[i * n_classes + k];
    sum += losses[i];
    wsum += w[k];
  }
  if (batched && reduction == 0) {
    WriteRowMajor(out.tensor, losses);
    WriteRowMajor(total.tensor, {0.0});
  } else {
    WriteRowMajor(out.tensor, {reduction == 1 ? sum / wsum : sum});
    WriteRowMajor(total.tensor, {wsum});
  }
  return Value::List({out, total});
}

// nll_loss2d_forward(self [N, C, H, W], target [N, H, W], weight,
// reduction, ignore_index) -> (output, total_weight): per position,
// -weight[t] * self[n, t, h, w] (0 where t is ignore_index); unreduced
// [N, H, W] (total_weight 0), else summed, or over the summed weights.
absl::StatusOr<Value> NllLoss2dForward(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  ASSIGN_OR_RETURN(int64_t ignore, c.arg("ignore_index").AsInt());
  if (RankOf(self) != 4) {
    return c.Error(absl::StrCat(
        "only batches of spatial inputs supported (4D tensors), but got input "
        "of size: ",
        SizeString(self)));
  }
  if (RankOf(target) != 3) {
    return c.Error(absl::StrCat(
        "only batches of spatial targets supported (3D tensors) but got "
        "targets of size: ",
        SizeString(target)));
  }
  if (DTypeOf(target) != DType::kInt64) {
    return c.Error(absl::StrCat("expected target dtype to be Long, but got ",
                                ScalarTypeName(DTypeOf(target))));
  }
  const DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "nll_loss2d_forward_out_frame"));
  const std::vector<Expr> in = SizesOf(self), ts = SizesOf(target);
  RETURN_IF_ERROR(CheckSpatialTarget(c, in, ts));
  ASSIGN_OR_RETURN(std::vector<int64_t> classes, ConcreteSizes(c, {in[1]}));
  const int64_t n_classes = classes[0];
  RETURN_IF_ERROR(VectorOf(c, weight, n_classes, "weight"));
  const bool running = self.tensor.defined();
  std::vector<Expr> out_sizes;
  if (reduction == 0) out_sizes = ts;
  ASSIGN_OR_RETURN(Value out, Result(c, running, dt, self, out_sizes));
  ASSIGN_OR_RETURN(Value total, Result(c, running, dt, self, {}));
  if (!running) return Value::List({out, total});
  const std::vector<int64_t>& is = self.tensor.sizes();
  const int64_t n = is[0], plane = is[2] * is[3];
  const std::vector<double> x = RowMajorValues(self.tensor);
  const std::vector<int64_t> t = IntElements(target.tensor);
  const std::vector<double> w = weight.is_none()
                                    ? std::vector<double>(n_classes, 1.0)
                                    : RowMajorValues(weight.tensor);
  std::vector<double> losses(n * plane, 0.0);
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < plane; ++i) {
      const int64_t k = t[b * plane + i];
      if (k == ignore) continue;
      if (k < 0 || k >= n_classes) {
        return c.Error(TargetOutOfBounds(absl::StrCat(k)));
      }
      const double l = -w[k] * x[(b * n_classes + k) * plane + i];
      losses[b * plane + i] = l;
      sum += l;
      wsum += w[k];
    }
  }
  if (reduction == 0) {
    WriteRowMajor(out.tensor, losses);
    WriteRowMajor(total.tensor, {0.0});
  } else {
    WriteRowMajor(out.tensor, {reduction == 1 ? sum / wsum : sum});
    WriteRowMajor(total.tensor, {wsum});
  }
  return Value::List({out, total});
}

// Writes `loss` (of each index of `sizes`) into `out` per PyTorch's
// reduction: 0 elementwise, 1 the mean, 2 the sum.
void StoreLoss(const Tensor& out, absl::Span<const int64_t> sizes,
               int64_t reduction,
               const std::function<double(absl::Span<const int64_t>)>& loss) {
  double sum = 0;
  ForEachIndex(sizes, [&](absl::Span<const int64_t> i) {
    double v = loss(i);
    if (reduction == 0) {
      StoreDouble(out, i, v);
    } else {
      sum += v;
    }
  });
  if (reduction == 1) StoreDouble(out, {}, sum / Numel(sizes));
  if (reduction == 2) StoreDouble(out, {}, sum);
}

// mse_loss / smooth_l1_loss / huber_loss(self, target, reduction[, beta or
// delta]): the elementwise loss of self - target, broadcast (with
// TensorIterator's layout when not reduced), or its mean or sum (0-d).
// smooth_l1 is 0.5 * d^2 / beta below beta and |d| - 0.5 * beta above (|d|
// for beta 0); huber is 0.5 * d^2 below delta and delta * (|d| - 0.5 *
// delta) above.
enum class Loss { kMse, kSmoothL1, kHuber };
absl::StatusOr<Value> PointwiseLoss(const OpCall& c, Loss kind) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  double beta = 0;
  if (kind == Loss::kSmoothL1) {
    ASSIGN_OR_RETURN(beta, c.arg("beta").AsDouble());
    if (beta < 0) {
      return c.Error(
          "smooth_l1_loss does not support negative values for beta.");
    }
  }
  if (kind == Loss::kHuber) {
    ASSIGN_OR_RETURN(beta, c.arg("delta").AsDouble());
    if (!(beta > 0)) {
      return c.Error(
          "huber_loss does not support non-positive values for delta.");
    }
  }
  ASSIGN_OR_RETURN(DType dt, ResultType({self, target}));
  if (!IsFloatingPoint(dt)) {
    return c.Error(absl::StrCat("\"",
                                kind == Loss::kMse        ? "mse"
                                : kind == Loss::kSmoothL1 ? "smooth_l1"
                                                          : "huber",
                                "_cpu\" not implemented for '",
                                ScalarTypeName(dt), "'"));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> sizes,
                   BroadcastShapes(c, {SizesOf(self), SizesOf(target)}));
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = PointwiseStrides(c.env(), {self, target}, sizes);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(self),
                                            out_sizes, strides));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor a, BroadcastView(self.tensor, cs));
  ASSIGN_OR_RETURN(Tensor b, BroadcastView(target.tensor, cs));
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    double d = LoadDouble(a, i) - LoadDouble(b, i);
    if (kind == Loss::kMse) return d * d;
    double ad = std::fabs(d);
    if (kind == Loss::kHuber) {
      return ad < beta ? 0.5 * ad * ad : beta * (ad - 0.5 * beta);
    }
    return ad < beta ? 0.5 * d * d / beta : ad - 0.5 * beta;
  });
  return out;
}

// binary_cross_entropy(self, target, weight, reduction): (t - 1) *
// max(log1p(-x), -100) - t * max(log(x), -100), times weight (broadcast);
// every input and target element must be in [0, 1]. Unreduced, laid out
// as empty_like(self); else its mean or sum (0-d).
absl::StatusOr<Value> BinaryCrossEntropy(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  const DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "binary_cross_entropy"));
  std::vector<Expr> sizes = SizesOf(self);
  for (const Value* v : {&target, &weight}) {
    if (v->is_none()) continue;
    ASSIGN_OR_RETURN(std::vector<Expr> b,
                     BroadcastShapes(c, {sizes, SizesOf(*v)}));
    ASSIGN_OR_RETURN(bool same, SameShape(c, b, sizes));
    if (!same) {
      return c.Error(absl::StrCat("output with shape ", ShapeString(sizes),
                                  " doesn't match the broadcast shape ",
                                  ShapeString(b)));
    }
  }
  const bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = EmptyLikeStrides(c.env(), self);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(self),
                                            out_sizes, strides));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor t, BroadcastView(target.tensor, cs));
  Tensor w;
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(w, BroadcastView(weight.tensor, cs));
  }
  absl::Status bad;
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    const double x = LoadDouble(self.tensor, i), y = LoadDouble(t, i);
    if (!(x >= 0 && x <= 1) && bad.ok()) {
      bad = c.Error("all elements of input should be between 0 and 1");
    }
    if (!(y >= 0 && y <= 1) && bad.ok()) {
      bad = c.Error("all elements of target should be between 0 and 1");
    }
    const double l = (y - 1) * std::max(std::log1p(-x), -100.0) -
                     y * std::max(std::log(x), -100.0);
    return w.defined() ? l * LoadDouble(w, i) : l;
  });
  RETURN_IF_ERROR(bad);
  return out;
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight,
// reduction): PyTorch's (1 - t) * x - ((pos_weight - 1) * t + 1) *
// log_sigmoid(x), times weight. As in PyTorch (which computes it in place
// on 1 - target), the result has target's shape and dtype, and the other
// operands must broadcast to it.
absl::StatusOr<Value> BceWithLogits(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  const Value& pos_weight = c.arg("pos_weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  DType dt = DTypeOf(target);
  RETURN_IF_ERROR(NeedFloat(c, dt, "binary_cross_entropy_with_logits"));
  RETURN_IF_ERROR(
      NeedFloat(c, DTypeOf(self), "binary_cross_entropy_with_logits"));
  std::vector<Expr> sizes = SizesOf(target);
  for (const Value* v : {&self, &weight, &pos_weight}) {
    if (v->is_none()) continue;
    ASSIGN_OR_RETURN(std::vector<Expr> b,
                     BroadcastShapes(c, {sizes, SizesOf(*v)}));
    ASSIGN_OR_RETURN(bool same, SameShape(c, b, sizes));
    if (!same) {
      return c.Error(absl::StrCat("output with shape ", ShapeString(sizes),
                                  " doesn't match the broadcast shape ",
                                  ShapeString(b)));
    }
  }
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = PointwiseStrides(c.env(), {target}, sizes);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(target),
                                            out_sizes, strides));
  if (!running) return out;
  const std::vector<int64_t>& cs = target.tensor.sizes();
  ASSIGN_OR_RETURN(Tensor x, BroadcastView(self.tensor, cs));
  Tensor w, pw;
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(w, BroadcastView(weight.tensor, cs));
  }
  if (!pos_weight.is_none()) {
    ASSIGN_OR_RETURN(pw, BroadcastView(pos_weight.tensor, cs));
  }
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    double xv = LoadDouble(x, i), t = LoadDouble(target.tensor, i);
    double log_sigmoid =
        std::min(xv, 0.0) - std::log1p(std::exp(-std::fabs(xv)));
    double lw = pos_weight.is_none() ? 1 : (LoadDouble(pw, i) - 1) * t + 1;
    double loss = (1 - t) * xv - lw * log_sigmoid;
    return weight.is_none() ? loss : loss * LoadDouble(w, i);
  });
  return out;
}

}  // namespace

absl::Status RegisterLossOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      r.Add("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int "
            "reduction, SymInt ignore_index) -> (Tensor output, Tensor "
            "total_weight)",
            NllLossForward));
  RETURN_IF_ERROR(r.Add(
      "nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int "
      "reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
      NllLoss2dForward));
  RETURN_IF_ERROR(
      r.Add("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kMse); }));
  RETURN_IF_ERROR(
      r.Add("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, "
            "float beta=1.) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kSmoothL1); }));
  RETURN_IF_ERROR(
      r.Add("huber_loss(Tensor self, Tensor target, int reduction=1, float "
            "delta=1.) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kHuber); }));
  RETURN_IF_ERROR(
      r.Add("binary_cross_entropy(Tensor self, Tensor target, Tensor? "
            "weight=None, int reduction=1) -> Tensor",
            BinaryCrossEntropy));
  RETURN_IF_ERROR(r.Add(
      "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? "
      "weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor",
      BceWithLogits));
  return absl::OkStatus();
}

}  // namespace lathe::ir
