// -----------------------------------------------------------------------------
// File: decompose_grid_sampler.h
// -----------------------------------------------------------------------------
//
// The decompose pass's rules for grid_sampler_2d and its backward (bilinear
// and nearest; bicubic is left to the op): the source coordinates PyTorch's
// CPU kernels compute, with their derivatives for the grid's gradient, and
// the corners read with aten.index.Tensor and written with scatter_add.
// passes/decompose.cc runs them with its own.
//
// Example:
//
//   for (const decomp::Decomposition& d : decomp::GridSamplerDecompositions())
//   {
//     table[d.target] = d.fn;
//   }

#ifndef LATHE_PASSES_DECOMPOSE_GRID_SAMPLER_H_
#define LATHE_PASSES_DECOMPOSE_GRID_SAMPLER_H_

#include "absl/types/span.h"
#include "passes/rewriter.h"

namespace lathe::passes::decomp {

// grid_sampler_2d's and grid_sampler_2d_backward's rules, by target.
absl::Span<const Decomposition> GridSamplerDecompositions();

}  // namespace lathe::passes::decomp

#endif  // LATHE_PASSES_DECOMPOSE_GRID_SAMPLER_H_
