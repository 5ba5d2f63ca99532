// -----------------------------------------------------------------------------
// File: sym_value.h
// -----------------------------------------------------------------------------
//
// SymInt, SymFloat and SymBool: Python numbers that may be symbolic. Each is
// a constant or an expression of a ShapeEnv. Arithmetic builds expressions and
// never guards; only converting to a concrete C++ value (GuardInt, GuardBool,
// ...) asks the ShapeEnv, which may record a guard. Result types follow
// Python: int / int is a float, int // int an int, comparisons are bools.
//
// Example:
//
//   ShapeEnv env;
//   SymInt n(env.CreateSymbol(7, Source::Size(0, 0)), &env);   // s0
//   SymFloat half = TrueDiv(n, 2);                             // s0 / 2
//   ASSIGN_OR_RETURN(int64_t three, SymIntOf(half).GuardInt());  // 3
//   // guards: Eq(TruncToInt(IntTrueDiv(s0, 2)), 3)
//   SymInt m = SymMax(n, 4);                                   // no guard

#ifndef LATHE_SYMBOLIC_SYM_VALUE_H_
#define LATHE_SYMBOLIC_SYM_VALUE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {

// What SymInt, SymFloat and SymBool share: an expression and its ShapeEnv
// (null for constants).
class SymNode {
 public:
  Expr expr() const { return expr_; }
  ShapeEnv* env() const { return env_; }
  bool is_constant() const { return expr_.is_number(); }
  // The expression in PyTorch's style.
  std::string ToString() const;

 protected:
  SymNode(Expr expr, ShapeEnv* env) : expr_(expr), env_(env) {}
  Expr expr_;
  ShapeEnv* env_ = nullptr;
};

class SymBool;

class SymInt : public SymNode {
 public:
  SymInt(int64_t v) : SymNode(Int(v), nullptr) {}  // NOLINT: like Python ints
  SymInt(Expr e, ShapeEnv* env);
  // The value at the hints, without guarding.
  std::optional<int64_t> Hint() const;
  // int(x): the concrete value, guarding on it.
  absl::StatusOr<int64_t> GuardInt() const;
  // bool(x): x != 0, guarding on it.
  absl::StatusOr<bool> GuardBool() const;
};

class SymFloat : public SymNode {
 public:
  SymFloat(double v) : SymNode(Float(v), nullptr) {}  // NOLINT
  SymFloat(Expr e, ShapeEnv* env);
  std::optional<double> Hint() const;
  // float(x): the concrete value, guarding on it.
  absl::StatusOr<double> GuardFloat() const;
};

class SymBool : public SymNode {
 public:
  SymBool(bool v) : SymNode(Bool(v), nullptr) {}  // NOLINT
  SymBool(Expr e, ShapeEnv* env);
  std::optional<bool> Hint() const;
  // bool(x): the concrete value, guarding on it.
  absl::StatusOr<bool> GuardBool() const;
  // Statically true (no guard)?
  bool StaticallyKnownTrue() const;
};

// Arithmetic within one type (convert with SymFloatOf / SymIntOf to mix).
SymInt operator+(const SymInt& a, const SymInt& b);
SymInt operator-(const SymInt& a, const SymInt& b);
SymInt operator*(const SymInt& a, const SymInt& b);
SymInt operator-(const SymInt& a);
SymFloat operator+(const SymFloat& a, const SymFloat& b);
SymFloat operator-(const SymFloat& a, const SymFloat& b);
SymFloat operator*(const SymFloat& a, const SymFloat& b);
SymFloat operator-(const SymFloat& a);

// FloorDivide()
//
// a // b (Python floor division). Error when b is 0.
absl::StatusOr<SymInt> FloorDivide(const SymInt& a, const SymInt& b);

// Modulo()
//
// a % b: Mod when a >= 0 and b >= 1 are known statically, else PythonMod.
absl::StatusOr<SymInt> Modulo(const SymInt& a, const SymInt& b);

// TrueDiv()
//
// a / b: int / int -> float (IntTrueDiv), float / float (FloatTrueDiv).
absl::StatusOr<SymFloat> TrueDiv(const SymInt& a, const SymInt& b);
absl::StatusOr<SymFloat> TrueDiv(const SymFloat& a, const SymFloat& b);

// Power()
//
// int ** int (PowByNatural; guards that the exponent is >= 0 when that is not
// known, and an int ** negative int is an error) and float ** float.
absl::StatusOr<SymInt> Power(const SymInt& base, const SymInt& exp);
absl::StatusOr<SymFloat> Power(const SymFloat& base, const SymFloat& exp);

// Comparisons build a SymBool without guarding.
SymBool operator==(const SymInt& a, const SymInt& b);
SymBool operator!=(const SymInt& a, const SymInt& b);
SymBool operator<(const SymInt& a, const SymInt& b);
SymBool operator<=(const SymInt& a, const SymInt& b);
SymBool operator>(const SymInt& a, const SymInt& b);
SymBool operator>=(const SymInt& a, const SymInt& b);
SymBool operator==(const SymFloat& a, const SymFloat& b);
SymBool operator<(const SymFloat& a, const SymFloat& b);
SymBool operator<=(const SymFloat& a, const SymFloat& b);
SymBool operator&(const SymBool& a, const SymBool& b);
SymBool operator|(const SymBool& a, const SymBool& b);
SymBool operator!(const SymBool& a);

// SymMin()/SymMax()/SymIte()
//
// min, max and `t if c else f` without guarding.
SymInt SymMin(const SymInt& a, const SymInt& b);
SymInt SymMax(const SymInt& a, const SymInt& b);
SymFloat SymMin(const SymFloat& a, const SymFloat& b);
SymFloat SymMax(const SymFloat& a, const SymFloat& b);
SymInt SymIte(const SymBool& c, const SymInt& t, const SymInt& f);
SymFloat SymIte(const SymBool& c, const SymFloat& t, const SymFloat& f);

// Conversions: sym_float, sym_int (truncation), SymBool -> 0/1.
SymFloat SymFloatOf(const SymInt& a);
absl::StatusOr<SymInt> SymIntOf(const SymFloat& a);
SymInt SymIntOf(const SymBool& b);

// SymSqrt()
//
// math.sqrt of a SymFloat (or a promoted SymInt).
SymFloat SymSqrt(const SymFloat& a);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_SYM_VALUE_H_
