// `lathec report` as a user runs it: a real compile's trace (made by
// `lathec compile tools/examples/mlp_gelu.txt -o DIR --trace FILE`) in, one
// page out; every mistake is one line naming what is wrong.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/file_io.h"
#include "testing/runfiles.h"
#include "tools/testing/run_lathec.h"
#include "tools/trace/report.h"

namespace lathe {
namespace {

using ::lathe::testing::RunfilePath;
using ::lathe::testing::RunLathec;
using ::lathe::testing::TestTmpPath;
using ::lathe::testing::WriteTestFile;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kTrace[] = "tools/trace/testdata/mlp_gelu.trace.jsonl";

// The output is one line (no newline inside) ending in a newline.
int Lines(const std::string& output) {
  int n = 0;
  for (char c : output) n += c == '\n';
  return n;
}

TEST(LathecReportTest, RendersARealTrace) {
  const std::string out = TestTmpPath("report.html");
  testing::LathecResult r =
      RunLathec({"report", RunfilePath(kTrace), "-o", out});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, absl::StrCat("wrote ", out, " (24 steps)\n"));
  absl::StatusOr<std::string> html = ReadFileLimited(out, 16 << 20);
  ASSERT_TRUE(html.ok()) << html.status();
  for (const char* id : trace::kReportSections) {
    EXPECT_THAT(*html, HasSubstr(absl::StrCat("<section id=\"", id, "\">")));
  }
  EXPECT_THAT(*html, HasSubstr("mlp_gelu.trace.jsonl"));
  // decompose turned gelu into its parts; reinplace made them in place.
  EXPECT_THAT(*html, HasSubstr("<span class=\"del\">-         gelu: "));
  EXPECT_THAT(*html, HasSubstr("torch.ops.aten.mul_.Tensor"));
  EXPECT_THAT(*html, HasSubstr("fuse k2 into k1"));
  EXPECT_THAT(*html, HasSubstr("lathe_call"));
  EXPECT_THAT(*html, HasSubstr("-march=native"));
  EXPECT_THAT(*html, Not(HasSubstr("<script")));
}

TEST(LathecReportTest, AMissingTraceIsOneLineNamingIt) {
  testing::LathecResult r = RunLathec(
      {"report", TestTmpPath("absent.jsonl"), "-o", TestTmpPath("r.html")});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("lathec: "));
  EXPECT_THAT(r.output, HasSubstr("absent.jsonl"));
  EXPECT_EQ(Lines(r.output), 1) << r.output;
  EXPECT_FALSE(testing::PathExists(TestTmpPath("r.html")));
}

TEST(LathecReportTest, AMalformedTraceNamesTheLine) {
  std::string bad = WriteTestFile("bad.jsonl",
                                  "{\"step\":\"parse\",\"seconds\":0.1}\n{"
                                  "\"step\":\"cse\",\"seconds\":}\n");
  testing::LathecResult r =
      RunLathec({"report", bad, "-o", TestTmpPath("bad.html")});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              HasSubstr("bad.jsonl: line 2: column 25: expected a value"));
  EXPECT_EQ(Lines(r.output), 1) << r.output;
}

TEST(LathecReportTest, BadArgumentsAreOneLineWithTheUsage) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"report"},
           {"report", "t.jsonl"},
           {"report", "t.jsonl", "-o"},
           {"report", "a.jsonl", "b.jsonl", "-o", "r.html"},
           {"report", "t.jsonl", "--bogus", "-o", "r.html"}}) {
    testing::LathecResult r = RunLathec(args);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("usage: lathec report TRACE -o REPORT.html"));
    EXPECT_EQ(Lines(r.output), 1) << r.output;
  }
}

TEST(LathecReportTest, HelpMentionsReport) {
  testing::LathecResult r = RunLathec({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("lathec report TRACE -o REPORT.html"));
}

}  // namespace
}  // namespace lathe
