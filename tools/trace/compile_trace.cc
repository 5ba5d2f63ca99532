#include "tools/trace/compile_trace.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace lathe::trace {
namespace {

// The step a dump file "NN-NAME.txt" belongs to: NAME.
absl::string_view DumpStep(absl::string_view file) {
  size_t dash = file.find('-');
  if (dash != absl::string_view::npos) file.remove_prefix(dash + 1);
  absl::ConsumeSuffix(&file, ".txt");
  return file;
}

}  // namespace

void RecordCompile(const CompiledGraph& compiled,
                   const codegen::CpuFunction* cpu, Trace* trace) {
  std::vector<TraceStep> steps;
  for (const StepTime& s : compiled.steps) {
    steps.push_back({s.name, s.seconds, {}});
  }
  // Each dump goes with the next step of its name, in order.
  size_t cursor = 0;
  int last_pass = -1;
  for (const auto& [file, text] : compiled.dumps) {
    absl::string_view name = DumpStep(file);
    size_t at = cursor;
    while (at < steps.size() && steps[at].name != name) ++at;
    if (at == steps.size()) {
      if (steps.empty()) steps.push_back({"dump", 0, {}});
      at = steps.size() - 1;
    }
    steps[at].made.push_back({kGraph, file, text});
    cursor = at + 1;
    last_pass = static_cast<int>(at);
  }
  if (!compiled.log.empty() && last_pass >= 0) {
    steps[last_pass].made.push_back(
        {kText, "passes.log",
         absl::StrCat(absl::StrJoin(compiled.log, "\n"), "\n")});
  }
  for (TraceStep& step : steps) {
    if (step.name != "guards") continue;
    step.made.push_back(
        {kGuards, "guards",
         compiled.guards.has_value()
             ? compiled.guards->ToString()
             : "(none: an input is of a kind guards cannot describe)"});
  }
  for (TraceStep& step : steps) {
    trace->Step(std::move(step.name), step.seconds, std::move(step.made));
  }
  if (cpu == nullptr) return;
  const codegen::CpuStats& stats = cpu->stats();
  trace->Step(
      "lower", stats.lower_seconds,
      {{kLoopIr, "loop_ir.txt (before fusion)", cpu->unscheduled()},
       {kLoopIr, "loop_ir_scheduled.txt (after fusion)", cpu->scheduled()},
       {kFusionLog,
        absl::StrCat("fusion.log (", stats.kernels_unfused,
                     " kernels as lowered, ", stats.kernels, " after fusion)"),
        absl::StrCat(absl::StrJoin(stats.fusion_log, "\n"), "\n")},
       {kSource, "kernel.cc", cpu->source()},
       {kDot, "graph.dot", cpu->fusion_dot()}});
  const codegen::BuiltLibrary& built = cpu->library();
  trace->Step(
      "build", built.seconds,
      {{kCommand, "command", built.command},
       {kCache, "cache",
        built.cache_hit.empty() ? "miss (compiled)"
                                : absl::StrCat("hit: ", built.cache_hit)}});
}

}  // namespace lathe::trace
