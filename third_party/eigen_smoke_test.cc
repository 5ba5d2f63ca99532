// Proves @eigen is wired: a small GEMM against a hand-written triple loop.
#include <cmath>

#include "Eigen/Dense"
#include "gtest/gtest.h"

namespace {

TEST(EigenSmokeTest, GemmMatchesHandLoop) {
  constexpr int kM = 7, kK = 5, kN = 3;
  Eigen::MatrixXd a(kM, kK), b(kK, kN);
  for (int i = 0; i < kM; ++i)
    for (int k = 0; k < kK; ++k) a(i, k) = 0.5 * i - k + 1.0;
  for (int k = 0; k < kK; ++k)
    for (int j = 0; j < kN; ++j) b(k, j) = (k + 1) * (j - 1.5);

  Eigen::MatrixXd c = a * b;

  ASSERT_EQ(c.rows(), kM);
  ASSERT_EQ(c.cols(), kN);
  for (int i = 0; i < kM; ++i) {
    for (int j = 0; j < kN; ++j) {
      double expected = 0;
      for (int k = 0; k < kK; ++k) expected += a(i, k) * b(k, j);
      EXPECT_NEAR(c(i, j), expected, 1e-12) << "at (" << i << ", " << j << ")";
    }
  }
}

TEST(EigenSmokeTest, RowMajorMapOverRawBuffer) {
  // How lathe's kernels will use it: a Map over a strided tensor buffer.
  float data[6] = {1, 2, 3, 4, 5, 6};  // 2x3, row-major
  Eigen::Map<Eigen::Matrix<float, 2, 3, Eigen::RowMajor>> m(data);
  EXPECT_EQ(m(1, 0), 4.0f);
  Eigen::Matrix<float, 2, 2> mmt = m * m.transpose();
  EXPECT_EQ(mmt(0, 0), 14.0f);  // 1 + 4 + 9
  EXPECT_EQ(mmt(0, 1), 32.0f);  // 4 + 10 + 18
  EXPECT_EQ(mmt(1, 1), 77.0f);  // 16 + 25 + 36
}

}  // namespace
