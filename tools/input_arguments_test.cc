// The arguments lathec arranges from an input set (input_arguments.h): a
// file laid out as its annotation says, scalars from 0-d files, composites
// from their inner tensors, constants after the placeholders, an artifact's
// arguments from its manifest, and the errors that name what is missing or
// does not fit. Expected strides, values and messages are worked out by
// hand.

#include "tools/input_arguments.h"

#include <memory>
#include <string>
#include <vector>

#include "aot/flatten_composites.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "runtime/artifact.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;

// A row-major f32 tensor holding 1, 2, 3, ...
Tensor Counting(std::vector<int64_t> sizes) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i + 1);
  return t;
}

Tensor Scalar(DType dtype, double v) {
  Tensor t = *Tensor::Empty({}, dtype);
  t.SetDouble({}, v);
  return t;
}

ir::TensorMeta MetaOf(const std::string& annotation) {
  return ir::ParseAnnotation(annotation)->tensor;
}

TEST(InputArgumentsTest, InAnnotatedLayoutCopiesIntoTheAnnotatedStrides) {
  Tensor t = Counting({2, 3});  // [[1, 2, 3], [4, 5, 6]], strides [3, 1]
  ASSERT_OK_AND_ASSIGN(
      Tensor laid, InAnnotatedLayout("x", MetaOf("f32[2, 3][1, 2]cpu"), t, {}));
  EXPECT_THAT(laid.strides(), ElementsAre(1, 2));
  EXPECT_NE(laid.data_ptr(), t.data_ptr());
  EXPECT_EQ(laid.GetDouble({0, 2}), 3);
  EXPECT_EQ(laid.GetDouble({1, 0}), 4);
  EXPECT_EQ(laid.data<float>()[1], 4);  // column-major in memory: 1, 4, 2, ...

  // Already so: the same tensor.
  ASSERT_OK_AND_ASSIGN(
      Tensor same, InAnnotatedLayout("x", MetaOf("f32[2, 3][3, 1]cpu"), t, {}));
  EXPECT_EQ(same.data_ptr(), t.data_ptr());
  // Other sizes are the run's to report: the tensor as it is.
  ASSERT_OK_AND_ASSIGN(
      Tensor other,
      InAnnotatedLayout("x", MetaOf("f32[3, 2][1, 3]cpu"), t, {}));
  EXPECT_THAT(other.strides(), ElementsAre(3, 1));

  EXPECT_THAT(
      InAnnotatedLayout("x", MetaOf("f32[2, 3][1, 1]cpu"), t, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "input 'x': the graph was compiled for the layout "
               "f32[2, 3][1, 1]cpu, whose elements overlap; no tensor can be "
               "laid out that way"));
}

constexpr char kGraph[] =
    R"g(def forward(self, x: "f32[2, 3][1, 2]cpu", n: "Sym(s0)", lr: "Sym(zf0)"):
    c: "f32[3][1]cpu" = self.c
    add: "f32[2, 3][1, 2]cpu" = torch.ops.aten.add.Tensor(x, c)
    return (add,)
)g";

TEST(InputArgumentsTest, LoadArgumentsArrangesPlaceholdersThenConstants) {
  std::unique_ptr<ir::Graph> g = *ir::ParseGraph(kGraph);
  InputSet set;
  set.tensors["x"] = Counting({2, 3});
  set.tensors["n"] = Scalar(DType::kInt64, 5);
  set.tensors["lr"] = Scalar(DType::kFloat64, 0.25);
  set.tensors["c"] = Counting({3});
  for (const char* name : {"x", "n", "lr", "c"}) {
    set.paths[name] = std::string(name) + ".npy";
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args,
                       LoadArguments(*g, *g, {}, set, {}, {"c"}));
  ASSERT_EQ(args.size(), 4u);
  ASSERT_EQ(args[0].kind, Operand::Kind::kTensor);
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(1, 2));
  EXPECT_EQ(args[0].tensor.GetDouble({1, 2}), 6);
  EXPECT_EQ(args[1].kind, Operand::Kind::kInt);
  EXPECT_EQ(args[1].i, 5);
  EXPECT_EQ(args[2].kind, Operand::Kind::kFloat);
  EXPECT_EQ(args[2].f, 0.25);
  EXPECT_EQ(args[3].tensor.data_ptr(), set.tensors["c"].data_ptr());

  InputSet wrong = set;
  wrong.tensors["n"] = Counting({2});
  EXPECT_THAT(LoadArguments(*g, *g, {}, wrong, {}, {"c"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "n.npy: input 'n' is a scalar and needs a 0-d .npy, "
                       "got f32[2][1]cpu"));
  InputSet no_x = set;
  no_x.tensors.erase("x");
  EXPECT_THAT(
      LoadArguments(*g, *g, {}, no_x, {}, {"c"}),
      StatusIs(absl::StatusCode::kInvalidArgument, "missing input 'x'"));
  InputSet no_c = set;
  no_c.tensors.erase("c");
  EXPECT_THAT(LoadArguments(*g, *g, {}, no_c, {}, {"c"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "missing constant 'self.c' (give it as --input "
                       "c=FILE.npy)"));
}

// An artifact taking x (f32[s0] tensor), a float and a constant self.c.
Manifest ArtifactManifest() {
  Manifest m;
  m.arguments = {{.name = "x", .rank = 1},
                 {.name = "lr", .kind = ArgumentSpec::Kind::kFloat},
                 {.name = "self.c", .constant = true, .rank = 1}};
  m.annotations = {"f32[s0][2]cpu", "Sym(zf0)", "f32[3][1]cpu"};
  m.signature.results = {CompositeLayout::Plain(1)};
  return m;
}

TEST(InputArgumentsTest, AnArtifactsArgumentsComeFromItsManifest) {
  Manifest m = ArtifactManifest();
  ASSERT_OK_AND_ASSIGN(ArtifactLayout layout, ArtifactLayoutOf(m));
  EXPECT_THAT(layout.names, ElementsAre("x", "lr", "c"));
  EXPECT_THAT(layout.files, ElementsAre("x", "lr", "c"));
  ASSERT_EQ(layout.signature.results.size(), 1u);

  InputSet set;
  set.tensors["x"] = Counting({4});
  set.tensors["lr"] = Scalar(DType::kFloat64, 0.5);
  set.tensors["c"] = Counting({3});
  for (const char* name : {"x", "lr", "c"}) {
    set.paths[name] = std::string(name) + ".npy";
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args,
                       ArtifactArguments(m, layout, set));
  ASSERT_EQ(args.size(), 3u);
  // x laid out with stride 2, as annotated: 1, 2, 3, 4 at 0, 2, 4, 6.
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(2));
  EXPECT_EQ(args[0].tensor.GetDouble({3}), 4);
  EXPECT_EQ(args[1].kind, Operand::Kind::kFloat);
  EXPECT_EQ(args[1].f, 0.5);
  EXPECT_EQ(args[2].kind, Operand::Kind::kTensor);

  set.tensors["lr"] = Counting({1});
  EXPECT_THAT(ArtifactArguments(m, layout, set),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "lr.npy: input 'lr' is a scalar and needs a 0-d .npy, "
                       "got f32[1][1]cpu"));
  set.tensors.erase("c");
  set.tensors["lr"] = Scalar(DType::kFloat64, 0.5);
  EXPECT_THAT(
      ArtifactArguments(m, layout, set),
      StatusIs(absl::StatusCode::kInvalidArgument, "missing input 'c'"));
}

// A result nested two composites deep is laid out as its whole tree (its
// files named down it). (A tree this program cannot build is refused where
// the manifest is read: artifact_test.)
TEST(InputArgumentsTest, AnArtifactsResultsAreLaidOutAsTheirWholeTrees) {
  Manifest m = ArtifactManifest();
  ASSERT_OK_AND_ASSIGN(
      CompositeLayout nested,
      CompositeLayout::Parse("pair(1,pair(scaled_int8(1,0),1))"));
  m.signature.results = {CompositeLayout::Plain(1), nested};
  ASSERT_OK_AND_ASSIGN(ArtifactLayout layout, ArtifactLayoutOf(m));
  ASSERT_EQ(layout.signature.results.size(), 2u);
  EXPECT_EQ(layout.signature.results[0].type, nullptr);
  EXPECT_EQ(layout.signature.results[1].ToString(),
            "pair(1,pair(scaled_int8(1,0),1))");
  std::vector<std::string> names;
  aot::LeafNames("out1", layout.signature.results[1], &names);
  EXPECT_THAT(names, ElementsAre("out1_a", "out1_b_a_data", "out1_b_a_scale",
                                 "out1_b_b"));
}

}  // namespace
}  // namespace lathe
