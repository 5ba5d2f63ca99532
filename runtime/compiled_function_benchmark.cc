// Per-call host overhead of CompiledFunction::Call (issue 12, benchmark a):
// a tiny kernel (testdata/sum_graph.cc: out = the sum of N f32[16] vectors)
// called with 2, 8 and 16 tensor arguments
//
//   BM_Hit/N     the same sizes every call: the last-call check hits;
//   BM_Key/N     two sizes in turn: the last-call check misses and the
//                specialization key finds the variant;
//   BM_Views/N   CallViews on views made once (the Python package's path,
//                without a lathe::Tensor per argument): Hit - Views is
//                what building the views and Call's Operands costs;
//   BM_Raw/N     the .so's lathe_call_user called directly with prepared
//                C values (the kernel, its output allocation and release):
//                what Call adds is Hit - Raw.
//
//   bazel run -c opt //runtime:compiled_function_benchmark

#include <memory>
#include <optional>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/compiled_function.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"
#include "runtime/shared_library.h"
#include "runtime/tensor.h"

namespace lathe {
namespace {

constexpr char kLibrary[] = "runtime/testdata/sum_graph.so";

std::shared_ptr<const LoadedGraph> Load() {
  CallSignature s;
  s.results = {CompositeLayout::Plain(1)};
  return LoadedGraph::Open(kLibrary, s).value();
}

std::vector<Operand> Args(int n, int64_t len) {
  std::vector<Operand> args;
  for (int k = 0; k < n; ++k) {
    Tensor t = Tensor::Empty({len}, DType::kFloat32).value();
    for (int64_t i = 0; i < len; ++i) t.data<float>()[i] = k + i;
    args.push_back(Operand::Of(t));
  }
  return args;
}

std::unique_ptr<CompiledFunction> Function(int n) {
  std::vector<ArgumentSpec> specs(n);
  for (int k = 0; k < n; ++k) {
    specs[k].name = "x" + std::to_string(k);
    specs[k].rank = 1;
  }
  std::vector<Variant> variants;
  variants.push_back(Variant{Load(), {}});
  return std::make_unique<CompiledFunction>(specs, CompiledFunction::Options{},
                                            std::move(variants));
}

void BM_Hit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::unique_ptr<CompiledFunction> f = Function(n);
  std::vector<Operand> args = Args(n, 16);
  for (auto _ : state) {
    absl::StatusOr<std::vector<Operand>> out = f->Call(absl::MakeSpan(args));
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Hit)->Arg(2)->Arg(8)->Arg(16);

void BM_Key(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::unique_ptr<CompiledFunction> f = Function(n);
  std::vector<Operand> sets[2] = {Args(n, 16), Args(n, 17)};
  int k = 0;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Operand>> out =
        f->Call(absl::MakeSpan(sets[k ^= 1]));
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Key)->Arg(2)->Arg(8)->Arg(16);

void BM_Views(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::unique_ptr<CompiledFunction> f = Function(n);
  std::vector<Operand> args = Args(n, 16);
  (void)f->Call(absl::MakeSpan(args));  // admits the key
  ArgViews views;
  views.Build(args);
  for (auto _ : state) {
    std::optional<absl::StatusOr<std::vector<Operand>>> out =
        f->CallViews(views.span());
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Views)->Arg(2)->Arg(8)->Arg(16);

void BM_Raw(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  (void)KeepOpenMpLoaded();
  SharedLibrary lib = SharedLibrary::Open(kLibrary).value();
  auto call =
      reinterpret_cast<LatheCallUserFn>(lib.Symbol("lathe_call_user").value());
  std::vector<Operand> args = Args(n, 16);
  std::vector<LatheValue> in;
  for (const Operand& a : args) in.push_back(ViewOfTensor(a.tensor));
  const LatheKernelRuntime* rt = KernelRuntime();
  int64_t dims[2];
  for (auto _ : state) {
    LatheValue out{};
    out.sizes = dims;
    out.strides = dims + 1;
    int rc = call(in.data(), n, &out, 1, rt);
    benchmark::DoNotOptimize(rc);
    rt->release(out.storage);
  }
}
BENCHMARK(BM_Raw)->Arg(2)->Arg(8)->Arg(16);

}  // namespace
}  // namespace lathe
