#include "symbolic/evaluate.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/int_math.h"

namespace lathe::symbolic {

bool operator==(const Value& a, const Value& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case ExprType::kInt:
      return a.inf == b.inf && (a.inf != 0 || a.i == b.i);
    case ExprType::kFloat:
      return (std::isnan(a.f) && std::isnan(b.f)) || a.f == b.f;
    case ExprType::kBool:
      return a.b == b.b;
  }
  return false;
}

std::string ToString(const Value& v) {
  switch (v.type) {
    case ExprType::kInt:
      if (v.inf != 0) return v.inf > 0 ? "int_oo" : "-int_oo";
      return absl::StrCat(v.i);
    case ExprType::kFloat:
      return absl::StrFormat("%.17g", v.f);
    case ExprType::kBool:
      return v.b ? "True" : "False";
  }
  return "?";
}

namespace {

absl::Status Overflow(absl::string_view op) {
  return absl::OutOfRangeError(
      absl::StrCat("integer overflow evaluating ", op));
}

absl::Status Undefined(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

double AsDouble(const Value& v) {
  if (v.type == ExprType::kFloat) return v.f;
  if (v.inf != 0) return v.inf * std::numeric_limits<double>::infinity();
  return static_cast<double>(v.i);
}

// The int of a finite int value, or an error naming `op`.
absl::StatusOr<int64_t> Finite(const Value& v, absl::string_view op) {
  if (v.type != ExprType::kInt) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " expects an integer operand"));
  }
  if (v.inf != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " of an infinite integer is undefined"));
  }
  return v.i;
}

// -1, 0, 1, or 2 when unordered (nan).
int Order(const Value& a, const Value& b) {
  if (a.type == ExprType::kBool) return a.b == b.b ? 0 : (a.b ? 1 : -1);
  if (a.type == ExprType::kInt && b.type == ExprType::kInt) {
    if (a.inf != 0 || b.inf != 0) {
      int x = a.inf, y = b.inf;
      if (x == y) return 0;
      return x < y ? -1 : 1;
    }
    return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  }
  double x = AsDouble(a), y = AsDouble(b);
  if (std::isnan(x) || std::isnan(y)) return 2;
  return x < y ? -1 : (x > y ? 1 : 0);
}

absl::StatusOr<Value> ToIntValue(double v, ExprKind kind) {
  if (std::isnan(v)) return Undefined("cannot convert float NaN to integer");
  if (std::isinf(v)) return Value::IntInfinity(v > 0 ? 1 : -1);
  double r = kind == ExprKind::kTruncToInt   ? std::trunc(v)
             : kind == ExprKind::kFloorToInt ? std::floor(v)
             : kind == ExprKind::kCeilToInt  ? std::ceil(v)
                                             : std::nearbyint(v);
  if (r >= 9.2233720368547758e18 || r < -9.2233720368547758e18) {
    return Overflow("a float-to-int conversion");
  }
  return Value::Int(static_cast<int64_t>(r));
}

class Evaluator {
 public:
  explicit Evaluator(const Assignment& values) : values_(values) {}

  absl::StatusOr<Value> Eval(Expr e) {
    switch (e.kind()) {
      case ExprKind::kInteger:
        return Value::Int(e.int_value());
      case ExprKind::kFloat:
        return Value::Float(e.float_value());
      case ExprKind::kIntInfinity:
        return Value::IntInfinity(e.infinity_sign());
      case ExprKind::kBoolean:
        return Value::Bool(e.bool_value());
      case ExprKind::kSymbol: {
        auto it = values_.find(e);
        if (it == values_.end()) {
          return absl::NotFoundError(
              absl::StrCat("no value for symbol ", e.name()));
        }
        ExprType want = TypeOfSymbol(e) == SymbolType::kInt ? ExprType::kInt
                                                            : ExprType::kFloat;
        if (it->second.type != want) {
          return absl::InvalidArgumentError(
              absl::StrCat("symbol ", e.name(), " is ",
                           want == ExprType::kInt ? "an int" : "a float",
                           " but was given ", ToString(it->second)));
        }
        return it->second;
      }
      case ExprKind::kAdd:
      case ExprKind::kMul:
        return Fold(e);
      case ExprKind::kPowByNatural: {
        ASSIGN_OR_RETURN(Value bv, Eval(e.arg(0)));
        ASSIGN_OR_RETURN(Value ev, Eval(e.arg(1)));
        ASSIGN_OR_RETURN(int64_t b, Finite(bv, "PowByNatural"));
        ASSIGN_OR_RETURN(int64_t x, Finite(ev, "PowByNatural"));
        if (x < 0) return Undefined("PowByNatural with a negative exponent");
        int64_t r = 1;
        for (int64_t k = 0; k < x; ++k) {
          if (__builtin_mul_overflow(r, b, &r)) return Overflow("PowByNatural");
          if (r == 0 || (r == 1 && b == 1)) break;
        }
        return Value::Int(r);
      }
      case ExprKind::kFloatPow: {
        ASSIGN_OR_RETURN(Value b, Eval(e.arg(0)));
        ASSIGN_OR_RETURN(Value x, Eval(e.arg(1)));
        if (AsDouble(b) == 0 && AsDouble(x) < 0) {
          return Undefined("0.0 cannot be raised to a negative power");
        }
        return Value::Float(std::pow(AsDouble(b), AsDouble(x)));
      }
      case ExprKind::kFloorDiv:
      case ExprKind::kCleanDiv: {
        ASSIGN_OR_RETURN(int64_t a, EvalInt(e.arg(0), "FloorDiv"));
        ASSIGN_OR_RETURN(int64_t b, EvalInt(e.arg(1), "FloorDiv"));
        if (b == 0) return Undefined("division by zero in FloorDiv");
        if (a == std::numeric_limits<int64_t>::min() && b == -1)
          return Overflow("FloorDiv");
        return Value::Int(PyFloorDiv(a, b));
      }
      case ExprKind::kModularIndexing: {
        ASSIGN_OR_RETURN(int64_t a, EvalInt(e.arg(0), "ModularIndexing"));
        ASSIGN_OR_RETURN(int64_t b, EvalInt(e.arg(1), "ModularIndexing"));
        ASSIGN_OR_RETURN(int64_t c, EvalInt(e.arg(2), "ModularIndexing"));
        if (b == 0 || c == 0) {
          return Undefined("division by zero in ModularIndexing");
        }
        if (a == std::numeric_limits<int64_t>::min() && b == -1)
          return Overflow("ModularIndexing");
        return Value::Int(PyMod(PyFloorDiv(a, b), c));
      }
      case ExprKind::kMod: {
        ASSIGN_OR_RETURN(int64_t a, EvalInt(e.arg(0), "Mod"));
        ASSIGN_OR_RETURN(int64_t b, EvalInt(e.arg(1), "Mod"));
        if (a < 0 || b < 1) {
          return Undefined(absl::StrCat(
              "Mod is defined only for p >= 0 and q >= 1, got Mod(", a, ", ", b,
              ")"));
        }
        return Value::Int(a % b);
      }
      case ExprKind::kPythonMod: {
        ASSIGN_OR_RETURN(int64_t a, EvalInt(e.arg(0), "PythonMod"));
        ASSIGN_OR_RETURN(int64_t b, EvalInt(e.arg(1), "PythonMod"));
        if (b == 0) return Undefined("modulo by zero in PythonMod");
        if (b == -1) return Value::Int(0);
        return Value::Int(PyMod(a, b));
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        bool is_max = e.kind() == ExprKind::kMax;
        ASSIGN_OR_RETURN(Value best, Eval(e.arg(0)));
        for (int k = 1; k < e.num_args(); ++k) {
          ASSIGN_OR_RETURN(Value v, Eval(e.arg(k)));
          int o = Order(v, best);
          if (o == 2) {
            best = Value::Float(std::numeric_limits<double>::quiet_NaN());
          } else if (is_max ? o > 0 : o < 0) {
            best = v;
          }
        }
        return best;
      }
      case ExprKind::kIntTrueDiv:
      case ExprKind::kFloatTrueDiv: {
        ASSIGN_OR_RETURN(Value a, Eval(e.arg(0)));
        ASSIGN_OR_RETURN(Value b, Eval(e.arg(1)));
        if (AsDouble(b) == 0) return Undefined("division by zero");
        return Value::Float(AsDouble(a) / AsDouble(b));
      }
      case ExprKind::kToFloat: {
        ASSIGN_OR_RETURN(Value a, Eval(e.arg(0)));
        return Value::Float(AsDouble(a));
      }
      case ExprKind::kTruncToInt:
      case ExprKind::kFloorToInt:
      case ExprKind::kCeilToInt:
      case ExprKind::kRoundToInt: {
        ASSIGN_OR_RETURN(Value a, Eval(e.arg(0)));
        return ToIntValue(AsDouble(a), e.kind());
      }
      case ExprKind::kOpaqueUnary: {
        ASSIGN_OR_RETURN(Value a, Eval(e.arg(0)));
        double x = AsDouble(a);
        switch (e.unary_fn()) {
          case UnaryFn::kSqrt:
            return Value::Float(std::sqrt(x));
          case UnaryFn::kExp:
            return Value::Float(std::exp(x));
          case UnaryFn::kLog:
            return Value::Float(std::log(x));
          case UnaryFn::kLog2:
            return Value::Float(std::log2(x));
          case UnaryFn::kSin:
            return Value::Float(std::sin(x));
          case UnaryFn::kCos:
            return Value::Float(std::cos(x));
          case UnaryFn::kTan:
            return Value::Float(std::tan(x));
          case UnaryFn::kAsin:
            return Value::Float(std::asin(x));
          case UnaryFn::kAcos:
            return Value::Float(std::acos(x));
          case UnaryFn::kAtan:
            return Value::Float(std::atan(x));
          case UnaryFn::kSinh:
            return Value::Float(std::sinh(x));
          case UnaryFn::kCosh:
            return Value::Float(std::cosh(x));
          case UnaryFn::kTanh:
            return Value::Float(std::tanh(x));
        }
        return Undefined("unknown function");
      }
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe: {
        ASSIGN_OR_RETURN(Value a, Eval(e.arg(0)));
        ASSIGN_OR_RETURN(Value b, Eval(e.arg(1)));
        int o = Order(a, b);
        switch (e.kind()) {
          case ExprKind::kEq:
            return Value::Bool(o == 0);
          case ExprKind::kNe:
            return Value::Bool(o != 0);
          case ExprKind::kLt:
            return Value::Bool(o == -1);
          default:
            return Value::Bool(o == -1 || o == 0);
        }
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        bool is_and = e.kind() == ExprKind::kAnd;
        for (Expr a : e.args()) {
          ASSIGN_OR_RETURN(Value v, Eval(a));
          if (v.b != is_and) return Value::Bool(!is_and);
        }
        return Value::Bool(is_and);
      }
      case ExprKind::kNot: {
        ASSIGN_OR_RETURN(Value v, Eval(e.arg(0)));
        return Value::Bool(!v.b);
      }
      case ExprKind::kPiecewise: {
        for (int k = 0; k + 1 < e.num_args(); k += 2) {
          ASSIGN_OR_RETURN(Value c, Eval(e.arg(k + 1)));
          if (c.b) return Eval(e.arg(k));
        }
        return Undefined("no Piecewise condition holds");
      }
    }
    return absl::InternalError("unknown expression kind");
  }

 private:
  absl::StatusOr<int64_t> EvalInt(Expr e, absl::string_view op) {
    ASSIGN_OR_RETURN(Value v, Eval(e));
    return Finite(v, op);
  }

  // Sums and products; ints are exact (overflow is an error), int_oo
  // absorbs finite values.
  absl::StatusOr<Value> Fold(Expr e) {
    bool is_add = e.kind() == ExprKind::kAdd;
    const char* op = is_add ? "Add" : "Mul";
    if (e.is_float()) {
      double acc = is_add ? 0 : 1;
      for (Expr a : e.args()) {
        ASSIGN_OR_RETURN(Value v, Eval(a));
        acc = is_add ? acc + AsDouble(v) : acc * AsDouble(v);
      }
      return Value::Float(acc);
    }
    std::vector<Value> values;
    for (Expr a : e.args()) {
      ASSIGN_OR_RETURN(Value v, Eval(a));
      values.push_back(v);
    }
    if (is_add) {
      int inf = 0;
      int64_t acc = 0;
      for (const Value& v : values) {
        if (v.inf != 0) {
          if (inf != 0 && inf != v.inf) {
            return Undefined("int_oo - int_oo is undefined");
          }
          inf = v.inf;
        } else if (__builtin_add_overflow(acc, v.i, &acc)) {
          if (inf == 0) return Overflow(op);
        }
      }
      return inf != 0 ? Value::IntInfinity(inf) : Value::Int(acc);
    }
    // Products: 0 * int_oo = 0 (as ValueRanges' safe mul); otherwise the
    // sign of all factors decides the infinity.
    bool any_inf = false, zero = false;
    int sign = 1;
    for (const Value& v : values) {
      any_inf |= v.inf != 0;
      zero |= v.inf == 0 && v.i == 0;
      sign *= v.inf != 0 ? v.inf : (v.i < 0 ? -1 : 1);
    }
    if (zero) return Value::Int(0);
    if (any_inf) return Value::IntInfinity(sign);
    int64_t acc = 1;
    for (const Value& v : values) {
      if (__builtin_mul_overflow(acc, v.i, &acc)) return Overflow(op);
    }
    return Value::Int(acc);
  }

  const Assignment& values_;
};

}  // namespace

absl::StatusOr<Value> Evaluate(Expr e, const Assignment& values) {
  return Evaluator(values).Eval(e);
}

}  // namespace lathe::symbolic
