#include "ir/verifier.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

absl::Status Verify(const Graph& graph, const ShapePropOptions& options) {
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
  }
  // Recompute every meta on a copy, in a scratch ShapeEnv (unknown ops,
  // arity and argument types fail there), and compare.
  std::unique_ptr<Graph> copy = graph.Clone();
  symbolic::ShapeEnv scratch;
  RETURN_IF_ERROR(PropagateShapes(*copy, scratch, options));
  auto it = copy->nodes().begin();
  for (const auto& n : graph.nodes()) {
    const Node& got_node = **it++;
    if (n->kind() == Node::Kind::kPlaceholder ||
        n->meta().kind == ValueMeta::Kind::kNone) {
      continue;
    }
    ValueMeta got = got_node.meta();
    CopyShowFlags(n->meta(), got);
    std::string w = n->meta().ToAnnotation(), g = got.ToAnnotation();
    if (w != g) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n->name(), "': annotation ", w,
                       " does not match the op's meta ", g));
    }
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir
