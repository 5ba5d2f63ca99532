// The arithmetic ceilings of this CPU's vector units, as BM_StreamTriad is
// the memory's: independent chains of 512-bit f32 FMAs (vfmadd231ps, 32
// flops each), of 256-bit ones (AVX2's, 16 flops each) and of bf16 dot
// products (vdpbf16ps, 64 flops each: 16 lanes of two bf16 products and
// their sum), on 1 and 2 OpenMP threads, with no loads or stores. 12
// accumulators per thread cover the units' latency. A product's GFLOP/s (the
// model rows' `flops` counter) is bounded by these; a row's time is bounded
// below by its flops over them (the bf16 BERT layer: 14.9 GFLOP).
//
//   bazel run -c opt //tools/bench:peak_benchmark
//
// A CPU without AVX-512 (or without AVX512-BF16, for the bf16 row; without
// FMA, for the 256-bit row) skips the row.

#include <omp.h>

#include <cstdint>

#include "benchmark/benchmark.h"

namespace {

constexpr int64_t kIterations = 1 << 22;  // of 12 instructions, per thread

// The 12 accumulators zmm1..zmm12, each updated from zmm0 by `insn`.
#define LATHE_TWELVE(insn)                                                    \
  insn " %%zmm0, %%zmm0, %%zmm1\n\t" insn " %%zmm0, %%zmm0, %%zmm2\n\t" insn  \
       " %%zmm0, %%zmm0, %%zmm3\n\t" insn " %%zmm0, %%zmm0, %%zmm4\n\t" insn  \
       " %%zmm0, %%zmm0, %%zmm5\n\t" insn " %%zmm0, %%zmm0, %%zmm6\n\t" insn  \
       " %%zmm0, %%zmm0, %%zmm7\n\t" insn " %%zmm0, %%zmm0, %%zmm8\n\t" insn  \
       " %%zmm0, %%zmm0, %%zmm9\n\t" insn " %%zmm0, %%zmm0, %%zmm10\n\t" insn \
       " %%zmm0, %%zmm0, %%zmm11\n\t" insn " %%zmm0, %%zmm0, %%zmm12\n\t"
// The same on ymm1..ymm12 (256-bit, AVX2).
#define LATHE_TWELVE_Y(insn)                                                  \
  insn " %%ymm0, %%ymm0, %%ymm1\n\t" insn " %%ymm0, %%ymm0, %%ymm2\n\t" insn  \
       " %%ymm0, %%ymm0, %%ymm3\n\t" insn " %%ymm0, %%ymm0, %%ymm4\n\t" insn  \
       " %%ymm0, %%ymm0, %%ymm5\n\t" insn " %%ymm0, %%ymm0, %%ymm6\n\t" insn  \
       " %%ymm0, %%ymm0, %%ymm7\n\t" insn " %%ymm0, %%ymm0, %%ymm8\n\t" insn  \
       " %%ymm0, %%ymm0, %%ymm9\n\t" insn " %%ymm0, %%ymm0, %%ymm10\n\t" insn \
       " %%ymm0, %%ymm0, %%ymm11\n\t" insn " %%ymm0, %%ymm0, %%ymm12\n\t"
#define LATHE_CLOBBERS                                                    \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
      "xmm9", "xmm10", "xmm11", "xmm12"

// Which chain a row runs.
enum class Chain { kF32Fma512, kF32Fma256, kBf16Dot };

// Runs 12 * kIterations of `chain`'s instruction on each of `threads`
// threads, its register 0 holding 1.0s and the accumulators starting at 0
// (no lane is ever subnormal, which some cores take a microcode assist on).
void Chains(int threads, Chain chain) {
#pragma omp parallel num_threads(threads)
  {
    const uint32_t ones = chain == Chain::kBf16Dot ? 0x3f803f80u : 0x3f800000u;
    if (chain == Chain::kF32Fma256) {
      __asm__ volatile(
          "vmovd %0, %%xmm0\n\tvbroadcastss %%xmm0, %%ymm0\n\t" LATHE_TWELVE_Y(
              "vpxor")::"r"(ones)
          : LATHE_CLOBBERS);
      for (int64_t n = 0; n < kIterations; ++n) {
        __asm__ volatile(LATHE_TWELVE_Y("vfmadd231ps")::: LATHE_CLOBBERS);
      }
    } else {
      __asm__ volatile(
          "vpbroadcastd %0, %%zmm0\n\t" LATHE_TWELVE("vpxord")::"r"(ones)
          : LATHE_CLOBBERS);
      for (int64_t n = 0; n < kIterations; ++n) {
        if (chain == Chain::kBf16Dot) {
          __asm__ volatile(LATHE_TWELVE("vdpbf16ps")::: LATHE_CLOBBERS);
        } else {
          __asm__ volatile(LATHE_TWELVE("vfmadd231ps")::: LATHE_CLOBBERS);
        }
      }
    }
  }
}

// The chains' rate in flops: 64 per bf16 dot product (16 lanes of two
// products and their sum), 32 per 512-bit f32 FMA, 16 per 256-bit one.
void BM_Peak(benchmark::State& state, Chain chain) {
  const char* missing = nullptr;
  int flops = 0;
  switch (chain) {
    case Chain::kF32Fma512:
      if (!__builtin_cpu_supports("avx512f")) {
        missing = "no AVX-512 on this CPU";
      }
      flops = 32;
      break;
    case Chain::kF32Fma256:
      if (!__builtin_cpu_supports("fma")) {
        missing = "no FMA on this CPU";
      }
      flops = 16;
      break;
    case Chain::kBf16Dot:
      if (!__builtin_cpu_supports("avx512bf16")) {
        missing = "no AVX512-BF16 on this CPU";
      }
      flops = 64;
      break;
  }
  if (missing != nullptr) {
    state.SkipWithError(missing);
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) Chains(threads, chain);
  state.counters["flops"] =
      benchmark::Counter(static_cast<double>(kIterations) * 12 * flops *
                             threads * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Peak, F32Fma, Chain::kF32Fma512)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Peak, F32Fma256, Chain::kF32Fma256)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Peak, Bf16Dot, Chain::kBf16Dot)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();

}  // namespace
