#include "runtime/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "status_macros.h"

namespace lathe {

// Products saturate at INT64_MAX: a layout that large is then rejected by
// the extent check instead of overflowing silently.
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t acc = 1;
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(sizes[d], 1), &acc)) {
      acc = std::numeric_limits<int64_t>::max();
    }
  }
  return strides;
}

int64_t Numel(absl::Span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n))
      return std::numeric_limits<int64_t>::max();
  }
  return n;
}

namespace {

// The number of elements a layout spans from its first element (0 when it
// has none), or an error for negative sizes/strides or overflow.
absl::StatusOr<int64_t> Extent(absl::Span<const int64_t> sizes,
                               absl::Span<const int64_t> strides) {
  if (sizes.size() != strides.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(sizes.size(), " sizes but ", strides.size(), " strides"));
  }
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative size ", sizes[d], " in dimension ", d));
    }
    if (strides[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative stride ", strides[d], " in dimension ", d));
    }
    if (sizes[d] == 0) return 0;
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t reach;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
        __builtin_add_overflow(span, reach, &span)) {
      return absl::InvalidArgumentError("tensor extent overflows int64");
    }
  }
  return span;
}

}  // namespace

namespace {
thread_local ScopedElementLimit* element_limit = nullptr;
}  // namespace

ScopedElementLimit::ScopedElementLimit(int64_t limit)
    : limit_(limit), outer_(element_limit) {
  element_limit = this;
}

ScopedElementLimit::~ScopedElementLimit() { element_limit = outer_; }

absl::StatusOr<Tensor> Tensor::Empty(absl::Span<const int64_t> sizes,
                                     DType dtype, Device device) {
  return EmptyStrided(sizes, ContiguousStrides(sizes), dtype, device);
}

absl::StatusOr<Tensor> Tensor::EmptyStrided(absl::Span<const int64_t> sizes,
                                            absl::Span<const int64_t> strides,
                                            DType dtype, Device device) {
  return NewStrided(sizes, strides, dtype, device, /*zeroed=*/true);
}

absl::StatusOr<Tensor> Tensor::UninitializedStrided(
    absl::Span<const int64_t> sizes, absl::Span<const int64_t> strides,
    DType dtype, Device device) {
  return NewStrided(sizes, strides, dtype, device, /*zeroed=*/false);
}

absl::StatusOr<Tensor> Tensor::NewStrided(absl::Span<const int64_t> sizes,
                                          absl::Span<const int64_t> strides,
                                          DType dtype, Device device,
                                          bool zeroed) {
  // The count first: one past int64 is over any limit, not an extent
  // error (a negative size is Extent's to refuse).
  if (ScopedElementLimit* scope = element_limit;
      scope != nullptr && std::all_of(sizes.begin(), sizes.end(),
                                      [](int64_t s) { return s >= 0; })) {
    const int64_t numel = Numel(sizes);  // saturated
    if (numel > scope->limit_) {
      if (!scope->refused_) {
        scope->refused_ = ScopedElementLimit::Refusal{
            std::vector<int64_t>(sizes.begin(), sizes.end()), dtype};
      }
      return absl::InvalidArgumentError(
          absl::StrCat("a tensor of ", numel, " elements is over the limit of ",
                       scope->limit_));
    }
  }
  ASSIGN_OR_RETURN(int64_t extent, Extent(sizes, strides));
  int64_t nbytes;
  if (__builtin_mul_overflow(extent, ItemSize(dtype), &nbytes)) {
    return absl::InvalidArgumentError("tensor size in bytes overflows int64");
  }
  ASSIGN_OR_RETURN(Storage storage,
                   zeroed ? Storage::Allocate(nbytes, device)
                          : Storage::AllocateUninitialized(nbytes, device));
  return Wrap(std::move(storage), dtype, sizes, strides, 0);
}

absl::Status Tensor::CheckView(const Storage& storage, DType dtype,
                               absl::Span<const int64_t> sizes,
                               absl::Span<const int64_t> strides,
                               int64_t storage_offset) {
  ASSIGN_OR_RETURN(int64_t extent, Extent(sizes, strides));
  if (storage_offset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative storage offset ", storage_offset));
  }
  int64_t end;
  if (__builtin_add_overflow(storage_offset, extent, &end) ||
      __builtin_mul_overflow(end, ItemSize(dtype), &end)) {
    return absl::InvalidArgumentError("tensor extent overflows int64");
  }
  if (extent > 0 && end > storage.nbytes()) {
    return absl::OutOfRangeError(
        absl::StrCat("view of ", end, " bytes (sizes [",
                     absl::StrJoin(sizes, ", "), "], strides [",
                     absl::StrJoin(strides, ", "), "], offset ", storage_offset,
                     ") exceeds its storage of ", storage.nbytes(), " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Tensor::Wrap(Storage storage, DType dtype,
                                    absl::Span<const int64_t> sizes,
                                    absl::Span<const int64_t> strides,
                                    int64_t storage_offset) {
  RETURN_IF_ERROR(CheckView(storage, dtype, sizes, strides, storage_offset));
  Tensor t;
  t.storage_ = std::move(storage);
  t.dtype_ = dtype;
  t.sizes_.assign(sizes.begin(), sizes.end());
  t.strides_.assign(strides.begin(), strides.end());
  t.storage_offset_ = storage_offset;
  return t;
}

absl::StatusOr<Tensor> Tensor::AsStrided(absl::Span<const int64_t> sizes,
                                         absl::Span<const int64_t> strides,
                                         int64_t storage_offset) const {
  if (!defined())
    return absl::FailedPreconditionError("view of an undefined tensor");
  return Wrap(storage_, dtype_, sizes, strides, storage_offset);
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(storage_.data()) + storage_offset_ * itemsize();
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int d = static_cast<int>(dim()) - 1; d >= 0; --d) {
    if (sizes_[d] == 0) return true;
    if (sizes_[d] != 1 && strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (dim() == 1) return sizes_[0] < 2 || strides_[0] == 1;
  std::vector<int> perm(dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) {
    if (sizes_[a] < 2) return false;
    if (sizes_[b] < 2) return true;
    return strides_[a] < strides_[b];
  });
  int64_t expected = 1;
  for (int d : perm) {
    if (sizes_[d] == 1) continue;
    if (sizes_[d] == 0) return true;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

int64_t Tensor::ElementOffset(absl::Span<const int64_t> index) const {
  LATHE_CHECK(static_cast<int64_t>(index.size()) == dim())
      << "index of rank " << index.size() << " for a tensor of rank " << dim();
  int64_t off = storage_offset_;
  for (size_t d = 0; d < index.size(); ++d) {
    LATHE_CHECK(index[d] >= 0 && index[d] < sizes_[d]) << "index out of bounds";
    off += index[d] * strides_[d];
  }
  return off;
}

double Tensor::GetDouble(absl::Span<const int64_t> index) const {
  int64_t off = ElementOffset(index);
  return VisitDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, static_cast<const char*>(storage_.data()) + off * sizeof(T),
                sizeof(T));
    return ToDouble(v);
  });
}

int64_t Tensor::GetInt(absl::Span<const int64_t> index) const {
  int64_t off = ElementOffset(index);
  return VisitDType(dtype_, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, static_cast<const char*>(storage_.data()) + off * sizeof(T),
                sizeof(T));
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(v);
    } else {
      return TruncateToInt<int64_t>(ToDouble(v));  // NaN, 1e300: defined
    }
  });
}

void Tensor::SetDouble(absl::Span<const int64_t> index, double value) const {
  int64_t off = ElementOffset(index);
  VisitDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T v = FromDouble<T>(value);
    std::memcpy(static_cast<char*>(storage_.data()) + off * sizeof(T), &v,
                sizeof(T));
  });
}

absl::StatusOr<Tensor> Tensor::Clone() const {
  ASSIGN_OR_RETURN(Tensor out, Empty(sizes_, dtype_, device()));
  const int64_t item = itemsize();
  char* dst = static_cast<char*>(out.data_ptr());
  const char* base = static_cast<const char*>(storage_.data());
  if (is_contiguous() && numel() > 0) {  // one copy (a model's weights)
    std::memcpy(dst, base + storage_offset_ * item, numel() * item);
    return out;
  }
  int64_t k = 0;
  ForEachIndex(sizes_, [&](absl::Span<const int64_t> index) {
    std::memcpy(dst + (k++) * item, base + ElementOffset(index) * item, item);
  });
  return out;
}

std::string Tensor::ToString() const {
  return absl::StrCat(ShortName(dtype_), "[", absl::StrJoin(sizes_, ", "), "][",
                      absl::StrJoin(strides_, ", "), "]", device().ToString());
}

namespace {

// [first, last] element offsets a tensor touches; false when empty.
bool ElementRange(const Tensor& t, int64_t* first, int64_t* last) {
  if (t.numel() == 0) return false;
  *first = t.storage_offset();
  *last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d)
    *last += (t.sizes()[d] - 1) * t.strides()[d];
  return true;
}

}  // namespace

Overlap GetOverlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.storage() != b.storage()) {
    return Overlap::kNone;
  }
  int64_t a0, a1, b0, b1;
  if (!ElementRange(a, &a0, &a1) || !ElementRange(b, &b0, &b1))
    return Overlap::kNone;
  // Byte ranges, since the dtypes may differ (view.dtype).
  int64_t ab0 = a0 * a.itemsize(), ab1 = (a1 + 1) * a.itemsize();
  int64_t bb0 = b0 * b.itemsize(), bb1 = (b1 + 1) * b.itemsize();
  if (ab1 <= bb0 || bb1 <= ab0) return Overlap::kNone;
  if (a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
      a.strides() == b.strides() && a.storage_offset() == b.storage_offset()) {
    return Overlap::kFull;
  }
  if (a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense()) {
    return Overlap::kPartial;
  }
  return Overlap::kTooHard;
}

bool HasInternalOverlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] > 1 && t.strides()[d] == 0) return true;
  }
  if (t.is_non_overlapping_and_dense()) return false;
  // Sorted by stride, each dimension must step past everything the faster
  // ones reach; otherwise two indices may meet.
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] > 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) {
    return t.strides()[x] < t.strides()[y];
  });
  int64_t reach = 0;
  for (int64_t d : dims) {
    if (t.strides()[d] <= reach) return true;
    reach += (t.sizes()[d] - 1) * t.strides()[d];
  }
  return false;
}

}  // namespace lathe
