#include "ir/verifier.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {
namespace {

// Copies how `from` was written (strides/device shown) onto `to`, so the
// comparison covers exactly what the annotation states.
void CopyShowFlags(const ValueMeta& from, ValueMeta& to) {
  if (from.kind == ValueMeta::Kind::kTensor &&
      to.kind == ValueMeta::Kind::kTensor) {
    to.tensor.show_strides = from.tensor.show_strides;
    to.tensor.show_device = from.tensor.show_device;
  }
  if (from.kind == ValueMeta::Kind::kTuple &&
      to.kind == ValueMeta::Kind::kTuple &&
      from.elements.size() == to.elements.size()) {
    for (size_t i = 0; i < from.elements.size(); ++i) {
      CopyShowFlags(from.elements[i], to.elements[i]);
    }
  }
}

}  // namespace

absl::Status Verify(Graph& graph, const ShapePropOptions& options) {
  RETURN_IF_ERROR(graph.CheckStructure());
  bool past_inputs = false;
  for (const auto& n : graph.nodes()) {
    if (n->kind() == Node::Kind::kPlaceholder) {
      if (past_inputs) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", n->name(),
                         "' comes after other nodes; inputs must come first"));
      }
      continue;
    }
    past_inputs = true;
    if (n->kind() != Node::Kind::kCall) continue;
    const std::string& t = n->target();
    if (t != "getitem" && !IsPythonOp(t) &&
        OpRegistry::Global().Find(t) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n->name(), "': unknown op ", t));
    }
  }
  // Recompute every call's meta, then compare and restore.
  std::vector<std::pair<Node*, ValueMeta>> recorded;
  for (const auto& n : graph.nodes()) {
    if (n->kind() == Node::Kind::kPlaceholder) continue;
    recorded.push_back({n.get(), n->meta()});
  }
  std::vector<std::pair<Node*, ValueMeta>> inputs;
  for (Node* p : graph.Placeholders()) inputs.push_back({p, p->meta()});
  symbolic::ShapeEnv scratch;
  absl::Status status = PropagateShapes(graph, scratch, options);
  for (auto& [node, want] : recorded) {
    ValueMeta got = std::move(node->meta());
    node->meta() = want;
    if (!status.ok() || want.kind == ValueMeta::Kind::kNone) continue;
    CopyShowFlags(want, got);
    std::string w = want.ToAnnotation(), g = got.ToAnnotation();
    if (w != g) {
      status = absl::InvalidArgumentError(
          absl::StrCat("node '", node->name(), "': annotation ", w,
                       " does not match the op's meta ", g));
    }
  }
  for (auto& [p, meta] : inputs) p->meta() = std::move(meta);
  return status;
}

}  // namespace lathe::ir
