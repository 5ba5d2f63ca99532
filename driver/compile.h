// -----------------------------------------------------------------------------
// File: compile.h
// -----------------------------------------------------------------------------
//
// The walk (DESIGN.md §1) in one function. Compile() reads top to bottom as
// the steps run:
//
//   parse (once per graph text: Parse())
//   freezing             driver/freeze.h (inputs given at compile time)
//   shape propagation    ir/shape_prop.h
//   AOT dispatch         aot/aot_dispatch.h (composites, functionalization,
//                        the runtime wrapper plan)
//   the pass pipeline    passes/default_pipeline.h
//   guards               symbolic/guards.h
//   -- with a backend (the interpreter runs the graph as it is here) --
//   lowering             codegen/lowering.h
//   scheduling           codegen/scheduler.h (fusion)
//   the kernels          the backend's emitter (codegen/backend.h)
//   the host function    codegen/cpp/wrapper_emitter.h
//   autotuning           driver/autotune.h (when asked for)
//   build                the backend's compiler, through the compile cache
//   the artifact's files and manifest (when asked for)
//   loading              codegen/cpp/cpu_function.h
//
// and records each step's time. lathec (run, compile, guards, replays), the
// compile callback a runtime CompiledFunction calls on a recompile
// (variant_compiler.h), the benchmarks and the tests call it; none repeats a
// step.
//
// Example:
//
//   ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, "mlp.txt"));
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c,
//                    Compile(parsed, {.backend = &codegen::CpuBackend()}));
//   c->graph;      // functional, after the passes: the interpreter's
//   c->function;   // the loaded library
//   c->steps;      // {"parse", 0.0004}, {"shape_prop", ...}, ...

#ifndef LATHE_DRIVER_COMPILE_H_
#define LATHE_DRIVER_COMPILE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aot/aot_dispatch.h"
#include "codegen/backend.h"
#include "codegen/cpp/cpu_function.h"
#include "driver/autotune.h"
#include "ir/graph.h"
#include "runtime/artifact.h"
#include "runtime/cache_backend.h"
#include "runtime/compiled_function.h"
#include "runtime/kernel_abi.h"
#include "runtime/loaded_graph.h"
#include "symbolic/evaluate.h"
#include "symbolic/guards.h"
#include "symbolic/shape_env.h"

namespace lathe {

struct CompileOptions {
  // Where the text came from, for errors ("mlp.txt: line 3: ...").
  std::string source = "graph";
  // Hints by symbol name, beyond the text's `# lathe: hint` lines.
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  // Storage offsets by input name, where the text's annotations say 0: a
  // variant for a call whose tensor begins elsewhere in its storage, which
  // a graph that reads offsets (as_strided, view.dtype) is specialized to.
  absl::flat_hash_map<std::string, int64_t> storage_offsets;
  // Frozen inputs' values, by input name (driver/freeze.h; lathec
  // --freeze): each becomes a constant of the compiled function, as must
  // every input a `# lathe: constant` line names.
  ir::Constants frozen;
  // Run the default pass pipeline after AOT dispatch.
  bool passes = true;
  // Instead of the default pipeline, these passes in this order, each once
  // (passes::PassNames(); lathec --passes).
  std::optional<std::vector<std::string>> only_passes;
  // Check the invariants after every pass.
  bool check_invariants = true;
  // Keep the graph text after AOT and after each pass (CompiledGraph::dumps).
  bool dump = false;
  // The backend that generates code after the guards (BackendNamed()); none:
  // the walk stops at the guards, and the interpreter runs the graph.
  const codegen::Backend* backend = nullptr;
  // With a backend: where it builds (a fresh temporary directory, removed
  // with the function, when empty), and the compile cache the build goes
  // through (none: always build).
  std::string dir;
  CacheBackend* cache = nullptr;
  // With the cuda backend: the architectures an artifact holds cubins for
  // (80 for sm_80; empty: the present device's).
  std::vector<int> cuda_archs;
  // With a backend: also make an artifact's parts (CompiledGraph::manifest
  // and files); an error when the whole user call cannot run inside the
  // library (its runtime or composite wrapper would need the host).
  bool artifact = false;
  // With a backend: only a library the compile cache holds (none: every
  // lookup misses). On a miss nothing is built: the walk stops before the
  // build and returns the graph without a function (CompiledGraph::function
  // null), as a compile without a backend does. VariantCompiler's tiered
  // compiles probe the cache so.
  bool cached_only = false;
  // With the cpu backend: each kernel's thread count measured at compile
  // time (driver/autotune.h; lathec --autotune), or the choices the cache
  // holds for this program and machine. Off in tests but the tuner's own.
  bool autotune = false;
  TuningOptions tuning;
};

// The time one step of the walk took.
struct StepTime {
  std::string name;  // "parse", "aot_dispatch", a pass's name, "guards"
  double seconds = 0;
};

// A graph text parsed: the graph as written (its placeholders, names,
// annotations and declarations), which every compile of it starts from.
struct ParsedGraph {
  std::string source;  // CompileOptions::source for errors
  std::shared_ptr<const ir::Graph> written;
  double seconds = 0;  // the parse's time
};

struct CompiledGraph {
  std::shared_ptr<const ir::Graph> written;  // as parsed
  std::unique_ptr<ir::Graph> graph;          // functional, after the passes
  std::unique_ptr<symbolic::ShapeEnv> env;
  // The frozen constants' values, those the passes computed included (the
  // function holds those the graph still reads).
  ir::Constants frozen;
  aot::AotGraph aot;
  // None when an input is of a kind guards cannot describe (a tuple).
  std::optional<symbolic::GuardSet> guards;
  // The inputs as the guards describe them (one per placeholder as written).
  std::vector<symbolic::InputSpec> guard_inputs;
  std::vector<StepTime> steps;
  // {"00-aot_dispatch.txt", text}, {"01-tensorify_scalars.txt", text}, ...
  std::vector<std::pair<std::string, std::string>> dumps;
  // The passes' decisions, and the float symbols they specialized.
  std::vector<std::string> log;
  std::vector<std::string> specialized;
  // With a backend: the loaded function (null after a cache probe's miss,
  // CompileOptions::cached_only).
  std::unique_ptr<codegen::CpuFunction> function;
  // With CompileOptions::artifact: the manifest (without its files, which
  // WriteArtifact adds) and the files ({"kernel.so", bytes}, ...).
  Manifest manifest;
  std::vector<std::pair<std::string, std::string>> files;

  // This compile as a variant of a CompiledFunction (it must outlive it);
  // needs an artifact's parts.
  Variant AsVariant() const;
  // FailedGuard()
  //
  // The guards on the views of the user's placeholders, as a compiled
  // variant's lathe_guards answers: LATHE_GUARDS_HOLD (also without
  // guards), the index of the first failing guard, or
  // LATHE_GUARDS_OTHER_INPUTS for arguments of kinds or ranks the guards
  // cannot read. An interpreted variant's guards.
  int FailedGuard(const ArgViews& views) const;
};

// AddFrozenFiles()
//
// With frozen constants (CompileOptions::frozen): the files that carry them
// in `c`'s artifact (frozen_K.npy, in the order the library reads them)
// added to c->files and c->manifest. Nothing without them.
absl::Status AddFrozenFiles(CompiledGraph& c);

// BackendNamed()
//
// The backend `name` names on lathec's command line: null for "interp"
// (the walk stops at the guards), the cpu's for "cpu", the cuda one for
// "cuda" where there is a device (CudaDevice(): a GPU, or the emulated one
// LATHE_CUDA_DEVICE=emulated chooses; else its one-line error); an error
// naming the available ones for any other.
absl::StatusOr<const codegen::Backend*> BackendNamed(absl::string_view name);

// Parse()
//
// The walk's first step: `text` parsed once; errors name `source`.
absl::StatusOr<ParsedGraph> Parse(absl::string_view text, std::string source);

// Compile()
//
// The rest of the walk on a copy of `parsed`'s graph (steps[0] is the
// parse); errors name options.source.
absl::StatusOr<std::unique_ptr<CompiledGraph>> Compile(
    const ParsedGraph& parsed, const CompileOptions& options = {});

// CompileGraphText()
//
// Parse, then Compile.
absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraphText(
    absl::string_view text, const CompileOptions& options = {});

}  // namespace lathe

#endif  // LATHE_DRIVER_COMPILE_H_
