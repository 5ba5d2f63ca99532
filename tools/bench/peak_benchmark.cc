// The arithmetic ceilings of this CPU's vector units, as BM_StreamTriad is
// the memory's: independent chains of 512-bit f32 FMAs (vfmadd231ps, 32
// flops each) and of bf16 dot products (vdpbf16ps, 64 flops each: 16 lanes
// of two bf16 products and their sum), on 1 and 2 OpenMP threads, with no
// loads or stores. 12 accumulators per thread cover the units' latency.
// A product's GFLOP/s (the model rows' `flops` counter) is bounded by these;
// a row's time is bounded below by its flops over them (the bf16 BERT layer:
// 14.9 GFLOP).
//
//   bazel run -c opt //tools/bench:peak_benchmark
//
// A CPU without AVX-512 (or without AVX512-BF16, for the bf16 row) skips
// the row.

#include <omp.h>

#include <cstdint>

#include "benchmark/benchmark.h"

namespace {

constexpr int64_t kIterations = 1 << 22;  // of 12 instructions, per thread

// Runs 12 * kIterations f32 FMAs on each of `threads` threads.
void FmaChains(int threads) {
#pragma omp parallel num_threads(threads)
  {
    for (int64_t n = 0; n < kIterations; ++n) {
      __asm__ volatile(
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm1\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm2\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm3\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm4\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm5\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm6\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm7\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm8\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm9\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm10\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm11\n\t"
          "vfmadd231ps %%zmm0, %%zmm0, %%zmm12\n\t" ::
              : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                "xmm8", "xmm9", "xmm10", "xmm11", "xmm12");
    }
  }
}

// Runs 12 * kIterations bf16 dot products on each of `threads` threads.
void Bf16DotChains(int threads) {
#pragma omp parallel num_threads(threads)
  {
    for (int64_t n = 0; n < kIterations; ++n) {
      __asm__ volatile(
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm1\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm2\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm3\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm4\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm5\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm6\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm7\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm8\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm9\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm10\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm11\n\t"
          "vdpbf16ps %%zmm0, %%zmm0, %%zmm12\n\t" ::
              : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                "xmm8", "xmm9", "xmm10", "xmm11", "xmm12");
    }
  }
}

void BM_F32FmaPeak(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) FmaChains(threads);
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(kIterations) * 12 * 32 * threads *
          static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_F32FmaPeak)->Arg(1)->Arg(2)->UseRealTime();

void BM_Bf16DotPeak(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512bf16")) {
    state.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) Bf16DotChains(threads);
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(kIterations) * 12 * 64 * threads *
          static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Bf16DotPeak)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
