#include "runtime/cuda/cuda_device.h"

#include <atomic>
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
  // One retained primary context per driver table, for the process. Once
  // it is current on a thread it stays so (lathe sets no other), so the hot
  // path (every compiled call's Prepare) takes no lock: `retains` counts
  // the retains, and a thread whose context is older sets it again.
  static std::mutex mu;
  static const CudaDriver* retained_for = nullptr;
  static CuContext context = nullptr;
  static std::atomic<int64_t> retains{0};
  thread_local const CudaDriver* current_for = nullptr;
  thread_local int64_t current_retain = -1;
  if (current_for == &cu && current_retain == retains.load()) {
    return absl::OkStatus();
  }
  CuContext wanted = nullptr;
  int64_t retain = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (retained_for != &cu) {
      CuDevice device = 0;
      RETURN_IF_ERROR(CudaCall(cu, cu.device_get(&device, 0), "cuDeviceGet"));
      RETURN_IF_ERROR(CudaCall(cu, cu.primary_ctx_retain(&context, device),
                               "cuDevicePrimaryCtxRetain"));
      retained_for = &cu;
      ++retains;
    }
    wanted = context;
    retain = retains.load();
  }
  RETURN_IF_ERROR(CudaCall(cu, cu.ctx_set_current(wanted), "cuCtxSetCurrent"));
  current_for = &cu;
  current_retain = retain;
  return absl::OkStatus();
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
