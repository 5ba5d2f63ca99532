// -----------------------------------------------------------------------------
// File: infer_meta.h
// -----------------------------------------------------------------------------
//
// Keeps node metas consistent while passes edit a graph, as PyTorch's
// FakeTensorUpdater does: InferMeta computes one call node's meta from its
// inputs' metas through the op's meta function; RefreshMetas recomputes the
// metas downstream of edited nodes, stopping wherever a meta comes out
// equal. Both keep storage identities (a new tensor keeps the id it had)
// and unbacked bindings (u0 stays u0). Shape propagation (shape_prop.h)
// installs a ShapeEnvMetaInference on the graph, so Graph::InsertCall fills
// the metas of nodes passes create.
//
// Example:
//
//   node->set_target("aten.mul.Tensor");          // an edit
//   RETURN_IF_ERROR(RefreshMetas(graph, env, {node}));

#ifndef LATHE_IR_INFER_META_H_
#define LATHE_IR_INFER_META_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

// What a call node's meta and unbacked bindings are, from its inputs' metas.
struct InferredMeta {
  ValueMeta meta;
  std::vector<std::pair<symbolic::Expr, std::string>> bindings;
};

// ComputeMeta()
//
// The meta InferMeta would give `node`, leaving the node as it is.
absl::StatusOr<InferredMeta> ComputeMeta(const Node& node,
                                         symbolic::ShapeEnv& env);

// InferMeta()
//
// Sets call node `node`'s meta and unbacked bindings from its inputs'
// metas. A value the op makes new gets a fresh storage id from the graph
// (or keeps its old one); symbols the op makes get bindings.
absl::Status InferMeta(Node& node, symbolic::ShapeEnv& env);

// RefreshMetas()
//
// Recomputes the metas of `changed` and, in graph order, of every node
// whose inputs' metas changed; a node whose meta comes out equal stops the
// walk there. Returns the number of nodes whose meta changed.
absl::StatusOr<int> RefreshMetas(Graph& graph, symbolic::ShapeEnv& env,
                                 const std::vector<Node*>& changed);

// SameMeta()
//
// Whether two metas are equal as FakeTensorUpdater compares them: kind,
// dtype, device, sizes, strides, offset and storage (recursively).
bool SameMeta(const ValueMeta& a, const ValueMeta& b);

// The meta inference shape propagation installs: InferMeta in `env`.
class ShapeEnvMetaInference : public MetaInference {
 public:
  explicit ShapeEnvMetaInference(symbolic::ShapeEnv& env) : env_(env) {}
  absl::Status Infer(Node& node) override { return InferMeta(node, env_); }

 private:
  symbolic::ShapeEnv& env_;
};

// The value a meta stands for (a tensor's metadata, a number, a list), and
// back.
Value ValueOfMeta(const ValueMeta& m);
ValueMeta MetaOfValue(const Value& v);

// BindUnbacked()
//
// Appends to `bindings` each unbacked symbol of `m` that is a bare size or
// value and not in `known` (adding it there), with its path in the value:
// "" (the value), ".size(1)", "[0].size(0)".
void BindUnbacked(
    const ValueMeta& m, const std::string& path, const symbolic::ShapeEnv& env,
    absl::flat_hash_set<symbolic::Expr>& known,
    std::vector<std::pair<symbolic::Expr, std::string>>& bindings);

// `m` with its symbols replaced as `r` says.
// ApplyReplacements()
//
// `m` with what `env` learned since it was computed applied to each size,
// stride, offset and number (s77 == 2, found after a size used s77): two
// metas describe the same value in `env` when these are equal.
ValueMeta ApplyReplacements(ValueMeta m, symbolic::ShapeEnv& env);

absl::StatusOr<ValueMeta> SubstituteSymbols(
    ValueMeta m, const absl::flat_hash_map<symbolic::Expr, symbolic::Expr>& r);

}  // namespace lathe::ir

#endif  // LATHE_IR_INFER_META_H_
