#include "ir/graph.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/tensor_meta.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ValueMeta F32(std::vector<int64_t> sizes) {
  TensorMeta t;
  for (int64_t s : sizes) t.sizes.push_back(symbolic::Int(s));
  t.strides.assign(sizes.size(), symbolic::Int(1));
  for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d) {
    t.strides[d] = symbolic::Mul(t.strides[d + 1], t.sizes[d + 1]);
  }
  return ValueMeta::Tensor(t);
}

std::vector<std::string> Names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (Node* n : nodes) out.push_back(n->name());
  return out;
}

TEST(GraphTest, BuilderWritesTheTextForm) {
  GraphBuilder b;
  Node* x = b.Placeholder("x", F32({2, 3}));
  Node* r = b.Call("relu", "aten.relu.default", {Arg::Of(x)}, {}, F32({2, 3}));
  Node* r2 = b.Call("relu", "aten.relu.default", {Arg::Of(r)}, {}, F32({2, 3}));
  b.Output({r2});
  std::unique_ptr<Graph> g = b.Finish();
  EXPECT_TRUE(g->CheckStructure().ok());
  EXPECT_EQ(r2->name(), "relu_1");
  EXPECT_EQ(PrintGraph(*g),
            "class GraphModule(torch.nn.Module):\n"
            "    def forward(self, x: \"f32[2, 3][3, 1]cpu\"):\n"
            "        relu: \"f32[2, 3][3, 1]cpu\" = "
            "torch.ops.aten.relu.default(x);  x = None\n"
            "        relu_1: \"f32[2, 3][3, 1]cpu\" = "
            "torch.ops.aten.relu.default(relu);  relu = None\n"
            "        return (relu_1,)\n");
}

TEST(GraphTest, ReplaceAllUsesAndErase) {
  std::unique_ptr<Graph> g = *ParseGraph(R"(def forward(self, x):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.add.Tensor(a, a)
    c = torch.ops.aten.neg.default(x)
    return (b, a)
)");
  Node* a = g->Find("a");
  Node* c = g->Find("c");
  EXPECT_EQ(a->users().size(), 3u);  // b twice, the output once
  // c is defined after b: insert a new node before b that b can use.
  Node* x = g->Find("x");
  Node* early =
      g->Insert(Node::Kind::kCall, g->UniqueName("neg"), "aten.neg.default",
                {Arg::Of(x)}, {}, {}, g->Find("b"));
  EXPECT_EQ(early->name(), "neg");
  g->ReplaceAllUsesWith(a, early);
  EXPECT_TRUE(a->users().empty());
  EXPECT_THAT(Names(early->users()), ElementsAre("b", "b", "output"));
  EXPECT_TRUE(g->Erase(a).ok());
  EXPECT_EQ(g->Find("a"), nullptr);
  absl::Status busy = g->Erase(early);
  EXPECT_THAT(std::string(busy.message()), HasSubstr("still has 3 user(s)"));
  EXPECT_TRUE(g->Erase(c).ok());
  EXPECT_TRUE(g->CheckStructure().ok());
  ComputeFrees(*g);
  EXPECT_EQ(PrintGraph(*g),
            "def forward(self, x):\n"
            "    neg = torch.ops.aten.neg.default(x);  x = None\n"
            "    b = torch.ops.aten.add.Tensor(neg, neg)\n"
            "    return (b, neg)\n");
}

TEST(GraphTest, CheckStructureFindsBrokenGraphs) {
  GraphBuilder b;
  Node* x = b.Placeholder("x", {});
  b.Call("y", "aten.neg.default", {Arg::Of(x)});
  std::unique_ptr<Graph> g = b.Finish();
  EXPECT_THAT(std::string(g->CheckStructure().message()),
              HasSubstr("exactly one output, has 0"));
  // A use of a later node.
  std::unique_ptr<Graph> h =
      *ParseGraph("def forward(self, x):\n    y = f(x)\n    return (y,)\n");
  Node* late = h->Insert(Node::Kind::kCall, "late", "aten.neg.default",
                         {Arg::Of(h->Find("x"))}, {}, {}, h->output());
  h->Find("y")->SetArgs({Arg::Of(late)}, {});
  EXPECT_THAT(std::string(h->CheckStructure().message()),
              HasSubstr("y uses late before it is defined"));
}

TEST(GraphTest, TopologicalSortIsStable) {
  std::unique_ptr<Graph> g = *ParseGraph(R"(def forward(self, x):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.neg.default(x)
    c = torch.ops.aten.exp.default(x)
    d = torch.ops.aten.add.Tensor(a, c)
    return (d, b)
)");
  ASSERT_TRUE(g->TopologicalSort().ok());
  auto order = [&] {
    std::vector<std::string> names;
    for (const auto& n : g->nodes()) names.push_back(n->name());
    return names;
  };
  EXPECT_THAT(order(),
              ElementsAre("x", "a", "b", "c", "d", "output"));  // unchanged
  // a now uses d, which comes later: a (and nothing else) moves after d.
  g->Find("a")->SetArgs({Arg::Of(g->Find("c"))}, {});
  g->Find("d")->SetArgs({Arg::Of(g->Find("b")), Arg::Of(g->Find("c"))}, {});
  Node* late = g->Insert(Node::Kind::kCall, "late", "aten.sin.default",
                         {Arg::Of(g->Find("x"))}, {}, {}, g->output());
  g->Find("b")->SetArgs({Arg::Of(late)}, {});
  EXPECT_FALSE(g->CheckStructure().ok());
  ASSERT_TRUE(g->TopologicalSort().ok());
  EXPECT_THAT(order(), ElementsAre("x", "c", "a", "late", "b", "d", "output"));
  EXPECT_TRUE(g->CheckStructure().ok());
  // A cycle is reported and every node is kept.
  g->Find("c")->SetArgs({Arg::Of(g->Find("a"))}, {});
  absl::Status cycle = g->TopologicalSort();
  EXPECT_THAT(std::string(cycle.message()),
              HasSubstr("the graph has a cycle through"));
  EXPECT_EQ(g->nodes().size(), 7u);
}

TEST(TensorMetaTest, Annotations) {
  ValueMeta t = *ParseAnnotation("f32[s0, 16][16, 1]cpu");
  EXPECT_EQ(t.kind, ValueMeta::Kind::kTensor);
  EXPECT_TRUE(t.tensor.sizes[0].is_symbol());
  EXPECT_EQ(t.ToAnnotation(), "f32[s0, 16][16, 1]cpu");
  ValueMeta bare = *ParseAnnotation("i64[3, s1]");
  EXPECT_FALSE(bare.tensor.show_strides);
  EXPECT_EQ(symbolic::ToString(bare.tensor.strides[0]), "s1");  // contiguous
  ValueMeta tuple = *ParseAnnotation("(f32[2], Sym(s0 + 1))");
  ASSERT_EQ(tuple.elements.size(), 2u);
  EXPECT_EQ(tuple.ToAnnotation(), "(f32[2], Sym(s0 + 1))");
  EXPECT_EQ(ParseAnnotation("(f32[2],)")->ToAnnotation(), "(f32[2],)");
  EXPECT_EQ(ParseAnnotation("f16[4][1]cuda:1")->tensor.device.index, 1);
  EXPECT_EQ(ParseAnnotation("Sym(Eq(s0, 2))")->sym.kind(),
            symbolic::ExprKind::kEq);
  EXPECT_THAT(std::string(ParseAnnotation("f32[2][1, 1]").status().message()),
              HasSubstr("column 7: 1 sizes but 2 strides"));
  EXPECT_THAT(std::string(ParseAnnotation("f32[2.5]").status().message()),
              HasSubstr("column 5: dimension '2.5' is not an integer"));
  EXPECT_THAT(std::string(ParseAnnotation("f32[2]tpu").status().message()),
              HasSubstr("column 7: unknown device"));
  EXPECT_THAT(std::string(ParseAnnotation("f32[2").status().message()),
              HasSubstr("missing ']'"));
  EXPECT_THAT(std::string(ParseAnnotation("Sym(").status().message()),
              HasSubstr("missing ')'"));
}

}  // namespace
}  // namespace lathe::ir
