#include "runtime/packed_weights.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dnnl.h"
#include "runtime/onednn.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

using onednn::Memory;
using onednn::Ok;

// A packed copy: the layouts it was packed from and into, and oneDNN's
// own buffer in the second.
struct Packed {
  dnnl_memory_desc_t from, to;
  Storage storage;  // counted in the host memory limit; outlives memory
  std::unique_ptr<Memory> memory;
};

// The registered ranges ((start, bytes) -> how many registrations) under
// `mu`, and the packed copies by their weights' address under `packing`
// (a first call packs under it, so IsFrozen, which every bf16 product
// calls, does not wait for a pack); ForgetFrozenWeights takes mu, then
// packing. `ranges` counts the registered ranges for IsFrozen's check
// without mu.
struct Frozen {
  std::mutex mu;
  std::map<std::pair<uintptr_t, int64_t>, int> registered;
  std::atomic<int64_t> ranges{0};
  std::mutex packing;
  std::map<const void*, std::vector<Packed>> packed;
};

Frozen& State() {
  static auto* state = new Frozen();
  return *state;
}

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

void RegisterFrozenWeights(const void* data, int64_t bytes) {
  if (data == nullptr || bytes <= 0) return;
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.registered[{Address(data), bytes}]++ == 0) s.ranges.fetch_add(1);
}

bool IsFrozen(const void* data, int64_t bytes) {
  Frozen& s = State();
  if (bytes < 0 || s.ranges.load(std::memory_order_acquire) == 0) return false;
  const uintptr_t lo = Address(data);
  std::lock_guard<std::mutex> lock(s.mu);
  // Every range starting at or before lo (few: a graph's constants).
  for (auto it = s.registered.begin();
       it != s.registered.end() && it->first.first <= lo; ++it) {
    const auto [start, size] = it->first;
    if (lo - start <= static_cast<uint64_t>(size) &&
        static_cast<uint64_t>(bytes) <= size - (lo - start)) {
      return true;
    }
  }
  return false;
}

void ForgetFrozenWeights(const void* data, int64_t bytes) {
  if (data == nullptr || bytes <= 0) return;
  const uintptr_t lo = Address(data);
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto range = s.registered.find({lo, bytes});
  if (range != s.registered.end()) {
    if (--range->second > 0) return;  // another registration holds it
    s.registered.erase(range);
    s.ranges.fetch_sub(1);
  }
  std::lock_guard<std::mutex> packing(s.packing);
  for (auto it = s.packed.lower_bound(data);
       it != s.packed.end() &&
       Address(it->first) - lo < static_cast<uint64_t>(bytes);) {
    it = s.packed.erase(it);
  }
}

int64_t FrozenWeightsKept() {
  Frozen& s = State();
  std::lock_guard<std::mutex> lock(s.packing);
  int64_t n = 0;
  for (const auto& [w, kept] : s.packed) n += static_cast<int64_t>(kept.size());
  return n;
}

namespace onednn {

dnnl_memory_t KeptCopy(const void* w, const dnnl_memory_desc_t& from,
                       const dnnl_memory_desc_t& to, PackFn pack, void* ctx) {
  Frozen& s = State();
  // The first call packs under the lock (once per weight and layout).
  std::lock_guard<std::mutex> lock(s.packing);
  auto at = s.packed.find(w);
  if (at != s.packed.end()) {
    for (const Packed& k : at->second) {
      if (dnnl_memory_desc_equal(&k.from, &from) &&
          dnnl_memory_desc_equal(&k.to, &to)) {
        return k.memory->m;
      }
    }
  }
  absl::StatusOr<Storage> storage = Storage::AllocateKept(
      std::max<int64_t>(1, dnnl_memory_desc_get_size(&to)));
  if (!storage.ok()) return nullptr;  // the host memory limit refused it
  auto packed = std::make_unique<Memory>(to, storage->data());
  if (packed->m == nullptr || !pack(ctx, w, packed->m)) return nullptr;
  dnnl_memory_t m = packed->m;
  s.packed[w].push_back(
      Packed{from, to, *std::move(storage), std::move(packed)});
  return m;
}

dnnl_memory_t KeptPacking(const void* w, const dnnl_memory_desc_t& from,
                          const dnnl_memory_desc_t& to,
                          dnnl_primitive_t reorder) {
  struct Reorder {
    const dnnl_memory_desc_t* from;
    dnnl_primitive_t reorder;
  } r{&from, reorder};
  return KeptCopy(
      w, from, to,
      [](void* ctx, const void* w, dnnl_memory_t to) {
        const Reorder& r = *static_cast<const Reorder*>(ctx);
        dnnl_stream_t stream = Stream();
        if (stream == nullptr) return false;
        OneThread one;
        Memory user(*r.from, const_cast<void*>(w));
        return user.m != nullptr &&
               Execute(stream, r.reorder,
                       {{DNNL_ARG_FROM, user.m}, {DNNL_ARG_TO, to}}) &&
               Ok(dnnl_stream_wait(stream));
      },
      &r);
}

const float* KeptRows(const void* w, const dnnl_memory_desc_t& from, int64_t k,
                      int64_t n, int64_t ld, FillRowsFn fill, void* ctx) {
  dnnl_dims_t dims = {k, n}, strides = {ld, 1};
  dnnl_memory_desc_t to;
  if (!Ok(dnnl_memory_desc_init_by_strides(&to, 2, dims, dnnl_f32, strides))) {
    return nullptr;
  }
  struct Fill {
    FillRowsFn fill;
    void* ctx;
    int64_t ld;
  } f{fill, ctx, ld};
  dnnl_memory_t kept = KeptCopy(
      w, from, to,
      [](void* ctx, const void* w, dnnl_memory_t to) {
        const Fill& f = *static_cast<const Fill*>(ctx);
        void* data = nullptr;
        return Ok(dnnl_memory_get_data_handle(to, &data)) &&
               f.fill(f.ctx, w, static_cast<float*>(data), f.ld);
      },
      &f);
  void* data = nullptr;
  if (kept == nullptr || !Ok(dnnl_memory_get_data_handle(kept, &data))) {
    return nullptr;
  }
  return static_cast<const float*>(data);
}

}  // namespace onednn
}  // namespace lathe
