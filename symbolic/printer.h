// -----------------------------------------------------------------------------
// File: printer.h
// -----------------------------------------------------------------------------
//
// Prints expressions in three styles:
//   kPython     PyTorch's (SymPy str) form, as graph text and guards show it:
//               "2*s0 + 1", "(s0//2)", "Max(1, s0)", "Eq(s0, 2)".
//   kParseable  the same but exact for every kind (CleanDiv is spelled out),
//               so ParseExpr(ToString(e, kParseable)) == e.
//   kCpp        a C++ expression for generated code, with Python's semantics
//               made explicit through the helpers in CppPrelude().
//
// Example:
//
//   ToString(e);                                   // "(s0//2) + 1"
//   ToCpp(e, {.symbol_name = [](Expr s) { return "sizes[0]"; }});
//   // "(lathe_floordiv(sizes[0], 2) + 1)"

#ifndef LATHE_SYMBOLIC_PRINTER_H_
#define LATHE_SYMBOLIC_PRINTER_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolic/expr.h"

namespace lathe::symbolic {

enum class PrintStyle { kPython, kParseable, kCpp };

// ToString()
//
// `e` in the given style (C++ with symbols printed by name).
std::string ToString(Expr e, PrintStyle style = PrintStyle::kPython);

struct CppPrintOptions {
  // How a symbol is spelled in the generated code; by default, its name.
  std::function<std::string(Expr symbol)> symbol_name;
  // Whether an integer expression is known to be at least 0 (by default none
  // is): a floor division, ModularIndexing or Python modulo of such a
  // dividend by a positive constant is then C++'s `/` and `%`, which a
  // compiler vectorizes, where lathe_floordiv and lathe_pymod's sign tests
  // keep GCC from vectorizing the loop (a kernel's loop variables, whose
  // ranges its emitter knows).
  std::function<bool(Expr)> nonnegative;
};

// ToCpp()
//
// `e` as a C++ expression of type int64_t, double or bool.
std::string ToCpp(Expr e, const CppPrintOptions& options = {});

// CppPrelude()
//
// C++ source defining the helpers ToCpp() output calls (lathe_floordiv,
// lathe_pymod, lathe_pow_by_natural) and the headers it needs. Generated code
// includes it once.
absl::string_view CppPrelude();

// FormatFloat()
//
// The shortest decimal that reads back as exactly `v`, always with a '.' or an
// exponent ("2.0", "0.1", "1e-300"); "oo"/"-oo"/"nan" for non-finite values.
std::string FormatFloat(double v);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_PRINTER_H_
