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
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/device_kernels.h"
#include "runtime/shared_library.h"

namespace lathe {

// The files that hold a compiled graph's kernels in an artifact: a cubin
// per architecture ("kernels.sm_90.cubin"), PTX for any newer one, and the
// emulated device's library.
inline constexpr char kKernelsFilePrefix[] = "kernels.";
inline constexpr char kPtxFile[] = "kernels.ptx";
inline constexpr char kEmulatedModuleFile[] = "kernels.emulated.so";
std::string CubinFile(int arch);

// DeviceImageFor()
//
// Among an artifact's kernel files (by name), the image for the device
// CudaDevice() chooses: the emulated library on the emulated device; on a
// GPU, the cubin of its architecture or of the nearest earlier minor
// version of it (sm_80's on an sm_86), else the PTX (the lowest
// architecture's, which the driver compiles for any later one). An error naming
// what the artifact holds and the device it found otherwise.
absl::StatusOr<std::string> DeviceImageFor(
    const std::vector<std::pair<std::string, std::string>>& files);

// ImageForArchitecture()
//
// DeviceImageFor's choice for a GPU of architecture `arch` (86 for sm_86),
// or for the emulated device (0).
absl::StatusOr<std::string> ImageForArchitecture(
    const std::vector<std::pair<std::string, std::string>>& files, int arch);

// LoadCudaKernels()
//
// `image` loaded as a module of cuda:0, with the kernels `host` names (a
// graph of views alone names none). An error (one line) for no device, an
// image the driver refuses, or a kernel the module lacks (naming it).
absl::StatusOr<std::shared_ptr<const DeviceKernels>> LoadCudaKernels(
    absl::string_view image, const SharedLibrary& host);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUDA_KERNELS_H_
