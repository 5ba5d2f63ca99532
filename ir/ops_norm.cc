// Normalization ops: batch norm (training, evaluation, the functional
// form functionalization pairs with the one that writes the running
// statistics, and the backward), group norm and layer norm's backward.
// Kernels compute in double and round to the output dtype; a channels-last
// input keeps its results channels-last (SuggestedResult).

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
// Normalization.

// The dtype of batch/group norm statistics: float32 for a float16/bfloat16
// input with some float32 parameter (PyTorch's mixed type), else the
// input's.
DType StatsDType(DType input, absl::Span<const Value* const> params) {
  if (input != DType::kFloat16 && input != DType::kBFloat16) return input;
  for (const Value* v : params) {
    if (v->is_tensor() && DTypeOf(*v) == DType::kFloat32) {
      return DType::kFloat32;
    }
  }
  return input;
}

// The batch-norm family. `stats`: running_mean/var arguments exist (their
// values `rm` and `rv`, None when absent); `training`: nullopt reads the
// `training` argument; `update`: training writes the new running statistics
// into `rm` and `rv`.
absl::StatusOr<Value> BatchNorm(const OpCall& c, bool stats, const Value& rm,
                                const Value& rv,
                                std::optional<bool> fixed_training,
                                bool update) {
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  bool training;
  if (fixed_training.has_value()) {
    training = *fixed_training;
  } else {
    ASSIGN_OR_RETURN(training, c.arg("training").AsBool());
  }
  ASSIGN_OR_RETURN(double momentum, c.arg("momentum").AsDouble());
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "batch_norm"));
  int64_t rank = RankOf(input);
  RETURN_IF_ERROR(WrapDim(c, 1, rank).status());  // the channel dim
  if (!training && (rm.is_none() || rv.is_none())) {
    return c.Error(absl::StrCat(rm.is_none() ? "running_mean" : "running_var",
                                " must be defined in evaluation mode"));
  }
  std::vector<Expr> sizes = SizesOf(input);
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, {sizes[1]}));
  int64_t channels = cs[0];
  RETURN_IF_ERROR(VectorOf(c, weight, channels, "weight"));
  RETURN_IF_ERROR(VectorOf(c, bias, channels, "bias"));
  RETURN_IF_ERROR(VectorOf(c, rm, channels, "running_mean"));
  RETURN_IF_ERROR(VectorOf(c, rv, channels, "running_var"));
  DType sdt = StatsDType(dt, {&weight, &bias, &rm, &rv});  // None: skipped
  bool running = input.tensor.defined();
  std::vector<Expr> stat_sizes = {symbolic::Int(training ? channels : 0)};
  ASSIGN_OR_RETURN(Value out, SuggestedResult(c, running, dt, input, sizes));
  ASSIGN_OR_RETURN(Value mean, Result(c, running, sdt, input, stat_sizes));
  ASSIGN_OR_RETURN(Value invstd, Result(c, running, sdt, input, stat_sizes));
  if (!running) return Value::List({out, mean, invstd});
  const std::vector<int64_t>& is = input.tensor.sizes();
  std::vector<double> x = RowMajorValues(input.tensor);
  int64_t inner = Product(is, 2), n = is[0] * inner;
  std::vector<double> m(channels), r(channels);
  std::vector<double> w = weight.is_none() ? std::vector<double>(channels, 1.0)
                                           : RowMajorValues(weight.tensor);
  std::vector<double> b = bias.is_none() ? std::vector<double>(channels, 0.0)
                                         : RowMajorValues(bias.tensor);
  auto at = [&](int64_t batch, int64_t ch, int64_t i) {
    return (batch * channels + ch) * inner + i;
  };
  if (training) {
    std::vector<double> rm_v, rv_v;
    if (!update) rm_v = rv_v = std::vector<double>(channels, 0.0);
    if (update && !rm.is_none()) rm_v = RowMajorValues(rm.tensor);
    if (update && !rv.is_none()) rv_v = RowMajorValues(rv.tensor);
    for (int64_t ch = 0; ch < channels; ++ch) {
      double sum = 0;
      for (int64_t bt = 0; bt < is[0]; ++bt) {
        for (int64_t i = 0; i < inner; ++i) sum += x[at(bt, ch, i)];
      }
      double mu = sum / n, ss = 0;
      for (int64_t bt = 0; bt < is[0]; ++bt) {
        for (int64_t i = 0; i < inner; ++i) {
          double d = x[at(bt, ch, i)] - mu;
          ss += d * d;
        }
      }
      m[ch] = mu;
      r[ch] = 1.0 / std::sqrt(ss / n + eps);
      // The running statistics, updated in place with the unbiased variance.
      if (!rm.is_none()) rm_v[ch] = momentum * mu + (1 - momentum) * rm_v[ch];
      if (!rv.is_none()) {
        rv_v[ch] = momentum * ss / (n - 1) + (1 - momentum) * rv_v[ch];
      }
    }
    if (update && !rm.is_none()) WriteRowMajor(rm.tensor, rm_v);
    if (update && !rv.is_none()) WriteRowMajor(rv.tensor, rv_v);
    WriteRowMajor(mean.tensor, m);
    WriteRowMajor(invstd.tensor, r);
  } else {
    m = RowMajorValues(rm.tensor);
    r = RowMajorValues(rv.tensor);
    for (double& v : r) v = 1.0 / std::sqrt(v + eps);
  }
  std::vector<double> y(x.size());
  for (int64_t bt = 0; bt < is[0]; ++bt) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = at(bt, ch, i);
        y[k] = (x[k] - m[ch]) * r[ch] * w[ch] + b[ch];
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return Value::List({out, mean, invstd});
}

// native_batch_norm_backward(grad_out, input, weight, running_mean,
// running_var, save_mean, save_invstd, train, eps, output_mask) ->
// (grad_input, grad_weight, grad_bias), per channel c over its n elements:
// training, with the batch's statistics (save_mean, save_invstd):
//   grad_input = (dy - sum(dy) / n - (x - mean) * dot * invstd^2 / n)
//                * invstd * weight,  dot = sum(dy * (x - mean));
// evaluation, with the running ones: grad_input = dy * invstd * weight
// (invstd = 1 / sqrt(running_var + eps)); grad_weight = dot * invstd,
// grad_bias = sum(dy) in both. grad_input is laid out as input suggests;
// an output the mask leaves out is None.
absl::StatusOr<Value> BatchNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(bool train, c.arg("train").AsBool());
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  const Value& mean_v = train ? c.arg("save_mean") : c.arg("running_mean");
  const Value& var_v = train ? c.arg("save_invstd") : c.arg("running_var");
  const DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "batch_norm_backward_cpu"));
  const int64_t rank = RankOf(input);
  if (rank < 2) {
    return c.Error(absl::StrCat("Expected 2D+ input, but got input of size",
                                SizeString(input)));
  }
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), SizesOf(input)));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  if (mean_v.is_none() || var_v.is_none()) {
    return c.Error(train ? "save_mean and save_invstd must be defined in "
                           "training mode"
                         : "running_mean and running_var must be defined in "
                           "evaluation mode");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> cs,
                   ConcreteSizes(c, {SizesOf(input)[1]}));
  const int64_t channels = cs[0];
  RETURN_IF_ERROR(VectorOf(c, weight, channels, "weight"));
  RETURN_IF_ERROR(
      VectorOf(c, mean_v, channels, train ? "save_mean" : "running_mean"));
  RETURN_IF_ERROR(
      VectorOf(c, var_v, channels, train ? "save_invstd" : "running_var"));
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  const bool running = input.tensor.defined();
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0],
                     SuggestedResult(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k],
                     Result(c, running, weight.is_none() ? dt : DTypeOf(weight),
                            input, {symbolic::Int(channels)}));
  }
  if (!running) return Value::List(std::move(outs));
  const std::vector<int64_t>& is = input.tensor.sizes();
  const std::vector<double> x = RowMajorValues(input.tensor),
                            dy = RowMajorValues(grad.tensor);
  const std::vector<double> m = RowMajorValues(mean_v.tensor);
  std::vector<double> r = RowMajorValues(var_v.tensor);
  if (!train) {
    for (double& v : r) v = 1.0 / std::sqrt(v + eps);
  }
  const std::vector<double> w = weight.is_none()
                                    ? std::vector<double>(channels, 1.0)
                                    : RowMajorValues(weight.tensor);
  const int64_t inner = Product(is, 2), n = is[0] * inner;
  auto at = [&](int64_t batch, int64_t ch, int64_t i) {
    return (batch * channels + ch) * inner + i;
  };
  std::vector<double> dx(x.size()), dw(channels), db(channels);
  for (int64_t ch = 0; ch < channels; ++ch) {
    double sum = 0, dot = 0;
    for (int64_t bt = 0; bt < is[0]; ++bt) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = at(bt, ch, i);
        sum += dy[k];
        dot += dy[k] * (x[k] - m[ch]);
      }
    }
    dw[ch] = dot * r[ch];
    db[ch] = sum;
    for (int64_t bt = 0; bt < is[0]; ++bt) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = at(bt, ch, i);
        dx[k] =
            train
                ? (dy[k] - sum / n - (x[k] - m[ch]) * dot * r[ch] * r[ch] / n) *
                      r[ch] * w[ch]
                : dy[k] * r[ch] * w[ch];
      }
    }
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

// The batch-norm ops that take running statistics from their arguments.
absl::StatusOr<Value> BatchNormWithStats(const OpCall& c,
                                         std::optional<bool> training,
                                         bool update) {
  return BatchNorm(c, true, c.arg("running_mean"), c.arg("running_var"),
                   training, update);
}

// _native_batch_norm_legit_functional: _native_batch_norm_legit on copies of
// the running statistics, which it returns as two more results (the
// statistics unchanged in evaluation mode).
absl::StatusOr<Value> BatchNormFunctional(const OpCall& c) {
  Value rm = c.arg("running_mean"), rv = c.arg("running_var");
  bool running = c.arg("input").tensor.defined();
  for (Value* v : {&rm, &rv}) {
    std::vector<Expr> sizes = SizesOf(*v);
    ASSIGN_OR_RETURN(Value copy,
                     Result(c, running, DTypeOf(*v), *v, std::move(sizes)));
    if (running) RETURN_IF_ERROR(CopyInto(copy.tensor, v->tensor));
    *v = copy;
  }
  ASSIGN_OR_RETURN(Value out, BatchNorm(c, true, rm, rv, std::nullopt, true));
  out.list.push_back(rm);
  out.list.push_back(rv);
  return out;
}

struct GroupNormSetup {
  int64_t n = 0, channels = 0, hxw = 0, group = 0;
};

absl::StatusOr<GroupNormSetup> SetupGroupNorm(const OpCall& c,
                                              const Value& input) {
  GroupNormSetup s;
  std::vector<Expr> nchw;
  for (const char* name : {"N", "C", "HxW"}) {
    const Value& a = c.arg(name);
    if (!a.is_number()) return c.Error(absl::StrCat(name, " must be an int"));
    nchw.push_back(a.number);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, {nchw[1]}));
  s.channels = cs[0];
  ASSIGN_OR_RETURN(s.group, c.arg("group").AsInt());
  if (s.group <= 0 || s.channels % s.group != 0) {
    return c.Error(
        absl::StrCat("Expected number of channels in input to be divisible by ",
                     "num_groups, but got input of shape ", SizeString(input),
                     " and num_groups=", s.group));
  }
  std::vector<Expr> sizes = SizesOf(input);
  ASSIGN_OR_RETURN(bool fits,
                   Decide(c, symbolic::Eq(NumelOf(sizes), NumelOf(nchw))));
  if (!fits) {
    return c.Error(absl::StrCat(
        "Expected the input of shape ", ShapeString(sizes),
        " to have N * C * HxW = ", ShapeString(nchw), " elements"));
  }
  const Value& weight = c.arg("weight");
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ws, Concrete(c, weight));
    if (ws.size() != 1 || ws[0] != s.channels) {
      return c.Error(absl::StrCat(
          "Expected weight to be a vector of size equal to the number of ",
          "channels in input, but got weight of shape ", SizeString(weight),
          " and input of shape ", SizeString(input)));
    }
  }
  if (input.tensor.defined()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, ConcreteSizes(c, nchw));
    s.n = dims[0];
    s.hxw = dims[2];
  }
  return s;
}

absl::StatusOr<Value> GroupNorm(const OpCall& c) {
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "GroupNormKernelImpl"));
  ASSIGN_OR_RETURN(GroupNormSetup s, SetupGroupNorm(c, input));
  if (!bias.is_none()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> bs, Concrete(c, bias));
    if (bs.size() != 1 || bs[0] != s.channels) {
      return c.Error(absl::StrCat(
          "Expected bias to be a vector of size equal to the number of ",
          "channels in input, but got bias of shape ", SizeString(bias),
          " and input of shape ", SizeString(input)));
    }
  }
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  DType sdt = StatsDType(dt, {&weight, &bias});
  bool running = input.tensor.defined();
  std::vector<Expr> stat_sizes = {c.arg("N").number, symbolic::Int(s.group)};
  ASSIGN_OR_RETURN(Value out,
                   SuggestedResult(c, running, dt, input, SizesOf(input)));
  ASSIGN_OR_RETURN(Value mean, Result(c, running, sdt, input, stat_sizes));
  ASSIGN_OR_RETURN(Value rstd, Result(c, running, sdt, input, stat_sizes));
  if (!running) return Value::List({out, mean, rstd});
  std::vector<double> x = RowMajorValues(input.tensor), y(x.size());
  std::vector<double> w = weight.is_none()
                              ? std::vector<double>(s.channels, 1.0)
                              : RowMajorValues(weight.tensor);
  std::vector<double> b = bias.is_none() ? std::vector<double>(s.channels, 0.0)
                                         : RowMajorValues(bias.tensor);
  int64_t per = s.channels / s.group * s.hxw;
  std::vector<double> m(s.n * s.group), r(s.n * s.group);
  for (int64_t k = 0; k < s.n * s.group; ++k) {
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < per; ++i) sum += x[k * per + i];
    double mu = sum / per;
    for (int64_t i = 0; i < per; ++i) {
      ss += (x[k * per + i] - mu) * (x[k * per + i] - mu);
    }
    m[k] = mu;
    r[k] = 1.0 / std::sqrt(ss / per + eps);
    for (int64_t i = 0; i < per; ++i) {
      int64_t ch = (k % s.group) * (s.channels / s.group) + i / s.hxw;
      y[k * per + i] = (x[k * per + i] - mu) * r[k] * w[ch] + b[ch];
    }
  }
  WriteRowMajor(out.tensor, y);
  WriteRowMajor(mean.tensor, m);
  WriteRowMajor(rstd.tensor, r);
  return Value::List({out, mean, rstd});
}

// The input gradient of a normalization over rows of `per` elements with
// per-row mean/rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// where g = dy * gamma.
void NormInputGrad(const std::vector<double>& x, const std::vector<double>& dy,
                   const std::vector<double>& mean,
                   const std::vector<double>& rstd, int64_t per,
                   const std::function<double(int64_t)>& gamma,
                   std::vector<double>& dx) {
  int64_t rows = per == 0 ? 0 : static_cast<int64_t>(x.size()) / per;
  for (int64_t k = 0; k < rows; ++k) {
    double sg = 0, sgx = 0;
    for (int64_t i = 0; i < per; ++i) {
      int64_t e = k * per + i;
      double g = dy[e] * gamma(e);
      double xhat = (x[e] - mean[k]) * rstd[k];
      sg += g;
      sgx += g * xhat;
    }
    for (int64_t i = 0; i < per; ++i) {
      int64_t e = k * per + i;
      double g = dy[e] * gamma(e);
      double xhat = (x[e] - mean[k]) * rstd[k];
      dx[e] = rstd[k] * (g - sg / per - xhat * sgx / per);
    }
  }
}

absl::StatusOr<Value> GroupNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& mean_v = c.arg("mean");
  const Value& rstd_v = c.arg("rstd");
  const Value& weight = c.arg("weight");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "GroupNormBackwardKernelImpl"));
  ASSIGN_OR_RETURN(GroupNormSetup s, SetupGroupNorm(c, input));
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), SizesOf(input)));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  Expr stats = symbolic::Mul(c.arg("N").number, symbolic::Int(s.group));
  for (const Value* v : {&mean_v, &rstd_v}) {
    ASSIGN_OR_RETURN(bool fits,
                     Decide(c, symbolic::Eq(NumelOf(SizesOf(*v)), stats)));
    if (!fits) {
      return c.Error(absl::StrCat("Expected mean and rstd to have N * group = ",
                                  symbolic::ToString(stats),
                                  " elements, but got ", SizeString(*v)));
    }
  }
  bool running = input.tensor.defined();
  DType pdt = weight.is_none() ? dt : DTypeOf(weight);
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0], Result(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k],
                     Result(c, running, pdt, input, {c.arg("C").number}));
  }
  if (!running) return Value::List(std::move(outs));
  std::vector<double> x = RowMajorValues(input.tensor),
                      dy = RowMajorValues(grad.tensor);
  std::vector<double> m = RowMajorValues(mean_v.tensor),
                      r = RowMajorValues(rstd_v.tensor);
  std::vector<double> w = weight.is_none()
                              ? std::vector<double>(s.channels, 1.0)
                              : RowMajorValues(weight.tensor);
  int64_t per = s.channels / s.group * s.hxw;
  auto channel = [&](int64_t e) { return (e / s.hxw) % s.channels; };
  std::vector<double> dx(x.size(), 0.0), dw(s.channels, 0.0),
      db(s.channels, 0.0);
  NormInputGrad(
      x, dy, m, r, per, [&](int64_t e) { return w[channel(e)]; }, dx);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t k = e / per;
    dw[channel(e)] += dy[e] * (x[e] - m[k]) * r[k];
    db[channel(e)] += dy[e];
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

absl::StatusOr<Value> LayerNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& mean_v = c.arg("mean");
  const Value& rstd_v = c.arg("rstd");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "LayerNormBackwardKernelImpl"));
  ASSIGN_OR_RETURN(std::vector<int64_t> norm,
                   c.arg("normalized_shape").AsIntList());
  std::vector<Expr> is = SizesOf(input);
  int64_t axis =
      static_cast<int64_t>(is.size()) - static_cast<int64_t>(norm.size());
  bool fits = !norm.empty() && axis >= 0;
  for (size_t k = 0; fits && k < norm.size(); ++k) {
    ASSIGN_OR_RETURN(
        fits, Decide(c, symbolic::Eq(is[axis + k], symbolic::Int(norm[k]))));
  }
  if (!fits) {
    return c.Error(absl::StrCat(
        "Given normalized_shape=[", absl::StrJoin(norm, ", "),
        "], expected input with shape [*, ", absl::StrJoin(norm, ", "),
        "], but got input of size", SizeString(input)));
  }
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), is));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  Expr rows = NumelOf(std::vector<Expr>(is.begin(), is.begin() + axis));
  int64_t per = Product(norm);
  for (const Value* v : {&mean_v, &rstd_v}) {
    ASSIGN_OR_RETURN(bool ok,
                     Decide(c, symbolic::Eq(NumelOf(SizesOf(*v)), rows)));
    if (!ok) {
      return c.Error(absl::StrCat("Expected mean and rstd to have ",
                                  symbolic::ToString(rows),
                                  " elements, but got ", SizeString(*v)));
    }
  }
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  const Value* params[] = {&weight, &bias};
  for (int k : {1, 2}) {
    const Value& p = *params[k - 1];
    if (!mask[k]) continue;
    if (p.is_none()) {
      return c.Error(absl::StrCat("output_mask[", k,
                                  "] asks for the gradient of ",
                                  k == 1 ? "weight" : "bias",
                                  ", which is None (unsupported: PyTorch "
                                  "fails there too)"));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> ps, Concrete(c, p));
    if (ps != norm) {
      return c.Error(absl::StrCat(
          "Expected ", k == 1 ? "weight" : "bias",
          " to be of same shape as normalized_shape, but got ",
          k == 1 ? "weight" : "bias", " of shape ", SizeString(p),
          " and normalized_shape = [", absl::StrJoin(norm, ", "), "]"));
    }
  }
  bool running = input.tensor.defined();
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0], Result(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k], Result(c, running, DTypeOf(*params[k - 1]), input,
                                     SizesOf(*params[k - 1])));
  }
  if (!running) return Value::List(std::move(outs));
  std::vector<double> x = RowMajorValues(input.tensor),
                      dy = RowMajorValues(grad.tensor);
  std::vector<double> m = RowMajorValues(mean_v.tensor),
                      r = RowMajorValues(rstd_v.tensor);
  std::vector<double> w = weight.is_none() ? std::vector<double>(per, 1.0)
                                           : RowMajorValues(weight.tensor);
  std::vector<double> dx(x.size(), 0.0), dw(per, 0.0), db(per, 0.0);
  NormInputGrad(
      x, dy, m, r, per, [&](int64_t e) { return w[e % per]; }, dx);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t k = e / per;
    dw[e % per] += dy[e] * (x[e] - m[k]) * r[k];
    db[e % per] += dy[e];
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

}  // namespace

absl::Status RegisterNormOps(OpRegistry& r) {
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, "
      "Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float "
      "momentum, float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNormWithStats(c, std::nullopt, /*update=*/true);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, "
      "Tensor? bias, Tensor running_mean, Tensor running_var, bool training, "
      "float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor "
      "running_mean_out, Tensor running_var_out)",
      BatchNormFunctional));
  // Functionalization replaces the op that writes the running statistics by
  // its functional twin, whose results 3 and 4 are their new values.
  RETURN_IF_ERROR(r.PairMutating("aten._native_batch_norm_legit.default",
                                 "aten._native_batch_norm_legit_functional."
                                 "default",
                                 {{3, 3}, {4, 4}}));
  // native_batch_norm (running statistics optional): PyTorch's CPU kernel
  // also updates them in place in training mode although its schema does
  // not say so, and so does lathe's; functionalization first turns such a
  // call into _native_batch_norm_legit, whose schema marks the writes
  // (aot/functionalize.cc).
  RETURN_IF_ERROR(r.Add(
      "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
      "running_mean, Tensor? running_var, bool training, float momentum, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNormWithStats(c, std::nullopt, /*update=*/true);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, "
      "Tensor? bias, bool training, float momentum, float eps) -> (Tensor, "
      "Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNorm(c, false, Value::None(), Value::None(), std::nullopt,
                         false);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, "
      "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) { return BatchNormWithStats(c, false, false); }));
  RETURN_IF_ERROR(r.Add(
      "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt "
      "N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, "
      "Tensor)",
      GroupNorm));
  RETURN_IF_ERROR(r.Add(
      "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, "
      "Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int "
      "group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      GroupNormBackward));
  RETURN_IF_ERROR(r.Add(
      "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
      "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? "
      "bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      LayerNormBackward));
  RETURN_IF_ERROR(r.Add(
      "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? "
      "weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
      "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> "
      "(Tensor, Tensor, Tensor)",
      BatchNormBackward));
  return absl::OkStatus();
}

}  // namespace lathe::ir
