// -----------------------------------------------------------------------------
// File: guards.h
// -----------------------------------------------------------------------------
//
// The guards that decide whether a compiled function may be reused for new
// inputs. ProduceGuards() turns a ShapeEnv's facts into a GuardSet over the
// inputs' sizes, strides, storage offsets and scalar values:
//   1. input equalities: each symbol is bound at its first source; every
//      other source must equal its (replaced) expression — this encodes duck
//      sizing, replacements and static dimensions;
//   2. recorded guards not already implied by ranges and replacements,
//      deduplicated;
//   3. non-trivial ranges (how 0/1 specialization is checked: 2 <= size);
//   4. NaN checks for float scalars.
// A GuardSet evaluates on concrete inputs without allocating, names the guard
// that failed, and prints as readable text and as one C++ boolean expression.
//
// Example:
//
//   ASSIGN_OR_RETURN(GuardSet guards, ProduceGuards(env, specs));
//   int64_t sizes[] = {8, 16}, strides[] = {16, 1};
//   GuardInput in[] = {GuardInput::Tensor(sizes, strides, 0)};
//   int failed = -1;
//   if (!guards.Check(in, &failed)) Recompile(guards.Describe(failed));

#ifndef LATHE_SYMBOLIC_GUARDS_H_
#define LATHE_SYMBOLIC_GUARDS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {

// The symbolic description of one input, as the ShapeEnv saw it.
struct InputSpec {
  // kNone: an input the graph never reads (a None, or a pytree leaf baked
  // into the graph): no guard on it, whatever it is.
  enum class Kind : uint8_t { kTensor, kInt, kFloat, kBool, kNone };
  Kind kind = Kind::kTensor;
  std::vector<Expr> sizes, strides;  // tensors
  Expr storage_offset = Int(0);      // tensors
  // A tensor whose storage offset nothing reads: no guard on it (compiled
  // code addresses an input from its first element, as Inductor's does).
  bool any_storage_offset = false;
  Expr value;  // scalars

  static InputSpec Tensor(std::vector<Expr> sizes, std::vector<Expr> strides,
                          Expr storage_offset = Int(0));
  // An int, float or bool symbol or constant (the kind follows its type).
  static InputSpec Scalar(Expr value);
  static InputSpec None();
};

// One concrete input, viewed without copying.
struct GuardInput {
  InputSpec::Kind kind = InputSpec::Kind::kTensor;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t ndim = 0;
  int64_t storage_offset = 0;
  int64_t int_value = 0;  // ints, and bools as 0 or 1
  double float_value = 0;

  static GuardInput Tensor(absl::Span<const int64_t> sizes,
                           absl::Span<const int64_t> strides,
                           int64_t storage_offset = 0);
  static GuardInput Int(int64_t v);
  static GuardInput Float(double v);
  static GuardInput Bool(bool v);
  static GuardInput None();
};

class GuardSet {
 public:
  GuardSet() = default;

  // Check()
  //
  // Whether every guard holds for `inputs`; on failure, `failed` (if given)
  // receives the index of the first failing guard, or stays -1 when the
  // inputs' number, kinds or tensor ranks are not the ones the guards were
  // made for (as the compiled lathe_guards answers; an input of kind kNone
  // may be anything). Allocates nothing.
  bool Check(absl::Span<const GuardInput> inputs, int* failed = nullptr) const;

  // The number of guards (the index space of Check's `failed`).
  int size() const { return static_cast<int>(guards_.size()); }
  // Guard `i` as readable text ("t1.size(0) == t0.size(0)").
  std::string Describe(int i) const;
  // Every guard, one per line.
  std::string ToString() const;
  // All guards as one C++ boolean expression; `source_name` spells a source
  // (default: t0_size_1, t0_stride_0, t0_storage_offset, a2).
  std::string ToCpp(
      const std::function<std::string(const Source&)>& source_name = {}) const;
  // Guard `i` alone as a C++ boolean expression, spelled as ToCpp spells it.
  std::string GuardCpp(
      int i,
      const std::function<std::string(const Source&)>& source_name = {}) const;
  // The guards as expressions over symbols bound at sources.
  const std::vector<Expr>& exprs() const { return exprs_; }
  // Guard `i` as (source, value) when it says `source == value` for a
  // constant value, else nullopt.
  std::optional<std::pair<Source, int64_t>> ConstantGuard(int i) const;
  // Guard `i` as (source, lo, hi) when it says `lo <= source <= hi` for an
  // int symbol bound at `source` (a side without a bound is INT64_MIN or
  // INT64_MAX), else nullopt.
  std::optional<std::tuple<Source, int64_t, int64_t>> RangeGuard(int i) const;

 private:
  friend absl::StatusOr<GuardSet> ProduceGuards(
      ShapeEnv& env, absl::Span<const InputSpec> inputs);

  // One instruction of a post-order program over a value stack.
  struct Instr {
    uint8_t op;
    uint8_t type;    // ExprType of the result
    uint16_t count;  // operands for n-ary ops
    int32_t index;   // slot or unary function
    int64_t i;
    double f;
  };
  enum class Fast : uint8_t {
    kSourceEqConst,  // source == i
    kSourceEqSlot,   // source == slot
    kSlotInRange,    // lo <= slot <= hi (ints)
    kSlotNotNan,     // float slot is not nan
    kProgram,        // anything else
  };
  struct Guard {
    Fast fast;
    Source source;
    int32_t slot = 0;
    int64_t lo = 0, hi = 0;
    int32_t begin = 0, end = 0;  // program range in code_
  };

  bool Read(const GuardInput& in, const Source& s, int64_t* v) const;
  bool Run(const Guard& g, const int64_t* islots, const double* fslots) const;

  std::vector<Source> slot_sources_;  // symbol slot -> binding source
  std::vector<uint8_t> slot_is_float_;
  std::vector<Expr> slot_symbols_;
  std::vector<Guard> guards_;
  std::vector<Instr> code_;
  std::vector<Expr> exprs_;                    // guard i as an expression
  absl::flat_hash_map<Expr, Source> display_;  // symbol -> source it prints as
  // Each input's kind and, for tensors, rank, as the guards were made for.
  std::vector<std::pair<InputSpec::Kind, int64_t>> input_shapes_;
};

// The most symbols and the deepest program a GuardSet supports (Check uses
// fixed-size stack buffers).
inline constexpr int kMaxGuardSlots = 256;
inline constexpr int kMaxGuardStack = 64;

// ProduceGuards()
//
// The guards for `inputs` (input k is `inputs[k]`) from `env`'s facts.
absl::StatusOr<GuardSet> ProduceGuards(ShapeEnv& env,
                                       absl::Span<const InputSpec> inputs);

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_GUARDS_H_
