#include "runtime/onednn.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dnnl.h"
#include "runtime/storage.h"
#include "runtime/thread_pool.h"

// OpenMP's thread counts (libgomp, which oneDNN threads with).
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);
extern "C" int omp_in_parallel(void);

namespace lathe::onednn {

dnnl_engine_t Engine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    if (!Ok(dnnl_engine_create(&e, dnnl_cpu, 0))) e = nullptr;
    return e;
  }();
  return engine;
}

dnnl_stream_t Stream() {
  // Destroyed when the thread ends (a caller's thread may end; the pool's
  // do not).
  struct ThreadStream {
    dnnl_stream_t s = nullptr;
    ThreadStream() {
      if (Engine() == nullptr ||
          !Ok(dnnl_stream_create(&s, Engine(), dnnl_stream_default_flags))) {
        s = nullptr;
      }
    }
    ~ThreadStream() {
      if (s != nullptr) dnnl_stream_destroy(s);
    }
  };
  thread_local ThreadStream stream;
  return stream.s;
}

Memory::Memory(const dnnl_memory_desc_t& md, void* data) {
  if (Engine() == nullptr || !Ok(dnnl_memory_create(&m, &md, Engine(), data))) {
    m = nullptr;
  }
}

Memory::~Memory() {
  if (m != nullptr) dnnl_memory_destroy(m);
}

void WarmProducts() {
  static std::once_flag once;
  std::call_once(once, [] {
    constexpr int kN = 8;  // smaller products take a path of their own
    float a[kN * kN] = {}, b[kN * kN] = {}, c[kN * kN];
    OneThread alone;
    dnnl_sgemm('N', 'N', kN, kN, kN, 1.0f, a, kN, b, kN, 0.0f, c, kN);
  });
}

std::string Version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (" + v->hash + ")";
}

const_dnnl_primitive_attr_t Attributes() {
  static dnnl_primitive_attr_t attr = [] {
    dnnl_primitive_attr_t a = nullptr;
    if (!Ok(dnnl_primitive_attr_create(&a))) return a;
    if (!Ok(dnnl_primitive_attr_set_scratchpad_mode(
            a, dnnl_scratchpad_mode_user))) {
      dnnl_primitive_attr_destroy(a);
      a = nullptr;
    }
    return a;
  }();
  return attr;
}

bool Execute(dnnl_stream_t stream, dnnl_primitive_t p,
             std::vector<dnnl_exec_arg_t> args) {
  const_dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_primitive_get_primitive_desc(p, &pd))) return false;
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  const size_t bytes = md == nullptr ? 0 : dnnl_memory_desc_get_size(md);
  std::unique_ptr<Memory> pad;
  if (bytes > 0) {
    // The primitive is done with it when the call returns (CPU streams
    // run in order, on the calling thread).
    void* data = ThreadBuffer(kScratchpad, bytes);
    if (data == nullptr) return false;
    pad = std::make_unique<Memory>(*md, data);
    if (pad->m == nullptr) return false;
    args.push_back({DNNL_ARG_SCRATCHPAD, pad->m});
  }
  return Ok(dnnl_primitive_execute(p, stream, static_cast<int>(args.size()),
                                   args.data()));
}

void* ThreadBuffer(BufferSlot slot, size_t bytes) {
  // Storage blocks: counted in the host memory limit, 64-byte aligned, on
  // huge pages from 2 MiB, returned to the block cache when replaced.
  thread_local std::array<Storage, kBufferSlots> buffers;
  Storage& b = buffers[slot];
  if (b.is_null() || b.nbytes() < static_cast<int64_t>(bytes)) {
    b = Storage();  // freed before its successor is allocated
    absl::StatusOr<Storage> grown =
        Storage::AllocateKept(std::max<int64_t>(1, bytes));
    if (!grown.ok()) return nullptr;
    b = *std::move(grown);
  }
  return b.data();
}

namespace {

// Whether this CPU (as oneDNN sees it, DNNL_MAX_CPU_ISA included) has
// oneDNN's avx512_core kernels.
bool HasAvx512Core() {
  static const bool has =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) ==
      dnnl_cpu_isa_avx512_core;
  return has;
}

}  // namespace

int64_t SgemmRowStride(int64_t n) {
  constexpr int64_t kPageElements = 4096 / sizeof(float);
  return n % kPageElements == 0 && !HasAvx512Core() ? n + 16 : n;
}

bool MatmulPacksWeights() { return HasAvx512Core(); }

int Team() {
  return omp_in_parallel() || InParallelFor() ? 1 : omp_get_max_threads();
}

OneThread::OneThread() : saved_(omp_get_max_threads()) {
  omp_set_num_threads(1);
}

OneThread::~OneThread() { omp_set_num_threads(saved_); }

namespace {

// How ParallelProducts cuts a batch of m x n x k products for `team`:
// `whole`, one piece on the calling thread; else `panels` pieces of each
// matrix, of `panel` rows (by_rows) or columns (panels 1: runs of whole
// matrices).
struct Split {
  bool whole = false;
  int64_t panels = 1, panel = 0;
  bool by_rows = false;
};

Split SplitOf(int64_t batch, int64_t m, int64_t n, int64_t k, int team,
              int64_t panel_rows) {
  Split s;
  // In double: a broadcast operand's batch needs no memory of its own.
  const double work = static_cast<double>(batch) * m * n * k;
  s.whole = team <= 1 || work < kThreadedWork;
  if (s.whole || batch >= team * kPiecesPerThread) return s;
  // Panels of a multiple of 16 columns (a vector) or rows, about
  // kPiecesPerThread per thread over the batch: rows where the product has
  // more rows than columns, or where each panel but the last keeps
  // panel_rows of them. A row panel's operand and result stay dense; a
  // column panel of a [k, n] weight or result is strided, which oneDNN's
  // bf16 matmul runs with gemm:jit at a third to a tenth of its AMX
  // kernel's rate.
  const int64_t want = (team * kPiecesPerThread + batch - 1) / batch;
  s.by_rows = m > n || m >= want * panel_rows;
  const int64_t length = s.by_rows ? m : n;
  s.panel = std::max<int64_t>(16, (length / want + 15) / 16 * 16);
  s.panels = (length + s.panel - 1) / s.panel;
  return s;
}

// ParallelProducts' loop: the caller's piece function and the split.
struct Products {
  void (*piece)(void*, const ProductPiece&);
  void* ctx;
  int64_t m, n;
  int64_t panels;  // per matrix
  int64_t panel;   // rows (by_rows) or columns per panel
  bool by_rows;

  static void Run(void* self, int64_t begin, int64_t end) {
    const Products& p = *static_cast<const Products*>(self);
    OneThread one;
    if (p.panels == 1) {  // whole matrices: the chunk's range is one piece
      p.piece(p.ctx, ProductPiece{begin, end - begin, 0, p.m, 0, p.n});
      return;
    }
    for (int64_t i = begin; i < end; ++i) {
      const int64_t at = i % p.panels * p.panel;
      ProductPiece piece{i / p.panels, 1, 0, p.m, 0, p.n};
      if (p.by_rows) {
        piece.row = at;
        piece.rows = std::min(p.panel, p.m - at);
      } else {
        piece.col = at;
        piece.cols = std::min(p.panel, p.n - at);
      }
      p.piece(p.ctx, piece);
    }
  }
};

// ParallelPieces' loop.
struct Pieces {
  void (*body)(void*, int64_t);
  void* ctx;

  static void Run(void* self, int64_t begin, int64_t end) {
    const Pieces& p = *static_cast<const Pieces*>(self);
    OneThread one;
    for (int64_t i = begin; i < end; ++i) p.body(p.ctx, i);
  }
};

}  // namespace

bool PiecesReadAllOfB(int64_t batch, int64_t m, int64_t n, int64_t k, int team,
                      int64_t panel_rows) {
  const Split s = SplitOf(batch, m, n, k, team, panel_rows);
  return s.whole || s.panels == 1 || s.by_rows;
}

void ParallelProducts(int64_t batch, int64_t m, int64_t n, int64_t k, int team,
                      void (*piece)(void* ctx, const ProductPiece& p),
                      void* ctx, int64_t panel_rows) {
  const Split s = SplitOf(batch, m, n, k, team, panel_rows);
  if (s.whole) {
    OneThread one;
    piece(ctx, ProductPiece{0, batch, 0, m, 0, n});
    return;
  }
  Products p{piece, ctx, m, n, s.panels, s.panel, s.by_rows};
  ParallelFor(batch * p.panels, 1, team, &Products::Run, &p);
}

void ParallelPieces(int64_t n, int team, void (*body)(void* ctx, int64_t i),
                    void* ctx) {
  Pieces p{body, ctx};
  if (n == 1 || team <= 1) {
    Pieces::Run(&p, 0, n);
    return;
  }
  ParallelFor(n, 1, team, &Pieces::Run, &p);
}

}  // namespace lathe::onednn
