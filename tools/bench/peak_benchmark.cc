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

// Sets zmm0 to 16 lanes of `bits` and the 12 accumulators to 0, so that
// no lane holds a subnormal (which some cores take a microcode assist on).
void InitRegisters(uint32_t bits) {
  __asm__ volatile(
      "vpbroadcastd %0, %%zmm0\n\t"
      "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
      "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
      "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
      "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
      "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
      "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
      "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
      "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
      "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
      "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
      "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
      "vpxord %%zmm12, %%zmm12, %%zmm12\n\t" ::"r"(bits)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9", "xmm10", "xmm11", "xmm12");
}

// Runs 12 * kIterations f32 FMAs on each of `threads` threads.
void FmaChains(int threads) {
#pragma omp parallel num_threads(threads)
  {
    InitRegisters(0x3f800000u);  // 1.0f
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
              : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                "xmm9", "xmm10", "xmm11", "xmm12");
    }
  }
}

// Runs 12 * kIterations bf16 dot products on each of `threads` threads.
void Bf16DotChains(int threads) {
#pragma omp parallel num_threads(threads)
  {
    InitRegisters(0x3f803f80u);  // two bf16 1.0s
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
              : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                "xmm9", "xmm10", "xmm11", "xmm12");
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
  state.counters["flops"] =
      benchmark::Counter(static_cast<double>(kIterations) * 12 * 32 * threads *
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
  state.counters["flops"] =
      benchmark::Counter(static_cast<double>(kIterations) * 12 * 64 * threads *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Bf16DotPeak)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
