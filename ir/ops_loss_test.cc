// The loss ops (ops_loss.cc) against values computed by PyTorch and
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
