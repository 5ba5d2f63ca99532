// The index expressions of a permuted and reshaped 4-d tensor, built the way
// Inductor composes views: a contiguous [A, B, C, D] tensor permuted to
// [A, C, B, D] and reshaped (copied) to [A*C, B*D]. Output element x is at
// row x // (B*D), column ModularIndexing(x, 1, B*D) of the reshape; the row
// splits into the permuted indices (a, c), the column into (b, d), and x reads
// the input at a*B*C*D + b*C*D + c*D + d. One pass is 10k such offsets, each
// over its own index symbol and its own size tuple.
//
//   bazel run --config=opt //symbolic:index_expr_benchmark
//
//   BM_IndexExprCold      one pass over index symbols no earlier iteration
//                         used (made outside the timed region), so every
//                         node but the integer leaves is new: building when
//                         interning misses.
//   BM_IndexExprWarm      the same pass every iteration, built once before the
//                         loop: every node exists already (interning hits).
//   BM_IndexExprSimplify  Simplify of the pass's offsets with each symbol's
//                         range. Each holds FloorDiv(ModularIndexing(x, 1,
//                         B*D), D), which Simplify rewrites to
//                         ModularIndexing(x, D, B); the setup checks that
//                         every offset changes (and so has built the results:
//                         the timed calls find them interned).
//
// new_nodes_per_expr is how many nodes each offset added to the interner (0
// when warm, checked). tools/bench/sympy_index_exprs.py times the same three
// cases with PyTorch's SymPy functions.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "check.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/simplify.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {
namespace {

constexpr int kExprs = 10000;

struct Sizes {
  int64_t a, b, c, d;
};

// The k-th size tuple: (b, c, d) is different for every k < 10000 (k in mixed
// radix 8, 25, 50).
Sizes SizesOf(int k) {
  return {2 + k % 5, 3 + k % 8, 4 + (k / 8) % 25, 8 * (1 + k / 200)};
}

// The input offset output element `x` reads.
Expr Offset(Expr x, const Sizes& s) {
  Expr row = *FloorDiv(x, Int(s.b * s.d));
  Expr col = *ModularIndexing(x, Int(1), Int(s.b * s.d));
  Expr a = *FloorDiv(row, Int(s.c));                 // x // (B*C*D)
  Expr c = *ModularIndexing(row, Int(1), Int(s.c));  // MI(x, B*D, C)
  Expr b = *FloorDiv(col, Int(s.d));                 // Simplify's to rewrite
  Expr d = *ModularIndexing(col, Int(1), Int(s.d));
  return Add({Mul(a, Int(s.b * s.c * s.d)), Mul(b, Int(s.c * s.d)),
              Mul(c, Int(s.d)), d});
}

Expr Index(absl::string_view name) {
  return Symbol(name, SymbolType::kInt, {.nonnegative = true});
}

// Process-wide, so that no run or repetition of the cold case reuses a symbol.
int64_t fresh_passes = 0;

double ReportPerExpr(benchmark::State& state) {
  const double exprs = static_cast<double>(state.iterations()) * kExprs;
  state.SetItemsProcessed(state.iterations() * kExprs);
  state.counters["ns_per_expr"] = benchmark::Counter(
      exprs, benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
  return exprs;
}

// The index symbols of one pass: x<prefix>_<k> for expression k.
std::vector<Expr> Indices(absl::string_view prefix) {
  std::vector<Expr> x;
  x.reserve(kExprs);
  for (int k = 0; k < kExprs; ++k) x.push_back(Index(absl::StrCat(prefix, k)));
  return x;
}

void BM_IndexExprCold(benchmark::State& state) {
  int64_t added = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Expr> x = Indices(absl::StrCat("x", ++fresh_passes, "_"));
    const int64_t before = InternedCount();
    state.ResumeTiming();
    for (int k = 0; k < kExprs; ++k) {
      benchmark::DoNotOptimize(Offset(x[k], SizesOf(k)));
    }
    state.PauseTiming();
    added += InternedCount() - before;
    state.ResumeTiming();
  }
  state.counters["new_nodes_per_expr"] = added / ReportPerExpr(state);
}

void BM_IndexExprWarm(benchmark::State& state) {
  std::vector<Expr> x = Indices("x");
  for (int k = 0; k < kExprs; ++k) Offset(x[k], SizesOf(k));
  const int64_t before = InternedCount();
  for (auto _ : state) {
    for (int k = 0; k < kExprs; ++k) {
      benchmark::DoNotOptimize(Offset(x[k], SizesOf(k)));
    }
  }
  const int64_t added = InternedCount() - before;
  LATHE_CHECK(added == 0) << "the warm case made " << added << " new nodes";
  state.counters["new_nodes_per_expr"] = added / ReportPerExpr(state);
}

void BM_IndexExprSimplify(benchmark::State& state) {
  std::vector<Expr> x = Indices("x");
  std::vector<Expr> offsets;
  std::vector<SimplifyContext> contexts(kExprs);
  for (int k = 0; k < kExprs; ++k) {
    Sizes s = SizesOf(k);
    offsets.push_back(Offset(x[k], s));
    const int64_t numel = s.a * s.b * s.c * s.d;
    contexts[k].ranges = [xk = x[k],
                          numel](Expr sym) -> std::optional<ValueRange> {
      if (sym == xk) return ValueRange::Int(0, numel - 1);
      return std::nullopt;
    };
    // Once, outside the timed loop: Simplify must have work to do here.
    Expr simplified = *Simplify(offsets[k], contexts[k]);
    LATHE_CHECK(simplified != offsets[k])
        << "Simplify leaves " << ToString(offsets[k]) << " unchanged";
  }
  for (auto _ : state) {
    for (int k = 0; k < kExprs; ++k) {
      benchmark::DoNotOptimize(Simplify(offsets[k], contexts[k]));
    }
  }
  ReportPerExpr(state);
}

// The cold case keeps every node it makes (about 0.1 M, 10 MB, per iteration),
// so it runs a fixed, small number of iterations.
BENCHMARK(BM_IndexExprCold)->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK(BM_IndexExprWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IndexExprSimplify)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lathe::symbolic
