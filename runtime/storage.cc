#include "runtime/storage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "status_macros.h"

namespace lathe {
namespace {

std::atomic<int64_t>& Limit() {
  static std::atomic<int64_t> limit{PhysicalMemoryBytes()};
  return limit;
}

std::atomic<int64_t> in_use{0};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // reuse would hide use-after-free
#else
constexpr bool kSanitized = false;
#endif

// Freed large blocks by rounded size, kept for reuse (SetHostBlockCacheLimit).
struct BlockCache {
  std::mutex mu;
  std::multimap<int64_t, void*> blocks;
  int64_t bytes = 0;
  int64_t limit = kSanitized ? 0 : int64_t{1} << 30;

  // A cached block of exactly `size` bytes, or null.
  void* Take(int64_t size) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = blocks.find(size);
    if (it == blocks.end()) return nullptr;
    void* data = it->second;
    blocks.erase(it);
    bytes -= size;
    return data;
  }
  // Keeps `data` when there is room; false when the caller must free it.
  bool Keep(void* data, int64_t size) {
    std::lock_guard<std::mutex> lock(mu);
    if (bytes + size > limit) return false;
    blocks.emplace(size, data);
    bytes += size;
    return true;
  }
  // Frees blocks until at most `keep` bytes are held.
  void Trim(int64_t keep) {
    std::lock_guard<std::mutex> lock(mu);
    while (bytes > keep && !blocks.empty()) {
      auto last = std::prev(blocks.end());
      bytes -= last->first;
      std::free(last->second);
      blocks.erase(last);
    }
  }
};

BlockCache& Cache() {
  static auto* cache = new BlockCache();
  return *cache;
}

constexpr int64_t kHuge = int64_t{2} << 20;

// Freed blocks of this many bytes and more are cached (BlockCache): below
// it malloc keeps freed memory itself, above it glibc may map and unmap
// each block (its mmap threshold, and trimming the heap's top), so every
// call of a compiled model would fault its activations in again.
constexpr int64_t kCachedBlock = int64_t{256} << 10;

}  // namespace

void SetHostBlockCacheLimit(int64_t bytes) {
  BlockCache& c = Cache();
  int64_t limit = kSanitized ? 0 : std::max<int64_t>(bytes, 0);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.limit = limit;
  }
  c.Trim(limit);
}

int64_t HostBlockCacheBytes() {
  BlockCache& c = Cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

int64_t PhysicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  int64_t bytes = pages <= 0 || page <= 0 ? int64_t{1} << 46
                                          : static_cast<int64_t>(pages) * page;
  // A container's cgroup (v2, then v1) may allow less than the machine has.
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::FILE* f = std::fopen(path, "re");
    if (f == nullptr) continue;
    long long limit = 0;
    if (std::fscanf(f, "%lld", &limit) == 1 && limit > 0) {
      bytes = std::min<int64_t>(bytes, limit);
    }
    std::fclose(f);
  }
  return bytes;
}

int64_t DefaultMaxMemory() { return PhysicalMemoryBytes() / 5 * 2; }

void SetHostMemoryLimit(int64_t bytes) { Limit().store(bytes); }
int64_t HostMemoryLimit() { return Limit().load(); }
int64_t HostMemoryInUse() { return in_use.load(); }

namespace {
std::atomic<DeviceMemory*> cuda_memory{nullptr};
}  // namespace

void RegisterDeviceMemory(Device::Type type, DeviceMemory* memory) {
  if (type == Device::Type::kCuda) cuda_memory.store(memory);
}

Storage::Impl::~Impl() {
  if (borrowed) return;
  if (memory != nullptr) {
    memory->Free(data, nbytes, device.index);
    return;
  }
  in_use.fetch_sub(reserved);
  if (reserved >= kCachedBlock && Cache().Keep(data, reserved)) return;
  std::free(data);
}

Storage Storage::Borrow(void* data, int64_t nbytes, Device device,
                        std::shared_ptr<const void> owner) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  s.impl_->borrowed = true;
  s.impl_->owner = std::move(owner);
  return s;
}

absl::StatusOr<Storage> Storage::Allocate(int64_t nbytes, Device device) {
  return AllocateHost(nbytes, device, /*zeroed=*/true);
}

absl::StatusOr<Storage> Storage::AllocateUninitialized(int64_t nbytes,
                                                       Device device) {
  return AllocateHost(nbytes, device, /*zeroed=*/false);
}

absl::StatusOr<Storage> Storage::AllocateKept(int64_t nbytes) {
  return AllocateHost(nbytes, Device::Cpu(), /*zeroed=*/false, /*kept=*/true);
}

absl::StatusOr<Storage> Storage::AllocateDevice(int64_t nbytes, Device device,
                                                bool zeroed) {
  DeviceMemory* memory = cuda_memory.load();
  if (memory == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "device memory (", device.ToString(),
        ") is allocated by the CUDA runtime, which this program has not "
        "started"));
  }
  ASSIGN_OR_RETURN(void* data, memory->Allocate(std::max<int64_t>(nbytes, 1),
                                                device.index, zeroed));
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  s.impl_->memory = memory;
  return s;
}

absl::StatusOr<Storage> Storage::AllocateHost(int64_t nbytes, Device device,
                                              bool zeroed, bool kept) {
  if (nbytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a negative size (", nbytes, " bytes)"));
  }
  if (!device.is_cpu()) return AllocateDevice(nbytes, device, zeroed);
  constexpr int64_t kAlign = 64;
  if (nbytes > (int64_t{1} << 46)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocation of ", nbytes, " bytes is too large"));
  }
  int64_t rounded =
      (std::max<int64_t>(nbytes, 1) + kAlign - 1) / kAlign * kAlign;
  // Kept blocks of 2 MiB and more start on a huge-page boundary and ask for
  // huge pages (AllocateKept).
  const bool huge = kept && rounded >= kHuge;
  if (huge) rounded = (rounded + kHuge - 1) / kHuge * kHuge;
  int64_t before = in_use.fetch_add(rounded);
  if (before + rounded > HostMemoryLimit()) {
    in_use.fetch_sub(rounded);
    return absl::ResourceExhaustedError(absl::StrCat(
        "allocating ", nbytes, " bytes would exceed the memory limit of ",
        HostMemoryLimit(), " bytes (", before, " in use)"));
  }
  const bool cached = rounded >= kCachedBlock;
  // (A cached block may not be on a huge-page boundary.)
  void* data = cached && !huge ? Cache().Take(rounded) : nullptr;
  if (data == nullptr) {
    data = std::aligned_alloc(huge ? kHuge : kAlign, rounded);
    if (data == nullptr && cached) {  // the cache gives its blocks back first
      Cache().Trim(0);
      data = std::aligned_alloc(huge ? kHuge : kAlign, rounded);
    }
    if (data != nullptr && huge) madvise(data, rounded, MADV_HUGEPAGE);
  }
  if (data == nullptr) {
    in_use.fetch_sub(rounded);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", nbytes, " bytes"));
  }
  if (zeroed) std::memset(data, 0, rounded);
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->reserved = rounded;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  return s;
}

}  // namespace lathe
