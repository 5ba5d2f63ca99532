// -----------------------------------------------------------------------------
// File: split_loops.h
// -----------------------------------------------------------------------------
//
// Splits a flat pointwise kernel's innermost loop where its indices divide
// the loop variable: a kernel over a [2048, 768] view of a [8, 12, 256, 64]
// buffer reads element `16384*(x1//64) + ModularIndexing(x1, 1, 64) + ...`,
// which a C++ compiler runs as gathers; over [2048, 12, 64] (x1 = 64*x1 +
// x2) the same read is `16384*x1 + x2 + ...`, contiguous in the simd loop.
// As Inductor's CPU backend, which splits a loop's range at the divisors its
// reshapes index by. The scheduler runs it after fusion (fusion compares
// ranges), before it picks the loop order.
//
// Example:
//
//   if (std::optional<std::string> why = SplitLoopAtDivisions(kernel)) {
//     log.push_back(*why);
//   }
//   // A cast over [96, 256, 256] in a softmax's [8, 12, 256] + [256] loops:
//   std::optional<Kernel> split = SplitToRanges(cast, {8, 12, 256, 256});

#ifndef LATHE_CODEGEN_SPLIT_LOOPS_H_
#define LATHE_CODEGEN_SPLIT_LOOPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/loop_ir.h"
#include "symbolic/expr.h"

namespace lathe::codegen {

// The smallest inner range a split leaves: below it the simd loop is too
// short to gain from contiguous access (a vector holds 16 floats).
inline constexpr int64_t kMinSplitInner = 16;

// SplitLoopAtDivisions()
//
// Splits flat pointwise kernel `k`'s innermost loop (a constant range R) in
// two, R / c outer iterations of c inner ones, where c is the smallest
// divisor of R by which an index floor-divides or takes the remainder of its
// variable, when c >= kMinSplitInner and the split leaves no index dividing
// the inner variable. Returns a log entry when it split, else nullopt and
// `k` unchanged.
std::optional<std::string> SplitLoopAtDivisions(Kernel& k);

// SplitToRanges()
//
// Flat pointwise kernel `k` over loops of `ranges` (constants), each of its
// loops split into consecutive ones of `ranges` (a loop over 96 into two
// over 8 and 12: x0 = 12*x0 + x1): the same iterations in the same order.
// Nullopt when k has no loops, when a loop of k is not a product of
// consecutive ranges (k's boundaries must be among theirs, and all of them
// covered), or when a range is not a constant.
std::optional<Kernel> SplitToRanges(const Kernel& k,
                                    const std::vector<symbolic::Expr>& ranges);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_SPLIT_LOOPS_H_
