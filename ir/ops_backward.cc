// The backward ops of AOTAutograd's backward graphs (derivatives.yaml's
// formulas, as PyTorch's CPU kernels compute them), reference kernels:
//   - the activations' backwards (gelu, silu, threshold (relu's), sigmoid,
//     tanh, hardtanh, leaky_relu, elu, softplus, hardswish, hardsigmoid,
//     mish): elementwise over (grad_output, self or result), TensorIterator
//     binary ops with the operands in PyTorch's order (threshold and
//     leaky_relu put self first), so the result's layout is theirs;
//   - _softmax_backward_data and _log_softmax_backward_data: contiguous
//     results, in the input's dtype;
//   - nll_loss_backward and the pointwise losses' backwards (mse,
//     smooth_l1, huber, binary_cross_entropy): contiguous results;
//   - the CPU flash attention's backward: gradients laid out (B, T, H, E);
//   - _embedding_bag_backward (dense; sum, mean, max) and
//     _embedding_bag_per_sample_weights_backward: contiguous results.
// Each computes in double and rounds once to the result's dtype.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/ops_nn_util.h"
#include "ir/ops_pointwise.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::ir {
namespace {

// d/dx of an activation at x, times the incoming gradient g.
using GradFn = std::function<double(double g, double x)>;
// Reads a backward op's scalar arguments and gives its GradFn.
using MakeGradFn = std::function<absl::StatusOr<GradFn>(const OpCall&)>;

// An activation's backward: `grad` and `x` name its two tensor arguments;
// `x_first` when TensorIterator sees x before grad; `kernel` is PyTorch's
// kernel name in its error for a dtype it does not take (floats only
// unless `ints`, where the integers take `make`'s function too, exactly).
struct ActivationBackward {
  const char* schema;
  const char* grad;
  const char* x;
  bool x_first;
  const char* kernel;
  MakeGradFn make;
  bool ints = false;
};

absl::StatusOr<OutInfo> InferBackward(const OpCall& c,
                                      const ActivationBackward& op) {
  const Value& g = c.arg(op.grad);
  const Value& x = c.arg(op.x);
  ASSIGN_OR_RETURN(OutInfo info, op.x_first ? Infer(c, {x, g}, false, false)
                                            : Infer(c, {g, x}, false, false));
  if (!IsFloatingPoint(info.dtype) &&
      (!op.ints || info.dtype == DType::kBool)) {
    return c.Error(absl::StrCat("\"", op.kernel, "\" not implemented for '",
                                ScalarTypeName(info.dtype), "'"));
  }
  return info;
}

absl::Status RegisterActivationBackward(OpRegistry& r,
                                        const ActivationBackward& op) {
  return r.Add(
      op.schema,
      [op](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info, InferBackward(c, op));
        RETURN_IF_ERROR(op.make(c).status());
        return ResultMeta(info);
      },
      [op](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info, InferBackward(c, op));
        ASSIGN_OR_RETURN(GradFn f, op.make(c));
        const int gi = op.x_first ? 1 : 0, xi = 1 - gi;
        std::vector<Value> operands = {c.arg(op.grad), c.arg(op.x)};
        if (op.x_first) std::swap(operands[0], operands[1]);
        IntNFn fi = nullptr;
        if (op.ints) {
          fi = [f, gi,
                xi](absl::Span<const int64_t> v) -> absl::StatusOr<int64_t> {
            return static_cast<int64_t>(
                f(static_cast<double>(v[gi]), static_cast<double>(v[xi])));
          };
        }
        return ComputeN(
            c, info, operands,
            [f, gi, xi](absl::Span<const double> v) { return f(v[gi], v[xi]); },
            fi);
      });
}

// A Scalar argument as a double.
absl::StatusOr<double> Number(const OpCall& c, const char* name) {
  return c.arg(name).AsDouble();
}

// A GradFn that takes no scalar arguments.
MakeGradFn Fixed(GradFn f) {
  return [f](const OpCall&) -> absl::StatusOr<GradFn> { return f; };
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

absl::StatusOr<GradFn> GeluGrad(const OpCall& c) {
  const std::string& approximate = c.arg("approximate").string;
  if (approximate == "tanh") {
    return GradFn([](double g, double x) {
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
      const double inner = beta * (x + kappa * x * x * x);
      const double t = std::tanh(inner);
      const double left = 0.5 * x, right = 1 + t;
      const double left_d = 0.5 * right;
      const double right_d =
          left * (1 - t * t) * beta * (1 + 3 * kappa * x * x);
      return g * (left_d + right_d);
    });
  }
  if (approximate != "none") {
    return c.Error(
        absl::StrCat("approximate argument must be either none or tanh, got '",
                     approximate, "'"));
  }
  return GradFn([](double g, double x) {
    const double cdf = 0.5 * (1 + std::erf(x * M_SQRT1_2));
    const double pdf = std::exp(-0.5 * x * x) * M_2_SQRTPI * M_SQRT1_2 * 0.5;
    return g * (cdf + x * pdf);
  });
}

absl::StatusOr<GradFn> ThresholdGrad(const OpCall& c) {
  ASSIGN_OR_RETURN(double threshold, Number(c, "threshold"));
  return GradFn(
      [threshold](double g, double x) { return x <= threshold ? 0.0 : g; });
}

absl::StatusOr<GradFn> HardtanhGrad(const OpCall& c) {
  ASSIGN_OR_RETURN(double lo, Number(c, "min_val"));
  ASSIGN_OR_RETURN(double hi, Number(c, "max_val"));
  return GradFn(
      [lo, hi](double g, double x) { return x <= lo || x >= hi ? 0.0 : g; });
}

absl::StatusOr<GradFn> LeakyReluGrad(const OpCall& c) {
  ASSIGN_OR_RETURN(double slope, Number(c, "negative_slope"));
  ASSIGN_OR_RETURN(bool is_result, c.arg("self_is_result").AsBool());
  if (is_result && slope < 0) {
    return c.Error(
        "In-place leakyReLu backward calculation is triggered with a negative "
        "slope which is not supported. This is caused by calling in-place "
        "forward function with a negative slope, please call out-of-place "
        "version instead. File an issue at https://github.com/pytorch/pytorch "
        "if you do require supporting in-place leakRelu backward calculation "
        "with negative slope");
  }
  return GradFn([slope](double g, double x) { return x > 0 ? g : g * slope; });
}

absl::StatusOr<GradFn> EluGrad(const OpCall& c) {
  ASSIGN_OR_RETURN(double alpha, Number(c, "alpha"));
  ASSIGN_OR_RETURN(double scale, Number(c, "scale"));
  ASSIGN_OR_RETURN(double input_scale, Number(c, "input_scale"));
  ASSIGN_OR_RETURN(bool is_result, c.arg("is_result").AsBool());
  if (is_result && alpha < 0) {
    return c.Error(
        "In-place elu backward calculation is triggered with a negative slope "
        "which is not supported. This is caused by calling in-place forward "
        "function with a negative slope, please call out-of-place version "
        "instead.");
  }
  const double neg = alpha * scale;
  return GradFn([=](double g, double v) {
    if (!(v <= 0)) return g * scale;  // NaN too, as PyTorch's kernel
    return is_result ? g * input_scale * (v + neg)
                     : g * input_scale * neg * std::exp(v * input_scale);
  });
}

absl::StatusOr<GradFn> SoftplusGrad(const OpCall& c) {
  ASSIGN_OR_RETURN(double beta, Number(c, "beta"));
  ASSIGN_OR_RETURN(double threshold, Number(c, "threshold"));
  return GradFn([beta, threshold](double g, double x) {
    const double z = std::exp(x * beta);
    return x * beta > threshold ? g : g * z / (z + 1);
  });
}

const ActivationBackward kActivationBackwards[] = {
    {"gelu_backward(Tensor grad_output, Tensor self, *, str "
     "approximate='none') -> Tensor",
     "grad_output", "self", false, "GeluBackwardKernelImpl", GeluGrad},
    {"silu_backward(Tensor grad_output, Tensor self) -> Tensor", "grad_output",
     "self", false, "silu_backward_cpu", Fixed([](double g, double x) {
       const double s = Sigmoid(x);
       return g * s * (1 + x * (1 - s));
     })},
    {"threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) "
     "-> Tensor",
     "grad_output", "self", true, "threshold_cpu", ThresholdGrad,
     /*ints=*/true},
    {"sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
     "grad_output", "output", false, "sigmoid_backward_cpu",
     Fixed([](double g, double y) { return g * (1 - y) * y; })},
    {"tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
     "grad_output", "output", false, "tanh_backward_cpu",
     Fixed([](double g, double y) { return g * (1 - y * y); })},
    {"hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, "
     "Scalar max_val) -> Tensor",
     "grad_output", "self", false, "hardshrink_backward_cpu", HardtanhGrad,
     /*ints=*/true},
    {"leaky_relu_backward(Tensor grad_output, Tensor self, Scalar "
     "negative_slope, bool self_is_result) -> Tensor",
     "grad_output", "self", true, "leaky_relu_backward_cpu", LeakyReluGrad},
    {"elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar "
     "input_scale, bool is_result, Tensor self_or_result) -> Tensor",
     "grad_output", "self_or_result", false, "elu_backward_cpu", EluGrad},
    {"softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar "
     "threshold) -> Tensor",
     "grad_output", "self", false, "softplus_backward_cpu", SoftplusGrad},
    {"hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
     "grad_output", "self", false, "hardswish_backward_cpu",
     Fixed([](double g, double x) {
       if (x < -3) return 0.0;
       return x <= 3 ? g * (x / 3 + 0.5) : g;
     })},
    {"hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
     "grad_output", "self", false, "hardsigmoid_backward",
     Fixed([](double g, double x) { return x > -3 && x < 3 ? g / 6 : 0.0; })},
    {"mish_backward(Tensor grad_output, Tensor self) -> Tensor", "grad_output",
     "self", false, "mish_backward_cpu", Fixed([](double g, double x) {
       const double s = Sigmoid(x);
       const double t = std::tanh(std::log1p(std::exp(x)));
       return g * (t + x * s * (1 - t * t));
     })},
};

// ---- Softmax's backwards ---------------------------------------------------

// _softmax_backward_data / _log_softmax_backward_data(grad_output, output,
// dim, input_dtype): along dim, output * (grad - sum(grad * output)), or
// grad - exp(output) * sum(grad). Contiguous, in grad's dtype, or in half
// for a float grad of a half input (a half-to-float softmax's).
absl::StatusOr<Value> SoftmaxBackward(const OpCall& c, bool log, bool running) {
  const Value& grad = c.arg("grad_output");
  const Value& output = c.arg("output");
  const DType gd = DTypeOf(grad), input = c.arg("input_dtype").dtype;
  if (gd != input && !(gd == DType::kFloat32 && input == DType::kFloat16)) {
    return c.Error(
        "expected input and grad types to match, or input to be at::Half and "
        "grad to be at::Float");
  }
  if (!IsFloatingPoint(gd)) {
    return c.Error(absl::StrCat("\"", log ? "log_softmax" : "softmax",
                                "_backward_lastdim\" not implemented for '",
                                ScalarTypeName(gd), "'"));
  }
  const std::vector<symbolic::Expr> sizes = SizesOf(grad);
  if (RankOf(output) != RankOf(grad)) {
    return c.Error(absl::StrCat("grad ", ShapeString(sizes), " and output ",
                                ShapeString(SizesOf(output)),
                                " differ in size"));
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    ASSIGN_OR_RETURN(bool same,
                     Decide(c, symbolic::Eq(sizes[d], SizesOf(output)[d])));
    if (!same) {
      return c.Error(absl::StrCat("grad ", ShapeString(sizes), " and output ",
                                  ShapeString(SizesOf(output)),
                                  " differ in size"));
    }
  }
  const int64_t rank = static_cast<int64_t>(sizes.size());
  ASSIGN_OR_RETURN(int64_t dim0, c.arg("dim").AsInt());
  ASSIGN_OR_RETURN(int64_t dim, WrapDim(c, dim0, std::max<int64_t>(rank, 1)));
  OutInfo info{input, gd, DeviceOf(grad), sizes, {}};
  if (!running) return ResultMeta(info);
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, sizes));
  RETURN_IF_ERROR(CheckResultElements(c, input, cs));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(cs, input));
  const Tensor& g = grad.tensor;
  const Tensor& y = output.tensor;
  if (rank == 0) {  // one element: the sum is itself
    const double gv = LoadDouble(g, {}), yv = LoadDouble(y, {});
    StoreDouble(out, {}, log ? gv - std::exp(yv) * gv : yv * (gv - gv * yv));
    return Value::OfTensor(out);
  }
  std::vector<int64_t> outer = cs;
  outer[dim] = 1;
  const int64_t n = cs[dim];
  ForEachIndex(outer, [&](absl::Span<const int64_t> at) {
    std::vector<int64_t> i(at.begin(), at.end());
    double sum = 0;
    for (i[dim] = 0; i[dim] < n; ++i[dim]) {
      sum += log ? LoadDouble(g, i) : LoadDouble(g, i) * LoadDouble(y, i);
    }
    for (i[dim] = 0; i[dim] < n; ++i[dim]) {
      const double gv = LoadDouble(g, i), yv = LoadDouble(y, i);
      StoreDouble(out, i, log ? gv - std::exp(yv) * sum : yv * (gv - sum));
    }
  });
  return Value::OfTensor(out);
}

// ---- The losses' backwards -------------------------------------------------

// PyTorch's Reduction enum: 0 none, 1 mean, 2 sum.
absl::StatusOr<int64_t> Reduction(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t reduction, c.arg("reduction").AsInt());
  if (reduction < 0 || reduction > 2) {
    return c.Error(
        absl::StrCat(reduction, " is not a valid value for reduction"));
  }
  return reduction;
}

// An elementwise loss's gradient at (grad, x = self, t = target).
using LossGradFn = std::function<double(double g, double x, double t)>;

// mse_loss_backward, smooth_l1_loss_backward, huber_loss_backward,
// binary_cross_entropy_backward: written, as PyTorch's kernels write
// them, into zeros_like(self) (contiguous, self's sizes and dtype), the
// other operands broadcast to self; `norm` is 1 / numel(self) for the mean
// and 1 otherwise. binary_cross_entropy's weight multiplies the result.
struct LossBackward {
  const char* schema;
  const char* kernel;  // PyTorch's, in its error for an integer dtype
  std::function<absl::StatusOr<LossGradFn>(const OpCall&, double norm)> make;
  bool weighted = false;
};

absl::Status RegisterLossBackward(OpRegistry& r, const LossBackward& op) {
  auto run = [op](const OpCall& c, bool running) -> absl::StatusOr<Value> {
    const Value& self = c.arg("self");
    ASSIGN_OR_RETURN(int64_t reduction, Reduction(c));
    const DType dt = DTypeOf(self);
    if (!IsFloatingPoint(dt)) {
      return c.Error(absl::StrCat("\"", op.kernel, "\" not implemented for '",
                                  ScalarTypeName(dt), "'"));
    }
    OutInfo info{dt, dt, DeviceOf(self), SizesOf(self), {}};
    std::vector<Value> operands = {c.arg("grad_output"), self, c.arg("target")};
    if (op.weighted && !c.arg("weight").is_none()) {
      operands.push_back(c.arg("weight"));
    }
    for (const Value& v : operands) {
      ASSIGN_OR_RETURN(std::vector<symbolic::Expr> b,
                       BroadcastShapes(c, {info.sizes, SizesOf(v)}));
      bool same = b.size() == info.sizes.size();
      for (size_t d = 0; same && d < b.size(); ++d) {
        ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(b[d], info.sizes[d])));
      }
      if (!same) {
        return c.Error(absl::StrCat(
            "output with shape ", ShapeString(info.sizes),
            " doesn't match the broadcast shape ", ShapeString(b)));
      }
    }
    if (!running) {
      RETURN_IF_ERROR(op.make(c, 1.0).status());  // its arguments' checks
      return ResultMeta(info);
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, info.sizes));
    int64_t numel = 1;
    for (int64_t n : cs) numel *= n;
    const double norm = reduction == 1 ? 1.0 / static_cast<double>(numel) : 1;
    ASSIGN_OR_RETURN(LossGradFn f, op.make(c, norm));
    const bool weight = operands.size() == 4;
    return ComputeN(
        c, info, operands,
        [f, weight](absl::Span<const double> v) {
          const double d = f(v[0], v[1], v[2]);
          return weight ? d * v[3] : d;
        },
        nullptr);
  };
  return r.Add(
      op.schema, [run](const OpCall& c) { return run(c, false); },
      [run](const OpCall& c) { return run(c, true); });
}

absl::StatusOr<LossGradFn> MseGrad(const OpCall&, double norm) {
  return LossGradFn(
      [norm](double g, double x, double t) { return 2 * norm * (x - t) * g; });
}

absl::StatusOr<LossGradFn> SmoothL1Grad(const OpCall& c, double norm) {
  ASSIGN_OR_RETURN(double beta, c.arg("beta").AsDouble());
  if (beta <= 0) {  // l1_loss_backward: sign(x - t)
    return LossGradFn([norm](double g, double x, double t) {
      const double d = x - t;
      return ((d > 0) - (d < 0)) * g * norm;
    });
  }
  return LossGradFn([norm, beta](double g, double x, double t) {
    const double d = x - t;
    if (d <= -beta) return -norm * g;
    if (d >= beta) return norm * g;
    return norm * d * g / beta;
  });
}

absl::StatusOr<LossGradFn> HuberGrad(const OpCall& c, double norm) {
  ASSIGN_OR_RETURN(double delta, c.arg("delta").AsDouble());
  return LossGradFn([norm, delta](double g, double x, double t) {
    const double d = x - t;
    if (d <= -delta) return -norm * g * delta;
    if (d >= delta) return norm * g * delta;
    return norm * d * g;
  });
}

absl::StatusOr<LossGradFn> BceGrad(const OpCall&, double norm) {
  return LossGradFn([norm](double g, double x, double t) {
    return g * (x - t) / std::max((1 - x) * x, 1e-12) * norm;
  });
}

const LossBackward kLossBackwards[] = {
    {"mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int "
     "reduction) -> Tensor",
     "mse_backward_cpu", MseGrad},
    {"smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
     "int reduction, float beta) -> Tensor",
     "smooth_l1_backward_cpu_out", SmoothL1Grad},
    {"huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int "
     "reduction, float delta) -> Tensor",
     "huber_backward_cpu_out", HuberGrad},
    {"binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor "
     "target, Tensor? weight=None, int reduction=1) -> Tensor",
     "binary_cross_entropy_backward", BceGrad, /*weighted=*/true},
};

// nll_loss_backward / nll_loss2d_backward (`spatial`: self [N, C, H, W],
// target [N, H, W]) (grad_output, self, target, weight, reduction,
// ignore_index, total_weight): zeros like self (contiguous) but, for each
// sample (position) whose target t is not ignore_index, -weight[t] times
// its gradient (grad_output at it unreduced; grad_output / total_weight for
// the mean, grad_output for the sum) at class t.
absl::StatusOr<Value> NllLossBackward(const OpCall& c, bool running,
                                      bool spatial) {
  const Value& grad = c.arg("grad_output");
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  const Value& total = c.arg("total_weight");
  ASSIGN_OR_RETURN(int64_t reduction, Reduction(c));
  ASSIGN_OR_RETURN(int64_t ignore, c.arg("ignore_index").AsInt());
  const int64_t rank = RankOf(self);
  if (spatial && (rank != 4 || RankOf(target) != 3)) {
    return c.Error(absl::StrCat(
        "only batches of spatial inputs and targets supported (4D and 3D "
        "tensors), but got input of size: ",
        ShapeString(SizesOf(self)),
        " and target of size: ", ShapeString(SizesOf(target))));
  }
  if (!spatial && (rank < 1 || rank > 2)) {
    return c.Error("input tensor should be 1D or 2D");
  }
  if (!spatial && RankOf(target) > 1) {
    return c.Error(
        "0D or 1D target tensor expected, multi-target not supported");
  }
  const DType dt = DTypeOf(self);
  if (!IsFloatingPoint(dt)) {
    return c.Error(
        absl::StrCat("\"nll_loss_backward_out_frame\" not "
                     "implemented for '",
                     ScalarTypeName(dt), "'"));
  }
  const DType tdt = DTypeOf(target);
  if (tdt != DType::kInt64 && tdt != DType::kUInt8) {
    return c.Error(
        absl::StrCat("expected target dtype to be Long or Byte, but got ",
                     ScalarTypeName(tdt)));
  }
  const std::vector<symbolic::Expr> in = SizesOf(self), ts = SizesOf(target);
  const bool batched = rank >= 2;
  if (spatial) {
    RETURN_IF_ERROR(CheckSpatialTarget(c, in, ts));
  } else if (batched) {
    ASSIGN_OR_RETURN(
        bool same,
        Decide(c, symbolic::Eq(in[0], ts.empty() ? symbolic::Int(1) : ts[0])));
    if (!same || ts.empty()) {
      return c.Error(absl::StrCat("size mismatch (got input: ", ShapeString(in),
                                  ", target: ", ShapeString(ts), ")"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, in));
  // Samples: n rows of `plane` positions each (1 but for the 2-d op).
  const int64_t n_classes = spatial ? cs[1] : cs.back(),
                n = batched ? cs[0] : 1, plane = spatial ? cs[2] * cs[3] : 1;
  ASSIGN_OR_RETURN(std::vector<int64_t> tw, ConcreteSizes(c, SizesOf(total)));
  int64_t tw_numel = 1;
  for (int64_t k : tw) tw_numel *= k;
  if (tw_numel != 1) {
    return c.Error(absl::StrCat(
        "expected total_weight to be a single element tensor, got: ",
        ShapeString(SizesOf(total)), " (", tw_numel, " elements)"));
  }
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ws,
                     ConcreteSizes(c, SizesOf(weight)));
    int64_t wn = 1;
    for (int64_t k : ws) wn *= k;
    if (wn != n_classes) {
      return c.Error(absl::StrCat(
          "weight tensor should be defined either for all ", n_classes,
          " classes or no classes but got weight tensor of shape: ",
          ShapeString(SizesOf(weight))));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> gs, ConcreteSizes(c, SizesOf(grad)));
  int64_t g_numel = 1;
  for (int64_t k : gs) g_numel *= k;
  const bool per_sample = reduction == 0 && batched;
  const bool grad_fits = !per_sample ? gs.size() <= 1 && g_numel == 1
                         : spatial   ? gs.size() == 3 && gs[0] == n &&
                                         gs[1] == cs[2] && gs[2] == cs[3]
                                   : gs.size() == 1 && gs[0] == n;
  if (!grad_fits) {
    return c.Error(absl::StrCat(
        per_sample ? "Expected a tensor of dimension 1 and tensor.size[0] == "
                   : "Expected a single element grad_output tensor, but got: ",
        per_sample
            ? absl::StrCat(n, " but got: dimension ", gs.size(),
                           " and tensor.size[0] == ", gs.empty() ? 0 : gs[0])
            : ShapeString(SizesOf(grad))));
  }
  OutInfo info{dt, dt, DeviceOf(self), in, {}};
  if (!running) return ResultMeta(info);
  RETURN_IF_ERROR(CheckResultElements(c, dt, cs));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(cs, dt));
  ForEachIndex(cs,
               [&](absl::Span<const int64_t> i) { StoreDouble(out, i, 0); });
  const double total_weight =
      LoadDouble(total.tensor, std::vector<int64_t>(tw.size(), 0));
  const int64_t width = spatial ? cs[3] : 1;
  for (int64_t i = 0; i < n * plane; ++i) {
    const int64_t row = i / plane, y = i % plane / width, x = i % width;
    const int64_t t = spatial      ? LoadInt(target.tensor, {row, y, x})
                      : ts.empty() ? LoadInt(target.tensor, {})
                                   : LoadInt(target.tensor, {row});
    if (t == ignore) continue;
    if (t < 0 || t >= n_classes) {
      return c.Error(TargetOutOfBounds(absl::StrCat(t)));
    }
    double g = !per_sample
                   ? LoadDouble(grad.tensor, std::vector<int64_t>(gs.size(), 0))
               : spatial ? LoadDouble(grad.tensor, {row, y, x})
                         : LoadDouble(grad.tensor, {row});
    if (reduction == 1 && !per_sample) g /= total_weight;
    const double w = weight.is_none() ? 1.0 : LoadDouble(weight.tensor, {t});
    const std::vector<int64_t> at = spatial ? std::vector<int64_t>{row, t, y, x}
                                    : batched ? std::vector<int64_t>{row, t}
                                              : std::vector<int64_t>{t};
    StoreDouble(out, at, -w * g);
  }
  return Value::OfTensor(out);
}

// ---- Attention's backward --------------------------------------------------

// _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query,
// key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale) ->
// (grad_query, grad_key, grad_value): with P = exp(q k^T * scale (+ mask,
// causal -inf above the diagonal) - logsumexp) the forward's probabilities,
// dV = P^T dO, dS = P * (dO v^T - rowsum(dO * out)), dQ = dS k * scale,
// dK = dS^T q * scale. Each gradient [B, H, T, E] is laid out as PyTorch's
// kernel allocates it: (B, T, H, E) in memory.
absl::StatusOr<Value> FlashAttentionBackward(const OpCall& c, bool running) {
  const Value& g = c.arg("grad_out");
  const Value& q = c.arg("query");
  const Value& k = c.arg("key");
  const Value& v = c.arg("value");
  const Value& o = c.arg("out");
  const Value& lse = c.arg("logsumexp");
  const Value& mask = c.arg("attn_mask");
  const char* kName = "scaled_dot_product_flash_attention_backward: ";
  ASSIGN_OR_RETURN(double dropout, c.arg("dropout_p").AsDouble());
  ASSIGN_OR_RETURN(bool causal, c.arg("is_causal").AsBool());
  if (dropout != 0) {
    return c.Error(absl::StrCat(kName,
                                "dropout_p must be 0 (lathe has no attention "
                                "dropout); got ",
                                dropout));
  }
  for (const Value* t : {&g, &q, &k, &v, &o}) {
    if (RankOf(*t) != 4) {
      return c.Error(absl::StrCat(
          kName, "Accept only 4 dims inputs shape of {B, H, T, K}"));
    }
  }
  const DType dt = DTypeOf(q);
  if (!IsFloatingPoint(dt) || DTypeOf(k) != dt || DTypeOf(v) != dt ||
      DTypeOf(g) != dt || DTypeOf(o) != dt) {
    return c.Error(absl::StrCat(kName,
                                "Expected grad_out, query, key, value and out "
                                "to have the same floating dtype"));
  }
  const std::vector<symbolic::Expr> qs = SizesOf(q), ks = SizesOf(k),
                                    vs = SizesOf(v);
  auto same = [&](const std::vector<symbolic::Expr>& a,
                  const std::vector<symbolic::Expr>& b,
                  std::initializer_list<int> dims) -> absl::StatusOr<bool> {
    for (int d : dims) {
      ASSIGN_OR_RETURN(bool eq, Decide(c, symbolic::Eq(a[d], b[d])));
      if (!eq) return false;
    }
    return true;
  };
  ASSIGN_OR_RETURN(bool kv_fit, same(ks, vs, {0, 1, 2, 3}));
  ASSIGN_OR_RETURN(bool qk_fit, same(qs, ks, {0, 1, 3}));
  ASSIGN_OR_RETURN(bool g_fit, same(SizesOf(g), qs, {0, 1, 2, 3}));
  ASSIGN_OR_RETURN(bool o_fit, same(SizesOf(o), qs, {0, 1, 2, 3}));
  if (!kv_fit || !qk_fit || !g_fit || !o_fit) {
    return c.Error(absl::StrCat(kName, "expected key and value ",
                                ShapeString(ks),
                                " and query, out "
                                "and grad_out ",
                                ShapeString(qs),
                                " to agree in batch, heads and head "
                                "size"));
  }
  if (RankOf(lse) != 3) {
    return c.Error(absl::StrCat(kName, "logsumexp must be [B, H, L], got ",
                                ShapeString(SizesOf(lse))));
  }
  ASSIGN_OR_RETURN(bool lse_fit, same(SizesOf(lse), qs, {0, 1, 2}));
  if (!lse_fit) {
    return c.Error(absl::StrCat(kName, "logsumexp must be [B, H, L], got ",
                                ShapeString(SizesOf(lse))));
  }
  RETURN_IF_ERROR(
      CheckAttentionMask(c, mask, dt, {qs[0], qs[1], qs[2], ks[2]}, kName));
  // (B, T, H, E) in memory: strides [T * H * E, E, H * E, 1].
  auto blhe = [](const std::vector<symbolic::Expr>& s) {
    return std::vector<symbolic::Expr>{symbolic::Mul({s[2], s[1], s[3]}), s[3],
                                       symbolic::Mul({s[1], s[3]}),
                                       symbolic::Int(1)};
  };
  std::vector<Value> outs;
  for (const std::vector<symbolic::Expr>* s : {&qs, &ks, &vs}) {
    ASSIGN_OR_RETURN(Value r,
                     ResultOrEmpty(c, running, dt, DeviceOf(q), *s, blhe(*s)));
    outs.push_back(std::move(r));
  }
  if (!running) return Value::List(std::move(outs));
  const std::vector<int64_t>& shape = q.tensor.sizes();
  const int64_t B = shape[0], H = shape[1], L = shape[2], E = shape[3];
  const int64_t S = k.tensor.sizes()[2];
  double scale = 1.0 / std::sqrt(static_cast<double>(E));
  if (!c.arg("scale").is_none()) {
    ASSIGN_OR_RETURN(scale, c.arg("scale").AsDouble());
  }
  Tensor mask_view;
  if (!mask.is_none()) {
    ASSIGN_OR_RETURN(mask_view, BroadcastView(mask.tensor, {B, H, L, S}));
  }
  AttentionProblem a = {.B = B,
                        .H = H,
                        .L = L,
                        .S = S,
                        .E = E,
                        .scale = scale,
                        .causal = causal,
                        .q = RowMajorValues(q.tensor),
                        .k = RowMajorValues(k.tensor),
                        .v = RowMajorValues(v.tensor),
                        .grad = RowMajorValues(g.tensor),
                        .out = RowMajorValues(o.tensor),
                        .lse = RowMajorValues(lse.tensor),
                        .mask = mask.is_none() ? nullptr : &mask_view};
  const AttentionGrads grads = AttentionBackward(a, /*scores=*/false);
  WriteRowMajor(outs[0].tensor, grads.dq);
  WriteRowMajor(outs[1].tensor, grads.dk);
  WriteRowMajor(outs[2].tensor, grads.dv);
  return Value::List(std::move(outs));
}

// An index tensor's check (int64 or int32, one dim), with `name` in the
// message.
absl::Status Need1dIndices(const OpCall& c, const Value& v,
                           absl::string_view name) {
  DType d = DTypeOf(v);
  if ((d != DType::kInt64 && d != DType::kInt32) || RankOf(v) != 1) {
    return c.Error(absl::StrCat("expected ", name,
                                " to be a 1-d int64 or int32 tensor, got ",
                                ScalarTypeName(d), ShapeString(SizesOf(v))));
  }
  return absl::OkStatus();
}

// The bag of each of the n indices: offset2bag where the forward made it,
// else (its fast sum path leaves it empty) PyTorch's make_offset2bag: the
// number of offsets[1:] at or before the index. A bag past the gradient's
// `bags` rows (an index after the last offset, with include_last_offset)
// is an error, where PyTorch's kernel reads past grad.
absl::StatusOr<std::vector<int64_t>> BagsOfIndices(const OpCall& c,
                                                   const Tensor& offset2bag,
                                                   const Tensor& offsets,
                                                   int64_t n, int64_t bags) {
  std::vector<int64_t> bag;
  if (n == 0 || offset2bag.numel() != 0) {
    bag = IntElements(offset2bag);
    if (static_cast<int64_t>(bag.size()) != n) {
      return c.Error(absl::StrCat("expected offset2bag to have ", n,
                                  " elements (one per index), got ",
                                  bag.size()));
    }
  } else {
    std::vector<int64_t> off = IntElements(offsets);
    std::vector<int64_t> marks(n + 1, 0);
    for (size_t b = 1; b < off.size(); ++b) {
      if (off[b] < 0 || off[b] > n) {
        return c.Error(absl::StrCat("offsets[", b, "] is ", off[b],
                                    ", outside [0, ", n, "]"));
      }
      ++marks[off[b]];
    }
    bag.resize(n);
    for (int64_t i = 0, acc = 0; i < n; ++i) bag[i] = acc += marks[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    if (bag[i] < 0 || bag[i] >= bags) {
      return c.Error(absl::StrCat("index ", i, " is in bag ", bag[i],
                                  ", but the gradient has ", bags, " bags"));
    }
  }
  return bag;
}

// _embedding_bag_backward (the dense gradient; sparse=True is refused):
// each index's weight row receives its bag's gradient row, divided by the
// bag's size for mean (when not 0, as PyTorch) and by the index's count
// with scale_grad_by_freq (bag_size is read in mean and max modes only),
// times its per_sample_weight, except padding_idx's; for max, each bag's
// gradient goes to the row that held the maximum (max_indices), empty bags
// (bag_size 0) to none.
absl::StatusOr<Value> EmbeddingBagBackward(const OpCall& c, bool running) {
  const Value& grad = c.arg("grad");
  const Value& indices = c.arg("indices");
  const Value& offsets = c.arg("offsets");
  const Value& psw = c.arg("per_sample_weights");
  const Value& nw = c.arg("num_weights");
  ASSIGN_OR_RETURN(bool scale, c.arg("scale_grad_by_freq").AsBool());
  ASSIGN_OR_RETURN(int64_t mode, c.arg("mode").AsInt());
  ASSIGN_OR_RETURN(bool sparse, c.arg("sparse").AsBool());
  ASSIGN_OR_RETURN(int64_t padding_idx, c.arg("padding_idx").AsInt());
  if (sparse) {
    return c.Error(
        "sparse=True makes a sparse gradient; lathe has no sparse tensors");
  }
  if (mode < 0 || mode > 2) return c.Error("`mode` must be sum, mean, or max");
  if (!psw.is_none() && mode != 0) {
    return c.Error(
        "embedding_bag_backward: per_sample_weights only supported for "
        "mode='sum'");
  }
  if (!IsFloatingPoint(DTypeOf(grad)) || RankOf(grad) != 2) {
    return c.Error(absl::StrCat("expected a 2-d floating-point grad, got ",
                                ScalarTypeName(DTypeOf(grad)),
                                ShapeString(SizesOf(grad))));
  }
  RETURN_IF_ERROR(Need1dIndices(c, indices, "indices"));
  RETURN_IF_ERROR(Need1dIndices(c, offsets, "offsets"));
  if (!nw.is_number()) return c.Error("num_weights must be an int");
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, DTypeOf(grad), DeviceOf(grad),
                                 {nw.number, SizesOf(grad)[1]}));
  if (!running) return out;
  const int64_t bags = grad.tensor.sizes()[0], dim = grad.tensor.sizes()[1];
  const int64_t rows = out.tensor.sizes()[0];
  std::vector<double> g = RowMajorValues(grad.tensor);
  std::vector<int64_t> bag_size = IntElements(c.arg("bag_size").tensor);
  if (mode != 0 && static_cast<int64_t>(bag_size.size()) != bags) {
    return c.Error(absl::StrCat("expected bag_size to have ", bags,
                                " elements (one per bag), got ",
                                bag_size.size()));
  }
  std::vector<double> gw(rows * dim, 0.0);
  auto row = [&](int64_t i) -> absl::Status {
    if (i < 0 || i >= rows) {
      return c.Error(absl::StrCat("index ", i, " is out of bounds for ",
                                  "num_weights ", rows));
    }
    return absl::OkStatus();
  };
  if (mode == 2) {
    const Tensor& mi = c.arg("maximum_indices").tensor;
    if (mi.dim() != 2 || mi.sizes()[0] != bags || mi.sizes()[1] != dim) {
      return c.Error(absl::StrCat(
          "expected maximum_indices of size [", bags, ", ", dim, "], got ",
          ShapeString(SizesOf(c.arg("maximum_indices")))));
    }
    std::vector<int64_t> m = IntElements(mi);
    for (int64_t b = 0; b < bags; ++b) {
      if (bag_size[b] == 0) continue;
      for (int64_t d = 0; d < dim; ++d) {
        int64_t i = m[b * dim + d];
        RETURN_IF_ERROR(row(i));
        gw[i * dim + d] += g[b * dim + d];
      }
    }
    WriteRowMajor(out.tensor, gw);
    return out;
  }
  std::vector<int64_t> ix = IntElements(indices.tensor);
  const int64_t n = static_cast<int64_t>(ix.size());
  ASSIGN_OR_RETURN(
      std::vector<int64_t> bag,
      BagsOfIndices(c, c.arg("offset2bag").tensor, offsets.tensor, n, bags));
  std::vector<double> pw =
      psw.is_none() ? std::vector<double>(n, 1.0) : RowMajorValues(psw.tensor);
  if (static_cast<int64_t>(pw.size()) != n) {
    return c.Error(absl::StrCat("expected per_sample_weights to have ", n,
                                " elements, got ", pw.size()));
  }
  std::vector<int64_t> counts(rows, 0);
  for (int64_t i : ix) {
    RETURN_IF_ERROR(row(i));
    ++counts[i];
  }
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = ix[k], b = bag[k];
    if (i == padding_idx) continue;
    double f = pw[k];
    if (mode == 1 && bag_size[b] != 0) f /= static_cast<double>(bag_size[b]);
    if (scale) f /= static_cast<double>(counts[i]);
    for (int64_t d = 0; d < dim; ++d) gw[i * dim + d] += g[b * dim + d] * f;
  }
  WriteRowMajor(out.tensor, gw);
  return out;
}

// _embedding_bag_per_sample_weights_backward (sum mode): each index's
// gradient is the dot product of its bag's gradient row and its weight row
// (0 for padding_idx).
absl::StatusOr<Value> EmbeddingBagPerSampleWeightsBackward(const OpCall& c,
                                                           bool running) {
  const Value& grad = c.arg("grad");
  const Value& weight = c.arg("weight");
  const Value& indices = c.arg("indices");
  const Value& offsets = c.arg("offsets");
  ASSIGN_OR_RETURN(int64_t mode, c.arg("mode").AsInt());
  ASSIGN_OR_RETURN(int64_t padding_idx, c.arg("padding_idx").AsInt());
  if (mode != 0) {
    return c.Error(
        "embedding_bag_backward: per_sample_weights only supported for "
        "mode='sum'");
  }
  if (!IsFloatingPoint(DTypeOf(grad)) || RankOf(grad) != 2 ||
      RankOf(weight) != 2) {
    return c.Error(absl::StrCat(
        "expected a 2-d floating-point grad and a 2-d weight, got ",
        ScalarTypeName(DTypeOf(grad)), ShapeString(SizesOf(grad)), " and ",
        ShapeString(SizesOf(weight))));
  }
  RETURN_IF_ERROR(Need1dIndices(c, indices, "indices"));
  RETURN_IF_ERROR(Need1dIndices(c, offsets, "offsets"));
  ASSIGN_OR_RETURN(
      bool same, Decide(c, symbolic::Eq(SizesOf(weight)[1], SizesOf(grad)[1])));
  if (!same) {
    return c.Error(
        absl::StrCat("expected weight's rows (", ShapeString(SizesOf(weight)),
                     ") as long as grad's (", ShapeString(SizesOf(grad)), ")"));
  }
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, DTypeOf(grad), DeviceOf(grad),
                                 {SizesOf(indices)[0]}));
  if (!running) return out;
  const int64_t bags = grad.tensor.sizes()[0], dim = grad.tensor.sizes()[1];
  const int64_t rows = weight.tensor.sizes()[0];
  std::vector<double> g = RowMajorValues(grad.tensor);
  std::vector<double> w = RowMajorValues(weight.tensor);
  std::vector<int64_t> ix = IntElements(indices.tensor);
  const int64_t n = static_cast<int64_t>(ix.size());
  ASSIGN_OR_RETURN(
      std::vector<int64_t> bag,
      BagsOfIndices(c, c.arg("offset2bag").tensor, offsets.tensor, n, bags));
  std::vector<double> y(n, 0.0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = ix[k];
    if (i < 0 || i >= rows) {
      return c.Error(absl::StrCat("index ", i, " is out of bounds for a ",
                                  "weight of ", rows, " rows"));
    }
    if (i == padding_idx) continue;
    for (int64_t d = 0; d < dim; ++d) {
      y[k] += g[bag[k] * dim + d] * w[i * dim + d];
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

}  // namespace

absl::Status RegisterBackwardOps(OpRegistry& r) {
  for (const ActivationBackward& op : kActivationBackwards) {
    RETURN_IF_ERROR(RegisterActivationBackward(r, op));
  }
  for (bool log : {false, true}) {
    RETURN_IF_ERROR(r.Add(
        log ? "_log_softmax_backward_data(Tensor grad_output, Tensor output, "
              "int dim, ScalarType input_dtype) -> Tensor"
            : "_softmax_backward_data(Tensor grad_output, Tensor output, int "
              "dim, ScalarType input_dtype) -> Tensor",
        [log](const OpCall& c) { return SoftmaxBackward(c, log, false); },
        [log](const OpCall& c) { return SoftmaxBackward(c, log, true); }));
  }
  for (const LossBackward& op : kLossBackwards) {
    RETURN_IF_ERROR(RegisterLossBackward(r, op));
  }
  RETURN_IF_ERROR(r.Add(
      "_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, "
      "Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, "
      "float dropout_p, bool is_causal, *, Tensor? attn_mask=None, float? "
      "scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
      [](const OpCall& c) { return FlashAttentionBackward(c, false); },
      [](const OpCall& c) { return FlashAttentionBackward(c, true); }));
  for (bool spatial : {false, true}) {
    RETURN_IF_ERROR(r.Add(
        absl::StrCat(spatial ? "nll_loss2d_backward" : "nll_loss_backward",
                     "(Tensor grad_output, Tensor self, Tensor target, Tensor? "
                     "weight, int reduction, SymInt ignore_index, Tensor "
                     "total_weight) -> Tensor"),
        [spatial](const OpCall& c) {
          return NllLossBackward(c, false, spatial);
        },
        [spatial](const OpCall& c) {
          return NllLossBackward(c, true, spatial);
        }));
  }
  RETURN_IF_ERROR(r.Add(
      "_embedding_bag_backward(Tensor grad, Tensor indices, Tensor offsets, "
      "Tensor offset2bag, Tensor bag_size, Tensor maximum_indices, SymInt "
      "num_weights, bool scale_grad_by_freq, int mode, bool sparse, Tensor? "
      "per_sample_weights, int padding_idx=-1) -> Tensor",
      [](const OpCall& c) { return EmbeddingBagBackward(c, false); },
      [](const OpCall& c) { return EmbeddingBagBackward(c, true); }));
  RETURN_IF_ERROR(r.Add(
      "_embedding_bag_per_sample_weights_backward(Tensor grad, Tensor weight, "
      "Tensor indices, Tensor offsets, Tensor offset2bag, int mode, int "
      "padding_idx=-1) -> Tensor",
      [](const OpCall& c) {
        return EmbeddingBagPerSampleWeightsBackward(c, false);
      },
      [](const OpCall& c) {
        return EmbeddingBagPerSampleWeightsBackward(c, true);
      }));
  return absl::OkStatus();
}

}  // namespace lathe::ir
