// -----------------------------------------------------------------------------
// File: bf16_gemm.h
// -----------------------------------------------------------------------------
//
// The bf16 matrix product generated kernels call through the kernel ABI
// (LatheKernelRuntime::bgemm): c[b] = a[b] @ b[b] with a and b in bf16 and
// c in f32, products exact and summed in f32 (PyTorch's CPU bf16 mm, before
// its one rounding of the result to bf16, which the caller's epilogue
// does). It runs as a oneDNN matmul primitive (created once per geometry
// and cached), which uses the CPU's bf16 dot-product instructions where it
// has them (AVX512-BF16, AMX) and converts to f32 where it has not. What
// the primitive refuses (a broadcast row or column; every bf16 product on
// a CPU without AVX-512, where oneDNN has no bf16 matmul) runs as sgemm on
// dense f32 copies of the operands (allocated within the host memory
// limit; b converted once per call and shared by every piece, each piece
// converting its rows of a); an empty product, or one whose copies do not
// fit, by the reference loops.
//
// Operands are given as LatheKernelRuntime::sgemm's are: each matrix by its
// element strides (batch, row, column), so transposed and broadcast
// operands need no copy.
//
// Example (a [2, 3] @ [3, 4] product, row-major):
//
//   lathe::Bf16Gemm(1, 2, 4, 3, a, 0, 3, 1, b, 0, 4, 1, c, 0, 4, 1);

#ifndef LATHE_RUNTIME_BF16_GEMM_H_
#define LATHE_RUNTIME_BF16_GEMM_H_

#include <cstdint>

namespace lathe {

// c[i] = a[i] @ b[i] for i < batch: a [m, k] and b [k, n] of bf16 (the
// 16-bit patterns), c [m, n] of f32, through oneDNN's bf16 matmul where it
// takes the geometry, else its sgemm on f32 copies.
void Bf16Gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
              int64_t c_rs, int64_t c_cs);

// Whether Bf16Gemm runs this geometry through oneDNN's bf16 matmul (else
// sgemm on f32 copies).
bool Bf16GemmUsesOneDnn(int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t a_bs, int64_t a_rs, int64_t a_cs, int64_t b_bs,
                        int64_t b_rs, int64_t b_cs, int64_t c_bs, int64_t c_rs,
                        int64_t c_cs);

// The same product by the reference loops alone (products summed in
// double, rounded once to f32): the fallback, and the tests' second
// opinion.
void Bf16GemmReference(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

}  // namespace lathe

#endif  // LATHE_RUNTIME_BF16_GEMM_H_
