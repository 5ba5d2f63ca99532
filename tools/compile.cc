#include "tools/compile.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "passes/default_pipeline.h"
#include "status_macros.h"

namespace lathe {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::Status Named(const CompileOptions& o, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(o.source, ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraphText(
    absl::string_view text, const CompileOptions& options) {
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(text);
  if (!graph.ok()) return Named(options, graph.status());
  double parse = Since(start);
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c,
                   CompileGraph(*std::move(graph), options));
  c->steps.insert(c->steps.begin(), StepTime{"parse", parse});
  return c;
}

absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraph(
    std::unique_ptr<ir::Graph> graph, const CompileOptions& options) {
  auto c = std::make_unique<CompiledGraph>();
  c->graph = std::move(graph);
  // What the guards describe: the inputs as written.
  std::vector<symbolic::InputSpec> specs;
  bool describable = true;
  for (const ir::Node* p : c->graph->Placeholders()) {
    const ir::ValueMeta& m = p->meta();
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      specs.push_back(symbolic::InputSpec::Tensor(
          m.tensor.sizes, m.tensor.strides, m.tensor.storage_offset));
    } else if (m.kind == ir::ValueMeta::Kind::kSym && !m.sym.is_bool()) {
      specs.push_back(symbolic::InputSpec::Scalar(m.sym));
    } else {
      describable = false;
    }
  }
  // Shape propagation, once: every later step keeps the metas current.
  Clock::time_point start = Clock::now();
  c->env = std::make_unique<symbolic::ShapeEnv>();
  absl::Status shapes =
      ir::PropagateShapes(*c->graph, *c->env, {.hints = options.hints});
  if (!shapes.ok()) return Named(options, shapes);
  c->steps.push_back({"shape_prop", Since(start)});
  // AOT dispatch: composites, functionalization, plans.
  start = Clock::now();
  absl::StatusOr<aot::AotGraph> aot = aot::AotDispatch(*c->graph, *c->env);
  if (!aot.ok()) return Named(options, aot.status());
  c->aot = *std::move(aot);
  c->steps.push_back({"aot_dispatch", Since(start)});
  if (options.dump) {
    c->dumps.push_back({"00-aot_dispatch.txt", ir::PrintGraph(*c->graph)});
  }
  // The passes.
  if (options.passes) {
    passes::PassPipeline pipeline = passes::DefaultPipeline();
    if (options.only_passes.has_value()) {
      absl::StatusOr<passes::PassPipeline> p =
          passes::PipelineOf(*options.only_passes);
      if (!p.ok()) return p.status();
      pipeline = *std::move(p);
    }
    passes::PassContext ctx(*c->env);
    absl::StatusOr<passes::PipelineReport> report = pipeline.Run(
        *c->graph, ctx,
        {.check_invariants = options.check_invariants, .dump = options.dump});
    if (!report.ok()) return Named(options, report.status());
    for (const passes::PassRun& run : report->runs) {
      c->steps.push_back({run.name, run.seconds});
      if (run.check_seconds > 0) {
        c->steps.push_back(
            {absl::StrCat(run.name, " (invariant checks)"), run.check_seconds});
      }
    }
    for (auto& dump : report->dumps) c->dumps.push_back(std::move(dump));
    c->log = ctx.log();
    c->specialized = ctx.specialize();
  }
  // Guards last: the passes may add some (a specialized float).
  start = Clock::now();
  if (describable) {
    absl::StatusOr<symbolic::GuardSet> g = ProduceGuards(*c->env, specs);
    if (g.ok()) {
      c->guards = *std::move(g);
      c->guard_inputs = std::move(specs);
    }
  }
  c->steps.push_back({"guards", Since(start)});
  return c;
}

}  // namespace lathe
