// -----------------------------------------------------------------------------
// File: cpu_backend.h
// -----------------------------------------------------------------------------
//
// The cpu backend (codegen/backend.h): kernels as C++ loops (cpp_emitter.h),
// built with the system C++ compiler into a shared library (cpp_compiler.h);
// an artifact holds the library and its source.
//
// Example:
//
//   const Backend& cpu = CpuBackend();
//   ASSIGN_OR_RETURN(std::string kernels, cpu.EmitKernels(program));

#ifndef LATHE_CODEGEN_CPP_CPU_BACKEND_H_
#define LATHE_CODEGEN_CPP_CPU_BACKEND_H_

#include "codegen/backend.h"

namespace lathe::codegen {

// The cpu backend (one per process).
const Backend& CpuBackend();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPU_BACKEND_H_
