// -----------------------------------------------------------------------------
// File: functionalize.h
// -----------------------------------------------------------------------------
//
// Turns in-place ops into their functional twins: `a.mul_(2)` becomes
// `mul = mul(a, 2)` and every later read of `a` reads `mul`. A write through
// a view is written back into the view's base with the inverse of each view
// (slice/select/diagonal -> *_scatter, as_strided -> as_strided_scatter on
// the base, view -> view back, t/transpose/permute -> their inverse,
// unsqueeze -> squeeze), and views read after their base changed are
// regenerated from its new value. A graph input that was written gets one
// `copy_` into it at the end (the epilogue); outputs that returned the
// written input return that `copy_` (the input itself, as in eager). The
// result satisfies CheckFunctional.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   ASSIGN_OR_RETURN(bool changed, aot::Functionalize(*graph, env));
//   // def forward(self, a):  mul = mul(a, 2); mul_1 = mul(mul, 3)
//   //                         copy_ = copy_(a, mul); return (mul_1,)
//
// A metadata mutation (t_, transpose_, unsqueeze_, as_strided_) rebinds the
// tensor to the new view; an input whose final view differs from its
// original gets `as_strided_` after its `copy_` (two t_() cancel out).
//
// set_(a, b) makes a an alias of b's storage; an input whose storage changed
// gets `set_` in the epilogue. Writing through a view of the storage an input
// had before its set_ is PyTorch's "frozen storage" error.
//
// Elements of split / split_with_sizes / unbind are written back with
// slice_scatter / select_scatter into the list op's input. A view of a
// dynamic shape is undone with sym_size of its source.
//
// A symbolic new layout (t_() of a dynamic input) is computed in the graph,
// from sym_size / sym_stride of the inputs, for the as_strided_ epilogue.
//
// Not yet (Unimplemented errors): writes through expand, inputs that share a
// storage. Outputs that are views of a written input are regenerated from its
// new value (equal values; the aliasing with the input is the runtime-wrapper
// plan's job).

#ifndef LATHE_AOT_FUNCTIONALIZE_H_
#define LATHE_AOT_FUNCTIONALIZE_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "symbolic/shape_env.h"

namespace lathe::aot {

// Functionalize()
//
// Rewrites `graph`, whose shapes are propagated into `env`
// (ir::PropagateShapes: its metas say which values alias), as above,
// keeping every meta current; true when something changed.
absl::StatusOr<bool> Functionalize(ir::Graph& graph, symbolic::ShapeEnv& env);

}  // namespace lathe::aot

#endif  // LATHE_AOT_FUNCTIONALIZE_H_
