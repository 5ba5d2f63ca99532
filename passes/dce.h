// -----------------------------------------------------------------------------
// File: dce.h
// -----------------------------------------------------------------------------
//
// dce: erases call nodes whose values nothing uses and that have no effect
// (Graph::EraseDeadNodes: ops that write an argument, asserts, random ops
// and the grad-mode switch stay).
//
// Example:
//
//   pipeline.AddPass<Dce>();

#ifndef LATHE_PASSES_DCE_H_
#define LATHE_PASSES_DCE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class Dce : public Pass {
 public:
  absl::string_view name() const override { return "dce"; }
  // Erases the dead nodes; true when there were any.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_DCE_H_
