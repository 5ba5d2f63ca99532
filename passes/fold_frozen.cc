#include "passes/fold_frozen.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/op_registry.h"
#include "passes/rewriter.h"
#include "runtime/copy.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::passes {
namespace {

using ir::Arg;
using ir::Node;

// Past this many bytes a folded value must not outgrow its arguments.
constexpr int64_t kSmallBytes = int64_t{64} << 10;

// The frozen value `n` reads (a get_attr of a frozen constant), or null.
const ir::Value* Frozen(const Node* n, const PassContext& ctx) {
  if (n == nullptr || n->kind() != Node::Kind::kGetAttr ||
      n->graph()->attributes().constants.count(n->target()) == 0) {
    return nullptr;
  }
  auto it = ctx.frozen()->find(n->target());
  return it == ctx.frozen()->end() || !it->second.is_tensor() ? nullptr
                                                              : &it->second;
}

// A frozen constant of value `owned` (laid out as its strides say), read by
// a new get_attr before `before`, named from `base`.
absl::StatusOr<Node*> AddConstant(ir::Graph& g, Node* before,
                                  absl::string_view base, Tensor owned,
                                  PassContext& ctx) {
  // A name no node has and no constant (frozen or given) is read by.
  auto taken = [&](const std::string& name) {
    if (ctx.frozen()->contains(name) ||
        g.attributes().constants.count(name) > 0) {
      return true;
    }
    for (const auto& n : g.nodes()) {
      if (n->kind() == Node::Kind::kGetAttr && n->target() == name) {
        return true;
      }
    }
    return false;
  };
  std::string name = g.UniqueName(base);
  while (taken(name)) name = g.UniqueName(absl::StrCat(name, "_"));
  ir::TensorMeta m;
  m.dtype = owned.dtype();
  for (int64_t d = 0; d < owned.dim(); ++d) {
    m.sizes.push_back(symbolic::Int(owned.sizes()[d]));
    m.strides.push_back(symbolic::Int(owned.strides()[d]));
  }
  m.storage = g.NewStorageId();
  Node* c = g.Insert(Node::Kind::kGetAttr, name, name, {}, {},
                     ir::ValueMeta::Tensor(std::move(m)), before);
  g.attributes().constants.insert(name);
  (*ctx.frozen())[name] = ir::Value::OfTensor(std::move(owned));
  return c;
}

// Element k of a contiguous copy of `v`, or `fallback` without one.
struct Vector {
  std::vector<double> x;
  double at(int64_t k, double fallback) const {
    return x.empty() ? fallback : x[static_cast<size_t>(k)];
  }
};
absl::StatusOr<Vector> Elements(const ir::Value* v) {
  Vector out;
  if (v == nullptr) return out;
  ASSIGN_OR_RETURN(Tensor c, v->tensor.Clone());
  out.x.resize(static_cast<size_t>(c.numel()));
  for (int64_t k = 0; k < c.numel(); ++k) out.x[k] = c.GetDouble({k});
  return out;
}

// Batch norm in evaluation of a convolution, folded into it (step 1);
// false when `bn` is not that.
absl::StatusOr<bool> FoldBatchNorm(ir::Graph& g, Node* bn, PassContext& ctx) {
  const std::string& t = bn->target();
  if (t != "aten._native_batch_norm_legit_no_training.default" &&
      t != "aten.native_batch_norm.default" &&
      t != "aten._native_batch_norm_legit.default") {
    return false;
  }
  decomp::Rewriter r(g, bn, ctx.env());
  if (t != "aten._native_batch_norm_legit_no_training.default" &&
      r.Bool("training").value_or(true)) {
    return false;
  }
  Node* conv = r.Tensor("input");
  if (conv == nullptr || conv->target() != "aten.convolution.default" ||
      conv->users().size() != 1) {
    return false;
  }
  // Only the normalized output is read.
  for (const Node* u : bn->users()) {
    if (u->target() != "getitem" || u->args().size() != 2 ||
        u->args()[1].kind != Arg::Kind::kInt) {
      return false;
    }
    if (u->args()[1].i != 0 && !u->users().empty()) return false;
  }
  decomp::Rewriter c(g, conv, ctx.env());
  std::optional<double> eps = r.Number("eps");
  std::optional<bool> transposed = c.Bool("transposed");
  const ir::Value* w = Frozen(c.Tensor("weight"), ctx);
  Node* conv_bias = c.Tensor("bias");
  const ir::Value* cb = Frozen(conv_bias, ctx);
  Node* bn_weight = r.Tensor("weight");
  Node* bn_bias = r.Tensor("bias");
  const ir::Value* gw = Frozen(bn_weight, ctx);
  const ir::Value* gb = Frozen(bn_bias, ctx);
  const ir::Value* rm = Frozen(r.Tensor("running_mean"), ctx);
  const ir::Value* rv = Frozen(r.Tensor("running_var"), ctx);
  // The weight and bias are replaced where they stand: given by position.
  if (conv->args().size() < 3) return false;
  if (!eps || transposed.value_or(true) || w == nullptr || rm == nullptr ||
      rv == nullptr || (conv_bias != nullptr && cb == nullptr) ||
      (bn_weight != nullptr && gw == nullptr) ||
      (bn_bias != nullptr && gb == nullptr)) {
    return false;
  }
  const DType dtype = w->tensor.dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return false;
  for (const ir::Value* v : {cb, gw, gb, rm, rv}) {
    if (v != nullptr && v->tensor.dtype() != dtype) return false;
  }
  const int64_t o = w->tensor.sizes().empty() ? 0 : w->tensor.sizes()[0];
  for (const ir::Value* v : {cb, gw, gb, rm, rv}) {
    if (v != nullptr && (v->tensor.dim() != 1 || v->tensor.sizes()[0] != o)) {
      return false;
    }
  }
  ASSIGN_OR_RETURN(Vector mean, Elements(rm));
  ASSIGN_OR_RETURN(Vector var, Elements(rv));
  ASSIGN_OR_RETURN(Vector gamma, Elements(gw));
  ASSIGN_OR_RETURN(Vector beta, Elements(gb));
  ASSIGN_OR_RETURN(Vector bias, Elements(cb));
  ASSIGN_OR_RETURN(Tensor weight, w->tensor.Clone());
  ASSIGN_OR_RETURN(Tensor new_bias, Tensor::Empty({o}, dtype));
  const int64_t per = o == 0 ? 0 : weight.numel() / o;
  float* w32 = dtype == DType::kFloat32 ? weight.data<float>() : nullptr;
  double* w64 = dtype == DType::kFloat64 ? weight.data<double>() : nullptr;
  for (int64_t k = 0; k < o; ++k) {
    const double scale = gamma.at(k, 1.0) / std::sqrt(var.at(k, 0) + *eps);
    for (int64_t e = k * per; e < (k + 1) * per; ++e) {
      if (w32 != nullptr) {
        w32[e] = static_cast<float>(static_cast<double>(w32[e]) * scale);
      } else {
        w64[e] *= scale;
      }
    }
    new_bias.SetDouble({k},
                       (bias.at(k, 0) - mean.at(k, 0)) * scale + beta.at(k, 0));
  }
  ASSIGN_OR_RETURN(Node * w2,
                   AddConstant(g, conv, absl::StrCat(conv->name(), "_weight"),
                               std::move(weight), ctx));
  ASSIGN_OR_RETURN(Node * b2,
                   AddConstant(g, conv, absl::StrCat(conv->name(), "_bias"),
                               std::move(new_bias), ctx));
  std::vector<Arg> args = conv->args();
  std::vector<std::pair<std::string, Arg>> kwargs = conv->kwargs();
  args[1] = Arg::Of(w2);
  args[2] = Arg::Of(b2);
  ASSIGN_OR_RETURN(Node * folded,
                   g.InsertCall(bn, conv->target(), std::move(args),
                                std::move(kwargs), conv->name()));
  for (Node* u : std::vector<Node*>(bn->users())) {
    if (u->args()[1].i == 0) g.ReplaceAllUsesWith(u, folded);
  }
  ctx.Log("fold_frozen: ", bn->name(), " folded into ", folded->name());
  return true;
}

// A call on frozen constants alone, computed (step 2); false when `n` is
// not one.
absl::StatusOr<bool> FoldCall(ir::Graph& g, Node* n, PassContext& ctx) {
  if (n->kind() != Node::Kind::kCall || n->op() == nullptr || n->HasEffect() ||
      n->meta().kind != ir::ValueMeta::Kind::kTensor || n->users().empty()) {
    return false;
  }
  // A view stays one: it costs nothing, and a copy in storage of its own
  // would move what reads its base's storage (as_strided, offsets).
  if (n->op()->HasTag(ir::OpTag::kRandom) || ir::IsView(*n)) return false;
  absl::flat_hash_map<const Node*, ir::Value> values;
  int64_t in_bytes = 0;
  for (const Node* in : n->Inputs()) {
    const ir::Value* v = Frozen(in, ctx);
    if (v == nullptr) return false;
    values[in] = *v;
    in_bytes += v->tensor.numel() * ItemSize(v->tensor.dtype());
  }
  if (values.empty()) return false;
  // The value laid out as the node's meta says (a view keeps its strides),
  // in storage just large enough.
  const ir::TensorMeta& m = n->meta().tensor;
  std::vector<int64_t> sizes, strides;
  int64_t extent = 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d].kind() != symbolic::ExprKind::kInteger ||
        m.strides[d].kind() != symbolic::ExprKind::kInteger ||
        m.strides[d].int_value() < 0) {
      return false;
    }
    sizes.push_back(m.sizes[d].int_value());
    strides.push_back(m.strides[d].int_value());
    if (sizes.back() == 0) extent = 0;
    if (extent > 0) extent += (sizes.back() - 1) * strides.back();
  }
  const int64_t out_bytes = extent * ItemSize(m.dtype);
  if (out_bytes > kSmallBytes && out_bytes > in_bytes) return false;
  absl::StatusOr<ir::EvaluatedCall> call = ir::EvalCall(*n, values, nullptr);
  if (!call.ok() || !call->out.is_tensor()) return false;  // left to run
  const Tensor& out = call->out.tensor;
  if (out.dtype() != m.dtype ||
      !std::equal(sizes.begin(), sizes.end(), out.sizes().begin(),
                  out.sizes().end())) {
    return false;
  }
  ASSIGN_OR_RETURN(Tensor laid_out,
                   Tensor::EmptyStrided(sizes, strides, m.dtype));
  RETURN_IF_ERROR(CopyTensor(laid_out, out));
  ASSIGN_OR_RETURN(Node * c,
                   AddConstant(g, n, n->name(), std::move(laid_out), ctx));
  // The value keeps its storage identity: views of it say it is theirs.
  c->meta().tensor.storage = m.storage;
  g.ReplaceAllUsesWith(n, c);
  ctx.Log("fold_frozen: ", n->name(), " computed");
  return true;
}

}  // namespace

absl::StatusOr<bool> FoldFrozen::Run(ir::Graph& graph, PassContext& ctx) {
  if (ctx.frozen() == nullptr) return false;
  bool changed = false;
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (Node* n : nodes) {
    ASSIGN_OR_RETURN(bool folded, FoldBatchNorm(graph, n, ctx));
    changed |= folded;
  }
  if (changed) graph.EraseDeadNodes();
  nodes.clear();
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (Node* n : nodes) {
    ASSIGN_OR_RETURN(bool folded, FoldCall(graph, n, ctx));
    changed |= folded;
  }
  if (changed) graph.EraseDeadNodes();
  // Frozen constants nothing reads any more go, values and all.
  absl::flat_hash_map<std::string, int> reads;
  std::vector<Node*> unread;
  for (const auto& n : graph.nodes()) {
    if (Frozen(n.get(), ctx) == nullptr) continue;
    if (n->users().empty()) {
      unread.push_back(n.get());
    } else {
      ++reads[n->target()];
    }
  }
  for (Node* n : unread) {
    const std::string target = n->target();
    RETURN_IF_ERROR(graph.Erase(n));
    if (!reads.contains(target)) {
      graph.attributes().constants.erase(target);
      ctx.frozen()->erase(target);
    }
    changed = true;
  }
  return changed;
}

}  // namespace lathe::passes
