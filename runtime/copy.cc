#include "runtime/copy.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "status_macros.h"

namespace lathe {
absl::Status CopyTensor(const Tensor& dst, const Tensor& src) {
  if (!dst.defined() || !src.defined()) {
    return absl::InvalidArgumentError("copy_: an undefined tensor");
  }
  if (dst.dtype() != src.dtype() || dst.sizes() != src.sizes() ||
      dst.device() != src.device()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_: cannot copy ", src.ToString(), " into ",
                     dst.ToString(), " (dtype, sizes and device must match)"));
  }
  if (!dst.device().is_cpu()) {
    return absl::UnimplementedError(
        absl::StrCat("copy_: ", dst.ToString(), " is not on the CPU"));
  }
  const int64_t n = dst.numel(), item = dst.itemsize();
  if (n == 0) return absl::OkStatus();
  char* dst_base = static_cast<char*>(dst.storage().data());
  // Same layout and dense (strides are never negative): one block starting
  // at the storage offset to another (memmove: they may overlap).
  if ((dst.is_contiguous() && src.is_contiguous()) ||
      (dst.strides() == src.strides() && dst.is_non_overlapping_and_dense())) {
    std::memmove(dst_base + dst.storage_offset() * item,
                 static_cast<const char*>(src.storage().data()) +
                     src.storage_offset() * item,
                 n * item);
    return absl::OkStatus();
  }
  Tensor from = src;
  if (src.storage() == dst.storage()) {
    ASSIGN_OR_RETURN(from, src.Clone());  // read everything before writing
  }
  const char* src_base = static_cast<const char*>(from.storage().data());
  ForEachIndex(dst.sizes(), [&](absl::Span<const int64_t> i) {
    std::memcpy(dst_base + dst.ElementOffset(i) * item,
                src_base + from.ElementOffset(i) * item, item);
  });
  return absl::OkStatus();
}

}  // namespace lathe
