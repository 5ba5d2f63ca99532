// -----------------------------------------------------------------------------
// File: functional_checker.h
// -----------------------------------------------------------------------------
//
// The invariant every stage after functionalization relies on (reference
// §1.3): "no mutation in the graph, except for an epilogue at the end". The
// epilogue is copy_ (data), set_ (storage) and as_strided_ (metadata) into
// graph inputs, each input written at most once per kind; every other op
// must be functional. Later passes run the check between stages.
//
// Example:
//
//   RETURN_IF_ERROR(aot::CheckFunctional(*graph));
//   // "node 'mul_': aten.mul_.Tensor writes its argument 'self'; only the
//   //  copy_/set_/as_strided_ epilogue may mutate"

#ifndef LATHE_AOT_FUNCTIONAL_CHECKER_H_
#define LATHE_AOT_FUNCTIONAL_CHECKER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace lathe::aot {

// EpilogueKind()
//
// "data", "storage" or "metadata" for the epilogue ops copy_, set_ and
// as_strided_; null for any other target.
const char* EpilogueKind(absl::string_view target);

// CheckFunctional()
//
// OK when only the trailing epilogue mutates, and only graph inputs; the
// first violation otherwise, naming the node.
absl::Status CheckFunctional(const ir::Graph& graph);

}  // namespace lathe::aot

#endif  // LATHE_AOT_FUNCTIONAL_CHECKER_H_
