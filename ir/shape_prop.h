// -----------------------------------------------------------------------------
// File: shape_prop.h
// -----------------------------------------------------------------------------
//
// Fills every node's metadata through the ops' meta functions: dtypes,
// symbolic sizes/strides/offsets, storage identities (views share their
// base's storage, in-place ops return their input's), symbolic scalars.
// Symbols in the placeholders' annotations are declared in the ShapeEnv —
// backed when a hint is known (from `# lathe: hint s0 8` or the options),
// unbacked otherwise — and the guards meta functions need are recorded there.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   RETURN_IF_ERROR(PropagateShapes(*graph, env));
//   graph->Find("mm")->meta().ToAnnotation();   // "f32[s0, 32][32, 1]cpu"
//
// The graph's attributes it reads (GraphAttributes, from `# lathe:` lines):
// hints, ranges and aliases (two inputs share a storage). It checks that
// every attribute names an input or symbol of the graph, and rejects lines
// of no known kind.

#ifndef LATHE_IR_SHAPE_PROP_H_
#define LATHE_IR_SHAPE_PROP_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "ir/graph.h"
#include "symbolic/evaluate.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

struct ShapePropOptions {
  // Hints by symbol name, in addition to (and over) the graph's.
  absl::flat_hash_map<std::string, symbolic::Value> hints;
};

// PropagateShapes()
//
// Sets the meta of every non-placeholder node; placeholders keep theirs and
// must be annotated.
absl::Status PropagateShapes(Graph& graph, symbolic::ShapeEnv& env,
                             const ShapePropOptions& options = {});

}  // namespace lathe::ir

#endif  // LATHE_IR_SHAPE_PROP_H_
