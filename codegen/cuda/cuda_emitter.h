// -----------------------------------------------------------------------------
// File: cuda_emitter.h
// -----------------------------------------------------------------------------
//
// Emits a scheduled loop-IR program's kernels as one CUDA C++ translation
// unit, which NVRTC builds for a GPU and the system C++ compiler builds,
// against runtime/cuda/cuda_emulation.h, for the emulated device; the
// kernels' device helpers are kernel_prelude.h. A pointwise kernel is
//
//   extern "C" __global__ void k0(const float* b0, float* b2, int64_t s0,
//                                 double f0, int64_t n)
//
// — the buffers it touches (in buffer order), every size symbol of the
// program, every float symbol, and its element count n — whose threads
// walk the flattened outer loops in a grid-stride loop (element i is the
// loop point whose innermost variable varies fastest), computing in int32
// when every index of the program fits (scalar_code.h's Int32Indexing) and
// the count leaves room for the stride, in int64 otherwise.
//
// 16-byte vector loads and stores: an access whose index steps by one with
// the innermost loop and starts each run of `width` elements on a multiple
// of it (width = 16 bytes over the widest such buffer's element) moves
// `width` elements at once, when the buffers are aligned and the innermost
// extent divides (checked in the kernel, where the scalar loop is the
// fallback); the scalar ops then run once per lane. A buffer the kernel
// both loads and stores keeps scalar accesses. Views,
// broadcasting, strides and casts are the loop IR's index arithmetic and
// scalar ops, shared with the cpu emitter (scalar_code.h). The host
// function (wrapper_emitter.h, with CudaHostCode: cuda_backend.h) launches
// kernel k of DeviceKernelNames by index with the same parameters.
//
// Reductions: a kernel with inner loops (a reduction and its epilogue:
// softmax, layer norm) is a row kernel — one block per point of its outer
// loops, its threads striding over each section's inner loops, each
// reduction accumulated per thread and then across the block in a fixed
// tree (warp shuffles, then the warps in order: deterministic, no
// atomics), so every thread holds the result for the later sections.
// Sum, prod, max/min (NaN propagates), any/all, argmax/argmin (the first
// index; NaN counts as the extreme), Welford's mean and M2 (Chan's merge).
// A scan (cumsum, cumprod) runs its section a block-wide chunk at a time:
// a block scan (warp shuffles, then the warps' totals) after the carry of
// the chunks before.
//
// Indexing by loaded values (gather, index, embedding): each index goes
// through its check, which wraps negatives where PyTorch does and, out of
// range, records the first failure in the call's check record and reads
// element 0 instead, so no access leaves its buffer; the host reads the
// record after the kernel and fails the call with the check's message.
//
// A store at loaded indices (scatter, index_put) or under a mask
// (nonzero's compaction) makes a kernel serial: one thread runs its points
// in order, as the cpu backend does, so the last write wins. Extern
// kernels (matrix products, convolutions, sort, randperm) are no device
// kernels: the host function calls the device runtime's routines
// (kernel_abi.h's LatheDeviceRuntime) between the launches; a routine it
// does not know is an error naming the kernel's graph nodes.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::string cuda, EmitCuda(program));
//   std::vector<std::string> names = DeviceKernelNames(program);  // {"k0"}

#ifndef LATHE_CODEGEN_CUDA_CUDA_EMITTER_H_
#define LATHE_CODEGEN_CUDA_CUDA_EMITTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/loop_ir.h"

namespace lathe::codegen {

// Threads per block of a pointwise kernel, and the most blocks a launch
// uses (a grid-stride loop covers the rest).
inline constexpr int kCudaBlock = 256;
inline constexpr int kCudaMaxBlocks = 1 << 16;

// EmitCuda()
//
// The program's device kernels as CUDA C++ (with the scalar prelude), or
// the error naming the first kernel it cannot write.
absl::StatusOr<std::string> EmitCuda(const Program& program);

// CudaSourcePrelude()
//
// The text every EmitCuda source begins with, the same for every program
// (what the emulated device's build precompiles once).
absl::string_view CudaSourcePrelude();

// DeviceKernelNames()
//
// The names of the program's device kernels (its loop kernels), in the
// order the host function launches them by index.
std::vector<std::string> DeviceKernelNames(const Program& program);

// DeviceKernelIndex()
//
// The index in DeviceKernelNames of loop kernel `k` (of program.kernels).
int DeviceKernelIndex(const Program& program, int k);

// DeviceKernelLaunch()
//
// How the host launches loop kernel `k`: the count it passes as n (its
// last parameter) and what sizes its grid.
struct DeviceLaunch {
  // Pointwise: the elements; a row kernel: the rows, one block each.
  symbolic::Expr n;
  // Pointwise: the elements each thread takes per step on the vector path
  // (1: none), so n / width threads cover it.
  int width = 1;
  // A row kernel: the points of its longest section, which a block's
  // threads share (null for a pointwise kernel).
  symbolic::Expr row;
  // Whether it checks indices: its parameter before n is a device record
  // of four int64 (zero before the launch) that a failing check fills with
  // its code (Program::checks index + 1), its value count (2), the index
  // given and the bound.
  bool checks = false;
  // Whether it runs on one thread (a block of one), its points in order:
  // a kernel that stores at loaded indices or under a mask.
  bool serial = false;
};
DeviceLaunch DeviceKernelLaunch(const Program& program, const Kernel& k);

// DeviceKernelBuffers()
//
// The buffers kernel `k` touches, in buffer order: its first parameters.
std::vector<int> DeviceKernelBuffers(const Kernel& k);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CUDA_CUDA_EMITTER_H_
