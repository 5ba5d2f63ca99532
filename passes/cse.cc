#include "passes/cse.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "status_macros.h"

namespace lathe::passes {
namespace {

void AppendKey(const ir::Arg& a, std::string& key) {
  using K = ir::Arg::Kind;
  switch (a.kind) {
    case K::kNode:
      absl::StrAppend(&key, "%", reinterpret_cast<uintptr_t>(a.node));
      break;
    case K::kNone:
      key += "None";
      break;
    case K::kBool:
      key += a.b ? "True" : "False";
      break;
    case K::kInt:
      absl::StrAppend(&key, "i", a.i);
      break;
    case K::kFloat: {
      uint64_t bits;
      std::memcpy(&bits, &a.f, sizeof bits);
      absl::StrAppend(&key, "f", bits);
      break;
    }
    case K::kString:
    case K::kLayout:
    case K::kMemoryFormat:
      absl::StrAppend(&key, "'", a.s, "'");
      break;
    case K::kDType:
      absl::StrAppend(&key, "dt", static_cast<int>(a.dtype));
      break;
    case K::kDevice:
      absl::StrAppend(&key, "dev", a.device.ToString());
      break;
    case K::kList:
      key += a.tuple ? "(" : "[";
      for (const ir::Arg& e : a.list) {
        AppendKey(e, key);
        key += ",";
      }
      key += a.tuple ? ")" : "]";
      break;
  }
}

}  // namespace

absl::StatusOr<bool> Cse::Run(ir::Graph& graph, PassContext& ctx) {
  // Storages the caller sees: the inputs' and the outputs' (an output may
  // be a view of the value that owns its storage).
  absl::flat_hash_set<ir::StorageId> returned, boundary;
  for (ir::Node* p : graph.Placeholders()) {
    for (ir::StorageId s : p->meta().Storages()) boundary.insert(s);
  }
  if (const ir::Node* out = graph.output(); out != nullptr) {
    for (ir::Node* r : out->Inputs()) {
      for (ir::StorageId s : r->meta().Storages()) returned.insert(s);
    }
  }
  boundary.insert(returned.begin(), returned.end());
  absl::flat_hash_map<std::string, ir::Node*> seen;
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  bool changed = false;
  absl::flat_hash_set<ir::Node*> edited;  // users that read another value
  for (ir::Node* n : order) {
    if (n->kind() != ir::Node::Kind::kCall) continue;
    if (n->HasEffect()) {
      // A write: nothing merges across it (a random draw or the grad-mode
      // switch writes nothing).
      const ir::OpDef* op = n->op();
      if (op != nullptr && !op->HasTag(ir::OpTag::kRandom) &&
          !op->HasTag(ir::OpTag::kBuiltin)) {
        seen.clear();
      }
      continue;
    }
    std::string key = n->target();
    for (const ir::Arg& a : n->args()) AppendKey(a, key);
    for (const auto& [k, a] : n->kwargs()) {
      absl::StrAppend(&key, ";", k, "=");
      AppendKey(a, key);
    }
    auto [it, fresh] = seen.emplace(std::move(key), n);
    if (fresh) continue;
    ir::Node* earlier = it->second;
    // A storage the graph returns stays its own (Rule A of
    // remove_noop_ops): merging would alias it with an input or output.
    if (n->meta().kind == ir::ValueMeta::Kind::kTensor &&
        earlier->meta().kind == ir::ValueMeta::Kind::kTensor &&
        n->meta().tensor.storage != earlier->meta().tensor.storage &&
        returned.contains(n->meta().tensor.storage) &&
        boundary.contains(earlier->meta().tensor.storage)) {
      continue;
    }
    // A returned value merged into an inner one makes that one returned:
    // a second returned value merging into it would alias the first.
    if (n->meta().kind == ir::ValueMeta::Kind::kTensor &&
        earlier->meta().kind == ir::ValueMeta::Kind::kTensor &&
        returned.contains(n->meta().tensor.storage)) {
      returned.insert(earlier->meta().tensor.storage);
      boundary.insert(earlier->meta().tensor.storage);
    }
    ctx.Log("cse: ", n->name(), " -> ", earlier->name());
    for (ir::Node* user : n->users()) edited.insert(user);
    graph.ReplaceAllUsesWith(n, earlier);
    edited.erase(n);
    RETURN_IF_ERROR(graph.Erase(n));
    changed = true;
  }
  // Users now read another value (a view of it shares its storage).
  RETURN_IF_ERROR(
      ir::RefreshMetas(graph, ctx.env(), {edited.begin(), edited.end()})
          .status());
  return changed;
}

}  // namespace lathe::passes
