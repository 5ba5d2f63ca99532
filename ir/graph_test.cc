#include "ir/graph.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/op_registry.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
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
  EXPECT_OK(g->CheckStructure());
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

TEST(GraphTest, SameArgComparesNodesByIdentityAndFloatsByBits) {
  GraphBuilder b;
  Node* x = b.Placeholder("x", F32({2}));
  Node* y = b.Placeholder("y", F32({2}));
  EXPECT_TRUE(SameArg(Arg::Of(x), Arg::Of(x)));
  EXPECT_FALSE(SameArg(Arg::Of(x), Arg::Of(y)));
  EXPECT_FALSE(SameArg(Arg::Float(0.0), Arg::Float(-0.0)));
  EXPECT_TRUE(SameArg(Arg::Float(std::nan("")), Arg::Float(std::nan(""))));
  EXPECT_FALSE(SameArg(Arg::Int(1), Arg::Float(1.0)));
  Arg list = Arg::List({Arg::Of(x), Arg::Int(2)});
  EXPECT_TRUE(SameArg(list, Arg::List({Arg::Of(x), Arg::Int(2)})));
  EXPECT_FALSE(SameArg(list, Arg::List({Arg::Of(x)})));
  Arg tuple = list;
  tuple.tuple = true;
  EXPECT_FALSE(SameArg(list, tuple));
}

TEST(GraphTest, ReplaceAllUsesAndErase) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed,
                       ParseGraphWithStyle(R"(def forward(self, x):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.add.Tensor(a, a)
    c = torch.ops.aten.neg.default(x)
    return (b, a)
)"));
  std::unique_ptr<Graph>& g = parsed.graph;
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
  EXPECT_OK(g->Erase(a));
  EXPECT_EQ(g->Find("a"), nullptr);
  absl::Status busy = g->Erase(early);
  EXPECT_THAT(std::string(busy.message()), HasSubstr("still has 3 user(s)"));
  EXPECT_OK(g->Erase(c));
  EXPECT_OK(g->CheckStructure());
  EXPECT_EQ(PrintGraph(*g, parsed.style),
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
  ASSERT_OK(g->TopologicalSort());
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
  ASSERT_OK(g->TopologicalSort());
  EXPECT_THAT(order(), ElementsAre("x", "c", "a", "late", "b", "d", "output"));
  EXPECT_OK(g->CheckStructure());
  // A cycle is reported and every node is kept.
  g->Find("c")->SetArgs({Arg::Of(g->Find("a"))}, {});
  absl::Status cycle = g->TopologicalSort();
  EXPECT_THAT(std::string(cycle.message()),
              HasSubstr("the graph has a cycle through"));
  EXPECT_EQ(g->nodes().size(), 7u);
}

// A meta inference that records what it was asked and fails on "bad".
class FakeInference : public MetaInference {
 public:
  absl::Status Infer(Node& node) override {
    asked.push_back(node.name());
    if (node.target() == "aten.bad.default")
      return absl::InvalidArgumentError("no meta for bad");
    node.meta() = F32({7});
    return absl::OkStatus();
  }
  std::vector<std::string> asked;
};

TEST(GraphTest, InsertCallNamesAsDynamoAndFillsMeta) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x):
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)
)"));
  auto inference = std::make_shared<FakeInference>();
  g->set_meta_inference(inference);
  Node* x = g->Find("x");
  ASSERT_OK_AND_ASSIGN(Node * a, g->InsertCall(g->output(), "aten.add.Tensor",
                                               {Arg::Of(x), Arg::Of(x)}));
  EXPECT_EQ(a->name(), "add_1");
  EXPECT_EQ(a->meta().ToAnnotation(), "f32[7][1]cpu");
  EXPECT_EQ(a->op(), OpRegistry::Global().Find("aten.add.Tensor"));
  ASSERT_OK_AND_ASSIGN(Node * s, g->InsertCall(g->output(), "aten.sym_size.int",
                                               {Arg::Of(x), Arg::Int(0)}));
  EXPECT_EQ(s->name(), "sym_size_int");
  ASSERT_OK_AND_ASSIGN(Node * l,
                       g->InsertCall(a, "aten.__lshift__.Scalar",
                                     {Arg::Of(x), Arg::Int(1)}, {}, ""));
  EXPECT_EQ(l->name(), "lshift");
  EXPECT_TRUE(g->IsBefore(l, a));
  ASSERT_OK_AND_ASSIGN(Node * h, g->InsertCall(nullptr, "aten.neg.default",
                                               {Arg::Of(x)}, {}, "my_neg"));
  EXPECT_EQ(h->name(), "my_neg");
  // An inference error leaves the graph as it was.
  size_t before = g->nodes().size();
  EXPECT_THAT(g->InsertCall(g->output(), "aten.bad.default", {Arg::Of(x)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no meta for bad")));
  EXPECT_EQ(g->nodes().size(), before);
  EXPECT_EQ(g->Find("bad"), nullptr);
  EXPECT_THAT(inference->asked,
              ElementsAre("add_1", "sym_size_int", "lshift", "my_neg", "bad"));
}

TEST(GraphTest, IsBeforeFollowsInsertsAndMoves) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.neg.default(x)
    return (a, b)
)"));
  Node* a = g->Find("a");
  Node* b = g->Find("b");
  // Many inserts at the same place use up the gap and renumber.
  std::vector<Node*> made;
  for (int i = 0; i < 100; ++i) {
    made.push_back(g->Insert(Node::Kind::kCall, g->UniqueName("e"),
                             "aten.exp.default", {Arg::Of(g->Find("x"))}, {},
                             {}, b));
  }
  for (size_t i = 1; i < made.size(); ++i) {
    EXPECT_TRUE(g->IsBefore(made[i - 1], made[i]));
    EXPECT_FALSE(g->IsBefore(made[i], made[i - 1]));
  }
  EXPECT_TRUE(g->IsBefore(a, made.front()));
  EXPECT_TRUE(g->IsBefore(made.back(), b));
  // The list order and IsBefore agree everywhere.
  std::vector<Node*> order;
  for (const auto& n : g->nodes()) order.push_back(n.get());
  for (size_t i = 1; i < order.size(); ++i) {
    EXPECT_TRUE(g->IsBefore(order[i - 1], order[i])) << i;
  }
  g->MoveBefore(b, a);
  EXPECT_TRUE(g->IsBefore(b, a));
  g->MoveAfter(b, made.back());
  EXPECT_TRUE(g->IsBefore(made.back(), b));
  EXPECT_TRUE(g->IsBefore(b, g->output()));
  EXPECT_OK(g->CheckStructure());
}

TEST(GraphTest, ReplaceUsesWithIfAndReplaceInput) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x, y):
    a = torch.ops.aten.add.Tensor(x, x)
    b = torch.ops.aten.mul.Tensor(x, y)
    c = torch.ops.aten.cat.default([x, b])
    return (a, b, c)
)"));
  Node* x = g->Find("x");
  Node* y = g->Find("y");
  g->ReplaceUsesWithIf(x, y, [](const Node& u) { return u.name() != "a"; });
  EXPECT_THAT(Names(x->users()), ElementsAre("a", "a"));
  g->Find("a")->ReplaceInput(x, g->Find("y"));
  EXPECT_TRUE(x->users().empty());
  // Inside lists too.
  EXPECT_EQ(g->Find("c")->args()[0].list[0].node, y);
  EXPECT_OK(g->CheckStructure());
  Node* b = g->Find("b");
  b->set_target("aten.sub.Tensor");
  EXPECT_EQ(b->op()->target, "aten.sub.Tensor");
  b->set_target("operator.add");
  EXPECT_EQ(b->op(), nullptr);
}

TEST(GraphTest, EraseDeadNodesKeepsEffects) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x, n):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.neg.default(a)
    ge = n >= 0
    _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "n >= 0")
    r = torch.ops.aten.rand.default([2])
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    c = torch.ops.aten.exp.default(x)
    return (c,)
)"));
  EXPECT_EQ(g->EraseDeadNodes(), 2);  // b, then a
  std::vector<std::string> names;
  for (const auto& n : g->nodes()) names.push_back(n->name());
  EXPECT_THAT(names, ElementsAre("x", "n", "ge", "_assert_scalar", "r", "add_",
                                 "c", "output"));
  EXPECT_EQ(g->EraseDeadNodes(), 0);
}

// getitem and the grad-mode switch are registry ops (graph builtins): each
// node of them has its OpDef; the switch is an effect dead-code elimination
// keeps, getitem a pure element of its tuple, by the registry's kernel.
TEST(GraphTest, BuiltinsAreRegistryOps) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    split = torch.ops.aten.split.Tensor(x, 2)
    getitem = split[0]
    getitem_1 = split[1]
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    return (getitem,)
)"));
  const OpDef* getitem = g->Find("getitem")->op();
  const OpDef* grad = g->Find("_set_grad_enabled")->op();
  ASSERT_NE(getitem, nullptr);
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(getitem, OpRegistry::Global().Find("getitem"));
  EXPECT_EQ(grad, OpRegistry::Global().Find("torch._C._set_grad_enabled"));
  EXPECT_EQ(getitem->schema.ToString(), "getitem(Any self, int index) -> Any");
  EXPECT_TRUE(getitem->HasTag(OpTag::kBuiltin));
  EXPECT_FALSE(getitem->HasTag(OpTag::kSideEffect));
  EXPECT_TRUE(grad->HasTag(OpTag::kBuiltin));
  EXPECT_TRUE(grad->HasTag(OpTag::kSideEffect));
  EXPECT_FALSE(g->Find("getitem_1")->HasEffect());
  EXPECT_TRUE(g->Find("_set_grad_enabled_1")->HasEffect());
  EXPECT_EQ(g->EraseDeadNodes(), 1);  // getitem_1
  EXPECT_THAT(Names(g->Placeholders()), ElementsAre("x"));
  EXPECT_NE(g->Find("_set_grad_enabled_1"), nullptr);
  EXPECT_EQ(g->Find("getitem_1"), nullptr);

  ASSERT_OK_AND_ASSIGN(
      std::vector<Value> args,
      BindArguments(
          getitem->schema,
          {Value::List({Value::Int(1), Value::Int(2)}), Value::Int(-1)}, {},
          getitem->target));
  ASSERT_OK_AND_ASSIGN(Value second,
                       getitem->kernel(OpCall(*getitem, args, nullptr)));
  EXPECT_EQ(second.DebugString(), Value::Int(2).DebugString());
  args[1] = Value::Int(2);
  EXPECT_THAT(
      getitem->kernel(OpCall(*getitem, args, nullptr)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot index")));
}

TEST(GraphTest, CloneIsDeepAndIndependent) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"(def forward(self, x: "f32[4]"):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.cat.default([a, x])
    return (b,)
)"));
  std::unique_ptr<Graph> c = g->Clone();
  EXPECT_EQ(PrintGraph(*c), PrintGraph(*g));
  EXPECT_OK(c->CheckStructure());
  EXPECT_EQ(c->Find("b")->args()[0].list[0].node, c->Find("a"));
  c->Find("a")->set_target("aten.neg.default");
  EXPECT_EQ(g->Find("a")->target(), "aten.relu.default");
  EXPECT_NE(PrintGraph(*c), PrintGraph(*g));
}

TEST(TensorMetaTest, Annotations) {
  ValueMeta t = *ParseAnnotation("f32[s0, 16][16, 1]cpu");
  EXPECT_EQ(t.kind, ValueMeta::Kind::kTensor);
  EXPECT_TRUE(t.tensor.sizes[0].is_symbol());
  EXPECT_EQ(t.ToAnnotation(), "f32[s0, 16][16, 1]cpu");
  std::vector<AnnotationStyle> styles;
  ValueMeta bare = *ParseAnnotation("i64[3, s1]", &styles);
  ASSERT_EQ(styles.size(), 1u);
  EXPECT_FALSE(styles[0].strides);
  EXPECT_FALSE(styles[0].device);
  EXPECT_EQ(symbolic::ToString(bare.tensor.strides[0]), "s1");  // contiguous
  EXPECT_EQ(bare.ToAnnotation(), "i64[3, s1][s1, 1]cpu");
  EXPECT_EQ(bare.ToAnnotation(styles), "i64[3, s1]");
  ValueMeta tuple = *ParseAnnotation("(f32[2], Sym(s0 + 1))", &styles);
  ASSERT_EQ(tuple.elements.size(), 2u);
  EXPECT_EQ(tuple.ToAnnotation(styles), "(f32[2], Sym(s0 + 1))");
  EXPECT_EQ(tuple.ToAnnotation(), "(f32[2][1]cpu, Sym(s0 + 1))");
  EXPECT_EQ(ParseAnnotation("(f32[2],)", &styles)->ToAnnotation(styles),
            "(f32[2],)");
  // Each tensor of a tuple as it was written.
  EXPECT_EQ(
      ParseAnnotation("(f32[2][1], (i64[3]cpu, f32[1][1]cuda:0))", &styles)
          ->ToAnnotation(styles),
      "(f32[2][1], (i64[3]cpu, f32[1][1]cuda:0))");
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
