#include "aot/flatten_composites.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/interpreter.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "ir/shape_prop.h"
#include "runtime/composite.h"
#include "status_macros.h"

namespace lathe::aot {
namespace {

using ir::Arg;
using ir::Node;

// A value of the graph being flattened: a plain node, or a composite of
// inner values.
struct Value {
  Node* node = nullptr;
  const CompositeType* type = nullptr;
  std::vector<Value> inner;
};

// Parses "pair(pair, scaled_int8)" into a layout.
class TypeParser {
 public:
  explicit TypeParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<CompositeLayout> Parse() {
    ASSIGN_OR_RETURN(CompositeLayout l, One());
    Skip();
    if (at_ != text_.size()) return Error("unexpected text");
    return l;
  }

 private:
  absl::StatusOr<CompositeLayout> One(int depth = 1) {
    if (depth > kMaxCompositeDepth) {
      return Error(
          absl::StrCat("nested deeper than ", kMaxCompositeDepth, " levels"));
    }
    Skip();
    size_t start = at_;
    while (at_ < text_.size() &&
           (absl::ascii_isalnum(text_[at_]) || text_[at_] == '_')) {
      ++at_;
    }
    std::string name(text_.substr(start, at_ - start));
    if (name.empty()) return Error("expected a type name");
    if (name == "plain") return CompositeLayout::Plain();
    const CompositeType* type = FindCompositeType(name);
    if (type == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown composite type '", name, "'"));
    }
    std::vector<CompositeLayout> inner(type->inner_names().size());
    Skip();
    if (at_ < text_.size() && text_[at_] == '(') {
      ++at_;
      for (size_t k = 0; k < inner.size(); ++k) {
        if (k > 0) {
          Skip();
          if (at_ >= text_.size() || text_[at_] != ',') {
            return Error(
                absl::StrCat(name, " takes ", inner.size(), " inner types"));
          }
          ++at_;
        }
        ASSIGN_OR_RETURN(inner[k], One(depth + 1));
      }
      Skip();
      if (at_ >= text_.size() || text_[at_] != ')')
        return Error("expected ')'");
      ++at_;
    }
    return CompositeLayout::Of(type, std::move(inner));
  }
  void Skip() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  absl::Status Error(const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "composite type '", text_, "' at column ", at_ + 1, ": ", what));
  }

  absl::string_view text_;
  size_t at_ = 0;
};

class Flattener {
 public:
  explicit Flattener(ir::Graph& graph) : graph_(graph) {}

  // The inner placeholders of `p` (outer meta `m`) laid out as `l`, inserted
  // before `before`.
  absl::StatusOr<Value> Inputs(const std::string& name,
                               const CompositeLayout& l,
                               const ir::TensorMeta& m, Node* before) {
    if (l.type == nullptr) {
      ir::TensorMeta inner = m;
      inner.storage = graph_.NewStorageId();
      Node* p = graph_.Insert(Node::Kind::kPlaceholder, name, name, {}, {},
                              ir::ValueMeta::Tensor(inner), before);
      return Value{p, nullptr, {}};
    }
    Value v{nullptr, l.type, {}};
    for (size_t k = 0; k < l.inner.size(); ++k) {
      ir::TensorMeta im = m;
      if (l.type->name() == "scaled_int8") {
        if (k == 0) {
          im.dtype = DType::kInt8;
        } else {
          im.sizes.clear();
          im.strides.clear();
          im.storage_offset = symbolic::Int(0);
        }
      }
      std::string n = InnerName(name, l, static_cast<int>(k));
      if (graph_.Find(n) != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot name the inner tensor '", n, "': the name is taken"));
      }
      ASSIGN_OR_RETURN(Value iv, Inputs(n, l.inner[k], im, before));
      v.inner.push_back(std::move(iv));
    }
    return v;
  }

  // `n` applied to `args` (composites in place of some nodes).
  absl::StatusOr<Value> Apply(Node* n, const std::vector<Value>& args) {
    const CompositeType* type = nullptr;
    for (const Value& a : args) {
      if (a.type != nullptr) {
        type = a.type;
        break;
      }
    }
    if (type == nullptr) {
      ASSIGN_OR_RETURN(Node * clone, Clone(n, args));
      return Value{clone, nullptr, {}};
    }
    if (ir::MutatesMetadata(*n) || n->op() == ir::Known().set_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", n->name(),
          "': Metadata mutations are currently not allowed on tensor "
          "subclasses (its argument is a ",
          type->name(), ")"));
    }
    if (n->meta().kind == ir::ValueMeta::Kind::kTuple) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", n->name(), "' (", n->target(), ") on a ", type->name(),
          " returns several tensors; not supported yet"));
    }
    if (type->name() == "pair") {
      std::vector<Value> halves;
      for (size_t k = 0; k < 2; ++k) {
        std::vector<Value> part;
        for (const Value& a : args) {
          if (a.type != nullptr && a.type != type) {
            return absl::InvalidArgumentError(absl::StrCat(
                "node '", n->name(), "' mixes a pair and a ", a.type->name()));
          }
          part.push_back(a.type == nullptr ? a : a.inner[k]);
        }
        ASSIGN_OR_RETURN(Value h, Apply(n, part));
        halves.push_back(std::move(h));
      }
      if (n->meta().kind != ir::ValueMeta::Kind::kTensor) return halves[0];
      return Value{nullptr, type, std::move(halves)};
    }
    if (type->name() == "scaled_int8") {
      if (ir::IsInplace(*n)) {
        return absl::UnimplementedError(
            absl::StrCat("node '", n->name(),
                         "': writing into a scaled_int8 is not supported yet"));
      }
      const Value& self = args[0];
      if (self.type == type && ir::IsView(*n) &&
          n->op() != ir::Known().getitem) {
        std::vector<Value> on_data = args;
        on_data[0] = self.inner[0];
        ASSIGN_OR_RETURN(Value data, Apply(n, on_data));
        return Value{nullptr, type, {std::move(data), self.inner[1]}};
      }
      if (self.type == type && n->op() == ir::Known().mul &&
          n->args().size() == 2 && n->args()[1].kind != Arg::Kind::kNode) {
        ASSIGN_OR_RETURN(
            Node * scale,
            graph_.InsertCall(n, "aten.mul.Tensor",
                              {Arg::Of(self.inner[1].node), n->args()[1]}));
        return Value{nullptr, type, {self.inner[0], Value{scale, nullptr, {}}}};
      }
      // Anything else sees the dequantized value.
      std::vector<Value> plain = args;
      for (Value& a : plain) {
        if (a.type != type) continue;
        if (a.inner[0].type != nullptr || a.inner[1].type != nullptr) {
          return absl::UnimplementedError("nested inside scaled_int8");
        }
        ASSIGN_OR_RETURN(
            Node * f32,
            graph_.InsertCall(n, "aten._to_copy.default",
                              {Arg::Of(a.inner[0].node)},
                              {{"dtype", Arg::OfDType(DType::kFloat32)}}));
        ASSIGN_OR_RETURN(
            Node * deq,
            graph_.InsertCall(n, "aten.mul.Tensor",
                              {Arg::Of(f32), Arg::Of(a.inner[1].node)}, {},
                              "dequantize"));
        a = Value{deq, nullptr, {}};
      }
      return Apply(n, plain);
    }
    return absl::UnimplementedError(absl::StrCat(
        "node '", n->name(), "': no rule for composite type ", type->name()));
  }

  // A copy of `n` reading `args` (all plain) in place of its node arguments.
  absl::StatusOr<Node*> Clone(Node* n, const std::vector<Value>& args) {
    size_t k = 0;
    std::function<Arg(const Arg&)> map = [&](const Arg& a) -> Arg {
      if (a.kind == Arg::Kind::kNode) return Arg::Of(args[k++].node);
      if (a.kind == Arg::Kind::kList) {
        Arg l = a;
        for (Arg& e : l.list) e = map(e);
        return l;
      }
      return a;
    };
    std::vector<Arg> new_args;
    for (const Arg& a : n->args()) new_args.push_back(map(a));
    std::vector<std::pair<std::string, Arg>> kwargs;
    for (const auto& [key, a] : n->kwargs()) kwargs.push_back({key, map(a)});
    return graph_.InsertCall(n, n->target(), std::move(new_args),
                             std::move(kwargs), n->name());
  }

  // The node arguments of `n` (args then kwargs, lists flattened), as
  // values.
  std::vector<Value> ArgValues(Node* n) {
    std::vector<Value> out;
    std::function<void(const Arg&)> walk = [&](const Arg& a) {
      if (a.kind == Arg::Kind::kNode) {
        auto it = values_.find(a.node);
        out.push_back(it != values_.end() ? it->second
                                          : Value{a.node, nullptr, {}});
      } else if (a.kind == Arg::Kind::kList) {
        for (const Arg& e : a.list) walk(e);
      }
    };
    for (const Arg& a : n->args()) walk(a);
    for (const auto& [key, a] : n->kwargs()) walk(a);
    return out;
  }

  ir::Graph& graph_;
  absl::flat_hash_map<Node*, Value> values_;  // replaced original nodes
};

void Leaves(const Value& v, std::vector<Arg>* out) {
  if (v.type == nullptr) {
    out->push_back(Arg::Of(v.node));
    return;
  }
  for (const Value& i : v.inner) Leaves(i, out);
}

// The layout of `v`, each plain value with its node's rank (-1 for a
// number) and each composite with its first inner value's.
CompositeLayout LayoutOf(const Value& v) {
  if (v.type == nullptr) {
    const ir::ValueMeta& m = v.node->meta();
    return CompositeLayout::Plain(m.kind == ir::ValueMeta::Kind::kTensor
                                      ? static_cast<int>(m.tensor.dim())
                                      : -1);
  }
  std::vector<CompositeLayout> inner;
  for (const Value& i : v.inner) inner.push_back(LayoutOf(i));
  CompositeLayout l = CompositeLayout::Of(v.type, std::move(inner));
  l.rank = l.inner.empty() ? -1 : l.inner[0].rank;
  return l;
}

}  // namespace

std::string InnerName(const std::string& outer, const CompositeLayout& l,
                      int k) {
  return absl::StrCat(outer, "_", l.type->inner_names()[k]);
}

void LeafNames(const std::string& name, const CompositeLayout& l,
               std::vector<std::string>* out) {
  if (l.type == nullptr) {
    out->push_back(name);
    return;
  }
  for (size_t k = 0; k < l.inner.size(); ++k) {
    LeafNames(InnerName(name, l, static_cast<int>(k)), l.inner[k], out);
  }
}

absl::StatusOr<absl::flat_hash_map<std::string, CompositeLayout>>
DeclaredComposites(const ir::Graph& graph) {
  absl::flat_hash_map<std::string, CompositeLayout> declared;
  for (const auto& [name, type] : graph.attributes().composites) {
    ASSIGN_OR_RETURN(CompositeLayout l, TypeParser(type).Parse());
    Node* p = graph.Find(name);
    if (p == nullptr || p->kind() != Node::Kind::kPlaceholder) {
      return absl::InvalidArgumentError(
          absl::StrCat("# lathe: composite ", name,
                       ": the graph has no input '", name, "'"));
    }
    declared[name] = std::move(l);
  }
  return declared;
}

absl::StatusOr<CompositeSignature> FlattenComposites(ir::Graph& graph) {
  if (graph.meta_inference() == nullptr) {
    return absl::FailedPreconditionError(
        "flattening composites needs a shape-propagated graph "
        "(ir::PropagateShapes)");
  }
  CompositeSignature sig;
  ASSIGN_OR_RETURN(auto declared, DeclaredComposites(graph));
  std::vector<Node*> placeholders = graph.Placeholders();
  for (Node* p : placeholders) {
    auto it = declared.find(p->name());
    sig.arguments.push_back(it == declared.end() ? CompositeLayout::Plain()
                                                 : it->second);
  }
  Node* output = graph.output();
  size_t n_results = output->args()[0].list.size();
  if (declared.empty()) {
    sig.results.assign(n_results, CompositeLayout::Plain());
    return sig;
  }
  Flattener f(graph);
  std::vector<Node*> erase;
  // Inputs: inner placeholders (and symbolic outer sizes/strides as ints).
  for (size_t i = 0; i < placeholders.size(); ++i) {
    Node* p = placeholders[i];
    CompositeLayout& l = sig.arguments[i];
    if (l.type == nullptr) continue;
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor) {
      return absl::InvalidArgumentError(absl::StrCat(
          "composite input '", p->name(), "' is not annotated as a tensor"));
    }
    const ir::TensorMeta& m = p->meta().tensor;
    // In p's place: inserted before it, which is erased at the end.
    ASSIGN_OR_RETURN(Value v, f.Inputs(p->name(), l, m, p));
    l = LayoutOf(v);
    l.rank = static_cast<int>(m.dim());
    for (bool stride : {false, true}) {
      const auto& list = stride ? m.strides : m.sizes;
      for (size_t d = 0; d < list.size(); ++d) {
        if (list[d].kind() == symbolic::ExprKind::kInteger) continue;
        std::string n =
            absl::StrCat(p->name(), stride ? "_stride" : "_size", d);
        graph.Insert(Node::Kind::kPlaceholder, n, n, {}, {},
                     ir::ValueMeta::Sym(list[d]), p);
        (stride ? l.symbolic_strides : l.symbolic_sizes)
            .push_back(static_cast<int>(d));
      }
    }
    f.values_[p] = std::move(v);
    erase.push_back(p);
  }
  // Calls that touch a composite (or a value that replaced one).
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (n->kind() != Node::Kind::kCall) continue;
    bool touched = false;
    for (Node* in : n->Inputs()) touched = touched || f.values_.contains(in);
    if (!touched) continue;
    ASSIGN_OR_RETURN(Value v, f.Apply(n, f.ArgValues(n)));
    f.values_[n] = std::move(v);
    erase.push_back(n);
  }
  // Outputs: composites flatten into their leaves.
  std::vector<Arg> results;
  for (const Arg& a : output->args()[0].list) {
    auto it =
        a.kind == Arg::Kind::kNode ? f.values_.find(a.node) : f.values_.end();
    if (it == f.values_.end()) {
      results.push_back(a);
      sig.results.push_back(CompositeLayout::Plain());
      continue;
    }
    Leaves(it->second, &results);
    sig.results.push_back(LayoutOf(it->second));
  }
  output->SetArgs({Arg::List(std::move(results))}, {});
  for (auto it = erase.rbegin(); it != erase.rend(); ++it) {
    RETURN_IF_ERROR(graph.Erase(*it));
  }
  return sig;
}

}  // namespace lathe::aot
