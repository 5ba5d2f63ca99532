// -----------------------------------------------------------------------------
// File: first_tier.h
// -----------------------------------------------------------------------------
//
// The first tier of a tiered compile (variant_compiler.h): the graph after
// the passes run on the interpreter while the library builds, with the
// matrix products (mm, bmm, their out_dtype forms, addmm on f32 or bf16
// host tensors) given to the routines the compiled code calls for them
// (the runtime's sgemm and bgemm), so that a first call costs what the
// library's GEMMs cost plus the interpreter's elementwise work, not the
// reference's double-precision products. Its products are summed in f32, as the
// compiled code's (then the bias added in double and the result rounded to the
// output dtype, as the reference rounds); every other op, and every argument
// these kernels do not take (another dtype, shapes the reference refuses), runs
// the reference kernel, whose errors stay the interpreter's.
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
