// Proves @com_github_google_benchmark is wired: a benchmark binary that runs.
// benchmark_smoke_test runs it and checks its report.
#include "benchmark/benchmark.h"

#include <numeric>
#include <vector>

namespace {

void BM_SmokeSum(benchmark::State& state) {
  std::vector<float> v(state.range(0), 1.0f);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0f));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * sizeof(float));
}
BENCHMARK(BM_SmokeSum)->Arg(1024);

}  // namespace
