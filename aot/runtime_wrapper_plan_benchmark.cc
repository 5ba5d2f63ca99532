// The mutation epilogue's cost beyond its copies (issue target: <= 2% at
// 1 MiB). For 1, 4 and 16 mutated f32 inputs of 4 KiB and 1 MiB:
//   BM_RawCopies        the copies alone: one memcpy per input;
//   BM_PlanRun          RuntimeWrapperPlan::Run (copies + outputs);
//   BM_GeneratedWrapper the plan's C++ source, compiled;
//   BM_Paired           all three in turn per iteration, with the overheads
//                       (plan_over_ns/pct, gen_over_ns/pct) as counters —
//                       the number to read on a noisy machine.
//
//   bazel run -c opt //aot:runtime_wrapper_plan_benchmark

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aot/runtime_wrapper_cases.h"
#include "benchmark/benchmark.h"
#include "runtime/tensor.h"

namespace lathe::aot {
namespace {

void RawCopies(benchmark::State& state, PreparedCase* p) {
  const int n = static_cast<int>(p->inputs.size());
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) {
      std::memcpy(p->inputs[i].data_ptr(), p->fw[i].data_ptr(),
                  p->fw[i].numel() * sizeof(float));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * p->fw[0].numel() * 4);
}

void PlanRun(benchmark::State& state, PreparedCase* p) {
  const int n = static_cast<int>(p->inputs.size());
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out =
        p->aot.plan.Run(absl::MakeSpan(p->inputs), p->fw);
    if (!out.ok())
      state.SkipWithError(std::string(out.status().message()).c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * n * p->fw[0].numel() * 4);
}

void GeneratedRun(benchmark::State& state, PreparedCase* p,
                  GeneratedWrapper f) {
  const int n = static_cast<int>(p->inputs.size());
  std::vector<Tensor> out;
  for (auto _ : state) {
    absl::Status s = f(absl::MakeSpan(p->inputs), p->fw, &out);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * n * p->fw[0].numel() * 4);
}

// Raw copies, the plan and the generated wrapper in turn in every iteration
// (same cache and machine state), each timed on its own; the counters are
// the mean ns per call of each and the overheads beyond the raw copies.
void Paired(benchmark::State& state, PreparedCase* p, GeneratedWrapper f) {
  using Clock = std::chrono::steady_clock;
  const int n = static_cast<int>(p->inputs.size());
  double raw = 0, plan = 0, generated = 0;
  std::vector<Tensor> out;
  for (auto _ : state) {
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      std::memcpy(p->inputs[i].data_ptr(), p->fw[i].data_ptr(),
                  p->fw[i].numel() * sizeof(float));
    }
    benchmark::ClobberMemory();
    Clock::time_point t1 = Clock::now();
    absl::StatusOr<std::vector<Tensor>> o =
        p->aot.plan.Run(absl::MakeSpan(p->inputs), p->fw);
    benchmark::DoNotOptimize(o);
    Clock::time_point t2 = Clock::now();
    absl::Status s = f(absl::MakeSpan(p->inputs), p->fw, &out);
    benchmark::DoNotOptimize(s);
    Clock::time_point t3 = Clock::now();
    raw += std::chrono::duration<double, std::nano>(t1 - t0).count();
    plan += std::chrono::duration<double, std::nano>(t2 - t1).count();
    generated += std::chrono::duration<double, std::nano>(t3 - t2).count();
  }
  double k = static_cast<double>(state.iterations());
  state.counters["raw_ns"] = raw / k;
  state.counters["plan_ns"] = plan / k;
  state.counters["gen_ns"] = generated / k;
  state.counters["plan_over_ns"] = (plan - raw) / k;
  state.counters["plan_over_pct"] = 100 * (plan - raw) / raw;
  state.counters["gen_over_ns"] = (generated - raw) / k;
  state.counters["gen_over_pct"] = 100 * (generated - raw) / raw;
}

}  // namespace
}  // namespace lathe::aot

int main(int argc, char** argv) {
  using namespace lathe::aot;  // NOLINT
  static std::vector<PreparedCase>* cases = new std::vector<PreparedCase>();
  cases->reserve(WrapperCases().size());
  for (const WrapperCase& c : WrapperCases()) {
    if (!absl::StartsWith(c.name, "epilogue_")) continue;
    absl::StatusOr<PreparedCase> p = Prepare(c);
    if (!p.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(),
                   std::string(p.status().message()).c_str());
      return 1;
    }
    cases->push_back(std::move(*p));
    PreparedCase* pc = &cases->back();
    benchmark::RegisterBenchmark(("BM_RawCopies/" + c.name).c_str(), RawCopies,
                                 pc);
    benchmark::RegisterBenchmark(("BM_PlanRun/" + c.name).c_str(), PlanRun, pc);
    benchmark::RegisterBenchmark(("BM_GeneratedWrapper/" + c.name).c_str(),
                                 GeneratedRun, pc, GeneratedWrapperFor(c.name));
    benchmark::RegisterBenchmark(("BM_Paired/" + c.name).c_str(), Paired, pc,
                                 GeneratedWrapperFor(c.name));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
