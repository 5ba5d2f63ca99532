#include "runtime/testing/expect_close.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace lathe::testing {

double DTypeTolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 1e-2;
    case DType::kBFloat16:
      return 4e-2;
    case DType::kFloat32:
      return 1e-4;
    case DType::kFloat64:
      return 1e-10;
    default:
      return 0;
  }
}

std::string TensorDiff(const Tensor& got, const Tensor& want, double relative) {
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    return absl::StrCat("expected ", want.ToString(), ", got ", got.ToString());
  }
  bool exact = !IsFloatingPoint(want.dtype());
  std::string diff;
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> i) {
    if (!diff.empty()) return;
    double g = got.GetDouble(i), w = want.GetDouble(i);
    bool same =
        g == w || (std::isnan(w) && std::isnan(g)) ||
        (!exact && std::abs(g - w) <= relative * std::max(1.0, std::abs(w)));
    if (!same) {
      diff = absl::StrCat("at [", absl::StrJoin(i, ", "), "]: expected ", w,
                          ", got ", g);
    }
  });
  return diff;
}

void ExpectTensorsClose(const Tensor& got, const Tensor& want, double relative,
                        const std::string& what) {
  std::string diff = TensorDiff(got, want, relative);
  EXPECT_EQ(diff, "") << what;
}

}  // namespace lathe::testing
