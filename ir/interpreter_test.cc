#include "ir/interpreter.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_corpus.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<Graph> Load(const std::string& name) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(ReadCorpusGraph(name));
  EXPECT_OK(g) << name;
  return g.ok() ? std::move(*g) : nullptr;
}

std::unique_ptr<Graph> FromText(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(text);
  EXPECT_OK(g);
  return g.ok() ? std::move(*g) : nullptr;
}

Tensor Filled(std::vector<int64_t> sizes, double v,
              DType dtype = DType::kFloat32) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  ForEachIndex(t.sizes(),
               [&](absl::Span<const int64_t> i) { t.SetDouble(i, v); });
  return t;
}

// 10*i + j style contents: element i0, i1, ... gets sum(i_k * 10^(n-1-k)).
Tensor Numbered(std::vector<int64_t> sizes) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    double v = 0;
    for (int64_t x : i) v = v * 10 + x;
    t.SetDouble(i, v);
  });
  return t;
}

void ExpectAll(const Tensor& t, double v) {
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    EXPECT_DOUBLE_EQ(t.GetDouble(i), v);
  });
}

TEST(InterpreterTest, Mlp) {
  std::unique_ptr<Graph> g = Load("01_mlp.txt");
  // x=1, w1=0.5: each mm element 16*0.5 = 8; + b1 (-3) = 5; relu 5;
  // w2=0.25: 32 * 5 * 0.25 = 40.
  Interpretation r = *Interpret(*g, {Value::OfTensor(Filled({8, 16}, 1)),
                                     Value::OfTensor(Filled({16, 32}, 0.5)),
                                     Value::OfTensor(Filled({32}, -3)),
                                     Value::OfTensor(Filled({32, 4}, 0.25))});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[8, 4][4, 1]cpu");
  ExpectAll(r.outputs[0].tensor, 40);
  // b1 = -10: relu clamps to 0.
  Interpretation zero =
      *Interpret(*g, {Value::OfTensor(Filled({8, 16}, 1)),
                      Value::OfTensor(Filled({16, 32}, 0.5)),
                      Value::OfTensor(Filled({32}, -10)),
                      Value::OfTensor(Filled({32, 4}, 0.25))});
  ExpectAll(zero.outputs[0].tensor, 0);
  EXPECT_EQ(r.mutated_inputs, std::vector<bool>(4, false));
}

// Rounded division computes in the dtype's opmath type as PyTorch's
// kernels do: float32's quotient 1 / 0.1f is 10.0f, which truncates to 10
// (the same operands' quotient in double, 9.99999985..., truncates to 9),
// while the floor mode's remainder-based formula gives 9; float64 gives 10
// and 9 as well (torch 2.15: torch.div(a, b, rounding_mode=...)).
TEST(InterpreterTest, RoundedDivisionComputesInTheDtypesPrecision) {
  for (auto [dtype, annotation, trunc] :
       {std::tuple{DType::kFloat32, "f32", 10.0},
        std::tuple{DType::kFloat64, "f64", 10.0}}) {
    std::unique_ptr<Graph> g = FromText(absl::StrCat(
        "def forward(self, a: \"", annotation, "[1][1]cpu\", b: \"", annotation,
        "[1][1]cpu\"):\n"
        "    t = torch.ops.aten.div.Tensor_mode(a, b, rounding_mode = "
        "'trunc')\n"
        "    f = torch.ops.aten.div.Tensor_mode(a, b, rounding_mode = "
        "'floor')\n"
        "    return (t, f)\n"));
    ASSERT_NE(g, nullptr);
    Interpretation r =
        *Interpret(*g, {Value::OfTensor(Filled({1}, 1, dtype)),
                        Value::OfTensor(Filled({1}, 0.1, dtype))});
    ExpectAll(r.outputs[0].tensor, trunc);
    ExpectAll(r.outputs[1].tensor, 9);
  }
}

TEST(InterpreterTest, Softmax) {
  std::unique_ptr<Graph> g = Load("04_softmax.txt");
  Tensor x = Filled({2, 5}, 7);
  x.SetDouble({0, 0}, 0);
  x.SetDouble({0, 1}, std::log(2.0));
  x.SetDouble({0, 2}, std::log(3.0));
  x.SetDouble({0, 3}, 0);
  x.SetDouble({0, 4}, 0);
  Tensor out = Interpret(*g, {Value::OfTensor(x)})->outputs[0].tensor;
  const double want[] = {1.0 / 8, 2.0 / 8, 3.0 / 8, 1.0 / 8, 1.0 / 8};
  for (int j = 0; j < 5; ++j) {
    EXPECT_NEAR(out.GetDouble({0, j}), want[j], 1e-7);
    EXPECT_NEAR(out.GetDouble({1, j}), 0.2, 1e-7);
  }
  // The fused op agrees: _softmax then _log_softmax of it.
  std::unique_ptr<Graph> f = Load("05_softmax_op.txt");
  Tensor y = Filled({3, 7}, 1);
  Interpretation r = *Interpret(*f, {Value::OfTensor(y)});
  ForEachIndex(r.outputs[0].tensor.sizes(), [&](absl::Span<const int64_t> i) {
    EXPECT_NEAR(r.outputs[0].tensor.GetDouble(i), 1.0 / 7, 1e-7);
  });
  // log_softmax of a uniform row: -log(7).
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 7; ++j)
      EXPECT_NEAR(r.outputs[1].tensor.GetDouble({i, j}), -std::log(7.0), 1e-6);
  }
}

TEST(InterpreterTest, SgdStepMutatesTheParameterInPlace) {
  std::unique_ptr<Graph> g = Load("09_sgd_step.txt");
  Tensor param = Filled({16, 32}, 1.0), grad = Filled({16, 32}, 2.0);
  Interpretation r = *Interpret(
      *g, {Value::OfTensor(param), Value::OfTensor(grad), Value::Float(0.25)});
  ExpectAll(param, 0.5);  // 1 - 2 * 0.25, written into the input
  ExpectAll(grad, 2.0);
  EXPECT_EQ(r.outputs[0].tensor.storage(),
            param.storage());  // output aliases input
  EXPECT_EQ(r.mutated_inputs, (std::vector<bool>{true, false, false}));
}

TEST(InterpreterTest, InPlaceThroughADiagonalView) {
  std::unique_ptr<Graph> g = Load("12_inplace_through_view.txt");
  Tensor x = Filled({4, 4}, 0), y = *Tensor::Empty({4}, DType::kFloat32);
  for (int64_t i = 0; i < 4; ++i) y.SetDouble({i}, i + 1);
  Interpretation r = *Interpret(*g, {Value::OfTensor(x), Value::OfTensor(y)});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(x.GetDouble({i, j}), i == j ? 2.0 * (i + 1) : 0.0);
    }
    // The first output is the diagonal view: it sees the later mul_.
    EXPECT_EQ(r.outputs[0].tensor.GetDouble({i}), 2.0 * (i + 1));
  }
  EXPECT_EQ(r.mutated_inputs, (std::vector<bool>{true, false}));
}

TEST(InterpreterTest, ViewsShareTheInputsStorage) {
  std::unique_ptr<Graph> g = Load("11_views_of_inputs.txt");
  Tensor x = Numbered({4, 6});
  Interpretation r = *Interpret(*g, {Value::OfTensor(x)});
  ASSERT_EQ(r.outputs.size(), 4u);
  for (const Value& v : r.outputs) EXPECT_EQ(v.tensor.storage(), x.storage());
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[6, 4][1, 6]cpu");
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({5, 3}), 35);  // t: [j][i]
  EXPECT_EQ(r.outputs[1].tensor.GetDouble({0, 4}), 14);  // rows 1..3
  EXPECT_EQ(r.outputs[2].tensor.GetDouble({5}), 25);     // row 2
  EXPECT_EQ(r.outputs[3].tensor.ToString(), "f32[1, 4, 6][24, 6, 1]cpu");
}

TEST(InterpreterTest, DynamicShapes) {
  std::unique_ptr<Graph> g = Load("13_dynamic_sym_ops.txt");
  Tensor x = Numbered({3, 5});
  Tensor v = Interpret(*g, {Value::OfTensor(x)})->outputs[0].tensor;
  EXPECT_EQ(v.ToString(), "f32[15][1]cpu");
  EXPECT_EQ(v.GetDouble({7}), 12);  // row 1, column 2
  std::unique_ptr<Graph> h = Load("14_dynamic_floordiv.txt");
  Tensor s =
      Interpret(*h, {Value::OfTensor(Numbered({7, 8}))})->outputs[0].tensor;
  EXPECT_EQ(s.ToString(), "f32[3, 8][8, 1]cpu");  // 7 // 2 rows
}

TEST(InterpreterTest, ScalarInputsAndPythonOperators) {
  std::unique_ptr<Graph> g = Load("15_scalar_inputs.txt");
  // (x * scale) ** (n + 1) with x=2, scale=1.5, n=2: 3**3 = 27.
  Interpretation r = *Interpret(
      *g, {Value::OfTensor(Filled({8}, 2)), Value::Int(2), Value::Float(1.5)});
  ExpectAll(r.outputs[0].tensor, 27);
}

TEST(InterpreterTest, InputsAreCheckedAgainstTheirAnnotations) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, a: "f32[s0, 4]", b: "f32[s0, 4]", n: "Sym(s1)"):
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)g");
  auto run = [&](Value a, Value b, Value n) {
    return Interpret(*g, {a, b, n}).status();
  };
  Value good = Value::OfTensor(Filled({3, 4}, 1));
  EXPECT_OK(run(good, good, Value::Int(2)));
  EXPECT_THAT(
      std::string(run(Value::OfTensor(Filled({3, 4}, 1, DType::kFloat64)), good,
                      Value::Int(2))
                      .message()),
      HasSubstr("input 0 ('a'): expected dtype f32, got f64"));
  EXPECT_THAT(
      std::string(
          run(good, Value::OfTensor(Filled({3}, 1)), Value::Int(2)).message()),
      HasSubstr("input 1 ('b'): expected 2 dimensions"));
  EXPECT_THAT(
      std::string(run(good, Value::OfTensor(Filled({5, 4}, 1)), Value::Int(2))
                      .message()),
      HasSubstr("input 1 ('b') size(0): s0 is 3 from an earlier input, got 5"));
  EXPECT_THAT(
      std::string(run(good, Value::OfTensor(Filled({3, 5}, 1)), Value::Int(2))
                      .message()),
      HasSubstr("input 1 ('b') size(1): expected 4, got 5"));
  EXPECT_THAT(std::string(run(good, good, Value::Float(2)).message()),
              HasSubstr("input 2 ('n'): expected a int scalar, got 2.0"));
  EXPECT_THAT(std::string(Interpret(*g, {good}).status().message()),
              HasSubstr("the graph takes 3 inputs, got 1"));
}

// The layout the graph was compiled for is part of the contract: a
// transposed (Fortran-order) input for a row-major annotation is refused,
// not read through the wrong strides.
TEST(InterpreterTest, InputStridesAreCheckedAgainstTheirAnnotations) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, a: "f32[3, 2][2, 1]cpu", b: "f32[s0, s1]", c: "f32[s0, 1][1, 1]cpu"):
    return (a, b, c)
)g");
  Tensor row = Filled({3, 2}, 1);
  Tensor col = *Filled({2, 3}, 1).AsStrided({3, 2}, {1, 3}, 0);
  Tensor c = Filled({3, 1}, 1);
  EXPECT_OK(Interpret(
      *g, {Value::OfTensor(row), Value::OfTensor(row), Value::OfTensor(c)}));
  EXPECT_EQ(Interpret(*g, {Value::OfTensor(col), Value::OfTensor(row),
                           Value::OfTensor(c)})
                .status()
                .message(),
            "input 0 ('a') stride(0): expected 2, got 1");
  // b's strides are [s1, 1]: s1 is bound by its size.
  EXPECT_EQ(Interpret(*g, {Value::OfTensor(row), Value::OfTensor(col),
                           Value::OfTensor(c)})
                .status()
                .message(),
            "input 1 ('b') stride(0): s1 is 2 from an earlier input, got 1");
  // A dimension of size 1 may have any stride; the others may not.
  Tensor c_odd = *Filled({3, 5}, 1).AsStrided({3, 1}, {5, 1}, 0);
  EXPECT_EQ(Interpret(*g, {Value::OfTensor(row), Value::OfTensor(row),
                           Value::OfTensor(c_odd)})
                .status()
                .message(),
            "input 2 ('c') stride(0): expected 1, got 5");
}

// torch.sym_sum over a tuple, and a returned tuple nested in the result
// (its values are the graph's outputs, flat).
TEST(InterpreterTest, SymSumAndNestedReturns) {
  std::unique_ptr<Graph> g = FromText(
      R"g(def forward(self, a: "Sym(s0)", b: "Sym(s1)", x: "f32[3]"):
    sym_sum: "Sym(s0 + s1)" = torch.sym_sum((a, b))
    var_mean = torch.ops.aten.var_mean.correction(x, [0])
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    return (sym_sum, (getitem, (getitem_1,)))
)g");
  Tensor x = *Tensor::Empty({3}, DType::kFloat32);
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(2 * i);
  Interpretation r =
      *Interpret(*g, {Value::Int(3), Value::Int(4), Value::OfTensor(x)});
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(*r.outputs[0].AsInt(), 7);
  EXPECT_EQ(r.outputs[1].tensor.GetDouble({}), 4.0);  // var of 0, 2, 4
  EXPECT_EQ(r.outputs[2].tensor.GetDouble({}), 2.0);  // mean
}

TEST(InterpreterTest, OpErrorsNameTheNode) {
  std::unique_ptr<Graph> g = FromText(R"g(def forward(self, a, b):
    mm = torch.ops.aten.mm.default(a, b)
    return (mm,)
)g");
  absl::Status s = Interpret(*g, {Value::OfTensor(Filled({2, 3}, 1)),
                                  Value::OfTensor(Filled({4, 5}, 1))})
                       .status();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("node 'mm': aten.mm.default: mat1 and mat2 shapes "
                        "cannot be multiplied "
                        "(2x3 and 4x5)"));
  std::unique_ptr<Graph> u = FromText(R"g(def forward(self, a):
    y = torch.ops.aten.frobnicate.default(a)
    return (y,)
)g");
  EXPECT_THAT(
      std::string(
          Interpret(*u, {Value::OfTensor(Filled({1}, 1))}).status().message()),
      HasSubstr("node 'y': unknown op aten.frobnicate.default"));
  std::unique_ptr<Graph> k = FromText(R"g(def forward(self, a):
    y = torch.ops.aten.add.Tensor(a, a, beta = 2)
    return (y,)
)g");
  EXPECT_THAT(
      std::string(
          Interpret(*k, {Value::OfTensor(Filled({1}, 1))}).status().message()),
      HasSubstr("aten.add.Tensor: no argument named 'beta'"));
}

TEST(InterpreterTest, SymFunctions) {
  std::unique_ptr<Graph> g =
      FromText(R"g(def forward(self, x: "f32[s0, 3][3, 1]cpu"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    sym_float: "Sym(ToFloat(s0))" = torch.sym_float(sym_size_int)
    truediv: "Sym(ToFloat(s0)/2.5)" = sym_float / 2.5
    sym_int: "Sym(TruncToInt(ToFloat(s0)/2.5))" = torch.sym_int(truediv)
    sym_max: "Sym(Max(3, s0))" = torch.sym_max(sym_size_int, 3)
    sym_min: "Sym(Min(1.5, ToFloat(s0)))" = torch.sym_min(sym_size_int, 1.5)
    return (sym_int, sym_max, sym_min)
)g");
  ASSERT_NE(g, nullptr);
  Interpretation r = *Interpret(*g, {Value::OfTensor(Filled({6, 3}, 0))});
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(*r.outputs[0].AsInt(), 2);  // trunc(6 / 2.5)
  EXPECT_EQ(*r.outputs[1].AsInt(), 6);
  EXPECT_EQ(*r.outputs[2].AsDouble(), 1.5);
  EXPECT_FALSE(r.outputs[2].number.is_int());
}

// Found by aot_dispatch_fuzzer: arithmetic on a SymBool was an internal
// CHECK failure; it is an error naming the operator.
TEST(InterpreterTest, ArithmeticOnABooleanIsAnError) {
  std::unique_ptr<Graph> g = FromText(R"g(def forward(self, x: "f32[s0][1]cpu"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    eq: "Sym(Eq(s0, 4))" = sym_size_int == 4
    add: "Sym(s0)" = eq + 1
    eq_1 = eq == eq
    return (add,)
)g");
  ASSERT_NE(g, nullptr);
  EXPECT_THAT(
      Interpret(*g, {Value::OfTensor(Filled({4}, 0))}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("operator.add: True is a boolean; expected a number")));
  symbolic::ShapeEnv env;
  absl::Status st =
      PropagateShapes(*g, env, {.hints = {{"s0", symbolic::Value::Int(4)}}});
  EXPECT_THAT(st.message(), HasSubstr("operator.add: "));
}

TEST(InterpreterTest, InPlaceViewOpsChangeTheirInputFromThenOn) {
  std::unique_ptr<Graph> g =
      FromText(R"g(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    t_: "f32[3, 2][1, 3]cpu" = torch.ops.aten.t_.default(x)
    unsqueeze_: "f32[1, 3, 2][3, 1, 3]cpu" = torch.ops.aten.unsqueeze_.default(x, 0)
    clone: "f32[1, 3, 2][6, 2, 1]cpu" = torch.ops.aten.clone.default(x, memory_format = torch.contiguous_format)
    return (clone,)
)g");
  ASSERT_NE(g, nullptr);
  Interpretation r = *Interpret(*g, {Value::OfTensor(Numbered({2, 3}))});
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[1, 3, 2][6, 2, 1]cpu");
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({0, 2, 1}),
            12);  // x[1][2] of the original
}

TEST(InterpreterTest, ConstantsComeByAttributeName) {
  std::unique_ptr<Graph> g = Load("21_constant_and_bare_return.txt");
  ASSERT_NE(g, nullptr);
  Interpretation r =
      *Interpret(*g, {Value::OfTensor(Filled({3}, 1))},
                 {{"_tensor_constant0", Value::OfTensor(Filled({3}, 2))}});
  ExpectAll(r.outputs[0].tensor, 3);
  absl::Status missing =
      Interpret(*g, {Value::OfTensor(Filled({3}, 1))}).status();
  EXPECT_EQ(missing.message(),
            "node '_tensor_constant0': constant 'self._tensor_constant0' has "
            "no value");
  absl::Status dtype =
      Interpret(*g, {Value::OfTensor(Filled({3}, 1))},
                {{"_tensor_constant0",
                  Value::OfTensor(Filled({3}, 2, DType::kInt64))}})
          .status();
  EXPECT_EQ(dtype.message(),
            "constant 'self._tensor_constant0': expected dtype f32, got i64");
}

// x.add_(1) returns x itself, so t_() of that result transposes x.
TEST(InterpreterTest, MetadataMutationsReachEveryNameOfTheTensor) {
  std::unique_ptr<Graph> g =
      FromText(R"g(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    t_ = torch.ops.aten.t_.default(add_)
    clone = torch.ops.aten.clone.default(x)
    return (clone, add_)
)g");
  ASSERT_NE(g, nullptr);
  Interpretation r = *Interpret(*g, {Value::OfTensor(Numbered({2, 3}))});
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[3, 2][1, 3]cpu");
  EXPECT_EQ(r.outputs[1].tensor.ToString(), "f32[3, 2][1, 3]cpu");
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({2, 1}), 13);  // x[1][2] + 1
}

TEST(InterpreterTest, WritingIntoABroadcastViewIsAnError) {
  std::unique_ptr<Graph> g = FromText(R"g(def forward(self, x: "f32[3][1]cpu"):
    expand = torch.ops.aten.expand.default(x, [2, 3])
    add_ = torch.ops.aten.add_.Tensor(expand, 1)
    return (x,)
)g");
  ASSERT_NE(g, nullptr);
  absl::Status st = Interpret(*g, {Value::OfTensor(Numbered({3}))}).status();
  EXPECT_EQ(st.message(),
            "node 'add_': aten.add_.Tensor: unsupported operation: more than "
            "one element of the "
            "written-to tensor refers to a single memory location. Please "
            "clone() the tensor "
            "before performing the operation.");
}

}  // namespace
}  // namespace lathe::ir
