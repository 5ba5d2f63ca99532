#include "passes/default_pipeline.h"

#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/tensorify_scalars.h"

namespace lathe::passes {

PassPipeline DefaultPipeline() {
  PassPipeline p;
  // 1. Float scalars become 0-d tensor compute before anything reads them
  //    as numbers: a new lr never recompiles (seed 000).
  p.AddPass<TensorifyScalars>();
  // 2. Cleanups, until none changes the graph.
  PassPipeline& cleanup = p.AddFixedPoint(/*max_iterations=*/4);
  cleanup.AddPass<Cse>();
  cleanup.AddPass<Dce>();
  return p;
}

}  // namespace lathe::passes
