// f32 exp, log, tanh, sigmoid and erf over an array, y[i] = f(x[i]), through
// every implementation in vecmath_kernels.h (scalar libm, glibc libmvec,
// Sleef, Highway), at 16 Mi elements (64 MiB in + 64 MiB out: streams from
// memory) and 16 Ki elements (64 KiB in + out: stays in L2). One thread.
//
// Inputs: uniform in [-10, 10] (exp, tanh, sigmoid, erf: where activations
// live; exp stays finite), and exp(uniform[-10, 10]) for log.
//
//   bazel run -c opt //tools/bench:vecmath_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "tools/bench/vecmath_kernels.h"

namespace lathe::bench {
namespace {

// Repetitions' best: min of times, max of rates (the "max" row's
// GFLOPS / items_per_second go with the "min" row's time).
double MinOf(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}
double MaxOf(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

constexpr int64_t kSmall = int64_t{16} << 10;  // 16 Ki
constexpr int64_t kLarge = int64_t{16} << 20;  // 16 Mi

// Inputs per (function, size), made once and shared by every library.
const std::vector<float>& Inputs(VecFn fn, int64_t n) {
  static auto* cache = new std::map<std::pair<int, int64_t>,
                                    std::unique_ptr<std::vector<float>>>;
  auto& slot = (*cache)[{fn, n}];
  if (slot == nullptr) {
    slot = std::make_unique<std::vector<float>>(n);
    std::mt19937 rng(1234 + fn);
    std::uniform_real_distribution<float> u(-10.0f, 10.0f);
    for (float& v : *slot) v = fn == kLog ? std::exp(u(rng)) : u(rng);
  }
  return *slot;
}

void BM_VecMath(benchmark::State& state, VecFn fn, ArrayFn array_fn) {
  const int64_t n = state.range(0);
  const std::vector<float>& x = Inputs(fn, n);
  std::vector<float> y(n, 0.0f);  // touched before timing
  for (auto _ : state) {
    array_fn(x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * 2 * sizeof(float));
}

// BM_<fn>/<impl>/<n>, e.g. BM_exp/sleef_avx512/16777216.
int RegisterAll() {
  for (int f = 0; f < kNumVecFns; ++f) {
    const VecFn fn = static_cast<VecFn>(f);
    for (const VecMathImpl* impl : AllVecMathImpls()) {
      if (impl->fn[f] == nullptr || !VecMathImplSupported(*impl)) continue;
      const std::string name =
          std::string("BM_") + VecFnName(fn) + "/" + impl->name;
      benchmark::RegisterBenchmark(name.c_str(), BM_VecMath, fn, impl->fn[f])
          ->Arg(kSmall)
          ->Arg(kLarge)
          ->Unit(benchmark::kMicrosecond)
          ->ComputeStatistics("min", MinOf)
          ->ComputeStatistics("max", MaxOf);
    }
  }
  return 0;
}
const int kRegistered = RegisterAll();

}  // namespace
}  // namespace lathe::bench
