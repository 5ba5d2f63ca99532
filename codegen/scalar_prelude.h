// -----------------------------------------------------------------------------
// File: scalar_prelude.h
// -----------------------------------------------------------------------------
//
// The scalar semantics of every pointwise op, as the C++ generated kernels
// call them: lathe_op_<name>(...) for each function scalar_ops.h lists, the
// f16/bf16 storage types and their conversions (lathe_to_float,
// lathe_to_half, lathe_to_bfloat16, lathe_cast) and the random draws of
// ir/random.h. A real header: scalar_prelude_test.cc compiles it and checks
// each function against the interpreter's op on edge values; generated code
// gets its text (a genrule makes scalar_prelude_text.inc; ScalarPrelude()).
// It depends on the C++ standard library alone; under NVRTC
// (__CUDACC_RTC__) on libcu++'s, its functions are __device__, and
// scalar_prelude_nvrtc_test compiles every function for sm_80 and sm_90.
//
// Example (generated code):
//
//   float y = lathe_op_maximum(a, b);               // NaN propagates
//   int64_t q = lathe_op_floordiv<int64_t>(-7, 2);  // -4, Python's sign
//   lathe_half h = lathe_cast<lathe_half>(y);       // round to nearest even

#ifndef LATHE_CODEGEN_SCALAR_PRELUDE_H_
#define LATHE_CODEGEN_SCALAR_PRELUDE_H_

#if defined(__CUDACC_RTC__)
// NVRTC (codegen/cuda): libcu++'s headers (CUDA's include/cccl), and
// device functions.
#include <cuda/std/cmath>
#include <cuda/std/cstdint>
#include <cuda/std/cstring>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
namespace lathe_std {
using namespace cuda::std;
// libcu++'s <cmath> lacks these; CUDA's math library has them.
using ::erf;
using ::erfc;
using ::fmod;
}  // namespace lathe_std
using cuda::std::int16_t;
using cuda::std::int32_t;
using cuda::std::int64_t;
using cuda::std::int8_t;
using cuda::std::uint16_t;
using cuda::std::uint32_t;
using cuda::std::uint64_t;
using cuda::std::uint8_t;
#define LATHE_FN static __device__ __forceinline__
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
namespace lathe_std = std;
#define LATHE_FN static inline __attribute__((always_inline))
#endif

// glibc's libmvec has vector variants of these; <math.h> declares
// them only under -ffast-math, so they are declared here, and GCC
// calls them from `omp simd` loops
// (tools/bench/library_choice.md: faster than Sleef and Highway
// on this machine, within 4 ULP, the same NaN/Inf results). Generated
// code is built with -fopenmp; a build without it needs none of this.
#ifdef _OPENMP
#define LATHE_MVEC(name)                                                 \
  _Pragma("omp declare simd notinbranch") float name##f(float) noexcept; \
  _Pragma("omp declare simd notinbranch") double name(double) noexcept;
extern "C" {
LATHE_MVEC(exp)
LATHE_MVEC(exp2)
LATHE_MVEC(expm1)
LATHE_MVEC(log)
LATHE_MVEC(log2)
LATHE_MVEC(log10)
LATHE_MVEC(log1p)
LATHE_MVEC(sin)
LATHE_MVEC(cos)
LATHE_MVEC(tan)
LATHE_MVEC(asin)
LATHE_MVEC(acos)
LATHE_MVEC(atan)
LATHE_MVEC(sinh)
LATHE_MVEC(cosh)
LATHE_MVEC(tanh)
LATHE_MVEC(asinh)
LATHE_MVEC(acosh)
LATHE_MVEC(atanh)
LATHE_MVEC(erf)
LATHE_MVEC(erfc)
}
#undef LATHE_MVEC
#endif  // _OPENMP

// float16 / bfloat16 are stored as their bits and computed in
// float.
struct lathe_half {
  uint16_t bits;
};
struct lathe_bfloat16 {
  uint16_t bits;
};

LATHE_FN float lathe_bits_to_float(uint32_t u) {
  float f;
  lathe_std::memcpy(&f, &u, 4);
  return f;
}
LATHE_FN uint32_t lathe_float_to_bits(float f) {
  uint32_t u;
  lathe_std::memcpy(&u, &f, 4);
  return u;
}
LATHE_FN float lathe_to_float(lathe_bfloat16 h) {
  return lathe_bits_to_float(static_cast<uint32_t>(h.bits) << 16);
}
LATHE_FN lathe_bfloat16 lathe_to_bfloat16(float f) {
  uint32_t u = lathe_float_to_bits(f);
  if (f != f) return lathe_bfloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return lathe_bfloat16{static_cast<uint16_t>(u >> 16)};
}
LATHE_FN float lathe_to_float(lathe_half h) {
  uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1f, man = h.bits & 0x3ff;
  if (exp == 0x1f) return lathe_bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return lathe_bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
LATHE_FN lathe_half lathe_to_half(float f) {
  uint32_t u = lathe_float_to_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return lathe_half{static_cast<uint16_t>(sign | 0x7e00)};
  if (a >= 0x477ff000u) return lathe_half{static_cast<uint16_t>(sign | 0x7c00)};
  if (a < 0x38800000u) {  // subnormal or zero: round man * 2^24
    float v = lathe_bits_to_float(a) * 16777216.0f;
    return lathe_half{static_cast<uint16_t>(
        sign | static_cast<uint16_t>(lathe_std::nearbyint(v)))};
  }
  uint32_t r = a + 0x0fffu + ((a >> 13) & 1);  // round to nearest
                                               // even
  return lathe_half{static_cast<uint16_t>(sign | ((r - 0x38000000u) >> 13))};
}

// lathe_truncate_to_int<To>(v): a floating-point v as the integer type
// To, as PyTorch's CPU kernels convert (runtime/dtype.h's TruncateToInt):
// toward zero; NaN, an infinity or out of range give a 32-bit
// conversion's lowest value for types of 4 bytes or fewer (int8, uint8,
// int16 keep its low bits: 0), a 64-bit one's for int64. Defined for every
// v, so that a constant folds to what the CPU gives (GCC folds
// static_cast's undefined out-of-range conversion saturating: 1e20 ->
// INT32_MAX, -3.7 -> uint8 0, where the CPU gives INT32_MIN and 253). On a
// GPU, the device's own conversion (as PyTorch's CUDA kernels).
template <typename To, typename From>
LATHE_FN To lathe_truncate_to_int(From v) {
#if defined(__CUDA_ARCH__)
  return static_cast<To>(v);
#else
  const double d = static_cast<double>(v);
  if constexpr (sizeof(To) == 8) {
    return static_cast<To>(d >= -0x1p63 && d < 0x1p63
                               ? static_cast<int64_t>(d)
                               : lathe_std::numeric_limits<int64_t>::min());
  } else {
    return static_cast<To>(d > -0x1p31 - 1 && d < 0x1p31
                               ? static_cast<int32_t>(d)
                               : lathe_std::numeric_limits<int32_t>::min());
  }
#endif
}

// lathe_cast<To>(v): PyTorch's static_cast conversion (bool: v !=
// 0; floating point to integer: lathe_truncate_to_int).
template <typename To, typename From>
LATHE_FN To lathe_cast(From v) {
  if constexpr (lathe_std::is_same_v<From, lathe_half> ||
                lathe_std::is_same_v<From, lathe_bfloat16>) {
    return lathe_cast<To>(lathe_to_float(v));
  } else if constexpr (lathe_std::is_same_v<To, lathe_half>) {
    return lathe_to_half(static_cast<float>(v));
  } else if constexpr (lathe_std::is_same_v<To, lathe_bfloat16>) {
    return lathe_to_bfloat16(static_cast<float>(v));
  } else if constexpr (lathe_std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (lathe_std::is_integral_v<To> &&
                       lathe_std::is_floating_point_v<From>) {
    return lathe_truncate_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
constexpr bool lathe_is_int =
    lathe_std::is_integral_v<T> && !lathe_std::is_same_v<T, bool>;
template <typename T>
using lathe_wide = lathe_std::conditional_t<(sizeof(T) < 4), uint32_t,
                                            lathe_std::make_unsigned_t<T>>;

// Integer arithmetic wraps, as in PyTorch.
template <typename T>
LATHE_FN T lathe_op_add(T a, T b) {
  if constexpr (lathe_is_int<T>)
    return static_cast<T>(static_cast<lathe_wide<T>>(a) +
                          static_cast<lathe_wide<T>>(b));
  else if constexpr (lathe_std::is_same_v<T, bool>)
    return a || b;
  else
    return a + b;
}
template <typename T>
LATHE_FN T lathe_op_sub(T a, T b) {
  if constexpr (lathe_is_int<T>)
    return static_cast<T>(static_cast<lathe_wide<T>>(a) -
                          static_cast<lathe_wide<T>>(b));
  else if constexpr (lathe_std::is_same_v<T, bool>)
    return a != b;
  else
    return a - b;
}
template <typename T>
LATHE_FN T lathe_op_mul(T a, T b) {
  if constexpr (lathe_is_int<T>)
    return static_cast<T>(static_cast<lathe_wide<T>>(a) *
                          static_cast<lathe_wide<T>>(b));
  else if constexpr (lathe_std::is_same_v<T, bool>)
    return a && b;
  else
    return a * b;
}
template <typename T>
LATHE_FN T lathe_op_neg(T a) {
  if constexpr (lathe_is_int<T>)
    return static_cast<T>(lathe_wide<T>(0) - static_cast<lathe_wide<T>>(a));
  else
    return -a;
}
template <typename T>
LATHE_FN T lathe_op_abs(T a) {
  if constexpr (lathe_is_int<T>)
    return a < 0 ? lathe_op_neg(a) : a;
  else if constexpr (lathe_std::is_same_v<T, bool>)
    return a;
  else
    return lathe_std::fabs(a);
}
template <typename T>
LATHE_FN T lathe_op_relu(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return (a != a) ? a : (a > T(0) ? a : T(0));
  else
    return a > T(0) ? a : T(0);
}
template <typename T>
LATHE_FN T lathe_op_floor(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::floor(a);
  else
    return a;
}
template <typename T>
LATHE_FN T lathe_op_ceil(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::ceil(a);
  else
    return a;
}
template <typename T>
LATHE_FN T lathe_op_trunc(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::trunc(a);
  else
    return a;
}
template <typename T>
LATHE_FN T lathe_op_round(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::nearbyint(a);
  else
    return a;
}
template <typename T>
LATHE_FN T lathe_op_sign(T a) {
  return static_cast<T>((T(0) < a) - (a < T(0)));
}
template <typename T>
LATHE_FN T lathe_op_square(T a) {
  return lathe_op_mul(a, a);
}
template <typename T>
LATHE_FN T lathe_op_bitwise_not(T a) {
  if constexpr (lathe_std::is_same_v<T, bool>)
    return !a;
  else
    return static_cast<T>(~a);
}
template <typename T>
LATHE_FN bool lathe_op_logical_not(T a) {
  return !(a != T(0));
}
template <typename T>
LATHE_FN bool lathe_op_isnan(T a) {
  return a != a;
}
template <typename T>
LATHE_FN bool lathe_op_isinf(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::isinf(a);
  else
    return false;
}
template <typename T>
LATHE_FN bool lathe_op_isfinite(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::isfinite(a);
  else
    return true;
}
template <typename T>
LATHE_FN bool lathe_op_signbit(T a) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::signbit(a);
  else
    return a < T(0);
}

// Floating-only functions (lowering casts integer operands
// first).
template <typename T>
LATHE_FN T lathe_op_exp(T a) {
  return lathe_std::exp(a);
}
template <typename T>
LATHE_FN T lathe_op_exp2(T a) {
  return lathe_std::exp2(a);
}
template <typename T>
LATHE_FN T lathe_op_expm1(T a) {
  return lathe_std::expm1(a);
}
template <typename T>
LATHE_FN T lathe_op_log(T a) {
  return lathe_std::log(a);
}
template <typename T>
LATHE_FN T lathe_op_log2(T a) {
  return lathe_std::log2(a);
}
template <typename T>
LATHE_FN T lathe_op_log10(T a) {
  return lathe_std::log10(a);
}
template <typename T>
LATHE_FN T lathe_op_log1p(T a) {
  return lathe_std::log1p(a);
}
// log(exp(x) + exp(y)) without overflow, as PyTorch's
// _log_add_exp_helper: NaN propagates (std::min/max's argument
// order), and two equal infinities give x.
template <typename T>
LATHE_FN T lathe_log_add_exp(T x, T y) {
  const T lo = y != y ? y : (y < x ? y : x);
  const T hi = y != y ? y : (x < y ? y : x);
  if (lo != hi || lathe_std::isfinite(lo)) {
    return lathe_std::log1p(lathe_std::exp(lo - hi)) + hi;
  }
  return x;
}
template <typename T>
LATHE_FN T lathe_op_sqrt(T a) {
  return lathe_std::sqrt(a);
}
template <typename T>
LATHE_FN T lathe_op_rsqrt(T a) {
  return T(1) / lathe_std::sqrt(a);
}
template <typename T>
LATHE_FN T lathe_op_reciprocal(T a) {
  return T(1) / a;
}
template <typename T>
LATHE_FN T lathe_op_sin(T a) {
  return lathe_std::sin(a);
}
template <typename T>
LATHE_FN T lathe_op_cos(T a) {
  return lathe_std::cos(a);
}
template <typename T>
LATHE_FN T lathe_op_tan(T a) {
  return lathe_std::tan(a);
}
template <typename T>
LATHE_FN T lathe_op_asin(T a) {
  return lathe_std::asin(a);
}
template <typename T>
LATHE_FN T lathe_op_acos(T a) {
  return lathe_std::acos(a);
}
template <typename T>
LATHE_FN T lathe_op_atan(T a) {
  return lathe_std::atan(a);
}
template <typename T>
LATHE_FN T lathe_op_sinh(T a) {
  return lathe_std::sinh(a);
}
template <typename T>
LATHE_FN T lathe_op_cosh(T a) {
  return lathe_std::cosh(a);
}
template <typename T>
LATHE_FN T lathe_op_tanh(T a) {
  return lathe_std::tanh(a);
}
template <typename T>
LATHE_FN T lathe_op_asinh(T a) {
  return lathe_std::asinh(a);
}
template <typename T>
LATHE_FN T lathe_op_acosh(T a) {
  return lathe_std::acosh(a);
}
template <typename T>
LATHE_FN T lathe_op_atanh(T a) {
  return lathe_std::atanh(a);
}
template <typename T>
LATHE_FN T lathe_op_erf(T a) {
  return lathe_std::erf(a);
}
template <typename T>
LATHE_FN T lathe_op_erfc(T a) {
  return lathe_std::erfc(a);
}
template <typename T>
LATHE_FN T lathe_op_sigmoid(T a) {
  return T(1) / (T(1) + lathe_std::exp(-a));
}
template <typename T>
LATHE_FN T lathe_op_silu(T a) {
  return a / (T(1) + lathe_std::exp(-a));
}
template <typename T>
LATHE_FN T lathe_op_frac(T a) {
  return a - lathe_std::trunc(a);
}
template <typename T>
LATHE_FN T lathe_op_lgamma(T a) {
  return lathe_std::lgamma(a);
}

template <typename T>
LATHE_FN T lathe_op_truediv(T a, T b) {
  return a / b;
}
// Python's floor division. Integer division by zero gives 0 here
// (the reference kernel refuses it; a kernel cannot).
template <typename T>
LATHE_FN T lathe_op_floordiv(T a, T b) {
  if constexpr (lathe_std::is_same_v<T, bool>) {
    return b ? a : false;
  } else if constexpr (lathe_is_int<T>) {
    if (b == 0) return 0;
    if (b == T(-1)) return lathe_op_neg(a);
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    if (b == 0) return a / b;
    T mod = lathe_std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    T fl = lathe_std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return div != 0 ? fl : lathe_std::copysign(T(0), a / b);
  }
}
template <typename T>
LATHE_FN T lathe_op_truncdiv(T a, T b) {
  if constexpr (lathe_std::is_same_v<T, bool>) {
    return b ? a : false;
  } else if constexpr (lathe_is_int<T>) {
    if (b == 0) return 0;
    if (b == T(-1)) return lathe_op_neg(a);
    return static_cast<T>(a / b);
  } else {
    return lathe_std::trunc(a / b);
  }
}
template <typename T>
LATHE_FN T lathe_op_fmod(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return lathe_std::fmod(a, b);
  else if constexpr (lathe_std::is_same_v<T, bool>)
    return false;
  else
    return (b == 0 || b == T(-1)) ? T(0) : static_cast<T>(a % b);
}
template <typename T>
LATHE_FN T lathe_op_remainder(T a, T b) {
  T m = lathe_op_fmod(a, b);
  if constexpr (!lathe_std::is_same_v<T, bool>) {
    if (m != 0 && ((b < 0) != (m < 0))) m = static_cast<T>(m + b);
  }
  return m;
}
template <typename T>
LATHE_FN T lathe_op_pow(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>) {
    return lathe_std::pow(a, b);
  } else if constexpr (lathe_std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if (b < 0)
      return a == 1 ? T(1) : a == T(-1) ? ((b % 2 == 0) ? T(1) : T(-1)) : T(0);
    lathe_wide<T> r = 1, base = static_cast<lathe_wide<T>>(a);
    for (T e = b; e > 0; e >>= 1) {
      if (e & 1) r *= base;
      base *= base;
    }
    return static_cast<T>(r);
  }
}
template <typename T>
LATHE_FN T lathe_op_maximum(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return (a != a || a > b) ? a : b;
  else
    return a > b ? a : b;
}
template <typename T>
LATHE_FN T lathe_op_minimum(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return (a != a || a < b) ? a : b;
  else
    return a < b ? a : b;
}
template <typename T>
LATHE_FN T lathe_op_fmax(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return (b != b || a > b) ? a : b;
  else
    return a > b ? a : b;
}
template <typename T>
LATHE_FN T lathe_op_fmin(T a, T b) {
  if constexpr (lathe_std::is_floating_point_v<T>)
    return (b != b || a < b) ? a : b;
  else
    return a < b ? a : b;
}
template <typename T>
LATHE_FN T lathe_op_atan2(T a, T b) {
  return lathe_std::atan2(a, b);
}
template <typename T>
LATHE_FN T lathe_op_hypot(T a, T b) {
  return lathe_std::hypot(a, b);
}
template <typename T>
LATHE_FN T lathe_op_copysign(T a, T b) {
  return lathe_std::copysign(a, b);
}
template <typename T>
LATHE_FN bool lathe_op_eq(T a, T b) {
  return a == b;
}
template <typename T>
LATHE_FN bool lathe_op_ne(T a, T b) {
  return a != b;
}
template <typename T>
LATHE_FN bool lathe_op_lt(T a, T b) {
  return a < b;
}
template <typename T>
LATHE_FN bool lathe_op_le(T a, T b) {
  return a <= b;
}
template <typename T>
LATHE_FN bool lathe_op_gt(T a, T b) {
  return a > b;
}
template <typename T>
LATHE_FN bool lathe_op_ge(T a, T b) {
  return a >= b;
}
template <typename T>
LATHE_FN bool lathe_op_logical_and(T a, T b) {
  return (a != T(0)) && (b != T(0));
}
template <typename T>
LATHE_FN bool lathe_op_logical_or(T a, T b) {
  return (a != T(0)) || (b != T(0));
}
template <typename T>
LATHE_FN bool lathe_op_logical_xor(T a, T b) {
  return (a != T(0)) != (b != T(0));
}
template <typename T>
LATHE_FN T lathe_op_bitwise_and(T a, T b) {
  return static_cast<T>(a & b);
}
template <typename T>
LATHE_FN T lathe_op_bitwise_or(T a, T b) {
  return static_cast<T>(a | b);
}
template <typename T>
LATHE_FN T lathe_op_bitwise_xor(T a, T b) {
  return static_cast<T>(a ^ b);
}
// Shifts in the operands' width: by a negative amount or by the
// width or more, 0 (left) or the sign fill (right).
template <typename T>
LATHE_FN T lathe_op_lshift(T a, T b) {
  constexpr int64_t bits = sizeof(T) * 8;
  if (b < 0 || static_cast<int64_t>(b) >= bits) return T(0);
  return static_cast<T>(static_cast<lathe_wide<T>>(a) << b);
}
template <typename T>
LATHE_FN T lathe_op_rshift(T a, T b) {
  constexpr int64_t max_shift =
      sizeof(T) * 8 - (lathe_std::is_signed_v<T> ? 1 : 0);
  if (b < 0 || static_cast<int64_t>(b) >= max_shift)
    return static_cast<T>(a >> max_shift);
  return static_cast<T>(a >> b);
}
// A bool element, read as its byte: GCC 12 vectorizes no loop that loads
// bool and float elements together ("no vectype for stmt"); a byte
// compared with 0 it does (and a byte other than 0 or 1 is true, not
// undefined).
LATHE_FN bool lathe_load_bool(const bool* p) {
  return *reinterpret_cast<const unsigned char*>(p) != 0;
}
template <typename T>
LATHE_FN T lathe_op_where(bool c, T a, T b) {
  return c ? a : b;
}
// Random draws: ir/random.h's counter-based generator, so
// the numbers are the interpreter's. Draw `counter` of stream
// `seed` is SplitMix64's output for state seed + (counter +
// 1) * golden gamma.
LATHE_FN uint64_t lathe_rng_bits(int64_t seed, int64_t counter) {
  uint64_t z = static_cast<uint64_t>(seed) +
               (static_cast<uint64_t>(counter) + 1) * 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
// The draw as a multiple of 2^-bits in [0, 1).
LATHE_FN double lathe_op_rand(int64_t seed, int64_t counter, int64_t bits) {
  return static_cast<double>(lathe_rng_bits(seed, counter) >> (64 - bits)) /
         static_cast<double>(uint64_t{1} << bits);
}
// A standard normal (Box-Muller) from draws counter and
// counter + 1, in double.
LATHE_FN double lathe_op_randn(int64_t seed, int64_t counter) {
  const double u1 = 1.0 - lathe_op_rand(seed, counter, 53);
  const double u2 = lathe_op_rand(seed, counter + 1, 53);
  return lathe_std::sqrt(-2.0 * lathe_std::log(u1)) *
         lathe_std::cos(6.283185307179586 * u2);
}
// Welford's mean and M2 (the sum of squared deviations from the mean) of
// n values, in double (var and the norms in one pass), and Chan's merge of
// two (the kernels sum blocks of values first: cpp_emitter.cc's blocks,
// the cuda kernel prelude's lathe_welford_run).
struct lathe_welford {
  double mean;
  double m2;
  int64_t n;
};
LATHE_FN lathe_welford lathe_welford_merge(lathe_welford a, lathe_welford b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const int64_t n = a.n + b.n;
  const double d = b.mean - a.mean;
  const double wb = static_cast<double>(b.n) / static_cast<double>(n);
  // An infinite mean (an infinity among the values) stays the sum's: inf,
  // or NaN for both signs, as sum / n is (d would make it NaN).
  const double mean = lathe_std::isinf(a.mean) || lathe_std::isinf(b.mean)
                          ? a.mean * (1 - wb) + b.mean * wb
                          : a.mean + d * wb;
  return {mean, a.m2 + b.m2 + d * d * static_cast<double>(a.n) * wb, n};
}

#endif  // LATHE_CODEGEN_SCALAR_PRELUDE_H_
