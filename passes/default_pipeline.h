// -----------------------------------------------------------------------------
// File: default_pipeline.h
// -----------------------------------------------------------------------------
//
// The pass pipeline every compile runs, in DESIGN.md §1's order; read
// default_pipeline.cc top to bottom to see what happens to a functional
// graph between AOT dispatch and code generation.
//
// Example:
//
//   PassPipeline p = DefaultPipeline();
//   PassContext ctx(env);
//   ASSIGN_OR_RETURN(PipelineReport r, p.Run(graph, ctx, {.dump = true}));

#ifndef LATHE_PASSES_DEFAULT_PIPELINE_H_
#define LATHE_PASSES_DEFAULT_PIPELINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pipeline.h"

namespace lathe::passes {

// The default pipeline: tensorify_scalars, decompose, the cleanups (cse,
// dce, constant_fold, remove_noop_ops) to a fixed point, reinplace last.
PassPipeline DefaultPipeline();

// The names of every pass, in the default pipeline's order.
std::vector<std::string> PassNames();

// PipelineOf()
//
// A pipeline of the passes called `names`, in that order, each run once
// (lathec --passes); an error naming an unknown name and the known ones.
absl::StatusOr<PassPipeline> PipelineOf(const std::vector<std::string>& names);

}  // namespace lathe::passes

#endif  // LATHE_PASSES_DEFAULT_PIPELINE_H_
