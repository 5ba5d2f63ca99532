// -----------------------------------------------------------------------------
// File: matmul_primitive.h
// -----------------------------------------------------------------------------
//
// oneDNN's matmul primitive for one product geometry, as the runtime's
// matrix products (bf16_gemm.h, and sgemm in kernel_runtime.cc for a frozen
// weight) run it: made once per geometry, for one thread, and cached for the
// process. When the geometry says b is frozen (packed_weights.h), the
// primitive reads b in the layout it picks for it, packed once at the first
// call and kept until b's owner forgets it; otherwise it reads b in its own
// strides (and repacks its part of b on every run).
//
// Example (one f32 [64, 1024] @ [1024, 4096] product whose b is nn.Linear's
// frozen weight, [4096, 1024] transposed):
//
//   onednn::ProductGeometry g{dnnl_f32, 1, 64, 4096, 1024,
//                             0, 1024, 1,   // a: batch, row, column strides
//                             0, 1, 1024,   // b
//                             0, 4096, 1,   // c
//                             FrozenOperand(1, 4096, 1024, w, 0, 1, 1024, 4)};
//   if (!onednn::RunMatmul(g, x, w, out)) { /* another routine's turn */ }

#ifndef LATHE_RUNTIME_MATMUL_PRIMITIVE_H_
#define LATHE_RUNTIME_MATMUL_PRIMITIVE_H_

#include <cstdint>

#include "dnnl.h"

namespace lathe {

// Whether b, one [k, n] matrix of `elem_bytes`-byte elements for the whole
// batch (b_bs 0, or a batch of 1), lies in a frozen constant's memory
// (packed_weights.h).
bool FrozenOperand(int64_t batch, int64_t n, int64_t k, const void* b,
                   int64_t b_bs, int64_t b_rs, int64_t b_cs,
                   int64_t elem_bytes);

namespace onednn {

// c[i] = a[i] @ b[i] for i < batch: a [m, k] and b [k, n] of dtype `in`
// (f32 or bf16), c [m, n] of f32, each matrix by its element strides
// (batch, row, column); `frozen_b`: b is a frozen constant's, to be packed
// once.
struct ProductGeometry {
  dnnl_data_type_t in;
  int64_t batch, m, n, k;
  int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
  bool frozen_b;
};

// Whether oneDNN's matmul takes `g` with an optimized kernel (its primitive
// is made and cached at the first question about g); its reference kernel
// is refused.
bool MatmulTakes(const ProductGeometry& g);

// Runs g's product on this thread through the cached primitive (b packed at
// its first call when g.frozen_b); false when oneDNN does not take g or
// fails (nothing usable was written to c).
bool RunMatmul(const ProductGeometry& g, const void* a, const void* b,
               float* c);

}  // namespace onednn
}  // namespace lathe

#endif  // LATHE_RUNTIME_MATMUL_PRIMITIVE_H_
