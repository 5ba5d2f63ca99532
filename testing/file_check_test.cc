#include "testing/file_check.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lathe::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kGraph[] = R"(
mm = aten.mm(x, w)
relu = aten.relu(mm)
return (relu,)
)";

TEST(FileCheckTest, MatchingDirectivesPass) {
  EXPECT_TRUE(RunFileCheck(kGraph, R"(
CHECK: [[MM:[a-z]+]] = aten.mm(x, w)
CHECK-NEXT: aten.relu([[MM]])
CHECK-NOT: aten.add
CHECK: return
)")
                  .ok());
}

TEST(FileCheckTest, AMissingLineFailsWithDiagnostics) {
  absl::Status status = RunFileCheck(kGraph, "CHECK: aten.bmm\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("expected string not found in input"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("aten.bmm"));
}

TEST(FileCheckTest, WrongOrderFailsCheckNext) {
  absl::Status status = RunFileCheck(kGraph, R"(
CHECK: aten.relu
CHECK-NEXT: aten.mm
)");
  EXPECT_FALSE(status.ok());
}

TEST(FileCheckTest, ACheckNotThatMatchesFails) {
  absl::Status status = RunFileCheck(kGraph, "CHECK-NOT: aten.relu\n");
  EXPECT_THAT(std::string(status.message()), HasSubstr("excluded string"));
}

TEST(FileCheckTest, NoDirectivesIsAnError) {
  absl::Status status = RunFileCheck(kGraph, "just text\n");
  EXPECT_THAT(std::string(status.message()), HasSubstr("no check strings"));
}

}  // namespace
}  // namespace lathe::testing
