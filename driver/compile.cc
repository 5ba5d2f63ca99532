#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "codegen/cpp/cpp_compiler.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "codegen/cuda/cuda_backend.h"
#include "codegen/fusion_graph.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "driver/arguments.h"
#include "driver/freeze.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/default_pipeline.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/dtype.h"
#include "runtime/npy.h"
#include "status_macros.h"

namespace lathe {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// `s` with `source` (and `what`) before its message.
absl::Status Named(const std::string& source, const absl::Status& s,
                   absl::string_view what = "") {
  return absl::Status(s.code(), absl::StrCat(source, ": ", what, s.message()));
}

// Whether `graph` reads a storage offset as PyTorch does, from the storage's
// start (as_strided, set_, sym_storage_offset, a view.dtype to another
// element size, which refuses offsets it does not divide); otherwise compiled
// code addresses each input from its first element and its offset is free.
bool ReadsStorageOffsets(const ir::Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (n->op() == nullptr || !n->op()->HasTag(ir::OpTag::kStorageOffset)) {
      continue;
    }
    // view.dtype reads it only to change the element size.
    if (n->op()->target == "aten.view.dtype" && !n->args().empty() &&
        n->args()[0].kind == ir::Arg::Kind::kNode &&
        n->meta().kind == ir::ValueMeta::Kind::kTensor &&
        n->args()[0].node->meta().kind == ir::ValueMeta::Kind::kTensor &&
        ItemSize(n->meta().tensor.dtype) ==
            ItemSize(n->args()[0].node->meta().tensor.dtype)) {
      continue;
    }
    return true;
  }
  return false;
}

// Whether the runtime wrapper plan places a view in input `i` of `n` from
// the storage's start (an in-place view of it; see
// RuntimeWrapperPlan::ReadsStorageOffset), so its offset must be the one
// compiled for. When the plan's inputs are not the graph's one for one (a
// flattened tensor subclass), any such input counts for every input.
bool PlanReadsOffset(const aot::RuntimeWrapperPlan& plan, int i, int n) {
  if (plan.num_inputs() == n) return plan.ReadsStorageOffset(i);
  for (int j = 0; j < plan.num_inputs(); ++j) {
    if (plan.ReadsStorageOffset(j)) return true;
  }
  return false;
}

// The inputs as the guards describe them: one per placeholder as written,
// at the storage offset compiled for (`storage_offsets`, else 0); false when
// one is of a kind no compiled function takes (a tuple).
bool GuardSpecs(
    const ir::Graph& graph, const aot::RuntimeWrapperPlan& plan,
    const absl::flat_hash_map<std::string, int64_t>& storage_offsets,
    std::vector<symbolic::InputSpec>* out) {
  const bool offsets = ReadsStorageOffsets(graph);
  const std::vector<ir::Node*> inputs = graph.Placeholders();
  const int n = static_cast<int>(inputs.size());
  for (int i = 0; i < n; ++i) {
    const ir::ValueMeta& m = inputs[i]->meta();
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      symbolic::Expr offset = m.tensor.storage_offset;
      auto it = storage_offsets.find(inputs[i]->name());
      if (it != storage_offsets.end()) offset = symbolic::Int(it->second);
      out->push_back(symbolic::InputSpec::Tensor(m.tensor.sizes,
                                                 m.tensor.strides, offset));
      out->back().any_storage_offset =
          !offsets && offset.kind() == symbolic::ExprKind::kInteger &&
          !PlanReadsOffset(plan, i, n);
    } else if (m.kind == ir::ValueMeta::Kind::kSym) {
      out->push_back(symbolic::InputSpec::Scalar(m.sym));
    } else if (m.kind == ir::ValueMeta::Kind::kNone) {
      out->push_back(symbolic::InputSpec::None());
    } else {
      return false;
    }
  }
  return true;
}

// A build directory removed unless kept (a failed compile leaves none).
struct BuildDir {
  std::string path;
  bool temporary = false;
  ~BuildDir() {
    std::error_code ec;
    if (temporary) std::filesystem::remove_all(path, ec);
  }
  std::string Keep() {
    temporary = false;
    return path;
  }
};

}  // namespace

absl::StatusOr<const codegen::Backend*> BackendNamed(absl::string_view name) {
  if (name == "interp") return nullptr;
  if (name == "cpu") return &codegen::CpuBackend();
  if (name == "cuda") {
    // No GPU and no emulated device chosen: CudaDevice's one line.
    RETURN_IF_ERROR(CudaDevice().status());
    return &codegen::CudaBackend();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown backend '", name, "' (available: interp, cpu, cuda)"));
}

absl::StatusOr<ParsedGraph> Parse(absl::string_view text, std::string source) {
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(text);
  if (!graph.ok()) return Named(source, graph.status());
  return ParsedGraph{std::move(source), *std::move(graph), Since(start)};
}

absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraphText(
    absl::string_view text, const CompileOptions& options) {
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, options.source));
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c, Compile(parsed, options));
  c->steps.insert(c->steps.begin(), StepTime{"parse", parsed.seconds});
  return c;
}

absl::StatusOr<std::unique_ptr<CompiledGraph>> Compile(
    const ParsedGraph& parsed, const CompileOptions& options) {
  const std::string& source = options.source;
  auto c = std::make_unique<CompiledGraph>();
  c->written = parsed.written;
  Clock::time_point start = Clock::now();
  auto step = [&](std::string name) {
    c->steps.push_back({std::move(name), Since(start)});
    start = Clock::now();
  };

  // Freezing: the inputs given now are the function's own constants; the
  // graph as the caller sees it takes the others.
  if (!options.frozen.empty() ||
      !parsed.written->attributes().constants.empty()) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> frozen =
        FreezeInputs(*parsed.written, options.frozen, &c->frozen);
    if (!frozen.ok()) return Named(source, frozen.status());
    c->written = *std::move(frozen);
    step("freeze");
  }
  c->graph = c->written->Clone();

  for (ir::Node* p : c->graph->Placeholders()) {
    auto it = options.storage_offsets.find(p->name());
    if (it != options.storage_offsets.end() &&
        p->meta().kind == ir::ValueMeta::Kind::kTensor) {
      p->meta().tensor.storage_offset = symbolic::Int(it->second);
    }
  }

  // Shape propagation, once: every later step keeps the metas current.
  c->env = std::make_unique<symbolic::ShapeEnv>();
  absl::Status shapes =
      ir::PropagateShapes(*c->graph, *c->env, {.hints = options.hints});
  if (!shapes.ok()) return Named(source, shapes);
  step("shape_prop");

  // AOT dispatch: composites, functionalization, the runtime wrapper plan.
  absl::StatusOr<aot::AotGraph> aot = aot::AotDispatch(*c->graph, *c->env);
  if (!aot.ok()) return Named(source, aot.status());
  c->aot = *std::move(aot);
  step("aot_dispatch");
  if (options.dump) {
    c->dumps.push_back({"00-aot_dispatch.txt", ir::PrintGraph(*c->graph)});
  }

  // The pass pipeline (each pass is a step of its own).
  if (options.passes) {
    passes::PassPipeline pipeline = passes::DefaultPipeline();
    if (options.only_passes.has_value()) {
      ASSIGN_OR_RETURN(pipeline, passes::PipelineOf(*options.only_passes));
    }
    passes::PassContext ctx(*c->env);
    if (!c->graph->attributes().constants.empty()) ctx.set_frozen(&c->frozen);
    absl::StatusOr<passes::PipelineReport> report = pipeline.Run(
        *c->graph, ctx,
        {.check_invariants = options.check_invariants, .dump = options.dump});
    if (!report.ok()) return Named(source, report.status());
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
    start = Clock::now();
  }

  // Guards last: the passes may add some (a specialized float).
  std::vector<symbolic::InputSpec> specs;
  if (GuardSpecs(*c->written, c->aot.plan, options.storage_offsets, &specs)) {
    absl::StatusOr<symbolic::GuardSet> g = ProduceGuards(*c->env, specs);
    if (g.ok()) {
      c->guards = *std::move(g);
      c->guard_inputs = std::move(specs);
    }
  }
  step("guards");
  if (options.backend == nullptr) return c;
  const codegen::Backend& backend = *options.backend;
  auto failed = [&](const absl::Status& s) {
    return Named(source, s, absl::StrCat(backend.name(), " backend: "));
  };
  if (!c->frozen.empty() && backend.device().is_cuda()) {
    return failed(absl::UnimplementedError(absl::StrCat(
        "frozen input '", *c->written->attributes().constants.begin(),
        "': frozen constants are not taken by kernels on a device yet")));
  }
  codegen::CpuFunction::Parts p;
  codegen::CpuStats& stats = p.stats;
  Clock::time_point codegen_start = start;

  // Lowering into the loop IR: one kernel per realized value.
  absl::StatusOr<codegen::LoweredGraph> lowered =
      codegen::Lower(*c->graph, *c->env, backend.routines());
  if (!lowered.ok()) return failed(lowered.status());
  p.lowered = *std::move(lowered);
  stats.kernels_unfused = static_cast<int>(p.lowered.program.kernels.size());
  p.unscheduled = codegen::PrintProgram(p.lowered.program);
  step("lower");

  // Scheduling: fusion, the order of the kernels, and the backend's own
  // rewrites of them.
  absl::StatusOr<codegen::ScheduleResult> scheduled =
      codegen::Schedule(p.lowered);
  if (!scheduled.ok()) return failed(scheduled.status());
  backend.Adapt(p.lowered.program, &scheduled->log);
  stats.fusion_log = std::move(scheduled->log);
  stats.kernels = static_cast<int>(p.lowered.program.kernels.size());
  p.scheduled = codegen::PrintProgram(p.lowered.program);
  p.fusion_dot = codegen::FusionDot(*c->graph, p.lowered.program);
  step("schedule");

  // The backend's kernels.
  absl::StatusOr<std::string> kernels = backend.EmitKernels(p.lowered.program);
  if (!kernels.ok()) return failed(kernels.status());
  step("emit_kernels");

  // The host function: checks the inputs, binds the symbols, runs the
  // guards, the kernels, the runtime and composite wrappers.
  absl::StatusOr<codegen::WrapperSource> host =
      codegen::EmitWrapper(p.lowered, ir::InputSlots(*c->graph),
                           {.host = &backend.host_code(),
                            .guards = c->guards ? &*c->guards : nullptr,
                            .guard_inputs = c->guard_inputs,
                            .plan = &c->aot.plan,
                            .subclass = &c->aot.subclass});
  if (!host.ok()) return failed(host.status());
  p.host = *std::move(host);
  p.source = *kernels + p.host.text;
  p.plan = &c->aot.plan;
  p.subclass = &c->aot.subclass;
  p.frozen = c->frozen;
  p.backend = &backend;
  step("emit_host");

  stats.lower_seconds = Since(codegen_start);

  // Autotuning: each kernel's threads, measured or from the cache, written
  // into the kernels.
  if (options.autotune) {
    absl::StatusOr<TuningResult> tuned =
        Autotune({.graph = c->graph.get(),
                  .env = c->env.get(),
                  .backend = &backend,
                  .parts = &p,
                  .cache = options.cache,
                  .cached_only = options.cached_only,
                  .tuning = options.tuning});
    if (!tuned.ok()) return failed(tuned.status());
    if (tuned->missed) {
      step("autotune (not in the cache)");
      return c;
    }
    for (std::string& line : tuned->log) c->log.push_back(std::move(line));
    bool changed = false;
    for (size_t k = 0; k < tuned->threads.size(); ++k) {
      const int t = tuned->threads[k];
      changed = changed || t != 0;
      p.lowered.program.kernels[k].threads = std::max(t, 0);
      p.lowered.program.kernels[k].split_batch = t == kSplitBatch;
      p.lowered.program.kernels[k].winograd = t == kWinograd;
    }
    if (changed) {
      kernels = backend.EmitKernels(p.lowered.program);
      if (!kernels.ok()) return failed(kernels.status());
      p.source = *kernels + p.host.text;
      p.scheduled = codegen::PrintProgram(p.lowered.program);
    }
    step(!tuned->cache_hit.empty()
             ? absl::StrCat("autotune (", tuned->cache_hit, " cache hit)")
         : tuned->calls > 0
             ? absl::StrCat("autotune (", tuned->calls, " calls)")
             : std::string("autotune (not measured)"));
  }
  if (options.artifact && !p.host.user_entry) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": the user call cannot run inside the .so: ",
        p.host.plan_applied ? p.host.user_entry_error : p.host.plan_error));
  }

  // The build, through the compile cache.
  BuildDir dir{options.dir};
  if (dir.path.empty()) {
    ASSIGN_OR_RETURN(dir.path, codegen::TemporaryBuildDir());
    dir.temporary = true;
  }
  absl::StatusOr<codegen::BuiltLibrary> built =
      backend.Build(*kernels, p.host.text, dir.path,
                    {.cache = options.cache,
                     .cuda_archs = options.cuda_archs,
                     .cached_only = options.cached_only});
  if (!built.ok() && options.cached_only && absl::IsNotFound(built.status())) {
    step("build (not in the cache)");
    return c;
  }
  if (!built.ok()) return failed(built.status());
  p.built = *std::move(built);
  stats.compiler_seconds = p.built.seconds;
  stats.cache_hit = p.built.cache_hit;
  step(p.built.cache_hit.empty()
           ? "build"
           : absl::StrCat("build (", p.built.cache_hit, " cache hit)"));

  // The artifact's files and manifest: the arguments as written, the
  // result shapes, the guards as the user reads them.
  if (options.artifact) {
    c->files = backend.ArtifactFiles(p.built, p.source);
    Manifest& m = c->manifest;
    m.graph = source;
    m.compiler = p.built.command;
    // The constants a call gives (the frozen ones are the library's).
    const std::vector<std::string> given(
        p.lowered.constants.begin(),
        p.lowered.constants.end() - p.lowered.frozen_constants);
    ASSIGN_OR_RETURN(
        m.arguments,
        ArgumentsOf(*c->written, given, &m.annotations, backend.device()));
    for (size_t k = 0;
         k < m.arguments.size() && k < c->aot.signature.arguments.size(); ++k) {
      if (m.arguments[k].kind != ArgumentSpec::Kind::kComposite) continue;
      m.composites[static_cast<int>(k)] = c->aot.signature.arguments[k];
    }
    if (c->guards) {
      for (int g = 0; g < c->guards->size(); ++g) {
        m.guards.push_back(GuardText(*c->written, *c->guards, g));
      }
    }
  }

  // Loading, from the bytes the build made or the cache verified.
  p.temp_dir = dir.temporary ? dir.Keep() : "";
  absl::StatusOr<std::unique_ptr<codegen::CpuFunction>> function =
      codegen::CpuFunction::Load(*c->graph, std::move(p));
  if (!function.ok()) return failed(function.status());
  c->function = *std::move(function);
  if (options.artifact) {
    c->manifest.signature = c->function->user_call()->signature();
    // The range guards' bounds, a file of their own: its SHA-256 in the
    // manifest, as the library's.
    if (!c->manifest.signature.guard_bounds.empty()) {
      c->files.emplace_back(
          kGuardBoundsFile,
          GuardBoundsText(c->manifest.signature.guard_bounds));
    }
    std::vector<bool> written = c->function->MutatedUserInputs();
    for (size_t k = 0; k < written.size(); ++k) {
      if (written[k]) c->manifest.mutated.push_back(static_cast<int>(k));
    }
  }
  step("load");
  return c;
}

absl::Status AddFrozenFiles(CompiledGraph& c) {
  if (c.function == nullptr) return absl::OkStatus();
  const codegen::LoweredGraph& g = c.function->lowered();
  for (int k = 0; k < g.frozen_constants; ++k) {
    const std::string& name =
        g.constants[g.constants.size() - g.frozen_constants + k];
    auto it = c.frozen.find(name);
    if (it == c.frozen.end() || !it->second.is_tensor()) {
      return absl::InternalError(
          absl::StrCat("no value for the frozen constant '", name, "'"));
    }
    const Tensor& t = it->second.tensor;
    const std::string file = absl::StrCat("frozen_", k, ".npy");
    ASSIGN_OR_RETURN(std::string bytes, EncodeNpy(t));
    c.files.emplace_back(file, std::move(bytes));
    c.manifest.frozen.push_back(
        {file, std::vector<int64_t>(t.strides().begin(), t.strides().end())});
  }
  return absl::OkStatus();
}

Variant CompiledGraph::AsVariant() const {
  Variant v;
  v.graph = function->user_call();
  v.guards = manifest.guards;
  const codegen::CpuFunction* f = function.get();
  const size_t users = manifest.arguments.size() - f->constants().size();
  v.check = [f, users](absl::Span<const Operand> args) {
    absl::flat_hash_map<std::string, ir::Value> constants;
    for (size_t k = users; k < args.size(); ++k) {
      constants[f->constants()[k - users]] = aot::ValueOf(args[k]);
    }
    return f->CheckUser(args.subspan(0, users), constants);
  };
  v.check_every_call = f->host_checks();
  v.mutated = manifest.mutated;
  return v;
}

int CompiledGraph::FailedGuard(const ArgViews& views) const {
  if (!guards) return LATHE_GUARDS_HOLD;
  // The placeholders' values as the guards read them.
  std::vector<symbolic::GuardInput> in;
  for (size_t k = 0; k < guard_inputs.size(); ++k) {
    if (static_cast<int64_t>(k) >= views.size()) {
      return LATHE_GUARDS_OTHER_INPUTS;
    }
    const LatheValue& a = views.data()[k];
    switch (a.kind) {
      case LATHE_VALUE_TENSOR:
      case LATHE_VALUE_COMPOSITE:
        in.push_back(symbolic::GuardInput::Tensor(
            absl::MakeConstSpan(a.sizes, a.ndim),
            absl::MakeConstSpan(a.strides, a.ndim), a.storage_offset));
        break;
      case LATHE_VALUE_INT:
        in.push_back(symbolic::GuardInput::Int(a.i));
        break;
      case LATHE_VALUE_BOOL:
        in.push_back(symbolic::GuardInput::Bool(a.i != 0));
        break;
      case LATHE_VALUE_FLOAT:
        in.push_back(symbolic::GuardInput::Float(a.f));
        break;
      case LATHE_VALUE_NONE:
        in.push_back(symbolic::GuardInput::None());
        break;
      default:
        return LATHE_GUARDS_OTHER_INPUTS;
    }
  }
  // Check() names no guard when an input is not what the guards read (a
  // tensor of another rank, a number for a tensor).
  int failed = -1;
  if (guards->Check(in, &failed)) return LATHE_GUARDS_HOLD;
  return failed >= 0 ? failed : LATHE_GUARDS_OTHER_INPUTS;
}

}  // namespace lathe
