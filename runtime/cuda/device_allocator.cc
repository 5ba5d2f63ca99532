#include "runtime/cuda/device_allocator.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "status_macros.h"

namespace lathe {
namespace {

constexpr int64_t kSmallRound = 512;
constexpr int64_t kSmallLimit = int64_t{1} << 20;
constexpr int64_t kLargeRound = int64_t{2} << 20;
// CU_EVENT_DISABLE_TIMING: events that only order work are cheaper.
constexpr unsigned int kEventDisableTiming = 2;

int64_t RoundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

CudaAllocator::CudaAllocator(const CudaDriver& cu) : cu_(cu) {}

CudaAllocator::~CudaAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  FreeCached().IgnoreError();
  for (CuEvent e : spare_events_) cu_.event_destroy(e);
}

int64_t CudaAllocator::RoundSize(int64_t bytes) {
  return bytes <= kSmallLimit ? RoundUp(bytes, kSmallRound)
                              : RoundUp(bytes, kLargeRound);
}

absl::StatusOr<CuEvent> CudaAllocator::RecordEvent(CuStream stream) {
  CuEvent e = nullptr;
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else {
    RETURN_IF_ERROR(CudaCall(cu_, cu_.event_create(&e, kEventDisableTiming),
                             "cuEventCreate"));
  }
  absl::Status recorded =
      CudaCall(cu_, cu_.event_record(e, stream), "cuEventRecord");
  if (!recorded.ok()) {
    spare_events_.push_back(e);
    return recorded;
  }
  return e;
}

absl::StatusOr<bool> CudaAllocator::Completed(const Cached& c) {
  for (CuEvent e : c.events) {
    CuResult r = cu_.event_query(e);
    if (r == kCudaErrorNotReady) return false;
    RETURN_IF_ERROR(CudaCall(cu_, r, "cuEventQuery"));
  }
  return true;
}

absl::StatusOr<CuDevicePtr> CudaAllocator::TakeCached(int64_t size,
                                                      CuStream stream) {
  auto it = cache_.find(size);
  if (it == cache_.end()) return CuDevicePtr{0};
  std::vector<Cached>& blocks = it->second;
  // The block's own stream first: stream order makes it safe at once
  // (after the other streams it was used on).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = blocks.size(); i-- > 0;) {
      Cached& c = blocks[i];
      if ((c.stream == stream) != (pass == 0)) continue;
      if (pass == 1 && !c.owner_recorded) {
        // Another stream asks: an event for the owner's work so far (a
        // later one than the give-back only waits longer).
        ASSIGN_OR_RETURN(CuEvent e, RecordEvent(c.stream));
        c.events.push_back(e);
        c.owner_recorded = true;
      }
      ASSIGN_OR_RETURN(bool done, Completed(c));
      if (!done) continue;
      CuDevicePtr ptr = c.ptr;
      for (CuEvent e : c.events) spare_events_.push_back(e);
      blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
      if (blocks.empty()) cache_.erase(it);
      return ptr;
    }
  }
  return CuDevicePtr{0};
}

absl::StatusOr<CudaBlock> CudaAllocator::Allocate(int64_t bytes,
                                                  CuStream stream) {
  if (bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device allocation of ", bytes, " bytes"));
  }
  if (bytes > (int64_t{1} << 60)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "CUDA out of memory: cannot allocate ", bytes, " bytes on the device"));
  }
  const int64_t size = RoundSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(CuDevicePtr ptr, TakeCached(size, stream));
  if (ptr == 0) {
    CuResult r = cu_.mem_alloc(&ptr, static_cast<size_t>(size));
    if (r == kCudaErrorOutOfMemory && !cache_.empty()) {
      // The cache gives its memory back, and the device is asked again.
      RETURN_IF_ERROR(FreeCached());
      ++stats_.cache_flushes;
      r = cu_.mem_alloc(&ptr, static_cast<size_t>(size));
    }
    if (r == kCudaErrorOutOfMemory) {
      size_t free = 0, total = 0;
      std::string device;
      if (cu_.mem_get_info(&free, &total) == kCudaSuccess) {
        device = absl::StrCat("; the device has ", free, " of ", total,
                              " bytes free");
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          "CUDA out of memory: cannot allocate ", bytes, " bytes (a block of ",
          size, ") on the device; lathe holds ", stats_.allocated,
          " bytes in use and ", stats_.reserved, " reserved, its cache emptied",
          device));
    }
    RETURN_IF_ERROR(CudaCall(cu_, r, "cuMemAlloc"));
    ++stats_.device_allocations;
    stats_.reserved += size;
  }
  live_[ptr] = Live{size, stream, {}};
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return CudaBlock{ptr, size, stream};
}

void CudaAllocator::RecordStream(const CudaBlock& block, CuStream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(block.ptr);
  if (it == live_.end() || stream == it->second.stream) return;
  std::vector<CuStream>& used = it->second.used_on;
  if (std::find(used.begin(), used.end(), stream) == used.end()) {
    used.push_back(stream);
  }
}

absl::Status CudaAllocator::Free(const CudaBlock& block) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(block.ptr);
  if (it == live_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device memory at 0x", absl::Hex(block.ptr),
        " was not given out by this allocator, or was given back already"));
  }
  Cached c;
  c.ptr = block.ptr;
  c.stream = it->second.stream;
  // The other streams' work on it, up to now.
  for (CuStream s : it->second.used_on) {
    ASSIGN_OR_RETURN(CuEvent e, RecordEvent(s));
    c.events.push_back(e);
  }
  const int64_t size = it->second.size;
  live_.erase(it);
  stats_.allocated -= size;
  cache_[size].push_back(std::move(c));
  return absl::OkStatus();
}

absl::Status CudaAllocator::FreeCached() {
  absl::Status status;
  for (auto& [size, blocks] : cache_) {
    for (Cached& c : blocks) {
      for (CuEvent e : c.events) {
        status.Update(
            CudaCall(cu_, cu_.event_synchronize(e), "cuEventSynchronize"));
        spare_events_.push_back(e);
      }
      // The owner's own queued work: freeing synchronizes the device.
      status.Update(CudaCall(cu_, cu_.mem_free(c.ptr), "cuMemFree"));
      stats_.reserved -= size;
    }
  }
  cache_.clear();
  return status;
}

absl::Status CudaAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  return FreeCached();
}

CudaAllocator::Stats CudaAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace lathe
