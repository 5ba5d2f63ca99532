#include "ir/infer_meta.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kGraph[] = R"(def forward(self, x: "f32[4, 8]", w: "f32[8, 2]"):
    a = torch.ops.aten.mul.Tensor(x, 2)
    b = torch.ops.aten.neg.default(a)
    c = torch.ops.aten.sum.dim_IntList(b, [1])
    d = torch.ops.aten.neg.default(x)
    return (c, d)
)";

TEST(InferMetaTest, RefreshStopsWhereMetasComeOutEqual) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kGraph));
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  Node* a = g->Find("a");
  StorageId a_storage = a->meta().tensor.storage;
  ValueMeta d_before = g->Find("d")->meta();
  ValueMeta c_before = g->Find("c")->meta();
  a->set_target("aten.mm.default");
  a->SetArgs({Arg::Of(g->Find("x")), Arg::Of(g->Find("w"))}, {});
  ASSERT_OK_AND_ASSIGN(int changed, RefreshMetas(*g, env, {a}));
  EXPECT_EQ(changed, 2);  // a and b; c is f32[4] still
  EXPECT_EQ(a->meta().ToAnnotation(), "f32[4, 2][2, 1]cpu");
  EXPECT_EQ(g->Find("b")->meta().ToAnnotation(), "f32[4, 2][2, 1]cpu");
  EXPECT_TRUE(SameMeta(g->Find("c")->meta(), c_before));
  EXPECT_TRUE(SameMeta(g->Find("d")->meta(), d_before));
  // A new tensor keeps its storage id.
  EXPECT_EQ(a->meta().tensor.storage, a_storage);
  // Nothing changed: nothing to do.
  ASSERT_OK_AND_ASSIGN(changed, RefreshMetas(*g, env, {a}));
  EXPECT_EQ(changed, 0);
}

TEST(InferMetaTest, InsertCallGetsMetaStorageAndBindings) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kGraph));
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  Node* x = g->Find("x");
  ASSERT_OK_AND_ASSIGN(Node * v,
                       g->InsertCall(g->output(), "aten.view.default",
                                     {Arg::Of(x), Arg::List({Arg::Int(32)})}));
  EXPECT_EQ(v->meta().ToAnnotation(), "f32[32][1]cpu");
  EXPECT_EQ(v->meta().tensor.storage, x->meta().tensor.storage);  // a view
  ASSERT_OK_AND_ASSIGN(
      Node * e, g->InsertCall(g->output(), "aten.exp.default", {Arg::Of(x)}));
  EXPECT_NE(e->meta().tensor.storage, x->meta().tensor.storage);
  EXPECT_NE(e->meta().tensor.storage, g->Find("a")->meta().tensor.storage);
  ASSERT_OK_AND_ASSIGN(
      Node * nz,
      g->InsertCall(g->output(), "aten.nonzero.default", {Arg::Of(x)}));
  ASSERT_EQ(nz->unbacked_bindings().size(), 1u);
  EXPECT_EQ(nz->unbacked_bindings()[0].second, ".size(0)");
  EXPECT_TRUE(env.IsUnbacked(nz->unbacked_bindings()[0].first));
  EXPECT_EQ(nz->meta().tensor.sizes[0], nz->unbacked_bindings()[0].first);
  // Refreshing keeps the unbacked symbol.
  symbolic::Expr u = nz->unbacked_bindings()[0].first;
  ASSERT_OK(InferMeta(*nz, env));
  EXPECT_EQ(nz->unbacked_bindings()[0].first, u);
  EXPECT_EQ(nz->meta().tensor.sizes[0], u);
  // A call the meta function refuses: an error naming the node, no node.
  EXPECT_THAT(
      g->InsertCall(g->output(), "aten.mm.default", {Arg::Of(x), Arg::Of(x)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'mm'")));
  EXPECT_EQ(g->Find("mm"), nullptr);
  EXPECT_OK(g->CheckStructure());
}

}  // namespace
}  // namespace lathe::ir
