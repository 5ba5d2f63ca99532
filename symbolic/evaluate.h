// -----------------------------------------------------------------------------
// File: evaluate.h
// -----------------------------------------------------------------------------
//
// Evaluates an expression on concrete values with Python's semantics (floor
// division, sign-of-divisor modulus, int/int -> float, exact int64 checks).
// It is the reference the simplifier and printers are tested against.
//
// Example:
//
//   Expr s0 = Symbol("s0");
//   ASSIGN_OR_RETURN(Expr e, FloorDiv(Sub(s0, Int(7)), Int(2)));
//   ASSIGN_OR_RETURN(Value v, Evaluate(e, {{s0, Value::Int(0)}}));
//   v.i;  // -4, as Python's (0 - 7) // 2
//
// Errors (division by zero, Mod outside its domain, int64 overflow, a symbol
// without a value) are absl::Status, never crashes.

#ifndef LATHE_SYMBOLIC_EVALUATE_H_
#define LATHE_SYMBOLIC_EVALUATE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "symbolic/expr.h"

namespace lathe::symbolic {

// A concrete int (possibly +-int_oo), float or bool.
struct Value {
  ExprType type = ExprType::kInt;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  int inf = 0;  // for ints: +-1 when the value is +-int_oo

  static Value Int(int64_t v) { return Value{ExprType::kInt, v, 0, false, 0}; }
  static Value Float(double v) {
    return Value{ExprType::kFloat, 0, v, false, 0};
  }
  static Value Bool(bool v) { return Value{ExprType::kBool, 0, 0, v, 0}; }
  static Value IntInfinity(int sign) {
    return Value{ExprType::kInt, 0, 0, false, sign < 0 ? -1 : 1};
  }

  // Equal type and value (nan equals nan here, for tests).
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }
};

// ToString()
//
// The value as Python prints it ("3", "2.5", "True", "int_oo").
std::string ToString(const Value& v);

// Values of symbols.
using Assignment = absl::flat_hash_map<Expr, Value>;

// Evaluate()
//
// The value of `e` when each symbol takes its value in `values`.
absl::StatusOr<Value> Evaluate(Expr e, const Assignment& values);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_EVALUATE_H_
