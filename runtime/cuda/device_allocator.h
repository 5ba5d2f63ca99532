// -----------------------------------------------------------------------------
// File: device_allocator.h
// -----------------------------------------------------------------------------
//
// A caching allocator for CUDA device memory, as PyTorch's
// CUDACachingAllocator is one: cuMemAlloc is slow and synchronizes the
// device, so memory given back is kept and handed out again.
//
//   - Sizes are rounded to classes (multiples of 512 bytes up to 1 MiB,
//     of 2 MiB above), and a request is served only by a cached block of
//     its own class, so no block is much larger than what it holds.
//   - Free lists are per stream. A block given back on its stream may be
//     reused on that stream at once (the stream's order makes it safe);
//     another stream may take it only once an event recorded on the
//     block's stream (and on every stream RecordStream added) when it was
//     given back has completed.
//   - When cuMemAlloc runs out of memory, the cache is freed and the
//     allocation tried once more; then the error names the size and the
//     allocator's statistics.
//
// It calls the driver through its table (driver_api.h), so the same code
// runs on a GPU and on the emulated device. The caller makes the device's
// context current. Thread-safe.
//
// Example:
//
//   CudaAllocator allocator(*cu);
//   ASSIGN_OR_RETURN(CudaBlock b, allocator.Allocate(4096, stream));
//   ... kernels on `stream` use b.ptr ...
//   RETURN_IF_ERROR(allocator.Free(b));
//   allocator.stats().reserved;  // 4096: kept for the next Allocate

#ifndef LATHE_RUNTIME_CUDA_DEVICE_ALLOCATOR_H_
#define LATHE_RUNTIME_CUDA_DEVICE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/cuda/driver_api.h"

namespace lathe {

// Memory the allocator gave out: `size` bytes (the rounded class) at `ptr`,
// for use on `stream`.
struct CudaBlock {
  CuDevicePtr ptr = 0;
  int64_t size = 0;
  CuStream stream = nullptr;
};

class CudaAllocator {
 public:
  struct Stats {
    int64_t allocated = 0;       // bytes in blocks given out
    int64_t reserved = 0;        // bytes held from the device (in use + cached)
    int64_t peak_allocated = 0;  // the most `allocated` has been
    int64_t device_allocations = 0;  // cuMemAlloc calls that succeeded
    int64_t cache_flushes = 0;       // times an out-of-memory freed the cache
  };

  explicit CudaAllocator(const CudaDriver& cu);
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;
  // Gives every cached block back to the device (blocks still given out
  // stay the caller's: the device's own teardown frees them).
  ~CudaAllocator();

  // RoundSize()
  //
  // The size class of a request of `bytes` (> 0).
  static int64_t RoundSize(int64_t bytes);

  // Allocate()
  //
  // A block of at least `bytes` (> 0) for use on `stream`: a cached one of
  // its class that is safe to use there, or a new one. ResourceExhausted
  // naming the size when the device has no room even with the cache freed;
  // InvalidArgument for a size that is not positive.
  absl::StatusOr<CudaBlock> Allocate(int64_t bytes, CuStream stream);

  // RecordStream()
  //
  // Says that work on `stream` (another than the block's) uses `block`:
  // when it is given back, it waits for that work too.
  void RecordStream(const CudaBlock& block, CuStream stream);

  // Free()
  //
  // Gives `block` back to the cache. An error for a block this allocator
  // did not give out (or gave back already), or a failing driver call.
  absl::Status Free(const CudaBlock& block);

  // EmptyCache()
  //
  // Gives every cached block back to the device, waiting for the events
  // of those other streams may still be using.
  absl::Status EmptyCache();

  // The statistics so far.
  Stats stats() const;

 private:
  // A cached block: safe on its own stream; on others once `events` (one
  // per stream that used it, recorded when it was given back) complete.
  struct Cached {
    CuDevicePtr ptr = 0;
    CuStream stream = nullptr;
    std::vector<CuEvent> events;
    bool owner_recorded = false;  // events holds one for `stream` too
  };
  // What the allocator knows of a block it gave out.
  struct Live {
    int64_t size = 0;
    CuStream stream = nullptr;
    std::vector<CuStream> used_on;  // RecordStream's streams
  };

  // A cached block of class `size` safe on `stream`, taken from the cache.
  absl::StatusOr<CuDevicePtr> TakeCached(int64_t size, CuStream stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether every event of `c` has completed (their query says so).
  absl::StatusOr<bool> Completed(const Cached& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the cached blocks back to the device (EmptyCache, locked).
  absl::Status FreeCached() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An event for `stream`'s work so far (from the pool, or new).
  absl::StatusOr<CuEvent> RecordEvent(CuStream stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CudaDriver& cu_;
  // std::mutex: ThreadSanitizer sees it through pthreads.
  mutable std::mutex mu_;
  // Cached blocks by size class, in the order they were given back.
  std::map<int64_t, std::vector<Cached>> cache_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<CuDevicePtr, Live> live_ ABSL_GUARDED_BY(mu_);
  std::vector<CuEvent> spare_events_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_DEVICE_ALLOCATOR_H_
