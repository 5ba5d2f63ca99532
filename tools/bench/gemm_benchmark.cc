// f32 row-major GEMM through the three candidate libraries for lathe's
// Extern kernels (aten.mm / aten.addmm / aten.bmm), at the shapes of an MLP
// layer and of a BERT-base transformer block:
//
//   eigen         Eigen 3.4: Map<row-major>, c.noalias() += a * b, compiled
//                 here with -O3 -march=native -fopenmp (Eigen::setNbThreads)
//   openblas      cblas_sgemm from libopenblas (Debian's pthreads build;
//                 openblas_set_num_threads)
//   dnnl_sgemm    oneDNN 2.6's dnnl_sgemm (row-major BLAS-like call; OpenMP
//                 runtime: omp_set_num_threads)
//   dnnl_matmul   oneDNN's matmul primitive, created once outside the timed
//                 loop (as an AOT artifact would at load time), bias fused
//
// BM_gemm_bt: nn.Linear's form, addmm(bias, x, weight.t()) with the [n, k]
// weight passed transposed (transb = 'T' / CblasTrans / .transpose()).
//
// addmm (bias) is C = bias (broadcast over rows) + A.B: for eigen, openblas
// and dnnl_sgemm the rows of C are filled with the bias, then GEMM with
// beta = 1; dnnl_matmul takes the bias as an argument. Batched shapes (12
// attention heads) loop over the heads with 2-D calls, except dnnl_matmul
// which takes the 3-D problem. GFLOP/s counts 2*M*N*K per matrix.
//
// BM_mixed_*: what a generated program does between GEMMs, an OpenMP
// `parallel for` pointwise kernel (lathe's codegen uses libgomp) alternating
// with the GEMM, all at 2 threads. BM_nested_*: GEMMs issued from inside an
// `omp parallel` region (one head per thread), library threads 1 or 2; the
// "threads" counter is the process's thread count afterwards.
//
//   bazel run -c opt //tools/bench:gemm_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"

namespace lathe::bench {
namespace {

// Repetitions' best: min of times, max of rates (the "max" row's
// GFLOPS / items_per_second go with the "min" row's time).
double MinOf(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}
double MaxOf(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

#define LATHE_DNNL_CHECK(call)                                           \
  do {                                                                   \
    const dnnl_status_t st = (call);                                     \
    if (st != dnnl_success) {                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, \
                   #call, static_cast<int>(st));                         \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

struct Shape {
  const char* name;
  int64_t batch, m, k, n;
  bool bias;
};

constexpr Shape kShapes[] = {
    {"mlp_b64_1024x4096", 1, 64, 1024, 4096, true},
    {"mlp_b1024_1024x4096", 1, 1024, 1024, 4096, true},
    {"attn_proj_512x768x768", 1, 512, 768, 768, true},
    {"ffn_up_512x768x3072", 1, 512, 768, 3072, true},
    {"ffn_down_512x3072x768", 1, 512, 3072, 768, true},
    {"attn_qk_12x512x64x512", 12, 512, 64, 512, false},
    {"attn_av_12x512x512x64", 12, 512, 512, 64, false},
    {"small_32x64x32", 1, 32, 64, 32, true},
};

enum Lib { kEigen, kOpenBlas, kDnnlSgemm, kDnnlMatmul, kNumLibs };
constexpr const char* kLibNames[] = {"eigen", "openblas", "dnnl_sgemm",
                                     "dnnl_matmul"};

// Same thread count for every runtime: libgomp (oneDNN, Eigen, our pointwise
// kernels) and OpenBLAS's own pthreads pool.
void SetThreads(int threads) {
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  openblas_set_num_threads(threads);
}

int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

struct Problem {
  Shape shape;
  std::vector<float> a, b, c, bias;  // [batch,m,k], [batch,k,n], [batch,m,n]

  explicit Problem(const Shape& s)
      : shape(s),
        a(s.batch * s.m * s.k),
        b(s.batch * s.k * s.n),
        c(s.batch * s.m * s.n, 0.0f),
        bias(s.n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    for (float& v : bias) v = u(rng);
  }
  const float* A(int64_t h) const { return a.data() + h * shape.m * shape.k; }
  const float* B(int64_t h) const { return b.data() + h * shape.k * shape.n; }
  float* C(int64_t h) { return c.data() + h * shape.m * shape.n; }
  double Flops() const {
    return 2.0 * shape.batch * shape.m * shape.n * shape.k;
  }
};

// C rows = bias, for the beta = 1 formulation of addmm.
void FillBias(const float* bias, float* c, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i) std::memcpy(c + i * n, bias, n * 4);
}

using RowMajor =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void EigenGemm(const float* a, const float* b, const float* bias, float* c,
               int64_t m, int64_t k, int64_t n) {
  Eigen::Map<const RowMajor> ma(a, m, k), mb(b, k, n);
  Eigen::Map<RowMajor> mc(c, m, n);
  if (bias != nullptr) {
    mc.rowwise() = Eigen::Map<const Eigen::RowVectorXf>(bias, n);
    mc.noalias() += ma * mb;
  } else {
    mc.noalias() = ma * mb;
  }
}

void OpenBlasGemm(const float* a, const float* b, const float* bias, float* c,
                  int64_t m, int64_t k, int64_t n) {
  if (bias != nullptr) FillBias(bias, c, m, n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b,
              n, bias != nullptr ? 1.0f : 0.0f, c, n);
}

void DnnlSgemm(const float* a, const float* b, const float* bias, float* c,
               int64_t m, int64_t k, int64_t n) {
  if (bias != nullptr) FillBias(bias, c, m, n);
  LATHE_DNNL_CHECK(dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n,
                              bias != nullptr ? 1.0f : 0.0f, c, n));
}

// oneDNN's matmul primitive over a Problem's buffers (3-D when batched).
class DnnlMatmul {
 public:
  explicit DnnlMatmul(Problem& p) {
    const Shape& s = p.shape;
    LATHE_DNNL_CHECK(dnnl_engine_create(&engine_, dnnl_cpu, 0));
    LATHE_DNNL_CHECK(
        dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags));
    const bool batched = s.batch > 1;
    const int nd = batched ? 3 : 2;
    const dnnl_format_tag_t tag = batched ? dnnl_abc : dnnl_ab;
    dnnl_dims_t src_dims, wei_dims, dst_dims, bias_dims;
    if (batched) {
      const dnnl_dims_t sd = {s.batch, s.m, s.k}, wd = {s.batch, s.k, s.n},
                        dd = {s.batch, s.m, s.n};
      std::memcpy(src_dims, sd, sizeof sd);
      std::memcpy(wei_dims, wd, sizeof wd);
      std::memcpy(dst_dims, dd, sizeof dd);
    } else {
      const dnnl_dims_t sd = {s.m, s.k}, wd = {s.k, s.n}, dd = {s.m, s.n};
      std::memcpy(src_dims, sd, sizeof sd);
      std::memcpy(wei_dims, wd, sizeof wd);
      std::memcpy(dst_dims, dd, sizeof dd);
    }
    dnnl_memory_desc_t src_md, wei_md, dst_md, bias_md;
    LATHE_DNNL_CHECK(
        dnnl_memory_desc_init_by_tag(&src_md, nd, src_dims, dnnl_f32, tag));
    LATHE_DNNL_CHECK(
        dnnl_memory_desc_init_by_tag(&wei_md, nd, wei_dims, dnnl_f32, tag));
    LATHE_DNNL_CHECK(
        dnnl_memory_desc_init_by_tag(&dst_md, nd, dst_dims, dnnl_f32, tag));
    if (s.bias) {
      bias_dims[0] = 1;
      bias_dims[1] = s.n;
      LATHE_DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bias_md, 2, bias_dims,
                                                    dnnl_f32, dnnl_ab));
    }
    dnnl_matmul_desc_t desc;
    LATHE_DNNL_CHECK(dnnl_matmul_desc_init(
        &desc, &src_md, &wei_md, s.bias ? &bias_md : nullptr, &dst_md));
    LATHE_DNNL_CHECK(
        dnnl_primitive_desc_create(&pd_, &desc, nullptr, engine_, nullptr));
    LATHE_DNNL_CHECK(dnnl_primitive_create(&prim_, pd_));
    LATHE_DNNL_CHECK(dnnl_memory_create(&src_, &src_md, engine_, p.a.data()));
    LATHE_DNNL_CHECK(dnnl_memory_create(&wei_, &wei_md, engine_, p.b.data()));
    LATHE_DNNL_CHECK(dnnl_memory_create(&dst_, &dst_md, engine_, p.c.data()));
    args_.push_back({DNNL_ARG_SRC, src_});
    args_.push_back({DNNL_ARG_WEIGHTS, wei_});
    args_.push_back({DNNL_ARG_DST, dst_});
    if (s.bias) {
      LATHE_DNNL_CHECK(
          dnnl_memory_create(&bias_, &bias_md, engine_, p.bias.data()));
      args_.push_back({DNNL_ARG_BIAS, bias_});
    }
  }
  DnnlMatmul(const DnnlMatmul&) = delete;
  DnnlMatmul& operator=(const DnnlMatmul&) = delete;
  ~DnnlMatmul() {
    for (dnnl_memory_t m : {src_, wei_, dst_, bias_}) {
      if (m != nullptr) dnnl_memory_destroy(m);
    }
    dnnl_primitive_destroy(prim_);
    dnnl_primitive_desc_destroy(pd_);
    dnnl_stream_destroy(stream_);
    dnnl_engine_destroy(engine_);
  }

  void Run() {
    LATHE_DNNL_CHECK(dnnl_primitive_execute(
        prim_, stream_, static_cast<int>(args_.size()), args_.data()));
    LATHE_DNNL_CHECK(dnnl_stream_wait(stream_));
  }

  std::string Implementation() const {
    const char* impl = nullptr;
    dnnl_primitive_desc_query(pd_, dnnl_query_impl_info_str, 0, &impl);
    return impl != nullptr ? impl : "?";
  }

 private:
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  dnnl_primitive_desc_t pd_ = nullptr;
  dnnl_primitive_t prim_ = nullptr;
  dnnl_memory_t src_ = nullptr, wei_ = nullptr, dst_ = nullptr, bias_ = nullptr;
  std::vector<dnnl_exec_arg_t> args_;
};

using GemmFn = void (*)(const float*, const float*, const float*, float*,
                        int64_t, int64_t, int64_t);

// nn.Linear's addmm(bias, x, weight.t()): the [n, k] weight, transposed.
void EigenGemmBt(const float* a, const float* w, const float* bias, float* c,
                 int64_t m, int64_t k, int64_t n) {
  Eigen::Map<const RowMajor> ma(a, m, k), mw(w, n, k);
  Eigen::Map<RowMajor> mc(c, m, n);
  mc.rowwise() = Eigen::Map<const Eigen::RowVectorXf>(bias, n);
  mc.noalias() += ma * mw.transpose();
}

void OpenBlasGemmBt(const float* a, const float* w, const float* bias, float* c,
                    int64_t m, int64_t k, int64_t n) {
  FillBias(bias, c, m, n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, w,
              k, 1.0f, c, n);
}

void DnnlSgemmBt(const float* a, const float* w, const float* bias, float* c,
                 int64_t m, int64_t k, int64_t n) {
  FillBias(bias, c, m, n);
  LATHE_DNNL_CHECK(dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, k, w, k, 1.0f, c, n));
}

GemmFn Gemm2d(Lib lib) {
  switch (lib) {
    case kEigen:
      return EigenGemm;
    case kOpenBlas:
      return OpenBlasGemm;
    case kDnnlSgemm:
      return DnnlSgemm;
    default:
      return nullptr;
  }
}

// One addmm/bmm of `p` through `lib` (matmul: the primitive, if given).
void RunOnce(Lib lib, Problem& p, DnnlMatmul* matmul) {
  if (lib == kDnnlMatmul) {
    matmul->Run();
    return;
  }
  const Shape& s = p.shape;
  const GemmFn gemm = Gemm2d(lib);
  for (int64_t h = 0; h < s.batch; ++h) {
    gemm(p.A(h), p.B(h), s.bias ? p.bias.data() : nullptr, p.C(h), s.m, s.k,
         s.n);
  }
}

// The result against a double-precision dot product at sampled entries
// (b_transposed: B is stored [n, k]).
void Verify(const Problem& p, const char* what, bool b_transposed = false) {
  const Shape& s = p.shape;
  std::mt19937 rng(7);
  for (int t = 0; t < 64; ++t) {
    const int64_t h = rng() % s.batch, i = rng() % s.m, j = rng() % s.n;
    double want = s.bias ? p.bias[j] : 0.0, mag = std::fabs(want);
    for (int64_t q = 0; q < s.k; ++q) {
      const float bqj =
          b_transposed ? p.B(h)[j * s.k + q] : p.B(h)[q * s.n + j];
      const double term = static_cast<double>(p.A(h)[i * s.k + q]) * bqj;
      want += term;
      mag += std::fabs(term);
    }
    const float got = p.c[(h * s.m + i) * s.n + j];
    if (std::fabs(got - want) > 1e-5 * mag + 1e-6) {
      std::fprintf(stderr, "%s %s: C[%lld,%lld,%lld] = %g, want %g\n", what,
                   s.name, static_cast<long long>(h), static_cast<long long>(i),
                   static_cast<long long>(j), got, want);
      std::abort();
    }
  }
}

void SetGflops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOPS"] = benchmark::Counter(
      flops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Gemm(benchmark::State& state, Shape shape, Lib lib, int threads) {
  SetThreads(threads);
  Problem p(shape);
  std::unique_ptr<DnnlMatmul> matmul;
  if (lib == kDnnlMatmul) matmul = std::make_unique<DnnlMatmul>(p);
  RunOnce(lib, p, matmul.get());  // warm-up, and checked
  Verify(p, kLibNames[lib]);
  for (auto _ : state) {
    RunOnce(lib, p, matmul.get());
    benchmark::ClobberMemory();
  }
  SetGflops(state, p.Flops());
  state.counters["threads"] = ProcessThreads();
  if (matmul != nullptr) state.SetLabel(matmul->Implementation());
}

// addmm with a transposed [n, k] weight (nn.Linear), 2-D shapes only.
void BM_GemmBt(benchmark::State& state, Shape shape, Lib lib, int threads) {
  SetThreads(threads);
  Problem p(shape);
  const GemmFn gemm = lib == kEigen      ? EigenGemmBt
                      : lib == kOpenBlas ? OpenBlasGemmBt
                                         : DnnlSgemmBt;
  const Shape& s = p.shape;
  gemm(p.A(0), p.B(0), p.bias.data(), p.C(0), s.m, s.k, s.n);
  Verify(p, kLibNames[lib], /*b_transposed=*/true);
  for (auto _ : state) {
    gemm(p.A(0), p.B(0), p.bias.data(), p.C(0), s.m, s.k, s.n);
    benchmark::ClobberMemory();
  }
  SetGflops(state, p.Flops());
}

// An OpenMP pointwise kernel over C, as lathe's generated code would run
// between two GEMMs (here: relu(x) * 0.5, 2 threads, static schedule).
void PointwiseOmp(float* c, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) c[i] = c[i] > 0 ? 0.5f * c[i] : 0.0f;
}

// GEMM then pointwise, alternating; mode 0: both, 1: GEMM only, 2: pointwise
// only (to compare the sum of the parts with the mix).
void BM_Mixed(benchmark::State& state, Shape shape, Lib lib, int mode) {
  SetThreads(2);
  Problem p(shape);
  std::unique_ptr<DnnlMatmul> matmul;
  if (lib == kDnnlMatmul) matmul = std::make_unique<DnnlMatmul>(p);
  const int64_t size = static_cast<int64_t>(p.c.size());
  for (auto _ : state) {
    if (mode != 2) RunOnce(lib, p, matmul.get());
    if (mode != 1) PointwiseOmp(p.c.data(), size);
    benchmark::ClobberMemory();
  }
  SetGflops(state, mode == 2 ? 0.0 : p.Flops());
  state.counters["threads"] = ProcessThreads();
}

// The 12 heads split over `omp parallel` (2 threads), each head a 2-D GEMM
// with the library itself set to `inner` threads.
void BM_Nested(benchmark::State& state, Shape shape, Lib lib, int inner) {
  SetThreads(inner);
  Problem p(shape);
  const GemmFn gemm = Gemm2d(lib);
  const Shape& s = p.shape;
  for (auto _ : state) {
#pragma omp parallel for num_threads(2) schedule(static)
    for (int64_t h = 0; h < s.batch; ++h) {
      gemm(p.A(h), p.B(h), nullptr, p.C(h), s.m, s.k, s.n);
    }
    benchmark::ClobberMemory();
  }
  Verify(p, kLibNames[lib]);
  SetGflops(state, p.Flops());
  state.counters["threads"] = ProcessThreads();
}

std::string CpuIsa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return std::to_string(static_cast<int>(dnnl_get_effective_cpu_isa()));
  }
}

int RegisterAll() {
  const dnnl_version_t* v = dnnl_version();
  benchmark::AddCustomContext(
      "onednn", std::to_string(v->major) + "." + std::to_string(v->minor) +
                    "." + std::to_string(v->patch) + " cpu_runtime " +
                    std::to_string(v->cpu_runtime) + " isa " + CpuIsa());
  benchmark::AddCustomContext("openblas",
                              std::string(openblas_get_config()) + " core " +
                                  openblas_get_corename() + " parallel " +
                                  std::to_string(openblas_get_parallel()) +
                                  " (0 none, 1 pthreads, 2 openmp)");
  benchmark::AddCustomContext("eigen",
                              std::to_string(EIGEN_WORLD_VERSION) + "." +
                                  std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                  std::to_string(EIGEN_MINOR_VERSION) + " " +
                                  Eigen::SimdInstructionSetsInUse());
  for (const Shape& shape : kShapes) {
    for (int lib = 0; lib < kNumLibs; ++lib) {
      for (int threads : {1, 2}) {
        const std::string name = std::string("BM_gemm/") + shape.name + "/" +
                                 kLibNames[lib] +
                                 "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_Gemm, shape,
                                     static_cast<Lib>(lib), threads)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            ->ComputeStatistics("min", MinOf)
            ->ComputeStatistics("max", MaxOf);
      }
    }
  }
  for (const Shape& shape : kShapes) {
    if (shape.batch != 1 || !shape.bias) continue;
    for (int lib : {kEigen, kOpenBlas, kDnnlSgemm}) {
      for (int threads : {1, 2}) {
        const std::string name = std::string("BM_gemm_bt/") + shape.name + "/" +
                                 kLibNames[lib] +
                                 "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_GemmBt, shape,
                                     static_cast<Lib>(lib), threads)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            ->ComputeStatistics("min", MinOf)
            ->ComputeStatistics("max", MaxOf);
      }
    }
  }
  for (const Shape& shape : {kShapes[0], kShapes[2]}) {
    for (int lib = 0; lib < kNumLibs; ++lib) {
      for (int mode : {0, 1, 2}) {
        if (mode == 2 && lib != 0) continue;  // pointwise alone: once
        const char* what[] = {"gemm+pointwise", "gemm", "pointwise"};
        const std::string name = std::string("BM_mixed/") + shape.name + "/" +
                                 (mode == 2 ? "none" : kLibNames[lib]) + "/" +
                                 what[mode];
        benchmark::RegisterBenchmark(name.c_str(), BM_Mixed, shape,
                                     static_cast<Lib>(lib), mode)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond)
            ->ComputeStatistics("min", MinOf)
            ->ComputeStatistics("max", MaxOf);
      }
    }
  }
  for (int lib : {kEigen, kOpenBlas, kDnnlSgemm}) {
    for (int inner : {1, 2}) {
      const std::string name = std::string("BM_nested/") + kShapes[5].name +
                               "/" + kLibNames[lib] +
                               "/inner_threads:" + std::to_string(inner);
      benchmark::RegisterBenchmark(name.c_str(), BM_Nested, kShapes[5],
                                   static_cast<Lib>(lib), inner)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->ComputeStatistics("min", MinOf)
          ->ComputeStatistics("max", MaxOf);
    }
  }
  return 0;
}
const int kRegistered = RegisterAll();

}  // namespace
}  // namespace lathe::bench
