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
  }
  // Recompute every meta in a scratch ShapeEnv (unknown ops, arity and
  // argument types fail there), compare, and restore the graph.
  struct Saved {
    Node* node;
    ValueMeta meta;
    std::vector<std::pair<symbolic::Expr, std::string>> bindings;
  };
  std::vector<Saved> saved;
  for (const auto& n : graph.nodes()) {
    saved.push_back({n.get(), n->meta(), n->unbacked_bindings()});
  }
  symbolic::ShapeEnv scratch;
  absl::Status status = PropagateShapes(graph, scratch, options);
  for (Saved& s : saved) {
    ValueMeta got = std::move(s.node->meta());
    s.node->meta() = s.meta;
    s.node->unbacked_bindings() = std::move(s.bindings);
    if (!status.ok() || s.node->kind() == Node::Kind::kPlaceholder ||
        s.meta.kind == ValueMeta::Kind::kNone) {
      continue;
    }
    CopyShowFlags(s.meta, got);
    std::string w = s.meta.ToAnnotation(), g = got.ToAnnotation();
    if (w != g) {
      status = absl::InvalidArgumentError(
          absl::StrCat("node '", s.node->name(), "': annotation ", w,
                       " does not match the op's meta ", g));
    }
  }
  return status;
}

}  // namespace lathe::ir
