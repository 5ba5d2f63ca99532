// -----------------------------------------------------------------------------
// File: onednn.h
// -----------------------------------------------------------------------------
//
// What the runtime's oneDNN routines (convolution.h, matmul_primitive.h,
// bf16_gemm.h, sgemm in kernel_runtime.cc) share: the process's CPU engine,
// each thread's stream and buffers, a memory object that destroys itself, and
// how they run on the runtime's thread pool (thread_pool.h). Each routine
// builds its own primitives.
//
// oneDNN threads its routines with OpenMP (libgomp): a team whose barrier
// waits for every thread, and whose idle threads spin beside the pool's
// (issue 30, item 6). So the routines cut their work into pieces (matrices
// or panels of a product, images or rows of a convolution) and run each
// piece on one pool thread with oneDNN held to that thread (OneThread);
// primitives are made under OneThread too, so none plans for a team.
//
// Example:
//
//   dnnl_stream_t stream = onednn::Stream();   // null: oneDNN is unusable
//   onednn::Memory x(x_md, data);              // over the caller's buffer
//   if (stream == nullptr || x.m == nullptr) return false;
//
//   onednn::ParallelProducts(batch, m, n, k, onednn::Team(),
//       [](void* ctx, const onednn::ProductPiece& p) { /* p's part */ }, &ctx);

#ifndef LATHE_RUNTIME_ONEDNN_H_
#define LATHE_RUNTIME_ONEDNN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dnnl.h"

namespace lathe::onednn {

// Whether a oneDNN call succeeded.
inline bool Ok(dnnl_status_t s) { return s == dnnl_success; }

// The process's CPU engine, or null when oneDNN cannot make one.
dnnl_engine_t Engine();

// This thread's stream on Engine(), or null.
dnnl_stream_t Stream();

// A memory object of `md` over `data` (DNNL_MEMORY_ALLOCATE: oneDNN's own
// buffer); m is null when oneDNN refused it.
struct Memory {
  dnnl_memory_t m = nullptr;
  Memory(const dnnl_memory_desc_t& md, void* data);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
};

// The buffers a routine keeps per thread: each slot is its own buffer.
enum BufferSlot {
  kScratchpad,
  kSource,
  kWeights,
  kDestination,
  kSharedWeights,  // reordered once per call for every piece
  kBufferSlots
};

// This thread's buffer `slot`, 64-byte aligned, of at least `bytes`: kept
// and grown to the largest asked for, so a routine called again with the
// same sizes allocates nothing and touches no new page. It counts in the
// host memory limit (storage.h); null when the limit refuses it. Valid
// until this thread asks for the same slot again.
void* ThreadBuffer(BufferSlot slot, size_t bytes);

// WarmProducts()
//
// Has oneDNN make its f32 product kernels now, on this thread: its sgemm
// generates them on a process's first product of 8 or more rows (22 ms on
// the machine of tools/bench/README.md), whatever the shape. Once per
// process: a later call returns once the first is done.
void WarmProducts();

// The library's version, "oneDNN 2.7.3 (<commit>)": what a measurement of
// its routines depends on (driver/autotune.h's key).
std::string Version();

// The attributes every routine's primitive is made with: a scratchpad the
// caller gives (Execute does). With the library's own, a primitive uses
// the scratchpad of the thread that made it (this oneDNN is built without
// DNNL_ENABLE_CONCURRENT_EXEC), so one primitive run on two threads at once
// would race.
const_dnnl_primitive_attr_t Attributes();

// Runs primitive `p` with `args` on `stream`, with a scratchpad of this
// thread's when `p` asks for one; false when oneDNN fails.
bool Execute(dnnl_stream_t stream, dnnl_primitive_t p,
             std::vector<dnnl_exec_arg_t> args);

// The threads a routine called from this thread may use: OpenMP's count
// for it (omp_get_max_threads: OMP_NUM_THREADS, omp_set_num_threads, the
// autotuner's choice), 1 inside an OpenMP parallel region or a pool loop.
int Team();

// While alive, oneDNN calls from this thread run on it alone: its OpenMP
// thread count is 1, and is restored after.
class OneThread {
 public:
  OneThread();
  ~OneThread();
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

// Work (multiply-adds) below which a routine runs on its calling thread.
constexpr int64_t kThreadedWork = int64_t{1} << 18;

// Pieces per thread a routine's work is cut into: a few, so the threads
// that run take the pieces of one the scheduler holds back.
constexpr int64_t kPiecesPerThread = 2;

// Rows each row panel but the last keeps at least when a product is split
// by rows though it has more columns (ParallelProducts' default, sgemm's).
// oneDNN's sgemm runs a product with few rows or columns (1/rows + 1/cols
// at least 0.0038: 256 rows of 4096 columns) by its no-copy kernel, which
// on AVX2 reads b at half its rate where b's rows lie a multiple of 4 KiB
// apart; 384-row panels of a wide product keep the copying kernel
// (tools/bench/README.md: the MLP at batch 1024, 112 -> 56-60 ms on Zen 3).
constexpr int64_t kPanelRows = 384;

// The same for products that read b packed (bf16 products, frozen f32
// weights: matmul_primitive.h): row panels down to 16 rows. Each piece then
// reads the whole b, so one packed copy of a frozen b serves every piece
// and every team size; a column panel of a bf16 weight is strided, and
// oneDNN runs it with gemm:jit at a tenth of its AMX kernel's rate (GPT-2's
// [256, 768] @ [768, 2304] at 77 GFLOP/s).
constexpr int64_t kPackedPanelRows = 16;

// The row stride, in elements, of an f32 copy of a [k, n] b that oneDNN's
// sgemm reads at its full rate: n, or where rows n elements apart would lie
// a multiple of 4 KiB apart, n + 16 on a CPU without AVX-512 (its no-copy
// kernel reads such rows at half its rate; AVX-512's sgemm copies them).
int64_t SgemmRowStride(int64_t n);

// Whether oneDNN's matmul reads a frozen b packed into a layout of its own
// on this CPU (its brgemm kernels: AVX-512 cores), so one kept copy saves
// repacking on every call; elsewhere its gemm:jit reads plain rows.
bool MatmulPacksWeights();

// One piece of a batch of m x n products: matrices [mat, mat + mats), of
// each the rows [row, row + rows) and columns [col, col + cols).
struct ProductPiece {
  int64_t mat, mats, row, rows, col, cols;
};

// Runs piece(ctx, ...) over the pieces of a batch of m x n x k products
// for `team` threads, each on one pool thread under OneThread; returns when
// all are done. Small work (under kThreadedWork) or a team of 1 is one
// piece, the whole batch, on the calling thread. Otherwise a batch of at
// least kPiecesPerThread matrices per thread is split into runs of whole
// matrices (the pool's chunks), and a smaller one into panels of a
// multiple of 16 rows (when m > n, or when each row panel but the last
// keeps `panel_rows` rows) or columns of each matrix.
void ParallelProducts(int64_t batch, int64_t m, int64_t n, int64_t k, int team,
                      void (*piece)(void* ctx, const ProductPiece& p),
                      void* ctx, int64_t panel_rows = kPanelRows);

// Whether every piece ParallelProducts(batch, m, n, k, team, ...,
// panel_rows) gives its piece function holds all of b's columns (one piece,
// runs of whole matrices, or row panels): then one packed copy of a b
// shared by the batch serves every piece, whatever the team.
bool PiecesReadAllOfB(int64_t batch, int64_t m, int64_t n, int64_t k, int team,
                      int64_t panel_rows);

// Runs body(ctx, i) for i in [0, n), each on one pool thread under
// OneThread (n = 1: on the calling thread); returns when all are done.
void ParallelPieces(int64_t n, int team, void (*body)(void* ctx, int64_t i),
                    void* ctx);

}  // namespace lathe::onednn

#endif  // LATHE_RUNTIME_ONEDNN_H_
