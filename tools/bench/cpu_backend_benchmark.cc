// -----------------------------------------------------------------------------
// File: cpu_backend_benchmark.cc
// -----------------------------------------------------------------------------
//
// lathe's cpu backend (codegen/cpp/cpu_function.h) on the programs of
// tools/examples, at the benchmark's shapes (tools/bench/graphs/*.txt,
// captured from PyTorch 2.15 by tools/examples/capture_examples.py):
//
//   a. BM_SwishAffine/default: x * sigmoid(x) * s + b over f32 [8192, 8192]
//      (s, b: [8192]), in bytes/s (x read + out written + s and b), beside
//      a hand-written STREAM triad and scale (OpenMP parallel for simd) over
//      arrays of the same size: the bandwidth ceiling.
//   The *_noreinplace rows compile without the pipeline's last pass
//   (reinplace), to show what in-place ops cost fusion today.
//   b. BM_Run/NAME: softmax(dim -1) and layernorm over [4096, 2560] (bytes/s),
//      gelu(addmm) with x [B, 1024], W [1024, 4096] at B = 64 and 1024, and a
//      pre-LN transformer block at batch 8, seq 128, d_model 512, 8 heads,
//      MLP 2048 (flop/s: the matmuls' 2*M*N*K), as make_fx records it and
//      as torch.compile's AOT forward graph (transformer_block_aot_*), and
//      small_cnn (two 3x3 convolutions, max pools, a linear layer) at batch
//      32 on 64x64 images (flop/s: the convolutions' and the linear's).
//      resnet18 at batch 8 (112x112, 224x224), a BERT-base-shaped encoder
//      layer (batch 8, seq 128) and a 4-layer GPT-2-small-shaped decoder
//      (seq 256, batch 1 and 8), f32 and bf16 (*_bf16_*); each model also
//      as *_frozen: every parameter frozen, as torch.compile(freezing=True).
//   BM_Memory/transposed_scale: x.t() * 2, f32 [4096, 4096], whose loops
//   the scheduler reorders for contiguous access.
//   BM_CallOverhead: a 16-element graph, in ns per call: the host side.
//   c. BM_Compile/NAME: one compile of the MLP layer, the transformer
//      block (both captures), the BERT layer and GPT-2 (batch 1); counters
//      frontend_s (parse, AOT dispatch, the pass pipeline), lower_s (lowering +
//      scheduling + C++ emission: CpuStats::lower_seconds), lathe_s (the two
//      together: lathe's own time) and cxx_s (the system C++ compiler:
//      CpuStats::compiler_seconds).
//
// Each graph is compiled once (the first time a case needs it) and its
// inputs made once, outside the timed loop; the loop is CpuFunction::Run
// (which allocates the outputs, as a compiled PyTorch function does). A row
// whose graph does not compile (an op without a cpu lowering) is skipped
// with the error. tools/bench/torch_anchor.py runs the same programs in
// PyTorch; tools/bench/README.md reads the two side by side.
//
//   bazel run -c opt //tools/bench:cpu_backend_benchmark
//   bazel run -c opt //tools/bench:cpu_backend_benchmark --
//       --benchmark_filter=softmax --benchmark_min_time=0.05

#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_function.h"
#include "driver/compile.h"
#include "driver/variant_compiler.h"
#include "ir/graph.h"
#include "ir/value.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_function.h"
#include "runtime/half.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "tools/bench/workspace_file.h"

namespace lathe {
namespace {

// The concrete sizes of a static annotation.
absl::StatusOr<std::vector<int64_t>> ConcreteSizes(const ir::TensorMeta& m) {
  std::vector<int64_t> sizes;
  for (const symbolic::Expr& e : m.sizes) {
    ASSIGN_OR_RETURN(symbolic::Value v, symbolic::Evaluate(e, {}));
    if (v.type != symbolic::ExprType::kInt) {
      return absl::InvalidArgumentError("a size is not an integer");
    }
    sizes.push_back(v.i);
  }
  return sizes;
}

// The default pipeline less its last pass (reinplace), for the *_noreinplace
// rows: what fusion does with the functional graph.
const std::vector<std::string> kPassesWithoutReinplace = {
    "tensorify_scalars", "decompose",      "cse", "dce",
    "constant_fold",     "remove_noop_ops"};

// One benchmark graph, compiled, with its inputs.
struct Case {
  std::unique_ptr<CompiledGraph> compiled;
  const codegen::CpuFunction* function = nullptr;  // compiled's
  mutable std::vector<ir::Value> inputs;           // RunWithPlan may rebind one
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  absl::Status status;  // why the case cannot run
  bool log_printed = false;
};

// One call of the case's function (its runtime wrapper inside, if compiled
// in).
absl::StatusOr<ir::Interpretation> RunCase(const Case& c) {
  return c.function->plan_applied() ? c.function->RunWithPlan(c.inputs)
                                    : c.function->Run(c.inputs);
}

// A random f32 or bf16 value for a tensor of `m` (every one of `sizes`):
// uniform in [-1, 1), 1 + that/8 for 1-d ones (norm weights and the swish
// scale), a short pattern repeated (distinct enough, and quick to make for
// the 64M-element inputs).
absl::StatusOr<Tensor> RandomTensor(const ir::TensorMeta& m,
                                    std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(m));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(sizes, m.dtype));
  if (m.dtype != DType::kFloat32 && m.dtype != DType::kBFloat16) {
    return absl::UnimplementedError("only f32 and bf16 inputs are generated");
  }
  const int64_t n = t.numel();
  std::vector<float> pattern(4099);
  for (float& v : pattern) v = u(rng);
  const bool one_d = sizes.size() == 1;
  for (int64_t i = 0; i < n; ++i) {
    float v = pattern[i % pattern.size()];
    v = one_d ? 1.0f + v / 8 : v;
    if (m.dtype == DType::kFloat32) {
      t.data<float>()[i] = v;
    } else {
      t.data<BFloat16>()[i] = BFloat16::FromFloat(v);
    }
  }
  return t;
}

// Walks the graph text through the driver for the cpu, with random inputs
// for every placeholder; `freeze`: every input but the first (the data; a
// model's parameters follow it) frozen, as torch.compile(freezing=True).
absl::Status CompileCase(const std::string& text, const std::string& source,
                         bool reinplace, bool freeze, bool autotune, Case* c) {
  CompileOptions options;
  options.source = source;
  options.backend = &codegen::CpuBackend();
  // --autotune's measurement, in this process (a cache of its own: no
  // choice from an earlier run).
  static auto* tuning_cache = new MemoryCache();
  options.autotune = autotune;
  if (autotune) options.cache = tuning_cache;
  if (!reinplace) options.only_passes = kPassesWithoutReinplace;
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, source));
  std::mt19937 rng(2026);
  for (const ir::Node* p : parsed.written->Placeholders()) {
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor) {
      return absl::UnimplementedError(
          absl::StrCat("input '", p->name(), "' is not a tensor"));
    }
    ASSIGN_OR_RETURN(Tensor t, RandomTensor(p->meta().tensor, rng));
    if (freeze && !c->inputs.empty()) {
      options.frozen[p->name()] = ir::Value::OfTensor(std::move(t));
      continue;
    }
    c->input_bytes += t.numel() * t.itemsize();
    c->inputs.push_back(ir::Value::OfTensor(std::move(t)));
  }
  ASSIGN_OR_RETURN(c->compiled, Compile(parsed, options));
  c->function = c->compiled->function.get();
  // One call outside the timing: its outputs' bytes, and a warm start.
  ASSIGN_OR_RETURN(ir::Interpretation r, RunCase(*c));
  for (const ir::Value& out : r.outputs) {
    if (out.is_tensor()) {
      c->output_bytes += out.tensor.numel() * out.tensor.itemsize();
    }
  }
  return absl::OkStatus();
}

// The case for tools/bench/graphs/NAME.txt, compiled once per process.
Case& GetCase(const std::string& name, bool reinplace = true,
              bool freeze = false, bool autotune = false) {
  static auto* cases = new std::map<std::string, std::unique_ptr<Case>>();
  std::unique_ptr<Case>& c =
      (*cases)[absl::StrCat(name, reinplace, freeze, autotune)];
  if (c != nullptr) return *c;
  c = std::make_unique<Case>();
  std::string path = absl::StrCat("tools/bench/graphs/", name, ".txt");
  absl::StatusOr<std::string> text = ReadWorkspaceFile(path);
  c->status = text.status();
  if (c->status.ok()) {
    c->status = CompileCase(*text, path, reinplace, freeze, autotune, c.get());
  }
  return *c;
}

void SkipWith(benchmark::State& state, const absl::Status& status) {
  state.SkipWithError(std::string(status.message()).c_str());
}

// The timed loop: Run on the prepared inputs.
void RunLoop(benchmark::State& state, const Case& c) {
  for (auto _ : state) {
    absl::StatusOr<ir::Interpretation> r = RunCase(c);
    if (!r.ok()) {
      SkipWith(state, r.status());
      break;
    }
    benchmark::DoNotOptimize(r->outputs.data());
  }
}

void SetBytes(benchmark::State& state, double bytes_per_call) {
  state.counters["bytes"] = benchmark::Counter(
      bytes_per_call * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::OneK::kIs1000);
}

void SetFlops(benchmark::State& state, double flops_per_call) {
  state.counters["flops"] = benchmark::Counter(
      flops_per_call * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::OneK::kIs1000);
}

// ---- a. the fused chain and the bandwidth ceiling ---------------------------

constexpr int64_t kChainN = int64_t{8192} * 8192;

void BM_SwishAffine(benchmark::State& state, bool reinplace) {
  Case& c = GetCase("swish_affine_8192x8192", reinplace);
  if (!c.status.ok()) return SkipWith(state, c.status);
  RunLoop(state, c);
  // x read and out written, plus the two [8192] vectors.
  SetBytes(state, static_cast<double>(c.input_bytes + c.output_bytes));
  state.counters["kernels"] = c.function->stats().kernels;
}
BENCHMARK_CAPTURE(BM_SwishAffine, default, true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Without reinplace (see README.md: the in-place chain splits the fusion).
BENCHMARK_CAPTURE(BM_SwishAffine, noreinplace, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// STREAM's arrays, first touched by the threads that use them.
struct StreamArrays {
  float* a;
  float* b;
  float* c;
  StreamArrays() {
    a = static_cast<float*>(std::aligned_alloc(64, kChainN * sizeof(float)));
    b = static_cast<float*>(std::aligned_alloc(64, kChainN * sizeof(float)));
    c = static_cast<float*>(std::aligned_alloc(64, kChainN * sizeof(float)));
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < kChainN; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  }
};

StreamArrays& Stream() {
  static auto* arrays = new StreamArrays();
  return *arrays;
}

// a[i] = b[i] + s * c[i]: 2 arrays read, 1 written (STREAM counts 3).
void BM_StreamTriad(benchmark::State& state) {
  StreamArrays& s = Stream();
  float* __restrict a = s.a;
  const float* __restrict b = s.b;
  const float* __restrict c = s.c;
  const float scalar = 3.0f;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < kChainN; ++i) a[i] = b[i] + scalar * c[i];
    benchmark::ClobberMemory();
  }
  SetBytes(state, 3.0 * kChainN * sizeof(float));
  state.counters["threads"] = omp_get_max_threads();
}
BENCHMARK(BM_StreamTriad)->Unit(benchmark::kMillisecond)->UseRealTime();

// a[i] = s * b[i]: 1 array read, 1 written — the swish chain's traffic.
void BM_StreamScale(benchmark::State& state) {
  StreamArrays& s = Stream();
  float* __restrict a = s.a;
  const float* __restrict b = s.b;
  const float scalar = 3.0f;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < kChainN; ++i) a[i] = scalar * b[i];
    benchmark::ClobberMemory();
  }
  SetBytes(state, 2.0 * kChainN * sizeof(float));
  state.counters["threads"] = omp_get_max_threads();
}
BENCHMARK(BM_StreamScale)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- b. normalizations, the MLP layer, the transformer block ---------------

// Bytes-bound rows (inputs read + outputs written).
void BM_Memory(benchmark::State& state, const std::string& name,
               bool reinplace = true) {
  Case& c = GetCase(name, reinplace);
  if (!c.status.ok()) return SkipWith(state, c.status);
  RunLoop(state, c);
  SetBytes(state, static_cast<double>(c.input_bytes + c.output_bytes));
  state.counters["kernels"] = c.function->stats().kernels;
}
BENCHMARK_CAPTURE(BM_Memory, softmax_4096x2560, "softmax_4096x2560")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Memory, layernorm_4096x2560, "layernorm_4096x2560")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// x.sum() and torch.var_mean(x) over f32 [4096, 4096]: reductions to one
// value, their loops' chunks folded under a lock.
BENCHMARK_CAPTURE(BM_Memory, sum_var_mean_4096x4096, "sum_var_mean_4096x4096")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// x.t() * 2 over f32 [4096, 4096]: the result keeps x's layout, so the
// loops run transposed to the sizes (the scheduler's loop reordering).
BENCHMARK_CAPTURE(BM_Memory, transposed_scale_4096x4096,
                  "transposed_scale_4096x4096")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Memory, softmax_4096x2560_noreinplace, "softmax_4096x2560",
                  false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Memory, layernorm_4096x2560_noreinplace,
                  "layernorm_4096x2560", false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Matmul-bound rows; `flops` is the matmuls' 2*M*N*K per call. `freeze`:
// every parameter frozen (torch.compile(freezing=True)'s rows): batch norm
// folded into the convolutions, weights packed once.
void BM_Matmul(benchmark::State& state, const std::string& name, double flops,
               bool freeze = false) {
  Case& c = GetCase(name, /*reinplace=*/true, freeze);
  if (!c.status.ok()) return SkipWith(state, c.status);
  RunLoop(state, c);
  SetFlops(state, flops);
  state.counters["kernels"] = c.function->stats().kernels;
}

// A model row compiled with --autotune (driver/autotune.h): each kernel's
// threads (and each 3x3 convolution's algorithm) measured at compile time;
// `tuned` counts the kernels taken off the whole team or onto Winograd's
// algorithm (the label: the tuner's whole-call comparison).
void BM_Tuned(benchmark::State& state, const std::string& name, double flops,
              bool freeze = false) {
  Case& c = GetCase(name, /*reinplace=*/true, freeze, /*autotune=*/true);
  if (!c.status.ok()) return SkipWith(state, c.status);
  RunLoop(state, c);
  SetFlops(state, flops);
  int tuned = 0;
  for (const codegen::Kernel& k : c.function->lowered().program.kernels) {
    tuned += k.threads != 0 || k.split_batch || k.winograd;
  }
  state.counters["kernels"] = c.function->stats().kernels;
  state.counters["tuned"] = tuned;
  for (const std::string& line : c.compiled->log) {
    if (absl::StrContains(line, "whole calls")) state.SetLabel(line);
  }
  // LATHE_BENCH_TUNING_LOG=1 prints the tuner's whole log once per row.
  if (std::getenv("LATHE_BENCH_TUNING_LOG") != nullptr && !c.log_printed) {
    c.log_printed = true;
    for (const std::string& line : c.compiled->log) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
}

constexpr double MlpFlops(double batch) { return 2 * batch * 1024 * 4096; }

// batch 8, seq 128, d 512, 8 heads, MLP 2048: q/k/v/o projections
// (4 * 2*T*d*d), scores and att@v (2 * 2*B*S*S*d), the MLP (2 * 2*T*d*m).
constexpr double TransformerFlops() {
  double b = 8, s = 128, d = 512, m = 2048, t = b * s;
  return 4 * 2 * t * d * d + 2 * 2 * b * s * s * d + 2 * 2 * t * d * m;
}

// A model's two rows: tools/bench/graphs/NAME.txt as it is, and with every
// parameter frozen (NAME_frozen).
#define LATHE_MODEL_ROWS(NAME, FLOPS)                             \
  BENCHMARK_CAPTURE(BM_Matmul, NAME, #NAME, FLOPS)                \
      ->Unit(benchmark::kMillisecond)                             \
      ->UseRealTime();                                            \
  BENCHMARK_CAPTURE(BM_Matmul, NAME##_frozen, #NAME, FLOPS, true) \
      ->Unit(benchmark::kMillisecond)                             \
      ->UseRealTime()

LATHE_MODEL_ROWS(mlp_gelu_b64, MlpFlops(64));
LATHE_MODEL_ROWS(mlp_gelu_b1024, MlpFlops(1024));
LATHE_MODEL_ROWS(transformer_block_b8_s128_d512, TransformerFlops());
// The same block in bf16: every input and weight (capture_examples.py).
LATHE_MODEL_ROWS(transformer_block_bf16_b8_s128_d512, TransformerFlops());
// The same block as torch.compile's AOT forward graph (view/permute/clone
// where make_fx's graph has _unsafe_view).
BENCHMARK_CAPTURE(BM_Matmul, transformer_block_aot_b8_s128_d512,
                  "transformer_block_aot_b8_s128_d512", TransformerFlops())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_CAPTURE(BM_Tuned, mlp_gelu_b64, "mlp_gelu_b64", MlpFlops(64))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Tuned, transformer_block_b8_s128_d512,
                  "transformer_block_b8_s128_d512", TransformerFlops())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// small_cnn at batch 32 on 64x64 images: its two 3x3 convolutions
// (2*N*O*OH*OW*C*9: 3 -> 32 channels at 64x64, 32 -> 64 at 32x32) and the
// linear layer.
constexpr double SmallCnnFlops() {
  double n = 32;
  return 2 * n * 32 * 64 * 64 * 3 * 9 + 2 * n * 64 * 32 * 32 * 32 * 9 +
         2 * n * 10 * 64 * 16 * 16;
}

BENCHMARK_CAPTURE(BM_Matmul, small_cnn_b32_64x64, "small_cnn_b32_64x64",
                  SmallCnnFlops())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, small_cnn_b32_64x64_frozen, "small_cnn_b32_64x64",
                  SmallCnnFlops(), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Tuned: 3x3 convolutions measured with Winograd's algorithm too.
BENCHMARK_CAPTURE(BM_Tuned, small_cnn_b32_64x64_frozen, "small_cnn_b32_64x64",
                  SmallCnnFlops(), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// resnet18 (tools/examples/capture_examples.py) at batch n on size x size
// images: each convolution's 2*N*O*OH*OW*C*k*k (padding k/2) and the
// classifier's.
double Resnet18Flops(double n, int64_t size) {
  double flops = 0;
  // A convolution of c -> o channels on s x s inputs; its output's size.
  auto conv = [&](double c, double o, int64_t k, int64_t stride, int64_t s) {
    int64_t out = (s + 2 * (k / 2) - k) / stride + 1;
    flops += 2 * n * o * static_cast<double>(out * out) * c * k * k;
    return out;
  };
  int64_t s = conv(3, 64, 7, 2, size);
  s = (s + 2 - 3) / 2 + 1;  // the max pool: 3x3, stride 2, padding 1
  double c = 64;
  for (int stage = 0; stage < 4; ++stage) {
    double o = 64 << stage;
    int64_t stride = stage > 0 ? 2 : 1;
    int64_t t = conv(c, o, 3, stride, s);
    conv(o, o, 3, 1, t);
    if (stage > 0) conv(c, o, 1, stride, s);
    conv(o, o, 3, 1, t);
    conv(o, o, 3, 1, t);
    s = t;
    c = o;
  }
  return flops + 2 * n * 1000 * 512;
}

BENCHMARK_CAPTURE(BM_Matmul, resnet18_b8_112x112, "resnet18_b8_112x112",
                  Resnet18Flops(8, 112))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, resnet18_b8_112x112_frozen, "resnet18_b8_112x112",
                  Resnet18Flops(8, 112), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, resnet18_b8_224x224, "resnet18_b8_224x224",
                  Resnet18Flops(8, 224))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, resnet18_b8_224x224_frozen, "resnet18_b8_224x224",
                  Resnet18Flops(8, 224), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Tuned, resnet18_b8_112x112_frozen, "resnet18_b8_112x112",
                  Resnet18Flops(8, 112), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Tuned, resnet18_b8_224x224_frozen, "resnet18_b8_224x224",
                  Resnet18Flops(8, 224), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A BERT-base-shaped encoder layer (d 768, 12 heads, MLP 3072) at batch n,
// seq s: q/k/v/o projections, scores and att@v, the MLP.
constexpr double BertFlops(double n, double s) {
  double d = 768, m = 3072, t = n * s;
  return 4 * 2 * t * d * d + 2 * 2 * n * s * s * d + 2 * 2 * t * d * m;
}

// A 4-layer GPT-2-small-shaped decoder (d 768, 12 heads, MLP 3072) at batch
// n, seq s: per layer the fused qkv and the output projections, scores and
// att@v counted in full (causal attention needs half of them), the MLP.
constexpr double Gpt2Flops(double n, double s) {
  double d = 768, m = 3072, t = n * s;
  return 4 * (2 * t * d * 3 * d + 2 * t * d * d + 2 * 2 * n * s * s * d +
              2 * 2 * t * d * m);
}

LATHE_MODEL_ROWS(bert_layer_b8_s128, BertFlops(8, 128));
BENCHMARK_CAPTURE(BM_Tuned, bert_layer_b8_s128, "bert_layer_b8_s128",
                  BertFlops(8, 128))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
LATHE_MODEL_ROWS(bert_layer_bf16_b8_s128, BertFlops(8, 128));
LATHE_MODEL_ROWS(gpt2_l4_b1_s256, Gpt2Flops(1, 256));
BENCHMARK_CAPTURE(BM_Tuned, gpt2_l4_b1_s256, "gpt2_l4_b1_s256",
                  Gpt2Flops(1, 256))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
LATHE_MODEL_ROWS(gpt2_l4_b8_s256, Gpt2Flops(8, 256));
BENCHMARK_CAPTURE(BM_Tuned, gpt2_l4_b8_s256, "gpt2_l4_b8_s256",
                  Gpt2Flops(8, 256))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
LATHE_MODEL_ROWS(gpt2_l4_bf16_b1_s256, Gpt2Flops(1, 256));
LATHE_MODEL_ROWS(gpt2_l4_bf16_b8_s256, Gpt2Flops(8, 256));

// ---- c. compile time --------------------------------------------------------

// ---- the host side of one call ----------------------------------------------

// A 16-element add and mul with two outputs: the kernels do next to nothing,
// so the time is what a call costs around them (input checks, symbol
// binding, allocation, wrapping the outputs).
void BM_CallOverhead(benchmark::State& state) {
  Case& c = GetCase("call_overhead_16");
  if (!c.status.ok()) return SkipWith(state, c.status);
  RunLoop(state, c);
}
BENCHMARK(BM_CallOverhead)->Unit(benchmark::kNanosecond);

// One whole compile per iteration (the driver's walk for the cpu); lathe's
// own time and the C++ compiler's, per call.
void BM_Compile(benchmark::State& state, const std::string& name) {
  std::string path = absl::StrCat("tools/bench/graphs/", name, ".txt");
  absl::StatusOr<std::string> text = ReadWorkspaceFile(path);
  if (!text.ok()) return SkipWith(state, text.status());
  double frontend = 0, lower = 0, cxx = 0;
  int kernels = 0;
  for (auto _ : state) {
    CompileOptions options;
    options.source = path;
    options.backend = &codegen::CpuBackend();
    absl::StatusOr<std::unique_ptr<CompiledGraph>> g =
        CompileGraphText(*text, options);
    if (!g.ok()) return SkipWith(state, g.status());
    // The steps before lowering are the front end's.
    for (const StepTime& step : (*g)->steps) {
      if (step.name == "lower") break;
      frontend += step.seconds;
    }
    const codegen::CpuStats& stats = (*g)->function->stats();
    lower += stats.lower_seconds;
    cxx += stats.compiler_seconds;
    kernels = stats.kernels;
    state.PauseTiming();  // the function's temporary directory goes
    g->reset();
    state.ResumeTiming();
  }
  double n = static_cast<double>(state.iterations());
  state.counters["frontend_s"] = frontend / n;
  state.counters["lower_s"] = lower / n;
  state.counters["lathe_s"] = (frontend + lower) / n;
  state.counters["cxx_s"] = cxx / n;
  state.counters["kernels"] = kernels;
}
BENCHMARK_CAPTURE(BM_Compile, mlp_gelu_b64, "mlp_gelu_b64")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, transformer_block_b8_s128_d512,
                  "transformer_block_b8_s128_d512")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, bert_layer_b8_s128, "bert_layer_b8_s128")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, gpt2_l4_b1_s256, "gpt2_l4_b1_s256")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, transformer_block_aot_b8_s128_d512,
                  "transformer_block_aot_b8_s128_d512")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---- d. the first call of a cold compile --------------------------------

// From the graph text to the first call's results, each compile with an
// empty compile cache (cold: a tiered compile probes it and misses), through
// the compiled-function API a program or torch.compile(backend="lathe") uses
// (driver/variant_compiler.h): `tiered` runs the first call on the interpreter
// while the library builds on another thread; plain waits for the library. The
// row's time is the first result's; counters: callable_s, until the first
// call's compile returned a variant to run (the parse and VariantCompiler's
// compile time); first_result_s; and library_s, until the library runs the
// calls (tiered: its build done and swapped in). `warm`: tiered, with a compile
// cache that holds the library (a compile before the timed ones filled
// it): the probe loads it, and no first tier runs.
enum class FirstCall { kPlain, kTiered, kWarm };
void BM_FirstCall(benchmark::State& state, const std::string& name,
                  FirstCall how) {
  std::string path = absl::StrCat("tools/bench/graphs/", name, ".txt");
  absl::StatusOr<std::string> text = ReadWorkspaceFile(path);
  if (!text.ok()) return SkipWith(state, text.status());
  const bool tiered = how != FirstCall::kPlain;
  MemoryCache warm;
  if (how == FirstCall::kWarm) {
    absl::StatusOr<ParsedGraph> parsed = Parse(*text, path);
    if (!parsed.ok()) return SkipWith(state, parsed.status());
    CompileOptions options;
    options.source = path;
    options.backend = &codegen::CpuBackend();
    options.cache = &warm;
    absl::StatusOr<std::unique_ptr<CompiledGraph>> filled =
        Compile(*parsed, options);
    if (!filled.ok()) return SkipWith(state, filled.status());
  }
  double callable = 0, first = 0, library = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // The inputs, made before the clock starts.
    absl::StatusOr<ParsedGraph> shapes = Parse(*text, path);
    if (!shapes.ok()) return SkipWith(state, shapes.status());
    std::mt19937 rng(2026);
    std::vector<Operand> args;
    for (const ir::Node* p : shapes->written->Placeholders()) {
      absl::StatusOr<Tensor> t = RandomTensor(p->meta().tensor, rng);
      if (!t.ok()) return SkipWith(state, t.status());
      args.push_back(Operand::Of(*std::move(t)));
    }
    MemoryCache cold;
    CacheBackend* cache = how == FirstCall::kWarm ? &warm : &cold;
    state.ResumeTiming();
    auto start = std::chrono::steady_clock::now();
    auto since = [&start] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
          .count();
    };
    absl::StatusOr<ParsedGraph> parsed = Parse(*text, path);
    if (!parsed.ok()) return SkipWith(state, parsed.status());
    const double parse_s = since();
    VariantCompiler compiler(
        *std::move(parsed), {.source = path, .backend = &codegen::CpuBackend()},
        cache);
    absl::StatusOr<std::unique_ptr<CompiledFunction>> f =
        compiler.Function({.tiered = tiered});
    if (!f.ok()) return SkipWith(state, f.status());
    absl::StatusOr<std::vector<Operand>> out = (*f)->Call(absl::MakeSpan(args));
    if (!out.ok()) return SkipWith(state, out.status());
    const double first_s = since();
    const double callable_s = parse_s + compiler.compile_seconds();
    first += first_s;
    callable += callable_s;
    state.PauseTiming();
    compiler.WaitForBuilds();
    const double library_s = since();
    library += library_s;
    if (std::getenv("LATHE_BENCH_FIRST_CALL_LOG") != nullptr) {
      std::fprintf(stderr,
                   "%s: callable %.1f ms, first result %.1f ms, library %.1f "
                   "ms\n",
                   name.c_str(), callable_s * 1e3, first_s * 1e3,
                   library_s * 1e3);
    }
    if ((*f)->upgrades() != (how == FirstCall::kTiered ? 1 : 0)) {
      return SkipWith(
          state, absl::InternalError("a first tier ran, or was not replaced"));
    }
    f->reset();
    state.ResumeTiming();
  }
  double n = static_cast<double>(state.iterations());
  state.counters["callable_s"] = callable / n;
  state.counters["first_result_s"] = first / n;
  state.counters["library_s"] = library / n;
}
#define LATHE_FIRST_CALL_ROW(name, suffix, how)                        \
  BENCHMARK_CAPTURE(BM_FirstCall, name##suffix, #name, FirstCall::how) \
      ->Unit(benchmark::kMillisecond)                                  \
      ->Iterations(3)                                                  \
      ->UseRealTime()
#define LATHE_FIRST_CALL_ROWS(name)             \
  LATHE_FIRST_CALL_ROW(name, _plain, kPlain);   \
  LATHE_FIRST_CALL_ROW(name, _tiered, kTiered); \
  LATHE_FIRST_CALL_ROW(name, _tiered_warm, kWarm)
LATHE_FIRST_CALL_ROWS(mlp_gelu_b64);
LATHE_FIRST_CALL_ROWS(transformer_block_b8_s128_d512);

}  // namespace
}  // namespace lathe

int main(int argc, char** argv) {
  lathe::SetBenchmarkBinary(argv[0]);
  // As lathec: the runtime may hold half the physical memory (the big rows
  // hold about 1.5 GB together).
  lathe::SetHostMemoryLimit(lathe::DefaultMaxMemory());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
