#include "runtime/cuda/cuda_storage.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {
namespace {

// The scope whose pool this thread's CUDA storages come from (null: the
// shared allocator).
thread_local CudaPoolScope* scoped = nullptr;

// CUDA storages: blocks of one CudaAllocator on the null stream, or of the
// private pool scoped on the allocating thread.
class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(const CudaDriver& cu) : cu_(cu), allocator_(cu) {}

  absl::StatusOr<void*> Allocate(int64_t nbytes, int index,
                                 bool zeroed) override {
    if (index != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cuda:", index, ": lathe uses one device, cuda:0"));
    }
    RETURN_IF_ERROR(MakeCudaContextCurrent(cu_));
    std::shared_ptr<CudaAllocator> pool =
        scoped != nullptr ? scoped->pool() : nullptr;
    // A zeroing memset the scope's owner (a recording) does not see.
    if (scoped != nullptr && zeroed) scoped->CountZeroed();
    CudaAllocator& from = pool != nullptr ? *pool : allocator_;
    ASSIGN_OR_RETURN(CudaBlock b, from.Allocate(nbytes, nullptr));
    if (zeroed) {
      absl::Status s = CudaCall(
          cu_,
          cu_.memset_d8_async(b.ptr, 0, static_cast<size_t>(nbytes), nullptr),
          "cuMemsetD8Async");
      if (!s.ok()) {
        from.Free(b).IgnoreError();
        return s;
      }
    }
    void* data = reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr));
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[data] = {b.size, std::move(pool)};
    return data;
  }

  void Free(void* data, int64_t, int) override {
    Block block;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = blocks_.find(data);
      if (it == blocks_.end()) return;
      block = std::move(it->second);
      blocks_.erase(it);
    }
    // A storage's last handle may go on any thread.
    MakeCudaContextCurrent(cu_).IgnoreError();
    CudaAllocator& to = block.pool != nullptr ? *block.pool : allocator_;
    to.Free(CudaBlock{reinterpret_cast<uintptr_t>(data), block.size, nullptr})
        .IgnoreError();
  }

  const CudaAllocator& allocator() const { return allocator_; }
  const CudaDriver& driver() const { return cu_; }

 private:
  // A block given out: its size class, and its private pool (null: the
  // shared allocator's), kept alive while the block is.
  struct Block {
    int64_t size = 0;
    std::shared_ptr<CudaAllocator> pool;
  };
  const CudaDriver& cu_;
  CudaAllocator allocator_;
  std::mutex mu_;  // ThreadSanitizer sees it through pthreads
  std::map<void*, Block> blocks_;
};

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
CudaMemory* registered = nullptr;

// The bytes `t` spans from its first element: 0 when it has none.
int64_t SpanBytes(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    last += (t.sizes()[d] - 1) * t.strides()[d];
  }
  return (last + 1) * t.itemsize();
}

// Copies of at least this many bytes go through pinned staging: two pinned
// halves of kStagingHalf bytes, so the host copies one chunk while the
// device copies the other (a pageable copy is staged by the driver one
// chunk at a time, synchronously).
constexpr int64_t kStagedCopyBytes = int64_t{1} << 20;
constexpr int64_t kStagingHalf = int64_t{4} << 20;

std::atomic<int64_t> staged_bytes{0};

class Staging {
 public:
  // `bytes` from host `src` to device `dst`, done when it returns (also
  // when it fails: no copy into a half is left in flight).
  absl::Status ToDevice(const CudaDriver& cu, CuDevicePtr dst, const char* src,
                        int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    return Drained(cu, Up(cu, dst, src, bytes));
  }

  // `bytes` from device `src` to host `dst`, after the work queued before.
  absl::Status ToHost(const CudaDriver& cu, char* dst, CuDevicePtr src,
                      int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    return Drained(cu, Down(cu, dst, src, bytes));
  }

 private:
  // `s`, once the stream's copies are done (a failed copy's included).
  static absl::Status Drained(const CudaDriver& cu, absl::Status s) {
    if (!s.ok()) cu.stream_synchronize(nullptr);
    return s;
  }

  absl::Status Up(const CudaDriver& cu, CuDevicePtr dst, const char* src,
                  int64_t bytes) {
    RETURN_IF_ERROR(Ready(cu));
    for (int64_t k = 0, at = 0; at < bytes; ++k, at += kStagingHalf) {
      const int64_t n = std::min(kStagingHalf, bytes - at);
      const int h = static_cast<int>(k % 2);
      if (k >= 2) {  // the device has read this half's last chunk
        RETURN_IF_ERROR(
            CudaCall(cu, cu.event_synchronize(done_[h]), "cuEventSynchronize"));
      }
      std::memcpy(half_[h], src + at, static_cast<size_t>(n));
      RETURN_IF_ERROR(
          CudaCall(cu,
                   cu.memcpy_htod_async(dst + at, half_[h],
                                        static_cast<size_t>(n), nullptr),
                   "cuMemcpyHtoDAsync"));
      RETURN_IF_ERROR(
          CudaCall(cu, cu.event_record(done_[h], nullptr), "cuEventRecord"));
    }
    staged_bytes += bytes;
    return CudaCall(cu, cu.stream_synchronize(nullptr), "cuStreamSynchronize");
  }

  absl::Status Down(const CudaDriver& cu, char* dst, CuDevicePtr src,
                    int64_t bytes) {
    RETURN_IF_ERROR(Ready(cu));
    const int64_t chunks = (bytes + kStagingHalf - 1) / kStagingHalf;
    auto issue = [&](int64_t k) {
      const int64_t at = k * kStagingHalf;
      const int h = static_cast<int>(k % 2);
      RETURN_IF_ERROR(CudaCall(
          cu,
          cu.memcpy_dtoh_async(
              half_[h], src + at,
              static_cast<size_t>(std::min(kStagingHalf, bytes - at)), nullptr),
          "cuMemcpyDtoHAsync"));
      return CudaCall(cu, cu.event_record(done_[h], nullptr), "cuEventRecord");
    };
    RETURN_IF_ERROR(issue(0));
    for (int64_t k = 0; k < chunks; ++k) {
      // The next chunk goes into the other half, emptied last round.
      if (k + 1 < chunks) RETURN_IF_ERROR(issue(k + 1));
      const int h = static_cast<int>(k % 2);
      RETURN_IF_ERROR(
          CudaCall(cu, cu.event_synchronize(done_[h]), "cuEventSynchronize"));
      const int64_t at = k * kStagingHalf;
      std::memcpy(dst + at, half_[h],
                  static_cast<size_t>(std::min(kStagingHalf, bytes - at)));
    }
    staged_bytes += bytes;
    return absl::OkStatus();
  }

  // The halves and their events, made on first use (kept for the process).
  absl::Status Ready(const CudaDriver& cu) {
    RETURN_IF_ERROR(MakeCudaContextCurrent(cu));
    for (int h = 0; h < 2; ++h) {
      if (half_[h] == nullptr) {
        RETURN_IF_ERROR(CudaCall(
            cu, cu.mem_alloc_host(&half_[h], static_cast<size_t>(kStagingHalf)),
            "cuMemAllocHost"));
      }
      if (done_[h] == nullptr) {
        RETURN_IF_ERROR(
            CudaCall(cu, cu.event_create(&done_[h], 0), "cuEventCreate"));
      }
    }
    return absl::OkStatus();
  }

  std::mutex mu_;
  void* half_[2] = {nullptr, nullptr};
  CuEvent done_[2] = {nullptr, nullptr};
};

Staging& Staged() {
  static Staging* staging = new Staging();
  return *staging;
}

}  // namespace

int64_t StagedCopyBytes() { return staged_bytes.load(); }

absl::Status UseCudaStorage() {
  static absl::Status* outcome = nullptr;
  std::lock_guard<std::mutex> lock(Mu());
  if (outcome != nullptr) return *outcome;
  absl::StatusOr<const CudaDriver*> cu = CudaDevice();
  if (cu.ok()) {
    registered = new CudaMemory(**cu);
    RegisterDeviceMemory(Device::Type::kCuda, registered);
  }
  outcome = new absl::Status(cu.status());
  return *outcome;
}

const CudaAllocator& CudaStorageAllocator() {
  std::lock_guard<std::mutex> lock(Mu());
  LATHE_CHECK(registered != nullptr) << "UseCudaStorage() first";
  return registered->allocator();
}

absl::StatusOr<std::shared_ptr<CudaAllocator>> NewCudaPool() {
  RETURN_IF_ERROR(UseCudaStorage());
  std::lock_guard<std::mutex> lock(Mu());
  return std::make_shared<CudaAllocator>(registered->driver());
}

CudaPoolScope::CudaPoolScope(std::shared_ptr<CudaAllocator> pool)
    : pool_(std::move(pool)), previous_(scoped) {
  scoped = this;
}

CudaPoolScope::~CudaPoolScope() { scoped = previous_; }

absl::StatusOr<Tensor> ToDevice(const Tensor& t, Device device) {
  if (!t.device().is_cpu() || !device.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ToDevice copies a cpu tensor to a cuda device, not ",
                     t.ToString(), " to ", device.ToString()));
  }
  RETURN_IF_ERROR(UseCudaStorage());
  ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
  const int64_t bytes = SpanBytes(t);
  ASSIGN_OR_RETURN(Storage s, Storage::AllocateUninitialized(bytes, device));
  if (bytes >= kStagedCopyBytes) {
    RETURN_IF_ERROR(
        Staged().ToDevice(*cu, reinterpret_cast<uintptr_t>(s.data()),
                          static_cast<const char*>(t.data_ptr()), bytes));
  } else if (bytes > 0) {
    RETURN_IF_ERROR(
        CudaCall(*cu,
                 cu->memcpy_htod_async(reinterpret_cast<uintptr_t>(s.data()),
                                       t.data_ptr(), static_cast<size_t>(bytes),
                                       nullptr),
                 "cuMemcpyHtoDAsync"));
    RETURN_IF_ERROR(
        CudaCall(*cu, cu->stream_synchronize(nullptr), "cuStreamSynchronize"));
  }
  return Tensor::Wrap(std::move(s), t.dtype(), t.sizes(), t.strides(), 0);
}

absl::StatusOr<Tensor> ToHost(const Tensor& t) {
  if (!t.device().is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ToHost copies a cuda tensor, not ", t.ToString()));
  }
  ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
  RETURN_IF_ERROR(MakeCudaContextCurrent(*cu));
  const int64_t bytes = SpanBytes(t);
  ASSIGN_OR_RETURN(Storage s, Storage::AllocateUninitialized(bytes));
  if (bytes >= kStagedCopyBytes) {
    RETURN_IF_ERROR(Staged().ToHost(*cu, static_cast<char*>(s.data()),
                                    reinterpret_cast<uintptr_t>(t.data_ptr()),
                                    bytes));
  } else if (bytes > 0) {
    RETURN_IF_ERROR(CudaCall(
        *cu,
        cu->memcpy_dtoh_async(s.data(),
                              reinterpret_cast<uintptr_t>(t.data_ptr()),
                              static_cast<size_t>(bytes), nullptr),
        "cuMemcpyDtoHAsync"));
    RETURN_IF_ERROR(
        CudaCall(*cu, cu->stream_synchronize(nullptr), "cuStreamSynchronize"));
  }
  return Tensor::Wrap(std::move(s), t.dtype(), t.sizes(), t.strides(), 0);
}

}  // namespace lathe
