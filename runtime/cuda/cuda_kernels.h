// -----------------------------------------------------------------------------
// File: cuda_kernels.h
// -----------------------------------------------------------------------------
//
// A compiled graph's CUDA kernels, loaded (runtime/device_kernels.h): the
// module image (a cubin or PTX for a GPU; for the emulated device, the
// host shared library codegen/cuda built against cuda_emulation.h) loaded
// on the device CudaDevice() chooses, and every kernel the host library
// names in lathe_device_kernels resolved, so its host function launches
// kernel k by index. A launch goes on the null stream; device memory comes
// from the CUDA storages' caching allocator (cuda_storage.h), so buffers
// the host function frees are reused in stream order. A failed launch or
// copy is LATHE_CALL_DEVICE_FAILED, its driver error kept for the caller
// (TakeDeviceError).
//
// Example:
//
//   ASSIGN_OR_RETURN(SharedLibrary host, SharedLibrary::OpenImage(so));
//   ASSIGN_OR_RETURN(std::shared_ptr<const DeviceKernels> d,
//                    LoadCudaKernels(cubin, host));
//   ASSIGN_OR_RETURN(auto graph, LoadedGraph::OpenGraph(std::move(host),
//                                                       signature, d));

#ifndef LATHE_RUNTIME_CUDA_CUDA_KERNELS_H_
#define LATHE_RUNTIME_CUDA_CUDA_KERNELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/device_kernels.h"
#include "runtime/shared_library.h"

namespace lathe {

// LoadCudaKernels()
//
// `image` loaded as a module of cuda:0, with the kernels `host` names (a
// graph of views alone names none). An error (one line) for no device, an
// image the driver refuses, or a kernel the module lacks (naming it).
absl::StatusOr<std::shared_ptr<const DeviceKernels>> LoadCudaKernels(
    absl::string_view image, const SharedLibrary& host);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUDA_KERNELS_H_
