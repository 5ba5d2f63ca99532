#include "passes/constant_fold.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/pass.h"
#include "passes/pass_testing.h"
#include "passes/pipeline.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

// `text` with $F32 / $I32 / ... standing for full()'s keyword arguments.
std::string Graph(absl::string_view text) {
  auto kwargs = [](absl::string_view dtype) {
    return absl::StrCat("dtype = torch.", dtype,
                        ", layout = torch.strided, device = "
                        "device(type='cpu'), pin_memory = False");
  };
  return absl::StrReplaceAll(text, {{"$F32", kwargs("float32")},
                                    {"$F16", kwargs("float16")},
                                    {"$I32", kwargs("int32")},
                                    {"$I64", kwargs("int64")},
                                    {"$U8", kwargs("uint8")},
                                    {"$B8", kwargs("bool")}});
}

absl::Status Check(absl::string_view text,
                   std::optional<absl::string_view> checks) {
  return RunPassAndFileCheck<ConstantFold>(Graph(text), checks);
}

// ---- Reference §3 scenario 53 -----------------------------------------------

// An integer x * zeros is zeros.
TEST(ConstantFoldTest, IntegerTimesZerosFoldsToZeros) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "i32[4]"):
    full = torch.ops.aten.full.default([4], 0, $I32)
    mul = torch.ops.aten.mul.Tensor(full, x)
    return (mul,)
)IR",
                  R"IR(
CHECK-NOT: mul
CHECK: [[Z:[a-z_0-9]+]]: "i32[4][1]cpu" = torch.ops.aten.full.default([4], 0, dtype = torch.int32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
CHECK-NOT: mul
CHECK: return ([[Z]],)
)IR"));
}

// A float x * 0 is NaN for NaN and Inf: it stays, with a literal or a zeros
// tensor; and x + 0.0 turns -0.0 into 0.0: it stays too.
TEST(ConstantFoldTest, FloatTimesZeroAndPlusZeroStay) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 0)
    full = torch.ops.aten.full.default([4], 0.0, $F32)
    mul_1 = torch.ops.aten.mul.Tensor(full, x)
    add = torch.ops.aten.add.Tensor(x, full)
    add_1 = torch.ops.aten.add.Tensor(add, 0.0)
    add_2 = torch.ops.aten.add.Tensor(add_1, 0)
    return (mul, mul_1, add_2)
)IR",
                  std::nullopt));
}

// x + -0.0 is x for every x (-0.0 + -0.0 is -0.0).
TEST(ConstantFoldTest, PlusNegativeZeroIsRemoved) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    full = torch.ops.aten.full.default([4], -0.0, $F32)
    add = torch.ops.aten.add.Tensor(x, full)
    add_1 = torch.ops.aten.add.Tensor(-0.0, add)
    mul = torch.ops.aten.mul.Tensor(add_1, 2)
    return (mul,)
)IR",
                  R"IR(
CHECK-NOT: add
CHECK-NOT: full
CHECK: mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
CHECK: return (mul,)
)IR"));
}

// ---- Uniform values ---------------------------------------------------------

// Values flow through constructors, pointwise ops and views, computed by the
// ops' kernels; only the value the unknown sub reads is materialized.
TEST(ConstantFoldTest, FoldsThroughPointwiseOpsAndViews) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[2, 3]"):
    ones = torch.ops.aten.ones.default([6], dtype = torch.float32)
    mul = torch.ops.aten.mul.Tensor(ones, 2)
    add = torch.ops.aten.add.Tensor(mul, 1)
    view = torch.ops.aten.view.default(add, [2, 3])
    sub = torch.ops.aten.sub.Tensor(x, view)
    return (sub,)
)IR",
                  R"IR(
CHECK-NOT: ones
CHECK: [[C:[a-z_0-9]+]]: "f32[2, 3][3, 1]cpu" = torch.ops.aten.full.default([2, 3], 3.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
CHECK: sub: {{.*}} = torch.ops.aten.sub.Tensor(x, [[C]])
CHECK-NOT: view
)IR"));
}

// NaN and Inf fold as the kernels compute them (log(-3) is NaN, 1/0 inf).
TEST(ConstantFoldTest, NanAndInfFoldAsComputed) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[3]"):
    full = torch.ops.aten.full.default([3], -3.0, $F32)
    log = torch.ops.aten.log.default(full)
    zeros = torch.ops.aten.zeros.default([3], dtype = torch.float32)
    div = torch.ops.aten.div.Tensor(1, zeros)
    add = torch.ops.aten.add.Tensor(x, log)
    mul = torch.ops.aten.mul.Tensor(x, div)
    return (add, mul)
)IR",
                  R"IR(
CHECK: [[N:[a-z_0-9]+]]: "f32[3][1]cpu" = torch.ops.aten.full.default([3], nan, {{.*}})
CHECK: [[I:[a-z_0-9]+]]: "f32[3][1]cpu" = torch.ops.aten.full.default([3], inf, {{.*}})
CHECK: torch.ops.aten.add.Tensor(x, [[N]])
CHECK: torch.ops.aten.mul.Tensor(x, [[I]])
)IR"));
}

// Dtypes follow the ops (int32 + 0.5 is float32; comparisons are bool).
TEST(ConstantFoldTest, FoldsWithTheOpsDtypes) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[2]", b: "b8[2]"):
    full = torch.ops.aten.full.default([2], 3, $I32)
    add = torch.ops.aten.add.Tensor(full, 0.5)
    gt = torch.ops.aten.gt.Scalar(full, 2)
    mul = torch.ops.aten.mul.Tensor(x, add)
    logical_and = torch.ops.aten.logical_and.default(b, gt)
    return (mul, logical_and)
)IR",
                  R"IR(
CHECK: [[A:[a-z_0-9]+]]: "f32[2][1]cpu" = torch.ops.aten.full.default([2], 3.5, dtype = torch.float32, {{.*}})
CHECK: [[G:[a-z_0-9]+]]: "b8[2][1]cpu" = torch.ops.aten.full.default([2], True, dtype = torch.bool, {{.*}})
CHECK: torch.ops.aten.mul.Tensor(x, [[A]])
CHECK: torch.ops.aten.logical_and.default(b, [[G]])
)IR"));
}

// A symbolic size needs a SymInt node to spell full()'s shape with.
TEST(ConstantFoldTest, SymbolicSizesUseSymIntNodes) {
  EXPECT_OK(Check(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0]", n: "Sym(s0)"):
    ones = torch.ops.aten.ones_like.default(x)
    mul = torch.ops.aten.mul.Tensor(ones, 3)
    mul_1 = torch.ops.aten.mul.Tensor(mul, x)
    return (mul_1,)
)IR",
                  R"IR(
CHECK: [[C:[a-z_0-9]+]]: "f32[s0][1]cpu" = torch.ops.aten.full.default([n], 3.0, {{.*}})
CHECK: torch.ops.aten.mul.Tensor([[C]], x)
)IR"));
  EXPECT_OK(Check(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0]"):
    ones = torch.ops.aten.ones_like.default(x)
    mul = torch.ops.aten.mul.Tensor(ones, 3)
    mul_1 = torch.ops.aten.mul.Tensor(mul, x)
    return (mul_1,)
)IR",
                  std::nullopt));
}

// The skip cases: a non-contiguous or unsigned result, a constant whose
// storage two replaced values would share, a symbolic fill value, a value
// read from a storage something writes.
TEST(ConstantFoldTest, SkipCases) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[2, 3]"):
    full = torch.ops.aten.full.default([3, 2], 1.0, $F32)
    mul = torch.ops.aten.mul.Tensor(full, 2)
    t = torch.ops.aten.t.default(mul)
    add = torch.ops.aten.add.Tensor(x, t)
    return (add,)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "u8[4]"):
    full = torch.ops.aten.full.default([4], 1, $U8)
    add = torch.ops.aten.add.Tensor(full, 1)
    mul = torch.ops.aten.mul.Tensor(add, x)
    return (mul,)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[6]", y: "f32[2, 3]"):
    full = torch.ops.aten.full.default([6], 1.0, $F32)
    neg = torch.ops.aten.neg.default(full)
    view = torch.ops.aten.view.default(neg, [2, 3])
    add = torch.ops.aten.add.Tensor(x, neg)
    add_1 = torch.ops.aten.add.Tensor(y, view)
    return (add, add_1)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]", v: "Sym(zf0)"):
    full = torch.ops.aten.full.default([4], v, $F32)
    add = torch.ops.aten.add.Tensor(full, 1)
    mul = torch.ops.aten.mul.Tensor(add, x)
    return (mul,)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    full = torch.ops.aten.full.default([4], 1.0, $F32)
    add_ = torch.ops.aten.add_.Tensor(full, 1)
    neg = torch.ops.aten.neg.default(full)
    mul = torch.ops.aten.mul.Tensor(neg, x)
    return (mul,)
)IR",
                  std::nullopt));
}

// ---- remove_no_ops ----------------------------------------------------------

TEST(ConstantFoldTest, RemovesNoOps) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]", i: "i32[4]"):
    ones = torch.ops.aten.full.default([4], 1.0, $F32)
    mul = torch.ops.aten.mul.Tensor(x, ones)
    div = torch.ops.aten.div.Tensor(mul, 1)
    sub = torch.ops.aten.sub.Tensor(div, 0.0)
    sub_1 = torch.ops.aten.sub.Tensor(sub, 0)
    add = torch.ops.aten.add.Tensor(i, 0)
    mul_1 = torch.ops.aten.mul.Tensor(add, 1.0)
    neg = torch.ops.aten.neg.default(sub_1)
    neg_1 = torch.ops.aten.neg.default(mul_1)
    return (neg, neg_1)
)IR",
                  R"IR(
CHECK: [[F:[a-z_0-9]+]]: "f32[4][1]cpu" = torch.ops.prims.convert_element_type.default(i, torch.float32)
CHECK: neg: {{.*}} = torch.ops.aten.neg.default(x)
CHECK: neg_1: {{.*}} = torch.ops.aten.neg.default([[F]])
CHECK-NOT: mul
)IR"));
}

// x - -0.0 is x + 0.0: not a no-op for floats; for integers any zero is.
TEST(ConstantFoldTest, MinusNegativeZeroStays) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    sub = torch.ops.aten.sub.Tensor(x, -0.0)
    neg = torch.ops.aten.neg.default(sub)
    return (neg,)
)IR",
                  std::nullopt));
}

// No-ops stay where removing them would alias a returned value with an
// input, broadcast, or expose a later in-place write (#174187).
TEST(ConstantFoldTest, NoOpsThatMustStay) {
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    return (mul,)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]"):
    ones = torch.ops.aten.full.default([3, 4], 1.0, $F32)
    mul = torch.ops.aten.mul.Tensor(x, ones)
    neg = torch.ops.aten.neg.default(mul)
    return (neg,)
)IR",
                  std::nullopt));
  EXPECT_OK(Check(R"IR(def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    neg = torch.ops.aten.neg.default(mul)
    copy_ = torch.ops.aten.copy_.default(x, y)
    return (neg,)
)IR",
                  std::nullopt));
}

// ---- Differential: the interpreter before and after, bit for bit
// -------------

// Random inputs with NaN, +-inf and -0.0 among them.
std::vector<ir::Value> RandomInputs(const ir::Graph& graph, std::mt19937& rng) {
  std::vector<ir::Value> inputs;
  std::uniform_int_distribution<int> pick(0, 11), small(-3, 3);
  for (const ir::Node* p : graph.Placeholders()) {
    const ir::TensorMeta& m = p->meta().tensor;
    std::vector<int64_t> sizes;
    for (const symbolic::Expr& s : m.sizes) sizes.push_back(s.int_value());
    Tensor t = *Tensor::Empty(sizes, m.dtype);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      double v = small(rng);
      if (IsFloatingPoint(m.dtype)) {
        switch (pick(rng)) {
          case 0:
            v = std::nan("");
            break;
          case 1:
            v = std::numeric_limits<double>::infinity();
            break;
          case 2:
            v = -std::numeric_limits<double>::infinity();
            break;
          case 3:
            v = -0.0;
            break;
          default:
            v += 0.25;
        }
      }
      t.SetDouble(i, v);
    });
    inputs.push_back(ir::Value::OfTensor(t));
  }
  return inputs;
}

bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(ConstantFoldDifferentialTest, FoldedGraphsComputeTheSame) {
  const char* graphs[] = {
      R"IR(def forward(self, x: "f32[2, 3]", i: "i32[2, 3]"):
    ones = torch.ops.aten.ones.default([6], dtype = torch.float32)
    mul = torch.ops.aten.mul.Tensor(ones, 2)
    view = torch.ops.aten.view.default(mul, [2, 3])
    exp = torch.ops.aten.exp.default(view)
    sub = torch.ops.aten.sub.Tensor(x, exp)
    full = torch.ops.aten.full.default([2, 3], 0, $I32)
    mul_1 = torch.ops.aten.mul.Tensor(i, full)
    mul_2 = torch.ops.aten.mul.Tensor(i, 0)
    add = torch.ops.aten.add.Tensor(mul_1, mul_2)
    return (sub, add)
)IR",
      R"IR(def forward(self, x: "f32[4]", h: "f16[4]"):
    full = torch.ops.aten.full.default([4], 0.1, $F16)
    mul = torch.ops.aten.mul.Tensor(full, 3)
    convert = torch.ops.prims.convert_element_type.default(mul, torch.float32)
    add = torch.ops.aten.add.Tensor(x, convert)
    add_1 = torch.ops.aten.add.Tensor(h, mul)
    full_1 = torch.ops.aten.full.default([4], 1.0, $F32)
    div = torch.ops.aten.div.Tensor(add, full_1)
    sub = torch.ops.aten.sub.Tensor(div, 0)
    return (sub, add_1)
)IR",
      R"IR(def forward(self, x: "f32[3, 4]"):
    full = torch.ops.aten.full.default([4], -2.0, $F32)
    sqrt = torch.ops.aten.sqrt.default(full)
    unsqueeze = torch.ops.aten.unsqueeze.default(sqrt, 0)
    expand = torch.ops.aten.expand.default(unsqueeze, [3, 4])
    clone = torch.ops.aten.clone.default(expand)
    maximum = torch.ops.aten.maximum.default(x, clone)
    gt = torch.ops.aten.gt.Scalar(x, 0)
    zeros = torch.ops.aten.zeros_like.default(x)
    where = torch.ops.aten.where.self(gt, x, zeros)
    return (maximum, where)
)IR",
  };
  std::mt19937 rng(7);
  for (const char* raw : graphs) {
    std::string text = Graph(raw);
    SCOPED_TRACE(text);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
    symbolic::ShapeEnv env;
    ASSERT_OK(ir::PropagateShapes(*g, env));
    std::unique_ptr<ir::Graph> before = g->Clone();
    PassPipeline pipeline;
    pipeline.AddPass<ConstantFold>();
    PassContext ctx(env);
    ASSERT_OK_AND_ASSIGN(PipelineReport report, pipeline.Run(*g, ctx));
    EXPECT_TRUE(report.changed);
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<ir::Value> inputs = RandomInputs(*before, rng);
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                           ir::Interpret(*before, inputs));
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*g, inputs));
      ASSERT_EQ(want.outputs.size(), got.outputs.size());
      for (size_t k = 0; k < want.outputs.size(); ++k) {
        const Tensor &w = want.outputs[k].tensor, &o = got.outputs[k].tensor;
        ASSERT_EQ(w.dtype(), o.dtype());
        ASSERT_EQ(w.sizes(), o.sizes());
        ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> i) {
          EXPECT_TRUE(SameBits(w.GetDouble(i), o.GetDouble(i)))
              << "output " << k << ": " << w.GetDouble(i) << " became "
              << o.GetDouble(i) << "\n"
              << ir::PrintGraph(*g);
        });
      }
    }
  }
}

// A second run finds nothing more (the pass reaches its fixed point).
TEST(ConstantFoldTest, SecondRunChangesNothing) {
  ASSERT_OK_AND_ASSIGN(PassResult once,
                       RunPass(Graph(R"IR(def forward(self, x: "i32[4]"):
    full = torch.ops.aten.full.default([4], 2, $I32)
    mul = torch.ops.aten.mul.Tensor(full, 3)
    add = torch.ops.aten.add.Tensor(x, mul)
    mul_1 = torch.ops.aten.mul.Tensor(add, 1)
    neg = torch.ops.aten.neg.default(mul_1)
    return (neg,)
)IR"),
                               std::make_unique<ConstantFold>()));
  EXPECT_TRUE(once.changed);
  EXPECT_OK(RunPassAndFileCheck<ConstantFold>(once.after, std::nullopt));
}

}  // namespace
}  // namespace lathe::passes
