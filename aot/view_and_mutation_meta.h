// -----------------------------------------------------------------------------
// File: view_and_mutation_meta.h
// -----------------------------------------------------------------------------
//
// What a graph does to its inputs and how its outputs alias, collected from
// the graph before functionalization (reference §1.1-§1.2): per input, data /
// metadata / storage mutation, grad mode and requires_grad, and whether the
// graph or the runtime wrapper applies the mutation; per output, one of
// PyTorch's OutputTypes with its base index. The runtime-wrapper plan is
// built from this. requires_grad and leafness come from the graph's
// attributes (`# lathe: requires_grad NAME`, `# lathe: non_leaf NAME`), grad
// mode from torch._C._set_grad_enabled calls, detach() hides a mutation from
// autograd.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   ASSIGN_OR_RETURN(ViewAndMutationMeta m,
//                    CollectViewAndMutationMeta(*g, env));
//   m.inputs[0].mutates_data;                    // a.mul_(2)
//   m.outputs[0].type == OutputType::kIsInput;   // return a

#ifndef LATHE_AOT_VIEW_AND_MUTATION_META_H_
#define LATHE_AOT_VIEW_AND_MUTATION_META_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/shape_prop.h"
#include "ir/tensor_meta.h"
#include "symbolic/shape_env.h"

namespace lathe::aot {

// Where an input's mutation is applied (reference §1.1): by the compiled
// graph itself (its copy_/set_ epilogue stays in the graph) or by the
// runtime wrapper after it.
enum class MutationType { kNotMutated, kMutatedInGraph, kMutatedOutGraph };

struct InputInfo {
  bool is_leaf = true;  // false with `# lathe: non_leaf NAME`
  bool mutates_data = false;
  bool mutates_metadata = false;  // sizes, strides or offset really changed
  bool mutates_storage_metadata = false;  // set_ (implies mutates_metadata)
  // Every mutation wrote through detach() / ran under
  // torch._C._set_grad_enabled(False) (false when there is none).
  bool mutations_hidden_from_autograd = false;
  bool mutations_under_no_grad = false;
  bool requires_grad = false;
  MutationType mutation_type = MutationType::kNotMutated;
};

struct ViewAndMutationOptions {
  // Keep the mutations autograd allows in the graph (PyTorch's
  // keep_input_mutations; Inductor keeps them for inference).
  bool keep_input_mutations = true;
};

enum class OutputType {
  kNonAlias,
  kAliasOfInput,
  kIsInput,
  kAliasOfIntermediateSaveAsOutput,
  kAliasOfIntermediate,
  kAliasOfIntermediateBaseIsUserOutput,
  kUnsafeViewAlias,
};

// "non_alias", "alias_of_input", ... as PyTorch names them.
std::string OutputTypeName(OutputType type);

struct OutputInfo {
  OutputType type = OutputType::kNonAlias;
  // kAliasOfInput / kIsInput: the input; kAliasOfIntermediate*: the
  // intermediate base (or, for ..._base_is_user_output, the output).
  std::optional<int> base_index;
  bool requires_grad = false;
  ir::TensorMeta tensor;  // as the original graph computes it
};

struct ViewAndMutationMeta {
  std::vector<InputInfo> inputs;    // one per placeholder
  std::vector<OutputInfo> outputs;  // one per returned value
  std::vector<const ir::Node*>
      intermediate_bases;  // extra outputs the graph must return
};

// CollectViewAndMutationMeta()
//
// Classifies the inputs and outputs of `graph`, whose shapes are propagated
// (ir::PropagateShapes: its metas say which values share storage). A set_ on an
// input whose other mutations autograd must see is an error, as in PyTorch.
absl::StatusOr<ViewAndMutationMeta> CollectViewAndMutationMeta(
    ir::Graph& graph, const ViewAndMutationOptions& options = {});

}  // namespace lathe::aot

#endif  // LATHE_AOT_VIEW_AND_MUTATION_META_H_
