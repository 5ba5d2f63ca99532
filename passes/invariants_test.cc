#include "passes/invariants.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

TEST(InvariantsTest, AliasSnapshotSeesInputsAndOutputs) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g,
                       ir::ParseGraph(R"IR(def forward(self, x: "f32[4]"):
    v = torch.ops.aten.view.default(x, [2, 2])
    c = torch.ops.aten.clone.default(x)
    return (v, c, c)
)IR"));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  AliasSnapshot s = TakeAliasSnapshot(*g);
  EXPECT_EQ(s.pairs.count({"input 0", "output 0"}), 1u);
  EXPECT_EQ(s.pairs.count({"output 1", "output 2"}), 1u);
  EXPECT_EQ(s.pairs.count({"input 0", "output 1"}), 0u);
  EXPECT_OK(CheckNoNewAliasing(s, *g));
  // Returning x for the clone makes input 0 and output 1 alias.
  g->output()->ReplaceInput(g->Find("c"), g->Find("x"));
  EXPECT_THAT(CheckNoNewAliasing(s, *g),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("input 0 and output 1 now share")));
}

TEST(InvariantsTest, UnboundUnbackedSymbolsAreFound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g,
                       ir::ParseGraph(R"IR(def forward(self, x: "f32[4]"):
    nz = torch.ops.aten.nonzero.default(x)
    n = torch.ops.aten.neg.default(nz)
    return (n,)
)IR"));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  EXPECT_OK(CheckUnbackedBindings(*g, env));
  g->Find("nz")->unbacked_bindings().clear();
  EXPECT_THAT(
      CheckUnbackedBindings(*g, env),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("node 'nz'")));
}

}  // namespace
}  // namespace lathe::passes
