// -----------------------------------------------------------------------------
// File: cpp_emitter.h
// -----------------------------------------------------------------------------
//
// Emits a scheduled loop-IR program as one C++ translation unit: the
// scalar semantics (scalar_ops.h), the kernel C ABI (runtime/kernel_abi.h)
// and one function per kernel, `static void k<N>(B, S, F, rt, &E)`, which
// the host function (wrapper_emitter.h) calls in order. Each k<N> passes its
// buffers to its body, a function of them (`lathe_k<M>(p0, p1, ..., S, F,
// rt, E)`), and kernels that do the same work on other buffers (a model's
// repeated layers) share one body, so the C++ compiler reads it once.
// Inner loops are written for the compiler's vectorizer (`#pragma omp
// simd`, reductions with simd reduction clauses, NaN kept by a separate
// flag); outer loops run in chunks on the runtime's thread pool when the
// work is large enough (parallel_loops.h); a reduction whose outer loops
// are empty is split across the pool instead, each chunk's accumulators
// folded into the kernel's. Symbolic sizes
// are read from the `S` (and `F`) array the host function fills, so one .so
// serves every size the guards admit. Loops count in int32 when every size
// is static and every buffer holds fewer than 2^31 elements, in int64
// otherwise.
//
// Example:
//
//   std::string source = EmitCpp(program) + wrapper.text;
//   // ... compile with CompileSharedLibrary (cpp_compiler.h), dlopen, call
//   // lathe_call (wrapper_emitter.h).

#ifndef LATHE_CODEGEN_CPP_CPP_EMITTER_H_
#define LATHE_CODEGEN_CPP_CPP_EMITTER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "codegen/loop_ir.h"

namespace lathe::codegen {

// How EmitCpp writes the kernels' thread counts.
struct CppEmitOptions {
  // The autotuner's build (driver/autotune.h): every tunable kernel's
  // threads come from the library's table `lathe_tune_threads` (0: the
  // whole team; -1: a batched product's batch split over the team; -2: a
  // convolution by Winograd's algorithm) instead of Kernel::threads,
  // split_batch and winograd, and its time is added to
  // `lathe_tune_ns` (both indexed by kernel, `lathe_tune_kernels` long).
  bool tuning_table = false;
  // Set to the tunable kernels.
  TunableKernels* tunable = nullptr;
};

// EmitCpp()
//
// The program's kernels as C++ source, with the preludes they need.
std::string EmitCpp(const Program& program, const CppEmitOptions& options = {});

// CppSourcePrelude()
//
// The text every EmitCpp source begins with (the kernel ABI and the scalar
// helpers), the same for every program: what the C++ compiler precompiles
// once (CompileSharedLibrary's `prelude`).
absl::string_view CppSourcePrelude();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPP_EMITTER_H_
