// Compile time of the example MLP (tools/examples/mlp.txt) from graph text to
// a callable function (issue 12, benchmark c): the walk, lowering, the .so
// and its loading, as `lathec compile` runs it (driver/compile.h)
//
//   BM_Cold       no cache: the system C++ compiler builds the .so;
//   BM_WarmDisk   the .so from a disk cache a compile filled before;
//   BM_WarmRedis  the .so from a Redis cache on loopback (a redis-server this
//                 benchmark starts on a free port and stops).
//
// Each iteration compiles into a fresh temporary directory and calls the
// function once, so the time is to a function that has run.
//
//   bazel run -c opt //tools/bench:compile_time_benchmark

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/compile.h"
#include "runtime/compile_cache.h"
#include "runtime/redis_cache.h"
#include "runtime/tensor.h"
#include "runtime/testing/redis_server.h"

namespace lathe {
namespace {

constexpr char kMlp[] = R"(# lathe: hint s0 64
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0, 16][16, 1]cpu", w: "f32[16, 32][32, 1]cpu"):
        mm: "f32[s0, 32][32, 1]cpu" = torch.ops.aten.mm.default(x, w);  x = w = None
        relu: "f32[s0, 32][32, 1]cpu" = torch.ops.aten.relu.default(mm);  mm = None
        return (relu,)
)";

void Die(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
  std::abort();
}

// Compiles the MLP through `cache` and calls it once; the .so must come
// from the cache when `hit`.
void CompileAndCall(benchmark::State& state, CacheBackend* cache,
                    bool hit = true) {
  absl::StatusOr<std::unique_ptr<CompiledGraph>> a = CompileGraphText(
      kMlp,
      {.backend = &codegen::CpuBackend(), .cache = cache, .artifact = true});
  if (!a.ok()) Die(a.status());
  std::vector<Operand> args = {
      Operand::Of(Tensor::Empty({64, 16}, DType::kFloat32).value()),
      Operand::Of(Tensor::Empty({16, 32}, DType::kFloat32).value())};
  for (Operand& o : args) {
    for (int64_t i = 0; i < o.tensor.numel(); ++i)
      o.tensor.data<float>()[i] = 1;
  }
  ArgViews views;
  views.Build(args);
  std::vector<Operand> results, rebound;
  int rc = (*a)->function->user_call()->Invoke(views.span(), kDefaultSeed,
                                               &results, &rebound);
  if (rc != 0) Die((*a)->function->user_call()->CallStatus(rc));
  if (cache != nullptr && hit && (*a)->function->stats().cache_hit.empty()) {
    state.SkipWithError("expected a cache hit");
  }
}

std::string TempDir(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/lathe-" + name + "-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) Die(absl::InternalError("mkdtemp"));
  return dir;
}

void BM_Cold(benchmark::State& state) {
  for (auto _ : state) CompileAndCall(state, nullptr);
}
BENCHMARK(BM_Cold)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_WarmDisk(benchmark::State& state) {
  DiskCache disk(TempDir("disk-cache"));
  CompileAndCall(state, &disk, /*hit=*/false);  // fills it
  for (auto _ : state) CompileAndCall(state, &disk);
}
BENCHMARK(BM_WarmDisk)->Unit(benchmark::kMillisecond);

void BM_WarmRedis(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<testing::RedisServer>> server =
      testing::RedisServer::Start();
  if (!server.ok()) Die(server.status());
  absl::StatusOr<std::unique_ptr<RedisCache>> redis =
      RedisCache::Create((*server)->url());
  if (!redis.ok()) Die(redis.status());
  CompileAndCall(state, redis->get(), /*hit=*/false);  // fills it
  for (auto _ : state) CompileAndCall(state, redis->get());
}
BENCHMARK(BM_WarmRedis)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lathe
