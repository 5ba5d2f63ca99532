#include "aot/functionalize.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "aot/functional_checker.h"
#include "ir/op_registry.h"
#include "status_macros.h"

namespace lathe::aot {
namespace {

using ir::Arg;
using ir::Node;

// "mul" for "aten.mul.Tensor".
std::string ShortName(const std::string& target) {
  std::vector<std::string> parts = absl::StrSplit(target, '.');
  return parts.size() > 1 ? parts[1] : target;
}

// Whether `n`'s value is a new tensor (not a view or in-place result).
bool MakesNewStorage(const Node& n) {
  if (n.kind() == Node::Kind::kPlaceholder || n.kind() == Node::Kind::kGetAttr)
    return true;
  if (n.kind() != Node::Kind::kCall) return false;
  if (n.target() ==
      "getitem") {  // an element of a multi-output op: new unless a view
    return !n.args().empty() && n.args()[0].kind == Arg::Kind::kNode &&
           MakesNewStorage(*n.args()[0].node);
  }
  const ir::OpDef* op = ir::OpRegistry::Global().Find(n.target());
  return op != nullptr &&
         (op->schema.returns.empty() || !op->schema.returns[0].alias);
}

// Replaces `from` by `to` in `n`'s arguments.
void Redirect(Node& n, Node* from, Node* to) {
  std::function<void(Arg&)> fix = [&](Arg& a) {
    if (a.kind == Arg::Kind::kNode && a.node == from) a.node = to;
    for (Arg& e : a.list) fix(e);
  };
  std::vector<Arg> args = n.args();
  std::vector<std::pair<std::string, Arg>> kwargs = n.kwargs();
  for (Arg& a : args) fix(a);
  for (auto& [k, a] : kwargs) fix(a);
  n.SetArgs(std::move(args), std::move(kwargs));
}

}  // namespace

absl::StatusOr<bool> Functionalize(ir::Graph& graph, symbolic::ShapeEnv& env,
                                   const ir::ShapePropOptions& options) {
  RETURN_IF_ERROR(ir::PropagateShapes(graph, env, options));
  // Who holds each storage: the node that made it, and the views and
  // in-place results that share it.
  absl::flat_hash_map<ir::StorageId, std::vector<Node*>> holders;
  ir::StorageId next_storage = 0;
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) {
    order.push_back(n.get());
    if (n->meta().kind == ir::ValueMeta::Kind::kTensor) {
      holders[n->meta().tensor.storage].push_back(n.get());
      next_storage = std::max(next_storage, n->meta().tensor.storage + 1);
    }
  }
  absl::flat_hash_map<Node*, Node*> latest;  // placeholder -> its current value
  bool changed = false;
  for (Node* n : order) {
    if (n->kind() != Node::Kind::kCall) continue;
    const ir::OpDef* op = ir::OpRegistry::Global().Find(n->target());
    if (op == nullptr || op->schema.arguments.empty() ||
        !op->schema.arguments[0].is_written()) {
      continue;
    }
    auto unsupported = [&](const std::string& why) {
      return absl::UnimplementedError(
          absl::StrCat("node '", n->name(), "': ", why));
    };
    if (ir::MutatesMetadata(n->target())) {
      return unsupported(absl::StrCat(
          n->target(),
          " changes metadata or storage; functionalizing that is not "
          "supported yet"));
    }
    if (op->functional.empty()) {
      return unsupported(absl::StrCat(n->target(), " has no functional twin"));
    }
    if (n->args().empty() || n->args()[0].kind != Arg::Kind::kNode) {
      return unsupported("the mutated argument is not a graph value");
    }
    Node* self = n->args()[0].node;
    // The mutated storage must be held only by its maker and in-place results.
    std::vector<std::string> views;
    for (Node* h : holders[self->meta().tensor.storage]) {
      const ir::OpDef* hop = h->kind() == Node::Kind::kCall
                                 ? ir::OpRegistry::Global().Find(h->target())
                                 : nullptr;
      bool inplace = hop != nullptr && !hop->schema.arguments.empty() &&
                     hop->schema.arguments[0].is_written();
      if (!MakesNewStorage(*h) && !inplace) views.push_back(h->name());
    }
    int makers = 0;
    for (Node* h : holders[self->meta().tensor.storage])
      makers += MakesNewStorage(*h);
    if (!views.empty() || makers > 1) {
      return unsupported(absl::StrCat(
          "mutating '", self->name(), "', which shares its storage with ",
          views.empty()
              ? "another input"
              : absl::StrCat("views (", absl::StrJoin(views, ", "), ")"),
          ", is not supported yet"));
    }
    // functional = op(args) in place of n; later readers of self read it.
    ir::ValueMeta meta = n->meta();
    if (meta.kind == ir::ValueMeta::Kind::kTensor)
      meta.tensor.storage = next_storage++;
    Node* functional = graph.Insert(
        Node::Kind::kCall, graph.UniqueName(ShortName(op->functional)),
        op->functional, n->args(), n->kwargs(), meta, n);
    graph.ReplaceAllUsesWith(n, functional);
    bool after = false;
    for (Node* m : order) {
      if (m == n) after = true;
      if (!after || m == n) continue;
      bool reads = false;
      for (Node* in : m->Inputs()) reads = reads || in == self;
      if (reads) Redirect(*m, self, functional);
    }
    std::vector<Node*>& same = holders[n->meta().tensor.storage];
    same.erase(std::remove(same.begin(), same.end(), n), same.end());
    RETURN_IF_ERROR(graph.Erase(n));
    Node* base = self;
    for (auto& [input, value] : latest) {
      if (value == self) base = input;
    }
    if (base->kind() == Node::Kind::kPlaceholder) latest[base] = functional;
    changed = true;
  }
  // The epilogue: one copy_ per written input; outputs that returned the
  // written input's value return the input itself.
  for (Node* p : graph.Placeholders()) {
    auto it = latest.find(p);
    if (it == latest.end()) continue;
    Node* value = it->second;
    Node* copy = graph.Insert(
        Node::Kind::kCall, graph.UniqueName("copy_"), "aten.copy_.default",
        {Arg::Of(p), Arg::Of(value)}, {}, p->meta(), graph.output());
    Redirect(*graph.output(), value, copy);
  }
  ir::ComputeFrees(graph);
  RETURN_IF_ERROR(CheckFunctional(graph));
  return changed;
}

}  // namespace lathe::aot
