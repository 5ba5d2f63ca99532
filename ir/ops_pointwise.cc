// Pointwise ops: unary math (exp2, square, isfinite, nan_to_num among them),
// binary arithmetic and comparisons (Tensor and Scalar overloads; rsub,
// hypot, copysign, the shifts, fmax/fmin, floor_divide, true_divide), where
// (and its Scalar overloads), activations with Scalar parameters (elu,
// hardtanh, leaky_relu, hardsigmoid, softplus) and atan2's out= variant. Every
// op registered here is marked pointwise; their in-place twins (add_, abs_,
// eq_.Scalar, ...) are all derived from the functional ops by
// RegisterInplaceTwins (ops_extra.cc). Each op infers its output dtype and
// broadcast shape once; the meta function returns that as metadata and the
// kernel computes elements in the op's math type (double for floats, exact
// wrapping int64 for integers), rounding to the output dtype as PyTorch does.

#include "ir/ops_pointwise.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using DoubleFn = std::function<double(double, double)>;
using IntFn = std::function<absl::StatusOr<int64_t>(int64_t, int64_t)>;

// A unary op's result info: self's shape and layout rule, `dtype`.
OutInfo SameShape(const OpCall& c, DType dtype) {
  OutInfo info{
      dtype, DTypeOf(c.arg(0)), DeviceOf(c.arg(0)), SizesOf(c.arg(0)), {}};
  info.strides = PointwiseStrides(c.env(), {c.arg(0)}, info.sizes);
  return info;
}

}  // namespace

// The result's metadata.
Value ResultMeta(const OutInfo& info) {
  TensorMeta m;
  m.dtype = info.dtype;
  m.device = info.device;
  m.sizes = info.sizes;
  m.strides =
      info.strides.empty() ? ContiguousStrides(info.sizes) : info.strides;
  return Value::OfMeta(m);
}

namespace {

// An input as PyTorch's CPU TensorIterator sees it when its dtype is not
// the common one: converted with .to(common) (preserve_format) first, so
// laid out as empty_like(input).
Value AsPromoted(symbolic::ShapeEnv* env, const Value& v, DType common) {
  if (!v.is_tensor() || DTypeOf(v) == common) return v;
  TensorMeta m;
  m.dtype = common;
  m.device = DeviceOf(v);
  m.sizes = SizesOf(v);
  m.strides = EmptyLikeStrides(env, v);
  m.storage_offset = symbolic::Int(0);
  return Value::OfMeta(m);
}

std::vector<Value> AsPromoted(symbolic::ShapeEnv* env,
                              const std::vector<Value>& operands,
                              DType common) {
  std::vector<Value> out;
  for (const Value& v : operands) out.push_back(AsPromoted(env, v, common));
  return out;
}

}  // namespace

absl::StatusOr<OutInfo> Infer(const OpCall& call, std::vector<Value> operands,
                              bool float_result, bool bool_result) {
  ASSIGN_OR_RETURN(DType common, ResultType(operands));
  OutInfo info;
  info.compute = common;
  if (float_result && !IsFloatingPoint(common)) info.compute = DType::kFloat32;
  info.dtype = bool_result ? DType::kBool : info.compute;
  std::vector<std::vector<symbolic::Expr>> shapes;
  info.device = Device::Cpu();
  bool have_device = false;
  for (const Value& v : operands) {
    if (!v.is_tensor()) continue;
    shapes.push_back(SizesOf(v));
    Device d = DeviceOf(v);
    if (have_device && d != info.device && RankOf(v) > 0) {
      return call.Error(absl::StrCat(
          "Expected all tensors to be on the same device, but found ",
          info.device.ToString(), " and ", d.ToString()));
    }
    if (!have_device || RankOf(v) > 0) {
      info.device = d;
      have_device = true;
    }
  }
  ASSIGN_OR_RETURN(info.sizes, BroadcastShapes(call, shapes));
  info.strides = PointwiseStrides(
      call.env(), AsPromoted(call.env(), operands, info.compute), info.sizes);
  return info;
}

// Evaluates `fd` (or `fi` on integer math types) elementwise over broadcast
// operands into a new tensor.
absl::StatusOr<Value> ComputeN(const OpCall& call, const OutInfo& info,
                               const std::vector<Value>& operands,
                               const DoubleNFn& fd, const IntNFn& fi) {
  DoubleRowFn rows = [&fd](absl::Span<const double* const> in, int64_t n,
                           double* out) {
    std::vector<double> d(in.size());
    for (int64_t j = 0; j < n; ++j) {
      for (size_t k = 0; k < in.size(); ++k) d[k] = in[k][j];
      out[j] = fd(d);
    }
  };
  return ComputeRows(call, info, operands, rows, fi);
}

absl::StatusOr<Value> ComputeRows(const OpCall& call, const OutInfo& info,
                                  const std::vector<Value>& operands,
                                  const DoubleRowFn& fd, const IntNFn& fi) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(call, info.sizes));
  std::vector<symbolic::Expr> st =
      info.strides.empty() ? ContiguousStrides(info.sizes) : info.strides;
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, ConcreteSizes(call, st));
  RETURN_IF_ERROR(CheckResultElements(call, info.dtype, sizes));
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::EmptyStrided(sizes, strides, info.dtype));
  std::vector<Tensor> views;
  for (const Value& v : operands) {
    Tensor t;
    if (v.is_tensor()) {
      t = v.tensor;
    } else {
      ASSIGN_OR_RETURN(t, ScalarTensor(v, info.compute));
    }
    ASSIGN_OR_RETURN(Tensor view, BroadcastView(t, sizes));
    views.push_back(view);
  }
  bool ints = IsIntegral(info.compute, /*include_bool=*/true) && fi != nullptr;
  absl::Status status;
  const size_t m = views.size();
  std::vector<int64_t> n(m);
  // A row of the last dimension at a time, each operand stepped by its
  // stride (the element values and conversions of LoadDouble/StoreDouble).
  std::vector<const Tensor*> tensors;
  std::vector<ElementAccess> access;
  std::vector<int64_t> step;
  for (const Tensor& v : views) {
    tensors.push_back(&v);
    access.emplace_back(v);
    step.push_back(v.dim() == 0 ? 0 : v.strides().back());
  }
  tensors.push_back(&out);
  const ElementAccess result(out);
  const int64_t out_step = out.dim() == 0 ? 0 : out.strides().back();
  // Floating-point rows go through fd in runs of up to kRun elements, each
  // operand's run loaded as doubles first (out is new: nothing it writes
  // is read).
  constexpr int64_t kRun = 256;
  std::vector<double> runs((m + 1) * kRun);
  std::vector<const double*> in(m);
  for (size_t k = 0; k < m; ++k) in[k] = runs.data() + k * kRun;
  double* run_out = runs.data() + m * kRun;
  ForEachRow(sizes, tensors,
             [&](absl::Span<const int64_t> starts, int64_t len) {
               if (!ints) {
                 for (int64_t j0 = 0; j0 < len; j0 += kRun) {
                   const int64_t r = std::min(kRun, len - j0);
                   for (size_t k = 0; k < m; ++k) {
                     access[k].LoadDoubles(starts[k] + j0 * step[k], step[k], r,
                                           runs.data() + k * kRun);
                   }
                   fd(in, r, run_out);
                   result.StoreDoubles(starts[m] + j0 * out_step, out_step, r,
                                       run_out);
                 }
                 return;
               }
               for (int64_t j = 0; j < len && status.ok(); ++j) {
                 for (size_t k = 0; k < m; ++k) {
                   n[k] = access[k].LoadInt(starts[k] + j * step[k]);
                 }
                 absl::StatusOr<int64_t> r = fi(n);
                 if (!r.ok()) {
                   status = call.Error(r.status().message());
                   return;
                 }
                 result.StoreInt(starts[m] + j * out_step, *r);
               }
             });
  RETURN_IF_ERROR(status);
  return Value::OfTensor(out);
}

namespace {

// ComputeRows for unary and binary element functions, the floating-point
// one over runs of elements.
absl::StatusOr<Value> ComputeRuns(const OpCall& call, const OutInfo& info,
                                  const std::vector<Value>& operands,
                                  const DoubleRowFn& fd, const IntFn& fi) {
  IntNFn fin = nullptr;
  if (fi != nullptr) {
    fin = [fi](absl::Span<const int64_t> a) {
      return fi(a[0], a.size() > 1 ? a[1] : 0);
    };
  }
  return ComputeRows(call, info, operands, fd, fin);
}

// ComputeRuns with an element function.
absl::StatusOr<Value> Compute(const OpCall& call, const OutInfo& info,
                              const std::vector<Value>& operands,
                              const DoubleFn& fd, const IntFn& fi) {
  DoubleRowFn rows = [&fd](absl::Span<const double* const> in, int64_t n,
                           double* out) {
    if (in.size() == 1) {
      for (int64_t j = 0; j < n; ++j) out[j] = fd(in[0][j], 0);
    } else {
      for (int64_t j = 0; j < n; ++j) out[j] = fd(in[0][j], in[1][j]);
    }
  };
  return ComputeRuns(call, info, operands, rows, fi);
}

// A run function of a binary `op` inlined into its loop (no call per
// element).
template <typename Op>
DoubleRowFn BinaryRuns(Op op) {
  return [op](absl::Span<const double* const> in, int64_t n, double* out) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(in[0][j], in[1][j]);
  };
}

uint64_t U(int64_t v) { return static_cast<uint64_t>(v); }

// ---- Unary -----------------------------------------------------------------

struct Unary {
  const char* name;
  bool float_result;  // ints are promoted to float first (exp, sin, ...)
  double (*fd)(double);
  int64_t (*fi)(int64_t);  // null: float-only
  bool bool_result = false;
};

// PyTorch's refusal of a bool input, for the unary ops that refuse one.
const char* BoolError(absl::string_view op) {
  if (op == "abs") return "\"abs_cpu\" not implemented for 'Bool'";
  if (op == "neg") {
    return "Negation, the `-` operator, on a bool tensor is not supported. If "
           "you are trying to invert a mask, use the `~` or `logical_not()` "
           "operator instead.";
  }
  if (op == "relu") return "Boolean inputs not supported for relu";
  if (op == "silu") return "\"silu_cpu\" not implemented for 'Bool'";
  if (op == "floor") return "\"floor_vml_cpu\" not implemented for 'Bool'";
  if (op == "ceil") return "\"ceil_vml_cpu\" not implemented for 'Bool'";
  if (op == "trunc") return "\"trunc_vml_cpu\" not implemented for 'Bool'";
  if (op == "round") return "\"round_vml_cpu\" not implemented for 'Bool'";
  return nullptr;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
double Silu(double x) { return x * Sigmoid(x); }
double Rsqrt(double x) { return 1.0 / std::sqrt(x); }
double Reciprocal(double x) { return 1.0 / x; }
double Sign(double x) { return (x > 0) - (x < 0); }  // sign(NaN) is 0
double RoundHalfEven(double x) { return std::nearbyint(x); }

const Unary kUnary[] = {
    {"abs", false, [](double x) { return std::fabs(x); },
     [](int64_t x) -> int64_t {
       return x < 0 ? static_cast<int64_t>(0 - U(x)) : x;
     }},
    {"neg", false, [](double x) { return -x; },
     [](int64_t x) -> int64_t { return static_cast<int64_t>(0 - U(x)); }},
    {"relu", false, Relu, [](int64_t x) -> int64_t { return x > 0 ? x : 0; }},
    {"exp", true, [](double x) { return std::exp(x); }, nullptr},
    {"expm1", true, [](double x) { return std::expm1(x); }, nullptr},
    {"log", true, [](double x) { return std::log(x); }, nullptr},
    {"log1p", true, [](double x) { return std::log1p(x); }, nullptr},
    {"sqrt", true, [](double x) { return std::sqrt(x); }, nullptr},
    {"rsqrt", true, Rsqrt, nullptr},
    {"sin", true, [](double x) { return std::sin(x); }, nullptr},
    {"cos", true, [](double x) { return std::cos(x); }, nullptr},
    {"tanh", true, [](double x) { return std::tanh(x); }, nullptr},
    {"sigmoid", true, Sigmoid, nullptr},
    {"silu", true, Silu, nullptr},
    {"erf", true, [](double x) { return std::erf(x); }, nullptr},
    {"reciprocal", true, Reciprocal, nullptr},
    {"floor", false, [](double x) { return std::floor(x); },
     [](int64_t x) { return x; }},
    {"ceil", false, [](double x) { return std::ceil(x); },
     [](int64_t x) { return x; }},
    {"trunc", false, [](double x) { return std::trunc(x); },
     [](int64_t x) { return x; }},
    {"logical_not", false, [](double x) -> double { return x == 0; },
     [](int64_t x) -> int64_t { return x == 0; }, /*bool_result=*/true},
    {"round", false, RoundHalfEven, [](int64_t x) { return x; }},
    {"sign", false, Sign,
     [](int64_t x) -> int64_t { return (x > 0) - (x < 0); }},
    // sgn is sign for real numbers (x / |x| for complex, which lathe lacks).
    {"sgn", false, Sign,
     [](int64_t x) -> int64_t { return (x > 0) - (x < 0); }},
    {"acos", true, [](double x) { return std::acos(x); }, nullptr},
    {"acosh", true, [](double x) { return std::acosh(x); }, nullptr},
    {"asin", true, [](double x) { return std::asin(x); }, nullptr},
    {"asinh", true, [](double x) { return std::asinh(x); }, nullptr},
    {"atan", true, [](double x) { return std::atan(x); }, nullptr},
    {"atanh", true, [](double x) { return std::atanh(x); }, nullptr},
    {"cosh", true, [](double x) { return std::cosh(x); }, nullptr},
    {"sinh", true, [](double x) { return std::sinh(x); }, nullptr},
    {"tan", true, [](double x) { return std::tan(x); }, nullptr},
    {"log10", true, [](double x) { return std::log10(x); }, nullptr},
    {"log2", true, [](double x) { return std::log2(x); }, nullptr},
    {"exp2", true, [](double x) { return std::exp2(x); }, nullptr},
};

absl::Status RegisterUnary(OpRegistry& r, const Unary& u) {
  std::string schema = absl::StrCat(u.name, "(Tensor self) -> Tensor");
  const char* bool_error = BoolError(u.name);
  auto infer = [u, bool_error](const OpCall& c) -> absl::StatusOr<OutInfo> {
    if (bool_error != nullptr && DTypeOf(c.arg(0)) == DType::kBool) {
      return c.Error(bool_error);
    }
    if (absl::string_view(u.name) == "silu" &&
        !IsFloatingPoint(DTypeOf(c.arg(0)))) {  // no promotion of integers
      return c.Error(absl::StrCat("\"silu_cpu\" not implemented for '",
                                  ScalarTypeName(DTypeOf(c.arg(0))), "'"));
    }
    return Infer(c, {c.arg(0)}, u.float_result, u.bool_result);
  };
  OpFn meta = [infer](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, infer(c));
    return ResultMeta(info);
  };
  OpFn kernel = [u, infer](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, infer(c));
    IntFn fi = nullptr;
    if (u.fi != nullptr) {
      auto f = u.fi;
      fi = [f](int64_t a, int64_t) -> absl::StatusOr<int64_t> { return f(a); };
    }
    auto f = u.fd;
    DoubleRowFn rows = [f](absl::Span<const double* const> in, int64_t n,
                           double* out) {
      for (int64_t j = 0; j < n; ++j) out[j] = f(in[0][j]);
    };
    return ComputeRuns(c, info, {c.arg(0)}, rows, fi);
  };
  return r.Add(schema, meta, kernel);
}

// ---- Binary ----------------------------------------------------------------

enum class Div { kTrue, kTrunc, kFloor };

absl::StatusOr<int64_t> IntDiv(int64_t a, int64_t b, Div mode) {
  if (b == 0) return absl::InvalidArgumentError("ZeroDivisionError");
  if (a == INT64_MIN && b == -1) return a;  // wraps
  int64_t q = a / b;
  if (mode == Div::kFloor && (a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// a / b rounded as `mode` says, computed in T as PyTorch's kernels do (a
// float32 quotient truncated or floored in float32: 1.0f / 0.1f truncates
// to 10, where the quotient in double would give 9).
template <typename T>
T FloatDiv(T a, T b, Div mode) {
  T q = a / b;
  if (mode == Div::kTrunc) return std::trunc(q);
  if (mode == Div::kFloor) {
    // Python's float floor division: floor of the exact quotient.
    if (b == 0) return q;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    T floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
    return div != 0 ? floordiv : std::copysign(T(0), a / b);
  }
  return q;
}

// self OP other (* alpha); also the base of the in-place variant.
// A Python number operand of add, sub, mul or div on a float16/bfloat16
// tensor: PyTorch's CPU kernels use it at the float32 precision they compute
// in (`original_scalar_value<opmath_t>`), not rounded to the tensor's dtype.
Value OpmathScalar(const OutInfo& info, absl::string_view op, const Value& v) {
  if (v.is_tensor() || !v.is_number() ||
      (info.compute != DType::kFloat16 && info.compute != DType::kBFloat16) ||
      (op != "add" && op != "sub" && op != "mul" && op != "div")) {
    return v;
  }
  absl::StatusOr<Tensor> t = ScalarTensor(v, DType::kFloat32);
  return t.ok() ? Value::OfTensor(*t) : v;
}

absl::StatusOr<Value> BinaryKernel(const OpCall& c, const std::string& op,
                                   const OutInfo& info, const Value& self,
                                   const Value& other, const Value& alpha) {
  double alpha_d = 1;
  int64_t alpha_i = 1;
  if (!alpha.is_none()) {
    if (IsIntegral(info.compute, true) && !alpha.number.is_int() &&
        !alpha.number.is_bool()) {
      return c.Error(
          "For integral input tensors, argument alpha must not be a floating "
          "point number.");
    }
    ASSIGN_OR_RETURN(alpha_d, alpha.AsDouble());
    if (alpha.number.is_int()) {
      ASSIGN_OR_RETURN(alpha_i, alpha.AsInt());
    }
  }
  DoubleFn fd;
  IntFn fi;
  if (op == "add" || op == "sub") {
    double sign = op == "add" ? 1 : -1;
    fd = [=](double a, double b) { return a + sign * alpha_d * b; };
    fi = [=](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      uint64_t t = U(alpha_i) * U(b);
      return static_cast<int64_t>(op == "add" ? U(a) + t : U(a) - t);
    };
  } else if (op == "mul") {
    fd = [](double a, double b) { return a * b; };
    fi = [](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      if (a == 0 || b == 0) return 0;
      return static_cast<int64_t>(U(a) * U(b));
    };
  } else if (op == "maximum" || op == "minimum") {
    bool mx = op == "maximum";
    fd = [mx](double a, double b) {
      if (std::isnan(a) || std::isnan(b)) return std::nan("");
      return mx ? std::max(a, b) : std::min(a, b);
    };
    fi = [mx](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      return mx ? std::max(a, b) : std::min(a, b);
    };
  } else if (op == "fmax" || op == "fmin") {  // NaN only when both are
    bool mx = op == "fmax";
    fd = [mx](double a, double b) {
      if (std::isnan(a)) return b;
      if (std::isnan(b)) return a;
      return mx ? std::max(a, b) : std::min(a, b);
    };
    fi = [mx](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      return mx ? std::max(a, b) : std::min(a, b);
    };
  } else if (op == "pow") {
    // A Scalar exponent of +-0.5 is sqrt / rsqrt in PyTorch (pow(-inf, 0.5)
    // is NaN, not inf).
    bool scalar_exponent = !other.is_tensor();
    fd = [scalar_exponent](double a, double b) {
      if (scalar_exponent && b == 0.5) return std::sqrt(a);
      if (scalar_exponent && b == -0.5) return 1.0 / std::sqrt(a);
      return std::pow(a, b);
    };
    fi = [](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      if (b < 0) {  // Tensor_Scalar refuses these up front
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? 1 : -1;
        return 0;
      }
      uint64_t r = 1, base = U(a);
      for (int64_t e = b; e > 0; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
      }
      return static_cast<int64_t>(r);
    };
  } else if (op == "remainder" || op == "fmod") {
    bool python = op == "remainder";  // the result takes the divisor's sign
    fd = [python](double a, double b) {
      double m = std::fmod(a, b);
      if (python && m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    };
    fi = [python](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      if (b == 0) return absl::InvalidArgumentError("ZeroDivisionError");
      if (b == -1) return 0;  // also INT64_MIN % -1
      int64_t m = a % b;
      if (python && m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    };
  } else if (op == "atan2") {
    fd = [](double a, double b) { return std::atan2(a, b); };
  } else if (op == "hypot") {
    fd = [](double a, double b) { return std::hypot(a, b); };
  } else if (op == "copysign") {
    fd = [](double a, double b) { return std::copysign(a, b); };
  } else if (op == "lshift" || op == "rshift") {
    // PyTorch's shifts in the operands' width: a shift by a negative amount
    // or by the width or more gives 0 (left) or the sign fill (right).
    bool left = op == "lshift";
    bool is_signed = info.compute != DType::kUInt8;
    int64_t bits = ItemSize(info.compute) * 8;
    fd = [](double, double) { return std::nan(""); };  // unreachable: ints only
    fi = [=](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      if (left) {
        if (b < 0 || b >= bits) return 0;
        return static_cast<int64_t>(U(a) << b);
      }
      int64_t max_shift = bits - (is_signed ? 1 : 0);
      if (b < 0 || b >= max_shift) return a >> max_shift;
      return a >> b;
    };
  } else if (op == "logical_and" || op == "logical_or" || op == "logical_xor") {
    char k = op[8];  // a, o, x
    fd = [k](double a, double b) -> double {
      return k == 'a'   ? (a != 0 && b != 0)
             : k == 'o' ? (a != 0 || b != 0)
                        : ((a != 0) != (b != 0));
    };
    fi = [k](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      return k == 'a'   ? (a != 0 && b != 0)
             : k == 'o' ? (a != 0 || b != 0)
                        : ((a != 0) != (b != 0));
    };
  } else if (op == "bitwise_and" || op == "bitwise_or" || op == "bitwise_xor") {
    char k = op[8];                                    // a, o, x
    fd = [](double, double) { return std::nan(""); };  // unreachable: ints only
    fi = [k](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      return k == 'a' ? (a & b) : k == 'o' ? (a | b) : (a ^ b);
    };
  } else {  // comparisons, on the promoted operands
    std::string cmp = op;
    fd = [cmp](double a, double b) -> double {
      if (cmp == "eq") return a == b;
      if (cmp == "ne") return a != b;
      if (cmp == "lt") return a < b;
      if (cmp == "le") return a <= b;
      if (cmp == "gt") return a > b;
      return a >= b;
    };
    fi = [fd](int64_t a, int64_t b) -> absl::StatusOr<int64_t> {
      // Exact for integers: compare as int64.
      return static_cast<int64_t>(fd(a < b ? -1 : a > b ? 1 : 0, 0));
    };
  }
  const std::vector<Value> operands = {self, OpmathScalar(info, op, other)};
  // The arithmetic ops without a call per element (the same expressions).
  if (op == "add" || op == "sub") {
    const double scale = (op == "add" ? 1 : -1) * alpha_d;
    return ComputeRuns(
        c, info, operands,
        BinaryRuns([scale](double a, double b) { return a + scale * b; }), fi);
  }
  if (op == "mul") {
    return ComputeRuns(c, info, operands,
                       BinaryRuns([](double a, double b) { return a * b; }),
                       fi);
  }
  return Compute(c, info, operands, fd, fi);
}

absl::StatusOr<Value> DivKernel(const OpCall& c, const OutInfo& info,
                                const Value& self, const Value& other,
                                Div mode) {
  // float16, bfloat16 and float32 compute in float32 (their opmath type).
  DoubleFn fd = [mode](double a, double b) { return FloatDiv(a, b, mode); };
  if (info.compute != DType::kFloat64 && mode != Div::kTrue) {
    fd = [mode](double a, double b) -> double {
      return FloatDiv(static_cast<float>(a), static_cast<float>(b), mode);
    };
  }
  IntFn fi = nullptr;
  if (mode != Div::kTrue) {
    fi = [mode](int64_t a, int64_t b) { return IntDiv(a, b, mode); };
  }
  const std::vector<Value> operands = {self, OpmathScalar(info, "div", other)};
  if (mode == Div::kTrue) {  // FloatDiv's a / b, without a call per element
    return ComputeRuns(c, info, operands,
                       BinaryRuns([](double a, double b) { return a / b; }),
                       fi);
  }
  return Compute(c, info, operands, fd, fi);
}

absl::StatusOr<Div> DivMode(const OpCall& c) {
  int i = c.op().schema.ArgumentIndex("rounding_mode");
  if (i < 0 || c.arg(i).is_none()) return Div::kTrue;
  const std::string& m = c.arg(i).string;
  if (m == "trunc") return Div::kTrunc;
  if (m == "floor") return Div::kFloor;
  return c.Error(
      absl::StrCat("div expected rounding_mode to be one of None, 'trunc', or "
                   "'floor' but found '",
                   m, "'"));
}

struct BinarySpec {
  std::string schema;
  std::string op;  // add, sub, mul, div, maximum, minimum, pow, eq, ...
};

absl::Status RegisterBinary(OpRegistry& r, const BinarySpec& spec) {
  // floor_divide is div with rounding_mode='floor', true_divide div.
  bool floor_div = spec.op == "floor_divide";
  bool is_div = spec.op == "div" || spec.op == "true_divide" || floor_div;
  bool is_cmp = spec.op == "eq" || spec.op == "ne" || spec.op == "lt" ||
                spec.op == "le" || spec.op == "gt" || spec.op == "ge" ||
                spec.op == "logical_and" || spec.op == "logical_or" ||
                spec.op == "logical_xor";
  bool ints_only = absl::StartsWith(spec.op, "bitwise_");
  bool shift = spec.op == "lshift" || spec.op == "rshift";
  bool floats_only = spec.op == "hypot";
  bool to_float = spec.op == "atan2" || spec.op == "copysign";
  bool reversed = spec.op == "rsub";  // other - alpha * self
  auto infer = [spec, is_div, is_cmp, ints_only, shift, floats_only, to_float,
                reversed,
                floor_div](const OpCall& c) -> absl::StatusOr<OutInfo> {
    Div mode = Div::kTrue;
    if (floor_div) {
      mode = Div::kFloor;
    } else if (is_div) {
      ASSIGN_OR_RETURN(mode, DivMode(c));
    }
    std::vector<Value> operands = {c.arg(0), c.arg(1)};
    if (reversed) std::swap(operands[0], operands[1]);
    ASSIGN_OR_RETURN(
        OutInfo info,
        Infer(c, operands, to_float || (is_div && mode == Div::kTrue), is_cmp));
    if ((ints_only && !IsIntegral(info.compute, /*include_bool=*/true)) ||
        (shift && !IsIntegral(info.compute, /*include_bool=*/false)) ||
        (floats_only && !IsFloatingPoint(info.compute))) {
      return c.Error(absl::StrCat("\"", spec.op, "_cpu\" not implemented for '",
                                  ScalarTypeName(info.compute), "'"));
    }
    if (reversed) {
      int bools = 0;
      for (const Value& v : operands) {
        bools += v.is_tensor() && DTypeOf(v) == DType::kBool;
      }
      if (bools == 2) {
        return c.Error(
            "Subtraction, the `-` operator, with two bool tensors is not "
            "supported. Use the `^` or `logical_xor()` operator instead.");
      }
      if (bools == 1) {
        return c.Error(
            "Subtraction, the `-` operator, with a bool tensor is not "
            "supported. If you are trying to invert a mask, use the `~` or "
            "`logical_not()` operator instead.");
      }
    }
    if (mode != Div::kTrue && info.compute == DType::kBool) {
      return c.Error(absl::StrCat("\"div_",
                                  mode == Div::kFloor ? "floor" : "trunc",
                                  "_cpu\" not implemented for 'Bool'"));
    }
    if ((spec.op == "remainder" || spec.op == "fmod") &&
        info.compute == DType::kBool) {
      return c.Error(
          absl::StrCat("\"", spec.op, "_cpu\" not implemented for 'Bool'"));
    }
    if (spec.op == "sub" && c.arg(1).is_tensor() &&
        DTypeOf(c.arg(0)) == DType::kBool &&
        DTypeOf(c.arg(1)) == DType::kBool) {
      return c.Error(
          "Subtraction, the `-` operator, with two bool tensors is not "
          "supported. Use the `^` or `logical_xor()` operator instead.");
    }
    if (spec.op == "sub" &&
        (DTypeOf(c.arg(0)) == DType::kBool ||
         (c.arg(1).is_tensor() && DTypeOf(c.arg(1)) == DType::kBool))) {
      return c.Error(
          "Subtraction, the `-` operator, with a bool tensor is not "
          "supported. If you are trying to invert a mask, use the `~` or "
          "`logical_not()` operator instead.");
    }
    if (spec.op == "pow" && !c.arg(1).is_tensor() &&
        IsIntegral(DTypeOf(c.arg(0)), true) &&
        c.arg(1).number.kind() == symbolic::ExprKind::kInteger) {
      ASSIGN_OR_RETURN(int64_t e, c.arg(1).AsInt());
      if (e < 0) {
        return c.Error("Integers to negative integer powers are not allowed.");
      }
    }
    if (spec.op == "pow" && c.arg(1).is_tensor() &&
        info.compute == DType::kBool) {
      return c.Error("\"pow\" not implemented for 'Bool'");
    }
    // pow's Scalar exponent is a parameter of its kernel, not an operand.
    if (spec.op == "pow" && !c.arg(1).is_tensor() && c.arg(0).is_tensor()) {
      info.strides = PointwiseStrides(
          c.env(), {AsPromoted(c.env(), c.arg(0), info.compute)}, info.sizes);
    }
    // pow.Scalar (a number base) allocates its result contiguous.
    if (spec.op == "pow" && !c.arg(0).is_tensor()) info.strides.clear();
    return info;
  };
  OpFn meta = [spec, infer](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, infer(c));
    return ResultMeta(info);
  };
  OpFn kernel = [spec, infer, is_div,
                 floor_div](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, infer(c));
    Value result;
    if (is_div) {
      Div mode = Div::kFloor;
      if (!floor_div) {
        ASSIGN_OR_RETURN(mode, DivMode(c));
      }
      ASSIGN_OR_RETURN(result, DivKernel(c, info, c.arg(0), c.arg(1), mode));
    } else {
      int alpha = c.op().schema.ArgumentIndex("alpha");
      bool rsub = spec.op == "rsub";
      ASSIGN_OR_RETURN(result,
                       BinaryKernel(c, rsub ? "sub" : spec.op, info,
                                    c.arg(rsub ? 1 : 0), c.arg(rsub ? 0 : 1),
                                    alpha >= 0 ? c.arg(alpha) : Value::None()));
    }
    return result;
  };
  return r.Add(spec.schema, meta, kernel);
}

// where(condition, self, other)
absl::StatusOr<OutInfo> InferWhere(const OpCall& c) {
  if (c.arg(0).is_tensor() && DTypeOf(c.arg(0)) != DType::kBool) {
    return c.Error(
        absl::StrCat("where expected condition to be a boolean tensor, but got "
                     "a tensor with dtype ",
                     ShortName(DTypeOf(c.arg(0)))));
  }
  ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(1), c.arg(2)}, false, false));
  std::vector<std::vector<symbolic::Expr>> shapes = {info.sizes};
  if (c.arg(0).is_tensor()) shapes.push_back(SizesOf(c.arg(0)));
  ASSIGN_OR_RETURN(info.sizes, BroadcastShapes(c, shapes));
  info.strides =
      PointwiseStrides(c.env(),
                       {c.arg(0), AsPromoted(c.env(), c.arg(1), info.compute),
                        AsPromoted(c.env(), c.arg(2), info.compute)},
                       info.sizes);
  return info;
}

// ---- Ternary: clamp, addcmul, addcdiv, lerp ---------------------------------

// The operands an op computes on (absent optional bounds left out).
std::vector<Value> TernaryOperands(const OpCall& c, const std::string& op) {
  std::vector<Value> v = {c.arg(0)};
  for (int i = 1; i < c.num_args(); ++i) {
    const std::string& name = c.op().schema.arguments[i].name;
    if (name == "value" ||
        (op == "lerp" && name == "weight" && !c.arg(i).is_tensor()))
      continue;
    if (!c.arg(i).is_none()) v.push_back(c.arg(i));
  }
  if (op == "lerp" && !c.arg(2).is_tensor()) v.push_back(c.arg(2));
  return v;
}

absl::StatusOr<OutInfo> InferTernary(const OpCall& c, const std::string& op) {
  std::vector<Value> operands = TernaryOperands(c, op);
  if (op == "clamp" && operands.size() == 1) {
    return c.Error(
        "torch.clamp: At least one of 'min' or 'max' must not be None");
  }
  // A Scalar weight or value does not take part in type promotion.
  std::vector<Value> promoted = operands;
  if (op == "lerp" && !c.arg(2).is_tensor()) promoted.pop_back();
  ASSIGN_OR_RETURN(OutInfo info, Infer(c, promoted, false, false));
  // Scalar bounds and weights are kernel parameters, not operands; a clamp
  // with Scalar bounds is a unary op that does not convert its input.
  std::vector<Value> tensors;
  bool scalar_bounds = false;
  for (const Value& v : operands) {
    if (v.is_tensor()) {
      tensors.push_back(v);
    } else {
      scalar_bounds = true;
    }
  }
  if (!(op == "clamp" && scalar_bounds)) {
    tensors = AsPromoted(c.env(), tensors, info.compute);
  }
  info.strides = PointwiseStrides(c.env(), tensors, info.sizes);
  if (op == "lerp") {
    if (DTypeOf(c.arg(0)) != DTypeOf(c.arg(1))) {
      return c.Error(absl::StrCat(
          "expected dtype ", ScalarTypeName(DTypeOf(c.arg(0))),
          " for `end` but got dtype ", ScalarTypeName(DTypeOf(c.arg(1)))));
    }
    if (!IsFloatingPoint(info.compute)) {
      return c.Error(absl::StrCat(
          "\"lerp_kernel_", c.arg(2).is_tensor() ? "tensor" : "scalar",
          "\" not implemented for '", ScalarTypeName(info.compute), "'"));
    }
  }
  // PyTorch looks at tensor1 and tensor2 alone (a float self does not help).
  if (op == "addcdiv" && IsIntegral(DTypeOf(c.arg(1)), /*include_bool=*/true) &&
      IsIntegral(DTypeOf(c.arg(2)), /*include_bool=*/true)) {
    return c.Error(
        "Integer division with addcdiv is no longer supported, and in a future "
        " release addcdiv will perform a true division of tensor1 and "
        "tensor2. The historic addcdiv behavior can be implemented as (input "
        "+ value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
        "integer inputs and as (input + value * tensor1 / tensor2) for float "
        "inputs. The future addcdiv behavior is just the latter "
        "implementation: (input + value * tensor1 / tensor2), for all "
        "dtypes.");
  }
  if (op == "addcmul" && info.compute == DType::kBool) {
    return c.Error("\"addcmul_cpu_out\" not implemented for 'Bool'");
  }
  return info;
}

absl::StatusOr<Value> TernaryKernel(const OpCall& c, const std::string& op,
                                    const OutInfo& info) {
  std::vector<Value> operands = TernaryOperands(c, op);
  DoubleNFn fd;
  IntNFn fi;
  if (op == "clamp") {
    int lo = c.op().schema.ArgumentIndex("min"),
        hi = c.op().schema.ArgumentIndex("max");
    bool has_lo = lo >= 0 && !c.arg(lo).is_none(),
         has_hi = hi >= 0 && !c.arg(hi).is_none();
    fd = [=](absl::Span<const double> a) {
      double x = a[0];
      size_t k = 1;
      if (has_lo)
        x = std::isnan(x)      ? x
            : std::isnan(a[k]) ? a[k]
                               : std::max(x, a[k]),
        ++k;
      if (has_hi)
        x = std::isnan(x) ? x : std::isnan(a[k]) ? a[k] : std::min(x, a[k]);
      return x;
    };
    fi = [=](absl::Span<const int64_t> a) -> absl::StatusOr<int64_t> {
      int64_t x = a[0];
      size_t k = 1;
      if (has_lo) x = std::max(x, a[k++]);
      if (has_hi) x = std::min(x, a[k]);
      return x;
    };
  } else if (op == "addcmul" || op == "addcdiv") {
    ASSIGN_OR_RETURN(double v, c.arg("value").AsDouble());
    bool mul = op == "addcmul";
    fd = [v, mul](absl::Span<const double> a) {
      return a[0] + v * (mul ? a[1] * a[2] : a[1] / a[2]);
    };
    if (mul) {
      if (!c.arg("value").number.is_int() && !c.arg("value").number.is_bool() &&
          IsIntegral(info.compute, true)) {
        return c.Error(
            "For integral input tensors, argument value must not be a floating "
            "point number.");
      }
      int64_t vi = 0;
      if (IsIntegral(info.compute, true)) {
        ASSIGN_OR_RETURN(vi, c.arg("value").AsInt());
      }
      fi = [vi](absl::Span<const int64_t> a) -> absl::StatusOr<int64_t> {
        return static_cast<int64_t>(U(a[0]) + U(vi) * U(a[1]) * U(a[2]));
      };
    }
  } else {  // lerp
    fd = [](absl::Span<const double> a) {
      double diff = a[1] - a[0], w = a[2];
      return std::fabs(w) < 0.5 ? a[0] + w * diff : a[1] - diff * (1 - w);
    };
  }
  return ComputeN(c, info, operands, fd, fi);
}

absl::Status RegisterTernary(OpRegistry& r, const std::string& schema,
                             const std::string& op) {
  OpFn meta = [op](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, InferTernary(c, op));
    return ResultMeta(info);
  };
  OpFn kernel = [op](const OpCall& c) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(OutInfo info, InferTernary(c, op));
    return TernaryKernel(c, op, info);
  };
  return r.Add(schema, meta, kernel);
}

// ---- Activations with Scalar parameters: elu, hardtanh, leaky_relu ---------

// Checks self's dtype (elu and leaky_relu take floats only, hardtanh no
// bools) and gives self's dtype and a layout: TensorIterator's for elu and
// leaky_relu, empty_like(self)'s for hardtanh (PyTorch writes it into one).
absl::StatusOr<OutInfo> InferActivation(const OpCall& c,
                                        const std::string& op) {
  DType d = DTypeOf(c.arg(0));
  if (op == "hardtanh" && d == DType::kBool) {
    return c.Error("Bool inputs not supported for hardtanh");
  }
  if (op != "hardtanh" && !IsFloatingPoint(d)) {
    return c.Error(absl::StrCat("\"", op == "celu" ? "elu" : op,
                                "_cpu\" not implemented for '",
                                ScalarTypeName(d), "'"));
  }
  if (op == "celu") {  // elu(x, alpha, 1, 1 / alpha)
    ASSIGN_OR_RETURN(double alpha, c.arg(1).AsDouble());
    if (alpha == 0)
      return c.Error("ZeroDivisionError: alpha cannot be 0 for CELU");
  }
  ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(0)}, false, false));
  if (op == "hardtanh") info.strides = EmptyLikeStrides(c.env(), c.arg(0));
  return info;
}

absl::StatusOr<Value> ActivationKernel(const OpCall& c, const std::string& op,
                                       const OutInfo& info) {
  std::vector<double> p;  // the op's Scalar arguments, in schema order
  for (int i = 1; i < c.num_args(); ++i) {
    ASSIGN_OR_RETURN(double v, c.arg(i).AsDouble());
    p.push_back(v);
  }
  DoubleFn fd;
  IntFn fi;
  if (op == "elu" || op == "celu") {
    // x <= 0: (exp(x * input_scale) - 1) * alpha * scale; celu is elu(x,
    // alpha, 1, 1 / alpha).
    const bool celu = op == "celu";
    double alpha = p[0], scale = celu ? 1 : p[1],
           input_scale = celu ? 1 / alpha : p[2];
    fd = [=](double x, double) {
      return x <= 0 ? std::expm1(x * input_scale) * alpha * scale : x * scale;
    };
  } else if (op == "hardswish") {  // x * min(max(x + 3, 0), 6) / 6
    fd = [](double x, double) {
      return std::isnan(x) ? x : x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
    };
  } else if (op == "mish") {  // x * tanh(softplus(x))
    fd = [](double x, double) {
      return x * std::tanh(std::log1p(std::exp(x)));
    };
  } else if (op == "hardsigmoid") {
    fd = [](double x, double) {
      return std::isnan(x) ? x : std::min(std::max(x + 3, 0.0), 6.0) / 6;
    };
  } else if (op == "softplus") {  // linear above threshold (in x * beta)
    double beta = p[0], threshold = p[1];
    fd = [=](double x, double) {
      return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
    };
  } else if (op == "leaky_relu") {
    double slope = p[0];
    fd = [slope](double x, double) { return x > 0 ? x : x * slope; };
  } else {  // hardtanh: NaN stays NaN; integer bounds are truncated
    double lo = p[0], hi = p[1];
    fd = [lo, hi](double x, double) {
      return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
    };
    if (IsIntegral(info.compute, /*include_bool=*/true)) {
      // An integer tensor's bounds are converted to integers, which a
      // bound past int64 (an infinity) is not, as PyTorch's Scalar says.
      for (double b : {lo, hi}) {
        if (!(b >= -0x1p63 && b < 0x1p63)) {
          return c.Error(
              absl::StrCat("value ", b,
                           " cannot be converted to type int64_t without "
                           "overflow"));
        }
      }
      int64_t ilo = static_cast<int64_t>(lo), ihi = static_cast<int64_t>(hi);
      fi = [ilo, ihi](int64_t x, int64_t) -> absl::StatusOr<int64_t> {
        return std::min(std::max(x, ilo), ihi);
      };
    }
  }
  return Compute(c, info, {c.arg(0)}, fd, fi);
}

absl::Status RegisterActivation(OpRegistry& r, const char* schema,
                                const std::string& op) {
  return r.Add(
      schema,
      [op](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info, InferActivation(c, op));
        return ResultMeta(info);
      },
      [op](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info, InferActivation(c, op));
        return ActivationKernel(c, op, info);
      });
}

// ---- out= variants ---------------------------------------------------------

// The `out` argument of an out= overload, checked against the result: lathe
// does not resize out= tensors (PyTorch does, with a deprecation warning
// unless out is empty), so its shape must be the result's; the result must
// cast to its dtype. The kernel writes through out's own strides.
absl::StatusOr<Value> CheckOut(const OpCall& c, const OutInfo& info) {
  const Value& out = c.arg("out");
  std::vector<symbolic::Expr> sizes = SizesOf(out);
  bool same = sizes.size() == info.sizes.size();
  for (size_t d = 0; same && d < sizes.size(); ++d) {
    ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(sizes[d], info.sizes[d])));
  }
  if (!same) {
    return c.Error(absl::StrCat(
        "out has shape ", ShapeString(sizes), " but the result has shape ",
        ShapeString(info.sizes), " (resizing out= tensors is not supported)"));
  }
  DType out_dtype = DTypeOf(out);
  if ((IsFloatingPoint(info.dtype) && !IsFloatingPoint(out_dtype)) ||
      (info.dtype != DType::kBool && out_dtype == DType::kBool)) {
    return c.Error(absl::StrCat("result type ", ScalarTypeName(info.dtype),
                                " can't be cast to the desired output type ",
                                ScalarTypeName(out_dtype)));
  }
  return out;
}

// isnan / isinf / isfinite: bool results; integers are never NaN or
// infinite. For integers PyTorch's isinf and isfinite are zeros_like /
// ones_like (empty_like's layout; `like` true), isnan is self != self.
OutInfo FloatClassInfo(const OpCall& c, bool like) {
  OutInfo info = SameShape(c, DType::kBool);
  if (like && !IsFloatingPoint(DTypeOf(c.arg(0)))) {
    info.strides = EmptyLikeStrides(c.env(), c.arg(0));
  }
  return info;
}

absl::Status RegisterFloatClass(OpRegistry& r, const char* schema,
                                bool (*fd)(double), bool int_value) {
  bool like = !absl::StartsWith(schema, "isnan");
  return r.Add(
      schema,
      [like](const OpCall& c) -> absl::StatusOr<Value> {
        return ResultMeta(FloatClassInfo(c, like));
      },
      [fd, int_value, like](const OpCall& c) -> absl::StatusOr<Value> {
        OutInfo info = FloatClassInfo(c, like);
        return Compute(
            c, info, {c.arg(0)},
            [fd](double a, double) -> double { return fd(a); },
            [int_value](int64_t, int64_t) -> absl::StatusOr<int64_t> {
              return int_value;
            });
      });
}

// nan_to_num(self, nan, posinf, neginf): NaN -> nan (0), +inf -> posinf
// (the dtype's largest finite value), -inf -> neginf (its lowest); integer
// and bool tensors are copied. PyTorch writes into empty_like(self).
absl::StatusOr<Value> NanToNum(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  DType d = DTypeOf(self);
  OutInfo info = SameShape(c, d);
  info.strides = EmptyLikeStrides(c.env(), self);
  if (!IsFloatingPoint(d)) {
    ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, d, DeviceOf(self),
                                              info.sizes, info.strides));
    if (running) RETURN_IF_ERROR(CopyInto(out.tensor, self.tensor));
    return out;
  }
  if (!running) return ResultMeta(info);
  double big = MaxFinite(d);
  double nan = 0, posinf = big, neginf = -big;
  if (!c.arg(1).is_none()) {
    ASSIGN_OR_RETURN(nan, c.arg(1).AsDouble());
  }
  if (!c.arg(2).is_none()) {
    ASSIGN_OR_RETURN(posinf, c.arg(2).AsDouble());
  }
  if (!c.arg(3).is_none()) {
    ASSIGN_OR_RETURN(neginf, c.arg(3).AsDouble());
  }
  return Compute(
      c, info, {self},
      [=](double x, double) {
        return std::isnan(x)   ? nan
               : std::isinf(x) ? (x > 0 ? posinf : neginf)
                               : x;
      },
      nullptr);
}

// gelu takes floating point inputs only.
absl::Status GeluDType(const OpCall& c) {
  DType d = DTypeOf(c.arg(0));
  if (IsFloatingPoint(d)) return absl::OkStatus();
  return c.Error(absl::StrCat("\"GeluKernelImpl\" not implemented for '",
                              ScalarTypeName(d), "'"));
}

absl::Status RegisterPointwiseBody(OpRegistry& r);

}  // namespace

// The pointwise ops, each marked pointwise (RegisterInplaceTwins derives
// the in-place twins of the functional ones).
absl::Status RegisterPointwiseOps(OpRegistry& r) {
  std::vector<std::string> before = r.Targets();
  RETURN_IF_ERROR(RegisterPointwiseBody(r));
  for (const std::string& target : r.Targets()) {
    if (!std::binary_search(before.begin(), before.end(), target)) {
      RETURN_IF_ERROR(r.MarkPointwise(target));
    }
  }
  return absl::OkStatus();
}

namespace {

absl::Status RegisterPointwiseBody(OpRegistry& r) {
  for (const Unary& u : kUnary) RETURN_IF_ERROR(RegisterUnary(r, u));
  // round.decimals: round(x * 10^d) / 10^d (d < 0: round(x / 10^-d) *
  // 10^-d) in the op math type (float below float64), as PyTorch computes
  // it; decimals=0 is round.default.
  auto round_decimals = [](bool running) {
    return [running](const OpCall& c) -> absl::StatusOr<Value> {
      ASSIGN_OR_RETURN(int64_t decimals, c.arg("decimals").AsInt());
      DType d = DTypeOf(c.arg(0));
      if (!IsFloatingPoint(d)) {  // round.default would copy integers
        return c.Error(absl::StrCat("\"round", decimals == 0 ? "_vml" : "",
                                    "_cpu\" not implemented for '",
                                    ScalarTypeName(d), "'"));
      }
      if (decimals == 0) {
        const OpDef* round = OpRegistry::Global().Find("aten.round.default");
        OpCall call(*round, {c.arg(0)}, c.env(), c.generator());
        absl::StatusOr<Value> out =
            running ? round->kernel(call) : round->meta(call);
        if (out.ok()) return out;
        absl::string_view message = out.status().message();
        absl::ConsumePrefix(&message, "aten.round.default: ");
        return c.Error(message);
      }
      OutInfo info = SameShape(c, d);
      if (!running) return ResultMeta(info);
      bool neg = decimals < 0;
      double ten = std::pow(10.0, static_cast<double>(std::abs(decimals)));
      bool f64 = d == DType::kFloat64;
      return Compute(
          c, info, {c.arg(0)},
          [=](double x, double) -> double {
            if (f64) {
              return neg ? std::nearbyint(x / ten) * ten
                         : std::nearbyint(x * ten) / ten;
            }
            float xf = static_cast<float>(x), tf = static_cast<float>(ten);
            return neg ? std::nearbyint(xf / tf) * tf
                       : std::nearbyint(xf * tf) / tf;
          },
          nullptr);
    };
  };
  RETURN_IF_ERROR(
      r.Add("round.decimals(Tensor self, *, int decimals) -> Tensor",
            round_decimals(false), round_decimals(true)));
  RETURN_IF_ERROR(RegisterFloatClass(
      r, "isfinite(Tensor self) -> Tensor",
      [](double a) -> bool { return std::isfinite(a); }, true));
  RETURN_IF_ERROR(r.Add(
      "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? "
      "neginf=None) -> Tensor",
      [](const OpCall& c) { return NanToNum(c, false); },
      [](const OpCall& c) { return NanToNum(c, true); }));
  // square(self) is pow(self, 2) (a bool tensor squares to int64).
  auto square = [](bool meta) {
    return [meta](const OpCall& c) -> absl::StatusOr<Value> {
      const OpDef* pow = OpRegistry::Global().Find("aten.pow.Tensor_Scalar");
      OpCall call(*pow, {c.arg(0), Value::Int(2)}, c.env(), c.generator());
      return meta ? pow->meta(call) : pow->kernel(call);
    };
  };
  RETURN_IF_ERROR(
      r.Add("square(Tensor self) -> Tensor", square(true), square(false)));
  RETURN_IF_ERROR(RegisterFloatClass(
      r, "isnan(Tensor self) -> Tensor",
      [](double a) -> bool { return std::isnan(a); }, false));
  RETURN_IF_ERROR(r.Add(
      "gelu(Tensor self, *, str approximate='none') -> Tensor",
      [](const OpCall& c) -> absl::StatusOr<Value> {
        RETURN_IF_ERROR(GeluDType(c));
        ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(0)}, true, false));
        return ResultMeta(info);
      },
      [](const OpCall& c) -> absl::StatusOr<Value> {
        RETURN_IF_ERROR(GeluDType(c));
        ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(0)}, true, false));
        const std::string& approx = c.arg(1).string;
        if (approx != "none" && approx != "tanh") {
          return c.Error(absl::StrCat(
              "approximate argument must be either none or tanh, got '", approx,
              "'"));
        }
        bool tanh = approx == "tanh";
        return Compute(
            c, info, {c.arg(0)},
            [tanh](double x, double) {
              if (tanh) {
                double k = std::sqrt(2.0 / std::acos(-1.0));
                return 0.5 * x *
                       (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
              }
              return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
            },
            nullptr);
      }));
  RETURN_IF_ERROR(RegisterFloatClass(
      r, "isinf(Tensor self) -> Tensor",
      [](double a) -> bool { return std::isinf(a); }, false));
  RETURN_IF_ERROR(RegisterActivation(
      r,
      "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar "
      "input_scale=1) -> Tensor",
      "elu"));
  RETURN_IF_ERROR(RegisterActivation(
      r, "celu(Tensor self, Scalar alpha=1.0) -> Tensor", "celu"));
  RETURN_IF_ERROR(RegisterActivation(
      r, "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
      "hardtanh"));
  // logit(self, eps): log(x / (1 - x)) of x clamped to [eps, 1 - eps] (not
  // clamped for None), integers promoted to float.
  auto logit = [](bool running) {
    return [running](const OpCall& c) -> absl::StatusOr<Value> {
      ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(0)}, true, false));
      if (!running) return ResultMeta(info);
      double eps = -1;
      if (!c.arg("eps").is_none()) {
        ASSIGN_OR_RETURN(eps, c.arg("eps").AsDouble());
      }
      return Compute(
          c, info, {c.arg(0)},
          [eps](double x, double) {
            if (eps >= 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
            return std::log(x / (1 - x));
          },
          nullptr);
    };
  };
  RETURN_IF_ERROR(r.Add("logit(Tensor self, float? eps=None) -> Tensor",
                        logit(false), logit(true)));
  RETURN_IF_ERROR(RegisterActivation(
      r, "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
      "leaky_relu"));
  RETURN_IF_ERROR(RegisterActivation(r, "hardsigmoid(Tensor self) -> Tensor",
                                     "hardsigmoid"));
  RETURN_IF_ERROR(
      RegisterActivation(r, "hardswish(Tensor self) -> Tensor", "hardswish"));
  RETURN_IF_ERROR(RegisterActivation(r, "mish(Tensor self) -> Tensor", "mish"));
  RETURN_IF_ERROR(RegisterActivation(
      r, "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
      "softplus"));
  // atan2.out: computes atan2(self, other) and writes it into `out`, which it
  // returns (the interpreter sees `out` as a written argument).
  RETURN_IF_ERROR(r.Add(
      "atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
      [](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info,
                         Infer(c, {c.arg(0), c.arg(1)}, true, false));
        return CheckOut(c, info);
      },
      [](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(OutInfo info,
                         Infer(c, {c.arg(0), c.arg(1)}, true, false));
        RETURN_IF_ERROR(CheckOut(c, info).status());
        ASSIGN_OR_RETURN(Value result, BinaryKernel(c, "atan2", info, c.arg(0),
                                                    c.arg(1), Value::None()));
        RETURN_IF_ERROR(CopyInto(c.arg("out").tensor, result.tensor));
        return c.arg("out");
      }));
  const BinarySpec kBinary[] = {
      {"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       "add"},
      {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       "add"},
      {"sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       "sub"},
      {"sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       "sub"},
      {"mul.Tensor(Tensor self, Tensor other) -> Tensor", "mul"},
      {"mul.Scalar(Tensor self, Scalar other) -> Tensor", "mul"},
      {"div.Tensor(Tensor self, Tensor other) -> Tensor", "div"},
      {"div.Scalar(Tensor self, Scalar other) -> Tensor", "div"},
      {"div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> "
       "Tensor",
       "div"},
      {"div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> "
       "Tensor",
       "div"},
      {"maximum(Tensor self, Tensor other) -> Tensor", "maximum"},
      {"fmax(Tensor self, Tensor other) -> Tensor", "fmax"},
      {"fmin(Tensor self, Tensor other) -> Tensor", "fmin"},
      {"floor_divide(Tensor self, Tensor other) -> Tensor", "floor_divide"},
      {"floor_divide.Scalar(Tensor self, Scalar other) -> Tensor",
       "floor_divide"},
      {"true_divide.Tensor(Tensor self, Tensor other) -> Tensor",
       "true_divide"},
      {"true_divide.Scalar(Tensor self, Scalar other) -> Tensor",
       "true_divide"},
      {"minimum(Tensor self, Tensor other) -> Tensor", "minimum"},
      {"pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", "pow"},
      {"pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "pow"},
      {"hypot(Tensor self, Tensor other) -> Tensor", "hypot"},
      {"copysign.Tensor(Tensor self, Tensor other) -> Tensor", "copysign"},
      {"__lshift__.Scalar(Tensor self, Scalar other) -> Tensor", "lshift"},
      {"__lshift__.Tensor(Tensor self, Tensor other) -> Tensor", "lshift"},
      {"__rshift__.Scalar(Tensor self, Scalar other) -> Tensor", "rshift"},
      {"__rshift__.Tensor(Tensor self, Tensor other) -> Tensor", "rshift"},
      {"rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       "rsub"},
      {"rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       "rsub"},
  };
  for (const BinarySpec& b : kBinary) RETURN_IF_ERROR(RegisterBinary(r, b));
  for (const char* op :
       {"remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor"}) {
    RETURN_IF_ERROR(RegisterBinary(
        r, {absl::StrCat(op, ".Tensor(Tensor self, Tensor other) -> Tensor"),
            op}));
    RETURN_IF_ERROR(RegisterBinary(
        r, {absl::StrCat(op, ".Scalar(Tensor self, Scalar other) -> Tensor"),
            op}));
  }
  for (const char* op : {"atan2", "logical_and", "logical_or", "logical_xor"}) {
    RETURN_IF_ERROR(RegisterBinary(
        r, {absl::StrCat(op, "(Tensor self, Tensor other) -> Tensor"), op}));
  }
  RETURN_IF_ERROR(RegisterBinary(
      r, {"pow.Scalar(Scalar self, Tensor exponent) -> Tensor", "pow"}));
  const std::pair<const char*, const char*> kTernary[] = {
      {"clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
       "clamp"},
      {"clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> "
       "Tensor",
       "clamp"},
      {"clamp_min(Tensor self, Scalar min) -> Tensor", "clamp"},
      {"clamp_max(Tensor self, Scalar max) -> Tensor", "clamp"},
      {"addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar "
       "value=1) -> Tensor",
       "addcmul"},
      {"addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar "
       "value=1) -> Tensor",
       "addcdiv"},
      {"lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", "lerp"},
      {"lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", "lerp"},
  };
  for (const auto& [schema, op] : kTernary) {
    RETURN_IF_ERROR(RegisterTernary(r, schema, op));
  }
  RETURN_IF_ERROR(r.Add(
      "bitwise_not(Tensor self) -> Tensor",
      [](const OpCall& c) -> absl::StatusOr<Value> {
        DType d = DTypeOf(c.arg(0));
        if (!IsIntegral(d, true)) {
          return c.Error(
              absl::StrCat("\"bitwise_not_cpu\" not implemented for '",
                           ScalarTypeName(d), "'"));
        }
        return ResultMeta(SameShape(c, d));
      },
      [](const OpCall& c) -> absl::StatusOr<Value> {
        DType d = DTypeOf(c.arg(0));
        if (!IsIntegral(d, true)) {
          return c.Error(
              absl::StrCat("\"bitwise_not_cpu\" not implemented for '",
                           ScalarTypeName(d), "'"));
        }
        OutInfo info = SameShape(c, d);
        bool is_bool = d == DType::kBool;
        return Compute(
            c, info, {c.arg(0)}, nullptr,
            [is_bool](int64_t a, int64_t) -> absl::StatusOr<int64_t> {
              return is_bool ? (a == 0) : ~a;
            });
      }));
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    RETURN_IF_ERROR(RegisterBinary(
        r, {absl::StrCat(cmp, ".Tensor(Tensor self, Tensor other) -> Tensor"),
            cmp}));
    RETURN_IF_ERROR(RegisterBinary(
        r, {absl::StrCat(cmp, ".Scalar(Tensor self, Scalar other) -> Tensor"),
            cmp}));
  }
  // where: the Scalar overloads promote like wrapped numbers.
  for (const char* where_schema :
       {"where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
        "where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> "
        "Tensor",
        "where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> "
        "Tensor",
        "where.Scalar(Tensor condition, Scalar self, Scalar other) -> "
        "Tensor"}) {
    RETURN_IF_ERROR(r.Add(
        where_schema,
        [](const OpCall& c) -> absl::StatusOr<Value> {
          ASSIGN_OR_RETURN(OutInfo info, InferWhere(c));
          return ResultMeta(info);
        },
        [](const OpCall& c) -> absl::StatusOr<Value> {
          ASSIGN_OR_RETURN(OutInfo info, InferWhere(c));
          ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                           ConcreteSizes(c, info.sizes));
          ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                           ConcreteSizes(c, info.strides));
          RETURN_IF_ERROR(CheckResultElements(c, info.dtype, sizes));
          ASSIGN_OR_RETURN(Tensor out,
                           Tensor::EmptyStrided(sizes, strides, info.dtype));
          std::vector<Tensor> v;
          for (int k = 0; k < 3; ++k) {
            Tensor t;
            if (c.arg(k).is_tensor()) {
              t = c.arg(k).tensor;
            } else {
              ASSIGN_OR_RETURN(t, ScalarTensor(c.arg(k), k == 0 ? DType::kBool
                                                                : info.dtype));
            }
            ASSIGN_OR_RETURN(Tensor view, BroadcastView(t, sizes));
            v.push_back(view);
          }
          bool ints = IsIntegral(info.dtype, true);
          ForEachIndex(sizes, [&](absl::Span<const int64_t> i) {
            const Tensor& pick = LoadInt(v[0], i) != 0 ? v[1] : v[2];
            if (ints) {
              StoreInt(out, i, LoadInt(pick, i));
            } else {
              StoreDouble(out, i, LoadDouble(pick, i));
            }
          });
          return Value::OfTensor(out);
        }));
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace lathe::ir
