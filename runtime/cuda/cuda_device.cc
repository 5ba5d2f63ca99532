#include "runtime/cuda/cuda_device.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/cuda/emulated_driver.h"
#include "status_macros.h"

namespace lathe {

absl::StatusOr<const CudaDriver*> CudaDevice() {
  const char* env = std::getenv(kCudaDeviceVariable);
  const std::string choice = env != nullptr ? env : "";
  if (choice == "emulated") return &EmulatedCudaDriver();
  if (!choice.empty() && choice != "gpu") {
    return absl::FailedPreconditionError(
        absl::StrCat(kCudaDeviceVariable, "='", choice,
                     "': expected 'emulated' or 'gpu' (or unset: the GPU)"));
  }
  absl::StatusOr<const CudaDriver*> cu = LoadCudaDriver();
  if (!cu.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(cu.status().message(), "; ", kCudaDeviceVariable,
                     "=emulated runs on the emulated device"));
  }
  return cu;
}

absl::Status MakeCudaContextCurrent(const CudaDriver& cu) {
  // One retained primary context per driver table, for the process.
  static std::mutex mu;
  static const CudaDriver* retained_for = nullptr;
  static CuContext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (retained_for != &cu) {
      CuDevice device = 0;
      RETURN_IF_ERROR(CudaCall(cu, cu.device_get(&device, 0), "cuDeviceGet"));
      RETURN_IF_ERROR(CudaCall(cu, cu.primary_ctx_retain(&context, device),
                               "cuDevicePrimaryCtxRetain"));
      retained_for = &cu;
    }
  }
  return CudaCall(cu, cu.ctx_set_current(context), "cuCtxSetCurrent");
}

absl::StatusOr<int> CudaArchitecture(const CudaDriver& cu) {
  int major = 0, minor = 0;
  RETURN_IF_ERROR(CudaCall(
      cu, cu.device_get_attribute(&major, kCuAttrComputeCapabilityMajor, 0),
      "cuDeviceGetAttribute"));
  RETURN_IF_ERROR(CudaCall(
      cu, cu.device_get_attribute(&minor, kCuAttrComputeCapabilityMinor, 0),
      "cuDeviceGetAttribute"));
  return 10 * major + minor;
}

}  // namespace lathe
