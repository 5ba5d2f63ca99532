// -----------------------------------------------------------------------------
// File: scheduler.h
// -----------------------------------------------------------------------------
//
// Fuses the kernels lowering produced (one per realized value) and plans
// memory. Two kernels next to each other fuse when every buffer both touch
// is accessed at the same element in the same iteration (Inductor's
// can_fuse_vertical rule: a read of the producer's write at the same index
// becomes the produced value; any other index refuses):
//   - pointwise into pointwise over the same ranges (vertical, or
//     horizontal when independent): one loop body;
//   - a pointwise kernel over a reduction's outer ranges: the reduction's
//     epilogue;
//   - a reduction (or a pointwise kernel over outer + inner ranges) after a
//     reduction over the same outer ranges: another loop nest inside the
//     same outer loops (softmax: max, sum of exp, normalize per row).
// Pointwise prologues are already inlined into reductions by lowering.
// Where the target's sconv takes an epilogue (Routines::sconv_epilogue),
// the loop kernel after a convolution becomes that epilogue, run image by
// image as the convolution writes them, when its accesses move by a fixed
// stride per image (Kernel::image_strides).
// A buffer that fusion left without readers (not an output) is no longer
// stored or allocated. Every decision is logged with its reason.
//
// Example:
//
//   ASSIGN_OR_RETURN(ScheduleResult r, Schedule(lowered));
//   r.log;   // {"fuse k1 into k0: epilogue over the reduction's outer ranges",
//   ...}

#ifndef LATHE_CODEGEN_SCHEDULER_H_
#define LATHE_CODEGEN_SCHEDULER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/lowering.h"

namespace lathe::codegen {

struct ScheduleResult {
  std::vector<std::string> log;
};

// Schedule()
//
// Fuses and plans `lowered`'s program in place.
absl::StatusOr<ScheduleResult> Schedule(LoweredGraph& lowered);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_SCHEDULER_H_
