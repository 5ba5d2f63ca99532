#include "passes/pass_testing.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/pipeline.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"
#include "testing/file_check.h"

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

// The same deterministic inputs for every placeholder of `graph` (shapes
// propagated in `env`: a symbolic size takes its hint).
absl::StatusOr<std::vector<ir::Value>> Inputs(const ir::Graph& graph,
                                              symbolic::ShapeEnv& env) {
  std::vector<ir::Value> inputs;
  int k = 0;
  for (ir::Node* p : graph.Placeholders()) {
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor) {
      return absl::UnimplementedError(
          absl::StrCat("input '", p->name(), "' is not a tensor"));
    }
    std::vector<int64_t> sizes;
    for (symbolic::Expr e : p->meta().tensor.sizes) {
      std::optional<symbolic::Value> hint = env.Hint(e);
      if (!hint.has_value() || hint->type != symbolic::ExprType::kInt) {
        return absl::UnimplementedError(
            absl::StrCat("input '", p->name(), "' has a size with no hint"));
      }
      sizes.push_back(hint->i);
    }
    ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(sizes, p->meta().tensor.dtype));
    const bool integral = IsIntegral(t.dtype(), /*include_bool=*/true);
    int64_t i = 0;
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
      t.SetDouble(j, integral
                         ? (i + k) % 2
                         : static_cast<double>((i * 7 + 3 * k) % 13 - 6) / 4);
      ++i;
    });
    ++k;
    inputs.push_back(ir::Value::OfTensor(std::move(t)));
  }
  return inputs;
}

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// An error naming the first element where `got` and `want` differ.
absl::Status SameBits(const Tensor& got, const Tensor& want,
                      const std::string& what) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    return absl::InternalError(
        absl::StrCat(what, ": shape or dtype differs after the pass"));
  }
  absl::Status st;
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> j) {
    if (st.ok() && Bits(got.GetDouble(j)) != Bits(want.GetDouble(j))) {
      st = absl::InternalError(absl::StrCat(
          what, ": element ", absl::StrJoin(j, ","), " is ", got.GetDouble(j),
          " after the pass, ", want.GetDouble(j), " before"));
    }
  });
  return st;
}

}  // namespace

absl::StatusOr<PassResult> RunPassAndCompare(absl::string_view text,
                                             std::unique_ptr<Pass> pass) {
  ASSIGN_OR_RETURN(PassResult r, RunPass(text, std::move(pass)));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> before, ir::ParseGraph(r.before));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> after, ir::ParseGraph(r.after));
  symbolic::ShapeEnv env_before, env_after;
  RETURN_IF_ERROR(ir::PropagateShapes(*before, env_before));
  RETURN_IF_ERROR(ir::PropagateShapes(*after, env_after));
  ASSIGN_OR_RETURN(std::vector<ir::Value> in_before,
                   Inputs(*before, env_before));
  ASSIGN_OR_RETURN(std::vector<ir::Value> in_after, Inputs(*after, env_after));
  ASSIGN_OR_RETURN(ir::Interpretation want, ir::Interpret(*before, in_before));
  absl::StatusOr<ir::Interpretation> got = ir::Interpret(*after, in_after);
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "\nBefore:\n",
                                               r.before, "After:\n", r.after));
  };
  if (!got.ok()) return fail(got.status());
  if (got->outputs.size() != want.outputs.size()) {
    return fail(absl::InternalError("the number of outputs changed"));
  }
  // Whether value `v` shares a storage with tensor value `w`.
  auto shares = [](const ir::Value& v, const ir::Value& w) {
    return v.is_tensor() && w.is_tensor() &&
           v.tensor.storage() == w.tensor.storage();
  };
  for (size_t i = 0; i < want.outputs.size(); ++i) {
    const ir::Value &w = want.outputs[i], &g = got->outputs[i];
    std::string what = absl::StrCat("output ", i);
    if (w.is_tensor() != g.is_tensor()) {
      return fail(absl::InternalError(absl::StrCat(what, ": kind changed")));
    }
    if (w.is_tensor()) {
      if (absl::Status s = SameBits(g.tensor, w.tensor, what); !s.ok()) {
        return fail(s);
      }
    } else if (w.is_number() && (!g.is_number() || w.number != g.number)) {
      return fail(absl::InternalError(absl::StrCat(what, ": value changed")));
    }
    for (size_t k = 0; k < in_after.size(); ++k) {
      if (shares(g, in_after[k]) && !shares(w, in_before[k])) {
        return fail(absl::InternalError(absl::StrCat(
            what, " shares input ", k, "'s storage only after the pass")));
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (shares(g, got->outputs[j]) && !shares(w, want.outputs[j])) {
        return fail(absl::InternalError(absl::StrCat(
            what, " shares output ", j, "'s storage only after the pass")));
      }
    }
  }
  for (size_t k = 0; k < in_after.size(); ++k) {
    if (absl::Status s = SameBits(in_after[k].tensor, in_before[k].tensor,
                                  absl::StrCat("input ", k, " (final value)"));
        !s.ok()) {
      return fail(s);
    }
  }
  return r;
}

absl::StatusOr<PassResult> RunPass(absl::string_view text,
                                   std::unique_ptr<Pass> pass) {
  ASSIGN_OR_RETURN(ir::ParsedGraph parsed, ir::ParseGraphWithStyle(text));
  ir::Graph& graph = *parsed.graph;
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(graph, env));
  PassResult r;
  r.before = ir::PrintGraph(graph, parsed.style);
  PassPipeline pipeline;
  pipeline.AddPass<Borrowed>(std::move(pass));
  PassContext ctx(env);
  ASSIGN_OR_RETURN(PipelineReport report, pipeline.Run(graph, ctx));
  r.changed = report.changed;
  r.after = ir::PrintGraph(graph, parsed.style);
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
