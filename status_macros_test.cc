#include "status_macros.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::testing::HasSubstr;

absl::Status FailWith(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status ReturnIfErrorOnStatus(bool fail, int* reached) {
  RETURN_IF_ERROR(fail ? FailWith("boom") : absl::OkStatus());
  *reached = 1;
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, ReturnsTheErrorAndStopsThere) {
  int reached = 0;
  absl::Status status = ReturnIfErrorOnStatus(/*fail=*/true, &reached);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "boom");
  EXPECT_EQ(reached, 0);
}

TEST(ReturnIfErrorTest, ContinuesOnOk) {
  int reached = 0;
  EXPECT_OK(ReturnIfErrorOnStatus(/*fail=*/false, &reached));
  EXPECT_EQ(reached, 1);
}

TEST(ReturnIfErrorTest, TakesAStatusOr) {
  auto f = [](int x) -> absl::Status {
    RETURN_IF_ERROR(Half(x));
    return absl::OkStatus();
  };
  EXPECT_OK(f(4));
  EXPECT_THAT(std::string(f(3).message()), HasSubstr("odd"));
}

TEST(ReturnIfErrorTest, EvaluatesItsArgumentOnce) {
  int calls = 0;
  auto counted = [&calls]() {
    ++calls;
    return absl::OkStatus();
  };
  auto f = [&]() -> absl::Status {
    RETURN_IF_ERROR(counted());
    return absl::OkStatus();
  };
  ASSERT_OK(f());
  EXPECT_EQ(calls, 1);
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(auto quarter, Half(half));
  return quarter;
}

TEST(AssignOrReturnTest, DeclaresAndAssigns) {
  ASSERT_OK_AND_ASSIGN(int q, Quarter(12));
  EXPECT_EQ(q, 3);
}

TEST(AssignOrReturnTest, PropagatesTheFirstError) {
  absl::StatusOr<int> q = Quarter(6);  // 6 -> 3 -> odd.
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(), "odd");
}

TEST(AssignOrReturnTest, AssignsToAnExistingVariableAndMovesOnlyTypes) {
  auto make = [](bool fail) -> absl::StatusOr<std::unique_ptr<std::string>> {
    if (fail) return absl::NotFoundError("none");
    return std::make_unique<std::string>("value");
  };
  auto f = [&](bool fail) -> absl::StatusOr<std::string> {
    std::unique_ptr<std::string> p;
    ASSIGN_OR_RETURN(p, make(fail));
    return *p;
  };
  EXPECT_EQ(*f(false), "value");
  EXPECT_EQ(f(true).status().code(), absl::StatusCode::kNotFound);
}

TEST(AssignOrReturnTest, TwoInOneScopeDoNotCollide) {
  auto f = []() -> absl::StatusOr<int> {
    // Each use declares a hidden StatusOr named after its line; two in one
    // scope must not clash.
    ASSIGN_OR_RETURN(int a, Half(8));
    ASSIGN_OR_RETURN(int b, Half(a));
    return a + b;
  };
  EXPECT_EQ(*f(), 6);
}

}  // namespace
}  // namespace lathe
