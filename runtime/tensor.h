// -----------------------------------------------------------------------------
// File: tensor.h
// -----------------------------------------------------------------------------
//
// A strided view of a Storage: dtype, sizes, strides (in elements) and a
// storage offset. Views share their storage, so writing through one is seen
// through every other, as in PyTorch.
//
// Example:
//
//   ASSIGN_OR_RETURN(Tensor a, Tensor::Empty({2, 3}, DType::kFloat32));
//   ASSIGN_OR_RETURN(Tensor t, a.AsStrided({3, 2}, {1, 3}, 0));  // a.t()
//   t.SetDouble({2, 1}, 5.0);
//   a.GetDouble({1, 2});           // 5.0: the same element
//   a.ToString();                  // "f32[2, 3][3, 1]cpu"

#ifndef LATHE_RUNTIME_TENSOR_H_
#define LATHE_RUNTIME_TENSOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/storage.h"

namespace lathe {

// ContiguousStrides()
//
// Row-major strides for `sizes` (PyTorch's: a size-0/1 dim still gets the
// product of the sizes after it, at least 1).
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> sizes);

// Numel()
//
// The product of `sizes` (1 for a 0-d tensor).
int64_t Numel(absl::Span<const int64_t> sizes);

// ScopedElementLimit
//
// While one is alive on a thread, EmptyStrided() (and so Empty()) there
// refuses a tensor of more than `limit` elements before allocating it, and
// the scope remembers the first one refused: the interpreter bounds every
// op's allocations so (--max-elements) and names the op in the message.
class ScopedElementLimit {
 public:
  struct Refusal {
    std::vector<int64_t> sizes;
    DType dtype = DType::kFloat32;
  };

  explicit ScopedElementLimit(int64_t limit);
  ScopedElementLimit(const ScopedElementLimit&) = delete;
  ScopedElementLimit& operator=(const ScopedElementLimit&) = delete;
  ~ScopedElementLimit();

  // The first tensor refused while this scope was the innermost, if any.
  const std::optional<Refusal>& refused() const { return refused_; }

 private:
  friend class Tensor;
  int64_t limit_;
  ScopedElementLimit* outer_;
  std::optional<Refusal> refused_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined

  // Empty()
  //
  // A new contiguous tensor of zeros.
  static absl::StatusOr<Tensor> Empty(absl::Span<const int64_t> sizes,
                                      DType dtype,
                                      Device device = Device::Cpu());

  // EmptyStrided()
  //
  // A new tensor with the given strides over storage just large enough.
  static absl::StatusOr<Tensor> EmptyStrided(absl::Span<const int64_t> sizes,
                                             absl::Span<const int64_t> strides,
                                             DType dtype,
                                             Device device = Device::Cpu());

  // UninitializedStrided()
  //
  // As EmptyStrided, with the elements left as the allocator gives them:
  // for a kernel that writes every element before anything reads one.
  static absl::StatusOr<Tensor> UninitializedStrided(
      absl::Span<const int64_t> sizes, absl::Span<const int64_t> strides,
      DType dtype, Device device = Device::Cpu());

  // AsStrided()
  //
  // A view of this tensor's storage; error if it reaches outside it or has a
  // negative size or stride.
  absl::StatusOr<Tensor> AsStrided(absl::Span<const int64_t> sizes,
                                   absl::Span<const int64_t> strides,
                                   int64_t storage_offset) const;

  // CheckView()
  //
  // Whether sizes, strides and offset view `storage` in `dtype` within it
  // (Wrap's and AsStrided's check): the error naming what does not fit.
  static absl::Status CheckView(const Storage& storage, DType dtype,
                                absl::Span<const int64_t> sizes,
                                absl::Span<const int64_t> strides,
                                int64_t storage_offset);

  // Wrap()
  //
  // A view of `storage` (checked like AsStrided).
  static absl::StatusOr<Tensor> Wrap(Storage storage, DType dtype,
                                     absl::Span<const int64_t> sizes,
                                     absl::Span<const int64_t> strides,
                                     int64_t storage_offset);

  bool defined() const { return !storage_.is_null(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_.device(); }
  const Storage& storage() const { return storage_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t storage_offset() const { return storage_offset_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return Numel(sizes_); }
  int64_t itemsize() const { return ItemSize(dtype_); }

  // The address of element (0, ..., 0).
  void* data_ptr() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  // PyTorch's is_contiguous(): row-major, ignoring strides of size-1 dims.
  bool is_contiguous() const;
  // Every element at a distinct address and the elements fill a block.
  bool is_non_overlapping_and_dense() const;

  // The offset, in elements from the storage start, of `index` (which must be
  // in bounds).
  int64_t ElementOffset(absl::Span<const int64_t> index) const;
  // Element `index` as a double / stored from a double (see FromDouble).
  double GetDouble(absl::Span<const int64_t> index) const;
  void SetDouble(absl::Span<const int64_t> index, double value) const;
  // Element `index` as an int64: exact for integers and bool (no trip
  // through double), truncated toward zero for a floating-point element.
  int64_t GetInt(absl::Span<const int64_t> index) const;

  // A contiguous copy with its own storage.
  absl::StatusOr<Tensor> Clone() const;

  // "f32[2, 3][3, 1]cpu" (PyTorch's annotation form).
  std::string ToString() const;

 private:
  // EmptyStrided (zeroed) or UninitializedStrided.
  static absl::StatusOr<Tensor> NewStrided(absl::Span<const int64_t> sizes,
                                           absl::Span<const int64_t> strides,
                                           DType dtype, Device device,
                                           bool zeroed);

  Storage storage_;
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> sizes_, strides_;
  int64_t storage_offset_ = 0;
};

// How two tensors' memory relates (PyTorch's get_overlap_status).
enum class Overlap {
  kNone,     // no element shared
  kFull,     // the same elements in the same layout
  kPartial,  // some shared
  kTooHard,  // could not tell cheaply (treat as overlapping)
};

// GetOverlap()
//
// Whether `a` and `b` share memory.
Overlap GetOverlap(const Tensor& a, const Tensor& b);

// HasInternalOverlap()
//
// Whether some memory location is reachable through two indices of `t`
// (e.g. an expanded dimension with stride 0). May say yes conservatively.
bool HasInternalOverlap(const Tensor& t);

// ForEachIndex()
//
// Calls `f(index)` for every index of `sizes` in row-major order.
template <typename F>
void ForEachIndex(absl::Span<const int64_t> sizes, F&& f) {
  if (Numel(sizes) == 0) return;
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    f(absl::Span<const int64_t>(index));
    int d = static_cast<int>(sizes.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace lathe

#endif  // LATHE_RUNTIME_TENSOR_H_
