// -----------------------------------------------------------------------------
// File: first_tier_loops.h
// -----------------------------------------------------------------------------
//
// The first tier's elementwise, row-reduction and pooling kernels
// (first_tier.h), as typed loops over f32 memory instead of the reference's
// runs of doubles loaded and stored through function pointers:
//
// - add, sub, mul and true div over f32 tensors and numbers, functional and
//   in place: the reference's expression in double (`a + alpha * b`, `a * b`,
//   `a / b`, a number first rounded to f32 as the reference rounds it),
//   rounded once to f32 and compiled without contraction into FMAs: the
//   reference's bits;
// - sum, mean, amax, amin, var and var_mean of a contiguous f32 tensor over
//   its last dimension: the reference's accumulations in double, in its
//   order: its bits;
// - max_pool2d_with_indices of a 4-d f32 tensor: the reference's windows,
//   NaN and tie rules: its values and indices;
// - comparisons of an f32 tensor with a number (lt, le, gt, ge, eq, ne
//   .Scalar), and where of a bool mask over f32 operands of one layout
//   (self a tensor or a number): the softmax's exp (passes/rewriter.h:
//   ExpUnmasked), in the reference's arithmetic: its bits;
// - the f32 transcendental functions (exp, erf, tanh, sigmoid, ...):
//   glibc's vector (libmvec) double variants, rounded to f32. libmvec is
//   within 4 ULP in double of the scalar libm the reference calls, so after
//   rounding to f32 the results are the reference's but for values within a
//   few double ULPs of a tie.
//
// Results have the layout the op's meta function gives (the reference's).
// Anything else is left to the reference: other dtypes, other dimensions,
// in-place writes whose operand overlaps the written tensor in another
// layout, a written tensor that is not dense, layouts the loops do not cover.
//
// Example:
//
//   ir::KernelOverrides kernels;
//   AddFirstTierLoops(kernels);
//   ir::Interpret(graph, inputs, constants, seed, &kernels);

#ifndef LATHE_DRIVER_FIRST_TIER_LOOPS_H_
#define LATHE_DRIVER_FIRST_TIER_LOOPS_H_

#include <initializer_list>
#include <optional>

#include "ir/eval_call.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace lathe {

// FirstTierResult()
//
// A host tensor of `dtype` laid out as `meta` (an op's result metadata,
// ir::ResultMetaOf) says, its elements left for the kernel to write every
// one; nullopt for metadata of another dtype or device, a layout with gaps,
// or an allocation the limits refuse (the reference then reports it). The
// first of `reusable` (an elementwise kernel's operands, each element read
// before the same element of the result is written) that the call holds
// alone (the interpreter let go of it: ir::EvalCall), in lathe's memory,
// the whole of its storage and already laid out so, is the result: no fresh
// memory, which a process faults in at about 2.5 GB/s on
// tools/bench/README.md's machine. Else a new tensor.
std::optional<Tensor> FirstTierResult(
    const ir::OpCall& c, const ir::Value& meta, DType dtype,
    std::initializer_list<const ir::Value*> reusable = {});

// AddFirstTierLoops()
//
// Adds the elementwise, reduction and pooling kernels, by op target, to
// `kernels`.
void AddFirstTierLoops(ir::KernelOverrides& kernels);

}  // namespace lathe

#endif  // LATHE_DRIVER_FIRST_TIER_LOOPS_H_
