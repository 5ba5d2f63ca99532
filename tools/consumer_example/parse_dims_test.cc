#include "parse_dims.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace consumer {
namespace {

using ::testing::ElementsAre;

TEST(ParseDimsTest, Parses) {
  auto dims = ParseDims("2x3x4");
  ASSERT_TRUE(dims.ok());
  EXPECT_THAT(*dims, ElementsAre(2, 3, 4));
  EXPECT_EQ(*Numel("2x3x4"), 24);
  EXPECT_EQ(*Numel("5x0"), 0);
}

TEST(ParseDimsTest, ErrorsPropagateThroughLatheMacros) {
  auto numel = Numel("2xqx4");
  ASSERT_FALSE(numel.ok());
  EXPECT_EQ(numel.status().message(),
            "dim 1: expected a non-negative integer, got 'q'");
}

}  // namespace
}  // namespace consumer
