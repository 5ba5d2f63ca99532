// -----------------------------------------------------------------------------
// File: constant_fold.h
// -----------------------------------------------------------------------------
//
// constant_fold: Inductor's joint-graph constant folding of uniform values
// (reference §1.9, UniformValueConstantFolder), NaN/Inf-safe, then
// remove_no_ops.
//
// 1. A uniform value is known for every tensor all of whose elements are
//    one literal: constructors (full, zeros, ones, their _like and new_
//    forms, scalar_tensor, fill.Scalar) give it; views pass their input's
//    on (view.dtype only between equal element sizes); pointwise ops (and
//    convert_element_type, clone) whose tensor inputs all have one compute
//    it with the op's own reference kernel on one-element tensors, so NaN,
//    Inf and -0.0 come out as eager gives them. `x * 0` (or `* zeros`) is
//    zero whatever x is only for integer and bool results. Values in a
//    storage some op writes are not known, nor symbolic fill values.
// 2. Each such tensor a value-unknown node (or the output) uses becomes
//    `aten.full(shape, value, dtype=, layout=torch.strided, device=,
//    pin_memory=False)`, except when it is not contiguous, is unsigned,
//    shares its constant's storage with another one being replaced, or has a
//    symbolic size no earlier SymInt node holds. What only it used goes.
// 3. remove_no_ops, with IEEE semantics: add(x, zero) goes for floats only
//    when the zero is -0.0 (x + 0.0 turns -0.0 into 0.0), sub(x, zero) only
//    when it is +0.0, mul(x, one) and div(x, one) always; the zero/one is a
//    literal or a full from step 2. A different dtype gets a
//    prims.convert_element_type; a different shape or device keeps the op.
//    Never when x is written in place later (#174187), nor when it would
//    make a graph output alias an input or another output.
//
// Preconditions: metas are current; the graph has a MetaInference.
//
// Example:
//
//   full = full([4], 0, dtype=torch.int32, ...); mul = mul.Tensor(full, x)
// becomes
//   full_1 = full([4], 0, dtype=torch.int32, layout=torch.strided, ...)
// while `mul.Tensor(x_f32, 0)` stays (NaN * 0 is NaN).

#ifndef LATHE_PASSES_CONSTANT_FOLD_H_
#define LATHE_PASSES_CONSTANT_FOLD_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class ConstantFold : public Pass {
 public:
  absl::string_view name() const override { return "constant_fold"; }
  // Folds uniform values and removes no-ops; true when anything changed.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_CONSTANT_FOLD_H_
