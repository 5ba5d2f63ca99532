// -----------------------------------------------------------------------------
// File: storage.h
// -----------------------------------------------------------------------------
//
// A reference-counted block of memory that tensors view. Copying a Storage
// shares the block; two tensors alias exactly when their storages are equal.
// Host memory is 64-byte aligned. (Device memory arrives with the CUDA
// runtime; allocating it here is an error.)
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

class Storage {
 public:
  Storage() = default;  // no memory; is_null()

  // Allocate()
  //
  // `nbytes` of zeroed memory on `device`.
  static absl::StatusOr<Storage> Allocate(int64_t nbytes,
                                          Device device = Device::Cpu());

  bool is_null() const { return impl_ == nullptr; }
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
  struct Impl {
    void* data = nullptr;
    int64_t nbytes = 0;
    Device device;
    ~Impl();
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_STORAGE_H_
