// glibc's libmvec through GCC's `#pragma omp simd` auto-vectorization.
//
// glibc's <math.h> declares the vector variants (`omp declare simd`) only
// under __FAST_MATH__, and -fno-math-errno alone does not make GCC use them.
// So this file declares them itself; with that, -O3 -march=native
// -fopenmp-simd makes GCC 12 call the AVX2 variant _ZGVdN8v_expf, because
// -march=native on this CPU tunes with -mprefer-vector-width=256. The
// AVX-512 variant _ZGVeN16v_expf needs -mprefer-vector-width=512 as well
// (the vecmath_libmvec_avx512 target). libmvec comes with -lm: glibc's
// libm.so is a linker script that adds libmvec.so.1 AS_NEEDED.
//
// Built twice, LATHE_VECMATH_WIDTH=256 or 512 naming the result.
#include <math.h>

#include <cstdint>

#include "tools/bench/vecmath_kernels.h"

extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
#pragma omp declare simd notinbranch
float logf(float) noexcept;
#pragma omp declare simd notinbranch
float tanhf(float) noexcept;
#pragma omp declare simd notinbranch
float erff(float) noexcept;
}

namespace lathe::bench {
namespace {

void ExpSimd(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = expf(x[i]);
}
void LogSimd(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = logf(x[i]);
}
void TanhSimd(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = tanhf(x[i]);
}
void SigmoidSimd(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
void ErfSimd(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = erff(x[i]);
}

}  // namespace

#if LATHE_VECMATH_WIDTH == 512
const VecMathImpl& LibmvecAvx512Impl() {
  static const VecMathImpl impl = {
      "libmvec_avx512",
      "_ZGVeN16v_expf",
      true,
      {ExpSimd, LogSimd, TanhSimd, SigmoidSimd, ErfSimd}};
  return impl;
}
#elif LATHE_VECMATH_WIDTH == 256
const VecMathImpl& LibmvecAvx2Impl() {
  static const VecMathImpl impl = {
      "libmvec_avx2",
      "_ZGVdN8v_expf",
      false,
      {ExpSimd, LogSimd, TanhSimd, SigmoidSimd, ErfSimd}};
  return impl;
}
#else
#error "define LATHE_VECMATH_WIDTH to 256 or 512"
#endif

}  // namespace lathe::bench
