// -----------------------------------------------------------------------------
// File: parser.h
// -----------------------------------------------------------------------------
//
// Parses expressions written in PyTorch's Python/SymPy form — what graph text
// puts in `Sym(...)` annotations and what printer.h writes — back into
// interned expressions.
//
// Example:
//
//   ASSIGN_OR_RETURN(Expr e, ParseExpr("(s0//2) + Max(1, s1)"));
//   ASSIGN_OR_RETURN(Expr f, ParseExpr("2*s0", {s0}));  // s0 as given
//
// Operators take Python's meaning: `//` FloorDiv, `%` Mod when both operands
// are known non-negative else PythonMod, `/` IntTrueDiv or FloatTrueDiv,
// `**` PowByNatural or FloatPow, comparisons, and/or/not (also &, |, ~).
// Functions: every kind by name (FloorDiv, CleanDiv, CeilDiv,
// ModularIndexing, Mod, PythonMod, Min, Max, IntTrueDiv, FloatTrueDiv,
// ToFloat, TruncToInt, FloorToInt, CeilToInt, RoundToInt, PowByNatural,
// FloatPow, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not, Piecewise,
// OpaqueUnaryFn_sqrt ...) and the Python spellings min, max, float, int,
// round, math.floor, math.ceil, math.trunc, math.sqrt, sym_float, sym_int,
// sym_max, sym_min. Constants: True, False, int_oo, oo, inf, nan.
//
// Errors name the column (1-based): "column 7: expected ')'".

#ifndef LATHE_SYMBOLIC_PARSER_H_
#define LATHE_SYMBOLIC_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "symbolic/expr.h"

namespace lathe::symbolic {

// DefaultSymbol()
//
// The symbol PyTorch's naming convention gives `name`: zf*/zuf* are floats,
// s<digits> positive ints (backed sizes), everything else plain ints.
Expr DefaultSymbol(absl::string_view name);

// ParseExpr()
//
// Parses `text`. A name equal to one of `symbols` is that symbol; any other
// name is DefaultSymbol(name).
absl::StatusOr<Expr> ParseExpr(absl::string_view text,
                               absl::Span<const Expr> symbols = {});

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_PARSER_H_
