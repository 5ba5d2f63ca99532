#include "passes/decompose_pointwise_backward.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/rewriter.h"
#include "runtime/dtype.h"
#include "status_macros.h"

namespace lathe::passes::decomp {
namespace {

// ---- The activations' backwards -------------------------------------------
// Each as decompositions.py writes it, computed in the math type (float32
// for the 16-bit floats: its pw_cast_for_opmath) and converted to the op's
// result dtype once; a scalar argument that is not a literal leaves the
// call alone.

// A pointwise expression builder over one backward call's operands.
class Pw {
 public:
  // The call's tensors `grad` and `x` in the math type.
  static absl::StatusOr<std::optional<Pw>> Of(Rewriter& r, const char* grad,
                                              const char* x) {
    Node* g = r.Tensor(grad);
    Node* v = r.Tensor(x);
    if (!IsTensor(g) || !IsTensor(v) || !IsTensor(r.node()) ||
        !IsFloatingPoint(TM(r.node()).dtype)) {
      return std::nullopt;
    }
    const DType out = TM(r.node()).dtype, math = OpMath(out);
    ASSIGN_OR_RETURN(g, r.To(g, math));
    ASSIGN_OR_RETURN(v, r.To(v, math));
    return Pw(r, g, v, out);
  }

  Node* g() const { return g_; }
  Node* x() const { return x_; }

  absl::StatusOr<Node*> Mul(Node* a, Arg b) {
    return r_.Binary("aten.mul.Tensor", a, std::move(b));
  }
  absl::StatusOr<Node*> Add(Node* a, Arg b) {
    return r_.Binary("aten.add.Tensor", a, std::move(b));
  }
  absl::StatusOr<Node*> Div(Node* a, Arg b) {
    return r_.Binary("aten.div.Tensor", a, std::move(b));
  }
  // k - a.
  absl::StatusOr<Node*> From(double k, Node* a) {
    return r_.Binary("aten.rsub.Scalar", a, F(k));
  }
  absl::StatusOr<Node*> Unary(const char* op, Node* a) {
    return r_.Unary(op, a);
  }
  // a `cmp` k (le, lt, gt, ge) as a bool tensor.
  absl::StatusOr<Node*> Compare(const char* cmp, Node* a, double k) {
    return r_.Binary(absl::StrCat("aten.", cmp, ".Scalar"), a, F(k));
  }
  absl::StatusOr<Node*> Logical(const char* op, Node* a, Node* b) {
    return r_.Binary(absl::StrCat("aten.logical_", op, ".default"), a, A(b));
  }
  // where(cond, a, b), a and b tensors or numbers.
  absl::StatusOr<Node*> Where(Node* cond, Arg a, Arg b) {
    const bool ta = a.kind == Arg::Kind::kNode, tb = b.kind == Arg::Kind::kNode;
    const char* op = ta && tb ? "aten.where.self"
                     : ta     ? "aten.where.ScalarOther"
                     : tb     ? "aten.where.ScalarSelf"
                              : "aten.where.Scalar";
    return r_.Call(op, {A(cond), std::move(a), std::move(b)});
  }
  // The result, in the op's dtype.
  absl::StatusOr<Outputs> Done(Node* result) {
    ASSIGN_OR_RETURN(result, r_.To(result, out_));
    return Outputs{result};
  }

 private:
  Pw(Rewriter& r, Node* g, Node* x, DType out)
      : r_(r), g_(g), x_(x), out_(out) {}
  Rewriter& r_;
  Node* g_;
  Node* x_;
  DType out_;
};

// Literal numbers among the call's arguments, or nullopt.
std::optional<std::vector<double>> Numbers(
    const Rewriter& r, std::initializer_list<const char*> names) {
  std::vector<double> v;
  for (const char* n : names) {
    std::optional<double> d = r.Number(n);
    if (!d.has_value()) return std::nullopt;
    v.push_back(*d);
  }
  return v;
}

// grad * (y * (1 - y)).
absl::StatusOr<Outputs> SigmoidBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "output"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * one_minus, p->From(1, p->x()));
  ASSIGN_OR_RETURN(Node * d, p->Mul(p->x(), A(one_minus)));
  ASSIGN_OR_RETURN(Node * out, p->Mul(p->g(), A(d)));
  return p->Done(out);
}

// grad * (1 - y * y).
absl::StatusOr<Outputs> TanhBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "output"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * sq, p->Mul(p->x(), A(p->x())));
  ASSIGN_OR_RETURN(Node * d, p->From(1, sq));
  ASSIGN_OR_RETURN(Node * out, p->Mul(p->g(), A(d)));
  return p->Done(out);
}

// where(self <= threshold, 0, grad).
absl::StatusOr<Outputs> ThresholdBackward(Rewriter& r) {
  std::optional<std::vector<double>> k = Numbers(r, {"threshold"});
  if (!k) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * off, p->Compare("le", p->x(), (*k)[0]));
  ASSIGN_OR_RETURN(Node * out, p->Where(off, F(0), A(p->g())));
  return p->Done(out);
}

// grad * (cdf + x * pdf) (erf), or the tanh form's derivative.
absl::StatusOr<Outputs> GeluBackward(Rewriter& r) {
  Arg approximate = r.Get("approximate");
  if (approximate.kind != Arg::Kind::kString ||
      (approximate.s != "none" && approximate.s != "tanh")) {
    return Outputs{};
  }
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  Node* x = p->x();
  const double kSqrt2 = 1.41421356237309504880,
               kSqrt1_2 = 0.70710678118654752440,
               k2SqrtPi = 1.12837916709551257390;
  if (approximate.s == "tanh") {
    const double beta = kSqrt2 * k2SqrtPi * 0.5, kappa = 0.044715;
    ASSIGN_OR_RETURN(Node * x_sq, p->Mul(x, A(x)));
    ASSIGN_OR_RETURN(Node * x_cube, p->Mul(x_sq, A(x)));
    ASSIGN_OR_RETURN(Node * k_cube, p->Mul(x_cube, F(kappa)));
    ASSIGN_OR_RETURN(Node * sum, p->Add(x, A(k_cube)));
    ASSIGN_OR_RETURN(Node * inner, p->Mul(sum, F(beta)));
    ASSIGN_OR_RETURN(Node * t, p->Unary("aten.tanh.default", inner));
    ASSIGN_OR_RETURN(Node * left, p->Mul(x, F(0.5)));
    ASSIGN_OR_RETURN(Node * right, p->Add(t, F(1)));
    ASSIGN_OR_RETURN(Node * left_d, p->Mul(right, F(0.5)));
    ASSIGN_OR_RETURN(Node * t_sq, p->Mul(t, A(t)));
    ASSIGN_OR_RETURN(Node * tanh_d, p->From(1, t_sq));
    ASSIGN_OR_RETURN(Node * x_sq3, p->Mul(x_sq, F(3 * kappa)));
    ASSIGN_OR_RETURN(Node * inner_d1, p->Add(x_sq3, F(1)));
    ASSIGN_OR_RETURN(Node * inner_d, p->Mul(inner_d1, F(beta)));
    ASSIGN_OR_RETURN(Node * right_d1, p->Mul(left, A(tanh_d)));
    ASSIGN_OR_RETURN(Node * right_d, p->Mul(right_d1, A(inner_d)));
    ASSIGN_OR_RETURN(Node * d, p->Add(left_d, A(right_d)));
    ASSIGN_OR_RETURN(Node * out, p->Mul(p->g(), A(d)));
    return p->Done(out);
  }
  const double beta = k2SqrtPi * kSqrt1_2 * 0.5;
  ASSIGN_OR_RETURN(Node * scaled, p->Mul(x, F(kSqrt1_2)));
  ASSIGN_OR_RETURN(Node * erf, p->Unary("aten.erf.default", scaled));
  ASSIGN_OR_RETURN(Node * erf1, p->Add(erf, F(1)));
  ASSIGN_OR_RETURN(Node * cdf, p->Mul(erf1, F(0.5)));
  ASSIGN_OR_RETURN(Node * x_sq, p->Mul(x, A(x)));
  ASSIGN_OR_RETURN(Node * half_sq, p->Mul(x_sq, F(-0.5)));
  ASSIGN_OR_RETURN(Node * e, p->Unary("aten.exp.default", half_sq));
  ASSIGN_OR_RETURN(Node * pdf, p->Mul(e, F(beta)));
  ASSIGN_OR_RETURN(Node * x_pdf, p->Mul(x, A(pdf)));
  ASSIGN_OR_RETURN(Node * d, p->Add(cdf, A(x_pdf)));
  ASSIGN_OR_RETURN(Node * out, p->Mul(p->g(), A(d)));
  return p->Done(out);
}

// grad * s * (1 + x * (1 - s)), s = sigmoid(x).
absl::StatusOr<Outputs> SiluBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * s, p->Unary("aten.sigmoid.default", p->x()));
  ASSIGN_OR_RETURN(Node * one_minus, p->From(1, s));
  ASSIGN_OR_RETURN(Node * xs, p->Mul(p->x(), A(one_minus)));
  ASSIGN_OR_RETURN(Node * inner, p->Add(xs, F(1)));
  ASSIGN_OR_RETURN(Node * gs, p->Mul(p->g(), A(s)));
  ASSIGN_OR_RETURN(Node * out, p->Mul(gs, A(inner)));
  return p->Done(out);
}

// where(x <= min | x >= max, 0, grad).
absl::StatusOr<Outputs> HardtanhBackward(Rewriter& r) {
  std::optional<std::vector<double>> k = Numbers(r, {"min_val", "max_val"});
  if (!k) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * lo, p->Compare("le", p->x(), (*k)[0]));
  ASSIGN_OR_RETURN(Node * hi, p->Compare("ge", p->x(), (*k)[1]));
  ASSIGN_OR_RETURN(Node * off, p->Logical("or", lo, hi));
  ASSIGN_OR_RETURN(Node * out, p->Where(off, F(0), A(p->g())));
  return p->Done(out);
}

// where(x > 0, grad, grad * negative_slope).
absl::StatusOr<Outputs> LeakyReluBackward(Rewriter& r) {
  std::optional<std::vector<double>> k = Numbers(r, {"negative_slope"});
  std::optional<bool> is_result = r.Bool("self_is_result");
  // In place with a negative slope is PyTorch's error: the kernel's.
  if (!k || !is_result || (*is_result && (*k)[0] < 0)) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * pos, p->Compare("gt", p->x(), 0));
  ASSIGN_OR_RETURN(Node * neg, p->Mul(p->g(), F((*k)[0])));
  ASSIGN_OR_RETURN(Node * out, p->Where(pos, A(p->g()), A(neg)));
  return p->Done(out);
}

// where(v <= 0, the negative side's derivative, grad * scale), v the input
// or (is_result) the result.
absl::StatusOr<Outputs> EluBackward(Rewriter& r) {
  std::optional<std::vector<double>> k =
      Numbers(r, {"alpha", "scale", "input_scale"});
  std::optional<bool> is_result = r.Bool("is_result");
  if (!k || !is_result || (*is_result && (*k)[0] < 0)) return Outputs{};
  const double neg = (*k)[0] * (*k)[1], pos = (*k)[1], in = (*k)[2];
  ASSIGN_OR_RETURN(std::optional<Pw> p,
                   Pw::Of(r, "grad_output", "self_or_result"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * below, p->Compare("le", p->x(), 0));
  ASSIGN_OR_RETURN(Node * g_in, p->Mul(p->g(), F(in)));
  Node* neg_d = nullptr;
  if (*is_result) {
    ASSIGN_OR_RETURN(Node * shifted, p->Add(p->x(), F(neg)));
    ASSIGN_OR_RETURN(neg_d, p->Mul(g_in, A(shifted)));
  } else {
    ASSIGN_OR_RETURN(Node * g_neg, p->Mul(g_in, F(neg)));
    ASSIGN_OR_RETURN(Node * xs, p->Mul(p->x(), F(in)));
    ASSIGN_OR_RETURN(Node * e, p->Unary("aten.exp.default", xs));
    ASSIGN_OR_RETURN(neg_d, p->Mul(g_neg, A(e)));
  }
  ASSIGN_OR_RETURN(Node * pos_d, p->Mul(p->g(), F(pos)));
  ASSIGN_OR_RETURN(Node * out, p->Where(below, A(neg_d), A(pos_d)));
  return p->Done(out);
}

// where(x * beta > threshold, grad, grad * z / (z + 1)), z = exp(x * beta).
absl::StatusOr<Outputs> SoftplusBackward(Rewriter& r) {
  std::optional<std::vector<double>> k = Numbers(r, {"beta", "threshold"});
  if (!k) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * xb, p->Mul(p->x(), F((*k)[0])));
  ASSIGN_OR_RETURN(Node * z, p->Unary("aten.exp.default", xb));
  ASSIGN_OR_RETURN(Node * gz, p->Mul(p->g(), A(z)));
  ASSIGN_OR_RETURN(Node * z1, p->Add(z, F(1)));
  ASSIGN_OR_RETURN(Node * d, p->Div(gz, A(z1)));
  ASSIGN_OR_RETURN(Node * linear, p->Compare("gt", xb, (*k)[1]));
  ASSIGN_OR_RETURN(Node * out, p->Where(linear, A(p->g()), A(d)));
  return p->Done(out);
}

// where(x < -3, 0, where(x <= 3, grad * (x / 3 + 0.5), grad)).
absl::StatusOr<Outputs> HardswishBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * third, p->Div(p->x(), F(3)));
  ASSIGN_OR_RETURN(Node * slope, p->Add(third, F(0.5)));
  ASSIGN_OR_RETURN(Node * mid, p->Mul(p->g(), A(slope)));
  ASSIGN_OR_RETURN(Node * upto3, p->Compare("le", p->x(), 3));
  ASSIGN_OR_RETURN(Node * inner, p->Where(upto3, A(mid), A(p->g())));
  ASSIGN_OR_RETURN(Node * below, p->Compare("lt", p->x(), -3));
  ASSIGN_OR_RETURN(Node * out, p->Where(below, F(0), A(inner)));
  return p->Done(out);
}

// where(-3 < x < 3, grad / 6, 0).
absl::StatusOr<Outputs> HardsigmoidBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * above, p->Compare("gt", p->x(), -3));
  ASSIGN_OR_RETURN(Node * below, p->Compare("lt", p->x(), 3));
  ASSIGN_OR_RETURN(Node * in, p->Logical("and", above, below));
  ASSIGN_OR_RETURN(Node * sixth, p->Mul(p->g(), F(1.0 / 6.0)));
  ASSIGN_OR_RETURN(Node * out, p->Where(in, A(sixth), F(0)));
  return p->Done(out);
}

// grad * (t + x * sigmoid(x) * (1 - t * t)), t = tanh(softplus(x)).
absl::StatusOr<Outputs> MishBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return Outputs{};
  ASSIGN_OR_RETURN(Node * sp, p->Unary("aten.softplus.default", p->x()));
  ASSIGN_OR_RETURN(Node * t, p->Unary("aten.tanh.default", sp));
  ASSIGN_OR_RETURN(Node * s, p->Unary("aten.sigmoid.default", p->x()));
  ASSIGN_OR_RETURN(Node * t_sq, p->Mul(t, A(t)));
  ASSIGN_OR_RETURN(Node * one_minus, p->From(1, t_sq));
  ASSIGN_OR_RETURN(Node * xs, p->Mul(p->x(), A(s)));
  ASSIGN_OR_RETURN(Node * rest, p->Mul(xs, A(one_minus)));
  ASSIGN_OR_RETURN(Node * d, p->Add(t, A(rest)));
  ASSIGN_OR_RETURN(Node * out, p->Mul(p->g(), A(d)));
  return p->Done(out);
}

// ---- Softmax's and the losses' backwards -----------------------------------

// _softmax_backward_data (compute_only_pw_cast_for_opmath): g * y - y *
// sum(g * y, dim); _log_softmax_backward_data: g - exp(y) * sum(g, dim);
// contiguous, in the op's result dtype.
absl::StatusOr<Outputs> SoftmaxBackwardData(Rewriter& r, bool log) {
  std::optional<int64_t> dim = r.Int("dim");
  if (!dim.has_value()) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "output"));
  if (!p) return Outputs{};
  const int64_t rank = TM(p->g()).dim();
  if (rank == 0 || *dim < -rank || *dim >= rank) return Outputs{};
  const std::vector<int64_t> dims = {*dim < 0 ? *dim + rank : *dim};
  Node* out = nullptr;
  if (log) {
    ASSIGN_OR_RETURN(Node * s, Sum(r, p->g(), dims, /*keepdim=*/true));
    ASSIGN_OR_RETURN(Node * e, p->Unary("aten.exp.default", p->x()));
    ASSIGN_OR_RETURN(Node * es, p->Mul(e, A(s)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.sub.Tensor", p->g(), A(es)));
  } else {
    ASSIGN_OR_RETURN(Node * gy, p->Mul(p->g(), A(p->x())));
    ASSIGN_OR_RETURN(Node * s, Sum(r, gy, dims, /*keepdim=*/true));
    ASSIGN_OR_RETURN(Node * ys, p->Mul(p->x(), A(s)));
    ASSIGN_OR_RETURN(out, r.Binary("aten.sub.Tensor", gy, A(ys)));
  }
  ASSIGN_OR_RETURN(Outputs o, p->Done(out));
  ASSIGN_OR_RETURN(o[0], r.Contiguous(o[0]));
  return o;
}
absl::StatusOr<Outputs> SoftmaxBackward(Rewriter& r) {
  return SoftmaxBackwardData(r, false);
}
absl::StatusOr<Outputs> LogSoftmaxBackward(Rewriter& r) {
  return SoftmaxBackwardData(r, true);
}

// A pointwise loss's backward: the operands (self, target, grad_output) in
// the math type, target the shape of self (else the call stays), and
// norm * grad_output, norm 1 / numel(self) for the mean.
struct LossGrad {
  Pw p;
  Node* target;
  Node* norm_grad;
};
absl::StatusOr<std::optional<LossGrad>> LossGradOf(Rewriter& r) {
  std::optional<int64_t> reduction = r.Int("reduction");
  Node* target = r.Tensor("target");
  if (!reduction.has_value() || *reduction < 0 || *reduction > 2 ||
      !IsTensor(target) || TM(target).sizes != TM(r.Tensor("self")).sizes) {
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(std::optional<Pw> p, Pw::Of(r, "grad_output", "self"));
  if (!p) return std::nullopt;
  ASSIGN_OR_RETURN(target, r.To(target, TM(p->x()).dtype));
  Node* norm_grad = p->g();
  if (*reduction == 1) {
    ASSIGN_OR_RETURN(Arg n, r.Count(p->x(), AllDims(TM(p->x()).dim())));
    ASSIGN_OR_RETURN(norm_grad, p->Div(norm_grad, n));
  }
  return LossGrad{*p, target, norm_grad};
}

// mse_loss_backward: 2 * norm * (x - t) * grad.
absl::StatusOr<Outputs> MseLossBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<LossGrad> l, LossGradOf(r));
  if (!l) return Outputs{};
  ASSIGN_OR_RETURN(Node * d,
                   r.Binary("aten.sub.Tensor", l->p.x(), A(l->target)));
  ASSIGN_OR_RETURN(Node * d2, l->p.Mul(d, F(2)));
  ASSIGN_OR_RETURN(Node * out, l->p.Mul(d2, A(l->norm_grad)));
  return l->p.Done(out);
}

// smooth_l1_loss_backward and huber_loss_backward, as the CPU kernels
// branch (d = x - t): d <= -k: -ng * s; d >= k: ng * s; else ng * d / b,
// with (k, s, b) = (beta, 1, beta) for smooth_l1 and (delta, delta, 1) for
// huber, ng = norm * grad; smooth_l1 with beta <= 0 is l1's, sign(d) * ng.
absl::StatusOr<Outputs> SteppedLossBackward(Rewriter& r, bool huber) {
  std::optional<double> k = r.Number(huber ? "delta" : "beta");
  if (!k.has_value()) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<LossGrad> l, LossGradOf(r));
  if (!l) return Outputs{};
  Pw& p = l->p;
  ASSIGN_OR_RETURN(Node * d, r.Binary("aten.sub.Tensor", p.x(), A(l->target)));
  if (!huber && *k <= 0) {
    ASSIGN_OR_RETURN(Node * sign, p.Unary("aten.sign.default", d));
    ASSIGN_OR_RETURN(Node * out, p.Mul(sign, A(l->norm_grad)));
    return p.Done(out);
  }
  const double step = huber ? *k : 1, scale = huber ? 1 : 1 / *k;
  ASSIGN_OR_RETURN(Node * up, p.Mul(l->norm_grad, F(step)));
  ASSIGN_OR_RETURN(Node * down, p.Mul(l->norm_grad, F(-step)));
  ASSIGN_OR_RETURN(Node * dg, p.Mul(d, A(l->norm_grad)));
  ASSIGN_OR_RETURN(Node * mid, p.Mul(dg, F(scale)));
  ASSIGN_OR_RETURN(Node * high, p.Compare("ge", d, *k));
  ASSIGN_OR_RETURN(Node * inner, p.Where(high, A(up), A(mid)));
  ASSIGN_OR_RETURN(Node * low, p.Compare("le", d, -*k));
  ASSIGN_OR_RETURN(Node * out, p.Where(low, A(down), A(inner)));
  return p.Done(out);
}
absl::StatusOr<Outputs> SmoothL1LossBackward(Rewriter& r) {
  return SteppedLossBackward(r, false);
}
absl::StatusOr<Outputs> HuberLossBackward(Rewriter& r) {
  return SteppedLossBackward(r, true);
}

// binary_cross_entropy_backward: grad * (x - t) / max(x * (1 - x), 1e-12)
// (NaN stays NaN), times weight, over numel for the mean.
absl::StatusOr<Outputs> BinaryCrossEntropyBackward(Rewriter& r) {
  Node* weight = r.Tensor("weight");
  ASSIGN_OR_RETURN(std::optional<LossGrad> l, LossGradOf(r));
  if (!l) return Outputs{};
  Pw& p = l->p;
  ASSIGN_OR_RETURN(Node * d, r.Binary("aten.sub.Tensor", p.x(), A(l->target)));
  ASSIGN_OR_RETURN(Node * gd, p.Mul(d, A(l->norm_grad)));
  ASSIGN_OR_RETURN(Node * rest, p.From(1, p.x()));
  ASSIGN_OR_RETURN(Node * var, p.Mul(rest, A(p.x())));
  ASSIGN_OR_RETURN(Node * tiny, p.Compare("lt", var, 1e-12));
  ASSIGN_OR_RETURN(Node * floor, p.Where(tiny, F(1e-12), A(var)));
  ASSIGN_OR_RETURN(Node * out, p.Div(gd, A(floor)));
  if (weight != nullptr) {
    if (!IsTensor(weight)) return Outputs{};
    ASSIGN_OR_RETURN(weight, r.To(weight, TM(p.x()).dtype));
    ASSIGN_OR_RETURN(out, p.Mul(out, A(weight)));
  }
  return p.Done(out);
}

// nll_loss_backward and nll_loss2d_backward (decompositions.py; the
// classes are dim 1 of a 2-d or 4-d self): -1 scattered at each sample's
// target (0 where it is ignore_index) into zeros like self, times the
// sample's gradient (over total_weight for the mean) and the target's
// weight. The scatter keeps the range check of the target.
absl::StatusOr<Outputs> NllLossBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_output");
  Node* self = r.Tensor("self");
  Node* target = r.Tensor("target");
  Node* weight = r.Tensor("weight");
  Node* total = r.Tensor("total_weight");
  std::optional<int64_t> reduction = r.Int("reduction");
  std::optional<int64_t> ignore = r.Int("ignore_index");
  if (!IsTensor(grad) || !IsTensor(self) || !IsTensor(target) ||
      !IsTensor(total) || !reduction || !ignore ||
      (weight != nullptr && !IsTensor(weight)) || TM(self).dim() < 1 ||
      (TM(self).dim() > 2 && (TM(self).dim() != 4 || TM(target).dim() != 3)) ||
      !IsFloatingPoint(TM(self).dtype)) {
    return Outputs{};
  }
  const int64_t channel = TM(self).dim() < 2 ? 0 : 1;
  const DType dtype = TM(self).dtype, math = OpMath(dtype);
  ASSIGN_OR_RETURN(grad, r.To(grad, math));
  if (*reduction == 1) {
    ASSIGN_OR_RETURN(Node * tw, r.To(total, math));
    ASSIGN_OR_RETURN(grad, r.Binary("aten.div.Tensor", grad, A(tw)));
  }
  ASSIGN_OR_RETURN(Node * t,
                   r.Binary("aten.unsqueeze.default", target, I(channel)));
  ASSIGN_OR_RETURN(Node * kept, r.Binary("aten.ne.Scalar", t, I(*ignore)));
  ASSIGN_OR_RETURN(Node * safe,
                   r.Call("aten.where.ScalarOther", {A(kept), A(t), I(0)}));
  ASSIGN_OR_RETURN(Node * zeros, r.Call("aten.zeros_like.default", {A(self)},
                                        {{"dtype", Arg::OfDType(math)}}));
  ASSIGN_OR_RETURN(Node * hot, r.Call("aten.scatter.value",
                                      {A(zeros), I(channel), A(safe), F(-1)}));
  if (TM(self).dim() > TM(grad).dim() && TM(grad).dim() > 0) {
    ASSIGN_OR_RETURN(grad,
                     r.Binary("aten.unsqueeze.default", grad, I(channel)));
  }
  if (weight != nullptr) {
    std::vector<int64_t> shape(TM(self).dim(), 1);
    shape[channel] = -1;  // the classes, however many
    ASSIGN_OR_RETURN(Node * w, r.To(weight, math));
    ASSIGN_OR_RETURN(w, r.Binary("aten.reshape.default", w, IntList(shape)));
    ASSIGN_OR_RETURN(grad, r.Binary("aten.mul.Tensor", grad, A(w)));
  }
  ASSIGN_OR_RETURN(grad,
                   r.Call("aten.where.ScalarOther", {A(kept), A(grad), F(0)}));
  ASSIGN_OR_RETURN(Node * out, r.Binary("aten.mul.Tensor", hot, A(grad)));
  ASSIGN_OR_RETURN(out, r.To(out, dtype));
  ASSIGN_OR_RETURN(out, r.Contiguous(out));
  return Outputs{out};
}

// Every backward op of an elementwise or row-wise forward the pass
// decomposes, and how.
constexpr Decomposition kPointwiseBackwardDecompositions[] = {
    {"aten._log_softmax_backward_data.default", LogSoftmaxBackward},
    {"aten._softmax_backward_data.default", SoftmaxBackward},
    {"aten.binary_cross_entropy_backward.default", BinaryCrossEntropyBackward},
    {"aten.elu_backward.default", EluBackward},
    {"aten.gelu_backward.default", GeluBackward},
    {"aten.hardsigmoid_backward.default", HardsigmoidBackward},
    {"aten.hardswish_backward.default", HardswishBackward},
    {"aten.hardtanh_backward.default", HardtanhBackward},
    {"aten.huber_loss_backward.default", HuberLossBackward},
    {"aten.leaky_relu_backward.default", LeakyReluBackward},
    {"aten.mish_backward.default", MishBackward},
    {"aten.mse_loss_backward.default", MseLossBackward},
    {"aten.nll_loss2d_backward.default", NllLossBackward},
    {"aten.nll_loss_backward.default", NllLossBackward},
    {"aten.sigmoid_backward.default", SigmoidBackward},
    {"aten.silu_backward.default", SiluBackward},
    {"aten.smooth_l1_loss_backward.default", SmoothL1LossBackward},
    {"aten.softplus_backward.default", SoftplusBackward},
    {"aten.tanh_backward.default", TanhBackward},
    {"aten.threshold_backward.default", ThresholdBackward},
};

}  // namespace

absl::Span<const Decomposition> PointwiseBackwardDecompositions() {
  return kPointwiseBackwardDecompositions;
}

}  // namespace lathe::passes::decomp
