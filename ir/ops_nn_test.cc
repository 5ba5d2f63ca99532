// The neural-network ops (ops_nn.cc) against values computed by PyTorch and
// captured as literals (the NnOpsTest cases below were generated once with
// PyTorch 2.15 from the same inputs: Seq() reproduces them), plus their
// argument errors. Every call goes through RunOp, which also checks that the
// meta function predicts the kernel's dtype, sizes and strides.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/shape_prop.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Element i (row-major) is ((7 * i) % mod - off) * scale, as the generator
// computed it.
Tensor Seq(std::vector<int64_t> sizes, DType dtype, int64_t mod, int64_t off,
           double scale) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  int64_t i = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> index) {
    t.SetDouble(index, static_cast<double>((7 * i) % mod - off) * scale);
    ++i;
  });
  return t;
}

Value Floats(const std::vector<double>& v) {
  std::vector<Value> items;
  for (double x : v) items.push_back(Value::Float(x));
  return Value::List(std::move(items));
}
Value Bools(const std::vector<bool>& v) {
  std::vector<Value> items;
  for (bool x : v) items.push_back(Value::Bool(x));
  return Value::List(std::move(items));
}

Value RunV(const std::string& target, const std::vector<Value>& args) {
  absl::StatusOr<Value> v = RunOp(target, args);
  EXPECT_OK(v) << target;
  return v.ok() ? *v : Value::None();
}

Value Out(const Value& r, size_t i) {
  if (r.kind != Value::Kind::kList || i >= r.list.size()) return Value::None();
  return r.list[i];
}

// Expects a contiguous tensor of `sizes` and `dtype` whose elements are
// `want` (row-major, relative tolerance `tol`) when `values`.
void Expect(const Value& v, std::vector<int64_t> sizes, DType dtype,
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

TEST(NnOpsTest, AvgPool3dBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // The gradient is 7 * i + 7; ceil_mode windows past the input, padding
  // left out of the divisor, then a divisor_override.
  std::vector<Value> args = {
      V(Seq({1, 1, 2, 2, 2}, DType::kFloat32, 1000, -7, 1)),
      V(Seq({1, 1, 3, 3, 3}, DType::kFloat32, 5, 2, 1)),
      Ints({2, 2, 2}),
      Ints({2, 2, 2}),
      Ints({1, 1, 1}),
      Value::Bool(true),
      Value::Bool(false),
      Value::None()};
  Expect(RunV("aten.avg_pool3d_backward.default", args), {1, 1, 3, 3, 3},
         DType::kFloat32, {7.0,  7.0,  7.0,  10.5,  7.0, 7.0, 10.5,  7.0, 7.0,
                           17.5, 10.5, 10.5, 12.25, 7.0, 7.0, 12.25, 7.0, 7.0,
                           17.5, 10.5, 10.5, 12.25, 7.0, 7.0, 12.25, 7.0, 7.0},
         1e-6, true);
  args[6] = Value::Bool(true);
  args[7] = Value::Int(3);
  Expect(RunV("aten.avg_pool3d_backward.default", args), {1, 1, 3, 3, 3},
         DType::kFloat32,
         {2.3333332538604736,
          4.666666507720947,
          4.666666507720947,
          7.0,
          9.333333015441895,
          9.333333015441895,
          7.0,
          9.333333015441895,
          9.333333015441895,
          11.666666984558105,
          14.0,
          14.0,
          16.33333396911621,
          18.66666603088379,
          18.66666603088379,
          16.33333396911621,
          18.66666603088379,
          18.66666603088379,
          11.666666984558105,
          14.0,
          14.0,
          16.33333396911621,
          18.66666603088379,
          18.66666603088379,
          16.33333396911621,
          18.66666603088379,
          18.66666603088379},
         1e-6, true);
  // int64: each share divided truncating (-9 / 8 is -1), as PyTorch's
  // integer kernel; overlapping windows add their shares (10 / 8 is 1).
  Expect(RunV("aten.avg_pool3d_backward.default",
              {V(Seq({1, 1, 1, 1, 1}, DType::kInt64, 1, 9, 1)),
               V(Seq({1, 1, 2, 2, 2}, DType::kInt64, 1, 0, 1)), Ints({2, 2, 2}),
               Ints({2, 2, 2}), Ints({0, 0, 0}), Value::Bool(false),
               Value::Bool(true), Value::None()}),
         {1, 1, 2, 2, 2}, DType::kInt64, {-1, -1, -1, -1, -1, -1, -1, -1}, 0,
         true);
  Expect(RunV("aten.avg_pool3d_backward.default",
              {V(Seq({1, 1, 2, 2, 2}, DType::kInt64, 1, -10, 1)),
               V(Seq({1, 1, 3, 3, 3}, DType::kInt64, 1, 0, 1)), Ints({2, 2, 2}),
               Ints({1, 1, 1}), Ints({0, 0, 0}), Value::Bool(false),
               Value::Bool(true), Value::None()}),
         {1, 1, 3, 3, 3}, DType::kInt64,
         {1, 2, 1, 2, 4, 2, 1, 2, 1, 2, 4, 2, 4, 8,
          4, 2, 4, 2, 1, 2, 1, 2, 4, 2, 1, 2, 1},
         0, true);
  EXPECT_THAT(RunOp("aten.avg_pool3d_backward.default",
                    {V(Seq({1, 1, 1, 1, 1}, DType::kInt32, 1, 0, 1)),
                     V(Seq({1, 1, 2, 2, 2}, DType::kInt32, 1, 0, 1)),
                     Ints({2, 2, 2}), Ints({2, 2, 2}), Ints({0, 0, 0}),
                     Value::Bool(false), Value::Bool(true), Value::None()})
                  .status()
                  .message(),
              HasSubstr("\"avg_pool3d_backward_out_frame\" not implemented "
                        "for 'Int'"));
}

TEST(NnOpsTest, Convolution) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured. 2-d
  // with bias, stride and padding; 1-d groups+dilation; 3-d; transposed with
  // groups and output_padding; transposed 1-d dilated with bias; int64.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 5, 5}, DType::kFloat32, 11, 5, 0.5)),
        V(Seq({4, 3, 3, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({4}, DType::kFloat32, 11, 5, 0.5)),
        Ints({2, 2}),
        Ints({1, 1}),
        Ints({1, 1}),
        Value::Bool(false),
        Ints({0, 0}),
        Value::Int(1)};
    Value r = RunV("aten.convolution.default", args);
    Expect(r, {2, 4, 3, 3}, DType::kFloat32,
           {-11.25, -0.75,  17.0,   13.75, 1.0,   -14.0, -14.0, -6.25,  -6.25,
            15.5,   -6.0,   -16.75, -9.25, -19.0, 2.25,  1.0,   1.5,    0.5,
            -8.75,  -3.75,  5.75,   1.25,  33.5,  -6.5,  -2.5,  -2.75,  -8.0,
            18.0,   -12.25, -11.75, -12.0, -2.75, -3.25, 9.25,  -8.0,   15.0,
            0.25,   -12.5,  -4.25,  -1.0,  8.25,  -4.25, -3.0,  -18.75, -4.5,
            -7.75,  16.75,  5.75,   16.0,  -6.0,  -12.5, 13.0,  16.75,  3.25,
            4.75,   -8.25,  -9.25,  4.75,  -9.5,  16.0,  -15.5, -5.25,  -4.25,
            6.5,    17.75,  7.25,   5.5,   -4.25, -5.25, 7.0,   27.0,   -6.25},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 4, 9}, DType::kFloat32, 11, 5, 0.5)),
                               V(Seq({6, 2, 3}, DType::kFloat32, 5, 2, 0.5)),
                               Value::None(),
                               Ints({1}),
                               Ints({2}),
                               Ints({2}),
                               Value::Bool(false),
                               Ints({0}),
                               Value::Int(2)};
    Value r = RunV("aten.convolution.default", args);
    Expect(r, {1, 6, 9}, DType::kFloat32,
           {2.25,  1.25, 2.0,   -4.25, 3.25,  -0.25, -3.75, -0.5,  -1.25,
            -3.5,  0.25, 2.0,   2.0,   -0.75, -3.5,  2.0,   2.75,  -3.75,
            -1.75, 1.75, -4.25, 2.0,   2.75,  0.75,  1.5,   -4.0,  2.5,
            -3.0,  2.5,  2.5,   -2.0,  1.75,  -2.75, -1.75, 1.75,  -0.25,
            0.75,  0.0,  -2.25, 2.25,  1.25,  -2.5,  2.0,   -3.0,  -3.0,
            0.75,  2.5,  -3.25, 1.5,   0.75,  2.75,  2.0,   -0.25, 1.75},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 4, 4, 4}, DType::kFloat32, 11, 5, 0.5)),
        V(Seq({2, 2, 2, 2, 2}, DType::kFloat32, 7, 3, 0.5)),
        Value::None(),
        Ints({1, 2, 1}),
        Ints({1, 0, 1}),
        Ints({1, 1, 1}),
        Value::Bool(false),
        Ints({0, 0, 0}),
        Value::Int(1)};
    Value r = RunV("aten.convolution.default", args);
    Expect(r, {1, 2, 5, 2, 5}, DType::kFloat32,
           {2.25,  0.0,   -0.75, -1.5, -3.0,  -0.75, 2.25,  1.5,   0.75,  2.25,
            -1.5,  -3.75, 3.0,   1.5,  -3.75, 0.75,  0.75,  -0.75, -2.25, -1.5,
            -5.25, -3.0,  3.75,  2.25, 0.75,  5.25,  1.5,   0.0,   -1.5,  -5.25,
            -0.75, -2.25, -3.75, 3.0,  5.25,  1.5,   2.25,  0.75,  -0.75, -0.75,
            0.75,  -3.0,  -3.75, 3.75, 3.75,  -2.25, -0.75, -1.5,  -2.25, 0.75,
            2.25,  0.0,   -0.75, -1.5, -3.0,  -0.75, 2.25,  1.5,   0.75,  2.25,
            -1.5,  -3.75, 3.0,   1.5,  -3.75, 0.75,  0.75,  -0.75, -2.25, -1.5,
            -5.25, -3.0,  3.75,  2.25, 0.75,  5.25,  1.5,   0.0,   -1.5,  -5.25,
            -0.75, -2.25, -3.75, 3.0,  5.25,  1.5,   2.25,  0.75,  -0.75, -0.75,
            0.75,  -3.0,  -3.75, 3.75, 3.75,  -2.25, -0.75, -1.5,  -2.25, 0.75},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 4, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
        V(Seq({4, 3, 3, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({6}, DType::kFloat32, 11, 5, 0.5)),
        Ints({2, 2}),
        Ints({1, 1}),
        Ints({1, 1}),
        Value::Bool(true),
        Ints({1, 1}),
        Value::Int(2)};
    Value r = RunV("aten.convolution.default", args);
    Expect(
        r, {1, 6, 6, 6}, DType::kFloat32,
        {4.75,  -6.5,   -5.25, 3.75,  -4.25, -0.25, -10.25, -6.0,  2.75,  -4.75,
         -9.0,  -1.5,   -6.0,  2.25,  -5.0,  -6.75, 4.25,   -8.5,  1.25,  -10.5,
         3.25,  7.25,   -14.0, 12.25, -5.75, 2.75,  -4.75,  -6.25, 4.5,   -8.5,
         1.0,   -6.25,  -1.0,  0.75,  -8.5,  4.5,   9.25,   -2.5,  -2.25, 10.25,
         2.75,  6.75,   -2.75, 14.5,  -0.25, -5.25, 13.25,  -5.25, -6.0,  2.75,
         -1.0,  -3.75,  6.75,  -6.0,  2.0,   2.0,   -1.0,   -1.25, 1.5,   1.75,
         -4.75, 5.25,   0.25,  -1.25, 8.0,   -5.0,  2.0,    -3.75, 4.0,   5.75,
         -5.0,  8.0,    -8.0,  2.5,   1.75,  -8.25, -2.25,  -8.0,  -7.25, 16.5,
         -2.25, -11.25, 13.75, -4.75, 4.75,  -2.25, 0.75,   3.5,   -6.0,  7.25,
         -6.0,  -0.75,  -1.0,  -12.0, -1.5,  -1.25, 3.75,   -4.25, -0.25, 1.5,
         -7.0,  6.0,    -2.5,  -6.75, 3.5,   -7.75, -7.0,   6.0,   -0.5,  -2.0,
         9.5,   -1.25,  0.25,  5.5,   6.75,  10.75, -9.0,   12.25, 8.25,  -1.0,
         -0.75, -2.5,   9.25,  -1.75, 0.0,   5.0,   6.25,   -4.0,  -4.0,  0.25,
         7.75,  -2.0,   -1.0,  5.25,  0.75,  8.75,  -0.25,  4.5,   1.25,  -4.5,
         8.25,  1.25,   4.25,  -0.75, -1.0,  -2.5,  7.5,    -4.75, -3.25, 2.0,
         8.75,  -2.5,   -10.0, 15.75, 4.25,  -5.0,  -0.25,  -1.0,  8.25,  -3.25,
         -2.5,  2.5,    10.25, 13.75, -8.5,  -1.0,  5.75,   -4.0,  0.5,   3.25,
         -4.75, 3.75,   -1.75, 3.0,   2.75,  -6.5,  2.75,   -3.75, 2.75,  -2.25,
         -1.5,  10.0,   -7.5,  -8.25, 3.0,   -1.5,  -2.25,  -2.75, -1.25, -3.5,
         -3.0,  -2.5,   -3.0,  10.25, -9.0,  -8.0,  1.5,    0.0,   -2.0,  8.75,
         -6.5,  10.75,  -2.75, -2.75, -4.5,  7.75,  6.0,    -7.75, 0.0,   1.5,
         4.25,  -8.5,   -2.75, -8.75, 1.25,  -3.75},
        0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 2, 4}, DType::kFloat32, 11, 5, 0.5)),
                               V(Seq({2, 3, 3}, DType::kFloat32, 5, 2, 0.5)),
                               V(Seq({3}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({3}),
                               Ints({1}),
                               Ints({2}),
                               Value::Bool(true),
                               Ints({1}),
                               Value::Int(1)};
    Value r = RunV("aten.convolution.default", args);
    Expect(r, {2, 3, 13}, DType::kFloat32,
           {-2.5, -3.0,  -4.25, -5.0, -1.0,  -0.5, -1.5, -4.5, -5.0,  -3.5,
            -2.5, -2.5,  0.0,   1.0,  -0.5,  -1.0, 3.75, 2.25, 3.5,   -0.75,
            -0.5, -0.25, 3.0,   2.25, 1.0,   -1.5, -1.0, -3.5, 0.5,   0.75,
            0.0,  -3.0,  -3.0,  -2.0, -1.0,  1.5,  1.5,  -1.0, -2.25, -2.5,
            -3.5, -4.5,  -4.5,  -1.5, -0.75, -1.0, -5.0, 0.25, -3.0,  -3.0,
            -2.5, -5.0,  1.0,   -0.5, -0.75, 3.5,  2.25, 3.75, -1.0,  -0.5,
            2.75, 2.75,  -0.5,  1.0,  3.75,  -1.0, -3.0, 0.0,  1.0,   0.5,
            -3.5, -2.75, -1.5,  -1.5, 1.75,  -3.5, -1.0, 0.75},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 2, 4, 4}, DType::kInt64, 5, 2, 1)),
                               V(Seq({3, 2, 2, 2}, DType::kInt64, 3, 1, 1)),
                               Value::None(),
                               Ints({1, 1}),
                               Ints({0, 0}),
                               Ints({1, 1}),
                               Value::Bool(false),
                               Ints({0, 0}),
                               Value::Int(1)};
    Value r = RunV("aten.convolution.default", args);
    Expect(r, {1, 3, 3, 3}, DType::kInt64,
           {9.0,  -3.0, -5.0, -4.0, 9.0,  -3.0, 3.0,  -4.0, 9.0,
            -6.0, -6.0, 9.0,  9.0,  -6.0, -6.0, -6.0, 9.0,  -6.0,
            -3.0, 9.0,  -4.0, -5.0, -3.0, 9.0,  3.0,  -5.0, -3.0},
           0.0001, true);
  }
}

TEST(NnOpsTest, ConvolutionBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // grouped strided 2-d with all outputs; transposed 1-d with grad_weight
  // masked out.
  {
    std::vector<Value> args = {
        V(Seq({1, 4, 3, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 4, 5, 5}, DType::kFloat32, 11, 5, 0.5)),
        V(Seq({4, 2, 3, 3}, DType::kFloat32, 13, 6, 0.5)),
        Ints({4}),
        Ints({2, 2}),
        Ints({1, 1}),
        Ints({1, 1}),
        Value::Bool(false),
        Ints({0, 0}),
        Value::Int(2),
        Bools({true, true, true})};
    Value r = RunV("aten.convolution_backward.default", args);
    Expect(
        Out(r, 0), {1, 4, 5, 5}, DType::kFloat32,
        {-0.75, -1.5,  -0.75, -1.5,  -0.75, -1.5,  6.75,  -1.5,  6.75,  -1.5,
         -0.75, -1.5,  -0.75, -1.5,  -0.75, -1.5,  6.75,  -1.5,  6.75,  -1.5,
         -0.75, -1.5,  -0.75, -1.5,  -0.75, 2.25,  4.5,   2.25,  4.5,   2.25,
         4.5,   -10.5, 4.5,   -10.5, 4.5,   2.25,  4.5,   2.25,  4.5,   2.25,
         4.5,   -10.5, 4.5,   -10.5, 4.5,   2.25,  4.5,   2.25,  4.5,   2.25,
         1.5,   3.0,   1.5,   3.0,   1.5,   -6.75, 6.0,   -6.75, 6.0,   -6.75,
         1.5,   3.0,   1.5,   3.0,   1.5,   -6.75, 6.0,   -6.75, 6.0,   -6.75,
         1.5,   3.0,   1.5,   3.0,   1.5,   4.5,   -10.5, 4.5,   -10.5, 4.5,
         -0.75, 8.25,  -0.75, 8.25,  -0.75, 4.5,   -10.5, 4.5,   -10.5, 4.5,
         -0.75, 8.25,  -0.75, 8.25,  -0.75, 4.5,   -10.5, 4.5,   -10.5, 4.5},
        0.0001, true);
    Expect(Out(r, 1), {4, 2, 3, 3}, DType::kFloat32,
           {2.25,  -0.75, 2.25,  -0.75, 3.0,   -0.75, 2.25,  -0.75, 2.25,
            5.25,  3.75,  5.25,  -4.5,  -6.75, -4.5,  5.25,  3.75,  5.25,
            2.25,  -0.75, 2.25,  -0.75, 3.0,   -0.75, 2.25,  -0.75, 2.25,
            5.25,  3.75,  5.25,  -4.5,  -6.75, -4.5,  5.25,  3.75,  5.25,
            0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,
            -5.25, -3.75, -5.25, 4.5,   6.75,  4.5,   -5.25, -3.75, -5.25,
            0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,   0.0,
            -5.25, -3.75, -5.25, 4.5,   6.75,  4.5,   -5.25, -3.75, -5.25},
           0.0001, true);
    Expect(Out(r, 2), {4}, DType::kFloat32, {-13.5, -13.5, -13.5, -13.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 13}, DType::kFloat32, 7, 3, 0.5)),
                               V(Seq({2, 2, 4}, DType::kFloat32, 11, 5, 0.5)),
                               V(Seq({2, 3, 3}, DType::kFloat32, 5, 2, 0.5)),
                               Value::None(),
                               Ints({3}),
                               Ints({1}),
                               Ints({2}),
                               Value::Bool(true),
                               Ints({1}),
                               Value::Int(1),
                               Bools({true, false, true})};
    Value r = RunV("aten.convolution_backward.default", args);
    Expect(Out(r, 0), {2, 2, 4}, DType::kFloat32,
           {-1.5, 0.75, 0.75, 0.75, 0.0, -0.75, -0.75, -0.75, -1.5, 0.75, 0.75,
            0.75, 0.0, -0.75, -0.75, -0.75},
           0.0001, true);
    EXPECT_TRUE(Out(r, 1).is_none());
    Expect(Out(r, 2), {3}, DType::kFloat32, {-39.0, -39.0, -39.0}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, MaxPool) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // ceil_mode, padding with dilation and a rectangular kernel, unbatched,
  // int64, 3-d with ceil_mode, NaN and ties.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 5, 5}, DType::kFloat32, 23, 11, 0.5)),
        Ints({2, 2}),
        Ints({2, 2}),
        Ints({0, 0}),
        Ints({1, 1}),
        Value::Bool(true)};
    Value r = RunV("aten.max_pool2d_with_indices.default", args);
    Expect(Out(r, 0), {1, 2, 3, 3}, DType::kFloat32,
           {4.0, 5.0, 3.0, 4.5, 5.5, 3.5, -1.0, 2.5, -2.0, 5.0, 3.0, 4.0, 5.5,
            3.5, 4.5, 2.5, 1.5, 5.0},
           0.0001, true);
    Expect(Out(r, 1), {1, 2, 3, 3}, DType::kInt64,
           {6.0, 3.0, 9.0, 16.0, 13.0, 19.0, 21.0, 22.0, 24.0, 1.0, 7.0, 4.0,
            11.0, 17.0, 14.0, 20.0, 23.0, 24.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 5, 5}, DType::kFloat32, 23, 11, 0.5)),
        Ints({3, 2}),
        Ints({2, 1}),
        Ints({1, 1}),
        Ints({2, 1}),
        Value::Bool(false)};
    Value r = RunV("aten.max_pool2d_with_indices.default", args);
    Expect(Out(r, 0), {1, 2, 2, 6}, DType::kFloat32,
           {1.0,  4.5, 4.5, 0.0, 3.5,  3.5,  1.0,  4.5, 4.5, 0.0, 3.5,  3.5,
            -3.5, 0.0, 3.5, 3.5, -1.0, -1.0, -3.5, 0.0, 3.5, 3.5, -1.0, -1.0},
           0.0001, true);
    Expect(Out(r, 1), {1, 2, 2, 6}, DType::kInt64,
           {15.0, 16.0, 16.0, 18.0, 19.0, 19.0, 15.0, 16.0,
            16.0, 18.0, 19.0, 19.0, 15.0, 16.0, 17.0, 17.0,
            19.0, 19.0, 15.0, 16.0, 17.0, 17.0, 19.0, 19.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 4, 4}, DType::kFloat32, 13, 6, 0.5)),
                               Ints({2, 2}),
                               Bools({}),
                               Ints({1, 1}),
                               Ints({1, 1}),
                               Value::Bool(false)};
    Value r = RunV("aten.max_pool2d_with_indices.default", args);
    Expect(Out(r, 0), {2, 3, 3}, DType::kFloat32,
           {-3.0, 0.5, 1.0, -1.0, 2.5, 3.0, 0.0, 0.5, -2.5, 1.0, 1.5, -1.5, 3.0,
            2.5, 0.5, -2.5, 1.0, 1.5},
           0.0001, true);
    Expect(Out(r, 1), {2, 3, 3}, DType::kInt64,
           {0.0, 1.0, 3.0, 8.0, 9.0, 11.0, 12.0, 14.0, 15.0, 0.0, 2.0, 3.0, 8.0,
            6.0, 11.0, 12.0, 13.0, 15.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 1, 4, 4}, DType::kInt64, 9, 4, 1)),
                               Ints({3, 3}),
                               Ints({1, 1}),
                               Ints({1, 1}),
                               Ints({1, 1}),
                               Value::Bool(false)};
    Value r = RunV("aten.max_pool2d_with_indices.default", args);
    Expect(Out(r, 0), {1, 1, 4, 4}, DType::kInt64,
           {4.0, 4.0, 4.0, 2.0, 4.0, 4.0, 4.0, 3.0, 4.0, 4.0, 4.0, 4.0, -1.0,
            4.0, 4.0, 4.0},
           0.0001, true);
    Expect(Out(r, 1), {1, 1, 4, 4}, DType::kInt64,
           {5.0, 5.0, 5.0, 6.0, 5.0, 5.0, 5.0, 10.0, 5.0, 5.0, 5.0, 14.0, 12.0,
            14.0, 14.0, 14.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 4, 5, 5}, DType::kFloat32, 29, 14, 0.5)),
        Ints({2, 2, 2}),
        Ints({2, 2, 2}),
        Ints({1, 1, 1}),
        Ints({1, 1, 1}),
        Value::Bool(true)};
    Value r = RunV("aten.max_pool3d_with_indices.default", args);
    Expect(Out(r, 0), {1, 1, 3, 3, 3}, DType::kFloat32,
           {-7.0, 0.0, 7.0, -1.0, 6.0, 6.5, 5.0, 5.5, 4.5,
            -6.0, 1.0, 4.5, 0.0,  7.0, 7.0, 6.0, 6.5, 5.5,
            -5.5, 1.5, 5.0, 0.5,  4.5, 0.0, 6.5, 7.0, 6.0},
           0.0001, true);
    Expect(Out(r, 1), {1, 1, 3, 3, 3}, DType::kInt64,
           {0.0,  2.0,  4.0,  10.0, 12.0, 8.0,  20.0, 16.0, 24.0,
            50.0, 52.0, 53.0, 60.0, 62.0, 33.0, 70.0, 66.0, 74.0,
            75.0, 77.0, 78.0, 85.0, 82.0, 89.0, 95.0, 91.0, 99.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4, 4}, DType::kFloat32, 29, 14, 0.5)),
        Ints({2, 3, 2}),
        Ints({1, 1, 2}),
        Ints({0, 1, 0}),
        Ints({2, 1, 1}),
        Value::Bool(false)};
    Value r = RunV("aten.max_pool3d_with_indices.default", args);
    Expect(Out(r, 0), {2, 1, 4, 2}, DType::kFloat32,
           {7.0, 3.5, 7.0, 3.5, 7.0, 3.0, 6.5, 2.5, 5.0, 4.5, 5.0, 7.0, 4.5,
            7.0, 4.0, 7.0},
           0.0001, true);
    Expect(Out(r, 1), {2, 1, 4, 2}, DType::kInt64,
           {4.0, 3.0, 4.0, 3.0, 4.0, 7.0, 8.0, 11.0, 1.0, 34.0, 1.0, 43.0, 5.0,
            14.0, 9.0, 14.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(T({1, 3, 4},
            {1.0, kNaN, 3.0, 3.0, kNaN, 2.0, 3.0, 0.0, 5.0, 5.0, -1.0, -kInf},
            DType::kFloat32)),
        Ints({2, 2}),
        Ints({1, 1}),
        Ints({0, 0}),
        Ints({1, 1}),
        Value::Bool(false)};
    Value r = RunV("aten.max_pool2d_with_indices.default", args);
    Expect(Out(r, 0), {1, 2, 3}, DType::kFloat32,
           {kNaN, kNaN, 3.0, kNaN, 5.0, 3.0}, 0.0001, true);
    Expect(Out(r, 1), {1, 2, 3}, DType::kInt64, {4.0, 1.0, 2.0, 4.0, 9.0, 6.0},
           0.0001, true);
  }
}

TEST(NnOpsTest, MaxPoolBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // indices from the PyTorch forward (ceil_mode, overlapping windows;
  // dilation).
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 5, 5}, DType::kFloat32, 23, 11, 0.5)),
        Ints({3, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Ints({1, 1}),
        Value::Bool(true),
        V(T({1, 2, 3, 3},
            {6.0, 3.0, 3.0, 16.0, 13.0, 13.0, 16.0, 16.0, 19.0, 1.0, 1.0, 4.0,
             11.0, 11.0, 14.0, 20.0, 17.0, 24.0},
            DType::kInt64))};
    Value r = RunV("aten.max_pool2d_with_indices_backward.default", args);
    Expect(r, {1, 2, 5, 5}, DType::kFloat32,
           {0.0,  0.0, 0.0, -3.0, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, 0.0,  0.0, 0.0,
            -3.0, 0.0, 0.0, -4.5, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, 0.0,  0.0, 0.0,
            -3.0, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0,  0.0, 0.0, 0.0, -3.0, 0.0, 0.0,
            -1.5, 0.0, 0.0, -1.5, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, -1.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 2, 6}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 5, 5}, DType::kFloat32, 23, 11, 0.5)),
        Ints({3, 2}),
        Ints({2, 1}),
        Ints({1, 1}),
        Ints({2, 1}),
        Value::Bool(false),
        V(T({1, 2, 2, 6}, {15.0, 16.0, 16.0, 18.0, 19.0, 19.0, 15.0, 16.0,
                           16.0, 18.0, 19.0, 19.0, 15.0, 16.0, 17.0, 17.0,
                           19.0, 19.0, 15.0, 16.0, 17.0, 17.0, 19.0, 19.0},
            DType::kInt64))};
    Value r = RunV("aten.max_pool2d_with_indices_backward.default", args);
    Expect(
        r, {1, 2, 5, 5}, DType::kFloat32,
        {0.0, 0.0,  0.0,  0.0,  0.0, 0.0,  0.0,  0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
         0.0, 0.0,  -3.0, -6.0, 0.0, -3.0, -6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
         0.0, 0.0,  0.0,  0.0,  0.0, 0.0,  0.0,  0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
         0.0, -3.0, -3.0, -6.0, 0.0, -6.0, 0.0,  0.0, 0.0, 0.0, 0.0},
        0.0001, true);
  }
  // PyTorch 2.15: a channels-last input's gradient is channels-last
  // ((72, 1, 18, 3) for [2, 3, 4, 6]); an integer input is refused.
  Tensor cl =
      *Tensor::EmptyStrided({2, 3, 4, 6}, {72, 1, 18, 3}, DType::kFloat32);
  Value r =
      RunV("aten.max_pool2d_with_indices_backward.default",
           {V(Seq({2, 3, 2, 3}, DType::kFloat32, 5, 2, 1)), V(cl), Ints({2, 2}),
            Ints({2, 2}), Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
            V(T({2, 3, 2, 3}, std::vector<double>(36, 0), DType::kInt64))});
  EXPECT_THAT(r.tensor.strides(), ElementsAre(72, 1, 18, 3));
  EXPECT_THAT(
      RunError("aten.max_pool2d_with_indices_backward.default",
               {V(Seq({1, 1, 1, 1}, DType::kInt64, 1, 0, 1)),
                V(Seq({1, 1, 2, 2}, DType::kInt64, 1, 0, 1)), Ints({2, 2}),
                Ints({2, 2}), Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
                V(T({1, 1, 1, 1}, {0}, DType::kInt64))}),
      HasSubstr("\"max_pool2d_backward\" not implemented for 'Long'"));
}

TEST(NnOpsTest, MaxPool3dBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured:
  // the indices are max_pool3d_with_indices' for the same input, the
  // gradient Seq(..., 11, 5, 1); padding, dilation and ceil_mode differing
  // per axis, then an unbatched f64 input with overlapping windows.
  Value r = RunV(
      "aten.max_pool3d_with_indices_backward.default",
      {V(Seq({1, 2, 2, 2, 3}, DType::kFloat32, 11, 5, 1)),
       V(Seq({1, 2, 3, 4, 4}, DType::kFloat32, 29, 14, 0.5)), Ints({2, 2, 2}),
       Ints({2, 1, 2}), Ints({1, 0, 1}), Ints({1, 2, 1}), Value::Bool(true),
       V(T({1, 2, 2, 2, 3}, {8, 2, 3, 4, 6,  7, 16, 33, 19, 20, 37, 23,
                             0, 1, 3, 4, 14, 7, 16, 18, 43, 20, 22, 47},
           DType::kInt64))});
  std::vector<double> plane0(48, 0.0), plane1(48, 0.0);
  for (auto [at, v] : std::vector<std::pair<int, double>>{{2, 2},
                                                          {3, -2},
                                                          {4, 5},
                                                          {6, 1},
                                                          {7, -3},
                                                          {8, -5},
                                                          {16, 4},
                                                          {19, -4},
                                                          {20, 3},
                                                          {23, -5},
                                                          {37, -1}}) {
    plane0[at] = v;
  }
  for (auto [at, v] : std::vector<std::pair<int, double>>{{0, 2},
                                                          {1, -2},
                                                          {3, 5},
                                                          {4, 1},
                                                          {7, 4},
                                                          {14, -3},
                                                          {18, -4},
                                                          {20, -1},
                                                          {22, -5},
                                                          {43, 3},
                                                          {47, 2}}) {
    plane1[at] = v;
  }
  plane0.insert(plane0.end(), plane1.begin(), plane1.end());
  Expect(r, {1, 2, 3, 4, 4}, DType::kFloat32, plane0, 0, true);
  r = RunV(
      "aten.max_pool3d_with_indices_backward.default",
      {V(Seq({2, 2, 2, 2}, DType::kFloat64, 1, -1, 1)),
       V(Seq({2, 3, 3, 3}, DType::kFloat64, 13, 6, 1)), Ints({2, 2, 2}),
       Ints({1, 1, 1}), Ints({0, 0, 0}), Ints({1, 1, 1}), Value::Bool(false),
       V(T({2, 2, 2, 2},
           {9, 11, 7, 7, 9, 11, 24, 22, 10, 10, 6, 8, 10, 10, 21, 23},
           DType::kInt64))});
  std::vector<double> want(54, 0.0);
  for (int at : {7, 9, 11}) want[at] = 2;
  for (int at : {22, 24, 33, 35, 48, 50}) want[at] = 1;
  want[37] = 4;
  Expect(r, {2, 3, 3, 3}, DType::kFloat64, want, 0, true);
  // A channels-last input gives a channels-last gradient, as PyTorch's
  // kernel allocates it (strides (360, 1, 90, 18, 3) for [2, 3, 4, 5, 6]).
  Tensor cl = *Tensor::EmptyStrided({2, 3, 4, 5, 6}, {360, 1, 90, 18, 3},
                                    DType::kFloat32);
  std::vector<Value> args = {
      V(Seq({2, 3, 2, 2, 3}, DType::kFloat32, 5, 2, 1)),
      V(cl),
      Ints({2, 2, 2}),
      Ints({2, 2, 2}),
      Ints({0, 0, 0}),
      Ints({1, 1, 1}),
      Value::Bool(false),
      V(T({2, 3, 2, 2, 3}, std::vector<double>(72, 0), DType::kInt64))};
  r = RunV("aten.max_pool3d_with_indices_backward.default", args);
  EXPECT_THAT(r.tensor.strides(), ElementsAre(360, 1, 90, 18, 3));
  // PyTorch's 3-d kernel writes outside the plane for an index past it;
  // lathe refuses. Integer inputs are refused as PyTorch refuses them.
  args[7] = V(T({2, 3, 2, 2, 3}, std::vector<double>(72, 120), DType::kInt64));
  EXPECT_THAT(RunError("aten.max_pool3d_with_indices_backward.default", args),
              HasSubstr("index 120 is out of bounds for an input plane of 120 "
                        "elements"));
  EXPECT_THAT(RunError("aten.max_pool3d_with_indices_backward.default",
                       {V(Seq({1, 1, 1, 1, 1}, DType::kInt64, 1, 0, 1)),
                        V(Seq({1, 1, 2, 2, 2}, DType::kInt64, 1, 0, 1)),
                        Ints({2, 2, 2}), Ints({2, 2, 2}), Ints({0, 0, 0}),
                        Ints({1, 1, 1}), Value::Bool(false),
                        V(T({1, 1, 1, 1, 1}, {0}, DType::kInt64))}),
              HasSubstr("\"max_pool3d_backward\" not implemented for 'Long'"));
}

TEST(NnOpsTest, AvgPool) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // ceil_mode with count_include_pad off and on, divisor_override, int64
  // truncation, 3-d.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({3, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(true),
        Value::Bool(false),
        Value::None()};
    Value r = RunV("aten.avg_pool2d.default", args);
    Expect(r, {1, 2, 4, 4}, DType::kFloat32,
           {-0.25,
            0.75,
            -0.75,
            -1.5,
            1.5,
            0.6111111044883728,
            -0.8888888955116272,
            -1.1666666269302368,
            1.0,
            0.1111111119389534,
            -0.4444444477558136,
            1.1666666269302368,
            0.75,
            0.3333333432674408,
            -1.1666666269302368,
            -0.5,
            0.375,
            -0.75,
            0.5833333134651184,
            1.25,
            0.0,
            -0.8888888955116272,
            0.4444444477558136,
            0.1666666716337204,
            -0.5,
            -0.4444444477558136,
            0.8888888955116272,
            -0.3333333432674408,
            -0.75,
            -1.1666666269302368,
            0.1666666716337204,
            -2.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({3, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(true),
        Value::Bool(true),
        Value::None()};
    Value r = RunV("aten.avg_pool2d.default", args);
    Expect(r, {1, 2, 4, 4}, DType::kFloat32,
           {-0.1111111119389534,
            0.5,
            -0.5,
            -0.5,
            1.0,
            0.6111111044883728,
            -0.8888888955116272,
            -0.5833333134651184,
            0.6666666865348816,
            0.1111111119389534,
            -0.4444444477558136,
            0.5833333134651184,
            0.25,
            0.1666666716337204,
            -0.5833333134651184,
            -0.125,
            0.1666666716337204,
            -0.5,
            0.3888888955116272,
            0.4166666567325592,
            0.0,
            -0.8888888955116272,
            0.4444444477558136,
            0.0833333358168602,
            -0.3333333432674408,
            -0.4444444477558136,
            0.8888888955116272,
            -0.1666666716337204,
            -0.25,
            -0.5833333134651184,
            0.0833333358168602,
            -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({2, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(false),
        Value::Bool(true),
        Value::Int(5)};
    Value r = RunV("aten.avg_pool2d.default", args);
    Expect(r, {1, 2, 4, 3}, DType::kFloat32,
           {-0.8999999761581421,
            0.10000000149011612,
            -0.800000011920929,
            1.2999999523162842,
            0.6000000238418579,
            -1.2000000476837158,
            0.8999999761581421,
            0.0,
            -0.10000000149011612,
            0.30000001192092896,
            0.20000000298023224,
            -0.699999988079071,
            0.20000000298023224,
            -0.800000011920929,
            0.0,
            0.10000000149011612,
            -1.2000000476837158,
            0.4000000059604645,
            -0.30000001192092896,
            -0.10000000149011612,
            1.5,
            -0.30000001192092896,
            -0.699999988079071,
            0.10000000149011612},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 1, 4, 4}, DType::kInt64, 23, 11, 1)),
                               Ints({2, 2}),
                               Bools({}),
                               Ints({0, 0}),
                               Value::Bool(false),
                               Value::Bool(true),
                               Value::Int(3)};
    Value r = RunV("aten.avg_pool2d.default", args);
    Expect(r, {1, 1, 2, 2}, DType::kInt64, {-6.0, 4.0, 6.0, -5.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 5, 5}, DType::kFloat32, 17, 8, 0.5)),
                               Ints({2, 2}),
                               Ints({3, 3}),
                               Ints({1, 1}),
                               Value::Bool(true),
                               Value::Bool(false),
                               Value::None()};
    Value r = RunV("aten.avg_pool2d.default", args);
    Expect(r, {2, 2, 2}, DType::kFloat32,
           {-4.0, 0.5, -2.75, -0.375, -1.5, -1.25, -0.25, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 4, 4, 5}, DType::kFloat32, 17, 8, 0.5)),
        Ints({2, 3, 2}),
        Ints({2, 2, 2}),
        Ints({1, 1, 1}),
        Value::Bool(true),
        Value::Bool(false),
        Value::None()};
    Value r = RunV("aten.avg_pool3d.default", args);
    Expect(r, {1, 1, 3, 3, 3}, DType::kFloat32,
           {-3.75,
            1.5,
            0.0,
            -3.0,
            0.8333333134651184,
            0.75,
            -2.5,
            -1.5,
            1.25,
            -0.75,
            0.25,
            0.875,
            0.0,
            -0.4166666567325592,
            0.2083333283662796,
            0.5,
            -0.625,
            0.0,
            2.25,
            -1.0,
            -0.375,
            3.0,
            -0.25,
            -1.75,
            3.5,
            0.25,
            -1.25},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 4, 4, 5}, DType::kFloat32, 17, 8, 0.5)),
        Ints({2, 2, 2}),
        Bools({}),
        Ints({1, 0, 1}),
        Value::Bool(false),
        Value::Bool(true),
        Value::Int(7)};
    Value r = RunV("aten.avg_pool3d.default", args);
    Expect(r, {1, 1, 3, 2, 3}, DType::kFloat32,
           {-1.0714285373687744, 0.8571428656578064, 0.0, -0.7857142686843872,
            0.2142857164144516, 0.5714285969734192, -0.4285714328289032,
            0.2857142984867096, 1.0, 0.1428571492433548, -1.0,
            -0.2857142984867096, 0.6428571343421936, -0.5714285969734192,
            -0.2142857164144516, 0.9285714030265808, 0.0, -0.8571428656578064},
           0.0001, true);
  }
}

TEST(NnOpsTest, AvgPoolBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // ceil_mode with padding, count_include_pad off/on, divisor_override.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 4, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({3, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(true),
        Value::Bool(false),
        Value::None()};
    Value r = RunV("aten.avg_pool2d_backward.default", args);
    Expect(r, {1, 2, 6, 6}, DType::kFloat32,
           {-0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -1.0,
            -0.625,
            -1.0416666269302368,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.6666666269302368,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.6666666865348816,
            -0.5,
            -0.8333333730697632,
            -0.3333333432674408,
            -0.6666666865348816,
            -0.3333333432674408,
            -1.3333333730697632,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.6666666865348816,
            -1.0,
            -1.6666667461395264,
            -0.6666666865348816,
            -1.3333333730697632,
            -0.6666666865348816,
            -2.6666667461395264,
            -0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -1.0,
            -0.625,
            -1.0416666269302368,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.6666666269302368,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.6666666865348816,
            -0.5,
            -0.8333333730697632,
            -0.3333333432674408,
            -0.6666666865348816,
            -0.3333333432674408,
            -1.3333333730697632,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.6666666865348816,
            -1.0,
            -1.6666667461395264,
            -0.6666666865348816,
            -1.3333333730697632,
            -0.6666666865348816,
            -2.6666667461395264},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 4, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({3, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(true),
        Value::Bool(true),
        Value::None()};
    Value r = RunV("aten.avg_pool2d_backward.default", args);
    Expect(r, {1, 2, 6, 6}, DType::kFloat32,
           {-0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.3333333432674408, -0.6666666865348816, -0.3333333432674408,
            -0.6666666865348816, -0.3333333432674408, -0.8333333730697632,
            -0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.3333333432674408, -0.6666666865348816, -0.3333333432674408,
            -0.6666666865348816, -0.3333333432674408, -0.8333333730697632,
            -0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.4166666865348816, -0.8333333730697632, -0.4166666865348816,
            -0.8333333730697632, -0.4166666865348816, -1.0416667461395264,
            -0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.3333333432674408, -0.6666666865348816, -0.3333333432674408,
            -0.6666666865348816, -0.3333333432674408, -0.8333333730697632,
            -0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.3333333432674408, -0.6666666865348816, -0.3333333432674408,
            -0.6666666865348816, -0.3333333432674408, -0.8333333730697632,
            -0.1666666716337204, -0.3333333432674408, -0.1666666716337204,
            -0.3333333432674408, -0.1666666716337204, -0.4166666865348816,
            -0.4166666865348816, -0.8333333730697632, -0.4166666865348816,
            -0.8333333730697632, -0.4166666865348816, -1.0416667461395264},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 4, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 6, 6}, DType::kFloat32, 17, 8, 0.5)),
        Ints({2, 3}),
        Ints({2, 2}),
        Ints({1, 1}),
        Value::Bool(false),
        Value::Bool(true),
        Value::Int(5)};
    Value r = RunV("aten.avg_pool2d_backward.default", args);
    Expect(r, {1, 2, 6, 6}, DType::kFloat32,
           {-0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896,
            -0.30000001192092896, -0.6000000238418579,  -0.30000001192092896,
            -0.6000000238418579,  -0.30000001192092896, -0.30000001192092896},
           0.0001, true);
  }
}

TEST(NnOpsTest, AdaptiveAvgPool) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // uneven windows (overlapping), unbatched, upsampling sizes, 3-d, backward.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 5, 7}, DType::kFloat32, 13, 6, 0.5)), Ints({3, 4})};
    Value r = RunV("aten._adaptive_avg_pool2d.default", args);
    Expect(r, {1, 2, 3, 4}, DType::kFloat32,
           {-0.375,
            0.0,
            0.5,
            -0.75,
            0.0833333358168602,
            0.277777761220932,
            0.0555555559694767,
            -0.8333333134651184,
            0.0,
            0.9166666865348816,
            0.3333333432674408,
            -0.375,
            0.25,
            0.0833333358168602,
            -0.5,
            -0.125,
            0.1666666716337204,
            0.0,
            -0.2222222238779068,
            0.3333333432674408,
            0.625,
            -0.0833333358168602,
            0.4166666567325592,
            0.25},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 5, 5}, DType::kFloat32, 13, 6, 0.5)),
                               Ints({2, 3})};
    Value r = RunV("aten._adaptive_avg_pool2d.default", args);
    Expect(r, {2, 2, 3}, DType::kFloat32,
           {0.0, -0.1666666716337204, -0.3333333432674408, 0.3333333432674408,
            0.1666666716337204, 0.0, -0.25, -0.0555555559694767,
            -0.5833333134651184, 0.0833333358168602, 0.277777761220932, -0.25},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 2, 3}, DType::kFloat32, 13, 6, 0.5)), Ints({3, 5})};
    Value r = RunV("aten._adaptive_avg_pool2d.default", args);
    Expect(r, {1, 1, 3, 5}, DType::kFloat32,
           {-3.0, -1.25, 0.5, -1.0, -2.5, -1.0, -0.875, -0.75, -0.625, -0.5,
            1.0, -0.5, -2.0, -0.25, 1.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 5, 4, 3}, DType::kFloat32, 13, 6, 0.5)), Ints({2, 3, 2})};
    Value r = RunV("aten._adaptive_avg_pool3d.default", args);
    Expect(r, {1, 1, 2, 3, 2}, DType::kFloat32,
           {-0.5833333134651184, -0.875, -0.375, -0.125, 0.375, 0.625, 0.0,
            -0.2916666567325592, -0.875, -0.625, -0.125, 0.125},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({1, 2, 5, 7}, DType::kFloat32, 11, 5, 0.5))};
    Value r = RunV("aten._adaptive_avg_pool2d_backward.default", args);
    Expect(r, {1, 2, 5, 7}, DType::kFloat32,
           {-0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -0.625,
            -0.375,
            -0.625,
            -1.0416666269302368,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.0416667461395264,
            -0.625,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.4166666865348816,
            -0.25,
            -0.625,
            -1.0416667461395264,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.0416667461395264,
            -0.625,
            -0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -0.625,
            -0.375,
            -0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -0.625,
            -0.375,
            -0.625,
            -1.0416666269302368,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.0416667461395264,
            -0.625,
            -0.25,
            -0.4166666865348816,
            -0.1666666716337204,
            -0.3333333432674408,
            -0.1666666716337204,
            -0.4166666865348816,
            -0.25,
            -0.625,
            -1.0416667461395264,
            -0.4166666865348816,
            -0.8333333730697632,
            -0.4166666865348816,
            -1.0416667461395264,
            -0.625,
            -0.375,
            -0.625,
            -0.25,
            -0.5,
            -0.25,
            -0.625,
            -0.375},
           0.0001, true);
  }
}

TEST(NnOpsTest, BatchNorm) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // training updates running_mean/running_var in place (unbiased variance);
  // eval uses running stats and gives empty stats; no_stats; no_training;
  // float16 input with float32 running stats keeps float32 stats.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Bool(true),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {0.06694567203521729,  -0.991352915763855,  -0.08423984050750732,
            -1.1425384283065796,  -0.5669456720352173, 0.491352915763855,
            -0.4157601594924927,  0.6425384283065796,  -1.2008370161056519,
            1.974058747291565,    -0.747280478477478,  2.427615165710449,
            -0.8401674032211304,  0.06694567203521729, -0.991352915763855,
            -0.08423984050750732, 0.34016740322113037, -0.5669456720352173,
            0.491352915763855,    -0.4157601594924927, 1.5205022096633911,
            -1.2008370161056519,  1.974058747291565,   -0.747280478477478},
           0.0001, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-1.125, -0.125, 0.875}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.6047420501708984, 0.6047420501708984, 0.6047420501708984}, 0.0001,
           true);
    Expect(args[3], {3}, DType::kFloat32,
           {-1.0124999284744263, -0.012500000186264515, 0.9874999523162842},
           0.0001, true);
    Expect(args[4], {3}, DType::kFloat32,
           {1.212499976158142, 0.762499988079071, 2.112499952316284}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 1, 0.5)),
        Value::None(),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Bool(false),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {0.9999949932098389,   -0.7499962449073792, 0.7499962449073792,
            -0.9999949932098389,  -1.4141993522644043, 1.0606495141983032,
            -1.0606495141983032,  1.4141993522644043,  -2.1213150024414062,
            1.5909862518310547,   -1.5909862518310547, 2.1213150024414062,
            -0.49999749660491943, 0.9999949932098389,  -0.7499962449073792,
            0.7499962449073792,   0.7070996761322021,  -1.4141993522644043,
            1.0606495141983032,   -1.0606495141983032, 1.0606575012207031,
            -2.1213150024414062,  1.5909862518310547,  -1.5909862518310547},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(Out(r, 2), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(args[3], {3}, DType::kFloat32, {-1.0, 0.0, 1.0}, 0.0001, true);
    Expect(args[4], {3}, DType::kFloat32, {1.0, 0.5, 2.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::None(),
                               V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
                               Value::Bool(true),
                               Value::Float(0.1),
                               Value::Float(0.001)};
    Value r = RunV("aten._native_batch_norm_legit.no_stats", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.7873115539550781, 0.34291648864746094, -0.7873115539550781,
            0.0851416289806366, -1.3716659545898438, 1.085141658782959,
            -1.085141658782959, 1.3716659545898438, -0.0851416289806366,
            0.7873115539550781, -0.34291648864746094, 1.7873115539550781},
           0.0001, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-0.25, 0.0, 0.25}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.4681133031845093, 0.6858329772949219, 0.4681133031845093}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        Value::None(),
        V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit_no_training.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {-2.4999899864196777, 0.9999924898147583,  -1.9999924898147583,
            1.4999899864196777,  -2.8283987045288086, 2.1212990283966064,
            -2.1212990283966064, 2.8283987045288086,  -0.9142099618911743,
            1.5606575012207031,  -0.5606575012207031, 1.9142099618911743,
            0.49999499320983887, -2.4999899864196777, 0.9999924898147583,
            -1.9999924898147583, 1.4141993522644043,  -2.8283987045288086,
            2.1212990283966064,  -2.1212990283966064, 1.2071049213409424,
            -0.9142099618911743, 1.5606575012207031,  -0.5606575012207031},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(Out(r, 2), {0}, DType::kFloat32, {}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 2}, DType::kFloat16, 13, 6, 0.5)),
                               Value::None(),
                               Value::None(),
                               V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
                               V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
                               Value::Bool(true),
                               Value::Float(0.3),
                               Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2}, DType::kFloat16,
           {-1.3134765625, 0.525390625, -1.3134765625, 0.525390625,
            -1.3134765625, 0.525390625, -0.525390625, 1.3134765625,
            -0.525390625, 1.3134765625, -0.525390625, 1.3134765625},
           0.01, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-0.5, 0.0, 0.5}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.5252249836921692, 0.5252249836921692, 0.5252249836921692}, 0.0001,
           true);
    Expect(args[3], {3}, DType::kFloat32,
           {-0.8500000238418579, 0.0, 0.8500000238418579}, 0.0001, true);
    Expect(args[4], {3}, DType::kFloat32,
           {2.1500000953674316, 1.8000000715255737, 2.8499999046325684}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, GroupNorm) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // forward with weight and bias; backward with all outputs (and without
  // weight).
  {
    std::vector<Value> args = {V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({4}, DType::kFloat32, 5, 1, 0.5)),
                               V(Seq({4}, DType::kFloat32, 3, 1, 0.5)),
                               Value::Int(2),
                               Value::Int(4),
                               Value::Int(3),
                               Value::Int(2),
                               Value::Float(1e-05)};
    Value r = RunV("aten.native_group_norm.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.1260465681552887,
            -0.8478036522865295,
            -0.013074889779090881,
            0.4869250953197479,
            -0.34780365228652954,
            0.6260465383529663,
            -1.378139615058899,
            1.5434108972549438,
            -0.9607752561569214,
            -0.5,
            -0.5,
            -0.5,
            -0.8216331005096436,
            0.1432662010192871,
            -0.9824496507644653,
            -0.48244965076446533,
            0.6432662010192871,
            -0.32163310050964355,
            1.4648993015289307,
            -1.4297986030578613,
            1.947348952293396,
            -0.5,
            -0.5,
            -0.5},
           0.0001, true);
    Expect(Out(r, 1), {2, 2}, DType::kFloat32, {-0.75, 0.75, -1.0, 0.5}, 0.0001,
           true);
    Expect(Out(r, 2), {2, 2}, DType::kFloat32,
           {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
            0.6432662010192871},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 6, 2, 2}, DType::kFloat32, 17, 8, 0.5)),
        Value::None(),
        Value::None(),
        Value::Int(1),
        Value::Int(6),
        Value::Int(4),
        Value::Int(3),
        Value::Float(0.01)};
    Value r = RunV("aten.native_group_norm.default", args);
    Expect(Out(r, 0), {1, 6, 2, 2}, DType::kFloat32,
           {-1.422711968421936,   -0.09484746307134628, 1.2330169677734375,
            -0.6639322638511658,  0.6639322638511658,   -1.2330169677734375,
            0.09484746307134628,  1.422711968421936,    -0.6855029463768005,
            0.7909649610519409,   -1.3182748556137085,  0.15819299221038818,
            1.6346608400344849,   -0.47457897663116455, 1.0018888711929321,
            -1.1073509454727173,  0.679518461227417,    -1.4949406385421753,
            0.027180738747119904, 1.549302101135254,    -0.6251569986343384,
            0.8969643712043762,   -1.2774946689605713,  0.24462664127349854},
           0.0001, true);
    Expect(Out(r, 1), {1, 3}, DType::kFloat32, {-0.25, 0.125, -0.5625}, 0.0001,
           true);
    Expect(Out(r, 2), {1, 3}, DType::kFloat32,
           {0.37938985228538513, 0.42184796929359436, 0.43489181995391846},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 4, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({2, 2}, {-0.75, 0.75, -1.0, 0.5}, DType::kFloat32)),
        V(T({2, 2},
            {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
             0.6432662010192871},
            DType::kFloat32)),
        V(Seq({4}, DType::kFloat32, 5, 1, 0.5)),
        Value::Int(2),
        Value::Int(4),
        Value::Int(3),
        Value::Int(2),
        Bools({true, true, true})};
    Value r = RunV("aten.native_group_norm_backward.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.1507905125617981,   0.5654609799385071,  0.21002915501594543,
            -0.21002915501594543, -0.5654609799385071, -0.1507905125617981,
            -0.2261856198310852,  -0.8481913208961487, -0.3150436282157898,
            0.31504374742507935,  0.848191499710083,   0.22618573904037476,
            0.4491773843765259,   0.5489941835403442,  0.43254125118255615,
            -0.43254128098487854, -0.5489941835403442, -0.44917741417884827,
            -0.6737660765647888,  -0.8234912753105164, -0.6488118767738342,
            0.6488118767738342,   0.8234912157058716,  0.6737660765647888},
           0.0001, true);
    Expect(Out(r, 1), {4}, DType::kFloat32,
           {1.8130544424057007, -1.8130544424057007, 1.8130544424057007,
            -1.8130544424057007},
           0.0001, true);
    Expect(Out(r, 2), {4}, DType::kFloat32, {-9.0, -9.0, -9.0, -9.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 4, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({2, 2}, {-0.75, 0.75, -1.0, 0.5}, DType::kFloat32)),
        V(T({2, 2},
            {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
             0.6432662010192871},
            DType::kFloat32)),
        Value::None(),
        Value::Int(2),
        Value::Int(4),
        Value::Int(3),
        Value::Int(2),
        Bools({true, false, true})};
    Value r = RunV("aten.native_group_norm_backward.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
           0.0001, true);
    EXPECT_TRUE(Out(r, 1).is_none());
    Expect(Out(r, 2), {4}, DType::kFloat32, {-9.0, -9.0, -9.0, -9.0}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, LayerNormBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // mean/rstd from PyTorch's native_layer_norm; all outputs with weight and
  // bias; input gradient only without weight.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        Ints({3, 4}),
        V(T({2, 1, 1}, {-2.438371815571827e-08, -0.2499999850988388},
            DType::kFloat32)),
        V(T({2, 1, 1}, {0.5135518908500671, 0.5793644785881042},
            DType::kFloat32)),
        V(Seq({3, 4}, DType::kFloat32, 5, 1, 0.5)),
        V(Seq({3, 4}, DType::kFloat32, 3, 1, 0.5)),
        Bools({true, true, true})};
    Value r = RunV("aten.native_layer_norm_backward.default", args);
    Expect(Out(r, 0), {2, 3, 4}, DType::kFloat32,
           {0.6172500848770142,   -0.04938000440597534, -0.9085915088653564,
            0.3505978584289551,   -0.5086137056350708,  0.7505757212638855,
            -0.10863584280014038, -0.7752659320831299,  0.29134202003479004,
            -0.37528806924819946, 0.6913198828697205,   0.024689793586730957,
            0.7875102758407593,   0.02785375714302063,  -0.9688147306442261,
            0.44414541125297546,  -0.552523136138916,   0.8604370355606079,
            -0.1362314522266388,  -0.895888090133667,   0.28006020188331604,
            -0.479596346616745,   0.6963518857955933,   -0.06330469250679016},
           0.0001, true);
    Expect(Out(r, 1), {3, 4}, DType::kFloat32,
           {2.093721866607666, 2.0047144889831543, 1.2740346193313599,
            1.1850272417068481, 0.4543471336364746, 0.365339994430542,
            -0.36534011363983154, -0.4543471336364746, -1.1850272417068481,
            -1.2740345001220703, -2.0047144889831543, -2.093721866607666},
           0.0001, true);
    Expect(Out(r, 2), {3, 4}, DType::kFloat32,
           {-3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0,
            -3.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        Ints({4}),
        V(T({2, 3, 1}, {-1.0, 0.0, 1.0, -1.25, -0.25, 0.7500000596046448},
            DType::kFloat32)),
        V(T({2, 3, 1},
            {0.5656844973564148, 0.5656844973564148, 0.5656844973564148,
             0.6575945615768433, 0.6575945615768433, 0.6575945615768433},
            DType::kFloat32)),
        Value::None(),
        Value::None(),
        Bools({true, false, false})};
    Value r = RunV("aten.native_layer_norm_backward.default", args);
    Expect(Out(r, 0), {2, 3, 4}, DType::kFloat32,
           {0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            -5.960464477539063e-08,
            0.0,
            -5.960464477539063e-08,
            0.0},
           0.0001, true);
    EXPECT_TRUE(Out(r, 1).is_none());
    EXPECT_TRUE(Out(r, 2).is_none());
  }
}

TEST(NnOpsTest, Upsample) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // bilinear with and without align_corners, from output_size and from
  // scale_factors (the scales set the source index); nearest up and down, with
  // scales.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::Bool(false), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 7}, DType::kFloat32,
           {-3.0,
            -1.749999761581421,
            0.25000011920928955,
            -1.000000238418579,
            -2.2499992847442627,
            -0.24999940395355225,
            1.0,
            -2.5999999046325684,
            -1.3499997854232788,
            0.6500001549720764,
            -0.600000262260437,
            -1.849999189376831,
            0.15000063180923462,
            1.4000000953674316,
            -2.0,
            -0.7499998211860657,
            1.2500001192092896,
            -3.5762786865234375e-07,
            -1.2499992847442627,
            0.7500005960464478,
            2.0,
            -1.3999998569488525,
            -0.14999964833259583,
            1.8500003814697266,
            0.5999997854232788,
            -0.64999920129776,
            1.3500007390975952,
            2.6000001430511475,
            -1.0,
            0.25000014901161194,
            2.25,
            0.9999997019767761,
            -0.2499992698431015,
            1.7500005960464478,
            3.0,
            0.0,
            -1.071428656578064,
            -2.7857143878936768,
            -1.2499995231628418,
            0.28571367263793945,
            -1.4285719394683838,
            -2.5,
            0.40000003576278687,
            -0.6714286804199219,
            -2.385714530944824,
            -0.8499996662139893,
            0.6857136487960815,
            -1.0285718441009521,
            -2.0999999046325684,
            1.0,
            -0.07142871618270874,
            -1.7857143878936768,
            -0.24999958276748657,
            1.2857136726379395,
            -0.4285719394683838,
            -1.5,
            1.6000001430511475,
            0.5285714268684387,
            -1.1857142448425293,
            0.3500005006790161,
            1.885713815689087,
            0.17142820358276367,
            -0.8999998569488525,
            2.0,
            0.9285712838172913,
            -0.7857143878936768,
            0.7500003576278687,
            2.2857136726379395,
            0.5714280605316162,
            -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::Bool(true), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 7}, DType::kFloat32,
           {-3.0, -1.25, 0.5,   -1.0, -2.5, -0.75, 1.0,  -2.5, -0.75, 1.0,
            -0.5, -2.0,  -0.25, 1.5,  -2.0, -0.25, 1.5,  0.0,  -1.5,  0.25,
            2.0,  -1.5,  0.25,  2.0,  0.5,  -1.0,  0.75, 2.5,  -1.0,  0.75,
            2.5,  1.0,   -0.5,  1.25, 3.0,  0.0,   -1.5, -3.0, -1.25, 0.5,
            -1.0, -2.5,  0.5,   -1.0, -2.5, -0.75, 1.0,  -0.5, -2.0,  1.0,
            -0.5, -2.0,  -0.25, 1.5,  0.0,  -1.5,  1.5,  0.0,  -1.5,  0.25,
            2.0,  0.5,   -1.0,  2.0,  0.5,  -1.0,  0.75, 2.5,  1.0,   -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Value::Bool(true), Floats({1.5, 2.0})};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 4, 8}, DType::kFloat32,
           {-3.0,
            -1.4999998807907104,
            2.9802322387695312e-08,
            -0.3571428060531616,
            -1.642857313156128,
            -2.000000238418579,
            -0.5000001192092896,
            1.0,
            -2.3333332538604736,
            -0.8333332538604736,
            0.6666667461395264,
            0.30952388048171997,
            -0.9761905670166016,
            -1.3333336114883423,
            0.16666650772094727,
            1.6666667461395264,
            -1.6666666269302368,
            -0.16666652262210846,
            1.3333333730697632,
            0.9761905074119568,
            -0.3095238208770752,
            -0.6666668653488159,
            0.8333332538604736,
            2.3333334922790527,
            -1.0,
            0.5,
            2.0,
            1.6428571939468384,
            0.3571428060531616,
            -2.384185791015625e-07,
            1.4999998807907104,
            3.0,
            0.0,
            -1.2857142686843872,
            -2.5714285373687744,
            -2.0,
            -0.4999999403953552,
            0.07142877578735352,
            -1.2142856121063232,
            -2.5,
            0.6666666865348816,
            -0.6190476417541504,
            -1.9047619104385376,
            -1.3333333730697632,
            0.16666677594184875,
            0.7380955219268799,
            -0.5476188659667969,
            -1.8333332538604736,
            1.3333333730697632,
            0.0476190447807312,
            -1.2380952835083008,
            -0.6666666269302368,
            0.833333432674408,
            1.4047621488571167,
            0.11904777586460114,
            -1.1666666269302368,
            2.0,
            0.7142856121063232,
            -0.5714285969734192,
            -5.960464477539063e-08,
            1.5000001192092896,
            2.0714287757873535,
            0.7857143878936768,
            -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Value::Bool(false), Floats({1.7, 0.6})};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 2}, DType::kFloat32,
           {-1.8333333730697632,
            -2.5,
            -1.4509804248809814,
            -2.117647171020508,
            -0.8627450466156006,
            -1.5294116735458374,
            -0.27450981736183167,
            -0.9411764144897461,
            0.16666659712791443,
            -0.5,
            -0.9999999403953552,
            0.5,
            -0.6176470518112183,
            0.8823530077934265,
            -0.029411613941192627,
            1.4705883264541626,
            0.5588235855102539,
            2.058823585510254,
            1.0,
            2.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({2, 3}),
        Value::Bool(false), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.1666667461395264, -0.75, 0.6666672229766846, -0.666666567325592,
            0.75, 2.1666672229766846, -0.2500000596046448, -1.0,
            -1.750000238418579, 1.25, 0.5, -0.2500004768371582},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(
        r, {1, 2, 5, 7}, DType::kFloat32,
        {-3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  -3.0, -3.0, 0.5,  0.5,  -2.5,
         -2.5, 1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 2.0,  -2.0, -2.0, 1.5,
         1.5,  -1.5, -1.5, 2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5, 3.0,  0.0,
         0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5, 0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,
         -2.5, 1.0,  1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, 1.0,  1.0,  -2.0, -2.0,
         1.5,  1.5,  -1.5, 2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({6, 8}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 2, 6, 8}, DType::kFloat32,
           {-3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  1.0,  -3.0, -3.0, 0.5,
            0.5,  -2.5, -2.5, 1.0,  1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5,
            2.0,  2.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 2.0,  2.0,  -1.0,
            -1.0, 2.5,  2.5,  -0.5, -0.5, 3.0,  3.0,  -1.0, -1.0, 2.5,  2.5,
            -0.5, -0.5, 3.0,  3.0,  0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5,
            -2.5, 0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  1.0,
            -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 1.0,  1.0,  -2.0, -2.0, 1.5,
            1.5,  -1.5, -1.5, 2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5,
            2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Floats({1.7, 0.6})};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 2, 5, 2}, DType::kFloat32,
           {-3.0, 0.5,  -3.0, 0.5,  -2.0, 1.5,  -2.0, 1.5,  -1.0, 2.5,
            0.0,  -3.0, 0.0,  -3.0, 1.0,  -2.0, 1.0,  -2.0, 2.0,  -1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 5, 5}, DType::kFloat32, 13, 6, 0.5)), Ints({3, 2}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 1, 3, 2}, DType::kFloat32, {-3.0, -2.5, 1.5, 2.0, -2.5, -2.0},
           0.0001, true);
  }
}

TEST(NnOpsTest, Pad) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // reflection 1-d/2-d/3-d (borders reflect without repeating the edge; a
  // negative pad crops), replication 2-d/3-d, int64, unbatched.
  {
    std::vector<Value> args = {V(Seq({1, 2, 5}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({2, 3})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {1, 2, 10}, DType::kFloat32,
           {-1.0, 1.0, -2.5, 1.0, -1.0, 2.5,  0.5, 2.5,  -1.0, 1.0,
            0.0,  2.0, -1.5, 2.0, 0.0,  -2.0, 1.5, -2.0, 0.0,  2.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 5}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({-1, 2})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {2, 6}, DType::kFloat32,
           {1.0, -1.0, 2.5, 0.5, 2.5, -1.0, 2.0, 0.0, -2.0, 1.5, -2.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 2, 5}, DType::kInt64, 7, 3, 1)),
                               Ints({4, 1})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {1, 2, 10}, DType::kInt64,
           {-3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0,
            -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 3, 4}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({1, 2, 2, 0})};
    Value r = RunV("aten.reflection_pad2d.default", args);
    Expect(r, {1, 5, 7}, DType::kFloat32,
           {1.5, -2.0, 1.5, -0.5, -2.5, -0.5, 1.5, -1.5, 0.5,  -1.5, 2.0, 0.0,
            2.0, -1.5, 1.0, -2.5, 1.0,  -1.0, 2.5, -1.0, 1.0,  -1.5, 0.5, -1.5,
            2.0, 0.0,  2.0, -1.5, 1.5,  -2.0, 1.5, -0.5, -2.5, -0.5, 1.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
        Ints({1, 1, 2, 0, 1, 1})};
    Value r = RunV("aten.reflection_pad3d.default", args);
    Expect(
        r, {1, 4, 5, 5}, DType::kFloat32,
        {-1.5, 0.5,  -1.5, 2.0,  -1.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -0.5, 1.5,
         -0.5, -2.5, -0.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -1.5, 0.5,  -1.5, 2.0,
         -1.5, 0.0,  2.0,  0.0,  -2.0, 0.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  1.0,
         -2.5, 1.0,  -1.0, 1.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  0.0,  2.0,  0.0,
         -2.0, 0.0,  -1.5, 0.5,  -1.5, 2.0,  -1.5, -1.0, 1.0,  -1.0, 2.5,  -1.0,
         -0.5, 1.5,  -0.5, -2.5, -0.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -1.5, 0.5,
         -1.5, 2.0,  -1.5, 0.0,  2.0,  0.0,  -2.0, 0.0,  0.5,  2.5,  0.5,  -1.5,
         0.5,  1.0,  -2.5, 1.0,  -1.0, 1.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  0.0,
         2.0,  0.0,  -2.0, 0.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({2, 0, 1, 3})};
    Value r = RunV("aten.replication_pad2d.default", args);
    Expect(
        r, {1, 2, 7, 5}, DType::kFloat32,
        {-2.5, -2.5, -2.5, 1.0,  -1.0, -2.5, -2.5, -2.5, 1.0,  -1.0, 2.5,  2.5,
         2.5,  0.5,  -1.5, 2.0,  2.0,  2.0,  0.0,  -2.0, 2.0,  2.0,  2.0,  0.0,
         -2.0, 2.0,  2.0,  2.0,  0.0,  -2.0, 2.0,  2.0,  2.0,  0.0,  -2.0, 1.5,
         1.5,  1.5,  -0.5, -2.5, 1.5,  1.5,  1.5,  -0.5, -2.5, 1.0,  1.0,  1.0,
         -1.0, 2.5,  0.5,  0.5,  0.5,  -1.5, 2.0,  0.5,  0.5,  0.5,  -1.5, 2.0,
         0.5,  0.5,  0.5,  -1.5, 2.0,  0.5,  0.5,  0.5,  -1.5, 2.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({-1, 2, 0, -2})};
    Value r = RunV("aten.replication_pad2d.default", args);
    Expect(r, {2, 1, 4}, DType::kFloat32,
           {1.0, -1.0, -1.0, -1.0, -0.5, -2.5, -2.5, -2.5}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 2, 3, 2}, DType::kFloat32, 11, 5, 0.5)),
        Ints({1, 0, 2, 1, 0, 2})};
    Value r = RunV("aten.replication_pad3d.default", args);
    Expect(r, {1, 1, 4, 6, 3}, DType::kFloat32,
           {-2.5, -2.5, 1.0,  -2.5, -2.5, 1.0,  -2.5, -2.5, 1.0,  -1.0, -1.0,
            2.5,  0.5,  0.5,  -1.5, 0.5,  0.5,  -1.5, 2.0,  2.0,  0.0,  2.0,
            2.0,  0.0,  2.0,  2.0,  0.0,  -2.0, -2.0, 1.5,  -0.5, -0.5, -2.5,
            -0.5, -0.5, -2.5, 2.0,  2.0,  0.0,  2.0,  2.0,  0.0,  2.0,  2.0,
            0.0,  -2.0, -2.0, 1.5,  -0.5, -0.5, -2.5, -0.5, -0.5, -2.5, 2.0,
            2.0,  0.0,  2.0,  2.0,  0.0,  2.0,  2.0,  0.0,  -2.0, -2.0, 1.5,
            -0.5, -0.5, -2.5, -0.5, -0.5, -2.5},
           0.0001, true);
  }
}

TEST(NnOpsTest, Col2Im) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // batched with dilation, padding and stride; unbatched, overlapping blocks
  // summed.
  {
    std::vector<Value> args = {V(Seq({1, 8, 9}, DType::kFloat32, 13, 6, 0.5)),
                               Ints({4, 5}),
                               Ints({2, 2}),
                               Ints({1, 2}),
                               Ints({1, 0}),
                               Ints({2, 1})};
    Value r = RunV("aten.col2im.default", args);
    Expect(r, {1, 2, 4, 5}, DType::kFloat32,
           {1.5,  -1.5, 2.5,  -2.5, 1.0,  1.0,  -2.0, 1.5,  -3.0, 0.5,
            -1.0, 2.5,  -2.5, 1.5,  -1.5, -1.5, 2.0,  -3.5, 1.0,  -2.0,
            -2.5, 1.0,  1.0,  0.0,  -3.0, -3.0, 0.5,  0.0,  -0.5, 3.0,
            1.5,  -1.5, 2.5,  -2.5, 1.0,  1.0,  -2.0, 1.5,  -3.0, 0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 9}, DType::kFloat32, 13, 6, 0.5)),
                               Ints({4, 4}),
                               Ints({2, 2}),
                               Ints({1, 1}),
                               Ints({0, 0}),
                               Ints({1, 1})};
    Value r = RunV("aten.col2im.default", args);
    Expect(r, {1, 4, 4}, DType::kFloat32,
           {-3.0, 3.0, -3.0, 3.0, 2.5, -3.0, -2.0, 1.5, -2.5, 0.0, 1.0, -3.5,
            3.0, 2.0, -4.0, 2.5},
           0.0001, true);
  }
}

TEST(NnOpsTest, GridSampler2d) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // every interpolation mode (bilinear, nearest, bicubic) x padding mode
  // (zeros, border, reflection) x align_corners, grid points outside [-1, 1]
  // included; NaN, +-inf and huge grid coordinates.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 2, 2, 3}, DType::kFloat32,
        {0.0, 0.02400008589029312, -1.696700096130371, 0.18480005860328674,
         1.4773999452590942, 0.0, 0.0, 0.0830003172159195, 1.1232999563217163,
         -0.46200013160705566, -0.13279998302459717, 0.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.8946001529693604, -0.14174991846084595, -0.7149998545646667,
            0.9024000763893127, 1.3649998903274536, -1.3145002126693726,
            0.17040003836154938, 1.5715000629425049, 0.1399998664855957,
            -2.256000280380249, -0.15249983966350555, 0.3355000615119934},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.7799999713897705, 0.4799998998641968, -1.8050000667572021, 1.0,
            1.7799999713897705, -2.5850000381469727, 0.2200000286102295,
            1.6600000858306885, 1.1949999332427979, -2.5, -0.15999996662139893,
            0.4150000214576721},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.5199999809265137, -0.2024998664855957, -0.7149998545646667, 1.0,
            1.3649998903274536, -2.3899998664855957, 0.48000001907348633,
            2.244999885559082, 0.1399998664855957, -2.5, -0.15249983966350555,
            0.6100000143051147},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.5200004577636719, 0.4799998998641968, -1.8050000667572021, 1.0,
            1.7799999713897705, -2.2350003719329834, -0.8599996566772461,
            1.6600000858306885, 1.1949999332427979, -2.5, -0.15999996662139893,
            0.11500030010938644},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.2625002861022949, -0.5024997591972351, -0.7149998545646667,
            0.8300001621246338, 1.3649998903274536, -0.8150002956390381,
            -1.4549996852874756, 1.9449999332427979, 0.1399998664855957,
            -2.2800004482269287, -0.15249983966350555, -0.7399997115135193},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.0, 0.0, -2.0, 0.0, 2.5, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.0, -0.5, -2.0, 1.0, 2.5, -2.0, 0.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -3.0, 0.0, 2.5, 1.0, -2.5, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -2.0, 0.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -3.0, 0.0, 2.5, 1.0, -2.5, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.5, -0.5, -2.0, 1.0, 2.5, -2.0, -3.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.3465399742126465, 0.009829453192651272, -1.8158605098724365,
            0.26030606031417847, 1.8798221349716187, 0.18166817724704742,
            -0.01854207180440426, 0.08387786149978638, 1.3713464736938477,
            -0.5766460299491882, -0.30160316824913025, -0.019993871450424194},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.2169888019561768, -0.18065261840820312, -0.7640554904937744,
            1.0312212705612183, 1.883468747138977, -1.8808470964431763,
            0.33187732100486755, 1.8972487449645996, 0.20124468207359314,
            -2.4487087726593018, -0.3776633143424988, 0.6136110424995422},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.8323380947113037, 0.07757406681776047, -1.87333345413208,
            1.1872563362121582, 2.1879477500915527, -2.670881748199463,
            0.16766177117824554, 2.1093335151672363, 1.385122537612915,
            -2.811513662338257, -0.36856555938720703, 0.3291184604167938},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.8257269859313965, -0.3088519871234894, -0.563737154006958,
            1.1115195751190186, 1.6963484287261963, -2.8430845737457275,
            0.5705419182777405, 2.590470552444458, 0.05772649496793747,
            -2.6469337940216064, -0.3585053086280823, 0.8205267190933228},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.4421623945236206, 0.11141782999038696, -1.882216453552246,
            1.4546500444412231, 2.2059381008148193, -2.3636324405670166,
            -1.0816818475723267, 2.1431772708892822, 1.3927364349365234,
            -3.2328999042510986, -0.35057520866394043, 0.05949382856488228},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.27516940236091614, -0.5232500433921814, -0.9415685534477234,
            0.9673495292663574, 1.79673433303833, -1.1087327003479004,
            -1.899287223815918, 2.3438475131988525, 0.4020618498325348,
            -2.465259075164795, -0.2581194341182709, -0.8728553056716919},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 1, 2, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(Seq({2, 2, 2, 2}, DType::kFloat64, 19, 9, 0.21)), Value::Int(0),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {2, 1, 2, 2}, DType::kFloat64,
           {-0.19170000000000018, -2.5, -2.0, 0.6799999999999997,
            1.5049999999999972, -0.28000000000000025, 0.44499999999999984,
            1.3399999999999999},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {kNaN, kNaN, 0.0, kNaN}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 1, 1, 4}, DType::kFloat32,
        {-1.6999999284744263, -0.15000033378601074, -1.8499999046325684, -0.75},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 1, 1, 4}, DType::kFloat32,
        {-1.6999999284744263, -2.1500003337860107, -1.8499999046325684, -0.75},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {0.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {-2.0, -0.5, -2.0, -2.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {-2.0, -2.5, -2.0, -2.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {kNaN, kNaN, 0.0, kNaN}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32,
           {kNaN, kNaN, -1.7910308837890625, kNaN}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32,
           {kNaN, kNaN, -1.7910308837890625, kNaN}, 0.0001, true);
  }
}

// Reflection padding of a grid coordinate whose count of reflections is
// past int64 (1e30 and 1e300 over a row of 4, both ways): the value is one
// of the row's (interpolated within it, never read outside), for either
// alignment. Converting that count to an integer was undefined; the
// sanitizer pass checks float-to-integer conversions.
TEST(NnOpsTest, GridSamplerReflectsCoordinatesPastInt64) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const double huge = dtype == DType::kFloat32 ? 1e30 : 1e300;
    for (bool align : {false, true}) {
      std::vector<Value> args = {V(T({1, 1, 1, 4}, {1, 2, 3, 4}, dtype)),
                                 V(T({1, 1, 2, 2}, {huge, 0, -huge, 0}, dtype)),
                                 Value::Int(0), Value::Int(2),
                                 Value::Bool(align)};
      Value r = RunV("aten.grid_sampler_2d.default", args);
      ASSERT_TRUE(r.is_tensor());
      for (int64_t k = 0; k < 2; ++k) {
        const double v = r.tensor.GetDouble({0, 0, 0, k});
        EXPECT_TRUE(v >= 1 && v <= 4)
            << v << " " << ShortName(dtype) << " " << align << " " << k;
        if (dtype != DType::kFloat64) continue;
        // By hand in f64: PyTorch's unnormalized x, reflected over [lo, lo +
        // span] (its distance from lo folded by two spans), clipped; the
        // row holds x + 1 at x, so bilinear reads the coordinate plus 1.
        const double g = k == 0 ? huge : -huge;
        const double ix = align ? (g + 1) / 2 * 3 : ((g + 1) * 4 - 1) / 2;
        const double lo = align ? 0 : -0.5, span = align ? 3 : 4;
        const double m = std::fmod(std::fabs(ix - lo), 2 * span);
        const double at =
            std::clamp((m < span ? m : 2 * span - m) + lo, 0.0, 3.0);
        EXPECT_NEAR(v, at + 1, 1e-12) << align << " " << k;
      }
    }
  }
}

TEST(NnOpsTest, EmbeddingDenseBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // repeated indices accumulate; padding_idx rows stay zero; scale_grad_by_freq
  // divides by counts; int32 indices.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(T({2, 3}, {1.0, 0.0, 3.0, 1.0, 1.0, 4.0}, DType::kInt64)),
        Value::Int(6), Value::Int(4), Value::Bool(true)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {6, 4}, DType::kFloat32,
           {-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, 0.0, 0.0, 0.0, 0.0,
            -1.5, -1.5, -1.5, -1.5, 0.0,  0.0,  0.0,  0.0,  0.0, 0.0, 0.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(T({2, 3}, {1.0, 0.0, 3.0, 1.0, 1.0, 4.0}, DType::kInt64)),
        Value::Int(6), Value::Int(-1), Value::Bool(false)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {6, 4}, DType::kFloat32,
           {-1.5, -1.5, -1.5, -1.5, -4.5, -4.5, -4.5, -4.5, 0.0, 0.0, 0.0, 0.0,
            -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, 0.0, 0.0, 0.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 2}, DType::kFloat32, 11, 5, 0.5)),
                               V(T({3}, {2.0, 2.0, 0.0}, DType::kInt32)),
                               Value::Int(3), Value::Int(-1),
                               Value::Bool(false)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {0.5, -1.5, 0.0, 0.0, -3.5, 3.5}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, EmbeddingBag) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // sum/mean/max x include_last_offset x float32 (fast path: empty offset2bag)
  // / float64, an empty bag, per_sample_weights, padding_idx, int32 indices.
  // include_last_offset with offsets ending at len(indices) (PyTorch's fast and
  // slow paths disagree otherwise).
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, -2.0, -4.5, -0.5}, 0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, -2.0, -4.5, -0.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, 0.5, -2.5, 1.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, 0.5, -2.5, 1.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, -0.6666666865348816, -1.5,
            -0.1666666716337204},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, -0.6666666666666666, -1.5,
            -0.16666666666666666},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -2.0, 1.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -2.0, 1.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, 0.5, 1.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, 0.5, 1.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        V(Seq({5}, DType::kFloat32, 5, 1, 0.5)),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.25, 2.0, -1.25, 0.0, 0.0, 0.0, 0.0, -4.5, 0.75, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.5, 2.0, -1.0, 0.0, 0.0, 0.0, 0.0, -3.0, 0.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {1.0, 0.0, 1.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {1.0, 0.0, 1.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-1.5, 2.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {1.0, 0.0, 2.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 4.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(2)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {1.0, -2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
                               V(T({2}, {3.0, 0.0}, DType::kInt32)),
                               V(T({2}, {0.0, 1.0}, DType::kInt32)),
                               Value::Bool(false),
                               Value::Int(1),
                               Value::Bool(false),
                               Value::None(),
                               Value::Bool(false),
                               Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {2, 3}, DType::kFloat32,
           {2.5, -0.5, 3.0, -3.0, 0.5, -2.5}, 0.0001, true);
    Expect(Out(r, 1), {2}, DType::kInt32, {0.0, 1.0}, 0.0001, true);
    Expect(Out(r, 2), {2}, DType::kInt32, {1.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {2}, DType::kInt32, {1.0, 1.0}, 0.0001, true);
  }
}

TEST(NnOpsTest, Distances) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // cdist with broadcast batch dims for p = 2, 1, 0, inf, 3; pdist for p =
  // 2, 1.5, 0, inf.
  {
    std::vector<Value> args = {
        V(Seq({2, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3, 2, 4}, DType::kFloat32, 11, 4, 0.5)), Value::Float(2.0),
        Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {2, 3, 3, 2}, DType::kFloat32,
           {3.1622776985168457, 6.595452785491943,  1.4142135381698608,
            5.787918567657471,  1.4142135381698608, 5.612485885620117,
            4.44409704208374,   7.176350116729736,  4.330127239227295,
            6.123724460601807,  5.074445724487305,  5.612485885620117,
            4.8218255043029785, 5.074445724487305,  4.27200174331665,
            4.330127239227295,  4.609772205352783,  4.44409704208374,
            7.449832439422607,  4.242640495300293,  6.745368957519531,
            2.4494898319244385, 6.595452785491943,  1.4142135381698608,
            5.267827033996582,  5.196152210235596,  4.9749369621276855,
            3.316624879837036,  5.4543561935424805, 1.7320507764816284,
            5.678908348083496,  5.93717098236084,   5.024937629699707,
            5.123475551605225,  5.123475551605225,  5.024937629699707},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(1.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {6.0, 11.0, 2.0, 11.0, 2.0, 11.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(0.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {4.0, 4.0, 2.0, 4.0, 2.0, 4.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(kInf), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {2.0, 5.0, 1.0, 4.0, 1.0, 3.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 4}, DType::kFloat64, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat64, 11, 4, 0.5)),
                               Value::Float(3.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {2, 3, 2}, DType::kFloat64,
           {2.6207413942088964, 5.774001751457727, 1.2599210498948732,
            4.791419857062784, 1.2599210498948732, 4.538759841617426,
            6.435254660429061, 3.530348335326063, 5.528774813678871,
            2.154434690031884, 5.30738261540007, 1.2599210498948732},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(2.0)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32,
           {6.184658527374268, 2.598076105117798, 7.842193603515625,
            5.338539123535156, 2.598076105117798, 6.184658527374268},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(1.5)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32,
           {7.3564772605896, 3.1201257705688477, 8.954895973205566,
            6.324629306793213, 3.1201257705688477, 7.3564772605896},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 5, 2, 0.5)),
                               Value::Float(0.0)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32, {3.0, 3.0, 3.0, 3.0, 3.0, 3.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(kInf)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32, {4.0, 1.5, 5.5, 4.0, 1.5, 4.0}, 0.0001,
           true);
  }
}

// Each family's argument errors, with PyTorch's message where it has one.
TEST(NnOpsErrorTest, Convolution) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  auto conv = [&](Value input, Value weight, int64_t groups) {
    return RunError(
        "aten.convolution.default",
        {input, weight, Value::None(), Ints({1, 1}), Ints({0, 0}), Ints({1, 1}),
         Value::Bool(false), Ints({0, 0}), Value::Int(groups)});
  };
  EXPECT_EQ(conv(V(Seq({2, 5, 5}, DType::kFloat32, 11, 5, 0.5)),
                 V(Seq({3, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)), 1),
            "aten.convolution.default: Expected 4-dimensional input for "
            "4-dimensional weight [3, 2, 3, 3], but got 3-dimensional input "
            "of size [2, 5, 5] instead");
  EXPECT_EQ(conv(x, V(Seq({3, 1, 3, 3}, DType::kFloat32, 11, 5, 0.5)), 1),
            "aten.convolution.default: Given groups=1, weight of size [3, 1, "
            "3, 3], expected input[1, 2, 5, 5] to have 1 channels, but got 2 "
            "channels instead");
  EXPECT_EQ(conv(x, V(Seq({3, 1, 3, 3}, DType::kFloat32, 11, 5, 0.5)), 2),
            "aten.convolution.default: Given groups=2, expected weight to be "
            "divisible by 2 at dimension 0, but got weight of size [[3, 1, 3, "
            "3]] instead");
  EXPECT_EQ(conv(x, V(Seq({3, 2, 7, 7}, DType::kFloat32, 11, 5, 0.5)), 1),
            "aten.convolution.default: Calculated padded input size per "
            "channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be "
            "greater than actual input size");
  EXPECT_THAT(conv(x, V(Seq({3, 2, 3, 3}, DType::kFloat64, 11, 5, 0.5)), 1),
              HasSubstr("expected scalar type Float but found Double"));
  EXPECT_THAT(
      RunError(
          "aten.convolution_backward.default",
          {V(Seq({1, 3, 2, 2}, DType::kFloat32, 7, 3, 1)), x,
           V(Seq({3, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)), Value::None(),
           Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
           Ints({0, 0}), Value::Int(1), Bools({true, true, true})}),
      HasSubstr("Expected grad_output of size [1, 3, 3, 3], but got [1, 3, 2, "
                "2]"));
}

TEST(NnOpsErrorTest, Pooling) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(RunError("aten.max_pool2d_with_indices.default",
                     {x, Ints({2, 2}), Ints({2, 2}), Ints({2, 2})}),
            "aten.max_pool2d_with_indices.default: pad should be at most half "
            "of effective kernel size, but got pad=2, kernel_size=2 and "
            "dilation=1");
  EXPECT_EQ(
      RunError("aten.max_pool2d_with_indices.default",
               {V(Seq({5, 5}, DType::kFloat32, 11, 5, 0.5)), Ints({2, 2})}),
      "aten.max_pool2d_with_indices.default: non-empty 3D or 4D (batch "
      "mode) tensor expected for input");
  EXPECT_EQ(RunError("aten.max_pool2d_with_indices.default", {x, Ints({6, 6})}),
            "aten.max_pool2d_with_indices.default: Given input size: (2x5x5). "
            "Calculated output size: (2x0x0). Output size is too small");
  EXPECT_EQ(RunError("aten.max_pool2d_with_indices.default",
                     {x, Ints({2, 2}), Ints({0, 1})}),
            "aten.max_pool2d_with_indices.default: stride should not be zero");
  EXPECT_EQ(
      RunError("aten.avg_pool2d.default",
               {V(Seq({1, 2, 5, 5}, DType::kInt32, 11, 5, 1)), Ints({2, 2})}),
      "aten.avg_pool2d.default: \"avg_pool2d\" not implemented for "
      "'Int'");
  EXPECT_EQ(RunError("aten.avg_pool2d.default",
                     {x, Ints({2, 2}), Ints({}), Ints({0, 0}),
                      Value::Bool(false), Value::Bool(true), Value::Int(0)}),
            "aten.avg_pool2d.default: divisor must be not zero");
  EXPECT_EQ(RunError("aten.avg_pool3d.default",
                     {V(Seq({1, 1, 4, 4, 4}, DType::kFloat32, 11, 5, 0.5)),
                      Ints({2, 2, 2}), Ints({2, 2, 2}), Ints({2, 2, 2})}),
            "aten.avg_pool3d.default: pad should be at most half of effective "
            "kernel size, but got pad=2, kernel_size=2 and dilation=1");
  EXPECT_EQ(RunError("aten._adaptive_avg_pool2d.default",
                     {V(Seq({5}, DType::kFloat32, 11, 5, 0.5)), Ints({2, 2})}),
            "aten._adaptive_avg_pool2d.default: adaptive_avg_pool2d(): "
            "Expected 3D or 4D tensor, but got [5]");
  EXPECT_EQ(RunError("aten._adaptive_avg_pool3d.default",
                     {V(Seq({1, 2, 3, 3}, DType::kInt64, 11, 5, 1)),
                      Ints({2, 2, 2})}),
            "aten._adaptive_avg_pool3d.default: \"adaptive_avg_pool3d\" not "
            "implemented for 'Long'");
}

TEST(NnOpsErrorTest, Normalization) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(RunError("aten._native_batch_norm_legit.no_stats",
                     {x, Value::None(), Value::None(), Value::Bool(false),
                      Value::Float(0.1), Value::Float(1e-5)}),
            "aten._native_batch_norm_legit.no_stats: running_mean must be "
            "defined in evaluation mode");
  EXPECT_EQ(RunError("aten._native_batch_norm_legit.no_stats",
                     {V(Seq({1, 2}, DType::kInt64, 11, 5, 1)), Value::None(),
                      Value::None(), Value::Bool(true), Value::Float(0.1),
                      Value::Float(1e-5)}),
            "aten._native_batch_norm_legit.no_stats: \"batch_norm\" not "
            "implemented for 'Long'");
  EXPECT_EQ(RunError("aten._native_batch_norm_legit_no_training.default",
                     {x, Value::None(), Value::None(),
                      V(Seq({3}, DType::kFloat32, 11, 5, 1)),
                      V(Seq({2}, DType::kFloat32, 11, 5, 1)), Value::Float(0.1),
                      Value::Float(1e-5)}),
            "aten._native_batch_norm_legit_no_training.default: running_mean "
            "should contain 2 elements not 3");
  EXPECT_EQ(
      RunError("aten.native_group_norm.default",
               {x, Value::None(), Value::None(), Value::Int(1), Value::Int(2),
                Value::Int(25), Value::Int(3), Value::Float(1e-5)}),
      "aten.native_group_norm.default: Expected number of channels in "
      "input to be divisible by num_groups, but got input of shape [1, "
      "2, 5, 5] and num_groups=3");
  Value g = V(Seq({2, 3}, DType::kFloat32, 11, 5, 0.5));
  Value stat = V(Seq({2, 1}, DType::kFloat32, 3, 0, 1));
  EXPECT_THAT(RunError("aten.native_layer_norm_backward.default",
                       {g, g, Ints({3}), stat, stat, Value::None(),
                        Value::None(), Bools({true, true, false})}),
              HasSubstr("output_mask[1] asks for the gradient of weight, "
                        "which is None"));
  EXPECT_THAT(RunError("aten.native_layer_norm_backward.default",
                       {g, g, Ints({2}), stat, stat, Value::None(),
                        Value::None(), Bools({true, false, false})}),
              HasSubstr("Given normalized_shape=[2], expected input with "
                        "shape [*, 2], but got input of size[2, 3]"));
  EXPECT_THAT(
      RunError("aten.native_group_norm_backward.default",
               {g, g, stat, stat, Value::None(), Value::Int(2), Value::Int(3),
                Value::Int(1), Value::Int(2), Bools({true, true, true})}),
      HasSubstr("divisible by num_groups"));
}

TEST(NnOpsErrorTest, UpsampleAndPad) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {x, Value::None(), Value::None()}),
            "aten.upsample_nearest2d.vec: Must specify exactly one of "
            "output_size and scale_factors");
  EXPECT_EQ(RunError("aten.upsample_bilinear2d.vec",
                     {V(Seq({2, 5}, DType::kFloat32, 11, 5, 0.5)), Ints({3, 3}),
                      Value::Bool(false), Value::None()}),
            "aten.upsample_bilinear2d.vec: It is expected input_size equals "
            "to 4, but got size 2");
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {V(Seq({1, 1, 2, 2}, DType::kInt64, 11, 5, 1)),
                      Ints({3, 3}), Value::None()}),
            "aten.upsample_nearest2d.vec: \"upsample_nearest2d_channels_last\" "
            "not implemented for 'Long'");
  // Scale factors whose output size is not positive (as PyTorch's message
  // says it), or no number: never an undefined conversion.
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {x, Value::None(), Floats({-2, 1e-3})}),
            "aten.upsample_nearest2d.vec: Input and output sizes should be "
            "greater than 0, but got input (H: 5, W: 5) output (H: -10, W: "
            "0)");
  EXPECT_THAT(RunError("aten.upsample_nearest2d.vec",
                       {x, Value::None(), Floats({NAN, 1})}),
              HasSubstr("should be greater than 0, but got input (H: 5, W: "
                        "5) output (H: -9223372036854775808, W: 5)"));
  EXPECT_EQ(
      RunError("aten.reflection_pad1d.default",
               {V(Seq({1, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({3, 3})}),
      "aten.reflection_pad1d.default: Argument #4: Padding size should "
      "be less than the corresponding input dimension, but got: padding "
      "(3, 3) at dimension 1 of input [1, 3]");
  EXPECT_EQ(RunError("aten.reflection_pad2d.default",
                     {V(Seq({1, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                      Ints({1, 1, 3, 1})}),
            "aten.reflection_pad2d.default: Argument #6: Padding size should "
            "be less than the corresponding input dimension, but got: padding "
            "(3, 1) at dimension 1 of input [1, 3, 3]");
  EXPECT_EQ(
      RunError("aten.reflection_pad1d.default",
               {V(Seq({1, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({-3, -1})}),
      "aten.reflection_pad1d.default: input (W: 3) is too small. "
      "Calculated output W: -1");
  EXPECT_EQ(RunError("aten.reflection_pad1d.default",
                     {V(Seq({3}, DType::kFloat32, 11, 5, 0.5)), Ints({1, 1})}),
            "aten.reflection_pad1d.default: Expected 2D or 3D (batch mode) "
            "tensor with possibly 0 batch size and other non-zero dimensions "
            "for input, but got: [3]");
  EXPECT_EQ(RunError("aten.replication_pad2d.default",
                     {V(Seq({1, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                      Ints({-2, -2, 1, 1})}),
            "aten.replication_pad2d.default: Calculated output H: 5 W: -1 "
            "must be >= 1 in every dimension (input H: 3, W: 3)");
  EXPECT_EQ(RunError("aten.replication_pad3d.default",
                     {V(Seq({1, 1, 2, 2}, DType::kBool, 2, 0, 1)),
                      Ints({1, 1, 1, 1, 1, 1})}),
            "aten.replication_pad3d.default: \"replication_pad3d\" not "
            "implemented for 'Bool'");
}

TEST(NnOpsErrorTest, Col2ImAndGridSampler) {
  EXPECT_EQ(
      RunError("aten.col2im.default",
               {V(Seq({1, 4, 8}, DType::kFloat32, 11, 5, 0.5)), Ints({4, 4}),
                Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}),
      "aten.col2im.default: Given output_size=(4, 4), kernel_size=(2, "
      "2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size "
      "of input's dimension 2 to match the calculated number of sliding "
      "blocks 3 * 3 = 9, but got input.size(2)=8.");
  EXPECT_EQ(RunError("aten.col2im.default",
                     {V(Seq({1, 4, 9}, DType::kInt64, 11, 5, 1)), Ints({4, 4}),
                      Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}),
            "aten.col2im.default: \"col2im_out_cpu\" not implemented for "
            "'Long'");
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  Value grid = V(Seq({1, 3, 3, 2}, DType::kFloat32, 11, 5, 0.2));
  auto sample = [&](Value input, Value g, int64_t mode, int64_t padding) {
    return RunError(
        "aten.grid_sampler_2d.default",
        {input, g, Value::Int(mode), Value::Int(padding), Value::Bool(false)});
  };
  EXPECT_EQ(sample(x, V(Seq({2, 3, 3, 2}, DType::kFloat32, 11, 5, 0.2)), 0, 0),
            "aten.grid_sampler_2d.default: grid_sampler(): expected grid and "
            "input to have same batch size, but got input with sizes [1, 2, "
            "5, 5] and grid with sizes [2, 3, 3, 2]");
  EXPECT_EQ(sample(x, V(Seq({1, 3, 3, 2}, DType::kFloat64, 11, 5, 0.2)), 0, 0),
            "aten.grid_sampler_2d.default: expected scalar type Float but "
            "found Double");
  EXPECT_THAT(sample(x, grid, 3, 0),
              HasSubstr("expected interpolation_mode to be 0 (bilinear), 1 "
                        "(nearest) or 2 (bicubic), but got 3 (unsupported)"));
  EXPECT_THAT(sample(x, grid, 0, 3),
              HasSubstr("expected padding_mode to be 0 (zeros), 1 (border) or "
                        "2 (reflection), but got 3 (unsupported)"));
  EXPECT_EQ(sample(V(Seq({1, 2, 5, 5}, DType::kInt64, 11, 5, 1)),
                   V(Seq({1, 3, 3, 2}, DType::kInt64, 11, 5, 1)), 0, 0),
            "aten.grid_sampler_2d.default: \"grid_sampler_2d_cpu_kernel_impl\" "
            "not implemented for 'Long'");
}

TEST(NnOpsErrorTest, EmbeddingsAndDistances) {
  Value w = V(Seq({5, 3}, DType::kFloat32, 11, 5, 0.5));
  Value idx = V(T({4}, {1, 2, 4, 1}, DType::kInt64));
  Value off = V(T({3}, {0, 2, 2}, DType::kInt64));
  EXPECT_EQ(RunError("aten.embedding_dense_backward.default",
                     {V(Seq({3, 4}, DType::kFloat32, 11, 5, 0.5)),
                      V(T({3}, {1, 2, 1})), Value::Int(5), Value::Int(-1),
                      Value::Bool(false)}),
            "aten.embedding_dense_backward.default: Expected tensor for "
            "argument #2 'indices' to have one of the following scalar types: "
            "Long, Int; but got torch.FloatTensor instead (while checking "
            "arguments for embedding_backward)");
  EXPECT_THAT(RunError("aten.embedding_dense_backward.default",
                       {V(Seq({3, 4}, DType::kFloat32, 11, 5, 0.5)),
                        V(T({3}, {1, 7, 1}, DType::kInt64)), Value::Int(5),
                        Value::Int(-1), Value::Bool(false)}),
              HasSubstr("index 7 is out of bounds"));
  auto bag = [&](Value indices, Value offsets, int64_t mode, Value psw) {
    return RunError(
        "aten._embedding_bag.default",
        {w, indices, offsets, Value::Bool(false), Value::Int(mode),
         Value::Bool(false), psw, Value::Bool(false), Value::Int(-1)});
  };
  EXPECT_EQ(bag(idx, off, 1, V(Seq({4}, DType::kFloat32, 11, 5, 0.5))),
            "aten._embedding_bag.default: embedding_bag: per_sample_weights "
            "only supported with mode='sum'");
  EXPECT_EQ(bag(idx, off, 3, Value::None()),
            "aten._embedding_bag.default: `mode` must be sum, mean, or max.");
  EXPECT_EQ(bag(V(T({1}, {0}, DType::kInt64)), off, 0, Value::None()),
            "aten._embedding_bag.default: offsets[-1] can not be greater than "
            "input's length 1 but got offsets[-1] of 2");
  EXPECT_EQ(bag(idx, V(T({2}, {1, 2}, DType::kInt64)), 0, Value::None()),
            "aten._embedding_bag.default: offsets[0] has to be 0, i.e., the "
            "first sequence in the mini-batch has to start from position 0. "
            "However, got 1");
  EXPECT_THAT(bag(V(T({2}, {1, 9}, DType::kInt64)), off, 0, Value::None()),
              HasSubstr("index 9 out of range [0, 5)"));
  auto cdist = [&](Value a, Value b, double p) {
    return RunError("aten._cdist_forward.default",
                    {a, b, Value::Float(p), Value::None()});
  };
  Value a = V(Seq({2, 3}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(cdist(a, V(Seq({4, 2}, DType::kFloat32, 11, 5, 0.5)), 2),
            "aten._cdist_forward.default: X1 and X2 must have the same number "
            "of columns. X1: 3 X2: 2");
  EXPECT_EQ(cdist(V(Seq({2, 3}, DType::kInt64, 11, 5, 1)),
                  V(Seq({4, 3}, DType::kInt64, 11, 5, 1)), 2),
            "aten._cdist_forward.default: cdist only supports floating-point "
            "dtypes, X1 got: Long");
  EXPECT_EQ(cdist(V(Seq({3}, DType::kFloat32, 11, 5, 1)), a, 2),
            "aten._cdist_forward.default: cdist only supports at least 2D "
            "tensors, X1 got: 1D");
  EXPECT_EQ(cdist(a, a, -1),
            "aten._cdist_forward.default: cdist only supports non-negative p "
            "values");
  EXPECT_EQ(
      RunError("aten._pdist_forward.default",
               {V(Seq({2, 3, 3}, DType::kFloat32, 11, 5, 1)), Value::Float(2)}),
      "aten._pdist_forward.default: pdist only supports 2D tensors, "
      "got: 3D");
  EXPECT_EQ(RunError("aten._pdist_forward.default", {a, Value::Float(-1)}),
            "aten._pdist_forward.default: pdist only supports non-negative p "
            "values");
}

// Meta functions on symbolic sizes (shape propagation): simple size
// arithmetic stays symbolic; what needs numbers is specialized with guards.
class NnSymbolicTest : public ::testing::Test {
 protected:
  symbolic::Expr Sym(int64_t hint, int dim) {
    return env_.CreateSymbol(hint, symbolic::Source::Size(0, dim));
  }
  // Contiguous metadata of `sizes`.
  static Value Meta(std::vector<symbolic::Expr> sizes,
                    DType dtype = DType::kFloat32) {
    TensorMeta m;
    m.dtype = dtype;
    m.sizes = sizes;
    m.strides.assign(sizes.size(), symbolic::Int(1));
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
      m.strides[d] = symbolic::Mul(m.strides[d + 1], sizes[d + 1]);
    }
    m.storage_offset = symbolic::Int(0);
    return Value::OfMeta(std::move(m));
  }
  std::string MetaOf(const std::string& target, std::vector<Value> args) {
    const OpDef* op = OpRegistry::Global().Find(target);
    EXPECT_NE(op, nullptr) << target;
    if (op == nullptr) return "";
    absl::StatusOr<std::vector<Value>> bound =
        BindArguments(op->schema, std::move(args), {}, target);
    EXPECT_OK(bound);
    if (!bound.ok()) return "";
    absl::StatusOr<Value> out = op->meta(OpCall(*op, *bound, &env_));
    EXPECT_OK(out) << target;
    return out.ok() ? Describe(*out) : "";
  }
  symbolic::ShapeEnv env_;
};

TEST_F(NnSymbolicTest, OutputSizesStaySymbolicWhereTheyAreArithmetic) {
  symbolic::Expr s0 = Sym(2, 0), s1 = Sym(9, 2);
  symbolic::Expr three = symbolic::Int(3);
  // Convolution: (s1 + 2 - 3) // 2 + 1 for stride 2, padding 1, kernel 3.
  EXPECT_THAT(
      MetaOf("aten.convolution.default",
             {Meta({s0, three, s1}), Meta({symbolic::Int(4), three, three}),
              Value::None(), Ints({2}), Ints({1}), Ints({1}),
              Value::Bool(false), Ints({0}), Value::Int(1)}),
      HasSubstr("f32[s0, 4, ((s1 - 1)//2) + 1]"));
  // Transposed: (s1 - 1) * 2 - 2 + 3 + 1.
  EXPECT_THAT(
      MetaOf("aten.convolution.default",
             {Meta({s0, three, s1}), Meta({three, symbolic::Int(2), three}),
              Value::None(), Ints({2}), Ints({1}), Ints({1}), Value::Bool(true),
              Ints({1}), Value::Int(1)}),
      HasSubstr("f32[s0, 2, 2*s1]"));
  EXPECT_THAT(MetaOf("aten.reflection_pad1d.default",
                     {Meta({s0, three, s1}), Ints({2, 1})}),
              HasSubstr("f32[s0, 3, s1 + 3]"));
  EXPECT_THAT(MetaOf("aten._adaptive_avg_pool2d.default",
                     {Meta({s0, three, s1, s1}), Ints({2, 2})}),
              HasSubstr("f32[s0, 3, 2, 2]"));
  EXPECT_THAT(
      MetaOf("aten._native_batch_norm_legit.no_stats",
             {Meta({s0, three, s1}), Value::None(), Value::None(),
              Value::Bool(true), Value::Float(0.1), Value::Float(1e-5)}),
      HasSubstr("(f32[s0, 3, s1]"));
  EXPECT_THAT(MetaOf("aten._pdist_forward.default",
                     {Meta({s1, three}), Value::Float(2)}),
              HasSubstr("f32[(s1*(s1 - 1)//2)]"));
  EXPECT_THAT(MetaOf("aten._cdist_forward.default",
                     {Meta({s0, s1, three}), Meta({symbolic::Int(4), three}),
                      Value::Float(2), Value::None()}),
              HasSubstr("f32[s0, s1, 4]"));
  EXPECT_THAT(MetaOf("aten.embedding_dense_backward.default",
                     {Meta({s0, three}), Meta({s0}, DType::kInt64),
                      Value::Int(7), Value::Int(-1), Value::Bool(false)}),
              HasSubstr("f32[7, 3]"));
  // Pooling keeps the spatial sizes symbolic, ceil_mode too (its
  // correction, (out - 1) * stride >= in + padding, decided under a guard).
  EXPECT_THAT(MetaOf("aten.max_pool2d_with_indices.default",
                     {Meta({s0, three, s1, s1}), Ints({2, 2}), Ints({2, 2}),
                      Ints({0, 0}), Ints({1, 1}), Value::Bool(true)}),
              HasSubstr("(f32[s0, 3, ((s1 - 1)//2) + 1, ((s1 - 1)//2) + 1]"));
  EXPECT_THAT(MetaOf("aten.avg_pool2d.default",
                     {Meta({s0, three, s1, s1}), Ints({3, 3}), Ints({2, 2}),
                      Ints({1, 1}), Value::Bool(false), Value::Bool(true),
                      Value::None()}),
              HasSubstr("f32[s0, 3, ((s1 - 1)//2) + 1, ((s1 - 1)//2) + 1]"));
}

TEST_F(NnSymbolicTest, AWeightGradientsConvolutionIsNotSpecialized) {
  // convolution_backward's weight gradient is a convolution whose channels
  // are the batch and whose kernel is the gradient's spatial size: both
  // symbolic under dynamic=True. Its output sizes stay symbolic and no
  // guard pins a size to its hint (which recompiled every batch).
  symbolic::Expr n = env_.CreateSymbol(6, symbolic::Source::Size(0, 0));
  symbolic::Expr h = env_.CreateSymbol(16, symbolic::Source::Size(0, 2));
  symbolic::Expr three = symbolic::Int(3), eight = symbolic::Int(8);
  symbolic::Expr k = symbolic::Add(h, symbolic::Int(-2));  // a 3x3 valid conv
  // input [3, n, h, h] (the forward's input, channels first), weight
  // [8, n, k, k] (the output gradient, channels first).
  std::string m =
      MetaOf("aten.convolution.default",
             {Meta({three, n, h, h}), Meta({eight, n, k, k}), Value::None(),
              Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
              Ints({0, 0}), Value::Int(1)});
  EXPECT_THAT(m, HasSubstr("f32[3, 8, 3, 3]"));
  for (const symbolic::Expr& g : env_.guards()) {
    EXPECT_THAT(symbolic::ToString(g),
                Not(AnyOf(HasSubstr("== 6"), HasSubstr("== 16"))));
  }
  // Channels that do not match are still refused, with the sizes.
  const OpDef* op = OpRegistry::Global().Find("aten.convolution.default");
  ASSERT_NE(op, nullptr);
  absl::StatusOr<std::vector<Value>> bound =
      BindArguments(op->schema,
                    {Meta({three, n, h, h}), Meta({eight, h, k, k}),
                     Value::None(), Ints({1, 1}), Ints({0, 0}), Ints({1, 1}),
                     Value::Bool(false), Ints({0, 0}), Value::Int(1)},
                    {}, "conv");
  ASSERT_OK(bound);
  EXPECT_THAT(op->meta(OpCall(*op, *bound, &env_)).status().message(),
              HasSubstr("to have s1 channels, but got s0 channels instead"));
}

TEST_F(NnSymbolicTest, BatchSizesNeedNoHint) {
  // A batch size without a value (as a graph's unhinted s0): meta functions
  // must not ask for its number.
  symbolic::Expr b = env_.CreateUnbackedSizeLike();
  std::string u = symbolic::ToString(b);
  symbolic::Expr two = symbolic::Int(2), three = symbolic::Int(3),
                 four = symbolic::Int(4);
  Value x = Meta({b, two, four, four});
  auto has_batch = [&](const std::string& d) {
    EXPECT_THAT(d, HasSubstr(absl::StrCat("[", u, ", "))) << d;
  };
  has_batch(MetaOf("aten.convolution.default",
                   {x, Meta({three, two, three, three}), Value::None(),
                    Ints({1, 1}), Ints({1, 1}), Ints({1, 1}),
                    Value::Bool(false), Ints({0, 0}), Value::Int(1)}));
  has_batch(MetaOf(
      "aten.convolution_backward.default",
      {Meta({b, three, four, four}), x, Meta({three, two, three, three}),
       Ints({3}), Ints({1, 1}), Ints({1, 1}), Ints({1, 1}), Value::Bool(false),
       Ints({0, 0}), Value::Int(1), Bools({true, true, true})}));
  has_batch(MetaOf("aten.max_pool2d_with_indices.default",
                   {x, Ints({2, 2}), Ints({}), Ints({0, 0}), Ints({1, 1}),
                    Value::Bool(true)}));
  has_batch(MetaOf("aten.max_pool2d_with_indices_backward.default",
                   {Meta({b, two, two, two}), x, Ints({2, 2}), Ints({2, 2}),
                    Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
                    Meta({b, two, two, two}, DType::kInt64)}));
  has_batch(MetaOf("aten.avg_pool2d.default",
                   {x, Ints({3, 3}), Ints({2, 2}), Ints({1, 1}),
                    Value::Bool(true), Value::Bool(false), Value::None()}));
  has_batch(MetaOf(
      "aten.avg_pool2d_backward.default",
      {Meta({b, two, two, two}), x, Ints({2, 2}), Ints({2, 2}), Ints({0, 0}),
       Value::Bool(false), Value::Bool(true), Value::None()}));
  has_batch(MetaOf("aten._adaptive_avg_pool2d.default", {x, Ints({3, 3})}));
  has_batch(MetaOf("aten._adaptive_avg_pool2d_backward.default",
                   {Meta({b, two, three, three}), x}));
  has_batch(MetaOf("aten._native_batch_norm_legit.no_stats",
                   {x, Value::None(), Value::None(), Value::Bool(true),
                    Value::Float(0.1), Value::Float(1e-5)}));
  has_batch(
      MetaOf("aten.native_group_norm.default",
             {x, Value::None(), Value::None(), Value::Number(b), Value::Int(2),
              Value::Int(16), Value::Int(2), Value::Float(1e-5)}));
  has_batch(MetaOf("aten.native_group_norm_backward.default",
                   {x, x, Meta({b, two}), Meta({b, two}), Value::None(),
                    Value::Number(b), Value::Int(2), Value::Int(16),
                    Value::Int(2), Bools({true, true, true})}));
  has_batch(MetaOf(
      "aten.native_layer_norm_backward.default",
      {x, x, Ints({4, 4}), Meta({b, two, symbolic::Int(1), symbolic::Int(1)}),
       Meta({b, two, symbolic::Int(1), symbolic::Int(1)}), Value::None(),
       Value::None(), Bools({true, false, false})}));
  has_batch(MetaOf("aten.upsample_bilinear2d.vec",
                   {x, Ints({5, 7}), Value::Bool(false), Value::None()}));
  has_batch(MetaOf("aten.upsample_nearest2d.vec",
                   {x, Value::None(), Floats({2.0, 1.5})}));
  has_batch(MetaOf("aten.reflection_pad2d.default", {x, Ints({1, 2, 3, 0})}));
  has_batch(MetaOf("aten.replication_pad2d.default", {x, Ints({1, 2, 3, 0})}));
  has_batch(MetaOf("aten.col2im.default",
                   {Meta({b, symbolic::Int(8), symbolic::Int(9)}), Ints({4, 4}),
                    Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}));
  has_batch(MetaOf("aten.grid_sampler_2d.default",
                   {x, Meta({b, three, three, two}), Value::Int(0),
                    Value::Int(0), Value::Bool(false)}));
  has_batch(MetaOf("aten._cdist_forward.default",
                   {Meta({b, three, four}), Meta({two, four}), Value::Float(2),
                    Value::None()}));
  // Data-dependent counts: the embedding ops' index counts.
  EXPECT_THAT(MetaOf("aten.embedding_dense_backward.default",
                     {Meta({b, three}), Meta({b}, DType::kInt64), Value::Int(7),
                      Value::Int(-1), Value::Bool(false)}),
              HasSubstr("f32[7, 3]"));
  EXPECT_THAT(MetaOf("aten._embedding_bag.default",
                     {Meta({symbolic::Int(5), three}), Meta({b}, DType::kInt64),
                      Meta({four}, DType::kInt64), Value::Bool(false),
                      Value::Int(1), Value::Bool(false), Value::None(),
                      Value::Bool(true), Value::Int(-1)}),
              HasSubstr(absl::StrCat("(f32[3, 3][3, 1]cpu+0, i64[", u, "]")));
}

// A small network through shape propagation (dynamic batch) and the
// interpreter: batch norm in training mode writes its running statistics
// into the graph's inputs, which the interpreter reports as mutated.
constexpr char kConvBnPool[] = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0, 2, 6, 6][72, 36, 6, 1]cpu", w: "f32[3, 2, 3, 3][18, 9, 3, 1]cpu", rm: "f32[3][1]cpu", rv: "f32[3][1]cpu"):
        convolution: "f32[s0, 3, 6, 6][108, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  x = w = None
        _native_batch_norm_legit = torch.ops.aten._native_batch_norm_legit.default(convolution, None, None, rm, rv, True, 0.1, 1e-05);  convolution = rm = rv = None
        getitem: "f32[s0, 3, 6, 6][108, 36, 6, 1]cpu" = _native_batch_norm_legit[0];  _native_batch_norm_legit = None
        max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(getitem, [2, 2], [2, 2]);  getitem = None
        getitem_1: "f32[s0, 3, 3, 3][27, 9, 3, 1]cpu" = max_pool2d_with_indices[0];  max_pool2d_with_indices = None
        return (getitem_1,)
)";

TEST(NnGraphTest, ConvBatchNormPoolPropagatesAndRuns) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kConvBnPool));
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_EQ(g->Find("getitem_1")->meta().tensor.ToAnnotation(),
            "f32[s0, 3, 3, 3][27, 9, 3, 1]cpu");
  Tensor x = Seq({2, 2, 6, 6}, DType::kFloat32, 13, 6, 0.5);
  Tensor w = Seq({3, 2, 3, 3}, DType::kFloat32, 7, 3, 0.5);
  Tensor rm = T({3}, {0, 0, 0}), rv = T({3}, {1, 1, 1});
  ASSERT_OK_AND_ASSIGN(Interpretation r,
                       Interpret(*g, {V(x), V(w), V(rm), V(rv)}));
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[2, 3, 3, 3][27, 9, 3, 1]cpu");
  EXPECT_EQ(r.mutated_inputs, (std::vector<bool>{false, false, true, true}));
  // The running statistics moved by momentum 0.1 towards the batch's.
  Value conv =
      *RunOp("aten.convolution.default",
             {V(x), V(w), Value::None(), Ints({1, 1}), Ints({1, 1}),
              Ints({1, 1}), Value::Bool(false), Ints({0, 0}), Value::Int(1)});
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, ss = 0, n = 2 * 36;
    ForEachIndex(conv.tensor.sizes(), [&](absl::Span<const int64_t> i) {
      if (i[1] == c) sum += conv.tensor.GetDouble(i);
    });
    double mean = sum / n;
    ForEachIndex(conv.tensor.sizes(), [&](absl::Span<const int64_t> i) {
      if (i[1] == c) {
        double d = conv.tensor.GetDouble(i) - mean;
        ss += d * d;
      }
    });
    EXPECT_NEAR(rm.GetDouble({c}), 0.1 * mean, 1e-5);
    EXPECT_NEAR(rv.GetDouble({c}), 0.9 + 0.1 * ss / (n - 1), 1e-4);
  }
}

// ---- Corpus ops: batch norm twins, losses, flash attention, upsampling,
// embedding_bag_forward_only (values captured from torch 2.15 on CPU). ------

TEST(NnOpsTest, BatchNormFunctionalTwinAndNativeBatchNorm) {
  Tensor x = T({2, 2, 2}, {1, 2, 3, -1, 0, 4, 2, 2});
  Tensor w = T({2}, {1, 2}), b = T({2}, {0, -1});
  Tensor rm = T({2}, {0.5, -0.5}), rv = T({2}, {2, 1});
  Value r = RunV("aten._native_batch_norm_legit_functional.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(true),
                  Value::Float(0.1), Value::Float(1e-5)});
  ASSERT_EQ(r.list.size(), 5u);
  Expect(Out(r, 0), {2, 2, 2}, DType::kFloat32,
         {-0.5070914030075073, 0.16903042793273926, 0.9999954700469971,
          -4.33332633972168, -1.183213233947754, 1.5212740898132324,
          -0.33333492279052734, -0.33333492279052734},
         1e-5, true);
  Expect(Out(r, 1), {2}, DType::kFloat32, {1.75, 1.5}, 1e-6, true);
  Expect(Out(r, 2), {2}, DType::kFloat32,
         {0.6761218309402466, 0.6666651964187622}, 1e-5, true);
  // The new running statistics (momentum 0.1, unbiased variance) ...
  Expect(Out(r, 3), {2}, DType::kFloat32, {0.625, -0.29999998211860657}, 1e-6,
         true);
  Expect(Out(r, 4), {2}, DType::kFloat32,
         {2.0916666984558105, 1.1999999284744263}, 1e-6, true);
  // ... while the arguments are left as they were.
  EXPECT_EQ(rm.GetDouble({0}), 0.5);
  EXPECT_EQ(rv.GetDouble({1}), 1);
  // native_batch_norm in evaluation mode: running statistics, empty saved
  // statistics.
  Value e = RunV("aten.native_batch_norm.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(false),
                  Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(e, 0), {2, 2, 2}, DType::kFloat32,
         {0.3535524904727936, 1.0606575012207031, 5.999964714050293,
          -1.9999949932098389, -0.3535524904727936, 2.474867343902588,
          3.9999749660491943, 3.9999749660491943},
         1e-5, true);
  Expect(Out(e, 1), {0}, DType::kFloat32, {}, 0, true);
  // Training without weights or running statistics.
  Value n =
      RunV("aten.native_batch_norm.default",
           {V(x), Value::None(), Value::None(), Value::None(), Value::None(),
            Value::Bool(true), Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(n, 0), {2, 2, 2}, DType::kFloat32,
         {-0.5070914030075073, 0.16903042793273926, 0.9999977946281433,
          -1.6666629314422607, -1.183213233947754, 1.5212740898132324,
          0.3333325982093811, 0.3333325982093811},
         1e-5, true);
  // native_batch_norm in training mode writes the running statistics, as
  // PyTorch's CPU kernel does although its schema does not say so:
  // 0.9 * 0.5 + 0.1 * 1.75 (the batch mean) = 0.625.
  Value t = RunV("aten.native_batch_norm.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(true),
                  Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(t, 1), {2}, DType::kFloat32, {1.75, 1.5}, 1e-6, true);
  EXPECT_NEAR(rm.GetDouble({0}), 0.625, 1e-7);
  // The mutating op is paired with its twin: results 3 and 4 are the new
  // values of arguments 3 and 4.
  const OpDef* legit =
      OpRegistry::Global().Find("aten._native_batch_norm_legit.default");
  ASSERT_NE(legit, nullptr);
  EXPECT_EQ(legit->functional,
            "aten._native_batch_norm_legit_functional.default");
  EXPECT_EQ(legit->written_results,
            (std::vector<std::pair<int, int>>{{3, 3}, {4, 4}}));
}

TEST(NnOpsTest, NllLossForwardAndMseLoss) {
  Tensor s = T({2, 3}, {-1, -2, -0.5, -0.3, -1.2, -3});
  Tensor t = T({2}, {2, 0}, DType::kInt64);
  Value none =
      RunV("aten.nll_loss_forward.default",
           {V(s), V(t), Value::None(), Value::Int(0), Value::Int(-100)});
  Expect(Out(none, 0), {2}, DType::kFloat32, {0.5, 0.30000001192092896}, 1e-6,
         true);
  Expect(Out(none, 1), {}, DType::kFloat32, {0}, 0, true);
  Value mean =
      RunV("aten.nll_loss_forward.default",
           {V(s), V(t), V(T({3}, {1, 2, 3})), Value::Int(1), Value::Int(-100)});
  Expect(Out(mean, 0), {}, DType::kFloat32, {0.44999998807907104}, 1e-6, true);
  Expect(Out(mean, 1), {}, DType::kFloat32, {4}, 0, true);
  Value sum = RunV("aten.nll_loss_forward.default",
                   {V(s), V(t), Value::None(), Value::Int(2), Value::Int(0)});
  Expect(Out(sum, 0), {}, DType::kFloat32, {0.5}, 1e-6, true);
  Expect(Out(sum, 1), {}, DType::kFloat32, {1}, 0, true);
  // A 1-d input is one sample: a 0-d loss even unreduced.
  Value one = RunV("aten.nll_loss_forward.default",
                   {V(T({3}, {-1, -2, -0.5})), V(T({}, {1}, DType::kInt64)),
                    Value::None(), Value::Int(0), Value::Int(-100)});
  Expect(Out(one, 0), {}, DType::kFloat32, {2}, 0, true);
  Expect(Out(one, 1), {}, DType::kFloat32, {1}, 0, true);
  Tensor p = T({2, 3}, {1, 2, 3, 0, -1, 4}), q = T({3}, {0.5, 2, 1});
  Expect(RunV("aten.mse_loss.default", {V(p), V(q), Value::Int(0)}), {2, 3},
         DType::kFloat32, {0.25, 0, 4, 0.25, 9, 9}, 0, true);
  Expect(RunV("aten.mse_loss.default", {V(p), V(q)}), {}, DType::kFloat32,
         {3.75}, 1e-7, true);
  Expect(RunV("aten.mse_loss.default", {V(p), V(q), Value::Int(2)}), {},
         DType::kFloat32, {22.5}, 1e-7, true);
}

TEST(NnOpsTest, FlashAttentionForCpu) {
  Tensor q = T({1, 1, 4, 2}, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8});
  Tensor k = T({1, 1, 3, 2}, {0.3, -0.1, 0.2, 0.5, -0.4, 0.6});
  Tensor v = T({1, 1, 3, 2}, {1, 2, -1, 0.5, 3, -2});
  const std::string op =
      "aten._scaled_dot_product_flash_attention_for_cpu.default";
  Value r = RunV(op, {V(q), V(k), V(v)});
  Expect(Out(r, 0), {1, 1, 4, 2}, DType::kFloat32,
         {0.9807487726211548, 0.14016903936862946, 1.1124162673950195,
          -0.061523448675870895, 0.855544924736023, 0.5213145017623901,
          0.8313760161399841, 0.16730467975139618},
         1e-5, true);
  Expect(Out(r, 1), {1, 1, 4}, DType::kFloat32,
         {1.1486245393753052, 1.1957775354385376, 0.9937063455581665,
          1.311884880065918},
         1e-5, true);
  ASSERT_OK_AND_ASSIGN(Value causal, RunOp(op, {V(q), V(k), V(v)},
                                           {{"is_causal", Value::Bool(true)},
                                            {"scale", Value::Float(0.5)}}));
  Expect(Out(causal, 0), {1, 1, 4, 2}, DType::kFloat32,
         {1, 2, -0.06739769130945206, 1.1994518041610718, 0.8924317955970764,
          0.41939133405685425, 0.8823801875114441, 0.16625775396823883},
         1e-5, true);
  Expect(Out(causal, 1), {1, 1, 4}, DType::kFloat32,
         {0.004999999888241291, 0.6979235410690308, 1.019327998161316,
          1.2476913928985596},
         1e-5, true);
  Tensor mask = *T({3}, {0, -1, 2}).AsStrided({4, 3}, {0, 1}, 0);
  ASSERT_OK_AND_ASSIGN(Value masked,
                       RunOp(op, {V(q), V(k), V(v)}, {{"attn_mask", V(mask)}}));
  Expect(Out(masked, 0), {1, 1, 4, 2}, DType::kFloat32,
         {2.6080892086029053, -1.4548908472061157, 2.682103395462036,
          -1.5701059103012085, 2.442438840866089, -1.1571012735366821,
          2.571458578109741, -1.435044288635254},
         1e-5, true);
  Expect(Out(masked, 1), {1, 1, 4}, DType::kFloat32,
         {2.2220957279205322, 2.3841116428375244, 1.864457368850708,
          2.317152500152588},
         1e-5, true);
  // Fully masked rows (every score -inf, by the mask or the causal fill and
  // the mask together): output 0 and logsumexp 0, as PyTorch's kernel
  // (torch 2.15: it takes such a row's max as 0 and its sum as 1).
  const double inf = std::numeric_limits<double>::infinity();
  Tensor rows =
      T({4, 3}, {0, -1, 2, -inf, -inf, -inf, 0, -inf, 1, -inf, -inf, -inf});
  ASSERT_OK_AND_ASSIGN(Value holes,
                       RunOp(op, {V(q), V(k), V(v)}, {{"attn_mask", V(rows)}}));
  Expect(Out(holes, 0), {1, 1, 4, 2}, DType::kFloat32,
         {2.6080892086029053, -1.4548908472061157, 0, 0, 2.223905324935913,
          -0.44781073927879333, 0, 0},
         1e-5, true);
  Expect(Out(holes, 1), {1, 1, 4}, DType::kFloat32,
         {2.2220957279205322, 0, 1.0951205492019653, 0}, 1e-5, true);
  Tensor first = T({4, 3}, {-inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  ASSERT_OK_AND_ASSIGN(
      Value causal_hole,
      RunOp(op, {V(q), V(k), V(v)},
            {{"is_causal", Value::Bool(true)}, {"attn_mask", V(first)}}));
  Expect(Out(causal_hole, 0), {1, 1, 4, 2}, DType::kFloat32,
         {0, 0, -0.0951705053448677, 1.1786221265792847, 0.8555448651313782,
          0.5213145017623901, 0.8313761353492737, 0.16730467975139618},
         1e-5, true);
  Expect(Out(causal_hole, 1), {1, 1, 4}, DType::kFloat32,
         {0, 0.7012320756912231, 0.9937063455581665, 1.311884880065918}, 1e-5,
         true);
  // PyTorch's layouts: a contiguous output, logsumexp as [B, L, H]
  // transposed (torch: strides (12, 1, 3) for [2, 3, 4]).
  Value big = RunV(op, {V(Seq({2, 3, 4, 8}, DType::kFloat32, 11, 5, 0.1)),
                        V(Seq({2, 3, 5, 8}, DType::kFloat32, 13, 6, 0.1)),
                        V(Seq({2, 3, 5, 8}, DType::kFloat32, 7, 3, 0.1))});
  EXPECT_EQ(Out(big, 0).tensor.strides(), (std::vector<int64_t>{96, 32, 8, 1}));
  EXPECT_EQ(Out(big, 1).tensor.strides(), (std::vector<int64_t>{12, 1, 3}));
}

TEST(NnOpsTest, UpsampleNearest2dAndEmbeddingBagForwardOnly) {
  std::vector<double> six = {0, 1, 2, 3, 4, 5};
  Tensor u = T({1, 1, 2, 3}, six);
  Expect(RunV("aten.upsample_nearest2d.default", {V(u), Ints({3, 5})}),
         {1, 1, 3, 5}, DType::kFloat32,
         {0, 0, 1, 1, 2, 0, 0, 1, 1, 2, 3, 3, 4, 4, 5}, 0, true);
  // scales_h=0.9 picks rows by 1 / 0.9 instead of in / out.
  Expect(RunV("aten.upsample_nearest2d.default",
              {V(u), Ints({3, 5}), Value::Float(0.9)}),
         {1, 1, 3, 5}, DType::kFloat32,
         {0, 0, 1, 1, 2, 3, 3, 4, 4, 5, 3, 3, 4, 4, 5}, 0, true);
  Tensor w = T({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor ind = T({5}, {0, 2, 1, 3, 3}, DType::kInt64);
  Tensor off = T({2}, {0, 2}, DType::kInt64);
  Value mean = RunV("aten._embedding_bag_forward_only.default",
                    {V(w), V(ind), V(off), Value::Bool(false), Value::Int(1)});
  Expect(Out(mean, 0), {2, 2}, DType::kFloat32,
         {2, 3, 4.666666507720947, 5.666666507720947}, 1e-6, true);
  Value mx = RunV("aten._embedding_bag_forward_only.default",
                  {V(w), V(ind), V(off), Value::Bool(false), Value::Int(2)});
  Expect(Out(mx, 0), {2, 2}, DType::kFloat32, {4, 5, 6, 7}, 0, true);
  Expect(Out(mx, 3), {2, 2}, DType::kInt64, {2, 2, 3, 3}, 0, true);
}

TEST(NnOpsErrorTest, CorpusNnOps) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  // torch's messages.
  EXPECT_THAT(RunError("aten.native_batch_norm.default",
                       {V(x), Value::None(), Value::None(), Value::None(),
                        Value::None(), Value::Bool(false), Value::Float(0.1),
                        Value::Float(1e-5)}),
              HasSubstr("running_mean must be defined in evaluation mode"));
  EXPECT_THAT(RunError("aten.nll_loss_forward.default",
                       {V(x), V(T({2}, {0, 5}, DType::kInt64)), Value::None(),
                        Value::Int(1), Value::Int(-100)}),
              HasSubstr("Target 5 is out of bounds."));
  EXPECT_THAT(
      RunError("aten.nll_loss_forward.default",
               {V(x), V(T({2}, {0, 1}, DType::kInt32)), Value::None(),
                Value::Int(1), Value::Int(-100)}),
      HasSubstr("expected target dtype to be Long or Byte, but got Int"));
  EXPECT_THAT(RunError("aten.nll_loss_forward.default",
                       {V(x), V(T({3}, {0, 1, 1}, DType::kInt64)),
                        Value::None(), Value::Int(1), Value::Int(-100)}),
              HasSubstr("size mismatch (got input: [2, 3], target: [3])"));
  // torch's meta: a 1-d self takes a 0-d target, or a 1-d one of its size.
  EXPECT_EQ(RunError("aten.nll_loss_forward.default",
                     {V(T({5}, {1, 2, 3, 4, 5})), V(T({1}, {1}, DType::kInt64)),
                      Value::None(), Value::Int(1), Value::Int(-100)}),
            "aten.nll_loss_forward.default: size mismatch (got input: [5], "
            "target: [1])");
  // A 0-d or 1-d input has no channel dim: PyTorch's dim-range message.
  EXPECT_EQ(RunError("aten.native_batch_norm.default",
                     {V(T({}, {1})), Value::None(), Value::None(),
                      Value::None(), Value::None(), Value::Bool(true),
                      Value::Float(0.1), Value::Float(1e-5)}),
            "aten.native_batch_norm.default: Dimension out of range (expected "
            "to be in range of [-1, 0], but got 1)");
  EXPECT_THAT(
      RunError("aten.mse_loss.default", {V(T({2}, {1, 2}, DType::kInt64)),
                                         V(T({2}, {1, 2}, DType::kInt64))}),
      HasSubstr("\"mse_cpu\" not implemented for 'Long'"));
  Tensor q = T({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::string sdpa =
      "aten._scaled_dot_product_flash_attention_for_cpu.default";
  EXPECT_THAT(RunError(sdpa, {V(q), V(q), V(q), Value::Float(0.1)}),
              HasSubstr("dropout_p must be 0"));
  EXPECT_THAT(
      RunOp(sdpa, {V(q), V(q), V(q)},
            {{"attn_mask", V(T({2, 2}, {1, 0, 1, 1}, DType::kBool))}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Attention mask is the same data type as query")));
  EXPECT_THAT(
      RunError(sdpa, {V(q), V(T({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6})), V(q)}),
      HasSubstr("Q/K/V should have the same head size"));
}

TEST(NnOpsErrorTest, PairMutatingChecksTheWrittenArgumentsAndResults) {
  OpRegistry r;
  OpFn none = [](const OpCall& c) -> absl::StatusOr<Value> {
    return c.Error("unused");
  };
  ASSERT_OK(r.Add("m(Tensor x, Tensor(a!) s) -> Tensor", none));
  ASSERT_OK(r.Add("f(Tensor x, Tensor s) -> (Tensor, Tensor)", none));
  // Argument 0 is not written; result 0 is the op's own; 2 does not exist.
  EXPECT_THAT(
      r.PairMutating("aten.m.default", "aten.f.default", {{0, 1}}).message(),
      HasSubstr("argument 0 is not a written argument"));
  EXPECT_THAT(
      r.PairMutating("aten.m.default", "aten.f.default", {{1, 0}}).message(),
      HasSubstr("result 0 is not one past"));
  EXPECT_FALSE(
      r.PairMutating("aten.m.default", "aten.f.default", {{1, 2}}).ok());
  EXPECT_FALSE(r.PairMutating("aten.m.default", "aten.g.default", {}).ok());
  ASSERT_OK(r.PairMutating("aten.m.default", "aten.f.default", {{1, 1}}));
  EXPECT_EQ(r.Find("aten.m.default")->functional, "aten.f.default");
  EXPECT_EQ(r.Find("aten.f.default")->inplace, "aten.m.default");
}

TEST(NnOpsTest, SmoothL1AndBinaryCrossEntropyWithLogits) {
  Tensor x = T({2, 3}, {1, -2, 0.5, 3, 0.2, -1});
  Tensor y = T({3}, {0, 1, 0.3});
  // torch: smooth_l1_loss(x, y, 0); (x, y, 1, beta=0.5); (x, y, 2, beta=0).
  Expect(RunV("aten.smooth_l1_loss.default", {V(x), V(y), Value::Int(0)}),
         {2, 3}, DType::kFloat32,
         {0.5, 2.5, 0.019999997690320015, 2.5, 0.320000022649765,
          0.7999999523162842},
         1e-6, true);
  Expect(RunV("aten.smooth_l1_loss.default",
              {V(x), V(y), Value::Int(1), Value::Float(0.5)}),
         {}, DType::kFloat32, {1.3149999380111694}, 1e-6, true);
  Expect(RunV("aten.smooth_l1_loss.default",
              {V(x), V(y), Value::Int(2), Value::Float(0)}),
         {}, DType::kFloat32, {9.299999237060547}, 1e-6, true);
  Tensor t = *y.AsStrided({2, 3}, {0, 1}, 0);
  // torch: binary_cross_entropy_with_logits(x, y.expand(2, 3), None, None,
  // 0); with weight [1, 2, 3], pos_weight [2, 1, .5], mean.
  Expect(RunV("aten.binary_cross_entropy_with_logits.default",
              {V(x), V(t), Value::None(), Value::None(), Value::Int(0)}),
         {2, 3}, DType::kFloat32,
         {1.3132617473602295, 2.1269280910491943, 0.8240770101547241,
          3.0485873222351074, 0.5981388688087463, 0.6132617592811584},
         1e-6, true);
  Expect(RunV("aten.binary_cross_entropy_with_logits.default",
              {V(x), V(t), V(T({3}, {1, 2, 3})), V(T({3}, {2, 1, 0.5})),
               Value::Int(1)}),
         {}, DType::kFloat32, {2.219949722290039}, 1e-6, true);
  // torch's messages: a target that does not have the result's shape; a
  // negative beta.
  EXPECT_THAT(RunError("aten.binary_cross_entropy_with_logits.default",
                       {V(x), V(T({3}, {1, 1, 1})), Value::None(),
                        Value::None(), Value::Int(1)}),
              HasSubstr("output with shape [3] doesn't match the broadcast "
                        "shape [2, 3]"));
  EXPECT_THAT(RunError("aten.smooth_l1_loss.default",
                       {V(x), V(y), Value::Int(1), Value::Float(-1)}),
              HasSubstr("smooth_l1_loss does not support negative values for "
                        "beta."));
}

}  // namespace
}  // namespace lathe::ir
