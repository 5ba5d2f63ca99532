// -----------------------------------------------------------------------------
// File: decompose_attention.h
// -----------------------------------------------------------------------------
//
// The decompose pass's rules for scaled-dot-product attention: the CPU
// flash kernel's op and its backward (the math path, as PyTorch's CPU
// kernel computes it), and the ops of PyTorch's CUDA kernels
// (memory-efficient and cuDNN, forward and backward; ir/ops_attention.cc)
// through the same math, each result laid out where its users can see the
// layout as the op's meta says. Dropout is left to the op (refused there).
// passes/decompose.cc runs them with its own.
//
// Example:
//
//   for (const decomp::Decomposition& d : decomp::AttentionDecompositions()) {
//     table[d.target] = d.fn;
//   }

#ifndef LATHE_PASSES_DECOMPOSE_ATTENTION_H_
#define LATHE_PASSES_DECOMPOSE_ATTENTION_H_

#include "absl/types/span.h"
#include "passes/rewriter.h"

namespace lathe::passes::decomp {

// The attention ops' rules, by target.
absl::Span<const Decomposition> AttentionDecompositions();

}  // namespace lathe::passes::decomp

#endif  // LATHE_PASSES_DECOMPOSE_ATTENTION_H_
