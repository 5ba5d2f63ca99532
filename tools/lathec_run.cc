#include "tools/lathec_run.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "aot/flatten_composites.h"
#include "aot/runtime_wrapper_plan.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "driver/arguments.h"
#include "driver/compile.h"
#include "driver/freeze.h"
#include "driver/variant_compiler.h"
#include "ir/graph.h"
#include "ir/ops_util.h"
#include "runtime/artifact.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/file_io.h"
#include "runtime/storage.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"
#include "tools/input_arguments.h"
#include "tools/input_sets.h"
#include "tools/result_files.h"
#include "tools/trace/compile_trace.h"
#include "tools/trace/dot_svg.h"
#include "tools/trace/trace.h"

namespace lathe {

const char kLathecUsage[] =
    "usage: lathec run (GRAPH | --artifact DIR) (--input NAME=FILE.npy ... | "
    "--inputs DIR ...) [--backend interp|cpu|cuda] --out DIR [--dump-dir DIR] "
    "[--cuda-arch sm_80,...] [--trace FILE] [--max-memory BYTES] "
    "[--max-elements N] "
    "[--max-compiles N] [--passes NAME,NAME,...|none] "
    "[--freeze NAME=FILE.npy ...] [--autotune]\n"
    "       lathec compile GRAPH -o DIR [--input NAME=FILE.npy ... | --inputs "
    "DIR] [--backend cpu|cuda] [--cuda-arch sm_80,sm_90] [--trace FILE] "
    "[--freeze NAME=FILE.npy ...] [--autotune]\n"
    "       lathec guards GRAPH [--input NAME=FILE.npy ... | --inputs DIR] "
    "[--freeze NAME=FILE.npy ...] [--trace FILE]";

namespace {

// Graph text larger than this is refused before it is parsed.
constexpr int64_t kMaxGraphBytes = int64_t{64} << 20;
// The most compiles one replay makes unless --max-compiles says otherwise.
constexpr int kMaxCompiles = 8;
// The file that marks a directory as lathec's own dump (see the top).
constexpr char kDumpMarker[] = ".lathec-dump";

// "512M" -> 536870912.
absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
    }
  }
  if (shift != 0) text.remove_suffix(1);
  int64_t n;
  if (!absl::SimpleAtoi(text, &n) || n <= 0 ||
      n > (int64_t{1} << (62 - shift))) {
    return absl::InvalidArgumentError(
        "--max-memory expects a positive number of bytes (e.g. 4G)");
  }
  return n << shift;
}

// `path` made absolute and lexically normal ("./out/" and "out" alike),
// ending in '/'.
std::string Absolute(const std::string& path) {
  std::vector<std::string> parts;
  std::string full = path;
  if (!absl::StartsWith(path, "/")) {
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) != nullptr)
      full = absl::StrCat(cwd, "/", path);
  }
  for (absl::string_view part : absl::StrSplit(full, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.emplace_back(part);
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"), parts.empty() ? "" : "/");
}

struct RunOptions {
  std::string graph;
  std::string artifact;  // --artifact DIR instead of GRAPH
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> file
  std::vector<std::pair<std::string, std::string>> freeze;  // name -> file
  std::vector<std::string> input_dirs;
  std::string backend = "interp";
  std::string out;
  std::string dump_dir;
  std::string trace;  // --trace FILE: the compile report's trace
  int64_t max_memory = DefaultMaxMemory();
  int64_t max_elements = ir::MaxOpElements();
  std::optional<std::vector<std::string>> passes;  // default pipeline: none
  int max_compiles = kMaxCompiles;
  std::vector<int> cuda_archs;  // --cuda-arch sm_80,sm_90 -> {80, 90}
  bool autotune = false;        // --autotune (driver/autotune.h)
};

// "sm_80,sm_90" -> {80, 90}.
absl::StatusOr<std::vector<int>> ParseCudaArchs(absl::string_view text) {
  std::vector<int> archs;
  for (absl::string_view a : absl::StrSplit(text, ',')) {
    int arch = 0;
    if (!absl::ConsumePrefix(&a, "sm_") || !absl::SimpleAtoi(a, &arch) ||
        arch < 50 || arch > 200) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--cuda-arch expects sm_NN,sm_NN,... (e.g. sm_80,sm_90), got '", text,
          "'"));
    }
    archs.push_back(arch);
  }
  return archs;
}

absl::StatusOr<RunOptions> ParseRun(const std::vector<std::string>& args) {
  RunOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](absl::string_view flag) -> absl::StatusOr<std::string> {
      std::string prefix = absl::StrCat(flag, "=");
      if (absl::StartsWith(a, prefix)) return a.substr(prefix.size());
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      return args[++i];
    };
    if (a == "--input" || absl::StartsWith(a, "--input=")) {
      ASSIGN_OR_RETURN(std::string v, value("--input"));
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--input expects NAME=FILE.npy, got '", v, "'"));
      }
      o.inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--freeze" || absl::StartsWith(a, "--freeze=")) {
      ASSIGN_OR_RETURN(std::string v, value("--freeze"));
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--freeze expects NAME=FILE.npy, got '", v, "'"));
      }
      o.freeze.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--inputs" || absl::StartsWith(a, "--inputs=")) {
      ASSIGN_OR_RETURN(std::string v, value("--inputs"));
      o.input_dirs.push_back(v);
    } else if (a == "--artifact" || absl::StartsWith(a, "--artifact=")) {
      ASSIGN_OR_RETURN(o.artifact, value("--artifact"));
    } else if (a == "--backend" || absl::StartsWith(a, "--backend=")) {
      ASSIGN_OR_RETURN(o.backend, value("--backend"));
    } else if (a == "--cuda-arch" || absl::StartsWith(a, "--cuda-arch=")) {
      ASSIGN_OR_RETURN(std::string v, value("--cuda-arch"));
      ASSIGN_OR_RETURN(o.cuda_archs, ParseCudaArchs(v));
    } else if (a == "--out" || absl::StartsWith(a, "--out=")) {
      ASSIGN_OR_RETURN(o.out, value("--out"));
    } else if (a == "--dump-dir" || absl::StartsWith(a, "--dump-dir=")) {
      ASSIGN_OR_RETURN(o.dump_dir, value("--dump-dir"));
    } else if (a == "--trace" || absl::StartsWith(a, "--trace=")) {
      ASSIGN_OR_RETURN(o.trace, value("--trace"));
    } else if (a == "--passes" || absl::StartsWith(a, "--passes=")) {
      ASSIGN_OR_RETURN(std::string v, value("--passes"));
      o.passes.emplace();
      if (v != "none") *o.passes = absl::StrSplit(v, ',', absl::SkipEmpty());
      if (v != "none" && o.passes->empty()) {
        return absl::InvalidArgumentError(
            "--passes expects NAME,NAME,... or none");
      }
    } else if (a == "--max-compiles" ||
               absl::StartsWith(a, "--max-compiles=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-compiles"));
      if (!absl::SimpleAtoi(v, &o.max_compiles) || o.max_compiles < 1 ||
          o.max_compiles > 1000) {
        return absl::InvalidArgumentError(
            "--max-compiles expects a number from 1 to 1000");
      }
    } else if (a == "--autotune") {
      o.autotune = true;
    } else if (a == "--max-memory" || absl::StartsWith(a, "--max-memory=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-memory"));
      ASSIGN_OR_RETURN(o.max_memory, ParseBytes(v));
    } else if (a == "--max-elements" ||
               absl::StartsWith(a, "--max-elements=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-elements"));
      if (!absl::SimpleAtoi(v, &o.max_elements) || o.max_elements < 1) {
        return absl::InvalidArgumentError(
            "--max-elements expects a positive number of elements");
      }
    } else if (absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else if (o.graph.empty()) {
      o.graph = a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (!o.artifact.empty() && !o.graph.empty()) {
    return absl::InvalidArgumentError(
        "give either GRAPH or --artifact DIR, not both");
  }
  // An artifact is compiled already: what would steer a compile is refused.
  for (const std::string& a : args) {
    for (const char* flag :
         {"--backend", "--cuda-arch", "--dump-dir", "--trace", "--passes",
          "--max-compiles", "--autotune"}) {
      if (!o.artifact.empty() &&
          (a == flag || absl::StartsWith(a, absl::StrCat(flag, "=")))) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, " steers a compile; an --artifact is compiled already"));
      }
    }
  }
  if (o.graph.empty() && o.artifact.empty()) {
    return absl::InvalidArgumentError("no GRAPH (or --artifact DIR) given");
  }
  if (o.out.empty()) return absl::InvalidArgumentError("no --out DIR given");
  if (o.inputs.empty() == o.input_dirs.empty() &&
      !(o.inputs.empty() && o.input_dirs.empty())) {
    return absl::InvalidArgumentError(
        "use either --input or --inputs, not both");
  }
  if (!o.dump_dir.empty()) {
    auto inside = [](const std::string& a, const std::string& b) {
      std::string x = Absolute(a), y = Absolute(b);
      return absl::StartsWith(x, y) || absl::StartsWith(y, x);
    };
    if (inside(o.out, o.dump_dir)) {
      return absl::InvalidArgumentError(
          "--dump-dir and --out must be separate directories");
    }
  }
  if (!o.cuda_archs.empty() && o.backend != "cuda") {
    return absl::InvalidArgumentError("--cuda-arch needs --backend cuda");
  }
  if (o.autotune && o.artifact.empty() && o.backend != "cpu") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--autotune tunes the cpu backend's kernels (--backend cpu), not ",
        o.backend, "'s"));
  }
  RETURN_IF_ERROR(BackendNamed(o.backend).status());
  return o;
}

// With --autotune: what the tuner chose and measured, or why it did not.
void PrintTuning(const CompiledGraph& g) {
  for (const std::string& line : g.log) {
    if (absl::StartsWith(line, "autotune: ")) std::printf("%s\n", line.c_str());
  }
}

std::string CacheNote(const codegen::CpuStats& st) {
  return st.cache_hit.empty() ? ""
                              : absl::StrCat(" (", st.cache_hit, " cache hit)");
}

// The compile options of a run with `hints` for the graph's symbols (as
// PyTorch compiles with example inputs: sizes 0 and 1 are specialized).
CompileOptions CompileOptionsOf(
    const RunOptions& o,
    const absl::flat_hash_map<std::string, symbolic::Value>& hints = {}) {
  CompileOptions options;
  options.source = o.graph;
  options.hints = hints;
  options.dump = !o.dump_dir.empty() || !o.trace.empty();
  options.only_passes = o.passes;
  options.cuda_archs = o.cuda_archs;
  options.autotune = o.autotune;
  return options;
}

// Freezing (driver/freeze.h): the values --freeze gives, read into
// `frozen`, and `parsed` made the graph that reads them (and every input a
// `# lathe: constant` line names) as constants; calls take the others.
absl::Status FreezeParsed(const RunOptions& o, ParsedGraph* parsed,
                          ir::Constants* frozen) {
  for (const auto& [name, file] : o.freeze) {
    if (frozen->contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--freeze ", name, " given twice"));
    }
    ASSIGN_OR_RETURN(Tensor t, ReadNpy(file));
    (*frozen)[name] = ir::Value::OfTensor(std::move(t));
  }
  if (frozen->empty() && parsed->written->attributes().constants.empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<ir::Graph>> g =
      FreezeInputs(*parsed->written, *frozen, /*owned=*/nullptr);
  if (!g.ok()) {
    return absl::Status(g.status().code(), absl::StrCat(parsed->source, ": ",
                                                        g.status().message()));
  }
  parsed->written = *std::move(g);
  return absl::OkStatus();
}

// The tensors of `values` (composites' inner ones too) copied to the CUDA
// device (`to_device`) or back to the host: lathec's inputs come from .npy
// files and its results go to them, around kernels on a device.
absl::Status MoveTensors(absl::Span<Operand> values, bool to_device) {
  for (Operand& v : values) {
    if (v.kind == Operand::Kind::kComposite && v.composite != nullptr) {
      auto moved = std::make_shared<CompositeTensor>(*v.composite);
      RETURN_IF_ERROR(MoveTensors(absl::MakeSpan(moved->inner), to_device));
      v.composite = std::move(moved);
      continue;
    }
    if (v.kind != Operand::Kind::kTensor || !v.tensor.defined()) continue;
    if (to_device) {
      ASSIGN_OR_RETURN(v.tensor, ToDevice(v.tensor, Device::Cuda(0)));
    } else if (v.tensor.device().is_cuda()) {
      ASSIGN_OR_RETURN(v.tensor, ToHost(v.tensor));
    }
  }
  return absl::OkStatus();
}

// Runs every set through one CompiledFunction (runtime/compiled_function.h)
// for the run's backend (a set its variants' guards refuse compiles again,
// with the first set's sizes as the first compile's hints; the interpreter
// backend's variants are compiled graphs it runs); prints compiles=N and the
// reason of each recompile for several sets.
absl::StatusOr<std::vector<PendingFile>> RunCompiled(
    const RunOptions& o, VariantCompiler& compiler, const ir::Graph& written,
    const Composites& composites, const std::vector<InputSet>& sets,
    std::vector<std::string>* report, std::vector<std::string>* stats) {
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> f,
                   compiler.Function({.max_compiles = o.max_compiles}));
  const std::vector<std::string> constants = ConstantsOf(written);
  std::vector<PendingFile> all;
  size_t reported = 0;
  double seconds = 0;
  std::vector<bool> written_args;
  for (size_t k = 0; k < sets.size(); ++k) {
    const InputSet& set = sets[k];
    SymbolValues values = ValuesOf(written, composites, set);
    auto error = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat(set.label, s.message()));
    };
    absl::StatusOr<std::vector<Operand>> args =
        LoadArguments(written, written, composites, set, values, constants);
    if (!args.ok()) return error(args.status());
    const bool on_device = o.backend == "cuda";
    if (on_device) {
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*args), true)));
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Operand>> results =
        f->Call(absl::MakeSpan(*args));
    if (on_device && results.ok()) {
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*results), false)));
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*args), false)));
    }
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!results.ok()) return error(results.status());
    std::vector<Recompile> recompiles = f->recompiles();
    for (; reported < recompiles.size(); ++reported) {
      report->push_back(
          absl::StrCat("recompile ", reported + 1, " for ", set.label,
                       "guard failed: ", recompiles[reported].reason));
    }
    if (compiler.compiled().empty()) {
      return absl::InternalError("the compiled function compiled nothing");
    }
    // Every variant of the graph writes the same arguments.
    const CompiledGraph& first = *compiler.compiled().front();
    written_args = compiler.WrittenArguments();
    std::string prefix = o.input_dirs.empty() ? "" : absl::StrCat(k, "/");
    ASSIGN_OR_RETURN(std::vector<PendingFile> files,
                     ResultFiles(first.aot.signature, first.aot.names, *results,
                                 *args, written_args, prefix));
    for (PendingFile& file : files) all.push_back(std::move(file));
  }
  if (!o.input_dirs.empty()) {
    report->insert(report->begin(), absl::StrCat("compiles=", f->compiles()));
  }
  // Past the limit, the function itself warned (once, on stderr).
  // What the cpu backend did, per compile.
  for (const auto& c : compiler.compiled()) {
    if (c->function == nullptr) continue;  // the interpreter's
    const codegen::CpuStats& st = c->function->stats();
    stats->push_back(absl::StrFormat(
        "%s backend: %d kernels (%d before fusion); lathe %.1f ms, C++ "
        "compiler %.0f ms%s; %zu run(s), %.3f ms each",
        o.backend, st.kernels, st.kernels_unfused, st.lower_seconds * 1e3,
        st.compiler_seconds * 1e3, CacheNote(st), sets.size(),
        (seconds - compiler.compile_seconds()) * 1e3 / sets.size()));
  }
  return all;
}

// `lathec run --artifact DIR`: the artifact's function, loaded with the
// runtime alone (no compile: a set its guards refuse is an error naming the
// guard), on every input set.
absl::Status RunArtifact(const RunOptions& o) {
  ASSIGN_OR_RETURN(LoadedArtifact a, LoadArtifact(o.artifact));
  const Manifest& m = a.manifest;
  // Kernels on a device: the arguments are arranged on the host (as the
  // manifest lays them out, there), then copied to the device.
  const bool on_device = HoldsDeviceKernels(m);
  Manifest on_host = m;
  for (ArgumentSpec& spec : on_host.arguments) spec.device = Device::Cpu();
  ASSIGN_OR_RETURN(ArtifactLayout layout, ArtifactLayoutOf(m));
  ASSIGN_OR_RETURN(std::vector<InputSet> sets,
                   InputSets(o.inputs, o.input_dirs, layout.files, "artifact"));
  std::vector<PendingFile> all;
  for (size_t k = 0; k < sets.size(); ++k) {
    InputSet& set = sets[k];
    auto error = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat(set.label, s.message()));
    };
    RETURN_IF_ERROR(ReadSet(set));
    absl::StatusOr<std::vector<Operand>> args =
        ArtifactArguments(on_host, layout, set);
    if (!args.ok()) return error(args.status());
    if (on_device) {
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*args), true)));
    }
    absl::StatusOr<std::vector<Operand>> results =
        a.function->Call(absl::MakeSpan(*args));
    if (!results.ok()) return error(results.status());
    if (on_device) {
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*results), false)));
      RETURN_IF_ERROR(error(MoveTensors(absl::MakeSpan(*args), false)));
    }
    std::vector<bool> written(args->size(), false);
    for (int i : m.mutated) written[i] = true;
    std::string prefix = o.input_dirs.empty() ? "" : absl::StrCat(k, "/");
    absl::StatusOr<std::vector<PendingFile>> one = ResultFiles(
        layout.signature, layout.names, *results, *args, written, prefix);
    if (!one.ok()) return error(one.status());
    for (PendingFile& f : *one) all.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(StagedDir out, StageResultFiles(o.out, all));
  RETURN_IF_ERROR(out.Commit());
  for (const PendingFile& f : all) std::printf("%s\n", f.summary.c_str());
  return absl::OkStatus();
}

}  // namespace

namespace {

// --trace FILE: one "parse" step (each command parses its text once), then
// every compile's steps with what each made (tools/trace/compile_trace.h).
absl::Status WriteTrace(const std::string& path, const ParsedGraph& parsed,
                        const std::vector<const CompiledGraph*>& compiles) {
  if (path.empty()) return absl::OkStatus();
  trace::Trace t;
  t.Step("parse", parsed.seconds, {{trace::kText, "graph", parsed.source}});
  for (const CompiledGraph* c : compiles) trace::RecordCompile(*c, &t);
  return t.WriteTo(path);
}

}  // namespace

absl::Status LathecRun(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(RunOptions o, ParseRun(args));
  SetHostMemoryLimit(o.max_memory);
  ir::SetMaxOpElements(o.max_elements);
  if (!o.artifact.empty()) return RunArtifact(o);
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(o.graph, kMaxGraphBytes));
  // The graph as written (its file names, composites and placeholders),
  // parsed once: every compile below starts from it.
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, o.graph));
  ir::Constants frozen;
  RETURN_IF_ERROR(FreezeParsed(o, &parsed, &frozen));
  const ir::Graph* written = parsed.written.get();
  absl::StatusOr<Composites> composites = aot::DeclaredComposites(*written);
  if (!composites.ok()) {
    return absl::Status(
        composites.status().code(),
        absl::StrCat(o.graph, ": ", composites.status().message()));
  }
  std::vector<std::string> names = FileNames(*written, *composites);
  ASSIGN_OR_RETURN(std::vector<InputSet> sets,
                   InputSets(o.inputs, o.input_dirs, names, "graph"));
  for (InputSet& set : sets) RETURN_IF_ERROR(ReadSet(set));

  // Compile with the first set's sizes as hints, and again for a set the
  // compiled variants' guards do not admit (as torch.compile recompiles),
  // through one CompiledFunction.
  std::vector<std::string> report, stats;
  CompileOptions options = CompileOptionsOf(o);
  options.frozen = std::move(frozen);
  ASSIGN_OR_RETURN(options.backend, BackendNamed(o.backend));
  CacheBackend* cache = nullptr;
  if (options.backend != nullptr) {
    ASSIGN_OR_RETURN(cache, DefaultCompileCache());
  }
  VariantCompiler compiler(parsed, options, cache);
  ASSIGN_OR_RETURN(
      std::vector<PendingFile> all,
      RunCompiled(o, compiler, *written, *composites, sets, &report, &stats));
  std::vector<const CompiledGraph*> compiles = compiler.compiled();
  RETURN_IF_ERROR(WriteTrace(o.trace, parsed, compiles));
  for (const std::string& line : report) std::printf("%s\n", line.c_str());
  for (const CompiledGraph* g : compiles) PrintTuning(*g);

  // Everything succeeded: stage every file beside its directory, then move
  // the directories into place (all files of the run appear, or none).
  ASSIGN_OR_RETURN(StagedDir out, StageResultFiles(o.out, all));
  std::optional<StagedDir> dump;
  if (!o.dump_dir.empty()) {
    const CompiledGraph& c = *compiler.compiled().front();
    const codegen::CpuFunction* cpu = c.function.get();
    const aot::RuntimeWrapperPlan& plan = c.aot.plan;
    ASSIGN_OR_RETURN(StagedDir staged,
                     StagedDir::Create(o.dump_dir, kDumpMarker));
    dump.emplace(std::move(staged));
    for (const auto& [name, text] : c.dumps) {
      RETURN_IF_ERROR(dump->Write(name, text));
    }
    std::string steps;
    for (const StepTime& step : c.steps) {
      absl::StrAppend(&steps, absl::StrFormat("%-40s %10.3f ms\n", step.name,
                                              step.seconds * 1e3));
    }
    RETURN_IF_ERROR(dump->Write("steps.txt", steps));
    RETURN_IF_ERROR(dump->Write(
        "passes.log",
        absl::StrCat(absl::StrJoin(c.log, "\n"), c.log.empty() ? "" : "\n")));
    RETURN_IF_ERROR(dump->Write(
        "runtime_wrapper_plan.cc",
        absl::StrCat(plan.has_symbolic_layouts() ? symbolic::CppPrelude() : "",
                     plan.CppSource())));
    RETURN_IF_ERROR(
        dump->Write("subclass_wrapper_plan.cc", c.aot.subclass.CppSource()));
    if (cpu != nullptr) {
      RETURN_IF_ERROR(dump->Write("loop_ir.txt", cpu->unscheduled()));
      RETURN_IF_ERROR(dump->Write("loop_ir_scheduled.txt", cpu->scheduled()));
      RETURN_IF_ERROR(dump->Write("kernel.cc", cpu->source()));
      RETURN_IF_ERROR(dump->Write(
          "fusion.log",
          absl::StrCat(absl::StrJoin(cpu->stats().fusion_log, "\n"), "\n")));
      RETURN_IF_ERROR(dump->Write("graph.dot", cpu->fusion_dot()));
      if (std::optional<std::string> svg = trace::DotToSvg(cpu->fusion_dot())) {
        RETURN_IF_ERROR(dump->Write("graph.svg", *svg));
      }
    }
  }
  RETURN_IF_ERROR(out.Commit());
  if (dump) RETURN_IF_ERROR(dump->Commit());
  for (const PendingFile& f : all) std::printf("%s\n", f.summary.c_str());
  for (const std::string& line : stats) std::printf("%s\n", line.c_str());
  return absl::OkStatus();
}

namespace {

// The options of `lathec compile` and `lathec guards`: GRAPH, -o DIR (compile
// only) and example inputs for hints (--input NAME=FILE.npy).
struct CompileCommand {
  RunOptions run;  // graph, inputs, max_memory
  std::string out;
  std::string backend = "cpu";
};

absl::StatusOr<CompileCommand> ParseCompile(
    const std::vector<std::string>& args, bool needs_out) {
  CompileCommand c;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--out") {
      if (!needs_out) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag ", args[i]));
      }
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(args[i], " needs a value"));
      }
      c.out = args[++i];
    } else if (absl::StartsWith(args[i], "--out=")) {
      c.out = args[i].substr(6);
    } else if (needs_out && args[i] == "--backend") {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError("--backend needs a value");
      }
      c.backend = args[++i];
    } else if (args[i] == "--backend" ||
               absl::StartsWith(args[i], "--backend=") ||
               (!needs_out && (args[i] == "--cuda-arch" ||
                               absl::StartsWith(args[i], "--cuda-arch="))) ||
               args[i] == "--dump-dir" ||
               absl::StartsWith(args[i], "--dump-dir=") ||
               args[i] == "--artifact" ||
               absl::StartsWith(args[i], "--artifact=")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", args[i]));
    } else {
      rest.push_back(args[i]);
    }
  }
  if (needs_out && c.out.empty()) {
    return absl::InvalidArgumentError("no -o DIR given");
  }
  if (c.backend != "cpu" && c.backend != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat(
        "compile makes code for --backend cpu or cuda, not '", c.backend, "'"));
  }

  rest.push_back("--out");
  rest.push_back(needs_out ? c.out : "-");
  if (needs_out) {
    rest.push_back("--backend");
    rest.push_back(c.backend);
  }
  ASSIGN_OR_RETURN(c.run, ParseRun(rest));
  if (c.run.graph.empty()) return absl::InvalidArgumentError("no GRAPH given");

  if (c.run.input_dirs.size() > 1) {
    return absl::InvalidArgumentError(
        "give the example inputs once (--input NAME=FILE.npy ... or one "
        "--inputs DIR)");
  }
  return c;
}

// The graph's compile options with hints from its example inputs, if any.
absl::StatusOr<CompileOptions> OptionsWithHints(const RunOptions& o,
                                                const ir::Graph& written) {
  CompileOptions options = CompileOptionsOf(o);
  options.dump = !o.trace.empty();
  if (o.inputs.empty() && o.input_dirs.empty()) return options;
  ASSIGN_OR_RETURN(Composites composites, aot::DeclaredComposites(written));
  ASSIGN_OR_RETURN(InputSet set, ExampleSet(o.inputs, o.input_dirs,
                                            FileNames(written, composites)));
  RETURN_IF_ERROR(ReadSet(set));
  options.hints = ValuesOf(written, composites, set).hints;
  return options;
}

}  // namespace

absl::Status LathecCompile(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(CompileCommand c, ParseCompile(args, /*needs_out=*/true));
  SetHostMemoryLimit(c.run.max_memory);
  ir::SetMaxOpElements(c.run.max_elements);
  ASSIGN_OR_RETURN(std::string text,
                   ReadFileLimited(c.run.graph, kMaxGraphBytes));
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, c.run.graph));
  ir::Constants frozen;
  RETURN_IF_ERROR(FreezeParsed(c.run, &parsed, &frozen));
  ASSIGN_OR_RETURN(CompileOptions options,
                   OptionsWithHints(c.run, *parsed.written));
  options.frozen = std::move(frozen);
  ASSIGN_OR_RETURN(options.backend, BackendNamed(c.backend));
  options.artifact = true;
  ASSIGN_OR_RETURN(options.cache, DefaultCompileCache());
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> compiled,
                   Compile(parsed, options));
  RETURN_IF_ERROR(AddFrozenFiles(*compiled));
  const CompiledGraph& a = *compiled;
  RETURN_IF_ERROR(WriteTrace(c.run.trace, parsed, {&a}));
  RETURN_IF_ERROR(WriteArtifact(c.out, a.manifest, a.files));
  const codegen::CpuStats& st = a.function->stats();
  // The device kernels' files, after kernel.so and kernel.cc.
  std::string device;
  for (size_t k = 2; k < a.files.size(); ++k) {
    absl::StrAppend(&device, a.files[k].first, ", ");
  }
  std::printf(
      "%s: kernel.so (%zu bytes), kernel.cc, %smanifest.txt (%zu arguments, "
      "%zu results, %zu guards)\n"
      "%s backend: %d kernels (%d before fusion); lathe %.1f ms, C++ "
      "compiler %.0f ms%s\n",
      c.out.c_str(), a.files[0].second.size(), device.c_str(),
      a.manifest.arguments.size(), a.manifest.signature.results.size(),
      a.manifest.guards.size(), c.backend.c_str(), st.kernels,
      st.kernels_unfused, st.lower_seconds * 1e3, st.compiler_seconds * 1e3,
      CacheNote(st).c_str());
  PrintTuning(a);
  return absl::OkStatus();
}

absl::Status LathecGuards(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(CompileCommand c, ParseCompile(args, /*needs_out=*/false));
  SetHostMemoryLimit(c.run.max_memory);
  ir::SetMaxOpElements(c.run.max_elements);
  ASSIGN_OR_RETURN(std::string text,
                   ReadFileLimited(c.run.graph, kMaxGraphBytes));
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, c.run.graph));
  ir::Constants frozen;
  RETURN_IF_ERROR(FreezeParsed(c.run, &parsed, &frozen));
  ASSIGN_OR_RETURN(CompileOptions options,
                   OptionsWithHints(c.run, *parsed.written));
  options.frozen = std::move(frozen);
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> g, Compile(parsed, options));
  RETURN_IF_ERROR(WriteTrace(c.run.trace, parsed, {g.get()}));
  const ir::Graph* written = parsed.written.get();
  if (!g->guards) {
    std::printf("no guards: an input is of a kind guards cannot describe\n");
    return absl::OkStatus();
  }
  std::printf("%d guards:\n", g->guards->size());
  for (int i = 0; i < g->guards->size(); ++i) {
    std::printf("  %d: %s\n", i, GuardText(*written, *g->guards, i).c_str());
  }
  std::vector<int64_t> bounds;
  ASSIGN_OR_RETURN(std::string cpp,
                   codegen::EmitGuards(*g->guards, g->guard_inputs, &bounds));
  std::printf(
      "as C++ (lathe_guards in the .so; in[k] is placeholder k, bounds the "
      "range guards' bounds: {%s}):\n%s",
      absl::StrJoin(bounds, ", ").c_str(), cpp.c_str());
  return absl::OkStatus();
}

}  // namespace lathe
