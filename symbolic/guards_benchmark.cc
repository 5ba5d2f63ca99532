// GuardSet::Check on concrete inputs (target: 10 guards over 4 input tensors
// in < 50 ns).
//   BM_GuardSetCheck10:  exactly 10 guards over 4 1-d tensors sharing a size.
//   BM_GuardSetCheckMlp: an MLP's 4 tensors with static dims and a
//                        divisibility guard (19 guards).
//
//   bazel run --config=opt //symbolic:guards_benchmark

#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "symbolic/expr.h"
#include "symbolic/guards.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {
namespace {

void BM_GuardSetCheckMlp(benchmark::State& state) {
  ShapeEnv env;
  // x [B, 64], w [64, 32] static, y [B, 32], bias [32] static: B dynamic,
  // duck sized across x and y.
  std::vector<std::vector<int64_t>> sizes = {{8, 64}, {64, 32}, {8, 32}, {32}};
  std::vector<std::vector<int64_t>> strides = {{64, 1}, {32, 1}, {32, 1}, {1}};
  std::vector<std::vector<DimDynamic>> dyn = {
      {DimDynamic::kDuck, DimDynamic::kStatic},
      {DimDynamic::kStatic, DimDynamic::kStatic},
      {DimDynamic::kDuck, DimDynamic::kStatic},
      {DimDynamic::kStatic}};
  std::vector<InputSpec> specs;
  for (int t = 0; t < 4; ++t) {
    std::vector<Expr> sz, st;
    env.CreateSymbolicSizesStrides(sizes[t], strides[t], t, dyn[t], &sz, &st);
    specs.push_back(InputSpec::Tensor(sz, st));
  }
  Expr b = specs[0].sizes[0];
  (void)env.EvaluateBool(Eq(*PythonMod(b, Int(8)), Int(0)));
  GuardSet guards = *ProduceGuards(env, specs);
  std::vector<int64_t> s0 = {16, 64}, t0 = {64, 1}, s2 = {16, 32}, t2 = {32, 1};
  GuardInput in[] = {
      GuardInput::Tensor(s0, t0), GuardInput::Tensor(sizes[1], strides[1]),
      GuardInput::Tensor(s2, t2), GuardInput::Tensor(sizes[3], strides[3])};
  if (!guards.Check(in)) state.SkipWithError("guards must pass");
  for (auto _ : state) benchmark::DoNotOptimize(guards.Check(in));
  state.counters["guards"] = guards.size();
}
BENCHMARK(BM_GuardSetCheckMlp);

void BM_GuardSetCheck10(benchmark::State& state) {
  // Without 0/1 specialization sizes need no range guard; t0's storage
  // offset is symbolic (bound, so unguarded). Guards: t0.stride(0) == 1 and
  // for t1..t3 size == t0.size(0), stride == 1, storage_offset == 0.
  ShapeEnv env(ShapeEnvSettings{.specialize_zero_one = false});
  std::vector<InputSpec> specs;
  for (int t = 0; t < 4; ++t) {
    std::vector<Expr> sz, st;
    env.CreateSymbolicSizesStrides({128}, {1}, t, {}, &sz, &st);
    Expr offset =
        t == 0 ? env.CreateSymbol(4, Source::StorageOffset(0)) : Int(0);
    specs.push_back(InputSpec::Tensor(sz, st, offset));
  }
  GuardSet guards = *ProduceGuards(env, specs);
  if (guards.size() != 10) state.SkipWithError("expected 10 guards");
  std::vector<int64_t> size = {256}, stride = {1};
  GuardInput in[] = {
      GuardInput::Tensor(size, stride, 4), GuardInput::Tensor(size, stride),
      GuardInput::Tensor(size, stride), GuardInput::Tensor(size, stride)};
  if (!guards.Check(in)) state.SkipWithError("guards must pass");
  for (auto _ : state) benchmark::DoNotOptimize(guards.Check(in));
  state.counters["guards"] = guards.size();
}
BENCHMARK(BM_GuardSetCheck10);

}  // namespace
}  // namespace lathe::symbolic
