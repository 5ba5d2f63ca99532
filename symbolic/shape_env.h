// -----------------------------------------------------------------------------
// File: shape_env.h
// -----------------------------------------------------------------------------
//
// The ShapeEnv owns the symbols of one compilation: backed symbols (with a
// hint, the example value), unbacked ones (u0, u1, ...: data-dependent), their
// ranges, replacements, divisibility facts, recorded guards and deferred
// runtime asserts. It answers questions about symbolic expressions in PyTorch's
// three tiers (reference/pytorch_symbolic_shapes.md §1.4):
//   1. statically, from axioms, replacements and ranges: no guard;
//   2. otherwise from the hint, recording a guard that later decides whether
//      a compiled artifact may be reused;
//   3. otherwise (no hint: an unbacked symbol) a data-dependent error naming
//      the expression.
//
// Example:
//
//   ShapeEnv env;
//   Expr s0 = env.CreateSymbol(8, Source::Size(0, 0));    // s0, hint 8
//   ASSIGN_OR_RETURN(bool big, env.EvaluateBool(Gt(s0, Int(4))));  // true
//   env.guards();                                         // {4 < s0}
//   env.StaticallyKnownTrue(Ne(s0, Int(3)));              // true, no guard
//
// Not thread-safe: one ShapeEnv per compilation.

#ifndef LATHE_SYMBOLIC_SHAPE_ENV_H_
#define LATHE_SYMBOLIC_SHAPE_ENV_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {

// Where a symbol's value comes from at run time: a size, stride or storage
// offset of input tensor `input`, or the value of scalar input `input`.
struct Source {
  enum class Kind : uint8_t { kSize, kStride, kStorageOffset, kScalar };
  Kind kind = Kind::kScalar;
  int input = 0;
  int dim = 0;

  static Source Size(int input, int dim) { return {Kind::kSize, input, dim}; }
  static Source Stride(int input, int dim) {
    return {Kind::kStride, input, dim};
  }
  static Source StorageOffset(int input) {
    return {Kind::kStorageOffset, input, 0};
  }
  static Source Scalar(int input) { return {Kind::kScalar, input, 0}; }

  // "t0.size(1)", "t0.stride(0)", "t0.storage_offset()", "a2".
  std::string ToString() const;

  friend bool operator==(const Source& a, const Source& b) {
    return a.kind == b.kind && a.input == b.input && a.dim == b.dim;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Source& s) {
    return H::combine(std::move(h), s.kind, s.input, s.dim);
  }
};

// How a dimension becomes symbolic (PyTorch's DimDynamic).
enum class DimDynamic {
  kDynamic,           // always a fresh symbol
  kDuck,              // reuse the symbol of an earlier equal value
  kStatic,            // the integer itself
  kSizeLikeUnbacked,  // an unbacked, size-like symbol in [0, int_oo]
};

struct ShapeEnvSettings {
  // Sizes 0 and 1 become constants (and other symbols' ranges start at 2).
  bool specialize_zero_one = true;
  // Equal values share one symbol under DimDynamic::kDuck.
  bool duck_shape = true;
  // ExpectTrue defers even backed conditions to runtime asserts (export).
  bool prefer_deferred_runtime_asserts_over_guards = false;
  // A symbol guarded on more than this many times is specialized to its hint;
  // negative means never.
  int symbol_guard_limit_before_specialize = -1;
};

// A condition checked when the compiled code runs (for unbacked symbols).
struct RuntimeAssert {
  Expr expr;
  std::string message;
};

// IsDataDependentError()
//
// Whether `status` is the error raised when a decision needs the value of an
// unbacked symbol.
bool IsDataDependentError(const absl::Status& status);

class ShapeEnv {
 public:
  explicit ShapeEnv(ShapeEnvSettings settings = {});
  ShapeEnv(const ShapeEnv&) = delete;
  ShapeEnv& operator=(const ShapeEnv&) = delete;

  const ShapeEnvSettings& settings() const { return settings_; }

  // ---- Creating symbols ----

  // CreateSymbol()
  //
  // A size-like integer for `hint` read from `source`: a constant under
  // kStatic or 0/1 specialization, a reused symbol under duck sizing, else a
  // fresh positive symbol s<n> with range [2, int_oo] ([0, int_oo] without
  // 0/1 specialization). kSizeLikeUnbacked gives an unbacked symbol.
  Expr CreateSymbol(int64_t hint, const Source& source,
                    DimDynamic dynamic = DimDynamic::kDuck);

  // CreateScalarSymbol()
  //
  // An int scalar input (never 0/1-specialized, never duck-sized, any sign).
  Expr CreateScalarSymbol(int64_t hint, const Source& source);

  // CreateFloatSymbol()
  //
  // A backed float scalar input zf<n> with range [-oo, oo].
  Expr CreateFloatSymbol(double hint, const Source& source);

  // CreateUnbacked()
  //
  // A fresh unbacked int u<n> with range [-int_oo, int_oo].
  Expr CreateUnbacked();

  // CreateUnbackedFloat()
  //
  // A fresh unbacked float zuf<n> (a float tensor's .item()).
  Expr CreateUnbackedFloat();

  // CreateUnbackedSizeLike()
  //
  // A fresh unbacked int u<n> in [0, int_oo], marked size-like.
  Expr CreateUnbackedSizeLike();

  // DeclareSymbol()
  //
  // Adopts a symbol that already appears in a graph's annotations: with a
  // hint it is backed (sizes s<n>: range [2, int_oo] under 0/1
  // specialization, and a hint of 0 or 1 replaces the symbol by that
  // constant, as PyTorch does), without one it is unbacked. Error if the
  // symbol is already known.
  absl::Status DeclareSymbol(Expr symbol, std::optional<Value> hint,
                             const Source& source);

  // CreateSymbolicSizesStrides()
  //
  // Symbolic sizes and strides for input tensor `input` with concrete
  // `sizes`/`strides`: sizes per `dynamic`, strides expressed through sizes
  // where they equal size*stride of a faster dimension (so a contiguous
  // [s0, s1] gets strides [s1, 1]), else new symbols (constants when all
  // sizes are static). Fills `sizes_out` and `strides_out`.
  void CreateSymbolicSizesStrides(absl::Span<const int64_t> sizes,
                                  absl::Span<const int64_t> strides, int input,
                                  absl::Span<const DimDynamic> dynamic,
                                  std::vector<Expr>* sizes_out,
                                  std::vector<Expr>* strides_out);

  // ---- Facts about symbols ----

  // The hint of a backed symbol (or an unbacked one given a hint), if any.
  std::optional<Value> HintOf(Expr symbol) const;
  // Whether `symbol` is unbacked.
  bool IsUnbacked(Expr symbol) const;
  // Whether `symbol` is size-like.
  bool IsSizeLike(Expr symbol) const;
  // The current range of `symbol`.
  ValueRange RangeOf(Expr symbol) const;
  // The sources a symbol was created from (first = its binding site).
  absl::Span<const Source> SourcesOf(Expr symbol) const;
  // The backed symbols in creation order.
  const std::vector<Expr>& backed_symbols() const { return backed_; }

  // SetUnbackedHint()
  //
  // A last-resort value for an unbacked symbol (set_unbacked_var_to_val):
  // decisions that use it become runtime asserts instead of errors.
  void SetUnbackedHint(Expr symbol, int64_t value);

  // ConstrainRange()
  //
  // Narrows `symbol`'s range to [lo, hi] (intersected with what is known).
  absl::Status ConstrainRange(Expr symbol, IntBound lo, IntBound hi);

  // ---- Rewriting ----

  // Replace()
  //
  // `e` with every replacement applied (transitively).
  Expr Replace(Expr e);

  // Simplify()
  //
  // Replace(e) simplified with ranges and divisibility facts.
  Expr Simplify(Expr e);

  // Hint()
  //
  // The value of `e` at the hints; nullopt when it needs an unhinted symbol.
  std::optional<Value> Hint(Expr e);

  // ---- Deciding ----

  // MaybeEvaluateStatic()
  //
  // The value of `e` if it is the same for every value the symbols may take
  // (axioms, replacements, ranges); never adds a guard. Under
  // `size_oblivious`, size-like symbols are assumed to be >= 2.
  std::optional<Expr> MaybeEvaluateStatic(Expr e, bool size_oblivious = false);

  // MaybeEvaluateStaticWithoutAxioms()
  //
  // MaybeEvaluateStatic() from replacements and ranges alone, ignoring the
  // axioms and divisibility facts recorded guards and asserts imply (so a
  // guard is not "implied" by itself).
  std::optional<Expr> MaybeEvaluateStaticWithoutAxioms(Expr e);

  // StaticallyKnownTrue()
  //
  // Whether `cond` is provably true without a guard.
  bool StaticallyKnownTrue(Expr cond);

  // EvaluateExpr()
  //
  // The value of `e`: statically if possible, else from the hint (recording
  // a guard), else a data-dependent error naming `e`.
  absl::StatusOr<Expr> EvaluateExpr(Expr e);

  // EvaluateBool() / GuardInt() / GuardFloat()
  //
  // EvaluateExpr() for a boolean / int / float expression.
  absl::StatusOr<bool> EvaluateBool(Expr cond);
  absl::StatusOr<int64_t> GuardInt(Expr e);
  absl::StatusOr<double> GuardFloat(Expr e);

  // GuardOrFalse() / GuardOrTrue()
  //
  // Like EvaluateBool(), but where that would be a data-dependent error,
  // `false` / `true` without a guard.
  bool GuardOrFalse(Expr cond);
  bool GuardOrTrue(Expr cond);

  // GuardSizeOblivious()
  //
  // EvaluateBool() with size-like symbols assumed >= 2 (and < 2**48).
  absl::StatusOr<bool> GuardSizeOblivious(Expr cond);

  // ExpectTrue()
  //
  // Records that `cond` holds: a guard when it can be decided from hints,
  // otherwise a deferred runtime assert keyed on its latest unbacked symbol.
  // Learns replacements and ranges from it either way. Error when `cond` is
  // known to be false.
  absl::Status ExpectTrue(Expr cond, absl::string_view message = "");

  // ---- State ----

  // The recorded guards, in order.
  const std::vector<Expr>& guards() const { return guards_; }
  // Deferred runtime asserts keyed by the latest unbacked symbol they
  // mention (a null Expr key for none).
  const absl::flat_hash_map<Expr, std::vector<RuntimeAssert>>&
  deferred_runtime_asserts() const {
    return deferred_;
  }
  // The replacement of `symbol`, if any (one step).
  std::optional<Expr> ReplacementOf(Expr symbol) const;
  // Whether b | a is known.
  bool KnownDivisible(Expr a, Expr b);
  // Bumped whenever a fact changes; caches are keyed on it.
  int64_t version() const { return version_; }

 private:
  struct SymbolInfo {
    std::optional<Value> hint;
    ValueRange range;
    bool unbacked = false;
    bool size_like = false;
    int64_t unbacked_index = -1;  // allocation order of unbacked symbols
    std::vector<Source> sources;
    int guard_count = 0;
  };

  Expr NewSymbol(absl::string_view prefix, SymbolType type,
                 SymbolAssumptions assumptions, SymbolInfo info);
  void Bump() { ++version_; }
  RangeLookup Ranges(bool size_oblivious);
  Expr RangeAndDivisibilitySimplify(Expr e, bool size_oblivious,
                                    bool use_divisibility = true);
  std::optional<Expr> StaticUncached(Expr e, bool size_oblivious,
                                     bool use_axioms = true);
  std::optional<bool> DecideByShifting(Expr rel, bool size_oblivious);
  absl::StatusOr<Expr> EvaluateImpl(Expr e, std::optional<bool> fallback,
                                    bool size_oblivious);
  void RecordGuard(Expr guard);
  void AddAxioms(Expr fact);
  void LearnFrom(Expr fact);
  void RefineRanges(Expr rel);
  void TryReplacement(Expr eq);
  bool SetReplacement(Expr symbol, Expr target);
  bool HasUnhinted(Expr e);
  Expr LatestUnbacked(Expr e);
  std::string DataDependentMessage(Expr e, Expr simplified);

  ShapeEnvSettings settings_;
  absl::flat_hash_map<Expr, SymbolInfo> symbols_;
  std::vector<Expr> backed_;
  absl::flat_hash_map<int64_t, Expr> duck_;  // value -> symbol
  int next_size_ = 0, next_unbacked_ = 0, next_float_ = 0,
      next_unbacked_float_ = 0;
  absl::flat_hash_map<Expr, Expr> replacements_;
  // Known divisibility: (dividend, divisor) with CleanDiv spelled FloorDiv.
  absl::flat_hash_set<std::pair<Expr, Expr>> divisible_;
  absl::flat_hash_map<Expr, Expr> axioms_;  // canonical relation -> True/False
  // What true relations say about polynomials: q in [lo, hi].
  absl::flat_hash_map<Expr, ValueRange> poly_bounds_;
  std::vector<Expr> guards_;
  absl::flat_hash_set<Expr> guard_set_;
  absl::flat_hash_map<Expr, std::vector<RuntimeAssert>> deferred_;
  int64_t version_ = 0;
  // Caches, valid for cache_version_.
  int64_t cache_version_ = -1;
  absl::flat_hash_map<Expr, Expr> simplify_cache_;
  absl::flat_hash_map<std::pair<Expr, bool>, std::optional<Expr>> static_cache_;
};

// CanonicalRelation()
//
// An integer relation moved to one side and reduced to lowest terms
// (k <= p, p <= k or Eq(p, k) with p's leading coefficient positive and its
// coefficients coprime), so equivalent relations compare equal. Other
// expressions are returned unchanged.
Expr CanonicalRelation(Expr rel);

// TrySolve()
//
// `rel` rewritten as a relation on `symbol` alone (symbol on the left) when
// `rel` is linear in it with coefficient +-1, or a FloorDiv of such a term
// by a positive divisor; nullopt otherwise.
std::optional<Expr> TrySolve(Expr rel, Expr symbol);

// A congruence (numerator / denominator) % modulus == 0 on one symbol, as
// PyTorch's DimConstraints collects them ("(s/2)%2" is {s, 2, 2}).
struct Congruence {
  Expr numerator;
  int64_t denominator = 1;
  int64_t modulus = 1;
};

// ReduceCongruences()
//
// The one condition Eq(Mod(symbol + k, M), 0) equivalent to all
// `congruences` (each a*symbol + b over d with integers a, b), True when they
// say nothing, an error when they contradict each other or are not linear.
absl::StatusOr<Expr> ReduceCongruences(
    Expr symbol, absl::Span<const Congruence> congruences);

// Expand()
//
// Products and small powers of sums distributed into a sum of monomials
// (at most `max_terms` terms, else `e` unchanged).
Expr Expand(Expr e, int max_terms = 512);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_SHAPE_ENV_H_
