#include "runtime/onednn.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/storage.h"
#include "runtime/thread_pool.h"

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace lathe::onednn {
namespace {

// What ParallelProducts handed out: each result element's count, the
// pieces, and the OpenMP count each piece saw.
struct Seen {
  int64_t m, n;
  std::vector<std::atomic<int>> hits;
  std::mutex mu;
  std::vector<ProductPiece> pieces;
  std::atomic<int> not_one{0};

  Seen(int64_t batch, int64_t m, int64_t n) : m(m), n(n), hits(batch * m * n) {}

  static void Piece(void* ctx, const ProductPiece& p) {
    Seen& s = *static_cast<Seen*>(ctx);
    if (omp_get_max_threads() != 1) s.not_one.fetch_add(1);
    for (int64_t b = p.mat; b < p.mat + p.mats; ++b) {
      for (int64_t i = p.row; i < p.row + p.rows; ++i) {
        for (int64_t j = p.col; j < p.col + p.cols; ++j) {
          s.hits[(b * s.m + i) * s.n + j].fetch_add(1);
        }
      }
    }
    std::lock_guard<std::mutex> lock(s.mu);
    s.pieces.push_back(p);
  }
};

// Runs ParallelProducts with a team of 3 and checks that every element of
// every result is in exactly one piece, each piece ran with one OpenMP
// thread, and the caller's count is 3 again after.
std::vector<ProductPiece> Pieces(int64_t batch, int64_t m, int64_t n, int64_t k,
                                 int64_t panel_rows = kPanelRows) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  Seen seen(batch, m, n);
  ParallelProducts(batch, m, n, k, Team(), &Seen::Piece, &seen, panel_rows);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(team);
  for (size_t e = 0; e < seen.hits.size(); ++e) {
    EXPECT_EQ(seen.hits[e].load(), 1) << "element " << e;
  }
  EXPECT_EQ(seen.not_one.load(), 0);
  return seen.pieces;
}

TEST(OneDnnTest, SmallWorkIsOnePieceOnTheCaller) {
  std::vector<ProductPiece> p = Pieces(3, 20, 30, 40);  // 72,000 < 2^18
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(
      std::tie(p[0].mat, p[0].mats, p[0].row, p[0].rows, p[0].col, p[0].cols),
      std::make_tuple(0, 3, 0, 20, 0, 30));
}

// One wide product: column panels, multiples of 16 but the last; one tall
// product: row panels.
TEST(OneDnnTest, OneProductSplitsIntoPanels) {
  std::vector<ProductPiece> wide = Pieces(1, 40, 1000, 64);
  EXPECT_GE(wide.size(), 6u);
  for (const ProductPiece& p : wide) {
    EXPECT_EQ(p.rows, 40);
    EXPECT_TRUE(p.cols % 16 == 0 || p.col + p.cols == 1000) << p.cols;
  }
  std::vector<ProductPiece> tall = Pieces(1, 999, 30, 64);
  EXPECT_GE(tall.size(), 6u);
  for (const ProductPiece& p : tall) EXPECT_EQ(p.cols, 30);
}

// A product with more columns than rows splits by rows too when each
// panel but the last keeps kPanelRows rows (a team of 3: 6 panels, 2304
// rows), so every panel's operand and result stay dense.
TEST(OneDnnTest, AWideProductWithManyRowsSplitsByRows) {
  constexpr int64_t kRows = 6 * kPanelRows + 32;
  std::vector<ProductPiece> p = Pieces(1, kRows, 3000, 16);
  ASSERT_GE(p.size(), 6u);
  for (const ProductPiece& piece : p) {
    EXPECT_EQ(std::tie(piece.col, piece.cols), std::make_tuple(0, 3000));
    EXPECT_TRUE(piece.rows >= kPanelRows || piece.row + piece.rows == kRows)
        << piece.rows;
  }
  // One row fewer than 6 * kPanelRows: column panels as before.
  for (const ProductPiece& piece : Pieces(1, 6 * kPanelRows - 1, 3000, 16)) {
    EXPECT_EQ(piece.rows, 6 * kPanelRows - 1);
  }
}

// The rows of sgemm's f32 copies: padded where they would lie a multiple of
// 4 KiB apart, on a CPU without AVX-512 alone (where oneDNN's matmul packs
// weights itself).
TEST(OneDnnTest, SgemmCopiesPadRowsFourKibApartWithoutAvx512) {
  for (int64_t n : {1, 768, 1000, 1040, 4112}) {
    EXPECT_EQ(SgemmRowStride(n), n);
  }
  for (int64_t n : {1024, 3072, 4096}) {
    EXPECT_EQ(SgemmRowStride(n), MatmulPacksWeights() ? n : n + 16) << n;
  }
}

// Products reading b packed (kPackedPanelRows) split by rows down to panels
// of 16 rows: GPT-2's [256, 768] @ [768, 2304] into 6 panels for a team of
// 3.
TEST(OneDnnTest, PackedProductsSplitByRowsDownToSixteenRows) {
  std::vector<ProductPiece> p = Pieces(1, 256, 2304, 768, kPackedPanelRows);
  ASSERT_EQ(p.size(), 6u);
  for (const ProductPiece& piece : p) {
    EXPECT_EQ(std::tie(piece.col, piece.cols), std::make_tuple(0, 2304));
  }
  // 95 rows: under 6 * 16, so column panels.
  for (const ProductPiece& piece : Pieces(1, 95, 2304, 768, kPackedPanelRows)) {
    EXPECT_EQ(piece.rows, 95);
  }
}

// Whether every piece holds all of b's columns, as the pieces above show
// for a team of 3: one piece, runs of whole matrices, row panels; not
// column panels.
TEST(OneDnnTest, PiecesReadAllOfBUnlessSplitIntoColumnPanels) {
  EXPECT_TRUE(PiecesReadAllOfB(3, 20, 30, 40, 3, kPanelRows));    // small
  EXPECT_TRUE(PiecesReadAllOfB(1, 40, 1000, 64, 1, kPanelRows));  // team 1
  EXPECT_TRUE(PiecesReadAllOfB(40, 64, 64, 64, 3, kPanelRows));   // runs
  EXPECT_TRUE(PiecesReadAllOfB(1, 999, 30, 64, 3, kPanelRows));   // tall
  EXPECT_TRUE(PiecesReadAllOfB(1, 6 * kPanelRows, 3000, 16, 3, kPanelRows));
  EXPECT_FALSE(
      PiecesReadAllOfB(1, 6 * kPanelRows - 1, 3000, 16, 3, kPanelRows));
  EXPECT_FALSE(PiecesReadAllOfB(1, 40, 1000, 64, 3, kPanelRows));
  EXPECT_FALSE(PiecesReadAllOfB(2, 64, 512, 64, 3, kPanelRows));
  EXPECT_TRUE(PiecesReadAllOfB(1, 256, 2304, 768, 3, kPackedPanelRows));
  EXPECT_FALSE(PiecesReadAllOfB(1, 95, 2304, 768, 3, kPackedPanelRows));
  for (const ProductPiece& piece : Pieces(1, 96, 2304, 768, kPackedPanelRows)) {
    EXPECT_EQ(std::tie(piece.col, piece.cols), std::make_tuple(0, 2304));
  }
  EXPECT_TRUE(PiecesReadAllOfB(1, 96, 2304, 768, 3, kPackedPanelRows));
}

// A batch under kPiecesPerThread per thread: panels of each matrix; a
// larger one: runs of whole matrices, some of more than one.
TEST(OneDnnTest, BatchesSplitByPanelsOrRunsOfMatrices) {
  for (const ProductPiece& p : Pieces(2, 64, 512, 64)) {
    EXPECT_EQ(p.mats, 1);
    EXPECT_LT(p.cols, 512);
  }
  int64_t most = 0;
  for (const ProductPiece& p : Pieces(40, 64, 64, 64)) {
    EXPECT_EQ(std::tie(p.row, p.rows, p.col, p.cols),
              std::make_tuple(0, 64, 0, 64));
    most = std::max(most, p.mats);
  }
  EXPECT_GT(most, 1);
}

TEST(OneDnnTest, ParallelPiecesRunEachOnceOnOneOpenMpThread) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  struct Ctx {
    std::vector<std::atomic<int>> runs = std::vector<std::atomic<int>>(50);
    std::atomic<int> not_one{0};
  } ctx;
  ParallelPieces(
      50, Team(),
      [](void* c, int64_t i) {
        Ctx& x = *static_cast<Ctx*>(c);
        if (omp_get_max_threads() != 1) x.not_one.fetch_add(1);
        x.runs[i].fetch_add(1);
      },
      &ctx);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(team);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(ctx.runs[i].load(), 1) << i;
  EXPECT_EQ(ctx.not_one.load(), 0);
}

// Inside a pool loop a routine has one thread: its loop would run inline.
TEST(OneDnnTest, ATeamInsideAPoolLoopIsOne) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  std::atomic<int> not_one{0};
  lathe::ParallelFor(
      64, 1, 3,
      [](void* c, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          if (Team() != 1) static_cast<std::atomic<int>*>(c)->fetch_add(1);
        }
      },
      &not_one);
  EXPECT_EQ(not_one.load(), 0);
  EXPECT_EQ(Team(), 3);
  omp_set_num_threads(team);
}

// A thread's buffers are 64-byte aligned, kept for a call of the same or a
// smaller size (no allocation, no new page), grown for a larger one, one
// per slot and one per thread.
TEST(OneDnnTest, ThreadBuffersAreKeptPerSlotAndThread) {
  char* source = static_cast<char*>(ThreadBuffer(kSource, 1000));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(source) % 64, 0u);
  source[999] = 7;  // all of it is usable
  EXPECT_EQ(ThreadBuffer(kSource, 1000), source);
  EXPECT_EQ(ThreadBuffer(kSource, 10), source);
  char* destination = static_cast<char*>(ThreadBuffer(kDestination, 1000));
  EXPECT_NE(destination, source);
  EXPECT_EQ(source[999], 7);  // another slot leaves this one alone
  char* grown = static_cast<char*>(ThreadBuffer(kSource, 1 << 20));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(grown) % 64, 0u);
  grown[(1 << 20) - 1] = 1;
  EXPECT_EQ(ThreadBuffer(kSource, 1 << 20), grown);
  void* other = nullptr;
  std::thread([&] { other = ThreadBuffer(kSource, 1 << 20); }).join();
  EXPECT_NE(other, grown);
  // A buffer counts in the host memory limit; null where the limit
  // refuses it (the routine then takes its fallback). On a thread of its
  // own, whose buffers start empty.
  std::thread([] {
    const int64_t in_use = HostMemoryInUse();
    EXPECT_NE(ThreadBuffer(kWeights, 1 << 16), nullptr);
    EXPECT_GE(HostMemoryInUse(), in_use + (1 << 16));
    const int64_t limit = HostMemoryLimit();
    SetHostMemoryLimit(HostMemoryInUse());
    EXPECT_EQ(ThreadBuffer(kWeights, 1 << 20), nullptr);
    SetHostMemoryLimit(limit);
    EXPECT_NE(ThreadBuffer(kWeights, 1 << 20), nullptr);
  }).join();
}

TEST(OneDnnTest, OneThreadRestoresTheCount) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(5);
  {
    OneThread one;
    EXPECT_EQ(omp_get_max_threads(), 1);
    EXPECT_EQ(Team(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), 5);
  EXPECT_EQ(Team(), 5);
  omp_set_num_threads(team);
}

}  // namespace
}  // namespace lathe::onednn
