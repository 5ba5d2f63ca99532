// -----------------------------------------------------------------------------
// File: functional_invariant.h
// -----------------------------------------------------------------------------
//
// The invariant every stage after functionalization relies on (reference
// §1.3): "no mutation in the graph, except for an epilogue at the end". The
// epilogue is copy_ (data), set_ (storage) and as_strided_ (metadata) into
// graph inputs, each input written at most once per kind; every other op
// must be functional. The pass pipeline checks it after every pass until
// reinplace.
//
// Example:
//
//   RETURN_IF_ERROR(passes::CheckFunctional(*graph));
//   // "node 'mul_': aten.mul_.Tensor writes its argument 'self'; only the
//   //  copy_/set_/as_strided_ epilogue may mutate"

#ifndef LATHE_PASSES_FUNCTIONAL_INVARIANT_H_
#define LATHE_PASSES_FUNCTIONAL_INVARIANT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace lathe::passes {

// CheckFunctional()
//
// OK when only the trailing epilogue mutates, and only graph inputs; the
// first violation otherwise, naming the node.
absl::Status CheckFunctional(const ir::Graph& graph);

}  // namespace lathe::passes

#endif  // LATHE_PASSES_FUNCTIONAL_INVARIANT_H_
