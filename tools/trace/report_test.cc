#include "tools/trace/report.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/trace/trace.h"

namespace lathe::trace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A trace with something for every section.
std::vector<TraceStep> FullTrace() {
  Trace t;
  t.Step("parse", 0.001);
  t.Step("aot_dispatch", 0.002,
         {{kGraph, "00-aot_dispatch.txt", "a = f(x)\nb = g(a)\nreturn b\n"}});
  t.Step("decompose", 0.004,
         {{kGraph, "01-decompose.txt",
           "a = f(x)\nc = h(a)\nb = k(c)\nreturn b\n"}});
  t.Step("cse", 0.0005,
         {{kGraph, "02-cse.txt", "a = f(x)\nc = h(a)\nb = k(c)\nreturn b\n"}});
  t.Step("guards", 0.0001, {{kGuards, "guards", "t0.size(0) == 4\n"}});
  t.Step("lower", 0.003,
         {{kLoopIr, "before fusion", "kernel k0\nkernel k1\n"},
          {kLoopIr, "after fusion", "kernel k0 (fused k0, k1)\n"},
          {kFusionLog, "fusion.log", "fuse k1 into k0: same ranges\n"},
          {kSource, "kernel.cc", "extern \"C\" int lathe_call() {}\n"},
          {kDot, "graph.dot", "digraph lathe { a -> b; }"}});
  t.Step("build", 0.25,
         {{kCommand, "command", "g++ -O3 -shared -o k.so k.cc"},
          {kCache, "cache", "miss (compiled)"}});
  t.Step("note", 0, {{"future_kind", "later.txt", "something new"}});
  return t.steps();
}

ReportOptions WithSvg(std::optional<std::string> svg) {
  ReportOptions o;
  o.dot_to_svg = [svg](absl::string_view) { return svg; };
  return o;
}

TEST(RenderReportTest, HasEverySectionWithItsContent) {
  std::string html =
      RenderReport(FullTrace(), WithSvg("<svg><g id=\"graph0\"></g></svg>"));
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  for (const char* id : kReportSections) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<section id=\"", id, "\">")))
        << id;
  }
  EXPECT_THAT(html, Not(HasSubstr("Nothing recorded")));
  // The timeline: the longest step's bar is full, the others in proportion.
  EXPECT_THAT(html, HasSubstr("style=\"width:100.00%\""));
  EXPECT_THAT(html, HasSubstr("style=\"width:1.60%\""));  // decompose
  EXPECT_THAT(html, HasSubstr("250.000"));
  // The passes: each graph, and what changed from the one before.
  EXPECT_THAT(html, HasSubstr("<span class=\"del\">- b = g(a)</span>"));
  EXPECT_THAT(html, HasSubstr("<span class=\"add\">+ c = h(a)</span>"));
  EXPECT_THAT(html, HasSubstr("No change from the graph before."));
  // The kernels: both loop IRs, their diff, the log and the source.
  EXPECT_THAT(html, HasSubstr("<span class=\"add\">+ kernel k0 (fused k0, "
                              "k1)</span>"));
  EXPECT_THAT(html, HasSubstr("fuse k1 into k0: same ranges"));
  EXPECT_THAT(html, HasSubstr("extern &quot;C&quot; int lathe_call()"));
  // The picture inline, its text folded away.
  EXPECT_THAT(html, HasSubstr("<div class=\"svg\"><svg><g id=\"graph0\">"));
  EXPECT_THAT(html, HasSubstr("t0.size(0) == 4"));
  EXPECT_THAT(html, HasSubstr("g++ -O3 -shared -o k.so k.cc"));
  EXPECT_THAT(html, HasSubstr("miss (compiled)"));
  EXPECT_THAT(html, HasSubstr("something new"));
}

TEST(RenderReportTest, LoadsNothingAndRunsNothing) {
  std::string html = RenderReport(FullTrace(), WithSvg("<svg></svg>"));
  EXPECT_THAT(html, HasSubstr("Content-Security-Policy\" content=\"default-src "
                              "'none'"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
}

TEST(RenderReportTest, WithoutDotTheGraphvizTextIsShown) {
  std::string html = RenderReport(FullTrace(), WithSvg(std::nullopt));
  EXPECT_THAT(html, HasSubstr("was not found"));
  EXPECT_THAT(html, HasSubstr("digraph lathe { a -&gt; b; }"));
  EXPECT_THAT(html, Not(HasSubstr("<div class=\"svg\">")));
}

TEST(RenderReportTest, AnSvgWithScriptIsNotInlined) {
  std::string html = RenderReport(
      FullTrace(), WithSvg("<svg><script>alert(1)</script></svg>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, HasSubstr("digraph lathe"));
}

TEST(RenderReportTest, EscapesEveryTraceText) {
  Trace t;
  const std::string evil = "<script>alert('x&y')</script>\"";
  t.Step(evil, 0.001,
         {{kGraph, evil, evil},
          {kLoopIr, evil, evil},
          {kGuards, evil, evil},
          {kCommand, evil, evil},
          {kCache, evil, evil},
          {evil, evil, evil}});
  t.Step("second", 0.001, {{kGraph, "g", evil + "\nmore"}});
  std::string html = RenderReport(t.steps(), WithSvg(std::nullopt));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("alert('")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/"
                              "script&gt;&quot;"));
}

TEST(RenderReportTest, EmptySectionsSaySo) {
  std::string html = RenderReport({}, WithSvg(std::nullopt));
  for (const char* id : kReportSections) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<section id=\"", id, "\">")));
  }
  EXPECT_THAT(html, HasSubstr("Nothing recorded."));
  EXPECT_THAT(html, HasSubstr("0 steps"));
}

TEST(RenderReportTest, LongUnchangedRunsAreFolded) {
  std::string before, after;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&before, "line ", i, "\n");
  after = absl::StrCat(before, "new line\n");
  Trace t;
  t.Step("a", 0, {{kGraph, "a", before}});
  t.Step("b", 0, {{kGraph, "b", after}});
  std::string html = RenderReport(t.steps(), WithSvg(std::nullopt));
  EXPECT_THAT(html, HasSubstr("37 unchanged lines"));
  EXPECT_THAT(html, HasSubstr("<span class=\"ctx\">  line 39</span>"));
  EXPECT_THAT(html, HasSubstr("<span class=\"add\">+ new line</span>"));
}

TEST(HtmlEscapeTest, EscapesMarkupAndRepairsUtf8) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(HtmlEscape("\xE2\x82\xAC\xFF"), "\xE2\x82\xAC\xEF\xBF\xBD");
}

}  // namespace
}  // namespace lathe::trace
