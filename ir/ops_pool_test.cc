// The pooling ops (ops_pool.cc): max, average and adaptive pooling and their
// backwards against values computed by PyTorch and
// captured as literals (generated once with PyTorch 2.15 from the same
// inputs: Seq() reproduces them), plus their argument errors. Every call goes
// through RunOp, which also checks that the meta function predicts the
// kernel's dtype, sizes and strides.

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

}  // namespace
}  // namespace lathe::ir
