// The backward ops' reference kernels (ops_backward.cc, and the nn ones in
// ops_nn.cc): hand-derived values, the meta functions' layouts (RunOp
// checks each kernel's result against its meta), and every error they
// raise. Their values against PyTorch's own are the torch corpus's
// training cases (tools/torch_corpus, train_*).

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_testing.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Value F(double v) { return Value::Float(v); }
Value I(int64_t v) { return Value::Int(v); }
Value B(bool v) { return Value::Bool(v); }

// threshold (relu's) and hardtanh pass the gradient inside and 0 outside,
// NaN passing; sigmoid's and tanh's use the forward's result.
TEST(BackwardOpsTest, ActivationsByHand) {
  const double nan = std::nan("");
  Tensor g = T({4}, {1, 2, 3, 4});
  Tensor x = T({4}, {-1, 0, 0.5, nan});
  EXPECT_THAT(
      Elements(RunT("aten.threshold_backward.default", {V(g), V(x), I(0)})),
      ElementsAre(0, 0, 3, 4));
  EXPECT_THAT(Elements(RunT("aten.hardtanh_backward.default",
                            {V(g), V(x), F(-1), F(1)})),
              ElementsAre(0, 2, 3, 4));
  Tensor y = T({4}, {0.5, 0.25, 0, 1});
  EXPECT_THAT(Elements(RunT("aten.sigmoid_backward.default", {V(g), V(y)})),
              ElementsAre(0.25, 2 * 0.75 * 0.25, 0, 0));
  EXPECT_THAT(Elements(RunT("aten.tanh_backward.default", {V(g), V(y)})),
              ElementsAre(0.75, 2 * 0.9375, 3, 0));
  // elu's negative side through the result (is_result): g * (y + alpha).
  Tensor r = T({2}, {-0.5, 2});
  EXPECT_THAT(
      Elements(RunT("aten.elu_backward.default",
                    {V(T({2}, {2, 2})), F(1), F(1), F(1), B(true), V(r)})),
      ElementsAre(1, 2));
  // leaky_relu with self first: the result takes self's layout.
  // A [3, 2] view of a [2, 3] tensor, transposed (strides [1, 3]).
  Tensor xt =
      T({2, 3}, {1, -1, 1, -1, 1, -1}).AsStrided({3, 2}, {1, 3}, 0).value();
  Tensor gt = T({3, 2}, {1, 1, 1, 1, 1, 1});
  Tensor lr = RunT("aten.leaky_relu_backward.default",
                   {V(gt), V(xt), F(0.5), B(false)});
  EXPECT_THAT(lr.strides(), ElementsAre(1, 3));
}

TEST(BackwardOpsTest, SoftmaxBackwardsByHand) {
  // softmax of [0, 0] is [0.5, 0.5]; g = [1, 3]: y * (g - sum(g * y)) =
  // 0.5 * ([1, 3] - 2) = [-0.5, 0.5].
  Tensor y = T({1, 2}, {0.5, 0.5});
  Tensor g = T({1, 2}, {1, 3});
  EXPECT_THAT(
      Elements(RunT("aten._softmax_backward_data.default",
                    {V(g), V(y), I(1), Value::OfDType(DType::kFloat32)})),
      ElementsAre(-0.5, 0.5));
  // log_softmax: g - exp(y) * sum(g) = [1, 3] - 0.5 * 4.
  Tensor ly = T({1, 2}, {std::log(0.5), std::log(0.5)});
  EXPECT_THAT(
      Elements(RunT("aten._log_softmax_backward_data.default",
                    {V(g), V(ly), I(-1), Value::OfDType(DType::kFloat32)})),
      ElementsAre(-1, 1));
  EXPECT_THAT(RunError("aten._softmax_backward_data.default",
                       {V(g), V(y), I(1), Value::OfDType(DType::kFloat64)}),
              HasSubstr("expected input and grad types to match, or input to "
                        "be at::Half and grad to be at::Float"));
  EXPECT_THAT(RunError("aten._softmax_backward_data.default",
                       {V(g), V(T({1, 3}, {0.2, 0.3, 0.5})), I(1),
                        Value::OfDType(DType::kFloat32)}),
              HasSubstr("grad [1, 2] and output [1, 3] differ in size"));
}

// nll_loss's backward: -weight[t] * g / total_weight at each kept target.
TEST(BackwardOpsTest, NllLossBackwardByHand) {
  Tensor x = T({2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor t = Tensor::Empty({2}, DType::kInt64).value();
  t.data<int64_t>()[0] = 2;
  t.data<int64_t>()[1] = 1;
  Tensor w = T({3}, {1, 2, 4});
  Tensor total = T({}, {6});
  EXPECT_THAT(Elements(RunT(
                  "aten.nll_loss_backward.default",
                  {V(T({}, {3})), V(x), V(t), V(w), I(1), I(-100), V(total)})),
              ElementsAre(0, 0, -2, 0, -1, 0));
  // Ignoring class 1; sum.
  EXPECT_THAT(
      Elements(RunT("aten.nll_loss_backward.default",
                    {V(T({}, {3})), V(x), V(t), V(w), I(2), I(1), V(total)})),
      ElementsAre(0, 0, -12, 0, 0, 0));
  t.data<int64_t>()[1] = 3;
  EXPECT_THAT(
      RunError("aten.nll_loss_backward.default",
               {V(T({}, {3})), V(x), V(t), V(w), I(1), I(-100), V(total)}),
      HasSubstr("Target 3 is out of bounds."));
  EXPECT_THAT(
      RunError("aten.nll_loss_backward.default",
               {V(T({2}, {1, 1})), V(x), V(t), V(w), I(1), I(-100), V(total)}),
      HasSubstr("Expected a single element grad_output tensor"));
  EXPECT_THAT(RunError("aten.nll_loss_backward.default",
                       {V(T({}, {3})), V(x), V(t), V(T({2}, {1, 1})), I(1),
                        I(-100), V(total)}),
              HasSubstr("weight tensor should be defined either for all 3 "
                        "classes or no classes"));
  Tensor t2 = Tensor::Empty({2, 2}, DType::kInt64).value();
  EXPECT_THAT(
      RunError("aten.nll_loss2d_backward.default",
               {V(T({}, {3})), V(T({2, 3, 2, 1}, std::vector<double>(12, 0))),
                V(t2), Value::None(), I(1), I(-100), V(total)}),
      HasSubstr("only batches of spatial inputs and targets supported"));
  Tensor t3 = Tensor::Empty({2, 2, 2}, DType::kInt64).value();
  EXPECT_THAT(RunError("aten.nll_loss2d_forward.default",
                       {V(T({2, 3, 2, 1}, std::vector<double>(12, 0))), V(t3),
                        Value::None(), I(1), I(-100)}),
              HasSubstr("input and target batch or spatial sizes don't "
                        "match: target [2, 2, 2], input [2, 3, 2, 1]"));
}

// The pointwise losses' backwards: mse's 2 * (x - t) * g / numel for the
// mean; smooth_l1's and huber's steps; the reduction must be 0, 1 or 2.
TEST(BackwardOpsTest, LossBackwardsByHand) {
  Tensor x = T({2}, {1, 3});
  Tensor t = T({2}, {0, 0});
  Tensor g = T({}, {1});
  EXPECT_THAT(Elements(RunT("aten.mse_loss_backward.default",
                            {V(g), V(x), V(t), I(1)})),
              ElementsAre(1, 3));
  EXPECT_THAT(Elements(RunT("aten.smooth_l1_loss_backward.default",
                            {V(g), V(x), V(t), I(2), F(2)})),
              ElementsAre(0.5, 1));
  EXPECT_THAT(Elements(RunT("aten.huber_loss_backward.default",
                            {V(g), V(x), V(t), I(2), F(2)})),
              ElementsAre(1, 2));
  EXPECT_THAT(
      RunError("aten.mse_loss_backward.default", {V(g), V(x), V(t), I(3)}),
      HasSubstr("3 is not a valid value for reduction"));
  EXPECT_THAT(RunError("aten.huber_loss.default", {V(x), V(t), I(1), F(0)}),
              HasSubstr("huber_loss does not support non-positive values for "
                        "delta."));
  EXPECT_THAT(
      RunError("aten.binary_cross_entropy.default",
               {V(T({2}, {0.5, 1.5})), V(T({2}, {0, 1})), Value::None(), I(1)}),
      HasSubstr("all elements of input should be between 0 and 1"));
  EXPECT_THAT(
      RunError("aten.binary_cross_entropy.default",
               {V(T({2}, {0.5, 0.5})), V(T({2}, {0, 2})), Value::None(), I(1)}),
      HasSubstr("all elements of target should be between 0 and 1"));
  EXPECT_THAT(RunError("aten.celu.default", {V(x), F(0)}),
              HasSubstr("ZeroDivisionError: alpha cannot be 0 for CELU"));
}

// A padding's backward sums each gradient element into the input element
// it was read from: reflection of [a, b, c] by 1 on the left reads b at
// position 0; replication by 2 on the right reads c twice more.
TEST(BackwardOpsTest, PadBackwardsByHand) {
  Tensor x = T({1, 3}, {0, 0, 0});
  EXPECT_THAT(Elements(RunT("aten.reflection_pad1d_backward.default",
                            {V(T({1, 4}, {1, 2, 3, 4})), V(x), Ints({1, 0})})),
              ElementsAre(2, 1 + 3, 4));
  EXPECT_THAT(
      Elements(RunT("aten.replication_pad1d_backward.default",
                    {V(T({1, 5}, {1, 2, 3, 4, 5})), V(x), Ints({0, 2})})),
      ElementsAre(1, 2, 3 + 4 + 5));
  EXPECT_THAT(RunError("aten.replication_pad1d_backward.default",
                       {V(T({1, 4}, {1, 2, 3, 4})), V(x), Ints({0, 2})}),
              HasSubstr("grad_output of size [1, 4] is not the padded size "
                        "[1, 5]"));
}

// Batch norm's backward in evaluation: dy * weight / sqrt(var + eps), the
// weight's gradient dot(dy, (x - mean)) / sqrt(var + eps).
TEST(BackwardOpsTest, BatchNormBackwardByHand) {
  Tensor x = T({2, 1}, {1, 3});
  Tensor dy = T({2, 1}, {1, 1});
  Tensor w = T({1}, {2});
  Tensor mean = T({1}, {1});
  Tensor var = T({1}, {4});
  Value out =
      RunOp("aten.native_batch_norm_backward.default",
            {V(dy), V(x), V(w), V(mean), V(var), Value::None(), Value::None(),
             B(false), F(0), Value::List({B(true), B(true), B(true)})})
          .value();
  EXPECT_THAT(Elements(out.list[0].tensor), ElementsAre(1, 1));
  EXPECT_THAT(Elements(out.list[1].tensor), ElementsAre(1));
  EXPECT_THAT(Elements(out.list[2].tensor), ElementsAre(2));
  EXPECT_THAT(RunError("aten.native_batch_norm_backward.default",
                       {V(dy), V(x), V(w), Value::None(), Value::None(),
                        Value::None(), Value::None(), B(false), F(0),
                        Value::List({B(true), B(true), B(true)})}),
              HasSubstr("running_mean and running_var must be defined in "
                        "evaluation mode"));
}

// The flash attention backward refuses dropout and mismatched operands.
TEST(BackwardOpsTest, FlashAttentionBackwardErrors) {
  Tensor q = T({1, 1, 2, 2}, {1, 0, 0, 1});
  Tensor lse = T({1, 1, 2}, {0, 0});
  EXPECT_THAT(
      RunError("aten._scaled_dot_product_flash_attention_for_cpu_backward."
               "default",
               {V(q), V(q), V(q), V(q), V(q), V(lse), F(0.1), B(false)}),
      HasSubstr("dropout_p must be 0"));
  Tensor k = T({1, 1, 2, 3}, {1, 0, 0, 1, 0, 0});
  EXPECT_THAT(
      RunError("aten._scaled_dot_product_flash_attention_for_cpu_backward."
               "default",
               {V(q), V(q), V(k), V(k), V(q), V(lse), F(0), B(false)}),
      HasSubstr("to agree in batch, heads and head size"));
}

// The flash attention backward of fully masked rows (their logsumexp 0, as
// the forward gives it): their gradients are 0 and the other rows' are
// untouched, as PyTorch's kernel (torch 2.15 values; lathe gave NaN for
// every key and value when the forward's logsumexp was -inf).
TEST(BackwardOpsTest, FlashAttentionBackwardOfFullyMaskedRows) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor q = T({1, 1, 4, 2}, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8});
  Tensor k = T({1, 1, 3, 2}, {0.3, -0.1, 0.2, 0.5, -0.4, 0.6});
  Tensor v = T({1, 1, 3, 2}, {1, 2, -1, 0.5, 3, -2});
  Tensor g = T({1, 1, 4, 2}, {1, -0.5, 0.25, 2, 0.5, 0.5, -1, 1});
  Tensor m =
      T({4, 3}, {0, -1, 2, -inf, -inf, -inf, 0, -inf, 1, -inf, -inf, -inf});
  ASSERT_OK_AND_ASSIGN(
      Value fw,
      RunOp("aten._scaled_dot_product_flash_attention_for_cpu.default",
            {V(q), V(k), V(v)}, {{"attn_mask", V(m)}}));
  ASSERT_EQ(fw.list.size(), 2u);
  ASSERT_OK_AND_ASSIGN(
      Value bw,
      RunOp("aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
            {V(g), V(q), V(k), V(v), fw.list[0], fw.list[1], F(0), B(false)},
            {{"attn_mask", V(m)}}));
  ASSERT_EQ(bw.list.size(), 3u);
  const std::vector<std::vector<double>> torch = {
      {-0.26464682817459106, 0.1942816823720932, 0, 0, 0.11753995716571808,
       -0.11753995716571808, 0, 0},
      {0.05821302905678749, -0.1522367000579834, -0.014073033817112446,
       -0.02814606763422489, -0.044139981269836426, 0.18038278818130493},
      {0.3031744658946991, 0.13944822549819946, 0.043402303010225296,
       -0.021701151505112648, 1.1534233093261719, -0.11774712800979614}};
  for (int i = 0; i < 3; ++i) {
    std::vector<double> got = Elements(bw.list[i].tensor);
    ASSERT_EQ(got.size(), torch[i].size()) << "gradient " << i;
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], torch[i][j], 1e-5) << "gradient " << i << " " << j;
    }
  }
}

// _embedding_bag_backward over 5 rows of 2: indices [1, 2, 1, 4, 3] in
// bags [0, 3) and [3, 5), the bags' gradients [1, 2] and [10, 20].
TEST(BackwardOpsTest, EmbeddingBagBackwardByHand) {
  const std::string op = "aten._embedding_bag_backward.default";
  Tensor g = T({2, 2}, {1, 2, 10, 20});
  Tensor ix = T({5}, {1, 2, 1, 4, 3}, DType::kInt64);
  Tensor off = T({2}, {0, 3}, DType::kInt64);
  Tensor none = T({0}, {}, DType::kInt64);  // the fast sum path's offset2bag
  Tensor o2b = T({5}, {0, 0, 0, 1, 1}, DType::kInt64);
  Tensor zeros = T({2}, {0, 0}, DType::kInt64);
  auto run = [&](const Tensor& grad, const Tensor& offsets, const Tensor& bags,
                 const Tensor& bag_size, const Tensor& max_indices, bool freq,
                 int64_t mode, Value psw, int64_t padding_idx) {
    return std::vector<Value>{
        V(grad), V(ix),   V(offsets), V(bags),  V(bag_size),    V(max_indices),
        I(5),    B(freq), I(mode),    B(false), std::move(psw), I(padding_idx)};
  };
  // sum, offset2bag rebuilt from the offsets (with include_last_offset's
  // final offset too).
  for (const Tensor& offsets : {off, T({3}, {0, 3, 5}, DType::kInt64)}) {
    EXPECT_THAT(Elements(RunT(op, run(g, offsets, none, zeros, zeros, false, 0,
                                      Value::None(), -1))),
                ElementsAre(0, 0, 2, 4, 1, 2, 10, 20, 10, 20));
  }
  // mean: each bag's gradient divided by its size.
  std::vector<double> mean =
      Elements(RunT(op, run(g, off, o2b, T({2}, {3, 2}, DType::kInt64), zeros,
                            false, 1, Value::None(), -1)));
  std::vector<double> want = {0,       0, 2.0 / 3, 4.0 / 3, 1.0 / 3,
                              2.0 / 3, 5, 10,      5,       10};
  ASSERT_EQ(mean.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(mean[k], want[k], 1e-6);
  // sum with per_sample_weights, scale_grad_by_freq (row 1 is used twice)
  // and padding_idx 2.
  EXPECT_THAT(Elements(RunT(op, run(g, off, o2b, zeros, zeros, true, 0,
                                    V(T({5}, {1, 2, 3, 4, 5})), 2))),
              ElementsAre(0, 0, 2, 4, 0, 0, 50, 100, 40, 80));
  // max: each bag's gradient to the rows that held its maxima; the empty
  // middle bag gives nothing (its max_indices are 0).
  Tensor g3 = T({3, 2}, {1, 2, 100, 200, 10, 20});
  EXPECT_THAT(
      Elements(RunT(op, run(g3, T({3}, {0, 3, 3}, DType::kInt64), o2b,
                            T({3}, {3, 0, 2}, DType::kInt64),
                            T({3, 2}, {1, 2, 0, 0, 4, 3}, DType::kInt64), false,
                            2, Value::None(), -1))),
      ElementsAre(0, 0, 1, 0, 0, 2, 0, 20, 10, 0));
  // Errors: a sparse gradient, an index past the gradient's bags (PyTorch
  // reads past grad), an index past num_weights, per_sample_weights
  // outside sum mode.
  std::vector<Value> args =
      run(g, off, none, zeros, zeros, false, 0, Value::None(), -1);
  args[9] = B(true);
  EXPECT_THAT(RunError(op, args), HasSubstr("lathe has no sparse tensors"));
  EXPECT_THAT(RunError(op, run(g, T({3}, {0, 3, 4}, DType::kInt64), none, zeros,
                               zeros, false, 0, Value::None(), -1)),
              HasSubstr("index 4 is in bag 2, but the gradient has 2 bags"));
  args = run(g, off, o2b, zeros, zeros, false, 0, Value::None(), -1);
  args[6] = I(4);
  EXPECT_THAT(RunError(op, args),
              HasSubstr("index 4 is out of bounds for num_weights 4"));
  EXPECT_THAT(RunError(op, run(g, off, o2b, zeros, zeros, false, 1,
                               V(T({5}, {1, 1, 1, 1, 1})), -1)),
              HasSubstr("per_sample_weights only supported for mode='sum'"));
  EXPECT_THAT(RunError(op, run(g, T({2}, {0, 6}, DType::kInt64), none, zeros,
                               zeros, false, 0, Value::None(), -1)),
              HasSubstr("offsets[1] is 6, outside [0, 5]"));
  EXPECT_THAT(RunError(op, run(g, off, T({2}, {0, 1}, DType::kInt64), zeros,
                               zeros, false, 0, Value::None(), -1)),
              HasSubstr("expected offset2bag to have 5 elements"));
  EXPECT_THAT(RunError(op, run(g, off, o2b, zeros, zeros, false, 0,
                               V(T({2}, {1, 1})), -1)),
              HasSubstr("expected per_sample_weights to have 5 elements"));
  EXPECT_THAT(RunError(op, run(g, T({2}, {0, 3}), none, zeros, zeros, false, 0,
                               Value::None(), -1)),
              HasSubstr("expected offsets to be a 1-d int64 or int32 tensor"));
  EXPECT_THAT(RunError(op, run(g, off, o2b, T({1}, {7}, DType::kInt64), zeros,
                               false, 1, Value::None(), -1)),
              HasSubstr("expected bag_size to have 2 elements"));
  // Sum never reads bag_size (PyTorch's kernel does not); mean does not
  // divide by a size of 0, as PyTorch.
  EXPECT_THAT(Elements(RunT(op, run(g, off, o2b, T({1}, {7}, DType::kInt64),
                                    zeros, false, 0, Value::None(), -1))),
              ElementsAre(0, 0, 2, 4, 1, 2, 10, 20, 10, 20));
  EXPECT_THAT(Elements(RunT(op, run(g, off, o2b, T({2}, {0, 2}, DType::kInt64),
                                    zeros, false, 1, Value::None(), -1))),
              ElementsAre(0, 0, 2, 4, 1, 2, 5, 10, 5, 10));
}

// _embedding_bag_per_sample_weights_backward: each index's gradient is its
// bag's gradient row dotted with its weight row [i, 10 i].
TEST(BackwardOpsTest, EmbeddingBagPerSampleWeightsBackwardByHand) {
  const std::string op =
      "aten._embedding_bag_per_sample_weights_backward.default";
  Tensor g = T({2, 2}, {1, 2, 10, 20});
  Tensor w = T({5, 2}, {0, 0, 1, 10, 2, 20, 3, 30, 4, 40});
  Tensor ix = T({5}, {1, 2, 1, 4, 3}, DType::kInt64);
  Tensor off = T({2}, {0, 3}, DType::kInt64);
  Tensor none = T({0}, {}, DType::kInt64);
  EXPECT_THAT(
      Elements(RunT(op, {V(g), V(w), V(ix), V(off), V(none), I(0), I(-1)})),
      ElementsAre(21, 42, 21, 840, 630));
  EXPECT_THAT(Elements(RunT(
                  op, {V(g), V(w), V(ix), V(off),
                       V(T({5}, {0, 0, 0, 1, 1}, DType::kInt64)), I(0), I(2)})),
              ElementsAre(21, 0, 21, 840, 630));
  EXPECT_THAT(RunError(op, {V(g), V(w), V(ix), V(off), V(none), I(1), I(-1)}),
              HasSubstr("per_sample_weights only supported for mode='sum'"));
}

// grid_sampler_2d_backward on a 1x1x2x2 input sampled at its centre
// (align_corners: (0, 0) is between all four pixels): each pixel gets a
// quarter of the gradient, and the grid's gradient is the input's slope
// times (size - 1) / 2. A masked-out gradient is None; a gradient of the
// wrong shape is refused.
TEST(BackwardOpsTest, GridSampler2dBackwardByHand) {
  const std::string op = "aten.grid_sampler_2d_backward.default";
  Tensor x = T({1, 1, 2, 2}, {0, 1, 2, 3});  // slope 1 along x, 2 along y
  Tensor g = T({1, 1, 1, 2}, {0, 0});
  Tensor go = T({1, 1, 1, 1}, {4});
  auto mask = [](bool a, bool b) { return Value::List({B(a), B(b)}); };
  Value r = *RunOp(op, {V(go), V(x), V(g), I(0), I(0), B(true), mask(1, 1)});
  ASSERT_EQ(r.list.size(), 2u);
  EXPECT_THAT(Elements(r.list[0].tensor), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(Elements(r.list[1].tensor), ElementsAre(2, 4));
  r = *RunOp(op, {V(go), V(x), V(g), I(1), I(0), B(true), mask(0, 1)});
  EXPECT_TRUE(r.list[0].is_none());
  EXPECT_THAT(Elements(r.list[1].tensor), ElementsAre(0, 0));  // nearest
  EXPECT_THAT(RunError(op, {V(T({1, 1, 2, 1}, {1, 1})), V(x), V(g), I(0), I(0),
                            B(true), mask(1, 1)}),
              HasSubstr("expected grad_output of size [1, 1, 1, 1] and dtype "
                        "Float, got size [1, 1, 2, 1]"));
  EXPECT_THAT(
      RunError(op, {V(go), V(x), V(g), I(3), I(0), B(true), mask(1, 1)}),
      HasSubstr("expected interpolation_mode to be 0 (bilinear)"));
}

// Grid points past int64 (and infinite ones): with reflection padding their
// reflection count's parity was an undefined conversion, with zeros padding
// their corners were (the sanitizer pass checks both). Zeros padding: such
// a point is outside the input and gives nothing; reflection, and bicubic
// with border padding: the input's gradient still sums to the output's,
// each point landing in the input.
TEST(BackwardOpsTest, GridSampler2dBackwardOfPointsPastInt64) {
  const std::string op = "aten.grid_sampler_2d_backward.default";
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = T({1, 1, 2, 2}, {0, 1, 2, 3});
  Tensor g = T({1, 1, 3, 2}, {1e30, 0, -1e30, 0.5, inf, 0});
  Tensor go = T({1, 1, 1, 3}, {4, 4, 4});
  auto mask = Value::List({B(true), B(true)});
  for (bool align : {false, true}) {
    Value r = *RunOp(op, {V(go), V(x), V(g), I(0), I(0), B(align), mask});
    EXPECT_THAT(Elements(r.list[0].tensor), ElementsAre(0, 0, 0, 0));
    r = *RunOp(op, {V(go), V(x), V(g), I(0), I(2), B(align), mask});
    double sum = 0;
    for (double v : Elements(r.list[0].tensor)) sum += v;
    // The two huge points land in the input (4 each); the infinite one
    // gives nothing.
    EXPECT_DOUBLE_EQ(sum, 8) << align;
    // Bicubic pads each tap: with border padding a huge point's taps are
    // the edge's, which take its whole gradient.
    r = *RunOp(op, {V(go), V(x), V(g), I(2), I(1), B(align), mask});
    sum = 0;
    for (double v : Elements(r.list[0].tensor)) sum += v;
    EXPECT_NEAR(sum, 8, 1e-9) << align;
  }
}

}  // namespace
}  // namespace lathe::ir
