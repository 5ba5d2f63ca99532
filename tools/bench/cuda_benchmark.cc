// -----------------------------------------------------------------------------
// File: cuda_benchmark.cc
// -----------------------------------------------------------------------------
//
// lathe's cuda backend on the device CudaDevice() chooses (a GPU, or the
// emulated one with LATHE_CUDA_DEVICE=emulated), each row timed with CUDA
// events around the work on the device's stream:
//
//   BM_CudaCopy/ROWS: a device-to-device copy of f32 [ROWS, 8192] (cuMemcpy),
//     in bytes/s counting bytes read and written: the bandwidth ceiling.
//   BM_CudaSwishAffine/ROWS: x * sigmoid(x) * s + b over f32 [ROWS, 8192]
//     (s, b: [8192]; tools/bench/graphs/swish_affine_8192x8192.txt at ROWS
//     rows), compiled through the walk for cuda and called through its
//     loaded library on device tensors (the output allocated by the call,
//     as a compiled PyTorch function does), in bytes/s (x read, out
//     written, s and b read).
//   BM_CudaModel/NAME: a model of tools/bench/graphs (mlp_gelu_b64 and
//     _b1024, transformer_block_b8_s128_d512 and its _bf16_ twin,
//     small_cnn_b32_64x64) called
//     on device tensors, in microseconds per call (a GPU's rows; on the
//     emulated device with LATHE_BENCH_MODELS=1).
//   BM_CudaAllocatorReuse/BYTES: a device storage from the caching allocator
//     (device_allocator.h) and back, in ns, and the device allocations the
//     loop made (0: each block reused from the cache).
//   BM_CudaCallOverhead/N: a graph of N f32 [16] inputs summed, in ns of
//     host time per call (the launch queued, not waited for; the device is
//     synchronized once per 256 calls, outside the timing): the host side of
//     a call, which torch.compile's is compared with.
//   BM_CudaCallOverheadGraphs/N: the same calls replayed as a CUDA graph
//     (runtime/replay_cache.h; torch.compile's mode="reduce-overhead").
//
// ROWS is 8192 on a GPU (the issue's [8192, 8192]) and 64 on the emulated
// device, whose kernels run on the host. tools/gpu/bench.py runs this
// binary beside PyTorch eager and torch.compile on the same GPU and prints
// one table.
//
//   LATHE_CUDA_DEVICE=emulated bazel run -c opt //tools/bench:cuda_benchmark

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "benchmark/benchmark.h"
#include "codegen/cuda/cuda_backend.h"
#include "driver/compile.h"
#include "ir/graph.h"
#include "runtime/composite.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/loaded_graph.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "tools/bench/workspace_file.h"

namespace lathe {
namespace {

// The device, its context current on this thread.
absl::StatusOr<const CudaDriver*> Device() {
  ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
  RETURN_IF_ERROR(MakeCudaContextCurrent(*cu));
  RETURN_IF_ERROR(UseCudaStorage());
  return cu;
}

bool Emulated() {
  absl::StatusOr<const CudaDriver*> cu = CudaDevice();
  return cu.ok() && (*cu)->source == "emulated";
}

void SkipWith(benchmark::State& state, const absl::Status& s) {
  state.SkipWithError(std::string(s.message()).c_str());
}

// A device tensor of `sizes`, values in [-2, 2).
absl::StatusOr<Tensor> DeviceTensor(const std::vector<int64_t>& sizes,
                                    DType dtype = DType::kFloat32) {
  ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(sizes, dtype));
  ASSIGN_OR_RETURN(Tensor flat, host.AsStrided({host.numel()}, {1}, 0));
  for (int64_t i = 0; i < host.numel(); ++i) {
    flat.SetDouble({i}, ((i * 7919) % 4096) / 1024.0 - 2.0);
  }
  return ToDevice(host, Device::Cuda(0));
}

// Events around device work: its milliseconds.
class EventTimer {
 public:
  explicit EventTimer(const CudaDriver& cu) : cu_(cu) {
    cu_.event_create(&start_, 0);
    cu_.event_create(&end_, 0);
  }
  ~EventTimer() {
    cu_.event_destroy(start_);
    cu_.event_destroy(end_);
  }
  void Start() { cu_.event_record(start_, nullptr); }
  double StopSeconds() {
    cu_.event_record(end_, nullptr);
    cu_.event_synchronize(end_);
    float ms = 0;
    cu_.event_elapsed_time(&ms, start_, end_);
    return ms / 1e3;
  }

 private:
  const CudaDriver& cu_;
  CuEvent start_ = nullptr, end_ = nullptr;
};

void BM_CudaCopy(benchmark::State& state) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  const int64_t n = state.range(0) * 8192;
  absl::StatusOr<Tensor> a = DeviceTensor({n}), b = DeviceTensor({n});
  if (!a.ok() || !b.ok()) return SkipWith(state, a.status());
  auto ptr = [](const Tensor& t) {
    return static_cast<CuDevicePtr>(
        reinterpret_cast<uintptr_t>(t.storage().data()));
  };
  EventTimer timer(**cu);
  for (auto _ : state) {
    timer.Start();
    (*cu)->memcpy_dtod_async(ptr(*b), ptr(*a), n * 4, nullptr);
    state.SetIterationTime(timer.StopSeconds());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * 4);
}

// A compiled graph for cuda and its device arguments.
struct Compiled {
  std::unique_ptr<CompiledGraph> graph;
  std::vector<Operand> args;
};

// `text` compiled for cuda with device arguments of `input_sizes`, once per
// (source, text) for the whole run: Google Benchmark calls a row's function
// several times while it sizes the iteration count, and each compile costs
// g++ and NVRTC seconds (the kept ones are never freed: the process ends).
absl::StatusOr<Compiled*> CompileForCuda(
    const std::string& text, const std::string& source,
    const std::vector<std::vector<int64_t>>& input_sizes) {
  static auto* const compiled =
      new absl::flat_hash_map<std::string, std::unique_ptr<Compiled>>();
  std::unique_ptr<Compiled>& c = (*compiled)[absl::StrCat(source, "\n", text)];
  if (c != nullptr) return c.get();
  auto fresh = std::make_unique<Compiled>();
  ASSIGN_OR_RETURN(
      fresh->graph,
      CompileGraphText(text,
                       {.source = source, .backend = &codegen::CudaBackend()}));
  if (fresh->graph->function->user_call() == nullptr) {
    return absl::InternalError("no user entry compiled");
  }
  for (const std::vector<int64_t>& sizes : input_sizes) {
    ASSIGN_OR_RETURN(Tensor t, DeviceTensor(sizes));
    fresh->args.push_back(Operand::Of(std::move(t)));
  }
  c = std::move(fresh);
  return c.get();
}

// One call through the loaded library (replayed as a CUDA graph when
// `graphs`).
absl::Status Call(const Compiled& c, const ArgViews& views,
                  std::vector<Operand>* results, bool graphs = false) {
  std::vector<Operand> rebound;
  const LoadedGraph& g = *c.graph->function->user_call();
  int rc = g.Invoke(views.span(), kDefaultSeed, results, &rebound, graphs);
  return rc == 0 ? absl::OkStatus() : g.CallStatus(rc);
}

// Times calls of `c` with CUDA events (after one untimed call: the module
// and the allocator warm), `bytes` moved by each (0: time alone).
void TimeDeviceCalls(benchmark::State& state, const CudaDriver& cu,
                     const Compiled& c, int64_t bytes) {
  ArgViews views;
  views.Build(c.args);
  std::vector<Operand> results;
  if (absl::Status s = Call(c, views, &results); !s.ok()) {
    return SkipWith(state, s);
  }
  EventTimer timer(cu);
  for (auto _ : state) {
    timer.Start();
    absl::Status s = Call(c, views, &results);
    state.SetIterationTime(timer.StopSeconds());
    if (!s.ok()) return SkipWith(state, s);
  }
  if (bytes > 0) state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_CudaSwishAffine(benchmark::State& state) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  const int64_t rows = state.range(0);
  absl::StatusOr<std::string> text =
      ReadWorkspaceFile("tools/bench/graphs/swish_affine_8192x8192.txt");
  if (!text.ok()) return SkipWith(state, text.status());
  const std::string sized = absl::StrReplaceAll(
      *text, {{"f32[8192, 8192]", absl::StrCat("f32[", rows, ", 8192]")}});
  absl::StatusOr<Compiled*> c =
      CompileForCuda(sized, "swish_affine", {{rows, 8192}, {8192}, {8192}});
  if (!c.ok()) return SkipWith(state, c.status());
  TimeDeviceCalls(state, **cu, **c, (2 * rows + 2) * 8192 * 4);
}

// A row kernel from a graph of tools/bench/graphs over [rows, 2560] f32
// (softmax, layer norm): one pass reads the rows, one writes them.
void RowBenchmark(benchmark::State& state, const char* file, const char* name,
                  int vectors) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  const int64_t rows = state.range(0);
  absl::StatusOr<std::string> text = ReadWorkspaceFile(file);
  if (!text.ok()) return SkipWith(state, text.status());
  const std::string sized = absl::StrReplaceAll(
      *text, {{"f32[4096, 2560]", absl::StrCat("f32[", rows, ", 2560]")},
              {"f32[4096, 1]", absl::StrCat("f32[", rows, ", 1]")}});
  std::vector<std::vector<int64_t>> sizes = {{rows, 2560}};
  for (int k = 0; k < vectors; ++k) sizes.push_back({2560});
  absl::StatusOr<Compiled*> c = CompileForCuda(sized, name, sizes);
  if (!c.ok()) return SkipWith(state, c.status());
  TimeDeviceCalls(state, **cu, **c, 2 * rows * 2560 * 4);
}

void BM_CudaSoftmax(benchmark::State& state) {
  RowBenchmark(state, "tools/bench/graphs/softmax_4096x2560.txt", "softmax", 0);
}

void BM_CudaLayerNorm(benchmark::State& state) {
  RowBenchmark(state, "tools/bench/graphs/layernorm_4096x2560.txt", "layernorm",
               2);
}

// A whole model from tools/bench/graphs (the MLP layer, the transformer
// block, the small CNN), its inputs sized from the graph's placeholders:
// microseconds per call (matrix products through the device runtime's
// routines: cuBLASLt on a GPU).
void BM_CudaModel(benchmark::State& state, const char* name) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  absl::StatusOr<std::string> text =
      ReadWorkspaceFile(absl::StrCat("tools/bench/graphs/", name, ".txt"));
  if (!text.ok()) return SkipWith(state, text.status());
  absl::StatusOr<Compiled*> c = CompileForCuda(*text, name, {});
  if (!c.ok()) return SkipWith(state, c.status());
  // Its arguments from its placeholders, on the row's first run.
  const auto placeholders = (*c)->graph->graph->Placeholders();
  for (size_t k = (*c)->args.size(); k < placeholders.size(); ++k) {
    const ir::Node* p = placeholders[k];
    std::vector<int64_t> sizes;
    for (const symbolic::Expr& e : p->meta().tensor.sizes) {
      if (e.kind() != symbolic::ExprKind::kInteger) {
        return SkipWith(state, absl::InvalidArgumentError(
                                   absl::StrCat(p->name(), ": not static")));
      }
      sizes.push_back(e.int_value());
    }
    absl::StatusOr<Tensor> t = DeviceTensor(sizes, p->meta().tensor.dtype);
    if (!t.ok()) return SkipWith(state, t.status());
    (*c)->args.push_back(Operand::Of(*std::move(t)));
  }
  TimeDeviceCalls(state, **cu, **c, 0);
}

void BM_CudaCallOverhead(benchmark::State& state, bool graphs) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  const int n = static_cast<int>(state.range(0));
  std::vector<std::string> params, sizes;
  std::string body, last = "x0";
  for (int k = 0; k < n; ++k) {
    params.push_back(absl::StrCat("x", k, ": \"f32[16]\""));
    sizes.push_back("16");
    if (k == 0) continue;
    absl::StrAppend(&body, "    a", k, " = torch.ops.aten.add.Tensor(", last,
                    ", x", k, ")\n");
    last = absl::StrCat("a", k);
  }
  if (n == 1) body = "    a0 = torch.ops.aten.neg.default(x0)\n", last = "a0";
  const std::string text =
      absl::StrCat("def forward(self, ", absl::StrJoin(params, ", "), "):\n",
                   body, "    return (", last, ",)\n");
  // Its own compile for each mode: the replay statistics below count the
  // graphs rows' calls alone.
  absl::StatusOr<Compiled*> c =
      CompileForCuda(text, graphs ? "call_overhead_graphs" : "call_overhead",
                     std::vector<std::vector<int64_t>>(n, {16}));
  if (!c.ok()) return SkipWith(state, c.status());
  ArgViews views;
  views.Build((*c)->args);
  std::vector<Operand> results;
  // Two untimed calls: with graphs, on the row's first run each records
  // (the first one's result is still held during the second), and on its
  // later runs (the compile kept) they replay, as the timed ones do.
  for (int k = 0; k < 2; ++k) {
    if (absl::Status s = Call(**c, views, &results, graphs); !s.ok()) {
      return SkipWith(state, s);
    }
  }
  int64_t calls = 0;
  for (auto _ : state) {
    absl::Status s = Call(**c, views, &results, graphs);
    if (!s.ok()) return SkipWith(state, s);
    if (++calls % 256 == 0) {
      state.PauseTiming();
      (*cu)->ctx_synchronize();
      state.ResumeTiming();
    }
  }
  (*cu)->ctx_synchronize();
  if (graphs) {
    const ReplayCache::Stats st =
        (*c)->graph->function->user_call()->replay_stats();
    if (!st.refused.empty() || st.launched > 0) {
      return SkipWith(state, absl::InternalError(absl::StrCat(
                                 "not replayed: ", st.refused, " (",
                                 st.launched, " launched)")));
    }
    state.counters["replayed"] = static_cast<double>(st.replayed);
  }
}

// A device storage taken from the caching allocator and given back: the
// cost of a buffer of the host function's memory plan, with the number of
// device allocations (cuMemAlloc) the loop made (0: every block reused).
void BM_CudaAllocatorReuse(benchmark::State& state) {
  absl::StatusOr<const CudaDriver*> cu = Device();
  if (!cu.ok()) return SkipWith(state, cu.status());
  const int64_t bytes = state.range(0);
  if (absl::Status s =
          Storage::AllocateUninitialized(bytes, Device::Cuda(0)).status();
      !s.ok()) {
    return SkipWith(state, s);  // also the warm-up: one block cached
  }
  const int64_t before = CudaStorageAllocator().stats().device_allocations;
  for (auto _ : state) {
    absl::StatusOr<Storage> s =
        Storage::AllocateUninitialized(bytes, Device::Cuda(0));
    if (!s.ok()) return SkipWith(state, s.status());
    benchmark::DoNotOptimize(s->data());
  }
  state.counters["device_allocations"] = static_cast<double>(
      CudaStorageAllocator().stats().device_allocations - before);
}

int Rows() { return Emulated() ? 64 : 8192; }

}  // namespace
}  // namespace lathe

int main(int argc, char** argv) {
  lathe::SetBenchmarkBinary(argv[0]);
  const int rows = lathe::Rows();
  benchmark::RegisterBenchmark("BM_CudaCopy", lathe::BM_CudaCopy)
      ->Arg(rows)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_CudaSwishAffine", lathe::BM_CudaSwishAffine)
      ->Arg(rows)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  for (auto [name, fn] :
       {std::pair{"BM_CudaSoftmax", &lathe::BM_CudaSoftmax},
        std::pair{"BM_CudaLayerNorm", &lathe::BM_CudaLayerNorm}}) {
    benchmark::RegisterBenchmark(name, fn)
        ->Arg(rows < 8192 ? 8 : 4096)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  // The models at the sizes: a GPU's rows (on the emulated device,
  // where a call takes seconds, only when LATHE_BENCH_MODELS is set).
  if (rows == 8192 || std::getenv("LATHE_BENCH_MODELS") != nullptr) {
    for (const char* model :
         {"mlp_gelu_b64", "mlp_gelu_b1024", "transformer_block_b8_s128_d512",
          "transformer_block_bf16_b8_s128_d512", "small_cnn_b32_64x64"}) {
      benchmark::RegisterBenchmark(absl::StrCat("BM_CudaModel/", model).c_str(),
                                   lathe::BM_CudaModel, model)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (bool graphs : {false, true}) {
    auto* overhead =
        benchmark::RegisterBenchmark(
            graphs ? "BM_CudaCallOverheadGraphs" : "BM_CudaCallOverhead",
            lathe::BM_CudaCallOverhead, graphs)
            ->Arg(2)
            ->Arg(8)
            ->Arg(16)
            ->Unit(benchmark::kNanosecond);
    // The emulated device runs the queued kernels on the host (outside the
    // timing, but not the wall clock): a fixed count keeps the run short.
    if (rows < 8192) overhead->Iterations(4096);
  }
  benchmark::RegisterBenchmark("BM_CudaAllocatorReuse",
                               lathe::BM_CudaAllocatorReuse)
      ->Arg(4096)
      ->Arg(int64_t{64} << 20)
      ->Unit(benchmark::kNanosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
