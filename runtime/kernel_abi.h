/* -----------------------------------------------------------------------------
 * File: kernel_abi.h
 * -----------------------------------------------------------------------------
 *
 * The C ABI between generated kernels and the runtime (as AOTInductor's
 * shim): plain C types only, so a compiled .so depends on no C++ ABI of
 * lathe's. Generated source embeds this file's text (KernelAbiSource() in
 * kernel_abi_source.h); the runtime fills a LatheKernelRuntime and calls the
 * .so's entry point, lathe_entry.
 *
 * Example (generated code):
 *
 *   int lathe_entry(void* const* buffers, const int64_t* sizes,
 *                   const double* floats, const LatheKernelRuntime* rt) {
 *     rt->sgemm(1, m, n, k, a, 0, k, 1, b, 0, n, 1, c, 0, n, 1);
 *     return 0;
 *   }
 */
#ifndef LATHE_RUNTIME_KERNEL_ABI_H_
#define LATHE_RUNTIME_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a field changes; an artifact records the one it uses. */
#define LATHE_KERNEL_ABI_VERSION 2

typedef struct LatheKernelRuntime {
  uint32_t abi_version;
  /* c[b] = a[b] @ b[b] for b < batch; every matrix given by its element
   * strides (batch, row, column), so transposed and broadcast operands need
   * no copy. */
  void (*sgemm)(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t a_bs, int64_t a_rs, int64_t a_cs, const float* b,
                int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c,
                int64_t c_bs, int64_t c_rs, int64_t c_cs);
  void (*dgemm)(int64_t batch, int64_t m, int64_t n, int64_t k, const double* a,
                int64_t a_bs, int64_t a_rs, int64_t a_cs, const double* b,
                int64_t b_bs, int64_t b_rs, int64_t b_cs, double* c,
                int64_t c_bs, int64_t c_rs, int64_t c_cs);
  /* out = convolution(x, w), f32, no bias: the geometry array gives the
   * spatial dims s, groups, N, C, O, the input, kernel and output sizes,
   * strides, paddings and dilations (s each), then each operand's element
   * offset and 2 + s strides (x, w, out); runtime/convolution.h. */
  void (*sconv)(const int64_t* geometry, const float* x, const float* w,
                float* out);
} LatheKernelRuntime;

/* The entry point of a compiled graph: buffers in the program's order, the
 * integer symbols' and the float symbols' values; 0 on success. */
typedef int (*LatheEntryFn)(void* const* buffers, const int64_t* sizes,
                            const double* floats, const LatheKernelRuntime* rt);

#ifdef __cplusplus
}
#endif

#endif /* LATHE_RUNTIME_KERNEL_ABI_H_ */
