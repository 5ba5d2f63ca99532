#include "codegen/backend.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/scalar_ops.h"

namespace lathe::codegen {

std::string HostCode::Prelude(const Program&) const { return ""; }

absl::StatusOr<std::string> Backend::EmitTuningKernels(const Program&,
                                                       TunableKernels*) const {
  return absl::UnimplementedError(absl::StrCat(
      "autotuning: the ", name(), " backend has no tunable kernels yet"));
}

std::string HostCode::RunKernel(const Program& program, int k,
                                const HostCpp&) const {
  const Kernel& kernel = program.kernels[k];
  return absl::StrCat("  ", kernel.name,
                      "(B, S, F, rt, &E);\n  if (E != 0) return E;\n");
}

std::string HostCode::LoadElement(int b, DType dtype,
                                  absl::string_view index) const {
  std::string value = absl::StrCat("static_cast<const ", CType(dtype), "*>(B[",
                                   b, "])[", index, "]");
  if (IsHalfFloat(dtype)) {
    return absl::StrCat("lathe_to_float(", value, ")");
  }
  return value;
}

absl::StatusOr<std::shared_ptr<const DeviceKernels>> Backend::LoadDevice(
    const BuiltLibrary&, const SharedLibrary&) const {
  return nullptr;
}

const HostCode& HostMemoryCode() {
  static const HostCode* const host = new HostCode();
  return *host;
}

}  // namespace lathe::codegen
