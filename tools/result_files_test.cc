// The files lathec run writes for a call (result_files.h): one per result
// leaf (none for a None), a number as a 0-d array, written arguments under
// mutated/, a per-set prefix, and the all-or-nothing write. Expected names
// and values are worked out by hand.

#include "tools/result_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "aot/flatten_composites.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/value.h"
#include "runtime/composite.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::StartsWith;

Tensor Filled(std::vector<int64_t> sizes, float v) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

CompositeLayout Pair() {
  return CompositeLayout::Of(
      FindCompositeType("pair"),
      {CompositeLayout::Plain(), CompositeLayout::Plain()});
}

// Results: a tensor, None, the int 3, a pair; arguments x (not written) and
// y (written).
struct Call {
  aot::CompositeSignature signature;
  std::vector<Operand> results, arguments;
};

Call MakeCall() {
  Call c;
  c.signature.results = {CompositeLayout::Plain(), CompositeLayout::Plain(),
                         CompositeLayout::Plain(), Pair()};
  c.signature.arguments = {CompositeLayout::Plain(), CompositeLayout::Plain()};
  c.results = {
      Operand::Of(Filled({2}, 1)), Operand(), Operand::Int(3),
      *MakePair(Operand::Of(Filled({2}, 4)), Operand::Of(Filled({2}, 5)))};
  c.arguments = {Operand::Of(Filled({2}, 6)), Operand::Of(Filled({3}, 7))};
  return c;
}

TEST(ResultFilesTest, OneFilePerLeafAndWrittenArgument) {
  Call c = MakeCall();
  ASSERT_OK_AND_ASSIGN(std::vector<PendingFile> files,
                       ResultFiles(c.signature, {"x", "y"}, c.results,
                                   c.arguments, {false, true}, "1/"));
  std::vector<std::string> paths, summaries;
  for (const PendingFile& f : files) {
    paths.push_back(f.path);
    summaries.push_back(f.summary);
  }
  EXPECT_THAT(paths, ElementsAre("1/out0.npy", "", "1/out2.npy", "1/out3_a.npy",
                                 "1/out3_b.npy", "1/mutated/y.npy"));
  EXPECT_EQ(summaries[0], "1/out0.npy: f32[2][1]cpu");
  EXPECT_EQ(summaries[1], "1/out1: None");
  EXPECT_EQ(summaries[5], "1/mutated/y.npy: f32[3][1]cpu");
  // The int result as a 0-d int64 array.
  EXPECT_EQ(files[2].tensor.dtype(), DType::kInt64);
  EXPECT_EQ(files[2].tensor.dim(), 0);
  EXPECT_EQ(*files[2].tensor.data<int64_t>(), 3);
  EXPECT_EQ(files[4].tensor.GetDouble({1}), 5);
}

// A result nested two composites deep (a pair whose inner b is a pair)
// is one file per leaf, named down the tree.
TEST(ResultFilesTest, NestedCompositesAreNamedDownTheTree) {
  aot::CompositeSignature signature;
  signature.results = {CompositeLayout::Of(FindCompositeType("pair"),
                                           {CompositeLayout::Plain(), Pair()})};
  ASSERT_OK_AND_ASSIGN(Operand inner, MakePair(Operand::Of(Filled({2}, 2)),
                                               Operand::Of(Filled({2}, 3))));
  ASSERT_OK_AND_ASSIGN(Operand nested,
                       MakePair(Operand::Of(Filled({2}, 1)), inner));
  ASSERT_OK_AND_ASSIGN(std::vector<PendingFile> files,
                       ResultFiles(signature, {}, {nested}, {}, {}, ""));
  std::vector<std::string> paths;
  for (const PendingFile& f : files) paths.push_back(f.path);
  EXPECT_THAT(paths, ElementsAre("out0_a.npy", "out0_b_a.npy", "out0_b_b.npy"));
  EXPECT_EQ(files[0].tensor.GetDouble({0}), 1);
  EXPECT_EQ(files[1].tensor.GetDouble({0}), 2);
  EXPECT_EQ(files[2].tensor.GetDouble({1}), 3);
}

// A result that is not of the shape its signature gives (as from a
// manifest that does not describe its library) is an error naming it, not
// a file too few or a leaf under another's name.
TEST(ResultFilesTest, AResultNotOfItsSignaturesShapeIsNamed) {
  Call c = MakeCall();
  c.signature.results[0] = Pair();  // out0 is a plain tensor
  EXPECT_THAT(ResultFiles(c.signature, {"x", "y"}, c.results, c.arguments,
                          {false, true}, ""),
              StatusIs(absl::StatusCode::kInternal,
                       "out0: the call gave f32[2][1]cpu where its signature "
                       "says pair(?,?)"));
  c = MakeCall();
  c.signature.results[3] = CompositeLayout::Plain();  // out3 is a pair
  EXPECT_THAT(ResultFiles(c.signature, {"x", "y"}, c.results, c.arguments,
                          {false, true}, ""),
              StatusIs(absl::StatusCode::kInternal,
                       "out3: the call gave pair(f32[2][1]cpu, f32[2][1]cpu) "
                       "where its signature says a plain value"));
  c = MakeCall();
  c.signature.results.pop_back();
  EXPECT_THAT(ResultFiles(c.signature, {"x", "y"}, c.results, c.arguments,
                          {false, true}, ""),
              StatusIs(absl::StatusCode::kInternal,
                       "the call gave 4 results and 2 arguments where its "
                       "signature says 3 and 2"));
  c = MakeCall();
  c.results.pop_back();
  EXPECT_THAT(ResultFiles(c.signature, {"x", "y"}, c.results, c.arguments,
                          {false, true}, ""),
              StatusIs(absl::StatusCode::kInternal,
                       "the call gave 3 results and 2 arguments where its "
                       "signature says 4 and 2"));
}

TEST(ResultFilesTest, AsTensorSavesNumbersAsZeroDimensionalArrays) {
  ASSERT_OK_AND_ASSIGN(Tensor f, AsTensor(Operand::Float(2.5), 0));
  EXPECT_EQ(f.dtype(), DType::kFloat64);
  EXPECT_EQ(f.GetDouble({}), 2.5);
  ASSERT_OK_AND_ASSIGN(Tensor b, AsTensor(Operand::Bool(true), 0));
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(b.GetDouble({}), 1);
  absl::StatusOr<Tensor> none = AsTensor(Operand(), 4);
  EXPECT_THAT(none, StatusIs(absl::StatusCode::kUnimplemented));
  EXPECT_EQ(none.status().message(),
            "output 4 is None, which cannot be saved as .npy");
}

TEST(ResultFilesTest, StagedFilesAppearTogetherOnCommit) {
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/out";
  Call c = MakeCall();
  ASSERT_OK_AND_ASSIGN(std::vector<PendingFile> files,
                       ResultFiles(c.signature, {"x", "y"}, c.results,
                                   c.arguments, {false, true}, ""));
  ASSERT_OK_AND_ASSIGN(StagedDir staged, StageResultFiles(out, files));
  EXPECT_FALSE(std::filesystem::exists(out + "/out0.npy"));
  ASSERT_OK(staged.Commit());
  ASSERT_OK_AND_ASSIGN(Tensor out0, ReadNpy(out + "/out0.npy"));
  EXPECT_EQ(out0.ToString(), "f32[2][1]cpu");
  EXPECT_EQ(out0.GetDouble({1}), 1);
  ASSERT_OK_AND_ASSIGN(Tensor y, ReadNpy(out + "/mutated/y.npy"));
  EXPECT_EQ(y.GetDouble({2}), 7);
  EXPECT_FALSE(std::filesystem::exists(out + "/out1.npy"));  // None
  EXPECT_FALSE(std::filesystem::exists(out + "/mutated/x.npy"));

  // A directory of other files is never replaced.
  const std::string other = std::string(std::getenv("TEST_TMPDIR")) + "/other";
  std::filesystem::create_directories(other);
  std::ofstream(other + "/keep.txt") << "mine";
  absl::StatusOr<StagedDir> refused = StageResultFiles(other, files);
  if (refused.ok()) {
    EXPECT_FALSE(refused->Commit().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(other + "/keep.txt"));
  EXPECT_FALSE(std::filesystem::exists(other + "/out0.npy"));
}

}  // namespace
}  // namespace lathe
