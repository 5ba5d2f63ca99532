// SortLines on lines worked out by hand: ascending and descending with NaN
// (larger than every number), a sort along dim 0 into transposed outputs,
// topk (largest and smallest), an integer sort marked to keep its order,
// and a 0-d input.

#include "runtime/sort.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace lathe {
namespace {

constexpr int64_t kF32 = 2, kI64 = 7;  // lathe::DType's order
const float kNan = std::numeric_limits<float>::quiet_NaN();

// A geometry for a contiguous [rows, cols] input sorted along dim 1 into
// contiguous outputs of `out_cols` columns.
std::vector<int64_t> Rows(int64_t dtype, int64_t rows, int64_t cols,
                          bool descending, int64_t k, int64_t out_cols) {
  return {dtype, 2,    1, descending, k,        1, 0, rows,     cols,
          0,     cols, 1, 0,          out_cols, 1, 0, out_cols, 1};
}

TEST(SortTest, RowsAscendingAndDescendingWithNan) {
  const float x[] = {3, 1, 2, kNan, 0, -1};
  std::vector<int64_t> g = Rows(kF32, 2, 3, false, -1, 3);
  ASSERT_EQ(static_cast<int64_t>(g.size()), SortGeometrySize(2));
  float v[6];
  int64_t i[6];
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 6),
            (std::vector<int64_t>{1, 2, 0, 2, 1, 0}));
  EXPECT_EQ(v[3], -1);
  EXPECT_EQ(v[4], 0);
  EXPECT_TRUE(std::isnan(v[5]));
  g = Rows(kF32, 2, 3, true, -1, 3);
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<int64_t>(i, i + 6),
            (std::vector<int64_t>{0, 2, 1, 0, 1, 2}));
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[5], -1);
}

// x = [[4, 1], [2, 3], [0, 5]] sorted along dim 0 (columns), results laid
// out transposed (strides [1, 3]).
TEST(SortTest, AlongDimZeroIntoTransposedOutputs) {
  const float x[] = {4, 1, 2, 3, 0, 5};
  std::vector<int64_t> g = {kF32, 2, 0, 0, -1, 1, 0, 3, 2,
                            0,    2, 1, 0, 1,  3, 0, 1, 3};
  float v[6];
  int64_t i[6];
  SortLines(g.data(), x, v, i);
  // Column 0 (4, 2, 0) -> 0, 2, 4 from rows 2, 1, 0; column 1 (1, 3, 5)
  // stays; stored column-major.
  EXPECT_EQ(std::vector<float>(v, v + 6),
            (std::vector<float>{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 6),
            (std::vector<int64_t>{2, 1, 0, 0, 1, 2}));
}

TEST(SortTest, TopkLargestAndSmallest) {
  const float x[] = {1, 5, 3, 4, 2};
  std::vector<int64_t> g = Rows(kF32, 1, 5, true, 2, 2);
  float v[2];
  int64_t i[2];
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 2), (std::vector<float>{5, 4}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 2), (std::vector<int64_t>{1, 3}));
  g = Rows(kF32, 1, 5, false, 2, 2);
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 2), (std::vector<float>{1, 2}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 2), (std::vector<int64_t>{0, 4}));
}

// A line marked to keep its order (an expanded dim in eager) comes out as
// it went in, indices 0..n-1.
TEST(SortTest, AMarkedLineKeepsItsOrder) {
  const int64_t x[] = {3, 1, 2};
  std::vector<int64_t> g = {kI64, 1, 0, 0, -1, 1, 1, 3, 0, 1, 0, 1, 0, 1};
  int64_t v[3], i[3];
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<int64_t>(v, v + 3), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 3), (std::vector<int64_t>{0, 1, 2}));
  g[6] = 0;
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(std::vector<int64_t>(v, v + 3), (std::vector<int64_t>{1, 2, 3}));
}

TEST(SortTest, AZeroDimInputIsOneLine) {
  const float x[] = {7};
  std::vector<int64_t> g = {kF32, 0, 0, 0, -1, 1, 0, 0, 0, 0};
  float v[1];
  int64_t i[1] = {-1};
  SortLines(g.data(), x, v, i);
  EXPECT_EQ(v[0], 7);
  EXPECT_EQ(i[0], 0);
}

}  // namespace
}  // namespace lathe
