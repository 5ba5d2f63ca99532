// Sleef 3.5 (libsleef.so): explicit calls per ISA, as generated code would
// make them. Sleef_<fn>f16_u10avx512f takes and returns __m512 (16 floats),
// Sleef_<fn>f8_u10avx2 __m256 (8 floats). The unsuffixed Sleef_expf16_u10 is
// an alias of the avx512f one; Sleef_expf8_u10 is a CPU dispatcher.
// Tails use AVX-512 masked loads and stores (AVX-512VL for the 8-lane ones).
#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

#include "tools/bench/vecmath_kernels.h"

namespace lathe::bench {
namespace {

template <__m512 (*F)(__m512)>
void Apply16(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <__m256 (*F)(__m256)>
void Apply8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1);
    _mm256_mask_storeu_ps(y + i, m, F(_mm256_maskz_loadu_ps(m, x + i)));
  }
}

// Plain wrappers: Sleef's declarations carry __attribute__((const)), which a
// template argument cannot.
#define LATHE_SLEEF_WRAP(name, fn, vec) \
  vec name(vec x) { return fn(x); }
LATHE_SLEEF_WRAP(Exp16, Sleef_expf16_u10avx512f, __m512)
LATHE_SLEEF_WRAP(Log16, Sleef_logf16_u10avx512f, __m512)
LATHE_SLEEF_WRAP(Tanh16, Sleef_tanhf16_u10avx512f, __m512)
LATHE_SLEEF_WRAP(Erf16, Sleef_erff16_u10avx512f, __m512)
LATHE_SLEEF_WRAP(Log16U35, Sleef_logf16_u35avx512f, __m512)
LATHE_SLEEF_WRAP(Tanh16U35, Sleef_tanhf16_u35avx512f, __m512)
LATHE_SLEEF_WRAP(Exp8, Sleef_expf8_u10avx2, __m256)
LATHE_SLEEF_WRAP(Log8, Sleef_logf8_u10avx2, __m256)
LATHE_SLEEF_WRAP(Tanh8, Sleef_tanhf8_u10avx2, __m256)
LATHE_SLEEF_WRAP(Erf8, Sleef_erff8_u10avx2, __m256)
#undef LATHE_SLEEF_WRAP

// 1 / (1 + exp(-x)) with the library's exp.
__m512 Sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e =
      Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(one, _mm512_add_ps(one, e));
}
__m256 Sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

}  // namespace

const VecMathImpl& SleefAvx512Impl() {
  static const VecMathImpl impl = {
      "sleef_avx512",
      "Sleef_expf16_u10avx512f",
      true,
      {Apply16<Exp16>, Apply16<Log16>, Apply16<Tanh16>, Apply16<Sigmoid16>,
       Apply16<Erf16>}};
  return impl;
}

const VecMathImpl& SleefAvx512U35Impl() {
  static const VecMathImpl impl = {
      "sleef_avx512_u35",
      "Sleef_logf16_u35avx512f",
      true,
      {nullptr, Apply16<Log16U35>, Apply16<Tanh16U35>, nullptr, nullptr}};
  return impl;
}

const VecMathImpl& SleefAvx2Impl() {
  static const VecMathImpl impl = {"sleef_avx2",
                                   "Sleef_expf8_u10avx2",
                                   true,  // AVX-512VL masked tails
                                   {Apply8<Exp8>, Apply8<Log8>, Apply8<Tanh8>,
                                    Apply8<Sigmoid8>, Apply8<Erf8>}};
  return impl;
}

}  // namespace lathe::bench
