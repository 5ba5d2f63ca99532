// lathe_smoke: the README's main job until lathec exists. Exercises every
// dependency lathe is built on and prints one line for each:
//   abseil  - flags, StatusOr + status macros, StrFormat, flat_hash_map
//   eigen   - a GEMM checked against a hand loop
//   nvrtc   - a CUDA kernel compiled to PTX (no GPU needed)
// Exits non-zero if any check fails.
//
//   bazel run //tools:lathe_smoke -- --gemm_size=64
#include <cmath>
#include <string>
#include <vector>

#include "Eigen/Dense"
#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "status_macros.h"

#ifdef LATHE_HAS_CUDA_TOOLKIT
#include "nvrtc.h"
#endif

ABSL_FLAG(int, gemm_size, 32, "rows = cols = depth of the Eigen GEMM check");

namespace {

absl::StatusOr<double> EigenGemmMaxError(int n) {
  if (n <= 0 || n > 2048) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--gemm_size must be in [1, 2048], got %d", n));
  }
  Eigen::MatrixXd a(n, n), b(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      a(i, j) = std::sin(i + 2.0 * j);
      b(i, j) = std::cos(3.0 * i - j);
    }
  Eigen::MatrixXd c = a * b;
  double max_error = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double expected = 0;
      for (int k = 0; k < n; ++k) expected += a(i, k) * b(k, j);
      max_error = std::max(max_error, std::abs(c(i, j) - expected));
    }
  return max_error;
}

absl::StatusOr<std::string> NvrtcCompile() {
#ifdef LATHE_HAS_CUDA_TOOLKIT
  const char* kSource =
      "extern \"C\" __global__ void scale(float* x, float a, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) x[i] *= a;\n"
      "}\n";
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kSource, "scale.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    return absl::InternalError("nvrtcCreateProgram failed");
  }
  const char* options[] = {"--gpu-architecture=compute_80"};
  nvrtcResult result = nvrtcCompileProgram(prog, 1, options);
  size_t ptx_size = 0;
  if (result == NVRTC_SUCCESS) nvrtcGetPTXSize(prog, &ptx_size);
  nvrtcDestroyProgram(&prog);
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(nvrtcGetErrorString(result));
  }
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return absl::StrFormat("NVRTC %d.%d compiled scale.cu to %d bytes of PTX",
                         major, minor, ptx_size);
#else
  return std::string("skipped: no CUDA toolkit found at configure time");
#endif
}

absl::Status Run() {
  absl::flat_hash_map<std::string, std::string> report;
  ASSIGN_OR_RETURN(double gemm_error,
                   EigenGemmMaxError(absl::GetFlag(FLAGS_gemm_size)));
  if (gemm_error > 1e-9) {
    return absl::InternalError(absl::StrFormat(
        "Eigen GEMM differs from the hand loop by %g", gemm_error));
  }
  report["eigen"] =
      absl::StrFormat("%dx%d GEMM matches the hand loop (max error %.1e)",
                      absl::GetFlag(FLAGS_gemm_size),
                      absl::GetFlag(FLAGS_gemm_size), gemm_error);
  ASSIGN_OR_RETURN(report["nvrtc"], NvrtcCompile());
  report["abseil"] = "flags, StatusOr, StrFormat, flat_hash_map";
  for (const char* key : {"abseil", "eigen", "nvrtc"}) {
    absl::PrintF("lathe smoke: %-6s ok: %s\n", key, report[key]);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status status = Run();
  if (!status.ok()) {
    absl::FPrintF(stderr, "lathe smoke: error: %s\n", status.message());
    return 1;
  }
  return 0;
}
