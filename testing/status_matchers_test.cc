#include "testing/status_matchers.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace lathe::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd number 3");
  return x / 2;
}

TEST(StatusMatchersTest, AssignsAnOkValue) {
  ASSERT_OK_AND_ASSIGN(int h, Half(8));
  EXPECT_EQ(h, 4);
  ASSERT_OK_AND_ASSIGN(
      auto p, absl::StatusOr<std::unique_ptr<int>>(std::make_unique<int>(7)));
  EXPECT_EQ(*p, 7);
}

TEST(StatusMatchersTest, StatusIsChecksCodeAndMessage) {
  EXPECT_THAT(Half(3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd")));
  EXPECT_THAT(Half(3), Not(StatusIs(absl::StatusCode::kNotFound)));
  EXPECT_THAT(Half(3), Not(StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("even"))));
  EXPECT_THAT(absl::NotFoundError("x"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(StatusMatchersTest, IsOk) {
  EXPECT_OK(Half(2));
  EXPECT_OK(absl::OkStatus());
  EXPECT_THAT(Half(1), Not(IsOk()));
}

void AssignHalfOf(int x, int* out) { ASSERT_OK_AND_ASSIGN(*out, Half(x)); }

// The assertion fails (and stops the function) on an error status.
TEST(StatusMatchersTest, AssignFailsOnError) {
  static int h = -1;
  EXPECT_FATAL_FAILURE(AssignHalfOf(5, &h), "odd number 3");
  EXPECT_EQ(h, -1);
}

}  // namespace
}  // namespace lathe::testing
