#include "passes/pipeline.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGraph[] = R"IR(def forward(self, x: "f32[4]"):
    a = torch.ops.aten.neg.default(x)
    b = torch.ops.aten.neg.default(a)
    c = torch.ops.aten.neg.default(b)
    return (c,)
)IR";

// Rewrites one neg(neg(v)) into v per run (so a fixed point needs several).
class FoldNegNeg : public Pass {
 public:
  absl::string_view name() const override { return "fold_neg_neg"; }
  absl::StatusOr<bool> Run(ir::Graph& g, PassContext& ctx) override {
    for (const auto& n : g.nodes()) {
      if (n->target() != "aten.neg.default") continue;
      ir::Node* in = n->args()[0].node;
      if (in->target() != "aten.neg.default") continue;
      g.ReplaceAllUsesWith(n.get(), in->args()[0].node);
      g.EraseDeadNodes();
      return true;
    }
    return false;
  }
};

// Breaks an invariant: what it does is the constructor's choice ("quiet
// meta", "quiet mutation": breaks a meta or the functional form and says
// it changed nothing; "nothing": changes nothing and says so; "none":
// changes nothing and says it did).
class Breaker : public Pass {
 public:
  explicit Breaker(std::string how, std::string name = "breaker")
      : how_(std::move(how)), name_(std::move(name)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Graph& g, PassContext&) override {
    ir::Node* a = g.Find("a");
    if (how_ == "quiet meta") {
      a->meta().tensor.sizes[0] = symbolic::Int(5);
      return false;
    }
    if (how_ == "quiet mutation") {
      a->set_target("aten.neg_.default");
      return false;
    }
    if (how_ == "nothing") return false;
    if (how_ == "meta") {
      a->meta().tensor.sizes[0] = symbolic::Int(5);
    } else if (how_ == "mutation") {
      a->set_target("aten.neg_.default");
    } else if (how_ == "alias") {
      g.output()->ReplaceInput(g.Find("c"), g.Find("x"));
    } else if (how_ == "error") {
      return absl::InvalidArgumentError("cannot");
    }
    return true;
  }

 private:
  std::string how_, name_;
};

// Says it adds mutation (as reinplace does), and changes nothing.
class Mutator : public Pass {
 public:
  absl::string_view name() const override { return "mutator"; }
  bool AddsMutation() const override { return true; }
  absl::StatusOr<bool> Run(ir::Graph&, PassContext&) override { return true; }
};

struct Fixture {
  std::unique_ptr<ir::Graph> graph;
  symbolic::ShapeEnv env;
};

std::unique_ptr<Fixture> Make() {
  auto f = std::make_unique<Fixture>();
  f->graph = *ir::ParseGraph(kGraph);
  EXPECT_OK(ir::PropagateShapes(*f->graph, f->env));
  return f;
}

TEST(PipelineTest, FixedPointRunsUntilNoChangeAndDumpsEachPass) {
  auto f = Make();
  PassPipeline p;
  PassPipeline& group = p.AddFixedPoint(10);
  group.AddPass<FoldNegNeg>();
  EXPECT_EQ(p.Describe(), "fixed_point(fold_neg_neg)");
  PassContext ctx(f->env);
  ASSERT_OK_AND_ASSIGN(
      PipelineReport r,
      p.Run(*f->graph, ctx, {.check_invariants = true, .dump = true}));
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(r.runs.size(), 2u);  // one fold, then no change
  EXPECT_TRUE(r.runs[0].changed);
  EXPECT_FALSE(r.runs[1].changed);
  EXPECT_GE(r.runs[0].seconds, 0);
  ASSERT_EQ(r.dumps.size(), 2u);
  EXPECT_EQ(r.dumps[0].first, "01-fold_neg_neg.txt");
  EXPECT_EQ(r.dumps[1].first, "02-fold_neg_neg.txt");
  // Dumps parse.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> back,
                       ir::ParseGraph(r.dumps[0].second));
  EXPECT_EQ(ir::PrintGraph(*back), r.dumps[0].second);
  EXPECT_THAT(r.dumps[0].second, HasSubstr("neg.default(x)"));
}

TEST(PipelineTest, IterationCapStopsAndLogs) {
  auto f = Make();
  PassPipeline p;
  p.AddFixedPoint(1).AddPass<FoldNegNeg>();
  PassContext ctx(f->env);
  ASSERT_OK_AND_ASSIGN(PipelineReport r, p.Run(*f->graph, ctx));
  EXPECT_EQ(r.runs.size(), 1u);
  EXPECT_THAT(ctx.log(), ElementsAre(HasSubstr("stopped after 1 iterations")));
}

TEST(PipelineTest, BrokenInvariantsNameThePass) {
  for (const auto& [how, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"meta",
            "after pass breaker: node 'a': meta f32[5][1]cpu is not the op's "
            "meta f32[4][1]cpu"},
           {"mutation",
            "after pass breaker: node 'a': aten.neg_.default "
            "writes its argument"},
           {"alias", "after pass breaker: input 0 and output 0 now share"},
           {"error", "pass breaker: cannot"}}) {
    auto f = Make();
    PassPipeline p;
    p.AddPass<Breaker>(how);
    PassContext ctx(f->env);
    absl::Status s = p.Run(*f->graph, ctx).status();
    EXPECT_THAT(std::string(s.message()), HasSubstr(message)) << how;
  }
}

// The invariants are checked after a pass that changed the graph, not
// after one that said it changed nothing (the last check's findings still
// hold). One that said so wrongly is still caught: by the check after the
// next pass that changes the graph, or at the end, which name it.
TEST(PipelineTest, PassesThatChangedNothingAreCheckedAfterTheNextChange) {
  const std::string stale =
      "node 'a': meta f32[5][1]cpu is not the op's meta f32[4][1]cpu";
  {
    auto f = Make();
    PassPipeline p;
    p.AddPass<Breaker>("nothing", "quiet");
    p.AddPass<Breaker>("none", "changer");
    p.AddPass<Breaker>("nothing", "last");
    PassContext ctx(f->env);
    ASSERT_OK_AND_ASSIGN(PipelineReport r, p.Run(*f->graph, ctx));
    ASSERT_EQ(r.runs.size(), 3u);
    EXPECT_EQ(r.runs[0].check_seconds, 0);
    EXPECT_GT(r.runs[1].check_seconds, 0);
    EXPECT_GT(r.runs[2].check_seconds, 0);  // the check at the end
  }
  {
    auto f = Make();
    PassPipeline p;
    p.AddPass<Breaker>("quiet meta", "liar");
    p.AddPass<Breaker>("none", "changer");
    PassContext ctx(f->env);
    EXPECT_THAT(p.Run(*f->graph, ctx).status(),
                StatusIs(absl::StatusCode::kInternal,
                         HasSubstr("after pass changer (or liar, which said "
                                   "it changed nothing): " +
                                   stale)));
  }
  // Before a pass that adds mutation (after which the functional form is
  // checked no more), the quiet passes are checked with it.
  {
    auto f = Make();
    PassPipeline p;
    p.AddPass<Breaker>("quiet mutation", "liar");
    p.AddPass<Mutator>();
    PassContext ctx(f->env);
    EXPECT_THAT(p.Run(*f->graph, ctx).status(),
                StatusIs(absl::StatusCode::kInternal,
                         HasSubstr("after pass liar, which said it changed "
                                   "nothing: node 'a': aten.neg_.default "
                                   "writes its argument")));
  }
  for (int quiet : {1, 2}) {
    auto f = Make();
    PassPipeline p;
    p.AddPass<Breaker>("quiet meta", "liar");
    if (quiet == 2) p.AddPass<Breaker>("nothing", "quiet");
    PassContext ctx(f->env);
    EXPECT_THAT(
        p.Run(*f->graph, ctx).status(),
        StatusIs(absl::StatusCode::kInternal,
                 HasSubstr(quiet == 1 ? "after pass liar, which said it "
                                        "changed nothing: " +
                                            stale
                                      : "after passes liar, quiet, which "
                                        "said they changed nothing: " +
                                            stale)));
  }
}

// A graph handed over with a stale meta is refused before any pass runs.
TEST(PipelineTest, StaleMetaOnEntryIsRefused) {
  auto f = Make();
  f->graph->Find("b")->meta().tensor.sizes[0] = symbolic::Int(5);
  PassPipeline p;
  p.AddPass<FoldNegNeg>();
  PassContext ctx(f->env);
  EXPECT_THAT(p.Run(*f->graph, ctx).status(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("before the first pass: node 'b': meta "
                                 "f32[5][1]cpu is not the op's meta")));
}

}  // namespace
}  // namespace lathe::passes
