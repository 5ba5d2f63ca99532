#include "passes/dce.h"

namespace lathe::passes {

absl::StatusOr<bool> Dce::Run(ir::Graph& graph, PassContext& ctx) {
  int erased = graph.EraseDeadNodes();
  if (erased > 0) ctx.Log("dce: erased ", erased, " node(s)");
  return erased > 0;
}

}  // namespace lathe::passes
