#include "aot/flatten_composites.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "aot/aot_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

using ::lathe::testing::RunFileCheck;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

using Compiled = CompiledText;

absl::StatusOr<Compiled> Compile(const std::string& text) {
  return CompileText(text);
}

// The dense graph FlattenComposites makes of `text` (before AOT).
std::string Flattened(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  if (!g.ok()) return "";
  symbolic::ShapeEnv env;
  absl::Status shapes = ir::PropagateShapes(**g, env);
  EXPECT_OK(shapes);
  if (!shapes.ok()) return "";
  absl::StatusOr<CompositeSignature> sig = FlattenComposites(**g);
  EXPECT_OK(sig);
  return ir::PrintGraph(**g);
}

// The original graph run eagerly on plain tensors (the oracle for a pair's
// halves: every op applies to each).
std::vector<Tensor> Eager(const std::string& text, std::vector<Tensor> args) {
  std::unique_ptr<ir::Graph> g = *ir::ParseGraph(text);
  std::vector<ir::Value> in;
  for (Tensor& t : args) in.push_back(ir::Value::OfTensor(t));
  absl::StatusOr<ir::Interpretation> r = ir::Interpret(*g, in);
  EXPECT_OK(r);
  std::vector<Tensor> out;
  if (r.ok()) {
    for (const ir::Value& v : r->outputs) out.push_back(v.tensor);
  }
  return out;
}

// 30. x * 2 on a pair: each half doubled, the result a pair.
TEST(FlattenCompositesTest, PairAppliesEveryOpToBothHalves) {
  const char* kText = R"(# lathe: composite x pair
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[2, 3][3, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(mul, y)
    sum_1 = torch.ops.aten.sum.default(y)
    return (add, sum_1)
)";
  EXPECT_OK(RunFileCheck(Flattened(kText), R"(
CHECK: def forward(self, x_a: "f32[2, 3][3, 1]cpu", x_b: "f32[2, 3][3, 1]cpu", y: "f32[2, 3][3, 1]cpu"):
CHECK-DAG: [[MA:mul.*]]: "f32[2, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(x_a, 2)
CHECK-DAG: [[MB:mul.*]]: "f32[2, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(x_b, 2)
CHECK-DAG: [[AA:add.*]]: "f32[2, 3][3, 1]cpu" = torch.ops.aten.add.Tensor([[MA]], y)
CHECK-DAG: [[AB:add.*]]: "f32[2, 3][3, 1]cpu" = torch.ops.aten.add.Tensor([[MB]], y)
CHECK: return ([[AA]], [[AB]], sum_1)
)"));
  ASSERT_OK_AND_ASSIGN(Compiled c, Compile(kText));
  EXPECT_EQ(c.aot.signature.results[0].ToString(), "pair(2,2)");
  Tensor a = Iota({2, 3}), b = Iota({2, 3}, -1), y = Iota({2, 3}, 10);
  Operand x = *MakePair(Operand::Of(a), Operand::Of(b));
  ASSERT_OK_AND_ASSIGN(UserCall r,
                       InterpretAsUser(*c.graph, c.aot, {x, Operand::Of(y)}));
  ASSERT_EQ(r.results.size(), 2u);
  ASSERT_EQ(r.results[0].kind, Operand::Kind::kComposite);
  const CompositeTensor& out = *r.results[0].composite;
  EXPECT_EQ(out.type->name(), "pair");
  std::unique_ptr<ir::Graph> plain = *ir::ParseGraph(kText);
  std::string eager_text = kText;
  eager_text.erase(0, eager_text.find('\n') + 1);  // x as a plain tensor
  EXPECT_EQ(Values(out.inner[0].tensor), Values(Eager(eager_text, {a, y})[0]));
  EXPECT_EQ(Values(out.inner[1].tensor), Values(Eager(eager_text, {b, y})[0]));
  EXPECT_EQ(Values(r.results[1].tensor), Values(Eager(eager_text, {a, y})[1]));
}

// 31. A pair of pairs: four inner tensors in depth-first order; the result
// rebuilt inner first.
TEST(FlattenCompositesTest, NestedPairs) {
  const char* kText = R"(# lathe: composite x pair(pair, pair)
def forward(self, x: "f32[4][1]cpu"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)";
  EXPECT_OK(RunFileCheck(Flattened(kText), R"(
CHECK: def forward(self, x_a_a: "f32[4][1]cpu", x_a_b: "f32[4][1]cpu", x_b_a: "f32[4][1]cpu", x_b_b: "f32[4][1]cpu"):
CHECK-COUNT-4: torch.ops.aten.neg.default(x_
)"));
  ASSERT_OK_AND_ASSIGN(Compiled c, Compile(kText));
  std::vector<Tensor> t = {Iota({4}), Iota({4}, 2), Iota({4}, 3), Iota({4}, 4)};
  Operand x = *MakePair(*MakePair(Operand::Of(t[0]), Operand::Of(t[1])),
                        *MakePair(Operand::Of(t[2]), Operand::Of(t[3])));
  ASSERT_OK_AND_ASSIGN(UserCall r, InterpretAsUser(*c.graph, c.aot, {x}));
  const Operand& out = r.results[0];
  EXPECT_EQ(out.ToString(), x.ToString());
  EXPECT_EQ(Values(out.composite->inner[1].composite->inner[0].tensor),
            (std::vector<double>{-3, -6, -9, -12}));
}

// The scaled tensor: views keep the scale, * number scales it, anything
// else sees data * scale.
TEST(FlattenCompositesTest, ScaledInt8) {
  const char* kText = R"(# lathe: composite x scaled_int8
def forward(self, x: "f32[2, 3][3, 1]cpu"):
    t = torch.ops.aten.t.default(x)
    mul = torch.ops.aten.mul.Tensor(t, 0.5)
    add = torch.ops.aten.add.Tensor(mul, 1)
    return (mul, add)
)";
  EXPECT_OK(RunFileCheck(Flattened(kText), R"(
CHECK: def forward(self, x_data: "i8[2, 3][3, 1]cpu", x_scale: "f32[][]cpu"):
CHECK: [[T:t.*]]: "i8[3, 2][1, 3]cpu" = torch.ops.aten.t.default(x_data)
CHECK: [[S:mul.*]]: "f32[][]cpu" = torch.ops.aten.mul.Tensor(x_scale, 0.5)
CHECK: _to_copy{{.*}} = torch.ops.aten._to_copy.default([[T]], dtype = torch.float32)
CHECK: return ([[T]], [[S]], add{{.*}})
)"));
  ASSERT_OK_AND_ASSIGN(Compiled c, Compile(kText));
  Tensor data = *Tensor::Empty({2, 3}, DType::kInt8);
  for (int i = 0; i < 6; ++i)
    data.data<int8_t>()[i] = static_cast<int8_t>(i - 2);
  Tensor scale = *Tensor::Empty({}, DType::kFloat32);
  *scale.data<float>() = 0.25f;
  Operand x = *MakeScaledInt8(data, scale);
  ASSERT_OK_AND_ASSIGN(UserCall r, InterpretAsUser(*c.graph, c.aot, {x}));
  ASSERT_EQ(r.results[0].kind, Operand::Kind::kComposite);
  const CompositeTensor& m = *r.results[0].composite;
  EXPECT_EQ(m.type->name(), "scaled_int8");
  EXPECT_THAT(m.sizes, ::testing::ElementsAre(3, 2));
  EXPECT_EQ(m.inner[1].tensor.GetDouble({}), 0.125);
  // add = x.T * 0.5 + 1 as floats: element [2][1] is data[1][2] = 3.
  ASSERT_EQ(r.results[1].kind, Operand::Kind::kTensor);
  EXPECT_EQ(r.results[1].tensor.GetDouble({2, 1}), 3 * 0.125 + 1);
  EXPECT_EQ(r.results[1].tensor.GetDouble({0, 0}), -2 * 0.125 + 1);
}

// A pair of scaled tensors: each half follows the scaled rules.
TEST(FlattenCompositesTest, PairOfScaled) {
  ASSERT_OK_AND_ASSIGN(
      Compiled c, Compile(R"(# lathe: composite x pair(scaled_int8, scaled_int8)
def forward(self, x: "f32[2, 2][2, 1]cpu"):
    t = torch.ops.aten.t.default(x)
    return (t,)
)"));
  EXPECT_EQ(c.aot.signature.results[0].ToString(),
            "pair(scaled_int8(2,0),scaled_int8(2,0))");
  auto scaled = [](int8_t base, float s) {
    Tensor d = *Tensor::Empty({2, 2}, DType::kInt8);
    for (int i = 0; i < 4; ++i) d.data<int8_t>()[i] = base + i;
    Tensor sc = *Tensor::Empty({}, DType::kFloat32);
    *sc.data<float>() = s;
    return *MakeScaledInt8(d, sc);
  };
  Operand x = *MakePair(scaled(0, 1), scaled(10, 2));
  ASSERT_OK_AND_ASSIGN(UserCall r, InterpretAsUser(*c.graph, c.aot, {x}));
  const CompositeTensor& b = *r.results[0].composite->inner[1].composite;
  EXPECT_EQ(b.inner[0].tensor.GetDouble({0, 1}), 12);  // data[1][0]
  EXPECT_EQ(b.inner[1].tensor.GetDouble({}), 2);
}

// Writing a pair input in place writes the caller's inner tensors.
TEST(FlattenCompositesTest, MutatingAPairInput) {
  ASSERT_OK_AND_ASSIGN(Compiled c, Compile(R"(# lathe: composite x pair
def forward(self, x: "f32[3][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, 1)
    return (add,)
)"));
  Tensor a = Iota({3}), b = Iota({3}, 10);
  Operand x = *MakePair(Operand::Of(a), Operand::Of(b));
  ASSERT_OK_AND_ASSIGN(UserCall r, InterpretAsUser(*c.graph, c.aot, {x}));
  EXPECT_EQ(r.mutated, (std::vector<bool>{true}));
  EXPECT_EQ(Values(a), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(Values(b), (std::vector<double>{20, 40, 60}));
  EXPECT_EQ(Values(r.results[0].composite->inner[1].tensor),
            (std::vector<double>{21, 41, 61}));
}

// Symbolic outer sizes become int arguments of the dense graph.
TEST(FlattenCompositesTest, SymbolicOuterSizes) {
  const char* kText = R"(# lathe: composite x pair
# lathe: hint s0 3
def forward(self, x: "f32[s0, 4][4, 1]cpu"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1])
    return (sum_1,)
)";
  EXPECT_OK(RunFileCheck(Flattened(kText), R"-(
CHECK: def forward(self, x_a: "f32[s0, 4][4, 1]cpu", x_b: "f32[s0, 4][4, 1]cpu", x_size0: "Sym(s0)"):
)-"));
  ASSERT_OK_AND_ASSIGN(Compiled c, Compile(kText));
  // The argument's layout: the outer rank, each leaf's, and the symbolic
  // size 0 as the int slot after the leaves.
  const CompositeLayout& x_layout = c.aot.signature.arguments[0];
  EXPECT_EQ(x_layout.ToString(), "pair(2,2)");
  EXPECT_EQ(x_layout.rank, 2);
  EXPECT_THAT(x_layout.symbolic_sizes, ::testing::ElementsAre(0));
  EXPECT_TRUE(x_layout.symbolic_strides.empty());
  EXPECT_EQ(x_layout.Slots(/*argument=*/true), 3);
  for (int64_t n : {3, 5}) {
    Operand x = *MakePair(Operand::Of(Iota({n, 4})), Operand::Of(Iota({n, 4})));
    ASSERT_OK_AND_ASSIGN(UserCall r, InterpretAsUser(*c.graph, c.aot, {x}));
    EXPECT_THAT(r.results[0].composite->sizes, ::testing::ElementsAre(n));
    EXPECT_EQ(r.results[0].composite->inner[0].tensor.GetDouble({0}),
              1 + 2 + 3 + 4);
  }
}

// 27. A metadata mutation of a composite input.
TEST(FlattenCompositesTest, MetadataMutationOfACompositeIsAnError) {
  EXPECT_THAT(Compile(R"(# lathe: composite x pair
def forward(self, x: "f32[2, 3][3, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(x, 0, 1)
    return (x,)
)"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'transpose_': Metadata mutations are currently "
                       "not allowed on tensor subclasses (its argument is a "
                       "pair)"));
}

// What the flattening does not do yet says so, naming the node or input.
TEST(FlattenCompositesTest, UnsupportedCasesAreErrors) {
  auto error = [&](const std::string& text) {
    absl::StatusOr<Compiled> c = Compile(text);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_EQ(error(R"(# lathe: composite x pair
def forward(self, x: "f32[2, 3][3, 1]cpu"):
    unbind = torch.ops.aten.unbind.int(x)
    getitem = unbind[0]
    return (getitem,)
)"),
            "node 'unbind' (aten.unbind.int) on a pair returns several "
            "tensors; not supported yet");
  EXPECT_EQ(error(R"(# lathe: composite x scaled_int8
def forward(self, x: "f32[3][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    return (x,)
)"),
            "node 'mul_': writing into a scaled_int8 is not supported yet");
  EXPECT_EQ(error(R"(# lathe: composite x pair
def forward(self, x: "f32[3][1]cpu", x_b: "f32[3][1]cpu"):
    add = torch.ops.aten.add.Tensor(x, x_b)
    return (add,)
)"),
            "cannot name the inner tensor 'x_b': the name is taken");
  EXPECT_EQ(error(R"-(# lathe: composite n pair
def forward(self, n: "Sym(s0)"):
    return (n,)
)-"),
            "composite input 'n' is not annotated as a tensor");
}

TEST(FlattenCompositesTest, DeclarationErrors) {
  const char* kBody = R"(
def forward(self, x: "f32[2][1]cpu", y: "f32[2][1]cpu"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)";
  auto error = [&](const std::string& directive) {
    absl::StatusOr<Compiled> c = Compile(directive + kBody);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_EQ(error("# lathe: composite z pair"),
            "# lathe: composite z: the graph has no input 'z'");
  EXPECT_EQ(error("# lathe: composite x quad"),
            "unknown composite type 'quad'");
  EXPECT_EQ(error("# lathe: composite x pair(pair)"),
            "composite type 'pair(pair)' at column 10: pair takes 2 inner "
            "types");
  EXPECT_EQ(error("# lathe: composite x pair\n# lathe: composite y "
                  "scaled_int8"),
            "node 'add' mixes a pair and a scaled_int8");
  // Nesting is bounded: a hostile declaration is one error, not gigabytes
  // of layouts or a stack overflow.
  std::string deep = "pair";
  for (int i = 1; i < kMaxCompositeDepth; ++i) {
    deep = absl::StrCat("pair(", deep, ", pair)");
  }
  EXPECT_EQ(error("# lathe: composite x " + deep), "ok");
  std::string deeper = "pair(" + deep + ", pair)";
  EXPECT_THAT(error("# lathe: composite x " + deeper),
              ::testing::HasSubstr("nested deeper than 16 levels"));
  std::string hostile;
  for (int i = 0; i < 20000; ++i) hostile += "pair(";
  EXPECT_THAT(error("# lathe: composite x " + hostile),
              ::testing::HasSubstr("nested deeper than 16 levels"));
}

}  // namespace
}  // namespace lathe::aot
