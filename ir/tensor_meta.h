// -----------------------------------------------------------------------------
// File: tensor_meta.h
// -----------------------------------------------------------------------------
//
// What the IR knows about a value without running it: for a tensor its dtype,
// device, symbolic sizes/strides/offset and storage identity; for a symbolic
// scalar its expression; for a tuple its elements. Also the annotation syntax
// PyTorch's print_readable() writes: "f32[s0, 16][16, 1]cpu", "Sym(2*s0)".
//
// Example:
//
//   ASSIGN_OR_RETURN(ValueMeta m, ParseAnnotation("f32[s0, 16][16, 1]cpu"));
//   m.tensor.sizes[0];          // the symbol s0
//   m.ToAnnotation();           // "f32[s0, 16][16, 1]cpu"
//   m.tensor.ToAnnotation({.strides = false});  // "f32[s0, 16]cpu"

#ifndef LATHE_IR_TENSOR_META_H_
#define LATHE_IR_TENSOR_META_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "symbolic/expr.h"

namespace lathe::ir {

// An identity for a storage: two values alias exactly when their ids match.
using StorageId = int64_t;
inline constexpr StorageId kUnknownStorage = -1;

// AnnotationStyle
//
// How a tensor annotation is written: print_readable() shows the strides and
// the device ("f32[2, 3][3, 1]cpu") unless asked not to ("f32[2, 3]"). A
// choice of the text, not part of the meta: an annotation without strides
// means contiguous ones, without a device the CPU.
struct AnnotationStyle {
  bool strides = true;
  bool device = true;

  bool operator==(const AnnotationStyle& o) const {
    return strides == o.strides && device == o.device;
  }
  bool operator!=(const AnnotationStyle& o) const { return !(*this == o); }
};

struct TensorMeta {
  DType dtype = DType::kFloat32;
  Device device = Device::Cpu();
  std::vector<symbolic::Expr> sizes;
  std::vector<symbolic::Expr> strides;
  symbolic::Expr storage_offset = symbolic::Int(0);
  StorageId storage = kUnknownStorage;

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  // "f32[s0, 16][16, 1]cpu"; "f32[s0, 16]" without strides and device.
  std::string ToAnnotation(AnnotationStyle style = {}) const;
  // Whether it is provably contiguous as PyTorch's is_contiguous says
  // (size-1 dimensions do not count; an empty tensor is).
  bool IsContiguous() const;
};

// ForEachSymbolDim()
//
// Calls `f(symbol, stride, dim)` for each size (stride = false) and stride of
// `m` that is a bare symbol: where a runtime value for it can be read.
template <typename F>
void ForEachSymbolDim(const TensorMeta& m, F&& f) {
  for (bool stride : {false, true}) {
    const std::vector<symbolic::Expr>& list = stride ? m.strides : m.sizes;
    for (size_t d = 0; d < list.size(); ++d) {
      if (list[d].is_symbol()) f(list[d], stride, static_cast<int>(d));
    }
  }
}

struct ValueMeta {
  enum class Kind : uint8_t { kNone, kTensor, kSym, kTuple };
  Kind kind = Kind::kNone;
  TensorMeta tensor;                // kTensor
  symbolic::Expr sym;               // kSym: an int, float or bool expression
  std::vector<ValueMeta> elements;  // kTuple

  static ValueMeta Tensor(TensorMeta t);
  static ValueMeta Sym(symbolic::Expr e);
  static ValueMeta Tuple(std::vector<ValueMeta> elements);

  // The annotation text without quotes; "" for kNone. Its k-th tensor
  // (depth first through tuples) is written as styles[k] says, in full when
  // `styles` has no k-th entry.
  std::string ToAnnotation(absl::Span<const AnnotationStyle> styles = {}) const;
  // The known storages of its tensors, each once, in order.
  std::vector<StorageId> Storages() const;
  // The free symbols of its sizes, strides, offsets and scalar values (with
  // repeats).
  std::vector<symbolic::Expr> Symbols() const;
};

// ParseAnnotation()
//
// A value's annotation: "f32[2, 3]", "f32[s0, 3][3, 1]", "f32[s0][1]cuda:0",
// "Sym(s0 + 1)", "Sym(zf0)", "Sym(Eq(s0, 2))", or a parenthesized tuple of
// those. Symbols follow symbolic::DefaultSymbol naming. Errors name the
// column within `text` (1-based). With `styles`, sets it to how each tensor
// of the annotation is written, in the order ToAnnotation takes them.
absl::StatusOr<ValueMeta> ParseAnnotation(
    absl::string_view text, std::vector<AnnotationStyle>* styles = nullptr);

}  // namespace lathe::ir

#endif  // LATHE_IR_TENSOR_META_H_
