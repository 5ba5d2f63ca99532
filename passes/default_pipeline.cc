#include "passes/default_pipeline.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/constant_fold.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/decompose.h"
#include "passes/fold_frozen.h"
#include "passes/reinplace.h"
#include "passes/remove_noop_ops.h"
#include "passes/tensorify_scalars.h"

namespace lathe::passes {

PassPipeline DefaultPipeline() {
  PassPipeline p;
  // 1. Float scalars become 0-d tensor compute before anything reads them
  //    as numbers: a new lr never recompiles (seed 000).
  p.AddPass<TensorifyScalars>();
  // 2. With frozen inputs: batch norm folded into convolutions while both
  //    are whole, and what the frozen values compute alone, computed.
  p.AddPass<FoldFrozen>();
  // 3. Composite ops become the core ops code generation handles.
  p.AddPass<Decompose>();
  // 4. Cleanups, until none changes the graph (what freezing can now
  //    compute among them).
  PassPipeline& cleanup = p.AddFixedPoint(/*max_iterations=*/4);
  cleanup.AddPass<Cse>();
  cleanup.AddPass<Dce>();
  cleanup.AddPass<ConstantFold>();
  cleanup.AddPass<RemoveNoopOps>();
  cleanup.AddPass<FoldFrozen>();
  // 5. Last, because it adds mutation: functional ops write their inputs'
  //    buffers where nothing reads them later, and the copy_ epilogue goes.
  p.AddPass<Reinplace>();
  return p;
}

std::vector<std::string> PassNames() {
  return {"tensorify_scalars", "fold_frozen",     "decompose", "cse", "dce",
          "constant_fold",     "remove_noop_ops", "reinplace"};
}

absl::StatusOr<PassPipeline> PipelineOf(const std::vector<std::string>& names) {
  PassPipeline p;
  for (const std::string& name : names) {
    if (name == "tensorify_scalars") {
      p.AddPass<TensorifyScalars>();
    } else if (name == "fold_frozen") {
      p.AddPass<FoldFrozen>();
    } else if (name == "decompose") {
      p.AddPass<Decompose>();
    } else if (name == "cse") {
      p.AddPass<Cse>();
    } else if (name == "dce") {
      p.AddPass<Dce>();
    } else if (name == "constant_fold") {
      p.AddPass<ConstantFold>();
    } else if (name == "remove_noop_ops") {
      p.AddPass<RemoveNoopOps>();
    } else if (name == "reinplace") {
      p.AddPass<Reinplace>();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown pass '", name,
                       "' (passes: ", absl::StrJoin(PassNames(), ", "), ")"));
    }
  }
  return p;
}

}  // namespace lathe::passes
