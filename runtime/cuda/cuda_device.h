// -----------------------------------------------------------------------------
// File: cuda_device.h
// -----------------------------------------------------------------------------
//
// Which CUDA device lathe's CUDA path runs on, chosen by the environment:
// LATHE_CUDA_DEVICE=emulated is the emulated device (emulated_driver.h),
// on every machine; unset (or "gpu") is the real driver, libcuda.so.1,
// where a GPU is. No device is one line that says how to get the emulated
// one.
//
// Example:
//
//   ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
//   RETURN_IF_ERROR(MakeCudaContextCurrent(*cu));  // on this thread

#ifndef LATHE_RUNTIME_CUDA_CUDA_DEVICE_H_
#define LATHE_RUNTIME_CUDA_CUDA_DEVICE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/cuda/driver_api.h"

namespace lathe {

// The environment variable that chooses the device.
inline constexpr char kCudaDeviceVariable[] = "LATHE_CUDA_DEVICE";

// CudaDevice()
//
// The driver of the device LATHE_CUDA_DEVICE names: the emulated one, or
// libcuda.so.1 with a device. A FailedPrecondition error otherwise (no
// driver, no device, or a value the variable does not take), one line.
absl::StatusOr<const CudaDriver*> CudaDevice();

// MakeCudaContextCurrent()
//
// Makes device 0's primary context current on the calling thread (CUDA's
// current context is per thread), retaining it once per process.
absl::Status MakeCudaContextCurrent(const CudaDriver& cu);

// CudaArchitecture()
//
// Device 0's compute capability as NVRTC's architecture number (90 for
// 9.0; the emulated device's is 90).
absl::StatusOr<int> CudaArchitecture(const CudaDriver& cu);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUDA_DEVICE_H_
