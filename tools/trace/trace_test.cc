#include "tools/trace/trace.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/file_io.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::trace {
namespace {

using ::lathe::testing::StatusIs;
using ::lathe::testing::TestTmpPath;
using ::testing::HasSubstr;

TEST(TraceTest, OneJsonObjectPerStep) {
  Trace t;
  t.Step("parse", 0.25);
  t.Step("cse", 0.5, {{kGraph, "03-cse.txt", "a = f(\"x\")\n"}});
  EXPECT_EQ(t.ToJsonLines(),
            "{\"step\":\"parse\",\"seconds\":0.25,\"made\":[]}\n"
            "{\"step\":\"cse\",\"seconds\":0.5,\"made\":[{\"kind\":\"graph\","
            "\"title\":\"03-cse.txt\",\"text\":\"a = f(\\\"x\\\")\\n\"}]}\n");
}

TEST(TraceTest, WritesAndReadsBack) {
  Trace t;
  t.Step("parse", 0.001);
  t.Step("lower", 0.0025,
         {{kLoopIr, "before", "kernel k0\n"},
          {kSource, "kernel.cc", "int main() { return '\\0'; }\t\x01"},
          {kCache, "cache", "hit: disk \xE2\x82\xAC"}});
  t.Step("<script>alert(1)</script>", 1e-9);
  const std::string path = TestTmpPath("trace.jsonl");
  ASSERT_OK(t.WriteTo(path));
  ASSERT_OK_AND_ASSIGN(std::vector<TraceStep> steps, ReadTrace(path));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].name, "lower");
  EXPECT_DOUBLE_EQ(steps[1].seconds, 0.0025);
  ASSERT_EQ(steps[1].made.size(), 3u);
  EXPECT_EQ(steps[1].made[1].kind, kSource);
  EXPECT_EQ(steps[1].made[1].text, "int main() { return '\\0'; }\t\x01");
  EXPECT_EQ(steps[1].made[2].text, "hit: disk \xE2\x82\xAC");
  EXPECT_EQ(steps[2].name, "<script>alert(1)</script>");
  EXPECT_DOUBLE_EQ(steps[2].seconds, 1e-9);
}

TEST(TraceTest, InvalidUtf8IsReplacedOnTheWayOut) {
  Trace t;
  t.Step("bad\xFF", 0, {{kText, "t", "\xC3"}});
  ASSERT_OK_AND_ASSIGN(std::vector<TraceStep> steps,
                       ParseTrace(t.ToJsonLines(), "t.jsonl"));
  EXPECT_EQ(steps[0].name, "bad\xEF\xBF\xBD");
  EXPECT_EQ(steps[0].made[0].text, "\xEF\xBF\xBD");
}

TEST(ParseTraceTest, SkipsBlankLinesAndIgnoresUnknownMembers) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<TraceStep> steps,
      ParseTrace("\n{\"step\":\"a\",\"seconds\":1,\"new\":[1]}\r\n  \n"
                 "{\"seconds\":2,\"step\":\"b\",\"made\":[{\"kind\":\"x\","
                 "\"title\":\"t\",\"text\":\"\",\"extra\":true}]}\n",
                 "t.jsonl"));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "a");
  EXPECT_TRUE(steps[0].made.empty());
  EXPECT_EQ(steps[1].made[0].kind, "x");
}

TEST(ParseTraceTest, ErrorsNameTheSourceAndTheLine) {
  const std::string good = "{\"step\":\"a\",\"seconds\":1}\n";
  struct Case {
    std::string line;
    std::string message;
  };
  const Case cases[] = {
      {"{\"step\":\"a\"", "t.jsonl: line 3: column 12: expected ',' or '}'"},
      {"[1]",
       "t.jsonl: line 3: expected a step (a JSON object), found a array"},
      {"{\"seconds\":1}", "t.jsonl: line 3: expected a \"step\" member"},
      {"{\"step\":1,\"seconds\":1}",
       "line 3: expected \"step\" in a step to be a string, found a number"},
      {"{\"step\":\"a\"}", "line 3: expected \"seconds\" in step 'a'"},
      {"{\"step\":\"a\",\"seconds\":-1}", "to be a number >= 0"},
      {"{\"step\":\"a\",\"seconds\":1,\"made\":{}}",
       "expected \"made\" in step 'a' to be an array, found a object"},
      {"{\"step\":\"a\",\"seconds\":1,\"made\":[3]}",
       "expected item 0 of step 'a' to be an object"},
      {"{\"step\":\"a\",\"seconds\":1,\"made\":[{\"kind\":\"graph\","
       "\"title\":\"t\"}]}",
       "expected a \"text\" member in item 0 of step 'a'"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(
        ParseTrace(absl::StrCat(good, "\n", c.line, "\n", good), "t.jsonl"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.line;
  }
}

TEST(ReadTraceTest, MissingAndOversizedFilesAreErrorsNamingThem) {
  const std::string missing = TestTmpPath("no-such-trace.jsonl");
  EXPECT_THAT(ReadTrace(missing), StatusIs(absl::StatusCode::kNotFound,
                                           HasSubstr("no-such-trace.jsonl")));
  const std::string big = TestTmpPath("big.jsonl");
  ASSERT_OK(WriteFileAtomic(big, std::string(200, ' ')));
  EXPECT_THAT(
      ReadTrace(big, /*max_bytes=*/100),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("big.jsonl")));
  EXPECT_OK(ReadTrace(big, /*max_bytes=*/1000));
}

}  // namespace
}  // namespace lathe::trace
