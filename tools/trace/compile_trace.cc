#include "tools/trace/compile_trace.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
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

void RecordCompile(const CompiledGraph& compiled, Trace* trace) {
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
  const codegen::CpuFunction* f = compiled.function.get();
  for (TraceStep& step : steps) {
    if (step.name == "guards") {
      step.made.push_back(
          {kGuards, "guards",
           compiled.guards.has_value()
               ? compiled.guards->ToString()
               : "(none: an input is of a kind guards cannot describe)"});
    }
    if (f == nullptr) continue;
    const codegen::CpuStats& stats = f->stats();
    if (step.name == "lower") {
      step.made.push_back(
          {kLoopIr, "loop_ir.txt (before fusion)", f->unscheduled()});
    } else if (step.name == "schedule") {
      step.made.push_back(
          {kLoopIr, "loop_ir_scheduled.txt (after fusion)", f->scheduled()});
      step.made.push_back(
          {kFusionLog,
           absl::StrCat("fusion.log (", stats.kernels_unfused,
                        " kernels as lowered, ", stats.kernels,
                        " after fusion)"),
           absl::StrCat(absl::StrJoin(stats.fusion_log, "\n"), "\n")});
      step.made.push_back({kDot, "graph.dot", f->fusion_dot()});
    } else if (step.name == "emit_host") {
      step.made.push_back({kSource, "kernel.cc", f->source()});
    } else if (absl::StartsWith(step.name, "build")) {
      const codegen::BuiltLibrary& built = f->library();
      step.made.push_back({kCommand, "command", built.command});
      step.made.push_back({kCache, "cache",
                           built.cache_hit.empty()
                               ? "miss (compiled)"
                               : absl::StrCat("hit: ", built.cache_hit)});
    }
  }
  for (TraceStep& step : steps) {
    trace->Step(std::move(step.name), step.seconds, std::move(step.made));
  }
}

}  // namespace lathe::trace
