// -----------------------------------------------------------------------------
// File: functionalize.h
// -----------------------------------------------------------------------------
//
// Turns in-place ops into their functional twins: `a.mul_(2)` becomes
// `mul = mul(a, 2)` and every later use of `a` reads `mul`. A graph input
// that was written gets one `copy_` into it at the end (the epilogue), and
// outputs that returned the mutated input return that `copy_` (the input
// itself, as in eager). The result satisfies CheckFunctional.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   ASSIGN_OR_RETURN(bool changed, aot::Functionalize(*graph, env));
//   // def forward(self, a):  mul = mul(a, 2); mul_1 = mul(mul, 3)
//   //                         copy_ = copy_(a, mul); return (mul_1,)
//
// This first version handles data mutations of tensors that have no views:
// a mutation through a view (or of a tensor that has views), and metadata
// or storage mutations (t_, set_, ...), are reported as Unimplemented.

#ifndef LATHE_AOT_FUNCTIONALIZE_H_
#define LATHE_AOT_FUNCTIONALIZE_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/shape_prop.h"
#include "symbolic/shape_env.h"

namespace lathe::aot {

// Functionalize()
//
// Rewrites `graph` as above (propagating shapes into `env` first to learn
// which values alias); true when something changed.
absl::StatusOr<bool> Functionalize(ir::Graph& graph, symbolic::ShapeEnv& env,
                                   const ir::ShapePropOptions& options = {});

}  // namespace lathe::aot

#endif  // LATHE_AOT_FUNCTIONALIZE_H_
