// -----------------------------------------------------------------------------
// File: cuda_storage.h
// -----------------------------------------------------------------------------
//
// Tensors on the CUDA device: UseCudaStorage() makes Storage::Allocate for
// Device::Cuda(0) take memory from one caching allocator (device_allocator.h)
// on the device CudaDevice() chooses (the GPU, or the emulated one), and
// ToDevice/ToHost copy a tensor between host and device memory, keeping its
// sizes and strides. The device is part of a tensor's meta, so a compiled
// function's specialization key tells device tensors from host ones.
//
// Example:
//
//   RETURN_IF_ERROR(UseCudaStorage());
//   ASSIGN_OR_RETURN(Tensor x, ToDevice(host_x, Device::Cuda(0)));
//   ... kernels on x ...
//   ASSIGN_OR_RETURN(Tensor back, ToHost(x));

#ifndef LATHE_RUNTIME_CUDA_CUDA_STORAGE_H_
#define LATHE_RUNTIME_CUDA_CUDA_STORAGE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/cuda/device_allocator.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace lathe {

// UseCudaStorage()
//
// Registers device memory for CUDA storages (once per process; later calls
// return the first one's outcome). An error when there is no device
// (CudaDevice's line).
absl::Status UseCudaStorage();

// The allocator CUDA storages come from (after UseCudaStorage), for its
// statistics.
const CudaAllocator& CudaStorageAllocator();

// NewCudaPool()
//
// A private pool of device memory for CudaPoolScope: an allocator of its
// own on the device CUDA storages use (UseCudaStorage first, or its error).
absl::StatusOr<std::shared_ptr<CudaAllocator>> NewCudaPool();

// CudaPoolScope
//
// While one lives, the CUDA storages its thread allocates come from `pool`
// and go back to it when freed, never to the shared cache: a CUDA graph's
// memory, which no other call may take while the graph can replay. The
// pool's memory goes back to the device once the pool and the last block
// it gave out are gone. Scopes nest; one thread's scope is not another's.
class CudaPoolScope {
 public:
  explicit CudaPoolScope(std::shared_ptr<CudaAllocator> pool);
  CudaPoolScope(const CudaPoolScope&) = delete;
  CudaPoolScope& operator=(const CudaPoolScope&) = delete;
  ~CudaPoolScope();

  const std::shared_ptr<CudaAllocator>& pool() const { return pool_; }
  // How many zeroed storages (a memset outside any kernel) came from the
  // pool: a recording cannot replay those.
  int64_t zeroed_allocations() const { return zeroed_; }
  void CountZeroed() { ++zeroed_; }

 private:
  std::shared_ptr<CudaAllocator> pool_;
  CudaPoolScope* previous_;
  int64_t zeroed_ = 0;
};

// ToDevice()
//
// Host tensor `t` copied to `device` (cuda:0): the same sizes and strides
// over the elements it spans, the copy finished when this returns. A copy
// of 1 MiB or more goes through two pinned staging buffers, the host
// filling one while the device reads the other (ToHost likewise).
absl::StatusOr<Tensor> ToDevice(const Tensor& t, Device device);

// The bytes ToDevice and ToHost have copied through pinned staging (tests,
// benchmarks).
int64_t StagedCopyBytes();

// ToHost()
//
// Device tensor `t` copied to the host, as ToDevice's opposite.
absl::StatusOr<Tensor> ToHost(const Tensor& t);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUDA_STORAGE_H_
