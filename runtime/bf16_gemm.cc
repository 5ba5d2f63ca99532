#include "runtime/bf16_gemm.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "dnnl.h"
#include "runtime/half.h"
#include "runtime/matmul_primitive.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

using onednn::Ok;

float FromBf16(uint16_t bits) { return BFloat16{bits}.ToFloat(); }

// Converts a batch of `mats` bf16 matrices [rows, cols] (element strides)
// into row-major f32 at `to`, rows `ld` elements apart, one matrix after
// another: rows read in order where their elements are adjacent, 32 rows at
// a time where their columns are (a transposed operand), so every line read
// is used whole.
void ToF32(const uint16_t* from, int64_t mats, int64_t rows, int64_t cols,
           int64_t bs, int64_t rs, int64_t cs, float* to, int64_t ld) {
  constexpr int64_t kRowsAtATime = 32;
  for (int64_t t = 0; t < mats; ++t) {
    const uint16_t* f = from + t * bs;
    float* o = to + t * rows * ld;
    if (cs == 1 || rs != 1) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          o[i * ld + j] = FromBf16(f[i * rs + j * cs]);
        }
      }
      continue;
    }
    for (int64_t i0 = 0; i0 < rows; i0 += kRowsAtATime) {
      const int64_t i1 = std::min(rows, i0 + kRowsAtATime);
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = i0; i < i1; ++i) {
          o[i * ld + j] = FromBf16(f[i + j * cs]);
        }
      }
    }
  }
}

// The elements of `batch` dense matrices [rows, cols], or -1 past int64.
int64_t DenseElements(int64_t batch, int64_t rows, int64_t cols) {
  int64_t e;
  if (batch < 0 || rows < 0 || cols < 0 ||
      __builtin_mul_overflow(rows, cols, &e) ||
      __builtin_mul_overflow(e, batch, &e) ||
      e > INT64_MAX / static_cast<int64_t>(sizeof(float))) {
    return -1;
  }
  return e;
}

// b as dense f32 [k, n] matrices, made once for a whole call (Bf16Gemm),
// which every piece's product reads from its first column: matrix t at
// data + t * bs (bs 0 where the batch shares one), rows ld apart.
struct F32Operand {
  const float* data = nullptr;
  int64_t bs = 0, ld = 0;
};

// The f32 copy of a frozen b ([k, n], element strides rs and cs; its rows
// onednn::SgemmRowStride(n) apart) kept with the weights (packed_weights.h):
// converted at its first call (ToF32; oneDNN 2.6 reorders bf16 on AVX-512
// CPUs alone), read by every later one; no data where the host memory limit
// refuses it.
F32Operand KeptF32(const void* b, int64_t k, int64_t n, int64_t rs,
                   int64_t cs) {
  dnnl_dims_t dims = {k, n}, strides = {rs, cs};
  dnnl_memory_desc_t from;
  if (!Ok(dnnl_memory_desc_init_by_strides(&from, 2, dims, dnnl_bf16,
                                           strides))) {
    return {};
  }
  struct Shape {
    int64_t k, n, rs, cs;
  } shape{k, n, rs, cs};
  const int64_t ld = onednn::SgemmRowStride(n);
  const float* kept = onednn::KeptRows(
      b, from, k, n, ld,
      [](void* ctx, const void* w, float* to, int64_t ld) {
        const Shape& s = *static_cast<const Shape*>(ctx);
        ToF32(static_cast<const uint16_t*>(w), 1, s.k, s.n, 0, s.rs, s.cs, to,
              ld);
        return true;
      },
      &shape);
  return kept == nullptr ? F32Operand{} : F32Operand{kept, 0, ld};
}

// The product through f32 (what a CPU without oneDNN's bf16 matmul, or a
// layout its primitive refuses, takes): a's rows converted into a dense
// f32 copy, b's taken from `bf` (or converted here too where it has none),
// oneDNN's sgemm on them, its result written into c (through a dense copy
// where c's columns are not adjacent); false when the copies do not fit in
// the host memory limit or sgemm fails.
bool ViaSgemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, F32Operand bf, float* c,
              int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  const int64_t ab = DenseElements(1, m, k);
  const int64_t bb = bf.data != nullptr ? 0 : DenseElements(1, k, n);
  const bool c_direct = c_cs == 1 && c_rs >= n;
  const int64_t cb = c_direct ? 0 : DenseElements(1, m, n);
  if (m <= 0 || n <= 0 || k <= 0 || ab < 0 || bb < 0 || cb < 0 ||
      DenseElements(1, 1, ab + bb + cb) < 0) {
    return false;
  }
  // The copies count against the host memory limit, as the kernels'
  // buffers do; when they do not fit, the reference loops (no copies) run.
  absl::StatusOr<Storage> copies =
      Storage::AllocateUninitialized((ab + bb + cb) * sizeof(float));
  if (!copies.ok()) return false;
  float* xa = static_cast<float*>(copies->data());
  float* yb = xa + ab;
  float* out = yb + bb;
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (int64_t t = 0; t < batch; ++t) {
    ToF32(x + t * a_bs, 1, m, k, 0, a_rs, a_cs, xa, k);
    const float* bt = yb;
    if (bf.data != nullptr) {
      bt = bf.data + t * bf.bs;
    } else {
      ToF32(y + t * b_bs, 1, k, n, 0, b_rs, b_cs, yb, n);
    }
    float* ct = c + t * c_bs;
    if (!Ok(dnnl_sgemm('N', 'N', m, n, k, 1.0f, xa, k, bt,
                       bf.data != nullptr ? bf.ld : n, 0.0f,
                       c_direct ? ct : out, c_direct ? c_rs : n))) {
      return false;
    }
    if (c_direct) continue;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) ct[i * c_rs + j * c_cs] = out[i * n + j];
    }
  }
  return true;
}

// One piece of Bf16Gemm, on this thread; `frozen`: b is a frozen
// constant's (packed once); `bf`: b's f32 copy where the call made one
// (oneDNN refused its geometry), from the piece's first column.
void Product(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
             int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
             int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
             int64_t c_rs, int64_t c_cs, bool frozen, F32Operand bf) {
  onednn::ProductGeometry g{dnnl_bf16, batch, m,    n,    k,
                            a_bs,      a_rs,  a_cs, b_bs, b_rs,
                            b_cs,      c_bs,  c_rs, c_cs, frozen};
  if (bf.data == nullptr) {
    if (frozen && onednn::RunMatmul(g, a, b, c)) return;
    g.frozen_b = false;
    if (onednn::RunMatmul(g, a, b, c)) return;
  }
  if (ViaSgemm(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, bf, c,
               c_bs, c_rs, c_cs)) {
    return;
  }
  Bf16GemmReference(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
                    c_bs, c_rs, c_cs);
}

}  // namespace

void Bf16GemmReference(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (int64_t t = 0; t < batch; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          acc +=
              static_cast<double>(FromBf16(x[t * a_bs + i * a_rs + l * a_cs])) *
              FromBf16(y[t * b_bs + l * b_rs + j * b_cs]);
        }
        c[t * c_bs + i * c_rs + j * c_cs] = static_cast<float>(acc);
      }
    }
  }
}

bool Bf16GemmUsesOneDnn(int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t a_bs, int64_t a_rs, int64_t a_cs, int64_t b_bs,
                        int64_t b_rs, int64_t b_cs, int64_t c_bs, int64_t c_rs,
                        int64_t c_cs) {
  return onednn::MatmulTakes({dnnl_bf16, batch, m, n, k, a_bs, a_rs, a_cs, b_bs,
                              b_rs, b_cs, c_bs, c_rs, c_cs, false});
}

void Bf16Gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
              int64_t c_rs, int64_t c_cs) {
  struct Call {
    int64_t k;
    const uint16_t *a, *b;
    float* c;
    int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
    bool frozen;
    F32Operand bf;
  } call{k,
         static_cast<const uint16_t*>(a),
         static_cast<const uint16_t*>(b),
         c,
         a_bs,
         a_rs,
         a_cs,
         b_bs,
         b_rs,
         b_cs,
         c_bs,
         c_rs,
         c_cs,
         FrozenOperand(batch, n, k, b, b_bs, b_rs, b_cs, sizeof(uint16_t)),
         {}};
  // Where oneDNN has no bf16 matmul for the product (every one on a CPU
  // without AVX-512), b is converted to f32 once for the call, not once
  // per piece (within the host memory limit; else each piece converts its
  // own part, or runs the reference loops), and a frozen b once for good.
  std::optional<Storage> b_f32;
  const int64_t b_mats = b_bs == 0 ? 1 : batch;
  const int64_t b_elems = DenseElements(b_mats, k, n);
  const bool via_f32 =
      b_elems > 0 && !Bf16GemmUsesOneDnn(batch, m, n, k, a_bs, a_rs, a_cs, b_bs,
                                         b_rs, b_cs, c_bs, c_rs, c_cs);
  if (via_f32 && call.frozen && b_mats == 1) {
    call.bf = KeptF32(b, k, n, b_rs, b_cs);
  }
  if (via_f32 && call.bf.data == nullptr) {
    absl::StatusOr<Storage> s =
        Storage::AllocateUninitialized(b_elems * sizeof(float));
    if (s.ok()) {
      b_f32 = *std::move(s);
      auto* data = static_cast<float*>(b_f32->data());
      ToF32(call.b, b_mats, k, n, b_bs, b_rs, b_cs, data, n);
      call.bf = {data, b_bs == 0 ? 0 : k * n, n};
    }
  }
  // A result shared by the batch (stride 0) is written in order, on one
  // thread.
  onednn::ParallelProducts(
      batch, m, n, k, batch > 1 && c_bs == 0 ? 1 : onednn::Team(),
      [](void* ctx, const onednn::ProductPiece& p) {
        const Call& g = *static_cast<const Call*>(ctx);
        Product(p.mats, p.rows, p.cols, g.k,
                g.a + p.mat * g.a_bs + p.row * g.a_rs, g.a_bs, g.a_rs, g.a_cs,
                g.b + p.mat * g.b_bs + p.col * g.b_cs, g.b_bs, g.b_rs, g.b_cs,
                g.c + p.mat * g.c_bs + p.row * g.c_rs + p.col * g.c_cs, g.c_bs,
                g.c_rs, g.c_cs, g.frozen,
                g.bf.data == nullptr
                    ? F32Operand{}
                    : F32Operand{g.bf.data + p.mat * g.bf.bs + p.col, g.bf.bs,
                                 g.bf.ld});
      },
      &call, onednn::kPackedPanelRows);
}

}  // namespace lathe
