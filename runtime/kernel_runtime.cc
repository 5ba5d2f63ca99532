#include "runtime/kernel_runtime.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dnnl.h"
#include "runtime/bf16_gemm.h"
#include "runtime/convolution.h"
#include "runtime/copy.h"
#include "runtime/sort.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace lathe {
namespace {

template <typename T>
void Gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t a_bs, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_bs,
          int64_t b_rs, int64_t b_cs, T* c, int64_t c_bs, int64_t c_rs,
          int64_t c_cs) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strides = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  for (int64_t i = 0; i < batch; ++i) {
    Eigen::Map<Mat, 0, Strides> out(c + i * c_bs, m, n, Strides(c_rs, c_cs));
    if (k == 0) {
      out.setZero();
      continue;
    }
    Eigen::Map<const Mat, 0, Strides> x(a + i * a_bs, m, k,
                                        Strides(a_rs, a_cs));
    Eigen::Map<const Mat, 0, Strides> y(b + i * b_bs, k, n,
                                        Strides(b_rs, b_cs));
    out.noalias() = x * y;
  }
}

// The BLAS form of a rows x cols row-major operand with strides (rs, cs):
// 'N' with leading dimension rs when its rows are contiguous, 'T' with
// leading dimension cs when its columns are; false for any other layout.
bool BlasLayout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, char* trans,
                int64_t* ld) {
  int64_t r = std::max<int64_t>(rows, 1), c = std::max<int64_t>(cols, 1);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c)) {
    *trans = 'N';
    *ld = rows == 1 ? c : rs;
    return true;
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= r)) {
    *trans = 'T';
    *ld = cols == 1 ? r : cs;
    return true;
  }
  return false;
}

// OpenMP's thread counts (libgomp, which oneDNN's sgemm threads with).
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);
extern "C" int omp_in_parallel(void);

// Products of fewer multiply-adds than this run on the calling thread.
constexpr int64_t kThreadedGemmWork = int64_t{1} << 18;

// Panels per thread of a product split by its columns or rows: a few, so
// the threads that run take the panels of one the scheduler holds back.
constexpr int64_t kPanelsPerThread = 2;

// One f32 product of the BLAS forms BlasLayout found, in pieces
// SgemmPieces' body computes: whole matrices of the batch, or panels of
// `panel` columns (rows when `by_rows`) of each.
struct SgemmPieces {
  char ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  const float *a, *b;
  float* c;
  int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
  int64_t panels = 1;  // per matrix
  int64_t panel = 0;   // columns (rows) per panel
  bool by_rows = false;

  // Pieces [begin, end), each on this thread alone (oneDNN's sgemm takes
  // the calling thread's OpenMP count, set to 1 around the calls).
  static void Run(void* ctx, int64_t begin, int64_t end) {
    const SgemmPieces& p = *static_cast<const SgemmPieces*>(ctx);
    const int team = omp_get_max_threads();
    omp_set_num_threads(1);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t mat = i / p.panels, at = i % p.panels * p.panel;
      int64_t rows = p.m, cols = p.n;
      const float* a = p.a + mat * p.a_bs;
      const float* b = p.b + mat * p.b_bs;
      float* c = p.c + mat * p.c_bs;
      if (p.panels > 1 && p.by_rows) {  // rows of a and c
        rows = std::min(p.panel, p.m - at);
        a += at * p.a_rs;
        c += at * p.c_rs;
      } else if (p.panels > 1) {  // columns of b and c
        cols = std::min(p.panel, p.n - at);
        b += at * p.b_cs;
        c += at * p.c_cs;
      }
      if (dnnl_sgemm(p.ta, p.tb, rows, cols, p.k, 1.0f, a, p.lda, b, p.ldb,
                     0.0f, c, p.ldc) != dnnl_success) {
        Gemm<float>(1, rows, cols, p.k, a, 0, p.a_rs, p.a_cs, b, 0, p.b_rs,
                    p.b_cs, c, 0, p.c_rs, p.c_cs);
      }
    }
    omp_set_num_threads(team);
  }
};

// f32: oneDNN's sgemm (tools/bench/library_choice.md: the fastest of Eigen,
// OpenBLAS and oneDNN on this machine at the MLP and transformer shapes),
// on the runtime's pool as the generated loops are (runtime/thread_pool.h:
// oneDNN's own OpenMP team would wait at its barriers for a thread the
// scheduler holds back, and its idle threads' spinning would take the
// cores from the pool's between products): a batch split by its matrices,
// one product by column or row panels, each piece single-threaded. Layouts
// BLAS cannot express go to Eigen.
void Sgemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t a_bs, int64_t a_rs, int64_t a_cs, const float* b,
           int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
           int64_t c_rs, int64_t c_cs) {
  char ta, tb, tc;
  int64_t lda, ldb, ldc;
  const bool blas = k > 0 && m > 0 && n > 0 &&
                    BlasLayout(m, k, a_rs, a_cs, &ta, &lda) &&
                    BlasLayout(k, n, b_rs, b_cs, &tb, &ldb) &&
                    BlasLayout(m, n, c_rs, c_cs, &tc, &ldc) && tc == 'N';
  if (!blas) {
    Gemm<float>(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
                c_bs, c_rs, c_cs);
    return;
  }
  const int team = omp_in_parallel() ? 1 : omp_get_max_threads();
  SgemmPieces p{ta, tb,   m,    n,    k,    lda,  ldb,  ldc,  a,    b,
                c,  a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs};
  // In double: a broadcast operand's batch needs no memory of its own.
  const double work = static_cast<double>(batch) * m * n * k;
  if (team <= 1 || work < kThreadedGemmWork) {
    SgemmPieces::Run(&p, 0, batch);
    return;
  }
  if (batch < team * kPanelsPerThread) {
    // Panels of a multiple of 16 columns (a vector) or rows, whichever
    // the product has more of, about kPanelsPerThread per thread over the
    // batch.
    const int64_t want = (team * kPanelsPerThread + batch - 1) / batch;
    p.by_rows = m > n;
    const int64_t length = p.by_rows ? m : n;
    p.panel = std::max<int64_t>(16, (length / want + 15) / 16 * 16);
    p.panels = (length + p.panel - 1) / p.panel;
  }
  ParallelFor(batch * p.panels, 1, team, &SgemmPieces::Run, &p);
}

// Why this thread's last allocation for generated code failed.
absl::Status& LastAllocError() {
  static thread_local absl::Status error;
  return error;
}

// Why this thread's last device launch or copy failed.
absl::Status& LastDeviceError() {
  static thread_local absl::Status error;
  return error;
}

// Storage handles for generated code: a heap copy of a Storage (one
// reference); release deletes it.
void* Alloc(int64_t bytes, void** data) {
  absl::StatusOr<Storage> s = Storage::AllocateUninitialized(bytes);
  if (!s.ok()) {
    LastAllocError() = s.status();
    return nullptr;
  }
  *data = s->data();
  return new Storage(*std::move(s));
}
void* Retain(void* storage) {
  return new Storage(*static_cast<const Storage*>(storage));
}
void Release(void* storage) { delete static_cast<Storage*>(storage); }

int Copy(const LatheValue* dst, const LatheValue* src) {
  absl::StatusOr<Tensor> d = TensorOfValue(*dst), s = TensorOfValue(*src);
  if (!d.ok() || !s.ok()) return 1;
  return CopyTensor(*d, *s).ok() ? 0 : 1;
}

const char kAbiText[] =
#include "runtime/kernel_abi_text.inc"
    ;

// The values this thread's last compiled call reported for its failed
// check (kernel_abi.h: the count, then the values).
int64_t* CheckValueSlots() {
  thread_local int64_t slots[LATHE_CHECK_VALUES + 1] = {};
  return slots;
}

}  // namespace

absl::StatusOr<Tensor> TensorOfValue(const LatheValue& v) {
  if (v.kind != LATHE_VALUE_TENSOR || v.storage == nullptr) {
    return absl::InvalidArgumentError("not a tensor");
  }
  return Tensor::Wrap(*static_cast<const Storage*>(v.storage),
                      static_cast<DType>(v.dtype),
                      absl::MakeConstSpan(v.sizes, v.ndim),
                      absl::MakeConstSpan(v.strides, v.ndim), v.storage_offset);
}

LatheKernelRuntime SeededKernelRuntime(uint64_t seed) {
  LatheKernelRuntime rt = *KernelRuntime();
  rt.seed = seed;
  rt.check_values = CheckValueSlots();
  rt.check_values[0] = 0;
  return rt;
}

std::vector<int64_t> TakeCheckValues() {
  int64_t* slots = CheckValueSlots();
  int64_t n = std::clamp<int64_t>(slots[0], 0, LATHE_CHECK_VALUES);
  std::vector<int64_t> values(slots + 1, slots + 1 + n);
  slots[0] = 0;
  return values;
}

absl::Status TakeAllocError() {
  absl::Status s = std::move(LastAllocError());
  LastAllocError() = absl::OkStatus();
  return s;
}

void SetAllocError(absl::Status error) { LastAllocError() = std::move(error); }

void SetDeviceError(absl::Status error) {
  LastDeviceError() = std::move(error);
}

absl::Status TakeDeviceError() {
  absl::Status s = std::move(LastDeviceError());
  LastDeviceError() = absl::OkStatus();
  return s;
}

const LatheKernelRuntime* KernelRuntime() {
  static const LatheKernelRuntime rt = {LATHE_KERNEL_ABI_VERSION,
                                        &Sgemm,
                                        &Gemm<double>,
                                        &Bf16Gemm,
                                        &Sconv,
                                        &SortLines,
                                        &Alloc,
                                        &Retain,
                                        &Release,
                                        &Copy,
                                        /*seed=*/kDefaultSeed,
                                        /*check_values=*/nullptr,
                                        /*device=*/nullptr,
                                        &ParallelFor};
  return &rt;
}

absl::string_view KernelAbiSource() { return kAbiText; }

}  // namespace lathe
