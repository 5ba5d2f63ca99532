#include "runtime/composite_layout.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/composite.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

CompositeLayout Pair(CompositeLayout a, CompositeLayout b) {
  return CompositeLayout::Of(FindCompositeType("pair"), {a, b});
}

TEST(CompositeLayoutTest, PrintsAndParsesBack) {
  CompositeLayout pair =
      Pair(CompositeLayout::Plain(2), CompositeLayout::Plain(0));
  EXPECT_EQ(pair.ToString(), "pair(2,0)");
  ASSERT_OK_AND_ASSIGN(CompositeLayout back,
                       CompositeLayout::Parse("pair(2,0)"));
  EXPECT_EQ(back.ToString(), "pair(2,0)");
  EXPECT_EQ(back.type, FindCompositeType("pair"));
  EXPECT_EQ(back.rank, 2);  // a composite's outer rank: its first value's
  EXPECT_EQ(back.inner[1].rank, 0);
  ASSERT_OK_AND_ASSIGN(
      CompositeLayout nested,
      CompositeLayout::Parse("pair(scaled_int8(1,0),scaled_int8(1,0))"));
  EXPECT_EQ(nested.inner[1].type, FindCompositeType("scaled_int8"));
  EXPECT_EQ(nested.ToString(), "pair(scaled_int8(1,0),scaled_int8(1,0))");
  // A rank the compiler did not record.
  EXPECT_EQ(
      Pair(CompositeLayout::Plain(), CompositeLayout::Plain(1)).ToString(),
      "pair(?,1)");
  EXPECT_EQ(CompositeLayout::Plain(3).ToString(), "3");
}

TEST(CompositeLayoutTest, ParseSaysWhatItExpectedWhere) {
  auto refused = [](const std::string& text, absl::StatusCode code,
                    const std::string& message) {
    EXPECT_THAT(CompositeLayout::Parse(text),
                StatusIs(code, HasSubstr(message)))
        << text;
  };
  const auto invalid = absl::StatusCode::kInvalidArgument;
  refused("pair(2", invalid, "expected ',' or ')' at character 7");
  refused("3x", invalid, "expected the end at character 2");
  refused("pair(-)", invalid,
          "expected a rank or a composite type at character 6");
  refused("100", invalid, "expected a rank below 100");
  refused("?", invalid, "expected a rank or a composite type at character 1");
  refused("pair(1,1,1)", invalid,
          "expected 2 inner values of pair before ')' at character 11");
  refused("pair(1)", invalid, "expected 2 inner values of pair");
  refused("pair", invalid, "expected '(' at character 5");
  refused("blob(1,1)", absl::StatusCode::kFailedPrecondition,
          "layout 'blob(1,1)': composite type 'blob' is not registered in "
          "this program");
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "pair(";
  refused(deep, invalid, "fewer nested composites");
}

TEST(CompositeLayoutTest, CompleteWhenEveryRankAndValueIsThere) {
  EXPECT_TRUE(CompositeLayout::Plain(0).Complete());
  EXPECT_FALSE(CompositeLayout::Plain().Complete());
  EXPECT_TRUE(
      Pair(CompositeLayout::Plain(1), CompositeLayout::Plain(1)).Complete());
  EXPECT_FALSE(
      Pair(CompositeLayout::Plain(1), CompositeLayout::Plain()).Complete());
  CompositeLayout short_pair =
      Pair(CompositeLayout::Plain(1), CompositeLayout::Plain(1));
  short_pair.inner.pop_back();
  EXPECT_FALSE(short_pair.Complete());
  short_pair.inner.clear();
  EXPECT_FALSE(short_pair.Complete());
}

TEST(CompositeLayoutTest, SlotsCountWhatTheDenseGraphTakes) {
  CompositeLayout p =
      Pair(CompositeLayout::Plain(2),
           Pair(CompositeLayout::Plain(2), CompositeLayout::Plain(2)));
  EXPECT_EQ(p.Slots(/*argument=*/false), 3);
  EXPECT_EQ(p.Slots(/*argument=*/true), 3);
  // Symbolic outer sizes and strides: an int slot each, as arguments only.
  p.symbolic_sizes = {0};
  p.symbolic_strides = {0};
  EXPECT_EQ(p.Slots(/*argument=*/true), 5);
  EXPECT_EQ(p.Slots(/*argument=*/false), 3);
  // A frozen argument is one empty slot.
  p.frozen = true;
  EXPECT_EQ(p.Slots(/*argument=*/true), 1);
  EXPECT_EQ(CompositeLayout::Plain(4).Slots(/*argument=*/true), 1);
}

}  // namespace
}  // namespace lathe
