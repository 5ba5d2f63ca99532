// Proves @com_google_absl is wired: Status/StatusOr, StrFormat, flat_hash_map,
// Span and flags each compile, link and behave.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, smoke_count, 3, "a flag the test parses");

namespace {

TEST(AbslSmokeTest, StatusCarriesCodeAndMessage) {
  absl::StatusOr<int> s = absl::NotFoundError("no such input: x");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.status().ToString(), "NOT_FOUND: no such input: x");
}

TEST(AbslSmokeTest, StrFormat) {
  EXPECT_EQ(absl::StrFormat("%s[%d, %d]", "f32", 2, 3), "f32[2, 3]");
  EXPECT_EQ(absl::StrCat("s", 0, "//", 2), "s0//2");
}

TEST(AbslSmokeTest, FlatHashMap) {
  absl::flat_hash_map<std::string, int> m;
  for (int i = 0; i < 1000; ++i) m[absl::StrCat("k", i)] = i * i;
  EXPECT_EQ(m.size(), 1000u);
  EXPECT_EQ(m.at("k31"), 961);
  EXPECT_FALSE(m.contains("k1000"));
}

int Sum(absl::Span<const int> xs) {
  int total = 0;
  for (int x : xs) total += x;
  return total;
}

TEST(AbslSmokeTest, Span) {
  std::vector<int> v = {1, 2, 3, 4};
  EXPECT_EQ(Sum(v), 10);
  EXPECT_EQ(Sum(absl::MakeConstSpan(v).subspan(2)), 7);
}

TEST(AbslSmokeTest, FlagsParse) {
  std::string arg0 = "prog", arg1 = "--smoke_count=7";
  char* argv[] = {arg0.data(), arg1.data()};
  absl::ParseCommandLine(2, argv);
  EXPECT_EQ(absl::GetFlag(FLAGS_smoke_count), 7);
}

}  // namespace
