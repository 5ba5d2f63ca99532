// -----------------------------------------------------------------------------
// File: wrapper_emitter.h
// -----------------------------------------------------------------------------
//
// Emits the host side of a compiled graph as straight-line C++ over the C
// ABI of runtime/kernel_abi.h (as AOTInductor's wrapper over its shim), so
// the .so depends on no C++ ABI of lathe's and a call costs no interpreted
// step:
//   lathe_call    checks the inputs against the graph's annotations (dtype,
//                 rank, sizes, the strides of dimensions with more than one
//                 element, one value per symbol), binds the runtime symbols,
//                 allocates each buffer before the kernel that first
//                 touches it and gives its memory back (or to the buffer
//                 that takes it over) as the memory plan says, calls the
//                 kernels EmitCpp wrote, and makes the outputs: retained
//                 storages with sizes, strides and offsets computed from
//                 the symbols;
//   lathe_guards  the guard set as one C++ expression over the user's
//                 inputs (GuardSet::ToCpp), when guards are given.
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
#include "codegen/lowering.h"
#include "ir/interpreter.h"
#include "symbolic/guards.h"

namespace lathe::codegen {

struct WrapperOptions {
  // The guards over the user's inputs, and those inputs as the guards were
  // made for them (ProduceGuards' specs); no lathe_guards without them.
  const symbolic::GuardSet* guards = nullptr;
  std::vector<symbolic::InputSpec> guard_inputs;
};

struct WrapperSource {
  std::string text;
  // Whether some annotation is an expression lathe_call does not check
  // (one with a division): the host checks the inputs first (ir::CheckInputs).
  bool host_checks = false;
  bool has_guards = false;  // lathe_guards is defined
};

// EmitWrapper()
//
// lathe_call (and lathe_guards) for `lowered`, scheduled and planned, whose
// inputs are `slots` (ir::InputSlots of the graph it was lowered from).
absl::StatusOr<WrapperSource> EmitWrapper(
    const LoweredGraph& lowered, const std::vector<ir::InputSlot>& slots,
    const WrapperOptions& options = {});

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_WRAPPER_EMITTER_H_
