#include "runtime/cuda/driver_api.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/cuda/function_table.h"
#include "runtime/shared_library.h"
#include "status_macros.h"

namespace lathe {
namespace {

// The driver of `library`, every function resolved, initialized.
absl::StatusOr<std::unique_ptr<CudaDriver>> Load(const std::string& library) {
  absl::StatusOr<SharedLibrary> lib = SharedLibrary::Open(library,
                                                          /*keep=*/true);
  if (!lib.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device: ", library, " not found (",
                     lib.status().message(), ")"));
  }
  auto cu = std::make_unique<CudaDriver>();
  cu->source = library;
  const std::string lacks = absl::StrCat("no CUDA device: ", library, " ");
#define LATHE_CUDA_DRIVER_RESOLVE(member, symbol, ret, params)      \
  RETURN_IF_ERROR(ResolveFunction(*lib, symbol, &cu->member, lacks, \
                                  " (a driver older than lathe needs?)"));
  LATHE_CUDA_DRIVER_FUNCTIONS(LATHE_CUDA_DRIVER_RESOLVE)
#undef LATHE_CUDA_DRIVER_RESOLVE
  auto no_device = [&](const absl::Status& s) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device: ", s.message()));
  };
  if (absl::Status s = CudaCall(*cu, cu->init(0), "cuInit"); !s.ok()) {
    return no_device(s);
  }
  int count = 0;
  if (absl::Status s =
          CudaCall(*cu, cu->device_get_count(&count), "cuDeviceGetCount");
      !s.ok()) {
    return no_device(s);
  }
  if (count < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device: ", library, " sees none"));
  }
  return cu;
}

}  // namespace

absl::StatusOr<const CudaDriver*> LoadCudaDriver(const std::string& library) {
  // cuInit and the library live for the process.
  return LoadOnce<CudaDriver>(library, [&] { return Load(library); });
}

absl::Status CudaCall(const CudaDriver& cu, CuResult result,
                      absl::string_view call) {
  if (result == kCudaSuccess) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.get_error_name == nullptr ||
      cu.get_error_name(result, &name) != kCudaSuccess) {
    name = nullptr;
  }
  if (cu.get_error_string == nullptr ||
      cu.get_error_string(result, &text) != kCudaSuccess) {
    text = nullptr;
  }
  // The two a machine without a GPU sees, which a stub library cannot name.
  if (name == nullptr && result == kCudaErrorStubLibrary) {
    name = "CUDA_ERROR_STUB_LIBRARY";
    text = "libcuda is the toolkit's stub, not a driver";
  } else if (name == nullptr && result == kCudaErrorNoDevice) {
    name = "CUDA_ERROR_NO_DEVICE";
  }
  std::string message =
      absl::StrCat(call, ": ",
                   name != nullptr ? std::string(name)
                                   : absl::StrCat("CUDA error ", result));
  if (text != nullptr) absl::StrAppend(&message, " (", text, ")");
  if (result == kCudaErrorOutOfMemory) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

CuMemcpy3D MemcpyNodeParams(CuDevicePtr dst, CuDevicePtr src, size_t bytes) {
  CuMemcpy3D c;
  c.src_memory_type = kCuMemoryTypeDevice;
  c.src_device = src;
  c.src_pitch = bytes;
  c.src_height = 1;
  c.dst_memory_type = kCuMemoryTypeDevice;
  c.dst_device = dst;
  c.dst_pitch = bytes;
  c.dst_height = 1;
  c.width_bytes = bytes;
  c.height = 1;
  c.depth = 1;
  return c;
}

}  // namespace lathe
