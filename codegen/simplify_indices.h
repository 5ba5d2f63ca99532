// -----------------------------------------------------------------------------
// File: simplify_indices.h
// -----------------------------------------------------------------------------
//
// Rewrites a kernel's index expressions with the ranges of its loop
// variables (symbolic/simplify.h's rules, Inductor's index simplification):
// a view of a view of a buffer lowers to nested ModularIndexing / FloorDiv
// terms (`((x2 // 1) % 64) + 64 * (((8192*x0 + 64*x1 + x2) // 8192) % 12)`)
// that are plain affine functions of the loop variables once their ranges
// are known (`x2 + 64*x0`, with x2 < 64 and x0 < 96). The scheduler runs it
// on every kernel before fusion (equal indices fuse) and after; affine
// indices are what a C++ compiler vectorizes.
//
// Example:
//
//   bool changed = SimplifyIndices(kernel);

#ifndef LATHE_CODEGEN_SIMPLIFY_INDICES_H_
#define LATHE_CODEGEN_SIMPLIFY_INDICES_H_

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "codegen/loop_ir.h"
#include "symbolic/expr.h"
#include "symbolic/value_ranges.h"

namespace lathe::codegen {

// The range of each of `k`'s loop variables (its loops' and its sections'):
// [0, extent - 1] for a constant extent, [0, oo) for a symbolic one;
// nullopt when a constant extent is 0 or less (the kernel runs nothing).
std::optional<absl::flat_hash_map<symbolic::Expr, symbolic::ValueRange>>
LoopVariableRanges(const Kernel& k);

// Simplifies the index of every load, store and index op of `k` with each
// loop variable in [0, extent - 1] (a constant extent; else [0, oo));
// whether any index changed. A kernel with an empty loop runs nothing and
// is left alone, as is an index the simplifier refuses (it is only
// faster to evaluate, never needed).
bool SimplifyIndices(Kernel& k);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_SIMPLIFY_INDICES_H_
