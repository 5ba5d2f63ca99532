// The first tier's elementwise kernels (first_tier_loops.h) against the
// oracle: the arithmetic gives the interpreter's bits, through broadcasts,
// numbers, alpha, transposed operands and in-place writes; the functions give
// its values to within an f32 ULP (NaN, infinities and signed zeros as it
// gives them); results keep the oracle's layout, and take over an operand's
// memory only where nothing else reads it; and the calls the kernels do not
// cover are left to the reference, with its errors.

#include "driver/first_tier_loops.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "runtime/device.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

// Values spread over [-6, 6), with a few that round-trip badly (tiny,
// huge, negative zero).
Tensor Filled(std::vector<int64_t> sizes, DType dtype, int seed) {
  Tensor t = Tensor::Empty(sizes, dtype).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = 6 * std::sin(0.61 * static_cast<double>(i + 1) + seed);
    if (i % 17 == 3) v = 1e-30 * v;
    if (i % 23 == 5) v = -0.0;
    if (dtype == DType::kFloat32) {
      t.data<float>()[i] = static_cast<float>(v);
    } else if (dtype == DType::kFloat64) {
      t.data<double>()[i] = v;
    } else {
      t.data<int64_t>()[i] = static_cast<int64_t>(v * 10);
    }
  }
  return t;
}

const ir::KernelOverrides& Kernels() {
  static const auto* k = [] {
    auto* kernels = new ir::KernelOverrides;
    AddFirstTierLoops(*kernels);
    return kernels;
  }();
  return *k;
}

// The graph's run with the kernels or without (the oracle): its outputs,
// or its error.
absl::StatusOr<std::vector<ir::Value>> RunGraph(
    const std::string& text, const std::vector<Tensor>& inputs, bool first) {
  std::unique_ptr<ir::Graph> g = ir::ParseGraph(text).value();
  std::vector<ir::Value> in;
  for (const Tensor& t : inputs) {
    // Each run gets its own copies (in-place ops write them), in the same
    // layout (every input here is dense).
    Tensor copy =
        Tensor::EmptyStrided(t.sizes(), t.strides(), t.dtype()).value();
    std::memcpy(copy.data_ptr(), t.data_ptr(), t.numel() * t.itemsize());
    in.push_back(ir::Value::OfTensor(copy));
  }
  absl::StatusOr<ir::Interpretation> r = ir::Interpret(
      *g, in, {}, ir::Generator::kDefaultSeed, first ? &Kernels() : nullptr);
  if (!r.ok()) return r.status();
  return r->outputs;
}

// Whether the kernel for `target` computed the call itself (rather than
// leaving it to the reference), and with which result.
std::optional<absl::StatusOr<ir::Value>> Direct(const std::string& target,
                                                std::vector<ir::Value> args) {
  const ir::OpDef* op = ir::OpRegistry::Global().Find(target);
  EXPECT_NE(op, nullptr) << target;
  auto it = Kernels().find(target);
  EXPECT_NE(it, Kernels().end()) << target;
  if (op == nullptr || it == Kernels().end()) return std::nullopt;
  return it->second(ir::OpCall(*op, std::move(args), nullptr));
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The f32 values of `got` and `want` are the same bits (`ulps` 0) or
// within `ulps` of each other, with the same sizes and strides.
void ExpectSame(const Tensor& got, const Tensor& want, int ulps,
                const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.strides(), want.strides()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  Tensor g = got.Clone().value(), w = want.Clone().value();  // contiguous
  if (g.dtype() != DType::kFloat32) {
    EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), g.numel() * g.itemsize()),
              0)
        << what;
    return;
  }
  int64_t off = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const float a = g.data<float>()[i], b = w.data<float>()[i];
    if (std::isnan(a) || std::isnan(b)) {
      off += std::isnan(a) != std::isnan(b);
      continue;
    }
    const int64_t d = static_cast<int64_t>(Bits(a)) - Bits(b);
    off += ulps == 0 ? d != 0 : (d > ulps || d < -ulps);
  }
  EXPECT_EQ(off, 0) << what << ": " << off << " of " << g.numel()
                    << " elements differ";
}

void ExpectMatchesOracle(const std::string& text,
                         const std::vector<Tensor>& inputs, int ulps) {
  absl::StatusOr<std::vector<ir::Value>> want = RunGraph(text, inputs, false);
  absl::StatusOr<std::vector<ir::Value>> got = RunGraph(text, inputs, true);
  ASSERT_OK(want.status());
  ASSERT_OK(got.status());
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < got->size(); ++k) {
    ExpectSame((*got)[k].tensor, (*want)[k].tensor, ulps,
               absl::StrCat("output ", k));
  }
}

// Broadcast rows and columns, a transposed operand, numbers, alpha,
// in-place writes (a number, a broadcast column, the tensor itself), a 0-d
// operand, self broadcast along the row, an empty tensor, and infinities and
// NaN among the values.
constexpr char kArithmetic[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[6, 40][40, 1]cpu", y: "f32[40][1]cpu", z: "f32[40, 6][6, 1]cpu", col: "f32[6, 1][1, 1]cpu", w: "f32[6, 40][40, 1]cpu", e: "f32[6, 0][1, 1]cpu", s: "f32[][]cpu"):
        add: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
        t: "f32[6, 40][1, 6]cpu" = torch.ops.aten.t.default(z)
        sub: "f32[6, 40][40, 1]cpu" = torch.ops.aten.sub.Tensor(x, t, alpha = 0.3)
        mul: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 0.7071067811865476)
        div: "f32[6, 40][40, 1]cpu" = torch.ops.aten.div.Tensor(x, col)
        div_1: "f32[6, 40][40, 1]cpu" = torch.ops.aten.div.Scalar(x, 3)
        add_1: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Scalar(x, 2.5, alpha = 3)
        rev: "f32[6, 40][40, 1]cpu" = torch.ops.aten.sub.Tensor(y, x)
        mul_: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul_.Tensor(w, 1.7)
        div_: "f32[6, 40][40, 1]cpu" = torch.ops.aten.div_.Tensor(mul_, col)
        sub_: "f32[6, 40][40, 1]cpu" = torch.ops.aten.sub_.Tensor(div_, y, alpha = 2)
        add_: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add_.Tensor(sub_, sub_)
        empty: "f32[6, 0][1, 1]cpu" = torch.ops.aten.add.Tensor(e, e)
        empty_exp: "f32[6, 0][1, 1]cpu" = torch.ops.aten.exp.default(e)
        scaled: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, s)
        across: "f32[6, 40][40, 1]cpu" = torch.ops.aten.sub.Tensor(col, x)
        return (add, sub, mul, div, div_1, add_1, rev, add_, w, empty, empty_exp, scaled, across)
)";

TEST(FirstTierLoopsTest, ArithmeticIsTheOraclesBits) {
  Tensor x = Filled({6, 40}, DType::kFloat32, 1);
  const float inf = std::numeric_limits<float>::infinity();
  x.data<float>()[1] = inf;
  x.data<float>()[2] = -inf;
  x.data<float>()[3] = std::nanf("");
  Tensor col = Filled({6, 1}, DType::kFloat32, 4);
  col.data<float>()[2] = 0.0f;  // x / 0
  Tensor s = Tensor::Empty({}, DType::kFloat32).value();
  s.data<float>()[0] = -1.25f;
  ExpectMatchesOracle(
      kArithmetic,
      {x, Filled({40}, DType::kFloat32, 2), Filled({40, 6}, DType::kFloat32, 3),
       col, Filled({6, 40}, DType::kFloat32, 5),
       Filled({6, 0}, DType::kFloat32, 6), s},
      /*ulps=*/0);
}

// The kernels compute these calls themselves (the test above would pass
// if they left every call to the reference).
TEST(FirstTierLoopsTest, ComputesF32CallsItself) {
  ir::Value x = ir::Value::OfTensor(Filled({6, 40}, DType::kFloat32, 1));
  ir::Value y = ir::Value::OfTensor(Filled({40}, DType::kFloat32, 2));
  ir::Value col = ir::Value::OfTensor(Filled({6, 1}, DType::kFloat32, 4));
  for (const auto& [target, args] :
       std::vector<std::pair<std::string, std::vector<ir::Value>>>{
           {"aten.add.Tensor", {x, y, ir::Value::Int(1)}},
           {"aten.sub.Tensor", {x, col, ir::Value::Float(0.5)}},
           {"aten.mul.Tensor", {x, ir::Value::Float(0.5)}},
           {"aten.div.Tensor", {x, col}},
           {"aten.mul.Scalar", {x, ir::Value::Float(0.5)}},
           {"aten.sub.Tensor", {col, x, ir::Value::Int(1)}},
           {"aten.exp.default", {x}},
           {"aten.erf.default", {x}},
           {"aten.tanh.default", {x}},
           {"aten.sigmoid.default", {x}},
           {"aten.silu.default", {x}},
           {"aten.relu.default", {x}},
           {"aten.mean.dim",
            {x, ir::Value::List({ir::Value::Int(1)}), ir::Value::Bool(true),
             ir::Value::None()}},
           {"aten.var_mean.correction",
            {x, ir::Value::List({ir::Value::Int(-1)}), ir::Value::Int(0),
             ir::Value::Bool(false)}},
       }) {
    std::optional<absl::StatusOr<ir::Value>> r = Direct(target, args);
    ASSERT_TRUE(r.has_value()) << target;
    EXPECT_OK(r->status());
  }
  // In place: the result is the written tensor, with the oracle's values.
  Tensor w = Filled({6, 40}, DType::kFloat32, 5);
  for (const std::string& target : {"aten.mul_.Tensor", "aten.add_.Tensor",
                                    "aten.sub_.Tensor", "aten.div_.Tensor"}) {
    std::vector<ir::Value> args = {ir::Value::OfTensor(w), col};
    if (target == "aten.add_.Tensor" || target == "aten.sub_.Tensor") {
      args.push_back(ir::Value::Int(1));
    }
    std::optional<absl::StatusOr<ir::Value>> r = Direct(target, args);
    ASSERT_TRUE(r.has_value()) << target;
    ASSERT_OK(r->status());
    EXPECT_EQ((*r)->tensor.data_ptr(), w.data_ptr()) << target;
  }
  // add_.Scalar too; but not an operand over self's bytes in another
  // layout through a storage of its own (a caller's borrowed tensor).
  std::optional<absl::StatusOr<ir::Value>> r =
      Direct("aten.add_.Scalar",
             {ir::Value::OfTensor(w), ir::Value::Float(2), ir::Value::Int(1)});
  ASSERT_TRUE(r.has_value());
  EXPECT_OK(r->status());
  Tensor square = Filled({8, 8}, DType::kFloat32, 6);
  Tensor alias =
      Tensor::Wrap(Storage::Borrow(square.data_ptr(), 64 * 4, Device::Cpu()),
                   DType::kFloat32, {8, 8}, {1, 8}, 0)
          .value();
  EXPECT_FALSE(Direct("aten.add_.Tensor",
                      {ir::Value::OfTensor(square), ir::Value::OfTensor(alias),
                       ir::Value::Int(1)}));
}

// Comparisons of an f32 tensor with numbers (one not an f32, rounded as
// the reference rounds it; NaN and infinities among the values), and where
// over their masks with a tensor or a number as self: the softmax's exp
// (ExpUnmasked). The oracle's bits, and the kernels compute every call.
constexpr char kWhere[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[6, 40][40, 1]cpu", y: "f32[6, 40][40, 1]cpu"):
        lt: "b8[6, 40][40, 1]cpu" = torch.ops.aten.lt.Scalar(x, -0.1)
        le: "b8[6, 40][40, 1]cpu" = torch.ops.aten.le.Scalar(x, 1)
        gt: "b8[6, 40][40, 1]cpu" = torch.ops.aten.gt.Scalar(x, 2.5)
        ge: "b8[6, 40][40, 1]cpu" = torch.ops.aten.ge.Scalar(x, -87.33654022216797)
        eq: "b8[6, 40][40, 1]cpu" = torch.ops.aten.eq.Scalar(x, 0.0)
        ne: "b8[6, 40][40, 1]cpu" = torch.ops.aten.ne.Scalar(x, 0.0)
        zeroed: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Scalar(x, 0.0)
        where: "f32[6, 40][40, 1]cpu" = torch.ops.aten.where.self(lt, zeroed, y)
        where_1: "f32[6, 40][40, 1]cpu" = torch.ops.aten.where.ScalarSelf(gt, 0.1, x)
        return (lt, le, gt, ge, eq, ne, where, where_1)
)";

TEST(FirstTierLoopsTest, ComparisonsAndWhereAreTheOraclesBits) {
  Tensor x = Filled({6, 40}, DType::kFloat32, 1);
  const float inf = std::numeric_limits<float>::infinity();
  x.data<float>()[1] = inf;
  x.data<float>()[2] = -inf;
  x.data<float>()[3] = std::nanf("");
  x.data<float>()[4] = -0.1f;  // not -0.1 in double
  ExpectMatchesOracle(kWhere, {x, Filled({6, 40}, DType::kFloat32, 2)},
                      /*ulps=*/0);
  ir::Value t = ir::Value::OfTensor(x);
  std::optional<absl::StatusOr<ir::Value>> mask =
      Direct("aten.lt.Scalar", {t, ir::Value::Float(-0.1)});
  ASSERT_TRUE(mask.has_value());
  ASSERT_OK(mask->status());
  for (const auto& [target, self] :
       std::vector<std::pair<std::string, ir::Value>>{
           {"aten.where.self", t},
           {"aten.where.ScalarSelf", ir::Value::Float(2)}}) {
    std::optional<absl::StatusOr<ir::Value>> r =
        Direct(target, {**mask, self, t});
    ASSERT_TRUE(r.has_value()) << target;
    EXPECT_OK(r->status());
  }
  // Operands of other layouts are the reference's: a broadcast mask, a
  // transposed operand.
  ir::Value row = Direct("aten.lt.Scalar",
                         {ir::Value::OfTensor(Filled({40}, DType::kFloat32, 3)),
                          ir::Value::Float(0)})
                      ->value();
  EXPECT_FALSE(Direct("aten.where.self", {row, t, t}));
  Tensor xt =
      Filled({40, 6}, DType::kFloat32, 4).AsStrided({6, 40}, {1, 6}, 0).value();
  EXPECT_FALSE(Direct("aten.where.self", {**mask, ir::Value::OfTensor(xt), t}));
}

// Reductions over the last dimension, kept or dropped, with a NaN in one
// row (amax and amin keep it), both corrections, and a row of one element
// (var with correction 1 divides by 0).
constexpr char kReductions[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[4, 3, 77][231, 77, 1]cpu", y: "f32[5, 1][1, 1]cpu"):
        sum_1: "f32[4, 3, 1][3, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(x, [-1], True)
        mean: "f32[4, 3][3, 1]cpu" = torch.ops.aten.mean.dim(x, [2])
        amax: "f32[4, 3, 1][3, 1, 1]cpu" = torch.ops.aten.amax.default(x, [-1], True)
        amin: "f32[4, 3][3, 1]cpu" = torch.ops.aten.amin.default(x, [2])
        var_mean = torch.ops.aten.var_mean.correction(x, [2], correction = 0, keepdim = True)
        getitem: "f32[4, 3, 1][3, 1, 1]cpu" = var_mean[0]
        getitem_1: "f32[4, 3, 1][3, 1, 1]cpu" = var_mean[1];  var_mean = None
        var: "f32[4, 3][3, 1]cpu" = torch.ops.aten.var.correction(x, [-1])
        var_1: "f32[5][1]cpu" = torch.ops.aten.var.correction(y, [1], correction = 1)
        return (sum_1, mean, amax, amin, getitem, getitem_1, var, var_1)
)";

TEST(FirstTierLoopsTest, ReductionsAreTheOraclesBits) {
  Tensor x = Filled({4, 3, 77}, DType::kFloat32, 1);
  x.data<float>()[77 + 5] = std::nanf("");  // row 1
  ExpectMatchesOracle(kReductions, {x, Filled({5, 1}, DType::kFloat32, 2)},
                      /*ulps=*/0);
  ir::Value v = ir::Value::OfTensor(x);
  for (const std::string& target :
       {"aten.sum.dim_IntList", "aten.amax.default", "aten.amin.default"}) {
    std::vector<ir::Value> args = {v, ir::Value::List({ir::Value::Int(-1)}),
                                   ir::Value::Bool(false)};
    if (target == "aten.sum.dim_IntList") args.push_back(ir::Value::None());
    std::optional<absl::StatusOr<ir::Value>> r = Direct(target, args);
    ASSERT_TRUE(r.has_value()) << target;
    EXPECT_OK(r->status());
  }
  // Another dimension, or a non-contiguous input: the reference's.
  EXPECT_FALSE(Direct(
      "aten.amax.default",
      {v, ir::Value::List({ir::Value::Int(0)}), ir::Value::Bool(false)}));
  ir::Value t =
      ir::Value::OfTensor(x.AsStrided({4, 77, 3}, {231, 1, 77}, 0).value());
  EXPECT_FALSE(Direct(
      "aten.amax.default",
      {t, ir::Value::List({ir::Value::Int(-1)}), ir::Value::Bool(false)}));
}

// Max pools: the default stride, padding with dilation, stride and
// ceil_mode, a channels-last input (its results channels-last), a window of
// NaNs (the last NaN's index wins) and ties (the first index wins).
constexpr char kPools[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 9, 10][270, 90, 10, 1]cpu", y: "f32[2, 4, 7, 6][168, 1, 24, 4]cpu"):
        pool = torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2])
        getitem: "f32[2, 3, 4, 5][60, 20, 5, 1]cpu" = pool[0]
        getitem_1: "i64[2, 3, 4, 5][60, 20, 5, 1]cpu" = pool[1];  pool = None
        pool_1 = torch.ops.aten.max_pool2d_with_indices.default(x, [3, 3], [2, 1], [1, 1], [2, 1], True)
        getitem_2: "f32[2, 3, 4, 10][120, 40, 10, 1]cpu" = pool_1[0]
        getitem_3: "i64[2, 3, 4, 10][120, 40, 10, 1]cpu" = pool_1[1];  pool_1 = None
        pool_2 = torch.ops.aten.max_pool2d_with_indices.default(y, [3, 2], [2, 2])
        getitem_4: "f32[2, 4, 3, 3][36, 1, 12, 4]cpu" = pool_2[0]
        getitem_5: "i64[2, 4, 3, 3][36, 1, 12, 4]cpu" = pool_2[1];  pool_2 = None
        return (getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5)
)";

TEST(FirstTierLoopsTest, MaxPoolsAreTheOraclesBitsAndIndices) {
  Tensor x = Filled({2, 3, 9, 10}, DType::kFloat32, 1);
  x.data<float>()[0] = std::nanf("");   // window (0, 0) of plane 0
  x.data<float>()[11] = std::nanf("");  // the same window's last element
  x.data<float>()[22] = x.data<float>()[23] = 50.0f;  // a tie
  Tensor y = Filled({2, 7, 6, 4}, DType::kFloat32, 2)
                 .AsStrided({2, 4, 7, 6}, {168, 1, 24, 4}, 0)
                 .value();
  ExpectMatchesOracle(kPools, {x, y}, /*ulps=*/0);
  auto ints = [](std::vector<int64_t> v) {
    std::vector<ir::Value> l;
    for (int64_t i : v) l.push_back(ir::Value::Int(i));
    return ir::Value::List(l);
  };
  std::optional<absl::StatusOr<ir::Value>> r =
      Direct("aten.max_pool2d_with_indices.default",
             {ir::Value::OfTensor(y), ints({3, 2}), ints({2, 2}), ints({0}),
              ints({1}), ir::Value::Bool(false)});
  ASSERT_TRUE(r.has_value());
  ASSERT_OK(r->status());
  ASSERT_EQ((*r)->list.size(), 2u);
  EXPECT_EQ((*r)->list[0].tensor.strides(),
            (std::vector<int64_t>{36, 1, 12, 4}));
  // A 3-d input is the reference's.
  EXPECT_FALSE(Direct(
      "aten.max_pool2d_with_indices.default",
      {ir::Value::OfTensor(Filled({3, 9, 10}, DType::kFloat32, 3)), ints({2}),
       ints({}), ints({0}), ints({1}), ir::Value::Bool(false)}));
}

// exp, erf, tanh, sigmoid, silu, log and the rest, with the infinities,
// NaN and the signed zeros they meet.
TEST(FirstTierLoopsTest, FunctionsAreTheOraclesValuesWithinAnUlp) {
  std::string text =
      "class g(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[3, 300][300, 1]cpu\", p: "
      "\"f32[3, 300][300, 1]cpu\"):\n";
  std::vector<std::string> outs;
  for (const char* f :
       {"exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh",
        "tanh", "asinh", "erf", "sigmoid", "silu", "relu"}) {
    absl::StrAppend(&text, "        ", f,
                    "_r: \"f32[3, 300][300, 1]cpu\" = ", "torch.ops.aten.", f,
                    ".default(x)\n");
    outs.push_back(absl::StrCat(f, "_r"));
  }
  // Their domains: p in (0, 1].
  for (const char* f :
       {"log", "log2", "log10", "log1p", "asin", "acos", "atanh", "acosh"}) {
    absl::StrAppend(&text, "        ", f,
                    "_r: \"f32[3, 300][300, 1]cpu\" = ", "torch.ops.aten.", f,
                    ".default(p)\n");
    outs.push_back(absl::StrCat(f, "_r"));
  }
  absl::StrAppend(&text, "        return (", absl::StrJoin(outs, ", "), ")\n");
  Tensor x = Filled({3, 300}, DType::kFloat32, 7);
  const float inf = std::numeric_limits<float>::infinity();
  // Around exp's f32 underflow (-103.97) and the -110 its loop raises lower
  // arguments to, and past double's (-708).
  const float specials[] = {inf,     -inf,    std::nanf(""), 0.0f,    -0.0f,
                            88.8f,   -104.0f, 1e-38f,        20.0f,   -20.0f,
                            -103.9f, -110.0f, -110.5f,       -800.0f, 800.0f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float); ++i) {
    x.data<float>()[i] = specials[i];
  }
  Tensor p = Tensor::Empty({3, 300}, DType::kFloat32).value();
  for (int64_t i = 0; i < p.numel(); ++i) {
    p.data<float>()[i] = static_cast<float>(i + 1) / 900.0f;
  }
  p.data<float>()[0] = 0.0f;  // log(0) = -inf; acosh(0) = NaN
  ExpectMatchesOracle(text, {x, p}, /*ulps=*/1);
}

// A transposed or permuted input keeps its layout, as the oracle's does.
constexpr char kLayouts[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[40, 6][6, 1]cpu", y: "f32[2, 3, 4, 5][60, 1, 15, 3]cpu"):
        t: "f32[6, 40][1, 6]cpu" = torch.ops.aten.t.default(x)
        erf: "f32[6, 40][1, 6]cpu" = torch.ops.aten.erf.default(t)
        mul: "f32[6, 40][1, 6]cpu" = torch.ops.aten.mul.Tensor(t, 2.0)
        exp: "f32[2, 3, 4, 5][60, 1, 15, 3]cpu" = torch.ops.aten.exp.default(y)
        add: "f32[2, 3, 4, 5][60, 1, 15, 3]cpu" = torch.ops.aten.add.Tensor(y, y)
        return (erf, mul, exp, add)
)";

TEST(FirstTierLoopsTest, ResultsKeepTheOraclesLayout) {
  // Channels-last: [2, 4, 5, 3] in memory.
  Tensor y = Filled({2, 4, 5, 3}, DType::kFloat32, 9)
                 .AsStrided({2, 3, 4, 5}, {60, 1, 15, 3}, 0)
                 .value();
  ExpectMatchesOracle(kLayouts, {Filled({40, 6}, DType::kFloat32, 8), y},
                      /*ulps=*/1);
}

// A value the interpreter reads for the last time, held by nothing else,
// becomes the result of an elementwise call laid out as it is: erf over
// its operand, add over self or over other. Inputs, values read again
// later (returned, or read by a later call), an operand passed twice, a
// transposed operand, a broadcast one and a part of a larger storage keep
// their values and get a new result. Every output against the oracle's bits
// (erf's within an ULP).
constexpr char kReuse[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[6, 40][40, 1]cpu", y: "f32[40][1]cpu", z: "f32[40, 6][6, 1]cpu"):
        a: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2.0)
        b: "f32[6, 40][40, 1]cpu" = torch.ops.aten.erf.default(a)
        c: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Tensor(b, y)
        d: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 3.0)
        e: "f32[6, 40][40, 1]cpu" = torch.ops.aten.sub.Tensor(y, d)
        f: "f32[6, 40][40, 1]cpu" = torch.ops.aten.erf.default(x)
        g: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 0.5)
        h: "f32[6, 40][40, 1]cpu" = torch.ops.aten.exp.default(g)
        i: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Tensor(g, h)
        j: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 1.5)
        k: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Tensor(j, j)
        t: "f32[6, 40][1, 6]cpu" = torch.ops.aten.t.default(z)
        m: "f32[6, 40][1, 6]cpu" = torch.ops.aten.mul.Tensor(t, 2.0)
        n: "f32[6, 40][40, 1]cpu" = torch.ops.aten.add.Tensor(x, m)
        q: "f32[6, 40][40, 1]cpu" = torch.ops.aten.mul.Tensor(x, 4.0)
        split = torch.ops.aten.split.Tensor(q, 3)
        half: "f32[3, 40][40, 1]cpu" = split[1]
        r: "f32[3, 40][40, 1]cpu" = torch.ops.aten.erf.default(half)
        return (c, e, f, i, k, n, m, r)
)";

TEST(FirstTierLoopsTest, ResultsReuseWhatOnlyTheCallHolds) {
  // Per call, in order: its op, and which of its first two tensor operands
  // the result's memory is (null where none).
  std::vector<std::pair<std::string, std::pair<const void*, const void*>>> seen;
  ir::KernelOverrides recording;
  for (const auto& [target, kernel] : Kernels()) {
    recording[target] =
        [&, kernel = kernel](
            const ir::OpCall& c) -> std::optional<absl::StatusOr<ir::Value>> {
      const void* in[2] = {nullptr, nullptr};
      for (int k = 0, t = 0; k < c.num_args() && t < 2; ++k) {
        if (c.arg(k).is_tensor()) in[t++] = c.arg(k).tensor.data_ptr();
      }
      std::optional<absl::StatusOr<ir::Value>> out = kernel(c);
      EXPECT_TRUE(out.has_value() && out->ok()) << c.op().target;
      const void* o = out.has_value() && out->ok() && (*out)->is_tensor()
                          ? (*out)->tensor.data_ptr()
                          : nullptr;
      seen.push_back(
          {c.op().target,
           {o == in[0] ? in[0] : nullptr, o == in[1] ? in[1] : nullptr}});
      return out;
    };
  }
  std::unique_ptr<ir::Graph> g = ir::ParseGraph(kReuse).value();
  std::vector<Tensor> inputs = {Filled({6, 40}, DType::kFloat32, 1),
                                Filled({40}, DType::kFloat32, 2),
                                Filled({40, 6}, DType::kFloat32, 3)};
  std::vector<ir::Value> in;
  std::vector<Tensor> kept;  // the inputs' values, to check them unchanged
  for (const Tensor& t : inputs) {
    in.push_back(ir::Value::OfTensor(t));
    kept.push_back(t.Clone().value());
  }
  ASSERT_OK_AND_ASSIGN(
      ir::Interpretation r,
      ir::Interpret(*g, in, {}, ir::Generator::kDefaultSeed, &recording));
  // Which operand became the result: 1 the first tensor, 2 the second, 0
  // none; in the graph's order of the calls the kernels ran.
  std::vector<int> reused;
  for (const auto& [target, p] : seen) {
    reused.push_back(p.first != nullptr ? 1 : p.second != nullptr ? 2 : 0);
  }
  // a = x * 2 (an input): new; b = erf(a): a; c = b + y: b; d = x * 3:
  // new; e = y - d: d (the second operand); f = erf(x): new; g = x * 0.5:
  // new; h = exp(g): new (g is read again); i = g + h: g; j = x * 1.5:
  // new; k = j + j: new (j passed twice); m = t * 2: new (t is z's view);
  // n = x + m: new (m is returned); q = x * 4: new; r = erf(half): new
  // (half is q's second half: the result is a tensor of its own).
  EXPECT_EQ(reused,
            (std::vector<int>{0, 1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  for (size_t k = 0; k < inputs.size(); ++k) {
    ExpectSame(inputs[k], kept[k], 0, absl::StrCat("input ", k));
  }
  absl::StatusOr<std::vector<ir::Value>> want = RunGraph(kReuse, inputs, false);
  ASSERT_OK(want.status());
  ASSERT_EQ(r.outputs.size(), want->size());
  for (size_t k = 0; k < want->size(); ++k) {
    ExpectSame(r.outputs[k].tensor, (*want)[k].tensor, 1,
               absl::StrCat("output ", k));
  }
}

// Other dtypes, and an in-place write whose operand overlaps it in another
// layout, are the reference's.
TEST(FirstTierLoopsTest, OtherCallsAreLeftToTheReference) {
  ir::Value d = ir::Value::OfTensor(Filled({4, 4}, DType::kFloat64, 1));
  ir::Value i = ir::Value::OfTensor(Filled({4, 4}, DType::kInt64, 2));
  ir::Value f = ir::Value::OfTensor(Filled({4, 4}, DType::kFloat32, 3));
  EXPECT_FALSE(Direct("aten.exp.default", {d}).has_value());
  EXPECT_FALSE(Direct("aten.exp.default", {i}).has_value());
  EXPECT_FALSE(Direct("aten.add.Tensor", {f, d, ir::Value::Int(1)}));
  EXPECT_FALSE(Direct("aten.mul.Tensor", {i, ir::Value::Int(3)}));
  // f += f.t(): the reference's (its copy is taken before the write).
  ir::Value t =
      ir::Value::OfTensor(f.tensor.AsStrided({4, 4}, {1, 4}, 0).value());
  EXPECT_FALSE(Direct("aten.add_.Tensor", {f, t, ir::Value::Int(1)}));
  // A non-contiguous input whose result the oracle lays out otherwise.
  constexpr char kOverlap[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[5, 5][5, 1]cpu", y: "f64[5][1]cpu"):
        t: "f32[5, 5][1, 5]cpu" = torch.ops.aten.t.default(x)
        add_: "f32[5, 5][5, 1]cpu" = torch.ops.aten.add_.Tensor(x, t)
        mul: "f64[5, 5][5, 1]cpu" = torch.ops.aten.mul.Tensor(add_, y)
        return (add_, mul)
)";
  absl::StatusOr<std::vector<ir::Value>> want = RunGraph(
      kOverlap,
      {Filled({5, 5}, DType::kFloat32, 4), Filled({5}, DType::kFloat64, 5)},
      false);
  absl::StatusOr<std::vector<ir::Value>> got = RunGraph(
      kOverlap,
      {Filled({5, 5}, DType::kFloat32, 4), Filled({5}, DType::kFloat64, 5)},
      true);
  ASSERT_EQ(got.ok(), want.ok());
  if (want.ok()) {
    ExpectSame((*got)[0].tensor, (*want)[0].tensor, 0, "add_");
  } else {
    EXPECT_EQ(got.status(), want.status());
  }
}

// The reference's errors stay its own: an in-place write into a tensor
// smaller than the broadcast shape.
TEST(FirstTierLoopsTest, ErrorsAreTheReferences) {
  constexpr char kBad[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[3][1]cpu", y: "f32[2, 3][3, 1]cpu"):
        add_: "f32[3][1]cpu" = torch.ops.aten.add_.Tensor(x, y)
        return (add_,)
)";
  std::vector<Tensor> in = {Filled({3}, DType::kFloat32, 1),
                            Filled({2, 3}, DType::kFloat32, 2)};
  absl::StatusOr<std::vector<ir::Value>> want = RunGraph(kBad, in, false);
  absl::StatusOr<std::vector<ir::Value>> got = RunGraph(kBad, in, true);
  ASSERT_FALSE(want.ok());
  EXPECT_EQ(got.status(), want.status());
}

}  // namespace
}  // namespace lathe
