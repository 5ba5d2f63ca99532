// -----------------------------------------------------------------------------
// File: tensorify_scalars.h
// -----------------------------------------------------------------------------
//
// tensorify_scalars (seed 000; reference symbolic §3): float scalars the
// ShapeEnv holds as backed symbols (a `Sym(zf0)` input, or `.item()` of an
// f64[] input as Dynamo passes a Python float) become 0-d tensor compute,
// so their value is a runtime argument of the compiled graph and a new
// value never recompiles. Each float argument's expression is rebuilt as
// tensor ops in float64 (hash-consed: `1 - beta1` is computed once), cast to
// the op's computation dtype, and the op takes its Tensor form:
//
//   mul.Tensor(x, lr)              -> mul.Tensor(x, cast(scalar_tensor(lr)))
//   mul_.Scalar / gt.Scalar ...    -> mul_.Tensor / gt.Tensor (in place stays
//                                     in place: no copy_ is added)
//   add(x, y, alpha=s)             -> add(x, mul(y, s_t))
//   addcdiv(x, a, b, value=s)      -> add(x, mul(div(a, b), s_t))
//   pow.Tensor_Scalar(x, s)        -> pow.Tensor_Tensor(x, s_t)
//   clamp(x, min=s) / lerp.Scalar  -> clamp.Tensor / lerp.Tensor
//
// Python-operator expressions (`0.5 * lr`, `beta2 ** 0.5`, `1 - beta1 **
// step`, comparisons) are read from the argument's symbolic value, so their
// underlying symbols count as tensorified. The final sweep specializes only
// a symbol some remaining use cannot take as a tensor (a size, a float an op
// needs as a number): it records the guard `Eq(zf0, value)` in the
// ShapeEnv, puts the value in the graph where the symbol was, and names the
// symbol in PassContext::specialize() — the compile that follows is a
// restart with it constant, and a new value fails the guard and recompiles.
//
// Example:
//
//   pipeline.AddPass<TensorifyScalars>();

#ifndef LATHE_PASSES_TENSORIFY_SCALARS_H_
#define LATHE_PASSES_TENSORIFY_SCALARS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class TensorifyScalars : public Pass {
 public:
  absl::string_view name() const override { return "tensorify_scalars"; }
  // Tensorifies every float-symbol use it can, specializes the rest; true
  // when anything changed.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_TENSORIFY_SCALARS_H_
