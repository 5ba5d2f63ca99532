// -----------------------------------------------------------------------------
// File: dtype.h
// -----------------------------------------------------------------------------
//
// The element types lathe tensors hold, their names in PyTorch's annotations
// ("f32") and as torch attributes ("torch.float32"), and a visitor that calls
// a generic lambda with the C++ type of a DType.
//
// Example:
//
//   ASSIGN_OR_RETURN(DType d, ParseDType("bf16"));
//   ItemSize(d);                        // 2
//   VisitDType(d, [](auto tag) { using T = decltype(tag); ... });

#ifndef LATHE_RUNTIME_DTYPE_H_
#define LATHE_RUNTIME_DTYPE_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/half.h"

namespace lathe {

enum class DType : uint8_t {
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
};

// AllDTypes()
//
// Every DType, in declaration order.
const std::vector<DType>& AllDTypes();

// ItemSize()
//
// Bytes per element.
int ItemSize(DType dtype);

// ShortName()
//
// The name in PyTorch's graph annotations: f16, bf16, f32, f64, i8, i16, i32,
// i64, u8, b8.
absl::string_view ShortName(DType dtype);

// TorchName()
//
// "torch.float32", "torch.bool", ...
absl::string_view TorchName(DType dtype);

// ParseDType()
//
// A DType from its short name, torch name ("torch.float32" or "float32") or
// an alias PyTorch accepts ("torch.half", "torch.long", ...).
absl::StatusOr<DType> ParseDType(absl::string_view name);

// IsFloatingPoint()/IsIntegral()
//
// Type classes for promotion and kernels; bool is integral only when asked.
bool IsFloatingPoint(DType dtype);
bool IsIntegral(DType dtype, bool include_bool);

// IsHalfFloat()
//
// Whether `dtype` is f16 or bf16: 16 bits in memory, computed in f32.
bool IsHalfFloat(DType dtype);

// MaxFinite()
//
// The largest finite value of a floating dtype (float16: 65504).
double MaxFinite(DType dtype);

// SignificandBits()
//
// Significand bits of a floating dtype, the implicit bit included (11 for
// float16, 8 for bfloat16, 24 for float32, 53 for float64): a uniform draw
// with that many random bits stays below 1 in it (the random ops).
int SignificandBits(DType dtype);

// VisitDType()
//
// Calls `f` with a value of the C++ type of `dtype` (Half, BFloat16, float,
// double, int8_t, int16_t, int32_t, int64_t, uint8_t, bool).
template <typename F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat16:
      return f(Half{});
    case DType::kBFloat16:
      return f(BFloat16{});
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kInt8:
      return f(int8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kBool:
      return f(bool{});
  }
  return f(float{});
}

// ToDouble()/FromDouble()
//
// An element's value as a double, and a double stored as an element with the
// conversion PyTorch applies (round to nearest for f16/bf16, TruncateToInt
// for ints, != 0 for bool).
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return v.ToFloat();
  } else {
    return static_cast<double>(v);
  }
}

// TruncateToInt()
//
// `v` as the integer type T, as PyTorch's CPU kernels convert it (x86's
// truncating conversion, in their vector loops too): toward zero; a NaN, an
// infinity or a value out of range gives the lowest value of a 32-bit
// conversion for types of 4 bytes or fewer (int8, uint8 and int16 keep its
// low bits: 0) and of a 64-bit one for int64 (-3.7 -> uint8 253, 300 -> int8
// 44, 1e20 -> int32 INT32_MIN). Defined for every input: static_cast's
// out-of-range conversion is undefined, and a compiler folds it saturating
// where the machine does not.
template <typename T>
T TruncateToInt(double v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if constexpr (sizeof(T) == 8) {
    return static_cast<T>(v >= -0x1p63 && v < 0x1p63
                              ? static_cast<int64_t>(v)
                              : std::numeric_limits<int64_t>::min());
  } else {
    return static_cast<T>(v > -0x1p31 - 1 && v < 0x1p31
                              ? static_cast<int32_t>(v)
                              : std::numeric_limits<int32_t>::min());
  }
}

// FloorClamped()
//
// floor(v) clamped to [lo, hi], for every v: lo for a NaN and for what is
// not above lo, hi for what is not below hi (an infinity, 1e300), where
// converting to an integer would be undefined.
inline int64_t FloorClamped(double v, int64_t lo, int64_t hi) {
  if (!(v > static_cast<double>(lo))) return lo;
  if (!(v < static_cast<double>(hi))) return hi;
  return static_cast<int64_t>(std::floor(v));
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T::FromFloat(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return TruncateToInt<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace lathe

#endif  // LATHE_RUNTIME_DTYPE_H_
