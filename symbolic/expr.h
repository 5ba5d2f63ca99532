// -----------------------------------------------------------------------------
// File: expr.h
// -----------------------------------------------------------------------------
//
// Immutable, interned (hash-consed) symbolic expressions over integers, floats
// and booleans: the vocabulary in which lathe reasons about sizes, strides,
// index expressions and guards. It follows torch.utils._sympy's semantics
// (reference/pytorch_symbolic_shapes.md §2) without SymPy.
//
// An `Expr` is a pointer-sized handle to a node that lives for the process.
// Two expressions are equal exactly when their handles are equal; hashing is
// O(1); building an expression that already exists allocates nothing.
// Constructors apply PyTorch's automatic rules (constant folding, flattening,
// like-term collection, FloorDiv/ModularIndexing/Min/Max rules), so the result
// is canonical: sums of monomials with integer coefficients, products with
// natural exponents, arguments in a deterministic order.
//
// Example:
//
//   Expr s0 = Symbol("s0", SymbolType::kInt, {.positive = true});
//   Expr e = Add(Mul(Int(2), s0), Int(4));                     // 2*s0 + 4
//   ASSIGN_OR_RETURN(Expr half, FloorDiv(e, Int(2)));          // s0 + 2
//   ToString(half);                                            // "s0 + 2"
//   ASSIGN_OR_RETURN(Value v, Evaluate(half, {{s0, Value::Int(5)}}));  // 7
//
// Division-like constructors return absl::StatusOr: division by zero and Mod
// on operands outside its domain are errors, never crashes.

#ifndef LATHE_SYMBOLIC_EXPR_H_
#define LATHE_SYMBOLIC_EXPR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace lathe::symbolic {

// The value type of an expression: Python int, float or bool.
enum class ExprType : uint8_t { kInt, kFloat, kBool };

// What an expression node is. Gt/Ge do not exist: they are built as Lt/Le
// with the operands swapped.
enum class ExprKind : uint8_t {
  // Leaves.
  kInteger,      // int64 constant
  kFloat,        // double constant (may be +-inf or nan)
  kIntInfinity,  // int_oo or -int_oo: the integer infinity, distinct from inf
  kBoolean,      // True / False
  kSymbol,       // named integer or float variable
  // Integer and float arithmetic.
  kAdd,           // sum: optional numeric constant first, then terms
  kMul,           // product: optional numeric coefficient first, then factors
  kPowByNatural,  // int ** natural (a constant exponent >= 2 inside products)
  kFloatPow,      // float ** float
  kFloorDiv,      // Python //: rounds toward -infinity
  kCleanDiv,      // a // b where b divides a exactly
  kModularIndexing,  // (a // b) % c
  kMod,              // a % b, defined only for a >= 0, b >= 1
  kPythonMod,        // Python %: the result takes the divisor's sign
  kMin,
  kMax,
  kIntTrueDiv,    // int / int -> float
  kFloatTrueDiv,  // float / float -> float
  kToFloat,       // int -> float
  kTruncToInt,    // float -> int, toward zero
  kFloorToInt,    // float -> int, toward -infinity
  kCeilToInt,     // float -> int, toward +infinity
  kRoundToInt,    // float -> int, half to even (Python round)
  kOpaqueUnary,   // sqrt, exp, log, ... of a float; folds only on constants
  // Booleans.
  kEq,
  kNe,
  kLt,
  kLe,
  kAnd,
  kOr,
  kNot,
  kPiecewise,  // ((e0, c0), (e1, c1), ...): the first e whose c holds
};

// Opaque float functions (PyTorch's OpaqueUnaryFn_*).
enum class UnaryFn : uint8_t {
  kSqrt,
  kExp,
  kLog,
  kLog2,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kTanh,
};

// The type of a symbol.
enum class SymbolType : uint8_t { kInt, kFloat };

// Assumptions a symbol carries (SymPy's positive= / nonnegative=).
struct SymbolAssumptions {
  bool positive = false;
  bool nonnegative = false;
};

struct ExprNode;  // Defined in expr.cc; reached only through Expr.

// Expr
//
// A handle to an interned expression. Cheap to copy; compare with ==.
class Expr {
 public:
  Expr() = default;  // The null expression; only valid to test with is_null.

  bool is_null() const { return node_ == nullptr; }
  ExprKind kind() const;
  ExprType type() const;
  bool is_int() const { return type() == ExprType::kInt; }
  bool is_float() const { return type() == ExprType::kFloat; }
  bool is_bool() const { return type() == ExprType::kBool; }

  // The operands, in canonical order (for kPiecewise: e0, c0, e1, c1, ...).
  absl::Span<const Expr> args() const;
  Expr arg(int i) const { return args()[i]; }
  int num_args() const { return static_cast<int>(args().size()); }

  // Leaf payloads; each is valid only for its kind.
  int64_t int_value() const;       // kInteger
  double float_value() const;      // kFloat
  bool bool_value() const;         // kBoolean
  int infinity_sign() const;       // kIntInfinity: +1 or -1
  absl::string_view name() const;  // kSymbol
  UnaryFn unary_fn() const;        // kOpaqueUnary

  // Queries answered from the node alone (SymPy-style assumptions).
  bool is_number() const;  // integer/float/infinity/boolean constant
  bool is_constant(int64_t v) const {
    return kind() == ExprKind::kInteger && int_value() == v;
  }
  bool is_true() const { return kind() == ExprKind::kBoolean && bool_value(); }
  bool is_false() const {
    return kind() == ExprKind::kBoolean && !bool_value();
  }
  bool is_symbol() const { return kind() == ExprKind::kSymbol; }
  bool is_nonnegative() const;  // provably >= 0
  bool is_positive() const;     // provably > 0
  bool has_symbols() const;     // contains at least one symbol

  // A deterministic hash (the same in every run, not pointer-based).
  uint64_t hash() const;

  friend bool operator==(Expr a, Expr b) { return a.node_ == b.node_; }
  friend bool operator!=(Expr a, Expr b) { return a.node_ != b.node_; }
  template <typename H>
  friend H AbslHashValue(H h, Expr e) {
    return H::combine(std::move(h), e.node_);
  }

 private:
  friend struct ExprAccess;
  explicit Expr(const ExprNode* node) : node_(node) {}
  const ExprNode* node_ = nullptr;
};

// Compare()
//
// The canonical total order on expressions (deterministic across runs):
// negative when a sorts before b, 0 when they are the same expression.
int Compare(Expr a, Expr b);

// ---- Leaves -----------------------------------------------------------------

// Int()
//
// The integer constant `v`.
Expr Int(int64_t v);

// Float()
//
// The float constant `v` (inf, -inf and nan allowed).
Expr Float(double v);

// IntInfinity()
//
// int_oo (sign > 0) or -int_oo (sign < 0).
Expr IntInfinity(int sign = 1);

// Bool()
//
// True or False.
Expr Bool(bool v);

// Symbol()
//
// The symbol `name` of `type` with `assumptions`. Two calls with the same
// arguments return the same expression; a different type or assumption makes
// a different symbol.
Expr Symbol(absl::string_view name, SymbolType type = SymbolType::kInt,
            SymbolAssumptions assumptions = {});

// ---- Arithmetic (int or float; mixing promotes ints with ToFloat) -----------

// Add()
//
// The canonical sum of `terms` (like terms collected, constants folded).
Expr Add(absl::Span<const Expr> terms);
Expr Add(Expr a, Expr b);

// Sub()
//
// a - b.
Expr Sub(Expr a, Expr b);

// Neg()
//
// -a.
Expr Neg(Expr a);

// Mul()
//
// The canonical product of `factors` (powers collected, a numeric coefficient
// distributed over a lone sum).
Expr Mul(absl::Span<const Expr> factors);
Expr Mul(Expr a, Expr b);

// PowByNatural()
//
// Integer power with a natural exponent; a negative constant exponent is an
// error. Overflow of constants gives int_oo.
absl::StatusOr<Expr> PowByNatural(Expr base, Expr exp);

// FloatPow()
//
// Float power (base assumed >= 0, as in PyTorch).
absl::StatusOr<Expr> FloatPow(Expr base, Expr exp);

// FloorDiv()
//
// Python floor division a // b. Error when b is 0.
absl::StatusOr<Expr> FloorDiv(Expr a, Expr b);

// CleanDiv()
//
// a // b where b is known to divide a. Error when b is 0.
absl::StatusOr<Expr> CleanDiv(Expr a, Expr b);

// CeilDiv()
//
// ceil(a / b): CleanDiv when b divides a, else FloorDiv(a + b - 1, b) for a
// positive constant b, else -FloorDiv(-a, b). Error when b is 0.
absl::StatusOr<Expr> CeilDiv(Expr a, Expr b);

// ModularIndexing()
//
// (a // b) % c. Error when b or c is 0.
absl::StatusOr<Expr> ModularIndexing(Expr a, Expr b, Expr c);

// Mod()
//
// a % b for a >= 0, b >= 1. Error for constants outside that domain.
absl::StatusOr<Expr> Mod(Expr a, Expr b);

// PythonMod()
//
// Python a % b (sign of b). Error when b is 0.
absl::StatusOr<Expr> PythonMod(Expr a, Expr b);

// Min()/Max()
//
// Flattened, folded, deduplicated minimum / maximum of at least one argument.
Expr Min(absl::Span<const Expr> args);
Expr Min(Expr a, Expr b);
Expr Max(absl::Span<const Expr> args);
Expr Max(Expr a, Expr b);

// IntTrueDiv()
//
// int / int -> float (Python's /). Error when b is the constant 0.
absl::StatusOr<Expr> IntTrueDiv(Expr a, Expr b);

// FloatTrueDiv()
//
// float / float. Never folds x / x to 1. Error when b is the constant 0.
absl::StatusOr<Expr> FloatTrueDiv(Expr a, Expr b);

// ToFloat()/TruncToInt()/FloorToInt()/CeilToInt()/RoundToInt()
//
// Conversions between int and float; they fold on constants (inf -> int_oo;
// nan is an error).
Expr ToFloat(Expr a);
absl::StatusOr<Expr> TruncToInt(Expr a);
absl::StatusOr<Expr> FloorToInt(Expr a);
absl::StatusOr<Expr> CeilToInt(Expr a);
absl::StatusOr<Expr> RoundToInt(Expr a);

// OpaqueUnary()
//
// fn(a) for a float a; folds only on constants (float64 semantics).
Expr OpaqueUnary(UnaryFn fn, Expr a);

// ---- Booleans ---------------------------------------------------------------

// Eq()/Ne()/Lt()/Le()/Gt()/Ge()
//
// Relations; they fold when decidable from the operands alone. Gt and Ge are
// Lt and Le with the operands swapped.
Expr Eq(Expr a, Expr b);
Expr Ne(Expr a, Expr b);
Expr Lt(Expr a, Expr b);
Expr Le(Expr a, Expr b);
Expr Gt(Expr a, Expr b);
Expr Ge(Expr a, Expr b);

// And()/Or()/Not()
//
// Flattened, folded, deduplicated connectives. Not of an integer relation is
// the opposite relation.
Expr And(absl::Span<const Expr> args);
Expr And(Expr a, Expr b);
Expr Or(absl::Span<const Expr> args);
Expr Or(Expr a, Expr b);
Expr Not(Expr a);

// Piecewise()
//
// The first value whose condition holds. The last condition must be True
// (error otherwise); branches with a False condition are dropped.
absl::StatusOr<Expr> Piecewise(absl::Span<const std::pair<Expr, Expr>> cases);

// Ite()
//
// Piecewise((then, cond), (otherwise, True)) without guarding on cond.
Expr Ite(Expr cond, Expr then, Expr otherwise);

// SimpleFloorDivGcd()
//
// PyTorch's simple_floordiv_gcd: the gcd of the integer coefficients of p and
// q times the factors of q found syntactically in every term of p. Cheap and
// never a polynomial gcd.
Expr SimpleFloorDivGcd(Expr p, Expr q);

// ---- Inspection -------------------------------------------------------------

// FreeSymbols()
//
// The symbols in `e`, in canonical order, without duplicates.
std::vector<Expr> FreeSymbols(Expr e);

// TypeOfSymbol()/AssumptionsOf()
//
// The type and assumptions of a symbol.
SymbolType TypeOfSymbol(Expr symbol);
SymbolAssumptions AssumptionsOf(Expr symbol);

// Substitute()
//
// `e` with every key of `replacements` replaced by its value (simultaneously),
// rebuilt through the constructors so the result is canonical. Errors only if
// a rebuilt division divides by zero.
absl::StatusOr<Expr> Substitute(
    Expr e, const absl::flat_hash_map<Expr, Expr>& replacements);

// Rebuild()
//
// An expression of `like`'s kind over new `args`, through the public
// constructors (for code that maps over operands). Leaves return `like`.
absl::StatusOr<Expr> Rebuild(Expr like, absl::Span<const Expr> args);

// InternedCount()
//
// How many distinct expressions exist (for tests and benchmarks).
int64_t InternedCount();

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_EXPR_H_
