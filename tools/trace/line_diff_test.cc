#include "tools/trace/line_diff.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lathe::trace {
namespace {

using ::testing::ElementsAre;
using Op = DiffLine::Op;

DiffLine Same(std::string t) { return {Op::kSame, std::move(t)}; }
DiffLine Removed(std::string t) { return {Op::kRemoved, std::move(t)}; }
DiffLine Added(std::string t) { return {Op::kAdded, std::move(t)}; }

// The diff as one compact string: " a", "-b", "+c".
std::string Show(const std::vector<DiffLine>& diff) {
  std::vector<std::string> out;
  for (const DiffLine& d : diff) {
    out.push_back(absl::StrCat(d.op == Op::kSame      ? " "
                               : d.op == Op::kRemoved ? "-"
                                                      : "+",
                               d.text));
  }
  return absl::StrJoin(out, ",");
}

TEST(DiffLinesTest, Examples) {
  EXPECT_THAT(DiffLines("a\nb\nc\n", "a\nc\nd\n"),
              ElementsAre(Same("a"), Removed("b"), Same("c"), Added("d")));
  EXPECT_EQ(Show(DiffLines("a\nb\nc\nd\n", "a\nx\nc\nd\n")), " a,-b,+x, c, d");
  EXPECT_EQ(Show(DiffLines("", "")), "");
  EXPECT_EQ(Show(DiffLines("", "x\ny")), "+x,+y");
  EXPECT_EQ(Show(DiffLines("x\ny\n", "")), "-x,-y");
  EXPECT_EQ(Show(DiffLines("same\n", "same")), " same");
  EXPECT_EQ(Show(DiffLines("a\n\nb", "a\nb")), " a,-, b");
}

TEST(DiffLinesTest, RemovalsComeBeforeAdditions) {
  EXPECT_EQ(Show(DiffLines("a\nb\n", "c\nd\n")), "-a,-b,+c,+d");
}

TEST(DiffLinesTest, PastTheEditLimitEverythingIsReplaced) {
  EXPECT_EQ(Show(DiffLines("k\nx\na\ny\nk", "k\nz\na\nw\nk",
                           /*max_edits=*/3)),
            " k,-x,-a,-y,+z,+a,+w, k");
  EXPECT_EQ(Show(DiffLines("k\nx\na\ny\nk", "k\nz\na\nw\nk",
                           /*max_edits=*/4)),
            " k,-x,+z, a,-y,+w, k");
}

// The length of a longest common subsequence, the slow way.
int Lcs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<int>> t(a.size() + 1,
                                  std::vector<int>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1
                                     : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

// On random texts the diff rebuilds both sides and is a shortest edit
// script (its kept lines are a longest common subsequence).
TEST(DiffLinesTest, RandomTextsGiveShortestEditScripts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::string> a(rng() % 30), b(rng() % 30);
    for (auto& l : a) l = std::string(1, static_cast<char>('a' + rng() % 4));
    for (auto& l : b) l = std::string(1, static_cast<char>('a' + rng() % 4));
    std::vector<DiffLine> diff =
        DiffLines(absl::StrJoin(a, "\n"), absl::StrJoin(b, "\n"));
    std::vector<std::string> before, after;
    int same = 0;
    for (const DiffLine& d : diff) {
      if (d.op != Op::kAdded) before.push_back(d.text);
      if (d.op != Op::kRemoved) after.push_back(d.text);
      same += d.op == Op::kSame;
    }
    ASSERT_EQ(before, a) << trial;
    ASSERT_EQ(after, b) << trial;
    ASSERT_EQ(same, Lcs(a, b)) << trial << ": " << Show(diff);
  }
}

}  // namespace
}  // namespace lathe::trace
