// Scalar libm in a plain loop, and the registry of every implementation.
// Compiled without -ffast-math or `omp simd`, so GCC keeps the scalar calls
// (glibc declares no vector variants then).
#include "tools/bench/vecmath_kernels.h"

#include <math.h>

#include <cstdint>
#include <vector>

namespace lathe::bench {
namespace {

void ExpLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = expf(x[i]);
}
void LogLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = logf(x[i]);
}
void TanhLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = tanhf(x[i]);
}
void SigmoidLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
void ErfLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = erff(x[i]);
}

}  // namespace

const char* VecFnName(VecFn fn) {
  switch (fn) {
    case kExp:
      return "exp";
    case kLog:
      return "log";
    case kTanh:
      return "tanh";
    case kSigmoid:
      return "sigmoid";
    case kErf:
      return "erf";
    case kNumVecFns:
      break;
  }
  return "?";
}

const VecMathImpl& LibmImpl() {
  static const VecMathImpl impl = {
      "libm",
      "expf",
      false,
      {ExpLoop, LogLoop, TanhLoop, SigmoidLoop, ErfLoop}};
  return impl;
}

bool VecMathImplSupported(const VecMathImpl& impl) {
  if (!impl.needs_avx512) return true;
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq");
}

std::vector<const VecMathImpl*> AllVecMathImpls() {
  return {&LibmImpl(),      &LibmvecAvx2Impl(), &LibmvecAvx512Impl(),
          &SleefAvx2Impl(), &SleefAvx512Impl(), &SleefAvx512U35Impl(),
          &HwyAvx2Impl(),   &HwyAvx512Impl(),   &HwyAvx512FixedImpl()};
}

float LibmScalar(VecFn fn, float x) {
  switch (fn) {
    case kExp:
      return expf(x);
    case kLog:
      return logf(x);
    case kTanh:
      return tanhf(x);
    case kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case kErf:
      return erff(x);
    case kNumVecFns:
      break;
  }
  return NAN;
}

double DoubleReference(VecFn fn, float x) {
  const double d = x;
  switch (fn) {
    case kExp:
      return exp(d);
    case kLog:
      return log(d);
    case kTanh:
      return tanh(d);
    case kSigmoid:
      return 1.0 / (1.0 + exp(-d));
    case kErf:
      return erf(d);
    case kNumVecFns:
      break;
  }
  return NAN;
}

}  // namespace lathe::bench
