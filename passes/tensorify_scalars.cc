#include "passes/tensorify_scalars.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/eval_call.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::passes {
namespace {

using ir::Arg;
using ir::Node;
using symbolic::Expr;
using symbolic::ExprKind;

// How an op takes tensorified scalars: the one table of this pass.
enum class Rule : uint8_t {
  kTensorSlots,  // a Tensor argument given a float: the 0-d tensor instead
  kOverload,     // the Scalar overload becomes `tensor_target`
  kAddcmul,      // self + value * (a * b) -> add(self, mul(mul(a, b), v))
  kAddcdiv,      // self + value * (a / b) -> add(self, mul(div(a, b), v))
};
struct OpRule {
  Rule rule;
  std::string tensor_target;  // kOverload; for kAddc*: the add overload
};

const absl::flat_hash_map<std::string, OpRule>& Rules() {
  static const auto* rules = [] {
    auto* r = new absl::flat_hash_map<std::string, OpRule>;
    for (const char* op :
         {"mul", "add", "sub", "div", "gt", "lt", "ge", "le", "eq", "ne"}) {
      for (const char* suffix : {"", "_"}) {
        std::string base = absl::StrCat("aten.", op, suffix);
        (*r)[absl::StrCat(base, ".Tensor")] = {Rule::kTensorSlots, ""};
        (*r)[absl::StrCat(base, ".Scalar")] = {Rule::kOverload,
                                               absl::StrCat(base, ".Tensor")};
      }
    }
    (*r)["aten.pow.Tensor_Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.pow_.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.pow.Tensor_Scalar"] = {Rule::kOverload,
                                      "aten.pow.Tensor_Tensor"};
    (*r)["aten.pow_.Scalar"] = {Rule::kOverload, "aten.pow_.Tensor"};
    (*r)["aten.rsub.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.rsub.Scalar"] = {Rule::kOverload, "aten.rsub.Tensor"};
    (*r)["aten.lerp.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.lerp_.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.lerp.Scalar"] = {Rule::kOverload, "aten.lerp.Tensor"};
    (*r)["aten.lerp_.Scalar"] = {Rule::kOverload, "aten.lerp_.Tensor"};
    (*r)["aten.clamp.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.clamp_.Tensor"] = {Rule::kTensorSlots, ""};
    (*r)["aten.clamp.default"] = {Rule::kOverload, "aten.clamp.Tensor"};
    (*r)["aten.clamp_.default"] = {Rule::kOverload, "aten.clamp_.Tensor"};
    (*r)["aten.addcmul.default"] = {Rule::kAddcmul, "aten.add.Tensor"};
    (*r)["aten.addcmul_.default"] = {Rule::kAddcmul, "aten.add_.Tensor"};
    (*r)["aten.addcdiv.default"] = {Rule::kAddcdiv, "aten.add.Tensor"};
    (*r)["aten.addcdiv_.default"] = {Rule::kAddcdiv, "aten.add_.Tensor"};
    return r;
  }();
  return *rules;
}

// The float symbol a value is, when it is a bare one.
std::optional<Expr> FloatValue(const Node* n) {
  if (n->meta().kind != ir::ValueMeta::Kind::kSym || !n->meta().sym.is_float())
    return std::nullopt;
  return n->meta().sym;
}

// A value of the interpretation: a 0-d float64 tensor node, or a constant.
struct Operand {
  Node* tensor = nullptr;
  double constant = 0;
};

class Tensorifier {
 public:
  Tensorifier(ir::Graph& graph, PassContext& ctx) : graph_(graph), ctx_(ctx) {}

  absl::StatusOr<bool> Run() {
    // Where each backed float symbol comes from: a Sym input, or .item() of
    // a 0-d f64 input (whose tensor then serves directly).
    for (const auto& n : graph_.nodes()) {
      std::optional<Expr> v = FloatValue(n.get());
      if (!v || !v->is_symbol() || !ctx_.env().HintOf(*v).has_value()) continue;
      if (n->kind() == Node::Kind::kPlaceholder) {
        source_.emplace(*v, n.get());
      } else if (n->op() == ir::Known().local_scalar_dense &&
                 n->args()[0].kind == Arg::Kind::kNode) {
        const Node* t = n->args()[0].node;
        if (t->meta().kind == ir::ValueMeta::Kind::kTensor &&
            t->meta().tensor.dim() == 0 &&
            t->meta().tensor.dtype == DType::kFloat64) {
          source_.emplace(*v, n.get());
          tensor_.emplace(*v, n->args()[0].node);
        }
      }
    }
    if (source_.empty()) return false;
    std::vector<Node*> order;
    for (const auto& n : graph_.nodes()) order.push_back(n.get());
    // A rewrite that gives up may have added nodes first (the scaled
    // operand of alpha=, scalar tensors kept for later rewrites): a change.
    const size_t made = graph_.nodes().size();
    bool changed = false;
    for (Node* n : order) {
      ASSIGN_OR_RETURN(bool did, Rewrite(*n));
      changed = changed || did;
    }
    changed = changed || graph_.nodes().size() != made;
    // Python-operator nodes the rewrites left without users go.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (n->kind() == Node::Kind::kCall && n->users().empty() &&
          ir::IsPythonOp(n->target())) {
        RETURN_IF_ERROR(graph_.Erase(n));
        changed = true;
      }
    }
    ASSIGN_OR_RETURN(bool specialized, Sweep());
    return changed || specialized;
  }

 private:
  // Whether every free symbol of `e` is a float symbol with a source.
  bool Tensorifiable(Expr e) const {
    std::vector<Expr> symbols = symbolic::FreeSymbols(e);
    if (symbols.empty()) return false;
    for (Expr s : symbols) {
      if (!s.is_float() || !source_.contains(s)) return false;
    }
    return true;
  }

  absl::StatusOr<Node*> Call(
      Node* before, const std::string& target, std::vector<Arg> args,
      std::vector<std::pair<std::string, Arg>> kwargs = {}) {
    return graph_.InsertCall(before, target, std::move(args),
                             std::move(kwargs));
  }

  // A 0-d float64 tensor holding `o`.
  absl::StatusOr<Node*> AsTensor(const Operand& o, Node* before) {
    if (o.tensor != nullptr) return o.tensor;
    return Call(before, "aten.scalar_tensor.default", {Arg::Float(o.constant)},
                {{"dtype", Arg::OfDType(DType::kFloat64)}});
  }

  // Binary tensor op on operands (at least one a tensor).
  absl::StatusOr<Operand> Binary(const std::string& op, Operand a, Operand b,
                                 Node* before) {
    if (a.tensor == nullptr) {
      ASSIGN_OR_RETURN(a.tensor, AsTensor(a, before));
    }
    std::vector<Arg> args = {Arg::Of(a.tensor)};
    args.push_back(b.tensor != nullptr ? Arg::Of(b.tensor)
                                       : Arg::Float(b.constant));
    std::string target = absl::StrCat("aten.", op, ".Tensor");
    if (op == "pow") {
      target = b.tensor != nullptr ? "aten.pow.Tensor_Tensor"
                                   : "aten.pow.Tensor_Scalar";
    }
    ASSIGN_OR_RETURN(Node * r, Call(before, target, std::move(args)));
    return Operand{r, 0};
  }

  // The expression `e` as float64 tensor compute (memoized).
  absl::StatusOr<Operand> Interp(Expr e, Node* before) {
    if (e.kind() == ExprKind::kFloat) return Operand{nullptr, e.float_value()};
    if (e.kind() == ExprKind::kInteger)
      return Operand{nullptr, static_cast<double>(e.int_value())};
    if (auto it = memo_.find(e); it != memo_.end()) return Operand{it->second};
    Operand r;
    switch (e.kind()) {
      case ExprKind::kSymbol: {
        if (!e.is_float() || !source_.contains(e)) {
          return absl::UnimplementedError(absl::StrCat(
              "symbol ", symbolic::ToString(e), " is not a backed float"));
        }
        if (auto t = tensor_.find(e); t != tensor_.end()) {
          r.tensor = t->second;
        } else {
          ASSIGN_OR_RETURN(r.tensor,
                           Call(before, "aten.scalar_tensor.default",
                                {Arg::Of(source_.at(e))},
                                {{"dtype", Arg::OfDType(DType::kFloat64)}}));
        }
        break;
      }
      case ExprKind::kAdd:
      case ExprKind::kMul: {
        // Canonical form puts the numeric constant first: fold it in last.
        const char* op = e.kind() == ExprKind::kAdd ? "add" : "mul";
        std::optional<Operand> acc;
        std::optional<double> constant;
        for (Expr a : e.args()) {
          ASSIGN_OR_RETURN(Operand t, Interp(a, before));
          if (t.tensor == nullptr) {
            constant = t.constant;
            continue;
          }
          if (acc.has_value()) {
            ASSIGN_OR_RETURN(acc, Binary(op, *acc, t, before));
          } else {
            acc = t;
          }
        }
        if (!acc.has_value()) {
          return absl::UnimplementedError("an expression without symbols");
        }
        if (constant.has_value()) {
          ASSIGN_OR_RETURN(
              acc, Binary(op, *acc, Operand{nullptr, *constant}, before));
        }
        r = *acc;
        break;
      }
      case ExprKind::kFloatPow:
      case ExprKind::kFloatTrueDiv: {
        const char* op = e.kind() == ExprKind::kFloatPow ? "pow" : "div";
        ASSIGN_OR_RETURN(Operand a, Interp(e.arg(0), before));
        ASSIGN_OR_RETURN(Operand b, Interp(e.arg(1), before));
        ASSIGN_OR_RETURN(r, Binary(op, a, b, before));
        break;
      }
      case ExprKind::kOpaqueUnary: {
        static const auto* ops =
            new absl::flat_hash_map<symbolic::UnaryFn, const char*>{
                {symbolic::UnaryFn::kSqrt, "aten.sqrt.default"},
                {symbolic::UnaryFn::kExp, "aten.exp.default"},
                {symbolic::UnaryFn::kLog, "aten.log.default"},
                {symbolic::UnaryFn::kLog2, "aten.log2.default"},
                {symbolic::UnaryFn::kSin, "aten.sin.default"},
                {symbolic::UnaryFn::kCos, "aten.cos.default"},
                {symbolic::UnaryFn::kTan, "aten.tan.default"},
                {symbolic::UnaryFn::kTanh, "aten.tanh.default"}};
        auto fn = ops->find(e.unary_fn());
        if (fn == ops->end()) {
          return absl::UnimplementedError(
              absl::StrCat("no tensor form for ", symbolic::ToString(e)));
        }
        const char* op = fn->second;
        ASSIGN_OR_RETURN(Operand a, Interp(e.arg(0), before));
        ASSIGN_OR_RETURN(Node * t, AsTensor(a, before));
        ASSIGN_OR_RETURN(r.tensor, Call(before, op, {Arg::Of(t)}));
        break;
      }
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe: {
        const char* op = e.kind() == ExprKind::kEq   ? "eq"
                         : e.kind() == ExprKind::kNe ? "ne"
                         : e.kind() == ExprKind::kLt ? "lt"
                                                     : "le";
        ASSIGN_OR_RETURN(Operand a, Interp(e.arg(0), before));
        ASSIGN_OR_RETURN(Operand b, Interp(e.arg(1), before));
        ASSIGN_OR_RETURN(r, Binary(op, a, b, before));
        break;
      }
      default:
        return absl::UnimplementedError(
            absl::StrCat("no tensor form for ", symbolic::ToString(e)));
    }
    memo_[e] = r.tensor;
    return r;
  }

  // `t` (0-d float64) cast to `dtype`, once per pair.
  absl::StatusOr<Node*> Cast(Node* t, DType dtype, Node* before) {
    if (t->meta().kind == ir::ValueMeta::Kind::kTensor &&
        t->meta().tensor.dtype == dtype) {
      return t;
    }
    auto key = std::make_pair(t, dtype);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    ASSIGN_OR_RETURN(Node * c,
                     Call(before, "prims.convert_element_type.default",
                          {Arg::Of(t), Arg::OfDType(dtype)}));
    casts_[key] = c;
    return c;
  }

  // The dtype a Python float takes in `n`'s computation: self's (float32
  // for half types: PyTorch computes those in float32), float32 for
  // integer self.
  static DType ComputationDType(const Node& n) {
    if (n.args().empty() || n.args()[0].kind != Arg::Kind::kNode)
      return DType::kFloat32;
    const ir::ValueMeta& m = n.args()[0].node->meta();
    if (m.kind != ir::ValueMeta::Kind::kTensor) return DType::kFloat32;
    DType d = m.tensor.dtype;
    if (d == DType::kFloat16 || d == DType::kBFloat16 || !IsFloatingPoint(d))
      return DType::kFloat32;
    return d;
  }

  // The tensor for scalar argument `a` of `n` (a float symbol's expression
  // or a literal number), cast for `n`; null when `a` is neither.
  absl::StatusOr<Node*> ScalarTensor(const Arg& a, Node& n) {
    Operand o;
    if (a.kind == Arg::Kind::kNode) {
      std::optional<Expr> v = FloatValue(a.node);
      if (!v || !Tensorifiable(*v)) return nullptr;
      ASSIGN_OR_RETURN(o, Interp(*v, &n));
      for (Expr s : symbolic::FreeSymbols(*v)) tensorified_.insert(s);
    } else if (a.kind == Arg::Kind::kFloat) {
      o.constant = a.f;
    } else if (a.kind == Arg::Kind::kInt) {
      o.constant = static_cast<double>(a.i);
    } else {
      return nullptr;
    }
    ASSIGN_OR_RETURN(Node * t, AsTensor(o, &n));
    return Cast(t, ComputationDType(n), &n);
  }

  // Whether `a` is a float symbol's value this pass can tensorify.
  bool IsTensorifiable(const Arg& a) const {
    if (a.kind != Arg::Kind::kNode) return false;
    std::optional<Expr> v = FloatValue(a.node);
    return v.has_value() && Tensorifiable(*v);
  }

  // The argument called `name` of `n` (positional or keyword), or null.
  static Arg* Find(std::vector<Arg>& args,
                   std::vector<std::pair<std::string, Arg>>& kwargs,
                   const ir::OpSchema& schema, absl::string_view name) {
    for (size_t i = 0; i < schema.arguments.size(); ++i) {
      if (schema.arguments[i].name != name) continue;
      if (i < args.size()) return &args[i];
      for (auto& [k, a] : kwargs) {
        if (k == name) return &a;
      }
    }
    return nullptr;
  }

  absl::StatusOr<bool> Rewrite(Node& n) {
    if (n.kind() != Node::Kind::kCall || n.op() == nullptr) return false;
    auto rule = Rules().find(n.target());
    if (rule == Rules().end()) return false;
    bool any = false;
    for (const Arg& a : n.args()) any = any || IsTensorifiable(a);
    for (const auto& [k, a] : n.kwargs()) any = any || IsTensorifiable(a);
    if (!any) return false;
    const ir::OpSchema& schema = n.op()->schema;
    std::vector<Arg> args = n.args();
    std::vector<std::pair<std::string, Arg>> kwargs = n.kwargs();
    std::string target = n.target();
    // alpha= of add/sub: the scaled operand instead.
    if (Arg* alpha = Find(args, kwargs, schema, "alpha");
        alpha != nullptr && IsTensorifiable(*alpha) && args.size() >= 2 &&
        args[1].kind == Arg::Kind::kNode) {
      ASSIGN_OR_RETURN(Node * s, ScalarTensor(*alpha, n));
      ASSIGN_OR_RETURN(Node * scaled,
                       Call(&n, "aten.mul.Tensor", {args[1], Arg::Of(s)}));
      args[1] = Arg::Of(scaled);
      *alpha = Arg::Int(1);
      kwargs.erase(
          std::remove_if(kwargs.begin(), kwargs.end(),
                         [](const auto& kw) { return kw.first == "alpha"; }),
          kwargs.end());
    }
    switch (rule->second.rule) {
      case Rule::kTensorSlots:
        for (size_t i = 0; i < args.size() && i < schema.arguments.size();
             ++i) {
          if (!schema.arguments[i].type.is_tensor_like() ||
              !IsTensorifiable(args[i])) {
            continue;
          }
          ASSIGN_OR_RETURN(Node * t, ScalarTensor(args[i], n));
          args[i] = Arg::Of(t);
        }
        break;
      case Rule::kOverload: {
        const ir::OpDef* to =
            ir::OpRegistry::Global().Find(rule->second.tensor_target);
        if (to == nullptr) return false;
        // Scalar slots that are Tensor slots in the Tensor overload.
        for (size_t i = 0; i < schema.arguments.size(); ++i) {
          if (schema.arguments[i].type.base != ir::BaseType::kScalar ||
              i >= to->schema.arguments.size() ||
              !to->schema.arguments[i].type.is_tensor_like()) {
            continue;
          }
          Arg* a = Find(args, kwargs, schema, schema.arguments[i].name);
          if (a == nullptr || a->kind == Arg::Kind::kNone) continue;
          ASSIGN_OR_RETURN(Node * t, ScalarTensor(*a, n));
          if (t == nullptr) return false;
          *a = Arg::Of(t);
        }
        target = rule->second.tensor_target;
        break;
      }
      case Rule::kAddcmul:
      case Rule::kAddcdiv: {
        Arg* value = Find(args, kwargs, schema, "value");
        if (value == nullptr || !IsTensorifiable(*value)) break;
        ASSIGN_OR_RETURN(Node * v, ScalarTensor(*value, n));
        ASSIGN_OR_RETURN(Node * prod, Call(&n,
                                           rule->second.rule == Rule::kAddcmul
                                               ? "aten.mul.Tensor"
                                               : "aten.div.Tensor",
                                           {args[1], args[2]}));
        ASSIGN_OR_RETURN(Node * scaled, Call(&n, "aten.mul.Tensor",
                                             {Arg::Of(prod), Arg::Of(v)}));
        args = {args[0], Arg::Of(scaled)};
        kwargs.clear();
        target = rule->second.tensor_target;
        break;
      }
    }
    ctx_.Log("tensorify_scalars: ", n.name(), " (", n.target(), " -> ", target,
             ")");
    n.SetArgs(std::move(args), std::move(kwargs));
    n.set_target(target);
    ASSIGN_OR_RETURN(int refreshed, ir::RefreshMetas(graph_, ctx_.env(), {&n}));
    (void)refreshed;
    return true;
  }

  // Specializes each float symbol some remaining use cannot take as a
  // tensor (or that no tensorified use covered): a guard on its value, the
  // value in the graph where it was.
  absl::StatusOr<bool> Sweep() {
    absl::flat_hash_set<Expr> untensorifiable;
    for (const auto& n : graph_.nodes()) {
      if (n->kind() != Node::Kind::kCall) continue;
      bool python =
          ir::IsPythonOp(n->target()) ||
          (n->op() != nullptr && n->op()->HasTag(ir::OpTag::kBuiltin));
      if (python) continue;
      bool ours =
          n->op() == ir::Known().scalar_tensor &&
          n->args()[0].kind == Arg::Kind::kNode &&
          source_.contains(FloatValue(n->args()[0].node).value_or(Expr()));
      if (ours || n->op() == ir::Known().local_scalar_dense) continue;
      for (Node* in : n->Inputs()) {
        if (in->meta().kind != ir::ValueMeta::Kind::kSym) continue;
        for (Expr s : symbolic::FreeSymbols(in->meta().sym)) {
          if (s.is_float() && source_.contains(s)) untensorifiable.insert(s);
        }
      }
      if (n->meta().kind == ir::ValueMeta::Kind::kTensor) {
        for (const auto& e : n->meta().tensor.sizes) {
          for (Expr s : symbolic::FreeSymbols(e)) {
            if (s.is_float() && source_.contains(s)) untensorifiable.insert(s);
          }
        }
      }
    }
    if (untensorifiable.empty()) return false;
    std::vector<Expr> sorted(untensorifiable.begin(), untensorifiable.end());
    std::sort(sorted.begin(), sorted.end(),
              [](Expr a, Expr b) { return a.name() < b.name(); });
    std::vector<Node*> edited;
    for (Expr s : sorted) {
      ASSIGN_OR_RETURN(double value, ctx_.env().GuardFloat(s));
      ctx_.specialize().push_back(std::string(s.name()));
      ctx_.Log("tensorify_scalars: specialized ", s.name(), " = ", value,
               " (a use that cannot take a tensor)");
      Node* source = source_.at(s);
      std::vector<Node*> users = source->users();
      for (Node* u : users) {
        std::vector<Arg> args = u->args();
        std::vector<std::pair<std::string, Arg>> kwargs = u->kwargs();
        std::function<void(Arg&)> put = [&](Arg& a) {
          if (a.kind == Arg::Kind::kNode && a.node == source) {
            a = Arg::Float(value);
          }
          for (Arg& e : a.list) put(e);
        };
        for (Arg& a : args) put(a);
        for (auto& [k, a] : kwargs) put(a);
        u->SetArgs(std::move(args), std::move(kwargs));
        edited.push_back(u);
      }
    }
    RETURN_IF_ERROR(ir::RefreshMetas(graph_, ctx_.env(), edited).status());
    return true;
  }

  ir::Graph& graph_;
  PassContext& ctx_;
  absl::flat_hash_map<Expr, Node*> source_;  // float symbol -> its node
  absl::flat_hash_map<Expr, Node*> tensor_;  // -> a 0-d f64 input
  absl::flat_hash_map<Expr, Node*> memo_;    // expression -> f64 tensor
  absl::flat_hash_map<std::pair<Node*, DType>, Node*> casts_;
  absl::flat_hash_set<Expr> tensorified_;
};

}  // namespace

absl::StatusOr<bool> TensorifyScalars::Run(ir::Graph& graph, PassContext& ctx) {
  Tensorifier t(graph, ctx);
  return t.Run();
}

}  // namespace lathe::passes
