// -----------------------------------------------------------------------------
// File: decompose_backward.h
// -----------------------------------------------------------------------------
//
// The decompose pass's rules for backward ops (those AOTAutograd's
// backward graphs hold), each derivatives.yaml's formula as
// torch/_decomp/decompositions.py writes it, into ops the lowering knows.
// passes/decompose.cc runs them with its own.
//
// Example:
//
//   for (const decomp::Decomposition& d : decomp::BackwardDecompositions()) {
//     table[d.target] = d.fn;
//   }

#ifndef LATHE_PASSES_DECOMPOSE_BACKWARD_H_
#define LATHE_PASSES_DECOMPOSE_BACKWARD_H_

#include "absl/types/span.h"
#include "passes/rewriter.h"

namespace lathe::passes::decomp {

// The backward ops' rules, by target.
absl::Span<const Decomposition> BackwardDecompositions();

}  // namespace lathe::passes::decomp

#endif  // LATHE_PASSES_DECOMPOSE_BACKWARD_H_
