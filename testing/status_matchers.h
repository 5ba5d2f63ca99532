// -----------------------------------------------------------------------------
// File: status_matchers.h
// -----------------------------------------------------------------------------
//
// GoogleTest helpers for absl::Status and absl::StatusOr (Abseil 20220623
// ships none): EXPECT_OK / ASSERT_OK, ASSERT_OK_AND_ASSIGN, and the IsOk()
// and StatusIs(code, message_matcher) matchers.
//
// Example:
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(text));
//   EXPECT_OK(Verify(*g));
//   EXPECT_THAT(ParseGraph("def"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                           HasSubstr("line 1")));

#ifndef LATHE_TESTING_STATUS_MATCHERS_H_
#define LATHE_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lathe::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

template <typename MessageMatcher>
class StatusIsMatcher {
 public:
  StatusIsMatcher(absl::StatusCode code, MessageMatcher message)
      : code_(code), message_(std::move(message)) {}

  template <typename S>
  bool MatchAndExplain(const S& value,
                       ::testing::MatchResultListener* listener) const {
    const absl::Status& s = GetStatus(value);
    *listener << "whose status is " << s;
    return s.code() == code_ &&
           ::testing::Matcher<const std::string&>(message_).Matches(
               std::string(s.message()));
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has status code " << absl::StatusCodeToString(code_)
        << " and a message that ";
    ::testing::Matcher<const std::string&>(message_).DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not have status code " << absl::StatusCodeToString(code_)
        << " with a message that ";
    ::testing::Matcher<const std::string&>(message_).DescribeTo(os);
  }

 private:
  absl::StatusCode code_;
  MessageMatcher message_;
};

class IsOkMatcher {
 public:
  template <typename S>
  bool MatchAndExplain(const S& value,
                       ::testing::MatchResultListener* listener) const {
    const absl::Status& s = GetStatus(value);
    *listener << "whose status is " << s;
    return s.ok();
  }
  void DescribeTo(std::ostream* os) const { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const { *os << "is not OK"; }
};

}  // namespace internal

// StatusIs()
//
// Matches a Status or StatusOr with `code` and a message matching `message`
// (a string or a matcher such as HasSubstr).
template <typename MessageMatcher>
::testing::PolymorphicMatcher<internal::StatusIsMatcher<MessageMatcher>>
StatusIs(absl::StatusCode code, MessageMatcher message) {
  return ::testing::MakePolymorphicMatcher(
      internal::StatusIsMatcher<MessageMatcher>(code, std::move(message)));
}
inline auto StatusIs(absl::StatusCode code) {
  return StatusIs(code, ::testing::_);
}

// IsOk()
//
// Matches an OK Status or StatusOr.
inline ::testing::PolymorphicMatcher<internal::IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(internal::IsOkMatcher());
}

}  // namespace lathe::testing

// EXPECT_OK(), ASSERT_OK()
//
// Expects / asserts that a Status or StatusOr is OK, printing it if not.
#define EXPECT_OK(expr) EXPECT_THAT(expr, ::lathe::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT(expr, ::lathe::testing::IsOk())

// ASSERT_OK_AND_ASSIGN()
//
// Asserts that `rexpr` (a StatusOr) is OK and moves its value into `lhs`
// (a declaration or an existing variable).
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  LATHE_ASSERT_OK_AND_ASSIGN_IMPL(       \
      LATHE_TESTING_CONCAT(lathe_testing_status_or_, __LINE__), lhs, rexpr)

#define LATHE_ASSERT_OK_AND_ASSIGN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                    \
  ASSERT_TRUE(statusor.ok()) << statusor.status();            \
  lhs = *std::move(statusor)

#define LATHE_TESTING_CONCAT_INNER(x, y) x##y
#define LATHE_TESTING_CONCAT(x, y) LATHE_TESTING_CONCAT_INNER(x, y)

#endif  // LATHE_TESTING_STATUS_MATCHERS_H_
