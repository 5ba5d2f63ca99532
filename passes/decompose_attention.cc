#include "passes/decompose_attention.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/output_layouts.h"
#include "passes/rewriter.h"
#include "runtime/dtype.h"
#include "status_macros.h"

namespace lathe::passes::decomp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The scores' scale: `scale_arg` when given, else 1 / sqrt(E) (rsqrt of a
// 0-d tensor for a symbolic E).
absl::StatusOr<Arg> Scale(Rewriter& r, const Arg& scale_arg, const Arg& e,
                          const Device& device) {
  if (scale_arg.kind != Arg::Kind::kNone) return F(NumberOf(scale_arg));
  if (e.kind == Arg::Kind::kInt) {
    return F(1.0 / std::sqrt(static_cast<double>(e.i)));
  }
  ASSIGN_OR_RETURN(Node * t, r.ScalarTensor(e, DType::kFloat64, device));
  ASSIGN_OR_RETURN(t, r.Unary("aten.rsqrt.default", t));
  return A(t);
}

// Whether q may take the scale instead of the scores: a constant power of
// two no greater than 1, for a dtype with float32's exponent range or more
// (float16's underflows sooner). q * scale is then exact unless it falls
// below the normal range (an |q| under 2^-126 / scale), and every score
// q k^T * scale is what it was; a scale above 1 could overflow q.
bool ExactScale(const Arg& scale, DType dtype) {
  if (scale.kind != Arg::Kind::kFloat || !std::isfinite(scale.f) ||
      scale.f <= 0 || scale.f > 1) {
    return false;
  }
  int exponent = 0;
  return std::frexp(scale.f, &exponent) == 0.5 &&
         (dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
          dtype == DType::kBFloat16);
}

// The forward's results: the output laid out as the query, and the
// logsumexp [B, H, L] (laid out [B, L, H]) in the computation dtype.
struct Forward {
  Node* out;
  Node* lse;
};

// The CPU flash kernel's forward on the rule's query, key and value with
// `mask` (null: none), dropout_p = 0: the math path, with the scale applied
// to the scores as the CPU kernel does; nullopt where it does not apply.
// scores = bmm(q, k^T) * scale (default 1 / sqrt(E)), -inf above the
// diagonal when causal (top-left aligned), plus attn_mask; a softmax over
// the keys by amax, exp and sum, whose log-sum-exp is the second result
// ([B, H, L] laid out as [B, L, H], as the kernel writes it); then
// bmm(p, v), laid out as the query (empty_like, as PyTorch's meta). All in
// the computation dtype (float32 for 16-bit floats), except that, as in the
// kernel, 16-bit q, k and v enter the products as they are (bmm.dtype, a
// float32 product), and p @ v takes the exps rounded to their dtype, its
// product multiplied by the sum's reciprocal after. (PyTorch's CUDA
// kernels round their weights before p @ v too.)
absl::StatusOr<std::optional<Forward>> Attention(Rewriter& r, Node* mask) {
  Node* query = r.Tensor("query");
  Node* key = r.Tensor("key");
  Node* value = r.Tensor("value");
  std::optional<double> dropout = r.Number("dropout_p");
  std::optional<bool> causal = r.Bool("is_causal");
  Arg scale_arg = r.Get("scale");
  if (!IsTensor(query) || !IsTensor(key) || !IsTensor(value) ||
      !dropout.has_value() || *dropout != 0 || !causal.has_value() ||
      (scale_arg.kind != Arg::Kind::kNone && !IsNumber(scale_arg)) ||
      TM(query).dim() != 4 || TM(key).dim() != 4 || TM(value).dim() != 4 ||
      !IsFloatingPoint(TM(query).dtype)) {
    return std::nullopt;
  }
  const TensorMeta& qm = TM(query);
  DType compute = OpMath(qm.dtype);
  ASSIGN_OR_RETURN(Arg b, r.Size(query, 0));
  ASSIGN_OR_RETURN(Arg h, r.Size(query, 1));
  ASSIGN_OR_RETURN(Arg l, r.Size(query, 2));
  ASSIGN_OR_RETURN(Arg e, r.Size(query, 3));
  ASSIGN_OR_RETURN(Arg scale, Scale(r, scale_arg, e, qm.device));
  ASSIGN_OR_RETURN(Arg s, r.Size(key, 2));
  ASSIGN_OR_RETURN(Arg bh, SizeOp(r, "operator.mul", b, h));
  // 16-bit operands stay 16-bit in the products, each product in the
  // computation dtype, as the kernel's gemms read them (a target's bf16
  // routine takes them so); the rest is in the computation dtype.
  const bool reduced = compute != qm.dtype && TM(key).dtype == qm.dtype &&
                       TM(value).dtype == qm.dtype;
  // [B, H, T, E] as [B * H, T, E], in the products' operand dtype.
  auto batched = [&](Node* t, const Arg& len) -> absl::StatusOr<Node*> {
    if (!reduced) {
      ASSIGN_OR_RETURN(t, r.To(t, compute));
    }
    ASSIGN_OR_RETURN(t, r.Contiguous(t));
    return r.Call("aten.view.default", {A(t), Arg::List({bh, len, e})});
  };
  // a @ c in the computation dtype.
  auto bmm = [&](Node* a, Node* c) -> absl::StatusOr<Node*> {
    if (!reduced) return r.Binary("aten.bmm.default", a, A(c));
    return r.Call("aten.bmm.dtype", {A(a), A(c), Arg::OfDType(compute)});
  };
  ASSIGN_OR_RETURN(Node * q, batched(query, l));
  ASSIGN_OR_RETURN(Node * k, batched(key, s));
  ASSIGN_OR_RETURN(Node * v, batched(value, s));
  // A power-of-two scale (1 / sqrt(E) for E = 64) multiplies q instead of
  // the scores (ExactScale): the same scores, one multiply per query
  // element, in q's copy, rather than one per score in a kernel of its own.
  const bool scale_q = ExactScale(scale, TM(q).dtype);
  if (scale_q) {
    ASSIGN_OR_RETURN(q, r.Binary("aten.mul.Tensor", q, scale));
  }
  ASSIGN_OR_RETURN(Node * kt, r.Call("aten.transpose.int", {A(k), I(1), I(2)}));
  ASSIGN_OR_RETURN(Node * scores, bmm(q, kt));
  if (!scale_q) {
    ASSIGN_OR_RETURN(scores, r.Binary("aten.mul.Tensor", scores, scale));
  }
  ASSIGN_OR_RETURN(scores, r.Call("aten.view.default",
                                  {A(scores), Arg::List({b, h, l, s})}));
  // The softmax's max reads the scores as the kernel makes them: -inf
  // above the diagonal, then attn_mask added (a +inf or NaN there makes the
  // row NaN, as in PyTorch). Its exp reads them without the causal fill.
  Node* m = nullptr;
  if (mask != nullptr) {
    ASSIGN_OR_RETURN(m, r.To(mask, compute));
  }
  auto plus_mask = [&](Node* x) -> absl::StatusOr<Node*> {
    if (m == nullptr) return x;
    return r.Binary("aten.add.Tensor", x, A(m));
  };
  Node* raw = scores;
  ASSIGN_OR_RETURN(scores, plus_mask(raw));
  Node* above = nullptr;
  Node* masked = scores;
  MaskedLanes lanes;
  if (*causal) {
    ASSIGN_OR_RETURN(above, CausalMask(r, l, s, qm.device));
    ASSIGN_OR_RETURN(lanes, MaskLanes(r, above, compute));
    ASSIGN_OR_RETURN(Node * filled,
                     r.Call("aten.masked_fill.Scalar",
                            {A(raw), A(above),
                             F(-std::numeric_limits<double>::infinity())}));
    ASSIGN_OR_RETURN(masked, plus_mask(filled));
  }
  ASSIGN_OR_RETURN(
      Node * max,
      r.Call("aten.amax.default", {A(masked), IntList({-1}), Arg::Bool(true)}));
  // exp of the unmasked scores, the causal lanes filled with 0 after; a row
  // whose every lane is -inf (fully masked) is shifted by 0, not by its
  // -inf max, and its sum of 0 taken as 1, so its weights, its output and
  // its log-sum-exp are 0, as the kernel's.
  ASSIGN_OR_RETURN(Node * all_masked,
                   r.Binary("aten.eq.Scalar", max,
                            F(-std::numeric_limits<double>::infinity())));
  ASSIGN_OR_RETURN(Node * shift, r.Call("aten.where.ScalarSelf",
                                        {A(all_masked), F(0.0), A(max)}));
  ASSIGN_OR_RETURN(Node * shifted,
                   r.Binary("aten.sub.Tensor", scores, A(shift)));
  ASSIGN_OR_RETURN(Node * exp, ExpUnmasked(r, shifted, lanes));
  ASSIGN_OR_RETURN(
      Node * sum,
      r.Call("aten.sum.dim_IntList", {A(exp), IntList({-1}), Arg::Bool(true)}));
  ASSIGN_OR_RETURN(
      sum, r.Call("aten.where.ScalarSelf", {A(all_masked), F(1.0), A(sum)}));
  // The weights: exp / sum; or, as the kernel, with 16-bit operands, the
  // exps rounded to their dtype, the product multiplied by the sum's
  // reciprocal after. (The kernel takes the exps against a running max, key
  // block by key block of 512; this takes them against the row's max, the
  // same for rows of up to 512 keys.)
  ASSIGN_OR_RETURN(Node * p, reduced
                                 ? r.To(exp, qm.dtype)
                                 : r.Binary("aten.div.Tensor", exp, A(sum)));
  ASSIGN_OR_RETURN(p,
                   r.Call("aten.view.default", {A(p), Arg::List({bh, l, s})}));
  ASSIGN_OR_RETURN(Node * out, bmm(p, v));
  ASSIGN_OR_RETURN(
      out, r.Call("aten.view.default", {A(out), Arg::List({b, h, l, e})}));
  if (reduced) {
    ASSIGN_OR_RETURN(Node * inverse, r.Unary("aten.reciprocal.default", sum));
    ASSIGN_OR_RETURN(out, r.Binary("aten.mul.Tensor", out, A(inverse)));
  }
  ASSIGN_OR_RETURN(out, r.To(out, qm.dtype));
  ASSIGN_OR_RETURN(out, LaidOutAs(r, out, qm));
  // logsumexp = max + log(sum) (0 for a fully masked row), [B, H, L] with
  // [B, L, H]'s layout.
  ASSIGN_OR_RETURN(Node * lse, r.Unary("aten.log.default", sum));
  ASSIGN_OR_RETURN(lse, r.Binary("aten.add.Tensor", lse, A(shift)));
  ASSIGN_OR_RETURN(lse, r.Call("aten.squeeze.dims", {A(lse), IntList({3})}));
  ASSIGN_OR_RETURN(
      lse, r.Call("aten.permute.default", {A(lse), IntList({0, 2, 1})}));
  ASSIGN_OR_RETURN(lse, r.Contiguous(lse));
  ASSIGN_OR_RETURN(
      lse, r.Call("aten.permute.default", {A(lse), IntList({0, 2, 1})}));
  return Forward{out, lse};
}

// The backward's gradients, each laid out (B, T, H, E), and the scores'
// gradient when asked for.
struct Backward {
  Node* dq = nullptr;
  Node* dk = nullptr;
  Node* dv = nullptr;
  Node* scores = nullptr;
};

// The CPU flash kernel's backward on the rule's query, key, value and out,
// with `grad` (the output's gradient), `lse` (the forward's logsumexp, [B,
// H, L]) and `mask` (null: none), through batched matrix products in the
// computation dtype: P = exp(scores - logsumexp)
// (scores as the forward's: q k^T * scale, causal -inf above the diagonal,
// plus the mask), dV = P^T dO, dS = P * (dO v^T - rowsum(dO * out)), dQ =
// dS k * scale, dK = dS^T q * scale; each gradient laid out (B, T, H, E)
// as PyTorch's kernel allocates it; with `want_scores`, dS too, as [B, H, L, S]
// in the computation dtype. nullopt where it does not apply.
absl::StatusOr<std::optional<Backward>> AttentionBackward(Rewriter& r,
                                                          Node* grad, Node* lse,
                                                          Node* mask,
                                                          bool want_scores) {
  Node* query = r.Tensor("query");
  Node* key = r.Tensor("key");
  Node* value = r.Tensor("value");
  Node* out = r.Tensor("out");
  std::optional<double> dropout = r.Number("dropout_p");
  std::optional<bool> causal = r.Bool("is_causal");
  Arg scale_arg = r.Get("scale");
  for (Node* t : {grad, query, key, value, out}) {
    if (!IsTensor(t) || TM(t).dim() != 4) return std::nullopt;
  }
  if (!IsTensor(lse) || !dropout || *dropout != 0 || !causal ||
      (scale_arg.kind != Arg::Kind::kNone && !IsNumber(scale_arg)) ||
      !IsFloatingPoint(TM(query).dtype)) {
    return std::nullopt;
  }
  const TensorMeta& qm = TM(query);
  const DType compute = OpMath(qm.dtype);
  ASSIGN_OR_RETURN(Arg b, r.Size(query, 0));
  ASSIGN_OR_RETURN(Arg h, r.Size(query, 1));
  ASSIGN_OR_RETURN(Arg l, r.Size(query, 2));
  ASSIGN_OR_RETURN(Arg e, r.Size(query, 3));
  ASSIGN_OR_RETURN(Arg s, r.Size(key, 2));
  ASSIGN_OR_RETURN(Arg scale, Scale(r, scale_arg, e, qm.device));
  ASSIGN_OR_RETURN(Arg bh, SizeOp(r, "operator.mul", b, h));
  auto batched = [&](Node* t, const Arg& len) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(t, r.To(t, compute));
    ASSIGN_OR_RETURN(t, r.Contiguous(t));
    return r.Call("aten.view.default", {A(t), Arg::List({bh, len, e})});
  };
  auto transposed = [&](Node* t) {
    return r.Call("aten.transpose.int", {A(t), I(1), I(2)});
  };
  auto bmm = [&](Node* a, Node* c) {
    return r.Binary("aten.bmm.default", a, A(c));
  };
  ASSIGN_OR_RETURN(Node * q, batched(query, l));
  ASSIGN_OR_RETURN(Node * k, batched(key, s));
  ASSIGN_OR_RETURN(Node * v, batched(value, s));
  ASSIGN_OR_RETURN(Node * dout, batched(grad, l));
  ASSIGN_OR_RETURN(Node * o, batched(out, l));
  ASSIGN_OR_RETURN(Node * kt, transposed(k));
  ASSIGN_OR_RETURN(Node * scores, bmm(q, kt));
  ASSIGN_OR_RETURN(scores, r.Binary("aten.mul.Tensor", scores, scale));
  ASSIGN_OR_RETURN(scores, r.Call("aten.view.default",
                                  {A(scores), Arg::List({b, h, l, s})}));
  if (mask != nullptr) {
    if (!IsTensor(mask)) return std::nullopt;
    ASSIGN_OR_RETURN(Node * m, r.To(mask, compute));
    ASSIGN_OR_RETURN(scores, r.Binary("aten.add.Tensor", scores, A(m)));
  }
  // The forward's weights again: exp(scores - lse), the causal lanes 0
  // (PyTorch's kernel takes exp(-inf + attn_mask - lse) there, NaN only
  // where attn_mask is +inf or NaN, whose rows the forward made NaN).
  MaskedLanes lanes;
  if (*causal) {
    ASSIGN_OR_RETURN(Node * above, CausalMask(r, l, s, qm.device));
    ASSIGN_OR_RETURN(lanes, MaskLanes(r, above, compute));
  }
  ASSIGN_OR_RETURN(Node * lse4, r.To(lse, compute));
  ASSIGN_OR_RETURN(lse4, r.Binary("aten.unsqueeze.default", lse4, I(3)));
  ASSIGN_OR_RETURN(Node * shifted,
                   r.Binary("aten.sub.Tensor", scores, A(lse4)));
  ASSIGN_OR_RETURN(Node * p, ExpUnmasked(r, shifted, lanes));
  ASSIGN_OR_RETURN(p,
                   r.Call("aten.view.default", {A(p), Arg::List({bh, l, s})}));
  ASSIGN_OR_RETURN(Node * pt, transposed(p));
  ASSIGN_OR_RETURN(Node * dv, bmm(pt, dout));
  ASSIGN_OR_RETURN(Node * vt, transposed(v));
  ASSIGN_OR_RETURN(Node * dp, bmm(dout, vt));
  ASSIGN_OR_RETURN(Node * go, r.Binary("aten.mul.Tensor", dout, A(o)));
  ASSIGN_OR_RETURN(Node * d, Sum(r, go, {2}, /*keepdim=*/true));
  ASSIGN_OR_RETURN(Node * diff, r.Binary("aten.sub.Tensor", dp, A(d)));
  ASSIGN_OR_RETURN(Node * ds, r.Binary("aten.mul.Tensor", p, A(diff)));
  ASSIGN_OR_RETURN(Node * dq, bmm(ds, k));
  ASSIGN_OR_RETURN(dq, r.Binary("aten.mul.Tensor", dq, scale));
  ASSIGN_OR_RETURN(Node * dst, transposed(ds));
  ASSIGN_OR_RETURN(Node * dk, bmm(dst, q));
  ASSIGN_OR_RETURN(dk, r.Binary("aten.mul.Tensor", dk, scale));
  // [B * H, T, E] back to [B, H, T, E], laid out (B, T, H, E).
  auto result = [&](Node* t, const Arg& len) -> absl::StatusOr<Node*> {
    ASSIGN_OR_RETURN(
        t, r.Call("aten.view.default", {A(t), Arg::List({b, h, len, e})}));
    ASSIGN_OR_RETURN(t, r.To(t, qm.dtype));
    ASSIGN_OR_RETURN(
        t, r.Call("aten.permute.default", {A(t), IntList({0, 2, 1, 3})}));
    ASSIGN_OR_RETURN(
        t, r.Call("aten.clone.default", {A(t)},
                  {{"memory_format", Arg::MemoryFormat("contiguous_format")}}));
    return r.Call("aten.permute.default", {A(t), IntList({0, 2, 1, 3})});
  };
  Backward g;
  ASSIGN_OR_RETURN(g.dq, result(dq, l));
  ASSIGN_OR_RETURN(g.dk, result(dk, s));
  ASSIGN_OR_RETURN(g.dv, result(dv, s));
  if (want_scores) {
    ASSIGN_OR_RETURN(g.scores, r.Call("aten.view.default",
                                      {A(ds), Arg::List({b, h, l, s})}));
  }
  return g;
}

// `x` [B, H, T, E] laid out (B, T, H, E), as PyTorch's CUDA kernels
// allocate their outputs and gradients.
absl::StatusOr<Node*> HeadsInner(Rewriter& r, Node* x) {
  ASSIGN_OR_RETURN(
      x, r.Call("aten.permute.default", {A(x), IntList({0, 2, 1, 3})}));
  ASSIGN_OR_RETURN(x, r.Contiguous(x));
  return r.Call("aten.permute.default", {A(x), IntList({0, 2, 1, 3})});
}

// `n` rounded up to a multiple of `m`, as a size.
absl::StatusOr<Arg> RoundUp(Rewriter& r, const Arg& n, int64_t m) {
  ASSIGN_OR_RETURN(Arg t, SizeOp(r, "operator.add", n, I(m - 1)));
  ASSIGN_OR_RETURN(t, SizeOp(r, "operator.floordiv", t, I(m)));
  return SizeOp(r, "operator.mul", t, I(m));
}

// A 0-d int64 zero on the query's device: the random seed and offset of a
// kernel run without dropout.
absl::StatusOr<Node*> Zero(Rewriter& r) {
  return r.ScalarTensor(I(0), DType::kInt64, TM(r.Tensor("query")).device);
}

// _scaled_dot_product_flash_attention_for_cpu.
absl::StatusOr<Outputs> FlashAttentionCpu(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Forward> f,
                   Attention(r, r.Tensor("attn_mask")));
  if (!f) return Outputs{};
  return Outputs{f->out, f->lse};
}

// _scaled_dot_product_flash_attention_for_cpu_backward.
absl::StatusOr<Outputs> FlashAttentionCpuBackward(Rewriter& r) {
  ASSIGN_OR_RETURN(
      std::optional<Backward> g,
      AttentionBackward(r, r.Tensor("grad_out"), r.Tensor("logsumexp"),
                        r.Tensor("attn_mask"), false));
  if (!g) return Outputs{};
  return Outputs{g->dq, g->dk, g->dv};
}

// _scaled_dot_product_efficient_attention: the output laid out (B, L, H,
// E); log_sumexp f32 [B, H, ceil(L / 32) * 32], +inf past L as the kernel
// pads it ([B, H, 0] without compute_log_sumexp); seed and offset 0.
absl::StatusOr<Outputs> EfficientAttention(Rewriter& r) {
  std::optional<bool> with_lse = r.Bool("compute_log_sumexp");
  if (!with_lse) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Forward> f,
                   Attention(r, r.Tensor("attn_bias")));
  if (!f) return Outputs{};
  ASSIGN_OR_RETURN(Node * out, HeadsInner(r, f->out));
  ASSIGN_OR_RETURN(Node * lse, r.To(f->lse, DType::kFloat32));
  ASSIGN_OR_RETURN(Arg l, r.Size(r.Tensor("query"), 2));
  if (*with_lse) {
    ASSIGN_OR_RETURN(Arg width, RoundUp(r, l, 32));
    ASSIGN_OR_RETURN(Arg minus_l, SizeOp(r, "operator.mul", l, I(-1)));
    ASSIGN_OR_RETURN(Arg pad, SizeOp(r, "operator.add", width, minus_l));
    ASSIGN_OR_RETURN(lse, r.Call("aten.constant_pad_nd.default",
                                 {A(lse), Arg::List({I(0), pad}), F(kInf)}));
  } else {
    ASSIGN_OR_RETURN(lse,
                     r.Call("aten.slice.Tensor", {A(lse), I(2), I(0), I(0)}));
  }
  ASSIGN_OR_RETURN(lse, r.Contiguous(lse));
  ASSIGN_OR_RETURN(Node * seed, Zero(r));
  ASSIGN_OR_RETURN(Node * offset, Zero(r));
  return Outputs{out, lse, seed, offset};
}

// `x` [B, H, L, S] summed to `like`'s shape (an additive bias broadcast to
// the scores: its leading dims and its dims of size 1).
absl::StatusOr<Node*> SumToShapeOf(Rewriter& r, Node* x, Node* like) {
  const TensorMeta& m = TM(like);
  const int64_t lead = TM(x).dim() - m.dim();
  if (lead < 0) return nullptr;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  if (!dims.empty()) {
    ASSIGN_OR_RETURN(x, Sum(r, x, dims, /*keepdim=*/false));
  }
  dims.clear();
  for (int64_t d = 0; d < m.dim(); ++d) {
    if (m.sizes[d] == symbolic::Int(1) && TM(x).sizes[d] != symbolic::Int(1)) {
      dims.push_back(d);
    }
  }
  if (!dims.empty()) {
    ASSIGN_OR_RETURN(x, Sum(r, x, dims, /*keepdim=*/true));
  }
  return x;
}

// _scaled_dot_product_efficient_attention_backward: the CPU kernel's
// gradients (laid out (B, T, H, E), as this kernel's) from the first L of
// each logsumexp row, and grad_bias, with a bias and grad_input_mask[3],
// the scores' gradient summed to the bias's shape, its rows padded to 16
// elements in memory.
absl::StatusOr<Outputs> EfficientAttentionBackward(Rewriter& r) {
  Node* query = r.Tensor("query");
  Node* lse = r.Tensor("logsumexp");
  Node* bias = r.Tensor("attn_bias");
  Arg mask = r.Get("grad_input_mask");
  if (!IsTensor(query) || !IsTensor(lse) || TM(query).dim() != 4 ||
      TM(lse).dim() != 3 || mask.kind != Arg::Kind::kList ||
      mask.list.size() != 4 || mask.list[3].kind != Arg::Kind::kBool ||
      (bias != nullptr && !IsTensor(bias))) {
    return Outputs{};
  }
  const bool bias_grad = bias != nullptr && mask.list[3].b;
  ASSIGN_OR_RETURN(Arg l, r.Size(query, 2));
  ASSIGN_OR_RETURN(Node * rows,
                   r.Call("aten.slice.Tensor", {A(lse), I(2), I(0), l}));
  ASSIGN_OR_RETURN(
      std::optional<Backward> g,
      AttentionBackward(r, r.Tensor("grad_out_"), rows, bias, bias_grad));
  if (!g) return Outputs{};
  Outputs outs = {g->dq, g->dk, g->dv, nullptr};
  if (bias_grad) {
    ASSIGN_OR_RETURN(Node * gb, SumToShapeOf(r, g->scores, bias));
    if (gb == nullptr) return Outputs{};
    ASSIGN_OR_RETURN(gb, r.To(gb, TM(bias).dtype));
    // Its rows padded to a multiple of 16 elements in memory, as the
    // kernel allocates it.
    const int64_t last = TM(gb).dim() - 1;
    ASSIGN_OR_RETURN(Arg s, r.Size(gb, last));
    ASSIGN_OR_RETURN(Arg width, RoundUp(r, s, 16));
    ASSIGN_OR_RETURN(Arg minus_s, SizeOp(r, "operator.mul", s, I(-1)));
    ASSIGN_OR_RETURN(Arg pad, SizeOp(r, "operator.add", width, minus_s));
    if (pad.kind != Arg::Kind::kInt || pad.i != 0) {
      ASSIGN_OR_RETURN(gb, r.Call("aten.constant_pad_nd.default",
                                  {A(gb), Arg::List({I(0), pad}), F(0.0)}));
      ASSIGN_OR_RETURN(gb,
                       r.Call("aten.slice.Tensor", {A(gb), I(last), I(0), s}));
    }
    outs[3] = gb;
  }
  return outs;
}

// _scaled_dot_product_cudnn_attention: the output laid out as the query;
// logsumexp f32 [B, H, L, 1]; seed and offset 0; no cumulative lengths or
// debug mask (None), and max_q and max_k, which no rule here makes (the op
// stays where a graph reads them).
absl::StatusOr<Outputs> CudnnAttention(Rewriter& r) {
  ASSIGN_OR_RETURN(std::optional<Forward> f,
                   Attention(r, r.Tensor("attn_bias")));
  if (!f) return Outputs{};
  ASSIGN_OR_RETURN(Node * lse, r.To(f->lse, DType::kFloat32));
  ASSIGN_OR_RETURN(lse, r.Binary("aten.unsqueeze.default", lse, I(3)));
  ASSIGN_OR_RETURN(lse, r.Contiguous(lse));
  ASSIGN_OR_RETURN(Node * seed, Zero(r));
  ASSIGN_OR_RETURN(Node * offset, Zero(r));
  return Outputs{f->out,  lse,  nullptr, nullptr, nullptr,
                 nullptr, seed, offset,  nullptr};
}

// _scaled_dot_product_cudnn_attention_backward: the CPU kernel's gradients,
// each laid out as its input (empty_like).
absl::StatusOr<Outputs> CudnnAttentionBackward(Rewriter& r) {
  Node* lse = r.Tensor("logsumexp");
  if (!IsTensor(lse) || TM(lse).dim() != 4) return Outputs{};
  ASSIGN_OR_RETURN(Node * rows, r.Call("aten.squeeze.dim", {A(lse), I(3)}));
  ASSIGN_OR_RETURN(std::optional<Backward> g,
                   AttentionBackward(r, r.Tensor("grad_out"), rows,
                                     r.Tensor("attn_bias"), false));
  if (!g) return Outputs{};
  Outputs outs;
  const char* inputs[] = {"query", "key", "value"};
  Node* grads[] = {g->dq, g->dk, g->dv};
  for (int k = 0; k < 3; ++k) {
    ASSIGN_OR_RETURN(Node * laid,
                     LaidOutAs(r, grads[k], TM(r.Tensor(inputs[k]))));
    outs.push_back(laid);
  }
  return outs;
}

constexpr Decomposition kAttention[] = {
    {"aten._scaled_dot_product_cudnn_attention.default", CudnnAttention},
    {"aten._scaled_dot_product_cudnn_attention_backward.default",
     CudnnAttentionBackward},
    {"aten._scaled_dot_product_efficient_attention.default",
     EfficientAttention},
    {"aten._scaled_dot_product_efficient_attention_backward.default",
     EfficientAttentionBackward},
    {"aten._scaled_dot_product_flash_attention_for_cpu.default",
     FlashAttentionCpu},
    {"aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
     FlashAttentionCpuBackward},
};

}  // namespace

absl::Span<const Decomposition> AttentionDecompositions() { return kAttention; }

}  // namespace lathe::passes::decomp
