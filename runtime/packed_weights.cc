#include "runtime/packed_weights.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dnnl.h"
#include "runtime/onednn.h"

namespace lathe {
namespace {

using onednn::Memory;
using onednn::Ok;

// A packed copy: the layouts it was packed from and into, and oneDNN's
// own buffer in the second.
struct Packed {
  dnnl_memory_desc_t from, to;
  std::unique_ptr<Memory> memory;
};

// The registered ranges (start -> bytes and how many registrations) and
// the packed copies by their weights' address, under one mutex.
struct Frozen {
  std::mutex mu;
  std::map<const char*, std::pair<int64_t, int>> ranges;
  std::map<const void*, std::vector<Packed>> packed;
};

Frozen& State() {
  static auto* state = new Frozen();
  return *state;
}

}  // namespace

void RegisterFrozenWeights(const void* data, int64_t bytes) {
  if (data == nullptr || bytes <= 0) return;
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto [it, added] = s.ranges.emplace(static_cast<const char*>(data),
                                      std::make_pair(bytes, 0));
  if (it->second.first < bytes) it->second.first = bytes;
  ++it->second.second;
}

bool IsFrozen(const void* data, int64_t bytes) {
  const char* lo = static_cast<const char*>(data);
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ranges.upper_bound(lo);
  if (it == s.ranges.begin()) return false;
  --it;
  return bytes >= 0 && lo - it->first <= it->second.first - bytes;
}

void ForgetFrozenWeights(const void* data, int64_t bytes) {
  const char* lo = static_cast<const char*>(data);
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto range = s.ranges.find(lo);
  if (range != s.ranges.end() && --range->second.second == 0) {
    s.ranges.erase(range);
  }
  for (auto it = s.packed.begin(); it != s.packed.end();) {
    const char* w = static_cast<const char*>(it->first);
    it = w >= lo && w < lo + bytes ? s.packed.erase(it) : std::next(it);
  }
}

int64_t FrozenWeightsKept() {
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  int64_t n = 0;
  for (const auto& [w, kept] : s.packed) n += static_cast<int64_t>(kept.size());
  return n;
}

namespace onednn {

dnnl_memory_t KeptPacking(const void* w, const dnnl_memory_desc_t& from,
                          const dnnl_memory_desc_t& to,
                          dnnl_primitive_t reorder) {
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<Packed>& kept = s.packed[w];
  for (const Packed& k : kept) {
    if (dnnl_memory_desc_equal(&k.from, &from) &&
        dnnl_memory_desc_equal(&k.to, &to)) {
      return k.memory->m;
    }
  }
  dnnl_stream_t stream = Stream();
  if (stream == nullptr) return nullptr;
  OneThread one;
  Memory user(from, const_cast<void*>(w));
  auto packed = std::make_unique<Memory>(to, DNNL_MEMORY_ALLOCATE);
  if (user.m == nullptr || packed->m == nullptr ||
      !Execute(stream, reorder,
               {{DNNL_ARG_FROM, user.m}, {DNNL_ARG_TO, packed->m}}) ||
      !Ok(dnnl_stream_wait(stream))) {
    return nullptr;
  }
  dnnl_memory_t m = packed->m;
  kept.push_back(Packed{from, to, std::move(packed)});
  return m;
}

}  // namespace onednn
}  // namespace lathe
