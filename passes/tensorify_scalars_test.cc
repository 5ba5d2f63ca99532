#include "passes/tensorify_scalars.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_testing.h"
#include "ir/shape_prop.h"
#include "passes/adam_inputs.h"
#include "passes/pass_testing.h"
#include "passes/pipeline.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Propagates shapes of `g` in `env`, then runs tensorify_scalars alone
// through a pipeline (its invariants checked).
absl::StatusOr<PipelineReport> Tensorify(ir::Graph& g, symbolic::ShapeEnv& env,
                                         PassContext& ctx) {
  RETURN_IF_ERROR(ir::PropagateShapes(g, env));
  PassPipeline p;
  p.AddPass<TensorifyScalars>();
  return p.Run(g, ctx);
}

TEST(TensorifyScalarsTest, FloatInTensorSlotBecomesA0dTensor) {
  EXPECT_OK(RunPassAndFileCheck<TensorifyScalars>(R"IR(# lathe: hint zf0 0.5
def forward(self, x: "f32[4]", lr: "Sym(zf0)"):
    mul = torch.ops.aten.mul.Tensor(x, lr)
    return (mul,)
)IR",
                                                  R"IR(
CHECK: scalar_tensor: "f64[][]cpu" = torch.ops.aten.scalar_tensor.default(lr, dtype = torch.float64)
CHECK: convert_element_type: "f32[][]cpu" = torch.ops.prims.convert_element_type.default(scalar_tensor, torch.float32)
CHECK: mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(x, convert_element_type)
)IR"));
}

// Method-form in-place ops keep their in-place overloads (no copy_), and
// alpha= / value= Scalars become tensor compute (seed 000).
TEST(TensorifyScalarsTest, InPlaceAndScalarArguments) {
  EXPECT_OK(RunPassAndFileCheck<TensorifyScalars>(R"IR(# lathe: hint zf0 0.5
def forward(self, p: "f32[4]", g: "f32[4]", d: "f32[4]", lr: "Sym(zf0)"):
    mul_ = torch.ops.aten.mul_.Scalar(p, lr)
    neg = -lr
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = neg)
    half = 0.5 * lr
    addcdiv_ = torch.ops.aten.addcdiv_.default(p, g, d, value = half)
    return ()
)IR",
                                                  R"IR(
CHECK: mul_: {{.*}} = torch.ops.aten.mul_.Tensor(p, convert_element_type)
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(scalar_tensor, -1.0)
CHECK: mul_1: {{.*}} = torch.ops.aten.mul.Tensor(g, convert_element_type_1)
CHECK: add_: {{.*}} = torch.ops.aten.add_.Tensor(p, mul_1);
CHECK: mul_2: {{.*}} = torch.ops.aten.mul.Tensor(scalar_tensor, 0.5)
CHECK: div: {{.*}} = torch.ops.aten.div.Tensor(g, d)
CHECK: mul_3: {{.*}} = torch.ops.aten.mul.Tensor(div, convert_element_type_2)
CHECK: addcdiv_: {{.*}} = torch.ops.aten.add_.Tensor(p, mul_3);
CHECK-NOT: copy_
CHECK-NOT: = -lr
)IR"));
}

// Composite expressions (`1 - beta1 ** step`, `beta2 ** 0.5`) and
// comparisons are rebuilt from the symbols, each subexpression once.
TEST(TensorifyScalarsTest, CompositeExpressionsAndComparisons) {
  EXPECT_OK(RunPassAndFileCheck<TensorifyScalars>(R"IR(# lathe: hint zf0 0.9
# lathe: hint zf1 3.0
def forward(self, x: "f32[4]", beta: "Sym(zf0)", step: "Sym(zf1)"):
    pow_1 = beta ** step
    bc = 1 - pow_1
    sq = bc ** 0.5
    div = torch.ops.aten.div.Tensor(x, sq)
    gt = torch.ops.aten.gt.Scalar(x, bc)
    return (div, gt)
)IR",
                                                  R"IR(
CHECK: scalar_tensor{{.*}}(beta, dtype = torch.float64)
CHECK: scalar_tensor_1{{.*}}(step, dtype = torch.float64)
CHECK: pow: {{.*}} = torch.ops.aten.pow.Tensor_Tensor(scalar_tensor, scalar_tensor_1)
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(pow, -1.0)
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor(mul, 1.0)
CHECK: pow_2: {{.*}} = torch.ops.aten.pow.Tensor_Scalar(add, 0.5)
CHECK: div{{.*}} = torch.ops.aten.div.Tensor(x, convert_element_type)
CHECK: convert_element_type_1: {{.*}}(add, torch.float32)
CHECK: gt{{.*}} = torch.ops.aten.gt.Tensor(x, convert_element_type_1)
CHECK-NOT: ** 
)IR"));
}

// A float a use needs as a number (here a fill value full() takes as a
// Scalar) is specialized: a guard on its value, the value in the graph.
TEST(TensorifyScalarsTest, SweepSpecializesWhatCannotBeTensorified) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g,
                       ir::ParseGraph(R"IR(# lathe: hint zf0 0.25
# lathe: hint zf1 2.0
def forward(self, x: "f32[2]", a: "Sym(zf0)", b: "Sym(zf1)"):
    full = torch.ops.aten.full.default([2], a)
    mul = torch.ops.aten.mul.Tensor(x, b)
    add = torch.ops.aten.add.Tensor(full, mul)
    return (add,)
)IR"));
  symbolic::ShapeEnv env;
  PassContext ctx(env);
  ASSERT_OK_AND_ASSIGN(PipelineReport r, Tensorify(*g, env, ctx));
  EXPECT_TRUE(r.changed);
  EXPECT_THAT(ctx.specialize(), ElementsAre("zf0"));
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(symbolic::ToString(env.guards()[0]), "Eq(zf0, 0.25)");
  EXPECT_THAT(ir::PrintGraph(*g),
              ::testing::HasSubstr("aten.full.default([2], 0.25)"));
}

// The Adam step of seed 000 over 10 parameters, lr/beta1/beta2/step as
// float symbols: nothing is specialized, and one tensorified graph gives
// the unoptimized graph's results for 20 (lr, step) values.
TEST(TensorifyScalarsTest, AdamStepNeverSpecializes) {
  ASSERT_OK_AND_ASSIGN(std::string text, lathe::testing::ReadRunfile(
                                             "passes/testdata/adam10_sym.txt"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> original,
                       ir::ParseGraph(text));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  PassContext ctx(env);
  ASSERT_OK_AND_ASSIGN(PipelineReport r, Tensorify(*g, env, ctx));
  EXPECT_TRUE(r.changed);
  EXPECT_THAT(ctx.specialize(), IsEmpty());
  EXPECT_THAT(env.guards(), IsEmpty());
  std::string printed = ir::PrintGraph(*g);
  EXPECT_THAT(printed, ::testing::Not(::testing::HasSubstr("copy_")));
  EXPECT_THAT(printed, ::testing::Not(::testing::HasSubstr("value =")));
  std::mt19937 rng(7);
  for (int k = 0; k < 20; ++k) {
    double lr = 1e-3 * (k + 1), step = k + 1;
    std::vector<ir::Value> a = AdamInputs(*original, lr, step, rng);
    std::vector<ir::Value> b = CopyInputs(a);
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*original, a));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*g, b));
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_tensor()) continue;
      std::vector<double> x = ir::Elements(a[i].tensor),
                          y = ir::Elements(b[i].tensor);
      ASSERT_EQ(x.size(), y.size());
      for (size_t j = 0; j < x.size(); ++j) {
        EXPECT_NEAR(y[j], x[j], 1e-6 * std::max(1.0, std::abs(x[j])))
            << "input " << i << " element " << j << " (lr " << lr << ")";
      }
    }
  }
}

// Runs `text` before and after the default pipeline's first pass through
// the interpreter for each value of the float input `lr`: results must
// agree and nothing may be specialized (one compile serves every value).
void ExpectOneCompileServes(const std::string& text,
                            const std::vector<double>& values,
                            const std::vector<ir::Value>& tensors) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> original,
                       ir::ParseGraph(text));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  PassContext ctx(env);
  ASSERT_OK(Tensorify(*g, env, ctx).status());
  EXPECT_THAT(ctx.specialize(), IsEmpty()) << ir::PrintGraph(*g);
  EXPECT_THAT(env.guards(), IsEmpty()) << ir::PrintGraph(*g);
  for (double v : values) {
    std::vector<ir::Value> a, b;
    for (const ir::Value& t : tensors) {
      a.push_back(ir::V(*t.tensor.Clone()));
      b.push_back(ir::V(*t.tensor.Clone()));
    }
    a.push_back(ir::Value::Float(v));
    b.push_back(ir::Value::Float(v));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*original, a));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*g, b));
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      EXPECT_EQ(got.outputs[i].tensor.dtype(), want.outputs[i].tensor.dtype());
      EXPECT_EQ(ir::Elements(got.outputs[i].tensor),
                ir::Elements(want.outputs[i].tensor))
          << "value " << v << "\n"
          << ir::PrintGraph(*g);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(ir::Elements(b[i].tensor), ir::Elements(a[i].tensor))
          << "input " << i << " value " << v;
    }
  }
}

// Symbolic reference scenario 35: x * y for y in {1.00048828125, 126,
// 127}, in bf16, f16, f32 and f64: one compile per dtype, eager's results.
TEST(TensorifyScalarsTest, Scenario35MultiplyInEveryFloatDType) {
  for (const char* dtype : {"bf16", "f16", "f32", "f64"}) {
    SCOPED_TRACE(dtype);
    DType d = *ParseDType(dtype);
    std::string text = absl::StrCat(
        "# lathe: hint zf0 1.00048828125\n"
        "def forward(self, x: \"",
        dtype, "[3]\", y: \"Sym(zf0)\"):\n",
        "    mul = torch.ops.aten.mul.Tensor(x, y)\n    return (mul,)\n");
    ExpectOneCompileServes(text, {1.00048828125, 126, 127},
                           {ir::V(ir::T({3}, {1.5, -2.25, 3.0}, d))});
  }
}

// Scenario 36: x + y with y = 2.0, then 3.0.
TEST(TensorifyScalarsTest, Scenario36Add) {
  ExpectOneCompileServes(R"IR(# lathe: hint zf0 2.0
def forward(self, x: "f32[4]", y: "Sym(zf0)"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)IR",
                         {2.0, 3.0}, {ir::V(ir::T({4}, {1, 2, 3, 4}))});
}

// Scenario 37: clamp(max=limit) and clamp(min=-limit, max=limit).
TEST(TensorifyScalarsTest, Scenario37Clamp) {
  ExpectOneCompileServes(R"IR(# lathe: hint zf0 0.5
def forward(self, x: "f32[5]", limit: "Sym(zf0)"):
    clamp = torch.ops.aten.clamp.default(x, None, limit)
    neg = -limit
    clamp_1 = torch.ops.aten.clamp.default(x, neg, limit)
    return (clamp, clamp_1)
)IR",
                         {0.5, 1.0, 0.25},
                         {ir::V(ir::T({5}, {-2, -0.4, 0, 0.3, 7}))});
}

// Scenario 38 (#170477 / #171320 / #179395): p.mul_(p * (a * b)) and
// update.mul_(scale * lr), method-form in place with composite floats.
TEST(TensorifyScalarsTest, Scenario38MethodFormInPlace) {
  ExpectOneCompileServes(
      R"IR(# lathe: hint zf0 0.03
def forward(self, p: "f32[3]", update: "f32[3]", a: "Sym(zf0)"):
    mul = a * 2.0
    mul_1 = torch.ops.aten.mul.Tensor(p, mul)
    mul_ = torch.ops.aten.mul_.Tensor(p, mul_1)
    scale = 0.5 * a
    mul__1 = torch.ops.aten.mul_.Tensor(update, scale)
    return ()
)IR",
      {0.03, 0.07, 0.5},
      {ir::V(ir::T({3}, {1, -2, 3})), ir::V(ir::T({3}, {0.5, 0.25, -4}))});
}

// Scenario 34: a float whose value a Python bool is read from (here an
// assert on y != 5.0) cannot be a tensor: it is specialized with a guard,
// so a new value recompiles, as PyTorch recompiles for its `y == 5.0`
// branch.
TEST(TensorifyScalarsTest, Scenario34AComparisonReadAsABoolSpecializes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g,
                       ir::ParseGraph(R"IR(# lathe: hint zf0 2.0
def forward(self, x: "f32[2]", y: "Sym(zf0)"):
    ne = y != 5.0
    _assert_scalar = torch.ops.aten._assert_scalar.default(ne, "y != 5.0")
    mul = torch.ops.aten.mul.Tensor(x, y)
    return (mul,)
)IR"));
  symbolic::ShapeEnv env;
  PassContext ctx(env);
  ASSERT_OK(Tensorify(*g, env, ctx).status());
  EXPECT_THAT(ctx.specialize(), ElementsAre("zf0"));
  std::vector<std::string> guards;
  for (symbolic::Expr g : env.guards()) guards.push_back(symbolic::ToString(g));
  EXPECT_THAT(guards, ::testing::Contains("Eq(zf0, 2.0)"));
}

}  // namespace
}  // namespace lathe::passes
