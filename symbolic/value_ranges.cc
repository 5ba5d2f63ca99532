#include "symbolic/value_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::symbolic {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr IntBound kInt64Max = std::numeric_limits<int64_t>::max();
constexpr IntBound kInt64Min = std::numeric_limits<int64_t>::min();

IntBound Clamp(IntBound v) {
  if (v > kInt64Max) return kIntInf;
  if (v < kInt64Min) return -kIntInf;
  return v;
}

bool IsInf(IntBound v) { return v == kIntInf || v == -kIntInf; }

std::string BoundString(IntBound v) {
  if (v == kIntInf) return "int_oo";
  if (v == -kIntInf) return "-int_oo";
  return absl::StrCat(static_cast<int64_t>(v));
}

IntBound AddBound(IntBound a, IntBound b, bool upper) {
  if (IsInf(a) && IsInf(b) && a != b) return upper ? kIntInf : -kIntInf;
  if (IsInf(a)) return a;
  if (IsInf(b)) return b;
  return Clamp(a + b);
}

// a * b with 0 * inf = 0.
IntBound MulBound(IntBound a, IntBound b) {
  if (a == 0 || b == 0) return 0;
  if (IsInf(a) || IsInf(b)) return ((a > 0) == (b > 0)) ? kIntInf : -kIntInf;
  IntBound r;
  if (__builtin_mul_overflow(a, b, &r)) {
    return ((a > 0) == (b > 0)) ? kIntInf : -kIntInf;
  }
  return Clamp(r);
}

// floor(a / b) for b != 0, with limits at infinities; an undefined corner
// (inf / inf) becomes sign * int_oo.
IntBound FloorDivBound(IntBound a, IntBound b) {
  LATHE_CHECK(b != 0) << "a divisor range containing 0 reached a corner";
  int sign = ((a > 0) == (b > 0)) ? 1 : -1;
  if (a == 0) return 0;
  if (IsInf(a) && IsInf(b)) return sign * kIntInf;
  if (IsInf(a)) return sign * kIntInf;
  if (IsInf(b)) return sign > 0 ? 0 : -1;  // a tiny quotient, floored
  IntBound q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return Clamp(q);
}

double ToDouble(IntBound v) {
  if (v == kIntInf) return kInf;
  if (v == -kIntInf) return -kInf;
  return static_cast<double>(v);
}

IntBound FromDouble(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return kIntInf;
  if (v < -9.2233720368547758e18) return -kIntInf;
  return static_cast<IntBound>(v);
}

ValueRange IntCorners(std::initializer_list<IntBound> values) {
  IntBound lo = kIntInf, hi = -kIntInf;
  for (IntBound v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return ValueRange::Int(lo, hi);
}

ValueRange FloatCorners(std::initializer_list<double> values) {
  double lo = kInf, hi = -kInf;
  for (double v : values) {
    if (std::isnan(v)) return ValueRange::FloatUnknown();
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return ValueRange::Float(lo, hi);
}

ValueRange AsFloat(const ValueRange& r) {
  if (r.type() == ExprType::kFloat) return r;
  return ValueRange::Float(ToDouble(r.int_lo()), ToDouble(r.int_hi()));
}

}  // namespace

ValueRange ValueRange::Int(IntBound lo, IntBound hi) {
  ValueRange r;
  r.type_ = ExprType::kInt;
  r.lo_ = Clamp(lo);
  r.hi_ = Clamp(hi);
  return r;
}

ValueRange ValueRange::Float(double lo, double hi) {
  ValueRange r;
  r.type_ = ExprType::kFloat;
  r.flo_ = std::isnan(lo) ? -kInf : lo;
  r.fhi_ = std::isnan(hi) ? kInf : hi;
  return r;
}

ValueRange ValueRange::Bool(bool can_be_false, bool can_be_true) {
  ValueRange r;
  r.type_ = ExprType::kBool;
  r.can_false_ = can_be_false;
  r.can_true_ = can_be_true;
  return r;
}

ValueRange ValueRange::FloatUnknown() { return Float(-kInf, kInf); }

ValueRange ValueRange::Unknown(ExprType type) {
  switch (type) {
    case ExprType::kInt:
      return IntUnknown();
    case ExprType::kFloat:
      return FloatUnknown();
    case ExprType::kBool:
      return Bool(true, true);
  }
  return IntUnknown();
}

ValueRange ValueRange::Of(Expr c) {
  switch (c.kind()) {
    case ExprKind::kInteger:
      return Int(c.int_value(), c.int_value());
    case ExprKind::kIntInfinity:
      return Int(c.infinity_sign() * kIntInf, c.infinity_sign() * kIntInf);
    case ExprKind::kFloat:
      if (std::isnan(c.float_value())) return FloatUnknown();
      return Float(c.float_value(), c.float_value());
    case ExprKind::kBoolean:
      return Bool(!c.bool_value(), c.bool_value());
    default:
      LATHE_CHECK(false) << "ValueRange::Of needs a constant";
      return IntUnknown();
  }
}

Expr ValueRange::lower() const {
  switch (type_) {
    case ExprType::kInt:
      return IsInf(lo_) ? IntInfinity(lo_ > 0 ? 1 : -1)
                        : symbolic::Int(static_cast<int64_t>(lo_));
    case ExprType::kFloat:
      return symbolic::Float(flo_);
    case ExprType::kBool:
      return symbolic::Bool(!can_false_);
  }
  return symbolic::Int(0);
}

Expr ValueRange::upper() const {
  switch (type_) {
    case ExprType::kInt:
      return IsInf(hi_) ? IntInfinity(hi_ > 0 ? 1 : -1)
                        : symbolic::Int(static_cast<int64_t>(hi_));
    case ExprType::kFloat:
      return symbolic::Float(fhi_);
    case ExprType::kBool:
      return symbolic::Bool(can_true_);
  }
  return symbolic::Int(0);
}

std::optional<Expr> ValueRange::Singleton() const {
  switch (type_) {
    case ExprType::kInt:
      if (lo_ == hi_ && !IsInf(lo_)) return lower();
      return std::nullopt;
    case ExprType::kFloat:
      if (flo_ == fhi_ && !std::isinf(flo_)) return lower();
      return std::nullopt;
    case ExprType::kBool:
      if (can_false_ != can_true_) return symbolic::Bool(can_true_);
      return std::nullopt;
  }
  return std::nullopt;
}

bool ValueRange::IsEmpty() const {
  switch (type_) {
    case ExprType::kInt:
      return lo_ > hi_;
    case ExprType::kFloat:
      return flo_ > fhi_;
    case ExprType::kBool:
      return !can_false_ && !can_true_;
  }
  return false;
}

bool ValueRange::Contains(const ValueRange& o) const {
  if (o.IsEmpty()) return true;
  switch (type_) {
    case ExprType::kInt:
      if (o.type_ == ExprType::kInt) return lo_ <= o.lo_ && o.hi_ <= hi_;
      return ToDouble(lo_) <= o.flo_ && o.fhi_ <= ToDouble(hi_);
    case ExprType::kFloat: {
      ValueRange f = AsFloat(o);
      return flo_ <= f.flo_ && f.fhi_ <= fhi_;
    }
    case ExprType::kBool:
      return (can_false_ || !o.can_false_) && (can_true_ || !o.can_true_);
  }
  return false;
}

ValueRange ValueRange::Intersect(const ValueRange& o) const {
  switch (type_) {
    case ExprType::kInt:
      return Int(std::max(lo_, o.lo_), std::min(hi_, o.hi_));
    case ExprType::kFloat: {
      ValueRange f = AsFloat(o);
      return Float(std::max(flo_, f.flo_), std::min(fhi_, f.fhi_));
    }
    case ExprType::kBool:
      return Bool(can_false_ && o.can_false_, can_true_ && o.can_true_);
  }
  return *this;
}

ValueRange ValueRange::Union(const ValueRange& o) const {
  if (IsEmpty()) return o;
  if (o.IsEmpty()) return *this;
  switch (type_) {
    case ExprType::kInt:
      if (o.type_ == ExprType::kFloat) return AsFloat(*this).Union(o);
      return Int(std::min(lo_, o.lo_), std::max(hi_, o.hi_));
    case ExprType::kFloat: {
      ValueRange f = AsFloat(o);
      return Float(std::min(flo_, f.flo_), std::max(fhi_, f.fhi_));
    }
    case ExprType::kBool:
      return Bool(can_false_ || o.can_false_, can_true_ || o.can_true_);
  }
  return *this;
}

std::string ValueRange::ToString() const {
  switch (type_) {
    case ExprType::kInt:
      return absl::StrCat("[", BoundString(lo_), ", ", BoundString(hi_), "]");
    case ExprType::kFloat:
      return absl::StrCat("[", FormatFloat(flo_), ", ", FormatFloat(fhi_), "]");
    case ExprType::kBool:
      if (can_false_ && can_true_) return "{False, True}";
      if (can_true_) return "{True}";
      if (can_false_) return "{False}";
      return "{}";
  }
  return "?";
}

bool operator==(const ValueRange& a, const ValueRange& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case ExprType::kInt:
      return a.lo_ == b.lo_ && a.hi_ == b.hi_;
    case ExprType::kFloat:
      return a.flo_ == b.flo_ && a.fhi_ == b.fhi_;
    case ExprType::kBool:
      return a.can_false_ == b.can_false_ && a.can_true_ == b.can_true_;
  }
  return false;
}

ValueRange DefaultRange(Expr symbol) {
  if (symbol.is_float()) return ValueRange::FloatUnknown();
  if (symbol.is_positive()) return ValueRange::Int(1, kIntInf);
  if (symbol.is_nonnegative()) return ValueRange::Int(0, kIntInf);
  return ValueRange::IntUnknown();
}

// ---- Interval arithmetic ----------------------------------------------------

ValueRange RangeAdd(const ValueRange& a, const ValueRange& b) {
  if (a.type() == ExprType::kInt && b.type() == ExprType::kInt) {
    return ValueRange::Int(AddBound(a.int_lo(), b.int_lo(), false),
                           AddBound(a.int_hi(), b.int_hi(), true));
  }
  ValueRange x = AsFloat(a), y = AsFloat(b);
  return FloatCorners(
      {x.float_lo() + y.float_lo(), x.float_hi() + y.float_hi()});
}

ValueRange RangeNeg(const ValueRange& a) {
  if (a.type() == ExprType::kInt)
    return ValueRange::Int(-a.int_hi(), -a.int_lo());
  return ValueRange::Float(-a.float_hi(), -a.float_lo());
}

ValueRange RangeMul(const ValueRange& a, const ValueRange& b) {
  if (a.type() == ExprType::kInt && b.type() == ExprType::kInt) {
    return IntCorners(
        {MulBound(a.int_lo(), b.int_lo()), MulBound(a.int_lo(), b.int_hi()),
         MulBound(a.int_hi(), b.int_lo()), MulBound(a.int_hi(), b.int_hi())});
  }
  ValueRange x = AsFloat(a), y = AsFloat(b);
  auto m = [](double p, double q) { return (p == 0 || q == 0) ? 0.0 : p * q; };
  return FloatCorners(
      {m(x.float_lo(), y.float_lo()), m(x.float_lo(), y.float_hi()),
       m(x.float_hi(), y.float_lo()), m(x.float_hi(), y.float_hi())});
}

ValueRange RangeFloorDiv(const ValueRange& a, const ValueRange& b) {
  if (a.IsEmpty() || b.IsEmpty()) return ValueRange::IntUnknown();
  if (b.int_lo() <= 0 && b.int_hi() >= 0) return ValueRange::IntUnknown();
  return IntCorners({FloorDivBound(a.int_lo(), b.int_lo()),
                     FloorDivBound(a.int_lo(), b.int_hi()),
                     FloorDivBound(a.int_hi(), b.int_lo()),
                     FloorDivBound(a.int_hi(), b.int_hi())});
}

// C semantics: the remainder takes the dividend's sign.
ValueRange RangeCMod(const ValueRange& a, const ValueRange& b) {
  if (a.IsEmpty() || b.IsEmpty()) return ValueRange::IntUnknown();
  if (b.int_lo() <= 0 && b.int_hi() >= 0) return ValueRange::IntUnknown();
  IntBound m = std::max(b.int_lo() < 0 ? -b.int_lo() : b.int_lo(),
                        b.int_hi() < 0 ? -b.int_hi() : b.int_hi());
  if (b.int_lo() == b.int_hi() && !IsInf(m) && !IsInf(a.int_lo()) &&
      !IsInf(a.int_hi()) && a.int_lo() >= 0) {
    // Locally linear within one quotient class.
    if (a.int_lo() / m == a.int_hi() / m) {
      return ValueRange::Int(a.int_lo() % m, a.int_hi() % m);
    }
  }
  IntBound limit = IsInf(m) ? kIntInf : m - 1;
  if (a.int_lo() >= 0) return ValueRange::Int(0, std::min(a.int_hi(), limit));
  if (a.int_hi() <= 0) return ValueRange::Int(std::max(a.int_lo(), -limit), 0);
  return ValueRange::Int(std::max(a.int_lo(), -limit),
                         std::min(a.int_hi(), limit));
}

// Python semantics: the remainder takes the divisor's sign.
ValueRange RangePythonMod(const ValueRange& a, const ValueRange& b) {
  if (a.IsEmpty() || b.IsEmpty()) return ValueRange::IntUnknown();
  if (b.int_lo() <= 0 && b.int_hi() >= 0) return ValueRange::IntUnknown();
  if (b.int_lo() == b.int_hi() && !IsInf(b.int_lo()) && !IsInf(a.int_lo()) &&
      !IsInf(a.int_hi())) {
    IntBound c = b.int_lo();
    IntBound q_lo = FloorDivBound(a.int_lo(), c);
    if (q_lo == FloorDivBound(a.int_hi(), c)) {
      return IntCorners({a.int_lo() - q_lo * c, a.int_hi() - q_lo * c});
    }
  }
  if (b.int_lo() > 0) {
    IntBound hi = IsInf(b.int_hi()) ? kIntInf : b.int_hi() - 1;
    if (a.int_lo() >= 0) hi = std::min(hi, a.int_hi());
    return ValueRange::Int(0, hi);
  }
  IntBound lo = IsInf(b.int_lo()) ? -kIntInf : b.int_lo() + 1;
  if (a.int_hi() <= 0) lo = std::max(lo, a.int_lo());
  return ValueRange::Int(lo, 0);
}

namespace {

IntBound PowBound(IntBound base, IntBound exp) {
  if (exp == 0) return 1;
  if (IsInf(exp)) {
    if (base == 0 || base == 1) return base;
    return kIntInf;
  }
  if (IsInf(base)) return (base < 0 && exp % 2 == 1) ? -kIntInf : kIntInf;
  IntBound r = 1;
  for (IntBound k = 0; k < exp; ++k) {
    r = MulBound(r, base);
    if (IsInf(r) || r == 0 || r == 1) break;
  }
  if (base == -1) r = (exp % 2 == 0) ? 1 : -1;
  return r;
}

ValueRange RangePow(const ValueRange& b, const ValueRange& e) {
  if (e.int_lo() < 0) return ValueRange::IntUnknown();
  if (e.int_lo() == e.int_hi()) {
    IntBound x = e.int_lo();
    IntBound lo = PowBound(b.int_lo(), x), hi = PowBound(b.int_hi(), x);
    if (b.int_lo() >= 0 || x % 2 == 1) return IntCorners({lo, hi});
    if (b.int_hi() <= 0) return IntCorners({lo, hi});
    return ValueRange::Int(0, std::max(lo, hi));
  }
  if (b.int_lo() >= 1) {
    return ValueRange::Int(PowBound(b.int_lo(), e.int_lo()),
                           PowBound(b.int_hi(), e.int_hi()));
  }
  if (b.int_lo() >= 0) {
    return ValueRange::Int(
        0, std::max<IntBound>(1, PowBound(b.int_hi(), e.int_hi())));
  }
  return ValueRange::IntUnknown();
}

ValueRange RangeTrueDiv(const ValueRange& a, const ValueRange& b) {
  ValueRange x = AsFloat(a), y = AsFloat(b);
  if (y.float_lo() <= 0 && y.float_hi() >= 0) return ValueRange::FloatUnknown();
  return FloatCorners({x.float_lo() / y.float_lo(), x.float_lo() / y.float_hi(),
                       x.float_hi() / y.float_lo(),
                       x.float_hi() / y.float_hi()});
}

ValueRange RangeToInt(const ValueRange& a, ExprKind kind) {
  if (a.type() == ExprType::kInt) return a;
  auto f = [kind](double v) {
    switch (kind) {
      case ExprKind::kTruncToInt:
        return std::trunc(v);
      case ExprKind::kFloorToInt:
        return std::floor(v);
      case ExprKind::kCeilToInt:
        return std::ceil(v);
      default:
        return std::nearbyint(v);
    }
  };
  return ValueRange::Int(FromDouble(f(a.float_lo())),
                         FromDouble(f(a.float_hi())));
}

ValueRange RangeUnary(UnaryFn fn, const ValueRange& a) {
  double lo = a.float_lo(), hi = a.float_hi();
  switch (fn) {
    case UnaryFn::kSqrt:
      if (lo < 0) return ValueRange::FloatUnknown();
      return ValueRange::Float(std::sqrt(lo), std::sqrt(hi));
    case UnaryFn::kExp:
      return ValueRange::Float(std::exp(lo), std::exp(hi));
    case UnaryFn::kLog:
    case UnaryFn::kLog2:
      if (lo <= 0) return ValueRange::FloatUnknown();
      return fn == UnaryFn::kLog
                 ? ValueRange::Float(std::log(lo), std::log(hi))
                 : ValueRange::Float(std::log2(lo), std::log2(hi));
    case UnaryFn::kTanh:
      return ValueRange::Float(std::tanh(lo), std::tanh(hi));
    case UnaryFn::kAtan:
      return ValueRange::Float(std::atan(lo), std::atan(hi));
    case UnaryFn::kSinh:
      return ValueRange::Float(std::sinh(lo), std::sinh(hi));
    case UnaryFn::kSin:
    case UnaryFn::kCos:
      return ValueRange::Float(-1, 1);
    case UnaryFn::kCosh:
      return ValueRange::Float(1, kInf);
    default:
      return ValueRange::FloatUnknown();
  }
}

ValueRange Relation(ExprKind kind, const ValueRange& a, const ValueRange& b) {
  if (a.type() == ExprType::kBool) {
    std::optional<Expr> x = a.Singleton(), y = b.Singleton();
    if (x && y) {
      bool eq = *x == *y;
      return ValueRange::Bool(kind == ExprKind::kEq ? !eq : eq,
                              kind == ExprKind::kEq ? eq : !eq);
    }
    return ValueRange::Bool(true, true);
  }
  ValueRange x = a, y = b;
  if (x.type() != y.type()) {
    x = AsFloat(x);
    y = AsFloat(y);
  }
  auto lo = [](const ValueRange& r) {
    return r.type() == ExprType::kInt ? ToDouble(r.int_lo()) : r.float_lo();
  };
  auto hi = [](const ValueRange& r) {
    return r.type() == ExprType::kInt ? ToDouble(r.int_hi()) : r.float_hi();
  };
  // Exact integer comparisons where both are ints (doubles lose precision).
  bool ints = x.type() == ExprType::kInt;
  auto less = [&](bool lo_of_x, bool lo_of_y, bool strict) {
    if (ints) {
      IntBound p = lo_of_x ? x.int_lo() : x.int_hi();
      IntBound q = lo_of_y ? y.int_lo() : y.int_hi();
      return strict ? p < q : p <= q;
    }
    double p = lo_of_x ? lo(x) : hi(x), q = lo_of_y ? lo(y) : hi(y);
    return strict ? p < q : p <= q;
  };
  switch (kind) {
    case ExprKind::kLt:  // always: x.hi < y.lo; never: x.lo >= y.hi
      return ValueRange::Bool(!less(false, true, true),
                              less(true, false, true));
    case ExprKind::kLe:
      return ValueRange::Bool(!less(false, true, false),
                              less(true, false, false));
    case ExprKind::kEq:
    case ExprKind::kNe: {
      // Disjoint: x.hi < y.lo or y.hi < x.lo. One point: both singletons.
      bool disjoint = less(false, true, true) ||
                      (ints ? y.int_hi() < x.int_lo() : hi(y) < lo(x));
      bool same_point =
          ints ? (x.int_lo() == x.int_hi() && y.int_lo() == y.int_hi() &&
                  x.int_lo() == y.int_lo() && !IsInf(x.int_lo()))
               : (lo(x) == hi(x) && lo(y) == hi(y) && lo(x) == lo(y) &&
                  !std::isinf(lo(x)));
      bool can_eq = !disjoint, can_ne = !same_point;
      return kind == ExprKind::kEq ? ValueRange::Bool(can_ne, can_eq)
                                   : ValueRange::Bool(can_eq, can_ne);
    }
    default:
      return ValueRange::Bool(true, true);
  }
}

class Bounder {
 public:
  explicit Bounder(const RangeLookup& lookup) : lookup_(lookup) {}

  ValueRange Of(Expr e) {
    if (e.is_number()) return ValueRange::Of(e);
    if (e.is_symbol()) {
      ValueRange def = DefaultRange(e);
      if (lookup_) {
        if (std::optional<ValueRange> r = lookup_(e)) return r->Intersect(def);
      }
      return def;
    }
    switch (e.kind()) {
      case ExprKind::kAdd: {
        ValueRange r = Of(e.arg(0));
        for (int i = 1; i < e.num_args(); ++i) r = RangeAdd(r, Of(e.arg(i)));
        return r;
      }
      case ExprKind::kMul: {
        ValueRange r = Of(e.arg(0));
        for (int i = 1; i < e.num_args(); ++i) r = RangeMul(r, Of(e.arg(i)));
        return r;
      }
      case ExprKind::kPowByNatural:
        return RangePow(Of(e.arg(0)), Of(e.arg(1)));
      case ExprKind::kFloatPow: {
        ValueRange b = AsFloat(Of(e.arg(0)));
        if (b.float_lo() >= 0) return ValueRange::Float(0, kInf);
        return ValueRange::FloatUnknown();
      }
      case ExprKind::kFloorDiv:
      case ExprKind::kCleanDiv:
        return RangeFloorDiv(Of(e.arg(0)), Of(e.arg(1)));
      case ExprKind::kModularIndexing:
        return RangePythonMod(RangeFloorDiv(Of(e.arg(0)), Of(e.arg(1))),
                              Of(e.arg(2)));
      case ExprKind::kMod: {
        // Defined only for p >= 0, q >= 1.
        ValueRange p = Of(e.arg(0)).Intersect(ValueRange::Int(0, kIntInf));
        ValueRange q = Of(e.arg(1)).Intersect(ValueRange::Int(1, kIntInf));
        return RangeCMod(p, q);
      }
      case ExprKind::kPythonMod:
        return RangePythonMod(Of(e.arg(0)), Of(e.arg(1)));
      case ExprKind::kMin:
      case ExprKind::kMax: {
        bool is_max = e.kind() == ExprKind::kMax;
        ValueRange r = Of(e.arg(0));
        for (int i = 1; i < e.num_args(); ++i) {
          ValueRange x = Of(e.arg(i));
          if (r.type() == ExprType::kInt && x.type() == ExprType::kInt) {
            r = is_max ? ValueRange::Int(std::max(r.int_lo(), x.int_lo()),
                                         std::max(r.int_hi(), x.int_hi()))
                       : ValueRange::Int(std::min(r.int_lo(), x.int_lo()),
                                         std::min(r.int_hi(), x.int_hi()));
          } else {
            ValueRange p = AsFloat(r), q = AsFloat(x);
            r = is_max
                    ? ValueRange::Float(std::max(p.float_lo(), q.float_lo()),
                                        std::max(p.float_hi(), q.float_hi()))
                    : ValueRange::Float(std::min(p.float_lo(), q.float_lo()),
                                        std::min(p.float_hi(), q.float_hi()));
          }
        }
        return r;
      }
      case ExprKind::kIntTrueDiv:
      case ExprKind::kFloatTrueDiv:
        return RangeTrueDiv(Of(e.arg(0)), Of(e.arg(1)));
      case ExprKind::kToFloat:
        return AsFloat(Of(e.arg(0)));
      case ExprKind::kTruncToInt:
      case ExprKind::kFloorToInt:
      case ExprKind::kCeilToInt:
      case ExprKind::kRoundToInt:
        return RangeToInt(Of(e.arg(0)), e.kind());
      case ExprKind::kOpaqueUnary:
        return RangeUnary(e.unary_fn(), AsFloat(Of(e.arg(0))));
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe:
        return Relation(e.kind(), Of(e.arg(0)), Of(e.arg(1)));
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        bool is_and = e.kind() == ExprKind::kAnd;
        bool all = true, any = false;  // of "can be is_and's absorbing value"
        for (Expr a : e.args()) {
          ValueRange r = Of(a);
          bool can_absorb = is_and ? r.can_be_false() : r.can_be_true();
          bool can_neutral = is_and ? r.can_be_true() : r.can_be_false();
          any |= can_absorb;
          all &= can_neutral;
        }
        // And: false possible if any can be false; true if all can be true.
        return is_and ? ValueRange::Bool(any, all) : ValueRange::Bool(all, any);
      }
      case ExprKind::kNot: {
        ValueRange r = Of(e.arg(0));
        return ValueRange::Bool(r.can_be_true(), r.can_be_false());
      }
      case ExprKind::kPiecewise: {
        std::optional<ValueRange> r;
        for (int i = 0; i + 1 < e.num_args(); i += 2) {
          ValueRange c = Of(e.arg(i + 1));
          if (!c.can_be_true()) continue;
          ValueRange v = Of(e.arg(i));
          r = r ? r->Union(v) : v;
          if (!c.can_be_false()) break;
        }
        return r ? *r : ValueRange::Unknown(e.type());
      }
      default:
        return ValueRange::Unknown(e.type());
    }
  }

 private:
  const RangeLookup& lookup_;
};

}  // namespace

ValueRange Bound(Expr e, const RangeLookup& lookup) {
  return Bounder(lookup).Of(e);
}

}  // namespace lathe::symbolic
