// -----------------------------------------------------------------------------
// File: decompose_pointwise_backward.h
// -----------------------------------------------------------------------------
//
// The decompose pass's rules for the backward ops of elementwise and
// row-wise forwards: the activations' (gelu_backward, silu_backward,
// threshold_backward, ...), softmax's and log_softmax's, and the losses'
// (nll_loss, mse, smooth_l1, huber, binary_cross_entropy), each as
// torch/_decomp/decompositions.py writes it, in the math type.
// passes/decompose.cc runs them with its own.
//
// Example:
//
//   for (const decomp::Decomposition& d :
//        decomp::PointwiseBackwardDecompositions()) {
//     table[d.target] = d.fn;
//   }

#ifndef LATHE_PASSES_DECOMPOSE_POINTWISE_BACKWARD_H_
#define LATHE_PASSES_DECOMPOSE_POINTWISE_BACKWARD_H_

#include "absl/types/span.h"
#include "passes/rewriter.h"

namespace lathe::passes::decomp {

// The rules, by target.
absl::Span<const Decomposition> PointwiseBackwardDecompositions();

}  // namespace lathe::passes::decomp

#endif  // LATHE_PASSES_DECOMPOSE_POINTWISE_BACKWARD_H_
