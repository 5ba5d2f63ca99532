#include "passes/pipeline.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/graph_text.h"
#include "passes/functional_invariant.h"
#include "passes/invariants.h"
#include "status_macros.h"

namespace lathe::passes {

struct PassPipeline::State {
  const PipelineOptions& options;
  PipelineReport& report;
  AliasSnapshot aliasing;
  bool functional = true;
  // The passes since the last check that said they changed nothing (so the
  // invariants the last check saw still hold, unless one of them is wrong).
  std::vector<std::string> unchecked;
};

PassPipeline& PassPipeline::AddFixedPoint(int max_iterations) {
  steps_.push_back(
      Step{nullptr, std::make_unique<PassPipeline>(), max_iterations});
  return *steps_.back().group;
}

std::string PassPipeline::Describe() const {
  std::vector<std::string> names;
  for (const Step& s : steps_) {
    names.push_back(s.pass != nullptr ? std::string(s.pass->name())
                                      : absl::StrCat("fixed_point(",
                                                     s.group->Describe(), ")"));
  }
  return absl::StrJoin(names, ", ");
}

namespace {

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::Status PassPipeline::RunSteps(ir::Graph& graph, PassContext& ctx,
                                    State& state, bool& changed) {
  for (Step& step : steps_) {
    if (step.group != nullptr) {
      int k = 0;
      for (bool again = true; again; ++k) {
        if (k == step.max_iterations) {
          ctx.Log("fixed_point(", step.group->Describe(), "): stopped after ",
                  k, " iterations, still changing");
          break;
        }
        again = false;
        RETURN_IF_ERROR(step.group->RunSteps(graph, ctx, state, again));
        changed = changed || again;
      }
      continue;
    }
    Pass& pass = *step.pass;
    // The functional invariant is checked no more after a pass that adds
    // mutation: the passes before it that said they changed nothing are
    // checked for it now.
    if (state.options.check_invariants && pass.AddsMutation() &&
        state.functional && !state.unchecked.empty()) {
      const auto check_start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(CheckInvariants(graph, ctx, state, /*pass=*/nullptr));
      state.report.runs.back().check_seconds += Since(check_start);
    }
    PassRun run;
    run.name = std::string(pass.name());
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> did = pass.Run(graph, ctx);
    run.seconds = Since(start);
    if (!did.ok()) {
      return absl::Status(
          did.status().code(),
          absl::StrCat("pass ", run.name, ": ", did.status().message()));
    }
    run.changed = *did;
    changed = changed || *did;
    if (pass.AddsMutation()) state.functional = false;
    // A pass that changed nothing leaves the invariants as the last check
    // found them: the checks run after the passes that change the graph
    // (most of a pipeline's runs change nothing: 10 of ResNet-18's 14), and
    // once more at the end after passes that said they did not.
    if (state.options.check_invariants) {
      if (run.changed) {
        start = std::chrono::steady_clock::now();
        RETURN_IF_ERROR(CheckInvariants(graph, ctx, state, &run.name));
        run.check_seconds = Since(start);
      } else {
        state.unchecked.push_back(run.name);
      }
    }
    if (state.options.dump) {
      state.report.dumps.push_back(
          {absl::StrFormat("%02d-%s.txt", state.report.runs.size() + 1,
                           run.name),
           ir::PrintGraph(graph)});
    }
    state.report.runs.push_back(std::move(run));
  }
  return absl::OkStatus();
}

absl::StatusOr<PipelineReport> PassPipeline::Run(
    ir::Graph& graph, PassContext& ctx, const PipelineOptions& options) {
  PipelineReport report;
  // The functional invariant holds from functionalization to reinplace; a
  // graph that never had it (a pass test's mutating input) is not held to
  // it.
  State state{options,
              report,
              TakeAliasSnapshot(graph),
              options.check_invariants && CheckFunctional(graph).ok(),
              {}};
  if (options.check_invariants) {
    // What the walk hands the passes must already hold: metas current (AOT
    // dispatch keeps them so, without re-propagating) and bound.
    absl::Status s = CheckMetas(graph, ctx.env());
    if (s.ok()) s = CheckUnbackedBindings(graph, ctx.env());
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat("before the first pass: ", s.message()));
    }
  }
  bool changed = false;
  RETURN_IF_ERROR(RunSteps(graph, ctx, state, changed));
  // (A pass that said it changed nothing is in report.runs too.)
  if (options.check_invariants && !state.unchecked.empty()) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(CheckInvariants(graph, ctx, state, /*pass=*/nullptr));
    report.runs.back().check_seconds += Since(start);
  }
  report.changed = changed;
  return report;
}

absl::Status PassPipeline::CheckInvariants(ir::Graph& graph, PassContext& ctx,
                                           State& state,
                                           const std::string* pass) {
  auto broke = [&](const absl::Status& s) {
    // The pass that changed the graph, or one before it that said it did
    // not.
    const std::string quiet = absl::StrJoin(state.unchecked, ", ");
    const bool one = state.unchecked.size() == 1;
    std::string after =
        pass == nullptr ? absl::StrCat("after ", one ? "pass " : "passes ",
                                       quiet, ", which said ",
                                       one ? "it" : "they", " changed nothing")
        : quiet.empty() ? absl::StrCat("after pass ", *pass)
                        : absl::StrCat("after pass ", *pass, " (or ", quiet,
                                       ", which said ", one ? "it" : "they",
                                       " changed nothing)");
    return absl::InternalError(absl::StrCat(after, ": ", s.message()));
  };
  if (state.functional) {
    if (absl::Status s = CheckFunctional(graph); !s.ok()) return broke(s);
  }
  if (absl::Status s = CheckMetas(graph, ctx.env()); !s.ok()) return broke(s);
  if (absl::Status s = CheckNoNewAliasing(state.aliasing, graph); !s.ok()) {
    return broke(s);
  }
  if (absl::Status s = CheckUnbackedBindings(graph, ctx.env()); !s.ok()) {
    return broke(s);
  }
  state.unchecked.clear();
  return absl::OkStatus();
}

}  // namespace lathe::passes
