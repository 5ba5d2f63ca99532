#include "passes/decompose.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/decompose_testing.h"
#include "passes/pass.h"
#include "passes/pass_testing.h"
#include "passes/pipeline.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

TEST(DecomposeTest, TargetsAreListedOnce) {
  EXPECT_EQ(
      DecomposedTargets(),
      (std::vector<std::string>{
          "aten._adaptive_avg_pool2d_backward.default",
          "aten._embedding_bag.default",
          "aten._embedding_bag_backward.default",
          "aten._embedding_bag_forward_only.default",
          "aten._embedding_bag_per_sample_weights_backward.default",
          "aten._log_softmax.default",
          "aten._log_softmax_backward_data.default",
          "aten._native_batch_norm_legit.default",
          "aten._native_batch_norm_legit.no_stats",
          "aten._native_batch_norm_legit_functional.default",
          "aten._native_batch_norm_legit_no_training.default",
          "aten._pdist_forward.default",
          "aten._scaled_dot_product_cudnn_attention.default",
          "aten._scaled_dot_product_cudnn_attention_backward.default",
          "aten._scaled_dot_product_efficient_attention.default",
          "aten._scaled_dot_product_efficient_attention_backward.default",
          "aten._scaled_dot_product_flash_attention_for_cpu.default",
          "aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
          "aten._softmax.default",
          "aten._softmax_backward_data.default",
          "aten.addcdiv.default",
          "aten.addcdiv_.default",
          "aten.addcmul.default",
          "aten.addcmul_.default",
          "aten.avg_pool2d_backward.default",
          "aten.avg_pool3d_backward.default",
          "aten.binary_cross_entropy.default",
          "aten.binary_cross_entropy_backward.default",
          "aten.celu.default",
          "aten.celu_.default",
          "aten.clamp.Tensor",
          "aten.clamp.default",
          "aten.clamp_.Tensor",
          "aten.clamp_.default",
          "aten.clamp_max.default",
          "aten.clamp_max_.default",
          "aten.clamp_min.default",
          "aten.clamp_min_.default",
          "aten.col2im.default",
          "aten.convolution_backward.default",
          "aten.elu_backward.default",
          "aten.embedding_dense_backward.default",
          "aten.gelu.default",
          "aten.gelu_.default",
          "aten.gelu_backward.default",
          "aten.grid_sampler_2d.default",
          "aten.grid_sampler_2d_backward.default",
          "aten.hardsigmoid_backward.default",
          "aten.hardswish.default",
          "aten.hardswish_.default",
          "aten.hardswish_backward.default",
          "aten.hardtanh_backward.default",
          "aten.huber_loss_backward.default",
          "aten.leaky_relu_backward.default",
          "aten.lerp.Scalar",
          "aten.lerp.Tensor",
          "aten.lerp_.Scalar",
          "aten.lerp_.Tensor",
          "aten.logit.default",
          "aten.logit_.default",
          "aten.logsumexp.default",
          "aten.max_pool2d_with_indices_backward.default",
          "aten.max_pool3d_with_indices_backward.default",
          "aten.mean.default",
          "aten.mean.dim",
          "aten.mish.default",
          "aten.mish_.default",
          "aten.mish_backward.default",
          "aten.mse_loss_backward.default",
          "aten.native_batch_norm.default",
          "aten.native_batch_norm_backward.default",
          "aten.native_group_norm.default",
          "aten.native_group_norm_backward.default",
          "aten.native_layer_norm.default",
          "aten.native_layer_norm_backward.default",
          "aten.nll_loss2d_backward.default",
          "aten.nll_loss2d_forward.default",
          "aten.nll_loss_backward.default",
          "aten.reflection_pad1d_backward.default",
          "aten.reflection_pad2d_backward.default",
          "aten.reflection_pad3d_backward.default",
          "aten.replication_pad1d_backward.default",
          "aten.replication_pad2d_backward.default",
          "aten.replication_pad3d_backward.default",
          "aten.sgn.default",
          "aten.sgn_.default",
          "aten.sigmoid_backward.default",
          "aten.silu.default",
          "aten.silu_.default",
          "aten.silu_backward.default",
          "aten.smooth_l1_loss_backward.default",
          "aten.softplus_backward.default",
          "aten.std.correction",
          "aten.std.default",
          "aten.std.dim",
          "aten.tanh_backward.default",
          "aten.threshold_backward.default",
          "aten.upsample_bilinear2d.default",
          "aten.upsample_bilinear2d.vec",
          "aten.var.correction",
          "aten.var.dim",
      }));
}

// float16 computes in float32 and converts back, as PyTorch's
// decomposition does.
TEST(DecomposeTest, SoftmaxUpcastsHalf) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f16[3, 5]"):
    s = torch.ops.aten._softmax.default(x, -1, False)
    return (s,)
)IR",
                                     R"IR(
CHECK: [[X:[a-z_0-9]+]]: "f32[3, 5][5, 1]cpu" = torch.ops.prims.convert_element_type.default(x, torch.float32)
CHECK: [[MAX:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = torch.ops.aten.amax.default([[X]], [-1], True)
CHECK: [[SUB:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor([[X]], [[MAX]])
CHECK: [[LOW:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.lt.Scalar([[SUB]], -87.5)
CHECK: [[ZERO:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.scalar_tensor.default(0.0,
CHECK: [[ZEROED:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.copysign.Tensor([[ZERO]], [[SUB]])
CHECK: [[ARG:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.where.self([[LOW]], [[ZEROED]], [[SUB]])
CHECK: [[E:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.exp.default([[ARG]])
CHECK: [[TINY:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.lt.Scalar([[SUB]], -87.33654022216797)
CHECK: [[EXP:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.where.ScalarSelf([[TINY]], 0.0, [[E]])
CHECK: [[SUM:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList([[EXP]], [-1], True)
CHECK: [[DIV:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.div.Tensor([[EXP]], [[SUM]])
CHECK: [[OUT:[a-z_0-9]+]]: "f16[3, 5][5, 1]cpu" = torch.ops.prims.convert_element_type.default([[DIV]], torch.float16)
CHECK-NOT: _softmax
CHECK: return ([[OUT]],)
)IR"));
}

// In f64, where exp underflows only below -708, the softmax's exp is exp.
TEST(DecomposeTest, SoftmaxInDoubleTakesPlainExp) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f64[3, 5]"):
    s = torch.ops.aten._softmax.default(x, -1, False)
    return (s,)
)IR",
                                     R"IR(
CHECK: [[SUB:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor(x,
CHECK-NEXT: [[EXP:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.exp.default([[SUB]])
CHECK-NOT: lt.Scalar
)IR"));
}

TEST(DecomposeTest, LogSoftmax) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f32[3, 5]"):
    s = torch.ops.aten._log_softmax.default(x, 1, False)
    return (s,)
)IR",
                                     R"IR(
CHECK: [[MAX:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.amax.default(x, [1], True)
CHECK: [[SUB:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor(x, [[MAX]])
CHECK: [[LOW:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.lt.Scalar([[SUB]], -87.5)
CHECK: [[ZERO:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.scalar_tensor.default(0.0,
CHECK: [[ZEROED:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.copysign.Tensor([[ZERO]], [[SUB]])
CHECK: [[ARG:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.where.self([[LOW]], [[ZEROED]], [[SUB]])
CHECK: [[E:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.exp.default([[ARG]])
CHECK: [[TINY:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.lt.Scalar([[SUB]], -87.33654022216797)
CHECK: [[EXP:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.where.ScalarSelf([[TINY]], 0.0, [[E]])
CHECK: [[SUM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sum.dim_IntList([[EXP]], [1], True)
CHECK: [[LOG:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.log.default([[SUM]])
CHECK: [[OUT:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor([[SUB]], [[LOG]])
CHECK: return ([[OUT]],)
)IR"));
}

// The getitem users of native_layer_norm read the new values.
// A later node's meta can teach the env that s1 is 5 (broadcasting x with
// y); the earlier _log_softmax's meta still says s1. The decomposition's
// sizes (5) and the op's (s1) are the same once the env's replacements are
// applied, so the op is decomposed rather than kept.
TEST(DecomposeTest, SizesAreComparedWithWhatTheEnvLearnedLater) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(# lathe: hint s0 3
# lathe: hint s1 5
def forward(self, x: "f32[s0, s1]", y: "f32[s0, 5]"):
    ls = torch.ops.aten._log_softmax.default(x, 1, False)
    add = torch.ops.aten.add.Tensor(x, y)
    return (ls, add)
)IR",
                                           R"IR(
CHECK: torch.ops.aten.amax.default(x, [1], True)
CHECK-NOT: _log_softmax
CHECK: return
)IR"));
}

// A channels-last input's max_pool backward becomes a scatter_add into a
// contiguous buffer, and the add after it (laid out by its first operand)
// with it; the graph's output is copied back into the layout PyTorch gave
// it. An output that views an input is left as it is (a copy would cut the
// alias).
TEST(DecomposeTest, OutputsKeepTheirLayouts) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3, 4, 6][72, 1, 18, 3]", g: "f32[2, 3, 2, 3][18, 1, 9, 3]", ix: "i64[2, 3, 2, 3][18, 1, 9, 3]", y: "f32[2, 3, 4, 6]"):
    bw = torch.ops.aten.max_pool2d_with_indices_backward.default(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, ix)
    add = torch.ops.aten.add.Tensor(bw, y)
    t = torch.ops.aten.permute.default(y, [0, 2, 3, 1])
    return (add, t)
)IR",
      R"IR(
CHECK: scatter_add
CHECK: [[ADD:[a-z_0-9]+]]: "f32[2, 3, 4, 6][72, 24, 6, 1]cpu" = torch.ops.aten.add.Tensor
CHECK: [[P:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.permute.default([[ADD]], [0, 2, 3, 1])
CHECK: [[C:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.clone.default([[P]], memory_format = torch.contiguous_format)
CHECK: [[OUT:[a-z_0-9]+]]: "f32[2, 3, 4, 6][72, 1, 18, 3]cpu" = torch.ops.aten.permute.default([[C]], [0, 3, 1, 2])
CHECK: return ([[OUT]], t)
)IR"));
}

// An output returned twice is copied once, into both places; one that
// shares its storage with another output (a view of it) is left alone.
TEST(DecomposeTest, OutputsKeepTheirLayoutsOnceAndNotWhereAliased) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3, 4, 6][72, 1, 18, 3]", g: "f32[2, 3, 2, 3][18, 1, 9, 3]", ix: "i64[2, 3, 2, 3][18, 1, 9, 3]", y: "f32[2, 3, 4, 6]"):
    bw = torch.ops.aten.max_pool2d_with_indices_backward.default(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, ix)
    add = torch.ops.aten.add.Tensor(bw, y)
    sub = torch.ops.aten.sub.Tensor(bw, y)
    v = torch.ops.aten.view.default(sub, [2, 3, 24])
    return (add, add, sub, v)
)IR",
      R"IR(
CHECK: [[ADD:[a-z_0-9]+]]: "f32[2, 3, 4, 6][72, 24, 6, 1]cpu" = torch.ops.aten.add.Tensor
CHECK: [[SUB:[a-z_0-9]+]]: "f32[2, 3, 4, 6][72, 24, 6, 1]cpu" = torch.ops.aten.sub.Tensor
CHECK: [[V:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.view.default([[SUB]], [2, 3, 24])
CHECK: torch.ops.aten.permute.default([[ADD]], [0, 2, 3, 1])
CHECK-NOT: permute.default([[SUB]]
CHECK: [[OUT:[a-z_0-9]+]]: "f32[2, 3, 4, 6][72, 1, 18, 3]cpu" = torch.ops.aten.permute.default
CHECK-NOT: permute
CHECK: return ([[OUT]], [[OUT]], [[SUB]], [[V]])
)IR"));
}

TEST(DecomposeTest, LayerNormRewiresGetitems) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3, 4]", w: "f32[4]", b: "f32[4]"):
    ln = torch.ops.aten.native_layer_norm.default(x, [4], w, b, 1e-05)
    getitem = ln[0]
    getitem_1 = ln[1]
    getitem_2 = ln[2]
    return (getitem, getitem_1, getitem_2)
)IR",
      R"IR(
CHECK: [[VM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.var_mean.correction(x, [2], correction = 0.0, keepdim = True)
CHECK: [[VAR:[a-z_0-9]+]]: "f32[2, 3, 1][3, 1, 1]cpu" = [[VM]][0]
CHECK: [[MEAN:[a-z_0-9]+]]: "f32[2, 3, 1][3, 1, 1]cpu" = [[VM]][1]
CHECK: [[EPS:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor([[VAR]], 1e-05)
CHECK: [[RSTD:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.rsqrt.default([[EPS]])
CHECK: [[W:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor({{.*}}, w)
CHECK: [[OUT:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor([[W]], b)
CHECK-NOT: getitem
CHECK: return ([[OUT]], [[MEAN]], [[RSTD]])
)IR"));
}

// Evaluation mode: running statistics, empty saved ones (the CPU kernel's).
TEST(DecomposeTest, BatchNormInference) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3, 5]", rm: "f32[3]", rv: "f32[3]"):
    bn = torch.ops.aten._native_batch_norm_legit_no_training.default(x, None, None, rm, rv, 0.1, 1e-05)
    getitem = bn[0]
    getitem_1 = bn[1]
    return (getitem, getitem_1)
)IR",
      R"IR(
CHECK: [[EPS:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor(rv, 1e-05)
CHECK: [[INV:[a-z_0-9]+]]: "f32[3][1]cpu" = torch.ops.aten.rsqrt.default([[EPS]])
CHECK: [[EMPTY:[a-z_0-9]+]]: "f32[0][1]cpu" = torch.ops.aten.full.default([0], 0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
CHECK: [[M:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = torch.ops.aten.unsqueeze.default(rm, -1)
CHECK: [[I:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = torch.ops.aten.unsqueeze.default([[INV]], -1)
CHECK: [[SUB:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor(x, [[M]])
CHECK: [[OUT:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[SUB]], [[I]])
CHECK: return ([[OUT]], [[EMPTY]])
)IR"));
}

// The functional form's new running statistics in evaluation mode are
// copies: returning the inputs themselves would alias them with outputs.
TEST(DecomposeTest, BatchNormFunctionalInferenceCopiesStatistics) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]"):
    bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, None, None, rm, rv, False, 0.1, 1e-05)
    getitem = bn[0]
    getitem_3 = bn[3]
    getitem_4 = bn[4]
    return (getitem, getitem_3, getitem_4)
)IR",
      R"IR(
CHECK: [[RM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.clone.default(rm)
CHECK: [[RV:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.clone.default(rv)
CHECK: return ({{.*}}, [[RM]], [[RV]])
)IR"));
}

TEST(DecomposeTest, GeluErf) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f32[4]"):
    g = torch.ops.aten.gelu.default(x)
    return (g,)
)IR",
                                           R"IR(
CHECK: [[HALF:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor(x, 0.5)
CHECK: [[S:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor(x, 0.7071067811865476)
CHECK: [[ERF:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.erf.default([[S]])
CHECK: [[ADD:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor([[ERF]], 1)
CHECK: [[OUT:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[HALF]], [[ADD]])
CHECK: return ([[OUT]],)
)IR"));
}

TEST(DecomposeTest, GeluTanh) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f32[4]"):
    g = torch.ops.aten.gelu.default(x, approximate = 'tanh')
    return (g,)
)IR",
                                           R"IR(
CHECK: [[SQ:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor(x, x)
CHECK: [[CUBE:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[SQ]], x)
CHECK: [[K:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[CUBE]], 0.044715)
CHECK: [[SUM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor(x, [[K]])
CHECK: [[IN:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[SUM]], 0.7978845608028654)
CHECK: [[T:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.tanh.default([[IN]])
CHECK: torch.ops.aten.add.Tensor([[T]], 1)
)IR"));
}

TEST(DecomposeTest, Silu) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "bf16[4]"):
    s = torch.ops.aten.silu.default(x)
    return (s,)
)IR",
                                           R"IR(
CHECK: [[X:[a-z_0-9]+]]: "f32[4][1]cpu" = torch.ops.prims.convert_element_type.default(x, torch.float32)
CHECK: [[NEG:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.neg.default([[X]])
CHECK: [[EXP:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.exp.default([[NEG]])
CHECK: [[D:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor([[EXP]], 1)
CHECK: [[DIV:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.div.Tensor([[X]], [[D]])
CHECK: torch.ops.prims.convert_element_type.default([[DIV]], torch.bfloat16)
)IR"));
}

TEST(DecomposeTest, AddcmulAndLerp) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[4]", y: "f32[4]", z: "f32[4]"):
    a = torch.ops.aten.addcmul.default(x, y, z, value = 2)
    b = torch.ops.aten.lerp.Scalar(x, y, 0.75)
    return (a, b)
)IR",
      R"IR(
CHECK: [[V:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor(y, 2)
CHECK: [[P:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[V]], z)
CHECK: [[A:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor(x, [[P]])
CHECK: [[D:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor(y, x)
CHECK: [[B:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor(y, [[D]], alpha = -0.25)
CHECK: return ([[A]], [[B]])
)IR"));
}

// clamp is maximum/minimum with 0-d bounds: both propagate NaN as clamp
// does; an integer input clamped by a float bound becomes float first.
TEST(DecomposeTest, ClampIsMaximumAndMinimum) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "i32[2, 3]"):
    a = torch.ops.aten.clamp.default(x, -2, 0.5)
    return (a,)
)IR",
                                     R"IR(
CHECK: [[X:[a-z_0-9]+]]: "f32[2, 3][3, 1]cpu" = torch.ops.prims.convert_element_type.default(x, torch.float32)
CHECK: [[LO:[a-z_0-9]+]]: "f32[][]cpu" = torch.ops.aten.scalar_tensor.default(-2, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
CHECK: [[MAX:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.maximum.default([[X]], [[LO]])
CHECK: [[HI:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.scalar_tensor.default(0.5, {{.*}})
CHECK: [[MIN:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.minimum.default([[MAX]], [[HI]])
CHECK: return ([[MIN]],)
)IR"));
}

// An integer bound outside the dtype is no bound; with none left, a copy.
TEST(DecomposeTest, ClampDropsOutOfRangeIntegerBounds) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "i8[3]"):
    a = torch.ops.aten.clamp_min.default(x, -1000)
    return (a,)
)IR",
                                           R"IR(
CHECK: [[C:[a-z_0-9]+]]: "i8[3][1]cpu" = torch.ops.aten.clone.default(x)
CHECK-NOT: maximum
CHECK: return ([[C]],)
)IR"));
}

// logsumexp masks infinite maxima to 0 before subtracting them.
TEST(DecomposeTest, LogSumExpMasksInfiniteMaxima) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f32[2, 3]"):
    a = torch.ops.aten.logsumexp.default(x, [1])
    return (a,)
)IR",
                                     R"IR(
CHECK: [[MAX:[a-z_0-9]+]]: "f32[2, 1][1, 1]cpu" = torch.ops.aten.amax.default(x, [1], True)
CHECK: [[ABS:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.abs.default([[MAX]])
CHECK: [[INF:[a-z_0-9]+]]: "b8[2, 1][1, 1]cpu" = torch.ops.aten.eq.Scalar([[ABS]], inf)
CHECK: [[ZERO:[a-z_0-9]+]]: "f32[][]cpu" = torch.ops.aten.scalar_tensor.default(0, {{.*}})
CHECK: [[M:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.where.self([[INF]], [[ZERO]], [[MAX]])
CHECK: [[SUB:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor(x, [[M]])
CHECK: [[SUM:[a-z_0-9]+]]: "f32[2][1]cpu" = torch.ops.aten.sum.dim_IntList({{.*}}, [1], False)
CHECK: [[LOG:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.log.default([[SUM]])
CHECK: [[SQ:[a-z_0-9]+]]: "f32[2][1]cpu" = torch.ops.aten.squeeze.dims([[M]], [1])
CHECK: torch.ops.aten.add.Tensor([[LOG]], [[SQ]])
)IR"));
}

// Symbolic counts are SymInt nodes for the mean; the variance is one
// var_mean (the cpu backend's Welford reduction), squeezed unless keepdim.
TEST(DecomposeTest, MeanAndVarOverSymbolicSizes) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0, 3]"):
    a = torch.ops.aten.mean.dim(x, [0, 1])
    b = torch.ops.aten.var.correction(x, [0], correction = 1)
    return (a, b)
)IR",
                                           R"IR(
CHECK: [[SUM:[a-z_0-9]+]]: "f32[][]cpu" = torch.ops.aten.sum.dim_IntList(x, [0, 1], False)
CHECK: [[S:[a-z_0-9]+]]: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
CHECK: [[N:[a-z_0-9]+]]: "Sym(3*s0)" = [[S]] * 3
CHECK: [[A:[a-z_0-9]+]]: "f32[][]cpu" = torch.ops.aten.div.Tensor([[SUM]], [[N]])
CHECK: [[VM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.var_mean.correction(x, [0], correction = 1.0, keepdim = True)
CHECK: [[V:[a-z_0-9]+]]: "f32[1, 3][3, 1]cpu" = [[VM]][0]
CHECK: [[B:[a-z_0-9]+]]: "f32[3][1]cpu" = torch.ops.aten.squeeze.dims([[V]], [0])
CHECK: return ([[A]], [[B]])
)IR"));
}

// std in float16: var_mean in float32, its variance's square root, back to
// float16; var_mean itself is left to the backend.
TEST(DecomposeTest, StdIsTheRootOfVarMeanInTheComputationDtype) {
  EXPECT_OK(
      RunPassAndFileCheck<Decompose>(R"IR(def forward(self, x: "f16[3, 4]"):
    s = torch.ops.aten.std.dim(x, [1], False, True)
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 0)
    getitem = vm[0]
    return (s, getitem)
)IR",
                                     R"IR(
CHECK: [[X:[a-z_0-9]+]]: "f32[3, 4][4, 1]cpu" = torch.ops.prims.convert_element_type.default(x, torch.float32)
CHECK: [[VM:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.var_mean.correction([[X]], [1], correction = 0.0, keepdim = True)
CHECK: [[V:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = [[VM]][0]
CHECK: [[R:[a-z_0-9]+]]: "f32[3, 1][1, 1]cpu" = torch.ops.aten.sqrt.default([[V]])
CHECK: [[S:[a-z_0-9]+]]: "f16[3, 1][1, 1]cpu" = torch.ops.prims.convert_element_type.default([[R]], torch.float16)
CHECK: torch.ops.aten.var_mean.correction(x, [1], correction = 0)
CHECK: return ([[S]],
)IR"));
}

// A SymInt channel count (sym_size) is read through the env, which the
// op's meta made specialize it: the grouped view has C / group channels.
TEST(DecomposeTest, GroupNormOfSymIntChannels) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(# lathe: hint s0 2
# lathe: hint s1 6
# lathe: hint s2 4
def forward(self, x: "f32[s0, s1, s2]", w: "f32[s1]"):
    n = torch.ops.aten.sym_size.int(x, 0)
    c = torch.ops.aten.sym_size.int(x, 1)
    hw = torch.ops.aten.sym_size.int(x, 2)
    gn = torch.ops.aten.native_group_norm.default(x, w, None, n, c, hw, 3, 1e-05)
    getitem = gn[0]
    getitem_1 = gn[1]
    return (getitem, getitem_1)
)IR",
                                           R"IR(
CHECK: [[V:[a-z_0-9]+]]: "f32[s0, 3, 2, s2]{{.*}} = torch.ops.aten.view.default(x, [n, 3, 2, hw])
CHECK: torch.ops.aten.var_mean.correction([[V]], [2, 3], correction = 0.0, keepdim = True)
CHECK-NOT: native_group_norm
CHECK: return
)IR"));
}

// Each axis: source coordinates from an arange, their floor and the next
// index (clamped), the fraction; four corners blended along W, then H.
TEST(DecomposeTest, UpsampleBilinear2d) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[1, 2, 3, 4]"):
    up = torch.ops.aten.upsample_bilinear2d.default(x, [5, 7], False)
    return (up,)
)IR",
      R"IR(
CHECK: torch.ops.aten.arange.default(5, dtype = torch.int64
CHECK: [[H:[a-z_0-9]+]]: "f32[5, 1][1, 1]cpu" = torch.ops.aten.unsqueeze.default({{.*}}, 1)
CHECK: [[H0:[a-z_0-9]+]]: "i64[5, 1][1, 1]cpu" = torch.ops.prims.convert_element_type.default([[H]], torch.int64)
CHECK: [[H1:[a-z_0-9]+]]: "i64[5, 1][1, 1]cpu" = torch.ops.aten.clamp_max.default({{.*}}, 2)
CHECK: torch.ops.aten.arange.default(7, dtype = torch.int64
CHECK: [[W0:[a-z_0-9]+]]: "i64[7][1]cpu" = torch.ops.prims.convert_element_type.default({{.*}}, torch.int64)
CHECK: [[W1:[a-z_0-9]+]]: "i64[7][1]cpu" = torch.ops.aten.clamp_max.default({{.*}}, 3)
CHECK: [[FW:[a-z_0-9]+]]: "f32[7][1]cpu" = torch.ops.aten.clamp.default
CHECK: "f32[1, 2, 5, 7][70, 35, 7, 1]cpu" = torch.ops.aten._unsafe_index.Tensor(x, [None, None, [[H0]], [[W0]]])
CHECK: torch.ops.aten._unsafe_index.Tensor(x, [None, None, [[H0]], [[W1]]])
CHECK: torch.ops.aten._unsafe_index.Tensor(x, [None, None, [[H1]], [[W0]]])
CHECK: torch.ops.aten._unsafe_index.Tensor(x, [None, None, [[H1]], [[W1]]])
CHECK-NOT: upsample_bilinear2d
CHECK: return
)IR"));
}

// Bilinear with zeros padding: unnormalized coordinates, four corners read
// with aten.index.Tensor at [n, c, y, x], masked outside, weighted.
TEST(DecomposeTest, GridSampler2dBilinear) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[1, 2, 4, 5]", g: "f32[1, 3, 3, 2]"):
    gs = torch.ops.aten.grid_sampler_2d.default(x, g, 0, 0, False)
    return (gs,)
)IR",
      R"IR(
CHECK: [[GX:[a-z_0-9]+]]: "f32[1, 3, 3]{{.*}} = torch.ops.aten.select.int(g, 3, 0)
CHECK: [[A:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.add.Tensor([[GX]], 1)
CHECK: [[B:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[A]], 5)
CHECK: [[C:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.mul.Tensor([[B]], 0.5)
CHECK: [[IX:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.sub.Tensor([[C]], 0.5)
CHECK: torch.ops.aten.select.int(g, 3, 1)
CHECK: torch.ops.aten.floor.default([[IX]])
CHECK: [[IN:[a-z_0-9]+]]: "b8[1, 1, 3, 3]{{.*}} = torch.ops.aten.unsqueeze.default
CHECK: [[V:[a-z_0-9]+]]: "f32[1, 2, 3, 3][18, 9, 3, 1]cpu" = torch.ops.aten.index.Tensor(x, [{{.*}}])
CHECK: torch.ops.aten.where.ScalarOther([[IN]], [[V]], 0.0)
CHECK-COUNT-3: torch.ops.aten.index.Tensor(x
CHECK-NOT: grid_sampler_2d
CHECK: return
)IR"));
}

// The pairs i < j come from the strict upper triangle's running count,
// scattered into n (n - 1) / 2 + 1 slots; the rows are gathered and
// reduced by linalg_vector_norm.
TEST(DecomposeTest, PdistOfSymbolicRows) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0, 3]"):
    d = torch.ops.aten._pdist_forward.default(x, 1.0)
    return (d,)
)IR",
                                           R"IR(
CHECK: [[UP:[a-z_0-9]+]]: "b8[s0, s0]{{.*}} = torch.ops.aten.gt.Tensor
CHECK: [[CS:[a-z_0-9]+]]: "i64[s0**2]{{.*}} = torch.ops.aten.cumsum.default({{.*}}, 0, dtype = torch.int64)
CHECK: [[SLOT:[a-z_0-9]+]]: "i64[s0**2]{{.*}} = torch.ops.aten.where.ScalarOther
CHECK: [[Z:[a-z_0-9]+]]: "i64[(s0*(s0 - 1)//2) + 1]{{.*}} = torch.ops.aten.zeros.default
CHECK: [[SC:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.scatter.src([[Z]], 0, [[SLOT]], {{.*}})
CHECK: [[PAIR:[a-z_0-9]+]]: "i64[(s0*(s0 - 1)//2)]{{.*}} = torch.ops.aten.slice.Tensor([[SC]], 0, 0,
CHECK: torch.ops.aten.index_select.default(x, 0,
CHECK: torch.ops.aten.index_select.default(x, 0,
CHECK: [[OUT:[a-z_0-9]+]]: "f32[(s0*(s0 - 1)//2)]{{.*}} = torch.ops.aten.linalg_vector_norm.default({{.*}}, 1.0, [1], False)
CHECK: return ([[OUT]],)
)IR"));
}

// Each index's bag: ones at offsets[1:], index_add-ed and cumsum-ed; the
// rows are index_add-ed per bag (sum) or scatter_reduce-d (max).
TEST(DecomposeTest, EmbeddingBagSumAndMax) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, w: "f32[10, 4]", i: "i64[6]", o: "i64[2]"):
    eb = torch.ops.aten._embedding_bag_forward_only.default(w, i, o, False, 0, False, None)
    getitem = eb[0]
    eb2 = torch.ops.aten._embedding_bag_forward_only.default(w, i, o, False, 2, False, None)
    getitem_1 = eb2[0]
    getitem_2 = eb2[3]
    return (getitem, getitem_1, getitem_2)
)IR",
      R"IR(
CHECK: [[STARTS:[a-z_0-9]+]]: "i64[1]{{.*}} = torch.ops.aten.slice.Tensor(o, 0, 1, 2)
CHECK: [[MARKS:[a-z_0-9]+]]: "i64[7]{{.*}} = torch.ops.aten.index_add.default({{.*}}, 0, [[STARTS]],
CHECK: [[CS:[a-z_0-9]+]]: "i64[7]{{.*}} = torch.ops.aten.cumsum.default([[MARKS]], 0)
CHECK: [[BAG:[a-z_0-9]+]]: "i64[6]{{.*}} = torch.ops.aten.slice.Tensor([[CS]], 0, 0, 6)
CHECK: [[ROWS:[a-z_0-9]+]]: "f32[6, 4]{{.*}} = torch.ops.aten.index_select.default(w, 0, i)
CHECK: [[SUM:[a-z_0-9]+]]: "f32[3, 4]{{.*}} = torch.ops.aten.index_add.default({{.*}}, 0, [[BAG]], [[ROWS]])
CHECK: [[OUT:[a-z_0-9]+]]: "f32[2, 4]{{.*}} = torch.ops.aten.slice.Tensor([[SUM]], 0, 0, 2)
CHECK: [[AMAX:[a-z_0-9]+]]: "f32[3, 4]{{.*}} = torch.ops.aten.scatter_reduce.two({{.*}}, 0, {{.*}}, {{.*}}, 'amax', include_self = False)
CHECK: torch.ops.aten.scatter_reduce.two({{.*}}, 'amin', include_self = False)
CHECK: [[MI:[a-z_0-9]+]]: "i64[2, 4]{{.*}} = torch.ops.aten.view.default
CHECK: [[MAX:[a-z_0-9]+]]: "f32[2, 4]{{.*}} = torch.ops.aten.slice.Tensor([[AMAX]], 0, 0, 2)
CHECK-NOT: _embedding_bag
CHECK: return ([[OUT]], [[MAX]], [[MI]])
)IR"));
}

// The CPU flash attention of q, k, v [1, 2, 4, 8] in `dtype`, returning its
// output and log-sum-exp.
std::string FlashAttentionGraph(absl::string_view dtype, bool causal,
                                absl::string_view scale = "") {
  return absl::StrCat(
      "def forward(self, q: \"", dtype, "[1, 2, 4, 8]\", k: \"", dtype,
      "[1, 2, 4, 8]\", v: \"", dtype, "[1, 2, 4, 8]\"):\n",
      "    a = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu."
      "default(q, k, v, 0.0, ",
      causal ? "True" : "False", scale.empty() ? "" : ", scale = ", scale,
      ")\n    getitem = a[0]\n    getitem_1 = a[1]\n"
      "    return (getitem, getitem_1)\n");
}

// A power-of-two scale multiplies q (in its copy) instead of the scores:
// the same scores exactly, where q's dtype has float32's exponent range
// (bf16, f32); f16's would underflow sooner, so its scores are scaled, as
// are the scores for any other scale (FlashAttentionCpuCausal's).
TEST(DecomposeTest, APowerOfTwoScaleMultipliesTheQueries) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      FlashAttentionGraph("bf16", /*causal=*/false, "0.25"),
      R"IR(
CHECK: [[Q:[a-z_0-9]+]]: "bf16[2, 4, 8]{{.*}} = torch.ops.aten.view.default(q, [2, 4, 8])
CHECK: [[QS:[a-z_0-9]+]]: "bf16[2, 4, 8]{{.*}} = torch.ops.aten.mul.Tensor([[Q]], 0.25)
CHECK: [[S:[a-z_0-9]+]]: "f32[2, 4, 4]{{.*}} = torch.ops.aten.bmm.dtype([[QS]],
CHECK-NOT: torch.ops.aten.mul.Tensor({{.*}}, 0.25)
CHECK: return
)IR"));
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      FlashAttentionGraph("f16", /*causal=*/false, "0.25"),
      R"IR(
CHECK: [[S:[a-z_0-9]+]]: "f32[2, 4, 4]{{.*}} = torch.ops.aten.bmm.dtype(
CHECK: torch.ops.aten.mul.Tensor([[S]], 0.25)
)IR"));
}

// In bf16, as PyTorch's CPU kernel: q, k and v enter the products as bf16
// with f32 results (bmm.dtype), the softmax is f32, and p @ v takes the exps
// rounded to bf16, its product times the sum's reciprocal after.
TEST(DecomposeTest, FlashAttentionCpuInBf16TakesBf16Products) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      FlashAttentionGraph("bf16", /*causal=*/false),
      R"IR(
CHECK: [[Q:[a-z_0-9]+]]: "bf16[2, 4, 8]{{.*}} = torch.ops.aten.view.default(q, [2, 4, 8])
CHECK: [[K:[a-z_0-9]+]]: "bf16[2, 4, 8]{{.*}} = torch.ops.aten.view.default(k, [2, 4, 8])
CHECK: [[V:[a-z_0-9]+]]: "bf16[2, 4, 8]{{.*}} = torch.ops.aten.view.default(v, [2, 4, 8])
CHECK: [[KT:[a-z_0-9]+]]: "bf16[2, 8, 4]{{.*}} = torch.ops.aten.transpose.int([[K]], 1, 2)
CHECK: [[S:[a-z_0-9]+]]: "f32[2, 4, 4]{{.*}} = torch.ops.aten.bmm.dtype([[Q]], [[KT]], torch.float32)
CHECK: [[E:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.where.ScalarSelf({{.*}}, 0.0, {{.*}})
CHECK: [[SUM:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.sum.dim_IntList([[E]], [-1], True)
CHECK: [[DENOM:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.where.ScalarSelf({{.*}}, 1.0, [[SUM]])
CHECK: [[P:[a-z_0-9]+]]: "bf16[1, 2, 4, 4]{{.*}} = torch.ops.prims.convert_element_type.default([[E]], torch.bfloat16)
CHECK: [[P3:[a-z_0-9]+]]: "bf16[2, 4, 4]{{.*}} = torch.ops.aten.view.default([[P]], [2, 4, 4])
CHECK: [[PV:[a-z_0-9]+]]: "f32[2, 4, 8]{{.*}} = torch.ops.aten.bmm.dtype([[P3]], [[V]], torch.float32)
CHECK: [[PV4:[a-z_0-9]+]]: "f32[1, 2, 4, 8]{{.*}} = torch.ops.aten.view.default([[PV]], [1, 2, 4, 8])
CHECK: [[INV:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.reciprocal.default([[DENOM]])
CHECK: [[OUT:[a-z_0-9]+]]: "f32[1, 2, 4, 8]{{.*}} = torch.ops.aten.mul.Tensor([[PV4]], [[INV]])
CHECK: torch.ops.prims.convert_element_type.default([[OUT]], torch.bfloat16)
CHECK-NOT: flash_attention
)IR"));
}

// bmm(q, k^T) scaled after, the causal mask as masked_fill, a softmax by
// amax / exp / sum whose exp reads the unmasked scores (0 instead of a
// shifted score below -87.5 or a masked one, the lanes whose results would
// be below FLT_MIN and its masked lanes set to 0 after) and whose sum is 1
// for a fully masked row, bmm with v; the log-sum-exp is laid out as
// [B, L, H].
TEST(DecomposeTest, FlashAttentionCpuCausal) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      FlashAttentionGraph("f32", /*causal=*/true),
      R"IR(
CHECK: [[Q:[a-z_0-9]+]]: "f32[2, 4, 8]{{.*}} = torch.ops.aten.view.default(q, [2, 4, 8])
CHECK: [[K:[a-z_0-9]+]]: "f32[2, 4, 8]{{.*}} = torch.ops.aten.view.default(k, [2, 4, 8])
CHECK: [[KT:[a-z_0-9]+]]: "f32[2, 8, 4]{{.*}} = torch.ops.aten.transpose.int([[K]], 1, 2)
CHECK: [[S:[a-z_0-9]+]]: "f32[2, 4, 4]{{.*}} = torch.ops.aten.bmm.default([[Q]], [[KT]])
CHECK: torch.ops.aten.mul.Tensor([[S]], 0.35355339059327373)
CHECK: [[ABOVE:[a-z_0-9]+]]: "b8[4, 4]{{.*}} = torch.ops.aten.gt.Tensor
CHECK: [[KEEP:[a-z_0-9]+]]: "b8[4, 4]{{.*}} = torch.ops.aten.logical_not.default([[ABOVE]])
CHECK: [[KEEPF:[a-z_0-9]+]]: "f32[4, 4]{{.*}} = torch.ops.prims.convert_element_type.default([[KEEP]], torch.float32)
CHECK: [[M:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.masked_fill.Scalar({{.*}}, [[ABOVE]], -inf)
CHECK: [[MAX:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.amax.default([[M]], [-1], True)
CHECK-NOT: torch.ops.aten.sub.Tensor([[M]]
CHECK: [[X:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.sub.Tensor
CHECK: [[LOW:[a-z_0-9]+]]: "b8[1, 2, 4, 4]{{.*}} = torch.ops.aten.lt.Scalar([[X]], -87.5)
CHECK: [[SKIP:[a-z_0-9]+]]: "b8[1, 2, 4, 4]{{.*}} = torch.ops.aten.logical_or.default([[LOW]], [[ABOVE]])
CHECK: [[ZERO:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.scalar_tensor.default(0.0,
CHECK: [[ZEROED:[a-z_0-9]+]]: {{.*}} = torch.ops.aten.copysign.Tensor([[ZERO]], [[X]])
CHECK: [[ARG:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.where.self([[SKIP]], [[ZEROED]], [[X]])
CHECK: [[E:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.exp.default([[ARG]])
CHECK: [[TINY:[a-z_0-9]+]]: "b8[1, 2, 4, 4]{{.*}} = torch.ops.aten.lt.Scalar([[X]], -87.33654022216797)
CHECK: [[W:[a-z_0-9]+]]: "f32[1, 2, 4, 4]{{.*}} = torch.ops.aten.where.ScalarSelf([[TINY]], 0.0, [[E]])
CHECK: torch.ops.aten.mul.Tensor([[W]], [[KEEPF]])
CHECK: [[SUM:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.sum.dim_IntList
CHECK: [[DENOM:[a-z_0-9]+]]: "f32[1, 2, 4, 1]{{.*}} = torch.ops.aten.where.ScalarSelf({{.*}}, 1.0, [[SUM]])
CHECK: torch.ops.aten.div.Tensor({{.*}}, [[DENOM]])
CHECK: torch.ops.aten.bmm.default
CHECK: [[OUT:[a-z_0-9]+]]: "f32[1, 2, 4, 8][64, 32, 8, 1]cpu" = torch.ops.aten.view.default
CHECK: torch.ops.aten.log.default([[DENOM]])
CHECK: [[LSE:[a-z_0-9]+]]: "f32[1, 2, 4][8, 1, 2]cpu" = torch.ops.aten.permute.default({{.*}}, [0, 2, 1])
CHECK-NOT: flash_attention
CHECK: return ([[OUT]], [[LSE]])
)IR"));
}

// Inductor's functional scatter form: the inner scatter feeds the outer one
// alone; its other user reads the view of the outer result.
TEST(DecomposeTest, ScatterChainReadsAViewOfTheOuterScatter) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[4, 6]", y: "f32[2]"):
    select = torch.ops.aten.select.int(x, 0, 1)
    slice_1 = torch.ops.aten.slice.Tensor(select, 0, 2, 4)
    add = torch.ops.aten.add.Tensor(slice_1, y)
    slice_scatter = torch.ops.aten.slice_scatter.default(select, add, 0, 2, 4)
    mul = torch.ops.aten.mul.Tensor(slice_scatter, 2)
    select_scatter = torch.ops.aten.select_scatter.default(x, slice_scatter, 0, 1)
    return (select_scatter, mul)
)IR",
      R"IR(
CHECK: slice_scatter: {{.*}} = torch.ops.aten.slice_scatter.default(select, add, 0, 2, 4)
CHECK-NEXT: select_scatter: {{.*}} = torch.ops.aten.select_scatter.default(x, slice_scatter, 0, 1)
CHECK-NEXT: [[V:[a-z_0-9]+]]: "f32[6][1]cpu" = torch.ops.aten.select.int(select_scatter, 0, 1)
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor([[V]], 2)
)IR"));
}

// A returned inner scatter stays: a view of the outer one would alias two
// outputs.
TEST(DecomposeTest, ScatterChainKeepsReturnedInnerScatter) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[4, 6]", y: "f32[2]"):
    select = torch.ops.aten.select.int(x, 0, 1)
    slice_scatter = torch.ops.aten.slice_scatter.default(select, y, 0, 2, 4)
    select_scatter = torch.ops.aten.select_scatter.default(x, slice_scatter, 0, 1)
    return (select_scatter, slice_scatter)
)IR",
      std::nullopt));
}

// What cannot be decomposed faithfully stays: half_to_float (lathe's op
// keeps the dtype), a symbolic Scalar weight, an empty softmax dim, and a
// batch norm that writes its running statistics.
TEST(DecomposeTest, LeavesWhatItCannotDecomposeFaithfully) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f16[3, 5]", y: "f16[3, 5]", w: "Sym(zf0)", e: "f32[3, 0]"):
    s = torch.ops.aten._softmax.default(x, -1, True)
    l = torch.ops.aten.lerp.Scalar(x, y, w)
    s2 = torch.ops.aten._softmax.default(e, 1, False)
    return (s, l, s2)
)IR",
      std::nullopt));
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]"):
    bn = torch.ops.aten._native_batch_norm_legit.default(x, None, None, rm, rv, True, 0.1, 1e-05)
    getitem = bn[0]
    return (getitem,)
)IR",
      std::nullopt));
}

TEST(DecomposeDifferentialTest, Softmax) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 5]"):
    s = torch.ops.aten._softmax.default(x, -1, False)
    l = torch.ops.aten._log_softmax.default(x, 0, False)
    return (s, l)
)IR"),
                      "softmax");
  }
}

// An in-place op whose functional twin decomposes is the twin's
// decomposition copied into self; the graph reads self afterwards.
TEST(DecomposeDifferentialTest, InplaceFormsOfDecomposedOps) {
  for (const char* dtype : {"f32", "f16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 5]", y: ")IR", dtype, R"IR([5]"):
    a = torch.ops.aten.clone.default(x)
    b = torch.ops.aten.addcmul_.default(a, x, y, value = 2)
    c = torch.ops.aten.addcdiv_.default(b, x, y, value = 0.5)
    d = torch.ops.aten.lerp_.Scalar(c, x, 0.25)
    e = torch.ops.aten.lerp_.Tensor(d, x, y)
    f = torch.ops.aten.gelu_.default(e, approximate = "tanh")
    g = torch.ops.aten.mul.Tensor(a, 3)
    return (f, g)
)IR"),
                      "addcmul_");
  }
}

TEST(DecomposeDifferentialTest, SoftmaxOfNonContiguousInput) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[5, 3]"):
    t = torch.ops.aten.t.default(x)
    s = torch.ops.aten._softmax.default(t, 1, False)
    return (s,)
)IR",
                    "_softmax");
}

TEST(DecomposeDifferentialTest, SoftmaxWithInfinities) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[4, 6]"):
    s = torch.ops.aten._softmax.default(x, 1, False)
    l = torch.ops.aten._log_softmax.default(x, 1, False)
    return (s, l)
)IR",
                    "softmax", /*specials=*/true, /*trials=*/8);
}

TEST(DecomposeDifferentialTest, LogSumExp) {
  for (const char* dtype : {"f32", "f16", "i32"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 4, 5]"):
    a = torch.ops.aten.logsumexp.default(x, [1])
    b = torch.ops.aten.logsumexp.default(x, [0, 2], True)
    return (a, b)
)IR"),
                      "logsumexp");
  }
  // Infinite maxima (all -inf rows, +inf) take the masked path.
  ExpectSameResults(R"IR(def forward(self, x: "f32[6, 3]"):
    a = torch.ops.aten.logsumexp.default(x, [1])
    return (a,)
)IR",
                    "logsumexp", /*specials=*/true, /*trials=*/10);
}

TEST(DecomposeDifferentialTest, LogSumExpOfEmpty) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[0, 3]"):
    a = torch.ops.aten.logsumexp.default(x, [0])
    return (a,)
)IR",
                    "logsumexp");
}

TEST(DecomposeDifferentialTest, Norms) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([2, 3, 4, 5]", w: ")IR", dtype,
                                   R"IR([4, 5]", b: ")IR", dtype,
                                   R"IR([4, 5]"):
    ln = torch.ops.aten.native_layer_norm.default(x, [4, 5], w, b, 1e-05)
    getitem = ln[0]
    getitem_1 = ln[1]
    getitem_2 = ln[2]
    ln2 = torch.ops.aten.native_layer_norm.default(x, [5], None, None, 0.001)
    getitem_3 = ln2[0]
    return (getitem, getitem_1, getitem_2, getitem_3)
)IR"),
                      "layer_norm");
  }
}

TEST(DecomposeDifferentialTest, LayerNormOfNonContiguousInput) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[6, 4]", w: "f32[6]"):
    t = torch.ops.aten.t.default(x)
    ln = torch.ops.aten.native_layer_norm.default(t, [6], w, None, 1e-05)
    getitem = ln[0]
    getitem_2 = ln[2]
    return (getitem, getitem_2)
)IR",
                    "layer_norm");
}

TEST(DecomposeDifferentialTest, GroupNorm) {
  for (const char* dtype : {"f32", "f16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([2, 6, 3, 2]", w: ")IR", dtype,
                                   R"IR([6]", b: ")IR", dtype, R"IR([6]"):
    gn = torch.ops.aten.native_group_norm.default(x, w, b, 2, 6, 6, 3, 1e-05)
    getitem = gn[0]
    getitem_1 = gn[1]
    getitem_2 = gn[2]
    gn2 = torch.ops.aten.native_group_norm.default(x, None, None, 2, 6, 6, 2, 1e-05)
    getitem_3 = gn2[0]
    return (getitem, getitem_1, getitem_2, getitem_3)
)IR"),
                      "group_norm");
  }
}

// The .vec rows use scale factors whose reciprocals are exact: the
// decomposition computes source coordinates in float, as PyTorch's CPU
// kernel does, and the interpreter in double (1 / 2.5 differs by an ulp).
TEST(DecomposeDifferentialTest, UpsampleBilinear2d) {
  for (const char* dtype : {"f32", "f64", "f16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([2, 3, 4, 5]"):
    a = torch.ops.aten.upsample_bilinear2d.default(x, [7, 3], False)
    b = torch.ops.aten.upsample_bilinear2d.default(x, [8, 11], True)
    c = torch.ops.aten.upsample_bilinear2d.default(x, [1, 1], True)
    d = torch.ops.aten.upsample_bilinear2d.default(x, [6, 9], False, 1.5, 2.0)
    e = torch.ops.aten.upsample_bilinear2d.vec(x, None, False, [2.0, 0.5])
    f = torch.ops.aten.upsample_bilinear2d.vec(x, None, True, [2.0, 2.0])
    g = torch.ops.aten.upsample_bilinear2d.vec(x, [5, 4], False, None)
    return (a, b, c, d, e, f, g)
)IR"),
                      "upsample_bilinear2d");
  }
}

TEST(DecomposeDifferentialTest, GridSampler2d) {
  for (const char* dtype : {"f32", "f64"}) {
    std::string body;
    int k = 0;
    std::vector<std::string> outs;
    for (int mode : {0, 1}) {
      for (int padding : {0, 1, 2}) {
        for (const char* align : {"False", "True"}) {
          std::string name = absl::StrCat("gs", k++);
          absl::StrAppend(&body, "    ", name,
                          " = torch.ops.aten.grid_sampler_2d.default(x, g, ",
                          mode, ", ", padding, ", ", align, ")\n");
          outs.push_back(name);
        }
      }
    }
    ExpectSameResults(
        absl::StrCat("def forward(self, x: \"", dtype, "[2, 3, 4, 5]\", g: \"",
                     dtype, "[2, 6, 7, 2]\"):\n", body, "    return (",
                     absl::StrJoin(outs, ", "), ")\n"),
        "grid_sampler_2d");
  }
  // A one-pixel-wide input reflects onto its only column.
  ExpectSameResults(
      R"IR(def forward(self, x: "f32[1, 2, 3, 1]", g: "f32[1, 4, 4, 2]"):
    a = torch.ops.aten.grid_sampler_2d.default(x, g, 0, 2, True)
    b = torch.ops.aten.grid_sampler_2d.default(x, g, 1, 2, False)
    return (a, b)
)IR",
      "grid_sampler_2d");
}

TEST(DecomposeDifferentialTest, Pdist) {
  for (const char* dtype : {"f32", "f64"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([6, 4]"):
    a = torch.ops.aten._pdist_forward.default(x)
    b = torch.ops.aten._pdist_forward.default(x, 1.0)
    c = torch.ops.aten._pdist_forward.default(x, 0.0)
    d = torch.ops.aten._pdist_forward.default(x, 3.5)
    e = torch.ops.aten._pdist_forward.default(x, inf)
    return (a, b, c, d, e)
)IR"),
                      "_pdist_forward");
  }
  ExpectSameResults(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[s0, 3]", y: "f32[1, 3]"):
    a = torch.ops.aten._pdist_forward.default(x)
    b = torch.ops.aten._pdist_forward.default(y)
    return (a, b)
)IR",
                    "_pdist_forward");
}

// Valid indices (remainder 10) and offsets with empty bags: [0, 0, 3, 3,
// 6] (floor(arange / 2) * 3), or [0, 2, 4, 6] (arange(0, 8, 2)).
TEST(DecomposeDifferentialTest, EmbeddingBag) {
  for (const char* dtype : {"f32", "f64", "f16"}) {
    std::string text =
        absl::StrCat(R"IR(def forward(self, w: ")IR", dtype,
                     R"IR([10, 3]", r: "i64[9]", s: ")IR", dtype, R"IR([9]"):
    i = torch.ops.aten.remainder.Scalar(r, 10)
    a = torch.ops.aten.arange.default(5, dtype = torch.int64)
    h = torch.ops.aten.floor_divide.Scalar(a, 2)
    o = torch.ops.aten.mul.Tensor(h, 3)
    o2 = torch.ops.aten.arange.start_step(0, 8, 2, dtype = torch.int64)
)IR");
    std::vector<std::string> outs;
    int k = 0;
    for (const char* offsets : {"o", "o2"}) {
      for (int mode : {0, 1, 2}) {
        // include_last_offset, padding_idx.
        for (const char* tail : {"", ", False, 4", ", True", ", True, 4"}) {
          std::string name = absl::StrCat("eb", k++);
          // _embedding_bag (the training form) decomposes the same way.
          absl::StrAppend(&text, "    ", name, " = torch.ops.aten.",
                          std::string(offsets) == "o"
                              ? "_embedding_bag_forward_only"
                              : "_embedding_bag",
                          ".default(w, i, ", offsets, ", False, ", mode,
                          ", False, None", tail, ")\n");
          for (int item = 0; item < 4; ++item) {
            absl::StrAppend(&text, "    ", name, "_", item, " = ", name, "[",
                            item, "]\n");
            outs.push_back(absl::StrCat(name, "_", item));
          }
        }
      }
    }
    // per_sample_weights (sum only).
    absl::StrAppend(
        &text,
        "    p = torch.ops.aten._embedding_bag_forward_only.default("
        "w, i, o, False, 0, False, s, True)\n    p_0 = p[0]\n");
    outs.push_back("p_0");
    absl::StrAppend(&text, "    return (", absl::StrJoin(outs, ", "), ")\n");
    ExpectSameResults(text, "_embedding_bag");
  }
}

TEST(DecomposeDifferentialTest, FlashAttentionCpu) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        absl::StrCat(R"IR(def forward(self, q: ")IR", dtype,
                     R"IR([2, 3, 5, 4]", k: ")IR", dtype,
                     R"IR([2, 3, 7, 4]", v: ")IR", dtype,
                     R"IR([2, 3, 7, 4]", m: ")IR", dtype, R"IR([5, 7]"):
    t = torch.ops.aten.transpose.int(q, 1, 2)
    c = torch.ops.aten.clone.default(t)
    u = torch.ops.aten.transpose.int(c, 1, 2)
    a = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)
    a_0 = a[0]
    a_1 = a[1]
    b = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(u, k, v, attn_mask = m, scale = 0.25)
    b_0 = b[0]
    b_1 = b[1]
    return (a_0, a_1, b_0, b_1)
)IR"),
        "flash_attention");
  }
  // Scores 60x larger: rows whose weights reach the subnormal range (set to
  // 0) and below, against the reference's double softmax.
  ExpectSameResults(
      R"IR(def forward(self, q: "f32[1, 2, 6, 4]", k: "f32[1, 2, 6, 4]", v: "f32[1, 2, 6, 4]"):
    big = torch.ops.aten.mul.Tensor(q, 60.0)
    a = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(big, k, v, 0.0, True)
    a_0 = a[0]
    a_1 = a[1]
    return (a_0, a_1)
)IR",
      "flash_attention");
  // Causal and a mask together, the mask holding infinities and NaNs: it
  // is added after the causal fill, so a +inf or NaN above the diagonal
  // makes its row NaN, as in PyTorch's kernel.
  ExpectSameResults(
      R"IR(def forward(self, q: "f32[1, 2, 4, 8]", k: "f32[1, 2, 4, 8]", v: "f32[1, 2, 4, 8]", m: "f32[4, 4]"):
    a = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True, attn_mask = m)
    a_0 = a[0]
    a_1 = a[1]
    return (a_0, a_1)
)IR",
      "flash_attention", /*specials=*/true, /*trials=*/8);
  ExpectSameResults(R"IR(# lathe: hint s0 6
# lathe: hint s1 3
def forward(self, q: "f32[1, 2, s0, s1]", k: "f32[1, 2, s0, s1]", v: "f32[1, 2, s0, s1]"):
    a = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)
    a_0 = a[0]
    a_1 = a[1]
    return (a_0, a_1)
)IR",
                    "flash_attention");
}

TEST(DecomposeDifferentialTest, BatchNorm) {
  for (const char* dtype : {"f32", "f16"}) {
    ExpectSameResults(
        absl::StrCat(
            R"IR(def forward(self, x: ")IR", dtype,
            R"IR([4, 3, 2, 2]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]"):
    abs = torch.ops.aten.abs.default(rv)
    f = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, abs, True, 0.1, 1e-05)
    getitem = f[0]
    getitem_1 = f[1]
    getitem_2 = f[2]
    getitem_3 = f[3]
    getitem_4 = f[4]
    e = torch.ops.aten._native_batch_norm_legit_no_training.default(x, w, b, rm, abs, 0.1, 1e-05)
    getitem_5 = e[0]
    getitem_6 = e[1]
    n = torch.ops.aten._native_batch_norm_legit.no_stats(x, None, b, True, 0.1, 1e-05)
    getitem_7 = n[0]
    getitem_8 = n[2]
    nb = torch.ops.aten.native_batch_norm.default(x, w, None, rm, abs, False, 0.1, 1e-05)
    getitem_9 = nb[0]
    nt = torch.ops.aten.native_batch_norm.default(x, w, b, None, None, True, 0.1, 1e-05)
    getitem_10 = nt[0]
    getitem_11 = nt[1]
    fe = torch.ops.aten._native_batch_norm_legit_functional.default(x, None, None, rm, abs, False, 0.1, 1e-05)
    getitem_12 = fe[0]
    getitem_13 = fe[3]
    getitem_14 = fe[4]
    return (getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5, getitem_6, getitem_7, getitem_8, getitem_9, getitem_10, getitem_11, getitem_12, getitem_13, getitem_14)
)IR"),
        "batch_norm");
  }
}

TEST(DecomposeDifferentialTest, Activations) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([4, 7]"):
    a = torch.ops.aten.gelu.default(x)
    b = torch.ops.aten.gelu.default(x, approximate = 'tanh')
    c = torch.ops.aten.silu.default(x)
    return (a, b, c)
)IR"),
                      "gelu", /*specials=*/true);
  }
}

// The forward ops training graphs added: celu, logit (with and without
// eps), hardswish, mish; binary_cross_entropy keeps the kernel's range
// check (an assert on every element).
TEST(DecomposeDifferentialTest, TrainingForwardOps) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([4, 7]"):
    a = torch.ops.aten.celu.default(x, 0.5)
    s = torch.ops.aten.sigmoid.default(x)
    b = torch.ops.aten.logit.default(s)
    c = torch.ops.aten.logit.default(s, 0.1)
    d = torch.ops.aten.hardswish.default(x)
    e = torch.ops.aten.mish.default(x)
    return (a, b, c, d, e)
)IR"),
                      "mish", /*specials=*/true);
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([4, 7]", w: ")IR", dtype, R"IR([7]"):
    s = torch.ops.aten.sigmoid.default(x)
    t = torch.ops.aten.mul.Tensor(s, 0.5)
    a = torch.ops.aten.binary_cross_entropy.default(s, t)
    b = torch.ops.aten.binary_cross_entropy.default(s, t, w, 0)
    c = torch.ops.aten.binary_cross_entropy.default(s, t, None, 2)
    return (a, b, c)
)IR"),
                      "binary_cross_entropy.default");
  }
}

// nll_loss2d_forward (gathered, the summed weights of kept targets) and
// sgn.
TEST(DecomposeDifferentialTest, NllLoss2dForwardAndSgn) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[2, 5, 3, 4]", w: "f32[5]"):
    i = torch.ops.aten.arange.default(24, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    m = torch.ops.aten.remainder.Scalar(i, 5)
    t = torch.ops.aten.view.default(m, [2, 3, 4])
    a = torch.ops.aten.nll_loss2d_forward.default(x, t, None, 1, -100)
    a0 = a[0]
    a1 = a[1]
    b = torch.ops.aten.nll_loss2d_forward.default(x, t, w, 0, 2)
    b0 = b[0]
    c = torch.ops.aten.nll_loss2d_forward.default(x, t, w, 2, 4)
    c0 = c[0]
    c1 = c[1]
    d = torch.ops.aten.nll_loss2d_forward.default(x, t, w, 1, 3)
    d0 = d[0]
    s = torch.ops.aten.sgn.default(x)
    return (a0, a1, b0, c0, c1, d0, s)
)IR",
                    "nll_loss2d_forward", /*specials=*/true);
}

TEST(DecomposeDifferentialTest, Ternary) {
  for (const char* dtype : {"f32", "f16", "i64"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 4]", y: ")IR", dtype,
                                   R"IR([4]", z: ")IR", dtype, R"IR([3, 1]"):
    a = torch.ops.aten.addcmul.default(x, y, z)
    b = torch.ops.aten.addcmul.default(x, y, z, value = 3)
    return (a, b)
)IR"),
                      "addc");
  }
  for (const char* dtype : {"f32", "f16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 4]", y: ")IR", dtype,
                                   R"IR([4]", z: ")IR", dtype, R"IR([3, 1]"):
    a = torch.ops.aten.addcdiv.default(x, y, z)
    b = torch.ops.aten.addcdiv.default(x, y, z, value = -0.5)
    c = torch.ops.aten.lerp.Scalar(x, y, 0.25)
    d = torch.ops.aten.lerp.Scalar(x, y, 0.75)
    e = torch.ops.aten.lerp.Scalar(x, y, -2.0)
    f = torch.ops.aten.lerp.Tensor(x, y, z)
    return (a, b, c, d, e, f)
)IR"),
                      "addc");
  }
}

TEST(DecomposeDifferentialTest, Reductions) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([3, 4, 5]"):
    a = torch.ops.aten.var.correction(x, [1], correction = 0)
    b = torch.ops.aten.var.correction(x, None, keepdim = True)
    c = torch.ops.aten.var.correction(x, [0, 2], correction = 2.5)
    d = torch.ops.aten.var.dim(x, [-1], False, True)
    e = torch.ops.aten.std.correction(x, [2], correction = 1)
    f = torch.ops.aten.std.default(x)
    g = torch.ops.aten.std.dim(x, [0], False)
    vm = torch.ops.aten.var_mean.correction(x, [1, 2], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1]
    vm2 = torch.ops.aten.var_mean.correction(x, [0], correction = 0, keepdim = True)
    getitem_2 = vm2[0]
    getitem_3 = vm2[1]
    h = torch.ops.aten.mean.dim(x, [1], True)
    i = torch.ops.aten.mean.dim(x, [-1, 0])
    j = torch.ops.aten.mean.default(x)
    k = torch.ops.aten.mean.dim(x, None)
    return (a, b, c, d, e, f, g, getitem, getitem_1, getitem_2, getitem_3, h, i, j, k)
)IR"),
                      "aten.var.correction");
  }
}

// A correction larger than the count divides by max(0, n - correction) = 0.
TEST(DecomposeDifferentialTest, VarianceOfTooFewElements) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[3, 2]"):
    a = torch.ops.aten.var.correction(x, [1], correction = 3)
    b = torch.ops.aten.var.correction(x, [1], correction = 2)
    c = torch.ops.aten.mean.dim(x, [0], dtype = torch.float64)
    return (a, b, c)
)IR",
                    "aten.var.correction");
}

TEST(DecomposeDifferentialTest, DynamicShapes) {
  ExpectSameResults(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[s0, 4]", w: "f32[4]"):
    a = torch.ops.aten.mean.dim(x, [0])
    b = torch.ops.aten.var.correction(x, [0, 1], correction = 1)
    c = torch.ops.aten._softmax.default(x, 0, False)
    ln = torch.ops.aten.native_layer_norm.default(x, [4], w, None, 1e-05)
    getitem = ln[0]
    vm = torch.ops.aten.var_mean.correction(x, [0], correction = 1)
    getitem_1 = vm[0]
    getitem_2 = vm[1]
    return (a, b, c, getitem, getitem_1, getitem_2)
)IR",
                    "mean.dim");
}

TEST(DecomposeDifferentialTest, Clamp) {
  for (const char* dtype : {"f32", "f16", "f64"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([5, 6]", lo: ")IR", dtype,
                                   R"IR([6]", hi: ")IR", dtype, R"IR([]"):
    a = torch.ops.aten.clamp.default(x, -1.5, 0.5)
    b = torch.ops.aten.clamp.default(x, None, 1)
    c = torch.ops.aten.clamp_min.default(x, 0.25)
    d = torch.ops.aten.clamp_max.default(x, -0.0)
    e = torch.ops.aten.clamp.Tensor(x, lo, hi)
    f = torch.ops.aten.clamp.Tensor(x, None, lo)
    g = torch.ops.aten.clamp.default(x, 1.0, -1.0)
    h = torch.ops.aten.clamp.default(x, nan)
    return (a, b, c, d, e, f, g, h)
)IR"),
                      "clamp", /*specials=*/true, /*trials=*/6);
  }
  for (const char* dtype : {"i32", "i64", "i8"}) {
    ExpectSameResults(absl::StrCat(R"IR(def forward(self, x: ")IR", dtype,
                                   R"IR([5, 6]", lo: ")IR", dtype,
                                   R"IR([6]", hi: "f32[]"):
    a = torch.ops.aten.clamp.default(x, -2, 3)
    b = torch.ops.aten.clamp_min.default(x, -1000000)
    c = torch.ops.aten.clamp_max.default(x, 1)
    d = torch.ops.aten.clamp.Tensor(x, lo, None)
    e = torch.ops.aten.clamp.Tensor(x, lo, hi)
    f = torch.ops.aten.clamp.default(x, 0.5)
    return (a, b, c, d, e, f)
)IR"),
                      "clamp");
  }
}

TEST(DecomposeDifferentialTest, ScatterChain) {
  ExpectSameResults(R"IR(def forward(self, x: "f32[4, 6]", y: "f32[2]"):
    select = torch.ops.aten.select.int(x, 0, 1)
    slice_1 = torch.ops.aten.slice.Tensor(select, 0, 2, 4)
    add = torch.ops.aten.add.Tensor(slice_1, y)
    slice_scatter = torch.ops.aten.slice_scatter.default(select, add, 0, 2, 4)
    mul = torch.ops.aten.mul.Tensor(slice_scatter, 2)
    select_scatter = torch.ops.aten.select_scatter.default(x, slice_scatter, 0, 1)
    return (select_scatter, mul)
)IR",
                    "nothing-removed");
}

}  // namespace
}  // namespace lathe::passes
