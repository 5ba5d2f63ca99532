// The default pass pipeline, and the whole walk before code generation
// (parse, AOT dispatch, the pipeline), on generated graphs of 2,000 and
// 20,000 nodes: the cost must grow linearly (compare the per-node counters
// of the two sizes). Each case reports CPU time; the pipeline cases run with
// the invariant checks after every pass that changed the graph (as lathec
// runs) and without them (the passes alone).
//
//   bazel run -c opt //tools/bench:pipeline_benchmark

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "check.h"
#include "driver/compile.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "passes/default_pipeline.h"
#include "symbolic/shape_env.h"

namespace lathe::passes {
namespace {

// A graph of about `nodes` call nodes over x: f32[s0, 64], y: f32[64] and a
// float scalar lr: pointwise ops on recent values (some repeated, for cse),
// broadcasting, views, scalar uses (for tensorify_scalars), dead values
// (for dce), and an in-place update of x (a copy_ epilogue after AOT).
std::string GeneratedGraph(int nodes) {
  std::mt19937 rng(nodes);
  auto pick = [&](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  std::string text =
      "# lathe: hint s0 32\n# lathe: hint zf0 0.5\n"
      "def forward(self, x: \"f32[s0, 64][64, 1]cpu\", y: \"f32[64][1]cpu\", "
      "lr: \"Sym(zf0)\"):\n";
  std::vector<std::string> values = {"x"};
  auto recent = [&] {
    int window = std::min<int>(8, values.size());
    return values[values.size() - 1 - pick(window)];
  };
  int made = 0;
  for (int i = 0; made < nodes; ++i) {
    std::string name = absl::StrCat("v", i), a = recent(), b = recent();
    std::string call;
    switch (pick(9)) {
      case 0:
        call = absl::StrCat("torch.ops.aten.add.Tensor(", a, ", ", b, ")");
        break;
      case 1:
        call = absl::StrCat("torch.ops.aten.mul.Tensor(", a, ", y)");
        break;
      case 2:
        call = absl::StrCat("torch.ops.aten.mul.Tensor(", a, ", lr)");
        break;
      case 3:
        call = absl::StrCat("torch.ops.aten.neg.default(", a, ")");
        break;
      case 4:
        call = absl::StrCat("torch.ops.aten.relu.default(", a, ")");
        break;
      case 5: {  // a repeat (cse)
        call = absl::StrCat("torch.ops.aten.sub.Tensor(", a, ", ", b, ")");
        text += absl::StrCat("    ", name, "_r = ", call, "\n");
        ++made;
        break;
      }
      case 6: {  // a view pair
        call = absl::StrCat("torch.ops.aten.t.default(", a, ")");
        text += absl::StrCat("    ", name, "_t = ", call, "\n");
        call = absl::StrCat("torch.ops.aten.t.default(", name, "_t)");
        ++made;
        break;
      }
      case 7:  // dead (dce)
        text += absl::StrCat("    ", name,
                             "_dead = torch.ops.aten.exp.default(", a, ")\n");
        ++made;
        call = absl::StrCat("torch.ops.aten.add.Tensor(", a, ", 1.0)");
        break;
      default:
        call = absl::StrCat("torch.ops.aten.add.Tensor(", a, ", ", b,
                            ", alpha = lr)");
        break;
    }
    text += absl::StrCat("    ", name, " = ", call, "\n");
    values.push_back(name);
    ++made;
  }
  text += absl::StrCat("    update = torch.ops.aten.add_.Tensor(x, ",
                       values.back(), ")\n");
  text += absl::StrCat("    return (", values[values.size() - 2], ",)\n");
  return text;
}

void BM_DefaultPipeline(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const bool checks = state.range(1) != 0;
  std::string text = GeneratedGraph(nodes);
  std::map<std::string, double> per_pass;  // seconds, over all iterations
  for (auto _ : state) {
    state.PauseTiming();
    CompileOptions options;
    options.passes = false;
    absl::StatusOr<std::unique_ptr<CompiledGraph>> c =
        CompileGraphText(text, options);
    LATHE_CHECK(c.ok()) << c.status().message();
    state.ResumeTiming();
    PassPipeline p = DefaultPipeline();
    PassContext ctx(*(*c)->env);
    absl::StatusOr<PipelineReport> r =
        p.Run(*(*c)->graph, ctx, {.check_invariants = checks});
    LATHE_CHECK(r.ok()) << r.status().message();
    LATHE_CHECK(r->changed);
    for (const PassRun& run : r->runs) per_pass[run.name] += run.seconds;
    state.PauseTiming();
    c->reset();  // freeing the graph is not the pipeline's cost
    state.ResumeTiming();
  }
  // Time per node (shown with an SI suffix: 1.2u is 1.2 us), and each
  // pass's own wall time per run in ms.
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(nodes) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  for (const auto& [name, seconds] : per_pass) {
    state.counters[absl::StrCat(name, "_ms")] =
        benchmark::Counter(seconds * 1e3 / state.iterations());
  }
  state.SetLabel(checks ? "with invariant checks" : "passes only");
}
BENCHMARK(BM_DefaultPipeline)
    ->ArgsProduct({{2000, 20000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// The floor under every pass: one walk over the graph reading what a pass
// reads of each node (its op, meta and users). Its time per node grows with
// the graph only as the memory hierarchy makes it (at 2,000 nodes the graph
// fits in L2, at 20,000 it does not), so a pass whose per-node time grows by
// the same factor is linear in work.
void BM_Walk(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  CompileOptions options;
  options.passes = false;
  absl::StatusOr<std::unique_ptr<CompiledGraph>> c =
      CompileGraphText(GeneratedGraph(nodes), options);
  LATHE_CHECK(c.ok()) << c.status().message();
  for (auto _ : state) {
    size_t sum = 0;
    for (const auto& n : (*c)->graph->nodes()) {
      sum += reinterpret_cast<uintptr_t>(n->op()) + n->users().size() +
             static_cast<size_t>(n->meta().kind) + n->args().size();
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(nodes) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Walk)->Arg(2000)->Arg(20000)->Arg(80000);

// Parse, AOT dispatch and the default pipeline (as lathec compiles).
void BM_WholeWalk(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  std::string text = GeneratedGraph(nodes);
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<CompiledGraph>> c = CompileGraphText(text);
    LATHE_CHECK(c.ok()) << c.status().message();
    state.PauseTiming();
    c->reset();
    state.ResumeTiming();
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(nodes) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WholeWalk)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond);

// The walk before the passes: parse, shape propagation and AOT dispatch
// (the front half the pipeline receives its graph from).
void BM_ParseShapesAot(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  std::string text = GeneratedGraph(nodes);
  CompileOptions options;
  options.passes = false;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<CompiledGraph>> c =
        CompileGraphText(text, options);
    LATHE_CHECK(c.ok()) << c.status().message();
    state.PauseTiming();
    c->reset();
    state.ResumeTiming();
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(nodes) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ParseShapesAot)
    ->Arg(2000)
    ->Arg(20000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lathe::passes

BENCHMARK_MAIN();
