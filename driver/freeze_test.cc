// Freezing (driver/freeze.h, passes/fold_frozen.h): inputs given at compile
// time become the function's own constants. Every compiled or interpreted
// result is compared with the interpreter on the graph as written, with
// the frozen values passed as ordinary inputs; the errors name the input.

#include "driver/freeze.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_testing.h"
#include "dnnl.h"
#include "driver/compile.h"
#include "driver/variant_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "runtime/artifact.h"
#include "runtime/half.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// A 3x3 convolution, batch norm in evaluation, relu: resnet's block.
constexpr char kConvBn[] =
    R"IR(def forward(self, x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]", g: "f32[4]", b: "f32[4]", m: "f32[4]", v: "f32[4]"):
    conv = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    bn = torch.ops.aten.native_batch_norm.default(conv, g, b, m, v, False, 0.1, 1e-05)
    y = bn[0]
    relu = torch.ops.aten.relu.default(y)
    return (relu,)
)IR";

// Input k of `p`'s values (in storage order, laid out as annotated):
// 2 sin(0.7 k + p), or 1 + sin(...)/2 (> 0, for a variance) for an input
// named v.
ir::Value InputFor(const ir::Node& p, int index) {
  const ir::TensorMeta& m = p.meta().tensor;
  std::vector<int64_t> sizes, strides;
  for (const symbolic::Expr& e : m.sizes) sizes.push_back(e.int_value());
  for (const symbolic::Expr& e : m.strides) strides.push_back(e.int_value());
  Tensor t = *Tensor::EmptyStrided(sizes, strides, m.dtype);
  for (int64_t k = 0; k < t.numel(); ++k) {
    double s = std::sin(0.7 * static_cast<double>(k) + index);
    const float f = static_cast<float>(p.name() == "v" ? 1 + s / 2 : 2 * s);
    if (m.dtype == DType::kBFloat16) {
      static_cast<uint16_t*>(t.data_ptr())[k] = BFloat16::FromFloat(f).bits;
    } else {
      t.data<float>()[k] = f;
    }
  }
  return ir::Value::OfTensor(std::move(t));
}

struct Frozen {
  std::vector<ir::Value> all;    // one per placeholder as written
  std::vector<ir::Value> given;  // the ones not frozen
  ir::Constants frozen;
  ir::Interpretation want;  // the interpreter on the graph as written
};

// Values for `text`'s inputs, those named in `names` frozen, and the
// interpreter's results with all of them given.
Frozen Inputs(const std::string& text, const std::set<std::string>& names) {
  Frozen f;
  std::unique_ptr<ir::Graph> g = *ir::ParseGraph(text);
  g->attributes().constants.clear();  // every input given
  symbolic::ShapeEnv env;
  EXPECT_OK(ir::PropagateShapes(*g, env));
  int index = 0;
  for (const ir::Node* p : g->Placeholders()) {
    ir::Value v = InputFor(*p, index++);
    f.all.push_back(v);
    if (names.count(p->name()) > 0) {
      f.frozen[p->name()] = v;
    } else {
      f.given.push_back(v);
    }
  }
  f.want = *ir::Interpret(*g, f.all);
  return f;
}

// The compiled function's results on `given` (its runtime wrapper inside,
// if compiled in).
absl::StatusOr<ir::Interpretation> Call(const CompiledGraph& c,
                                        std::vector<ir::Value> given) {
  const codegen::CpuFunction& f = *c.function;
  return f.plan_applied() ? f.RunWithPlan(given) : f.Run(given);
}

TEST(FreezeTest, BatchNormFoldsIntoTheConvolutionAndMatchesTheInterpreter) {
  Frozen in = Inputs(kConvBn, {"w", "g", "b", "m", "v"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(
          kConvBn, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
  const std::string after = ir::PrintGraph(*c->graph);
  EXPECT_THAT(after, Not(HasSubstr("batch_norm"))) << after;
  EXPECT_THAT(after, HasSubstr("convolution.default(x, conv_weight, conv_bias"))
      << after;
  EXPECT_THAT(c->log, ::testing::Contains(HasSubstr("bn folded into conv")));
  // The caller passes x alone; the function holds the rest.
  EXPECT_EQ(c->written->Placeholders().size(), 1u);
  EXPECT_TRUE(c->function->constants().empty());
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
  codegen::ExpectSameOutputs(got, in.want, 1e-5);

  // The interpreter runs the frozen graph too, on the values the compile
  // holds.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> interp,
                       CompileGraphText(kConvBn, {.frozen = in.frozen}));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation i,
                       ir::Interpret(*interp->graph, in.given, interp->frozen));
  codegen::ExpectSameOutputs(i, in.want, 1e-5);
}

TEST(FreezeTest, WeightsArePackedOnceAndForgottenWithTheFunction) {
  Frozen in = Inputs(kConvBn, {"w", "g", "b", "m", "v"});
  const int64_t before = FrozenWeightsKept();
  {
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<CompiledGraph> c,
        CompileGraphText(
            kConvBn, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
    for (int call = 0; call < 3; ++call) {
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
      codegen::ExpectSameOutputs(got, in.want, 1e-5);
    }
    // Packed once (oneDNN wants its blocked layout for these weights).
    EXPECT_EQ(FrozenWeightsKept(), before + 1);
  }
  EXPECT_EQ(FrozenWeightsKept(), before);
}

// nn.Linear's product of a [64, 32] x with a frozen [48, 32] w of `dtype`
// (f32, bf16): matches the interpreter on every call; the weight is packed
// once into oneDNN's layout when `packs` (packed_weights.h: the function's
// LoadedGraph registers its frozen constants) and forgotten with the
// function.
void ExpectLinearWeightPackedOnce(const std::string& dtype, double tolerance,
                                  bool packs) {
  const std::string linear = absl::StrReplaceAll(
      R"IR(def forward(self, x: "DT[64, 32]", w: "DT[48, 32]"):
    t = torch.ops.aten.t.default(w)
    mm = torch.ops.aten.mm.default(x, t)
    return (mm,)
)IR",
      {{"DT", dtype}});
  Frozen in = Inputs(linear, {"w"});
  const int64_t before = FrozenWeightsKept();
  {
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<CompiledGraph> c,
        CompileGraphText(
            linear, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
    for (int call = 0; call < 3; ++call) {
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
      codegen::ExpectSameOutputs(got, in.want, tolerance);
    }
    if (packs) EXPECT_EQ(FrozenWeightsKept(), before + 1);
  }
  EXPECT_EQ(FrozenWeightsKept(), before);
}

// In f32, where oneDNN's matmul packs weights (AVX-512), it reads w
// (transposed here) in a layout of its own; elsewhere sgemm reads w as it
// is.
TEST(FreezeTest, LinearWeightsArePackedOnceAndForgotten) {
  ExpectLinearWeightPackedOnce("f32", 1e-5, onednn::MatmulPacksWeights());
}

// In bf16, where the CPU has bf16 dot products (AVX512-BF16, AMX), oneDNN
// wants w's pairs of rows interleaved.
TEST(FreezeTest, Bf16LinearWeightsArePackedOnceAndForgotten) {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  ExpectLinearWeightPackedOnce(
      "bf16", 1e-2,
      (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16);
}

TEST(FreezeTest, TheCallerChangingItsValuesLaterChangesNothing) {
  Frozen in = Inputs(kConvBn, {"w", "g", "b", "m", "v"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(
          kConvBn, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
  in.frozen.at("w").tensor.data<float>()[0] += 100;
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
  codegen::ExpectSameOutputs(got, in.want, 1e-5);
}

// Batch norm that must stay: its statistics are inputs, the convolution's
// result is read twice, or it normalizes with the batch's statistics.
TEST(FreezeTest, BatchNormStaysWhereFoldingWouldChangeTheResult) {
  const char* kCases[] = {
      kConvBn,
      R"IR(def forward(self, x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]", g: "f32[4]", b: "f32[4]", m: "f32[4]", v: "f32[4]"):
    conv = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    bn = torch.ops.aten.native_batch_norm.default(conv, g, b, m, v, False, 0.1, 1e-05)
    y = bn[0]
    add = torch.ops.aten.add.Tensor(y, conv)
    return (add,)
)IR",
      R"IR(def forward(self, x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]", g: "f32[4]", b: "f32[4]"):
    conv = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    bn = torch.ops.aten._native_batch_norm_legit.no_stats(conv, g, b, True, 0.1, 1e-05)
    y = bn[0]
    return (y,)
)IR",
  };
  const std::set<std::string> frozen[] = {
      {"w", "g", "b", "m"}, {"w", "g", "b", "m", "v"}, {"w", "g", "b"}};
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(kCases[k]);
    Frozen in = Inputs(kCases[k], frozen[k]);
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<CompiledGraph> c,
        CompileGraphText(kCases[k], {.frozen = in.frozen,
                                     .backend = &codegen::CpuBackend()}));
    EXPECT_THAT(c->log, Not(::testing::Contains(HasSubstr("folded"))));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
    codegen::ExpectSameOutputs(got, in.want, 1e-5);
  }
}

// neg(b) is computed at compile time; views of frozen values stay views
// (free, and as_strided reads their base's storage).
TEST(FreezeTest, WhatFrozenValuesComputeAloneIsComputedOnce) {
  const char* kLinear =
      R"IR(def forward(self, x: "f32[3, 5]", w: "f32[4, 5]", b: "f32[4]"):
    t = torch.ops.aten.t.default(w)
    neg = torch.ops.aten.neg.default(b)
    addmm = torch.ops.aten.addmm.default(neg, x, t)
    s = torch.ops.aten.as_strided.default(t, [4], [1], 3)
    add = torch.ops.aten.add.Tensor(addmm, s)
    return (add,)
)IR";
  Frozen in = Inputs(kLinear, {"w", "b"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(
          kLinear, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
  const std::string after = ir::PrintGraph(*c->graph);
  EXPECT_THAT(after, HasSubstr("aten.t.default")) << after;
  EXPECT_THAT(after, Not(HasSubstr("aten.neg.default"))) << after;
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
  codegen::ExpectSameOutputs(got, in.want, 1e-6);
}

// An artifact carries its frozen constants (a column-major weight keeps its
// strides) and its calls take x alone.
TEST(FreezeTest, AnArtifactCarriesItsFrozenConstants) {
  const char* kLinear =
      R"IR(def forward(self, x: "f32[3, 5]", w: "f32[5, 4][1, 5]", b: "f32[4]"):
    addmm = torch.ops.aten.addmm.default(b, x, w)
    return (addmm,)
)IR";
  Frozen in = Inputs(kLinear, {"w", "b"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kLinear, {.frozen = in.frozen,
                                 .backend = &codegen::CpuBackend(),
                                 .artifact = true}));
  ASSERT_OK(AddFrozenFiles(*c));
  ASSERT_EQ(c->manifest.frozen.size(), 2u);  // w, then b
  EXPECT_EQ(c->manifest.frozen[0].strides, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(c->manifest.frozen[1].strides, (std::vector<int64_t>{1}));
  const std::string dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/frozen_artifact");
  ASSERT_OK(WriteArtifact(dir, c->manifest, c->files));
  c.reset();
  ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir));
  EXPECT_EQ(a.manifest.arguments.size(), 1u);
  std::vector<Operand> args = {Operand::Of(in.given[0].tensor)};
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, a.Call(absl::MakeSpan(args)));
  ASSERT_EQ(out.size(), 1u);
  ir::Interpretation got;
  got.outputs.push_back(ir::Value::OfTensor(out[0].tensor));
  codegen::ExpectSameOutputs(got, in.want, 1e-6);
}

// A graph that returns its frozen input w.
constexpr char kReturns[] =
    R"IR(def forward(self, x: "f32[4]", w: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, w)
    return (add, w)
)IR";

TEST(FreezeTest, AReturnedFrozenValueIsTheCallersCopy) {
  Frozen in = Inputs(kReturns, {"w"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(
          kReturns, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation first, Call(*c, in.given));
  first.outputs[1].tensor.data<float>()[0] = 1000;  // the caller's to write
  ASSERT_OK_AND_ASSIGN(ir::Interpretation second, Call(*c, in.given));
  codegen::ExpectSameOutputs(second, in.want, 0);
}

// The interpreter backend (and the fallback past the compile limit) hands
// back a frozen value as the caller's copy too.
TEST(FreezeTest, TheInterpreterReturnsACopyOfAFrozenValue) {
  Frozen in = Inputs(kReturns, {"w"});
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kReturns, "returns"));
  VariantCompiler compiler(std::move(parsed), {.frozen = in.frozen});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function({.max_compiles = 8}));
  for (int call = 0; call < 2; ++call) {
    std::vector<Operand> args = {Operand::Of(in.given[0].tensor)};
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].tensor.data<float>()[0],
              in.want.outputs[1].tensor.data<float>()[0])
        << "call " << call;
    out[1].tensor.data<float>()[0] = 1000;  // the caller's to write
  }
}

TEST(FreezeTest, TheDirectiveFreezesAnInputAndPrintsBack) {
  const std::string text = absl::StrCat(
      "# lathe: constant w\n", R"IR(def forward(self, x: "f32[4]", w: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, w)
    return (add,)
)IR");
  std::unique_ptr<ir::Graph> g = *ir::ParseGraph(text);
  EXPECT_EQ(g->attributes().constants, std::set<std::string>{"w"});
  EXPECT_THAT(ir::PrintGraph(*g), HasSubstr("# lathe: constant w\n"));
  // Without its value: one line naming the input and the flag.
  EXPECT_THAT(CompileGraphText(text).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("frozen input 'w': `# lathe: constant w` "
                                 "needs its value (lathec --freeze "
                                 "w=FILE.npy)")));
  symbolic::ShapeEnv env;
  EXPECT_THAT(ir::PropagateShapes(*g, env),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no value was given for the frozen input "
                                 "'w'")));
  Frozen in = Inputs(text.c_str(), {"w"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(
          text, {.frozen = in.frozen, .backend = &codegen::CpuBackend()}));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c, in.given));
  codegen::ExpectSameOutputs(got, in.want, 0);
}

TEST(FreezeTest, ErrorsNameTheInputAndWhatWasExpected) {
  const char* kAdd =
      R"IR(def forward(self, x: "f32[4]", w: "f32[4]", s: "f32[s0]"):
    add = torch.ops.aten.add.Tensor(x, w)
    return (add, s)
)IR";
  const char* kWrites = R"IR(def forward(self, x: "f32[4]", w: "f32[4]"):
    view = torch.ops.aten.view.default(w, [2, 2])
    add_ = torch.ops.aten.add_.Tensor(view, 1)
    add = torch.ops.aten.add.Tensor(x, w)
    return (add,)
)IR";
  const char* kClash = R"IR(def forward(self, x: "f32[4]", w: "f32[4]"):
    c: "f32[4]" = self.w
    add = torch.ops.aten.add.Tensor(x, c)
    add_1 = torch.ops.aten.add.Tensor(add, w)
    return (add_1,)
)IR";
  ir::Value f32 = ir::Value::OfTensor(*Tensor::Empty({4}, DType::kFloat32));
  ir::Value f64 = ir::Value::OfTensor(*Tensor::Empty({4}, DType::kFloat64));
  ir::Value longer = ir::Value::OfTensor(*Tensor::Empty({5}, DType::kFloat32));
  struct Case {
    const char* text;
    ir::Constants values;
    std::string error;
  } cases[] = {
      {kAdd,
       {{"y", f32}},
       "frozen input 'y': the graph has no input of that name (its inputs: "
       "x, w, s)"},
      {kAdd, {{"w", f64}}, "frozen input 'w': expected f32[4]"},
      {kAdd, {{"w", longer}}, "frozen input 'w': expected f32[4]"},
      {kAdd, {{"w", ir::Value::Int(3)}}, "frozen input 'w': expected a tensor"},
      {kAdd, {{"s", f32}}, "has symbolic sizes or strides"},
      {kWrites,
       {{"w", f32}},
       "frozen input 'w': node 'add_' writes it; a frozen input is read-only"},
      {kClash,
       {{"w", f32}},
       "frozen input 'w': the graph also reads a constant 'self.w' (node "
       "'c'); rename one of them"},
  };
  for (const Case& k : cases) {
    std::unique_ptr<ir::Graph> g = *ir::ParseGraph(k.text);
    ir::Constants owned;
    EXPECT_THAT(
        FreezeInputs(*g, k.values, &owned).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(k.error)));
  }
}

}  // namespace
}  // namespace lathe
