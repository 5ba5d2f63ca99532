// The scaled-dot-product attention ops of PyTorch's CUDA kernels, as
// AOTAutograd's graphs name them where scaled_dot_product_attention runs on
// a GPU: the memory-efficient kernel's (_scaled_dot_product_efficient_
// attention and its backward) and cuDNN's (_scaled_dot_product_cudnn_
// attention and its backward). Their math is the CPU flash kernel's
// (ops_nn.cc, ops_backward.cc), which they call; their results are laid
// out as PyTorch's meta functions lay them out (torch/_meta_registrations.py),
// so a captured graph's annotations hold. Dropout is refused, as for the CPU
// kernel: the random seed and offset they return are 0. The backward loop
// all the attention backwards share (AttentionBackward) is here too.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/ops_nn_util.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

constexpr char kFlashCpu[] =
    "aten._scaled_dot_product_flash_attention_for_cpu.default";
constexpr char kFlashCpuBackward[] =
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default";

// A 0-d int64 tensor holding 0 on `device`: the random seed and offset of a
// kernel run without dropout.
absl::StatusOr<Value> Zero(const OpCall& c, bool running, Device device) {
  ASSIGN_OR_RETURN(Value z,
                   ResultOrEmpty(c, running, DType::kInt64, device, {}, {}));
  if (running) StoreInt(z.tensor, {}, 0);
  return z;
}

// `values` (the CPU kernel's result) copied into a result of their dtype,
// sizes and device laid out with `strides`.
absl::StatusOr<Value> LaidOut(const OpCall& c, bool running,
                              const Value& values, std::vector<Expr> strides) {
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, DTypeOf(values), DeviceOf(values),
                                 SizesOf(values), std::move(strides)));
  if (running) RETURN_IF_ERROR(CopyInto(out.tensor, values.tensor));
  return out;
}

// The CPU flash kernel on the call's query, key and value with `mask`.
absl::StatusOr<Value> Flash(const OpCall& c, bool running, const Value& mask) {
  return CallOp(c, running, kFlashCpu,
                {c.arg("query"), c.arg("key"), c.arg("value"),
                 c.arg("dropout_p"), c.arg("is_causal")},
                {{"attn_mask", mask}, {"scale", c.arg("scale")}});
}

// The CPU flash kernel's backward on the call's tensors, with `lse` (its
// [B, H, L] logsumexp) and `mask`.
absl::StatusOr<Value> FlashBackward(const OpCall& c, bool running,
                                    const Value& grad, const Value& lse,
                                    const Value& mask) {
  return CallOp(c, running, kFlashCpuBackward,
                {grad, c.arg("query"), c.arg("key"), c.arg("value"),
                 c.arg("out"), lse, c.arg("dropout_p"), c.arg("is_causal")},
                {{"attn_mask", mask}, {"scale", c.arg("scale")}});
}

// _scaled_dot_product_efficient_attention(query, key, value, attn_bias,
// compute_log_sumexp, dropout_p, is_causal, scale) -> (output, log_sumexp,
// philox_seed, philox_offset): the output [B, H, L, E] laid out (B, L, H,
// E); log_sumexp f32 [B, H, ceil(L / 32) * 32], +inf past L as the
// kernel pads it ([B, H, 0] without compute_log_sumexp).
absl::StatusOr<Value> EfficientAttention(const OpCall& c, bool running) {
  ASSIGN_OR_RETURN(bool with_lse, c.arg("compute_log_sumexp").AsBool());
  ASSIGN_OR_RETURN(Value flash, Flash(c, running, c.arg("attn_bias")));
  const Value& q = c.arg("query");
  const std::vector<Expr> qs = SizesOf(q);
  const Expr B = qs[0], H = qs[1], L = qs[2], E = qs[3];
  ASSIGN_OR_RETURN(Value out, LaidOut(c, running, flash.list[0],
                                      {symbolic::Mul({L, H, E}), E,
                                       symbolic::Mul(H, E), symbolic::Int(1)}));
  Expr width = symbolic::Int(0);
  if (with_lse) {
    ASSIGN_OR_RETURN(Expr blocks, symbolic::CeilDiv(L, symbolic::Int(32)));
    width = symbolic::Mul(blocks, symbolic::Int(32));
  }
  ASSIGN_OR_RETURN(Value lse, ResultOrEmpty(c, running, DType::kFloat32,
                                            DeviceOf(q), {B, H, width}));
  ASSIGN_OR_RETURN(Value seed, Zero(c, running, DeviceOf(q)));
  ASSIGN_OR_RETURN(Value offset, Zero(c, running, DeviceOf(q)));
  if (running) {
    const std::vector<int64_t>& s = lse.tensor.sizes();
    const int64_t rows = q.tensor.sizes()[2];
    for (int64_t b = 0; b < s[0]; ++b) {
      for (int64_t h = 0; h < s[1]; ++h) {
        for (int64_t i = 0; i < s[2]; ++i) {
          StoreDouble(lse.tensor, {b, h, i},
                      i < rows ? LoadDouble(flash.list[1].tensor, {b, h, i})
                               : std::numeric_limits<double>::infinity());
        }
      }
    }
  }
  return Value::List({out, lse, seed, offset});
}

// The gradient of an additive attention bias of `bias`'s shape (broadcast
// to [B, H, L, S]) from the scores' gradient, row-major over [B, H, L, S]:
// summed over the dims the bias broadcasts, stored into `out`.
void StoreBiasGradient(const std::vector<double>& scores,
                       absl::Span<const int64_t> full, const Tensor& bias,
                       const Tensor& out) {
  const std::vector<int64_t>& bs = bias.sizes();
  const int64_t rank = static_cast<int64_t>(bs.size());
  std::vector<int64_t> strides(rank, 0);  // row-major, 0 where broadcast
  for (int64_t d = rank - 1, step = 1; d >= 0; --d) {
    if (bs[d] != 1) strides[d] = step;
    step *= bs[d];
  }
  std::vector<double> sum(bias.numel(), 0);
  std::vector<int64_t> at(4, 0);
  for (size_t flat = 0; flat < scores.size(); ++flat) {
    int64_t rest = static_cast<int64_t>(flat), to = 0;
    for (int d = 3; d >= 0; --d) {
      at[d] = rest % full[d];
      rest /= full[d];
    }
    for (int64_t d = 0; d < rank; ++d) to += at[4 - rank + d] * strides[d];
    sum[to] += scores[flat];
  }
  WriteRowMajor(out, sum);
}

// _scaled_dot_product_efficient_attention_backward(grad_out_, query, key,
// value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
// grad_input_mask, is_causal, scale) -> (grad_query, grad_key, grad_value,
// grad_bias): the CPU kernel's gradients (laid out (B, T, H, E), as this
// kernel's too) from the first L of each logsumexp row; grad_bias, with a
// bias and grad_input_mask[3], of the bias's shape with its last dim padded
// to a multiple of 16 in memory, as PyTorch's kernel allocates it.
absl::StatusOr<Value> EfficientAttentionBackward(const OpCall& c,
                                                 bool running) {
  std::vector<bool> wanted;
  for (const Value& e : c.arg("grad_input_mask").list) {
    ASSIGN_OR_RETURN(bool b, e.AsBool());
    wanted.push_back(b);
  }
  if (wanted.size() != 4) {
    return c.Error("grad_input_mask must have 4 values");
  }
  const Value& q = c.arg("query");
  const Value& lse = c.arg("logsumexp");
  const Value& bias = c.arg("attn_bias");
  if (RankOf(q) != 4 || RankOf(lse) != 3) {
    return c.Error(absl::StrCat(
        "efficient_attention_backward: expected a query [B, H, L, E] and a "
        "logsumexp [B, H, >= L], got ",
        ShapeString(SizesOf(q)), " and ", ShapeString(SizesOf(lse))));
  }
  const Expr L = SizesOf(q)[2];
  ASSIGN_OR_RETURN(bool long_enough,
                   Decide(c, symbolic::Le(L, SizesOf(lse)[2])));
  if (!long_enough) {
    return c.Error(absl::StrCat("efficient_attention_backward: logsumexp ",
                                ShapeString(SizesOf(lse)), " is shorter than ",
                                "the query's ", ShapeString(SizesOf(q))));
  }
  ASSIGN_OR_RETURN(Value rows, CallOp(c, running, "aten.slice.Tensor",
                                      {lse, Value::Int(2), Value::Int(0),
                                       Value::Number(L)}));
  ASSIGN_OR_RETURN(Value grads,
                   FlashBackward(c, running, c.arg("grad_out_"), rows, bias));
  std::vector<Value> outs = {grads.list[0], grads.list[1], grads.list[2],
                             Value::None()};
  if (bias.is_none() || !wanted[3]) return Value::List(std::move(outs));
  std::vector<Expr> padded = SizesOf(bias);
  ASSIGN_OR_RETURN(Expr blocks,
                   symbolic::CeilDiv(padded.back(), symbolic::Int(16)));
  padded.back() = symbolic::Mul(blocks, symbolic::Int(16));
  ASSIGN_OR_RETURN(outs[3],
                   ResultOrEmpty(c, running, DTypeOf(bias), DeviceOf(bias),
                                 SizesOf(bias), ContiguousStrides(padded)));
  if (!running) return Value::List(std::move(outs));
  const Tensor& qt = q.tensor;
  const Tensor& kt = c.arg("key").tensor;
  const int64_t B = qt.sizes()[0], H = qt.sizes()[1], Lq = qt.sizes()[2],
                S = kt.sizes()[2], E = qt.sizes()[3];
  double scale = 1.0 / std::sqrt(static_cast<double>(E));
  if (!c.arg("scale").is_none()) {
    ASSIGN_OR_RETURN(scale, c.arg("scale").AsDouble());
  }
  ASSIGN_OR_RETURN(bool causal, c.arg("is_causal").AsBool());
  ASSIGN_OR_RETURN(Tensor mask, BroadcastView(bias.tensor, {B, H, Lq, S}));
  const AttentionProblem a = {.B = B,
                              .H = H,
                              .L = Lq,
                              .S = S,
                              .E = E,
                              .scale = scale,
                              .causal = causal,
                              .q = RowMajorValues(qt),
                              .k = RowMajorValues(kt),
                              .v = RowMajorValues(c.arg("value").tensor),
                              .grad = RowMajorValues(c.arg("grad_out_").tensor),
                              .out = RowMajorValues(c.arg("out").tensor),
                              .lse = RowMajorValues(rows.tensor),
                              .mask = &mask};
  StoreBiasGradient(AttentionBackward(a, /*scores=*/true).scores, {B, H, Lq, S},
                    bias.tensor, outs[3].tensor);
  return Value::List(std::move(outs));
}

// _scaled_dot_product_cudnn_attention(query, key, value, attn_bias,
// compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale) ->
// (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
// philox_offset, debug_attn_mask): the output laid out as the query;
// logsumexp f32 [B, H, L, 1]; no cumulative sequence lengths or debug mask
// (None); max_q and max_k the query's and key's lengths.
absl::StatusOr<Value> CudnnAttention(const OpCall& c, bool running) {
  RETURN_IF_ERROR(c.arg("compute_log_sumexp").AsBool().status());
  RETURN_IF_ERROR(c.arg("return_debug_mask").AsBool().status());
  ASSIGN_OR_RETURN(Value flash, Flash(c, running, c.arg("attn_bias")));
  const Value& q = c.arg("query");
  const std::vector<Expr> qs = SizesOf(q);
  ASSIGN_OR_RETURN(Value out, LaidOut(c, running, flash.list[0],
                                      EmptyLikeStrides(c.env(), q)));
  ASSIGN_OR_RETURN(Value lse,
                   ResultOrEmpty(c, running, DType::kFloat32, DeviceOf(q),
                                 {qs[0], qs[1], qs[2], symbolic::Int(1)}));
  if (running) {
    const std::vector<int64_t>& s = lse.tensor.sizes();
    for (int64_t b = 0; b < s[0]; ++b) {
      for (int64_t h = 0; h < s[1]; ++h) {
        for (int64_t i = 0; i < s[2]; ++i) {
          StoreDouble(lse.tensor, {b, h, i, 0},
                      LoadDouble(flash.list[1].tensor, {b, h, i}));
        }
      }
    }
  }
  ASSIGN_OR_RETURN(Value seed, Zero(c, running, DeviceOf(q)));
  ASSIGN_OR_RETURN(Value offset, Zero(c, running, DeviceOf(q)));
  return Value::List(
      {out, lse, Value::None(), Value::None(), Value::Number(qs[2]),
       Value::Number(SizesOf(c.arg("key"))[2]), seed, offset, Value::None()});
}

// _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value,
// out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
// cum_seq_k, max_q, max_k, dropout_p, is_causal, scale) -> (grad_query,
// grad_key, grad_value), each laid out as its input (empty_like).
absl::StatusOr<Value> CudnnAttentionBackward(const OpCall& c, bool running) {
  const Value& lse = c.arg("logsumexp");
  if (RankOf(lse) != 4) {
    return c.Error(absl::StrCat(
        "cudnn_attention_backward: expected a logsumexp [B, H, L, 1], got ",
        ShapeString(SizesOf(lse))));
  }
  ASSIGN_OR_RETURN(
      Value rows, CallOp(c, running, "aten.squeeze.dim", {lse, Value::Int(3)}));
  if (RankOf(rows) != 3) {
    return c.Error(absl::StrCat(
        "cudnn_attention_backward: expected a logsumexp [B, H, L, 1], got ",
        ShapeString(SizesOf(lse))));
  }
  ASSIGN_OR_RETURN(Value grads, FlashBackward(c, running, c.arg("grad_out"),
                                              rows, c.arg("attn_bias")));
  std::vector<Value> outs;
  const char* inputs[] = {"query", "key", "value"};
  for (int k = 0; k < 3; ++k) {
    ASSIGN_OR_RETURN(Value g,
                     LaidOut(c, running, grads.list[k],
                             EmptyLikeStrides(c.env(), c.arg(inputs[k]))));
    outs.push_back(std::move(g));
  }
  return Value::List(std::move(outs));
}

// Registers `schema` with `fn` as its meta function and kernel.
absl::Status AddBoth(OpRegistry& r, absl::string_view schema,
                     absl::StatusOr<Value> (*fn)(const OpCall&, bool)) {
  return r.Add(
      schema, [fn](const OpCall& c) { return fn(c, false); },
      [fn](const OpCall& c) { return fn(c, true); });
}

}  // namespace

AttentionGrads AttentionBackward(const AttentionProblem& a, bool scores) {
  const int64_t B = a.B, H = a.H, L = a.L, S = a.S, E = a.E;
  AttentionGrads g;
  g.dq.assign(a.q.size(), 0);
  g.dk.assign(a.k.size(), 0);
  g.dv.assign(a.v.size(), 0);
  if (scores) g.scores.assign(B * H * L * S, 0);
  std::vector<double> p(S), ds(S);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bh = b * H + h;
      for (int64_t i = 0; i < L; ++i) {
        const double* qi = &a.q[(bh * L + i) * E];
        const double* gi = &a.grad[(bh * L + i) * E];
        double d = 0;  // rowsum(dO * out)
        for (int64_t e = 0; e < E; ++e)
          d += gi[e] * a.out[(bh * L + i) * E + e];
        for (int64_t j = 0; j < S; ++j) {
          double sc = 0;
          for (int64_t e = 0; e < E; ++e)
            sc += qi[e] * a.k[(bh * S + j) * E + e];
          sc *= a.scale;
          if (a.mask != nullptr) sc += LoadDouble(*a.mask, {b, h, i, j});
          // As PyTorch's kernel: exp(scores + mask - logsumexp), the causal
          // lanes 0 after it (a masked lane is 0 unless the logsumexp is
          // -inf, which the forward never gives).
          p[j] = a.causal && j > i ? 0 : std::exp(sc - a.lse[bh * L + i]);
          double dp = 0;
          for (int64_t e = 0; e < E; ++e)
            dp += gi[e] * a.v[(bh * S + j) * E + e];
          ds[j] = p[j] * (dp - d);
          if (scores) g.scores[(bh * L + i) * S + j] = ds[j];
        }
        for (int64_t j = 0; j < S; ++j) {
          for (int64_t e = 0; e < E; ++e) {
            g.dv[(bh * S + j) * E + e] += p[j] * gi[e];
            g.dq[(bh * L + i) * E + e] +=
                ds[j] * a.k[(bh * S + j) * E + e] * a.scale;
            g.dk[(bh * S + j) * E + e] += ds[j] * qi[e] * a.scale;
          }
        }
      }
    }
  }
  return g;
}

// The schemas are native_functions.yaml's, except that a backward's bias
// and cumulative lengths are optional: AOTAutograd's graphs pass None for
// the undefined tensors PyTorch's kernels take there.
absl::Status RegisterAttentionOps(OpRegistry& r) {
  RETURN_IF_ERROR(AddBoth(
      r,
      "_scaled_dot_product_efficient_attention(Tensor query, Tensor key, "
      "Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float "
      "dropout_p=0., bool is_causal=False, *, float? scale=None) -> (Tensor "
      "output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)",
      EfficientAttention));
  RETURN_IF_ERROR(AddBoth(
      r,
      "_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, "
      "Tensor query, Tensor key, Tensor value, Tensor? attn_bias, Tensor out, "
      "Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float "
      "dropout_p, bool[4] grad_input_mask, bool is_causal=False, *, float? "
      "scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
      EfficientAttentionBackward));
  RETURN_IF_ERROR(AddBoth(
      r,
      "_scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor "
      "value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., "
      "bool is_causal=False, bool return_debug_mask=False, *, float? "
      "scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, "
      "Tensor cum_seq_k, SymInt max_q, SymInt max_k, Tensor philox_seed, "
      "Tensor philox_offset, Tensor debug_attn_mask)",
      CudnnAttention));
  RETURN_IF_ERROR(AddBoth(
      r,
      "_scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor "
      "query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor "
      "philox_seed, Tensor philox_offset, Tensor? attn_bias, Tensor? "
      "cum_seq_q, Tensor? cum_seq_k, SymInt max_q, SymInt max_k, float "
      "dropout_p, bool is_causal, *, float? scale=None) -> (Tensor, Tensor, "
      "Tensor)",
      CudnnAttentionBackward));
  return absl::OkStatus();
}

}  // namespace lathe::ir
