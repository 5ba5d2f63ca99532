// -----------------------------------------------------------------------------
// File: ops_nn_testing.h
// -----------------------------------------------------------------------------
//
// Test helpers (testonly) the neural-network ops' tests share (ops_conv_test,
// ops_pool_test, ops_norm_test, ops_loss_test, ops_grid_sampler_test,
// ops_nn_test, ops_nn_symbolic_test): the generator's inputs (Seq), list
// arguments, one call's value or result, and the check of a result against
// PyTorch's captured values.
//
// Example:
//
//   Value r = RunV("aten.avg_pool2d.default",
//                  {V(Seq({1, 1, 4, 4}, DType::kFloat32, 11, 5, 0.5)), ...});
//   Expect(r, {1, 1, 2, 2}, DType::kFloat32, {0.5, -1, 2, 0}, 1e-6, true);

#ifndef LATHE_IR_OPS_NN_TESTING_H_
#define LATHE_IR_OPS_NN_TESTING_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "ir/op_testing.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::ir {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Element i (row-major) is ((7 * i) % mod - off) * scale, as the generator
// computed it.
inline Tensor Seq(std::vector<int64_t> sizes, DType dtype, int64_t mod,
                  int64_t off, double scale) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  int64_t i = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> index) {
    t.SetDouble(index, static_cast<double>((7 * i) % mod - off) * scale);
    ++i;
  });
  return t;
}

inline Value Floats(const std::vector<double>& v) {
  std::vector<Value> items;
  for (double x : v) items.push_back(Value::Float(x));
  return Value::List(std::move(items));
}
inline Value Bools(const std::vector<bool>& v) {
  std::vector<Value> items;
  for (bool x : v) items.push_back(Value::Bool(x));
  return Value::List(std::move(items));
}

inline Value RunV(const std::string& target, const std::vector<Value>& args) {
  absl::StatusOr<Value> v = RunOp(target, args);
  EXPECT_OK(v) << target;
  return v.ok() ? *v : Value::None();
}

inline Value Out(const Value& r, size_t i) {
  if (r.kind != Value::Kind::kList || i >= r.list.size()) return Value::None();
  return r.list[i];
}

// Expects a contiguous tensor of `sizes` and `dtype` whose elements are
// `want` (row-major, relative tolerance `tol`) when `values`.
inline void Expect(const Value& v, std::vector<int64_t> sizes, DType dtype,
                   std::vector<double> want, double tol, bool values) {
  ASSERT_TRUE(v.is_tensor()) << v.DebugString();
  const Tensor& t = v.tensor;
  ASSERT_EQ(t.sizes(), sizes);
  EXPECT_EQ(t.dtype(), dtype);
  if (!values) return;
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  size_t k = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    double got = t.GetDouble(i), w = want[k++];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << k - 1;
    } else if (std::isinf(w)) {
      EXPECT_EQ(got, w) << "element " << k - 1;
    } else {
      EXPECT_NEAR(got, w, tol * std::max(1.0, std::fabs(w)))
          << "element " << k - 1 << " of " << t.ToString();
    }
  });
}

}  // namespace lathe::ir

#endif  // LATHE_IR_OPS_NN_TESTING_H_
