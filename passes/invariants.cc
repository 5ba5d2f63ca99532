#include "passes/invariants.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/infer_meta.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::passes {
AliasSnapshot TakeAliasSnapshot(const ir::Graph& graph) {
  AliasSnapshot snap;
  absl::flat_hash_map<ir::StorageId, std::vector<std::string>> input_of;
  std::vector<ir::Node*> inputs = graph.Placeholders();
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (ir::StorageId id : inputs[i]->meta().Storages())
      input_of[id].push_back(absl::StrCat("input ", i));
  }
  const ir::Node* out = graph.output();
  if (out == nullptr || out->args().empty()) return snap;
  const std::vector<ir::Arg>& results = out->args()[0].list;
  std::vector<std::vector<ir::StorageId>> out_storages(results.size());
  for (size_t j = 0; j < results.size(); ++j) {
    if (results[j].kind == ir::Arg::Kind::kNode) {
      out_storages[j] = results[j].node->meta().Storages();
    }
    std::string name = absl::StrCat("output ", j);
    for (ir::StorageId id : out_storages[j]) {
      auto it = input_of.find(id);
      if (it == input_of.end()) continue;
      for (const std::string& in : it->second) snap.pairs.insert({in, name});
    }
    for (size_t k = 0; k < j; ++k) {
      for (ir::StorageId a : out_storages[k]) {
        for (ir::StorageId b : out_storages[j]) {
          if (a == b) snap.pairs.insert({absl::StrCat("output ", k), name});
        }
      }
    }
  }
  return snap;
}

absl::Status CheckNoNewAliasing(const AliasSnapshot& before,
                                const ir::Graph& graph) {
  AliasSnapshot now = TakeAliasSnapshot(graph);
  for (const auto& pair : now.pairs) {
    if (before.pairs.count(pair) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(pair.first, " and ", pair.second,
                       " now share a storage; they did not before"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMetas(const ir::Graph& graph, symbolic::ShapeEnv& env) {
  RETURN_IF_ERROR(graph.CheckStructure());
  for (const auto& n : graph.nodes()) {
    if (n->kind() != ir::Node::Kind::kCall) continue;
    ASSIGN_OR_RETURN(ir::InferredMeta want, ir::ComputeMeta(*n, env));
    // Compared in what `env` knows now (a size may have become a number
    // since the meta was computed).
    if (!ir::SameMeta(ir::ApplyReplacements(want.meta, env),
                      ir::ApplyReplacements(n->meta(), env))) {
      ir::ValueMeta shown = want.meta;
      return absl::FailedPreconditionError(
          absl::StrCat("node '", n->name(), "': meta ",
                       n->meta().ToAnnotation(), " is not the op's meta ",
                       shown.ToAnnotation(), " (or its storage differs)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckUnbackedBindings(const ir::Graph& graph,
                                   const symbolic::ShapeEnv& env) {
  absl::flat_hash_set<symbolic::Expr> bound;
  for (const auto& n : graph.nodes()) {
    std::vector<symbolic::Expr> symbols = n->meta().Symbols();
    if (n->kind() == ir::Node::Kind::kPlaceholder ||
        n->kind() == ir::Node::Kind::kGetAttr) {
      for (symbolic::Expr s : symbols) bound.insert(s);  // the caller binds
      continue;
    }
    for (const auto& [symbol, path] : n->unbacked_bindings()) {
      bound.insert(symbol);
    }
    for (symbolic::Expr s : symbols) {
      if (env.IsUnbacked(s) && !bound.contains(s)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", n->name(), "': its meta ", n->meta().ToAnnotation(),
            " mentions the unbacked symbol ", symbolic::ToString(s),
            ", which no earlier node binds"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace lathe::passes
