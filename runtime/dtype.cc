#include "runtime/dtype.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace lathe {
namespace {

struct Info {
  DType dtype;
  int size;
  absl::string_view short_name;
  absl::string_view torch_name;
};

constexpr Info kInfo[] = {
    {DType::kFloat16, 2, "f16", "torch.float16"},
    {DType::kBFloat16, 2, "bf16", "torch.bfloat16"},
    {DType::kFloat32, 4, "f32", "torch.float32"},
    {DType::kFloat64, 8, "f64", "torch.float64"},
    {DType::kInt8, 1, "i8", "torch.int8"},
    {DType::kInt16, 2, "i16", "torch.int16"},
    {DType::kInt32, 4, "i32", "torch.int32"},
    {DType::kInt64, 8, "i64", "torch.int64"},
    {DType::kUInt8, 1, "u8", "torch.uint8"},
    {DType::kBool, 1, "b8", "torch.bool"},
};

const Info& InfoOf(DType d) { return kInfo[static_cast<int>(d)]; }

}  // namespace

const std::vector<DType>& AllDTypes() {
  static const auto* all = new std::vector<DType>([] {
    std::vector<DType> v;
    for (const Info& i : kInfo) v.push_back(i.dtype);
    return v;
  }());
  return *all;
}

int ItemSize(DType dtype) { return InfoOf(dtype).size; }
absl::string_view ShortName(DType dtype) { return InfoOf(dtype).short_name; }
absl::string_view TorchName(DType dtype) { return InfoOf(dtype).torch_name; }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  absl::string_view bare = name;
  absl::ConsumePrefix(&bare, "torch.");
  for (const Info& i : kInfo) {
    if (name == i.short_name || bare == i.torch_name.substr(6)) return i.dtype;
  }
  static constexpr std::pair<absl::string_view, DType> kAliases[] = {
      {"half", DType::kFloat16},   {"float", DType::kFloat32},
      {"double", DType::kFloat64}, {"short", DType::kInt16},
      {"int", DType::kInt32},      {"long", DType::kInt64},
  };
  for (const auto& [alias, d] : kAliases) {
    if (bare == alias) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name,
      "' (expected f16, bf16, f32, f64, i8, i16, i32, i64, u8, b8 or a "
      "torch.* name)"));
}

bool IsFloatingPoint(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 ||
         d == DType::kFloat32 || d == DType::kFloat64;
}

bool IsHalfFloat(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16;
}

double MaxFinite(DType d) {
  switch (d) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return 3.3895313892515355e38;
    case DType::kFloat32:
      return 3.4028234663852886e38;
    default:
      return 1.7976931348623157e308;
  }
}

int SignificandBits(DType d) {
  switch (d) {
    case DType::kFloat16:
      return 11;
    case DType::kBFloat16:
      return 8;
    case DType::kFloat32:
      return 24;
    default:
      return 53;
  }
}

bool IsIntegral(DType d, bool include_bool) {
  if (d == DType::kBool) return include_bool;
  return !IsFloatingPoint(d);
}

}  // namespace lathe
