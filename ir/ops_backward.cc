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
//     smooth_l1, huber, binary_cross_entropy): contiguous results.
// Each computes in double and rounds once to the result's dtype.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
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

}  // namespace

absl::Status RegisterBackwardOps(OpRegistry& r) {
  for (const ActivationBackward& op : kActivationBackwards) {
    RETURN_IF_ERROR(RegisterActivationBackward(r, op));
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir
