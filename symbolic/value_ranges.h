// -----------------------------------------------------------------------------
// File: value_ranges.h
// -----------------------------------------------------------------------------
//
// Conservative intervals of integers (with int_oo), floats and booleans, and
// Bound(): the interval an expression can take when each symbol stays inside
// its own interval. The ShapeEnv uses it to decide relations without guards;
// the simplifier uses it for Inductor's range-based index rules.
//
// Example:
//
//   ValueRange s0 = ValueRange::Int(2, kIntInf);          // [2, int_oo]
//   ValueRange r = Bound(Sub(s0_expr, Int(1)),
//                        [&](Expr s) { return s0; });      // [1, int_oo]
//   r.ToString();                                         // "[1, int_oo]"
//
// Semantics follow torch/utils/_sympy/value_ranges.py: floordiv takes the
// corners (0 in the divisor: unknown), Mod uses C semantics, 0 * anything is
// 0, and any integer beyond int64 is int_oo.

#ifndef LATHE_SYMBOLIC_VALUE_RANGES_H_
#define LATHE_SYMBOLIC_VALUE_RANGES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "symbolic/expr.h"

namespace lathe::symbolic {

// An integer bound: an int64 or +-kIntInf.
using IntBound = __int128;
inline constexpr IntBound kIntInf = static_cast<IntBound>(1) << 100;

// ValueRange
//
// [lower, upper] of one type; booleans are the subset of {False, True} a value
// may take.
class ValueRange {
 public:
  ValueRange() : lo_(-kIntInf), hi_(kIntInf) {}  // all ints

  static ValueRange Int(IntBound lo, IntBound hi);
  static ValueRange Float(double lo, double hi);
  static ValueRange Bool(bool can_be_false, bool can_be_true);
  static ValueRange IntUnknown() { return Int(-kIntInf, kIntInf); }
  static ValueRange FloatUnknown();
  static ValueRange Unknown(ExprType type);
  // The singleton range of a constant expression.
  static ValueRange Of(Expr constant);

  ExprType type() const { return type_; }
  IntBound int_lo() const { return lo_; }
  IntBound int_hi() const { return hi_; }
  double float_lo() const { return flo_; }
  double float_hi() const { return fhi_; }
  bool can_be_false() const { return can_false_; }
  bool can_be_true() const { return can_true_; }

  // Bounds as expressions: Integer or IntInfinity, Float, Boolean.
  Expr lower() const;
  Expr upper() const;

  // The only value, when the range has exactly one.
  std::optional<Expr> Singleton() const;
  // Whether no value fits (an empty intersection).
  bool IsEmpty() const;
  // Whether every value of `other` is in this range.
  bool Contains(const ValueRange& other) const;
  ValueRange Intersect(const ValueRange& other) const;
  ValueRange Union(const ValueRange& other) const;

  // "[2, int_oo]", "[-oo, 0.5]", "{True}", "{False, True}".
  std::string ToString() const;

  friend bool operator==(const ValueRange& a, const ValueRange& b);
  friend void PrintTo(const ValueRange& r, std::ostream* os) {
    *os << r.ToString();
  }

 private:
  ExprType type_ = ExprType::kInt;
  IntBound lo_ = 0, hi_ = 0;
  double flo_ = 0, fhi_ = 0;
  bool can_false_ = false, can_true_ = false;
};

// A symbol's range, or nullopt for "use its default".
using RangeLookup = std::function<std::optional<ValueRange>(Expr symbol)>;

// DefaultRange()
//
// The range a symbol's type and assumptions allow: positive ints [1, int_oo],
// nonnegative [0, int_oo], ints [-int_oo, int_oo], floats [-oo, oo].
ValueRange DefaultRange(Expr symbol);

// Bound()
//
// A range containing every value `e` takes when each symbol lies in
// `lookup(symbol)` (or its DefaultRange).
ValueRange Bound(Expr e, const RangeLookup& lookup = nullptr);

// Interval arithmetic, exposed for the ShapeEnv and tests.
ValueRange RangeAdd(const ValueRange& a, const ValueRange& b);
ValueRange RangeMul(const ValueRange& a, const ValueRange& b);
ValueRange RangeNeg(const ValueRange& a);
ValueRange RangeFloorDiv(const ValueRange& a, const ValueRange& b);
ValueRange RangeCMod(const ValueRange& a, const ValueRange& b);
ValueRange RangePythonMod(const ValueRange& a, const ValueRange& b);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_VALUE_RANGES_H_
