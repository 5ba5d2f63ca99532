// Composite unwrap + rewrap per call (issue target: < 0.5 us; PyTorch's
// generated subclass wrapper: 80.2 us for a TwoTensor, 125.1 us nested).
// For a pair and a pair of pairs of f32[64, 64], one call is Unwrap of the
// argument and Rewrap of as many fresh dense results (made outside the
// timed region, as the compiled function would make them):
//   BM_PlanCall/NAME       SubclassWrapperPlan::Unwrap + Rewrap;
//   BM_GeneratedCall/NAME  the plan's C++ source, compiled.
//
//   bazel run -c opt //aot:subclass_wrapper_plan_benchmark

#include <functional>
#include <string>
#include <vector>

#include "aot/runtime_wrapper_cases.h"
#include "aot/subclass_wrapper_plan.h"
#include "benchmark/benchmark.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"

namespace lathe::aot {
namespace {

Operand Make(const CompositeLayout& l) {
  if (l.type == nullptr) {
    return Operand::Of(*Tensor::Empty({64, 64}, DType::kFloat32));
  }
  return *MakePair(Make(l.inner[0]), Make(l.inner[1]));
}

const SubclassCase& Case(const std::string& name) {
  for (const SubclassCase& c : SubclassCases()) {
    if (c.name == name) return c;
  }
  std::abort();
}

// Dense results for Rewrap to consume, made outside the timed region as a
// compiled function would make fresh outputs: refilled every kPool calls.
constexpr int kPool = 4096;

class ResultPool {
 public:
  explicit ResultPool(std::vector<Operand> prototype)
      : prototype_(std::move(prototype)), sets_(kPool) {}
  std::vector<Operand>& Next(benchmark::State& state) {
    if (next_ == kPool) {
      state.PauseTiming();
      for (std::vector<Operand>& s : sets_) s = prototype_;
      next_ = 0;
      state.ResumeTiming();
    }
    return sets_[next_++];
  }

 private:
  std::vector<Operand> prototype_;
  std::vector<std::vector<Operand>> sets_;
  int next_ = kPool;
};

void BM_PlanCall(benchmark::State& state, const std::string& name) {
  const SubclassCase& c = Case(name);
  SubclassWrapperPlan plan =
      *SubclassWrapperPlan::Build(c.arguments, c.results);
  std::vector<Operand> args = {Make(c.arguments[0])};
  ResultPool pool(*plan.Unwrap(args));
  for (auto _ : state) {
    absl::StatusOr<std::vector<Operand>> dense = plan.Unwrap(args);
    benchmark::DoNotOptimize(dense);
    absl::StatusOr<std::vector<Operand>> out =
        plan.Rewrap(std::move(pool.Next(state)));
    benchmark::DoNotOptimize(out);
  }
}

void BM_GeneratedCall(benchmark::State& state, const std::string& name) {
  const SubclassCase& c = Case(name);
  GeneratedSubclass g = GeneratedSubclassFor(name);
  std::vector<Operand> args = {Make(c.arguments[0])};
  std::vector<Operand> dense, out;
  if (!g.unwrap(args, &dense).ok()) std::abort();
  ResultPool pool(dense);
  for (auto _ : state) {
    absl::Status a = g.unwrap(args, &dense);
    absl::Status b = g.rewrap(absl::MakeSpan(pool.Next(state)), &out);
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    benchmark::DoNotOptimize(out);
  }
}

BENCHMARK_CAPTURE(BM_PlanCall, pair, std::string("pair"));
BENCHMARK_CAPTURE(BM_PlanCall, nested_pair, std::string("nested_pair"));
BENCHMARK_CAPTURE(BM_GeneratedCall, pair, std::string("pair"));
BENCHMARK_CAPTURE(BM_GeneratedCall, nested_pair, std::string("nested_pair"));

}  // namespace
}  // namespace lathe::aot

BENCHMARK_MAIN();
