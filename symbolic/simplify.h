// -----------------------------------------------------------------------------
// File: simplify.h
// -----------------------------------------------------------------------------
//
// Simplification that needs knowledge beyond an expression's own structure:
// symbol ranges and divisibility facts (the ShapeEnv's), on top of the
// automatic rules the constructors in expr.h already apply.
//
//   FloorDiv(a, b)                 -> CleanDiv(a, b)   when b | a is known
//   FloorDiv(a, CleanDiv(a, d))    -> d
//   TruncToInt(IntTrueDiv(a, b))   -> CleanDiv(a, b) when b | a, FloorDiv(a, b)
//                                     when the quotient is known >= 0
//   FloorToInt/CeilToInt(IntTrueDiv(a, b)) -> FloorDiv/CeilDiv(a, b)
//   Inductor's index rules (reference §2): FloorDiv(x, d) -> 0 for 0 <= x < d;
//   ModularIndexing(x, d, m) -> x // d when 0 <= x // d < m;
//   FloorDiv(ModularIndexing(b, d1, m), d2) -> ModularIndexing(b, d1*d2, m/d2);
//   dropping a remainder 0 <= r < g from g*X + r under // and ModularIndexing;
//   joining c*ModularIndexing(x, d, m1) + c*m1*ModularIndexing(x, d*m1, m2)
//   and c*ModularIndexing(x, d, m) + c*m*FloorDiv(x, d*m);
//   Min/Max arguments dominated by ranges; relations decided by ranges.
//
// Example:
//
//   SimplifyContext ctx;
//   ctx.ranges = [&](Expr s) -> std::optional<ValueRange> { ... };
//   ASSIGN_OR_RETURN(Expr e, Simplify(index, ctx));
//
// Every rule is exact under the given facts: the result evaluates to the same
// value as the input for every assignment consistent with them.

#ifndef LATHE_SYMBOLIC_SIMPLIFY_H_
#define LATHE_SYMBOLIC_SIMPLIFY_H_

#include <functional>

#include "absl/status/statusor.h"
#include "symbolic/expr.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {

struct SimplifyContext {
  // Symbol ranges; null means each symbol's DefaultRange.
  RangeLookup ranges;
  // Whether `b` is known to divide `a`; null means nothing is known.
  std::function<bool(Expr a, Expr b)> divisible;
  // Whether relations whose range is one value fold to True/False.
  bool decide_relations = true;
};

// Simplify()
//
// `e` rewritten with the rules above until none applies.
absl::StatusOr<Expr> Simplify(Expr e, const SimplifyContext& context = {});

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_SIMPLIFY_H_
