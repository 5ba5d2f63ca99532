// -----------------------------------------------------------------------------
// File: emulated_driver.h
// -----------------------------------------------------------------------------
//
// The emulated CUDA device: the driver table (driver_api.h) filled with
// functions that run on the host, so every line of lathe's CUDA path runs
// on a machine without a GPU (LATHE_CUDA_DEVICE=emulated), as Triton's
// interpreter mode runs Triton kernels.
//
//   - Device memory is host memory with guard zones: each buffer ends
//     where an inaccessible page begins (and one lies before it), so a
//     kernel that reads or writes past it stops with an error naming the
//     kernel and the buffer; bytes between the buffer and its page, and
//     before it, are checked after every kernel.
//   - A module is a host shared library (an ELF image, loaded from its
//     bytes) built from the kernels' CUDA C++ by the system compiler
//     against cuda_emulation.h; a function is its lathe_emu_launch_NAME.
//     Loading binds it to the runtime's grid runner (its lathe_emu_bind,
//     emulated_grid.h); a library that does not bind is
//     CUDA_ERROR_INVALID_IMAGE.
//   - Streams are queues: a launch, a copy or a memset runs when the host
//     waits for it (a stream or event synchronize, the context's, a
//     blocking copy), in stream order, after the events it was told to
//     wait for. Work the host reads without waiting has not run: a missing
//     synchronization shows. cuEventQuery answers from the queue.
//   - A kernel's error (an out-of-bounds access, a divergent barrier) is
//     sticky, as on a GPU: every later call fails with
//     CUDA_ERROR_LAUNCH_FAILED, whose description is the kernel's message,
//     until ResetEmulatedDevice().
//
// One device, compute capability 9.0, 4 GiB unless
// LATHE_EMULATED_DEVICE_MEMORY (bytes) or SetEmulatedDeviceMemory says.
// Thread-safe: one lock for the device; kernels run under it.
//
// Example:
//
//   const CudaDriver& cu = EmulatedCudaDriver();
//   CuDevicePtr p;
//   RETURN_IF_ERROR(CudaCall(cu, cu.mem_alloc(&p, 4096), "cuMemAlloc"));

#ifndef LATHE_RUNTIME_CUDA_EMULATED_DRIVER_H_
#define LATHE_RUNTIME_CUDA_EMULATED_DRIVER_H_

#include <cstddef>

#include "runtime/cuda/driver_api.h"

namespace lathe {

// The code of a kernel's sticky error (CUDA_ERROR_LAUNCH_FAILED).
inline constexpr CuResult kCudaErrorLaunchFailed = 719;

// The emulated device's driver table (one per process).
const CudaDriver& EmulatedCudaDriver();

// The device's memory from now on, in bytes (tests of out-of-memory).
void SetEmulatedDeviceMemory(size_t bytes);

// Clears a sticky kernel error, drops every stream's queued work and frees
// every buffer, module, stream and event: a fresh device (tests).
void ResetEmulatedDevice();

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_EMULATED_DRIVER_H_
