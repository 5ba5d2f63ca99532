#include "ir/shape_prop.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/graph_text.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "status_macros.h"
#include "symbolic/parser.h"

namespace lathe::ir {
namespace {

// The error for the `# lathe:` line `text` (after the prefix).
absl::Status BadDirective(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("# lathe: ", text, ": ", why));
}

std::string HintText(const std::string& symbol, const symbolic::Value& v) {
  return absl::StrCat("hint ", symbol, " ", PyNumber(v));
}

std::string RangeText(const std::string& symbol, const SymbolRange& r) {
  return absl::StrCat("range ", symbol, " ", r.lo, " ", r.hi);
}

// An error for a `# lathe:` line of no known kind, or an attribute naming an
// input the graph does not have (a composite input counts: flattening
// replaces it by its inner tensors).
absl::Status CheckAttributes(const Graph& g) {
  const GraphAttributes& a = g.attributes();
  if (!a.unknown.empty()) {
    const std::string& text = a.unknown.front();
    return BadDirective(
        text, text.empty() ? "empty directive"
                           : "unknown directive (expected hint, range, alias, "
                             "requires_grad, non_leaf, composite or constant)");
  }
  auto input = [&](const std::string& text,
                   const std::string& name) -> absl::Status {
    const Node* n = g.Find(name);
    if ((n != nullptr && n->kind() == Node::Kind::kPlaceholder) ||
        a.composites.count(name) > 0) {
      return absl::OkStatus();
    }
    return BadDirective(
        text, absl::StrCat("'", name, "' is not an input of the graph"));
  };
  for (const auto& [name, first] : a.alias_of) {
    std::string text = absl::StrCat("alias ", first, " ", name);
    RETURN_IF_ERROR(input(text, first));
    RETURN_IF_ERROR(input(text, name));
  }
  for (const std::string& name : a.requires_grad) {
    RETURN_IF_ERROR(input(absl::StrCat("requires_grad ", name), name));
  }
  for (const std::string& name : a.non_leaf) {
    RETURN_IF_ERROR(input(absl::StrCat("non_leaf ", name), name));
  }
  // A frozen input is read as a constant once its value is given (the
  // driver's freezing step); until then it is an input without one.
  absl::flat_hash_set<std::string> frozen;
  for (const auto& n : g.nodes()) {
    if (n->kind() == Node::Kind::kGetAttr) frozen.insert(n->target());
  }
  for (const std::string& name : a.constants) {
    if (frozen.contains(name)) continue;
    const std::string text = absl::StrCat("constant ", name);
    RETURN_IF_ERROR(input(text, name));
    return BadDirective(
        text, absl::StrCat("no value was given for the frozen input '", name,
                           "' (lathec --freeze ", name, "=FILE.npy)"));
  }
  return absl::OkStatus();
}

// Renames reshape `n`, whose value is `out`, to _reshape_copy when out has
// a storage of its own: its input's layout (in `values`, as the reshape
// reads it) allows no view. Its arguments become positional, as
// _reshape_copy names its second one `size` where reshape says `shape`.
void RenameCopyingReshape(
    Node& n, const Value& out,
    const absl::flat_hash_map<const Node*, Value>& values) {
  auto find = [&](size_t position, absl::string_view name) -> const Arg* {
    if (n.args().size() > position) return &n.args()[position];
    for (const auto& [key, arg] : n.kwargs()) {
      if (key == name) return &arg;
    }
    return nullptr;
  };
  const Arg* self = find(0, "self");
  const Arg* shape = find(1, "shape");
  if (self == nullptr || shape == nullptr || self->kind != Arg::Kind::kNode) {
    return;
  }
  auto in = values.find(self->node);
  if (in == values.end() || !in->second.is_tensor() ||
      in->second.meta.storage == out.meta.storage) {
    return;
  }
  n.SetArgs({*self, *shape}, {});
  n.set_target("aten._reshape_copy.default");
}

// Gives new tensors fresh storage identities. A meta function returns a
// view, an in-place result or set_'s source with the storage it shares, and
// a newly made tensor with none.
void AssignFreshStorage(Value& out, Graph& graph) {
  if (out.is_tensor() && out.meta.storage == kUnknownStorage)
    out.meta.storage = graph.NewStorageId();
  for (Value& e : out.list) AssignFreshStorage(e, graph);
}

// An error when a tensor in `m` has concrete sizes whose bytes int64 cannot
// count (no later size product may overflow).
absl::Status CheckByteCount(const ValueMeta& m) {
  if (m.kind == ValueMeta::Kind::kTuple) {
    for (const ValueMeta& e : m.elements) RETURN_IF_ERROR(CheckByteCount(e));
    return absl::OkStatus();
  }
  if (m.kind != ValueMeta::Kind::kTensor) return absl::OkStatus();
  int64_t bytes = ItemSize(m.tensor.dtype);
  for (const symbolic::Expr& e : m.tensor.sizes) {
    if (!e.is_number() || !e.is_int()) continue;
    if (e.int_value() < 0 ||
        __builtin_mul_overflow(bytes, e.int_value(), &bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          m.tensor.ToAnnotation({.strides = false, .device = false}),
          " is larger than int64 can count"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PropagateShapes(Graph& graph, symbolic::ShapeEnv& env,
                             const ShapePropOptions& options) {
  RETURN_IF_ERROR(CheckAttributes(graph));
  const GraphAttributes& attributes = graph.attributes();
  absl::flat_hash_map<std::string, symbolic::Value> hints(
      attributes.hints.begin(), attributes.hints.end());
  for (const auto& [name, v] : options.hints) hints[name] = v;
  const std::map<std::string, SymbolRange>& ranges = attributes.ranges;
  absl::flat_hash_map<const Node*, Value> values;
  absl::flat_hash_map<std::string, StorageId> input_storage;
  graph.ResetStorageIds(0);
  absl::flat_hash_set<symbolic::Expr> known;  // symbols bound so far
  absl::flat_hash_set<std::string> declared;  // by the inputs' annotations
  std::vector<Node*> placeholders = graph.Placeholders();
  for (size_t k = 0; k < placeholders.size(); ++k) {
    Node* p = placeholders[k];
    ValueMeta& m = p->meta();
    if (m.kind == ValueMeta::Kind::kNone) {
      // A parameter make_fx left unannotated: a Python value it baked into
      // the graph, which the graph never reads as a tensor.
      values[p] = Value();
      continue;
    }
    if (absl::Status st = CheckByteCount(m); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", p->name(), "': ", st.message()));
    }
    // Declare the symbols the annotation introduces.
    auto declare = [&](symbolic::Expr e,
                       const symbolic::Source& source) -> absl::Status {
      for (symbolic::Expr s : symbolic::FreeSymbols(e)) {
        declared.insert(std::string(s.name()));
        if (env.HintOf(s).has_value() || env.IsUnbacked(s)) continue;
        std::optional<symbolic::Value> hint;
        if (auto it = hints.find(std::string(s.name())); it != hints.end())
          hint = it->second;
        RETURN_IF_ERROR(env.DeclareSymbol(s, hint, source));
        if (auto r = ranges.find(std::string(s.name())); r != ranges.end()) {
          absl::Status st = env.ConstrainRange(s, r->second.lo, r->second.hi);
          if (!st.ok()) {
            return BadDirective(
                RangeText(r->first, r->second),
                absl::StrCat(st.message(), " (from input '", p->name(), "')"));
          }
        }
      }
      return absl::OkStatus();
    };
    if (m.kind == ValueMeta::Kind::kSym) {
      RETURN_IF_ERROR(declare(m.sym, symbolic::Source::Scalar(k)));
    } else if (m.kind == ValueMeta::Kind::kTensor) {
      for (int64_t i = 0; i < m.tensor.dim(); ++i) {
        RETURN_IF_ERROR(
            declare(m.tensor.sizes[i], symbolic::Source::Size(k, i)));
      }
      for (int64_t i = 0; i < m.tensor.dim(); ++i) {
        RETURN_IF_ERROR(
            declare(m.tensor.strides[i], symbolic::Source::Stride(k, i)));
      }
      auto alias = attributes.alias_of.find(p->name());
      if (alias != attributes.alias_of.end() &&
          input_storage.contains(alias->second)) {
        m.tensor.storage = input_storage[alias->second];
      } else {
        m.tensor.storage = graph.NewStorageId();
      }
      input_storage[p->name()] = m.tensor.storage;
    }
    // The caller binds the inputs' symbols: they are known, not introduced.
    std::vector<std::pair<symbolic::Expr, std::string>> by_caller;
    BindUnbacked(m, "", env, known, by_caller);
    values[p] = ValueOfMeta(m);
  }
  // A hint must name a symbol of the inputs' annotations.
  for (const auto& [name, v] : attributes.hints) {
    if (!declared.contains(name)) {
      return BadDirective(
          HintText(name, v),
          absl::StrCat("no input's annotation has the symbol ", name));
    }
  }
  int unbacked_ints = 0;  // made so far by this propagation
  for (const auto& node : graph.nodes()) {
    Node& n = *node;
    // A constant: its annotation says it all.
    if (n.kind() == Node::Kind::kGetAttr) {
      if (n.meta().kind != ValueMeta::Kind::kTensor) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constant '", n.name(),
            "' has no tensor annotation; shape propagation needs its type"));
      }
      n.meta().tensor.storage = graph.NewStorageId();
      if (absl::Status st = CheckByteCount(n.meta()); !st.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("constant '", n.name(), "': ", st.message()));
      }
      values[&n] = ValueOfMeta(n.meta());
      continue;
    }
    if (n.kind() != Node::Kind::kCall) continue;
    auto fail = [&](const absl::Status& s) {
      return absl::Status(s.code(),
                          absl::StrCat("node '", n.name(), "': ", s.message()));
    };
    absl::StatusOr<EvaluatedCall> call = EvalCall(n, values, &env);
    if (!call.ok()) {
      for (const Node* in : n.Inputs()) {
        if (in->kind() == Node::Kind::kPlaceholder &&
            in->meta().kind == ValueMeta::Kind::kNone) {
          return fail(absl::InvalidArgumentError(absl::StrCat(
              "it reads input '", in->name(),
              "', which has no annotation; shape propagation needs its type (",
              call.status().message(), ")")));
        }
      }
      return fail(call.status());
    }
    Value out = std::move(call->out);
    AssignFreshStorage(out, graph);
    // reshape is a view where its input's layout allows one and a copy
    // elsewhere: a copy is renamed _reshape_copy, so that what reads the
    // graph later (aliasing, functionalization, lowering) sees a new tensor
    // without the layout that decided it (PyTorch's reshape decomposes at
    // trace time the same way).
    if (n.op() == Known().reshape && out.is_tensor()) {
      RenameCopyingReshape(n, out, values);
    }
    // An .item() PyTorch annotated with a backed symbol
    // (`_local_scalar_dense: "Sym(s16)"`) is that symbol, backed by the hint
    // the caller gives it (lathec: the item'd input's value), not a fresh
    // unbacked one; without a hint it stays unbacked.
    const Node* item_of =
        n.args().empty() || n.args()[0].kind != Arg::Kind::kNode
            ? nullptr
            : n.args()[0].node;
    if (out.is_number() && out.number.is_symbol() &&
        env.IsUnbacked(out.number) && n.meta().kind == ValueMeta::Kind::kSym &&
        n.meta().sym.is_symbol() && n.meta().sym.is_int() &&
        n.meta().sym.name()[0] == 's' && item_of != nullptr &&
        item_of->kind() == Node::Kind::kPlaceholder) {
      symbolic::Expr backed = n.meta().sym;
      std::string name(backed.name());
      if (!env.HintOf(backed).has_value() && !env.IsUnbacked(backed)) {
        auto h = hints.find(name);
        int input = static_cast<int>(
            std::find(placeholders.begin(), placeholders.end(), item_of) -
            placeholders.begin());
        if (h != hints.end()) {
          absl::Status st = env.DeclareSymbol(backed, h->second,
                                              symbolic::Source::Scalar(input));
          if (!st.ok()) return fail(st);
          declared.insert(name);
        }
      }
      if (env.HintOf(backed).has_value()) out = Value::Number(backed);
    }
    // A data-dependent scalar (u0 = x.item()) takes its `# lathe: range`.
    // The graph text numbers unbacked ints in the order the graph makes
    // them; so does this (the env may hold others from an earlier
    // propagation of the same graph).
    if (out.is_number() && out.number.is_symbol() &&
        env.IsUnbacked(out.number)) {
      std::string name = out.number.is_int() ? absl::StrCat("u", unbacked_ints)
                                             : std::string(out.number.name());
      if (auto r = ranges.find(name); r != ranges.end()) {
        absl::Status st =
            env.ConstrainRange(out.number, r->second.lo, r->second.hi);
        if (!st.ok()) return fail(st);
      }
    }
    // Simplify sizes with what the ShapeEnv knows.
    if (out.is_tensor()) {
      for (auto* list : {&out.meta.sizes, &out.meta.strides}) {
        for (symbolic::Expr& e : *list) e = env.Simplify(e);
      }
      out.meta.storage_offset = env.Simplify(out.meta.storage_offset);
    }
    n.meta() = MetaOfValue(out);
    if (absl::Status st = CheckByteCount(n.meta()); !st.ok()) return fail(st);
    std::vector<std::pair<symbolic::Expr, std::string>> previous =
        std::move(n.unbacked_bindings());
    n.unbacked_bindings().clear();
    BindUnbacked(n.meta(), "", env, known, n.unbacked_bindings());
    // Propagating again in the same env keeps the node's unbacked symbols
    // (u0 stays u0 rather than becoming u1), so metas taken before a pass
    // still name the symbols the graph has after it.
    if (!previous.empty() && previous.size() == n.unbacked_bindings().size()) {
      absl::flat_hash_map<symbolic::Expr, symbolic::Expr> back;
      bool same_env = true;
      for (size_t i = 0; i < previous.size(); ++i) {
        const auto& [old_symbol, old_path] = previous[i];
        const auto& [new_symbol, new_path] = n.unbacked_bindings()[i];
        same_env = same_env && env.IsUnbacked(old_symbol) &&
                   old_path == new_path &&
                   old_symbol.is_int() == new_symbol.is_int();
        back[new_symbol] = old_symbol;
      }
      if (same_env) {
        ASSIGN_OR_RETURN(n.meta(), SubstituteSymbols(n.meta(), back));
        out = ValueOfMeta(n.meta());
        n.unbacked_bindings() = std::move(previous);
        for (const auto& [symbol, path] : n.unbacked_bindings()) {
          known.insert(symbol);
        }
      }
    }
    for (const auto& [symbol, path] : n.unbacked_bindings()) {
      unbacked_ints += symbol.is_int();
    }
    if (MutatesMetadata(n) && !n.args().empty() &&
        n.args()[0].kind == Arg::Kind::kNode) {
      SetObjectValue(*n.args()[0].node, out, values);
    }
    values[&n] = std::move(out);
  }
  // A range must name a symbol of the inputs or one the graph makes.
  for (int k = 0; k < unbacked_ints; ++k) declared.insert(absl::StrCat("u", k));
  for (const auto& [name, r] : ranges) {
    if (!declared.contains(name)) {
      return BadDirective(
          RangeText(name, r),
          absl::StrCat("neither an input's annotation nor the graph has "
                       "the symbol ",
                       name));
    }
  }
  graph.set_meta_inference(std::make_shared<ShapeEnvMetaInference>(env));
  return absl::OkStatus();
}

}  // namespace lathe::ir
