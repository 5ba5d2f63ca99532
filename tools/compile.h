// -----------------------------------------------------------------------------
// File: compile.h
// -----------------------------------------------------------------------------
//
// The walk (DESIGN.md §1) as one library call: graph text (or a Graph) and
// options in, the compiled result out — the functional graph after AOT
// dispatch and the default pass pipeline, its ShapeEnv, the AOT plans, the
// guards, and the time of each step. lathec and the tests call it.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c,
//                    CompileGraphText(text, {.source = "mlp.txt"}));
//   c->graph;         // ready for the interpreter (and code generation)
//   c->steps;         // {"parse", 0.0004}, {"shape_prop", ...}, ...

#ifndef LATHE_TOOLS_COMPILE_H_
#define LATHE_TOOLS_COMPILE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aot/aot_dispatch.h"
#include "ir/graph.h"
#include "symbolic/evaluate.h"
#include "symbolic/guards.h"
#include "symbolic/shape_env.h"

namespace lathe {

struct CompileOptions {
  // Where the text came from, for errors ("mlp.txt: line 3: ...").
  std::string source = "graph";
  // Hints by symbol name, beyond the text's `# lathe: hint` lines.
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  // Run the default pass pipeline after AOT dispatch.
  bool passes = true;
  // Instead of the default pipeline, these passes in this order, each once
  // (passes::PassNames(); lathec --passes).
  std::optional<std::vector<std::string>> only_passes;
  // Check the invariants after every pass.
  bool check_invariants = true;
  // Keep the graph text after AOT and after each pass (CompiledGraph::dumps).
  bool dump = false;
};

// The time one step of the walk took.
struct StepTime {
  std::string name;  // "parse", "aot_dispatch", a pass's name, "guards"
  double seconds = 0;
};

struct CompiledGraph {
  std::unique_ptr<ir::Graph> graph;  // functional, after the passes
  std::unique_ptr<symbolic::ShapeEnv> env;
  aot::AotGraph aot;
  // None when an input is of a kind guards cannot describe (a None input).
  std::optional<symbolic::GuardSet> guards;
  // The inputs as the guards describe them (one per placeholder as written).
  std::vector<symbolic::InputSpec> guard_inputs;
  std::vector<StepTime> steps;
  // {"00-aot_dispatch.txt", text}, {"01-tensorify_scalars.txt", text}, ...
  std::vector<std::pair<std::string, std::string>> dumps;
  // The passes' decisions, and the float symbols they specialized.
  std::vector<std::string> log;
  std::vector<std::string> specialized;
};

// CompileGraphText()
//
// Parses `text` and compiles it; errors name options.source.
absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraphText(
    absl::string_view text, const CompileOptions& options = {});

// CompileGraph()
//
// Compiles a graph (consumed): AOT dispatch, the default pipeline, guards.
absl::StatusOr<std::unique_ptr<CompiledGraph>> CompileGraph(
    std::unique_ptr<ir::Graph> graph, const CompileOptions& options = {});

}  // namespace lathe

#endif  // LATHE_TOOLS_COMPILE_H_
