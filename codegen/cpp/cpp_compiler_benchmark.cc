// A compiled library from the compile cache to a callable function:
// CompileSharedLibrary's hit (kernel.cc and kernel.so written), dlopen,
// dlsym and one call, for a .so of about 200 KB (a compiled MLP's size) in
// the memory, disk and Redis tiers (a redis-server this benchmark starts
// on a loopback port). Run with
//
//   bazel run -c opt //codegen/cpp:cpp_compiler_benchmark

#include <stdlib.h>

#include <cstdio>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "codegen/cpp/cpp_compiler.h"
#include "runtime/compile_cache.h"
#include "runtime/file_io.h"
#include "runtime/redis_cache.h"
#include "runtime/shared_library.h"
#include "runtime/testing/redis_server.h"

namespace lathe::codegen {
namespace {

// 200 KB of initialized data and a function.
constexpr char kSource[] =
    "extern \"C\" { char lathe_blob[200000] = {1};\n"
    "int lathe_answer() { return 42 + lathe_blob[0]; } }\n";

std::string NewDir(const std::string& name) {
  std::string dir = "/tmp/lathe_compile_hit_" + name + "_XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) std::abort();
  return dir;
}

void HitToCallable(benchmark::State& state, CacheBackend& cache) {
  const std::string warm = NewDir("warm");
  const std::string dir = NewDir("hit");
  auto first = CompileSharedLibrary(kSource, warm, &cache);
  if (!first.ok() || !first->cache_error.empty()) std::abort();
  for (auto _ : state) {
    auto lib = CompileSharedLibrary(kSource, dir, &cache);
    if (!lib.ok() || lib->cache_hit.empty()) {
      state.SkipWithError("not a hit");
      break;
    }
    auto so = SharedLibrary::Open(lib->path);
    if (!so.ok()) {
      state.SkipWithError("dlopen failed");
      break;
    }
    auto f = so->Symbol("lathe_answer");
    if (!f.ok() || reinterpret_cast<int (*)()>(*f)() != 43) {
      state.SkipWithError("wrong answer");
      break;
    }
  }
  RemoveTree(warm).IgnoreError();
  RemoveTree(dir).IgnoreError();
}

void BM_MemoryHitToCallable(benchmark::State& state) {
  MemoryCache cache;
  HitToCallable(state, cache);
}
BENCHMARK(BM_MemoryHitToCallable)->Unit(benchmark::kMicrosecond);

void BM_DiskHitToCallable(benchmark::State& state) {
  const std::string dir = NewDir("cache");
  {
    DiskCache cache(dir);
    HitToCallable(state, cache);
  }
  RemoveTree(dir).IgnoreError();
}
BENCHMARK(BM_DiskHitToCallable)->Unit(benchmark::kMicrosecond);

void BM_RedisHitToCallable(benchmark::State& state) {
  auto server = testing::RedisServer::Start();
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    std::abort();
  }
  auto cache = RedisCache::Create((*server)->url());
  if (!cache.ok()) std::abort();
  HitToCallable(state, **cache);
}
BENCHMARK(BM_RedisHitToCallable)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lathe::codegen
