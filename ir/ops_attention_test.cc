// The CUDA kernels' attention ops (ops_attention.cc) on the interpreter:
// values against PyTorch 2.15's (its math path in float64 on this
// machine, with autograd for the gradients), result layouts against its
// meta functions' (torch/_meta_registrations.py, run on meta tensors).

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

using ::testing::HasSubstr;

constexpr char kEfficient[] =
    "aten._scaled_dot_product_efficient_attention.default";
constexpr char kEfficientBackward[] =
    "aten._scaled_dot_product_efficient_attention_backward.default";
constexpr char kCudnn[] = "aten._scaled_dot_product_cudnn_attention.default";
constexpr char kCudnnBackward[] =
    "aten._scaled_dot_product_cudnn_attention_backward.default";
constexpr double kInf = std::numeric_limits<double>::infinity();

// B = 1, H = 2, L = 3, S = 4, E = 2, in float64; an additive bias [L, S].
struct Attention {
  Tensor q = T({1, 2, 3, 2},
               {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.2, 0.1, 0.3, -0.5},
               DType::kFloat64);
  Tensor k = T({1, 2, 4, 2},
               {0.3, -0.1, 0.2, 0.5, -0.4, 0.6, 0.1, 0.1, 0.5, -0.2, -0.3, 0.4,
                0.6, 0.2, -0.1, -0.7},
               DType::kFloat64);
  Tensor v =
      T({1, 2, 4, 2},
        {1, 2, -1, 0.5, 3, -2, 0.5, 0.25, 2, -1, 0.5, 1.5, -1, 1, 0.25, -0.5},
        DType::kFloat64);
  Tensor bias = T({3, 4}, {0, -1, 2, 0.5, 1, 0, -0.5, 0.25, 0.1, 0.2, -0.3, 0},
                  DType::kFloat64);
  Tensor grad =
      T({1, 2, 3, 2}, {1, -0.5, 0.25, 2, 0.5, 0.5, -1, 1, 0.3, -0.2, 0.7, 0.1},
        DType::kFloat64);
};

// torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
// and its logsumexp, then backward(grad): PyTorch's values.
const std::vector<double> kOut = {
    2.282705491345, -1.191740944609, 0.772053690347,  0.754481897771,
    0.577470112192, 0.611747139484,  -0.610575718205, 0.732550709523,
    0.981524329396, -0.175224386384, 0.612353964554,  0.075954502281};
const std::vector<double> kLse = {2.389745441577, 1.733265635436,
                                  1.343897963516, 2.619786018961,
                                  1.68175085473,  1.470561117673};
const std::vector<double> kDq = {
    -0.332428019443, 0.278853454284,  0.386795730065, -0.452459652381,
    0.030650446454,  -0.113235875799, 0.111572104088, 0.203343059489,
    0.06311089801,   -0.052693773281, 0.016603600211, -0.014906939133};
const std::vector<double> kDk = {
    -0.148572569784, 0.149742668136,  -0.053901988987, 0.025141551297,
    0.197703169762,  -0.074759463016, 0.004771389009,  -0.100124756418,
    -0.154430994525, -0.2817255826,   0.011715205517,  -0.01754437735,
    0.236372873059,  0.361133495794,  -0.093657084051, -0.061863535844};
const std::vector<double> kDv = {
    0.369043362912,  0.997354180759,  0.223757932551, 0.510118761887,
    0.816227674959,  -0.016803702572, 0.340971029577, 0.509330759927,
    0.268237728014,  0.020678811207,  0.190994222604, 0.011882919105,
    -0.653212970029, 0.807843069614,  0.193981019411, 0.059595200074};
const std::vector<double> kDbias = {
    -0.627438093712, -0.161467059535, 1.336291402031,  -0.547386248784,
    1.335008922145,  -0.281472519418, -0.771814142649, -0.281722260078,
    0.56454707824,   -0.219009745757, -0.198977493399, -0.146559839084};

// `t`'s elements within `tol` of `want`'s.
void ExpectNear(const Tensor& t, const std::vector<double>& want,
                const std::string& what, double tol = 1e-9) {
  std::vector<double> got = Elements(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << what << " " << i;
  }
}

// The output is laid out (B, L, H, E) whatever the query's layout; the
// logsumexp is f32 [B, H, 32], +inf past L, as the kernel pads it.
TEST(AttentionOpsTest, EfficientAttentionAsPyTorch) {
  Attention a;
  ASSERT_OK_AND_ASSIGN(
      Value r, RunOp(kEfficient,
                     {V(a.q), V(a.k), V(a.v), V(a.bias), Value::Bool(true)}));
  ASSERT_EQ(r.list.size(), 4u);
  EXPECT_EQ(Describe(r.list[0]), "f64[1, 2, 3, 2][12, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(r.list[1]), "f32[1, 2, 32][64, 32, 1]cpu+0");
  EXPECT_EQ(Describe(r.list[2]), "i64[][]cpu+0");
  EXPECT_EQ(Describe(r.list[3]), "i64[][]cpu+0");
  ExpectNear(r.list[0].tensor, kOut, "output");
  std::vector<double> lse = Elements(r.list[1].tensor);
  for (int row = 0; row < 2; ++row) {
    for (int i = 0; i < 32; ++i) {
      if (i < 3) {
        EXPECT_NEAR(lse[row * 32 + i], kLse[row * 3 + i], 1e-6) << i;
      } else {
        EXPECT_EQ(lse[row * 32 + i], kInf) << i;
      }
    }
  }
  EXPECT_EQ(Elements(r.list[2].tensor), std::vector<double>{0});
  EXPECT_EQ(Elements(r.list[3].tensor), std::vector<double>{0});
  // Without compute_log_sumexp: an empty logsumexp, strided as PyTorch's.
  ASSERT_OK_AND_ASSIGN(Value plain,
                       RunOp(kEfficient, {V(a.q), V(a.k), V(a.v), Value::None(),
                                          Value::Bool(false)}));
  EXPECT_EQ(Describe(plain.list[1]), "f32[1, 2, 0][2, 1, 1]cpu+0");
}

// The gradients laid out (B, T, H, E); grad_bias of the bias's shape with
// its rows padded to 16 elements in memory, and None when not asked for.
TEST(AttentionOpsTest, EfficientAttentionBackwardAsPyTorch) {
  Attention a;
  ASSERT_OK_AND_ASSIGN(
      Value f, RunOp(kEfficient,
                     {V(a.q), V(a.k), V(a.v), V(a.bias), Value::Bool(true)}));
  auto backward = [&](bool bias_grad) {
    return RunOp(kEfficientBackward,
                 {V(a.grad), V(a.q), V(a.k), V(a.v), V(a.bias), f.list[0],
                  f.list[1], f.list[2], f.list[3], Value::Float(0),
                  Value::List({Value::Bool(true), Value::Bool(true),
                               Value::Bool(true), Value::Bool(bias_grad)})});
  };
  ASSERT_OK_AND_ASSIGN(Value g, backward(true));
  ASSERT_EQ(g.list.size(), 4u);
  EXPECT_EQ(Describe(g.list[0]), "f64[1, 2, 3, 2][12, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(g.list[1]), "f64[1, 2, 4, 2][16, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(g.list[2]), "f64[1, 2, 4, 2][16, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(g.list[3]), "f64[3, 4][16, 1]cpu+0");
  // From the forward's f32 logsumexp: within 1e-6.
  ExpectNear(g.list[0].tensor, kDq, "grad_query", 1e-6);
  ExpectNear(g.list[1].tensor, kDk, "grad_key", 1e-6);
  ExpectNear(g.list[2].tensor, kDv, "grad_value", 1e-6);
  ExpectNear(g.list[3].tensor, kDbias, "grad_bias", 1e-6);
  ASSERT_OK_AND_ASSIGN(Value no_bias_grad, backward(false));
  EXPECT_TRUE(no_bias_grad.list[3].is_none());
  // A bias the forward would refuse is refused here too (a 0-d one has no
  // last dim to pad).
  EXPECT_THAT(RunError(kEfficientBackward,
                       {V(a.grad), V(a.q), V(a.k), V(a.v),
                        V(T({}, {1}, DType::kFloat64)), f.list[0], f.list[1],
                        f.list[2], f.list[3], Value::Float(0),
                        Value::List({Value::Bool(true), Value::Bool(true),
                                     Value::Bool(true), Value::Bool(true)})}),
              HasSubstr("Attention mask dim in {2, 4}"));
  // A logsumexp shorter than the query's rows is refused, not read past.
  Tensor short_lse = T({1, 2, 2}, {0, 0, 0, 0});
  EXPECT_THAT(RunError(kEfficientBackward,
                       {V(a.grad), V(a.q), V(a.k), V(a.v), V(a.bias), f.list[0],
                        V(short_lse), f.list[2], f.list[3], Value::Float(0),
                        Value::List({Value::Bool(true), Value::Bool(true),
                                     Value::Bool(true), Value::Bool(true)})}),
              HasSubstr("logsumexp [1, 2, 2] is shorter than the query's"));
}

// Dropout is refused, as by the CPU kernel these ops share.
TEST(AttentionOpsTest, DropoutIsRefused) {
  Attention a;
  EXPECT_THAT(RunError(kEfficient, {V(a.q), V(a.k), V(a.v), Value::None(),
                                    Value::Bool(true), Value::Float(0.1)}),
              HasSubstr("dropout_p must be 0"));
  EXPECT_THAT(RunError(kCudnn, {V(a.q), V(a.k), V(a.v), Value::None(),
                                Value::Bool(true), Value::Float(0.1)}),
              HasSubstr("dropout_p must be 0"));
}

// cuDNN's: the output laid out as the query (here (B, L, H, E), a
// transposed projection), logsumexp f32 [B, H, L, 1], None for the
// cumulative lengths and the debug mask, and max_q and max_k; causal.
TEST(AttentionOpsTest, CudnnAttentionAsPyTorch) {
  Attention a;
  // The query's values, laid out (B, L, H, E).
  Tensor blhe = RunT("aten.permute.default", {V(a.q), Ints({0, 2, 1, 3})});
  blhe = RunT("aten.clone.default", {V(blhe)},
              {{"memory_format", Value::String("contiguous_format")}});
  Tensor q = RunT("aten.permute.default", {V(blhe), Ints({0, 2, 1, 3})});
  ASSERT_OK_AND_ASSIGN(
      Value r,
      RunOp(kCudnn, {V(q), V(a.k), V(a.v), Value::None(), Value::Bool(true),
                     Value::Float(0), Value::Bool(true)}));
  ASSERT_EQ(r.list.size(), 9u);
  EXPECT_EQ(Describe(r.list[0]), "f64[1, 2, 3, 2][12, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(r.list[1]), "f32[1, 2, 3, 1][6, 3, 1, 1]cpu+0");
  EXPECT_TRUE(r.list[2].is_none());
  EXPECT_TRUE(r.list[3].is_none());
  EXPECT_EQ(r.list[4].AsInt().value(), 3);
  EXPECT_EQ(r.list[5].AsInt().value(), 4);
  EXPECT_EQ(Describe(r.list[6]), "i64[][]cpu+0");
  EXPECT_TRUE(r.list[8].is_none());
  // is_causal=True: PyTorch's values.
  ExpectNear(r.list[0].tensor,
             {1.0, 2.0, -0.095170510499, 1.178622117126, 0.855544832826,
              0.521314486451, 2.0, -1.0, 1.191781051438, 0.347031580937,
              0.566124423501, 0.354427216667},
             "causal output");
  std::vector<double> lse = Elements(r.list[1].tensor);
  const std::vector<double> want_lse = {0.007071067812, 0.70123206143,
                                        0.993706390735, 0.134350288425,
                                        0.689098067452, 1.120426412811};
  for (size_t i = 0; i < want_lse.size(); ++i) {
    EXPECT_NEAR(lse[i], want_lse[i], 1e-6) << i;
  }
  // The backward: each gradient laid out as its input (empty_like).
  ASSERT_OK_AND_ASSIGN(
      Value g, RunOp(kCudnnBackward,
                     {V(a.grad), V(q), V(a.k), V(a.v), r.list[0], r.list[1],
                      r.list[6], r.list[7], Value::None(), Value::None(),
                      Value::None(), Value::Int(3), Value::Int(4),
                      Value::Float(0), Value::Bool(true)}));
  ASSERT_EQ(g.list.size(), 3u);
  EXPECT_EQ(Describe(g.list[0]), "f64[1, 2, 3, 2][12, 2, 4, 1]cpu+0");
  EXPECT_EQ(Describe(g.list[1]), "f64[1, 2, 4, 2][16, 8, 2, 1]cpu+0");
  EXPECT_EQ(Describe(g.list[2]), "f64[1, 2, 4, 2][16, 8, 2, 1]cpu+0");
  ExpectNear(g.list[0].tensor,
             {0.0, 0.0, 0.061311443707, -0.367868662242, 0.044563910018,
              -0.151193322233, 0.0, 0.0, 0.133540736347, -0.100155552261,
              -0.035438286241, -0.093017378117},
             "grad_query", 1e-6);
  ExpectNear(g.list[1].tensor,
             {-0.060706327781, 0.09737217082, 0.077304918906, -0.11729048017,
              -0.016598591125, 0.01991830935, 0.0, 0.0, 0.038301629771,
              -0.102785431054, 0.037232744627, -0.023105192944, -0.075534374399,
              0.125890623998, 0.0, 0.0},
             "grad_key", 1e-6);
  ExpectNear(g.list[2].tensor,
             {1.327836414727, 0.619562218041, 0.297586845439, 1.255861042126,
              0.124576739834, 0.124576739834, 0.0, 0.0, -0.589200462885,
              0.946683001736, 0.347615200357, -0.081195182097, 0.241585262527,
              0.034512180361, 0.0, 0.0},
             "grad_value", 1e-6);
}

}  // namespace
}  // namespace lathe::ir
