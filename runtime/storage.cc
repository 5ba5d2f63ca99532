#include "runtime/storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe {

Storage::Impl::~Impl() { std::free(data); }

absl::StatusOr<Storage> Storage::Allocate(int64_t nbytes, Device device) {
  if (nbytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a negative size (", nbytes, " bytes)"));
  }
  if (!device.is_cpu()) {
    return absl::UnimplementedError(
        absl::StrCat("device memory (", device.ToString(),
                     ") is allocated by the CUDA runtime, not available here"));
  }
  constexpr int64_t kAlign = 64;
  if (nbytes > (int64_t{1} << 46)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocation of ", nbytes, " bytes is too large"));
  }
  int64_t rounded =
      (std::max<int64_t>(nbytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* data = std::aligned_alloc(kAlign, rounded);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", nbytes, " bytes"));
  }
  std::memset(data, 0, rounded);
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  return s;
}

}  // namespace lathe
