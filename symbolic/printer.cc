#include "symbolic/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "symbolic/expr.h"

namespace lathe::symbolic {

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "oo" : "-oo";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

namespace {

absl::string_view UnaryFnName(UnaryFn fn) {
  switch (fn) {
    case UnaryFn::kSqrt:
      return "sqrt";
    case UnaryFn::kExp:
      return "exp";
    case UnaryFn::kLog:
      return "log";
    case UnaryFn::kLog2:
      return "log2";
    case UnaryFn::kSin:
      return "sin";
    case UnaryFn::kCos:
      return "cos";
    case UnaryFn::kTan:
      return "tan";
    case UnaryFn::kAsin:
      return "asin";
    case UnaryFn::kAcos:
      return "acos";
    case UnaryFn::kAtan:
      return "atan";
    case UnaryFn::kSinh:
      return "sinh";
    case UnaryFn::kCosh:
      return "cosh";
    case UnaryFn::kTanh:
      return "tanh";
  }
  return "?";
}

// Python-style precedence levels (higher binds tighter).
enum Prec {
  kPrecOr = 1,
  kPrecAnd,
  kPrecNot,
  kPrecRel,
  kPrecAdd,
  kPrecMul,
  kPrecUnary,
  kPrecPow,
  kPrecAtom,
};

class PythonPrinter {
 public:
  explicit PythonPrinter(bool exact) : exact_(exact) {}

  std::string Print(Expr e) { return PrintPrec(e, 0); }

 private:
  // `e` printed, parenthesized when it binds more loosely than `outer`.
  std::string PrintPrec(Expr e, int outer) {
    int prec = 0;
    std::string s = PrintWithPrec(e, &prec);
    if (prec < outer) return absl::StrCat("(", s, ")");
    return s;
  }

  std::string Call(absl::string_view name, absl::Span<const Expr> args) {
    std::vector<std::string> parts;
    for (Expr a : args) parts.push_back(PrintPrec(a, 0));
    return absl::StrCat(name, "(", absl::StrJoin(parts, ", "), ")");
  }

  // A product without its sign: "2*x*y" for -2*x*y.
  std::string Product(Expr e, bool* negative) {
    absl::Span<const Expr> factors = e.args();
    std::vector<std::string> parts;
    *negative = false;
    if (factors[0].is_number()) {
      Expr c = factors[0];
      bool neg = (c.kind() == ExprKind::kInteger && c.int_value() < 0) ||
                 (c.kind() == ExprKind::kFloat && c.float_value() < 0);
      *negative = neg;
      if (c.kind() == ExprKind::kInteger) {
        int64_t v = c.int_value();
        uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : v;
        if (mag != 1) parts.push_back(absl::StrCat(mag));
      } else if (c.kind() == ExprKind::kFloat) {
        // -1.0*x prints as -x (and -x of a float parses back to -1.0*x).
        double v = std::fabs(c.float_value());
        if (v != 1.0) parts.push_back(FormatFloat(v));
      } else {
        parts.push_back(PrintPrec(c, kPrecMul + 1));
      }
      factors = factors.subspan(1);
    }
    for (Expr f : factors) parts.push_back(PrintPrec(f, kPrecMul + 1));
    return absl::StrJoin(parts, "*");
  }

  std::string PrintWithPrec(Expr e, int* prec) {
    *prec = kPrecAtom;
    switch (e.kind()) {
      case ExprKind::kInteger:
        if (e.int_value() < 0) *prec = kPrecUnary;
        return absl::StrCat(e.int_value());
      case ExprKind::kFloat: {
        std::string s = FormatFloat(e.float_value());
        if (s[0] == '-') *prec = kPrecUnary;
        return s;
      }
      case ExprKind::kIntInfinity:
        if (e.infinity_sign() < 0) *prec = kPrecUnary;
        return e.infinity_sign() > 0 ? "int_oo" : "-int_oo";
      case ExprKind::kBoolean:
        return e.bool_value() ? "True" : "False";
      case ExprKind::kSymbol:
        return std::string(e.name());
      case ExprKind::kAdd: {
        *prec = kPrecAdd;
        // SymPy prints the constant last: "s0 + 1".
        std::vector<Expr> terms(e.args().begin(), e.args().end());
        if (terms[0].is_number()) {
          terms.push_back(terms[0]);
          terms.erase(terms.begin());
        }
        std::string out;
        for (size_t i = 0; i < terms.size(); ++i) {
          Expr t = terms[i];
          bool negative = false;
          std::string body;
          if (t.kind() == ExprKind::kMul) {
            body = Product(t, &negative);
          } else if (t.kind() == ExprKind::kInteger && t.int_value() < 0) {
            negative = true;
            body = absl::StrCat(0 - static_cast<uint64_t>(t.int_value()));
          } else if (t.kind() == ExprKind::kFloat && t.float_value() < 0) {
            negative = true;
            body = FormatFloat(-t.float_value());
          } else {
            body = PrintPrec(t, kPrecAdd + 1);
          }
          if (i == 0) {
            absl::StrAppend(&out, negative ? "-" : "", body);
          } else {
            absl::StrAppend(&out, negative ? " - " : " + ", body);
          }
        }
        return out;
      }
      case ExprKind::kMul: {
        *prec = kPrecMul;
        bool negative = false;
        std::string body = Product(e, &negative);
        // "-2*x" still binds like '*': (a//(-2*x)) needs its parentheses.
        if (negative) return absl::StrCat("-", body);
        return body;
      }
      case ExprKind::kPowByNatural:
      case ExprKind::kFloatPow:
        *prec = kPrecPow;
        return absl::StrCat(PrintPrec(e.arg(0), kPrecPow + 1), "**",
                            PrintPrec(e.arg(1), kPrecPow));
      case ExprKind::kFloorDiv:
        return absl::StrCat("(", PrintPrec(e.arg(0), kPrecMul), "//",
                            PrintPrec(e.arg(1), kPrecMul + 1), ")");
      case ExprKind::kCleanDiv:
        if (exact_) return Call("CleanDiv", e.args());
        return absl::StrCat("(", PrintPrec(e.arg(0), kPrecMul), "//",
                            PrintPrec(e.arg(1), kPrecMul + 1), ")");
      case ExprKind::kModularIndexing:
        return Call("ModularIndexing", e.args());
      case ExprKind::kMod:
        return Call("Mod", e.args());
      case ExprKind::kPythonMod:
        return Call("PythonMod", e.args());
      case ExprKind::kMin:
        return Call("Min", e.args());
      case ExprKind::kMax:
        return Call("Max", e.args());
      case ExprKind::kIntTrueDiv:
        return Call("IntTrueDiv", e.args());
      case ExprKind::kFloatTrueDiv:
        return Call("FloatTrueDiv", e.args());
      case ExprKind::kToFloat:
        return Call("ToFloat", e.args());
      case ExprKind::kTruncToInt:
        return Call("TruncToInt", e.args());
      case ExprKind::kFloorToInt:
        return Call("FloorToInt", e.args());
      case ExprKind::kCeilToInt:
        return Call("CeilToInt", e.args());
      case ExprKind::kRoundToInt:
        return Call("RoundToInt", e.args());
      case ExprKind::kOpaqueUnary:
        return Call(absl::StrCat("OpaqueUnaryFn_", UnaryFnName(e.unary_fn())),
                    e.args());
      case ExprKind::kEq:
        return Call("Eq", e.args());
      case ExprKind::kNe:
        return Call("Ne", e.args());
      case ExprKind::kLt:
      case ExprKind::kLe:
        *prec = kPrecRel;
        return absl::StrCat(PrintPrec(e.arg(0), kPrecRel + 1),
                            e.kind() == ExprKind::kLt ? " < " : " <= ",
                            PrintPrec(e.arg(1), kPrecRel + 1));
      case ExprKind::kAnd:
        return Call("And", e.args());
      case ExprKind::kOr:
        return Call("Or", e.args());
      case ExprKind::kNot:
        return Call("Not", e.args());
      case ExprKind::kPiecewise: {
        std::vector<std::string> cases;
        for (int i = 0; i + 1 < e.num_args(); i += 2) {
          cases.push_back(absl::StrCat("(", PrintPrec(e.arg(i), 0), ", ",
                                       PrintPrec(e.arg(i + 1), 0), ")"));
        }
        return absl::StrCat("Piecewise(", absl::StrJoin(cases, ", "), ")");
      }
    }
    return "?";
  }

  bool exact_;
};

class CppPrinter {
 public:
  explicit CppPrinter(const CppPrintOptions& options) : options_(options) {}

  std::string Print(Expr e) {
    switch (e.kind()) {
      case ExprKind::kInteger: {
        int64_t v = e.int_value();
        if (v == std::numeric_limits<int64_t>::min()) {
          return "(-9223372036854775807LL - 1)";
        }
        if (v > 2147483647 || v < -2147483647) return absl::StrCat(v, "LL");
        return v < 0 ? absl::StrCat("(", v, ")") : absl::StrCat(v);
      }
      case ExprKind::kFloat: {
        double v = e.float_value();
        if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
        if (std::isinf(v)) {
          return v > 0 ? "std::numeric_limits<double>::infinity()"
                       : "(-std::numeric_limits<double>::infinity())";
        }
        std::string s = FormatFloat(v);
        return v < 0 ? absl::StrCat("(", s, ")") : s;
      }
      case ExprKind::kIntInfinity:
        return e.infinity_sign() > 0 ? "std::numeric_limits<int64_t>::max()"
                                     : "std::numeric_limits<int64_t>::min()";
      case ExprKind::kBoolean:
        return e.bool_value() ? "true" : "false";
      case ExprKind::kSymbol:
        return options_.symbol_name ? options_.symbol_name(e)
                                    : std::string(e.name());
      case ExprKind::kAdd:
        return Join(e.args(), " + ");
      case ExprKind::kMul:
        return Join(e.args(), " * ");
      case ExprKind::kPowByNatural: {
        Expr exp = e.arg(1);
        if (exp.kind() == ExprKind::kInteger && exp.int_value() <= 8) {
          std::vector<Expr> repeated(exp.int_value(), e.arg(0));
          return Join(repeated, " * ");
        }
        return Fn("lathe_pow_by_natural", e.args());
      }
      case ExprKind::kFloatPow:
        return Fn("std::pow", e.args());
      case ExprKind::kFloorDiv:
        if (Plain(e.arg(0), e.arg(1))) return Join(e.args(), " / ");
        return Fn("lathe_floordiv", e.args());
      case ExprKind::kCleanDiv:
        return Join(e.args(), " / ");
      case ExprKind::kModularIndexing:
        if (Plain(e.arg(0), e.arg(1)) && Positive(e.arg(2))) {
          const std::string q = e.arg(1).int_value() == 1
                                    ? Print(e.arg(0))
                                    : Join({e.arg(0), e.arg(1)}, " / ");
          return absl::StrCat("(", q, " % ", Print(e.arg(2)), ")");
        }
        return absl::StrCat("lathe_pymod(lathe_floordiv(", Print(e.arg(0)),
                            ", ", Print(e.arg(1)), "), ", Print(e.arg(2)), ")");
      case ExprKind::kMod:
        return Join(e.args(), " % ");
      case ExprKind::kPythonMod:
        if (Plain(e.arg(0), e.arg(1))) return Join(e.args(), " % ");
        return Fn("lathe_pymod", e.args());
      case ExprKind::kMin:
      case ExprKind::kMax: {
        std::vector<std::string> parts;
        for (Expr a : e.args()) parts.push_back(Print(a));
        // Two terms without a list: GCC vectorizes no loop that builds
        // an initializer_list.
        bool two = parts.size() == 2;
        return absl::StrCat(
            e.kind() == ExprKind::kMin ? "std::min" : "std::max",
            e.is_int() ? "<int64_t>" : "<double>", two ? "(" : "({",
            absl::StrJoin(parts, ", "), two ? ")" : "})");
      }
      case ExprKind::kIntTrueDiv:
        return absl::StrCat("(static_cast<double>(", Print(e.arg(0)),
                            ") / static_cast<double>(", Print(e.arg(1)), "))");
      case ExprKind::kFloatTrueDiv:
        return Join(e.args(), " / ");
      case ExprKind::kToFloat:
        return absl::StrCat("static_cast<double>(", Print(e.arg(0)), ")");
      case ExprKind::kTruncToInt:
        return absl::StrCat("static_cast<int64_t>(std::trunc(", Print(e.arg(0)),
                            "))");
      case ExprKind::kFloorToInt:
        return absl::StrCat("static_cast<int64_t>(std::floor(", Print(e.arg(0)),
                            "))");
      case ExprKind::kCeilToInt:
        return absl::StrCat("static_cast<int64_t>(std::ceil(", Print(e.arg(0)),
                            "))");
      case ExprKind::kRoundToInt:
        return absl::StrCat("static_cast<int64_t>(std::nearbyint(",
                            Print(e.arg(0)), "))");
      case ExprKind::kOpaqueUnary:
        return Fn(absl::StrCat("std::", UnaryFnName(e.unary_fn())), e.args());
      case ExprKind::kEq:
        return Join(e.args(), " == ");
      case ExprKind::kNe:
        return Join(e.args(), " != ");
      case ExprKind::kLt:
        return Join(e.args(), " < ");
      case ExprKind::kLe:
        return Join(e.args(), " <= ");
      case ExprKind::kAnd:
        return Join(e.args(), " && ");
      case ExprKind::kOr:
        return Join(e.args(), " || ");
      case ExprKind::kNot:
        return absl::StrCat("(!", Print(e.arg(0)), ")");
      case ExprKind::kPiecewise: {
        // The last condition is True: its value is the final else.
        std::string out = Print(e.arg(e.num_args() - 2));
        for (int i = e.num_args() - 4; i >= 0; i -= 2) {
          out = absl::StrCat("(", Print(e.arg(i + 1)), " ? ", Print(e.arg(i)),
                             " : ", out, ")");
        }
        return out;
      }
    }
    return "?";
  }

 private:
  std::string Join(absl::Span<const Expr> args, absl::string_view sep) {
    std::vector<std::string> parts;
    for (Expr a : args) parts.push_back(Print(a));
    return absl::StrCat("(", absl::StrJoin(parts, sep), ")");
  }
  std::string Fn(absl::string_view name, absl::Span<const Expr> args) {
    std::vector<std::string> parts;
    for (Expr a : args) parts.push_back(Print(a));
    return absl::StrCat(name, "(", absl::StrJoin(parts, ", "), ")");
  }
  static bool Positive(Expr e) {
    return e.kind() == ExprKind::kInteger && e.int_value() > 0;
  }
  // Whether `a` divided by `b` rounds as C++ rounds (toward zero) and as
  // Python floors: a known nonnegative dividend, a positive constant.
  bool Plain(Expr a, Expr b) const {
    return Positive(b) && options_.nonnegative && options_.nonnegative(a);
  }

  const CppPrintOptions& options_;
};

}  // namespace

std::string ToString(Expr e, PrintStyle style) {
  switch (style) {
    case PrintStyle::kPython:
      return PythonPrinter(/*exact=*/false).Print(e);
    case PrintStyle::kParseable:
      return PythonPrinter(/*exact=*/true).Print(e);
    case PrintStyle::kCpp:
      return ToCpp(e);
  }
  return "";
}

std::string ToCpp(Expr e, const CppPrintOptions& options) {
  return CppPrinter(options).Print(e);
}

// clang-format off
absl::string_view CppPrelude() {
  return R"cpp(#if defined(__CUDACC_RTC__)
// NVRTC (codegen/cuda): the std:: names ToCpp() prints, on the device.
#include <cuda/std/cmath>
#include <cuda/std/cstdint>
#include <cuda/std/initializer_list>
#include <cuda/std/limits>
using cuda::std::int64_t;
namespace std {
// std::max<T>({a, b, ...}), std::max<T>(a, b) and std::min: the first
// largest (smallest).
template <typename T>
__device__ __forceinline__ T max(T a, T b) { return a < b ? b : a; }
template <typename T>
__device__ __forceinline__ T min(T a, T b) { return b < a ? b : a; }
template <typename T>
__device__ __forceinline__ T max(std::initializer_list<T> l) {
  const T* p = l.begin();
  T m = *p;
  for (++p; p != l.end(); ++p) m = m < *p ? *p : m;
  return m;
}
template <typename T>
__device__ __forceinline__ T min(std::initializer_list<T> l) {
  const T* p = l.begin();
  T m = *p;
  for (++p; p != l.end(); ++p) m = *p < m ? *p : m;
  return m;
}
using cuda::std::numeric_limits;
using cuda::std::pow;
}  // namespace std
#define LATHE_INDEX_FN static __device__ __forceinline__
#else
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#define LATHE_INDEX_FN static inline
#endif

// Python's floor division and modulus on int64 (C++ truncates).
LATHE_INDEX_FN int64_t lathe_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
LATHE_INDEX_FN int64_t lathe_pymod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
LATHE_INDEX_FN int64_t lathe_pow_by_natural(int64_t base, int64_t exp) {
  int64_t r = 1;
  for (; exp > 0; --exp) r *= base;
  return r;
}
)cpp";
}
// clang-format on

}  // namespace lathe::symbolic
