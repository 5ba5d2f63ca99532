// The first tier's kernels (first_tier.h) against the oracle: the f32
// products by oneDNN's matmul primitives match the interpreter's
// double-precision ones to f32 rounding, through transposed and broadcast
// operands, addmm's alpha and beta (beta 0 ignores NaNs in self); other dtypes
// and arguments the reference must refuse are left to the reference.

#include "driver/first_tier.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "runtime/half.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

Tensor Filled(std::vector<int64_t> sizes, DType dtype, int seed) {
  Tensor t = Tensor::Empty(sizes, dtype).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = std::sin(0.61 * static_cast<double>(i + 1) + seed);
    if (dtype == DType::kFloat32) {
      t.data<float>()[i] = static_cast<float>(v);
    } else {
      t.data<double>()[i] = v;
    }
  }
  return t;
}

// The graph's outputs on the interpreter, with the first tier's kernels
// or without (the oracle).
std::vector<ir::Value> Outputs(const std::string& text,
                               const std::vector<Tensor>& inputs, bool first) {
  std::unique_ptr<ir::Graph> g = ir::ParseGraph(text).value();
  std::vector<ir::Value> in;
  for (const Tensor& t : inputs) in.push_back(ir::Value::OfTensor(t));
  absl::StatusOr<ir::Interpretation> r =
      ir::Interpret(*g, in, {}, ir::Generator::kDefaultSeed,
                    first ? &FirstTierKernels() : nullptr);
  EXPECT_OK(r.status());
  return r.ok() ? r->outputs : std::vector<ir::Value>();
}

// mm of a transposed operand, bmm, addmm with a row bias and alpha/beta,
// addmm with a column bias (broadcast along the rows).
constexpr char kProducts[] = R"(class g(torch.nn.Module):
    def forward(self, a: "f32[33, 70][70, 1]cpu", b: "f32[48, 70][70, 1]cpu", x: "f32[5, 17, 9][153, 9, 1]cpu", y: "f32[5, 9, 12][108, 12, 1]cpu", bias: "f32[48][1]cpu", col: "f32[33, 1][1, 1]cpu"):
        t: "f32[70, 48][1, 70]cpu" = torch.ops.aten.t.default(b)
        mm: "f32[33, 48][48, 1]cpu" = torch.ops.aten.mm.default(a, t)
        bmm: "f32[5, 17, 12][204, 12, 1]cpu" = torch.ops.aten.bmm.default(x, y)
        addmm: "f32[33, 48][48, 1]cpu" = torch.ops.aten.addmm.default(bias, a, t, beta = 0.5, alpha = -2.0)
        addmm_1: "f32[33, 48][48, 1]cpu" = torch.ops.aten.addmm.default(col, a, t)
        return (mm, bmm, addmm, addmm_1)
)";

TEST(FirstTierTest, ProductsMatchTheOracle) {
  std::vector<Tensor> in = {Filled({33, 70}, DType::kFloat32, 1),
                            Filled({48, 70}, DType::kFloat32, 2),
                            Filled({5, 17, 9}, DType::kFloat32, 3),
                            Filled({5, 9, 12}, DType::kFloat32, 4),
                            Filled({48}, DType::kFloat32, 5),
                            Filled({33, 1}, DType::kFloat32, 6)};
  std::vector<ir::Value> want = Outputs(kProducts, in, false);
  std::vector<ir::Value> got = Outputs(kProducts, in, true);
  ASSERT_EQ(got.size(), 4u);
  ASSERT_EQ(want.size(), 4u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].tensor.sizes(), want[k].tensor.sizes());
    EXPECT_EQ(got[k].tensor.strides(), want[k].tensor.strides());
    testing::ExpectTensorsClose(got[k].tensor, want[k].tensor, 1e-5,
                                absl::StrCat("output ", k));
  }
  // The products ran in f32 (oneDNN), not the reference's double: some of
  // mm's 1,584 sums of 70 products round differently.
  int differ = 0;
  for (int64_t i = 0; i < got[0].tensor.numel(); ++i) {
    differ += got[0].tensor.data<float>()[i] != want[0].tensor.data<float>()[i];
  }
  EXPECT_GT(differ, 0);
}

TEST(FirstTierTest, Bf16ProductsSumInF32AndRoundOnce) {
  constexpr char kText[] = R"(class g(torch.nn.Module):
    def forward(self, a: "bf16[24, 40][40, 1]cpu", b: "bf16[40, 16][16, 1]cpu", bias: "bf16[16][1]cpu", x: "bf16[3, 8, 40][320, 40, 1]cpu", y: "bf16[3, 40, 5][200, 5, 1]cpu"):
        mm: "bf16[24, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        addmm: "bf16[24, 16][16, 1]cpu" = torch.ops.aten.addmm.default(bias, a, b)
        bmm: "bf16[3, 8, 5][40, 5, 1]cpu" = torch.ops.aten.bmm.default(x, y)
        return (mm, addmm, bmm)
)";
  auto bf16 = [](std::vector<int64_t> sizes, int seed) {
    Tensor f = Filled(sizes, DType::kFloat32, seed);
    Tensor t = Tensor::Empty(sizes, DType::kBFloat16).value();
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.data<BFloat16>()[i] = BFloat16::FromFloat(f.data<float>()[i]);
    }
    return t;
  };
  std::vector<Tensor> in = {bf16({24, 40}, 1), bf16({40, 16}, 2), bf16({16}, 3),
                            bf16({3, 8, 40}, 4), bf16({3, 40, 5}, 5)};
  std::vector<ir::Value> got = Outputs(kText, in, true);
  std::vector<ir::Value> want = Outputs(kText, in, false);
  ASSERT_EQ(got.size(), 3u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].tensor.dtype(), DType::kBFloat16);
    testing::ExpectTensorsClose(got[k].tensor, want[k].tensor,
                                testing::DTypeTolerance(DType::kBFloat16),
                                absl::StrCat("output ", k));
  }
}

// mm.dtype / bmm.dtype with an f32 out_dtype from bf16 operands: the f32
// sums unrounded ((1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 kept; bf16 would round
// it to 1 + 2^-6); bf16 out_dtype rounds as bmm; f16 operands, which the
// first tier does not take, run the reference with the same result.
TEST(FirstTierTest, ProductsInF32KeepTheSumsUnrounded) {
  constexpr char kText[] = R"(class g(torch.nn.Module):
    def forward(self, a: "bf16[1, 1, 1][1, 1, 1]cpu", h: "f16[2, 2][2, 1]cpu"):
        f = torch.ops.aten.bmm.dtype(a, a, torch.float32)
        r = torch.ops.aten.bmm.dtype(a, a, torch.bfloat16)
        m = torch.ops.aten.mm.dtype(h, h, torch.float32)
        return (f, r, m)
)";
  Tensor a = Tensor::Empty({1, 1, 1}, DType::kBFloat16).value();
  a.data<BFloat16>()[0] = BFloat16::FromFloat(1 + 0x1p-7f);
  Tensor h = Tensor::Empty({2, 2}, DType::kFloat16).value();
  for (int i = 0; i < 4; ++i) h.data<Half>()[i] = Half::FromFloat(i + 1.0f);
  std::vector<ir::Value> got = Outputs(kText, {a, h}, true);
  std::vector<ir::Value> want = Outputs(kText, {a, h}, false);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(got[0].tensor.data<float>()[0], 1 + 0x1p-6f + 0x1p-14f);
  EXPECT_EQ(got[1].tensor.dtype(), DType::kBFloat16);
  EXPECT_EQ(got[1].tensor.GetDouble({0, 0, 0}), 1 + 0x1p-6);
  EXPECT_EQ(got[2].tensor.dtype(), DType::kFloat32);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[2].tensor.data<float>()[i], want[2].tensor.data<float>()[i]);
  }
}

TEST(FirstTierTest, BetaZeroIgnoresNaNsInSelf) {
  constexpr char kText[] = R"(class g(torch.nn.Module):
    def forward(self, s: "f32[4, 3][3, 1]cpu", a: "f32[4, 5][5, 1]cpu", b: "f32[5, 3][3, 1]cpu"):
        addmm: "f32[4, 3][3, 1]cpu" = torch.ops.aten.addmm.default(s, a, b, beta = 0, alpha = 3)
        return (addmm,)
)";
  Tensor s = Tensor::Empty({4, 3}, DType::kFloat32).value();
  for (int64_t i = 0; i < 12; ++i) {
    s.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<Tensor> in = {s, Filled({4, 5}, DType::kFloat32, 1),
                            Filled({5, 3}, DType::kFloat32, 2)};
  std::vector<ir::Value> got = Outputs(kText, in, true);
  std::vector<ir::Value> want = Outputs(kText, in, false);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_FALSE(std::isnan(got[0].tensor.data<float>()[i])) << i;
  }
  testing::ExpectTensorsClose(got[0].tensor, want[0].tensor, 1e-5, "addmm");
}

TEST(FirstTierTest, OtherDtypesRunTheReference) {
  constexpr char kText[] = R"(class g(torch.nn.Module):
    def forward(self, a: "f64[6, 7][7, 1]cpu", b: "f64[7, 5][5, 1]cpu"):
        mm: "f64[6, 5][5, 1]cpu" = torch.ops.aten.mm.default(a, b)
        return (mm,)
)";
  std::vector<Tensor> in = {Filled({6, 7}, DType::kFloat64, 1),
                            Filled({7, 5}, DType::kFloat64, 2)};
  std::vector<ir::Value> got = Outputs(kText, in, true);
  std::vector<ir::Value> want = Outputs(kText, in, false);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < 30; ++i) {  // the same kernel: the same bits
    EXPECT_EQ(got[0].tensor.data<double>()[i],
              want[0].tensor.data<double>()[i]);
  }
}

// Convolutions by the routine the compiled code calls: 2-d with bias,
// stride, padding and groups on a channels-last input (the result keeps
// the oracle's layout), 1-d with dilation and no bias, 3-d.
constexpr char kConvolutions[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[2, 4, 9, 7][252, 1, 28, 4]cpu", w: "f32[6, 2, 3, 3][18, 9, 3, 1]cpu", b: "f32[6][1]cpu", y: "f32[3, 5, 20][100, 20, 1]cpu", v: "f32[4, 5, 3][15, 3, 1]cpu", z: "f32[1, 2, 5, 6, 4][240, 120, 24, 4, 1]cpu", u: "f32[3, 2, 2, 3, 2][24, 12, 6, 2, 1]cpu"):
        conv2d: "f32[2, 6, 5, 4][120, 1, 24, 6]cpu" = torch.ops.aten.convolution.default(x, w, b, [2, 2], [1, 1], [1, 1], False, [0, 0], 2)
        conv1d: "f32[3, 4, 16][64, 16, 1]cpu" = torch.ops.aten.convolution.default(y, v, None, [1], [0], [2], False, [0], 1)
        conv3d: "f32[1, 3, 4, 4, 3][48, 16, 4, 1, 1]cpu" = torch.ops.aten.convolution.default(z, u, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)
        return (conv2d, conv1d, conv3d)
)";

TEST(FirstTierTest, ConvolutionsMatchTheOracle) {
  Tensor x = Filled({2, 9, 7, 4}, DType::kFloat32, 1)
                 .AsStrided({2, 4, 9, 7}, {252, 1, 28, 4}, 0)
                 .value();
  std::vector<Tensor> in = {x,
                            Filled({6, 2, 3, 3}, DType::kFloat32, 2),
                            Filled({6}, DType::kFloat32, 3),
                            Filled({3, 5, 20}, DType::kFloat32, 4),
                            Filled({4, 5, 3}, DType::kFloat32, 5),
                            Filled({1, 2, 5, 6, 4}, DType::kFloat32, 6),
                            Filled({3, 2, 2, 3, 2}, DType::kFloat32, 7)};
  std::vector<ir::Value> want = Outputs(kConvolutions, in, false);
  std::vector<ir::Value> got = Outputs(kConvolutions, in, true);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(want.size(), 3u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].tensor.sizes(), want[k].tensor.sizes());
    EXPECT_EQ(got[k].tensor.strides(), want[k].tensor.strides());
    testing::ExpectTensorsClose(got[k].tensor, want[k].tensor, 1e-5,
                                absl::StrCat("output ", k));
  }
  // The kernel ran it (not the reference): it computes the call itself.
  const ir::OpDef* conv =
      ir::OpRegistry::Global().Find("aten.convolution.default");
  ASSERT_NE(conv, nullptr);
  auto ints = [](std::vector<int64_t> v) {
    std::vector<ir::Value> l;
    for (int64_t i : v) l.push_back(ir::Value::Int(i));
    return ir::Value::List(l);
  };
  std::vector<ir::Value> args = {ir::Value::OfTensor(in[3]),
                                 ir::Value::OfTensor(in[4]),
                                 ir::Value::None(),
                                 ints({1}),
                                 ints({0}),
                                 ints({2}),
                                 ir::Value::Bool(false),
                                 ints({0}),
                                 ir::Value::Int(1)};
  ir::OpCall call(*conv, args, nullptr, nullptr);
  std::optional<absl::StatusOr<ir::Value>> ran =
      FirstTierKernels().at("aten.convolution.default")(call);
  ASSERT_TRUE(ran.has_value());
  EXPECT_OK(ran->status());
  // A transposed convolution, or f64 operands, are the reference's.
  args[6] = ir::Value::Bool(true);
  ir::OpCall transposed(*conv, args, nullptr, nullptr);
  EXPECT_FALSE(FirstTierKernels().at("aten.convolution.default")(transposed));
  args[6] = ir::Value::Bool(false);
  args[0] = ir::Value::OfTensor(Filled({3, 5, 20}, DType::kFloat64, 4));
  args[1] = ir::Value::OfTensor(Filled({4, 5, 3}, DType::kFloat64, 5));
  ir::OpCall f64(*conv, args, nullptr, nullptr);
  EXPECT_FALSE(FirstTierKernels().at("aten.convolution.default")(f64));
}

TEST(FirstTierTest, ArgumentsTheReferenceRefusesAreLeftToIt) {
  const ir::OpDef* mm = ir::OpRegistry::Global().Find("aten.mm.default");
  ASSERT_NE(mm, nullptr);
  // [2, 3] @ [4, 5]: the reference names the shapes.
  ir::OpCall bad(*mm,
                 {ir::Value::OfTensor(Filled({2, 3}, DType::kFloat32, 1)),
                  ir::Value::OfTensor(Filled({4, 5}, DType::kFloat32, 2))},
                 nullptr, nullptr);
  EXPECT_FALSE(FirstTierKernels().at("aten.mm.default")(bad).has_value());
  EXPECT_THAT(mm->kernel(bad).status().message(),
              ::testing::HasSubstr("mat1 and mat2 shapes cannot be multiplied "
                                   "(2x3 and 4x5)"));
  // Mixed dtypes too.
  ir::OpCall mixed(*mm,
                   {ir::Value::OfTensor(Filled({2, 3}, DType::kFloat32, 1)),
                    ir::Value::OfTensor(Filled({3, 5}, DType::kFloat64, 2))},
                   nullptr, nullptr);
  EXPECT_FALSE(FirstTierKernels().at("aten.mm.default")(mixed).has_value());
}

}  // namespace
}  // namespace lathe
