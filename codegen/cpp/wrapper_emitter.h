// -----------------------------------------------------------------------------
// File: wrapper_emitter.h
// -----------------------------------------------------------------------------
//
// Emits the host side of a compiled graph as straight-line C++ over the C
// ABI of runtime/kernel_abi.h (as AOTInductor's wrapper over its shim), so
// the .so depends on no C++ ABI of lathe's and a call costs no interpreted
// step. What would be one statement per input, size or guard (a model's
// hundred weights) is a table read by one of kernel_abi.h's loops
// (lathe_tensors_match, lathe_guard_rows, lathe_guard_shapes), which the
// C++ compiler reads far faster:
//   lathe_call    checks the inputs against the graph's annotations (dtype,
//                 rank, sizes, the strides of dimensions with more than one
//                 element, one value per symbol), binds the runtime symbols,
//                 allocates each buffer before the kernel that first
//                 touches it and gives its memory back (or to the buffer
//                 that takes it over) as the memory plan says, calls the
//                 kernels EmitCpp wrote, makes the graph's outputs (sizes,
//                 strides and offsets computed from the symbols), then
//                 runs the runtime wrapper plan when given (the mutation
//                 epilogue, outputs that alias inputs or other outputs) and
//                 returns retained storages;
//   lathe_guards  the guard set as one C++ expression over the user's
//                 inputs (GuardSet::ToCpp), when guards are given;
//   lathe_call_user  when the composite wrapper is given with the plan: the
//                 user's values in and out — composite arguments checked and
//                 flattened, lathe_call, composite results rebuilt
//                 (SubclassWrapperPlan::CSource).
//
// Example:
//
//   ASSIGN_OR_RETURN(WrapperSource w,
//                    EmitWrapper(lowered, ir::InputSlots(graph)));
//   std::string source = EmitCpp(lowered.program) + w.text;

#ifndef LATHE_CODEGEN_CPP_WRAPPER_EMITTER_H_
#define LATHE_CODEGEN_CPP_WRAPPER_EMITTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aot/runtime_wrapper_plan.h"
#include "aot/subclass_wrapper_plan.h"
#include "codegen/backend.h"
#include "codegen/lowering.h"
#include "ir/interpreter.h"
#include "symbolic/guards.h"

namespace lathe::codegen {

struct WrapperOptions {
  // The device parts (the backend's host_code()); null: host memory's.
  const HostCode* host = nullptr;
  // The guards over the user's inputs, and those inputs as the guards were
  // made for them (ProduceGuards' specs); no lathe_guards without them.
  const symbolic::GuardSet* guards = nullptr;
  std::vector<symbolic::InputSpec> guard_inputs;
  // The runtime wrapper around the graph (aot/runtime_wrapper_plan.h): when
  // given, lathe_call applies it and returns the user outputs, then the new
  // value of each input a set_ or as_strided_ step rebinds.
  const aot::RuntimeWrapperPlan* plan = nullptr;
  // The composite wrapper around the plan (aot/subclass_wrapper_plan.h):
  // when given with an applied plan, lathe_call_user.
  const aot::SubclassWrapperPlan* subclass = nullptr;
};

struct WrapperSource {
  std::string text;
  // Whether some annotation is an expression lathe_call does not check
  // (one with a division): the host checks the inputs first (ir::CheckInputs).
  bool host_checks = false;
  bool has_guards = false;  // lathe_guards is defined
  // The bounds lathe_guards reads (its `bounds` argument): each range
  // guard's lo and hi, in guard order. Data, not source, so two graphs that
  // differ only in a size's range compile to one library (a compile-cache
  // hit for Dynamo's recompile past a range guard).
  std::vector<int64_t> guard_bounds;
  // Whether lathe_call applies the plan; if not (one was given, and the C
  // form cannot say it), why: the host applies it instead.
  bool plan_applied = false;
  std::string plan_error;
  // The rank of each value lathe_call returns (the caller's arrays), and,
  // when the plan is applied, the input each value after the user outputs
  // rebinds.
  std::vector<int> output_ranks;
  std::vector<int> rebound_inputs;
  // Whether lathe_call_user is defined; if not (a composite wrapper was
  // given), why.
  bool user_entry = false;
  std::string user_entry_error;
};

// EmitWrapper()
//
// lathe_call (and lathe_guards) for `lowered`, scheduled and planned, whose
// inputs are `slots` (ir::InputSlots of the graph it was lowered from).
absl::StatusOr<WrapperSource> EmitWrapper(
    const LoweredGraph& lowered, const std::vector<ir::InputSlot>& slots,
    const WrapperOptions& options = {});

// EmitGuards()
//
// lathe_guards alone: `guards` over inputs described by `specs` as one C++
// function (kernel_abi.h's LatheGuardFn), each guard in turn; `bounds`
// becomes the bounds of its range guards, which it reads from its `bounds`
// argument.
absl::StatusOr<std::string> EmitGuards(
    const symbolic::GuardSet& guards,
    const std::vector<symbolic::InputSpec>& specs,
    std::vector<int64_t>* bounds);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_WRAPPER_EMITTER_H_
