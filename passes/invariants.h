// -----------------------------------------------------------------------------
// File: invariants.h
// -----------------------------------------------------------------------------
//
// The invariants every pass keeps (seed 002), checked by the pipeline after
// each pass: the graph is well formed and every meta is what its op's meta
// function gives in the compile's ShapeEnv (CheckMetas); until reinplace, only
// the epilogue mutates (functional_invariant.h); no pass makes an input and an
// output, or two outputs, share a storage that did not before; every unbacked
// symbol a meta mentions is bound by the node that makes it, before its uses.
//
// Example:
//
//   AliasSnapshot before = TakeAliasSnapshot(graph);
//   ... a pass ...
//   RETURN_IF_ERROR(CheckNoNewAliasing(before, graph));

#ifndef LATHE_PASSES_INVARIANTS_H_
#define LATHE_PASSES_INVARIANTS_H_

#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "symbolic/shape_env.h"

namespace lathe::passes {

// Which outputs share a storage with which inputs and with each other, by
// position ("input 0", "output 1").
struct AliasSnapshot {
  std::set<std::pair<std::string, std::string>> pairs;
};

// The input/output and output/output storage sharing of `graph`.
AliasSnapshot TakeAliasSnapshot(const ir::Graph& graph);

// An error naming the pair when `graph` has a sharing `before` lacks.
absl::Status CheckNoNewAliasing(const AliasSnapshot& before,
                                const ir::Graph& graph);

// CheckMetas()
//
// An error naming the first call node whose meta (sizes, strides, offset,
// dtype, device, storage) is not what its op's meta function gives from its
// inputs' metas in `env` (the ShapeEnv the graph was compiled in), and
// when the graph is not well formed (Graph::CheckStructure).
absl::Status CheckMetas(const ir::Graph& graph, symbolic::ShapeEnv& env);

// An error naming the node when a meta mentions an unbacked symbol no
// earlier node (or input annotation) binds.
absl::Status CheckUnbackedBindings(const ir::Graph& graph,
                                   const symbolic::ShapeEnv& env);

}  // namespace lathe::passes

#endif  // LATHE_PASSES_INVARIANTS_H_
