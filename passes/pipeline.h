// -----------------------------------------------------------------------------
// File: pipeline.h
// -----------------------------------------------------------------------------
//
// PassPipeline: an explicit list of passes (and groups run to a fixed
// point) that runs them in order, checks the invariants after every pass
// that changed the graph (invariants.h; the functional invariant until a
// pass that adds mutation; once more at the end after passes that said they
// changed nothing),
// times each pass and keeps the graph after each one as parseable text
// (`NN-name.txt`) for --dump-dir.
//
// Example:
//
//   PassPipeline p;
//   p.AddPass<Dce>();
//   PassPipeline& cleanup = p.AddFixedPoint(/*max_iterations=*/4);
//   cleanup.AddPass<Cse>();
//   cleanup.AddPass<Dce>();
//   PassContext ctx(env);
//   ASSIGN_OR_RETURN(PipelineReport r, p.Run(graph, ctx));
//   for (const PassRun& run : r.runs) ...   // name, changed, seconds

#ifndef LATHE_PASSES_PIPELINE_H_
#define LATHE_PASSES_PIPELINE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

// One run of one pass.
struct PassRun {
  std::string name;
  bool changed = false;
  double seconds = 0;  // the pass itself
  // The invariant checks after it (after it changed the graph, or of the
  // passes up to it that said they changed nothing).
  double check_seconds = 0;
};

struct PipelineReport {
  std::vector<PassRun> runs;
  // {"03-cse.txt", graph text} after each pass, when dumping.
  std::vector<std::pair<std::string, std::string>> dumps;
  bool changed = false;
};

struct PipelineOptions {
  bool check_invariants = true;
  bool dump = false;  // fill PipelineReport::dumps
};

class PassPipeline {
 public:
  PassPipeline() = default;
  PassPipeline(PassPipeline&&) = default;
  PassPipeline& operator=(PassPipeline&&) = default;

  // Appends a pass made from `args`; returns it.
  template <typename T, typename... Args>
  T& AddPass(Args&&... args) {
    auto pass = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *pass;
    steps_.push_back(Step{std::move(pass), nullptr, 0});
    return ref;
  }
  // Appends a group of passes (fill the returned pipeline) that runs again
  // while any of its passes changes the graph, at most `max_iterations`
  // times.
  PassPipeline& AddFixedPoint(int max_iterations);

  // The pass names in order, a group as "fixed_point(cse, dce)".
  std::string Describe() const;

  // Runs every step on `graph`; the first pass error or broken invariant
  // (naming the pass) stops it.
  absl::StatusOr<PipelineReport> Run(ir::Graph& graph, PassContext& ctx,
                                     const PipelineOptions& options = {});

 private:
  struct Step {
    std::unique_ptr<Pass> pass;
    std::unique_ptr<PassPipeline> group;
    int max_iterations;
  };
  struct State;
  // The invariants (invariants.h) of `graph` after `pass` changed it (null:
  // at the end, after passes that said they changed nothing).
  absl::Status CheckInvariants(ir::Graph& graph, PassContext& ctx, State& state,
                               const std::string* pass);
  absl::Status RunSteps(ir::Graph& graph, PassContext& ctx, State& state,
                        bool& changed);

  std::vector<Step> steps_;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_PIPELINE_H_
