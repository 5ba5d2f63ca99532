#include "runtime/bf16_gemm.h"

#include <cstdint>

#include "absl/status/statusor.h"
#include "dnnl.h"
#include "runtime/half.h"
#include "runtime/matmul_primitive.h"
#include "runtime/onednn.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

using onednn::Ok;

float FromBf16(uint16_t bits) { return BFloat16{bits}.ToFloat(); }

// The product through f32: the operands converted into dense f32 copies,
// oneDNN's sgemm on them, the result scattered into c (what a CPU without
// bf16 matmuls in oneDNN, or a layout the primitive refuses, takes);
// false when the copies do not fit in the host memory limit or sgemm fails.
bool ViaSgemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
              int64_t c_rs, int64_t c_cs) {
  int64_t ab, bb, cb, elems;
  if (m <= 0 || n <= 0 || k <= 0 || __builtin_mul_overflow(m, k, &ab) ||
      __builtin_mul_overflow(k, n, &bb) || __builtin_mul_overflow(m, n, &cb) ||
      __builtin_add_overflow(ab, bb, &elems) ||
      __builtin_add_overflow(elems, cb, &elems) ||
      elems > INT64_MAX / static_cast<int64_t>(sizeof(float))) {
    return false;
  }
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  // The copies count against the host memory limit, as the kernels'
  // buffers do; when they do not fit, the reference loops (no copies) run.
  absl::StatusOr<Storage> copies =
      Storage::AllocateUninitialized(elems * sizeof(float));
  if (!copies.ok()) return false;
  float* xa = static_cast<float*>(copies->data());
  float* yb = xa + ab;
  float* out = yb + bb;
  for (int64_t t = 0; t < batch; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t l = 0; l < k; ++l) {
        xa[i * k + l] = FromBf16(x[t * a_bs + i * a_rs + l * a_cs]);
      }
    }
    for (int64_t l = 0; l < k; ++l) {
      for (int64_t j = 0; j < n; ++j) {
        yb[l * n + j] = FromBf16(y[t * b_bs + l * b_rs + j * b_cs]);
      }
    }
    if (!Ok(dnnl_sgemm('N', 'N', m, n, k, 1.0f, xa, k, yb, n, 0.0f, out, n))) {
      return false;
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        c[t * c_bs + i * c_rs + j * c_cs] = out[i * n + j];
      }
    }
  }
  return true;
}

// One piece of Bf16Gemm, on this thread; `frozen`: b is a frozen
// constant's (packed once).
void Product(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
             int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
             int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
             int64_t c_rs, int64_t c_cs, bool frozen = false) {
  onednn::ProductGeometry g{dnnl_bf16, batch, m,    n,    k,
                            a_bs,      a_rs,  a_cs, b_bs, b_rs,
                            b_cs,      c_bs,  c_rs, c_cs, frozen};
  if (frozen && onednn::RunMatmul(g, a, b, c)) return;
  g.frozen_b = false;
  if (onednn::RunMatmul(g, a, b, c)) return;
  if (ViaSgemm(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
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
         FrozenOperand(batch, n, k, b, b_bs, b_rs, b_cs, sizeof(uint16_t))};
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
                g.c_rs, g.c_cs, g.frozen);
      },
      &call, onednn::kPackedPanelRows);
}

}  // namespace lathe
