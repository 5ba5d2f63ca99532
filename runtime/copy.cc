#include "runtime/copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "status_macros.h"

namespace lathe {
namespace {

// n elements of type T from src (element offset s0, stride ss) to dst (d0,
// ds), offsets in elements.
template <typename T>
void CopyRow(char* dst, int64_t d0, int64_t ds, const char* src, int64_t s0,
             int64_t ss, int64_t n) {
  T* d = reinterpret_cast<T*>(dst) + d0;
  const T* s = reinterpret_cast<const T*>(src) + s0;
  for (int64_t k = 0; k < n; ++k) d[k * ds] = s[k * ss];
}

}  // namespace
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
  if (dst.dim() == 0) {
    std::memcpy(dst_base + dst.storage_offset() * item,
                src_base + from.storage_offset() * item, item);
    return absl::OkStatus();
  }
  // The innermost dim in a tight loop (an expanded source has stride 0
  // there), the outer ones by index.
  const int64_t inner = dst.sizes().back();
  const int64_t ds = dst.strides().back(), ss = from.strides().back();
  std::vector<int64_t> outer(dst.sizes().begin(), dst.sizes().end() - 1);
  ForEachIndex(outer, [&](absl::Span<const int64_t> i) {
    int64_t d0 = dst.storage_offset(), s0 = from.storage_offset();
    for (size_t k = 0; k < i.size(); ++k) {
      d0 += i[k] * dst.strides()[k];
      s0 += i[k] * from.strides()[k];
    }
    switch (item) {
      case 1:
        CopyRow<uint8_t>(dst_base, d0, ds, src_base, s0, ss, inner);
        break;
      case 2:
        CopyRow<uint16_t>(dst_base, d0, ds, src_base, s0, ss, inner);
        break;
      case 4:
        CopyRow<uint32_t>(dst_base, d0, ds, src_base, s0, ss, inner);
        break;
      default:
        CopyRow<uint64_t>(dst_base, d0, ds, src_base, s0, ss, inner);
        break;
    }
  });
  return absl::OkStatus();
}

}  // namespace lathe
