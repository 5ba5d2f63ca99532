#include "ir/verifier.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/tensor_meta.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

absl::Status Verify(const Graph& graph, const ShapePropOptions& options,
                    const PrintOptions& written) {
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
    // Compared as the annotation is written: what it leaves out (strides,
    // device) it does not state.
    absl::Span<const AnnotationStyle> styles;
    if (auto it = written.annotations.find(n->name());
        it != written.annotations.end()) {
      styles = it->second;
    }
    std::string w = n->meta().ToAnnotation(styles),
                g = got_node.meta().ToAnnotation(styles);
    if (w != g) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n->name(), "': annotation ", w,
                       " does not match the op's meta ", g));
    }
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir
