#include "ir/shape_prop.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Graph> FromText(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(text);
  EXPECT_OK(g);
  return g.ok() ? std::move(*g) : nullptr;
}

constexpr char kViews[] =
    R"(def forward(self, x: "f32[4, 6][6, 1]cpu", y: "f32[4, 6][6, 1]cpu"):
    t: "f32[6, 4][1, 6]cpu" = torch.ops.aten.t.default(x)
    add: "f32[4, 6][6, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
    add_: "f32[4, 6][6, 1]cpu" = torch.ops.aten.add_.Tensor(y, x)
    return (t, add, add_)
)";

TEST(ShapePropTest, ViewsAndInplaceOpsShareTheirInputsStorage) {
  std::unique_ptr<Graph> g = FromText(kViews);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  StorageId x = g->Find("x")->meta().tensor.storage;
  StorageId y = g->Find("y")->meta().tensor.storage;
  EXPECT_NE(x, y);
  EXPECT_EQ(g->Find("t")->meta().tensor.storage, x);
  EXPECT_EQ(g->Find("add_")->meta().tensor.storage, y);
  StorageId add = g->Find("add")->meta().tensor.storage;
  EXPECT_NE(add, x);
  EXPECT_NE(add, y);
}

TEST(ShapePropTest, AliasDirectiveMakesInputsShareAStorage) {
  std::unique_ptr<Graph> g =
      FromText(absl::StrCat("# lathe: alias x y\n", kViews));
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_EQ(g->Find("x")->meta().tensor.storage,
            g->Find("y")->meta().tensor.storage);
}

TEST(ShapePropTest, DynamicDimsAreBackedByHintsAndGuardsAreRecorded) {
  std::unique_ptr<Graph> g = FromText(R"(# lathe: hint s0 10
def forward(self, x: "f32[s0, 8][8, 1]cpu", y: "f32[s1, 8][8, 1]cpu"):
    add: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)");
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s1"] = symbolic::Value::Int(10);
  ASSERT_OK(PropagateShapes(*g, env, options));
  // Broadcasting s0 against s1 (both 10) guards that they are equal.
  ASSERT_FALSE(env.guards().empty());
  std::string guards;
  for (const symbolic::Expr& e : env.guards())
    absl::StrAppend(&guards, symbolic::ToString(e), ";");
  EXPECT_THAT(guards, HasSubstr("s0"));
  EXPECT_THAT(guards, HasSubstr("s1"));
}

TEST(ShapePropTest, SliceBoundsOnSymbolsAreDecidedByGuards) {
  std::unique_ptr<Graph> g = FromText(R"(def forward(self, x: "f32[s0][1]cpu"):
    slice_1: "f32[4][1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 2, 6)
    return (slice_1,)
)");
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(10);
  ASSERT_OK(PropagateShapes(*g, env, options));
  EXPECT_EQ(g->Find("slice_1")->meta().ToAnnotation(), "f32[4][1]cpu");
  EXPECT_FALSE(env.guards().empty());  // 6 <= s0 was assumed from the hint
}

TEST(ShapePropTest, UnhintedSymbolIsUnbacked) {
  std::unique_ptr<Graph> g =
      FromText(R"(def forward(self, x: "f32[s0, 4][4, 1]cpu"):
    relu: "f32[s0, 4][4, 1]cpu" = torch.ops.aten.relu.default(x)
    return (relu,)
)");
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_TRUE(env.IsUnbacked(g->Find("relu")->meta().tensor.sizes[0]));
}

TEST(ShapePropTest, Errors) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"def forward(self, x):\n    neg = torch.ops.aten.neg.default(x)\n    "
       "return (neg,)\n",
       "reads input 'x', which has no annotation"},
      {"def forward(self, x: \"f32[2]\"):\n    y = "
       "torch.ops.aten.nope.default(x)\n    return (y,)\n",
       "node 'y': unknown op aten.nope.default"},
      {"def forward(self, x: \"f32[2, 3]\", w: \"f32[4, 5]\"):\n"
       "    mm = torch.ops.aten.mm.default(x, w)\n    return (mm,)\n",
       "node 'mm': aten.mm.default:"},
      // (A malformed hint or range is a parse error: graph_text_test.)
      {"# lathe: frobnicate\ndef forward(self, x: \"f32[s0]\"):\n    return "
       "(x,)\n",
       "unknown directive"},
      // Typos in directives are errors, not silently ignored.
      {"# lathe: alias x nosuch\ndef forward(self, x: \"f32[2]\"):\n    "
       "return (x,)\n",
       "# lathe: alias x nosuch: 'nosuch' is not an input of the graph"},
      {"# lathe: requires_grad nosuch\ndef forward(self, x: \"f32[2]\"):\n"
       "    return (x,)\n",
       "# lathe: requires_grad nosuch: 'nosuch' is not an input of the graph"},
      {"# lathe: non_leaf y\ndef forward(self, x: \"f32[2]\"):\n"
       "    return (x,)\n",
       "# lathe: non_leaf y: 'y' is not an input of the graph"},
      {"# lathe: hint s9 4\ndef forward(self, x: \"f32[s0]\"):\n    return "
       "(x,)\n",
       "# lathe: hint s9 4: no input's annotation has the symbol s9"},
      {"# lathe: range s9 2 4\ndef forward(self, x: \"f32[s0]\"):\n    "
       "return (x,)\n",
       "# lathe: range s9 2 4: neither an input's annotation nor the graph has "
       "the symbol s9"},
      // Sizes whose byte count overflows int64 (checked, not UB).
      {"def forward(self, x: \"f32[99999999999, 99999999999]\"):\n    "
       "neg = torch.ops.aten.neg.default(x)\n    return (neg,)\n",
       "input 'x': f32[99999999999, 99999999999] is larger than int64 can "
       "count"},
      {"def forward(self, a: \"f32[99999999999, 1]\", b: \"f32[1, "
       "99999999999]\"):\n    add = torch.ops.aten.add.Tensor(a, b)\n    "
       "return (add,)\n",
       "node 'add': f32[99999999999, 99999999999]"},
      // A range the example input violates.
      {"# lathe: hint s0 4\n# lathe: range s0 8 10\ndef forward(self, x: "
       "\"f32[s0]\"):\n    return (x,)\n",
       "# lathe: range s0 8 10: hint 4 of s0 is outside the range [8, 10] "
       "(from input 'x')"},
  };
  for (const Case& c : cases) {
    std::unique_ptr<Graph> g = FromText(c.text);
    ASSERT_NE(g, nullptr) << c.text;
    symbolic::ShapeEnv env;
    absl::Status st = PropagateShapes(*g, env);
    EXPECT_FALSE(st.ok()) << c.text;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(ShapePropTest, DataDependentScalarsAreUnbackedAndBoundToTheirNode) {
  std::unique_ptr<Graph> g = FromText(R"g(# lathe: range u0 0 16
def forward(self, n: "i64[][]cpu", x: "f32[16][1]cpu"):
    _local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(n)
    narrow: "f32[u0][1]cpu" = torch.ops.aten.narrow.default(x, 0, 0, _local_scalar_dense)
    zeros: "f32[u0, 2][2, 1]cpu" = torch.ops.aten.zeros.default([_local_scalar_dense, 2])
    return (narrow, zeros)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  absl::Status st = PropagateShapes(*g, env);
  ASSERT_OK(st);
  const Node* item = g->Find("_local_scalar_dense");
  EXPECT_EQ(item->meta().ToAnnotation(), "Sym(u0)");
  EXPECT_TRUE(env.IsUnbacked(item->meta().sym));
  ASSERT_EQ(item->unbacked_bindings().size(), 1u);
  EXPECT_EQ(symbolic::ToString(item->unbacked_bindings()[0].first), "u0");
  EXPECT_EQ(item->unbacked_bindings()[0].second, "");
  // Later uses of u0 bind nothing new.
  EXPECT_TRUE(g->Find("narrow")->unbacked_bindings().empty());
  EXPECT_TRUE(g->Find("zeros")->unbacked_bindings().empty());
  EXPECT_EQ(g->Find("zeros")->meta().ToAnnotation(), "f32[u0, 2][2, 1]cpu");
  // The range directive reached u0: narrow needed u0 <= 16.
  EXPECT_EQ(env.RangeOf(item->meta().sym).ToString(), "[0, 16]");
  // Propagating again in the same env (as every pass does) keeps u0: the
  // node's symbol does not become u1, and the directive still applies.
  for (const auto& n : g->nodes()) {
    if (n->kind() == Node::Kind::kCall) n->meta() = ValueMeta();
  }
  st = PropagateShapes(*g, env);
  ASSERT_OK(st);
  EXPECT_EQ(item->meta().ToAnnotation(), "Sym(u0)");
  EXPECT_EQ(g->Find("narrow")->meta().ToAnnotation(), "f32[u0][1]cpu");
  EXPECT_EQ(symbolic::ToString(item->unbacked_bindings()[0].first), "u0");
  // A fresh env numbers from u0 too.
  symbolic::ShapeEnv other;
  ASSERT_OK(PropagateShapes(*g, other));
  EXPECT_EQ(g->Find("zeros")->meta().ToAnnotation(), "f32[u0, 2][2, 1]cpu");
}

// x[:u0] without a range: whether u0 is past the end cannot be decided, so
// (as PyTorch) the slice's length is a fresh unbacked size bound to the
// result's size(0); the interpreter gives it its value.
TEST(ShapePropTest, SliceToADataDependentEndHasAnUnbackedLength) {
  std::unique_ptr<Graph> g = FromText(R"g(
def forward(self, n: "i64[][]cpu", x: "f32[6][1]cpu"):
    _local_scalar_dense: "Sym(u2)" = torch.ops.aten._local_scalar_dense.default(n)
    slice_1: "f32[u3][1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 0, _local_scalar_dense)
    mul: "f32[u3][1]cpu" = torch.ops.aten.mul.Tensor(slice_1, 2)
    return (mul,)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  const Node* slice = g->Find("slice_1");
  EXPECT_EQ(slice->meta().ToAnnotation(), "f32[u1][1]cpu");
  ASSERT_EQ(slice->unbacked_bindings().size(), 1u);
  EXPECT_EQ(slice->unbacked_bindings()[0].second, ".size(0)");
  Tensor n = *Tensor::Empty({}, DType::kInt64);
  *n.data<int64_t>() = 4;
  Tensor x = *Tensor::Empty({6}, DType::kFloat32);
  ASSERT_OK_AND_ASSIGN(Interpretation r,
                       Interpret(*g, {Value::OfTensor(n), Value::OfTensor(x)}));
  EXPECT_EQ(r.outputs[0].tensor.sizes(), (std::vector<int64_t>{4}));
}

// An .item() PyTorch annotated with a backed symbol is that symbol, backed
// by the hint the caller gives (lathec: the input's value); without a hint
// it is unbacked.
TEST(ShapePropTest, AnItemAnnotatedWithABackedSymbolIsBacked) {
  const char* text = R"g(
def forward(self, n: "i64[][]cpu", x: "f32[3][1]cpu"):
    _local_scalar_dense: "Sym(s16)" = torch.ops.aten._local_scalar_dense.default(n)
    new_zeros: "f32[s16][1]cpu" = torch.ops.aten.new_zeros.default(x, [_local_scalar_dense])
    return (new_zeros,)
)g";
  std::unique_ptr<Graph> g = FromText(text);
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s16"] = symbolic::Value::Int(4);
  ASSERT_OK(PropagateShapes(*g, env, options));
  const Node* item = g->Find("_local_scalar_dense");
  EXPECT_EQ(item->meta().ToAnnotation(), "Sym(s16)");
  EXPECT_FALSE(env.IsUnbacked(item->meta().sym));
  EXPECT_EQ(env.HintOf(item->meta().sym)->i, 4);
  EXPECT_TRUE(item->unbacked_bindings().empty());
  EXPECT_EQ(g->Find("new_zeros")->meta().ToAnnotation(), "f32[s16][1]cpu");
  std::unique_ptr<Graph> h = FromText(text);
  symbolic::ShapeEnv plain;
  ASSERT_OK(PropagateShapes(*h, plain));
  EXPECT_TRUE(plain.IsUnbacked(h->Find("_local_scalar_dense")->meta().sym));
}

TEST(ShapePropTest, FloatAndBoolItemsAreUnbackedToo) {
  std::unique_ptr<Graph> g =
      FromText(R"g(def forward(self, a: "f32[1][1]cpu", b: "b8[][]cpu"):
    _local_scalar_dense: "Sym(zuf0)" = torch.ops.aten._local_scalar_dense.default(a)
    _local_scalar_dense_1: "Sym(Eq(u0, 1))" = torch.ops.aten._local_scalar_dense.default(b)
    return (_local_scalar_dense, _local_scalar_dense_1)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_EQ(g->Find("_local_scalar_dense")->meta().ToAnnotation(), "Sym(zuf0)");
  EXPECT_EQ(g->Find("_local_scalar_dense_1")->meta().ToAnnotation(),
            "Sym(Eq(u0, 1))");
  EXPECT_EQ(symbolic::ToString(
                g->Find("_local_scalar_dense")->unbacked_bindings()[0].first),
            "zuf0");
}

TEST(ShapePropTest, CopiesGetNewStorageEvenFromViewOps) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[6][1]cpu"):
    t: "f32[3, 2][1, 3]cpu" = torch.ops.aten.t.default(x)
    reshape: "f32[6][1]cpu" = torch.ops.aten.reshape.default(t, [6])
    reshape_1: "f32[3, 2][2, 1]cpu" = torch.ops.aten.reshape.default(x, [3, 2])
    split = torch.ops.aten.split.Tensor(x, 1)
    getitem: "f32[1, 3][3, 1]cpu" = split[1]
    set_: "f32[6][1]cpu" = torch.ops.aten.set_.source_Tensor(reshape, y)
    return (reshape, reshape_1, getitem, set_)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  auto storage = [&](const char* name) {
    return g->Find(name)->meta().tensor.storage;
  };
  EXPECT_EQ(storage("t"), storage("x"));
  EXPECT_NE(storage("reshape"),
            storage("x"));  // a transposed tensor cannot be viewed flat
  EXPECT_EQ(storage("reshape_1"), storage("x"));
  EXPECT_EQ(storage("getitem"), storage("x"));
  EXPECT_EQ(storage("set_"), storage("y"));
  EXPECT_EQ(g->Find("split")->meta().elements[0].tensor.storage, storage("x"));
  // The reshape that copied runs as _reshape_copy, a new tensor to whatever
  // reads the graph; the one that viewed stays reshape.
  EXPECT_EQ(g->Find("reshape")->target(), "aten._reshape_copy.default");
  EXPECT_EQ(g->Find("reshape_1")->target(), "aten.reshape.default");
}

// Whether a reshape copies follows its input's layout where the reshape
// runs: after t_, z is transposed and its reshape copies; after set_, w
// has x's contiguous layout and its reshape is a view of x's storage, though
// the node w (as its annotation) had another layout and storage.
TEST(ShapePropTest, AReshapeCopiesByItsInputsLayoutAfterMetadataMutations) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, x: "f32[4, 6][6, 1]cpu", z: "f32[4, 6][6, 1]cpu", w: "f32[6, 4][1, 6]cpu"):
    t_ = torch.ops.aten.t_.default(z)
    reshape = torch.ops.aten.reshape.default(z, [-1])
    set_ = torch.ops.aten.set_.source_Tensor(w, x)
    reshape_1 = torch.ops.aten.reshape.default(w, [-1])
    return (reshape, reshape_1)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_EQ(g->Find("reshape")->target(), "aten._reshape_copy.default");
  EXPECT_EQ(g->Find("reshape_1")->target(), "aten.reshape.default");
  EXPECT_EQ(g->Find("reshape_1")->meta().tensor.storage,
            g->Find("x")->meta().tensor.storage);
}

// A renamed reshape called with keywords takes its arguments positionally
// (reshape's `shape` is _reshape_copy's `size`), and the graph prints,
// parses and propagates again to the same op, whose interpreter kernel
// copies x.t() in row-major order.
TEST(ShapePropTest, ARenamedReshapePrintsAndRunsAsACopy) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    t = torch.ops.aten.t.default(x)
    reshape = torch.ops.aten.reshape.default(self = t, shape = [-1])
    return (reshape,)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  const Node* r = g->Find("reshape");
  EXPECT_EQ(r->target(), "aten._reshape_copy.default");
  EXPECT_EQ(r->args().size(), 2u);
  EXPECT_TRUE(r->kwargs().empty());
  std::unique_ptr<Graph> again = FromText(PrintGraph(*g));
  ASSERT_NE(again, nullptr);
  symbolic::ShapeEnv env2;
  ASSERT_OK(PropagateShapes(*again, env2));
  EXPECT_EQ(again->Find("reshape")->target(), "aten._reshape_copy.default");
  Tensor x = *Tensor::Empty({2, 3}, DType::kFloat32);
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i);
  ASSERT_OK_AND_ASSIGN(Interpretation out,
                       Interpret(*again, {Value::OfTensor(x)}));
  const Tensor& flat = out.outputs[0].tensor;
  ASSERT_EQ(flat.numel(), 6);
  const double want[] = {0, 3, 1, 4, 2, 5};  // x.t() row by row
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(flat.GetDouble({i}), want[i]);
}

TEST(ShapePropTest, SplittingASymbolicDimSpecializesItWithAGuard) {
  std::unique_ptr<Graph> g = FromText(R"g(def forward(self, x: "f32[s0][1]cpu"):
    split = torch.ops.aten.split.Tensor(x, 3)
    getitem: "f32[2][1]cpu" = split[2]
    return (getitem,)
)g");
  ASSERT_NE(g, nullptr);
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(8);
  ASSERT_OK(PropagateShapes(*g, env, options));
  EXPECT_EQ(g->Find("getitem")->meta().ToAnnotation(), "f32[2][1]cpu");
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(symbolic::ToString(env.guards()[0]), "Eq(s0, 8)");
}

}  // namespace
}  // namespace lathe::ir
