#include "tools/testing/expect_close.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace lathe::testing {

void ExpectTensorsClose(const Tensor& got, const Tensor& want, double relative,
                        const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> j) {
    double g = got.GetDouble(j), w = want.GetDouble(j);
    if (!IsFloatingPoint(want.dtype())) {
      ASSERT_EQ(g, w) << what;
    } else if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what;
    } else {
      ASSERT_NEAR(g, w, relative * std::max(1.0, std::abs(w))) << what;
    }
  });
}

}  // namespace lathe::testing
