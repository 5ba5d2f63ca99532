// -----------------------------------------------------------------------------
// File: first_tier.h
// -----------------------------------------------------------------------------
//
// The first tier of a tiered compile (variant_compiler.h): the graph after
// the passes run on the interpreter while the library builds, with some ops
// given to faster kernels, so that a first call costs about what the
// library's routines cost plus typed loops, not the reference's double
// precision:
//
// - the matrix products (mm, bmm, their out_dtype forms, addmm on f32 or
//   bf16 host tensors) and f32 convolutions go to the runtime's routines:
//   those the compiled code calls (bgemm, Sconv), and for f32 products
//   oneDNN's matmul primitives rather than its sgemm, whose kernels take
//   about 21 ms to make at a process's first product (kernel_runtime.h:
//   SgemmByPrimitives). Their products are summed in f32, as the compiled
//   code's (then a bias is added in double and the result rounded to the
//   output dtype, as the reference rounds);
// - f32 elementwise ops, last-dimension reductions and 2-d max pools run as
//   typed loops (first_tier_loops.h).
//
// Every other op, and every argument these kernels do not take (another
// dtype, shapes the reference refuses), runs the reference kernel, whose
// errors stay the interpreter's.
//
// Example:
//
//   ASSIGN_OR_RETURN(ir::Interpretation r,
//                    ir::Interpret(graph, inputs, constants, seed,
//                                  &FirstTierKernels()));

#ifndef LATHE_DRIVER_FIRST_TIER_H_
#define LATHE_DRIVER_FIRST_TIER_H_

#include "ir/eval_call.h"

namespace lathe {

// FirstTierKernels()
//
// The kernels the first tier uses instead of the reference's, by op target.
const ir::KernelOverrides& FirstTierKernels();

}  // namespace lathe

#endif  // LATHE_DRIVER_FIRST_TIER_H_
