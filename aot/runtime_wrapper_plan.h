// -----------------------------------------------------------------------------
// File: runtime_wrapper_plan.h
// -----------------------------------------------------------------------------
//
// What runs around a compiled functional graph (reference §1.4-§1.5), decided
// once at compile time: the mutation epilogue that puts the graph's updated
// values back into the caller's inputs, and how each user output is made —
// passed through, the input object itself, or regenerated as a view of an
// input or of another output so that it aliases what it aliased in eager.
// Running the plan is a fixed list of steps with no branching on tensor
// metadata; the same plan prints as straight-line C++ (what the codegen issue
// compiles into the wrapper), and that source is the readable dump.
//
// The compiled graph's outputs are, in order (PyTorch's convention):
//   updated values of the inputs the wrapper mutates, one per input whose
//     data (copy_) or storage (set_) it writes;
//   the user outputs;
//   the intermediate bases (dropped after the outputs are regenerated).
//
// Example:
//
//   ASSIGN_OR_RETURN(ViewAndMutationMeta meta,
//                    CollectViewAndMutationMeta(*graph, env));
//   ASSIGN_OR_RETURN(bool changed, Functionalize(*graph, env));
//   ASSIGN_OR_RETURN(RuntimeWrapperPlan plan,
//                    BuildRuntimeWrapperPlan(*graph, meta));
//   // run the graph: fw = its outputs; then, per call:
//   ASSIGN_OR_RETURN(std::vector<Tensor> outs, plan.Run(inputs, fw));
//   plan.CppSource();  // "absl::Status lathe_runtime_wrapper(...) {...}"
//
// Decisions, per input: a data mutation the graph keeps
// (MutationType::kMutatedInGraph) stays a copy_ in the graph, else it is a
// copy_ here (through detach() for a leaf that requires grad: the same copy,
// as lathe's runtime has no autograd); then set_ rebinds the input to the
// new value (always done here: a compiled graph cannot rebind the caller's
// tensor object), or as_strided_ gives it its final view, with the
// compile-time layout. Per output: non_alias and unsafe_view_alias pass
// through; is_input returns the input object; alias_of_input is as_strided of
// the input; alias_of_intermediate* is as_strided of its base (another output
// or an intermediate base). Layouts are the original graph's, symbolic ones
// evaluated from the inputs' sizes and strides.

#ifndef LATHE_AOT_RUNTIME_WRAPPER_PLAN_H_
#define LATHE_AOT_RUNTIME_WRAPPER_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/view_and_mutation_meta.h"
#include "ir/graph.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"

namespace lathe::aot {

// A view's sizes, strides and storage offset as expressions of the input
// symbols; `concrete` when all are integers (then in the int vectors). The
// offset counts from the storage's start, or, `from_base_offset`, from the
// base's own storage offset: an input compiled at a fixed offset and called
// at any other (compiled code addresses it from its first element) gets its
// views where PyTorch's view ops would put them, shifted with it. A view
// of another dtype than its base's (view.dtype) has `dtype`, and its sizes,
// strides and offset count elements of that dtype.
struct Layout {
  std::vector<symbolic::Expr> sizes, strides;
  symbolic::Expr storage_offset;
  bool concrete = false;
  std::vector<int64_t> int_sizes, int_strides;
  int64_t int_storage_offset = 0;
  bool from_base_offset = false;
  std::optional<DType> dtype;
};

struct EpilogueStep {
  enum class Kind {
    kCopy,          // in[input].copy_(fw[updated])
    kCopyDetached,  // in[input].detach().copy_(fw[updated]): a leaf with grad
    kAsStrided,     // in[input].as_strided_(layout)
    kSet,           // in[input].set_(fw[updated])
  };
  Kind kind = Kind::kCopy;
  int input = 0;
  int updated = -1;  // graph output index
  Layout layout;     // kAsStrided
};

struct OutputStep {
  enum class Kind {
    kGraphOutput,        // fw[source]
    kInput,              // in[source], the object itself
    kViewOfInput,        // in[source].as_strided(layout)
    kViewOfGraphOutput,  // fw[source].as_strided(layout)
  };
  Kind kind = Kind::kGraphOutput;
  int source = 0;
  Layout layout;
  std::string why;  // the OutputType it came from, for the dump
};

// Where a size/stride symbol is read at run time: in[index].sizes()[dim]
// (or .strides()[dim]), as the inputs came in; or, for a data-dependent
// (unbacked) size no input gives, fw[index].sizes()[dim] of a graph output.
struct SymbolSource {
  symbolic::Expr symbol;
  bool from_output = false;
  int index = 0;
  bool stride = false;
  int dim = 0;
};

class RuntimeWrapperPlan {
 public:
  // Run()
  //
  // Applies the epilogue to `inputs` (rebinding entries for set_ and
  // as_strided_) and returns the user outputs, from the compiled graph's
  // outputs `graph_outputs` (non-tensor slots are undefined tensors and
  // pass through as such).
  absl::StatusOr<std::vector<Tensor>> Run(
      absl::Span<Tensor> inputs, absl::Span<const Tensor> graph_outputs) const;

  // CppSource()
  //
  // The plan as one straight-line C++ function `name` with Run's contract:
  //   absl::Status name(absl::Span<lathe::Tensor> in,
  //                     absl::Span<const lathe::Tensor> fw,
  //                     std::vector<lathe::Tensor>* out);
  // It needs runtime/tensor.h, runtime/copy.h and status_macros.h, and
  // symbolic::CppPrelude() when has_symbolic_layouts().
  std::string CppSource(
      const std::string& name = "lathe_runtime_wrapper") const;

  // Whether some layout is computed from input sizes at run time.
  bool has_symbolic_layouts() const { return !symbols_.empty(); }

  int num_inputs() const { return num_inputs_; }
  int num_graph_outputs() const { return num_graph_outputs_; }
  const std::vector<EpilogueStep>& epilogue() const { return epilogue_; }
  const std::vector<OutputStep>& outputs() const { return outputs_; }
  // Where the symbols of the symbolic layouts are read.
  const std::vector<SymbolSource>& symbols() const { return symbols_; }
  // Whether the plan places a view in input `i`'s storage from the
  // storage's start (an in-place view, a rebinding), so the input must come
  // at the storage offset it was compiled for.
  bool ReadsStorageOffset(int i) const;

 private:
  friend absl::StatusOr<RuntimeWrapperPlan> BuildRuntimeWrapperPlan(
      ir::Graph& graph, const ViewAndMutationMeta& meta);
  // The symbols' values, read from the inputs (as they came in) and outputs.
  absl::StatusOr<symbolic::Assignment> SymbolValues(
      absl::Span<const Tensor> inputs,
      absl::Span<const Tensor> graph_outputs) const;
  // Whether the epilogue rebinds input `i` (as_strided_, set_).
  bool Rebinds(int i) const;
  // `base` viewed with `layout`, symbols taking `values` (its offset added
  // where the layout counts from it).
  absl::StatusOr<Tensor> View(const Tensor& base, const Layout& layout,
                              const symbolic::Assignment& values) const;

  int num_inputs_ = 0;
  int num_graph_outputs_ = 0;
  std::vector<std::string> input_names_;
  std::vector<EpilogueStep> epilogue_;
  std::vector<OutputStep> outputs_;
  std::vector<SymbolSource> symbols_;  // those the layouts use
};

// StorageOffsetCpp()
//
// The C++ expression of `layout`'s storage offset, given it printed
// (`printed`) and the base's offset (`base_offset`, added where the layout
// counts from it): "0", "in[0].storage_offset() + 3".
std::string StorageOffsetCpp(const Layout& layout,
                             const std::string& base_offset,
                             const std::string& printed);

// BuildRuntimeWrapperPlan()
//
// The plan for `graph`, already functionalized, with `meta` collected from
// it before functionalization. Rewrites the graph's epilogue and outputs to
// the calling convention above (erasing the copy_/set_/as_strided_ nodes
// the wrapper performs instead).
absl::StatusOr<RuntimeWrapperPlan> BuildRuntimeWrapperPlan(
    ir::Graph& graph, const ViewAndMutationMeta& meta);

}  // namespace lathe::aot

#endif  // LATHE_AOT_RUNTIME_WRAPPER_PLAN_H_
