// The decompose pass's rules for the backward ops of elementwise and
// row-wise forwards (decompose_pointwise_backward.h), each run on the
// reference interpreter before and after the pass (decompose_testing.h),
// in every float dtype, with NaN, infinities and -0.0 where the rule
// branches; the errors PyTorch raises for what they refuse.

#include "passes/decompose_pointwise_backward.h"

#include <string>
#include <utility>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/decompose.h"
#include "passes/decompose_testing.h"
#include "passes/pass_testing.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// Every activation's backward, with the scalar arguments AOTAutograd's
// graphs pass (relu6's hardtanh, selu's and celu's elu), against the
// reference kernels; NaN, infinities and -0.0 among the inputs.
TEST(DecomposeDifferentialTest, ActivationBackwards) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(R"IR(def forward(self, g: "$[4, 7]", x: "$[4, 7]", y: "$[7]"):
    a = torch.ops.aten.gelu_backward.default(g, x)
    b = torch.ops.aten.gelu_backward.default(g, x, approximate = 'tanh')
    c = torch.ops.aten.silu_backward.default(g, x)
    d = torch.ops.aten.threshold_backward.default(g, x, 0)
    e = torch.ops.aten.sigmoid_backward.default(g, y)
    f = torch.ops.aten.tanh_backward.default(g, x)
    h = torch.ops.aten.hardtanh_backward.default(g, x, 0.0, 6.0)
    i = torch.ops.aten.leaky_relu_backward.default(g, x, 0.2, False)
    j = torch.ops.aten.elu_backward.default(g, 1.6732632423543772, 1.0507009873554805, 1, False, x)
    k = torch.ops.aten.elu_backward.default(g, 0.5, 1, 2.0, True, x)
    l = torch.ops.aten.softplus_backward.default(g, x, 2.0, 3.0)
    m = torch.ops.aten.hardswish_backward.default(g, x)
    n = torch.ops.aten.hardsigmoid_backward.default(g, x)
    o = torch.ops.aten.mish_backward.default(g, x)
    return (a, b, c, d, e, f, h, i, j, k, l, m, n, o)
)IR",
                  dtype),
        "_backward", /*specials=*/true);
  }
}

// A gradient laid out otherwise than the input (transposed): each result
// is laid out as TensorIterator lays out its operands, in PyTorch's order
// (threshold and leaky_relu put self first).
TEST(DecomposeDifferentialTest, ActivationBackwardsOfTransposedGradients) {
  ExpectSameResults(R"IR(def forward(self, gt: "f32[6, 4]", x: "f32[4, 6]"):
    g = torch.ops.aten.t.default(gt)
    a = torch.ops.aten.threshold_backward.default(g, x, 0)
    b = torch.ops.aten.silu_backward.default(g, x)
    c = torch.ops.aten.leaky_relu_backward.default(g, x, 0.01, False)
    d = torch.ops.aten.gelu_backward.default(g, x)
    return (a, b, c, d)
)IR",
                    "_backward");
}

// leaky_relu's and elu's in-place forms with a negative slope are
// PyTorch's error when the graph's shapes are propagated (their meta
// functions raise it), before any rule runs.
TEST(DecomposeTest, InPlaceActivationBackwardsWithANegativeSlopeAreErrors) {
  EXPECT_THAT(
      RunPassAndFileCheck<Decompose>(
          R"IR(def forward(self, g: "f32[4]", x: "f32[4]"):
    a = torch.ops.aten.elu_backward.default(g, -1.0, 1, 1, True, x)
    return (a,)
)IR",
          "CHECK: elu"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("node 'a': aten.elu_backward.default: In-place elu "
                         "backward calculation is triggered with a negative "
                         "slope which is not supported")));
  EXPECT_THAT(RunPassAndFileCheck<Decompose>(
                  R"IR(def forward(self, g: "f32[4]", x: "f32[4]"):
    b = torch.ops.aten.leaky_relu_backward.default(g, x, -0.5, True)
    return (b,)
)IR",
                  "CHECK: leaky"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("In-place leakyReLu backward calculation is "
                                 "triggered with a negative slope")));
}

// softmax's backwards along each dim (a transposed gradient too: the
// result is contiguous, as PyTorch's); a half input's float gradient
// (a half-to-float softmax's) gives a half result.
TEST(DecomposeDifferentialTest, SoftmaxBackwards) {
  for (const auto& [dtype, name] :
       {std::pair{"f32", "float32"}, std::pair{"f64", "float64"},
        std::pair{"f16", "float16"}, std::pair{"bf16", "bfloat16"}}) {
    ExpectSameResults(
        absl::StrReplaceAll(
            WithDType(
                R"IR(def forward(self, g: "$[3, 5]", y: "$[3, 5]", gt: "$[5, 3]"):
    a = torch.ops.aten._softmax_backward_data.default(g, y, 1, torch.@)
    b = torch.ops.aten._log_softmax_backward_data.default(g, y, 0, torch.@)
    t = torch.ops.aten.t.default(gt)
    c = torch.ops.aten._softmax_backward_data.default(t, y, -1, torch.@)
    d = torch.ops.aten._log_softmax_backward_data.default(t, y, -1, torch.@)
    return (a, b, c, d)
)IR",
                dtype),
            {{"@", name}}),
        "softmax_backward", /*specials=*/false);
  }
  ExpectSameResults(R"IR(def forward(self, g: "f32[3, 5]", y: "f32[3, 5]"):
    a = torch.ops.aten._softmax_backward_data.default(g, y, 1, torch.float16)
    return (a,)
)IR",
                    "softmax_backward");
}

// The pointwise losses' backwards, each reduction, every float dtype.
TEST(DecomposeDifferentialTest, LossBackwards) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, g: "$[]", gn: "$[4, 5]", x: "$[4, 5]", t: "$[4, 5]", w: "$[5]"):
    a = torch.ops.aten.mse_loss_backward.default(g, x, t, 1)
    b = torch.ops.aten.mse_loss_backward.default(gn, x, t, 0)
    c = torch.ops.aten.smooth_l1_loss_backward.default(g, x, t, 1, 0.5)
    d = torch.ops.aten.smooth_l1_loss_backward.default(g, x, t, 2, 0.0)
    e = torch.ops.aten.huber_loss_backward.default(gn, x, t, 0, 0.7)
    f = torch.ops.aten.huber_loss_backward.default(g, x, t, 1, 1.5)
    sx = torch.ops.aten.sigmoid.default(x)
    st = torch.ops.aten.sigmoid.default(t)
    h = torch.ops.aten.binary_cross_entropy_backward.default(g, sx, st, None, 1)
    i = torch.ops.aten.binary_cross_entropy_backward.default(gn, sx, st, w, 0)
    return (a, b, c, d, e, f, h, i)
)IR",
            dtype),
        "loss_backward");
  }
}

// nll_loss_backward: 1-d and 2-d inputs, every reduction, a weight, an
// ignored class.
TEST(DecomposeDifferentialTest, NllLossBackward) {
  ExpectSameResults(
      R"IR(def forward(self, g: "f32[]", gn: "f32[6]", x: "f32[6, 5]", x1: "f32[5]", w: "f32[5]"):
    t = torch.ops.aten.arange.default(6, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    tt = torch.ops.aten.remainder.Scalar(t, 5)
    tw = torch.ops.aten.sum.default(w)
    a = torch.ops.aten.nll_loss_backward.default(g, x, tt, None, 1, -100, tw)
    b = torch.ops.aten.nll_loss_backward.default(gn, x, tt, w, 0, 3, tw)
    c = torch.ops.aten.nll_loss_backward.default(g, x, tt, w, 2, 1, tw)
    one = torch.ops.aten.select.int(tt, 0, 4)
    d = torch.ops.aten.nll_loss_backward.default(g, x1, one, w, 1, -100, tw)
    return (a, b, c, d)
)IR",
      "nll_loss_backward");
}

// nll_loss2d_backward, every reduction, a weight and an ignored class.
TEST(DecomposeDifferentialTest, NllLoss2dBackward) {
  ExpectSameResults(
      R"IR(def forward(self, g: "f32[]", gn: "f32[2, 3, 4]", x: "f32[2, 5, 3, 4]", w: "f32[5]"):
    i = torch.ops.aten.arange.default(24, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    m = torch.ops.aten.remainder.Scalar(i, 5)
    t = torch.ops.aten.view.default(m, [2, 3, 4])
    tw = torch.ops.aten.sum.default(w)
    a = torch.ops.aten.nll_loss2d_backward.default(g, x, t, None, 1, -100, tw)
    b = torch.ops.aten.nll_loss2d_backward.default(gn, x, t, w, 0, 2, tw)
    c = torch.ops.aten.nll_loss2d_backward.default(g, x, t, w, 2, 4, tw)
    return (a, b, c)
)IR",
      "nll_loss2d_backward");
}

}  // namespace
}  // namespace lathe::passes
