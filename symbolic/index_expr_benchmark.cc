// Builds and simplifies the index expressions a permuted and reshaped 4-d
// tensor produces: a contiguous [A, B, C, D] tensor permuted to [A, C, B, D]
// and reshaped to [A*C, B*D]; the storage offset of output element x is a
// chain of FloorDiv/ModularIndexing terms, simplified with x's range.
//
//   bazel run --config=opt //symbolic:index_expr_benchmark
//
// Cold: every iteration uses sizes never seen before, so every node is new.
// Warm: the same 10k expressions each iteration (interning hits).

#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "symbolic/expr.h"
#include "symbolic/simplify.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {
namespace {

constexpr int kExprs = 10000;

// The simplified offset of element x for sizes (a, b, c, d).
Expr IndexExpr(Expr x, int64_t a, int64_t b, int64_t c, int64_t d) {
  Expr d3 = *ModularIndexing(x, Int(1), Int(d));
  Expr d2 = *ModularIndexing(x, Int(d), Int(b));
  Expr d1 = *ModularIndexing(x, Int(d * b), Int(c));
  Expr d0 = *FloorDiv(x, Int(d * b * c));
  Expr offset =
      Add({Mul(d0, Int(b * c * d)), Mul(d1, Int(d)), Mul(d2, Int(c * d)), d3});
  SimplifyContext ctx;
  int64_t numel = a * b * c * d;
  ctx.ranges = [x, numel](Expr s) -> std::optional<ValueRange> {
    if (s == x) return ValueRange::Int(0, numel - 1);
    return std::nullopt;
  };
  return *Simplify(offset, ctx);
}

void Run(benchmark::State& state, bool cold) {
  Expr x = Symbol("x0", SymbolType::kInt, {.nonnegative = true});
  int64_t generation = 0;
  for (auto _ : state) {
    int64_t base = cold ? 1000 * ++generation : 0;
    for (int k = 0; k < kExprs; ++k) {
      int64_t a = 2 + k % 5, b = 3 + k % 7, c = 4 + (k / 7) % 11,
              d = 8 * (1 + (k / 77) % 13) + base;
      benchmark::DoNotOptimize(IndexExpr(x, a, b, c, d));
    }
  }
  state.SetItemsProcessed(state.iterations() * kExprs);
  state.counters["ns_per_expr"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kExprs,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}

void BM_IndexExprCold(benchmark::State& state) { Run(state, true); }
void BM_IndexExprWarm(benchmark::State& state) { Run(state, false); }
BENCHMARK(BM_IndexExprCold)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_IndexExprWarm)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lathe::symbolic
