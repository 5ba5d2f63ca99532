// -----------------------------------------------------------------------------
// File: split_reductions.h
// -----------------------------------------------------------------------------
//
// The cuda backend's rewrite of long reductions over few rows. A row
// kernel runs one block per row (cuda_emitter.h), so x.sum() over a
// million elements would run on one block of a GPU's hundred-odd SMs. A
// row kernel whose first section reduces (sum, prod, max, min, any, all)
// many points of few rows becomes two kernels, as Inductor's split
// reductions and PyTorch's two-pass reductions do:
//
//   K_part: one block per (row, chunk): the first section over the chunk's
//           points, each reduction's partial value stored in a workspace
//           buffer ([rows, chunks]);
//   K:      one block per row, as before, but its first section reduces
//           the row's partials, in chunk order, with the same operation.
//
// Deterministic: no atomics; the partials are combined in a fixed order.
// Chunks divide the row exactly (the chunk count is a divisor of the
// row's static length), so no point is masked. The memory plan is kept:
// the workspace lives from K_part to K, and every kernel index after the
// new one moves up by one.
//
// Example (the cuda backend's Adapt, after Schedule):
//
//   std::vector<std::string> log;
//   SplitReductions(program, &log);
//   // log: "split k0's reduction over 1000000 points into 250 chunks"

#ifndef LATHE_CODEGEN_CUDA_SPLIT_REDUCTIONS_H_
#define LATHE_CODEGEN_CUDA_SPLIT_REDUCTIONS_H_

#include <string>
#include <vector>

#include "codegen/loop_ir.h"

namespace lathe::codegen {

// A row shorter than this many points stays in one block.
inline constexpr int64_t kSplitMinPoints = 16384;
// Kernels over more rows than this keep a block per row (the rows fill the
// GPU already).
inline constexpr int64_t kSplitMaxRows = 64;

// SplitReductions()
//
// Splits each row kernel of `program` that qualifies (above), appending
// one line per split, or per kernel left whole for a reason worth
// knowing, to `log`.
void SplitReductions(Program& program, std::vector<std::string>* log);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CUDA_SPLIT_REDUCTIONS_H_
