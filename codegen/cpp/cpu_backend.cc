#include "codegen/cpp/cpu_backend.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpp/cpp_compiler.h"
#include "codegen/cpp/cpp_emitter.h"

namespace lathe::codegen {
namespace {

class Cpu final : public Backend {
 public:
  absl::string_view name() const override { return "cpu"; }
  Device device() const override { return Device::Cpu(); }
  Routines routines() const override {
    return {.bgemm = true, .sconv_epilogue = true};
  }
  absl::StatusOr<std::string> EmitKernels(
      const Program& program) const override {
    return EmitCpp(program);
  }
  absl::StatusOr<std::string> EmitTuningKernels(
      const Program& program, TunableKernels* tunable) const override {
    return EmitCpp(program, {.tuning_table = true, .tunable = tunable});
  }
  const HostCode& host_code() const override { return HostMemoryCode(); }
  absl::StatusOr<BuiltLibrary> Build(
      absl::string_view kernels, absl::string_view host, const std::string& dir,
      const BuildOptions& options) const override {
    return CompileSharedLibrary(absl::StrCat(kernels, host), dir, options.cache,
                                {}, CppSourcePrelude(), options.cached_only);
  }
  std::vector<std::pair<std::string, std::string>> ArtifactFiles(
      const BuiltLibrary& built, absl::string_view source) const override {
    return {{"kernel.so", built.image}, {"kernel.cc", std::string(source)}};
  }
};

}  // namespace

const Backend& CpuBackend() {
  static const Cpu* const cpu = new Cpu();
  return *cpu;
}

}  // namespace lathe::codegen
