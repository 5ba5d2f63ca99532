// The convolution ops (ops_conv.cc): convolution, its backward and col2im
// against values computed by PyTorch and captured as literals (generated once
// with PyTorch 2.15 from the same inputs: Seq() reproduces them), plus their
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
#include "ir/ops_nn_testing.h"
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

}  // namespace
}  // namespace lathe::ir
