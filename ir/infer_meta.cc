#include "ir/infer_meta.h"

#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/eval_call.h"
#include "status_macros.h"
#include "symbolic/simplify.h"

namespace lathe::ir {
namespace {

// Gives tensors the meta function made new (storage unknown) a storage id:
// the one at the same place in `old` when that was not one of the inputs'
// storages, else a fresh one.
void AssignStorage(Value& out, const ValueMeta* old,
                   const absl::flat_hash_set<StorageId>& input_storages,
                   Graph& graph) {
  if (out.is_tensor() && out.meta.storage == kUnknownStorage) {
    if (old != nullptr && old->kind == ValueMeta::Kind::kTensor &&
        old->tensor.storage != kUnknownStorage &&
        !input_storages.contains(old->tensor.storage)) {
      out.meta.storage = old->tensor.storage;
    } else {
      out.meta.storage = graph.NewStorageId();
    }
  }
  for (size_t i = 0; i < out.list.size(); ++i) {
    const ValueMeta* o = old != nullptr &&
                                 old->kind == ValueMeta::Kind::kTuple &&
                                 i < old->elements.size()
                             ? &old->elements[i]
                             : nullptr;
    AssignStorage(out.list[i], o, input_storages, graph);
  }
}

}  // namespace

void BindUnbacked(
    const ValueMeta& m, const std::string& path, const symbolic::ShapeEnv& env,
    absl::flat_hash_set<symbolic::Expr>& known,
    std::vector<std::pair<symbolic::Expr, std::string>>& bindings) {
  auto bind = [&](symbolic::Expr e, const std::string& where) {
    if (e.is_symbol() && env.IsUnbacked(e) && known.insert(e).second) {
      bindings.push_back({e, where});
    }
  };
  switch (m.kind) {
    case ValueMeta::Kind::kSym:
      bind(m.sym, path);
      break;
    case ValueMeta::Kind::kTensor:
      for (size_t d = 0; d < m.tensor.sizes.size(); ++d) {
        bind(m.tensor.sizes[d], absl::StrCat(path, ".size(", d, ")"));
      }
      break;
    case ValueMeta::Kind::kTuple:
      for (size_t i = 0; i < m.elements.size(); ++i) {
        BindUnbacked(m.elements[i], absl::StrCat(path, "[", i, "]"), env, known,
                     bindings);
      }
      break;
    case ValueMeta::Kind::kNone:
      break;
  }
}

absl::StatusOr<ValueMeta> SubstituteSymbols(
    ValueMeta m, const absl::flat_hash_map<symbolic::Expr, symbolic::Expr>& r) {
  switch (m.kind) {
    case ValueMeta::Kind::kTensor: {
      for (auto* list : {&m.tensor.sizes, &m.tensor.strides}) {
        for (symbolic::Expr& e : *list) {
          ASSIGN_OR_RETURN(e, symbolic::Substitute(e, r));
        }
      }
      ASSIGN_OR_RETURN(m.tensor.storage_offset,
                       symbolic::Substitute(m.tensor.storage_offset, r));
      break;
    }
    case ValueMeta::Kind::kSym: {
      ASSIGN_OR_RETURN(m.sym, symbolic::Substitute(m.sym, r));
      break;
    }
    case ValueMeta::Kind::kTuple: {
      for (ValueMeta& e : m.elements) {
        ASSIGN_OR_RETURN(e, SubstituteSymbols(std::move(e), r));
      }
      break;
    }
    case ValueMeta::Kind::kNone:
      break;
  }
  return m;
}

namespace {

void ReplaceIn(ValueMeta& m, symbolic::ShapeEnv& env) {
  switch (m.kind) {
    case ValueMeta::Kind::kTensor:
      for (auto* list : {&m.tensor.sizes, &m.tensor.strides}) {
        for (symbolic::Expr& e : *list) e = env.Replace(e);
      }
      m.tensor.storage_offset = env.Replace(m.tensor.storage_offset);
      break;
    case ValueMeta::Kind::kSym:
      m.sym = env.Replace(m.sym);
      break;
    case ValueMeta::Kind::kTuple:
      for (ValueMeta& e : m.elements) ReplaceIn(e, env);
      break;
    case ValueMeta::Kind::kNone:
      break;
  }
}

}  // namespace

ValueMeta ApplyReplacements(ValueMeta m, symbolic::ShapeEnv& env) {
  ReplaceIn(m, env);
  return m;
}

Value ValueOfMeta(const ValueMeta& m) {
  switch (m.kind) {
    case ValueMeta::Kind::kTensor:
      return Value::OfMeta(m.tensor);
    case ValueMeta::Kind::kSym:
      return Value::Number(m.sym);
    case ValueMeta::Kind::kTuple: {
      std::vector<Value> items;
      for (const ValueMeta& e : m.elements) items.push_back(ValueOfMeta(e));
      return Value::List(std::move(items));
    }
    case ValueMeta::Kind::kNone:
      return Value::None();
  }
  return Value::None();
}

ValueMeta MetaOfValue(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kTensor:
      return ValueMeta::Tensor(v.meta);
    case Value::Kind::kNumber:
      return ValueMeta::Sym(v.number);
    case Value::Kind::kList: {
      std::vector<ValueMeta> elements;
      for (const Value& e : v.list) elements.push_back(MetaOfValue(e));
      return ValueMeta::Tuple(std::move(elements));
    }
    default:
      return ValueMeta();
  }
}

bool SameMeta(const ValueMeta& a, const ValueMeta& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ValueMeta::Kind::kNone:
      return true;
    case ValueMeta::Kind::kSym:
      return a.sym == b.sym;
    case ValueMeta::Kind::kTensor: {
      const TensorMeta &x = a.tensor, &y = b.tensor;
      return x.dtype == y.dtype && x.device == y.device && x.sizes == y.sizes &&
             x.strides == y.strides && x.storage_offset == y.storage_offset &&
             x.storage == y.storage;
    }
    case ValueMeta::Kind::kTuple:
      if (a.elements.size() != b.elements.size()) return false;
      for (size_t i = 0; i < a.elements.size(); ++i) {
        if (!SameMeta(a.elements[i], b.elements[i])) return false;
      }
      return true;
  }
  return false;
}

absl::StatusOr<InferredMeta> ComputeMeta(const Node& node,
                                         symbolic::ShapeEnv& env) {
  InferredMeta r;
  if (node.kind() != Node::Kind::kCall) {
    r.meta = node.meta();
    r.bindings = node.unbacked_bindings();
    return r;
  }
  absl::flat_hash_map<const Node*, Value> values;
  absl::flat_hash_set<StorageId> input_storages;
  absl::flat_hash_set<symbolic::Expr> known;
  for (Node* in : node.Inputs()) {
    values[in] = ValueOfMeta(in->meta());
    for (StorageId s : in->meta().Storages()) input_storages.insert(s);
    for (symbolic::Expr s : in->meta().Symbols()) known.insert(s);
  }
  absl::StatusOr<EvaluatedCall> call = EvalCall(node, values, &env);
  if (!call.ok()) {
    return absl::Status(
        call.status().code(),
        absl::StrCat("node '", node.name(), "': ", call.status().message()));
  }
  Value out = std::move(call->out);
  const ValueMeta& old = node.meta();
  AssignStorage(out, old.kind == ValueMeta::Kind::kNone ? nullptr : &old,
                input_storages, *node.graph());
  if (out.is_tensor()) {
    for (auto* list : {&out.meta.sizes, &out.meta.strides}) {
      for (symbolic::Expr& e : *list) e = env.Simplify(e);
    }
    out.meta.storage_offset = env.Simplify(out.meta.storage_offset);
  }
  r.meta = MetaOfValue(out);
  BindUnbacked(r.meta, "", env, known, r.bindings);
  // A node that had bindings keeps its symbols (u0 stays u0).
  const auto& previous = node.unbacked_bindings();
  // An .item() shape propagation bound to a backed symbol (`Sym(s16)`, the
  // hint its input gave) stays that symbol.
  if (previous.empty() && r.bindings.size() == 1 &&
      r.bindings[0].second.empty() && old.kind == ValueMeta::Kind::kSym &&
      old.sym.is_symbol() && env.HintOf(old.sym).has_value() &&
      old.sym.is_int() == r.bindings[0].first.is_int()) {
    r.meta = old;
    r.bindings.clear();
    return r;
  }
  if (!previous.empty() && previous.size() == r.bindings.size()) {
    absl::flat_hash_map<symbolic::Expr, symbolic::Expr> back;
    bool same = true;
    for (size_t i = 0; i < previous.size(); ++i) {
      same = same && previous[i].second == r.bindings[i].second &&
             previous[i].first.is_int() == r.bindings[i].first.is_int();
      back[r.bindings[i].first] = previous[i].first;
    }
    if (same) {
      ASSIGN_OR_RETURN(r.meta, SubstituteSymbols(std::move(r.meta), back));
      r.bindings = previous;
    }
  }
  return r;
}

absl::Status InferMeta(Node& node, symbolic::ShapeEnv& env) {
  if (node.kind() != Node::Kind::kCall) return absl::OkStatus();
  ASSIGN_OR_RETURN(InferredMeta r, ComputeMeta(node, env));
  node.meta() = std::move(r.meta);
  node.unbacked_bindings() = std::move(r.bindings);
  return absl::OkStatus();
}

absl::StatusOr<int> RefreshMetas(Graph& graph, symbolic::ShapeEnv& env,
                                 const std::vector<Node*>& changed) {
  auto later = [&](Node* a, Node* b) { return graph.IsBefore(b, a); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> work(later);
  absl::flat_hash_set<Node*> queued;
  for (Node* n : changed) {
    if (queued.insert(n).second) work.push(n);
  }
  int updated = 0;
  while (!work.empty()) {
    Node* n = work.top();
    work.pop();
    queued.erase(n);
    if (n->kind() != Node::Kind::kCall) continue;
    ValueMeta old = n->meta();
    RETURN_IF_ERROR(InferMeta(*n, env));
    if (SameMeta(old, n->meta())) continue;
    ++updated;
    for (Node* user : n->users()) {
      if (queued.insert(user).second) work.push(user);
    }
  }
  return updated;
}

}  // namespace lathe::ir
