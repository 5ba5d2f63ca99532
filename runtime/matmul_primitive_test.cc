#include "runtime/matmul_primitive.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "dnnl.h"
#include "gtest/gtest.h"
#include "runtime/packed_weights.h"

namespace lathe {
namespace {

using onednn::ProductGeometry;

// Registers `bytes` from `data` as a frozen constant's while alive (so a
// failed assertion leaves no registration behind).
class FrozenWhileAlive {
 public:
  FrozenWhileAlive(const void* data, int64_t bytes)
      : data_(data), bytes_(bytes) {
    RegisterFrozenWeights(data_, bytes_);
  }
  ~FrozenWhileAlive() { ForgetFrozenWeights(data_, bytes_); }
  FrozenWhileAlive(const FrozenWhileAlive&) = delete;
  FrozenWhileAlive& operator=(const FrozenWhileAlive&) = delete;

 private:
  const void* data_;
  int64_t bytes_;
};

std::vector<float> Random(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// g's product (f32) by a naive loop summed in double, c dense [batch, m, n].
std::vector<float> Naive(const ProductGeometry& g, const std::vector<float>& a,
                         const std::vector<float>& b) {
  std::vector<float> c(g.batch * g.m * g.n);
  for (int64_t t = 0; t < g.batch; ++t)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          acc += double(a[t * g.a_bs + i * g.a_rs + l * g.a_cs]) *
                 b[t * g.b_bs + l * g.b_rs + j * g.b_cs];
        }
        c[(t * g.m + i) * g.n + j] = static_cast<float>(acc);
      }
  return c;
}

// Runs g (c dense) on random operands of `a_size` and `b_size` elements
// and checks every element against the naive loop; with `frozen`, b is
// registered as a frozen constant's around three calls.
void ExpectMatchesNaive(ProductGeometry g, int64_t a_size, int64_t b_size,
                        std::mt19937& rng) {
  std::vector<float> a = Random(a_size, rng), b = Random(b_size, rng);
  std::optional<FrozenWhileAlive> frozen;
  if (g.frozen_b) frozen.emplace(b.data(), b_size * sizeof(float));
  const std::vector<float> want = Naive(g, a, b);
  for (int call = 0; call < (g.frozen_b ? 3 : 1); ++call) {
    std::vector<float> c(want.size(), NAN);
    ASSERT_TRUE(onednn::RunMatmul(g, a.data(), b.data(), c.data()));
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
          << "call " << call << ", element " << i;
    }
  }
}

TEST(MatmulPrimitiveTest, F32ProductsMatchTheNaiveLoop) {
  std::mt19937 rng(1);
  // Row-major, and b as nn.Linear's weight ([n, k], transposed).
  ExpectMatchesNaive(
      {dnnl_f32, 1, 33, 65, 17, 0, 17, 1, 0, 65, 1, 0, 65, 1, false}, 33 * 17,
      17 * 65, rng);
  ExpectMatchesNaive(
      {dnnl_f32, 1, 64, 300, 128, 0, 128, 1, 0, 1, 128, 0, 300, 1, false},
      64 * 128, 300 * 128, rng);
  // A batch sharing one b (b_bs 0).
  ExpectMatchesNaive(
      {dnnl_f32, 3, 8, 9, 10, 80, 10, 1, 0, 9, 1, 72, 9, 1, false}, 3 * 80,
      10 * 9, rng);
}

// A frozen b read transposed (nn.Linear's weight) is packed at the first
// call into the matmul's own layout, kept through the next ones and dropped
// with its registration; so is a row-major b where the matmul wants
// another layout. The results match the naive loop on every call.
TEST(MatmulPrimitiveTest, FrozenF32WeightsArePackedOnceAndForgotten) {
  std::mt19937 rng(2);
  const int64_t before = FrozenWeightsKept();
  for (const ProductGeometry& g :
       {ProductGeometry{dnnl_f32, 1, 64, 300, 128, 0, 128, 1, 0, 1, 128, 0, 300,
                        1, true},
        ProductGeometry{dnnl_f32, 1, 5, 96, 40, 0, 40, 1, 0, 96, 1, 0, 96, 1,
                        true}}) {
    std::vector<float> a = Random(g.m * g.k, rng), b = Random(g.k * g.n, rng);
    {
      FrozenWhileAlive frozen(b.data(), g.k * g.n * sizeof(float));
      std::vector<float> c(g.m * g.n);
      ASSERT_TRUE(onednn::RunMatmul(g, a.data(), b.data(), c.data()));
      const int64_t kept = FrozenWeightsKept();
      if (g.b_rs == 1) EXPECT_EQ(kept, before + 1);
      EXPECT_LE(kept, before + 1);
      ASSERT_TRUE(onednn::RunMatmul(g, a.data(), b.data(), c.data()));
      EXPECT_EQ(FrozenWeightsKept(), kept) << "packed again";
    }
    EXPECT_EQ(FrozenWeightsKept(), before);
    ExpectMatchesNaive(g, g.m * g.k, g.k * g.n, rng);
    EXPECT_EQ(FrozenWeightsKept(), before);
  }
}

TEST(MatmulPrimitiveTest, RefusesWhatTheMatmulCannotTake) {
  // A row broadcast (row stride 0), a batch all writing one c, an empty
  // product, and a dtype the runtime's products do not use.
  EXPECT_FALSE(onednn::MatmulTakes(
      {dnnl_f32, 1, 3, 4, 5, 0, 0, 1, 0, 4, 1, 0, 4, 1, false}));
  EXPECT_FALSE(onednn::MatmulTakes(
      {dnnl_f32, 2, 3, 4, 5, 15, 5, 1, 0, 4, 1, 0, 4, 1, false}));
  EXPECT_FALSE(onednn::MatmulTakes(
      {dnnl_f32, 1, 0, 4, 5, 0, 5, 1, 0, 4, 1, 0, 4, 1, false}));
  EXPECT_FALSE(onednn::MatmulTakes(
      {dnnl_s8, 1, 3, 4, 5, 0, 5, 1, 0, 4, 1, 0, 4, 1, false}));
  EXPECT_TRUE(onednn::MatmulTakes(
      {dnnl_f32, 1, 3, 4, 5, 0, 5, 1, 0, 4, 1, 0, 4, 1, false}));
  // One row of a read with column stride 2, and b read with row stride 2
  // (neither stride 1): no optimized kernel takes it, and the reference
  // kernel is refused.
  EXPECT_FALSE(onednn::MatmulTakes(
      {dnnl_f32, 1, 1, 4, 5, 0, 10, 2, 0, 8, 2, 0, 4, 1, false}));
  float c[12];
  const float x[20] = {};
  EXPECT_FALSE(onednn::RunMatmul(
      {dnnl_f32, 1, 3, 4, 5, 0, 0, 1, 0, 4, 1, 0, 4, 1, false}, x, x, c));
}

TEST(MatmulPrimitiveTest, FrozenOperandIsWholeMatrixInsideOneRegistration) {
  std::vector<float> w(6 * 4);
  EXPECT_FALSE(FrozenOperand(1, 4, 6, w.data(), 0, 4, 1, sizeof(float)));
  std::optional<FrozenWhileAlive> frozen;
  frozen.emplace(w.data(), w.size() * sizeof(float));
  // [6, 4] row-major and its transpose read as [4, 6].
  EXPECT_TRUE(FrozenOperand(1, 4, 6, w.data(), 0, 4, 1, sizeof(float)));
  EXPECT_TRUE(FrozenOperand(1, 6, 4, w.data(), 0, 1, 4, sizeof(float)));
  // Shared by a batch (stride 0), but not a batch of matrices.
  EXPECT_TRUE(FrozenOperand(5, 4, 6, w.data(), 0, 4, 1, sizeof(float)));
  EXPECT_FALSE(FrozenOperand(5, 4, 6, w.data(), 24, 4, 1, sizeof(float)));
  // One element past the registration, a negative stride, overflowing
  // strides, an empty matrix.
  EXPECT_FALSE(FrozenOperand(1, 4, 6, w.data() + 1, 0, 4, 1, sizeof(float)));
  EXPECT_FALSE(FrozenOperand(1, 4, 6, w.data(), 0, -4, 1, sizeof(float)));
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(FrozenOperand(1, 4, 6, w.data(), 0, huge, 1, sizeof(float)));
  EXPECT_FALSE(FrozenOperand(1, 0, 6, w.data(), 0, 4, 1, sizeof(float)));
  frozen.reset();
  EXPECT_FALSE(FrozenOperand(1, 4, 6, w.data(), 0, 4, 1, sizeof(float)));
}

}  // namespace
}  // namespace lathe
