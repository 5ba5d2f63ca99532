// -----------------------------------------------------------------------------
// File: vecmath_kernels.h
// -----------------------------------------------------------------------------
//
// f32 array kernels y[i] = f(x[i]) for exp, log, tanh, sigmoid and erf, each
// written once per vector-math library the way lathe's generated CPU kernels
// would call it. vecmath_benchmark times them and vecmath_accuracy_test
// compares them with scalar libm. Every implementation lives in its own
// translation unit, compiled with the flags lathe's generated code uses
// (-O3 -march=native, plus what that library needs):
//
//   libm            scalar expf/logf/... in a plain loop (glibc; not
//                   vectorized), in vecmath_kernels.cc with the registry
//   libmvec_avx2    glibc libmvec through `#pragma omp simd`: GCC 12 calls
//                   _ZGVdN8v_expf (8 lanes); -march=native tunes for 256 bits
//   libmvec_avx512  the same loop with -mprefer-vector-width=512:
//   _ZGVeN16v_expf sleef_avx2      Sleef_expf8_u10avx2 etc. (out of line,
//   libsleef.so) sleef_avx512    Sleef_expf16_u10avx512f etc. sleef_avx512_u35
//   the 3.5-ULP variants where Sleef has them (log, tanh) hwy_avx2 Highway
//   hwy/contrib/math on 8 lanes (CappedTag<float, 8>) hwy_avx512      Highway
//   on 16 lanes (ScalableTag<float>), as shipped hwy_avx512_fixed  the same
//   plus the special-case fixups (NaN, log of 0,
//                   negatives and +inf) Highway leaves undefined
//
// Highway 1.0.3 has no Erf; that entry is null.

#ifndef LATHE_TOOLS_BENCH_VECMATH_KERNELS_H_
#define LATHE_TOOLS_BENCH_VECMATH_KERNELS_H_

#include <cstdint>
#include <vector>

namespace lathe::bench {

enum VecFn : int { kExp = 0, kLog, kTanh, kSigmoid, kErf, kNumVecFns };

// "exp", "log", "tanh", "sigmoid", "erf".
const char* VecFnName(VecFn fn);

// y[i] = f(x[i]) for i in [0, n). x and y do not overlap; any n >= 0.
using ArrayFn = void (*)(const float* x, float* y, int64_t n);

struct VecMathImpl {
  const char* name;        // "sleef_avx512"
  const char* calls;       // what the kernel calls for exp, for reports
  bool needs_avx512;       // uses AVX-512 (F, VL, BW, DQ) instructions
  ArrayFn fn[kNumVecFns];  // nullptr where the library has no such function
};

// Whether this CPU can run `impl` (its AVX-512 needs, if any).
bool VecMathImplSupported(const VecMathImpl& impl);

// One per translation unit (see the banner).
const VecMathImpl& LibmImpl();
const VecMathImpl& LibmvecAvx2Impl();
const VecMathImpl& LibmvecAvx512Impl();
const VecMathImpl& SleefAvx2Impl();
const VecMathImpl& SleefAvx512Impl();
const VecMathImpl& SleefAvx512U35Impl();
const VecMathImpl& HwyAvx2Impl();
const VecMathImpl& HwyAvx512Impl();
const VecMathImpl& HwyAvx512FixedImpl();

// All of the above, libm first, supported or not.
std::vector<const VecMathImpl*> AllVecMathImpls();

// Scalar libm: expf, logf, tanhf, 1/(1+expf(-x)), erff.
float LibmScalar(VecFn fn, float x);

// The same function in double precision (glibc's exp, log, tanh, erf), for
// measuring each library's (and libm's own) error against a near-exact value.
double DoubleReference(VecFn fn, float x);

}  // namespace lathe::bench

#endif  // LATHE_TOOLS_BENCH_VECMATH_KERNELS_H_
