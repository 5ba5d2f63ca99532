#include "codegen/scalar_ops.h"

#include <vector>

#include "absl/container/flat_hash_map.h"

namespace lathe::codegen {

const std::vector<ScalarFn>& ScalarFns() {
  static const auto* fns = new std::vector<ScalarFn>{
      // Unary, any dtype.
      {"neg", 1},
      {"abs", 1},
      {"relu", 1},
      {"floor", 1},
      {"ceil", 1},
      {"trunc", 1},
      {"round", 1},  // half to even
      {"sign", 1},   // sign(NaN) is 0, as the reference kernel says
      {"square", 1},
      {"bitwise_not", 1},
      {"logical_not", 1, false, true},
      {"isnan", 1, false, true},
      {"isinf", 1, false, true},
      {"isfinite", 1, false, true},
      {"signbit", 1, false, true},
      // Unary, floating only.
      {"exp", 1, true},
      {"exp2", 1, true},
      {"expm1", 1, true},
      {"log", 1, true},
      {"log2", 1, true},
      {"log10", 1, true},
      {"log1p", 1, true},
      {"sqrt", 1, true},
      {"rsqrt", 1, true},
      {"reciprocal", 1, true},
      {"sin", 1, true},
      {"cos", 1, true},
      {"tan", 1, true},
      {"asin", 1, true},
      {"acos", 1, true},
      {"atan", 1, true},
      {"sinh", 1, true},
      {"cosh", 1, true},
      {"tanh", 1, true},
      {"asinh", 1, true},
      {"acosh", 1, true},
      {"atanh", 1, true},
      {"erf", 1, true},
      {"erfc", 1, true},
      {"sigmoid", 1, true},
      {"silu", 1, true},
      {"frac", 1, true},
      {"lgamma", 1, true},
      // Binary.
      {"add", 2},
      {"sub", 2},
      {"mul", 2},
      {"truediv", 2, true},
      {"floordiv", 2},  // Python's floor division (ints and floats)
      {"truncdiv", 2},
      {"remainder", 2},  // the sign of the divisor
      {"fmod", 2},       // the sign of the dividend
      {"pow", 2},
      {"maximum", 2},  // NaN propagates
      {"minimum", 2},
      {"fmax", 2},  // NaN only when both are
      {"fmin", 2},
      {"atan2", 2, true},
      {"hypot", 2, true},
      {"copysign", 2, true},
      {"eq", 2, false, true},
      {"ne", 2, false, true},
      {"lt", 2, false, true},
      {"le", 2, false, true},
      {"gt", 2, false, true},
      {"ge", 2, false, true},
      {"logical_and", 2, false, true},
      {"logical_or", 2, false, true},
      {"logical_xor", 2, false, true},
      {"bitwise_and", 2},
      {"bitwise_or", 2},
      {"bitwise_xor", 2},
      {"lshift", 2},
      {"rshift", 2},
      // Ternary.
      {"where", 3},  // where(cond, a, b)
      // Random draws (int64 operands, a double result).
      {"rand", 3},   // rand(seed, counter, bits): in [0, 1), `bits` bits
      {"randn", 2},  // randn(seed, counter): normal, draws counter, +1
  };
  return *fns;
}

const ScalarFn* FindScalarFn(absl::string_view name) {
  static const auto* index = [] {
    auto* m = new absl::flat_hash_map<std::string, const ScalarFn*>();
    for (const ScalarFn& f : ScalarFns()) (*m)[f.name] = &f;
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

DType ComputeDType(DType dtype) {
  return IsHalfFloat(dtype) ? DType::kFloat32 : dtype;
}

absl::string_view CType(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return "lathe_half";
    case DType::kBFloat16:
      return "lathe_bfloat16";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kInt8:
      return "int8_t";
    case DType::kInt16:
      return "int16_t";
    case DType::kInt32:
      return "int32_t";
    case DType::kInt64:
      return "int64_t";
    case DType::kUInt8:
      return "uint8_t";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

absl::string_view ScalarPrelude() {
  static constexpr char kPrelude[] =
#include "codegen/scalar_prelude_text.inc"
      ;
  return kPrelude;
}

}  // namespace lathe::codegen
