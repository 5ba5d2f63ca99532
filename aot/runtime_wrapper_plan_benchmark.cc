// The mutation epilogue's cost beyond its copies (issue target: <= 2% at
// 1 MiB). For 1, 4 and 16 mutated f32 inputs of 4 KiB and 1 MiB:
//   BM_RawCopies        the copies alone: one memcpy per input;
//   BM_PlanRun          RuntimeWrapperPlan::Run (copies + outputs);
//   BM_GeneratedWrapper the plan's C++ source, compiled;
//   BM_Paired           all three alternately, each timed on its own, with
//                       the overheads (plan_over_ns/pct, gen_over_ns/pct) as
//                       counters — the number to read on a noisy machine.
// Every time is CPU time: the framework's for the first three, the thread's
// CPU clock (the one the framework reads) for BM_Paired's counters.
//
//   bazel run -c opt //aot:runtime_wrapper_plan_benchmark

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
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
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      break;
    }
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
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * n * p->fw[0].numel() * 4);
}

// This thread's CPU time in ns: the clock behind Google Benchmark's CPU column.
double ThreadCpuNs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e9 * static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec);
}

// Raw copies, the plan and the generated wrapper alternately in every
// iteration (same cache and machine state), each timed on its own. An
// iteration runs each variant as a batch of calls that copies >= 4 MiB, so
// reading the clock (a system call) is noise, and in one of the six orders in
// turn, so no variant always runs first or last. The counters are the mean CPU
// ns per call of each and the overheads beyond the raw copies; the Time and
// CPU columns are one iteration's three batches together.
void Paired(benchmark::State& state, PreparedCase* p, GeneratedWrapper f) {
  enum Variant { kRaw, kPlan, kGenerated };
  static constexpr Variant kOrders[6][3] = {
      {kRaw, kPlan, kGenerated}, {kPlan, kGenerated, kRaw},
      {kGenerated, kRaw, kPlan}, {kRaw, kGenerated, kPlan},
      {kGenerated, kPlan, kRaw}, {kPlan, kRaw, kGenerated}};
  const int n = static_cast<int>(p->inputs.size());
  const int64_t bytes = n * p->fw[0].numel() * 4;
  const int64_t batch = std::max<int64_t>(1, (int64_t{4} << 20) / bytes);
  std::vector<Tensor> out;
  // One call of `v`; false (and the benchmark skipped) when it fails.
  auto call = [&](Variant v) {
    switch (v) {
      case kRaw:
        for (int i = 0; i < n; ++i) {
          std::memcpy(p->inputs[i].data_ptr(), p->fw[i].data_ptr(),
                      p->fw[i].numel() * sizeof(float));
        }
        benchmark::ClobberMemory();
        return true;
      case kPlan: {
        absl::StatusOr<std::vector<Tensor>> o =
            p->aot.plan.Run(absl::MakeSpan(p->inputs), p->fw);
        benchmark::DoNotOptimize(o);
        if (o.ok()) return true;
        state.SkipWithError(std::string(o.status().message()).c_str());
        return false;
      }
      case kGenerated: {
        absl::Status s = f(absl::MakeSpan(p->inputs), p->fw, &out);
        benchmark::DoNotOptimize(out);
        if (s.ok()) return true;
        state.SkipWithError(std::string(s.message()).c_str());
        return false;
      }
    }
    return false;
  };
  double ns[3] = {0, 0, 0};
  int64_t turn = 0;
  bool ok = true;
  for (auto _ : state) {
    for (Variant v : kOrders[turn++ % 6]) {
      const double start = ThreadCpuNs();
      for (int64_t r = 0; r < batch && ok; ++r) ok = call(v);
      ns[v] += ThreadCpuNs() - start;
    }
    if (!ok) break;
  }
  if (!ok) return;
  const double calls = static_cast<double>(state.iterations()) * batch;
  const double raw = ns[kRaw], plan = ns[kPlan], generated = ns[kGenerated];
  state.counters["batch"] = static_cast<double>(batch);
  state.counters["raw_ns"] = raw / calls;
  state.counters["plan_ns"] = plan / calls;
  state.counters["gen_ns"] = generated / calls;
  state.counters["plan_over_ns"] = (plan - raw) / calls;
  state.counters["plan_over_pct"] = 100 * (plan - raw) / raw;
  state.counters["gen_over_ns"] = (generated - raw) / calls;
  state.counters["gen_over_pct"] = 100 * (generated - raw) / raw;
}

}  // namespace
}  // namespace lathe::aot

int main(int argc, char** argv) {
  using namespace lathe::aot;  // NOLINT
  // Flags first: an unknown one is an error, not a full run.
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
