// A failed check's message as the runtime gives it: the template's holes
// (kernel_abi.h's "{k:TEXT}") filled with the values the check reported,
// or left as their text when none were; a hole past the values, and text
// that only looks like a hole, never read outside them. The kernel helper
// keeps one failure's code and values when many threads fail at once.

#include "runtime/loaded_graph.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernel_abi.h"
#include "runtime/kernel_runtime.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(FillCheckMessageTest, HolesTakeTheReportedValues) {
  EXPECT_EQ(FillCheckMessage("index {0:?} is out of bounds for dimension 0 "
                             "with size {1:s0}",
                             {5, 4}),
            "index 5 is out of bounds for dimension 0 with size 4");
  // A hole may come twice, or out of order; negative values keep their sign.
  EXPECT_EQ(FillCheckMessage("{1:b} {0:a} {1:b}", {-3, 7}), "7 -3 7");
  EXPECT_EQ(FillCheckMessage("a result of {0:u0**3} elements (f32[{1:u0}, "
                             "{1:u0}, 2])",
                             {18, 3}),
            "a result of 18 elements (f32[3, 3, 2])");
}

TEST(FillCheckMessageTest, UnreportedValuesLeaveTheirText) {
  // An older library, or a check that reported nothing: the symbols.
  EXPECT_EQ(FillCheckMessage("Trying to create tensor with negative "
                             "dimension {0:u0}",
                             {}),
            "Trying to create tensor with negative dimension u0");
  // A message without holes is kept as it is.
  EXPECT_EQ(FillCheckMessage("u0 <= 3 failed", {1, 2}), "u0 <= 3 failed");
}

TEST(FillCheckMessageTest, AHostileTemplateReadsNoValueItWasNotGiven) {
  // Holes past the values given: their text, never values[k].
  EXPECT_EQ(FillCheckMessage("{0:a} {1:b} {999:c}", {4}), "4 b c");
  // Not holes: kept literally (too many digits, no colon, no digits, no
  // close, a brace in the text).
  EXPECT_EQ(FillCheckMessage("{1234:x} {0} {:x} {x:y} {0:x", {9}),
            "{1234:x} {0} {:x} {x:y} {0:x");
  EXPECT_EQ(FillCheckMessage("{0:a{1:b}}", {1, 2}), "{0:a2}");
  EXPECT_EQ(FillCheckMessage("{{0:a}}", {5}), "{5}");
  EXPECT_EQ(FillCheckMessage("{", {}), "{");
  EXPECT_EQ(FillCheckMessage("", {1}), "");
}

// CallStatus gives check k - 1's message for code k, filled with what the
// call reported on this thread; the values go with the message.
TEST(CallStatusTest, FillsTheFailedChecksMessage) {
  const std::vector<std::string> checks = {"first {0:u0}",
                                           "second {0:u0} of {1:s0}"};
  LatheKernelRuntime rt = SeededKernelRuntime(kDefaultSeed);
  const int64_t values[] = {-3, 8};
  lathe_report(&rt, values, 2);
  EXPECT_THAT(CallStatus(2, checks),
              StatusIs(absl::StatusCode::kInvalidArgument, "second -3 of 8"));
  // Taken: the next failure without a report shows the symbols.
  EXPECT_THAT(TakeCheckValues(), IsEmpty());
  EXPECT_THAT(CallStatus(1, checks),
              StatusIs(absl::StatusCode::kInvalidArgument, "first u0"));
  // A new call's runtime forgets an old report.
  lathe_report(&rt, values, 1);
  rt = SeededKernelRuntime(kDefaultSeed);
  EXPECT_THAT(CallStatus(1, checks),
              StatusIs(absl::StatusCode::kInvalidArgument, "first u0"));
  // The process-wide runtime has no slots: a report goes nowhere.
  lathe_report(KernelRuntime(), values, 2);
  EXPECT_THAT(TakeCheckValues(), IsEmpty());
}

TEST(CallStatusTest, AReportIsCappedAtTheSlotsGiven) {
  LatheKernelRuntime rt = SeededKernelRuntime(kDefaultSeed);
  std::vector<int64_t> values(LATHE_CHECK_VALUES + 4);
  for (size_t k = 0; k < values.size(); ++k) values[k] = k;
  lathe_report(&rt, values.data(), static_cast<int64_t>(values.size()));
  std::vector<int64_t> taken = TakeCheckValues();
  EXPECT_EQ(taken.size(), LATHE_CHECK_VALUES);
  EXPECT_EQ(taken.back(), LATHE_CHECK_VALUES - 1);
}

// Eight threads fail a kernel's checks at once, each with its own code and
// values: the first to set the code is the only one to report, so the
// values match the code (and ThreadSanitizer sees no race).
TEST(CallStatusTest, OneFailingThreadOfAKernelReports) {
  for (int round = 0; round < 20; ++round) {
    LatheKernelRuntime rt = SeededKernelRuntime(kDefaultSeed);
    int e = 0;
    std::vector<std::thread> threads;
    for (int t = 1; t <= 8; ++t) {
      threads.emplace_back([&rt, &e, t] {
        const int64_t values[] = {100 + t, 200 + t};
        lathe_kernel_check_failed(&e, &rt, t, values, 2);
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_GE(e, 1);
    ASSERT_LE(e, 8);
    EXPECT_THAT(TakeCheckValues(), ElementsAre(100 + e, 200 + e));
  }
}

TEST(CheckValueTest, FloatCountsSaturate) {
  EXPECT_EQ(lathe_check_i64(4398046511104.0), int64_t{1} << 42);
  EXPECT_EQ(lathe_check_i64(3.7e19), INT64_MAX);
  EXPECT_EQ(lathe_check_i64(-3.7e19), INT64_MIN);
  EXPECT_EQ(lathe_check_i64(0.0 / 0.0), 0);
}

}  // namespace
}  // namespace lathe
