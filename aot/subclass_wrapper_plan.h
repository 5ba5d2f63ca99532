// -----------------------------------------------------------------------------
// File: subclass_wrapper_plan.h
// -----------------------------------------------------------------------------
//
// The wrapper around a compiled function whose user-facing arguments or
// results are composite tensors (runtime/composite.h; reference §1.6,
// PyTorch's codegen'd subclass wrapper). Decided once from each argument's
// and result's CompositeLayout (runtime/composite_layout.h):
//   unwrap   each argument in order: a plain one is passed on; a frozen one
//            becomes an empty slot; a composite one is type-checked
//            (nested values too) and its inner tensors appended in flatten
//            order (nested: depth first), then its symbolic outer sizes and
//            strides as int slots; arguments past the declared ones
//            (an RNG seed and offset, ...) are forwarded as they are;
//   rewrap   each result from consecutive dense slots: a plain one is taken
//            as is; a composite one is rebuilt from its inner values (nested:
//            inner first) with the outer sizes and strides of its first inner
//            value; the slot count is checked.
// Running it is a fixed list of steps; CppSource() prints the same steps as
// straight-line C++.
//
// Example:
//
//   CompositeLayout pair = CompositeLayout::Of(FindCompositeType("pair"),
//       {CompositeLayout::Plain(), CompositeLayout::Plain()});
//   ASSIGN_OR_RETURN(SubclassWrapperPlan plan,
//                    SubclassWrapperPlan::Build({pair}, {pair}));
//   ASSIGN_OR_RETURN(std::vector<Operand> dense, plan.Unwrap(args));
//   ... run the compiled function on `dense` ...
//   ASSIGN_OR_RETURN(std::vector<Operand> results, plan.Rewrap(dense_outs));

#ifndef LATHE_AOT_SUBCLASS_WRAPPER_PLAN_H_
#define LATHE_AOT_SUBCLASS_WRAPPER_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/composite.h"
#include "runtime/composite_layout.h"

namespace lathe::aot {

class SubclassWrapperPlan {
 public:
  // Build()
  //
  // The plan for these argument and result layouts; an error for a
  // malformed layout (a composite whose inner count differs from its
  // type's).
  static absl::StatusOr<SubclassWrapperPlan> Build(
      std::vector<CompositeLayout> arguments,
      std::vector<CompositeLayout> results);

  // Unwrap()
  //
  // The dense arguments for `args`; an error naming the argument when one
  // is missing or has the wrong composite type.
  absl::StatusOr<std::vector<Operand>> Unwrap(
      absl::Span<const Operand> args) const;

  // Rewrap()
  //
  // The user-facing results from the compiled function's `dense` results
  // (moved into them); an error when their count or an inner value does
  // not fit.
  absl::StatusOr<std::vector<Operand>> Rewrap(std::vector<Operand> dense) const;

  // CppSource()
  //
  // Unwrap and Rewrap as straight-line C++ (runtime/composite.h and
  // status_macros.h): `absl::Status NAME_unwrap(absl::Span<const
  // lathe::Operand> args, std::vector<lathe::Operand>* out)` and
  // `absl::Status NAME_rewrap(absl::Span<lathe::Operand> dense,
  // std::vector<lathe::Operand>* out)` (which moves from `dense`).
  std::string CppSource(const std::string& name = "lathe_subclass") const;

  // CSource()
  //
  // Unwrap and Rewrap as straight-line C over the kernel ABI's LatheValue
  // (runtime/kernel_abi.h), for generated code: `static int
  // NAME_unwrap(const LatheValue* args, int64_t num_args, LatheValue*
  // dense, int64_t num_dense)` (0, or LATHE_CALL_BAD_INPUTS for a missing
  // argument or a composite of another type), `static int
  // NAME_shaped(const LatheValue* results, int64_t n)` (whether the caller
  // made the result trees the layouts say) and `static void
  // NAME_rewrap(LatheValue* dense, LatheValue* results)` (moves from
  // `dense`). What Rewrap checks with the type's own rule is the host's.
  std::string CSource(const std::string& name = "lathe_subclass") const;

  // The layouts the plan was built for.
  const std::vector<CompositeLayout>& argument_layouts() const {
    return arguments_;
  }
  const std::vector<CompositeLayout>& result_layouts() const {
    return results_;
  }

  int num_dense_arguments() const { return num_dense_args_; }
  int num_dense_results() const { return num_dense_results_; }

 private:
  // One unwrap step: push args[arg] followed through `path` (inner indices),
  // after checking the types on the way; or an empty slot, or an outer
  // size/stride of that value.
  struct Take {
    enum class Kind { kValue, kEmpty, kSize, kStride } kind = Kind::kValue;
    int arg = 0;
    std::vector<int> path;
    int dim = 0;
  };
  // One type check: args[arg] through `path` is a composite of `type`.
  struct Check {
    int arg = 0;
    std::vector<int> path;
    const CompositeType* type = nullptr;
  };
  // One rebuild step (postorder): make a composite of `type` from the last
  // `arity` values built, or take the next dense slot.
  struct Make {
    const CompositeType* type = nullptr;  // null: take a slot
    int arity = 0;
  };

  std::vector<CompositeLayout> arguments_, results_;
  std::vector<Check> checks_;
  std::vector<Take> takes_;
  std::vector<std::vector<Make>> builds_;  // per result
  int num_dense_args_ = 0, num_dense_results_ = 0;
};

}  // namespace lathe::aot

#endif  // LATHE_AOT_SUBCLASS_WRAPPER_PLAN_H_
