// The loss family's lowering rules: the pointwise losses (mse, l1, smooth
// l1, huber, bce, ...) with their reduction, and nll_loss_forward.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "codegen/scalar_ops.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
namespace {

// A pointwise loss of (self, target), then reduction none (0), mean (1) or
// sum (2).
using LossBody = std::function<absl::StatusOr<TBox>(Lowerer&, const Call&,
                                                    Expression&, TBox, TBox)>;

LowerFn LossFn(LossBody body) {
  return [body](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    ASSIGN_OR_RETURN(TBox a, L.Operand(c, 0, compute));
    ASSIGN_OR_RETURN(TBox b, L.Operand(c, 1, compute));
    ASSIGN_OR_RETURN(int64_t reduction, c.Int("reduction"));
    std::vector<Expr> sizes =
        a.sizes.size() >= b.sizes.size() ? a.sizes : b.sizes;
    Expression e(L, compute, sizes);
    ASSIGN_OR_RETURN(TBox l, body(L, c, e, a, b));
    std::vector<int64_t> dims;
    for (size_t k = 0; k < sizes.size(); ++k) dims.push_back(k);
    if (reduction == 0 || dims.empty()) return TensorValue(CastBox(l, m.dtype));
    ASSIGN_OR_RETURN(TBox out,
                     L.Reduce(l, dims, ReduceKind::kSum, compute, m,
                              reduction == 1 ? MeanOf(compute) : nullptr));
    return TensorValue(out);
  };
}

void AddLosses(LoweringTable& T) {
  T.Add(Op("aten.mse_loss.default"),
        LossFn([](Lowerer&, const Call&, Expression& e, TBox a,
                  TBox b) -> absl::StatusOr<TBox> {
          TBox d = e("sub", {a, b});
          return e("mul", {d, d});
        }));
  // |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta
  T.Add(Op("aten.smooth_l1_loss.default"),
        LossFn([](Lowerer&, const Call& c, Expression& e, TBox a,
                  TBox b) -> absl::StatusOr<TBox> {
          ASSIGN_OR_RETURN(std::optional<double> beta, NumberArg(c, "beta"));
          double bt = beta.value_or(1);
          TBox d = e("abs", {e("sub", {a, b})});
          if (bt == 0) return d;
          TBox quad = e("truediv", {e("mul", {e("mul", {d, d}), e.Number(0.5)}),
                                    e.Number(bt)});
          return e("where", {e("lt", {d, e.Number(bt)}), quad,
                             e("sub", {d, e.Number(0.5 * bt)})});
        }));
  // |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)
  T.Add(
      Op("aten.huber_loss.default"),
      LossFn([](Lowerer&, const Call& c, Expression& e, TBox a,
                TBox b) -> absl::StatusOr<TBox> {
        ASSIGN_OR_RETURN(std::optional<double> delta, NumberArg(c, "delta"));
        double dt = delta.value_or(1);
        TBox d = e("abs", {e("sub", {a, b})});
        TBox quad = e("mul", {e("mul", {d, d}), e.Number(0.5)});
        TBox lin = e("mul", {e("sub", {d, e.Number(0.5 * dt)}), e.Number(dt)});
        return e("where", {e("lt", {d, e.Number(dt)}), quad, lin});
      }));
  // (1 - y) x - log_sigmoid(x) with log_sigmoid(x) = min(x, 0) -
  // log1p(exp(-|x|)); weight and pos_weight as PyTorch applies them.
  T.Add(Op("aten.binary_cross_entropy_with_logits.default"),
        LossFn([](Lowerer& L, const Call& c, Expression& e, TBox x,
                  TBox y) -> absl::StatusOr<TBox> {
          TBox log_sig =
              e("sub", {e("minimum", {x, e.Number(0)}),
                        e("log1p", {e("exp", {e("neg", {e("abs", {x})})})})});
          TBox one_minus_y = e("sub", {e.Number(1), y});
          TBox loss;
          if (c.Has("pos_weight")) {
            ASSIGN_OR_RETURN(TBox pw,
                             L.Operand(c, c.Index("pos_weight"), e.compute()));
            // (1 - y) x - (1 + (pw - 1) y) log_sigmoid(x)
            TBox lw = e("add", {e.Number(1),
                                e("mul", {e("sub", {pw, e.Number(1)}), y})});
            loss =
                e("sub", {e("mul", {one_minus_y, x}), e("mul", {lw, log_sig})});
          } else {
            loss = e("sub", {e("mul", {one_minus_y, x}), log_sig});
          }
          if (c.Has("weight")) {
            ASSIGN_OR_RETURN(TBox w,
                             L.Operand(c, c.Index("weight"), e.compute()));
            loss = e("mul", {loss, w});
          }
          return loss;
        }));
}

// nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight): -weight[t] * self[n, t] per sample (0 where t is
// ignore_index); reduction none, mean (over the weights' sum) or sum.
absl::StatusOr<NodeValue> LowerNllLoss(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(output, total_weight)"));
  const TensorMeta& mo = *metas.first;
  const TensorMeta& mt = *metas.second;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(TBox target, L.Tensor(c, 1));
  std::optional<TBox> weight;
  if (c.NodeAt(2) != nullptr) {
    ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 2));
    ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
    weight = w;
  }
  ASSIGN_OR_RETURN(int64_t reduction, c.Int("reduction"));
  ASSIGN_OR_RETURN(int64_t ignore, c.Int("ignore_index"));
  bool batched = x.sizes.size() == 2;
  DType acc = ComputeDType(x.dtype);
  Expr n = batched ? x.sizes[0] : symbolic::Int(1);
  Expr classes = x.sizes.back();
  Lowerer* lp = &L;
  const Node* node = &c.node();
  // The per-sample (weight, loss) over [n]: the class checked unless it is
  // ignore_index (then class 0 is read and the weight is 0).
  auto sample = [=](KernelBuilder& kb, Expr i,
                    bool loss) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(
        int t, target.load(kb, target.sizes.empty() ? std::vector<Expr>{}
                                                    : std::vector<Expr>{i}));
    t = kb.Cast(t, DType::kInt64);
    int ignored =
        kb.Call("eq", {t, kb.IntConstant(ignore, DType::kInt64)}, DType::kBool);
    int safe = kb.Call("where", {ignored, kb.IntConstant(0, DType::kInt64), t},
                       DType::kInt64);
    int k = lp->CheckIndex(kb, *node, safe, classes, false, batched ? 1 : 0);
    int w = kb.Constant(1, acc);
    if (weight.has_value()) {
      w = kb.Cast(IndirectLoad(kb, *weight, {IndirectVar(0)}, {k}), acc);
    }
    w = kb.Call("where", {ignored, kb.Constant(0, acc), w}, acc);
    if (!loss) return w;
    std::vector<Expr> sub = {IndirectVar(0)};
    if (batched) sub.insert(sub.begin(), i);
    int v = kb.Cast(IndirectLoad(kb, x, sub, {k}), acc);
    return kb.Call("neg", {kb.Call("mul", {w, v}, acc)}, acc);
  };
  auto per_sample = [&](bool loss) {
    TBox t;
    t.dtype = acc;
    t.sizes = {n};
    t.reads = x.reads;
    t.reads.insert(target.reads.begin(), target.reads.end());
    if (weight.has_value())
      t.reads.insert(weight->reads.begin(), weight->reads.end());
    t.cost = 12;
    t.load = [sample, loss](KernelBuilder& kb, const std::vector<Expr>& idx) {
      return sample(kb, idx[0], loss);
    };
    return t;
  };
  NodeValue v;
  v.kind = NodeValue::Kind::kTuple;
  if (batched && reduction == 0) {
    v.elements = {TensorValue(CastBox(per_sample(true), mo.dtype)),
                  TensorValue(L.NumberBox(symbolic::Int(0), mt.dtype))};
    return v;
  }
  ASSIGN_OR_RETURN(TBox total, L.Reduce(per_sample(false), {0},
                                        ReduceKind::kSum, acc, mt, nullptr));
  ASSIGN_OR_RETURN(TBox sum, L.Reduce(per_sample(true), {0}, ReduceKind::kSum,
                                      acc, mo, nullptr));
  TBox out = sum;
  if (reduction == 1) {
    out = L.Pointwise("truediv", {sum, total}, acc, mo.dtype, mo.sizes);
  }
  v.elements = {TensorValue(out), TensorValue(total)};
  return v;
}

}  // namespace

void RegisterLosses(LoweringTable& T) {
  AddLosses(T);
  T.Add(Op("aten.nll_loss_forward.default"), LowerNllLoss);
}

}  // namespace lathe::codegen::lower
