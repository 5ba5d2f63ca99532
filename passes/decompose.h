// -----------------------------------------------------------------------------
// File: decompose.h
// -----------------------------------------------------------------------------
//
// decompose: rewrites composite ops into the core ops code generation
// handles (pointwise math, sum/amax reductions, views, full/scalar_tensor,
// prims.convert_element_type), as PyTorch's decompositions do
// (torch/_decomp/decompositions.py, torch/_refs, Inductor's own table):
// the same formulas, the same upcast of float16/bfloat16 to float32 for the
// computation and back, and for multi-output ops (native_layer_norm, the
// batch-norm family, var_mean) every getitem user rewired to its own new
// value. What decomposes lives in one table in decompose.cc
// (DecomposedTargets() lists it); an op whose call the table's function
// cannot decompose faithfully (a symbolic Scalar, half_to_float, a size not
// known to be non-empty, an op that writes its arguments) is left as it was.
//
// It also brings nested scatter chains into Inductor's functional form
// (reference §2.2): in `a = slice_scatter(slice(x, ...), src, ...);
// b = select_scatter(x, a, ...)`, the other users of `a` read a view of `b`
// instead, so `a` feeds `b` alone and the chain can later be reinplaced as
// one write.
//
// Preconditions: metas are current (shape propagation ran) and the graph
// has a MetaInference; new nodes get theirs through Graph::InsertCall.
//
// Example:
//
//   gelu = torch.ops.aten.gelu.default(x)
// becomes
//   mul = torch.ops.aten.mul.Tensor(x, 0.5)
//   mul_1 = torch.ops.aten.mul.Tensor(x, 0.7071067811865476)
//   erf = torch.ops.aten.erf.default(mul_1)
//   add = torch.ops.aten.add.Tensor(erf, 1)
//   mul_2 = torch.ops.aten.mul.Tensor(mul, add)

#ifndef LATHE_PASSES_DECOMPOSE_H_
#define LATHE_PASSES_DECOMPOSE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class Decompose : public Pass {
 public:
  absl::string_view name() const override { return "decompose"; }
  // Decomposes every call of a target in the table (and straightens
  // scatter chains); true when anything was rewritten.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

// DecomposedTargets()
//
// The targets the table decomposes, sorted.
std::vector<std::string> DecomposedTargets();

}  // namespace lathe::passes

#endif  // LATHE_PASSES_DECOMPOSE_H_
