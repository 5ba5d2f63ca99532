// -----------------------------------------------------------------------------
// File: kernel_runtime.h
// -----------------------------------------------------------------------------
//
// The runtime side of the kernel C ABI (kernel_abi.h): the routines
// generated code calls (matrix products, convolutions, storage allocation
// with the host's memory limit and block cache), and the ABI's text for
// generated source to embed.
//
// Example:
//
//   const LatheKernelRuntime* rt = lathe::KernelRuntime();
//   call(inputs, 2, outputs, 1, rt);   // a compiled graph's lathe_call
//   std::string src = std::string(lathe::KernelAbiSource());

#ifndef LATHE_RUNTIME_KERNEL_RUNTIME_H_
#define LATHE_RUNTIME_KERNEL_RUNTIME_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/kernel_abi.h"
#include "runtime/tensor.h"

namespace lathe {

// The seed of a call that names none: the interpreter's default generator
// (ir/random.h), so compiled and interpreted runs draw the same numbers.
inline constexpr uint64_t kDefaultSeed = 0x6c617468u;  // "lath"

// KernelRuntime()
//
// The routines of this build, for every compiled graph (their seed is
// kDefaultSeed).
const LatheKernelRuntime* KernelRuntime();

// SeededKernelRuntime()
//
// KernelRuntime()'s routines with `seed` for one call's random ops, and
// this thread's slots for the values a failing check reports (emptied).
LatheKernelRuntime SeededKernelRuntime(uint64_t seed);

// TakeCheckValues()
//
// The values the last call made on this thread with SeededKernelRuntime()
// reported for its failed check (none when it reported none), and forgets
// them.
std::vector<int64_t> TakeCheckValues();

// TakeAllocError()
//
// Why the last allocation generated code asked for on this thread failed
// (the memory limit's message, naming the bytes), and forgets it; OK when
// none failed since the last call.
absl::Status TakeAllocError();

// SetAllocError() / SetDeviceError()
//
// Records why an allocation for generated code (a device's: TakeAllocError
// returns it) or a device's launch or copy (TakeDeviceError) failed on
// this thread.
void SetAllocError(absl::Status error);
void SetDeviceError(absl::Status error);

// TakeDeviceError()
//
// Why the last launch or copy a device refused on this thread failed (the
// driver's call and words), and forgets it; OK when none did.
absl::Status TakeDeviceError();

// SgemmByPrimitives()
//
// The product KernelRuntime()->sgemm computes (c = a @ b per batch, f32,
// element strides), in pieces on the pool, row panels down to 16 rows,
// each by oneDNN's matmul primitive for its geometry (matmul_primitive.h;
// sgemm where one declines, Eigen for layouts BLAS cannot express).
// oneDNN's sgemm makes all of its kernels at a process's first product,
// about 21 ms on tools/bench/README.md's machine; oneDNN 2.6's brgemm
// matmul (AVX-512 CPUs) is made for its geometry in well under a
// millisecond. Where the library takes its gemm-based matmul instead
// (other CPUs), or declines, the first product still pays for sgemm's
// kernels. For a process's first calls (driver/first_tier.h), which run few
// products of few geometries; each geometry's primitive is kept for the
// process. Sums may round otherwise than sgemm's.
void SgemmByPrimitives(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const float* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

// TensorOfValue()
//
// A tensor LatheValue holding a storage handle as the Tensor it views (the
// storage shared); an error for any other value.
absl::StatusOr<Tensor> TensorOfValue(const LatheValue& v);

// KernelAbiSource()
//
// kernel_abi.h's text, which generated source embeds.
absl::string_view KernelAbiSource();

}  // namespace lathe

#endif  // LATHE_RUNTIME_KERNEL_RUNTIME_H_
