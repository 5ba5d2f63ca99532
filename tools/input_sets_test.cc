// The input sets lathec reads (input_sets.h): the file names a graph takes,
// --inputs directories and --input files as sets (with their errors),
// reading a set, and the symbol values a set gives. Expected names, paths
// and values are worked out by hand from the graph below.

#include "tools/input_sets.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aot/flatten_composites.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// x is a pair (x_a, x_b), n an int symbol, `baked` a parameter make_fx
// baked in (no file), y a tensor, and the graph reads constant self.c.
constexpr char kGraph[] = R"g(# lathe: composite x pair
def forward(self, x: "f32[s0, 3][3, 1]cpu", n: "Sym(s1)", baked, y: "f32[s0][1]cpu"):
    c: "f32[3][1]cpu" = self.c
    add: "f32[s0, 3][3, 1]cpu" = torch.ops.aten.add.Tensor(x, c)
    return (add,)
)g";

struct Parsed {
  std::unique_ptr<ir::Graph> graph;
  Composites composites;
};

Parsed Parse() {
  Parsed p;
  p.graph = *ir::ParseGraph(kGraph);
  p.composites = *aot::DeclaredComposites(*p.graph);
  return p;
}

Tensor Int64(int64_t v) {
  Tensor t = *Tensor::Empty({}, DType::kInt64);
  *t.data<int64_t>() = v;
  return t;
}

TEST(InputSetsTest, FileNamesAreLeavesThenConstants) {
  Parsed p = Parse();
  EXPECT_THAT(FileNames(*p.graph, p.composites),
              ElementsAre("x_a", "x_b", "n", "y", "c"));
  EXPECT_EQ(LayoutOf(p.composites, "y").type, nullptr);
  EXPECT_EQ(LayoutOf(p.composites, "x").inner.size(), 2u);
}

TEST(InputSetsTest, EachDirectoryIsASetOfEveryName) {
  ASSERT_OK_AND_ASSIGN(std::vector<InputSet> sets,
                       InputSets({}, {"in0", "in/1"}, {"x", "c"}, "graph"));
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].label, "input set 0 (in0): ");
  EXPECT_EQ(sets[1].label, "input set 1 (in/1): ");
  EXPECT_EQ(sets[1].paths.at("x"), "in/1/x.npy");
  EXPECT_EQ(sets[1].paths.at("c"), "in/1/c.npy");
  EXPECT_EQ(sets[0].paths.size(), 2u);
}

TEST(InputSetsTest, InputFlagsAreOneSetOfKnownNamesEachOnce) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<InputSet> sets,
      InputSets({{"x", "a.npy"}, {"c", "/d/c.npy"}}, {}, {"x", "c"}, "graph"));
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].label, "");
  EXPECT_EQ(sets[0].paths.at("x"), "a.npy");
  EXPECT_EQ(sets[0].paths.at("c"), "/d/c.npy");
  EXPECT_THAT(
      InputSets({{"x", "a.npy"}, {"x", "b.npy"}}, {}, {"x"}, "graph"),
      StatusIs(absl::StatusCode::kInvalidArgument, "input 'x' given twice"));
  EXPECT_THAT(InputSets({{"z", "z.npy"}}, {}, {"x"}, "artifact"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the artifact has no input named 'z'"));
}

TEST(InputSetsTest, ExampleSetTakesAnyNameOnce) {
  ASSERT_OK_AND_ASSIGN(InputSet set,
                       ExampleSet({{"z", "z.npy"}}, {"d"}, {"x", "y"}));
  EXPECT_EQ(set.paths.at("z"), "z.npy");
  EXPECT_EQ(set.paths.at("x"), "d/x.npy");
  EXPECT_EQ(set.paths.at("y"), "d/y.npy");
  EXPECT_THAT(
      ExampleSet({{"z", "1.npy"}, {"z", "2.npy"}}, {}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, "input 'z' given twice"));
}

TEST(InputSetsTest, ReadSetReadsEveryFileAndLabelsItsError) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  Tensor x = *Tensor::Empty({2}, DType::kFloat32);
  x.SetDouble({0}, 1.5);
  x.SetDouble({1}, -2);
  ASSERT_OK(WriteNpy(dir + "/x.npy", x));
  InputSet set;
  set.label = "input set 3 (d): ";
  set.paths["x"] = dir + "/x.npy";
  ASSERT_OK(ReadSet(set));
  ASSERT_EQ(set.tensors.count("x"), 1u);
  EXPECT_EQ(set.tensors.at("x").ToString(), "f32[2][1]cpu");
  EXPECT_EQ(set.tensors.at("x").GetDouble({0}), 1.5);
  EXPECT_EQ(set.tensors.at("x").GetDouble({1}), -2);

  set.paths["y"] = dir + "/absent.npy";
  absl::Status missing = ReadSet(set);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), StartsWith("input set 3 (d): "));
  EXPECT_THAT(std::string(missing.message()), HasSubstr("absent.npy"));
}

TEST(InputSetsTest, ValuesOfBindsSizesAndIntScalars) {
  Parsed p = Parse();
  InputSet set;
  set.tensors["x_a"] = *Tensor::Empty({4, 3}, DType::kFloat32);
  set.tensors["x_b"] = *Tensor::Empty({4, 3}, DType::kFloat32);
  set.tensors["n"] = Int64(7);
  set.tensors["y"] = *Tensor::Empty({4}, DType::kFloat32);
  SymbolValues v = ValuesOf(*p.graph, p.composites, set);
  ASSERT_EQ(v.hints.count("s0"), 1u);
  ASSERT_EQ(v.hints.count("s1"), 1u);
  EXPECT_EQ(v.hints.at("s0").i, 4);  // x's outer size 0, from x_a
  EXPECT_EQ(v.hints.at("s1").i, 7);  // n's value
  EXPECT_EQ(v.values.size(), 2u);

  // A set without x binds no s0 from it: y's size 0 still does.
  set.tensors.erase("x_a");
  set.tensors["y"] = *Tensor::Empty({5}, DType::kFloat32);
  v = ValuesOf(*p.graph, p.composites, set);
  EXPECT_EQ(v.hints.at("s0").i, 5);
}

}  // namespace
}  // namespace lathe
