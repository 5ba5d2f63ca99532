#include "passes/constant_fold.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/eval_call.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::passes {
namespace {

using ir::Arg;
using ir::Node;
using ir::TensorMeta;
using ir::Value;
using symbolic::Expr;

// What the pass does with an op beyond its tags (pointwise, view).
enum class Rule : uint8_t {
  kConstant,     // every element is one value: an argument's, or `fixed`
  kFull,         // kConstant, and already the form folds take
  kElementwise,  // each element from the same input element (not tagged)
  kViewDType,    // a view with another dtype: only between equal sizes
  kAdd,          // add(x, zero) is x (remove_no_ops)
  kSub,          // sub(x, zero) is x
  kMul,          // mul(x, one) is x; an integer x * 0 is 0
  kMulScalar,    // an integer x * 0 is 0
  kDiv,          // div(x, one) is x
};

struct FoldRule {
  const char* target;
  Rule rule;
  const char* value_arg = nullptr;  // kConstant: the argument holding it
  double fixed = 0;                 // kConstant without value_arg
};

// The ops the pass knows by name, and what it does with each.
constexpr FoldRule kRules[] = {
    {"aten.add.Tensor", Rule::kAdd},
    {"aten.clone.default", Rule::kElementwise},
    {"aten.div.Tensor", Rule::kDiv},
    {"aten.fill.Scalar", Rule::kConstant, "value"},
    {"aten.full.default", Rule::kFull, "fill_value"},
    {"aten.full_like.default", Rule::kConstant, "fill_value"},
    {"aten.mul.Scalar", Rule::kMulScalar},
    {"aten.mul.Tensor", Rule::kMul},
    {"aten.new_full.default", Rule::kConstant, "fill_value"},
    {"aten.new_ones.default", Rule::kConstant, nullptr, 1},
    {"aten.new_zeros.default", Rule::kConstant, nullptr, 0},
    {"aten.ones.default", Rule::kConstant, nullptr, 1},
    {"aten.ones_like.default", Rule::kConstant, nullptr, 1},
    {"aten.scalar_tensor.default", Rule::kConstant, "s"},
    {"aten.sub.Tensor", Rule::kSub},
    {"aten.view.dtype", Rule::kViewDType},
    {"aten.zeros.default", Rule::kConstant, nullptr, 0},
    {"aten.zeros_like.default", Rule::kConstant, nullptr, 0},
    {"prims.convert_element_type.default", Rule::kElementwise},
};

// What folded values become (Rule::kFull).
constexpr absl::string_view kFull = "aten.full.default";

// A tensor all of whose elements are one value: `value` holds it (one
// element, the node's dtype, shaped [1] * rank); `origin` is the node whose
// storage holds it (a view's is its input's).
struct Uniform {
  Tensor value;
  const Node* origin = nullptr;
};

bool IsTensor(const Node* n) {
  return n->meta().kind == ir::ValueMeta::Kind::kTensor;
}
const TensorMeta& TM(const Node* n) { return n->meta().tensor; }

bool IsConstant(Expr e) { return e.kind() == symbolic::ExprKind::kInteger; }

std::vector<int64_t> Ones(int64_t rank) {
  return std::vector<int64_t>(static_cast<size_t>(rank), 1);
}

// `t` (one element) shaped [1] * rank, sharing its storage.
absl::StatusOr<Tensor> Reshaped(const Tensor& t, int64_t rank) {
  return t.AsStrided(Ones(rank), Ones(rank), t.storage_offset());
}

// A literal as a number value; nullopt for anything else (a symbol).
std::optional<Value> NumberValue(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kInt:
      return Value::Int(a.i);
    case Arg::Kind::kFloat:
      return Value::Float(a.f);
    case Arg::Kind::kBool:
      return Value::Bool(a.b);
    default:
      return std::nullopt;
  }
}

// A uniform tensor of `rank` and `dtype` holding `fill`, made by the
// registry's own full kernel (its conversion rules).
absl::StatusOr<Tensor> Filled(const Value& fill, DType dtype, int64_t rank) {
  const ir::OpDef* full = ir::OpRegistry::Global().Find(kFull);
  LATHE_CHECK(full != nullptr);
  std::vector<Value> sizes;
  for (int64_t k = 0; k < rank; ++k) sizes.push_back(Value::Int(1));
  ASSIGN_OR_RETURN(
      std::vector<Value> args,
      ir::BindArguments(full->schema, {Value::List(std::move(sizes)), fill},
                        {{"dtype", Value::OfDType(dtype)}}, kFull));
  ir::OpCall call(*full, std::move(args), /*env=*/nullptr);
  ASSIGN_OR_RETURN(Value out, full->kernel(call));
  return out.tensor;
}

// The element of a one-element tensor as the literal full() takes.
Arg LiteralOf(const Tensor& t) {
  std::vector<int64_t> index(t.dim(), 0);
  if (IsFloatingPoint(t.dtype())) return Arg::Float(t.GetDouble(index));
  if (t.dtype() == DType::kBool) return Arg::Bool(t.GetDouble(index) != 0);
  int64_t v = VisitDType(t.dtype(), [&](auto tag) -> int64_t {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(t.data<T>()[0]);
    } else {
      return 0;
    }
  });
  return Arg::Int(v);
}

// The element of a uniform value as a double (for the 0/1 tests).
double ElementOf(const Tensor& t) {
  return t.GetDouble(std::vector<int64_t>(t.dim(), 0));
}

// Whether erasing an unused `n` changes nothing but its value.
bool Removable(const Node& n) {
  if (n.kind() != Node::Kind::kCall || !n.users().empty() || n.HasEffect()) {
    return false;
  }
  return n.op() != nullptr || ir::IsPythonOp(n.target());
}

class Folder {
 public:
  Folder(ir::Graph& graph, PassContext& ctx) : graph_(graph), ctx_(ctx) {
    for (const FoldRule& r : kRules) rules_[r.target] = &r;
  }

  absl::StatusOr<bool> Run() {
    CollectWrittenStorages();
    for (const auto& n : graph_.nodes()) {
      if (n->kind() != Node::Kind::kCall || !IsTensor(n.get())) continue;
      if (written_.contains(TM(n.get()).storage)) continue;
      std::optional<Uniform> u = Deduce(*n);
      if (u.has_value()) known_[n.get()] = std::move(*u);
    }
    RETURN_IF_ERROR(ReplaceUniformValues());
    RETURN_IF_ERROR(RemoveNoOps());
    RETURN_IF_ERROR(EraseDead());
    std::vector<Node*> stale(refresh_.begin(), refresh_.end());
    RETURN_IF_ERROR(ir::RefreshMetas(graph_, ctx_.env(), stale).status());
    return changed_;
  }

 private:
  const FoldRule* RuleOf(const Node& n) const {
    auto it = rules_.find(n.target());
    return it == rules_.end() ? nullptr : it->second;
  }

  // Storages some op writes (their values stay runtime reads).
  void CollectWrittenStorages() {
    for (const auto& n : graph_.nodes()) {
      const ir::OpDef* op = n->op();
      if (op == nullptr) continue;
      const auto& params = op->schema.arguments;
      for (size_t i = 0; i < params.size() && i < n->args().size(); ++i) {
        if (!params[i].is_written()) continue;
        const Arg& a = n->args()[i];
        if (a.kind == Arg::Kind::kNode && IsTensor(a.node)) {
          written_.insert(TM(a.node).storage);
        }
      }
      for (const auto& [name, a] : n->kwargs()) {
        int i = op->schema.ArgumentIndex(name);
        if (i >= 0 && params[i].is_written() && a.kind == Arg::Kind::kNode &&
            IsTensor(a.node)) {
          written_.insert(TM(a.node).storage);
        }
      }
    }
  }

  // The uniform value of `n`, when every element provably has one.
  std::optional<Uniform> Deduce(const Node& n) {
    const TensorMeta& m = TM(&n);
    const FoldRule* rule = RuleOf(n);
    const ir::OpDef* op = n.op();
    if (op == nullptr || op->HasTag(ir::OpTag::kRandom) ||
        op->HasTag(ir::OpTag::kInplace) || op->HasTag(ir::OpTag::kOut)) {
      return std::nullopt;
    }
    if (rule != nullptr &&
        (rule->rule == Rule::kConstant || rule->rule == Rule::kFull)) {
      Arg literal = Arg::Int(static_cast<int64_t>(rule->fixed));
      if (rule->value_arg != nullptr) {
        int i = op->schema.ArgumentIndex(rule->value_arg);
        if (i >= 0 && i < static_cast<int>(n.args().size())) {
          literal = n.args()[i];
        }
        for (const auto& [name, a] : n.kwargs()) {
          if (name == rule->value_arg) literal = a;
        }
      }
      std::optional<Value> fill = NumberValue(literal);
      if (!fill.has_value()) return std::nullopt;  // symbolic: not specialized
      absl::StatusOr<Tensor> t = Filled(*fill, m.dtype, m.dim());
      if (!t.ok()) return std::nullopt;
      // A number value has no -0.0 (symbolic::Float makes it 0.0); the
      // literal has.
      if (literal.kind == Arg::Kind::kFloat && IsFloatingPoint(m.dtype)) {
        t->SetDouble(std::vector<int64_t>(m.dim(), 0), literal.f);
      }
      return Uniform{*t, &n};
    }
    bool view = op->HasTag(ir::OpTag::kView);
    if (view && (rule == nullptr || rule->rule != Rule::kViewDType)) {
      const Uniform* in = KnownArg(n, 0);
      if (in == nullptr || in->value.dtype() != m.dtype) return std::nullopt;
      absl::StatusOr<Tensor> t = Reshaped(in->value, m.dim());
      if (!t.ok()) return std::nullopt;
      return Uniform{*t, in->origin};
    }
    bool elementwise = op->HasTag(ir::OpTag::kPointwise) || view ||
                       (rule != nullptr && rule->rule == Rule::kElementwise);
    if (rule != nullptr &&
        (rule->rule == Rule::kMul || rule->rule == Rule::kMulScalar)) {
      if (std::optional<Uniform> zero = IntegerTimesZero(n); zero.has_value()) {
        return zero;
      }
    }
    if (!elementwise) return std::nullopt;
    // Every node argument must be a known tensor; run the op's kernel on
    // the one-element values. A -0.0 literal would reach the kernel as 0.0
    // (a number value has no signed zero): not folded.
    for (const Arg& a : n.args()) {
      if (a.kind == Arg::Kind::kFloat && a.f == 0 && std::signbit(a.f)) {
        return std::nullopt;
      }
    }
    for (const auto& [name, a] : n.kwargs()) {
      if (a.kind == Arg::Kind::kFloat && a.f == 0 && std::signbit(a.f)) {
        return std::nullopt;
      }
    }
    absl::flat_hash_map<const Node*, Value> values;
    for (const Node* in : n.Inputs()) {
      auto it = known_.find(in);
      if (it == known_.end()) return std::nullopt;
      values[in] = Value::OfTensor(it->second.value);
    }
    if (view) {  // view.dtype: element sizes must match
      const Uniform* in = KnownArg(n, 0);
      if (in == nullptr || ItemSize(in->value.dtype()) != ItemSize(m.dtype)) {
        return std::nullopt;
      }
    }
    absl::StatusOr<ir::EvaluatedCall> out = ir::EvalCall(n, values, nullptr);
    if (!out.ok() || !out->out.is_tensor()) return std::nullopt;
    const Tensor& t = out->out.tensor;
    if (t.dtype() != m.dtype || t.numel() != 1 || t.dim() != m.dim()) {
      return std::nullopt;
    }
    const Node* origin = view ? KnownArg(n, 0)->origin : &n;
    return Uniform{t, origin};
  }

  // The uniform value of argument `i` of `n`, when it is a known node.
  const Uniform* KnownArg(const Node& n, size_t i) const {
    if (i >= n.args().size() || n.args()[i].kind != Arg::Kind::kNode) {
      return nullptr;
    }
    auto it = known_.find(n.args()[i].node);
    return it == known_.end() ? nullptr : &it->second;
  }

  // x * 0 for an integer or bool result: 0 whatever x is (not for floats:
  // NaN * 0 and Inf * 0 are NaN).
  std::optional<Uniform> IntegerTimesZero(const Node& n) {
    const TensorMeta& m = TM(&n);
    if (IsFloatingPoint(m.dtype)) return std::nullopt;
    bool zero = false;
    for (size_t i = 0; i < n.args().size() && i < 2; ++i) {
      const Arg& a = n.args()[i];
      if ((a.kind == Arg::Kind::kInt && a.i == 0) ||
          (a.kind == Arg::Kind::kBool && !a.b)) {
        zero = true;
      }
      const Uniform* u = KnownArg(n, i);
      if (u != nullptr && ElementOf(u->value) == 0) zero = true;
    }
    if (!zero) return std::nullopt;
    absl::StatusOr<Tensor> t = Filled(Value::Int(0), m.dtype, m.dim());
    if (!t.ok()) return std::nullopt;
    return Uniform{*t, &n};
  }

  // The first SymInt node (in graph order) holding each symbolic value.
  const Node* SymNode(Expr e) {
    if (!sym_nodes_filled_) {
      for (const auto& n : graph_.nodes()) {
        if (n->meta().kind == ir::ValueMeta::Kind::kSym) {
          sym_nodes_.emplace(n->meta().sym, n.get());
        }
      }
      sym_nodes_filled_ = true;
    }
    auto it = sym_nodes_.find(e);
    return it == sym_nodes_.end() ? nullptr : it->second;
  }

  // The shape of `n` as full()'s size argument; nullopt when a symbolic
  // size has no SymInt node before `n`.
  std::optional<Arg> ShapeArg(const Node& n) {
    std::vector<Arg> sizes;
    for (const Expr& s : TM(&n).sizes) {
      if (IsConstant(s)) {
        sizes.push_back(Arg::Int(s.int_value()));
        continue;
      }
      const Node* sym = SymNode(s);
      if (sym == nullptr || !graph_.IsBefore(sym, &n)) return std::nullopt;
      sizes.push_back(Arg::Of(const_cast<Node*>(sym)));
    }
    return Arg::List(std::move(sizes));
  }

  // Step 2: each uniform tensor something value-unknown uses becomes full().
  absl::Status ReplaceUniformValues() {
    // A value is materialized where something value-unknown (or the
    // output) reads it; known values only known ones read die instead.
    std::vector<Node*> frontier;
    for (const auto& n : graph_.nodes()) {
      if (!known_.contains(n.get())) continue;
      for (const Node* u : n->users()) {
        if (!known_.contains(u)) {
          frontier.push_back(n.get());
          break;
        }
      }
    }
    // The skip cases.
    absl::flat_hash_map<const Node*, int> per_origin;
    for (Node* n : frontier) ++per_origin[known_.at(n).origin];
    for (Node* n : frontier) {
      Uniform u = known_.at(n);
      const TensorMeta& m = TM(n);
      if (!m.IsContiguous() || m.dtype == DType::kUInt8) continue;
      if (per_origin[u.origin] > 1) continue;  // shares its constant
      if (const FoldRule* r = RuleOf(*n);
          r != nullptr && r->rule == Rule::kFull) {
        constants_.insert(n);
        continue;
      }
      std::optional<Arg> shape = ShapeArg(*n);
      if (!shape.has_value()) continue;
      ASSIGN_OR_RETURN(
          Node * full,
          graph_.InsertCall(n, std::string(kFull), {*shape, LiteralOf(u.value)},
                            {{"dtype", Arg::OfDType(m.dtype)},
                             {"layout", Arg::Layout("strided")},
                             {"device", Arg::OfDevice(m.device)},
                             {"pin_memory", Arg::Bool(false)}}));
      known_[full] = Uniform{std::move(u.value), full};
      constants_.insert(full);
      ctx_.Log("constant_fold: ", n->name(), " -> ", full->name());
      RETURN_IF_ERROR(Replace(n, full));
    }
    return absl::OkStatus();
  }

  // Whether argument `i` of `n` is `want` (0 or 1): a literal, or a full()
  // of step 2. In a float op a zero must have the sign `negative` says
  // (x + -0.0 and x - 0.0 are x; x + 0.0 and x - -0.0 are not); an integer
  // zero is +0.0 there.
  bool Is(const Node& n, size_t i, double want, bool negative) const {
    const Arg& a = n.args()[i];
    double v;
    bool has_sign = false;
    if (a.kind == Arg::Kind::kInt) {
      v = static_cast<double>(a.i);
    } else if (a.kind == Arg::Kind::kFloat) {
      v = a.f;
      has_sign = true;
    } else if (a.kind == Arg::Kind::kBool) {
      v = a.b ? 1 : 0;
    } else if (a.kind == Arg::Kind::kNode && constants_.contains(a.node)) {
      const Tensor& t = known_.at(a.node).value;
      v = ElementOf(t);
      has_sign = IsFloatingPoint(t.dtype());
    } else {
      return false;
    }
    if (v != want) return false;
    if (want != 0 || !IsFloatingPoint(TM(&n).dtype)) return true;
    return (has_sign && std::signbit(v)) == negative;
  }

  // Step 3: remove_no_ops.
  absl::Status RemoveNoOps() {
    std::vector<Node*> order;
    for (const auto& n : graph_.nodes()) {
      if (n->kind() == Node::Kind::kCall) order.push_back(n.get());
    }
    for (Node* n : order) {
      if (n->users().empty()) continue;  // replaced already, or dead
      const FoldRule* rule = RuleOf(*n);
      if (rule == nullptr || n->args().size() != 2 || !IsTensor(n)) continue;
      bool alpha_one = true;
      for (const auto& [name, a] : n->kwargs()) {
        if (name == "alpha" && !(a.kind == Arg::Kind::kInt && a.i == 1) &&
            !(a.kind == Arg::Kind::kFloat && a.f == 1)) {
          alpha_one = false;
        }
      }
      std::optional<size_t> keep;
      switch (rule->rule) {
        case Rule::kAdd:
          if (!alpha_one) break;
          if (Is(*n, 0, 0, /*negative=*/true))
            keep = 1;
          else if (Is(*n, 1, 0, /*negative=*/true))
            keep = 0;
          break;
        case Rule::kSub:
          if (alpha_one && Is(*n, 1, 0, /*negative=*/false)) keep = 0;
          break;
        case Rule::kMul:
          if (Is(*n, 0, 1, false))
            keep = 1;
          else if (Is(*n, 1, 1, false))
            keep = 0;
          break;
        case Rule::kDiv:
          if (Is(*n, 1, 1, false)) keep = 0;
          break;
        default:
          break;
      }
      if (!keep.has_value()) continue;
      RETURN_IF_ERROR(ReplaceNoOp(n, *keep));
    }
    return absl::OkStatus();
  }

  // Storages of the graph's inputs and outputs, and the output's nodes.
  void CollectBoundary(absl::flat_hash_set<ir::StorageId>& storages,
                       absl::flat_hash_set<const Node*>& returned) const {
    for (const Node* p : graph_.Placeholders()) {
      if (IsTensor(p)) storages.insert(TM(p).storage);
    }
    if (const Node* out = graph_.output(); out != nullptr) {
      for (const Node* r : out->Inputs()) {
        returned.insert(r);
        if (IsTensor(r)) storages.insert(TM(r).storage);
      }
    }
  }

  // Replaces no-op `n` by its argument `keep` where that is safe.
  absl::Status ReplaceNoOp(Node* n, size_t keep) {
    const Arg& a = n->args()[keep];
    if (a.kind != Arg::Kind::kNode || !IsTensor(a.node))
      return absl::OkStatus();
    Node* x = a.node;
    const TensorMeta &want = TM(n), &have = TM(x);
    if (have.sizes != want.sizes || have.device != want.device) {
      return absl::OkStatus();
    }
    // x written later: n was the copy its users read (#174187).
    if (written_.contains(have.storage)) return absl::OkStatus();
    if (have.dtype == want.dtype) {
      absl::flat_hash_set<ir::StorageId> boundary;
      absl::flat_hash_set<const Node*> returned;
      CollectBoundary(boundary, returned);
      if (returned.contains(n) && boundary.contains(have.storage)) {
        return absl::OkStatus();  // would alias an input or another output
      }
    } else {
      ASSIGN_OR_RETURN(
          x, graph_.InsertCall(n, "prims.convert_element_type.default",
                               {Arg::Of(x), Arg::OfDType(want.dtype)}));
    }
    ctx_.Log("constant_fold: ", n->name(), " is a no-op -> ", x->name());
    return Replace(n, x);
  }

  // Makes the users of `n` use `with`; `n` is erased at the end, with what
  // only it used.
  absl::Status Replace(Node* n, Node* with) {
    for (Node* u : n->users()) refresh_.insert(u);
    graph_.ReplaceAllUsesWith(n, with);
    replaced_.push_back(n);
    changed_ = true;
    return absl::OkStatus();
  }

  // Erases the replaced nodes and, transitively, the inputs only they used.
  absl::Status EraseDead() {
    absl::flat_hash_set<Node*> erased;
    std::vector<Node*> dead = replaced_;
    while (!dead.empty()) {
      Node* d = dead.back();
      dead.pop_back();
      if (erased.contains(d) || !Removable(*d)) continue;
      std::vector<Node*> inputs = d->Inputs();
      refresh_.erase(d);
      erased.insert(d);
      RETURN_IF_ERROR(graph_.Erase(d));
      for (Node* in : inputs) dead.push_back(in);
    }
    return absl::OkStatus();
  }

  ir::Graph& graph_;
  PassContext& ctx_;
  absl::flat_hash_map<absl::string_view, const FoldRule*> rules_;
  absl::flat_hash_set<ir::StorageId> written_;
  absl::flat_hash_map<const Node*, Uniform> known_;
  absl::flat_hash_set<const Node*> constants_;  // full()s of step 2
  absl::flat_hash_map<Expr, const Node*> sym_nodes_;
  bool sym_nodes_filled_ = false;
  absl::flat_hash_set<Node*> refresh_;
  std::vector<Node*> replaced_;
  bool changed_ = false;
};

}  // namespace

absl::StatusOr<bool> ConstantFold::Run(ir::Graph& graph, PassContext& ctx) {
  return Folder(graph, ctx).Run();
}

}  // namespace lathe::passes
