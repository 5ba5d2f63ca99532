#include "runtime/kernel_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
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
#include "runtime/matmul_primitive.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"
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

// One f32 product in the BLAS forms BlasLayout found; `frozen`: b is a
// frozen constant's (matmul_primitive.h: FrozenOperand) read transposed.
struct SgemmCall {
  char ta, tb;
  int64_t k, lda, ldb, ldc;
  const float *a, *b;
  float* c;
  int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
  bool frozen;
  bool primitives;  // every piece by oneDNN's matmul (SgemmByPrimitives)

  // The piece's part of the product on this thread: oneDNN's matmul with b
  // packed once when `frozen` (the pieces are row panels: each reads the
  // whole b, one packed copy), or with b as it is for `primitives`, else
  // its sgemm (which packs its part of b on every call).
  static void Piece(void* ctx, const onednn::ProductPiece& p) {
    const SgemmCall& g = *static_cast<const SgemmCall*>(ctx);
    const float* a = g.a + p.mat * g.a_bs + p.row * g.a_rs;
    const float* b = g.b + p.mat * g.b_bs + p.col * g.b_cs;
    float* c = g.c + p.mat * g.c_bs + p.row * g.c_rs + p.col * g.c_cs;
    if ((g.frozen || g.primitives) &&
        onednn::RunMatmul(
            {dnnl_f32, p.mats, p.rows, p.cols, g.k, g.a_bs, g.a_rs, g.a_cs,
             g.b_bs, g.b_rs, g.b_cs, g.c_bs, g.c_rs, g.c_cs, g.frozen},
            a, b, c)) {
      return;
    }
    for (int64_t mat = 0; mat < p.mats; ++mat) {
      const float* am = a + mat * g.a_bs;
      const float* bm = b + mat * g.b_bs;
      float* cm = c + mat * g.c_bs;
      if (dnnl_sgemm(g.ta, g.tb, p.rows, p.cols, g.k, 1.0f, am, g.lda, bm,
                     g.ldb, 0.0f, cm, g.ldc) != dnnl_success) {
        Gemm<float>(1, p.rows, p.cols, g.k, am, 0, g.a_rs, g.a_cs, bm, 0,
                    g.b_rs, g.b_cs, cm, 0, g.c_rs, g.c_cs);
      }
    }
  }
};

// The copy of a frozen f32 b ([k, n], rows ld apart) with its rows
// `padded` apart, kept with the weights (packed_weights.h) from its first
// call; null where the host memory limit refuses it.
const float* KeptPaddedRows(const float* b, int64_t k, int64_t n, int64_t ld,
                            int64_t padded) {
  dnnl_dims_t dims = {k, n}, strides = {ld, 1};
  dnnl_memory_desc_t from;
  if (!onednn::Ok(dnnl_memory_desc_init_by_strides(&from, 2, dims, dnnl_f32,
                                                   strides))) {
    return nullptr;
  }
  struct Rows {
    int64_t k, n, ld;
  } rows{k, n, ld};
  return onednn::KeptRows(
      b, from, k, n, padded,
      [](void* ctx, const void* w, float* to, int64_t to_ld) {
        const Rows& r = *static_cast<const Rows*>(ctx);
        for (int64_t i = 0; i < r.k; ++i) {
          std::memcpy(to + i * to_ld, static_cast<const float*>(w) + i * r.ld,
                      r.n * sizeof(float));
        }
        return true;
      },
      &rows);
}

// f32: oneDNN's sgemm (tools/bench/library_choice.md: the fastest of Eigen,
// OpenBLAS and oneDNN on this machine at the MLP and transformer shapes),
// or its matmul primitive for every piece with `primitives`, in pieces on
// the runtime's pool (onednn.h: ParallelProducts). Layouts BLAS cannot
// express go to Eigen.
void SgemmWith(bool primitives, int64_t batch, int64_t m, int64_t n, int64_t k,
               const float* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const float* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
               float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
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
  // A result shared by the batch (stride 0) is written in order, on one
  // thread.
  const int team = batch > 1 && c_bs == 0 ? 1 : onednn::Team();
  // A frozen b read transposed (nn.Linear's weight) is copied once into the
  // layout oneDNN's matmul packs it in (AVX-512), where the pieces are row
  // panels (one copy serves them all): sgemm reads a transposed b 1.4-1.8x
  // slower at batch 32-64. A b read as given gains nothing from the packing;
  // column panels would each want a copy of their own.
  const bool frozen =
      tb == 'T' && onednn::MatmulPacksWeights() &&
      onednn::PiecesReadAllOfB(batch, m, n, k, team,
                               onednn::kPackedPanelRows) &&
      FrozenOperand(batch, n, k, b, b_bs, b_rs, b_cs, sizeof(float));
  // A frozen b read as given whose rows sgemm reads at half its rate (their
  // stride a multiple of 4 KiB, without AVX-512) is copied once with its
  // rows padded, and every piece reads the copy.
  if (tb == 'N' && ldb != onednn::SgemmRowStride(ldb) &&
      FrozenOperand(batch, n, k, b, b_bs, b_rs, b_cs, sizeof(float))) {
    const int64_t padded = onednn::SgemmRowStride(n);
    if (const float* kept = KeptPaddedRows(b, k, n, ldb, padded)) {
      b = kept;
      b_bs = 0;
      b_rs = ldb = padded;
    }
  }
  SgemmCall call{ta,   tb,   k,    lda,  ldb,    ldc,       a,
                 b,    c,    a_bs, a_rs, a_cs,   b_bs,      b_rs,
                 b_cs, c_bs, c_rs, c_cs, frozen, primitives};
  onednn::ParallelProducts(
      batch, m, n, k, team, &SgemmCall::Piece, &call,
      frozen || primitives ? onednn::kPackedPanelRows : onednn::kPanelRows);
}

void Sgemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t a_bs, int64_t a_rs, int64_t a_cs, const float* b,
           int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
           int64_t c_rs, int64_t c_cs) {
  SgemmWith(false, batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
            c_bs, c_rs, c_cs);
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

void SgemmByPrimitives(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const float* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  SgemmWith(true, batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
            c_bs, c_rs, c_cs);
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
