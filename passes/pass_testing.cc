#include "passes/pass_testing.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "passes/pipeline.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"
#include "tools/testing/file_check.h"

namespace lathe::passes {

namespace {

// Runs one given pass (the pipeline owns what AddPass makes).
class Borrowed : public Pass {
 public:
  explicit Borrowed(std::unique_ptr<Pass> pass) : pass_(std::move(pass)) {}
  absl::string_view name() const override { return pass_->name(); }
  absl::StatusOr<bool> Run(ir::Graph& g, PassContext& ctx) override {
    return pass_->Run(g, ctx);
  }
  bool AddsMutation() const override { return pass_->AddsMutation(); }

 private:
  std::unique_ptr<Pass> pass_;
};

}  // namespace

absl::StatusOr<PassResult> RunPass(absl::string_view text,
                                   std::unique_ptr<Pass> pass) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*graph, env));
  PassResult r;
  r.before = ir::PrintGraph(*graph);
  PassPipeline pipeline;
  pipeline.AddPass<Borrowed>(std::move(pass));
  PassContext ctx(env);
  ASSIGN_OR_RETURN(PipelineReport report, pipeline.Run(*graph, ctx));
  r.changed = report.changed;
  r.after = ir::PrintGraph(*graph);
  return r;
}

absl::Status RunPassAndFileCheck(absl::string_view text,
                                 std::unique_ptr<Pass> pass,
                                 std::optional<absl::string_view> checks) {
  std::string name(pass->name());
  ASSIGN_OR_RETURN(PassResult r, RunPass(text, std::move(pass)));
  if (!checks.has_value()) {
    if (r.changed) {
      return absl::FailedPreconditionError(absl::StrCat(
          name, " reported a change; expected none. After:\n", r.after));
    }
    if (r.after != r.before) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, " reported no change but the graph changed:\n",
                       r.before, "became\n", r.after));
    }
    return absl::OkStatus();
  }
  if (!r.changed) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " reported no change; expected one. Graph:\n", r.after));
  }
  if (r.after == r.before) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " reported a change but the text is identical:\n", r.after));
  }
  absl::Status fc = testing::RunFileCheck(r.after, *checks);
  if (!fc.ok()) {
    return absl::Status(fc.code(),
                        absl::StrCat(fc.message(), "\nGraph:\n", r.after));
  }
  return absl::OkStatus();
}

}  // namespace lathe::passes
