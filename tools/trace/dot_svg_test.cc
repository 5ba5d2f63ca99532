#include "tools/trace/dot_svg.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lathe::trace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(FindProgramTest, FindsShAndNotNonsense) {
  EXPECT_THAT(FindProgram("sh"), HasSubstr("/sh"));
  EXPECT_EQ(FindProgram("lathe-no-such-program"), "");
}

TEST(DotToSvgTest, RendersWhenDotIsInstalled) {
  if (FindProgram("dot").empty()) GTEST_SKIP() << "no dot (graphviz)";
  std::optional<std::string> svg =
      DotToSvg("digraph g { a -> b [label=\"<x & y>\"]; }");
  ASSERT_TRUE(svg.has_value());
  EXPECT_THAT(*svg, StartsWith("<svg"));
  EXPECT_THAT(*svg, HasSubstr("&lt;x &amp; y&gt;"));
}

TEST(DotToSvgTest, NothingForBadInput) {
  if (FindProgram("dot").empty()) GTEST_SKIP() << "no dot (graphviz)";
  EXPECT_EQ(DotToSvg("this is not { graphviz"), std::nullopt);
}

TEST(DotToSvgTest, NothingWithoutDot) {
  const char* path = std::getenv("PATH");
  std::string saved = path ? path : "";
  setenv("PATH", "/lathe-nowhere", 1);
  EXPECT_EQ(DotToSvg("digraph g { a -> b; }"), std::nullopt);
  setenv("PATH", saved.c_str(), 1);
}

}  // namespace
}  // namespace lathe::trace
