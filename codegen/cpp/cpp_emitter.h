// -----------------------------------------------------------------------------
// File: cpp_emitter.h
// -----------------------------------------------------------------------------
//
// Emits a scheduled loop-IR program as one C++ translation unit: the
// scalar semantics (scalar_ops.h), the kernel C ABI (runtime/kernel_abi.h),
// one function per kernel and the entry point `lathe_entry`, which calls
// them in order. Inner loops are written for the compiler's vectorizer
// (`#pragma omp simd`, reductions with simd reduction clauses, NaN kept by
// a separate flag); outer loops run on OpenMP threads when the work is
// large enough (an `if` clause over the runtime sizes); a reduction whose
// outer loops are empty is split across threads instead. Symbolic sizes
// are read from the entry's `sizes` array, so one .so serves every size the
// guards admit.
//
// Example:
//
//   std::string source = EmitCpp(program);
//   // ... compile with CompileSharedLibrary (cpp_compiler.h), dlopen, call
//   // lathe_entry(buffers, sizes, floats, lathe::KernelRuntime()).

#ifndef LATHE_CODEGEN_CPP_CPP_EMITTER_H_
#define LATHE_CODEGEN_CPP_CPP_EMITTER_H_

#include <string>

#include "codegen/loop_ir.h"

namespace lathe::codegen {

// EmitCpp()
//
// The program as C++ source defining `extern "C" int lathe_entry(...)`.
std::string EmitCpp(const Program& program);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPP_EMITTER_H_
