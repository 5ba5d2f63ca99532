#include "codegen/cpp/cpu_testing.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "codegen/cpp/cpp_compiler.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "codegen/fusion_graph.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::codegen {

absl::StatusOr<std::unique_ptr<CpuFunction>> CompileCpu(
    const ir::Graph& graph, symbolic::ShapeEnv& env,
    const CpuCompileOptions& options) {
  const Backend& backend = CpuBackend();
  CpuFunction::Parts p;
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(p.lowered, Lower(graph, env));
  p.stats.kernels_unfused = static_cast<int>(p.lowered.program.kernels.size());
  p.unscheduled = PrintProgram(p.lowered.program);
  ASSIGN_OR_RETURN(ScheduleResult scheduled, Schedule(p.lowered));
  p.stats.fusion_log = std::move(scheduled.log);
  p.stats.kernels = static_cast<int>(p.lowered.program.kernels.size());
  p.scheduled = PrintProgram(p.lowered.program);
  p.fusion_dot = FusionDot(graph, p.lowered.program);
  ASSIGN_OR_RETURN(std::string kernels, backend.EmitKernels(p.lowered.program));
  ASSIGN_OR_RETURN(p.host, EmitWrapper(p.lowered, ir::InputSlots(graph),
                                       {.guards = options.guards,
                                        .guard_inputs = options.guard_inputs,
                                        .plan = options.plan,
                                        .subclass = options.subclass}));
  p.source = kernels + p.host.text;
  p.stats.lower_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string dir = options.dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(dir, TemporaryBuildDir());
    p.temp_dir = dir;
  }
  absl::StatusOr<BuiltLibrary> built =
      backend.Build(kernels, p.host.text, dir, {.cache = options.cache});
  if (!built.ok()) {
    std::error_code ec;
    if (!p.temp_dir.empty()) std::filesystem::remove_all(p.temp_dir, ec);
    return built.status();
  }
  p.built = *std::move(built);
  p.stats.compiler_seconds = p.built.seconds;
  p.stats.cache_hit = p.built.cache_hit;
  p.plan = options.plan;
  p.subclass = options.subclass;
  return CpuFunction::Load(graph, std::move(p));
}

void ExpectSameOutputs(const ir::Interpretation& got,
                       const ir::Interpretation& want, double tol) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t k = 0; k < got.outputs.size(); ++k) {
    const Tensor &a = got.outputs[k].tensor, &b = want.outputs[k].tensor;
    ASSERT_EQ(a.sizes(), b.sizes()) << "output " << k;
    std::vector<int64_t> index(a.dim(), 0);
    for (int64_t i = 0; i < a.numel(); ++i) {
      for (int64_t d = a.dim(), rest = i; d-- > 0;) {
        index[d] = rest % a.sizes()[d];
        rest /= a.sizes()[d];
      }
      double u = a.GetDouble(index), w = b.GetDouble(index);
      if (std::isnan(w) && std::isnan(u)) continue;
      if (tol == 0 || std::isinf(w)) {
        ASSERT_EQ(u, w) << "output " << k << " element " << i;
      } else {
        ASSERT_NEAR(u, w, tol * (std::fabs(w) + 1))
            << "output " << k << " element " << i;
      }
    }
  }
}

}  // namespace lathe::codegen
