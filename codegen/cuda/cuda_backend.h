// -----------------------------------------------------------------------------
// File: cuda_backend.h
// -----------------------------------------------------------------------------
//
// The cuda backend (codegen/backend.h): kernels as CUDA C++ (cuda_emitter.h)
// and a host function that launches them through the runtime's device C
// ABI (kernel_abi.h's LatheDeviceRuntime). Its build makes two things: the
// host library (the system C++ compiler, as the cpu's) and the kernels'
// module for the device CudaDevice() chooses — a cubin from NVRTC for the
// GPU's architecture, or, on the emulated device, a host library built
// against runtime/cuda/cuda_emulation.h — both through the compile cache.
// No device is one line (runtime/cuda/cuda_device.h).
//
// Example:
//
//   setenv("LATHE_CUDA_DEVICE", "emulated", 1);
//   ASSIGN_OR_RETURN(auto c, CompileGraphText(text,
//                                             {.backend = &CudaBackend()}));
//   c->function->Run(inputs);  // host tensors in and out; kernels on device

#ifndef LATHE_CODEGEN_CUDA_CUDA_BACKEND_H_
#define LATHE_CODEGEN_CUDA_CUDA_BACKEND_H_

#include "codegen/backend.h"

namespace lathe::codegen {

// The cuda backend (one per process).
const Backend& CudaBackend();

// The host function's device parts for CUDA (launches by kernel index,
// element reads through a copy to the host).
const HostCode& CudaHostCode();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CUDA_CUDA_BACKEND_H_
