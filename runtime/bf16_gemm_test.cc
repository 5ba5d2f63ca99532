#include "runtime/bf16_gemm.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dnnl.h"
#include "gtest/gtest.h"
#include "runtime/half.h"
#include "runtime/packed_weights.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

std::vector<uint16_t> Bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float f : v) out.push_back(BFloat16::FromFloat(f).bits);
  return out;
}

std::vector<uint16_t> RandomBf16(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return Bf16(v);
}

// One product's sizes and strides (elements), as Bf16Gemm takes them.
struct Product {
  int64_t batch, m, n, k;
  int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;

  // Both routines on the same operands: the oneDNN path against the
  // reference loops.
  void ExpectMatchesReference(const std::vector<uint16_t>& a,
                              const std::vector<uint16_t>& b,
                              int64_t c_elems) const {
    std::vector<float> got(c_elems, NAN), want(c_elems, NAN);
    Bf16Gemm(batch, m, n, k, a.data(), a_bs, a_rs, a_cs, b.data(), b_bs, b_rs,
             b_cs, got.data(), c_bs, c_rs, c_cs);
    Bf16GemmReference(batch, m, n, k, a.data(), a_bs, a_rs, a_cs, b.data(),
                      b_bs, b_rs, b_cs, want.data(), c_bs, c_rs, c_cs);
    for (int64_t i = 0; i < c_elems; ++i) {
      // Elements between c's rows and columns stay as they were.
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " was written";
        continue;
      }
      // f32 sums of exact products: within k ulps of the double sum.
      ASSERT_NEAR(got[i], want[i], 1e-5 * k * (1 + std::fabs(want[i])))
          << "element " << i;
    }
  }
  bool UsesOneDnn() const {
    return Bf16GemmUsesOneDnn(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs,
                              b_cs, c_bs, c_rs, c_cs);
  }
};

TEST(Bf16GemmTest, HandDerivedProduct) {
  // [[1, 2, 3], [4, 5, 6]] @ [[1, 0.5], [-1, 2], [0.25, 1]]: every value
  // and product exact in bf16 and f32.
  std::vector<uint16_t> a = Bf16({1, 2, 3, 4, 5, 6});
  std::vector<uint16_t> b = Bf16({1, 0.5f, -1, 2, 0.25f, 1});
  std::vector<float> c(4, NAN);
  Bf16Gemm(1, 2, 2, 3, a.data(), 0, 3, 1, b.data(), 0, 2, 1, c.data(), 0, 2, 1);
  EXPECT_EQ(c, (std::vector<float>{-0.25f, 7.5f, 0.5f, 18.0f}));
}

TEST(Bf16GemmTest, TransposedAndStridedOperands) {
  std::mt19937 rng(7);
  // a stored [k, m] (read transposed), b [k, n] inside rows of 40, c with
  // its columns 2 apart.
  const int64_t m = 33, n = 17, k = 29;
  std::vector<uint16_t> a = RandomBf16(k * m, rng);
  std::vector<uint16_t> b = RandomBf16(k * 40, rng);
  Product p{1, m, n, k, 0, 1, m, 0, 40, 1, 0, 2 * n, 2};
  p.ExpectMatchesReference(a, b, m * 2 * n);
}

TEST(Bf16GemmTest, BatchedAndBroadcastBatch) {
  std::mt19937 rng(8);
  const int64_t batch = 3, m = 8, n = 24, k = 64;
  std::vector<uint16_t> a = RandomBf16(batch * m * k, rng);
  std::vector<uint16_t> b = RandomBf16(batch * k * n, rng);
  // Both operands batched, then the weights shared by every batch (a
  // batch stride of 0, as a broadcast operand has).
  Product batched{batch, m, n, k, m * k, k, 1, k * n, n, 1, m * n, n, 1};
  batched.ExpectMatchesReference(a, b, batch * m * n);
  Product shared{batch, m, n, k, m * k, k, 1, 0, n, 1, m * n, n, 1};
  shared.ExpectMatchesReference(a, b, batch * m * n);
}

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

// Products of 2^18 multiply-adds or more run in pieces on the runtime's
// pool with a team of 3: one product by column panels (the last shorter),
// one with more rows than columns by row panels, strided and transposed
// operands, a small batch by panels and larger ones by runs of matrices, with
// shared weights; elements between c's rows stay as they were.
TEST(Bf16GemmTest, LargeProductsSplitOverThePool) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  std::mt19937 rng(10);
  {
    const int64_t m = 40, n = 999, k = 70;
    std::vector<uint16_t> a = RandomBf16(m * k, rng),
                          b = RandomBf16(k * n, rng);
    Product{1, m, n, k, 0, k, 1, 0, n, 1, 0, n + 3, 1}.ExpectMatchesReference(
        a, b, m * (n + 3));
  }
  {
    const int64_t m = 1001, n = 24, k = 40;
    std::vector<uint16_t> a = RandomBf16(m * k, rng),
                          b = RandomBf16(k * n, rng);
    Product{1, m, n, k, 0, 1, m, 0, 1, k, 0, n, 1}.ExpectMatchesReference(
        a, b, m * n);
  }
  for (int64_t batch : {2, 9, 40}) {
    const int64_t m = 64, n = 200, k = 48;
    std::vector<uint16_t> a = RandomBf16(batch * m * k, rng);
    std::vector<uint16_t> b = RandomBf16(k * n, rng);
    Product{batch, m, n, k, m * k, k, 1, 0, n, 1, m * n, n, 1}
        .ExpectMatchesReference(a, b, batch * m * n);
  }
  omp_set_num_threads(team);
}

// Whether this CPU has bf16 dot products (AVX512-BF16, AMX), for which
// oneDNN wants b's pairs of rows interleaved.
bool HasBf16DotProducts() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

// A frozen b (packed_weights.h) is packed once per piece geometry and kept
// (on a CPU without oneDNN's bf16 matmul: converted to f32 once and kept,
// rows padded where they would lie 4 KiB apart: onednn.h SgemmRowStride):
// row panels of a [128, 256] @ [256, 384] (b as given and transposed, as
// nn.Linear's weight), column panels of a [32, 64] @ [64, 999] and of a
// [32, 64] @ [64, 1024] (b as given and transposed), each against the
// reference, on every call; the copies go with the weights.
TEST(Bf16GemmTest, FrozenWeightsArePackedOnceAndForgotten) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  std::mt19937 rng(11);
  const int64_t before = FrozenWeightsKept();
  for (const Product& p :
       {Product{1, 128, 384, 256, 0, 256, 1, 0, 384, 1, 0, 384, 1},
        Product{1, 128, 384, 256, 0, 256, 1, 0, 1, 256, 0, 384, 1},
        Product{1, 32, 999, 64, 0, 64, 1, 0, 999, 1, 0, 999, 1},
        Product{1, 32, 1024, 64, 0, 64, 1, 0, 1024, 1, 0, 1024, 1},
        Product{1, 32, 1024, 64, 0, 64, 1, 0, 1, 64, 0, 1024, 1}}) {
    std::vector<uint16_t> a = RandomBf16(p.m * p.k, rng);
    std::vector<uint16_t> b = RandomBf16(p.k * p.n, rng);
    const int64_t bytes = p.k * p.n * static_cast<int64_t>(sizeof(uint16_t));
    RegisterFrozenWeights(b.data(), bytes);
    for (int call = 0; call < 2; ++call) {
      p.ExpectMatchesReference(a, b, p.m * p.n);
    }
    const int64_t kept = FrozenWeightsKept();
    p.ExpectMatchesReference(a, b, p.m * p.n);
    EXPECT_EQ(FrozenWeightsKept(), kept) << "packed again";
    // Packed for a bf16 matmul with dot products, or (a CPU without
    // oneDNN's bf16 matmul) converted to f32 and kept.
    if (HasBf16DotProducts() || !p.UsesOneDnn()) {
      EXPECT_GT(kept, before);
    }
    ForgetFrozenWeights(b.data(), bytes);
    EXPECT_EQ(FrozenWeightsKept(), before);
  }
  omp_set_num_threads(team);
}

TEST(Bf16GemmTest, ModelShapesTakeTheLibraryWhereItHasBf16) {
  std::mt19937 rng(9);
  // A projection of a [256, 768] activation (GPT-2's width).
  const int64_t m = 256, n = 96, k = 768;
  std::vector<uint16_t> a = RandomBf16(m * k, rng);
  std::vector<uint16_t> b = RandomBf16(k * n, rng);
  Product p{1, m, n, k, 0, k, 1, 0, n, 1, 0, n, 1};
  p.ExpectMatchesReference(a, b, m * n);
}

TEST(Bf16GemmTest, RowBroadcastRunsThroughF32Copies) {
  // a's rows all one row (row stride 0, as expand makes): the primitive
  // takes no zero stride, so it runs as sgemm on dense f32 copies.
  std::vector<uint16_t> a = Bf16({1, 2});
  std::vector<uint16_t> b = Bf16({3, 4});  // [2, 1]
  Product p{1, 3, 1, 2, 0, 0, 1, 0, 1, 1, 0, 1, 1};
  EXPECT_FALSE(p.UsesOneDnn());
  std::vector<float> c(3, NAN);
  Bf16Gemm(1, 3, 1, 2, a.data(), 0, 0, 1, b.data(), 0, 1, 1, c.data(), 0, 1, 1);
  EXPECT_EQ(c, (std::vector<float>{11, 11, 11}));
}

TEST(Bf16GemmTest, BroadcastRowsIntoAColumnMajorResult) {
  // A [512, 512] product whose a is one row broadcast (row stride 0) and
  // whose c is column-major: the dense-copy path (sgemm, then c scattered
  // through its strides), checked on sampled elements against the
  // reference.
  std::mt19937 rng(10);
  const int64_t m = 512, n = 512, k = 512;
  std::vector<uint16_t> a = RandomBf16(k, rng);
  std::vector<uint16_t> b = RandomBf16(k * n, rng);
  Product p{1, m, n, k, 0, 0, 1, 0, n, 1, 0, 1, m};
  EXPECT_FALSE(p.UsesOneDnn());
  std::vector<float> c(m * n, NAN);
  Bf16Gemm(1, m, n, k, a.data(), 0, 0, 1, b.data(), 0, n, 1, c.data(), 0, 1, m);
  for (int64_t i : {0, 7, 511}) {
    for (int64_t j : {0, 300, 511}) {
      float want = NAN;
      Bf16GemmReference(1, 1, 1, k, a.data(), 0, 0, 1, b.data() + j, 0, n, 1,
                        &want, 0, 1, 1);
      EXPECT_NEAR(c[j * m + i], want, 1e-5 * k * (1 + std::fabs(want)))
          << "at [" << i << ", " << j << "]";
    }
  }
}

// A product oneDNN refuses (a's rows broadcast) converts b to f32 once for
// the whole call, and every piece reads that copy from its own first
// column: column panels of a [40, 999] product on a team of 3 (b as given
// and transposed, as nn.Linear's weight), and a batch of 9 sharing b, each
// written into c's rows in place, elements between them untouched.
TEST(Bf16GemmTest, PiecesShareOneF32CopyOfB) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  std::mt19937 rng(12);
  const int64_t m = 40, n = 999, k = 70;
  std::vector<uint16_t> a = RandomBf16(k, rng), b = RandomBf16(k * n, rng);
  for (bool transposed : {false, true}) {
    Product p{
        1, m,     n, k, 0, 0, 1, 0, transposed ? 1 : n, transposed ? k : 1,
        0, n + 3, 1};
    EXPECT_FALSE(p.UsesOneDnn());
    p.ExpectMatchesReference(a, b, m * (n + 3));
  }
  const int64_t batch = 9;
  std::vector<uint16_t> rows = RandomBf16(batch * k, rng);
  Product shared{batch, 64, 200, k, k, 0, 1, 0, 200, 1, 64 * 200, 200, 1};
  EXPECT_FALSE(shared.UsesOneDnn());
  shared.ExpectMatchesReference(rows, b, batch * 64 * 200);
  omp_set_num_threads(team);
}

TEST(Bf16GemmTest, CopiesBeyondTheMemoryLimitFallBackToTheReference) {
  // The dense f32 copies count against the host memory limit: with no room
  // for them, the row-broadcast product runs by the reference loops instead
  // (the same values), not past the limit.
  std::mt19937 rng(11);
  const int64_t m = 256, n = 256, k = 256;
  std::vector<uint16_t> a = RandomBf16(k, rng);
  std::vector<uint16_t> b = RandomBf16(k * n, rng);
  const int64_t limit = HostMemoryLimit();
  SetHostMemoryLimit(HostMemoryInUse() + 1024);
  std::vector<float> c(m * n, NAN), want(m * n, NAN);
  Bf16Gemm(1, m, n, k, a.data(), 0, 0, 1, b.data(), 0, n, 1, c.data(), 0, n, 1);
  SetHostMemoryLimit(limit);
  Bf16GemmReference(1, m, n, k, a.data(), 0, 0, 1, b.data(), 0, n, 1,
                    want.data(), 0, n, 1);
  EXPECT_EQ(c, want);
}

TEST(Bf16GemmTest, EmptySumIsZero) {
  std::vector<float> c(6, NAN);
  Bf16Gemm(1, 2, 3, 0, nullptr, 0, 0, 1, nullptr, 0, 3, 1, c.data(), 0, 3, 1);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace lathe
