// Get and Put of a 200 KB entry (a compiled MLP's .so is about that size)
// in each tier of the compile cache: memory, disk (a fresh directory under
// /tmp) and Redis (a redis-server this benchmark starts on a loopback
// port). Run with
//
//   bazel run -c opt //runtime:compile_cache_benchmark

#include <stdlib.h>

#include <cstdio>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "runtime/compile_cache.h"
#include "runtime/file_io.h"
#include "runtime/redis_cache.h"
#include "runtime/testing/redis_server.h"

namespace lathe {
namespace {

constexpr int64_t kEntryBytes = 200 << 10;
const std::string kKey(64, 'a');

std::string Payload() {
  std::string bytes(kEntryBytes, '\0');
  for (int64_t i = 0; i < kEntryBytes; ++i) {
    bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  return bytes;
}

// A directory under /tmp, removed at exit.
const std::string& ScratchDir() {
  static const std::string* dir = [] {
    std::string d = "/tmp/lathe_cache_benchmark_XXXXXX";
    if (::mkdtemp(d.data()) == nullptr) std::abort();
    std::atexit([] { RemoveTree(ScratchDir()).IgnoreError(); });
    return new std::string(d);
  }();
  return *dir;
}

// The benchmark's redis-server, started on first use, killed at exit.
testing::RedisServer& Redis() {
  static const std::unique_ptr<testing::RedisServer> server = [] {
    auto s = testing::RedisServer::Start();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      std::abort();
    }
    return *std::move(s);
  }();
  return *server;
}

void Get(benchmark::State& state, CacheBackend& cache) {
  if (!cache.Put(kKey, Payload()).ok()) std::abort();
  for (auto _ : state) {
    absl::StatusOr<std::optional<CacheHit>> hit = cache.Get(kKey);
    if (!hit.ok() || !hit->has_value()) {
      state.SkipWithError("not a hit");
      break;
    }
    benchmark::DoNotOptimize((*hit)->bytes.data());
  }
  state.SetBytesProcessed(state.iterations() * kEntryBytes);
}

void Put(benchmark::State& state, CacheBackend& cache) {
  const std::string payload = Payload();
  for (auto _ : state) {
    if (!cache.Put(kKey, payload).ok()) {
      state.SkipWithError("Put failed");
      break;
    }
  }
  state.SetBytesProcessed(state.iterations() * kEntryBytes);
}

std::unique_ptr<RedisCache> NewRedisCache() {
  auto cache = RedisCache::Create(Redis().url());
  if (!cache.ok()) std::abort();
  return *std::move(cache);
}

void BM_MemoryGet(benchmark::State& state) {
  MemoryCache cache;
  Get(state, cache);
}
BENCHMARK(BM_MemoryGet);

void BM_DiskGet(benchmark::State& state) {
  DiskCache cache(ScratchDir() + "/get");
  Get(state, cache);
}
BENCHMARK(BM_DiskGet);

// The same under a fleet secret: every hit's HMAC checked.
void BM_DiskGetSigned(benchmark::State& state) {
  DiskCache::Options options;
  options.secret = "a fleet's secret";
  DiskCache cache(ScratchDir() + "/get_signed", options);
  Get(state, cache);
}
BENCHMARK(BM_DiskGetSigned);

void BM_RedisGet(benchmark::State& state) {
  std::unique_ptr<RedisCache> cache = NewRedisCache();
  Get(state, *cache);
}
BENCHMARK(BM_RedisGet);

void BM_RedisGetSigned(benchmark::State& state) {
  RedisCache::Options options;
  options.secret = "a fleet's secret";
  auto cache = RedisCache::Create(Redis().url(), options);
  if (!cache.ok()) std::abort();
  Get(state, **cache);
}
BENCHMARK(BM_RedisGetSigned);

void BM_MemoryPut(benchmark::State& state) {
  MemoryCache cache;
  Put(state, cache);
}
BENCHMARK(BM_MemoryPut);

void BM_DiskPut(benchmark::State& state) {
  DiskCache cache(ScratchDir() + "/put");
  Put(state, cache);
}
BENCHMARK(BM_DiskPut);

void BM_RedisPut(benchmark::State& state) {
  std::unique_ptr<RedisCache> cache = NewRedisCache();
  Put(state, *cache);
}
BENCHMARK(BM_RedisPut);

}  // namespace
}  // namespace lathe
