// -----------------------------------------------------------------------------
// File: flatten_composites.h
// -----------------------------------------------------------------------------
//
// Turns a graph whose inputs are composite tensors into a dense graph over
// their inner tensors (PyTorch's aot_dispatch_subclass), and returns the
// argument and result layouts the SubclassWrapperPlan needs. A composite
// input is declared with `# lathe: composite NAME TYPE`, TYPE being a
// registered type with optional nested inner types: `pair`,
// `pair(pair, pair)`, `scaled_int8`, `pair(scaled_int8, scaled_int8)`. Its
// annotation is the outer (logical) tensor; the dense graph takes, in its
// place, the inner tensors (NAME_a, NAME_b, NAME_a_data, ...) and, for each
// symbolic outer size or stride, an int (NAME_size0, NAME_stride1).
//
// How ops apply:
//   pair         to each half (with plain arguments shared): the result is a
//                pair of the two results; a number result is the first
//                half's;
//   scaled_int8  view ops apply to the data and keep the scale; multiplying
//                by a number scales the scale; any other op sees the
//                dequantized value (data * scale) and gives a plain result.
// A metadata mutation (t_, transpose_, ...) of a composite is an error, as
// in PyTorch (reference scenario 27).
//
// Example:
//
//   // # lathe: composite x pair
//   // def forward(self, x: "f32[4][1]cpu"): mul = mul(x, 2); return (mul,)
//   ASSIGN_OR_RETURN(CompositeSignature sig, FlattenComposites(*graph));
//   // def forward(self, x_a, x_b): mul = mul(x_a, 2); mul_1 = mul(x_b, 2)
//   //     return (mul, mul_1)             sig.results[0]: pair(1,1)

#ifndef LATHE_AOT_FLATTEN_COMPOSITES_H_
#define LATHE_AOT_FLATTEN_COMPOSITES_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "aot/subclass_wrapper_plan.h"
#include "ir/graph.h"

namespace lathe::aot {

struct CompositeSignature {
  std::vector<CompositeLayout> arguments;  // one per original placeholder
  std::vector<CompositeLayout> results;    // one per original output
};

// DeclaredComposites()
//
// The deepest nesting a composite declaration may have (pair(pair(...))).
inline constexpr int kMaxCompositeDepth = 16;

// The layout of each composite input (the graph's attributes().composites,
// from `# lathe: composite NAME TYPE`), by NAME; an error for an unknown
// type or input.
absl::StatusOr<absl::flat_hash_map<std::string, CompositeLayout>>
DeclaredComposites(const ir::Graph& graph);

// InnerName() / LeafNames()
//
// How the dense graph (and lathec's files) name inner values: inner `k` of
// `outer` laid out as `l` is OUTER_<name> ("x_a"); the leaves of `name` are
// NAME itself for a plain value, else its inner names down to the plain
// tensors ("x_a_a", "x_a_b", ...).
std::string InnerName(const std::string& outer, const CompositeLayout& l,
                      int k);
void LeafNames(const std::string& name, const CompositeLayout& l,
               std::vector<std::string>* out);

// FlattenComposites()
//
// Rewrites `graph`, whose shapes are propagated (ir::PropagateShapes), as
// above, the new nodes with their metas; a graph without composite inputs
// is left as it is, with plain layouts.
absl::StatusOr<CompositeSignature> FlattenComposites(ir::Graph& graph);

}  // namespace lathe::aot

#endif  // LATHE_AOT_FLATTEN_COMPOSITES_H_
