// The kernel runtime's matrix products against a naive triple loop, in
// every layout the generated code passes: row-major, transposed operands
// (BLAS 'T'), batches, a strided output and a layout BLAS cannot express
// (both strides > 1, which goes to Eigen), and k = 0; large products split
// over the runtime's pool. Each f32 product also runs by SgemmByPrimitives
// (oneDNN's matmul primitive per piece).

#include "runtime/kernel_runtime.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/matmul_primitive.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

struct Layout {
  int64_t bs, rs, cs;
};

// c = a @ b over `batch` products, each operand laid out as given.
template <typename T>
std::vector<T> Naive(int64_t batch, int64_t m, int64_t n, int64_t k,
                     const std::vector<T>& a, Layout la,
                     const std::vector<T>& b, Layout lb) {
  std::vector<T> c(batch * m * n);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col) {
        double acc = 0;
        for (int64_t x = 0; x < k; ++x) {
          acc += double(a[i * la.bs + r * la.rs + x * la.cs]) *
                 double(b[i * lb.bs + x * lb.rs + col * lb.cs]);
        }
        c[(i * m + r) * n + col] = static_cast<T>(acc);
      }
  return c;
}

// Runs the runtime's product once and checks the result against the naive
// loop; an f32 product also by SgemmByPrimitives (its second call). With
// `packed` given, b is registered as a frozen constant's around three
// calls, each checked, and *packed is set to how many packed copies the calls
// added (packed_weights.h); the copies are checked gone after.
template <typename T>
void Check(int64_t batch, int64_t m, int64_t n, int64_t k, Layout la, Layout lb,
           Layout lc, int64_t* packed = nullptr) {
  const bool frozen = packed != nullptr;
  const int64_t before = FrozenWeightsKept();
  std::vector<T> a(batch * la.bs + m * la.rs + k * la.cs + 1);
  std::vector<T> b(batch * lb.bs + k * lb.rs + n * lb.cs + 1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = T(std::sin(0.37 * i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = T(std::cos(0.11 * i));
  const int64_t b_bytes = b.size() * sizeof(T);
  if (frozen) RegisterFrozenWeights(b.data(), b_bytes);
  const int calls = frozen ? 3 : sizeof(T) == 4 ? 2 : 1;
  if (sizeof(T) == 4 && batch == 1 && m > 0 && n > 0 && k > 0 && la.cs == 1 &&
      lb.cs == 1 && lc.cs == 1) {
    // oneDNN's matmul takes a row-major product (else SgemmByPrimitives
    // would run sgemm, and this test would not see it).
    EXPECT_TRUE(onednn::MatmulTakes(
        {dnnl_f32, 1, m, n, k, 0, la.rs, 1, 0, lb.rs, 1, 0, lc.rs, 1, false}));
  }
  for (int call = 0; call < calls; ++call) {
    std::vector<T> c(batch * lc.bs + m * lc.rs + n * lc.cs + 1, T(-7));
    const LatheKernelRuntime* rt = KernelRuntime();
    // The second call of an f32 product: by primitives.
    const bool primitives = sizeof(T) == 4 && call == 1;
    auto gemm = sizeof(T) != 4 ? reinterpret_cast<void*>(rt->dgemm)
                : primitives   ? reinterpret_cast<void*>(&SgemmByPrimitives)
                               : reinterpret_cast<void*>(rt->sgemm);
    using Fn = void (*)(int64_t, int64_t, int64_t, int64_t, const T*, int64_t,
                        int64_t, int64_t, const T*, int64_t, int64_t, int64_t,
                        T*, int64_t, int64_t, int64_t);
    reinterpret_cast<Fn>(gemm)(batch, m, n, k, a.data(), la.bs, la.rs, la.cs,
                               b.data(), lb.bs, lb.rs, lb.cs, c.data(), lc.bs,
                               lc.rs, lc.cs);
    std::vector<T> want = Naive<T>(batch, m, n, k, a, la, b, lb);
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t col = 0; col < n; ++col) {
          double w = want[(i * m + r) * n + col];
          double g = c[i * lc.bs + r * lc.rs + col * lc.cs];
          ASSERT_NEAR(g, w, 1e-4 * (1 + std::fabs(w)))
              << "batch " << i << " at [" << r << ", " << col << "], call "
              << call;
        }
  }
  if (frozen) {
    *packed = FrozenWeightsKept() - before;
    ForgetFrozenWeights(b.data(), b_bytes);
    EXPECT_EQ(FrozenWeightsKept(), before);
  }
}

TEST(KernelRuntimeTest, RowMajor) {
  Check<float>(1, 33, 65, 17, {0, 17, 1}, {0, 65, 1}, {0, 65, 1});
  Check<double>(1, 33, 65, 17, {0, 17, 1}, {0, 65, 1}, {0, 65, 1});
}

TEST(KernelRuntimeTest, TransposedOperands) {
  // a is k x m stored transposed, b is n x k stored transposed.
  Check<float>(1, 20, 30, 40, {0, 1, 20}, {0, 1, 40}, {0, 30, 1});
}

TEST(KernelRuntimeTest, Batches) {
  Check<float>(3, 8, 9, 10, {80, 10, 1}, {90, 9, 1}, {72, 9, 1});
  Check<float>(2, 8, 9, 10, {0, 10, 1}, {90, 1, 10}, {72, 9, 1});  // a shared
}

TEST(KernelRuntimeTest, PaddedRowsAndSingleRows) {
  Check<float>(1, 5, 6, 7, {0, 11, 1}, {0, 8, 1}, {0, 9, 1});
  Check<float>(1, 1, 6, 7, {0, 123, 1}, {0, 6, 1}, {0, 6, 1});
}

TEST(KernelRuntimeTest, LayoutsBlasCannotExpressGoToEigen) {
  Check<float>(1, 6, 5, 4, {0, 8, 2}, {0, 10, 2}, {0, 5, 1});
  Check<float>(1, 6, 5, 4, {0, 4, 1}, {0, 5, 1}, {0, 1, 6});  // column-major c
}

TEST(KernelRuntimeTest, EmptyInnerDimensionGivesZeros) {
  Check<float>(1, 3, 4, 0, {0, 1, 1}, {0, 4, 1}, {0, 4, 1});
}

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

// Products of 2^18 multiply-adds or more run on the runtime's pool with a
// team of 3: one product or a batch smaller than the pieces wanted split
// by column (or row) panels (multiples of 16, the last shorter), with
// transposed and shared operands; a larger batch by runs of its matrices.
TEST(KernelRuntimeTest, LargeProductsSplitOverThePool) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  Check<float>(1, 33, 1000, 17, {0, 17, 1}, {0, 1000, 1}, {0, 1000, 1});
  Check<float>(1, 40, 999, 20, {0, 1, 40}, {0, 1, 20}, {0, 999, 1});
  Check<float>(2, 30, 500, 20, {0, 20, 1}, {10000, 500, 1}, {15000, 500, 1});
  Check<float>(7, 64, 64, 64, {4096, 64, 1}, {4096, 1, 64}, {4096, 64, 1});
  Check<float>(1, 37, 1000, 9, {0, 9, 1}, {0, 1000, 1}, {0, 1001, 1});
  // More rows than columns: row panels, a plain and a transposed a.
  Check<float>(1, 1000, 10, 30, {0, 30, 1}, {0, 10, 1}, {0, 10, 1});
  Check<float>(1, 999, 12, 40, {0, 1, 999}, {0, 12, 1}, {0, 13, 1});
  omp_set_num_threads(team);
}

// An f32 b inside a frozen constant's memory (packed_weights.h) and read
// transposed, as nn.Linear's weight, runs through oneDNN's matmul with b
// packed once, where the pieces hold all of b's columns (onednn.h:
// PiecesReadAllOfB): row panels of 16 rows on a team of 3, row panels of a
// tall product, one piece for a small batch sharing b. Column panels (a
// [64, 1000] result on a team of 3) and a b read as given stay with sgemm.
// Every call against the naive loop; no copy kept after the weights are
// forgotten.
TEST(KernelRuntimeTest, FrozenTransposedWeightsArePackedOnceAndForgotten) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  int64_t packed[5];
  Check<float>(1, 96, 1000, 96, {0, 96, 1}, {0, 1, 96}, {0, 1000, 1},
               &packed[0]);
  Check<float>(1, 300, 200, 64, {0, 64, 1}, {0, 1, 64}, {0, 200, 1},
               &packed[1]);
  Check<float>(4, 30, 40, 50, {1500, 50, 1}, {0, 1, 50}, {1200, 40, 1},
               &packed[2]);
  Check<float>(1, 64, 1000, 96, {0, 96, 1}, {0, 1, 96}, {0, 1000, 1},
               &packed[3]);
  Check<float>(1, 33, 65, 17, {0, 17, 1}, {0, 65, 1}, {0, 65, 1}, &packed[4]);
  // Where the matmul packs weights (AVX-512), it reads b in a layout other
  // than b's own: one copy, whatever the pieces. Elsewhere (gemm:jit) sgemm
  // reads b as it is.
  const int64_t copies = onednn::MatmulPacksWeights() ? 1 : 0;
  EXPECT_EQ(packed[0], copies);
  EXPECT_EQ(packed[1], copies);
  EXPECT_EQ(packed[2], copies);
  EXPECT_EQ(packed[3], 0);
  EXPECT_EQ(packed[4], 0);
  omp_set_num_threads(team);
}

// An f32 b inside a frozen constant's memory, read as given with its rows a
// multiple of 4 KiB apart, is copied once with its rows padded where sgemm
// would read them at half its rate (onednn.h: SgemmRowStride), whatever
// the pieces (row and column panels on a team of 3, a batch sharing b, a b
// whose rows are longer than its columns); a b whose rows are not 4 KiB
// apart is read as it is. Every call against the naive loop.
TEST(KernelRuntimeTest, FrozenWeightsRowsFourKibApartAreCopiedPadded) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  int64_t packed[5];
  Check<float>(1, 64, 1024, 48, {0, 48, 1}, {0, 1024, 1}, {0, 1024, 1},
               &packed[0]);
  Check<float>(1, 2400, 1024, 8, {0, 8, 1}, {0, 1024, 1}, {0, 1024, 1},
               &packed[1]);
  Check<float>(3, 40, 1024, 30, {1200, 30, 1}, {0, 1024, 1}, {41000, 1024, 1},
               &packed[2]);
  Check<float>(1, 50, 1000, 40, {0, 40, 1}, {0, 2048, 1}, {0, 1000, 1},
               &packed[3]);
  Check<float>(1, 64, 1000, 48, {0, 48, 1}, {0, 1000, 1}, {0, 1000, 1},
               &packed[4]);
  const int64_t copies = onednn::SgemmRowStride(1024) != 1024 ? 1 : 0;
  EXPECT_EQ(packed[0], copies);
  EXPECT_EQ(packed[1], copies);
  EXPECT_EQ(packed[2], copies);
  EXPECT_EQ(packed[3], copies);
  EXPECT_EQ(packed[4], 0);
  omp_set_num_threads(team);
}

// Storage handles: alloc counts against the host memory limit and refuses
// past it; a retained handle keeps the memory after the first is released.
TEST(KernelRuntimeTest, StorageHandlesCountAndOutliveTheirFirstReference) {
  const LatheKernelRuntime* rt = KernelRuntime();
  const int64_t before = HostMemoryInUse();
  void* data = nullptr;
  void* a = rt->alloc(4096, &data);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(HostMemoryInUse(), before + 4096);
  static_cast<float*>(data)[1023] = 7.0f;
  void* b = rt->retain(a);
  rt->release(a);
  EXPECT_EQ(HostMemoryInUse(), before + 4096);
  EXPECT_EQ(static_cast<float*>(data)[1023], 7.0f);
  rt->release(b);
  EXPECT_EQ(HostMemoryInUse(), before);
  const int64_t limit = HostMemoryLimit();
  SetHostMemoryLimit(before + 1024);
  void* refused = rt->alloc(4096, &data);
  SetHostMemoryLimit(limit);
  EXPECT_EQ(refused, nullptr);
}

}  // namespace
}  // namespace lathe
