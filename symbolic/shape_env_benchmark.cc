// 1k guard queries (EvaluateExpr on relations) in a 20-symbol ShapeEnv.
//
//   bazel run --config=opt //symbolic:shape_env_benchmark
//
// Cold: a fresh ShapeEnv each iteration, so every query is decided anew (and
// records its guard). Warm: the same ShapeEnv, queries already decided (the
// version-keyed cache answers).

#include <cstdint>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {
namespace {

constexpr int kSymbols = 20;
constexpr int kQueries = 1000;

std::vector<Expr> MakeSymbols(ShapeEnv& env) {
  std::vector<Expr> s;
  for (int i = 0; i < kSymbols; ++i) {
    s.push_back(env.CreateSymbol(16 + 8 * i, Source::Size(i, 0)));
  }
  return s;
}

std::vector<Expr> MakeQueries(const std::vector<Expr>& s) {
  std::vector<Expr> q;
  for (int k = 0; q.size() < kQueries; ++k) {
    Expr a = s[k % kSymbols], b = s[(k * 7 + 3) % kSymbols],
         c = s[(k * 13 + 5) % kSymbols];
    switch (k % 4) {
      case 0:
        q.push_back(Lt(Add(a, b), Mul(Int(2 + k % 3), c)));
        break;
      case 1:
        q.push_back(Eq(Mul(a, b), Mul(c, Int(64 + k))));
        break;
      case 2:
        q.push_back(Le(*FloorDiv(a, Int(8)), Add(b, Int(k))));
        break;
      default:
        q.push_back(Ne(Add({a, b, c}), Int(100 + k)));
        break;
    }
  }
  return q;
}

void BM_GuardQueriesCold(benchmark::State& state) {
  for (auto _ : state) {
    ShapeEnv env;
    std::vector<Expr> queries = MakeQueries(MakeSymbols(env));
    for (Expr q : queries) benchmark::DoNotOptimize(env.EvaluateBool(q));
  }
  state.counters["ns_per_query"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kQueries,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GuardQueriesCold)->Unit(benchmark::kMillisecond);

void BM_GuardQueriesWarm(benchmark::State& state) {
  ShapeEnv env;
  std::vector<Expr> queries = MakeQueries(MakeSymbols(env));
  for (Expr q : queries) (void)env.EvaluateBool(q);
  for (auto _ : state) {
    for (Expr q : queries) benchmark::DoNotOptimize(env.EvaluateBool(q));
  }
  state.counters["ns_per_query"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kQueries,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GuardQueriesWarm)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lathe::symbolic
