#include "testing/runfiles.h"

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(RunfilesTest, ReadsAWorkspaceFile) {
  ASSERT_OK_AND_ASSIGN(std::string text, ReadRunfile("testing/runfiles.h"));
  EXPECT_THAT(text, HasSubstr("LATHE_TESTING_RUNFILES_H_"));
}

TEST(RunfilesTest, AMissingFileIsNotFoundNamingIt) {
  EXPECT_THAT(
      ReadRunfile("testing/no_such_file.txt"),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("testing/no_such_file.txt"),
                     HasSubstr(RunfilePath("testing/no_such_file.txt")))));
}

TEST(RunfilesTest, PathsAreUnderTheTestsDirectories) {
  const std::string srcdir = std::getenv("TEST_SRCDIR");
  const std::string ws = std::getenv("TEST_WORKSPACE");
  EXPECT_EQ(RunfilePath("a/b.txt"), srcdir + "/" + ws + "/a/b.txt");
  EXPECT_EQ(ExternalRunfilePath("llvm_filecheck", "FileCheck"),
            srcdir + "/llvm_filecheck/FileCheck");
  EXPECT_EQ(TestTmpPath("out"),
            std::string(std::getenv("TEST_TMPDIR")) + "/out");
}

}  // namespace
}  // namespace lathe::testing
