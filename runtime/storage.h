// -----------------------------------------------------------------------------
// File: storage.h
// -----------------------------------------------------------------------------
//
// A reference-counted block of memory that tensors view. Copying a Storage
// shares the block; two tensors alias exactly when their storages are equal.
// A borrowed storage (Borrow()) views memory someone else owns.
// Host memory is 64-byte aligned. A device's memory comes from the
// DeviceMemory registered for its type (runtime/cuda registers CUDA's);
// without one, allocating it is an error.
//
// Example:
//
//   ASSIGN_OR_RETURN(Storage s, Storage::Allocate(1024));
//   Storage t = s;          // the same block
//   s == t;                 // true
//   s.use_count();          // 2

#ifndef LATHE_RUNTIME_STORAGE_H_
#define LATHE_RUNTIME_STORAGE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/device.h"

namespace lathe {

// Where the storages of a device type come from (runtime/cuda/
// cuda_storage.h registers CUDA's).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `nbytes` (> 0) on device `index`, zeroed when asked: its address.
  virtual absl::StatusOr<void*> Allocate(int64_t nbytes, int index,
                                         bool zeroed) = 0;
  // Gives back what Allocate gave.
  virtual void Free(void* data, int64_t nbytes, int index) = 0;
};

// RegisterDeviceMemory()
//
// Storages of devices of `type` come from `memory` from now on (never
// freed; null: none again).
void RegisterDeviceMemory(Device::Type type, DeviceMemory* memory);

class Storage {
 public:
  Storage() = default;  // no memory; is_null()

  // Allocate()
  //
  // `nbytes` of zeroed memory on `device`; a ResourceExhausted error when
  // host storages would hold more than HostMemoryLimit() together.
  static absl::StatusOr<Storage> Allocate(int64_t nbytes,
                                          Device device = Device::Cpu());

  // AllocateUninitialized()
  //
  // As Allocate, without zeroing: for memory the caller writes in full
  // before anything reads it (the buffers of compiled kernels).
  static absl::StatusOr<Storage> AllocateUninitialized(
      int64_t nbytes, Device device = Device::Cpu());

  // AllocateKept()
  //
  // As AllocateUninitialized on the host, for a block kept and read again
  // and again for as long as its thread or process runs (oneDNN's buffers,
  // packed weights): blocks of 2 MiB and more start on a 2 MiB boundary and
  // ask for transparent huge pages (fewer TLB misses for the routines that
  // sweep them). Other blocks do not: on a virtual machine whose host takes
  // back the guest's free memory, fresh huge pages fault in several times
  // slower than small ones (tools/bench/README.md), and a block reused from
  // the block cache is fast either way.
  static absl::StatusOr<Storage> AllocateKept(int64_t nbytes);

  // Borrow()
  //
  // A storage over `nbytes` at `data` on `device` that lathe does not own:
  // nothing is freed when the last handle goes, and the block does not count
  // against HostMemoryLimit(). `owner` (may be null) is kept as long as a
  // handle lives; without one, the caller keeps the memory alive while any
  // handle does (the Python package's zero-copy calls borrow the caller's
  // tensors for the length of a call).
  static Storage Borrow(void* data, int64_t nbytes, Device device,
                        std::shared_ptr<const void> owner = nullptr);

  bool is_null() const { return impl_ == nullptr; }
  // Whether the block is borrowed (Borrow()), not lathe's.
  bool is_borrowed() const { return impl_ != nullptr && impl_->borrowed; }
  void* data() const { return impl_ ? impl_->data : nullptr; }
  int64_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  Device device() const { return impl_ ? impl_->device : Device::Cpu(); }
  // How many Storage handles share this block.
  int64_t use_count() const { return impl_.use_count(); }

  friend bool operator==(const Storage& a, const Storage& b) {
    return a.impl_ == b.impl_;
  }
  friend bool operator!=(const Storage& a, const Storage& b) {
    return !(a == b);
  }

 private:
  static absl::StatusOr<Storage> AllocateHost(int64_t nbytes, Device device,
                                              bool zeroed, bool kept = false);
  static absl::StatusOr<Storage> AllocateDevice(int64_t nbytes, Device device,
                                                bool zeroed);
  struct Impl {
    void* data = nullptr;
    int64_t nbytes = 0;
    int64_t reserved = 0;  // counted against the host memory limit
    Device device;
    DeviceMemory* memory = nullptr;  // a device's; null for host memory
    bool borrowed = false;           // Borrow()'s: never freed here
    std::shared_ptr<const void> owner;
    ~Impl();
  };
  std::shared_ptr<Impl> impl_;
};

// SetHostMemoryLimit() / HostMemoryLimit() / HostMemoryInUse()
//
// The most bytes of host memory live Storages may hold together (by default
// the machine's physical memory; lathec's --max-memory sets it), and the
// bytes they hold now.
void SetHostMemoryLimit(int64_t bytes);
int64_t HostMemoryLimit();
int64_t HostMemoryInUse();

// SetHostBlockCacheLimit() / HostBlockCacheBytes()
//
// Freed host blocks of 256 KiB and more are kept, up to this many bytes
// together (default 1 GiB; 0 turns the cache off, and it is always off under
// AddressSanitizer), and handed to the next allocation of the same rounded
// size: a fresh block's pages are faulted in and zeroed by the OS on first
// touch, which costs as much again as the kernel that writes it. Cached
// blocks do not count as in use; HostBlockCacheBytes() is what the cache
// holds now.
void SetHostBlockCacheLimit(int64_t bytes);
int64_t HostBlockCacheBytes();

// PhysicalMemoryBytes()
//
// The machine's physical memory, or the cgroup's memory limit where that is
// lower.
int64_t PhysicalMemoryBytes();

// DefaultMaxMemory()
//
// lathec's default --max-memory: 40% of PhysicalMemoryBytes(), which leaves
// the rest of the machine room (a 12 GB result on a 24 GB machine is refused
// unless the user raises the limit).
int64_t DefaultMaxMemory();

}  // namespace lathe

#endif  // LATHE_RUNTIME_STORAGE_H_
