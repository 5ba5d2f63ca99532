#!/bin/bash
# What each candidate library adds to the compile of one generated kernel
# file: times `g++ -O3 -march=native -c` (and lathe's full kernel flags,
# -fopenmp -fPIC added) on a ~20-line translation unit that uses the library
# the way generated code would, REPS times each, and prints min and median
# wall seconds. Needs the Debian packages (libsleef-dev, libhwy-dev,
# libeigen3-dev, libopenblas-dev, libdnnl-dev); no Bazel.
#
#   tools/bench/compile_time.sh [REPS]   (default 5)
set -euo pipefail

reps="${1:-5}"
cxx="${CXX:-g++}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# Every unit computes y = f(x) over an array; GEMM units call one GEMM.
cat >"$dir/baseline.cc" <<'EOF'
#include <stdint.h>
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
EOF

cat >"$dir/libm_scalar.cc" <<'EOF'
#include <math.h>
#include <stdint.h>
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
EOF

cat >"$dir/libmvec.cc" <<'EOF'
#include <math.h>
#include <stdint.h>
extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
}
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
EOF

# libmvec without <math.h>: in C++, g++ 12's <math.h> pulls in all of <cmath>
# (~0.08 s); generated code can declare the one function it calls instead.
cat >"$dir/libmvec_decl.cc" <<'EOF'
#include <stdint.h>
extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
}
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
EOF

# <immintrin.h> on its own: what any intrinsics-based kernel pays.
cat >"$dir/intrinsics.cc" <<'EOF'
#include <immintrin.h>
#include <stdint.h>
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, _mm512_max_ps(zero, _mm512_loadu_ps(x + i)));
  }
}
EOF

cat >"$dir/sleef.cc" <<'EOF'
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    __m512 e = Sleef_expf16_u10avx512f(
        _mm512_sub_ps(_mm512_setzero_ps(), _mm512_loadu_ps(x + i)));
    _mm512_storeu_ps(y + i, _mm512_div_ps(one, _mm512_add_ps(one, e)));
  }
}
EOF

# Sleef without <sleef.h> (which includes all of <x86intrin.h>): the one
# declaration, with GCC's vector extension type (same ABI as __m512).
cat >"$dir/sleef_decl.cc" <<'EOF'
#include <stdint.h>
typedef float v16sf __attribute__((vector_size(64)));
typedef float v16sf_u __attribute__((vector_size(64), aligned(4)));
extern "C" v16sf Sleef_expf16_u10avx512f(v16sf);
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const v16sf e = Sleef_expf16_u10avx512f(-*(const v16sf_u*)(x + i));
    *(v16sf_u*)(y + i) = 1.0f / (1.0f + e);
  }
}
EOF

cat >"$dir/hwy.cc" <<'EOF'
#define HWY_COMPILE_ONLY_STATIC 1
#include <stdint.h>
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
namespace hn = hwy::HWY_NAMESPACE;
extern "C" void kernel(const float* __restrict x, float* __restrict y,
                       int64_t n) {
  const hn::ScalableTag<float> d;
  const auto one = hn::Set(d, 1.0f);
  for (int64_t i = 0; i + (int64_t)hn::Lanes(d) <= n; i += hn::Lanes(d)) {
    auto e = hn::Exp(d, hn::Neg(hn::LoadU(d, x + i)));
    hn::StoreU(hn::Div(one, hn::Add(one, e)), d, y + i);
  }
}
EOF

cat >"$dir/eigen_gemm.cc" <<'EOF'
#include <stdint.h>
#include <Eigen/Core>
using RowMajor =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
extern "C" void kernel(const float* a, const float* b, float* c, int64_t m,
                       int64_t k, int64_t n) {
  Eigen::Map<const RowMajor> ma(a, m, k), mb(b, k, n);
  Eigen::Map<RowMajor> mc(c, m, n);
  mc.noalias() = ma * mb;
}
EOF

cat >"$dir/cblas_gemm.cc" <<'EOF'
#include <stdint.h>
#include <cblas.h>
extern "C" void kernel(const float* a, const float* b, float* c, int64_t m,
                       int64_t k, int64_t n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k,
              b, n, 0.0f, c, n);
}
EOF

cat >"$dir/dnnl_sgemm.cc" <<'EOF'
#include <stdint.h>
#include <dnnl.h>
extern "C" int kernel(const float* a, const float* b, float* c, int64_t m,
                      int64_t k, int64_t n) {
  return dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
EOF

extra_flags() {
  case "$1" in
    libmvec | libmvec_decl) echo "-fopenmp-simd -mprefer-vector-width=512" ;;
    *) echo "" ;;
  esac
}

# median and min of the numbers on stdin
stats() {
  sort -g | awk '{a[NR] = $1} END {printf "%8.3f %8.3f", a[1], a[int((NR + 1) / 2)]}'
}

time_one() {  # unit flags...
  local unit="$1"
  shift
  for _ in $(seq "$reps"); do
    local start end
    start=$(date +%s.%N)
    "$cxx" "$@" -c "$dir/$unit.cc" -o "$dir/$unit.o"
    end=$(date +%s.%N)
    echo "$end - $start" | bc
  done | stats
}

printf "%-12s %17s   %17s\n" "" "-O3 -march=native" "+ -fopenmp -fPIC"
printf "%-12s %8s %8s   %8s %8s\n" "unit" "min" "median" "min" "median"
for unit in baseline libm_scalar libmvec libmvec_decl intrinsics sleef sleef_decl \
  hwy eigen_gemm cblas_gemm dnnl_sgemm; do
  # shellcheck disable=SC2046
  plain=$(time_one "$unit" -O3 -march=native -I/usr/include/eigen3 \
    $(extra_flags "$unit"))
  # shellcheck disable=SC2046
  full=$(time_one "$unit" -O3 -march=native -fopenmp -fPIC \
    -I/usr/include/eigen3 $(extra_flags "$unit"))
  printf "%-12s %s   %s\n" "$unit" "$plain" "$full"
done
