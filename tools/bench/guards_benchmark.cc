// Guard-set evaluation (issue 12, benchmark b): the 10 guards a compile makes
// for four tensors (three f32[s0] vectors and a 0-d tensor), evaluated
//
//   BM_CompiledGuards   as the .so's lathe_guards (native code, what
//                       CompiledFunction runs on a new key);
//   BM_GuardSetCheck    as symbolic::GuardSet::Check (the interpreted form
//                       the compiler side holds), for scale.
//
// The graph is compiled once at start (the C++ compiler takes a moment).
//
//   bazel run -c opt //tools/bench:guards_benchmark

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmark/benchmark.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/compile.h"
#include "runtime/compiled_function.h"
#include "runtime/loaded_graph.h"
#include "runtime/tensor.h"
#include "symbolic/guards.h"

namespace lathe {
namespace {

constexpr char kGraph[] = R"(# lathe: hint s0 64
def forward(self, a: "f32[s0][1]cpu", b: "f32[s0][1]cpu", c: "f32[s0][1]cpu", d: "f32[][]cpu"):
    add: "f32[s0][1]cpu" = torch.ops.aten.add.Tensor(a, b)
    mul: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(add, c)
    sub: "f32[s0][1]cpu" = torch.ops.aten.sub.Tensor(mul, d)
    return (sub,)
)";

const CompiledGraph& Compiled() {
  static const CompiledGraph* a = [] {
    absl::StatusOr<std::unique_ptr<CompiledGraph>> c = CompileGraphText(
        kGraph, {.backend = &codegen::CpuBackend(), .artifact = true});
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", std::string(c.status().message()).c_str());
      std::abort();
    }
    return c->release();
  }();
  return *a;
}

std::vector<Operand> Args() {
  std::vector<Operand> args;
  for (int k = 0; k < 3; ++k) {
    args.push_back(Operand::Of(Tensor::Empty({64}, DType::kFloat32).value()));
  }
  args.push_back(Operand::Of(Tensor::Empty({}, DType::kFloat32).value()));
  return args;
}

void BM_CompiledGuards(benchmark::State& state) {
  const CompiledGraph& a = Compiled();
  std::vector<Operand> args = Args();
  ArgViews views;
  views.Build(args);
  const LoadedGraph& g = *a.function->user_call();
  for (auto _ : state) {
    int failed = g.FailedGuard(views, 4);
    benchmark::DoNotOptimize(failed);
  }
  state.counters["guards"] = static_cast<double>(a.manifest.guards.size());
  if (g.FailedGuard(views, 4) != LATHE_GUARDS_HOLD)
    state.SkipWithError("refused");
}
BENCHMARK(BM_CompiledGuards);

void BM_GuardSetCheck(benchmark::State& state) {
  const CompiledGraph& a = Compiled();
  std::vector<Operand> args = Args();
  std::vector<symbolic::GuardInput> in;
  for (const Operand& o : args) {
    in.push_back(symbolic::GuardInput::Tensor(
        o.tensor.sizes(), o.tensor.strides(), o.tensor.storage_offset()));
  }
  const symbolic::GuardSet& guards = *a.guards;
  for (auto _ : state) {
    bool ok = guards.Check(in);
    benchmark::DoNotOptimize(ok);
  }
  state.counters["guards"] = guards.size();
}
BENCHMARK(BM_GuardSetCheck);

}  // namespace
}  // namespace lathe
