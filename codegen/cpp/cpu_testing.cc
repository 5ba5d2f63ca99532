#include "codegen/cpp/cpu_testing.h"

#include <chrono>
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
#include "ir/interpreter.h"
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
      backend.Build(p.source, dir, options.cache);
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

}  // namespace lathe::codegen
