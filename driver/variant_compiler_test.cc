// The compiler side of compiled functions (variant_compiler.h): issue 12's
// Adam acceptance — ten parameters stepped 100 times with a new lr and step
// each time compile once, update the parameters in place with no copy, and
// match the interpreter — the arguments and hints a graph gives, and tiered
// compiles (the interpreter first, the library once built).

#include "driver/variant_compiler.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "aot/aot_dispatch.h"
#include "codegen/cpp/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "runtime/compile_cache.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::vector<int64_t>> kShapes = {
    {8, 4}, {4},      {16, 8}, {8},          {12, 16},
    {16},   {10, 12}, {10},    {4, 2, 3, 3}, {32}};

// "f32[8, 4][4, 1]cpu".
std::string Annotation(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return absl::StrCat("f32[", absl::StrJoin(shape, ", "), "][",
                      absl::StrJoin(strides, ", "), "]cpu");
}

// torch.optim.Adam's step (betas 0.9, 0.999, eps 1e-8) over every parameter,
// with the learning rate and the step count as float symbols: the bias
// corrections are SymFloat expressions of the step.
std::string AdamGraph() {
  std::vector<std::string> params;
  std::string body;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    const std::string a = Annotation(kShapes[i]);
    for (const char* name : {"param", "grad", "exp_avg", "exp_avg_sq"}) {
      params.push_back(absl::StrCat(name, i, ": \"", a, "\""));
    }
    absl::StrAppend(
        &body, "        lerp_", i, ": \"", a,
        "\" = torch.ops.aten.lerp_.Scalar(exp_avg", i, ", grad", i,
        ", 0.09999999999999998)\n", "        mul_", i, ": \"", a,
        "\" = torch.ops.aten.mul_.Scalar(exp_avg_sq", i, ", 0.999)\n",
        "        addcmul_", i, ": \"", a,
        "\" = torch.ops.aten.addcmul_.default(mul_", i, ", grad", i, ", grad",
        i, ", value = 0.0010000000000000009)\n", "        sqrt_", i, ": \"", a,
        "\" = torch.ops.aten.sqrt.default(addcmul_", i, ")\n", "        div_",
        i, ": \"", a, "\" = torch.ops.aten.div.Tensor(sqrt_", i,
        ", sqrt_bc2)\n", "        add_", i, ": \"", a,
        "\" = torch.ops.aten.add.Tensor(div_", i, ", 1e-08)\n",
        "        addcdiv_", i, ": \"", a,
        "\" = torch.ops.aten.addcdiv_.default(param", i, ", lerp_", i, ", add_",
        i, ", value = neg_step_size)\n");
  }
  return absl::StrCat(
      "# lathe: hint zf0 0.001\n# lathe: hint zf1 1.0\n",
      "class GraphModule(torch.nn.Module):\n    def forward(self, ",
      absl::StrJoin(params, ", "), ", lr: \"Sym(zf0)\", step: \"Sym(zf1)\"):\n",
      "        pow_1: \"Sym(0.9**zf1)\" = 0.9 ** step\n",
      "        bc1: \"Sym(1 - 0.9**zf1)\" = 1 - pow_1\n",
      "        pow_2: \"Sym(0.999**zf1)\" = 0.999 ** step\n",
      "        bc2: \"Sym(1 - 0.999**zf1)\" = 1 - pow_2\n",
      "        step_size: \"Sym(zf0/(1 - 0.9**zf1))\" = lr / bc1\n",
      "        neg_step_size: \"Sym(-zf0/(1 - 0.9**zf1))\" = -1 * step_size\n",
      "        sqrt_bc2: \"Sym((1 - 0.999**zf1)**0.5)\" = bc2 ** 0.5\n", body,
      "        return ()\n");
}

Tensor Filled(const std::vector<int64_t>& shape, int seed, bool positive) {
  Tensor t = Tensor::Empty(shape, DType::kFloat32).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = std::sin(0.37f * static_cast<float>(i + 1) + seed);
    t.data<float>()[i] = positive ? std::fabs(v) : v;
  }
  return t;
}

Tensor Copy(const Tensor& t) {
  Tensor c = Tensor::Empty(t.sizes(), t.dtype()).value();
  for (int64_t i = 0; i < t.numel(); ++i)
    c.data<float>()[i] = t.data<float>()[i];
  return c;
}

TEST(VariantCompilerTest, AdamOverTenParametersCompilesOnceAndMatches) {
  const std::string text = AdamGraph();
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(text, "adam.txt"));
  VariantCompiler compiler(
      parsed, {.source = "adam.txt", .backend = &codegen::CpuBackend()});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function());
  // The interpreter's side: the same graph through AOT dispatch, on its own
  // copies of the state.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> oracle,
                       CompileGraphText(text, {.source = "adam.txt"}));
  const size_t n = kShapes.size();
  std::vector<Operand> state(4 * n), expected(4 * n);
  std::vector<const void*> storages(4 * n);
  for (size_t i = 0; i < n; ++i) {
    for (int k : {0, 2, 3}) {  // param, exp_avg, exp_avg_sq
      Tensor t = Filled(kShapes[i], static_cast<int>(4 * i + k), k == 3);
      state[4 * i + k] = Operand::Of(t);
      expected[4 * i + k] = Operand::Of(Copy(t));
      storages[4 * i + k] = t.data_ptr();
    }
  }
  for (int step = 1; step <= 100; ++step) {
    const double lr = 1e-3 * (1 + 0.01 * step);
    std::vector<Operand> args = state, want = expected;
    for (size_t i = 0; i < n; ++i) {
      Tensor grad = Filled(kShapes[i], 1000 + step * 17 + static_cast<int>(i),
                           /*positive=*/false);
      args[4 * i + 1] = Operand::Of(grad);
      want[4 * i + 1] = Operand::Of(Copy(grad));
    }
    args.push_back(Operand::Float(lr));
    args.push_back(Operand::Float(step));
    want.push_back(Operand::Float(lr));
    want.push_back(Operand::Float(step));
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    EXPECT_TRUE(out.empty());
    ASSERT_OK(aot::InterpretAsUser(*oracle->graph, oracle->aot, want).status());
  }
  EXPECT_EQ(f->compiles(), 1);
  EXPECT_TRUE(f->recompiles().empty());
  EXPECT_EQ(f->fallback_calls(), 0);
  for (size_t k = 0; k < state.size(); ++k) {
    if (k % 4 == 1) continue;
    const Tensor& got = state[k].tensor;
    // Updated in place: the caller's own storage holds the new values.
    EXPECT_EQ(got.data_ptr(), storages[k]);
    testing::ExpectTensorsClose(got, expected[k].tensor, 1e-5,
                                absl::StrCat("state ", k));
  }
  // The parameters moved (the test can fail), and no copy: every update is
  // a kernel's store into the input, none a copy_ of the epilogue.
  EXPECT_GT(std::fabs(state[0].tensor.data<float>()[0] -
                      Filled(kShapes[0], 0, false).data<float>()[0]),
            1e-3);
  ASSERT_EQ(compiler.compiled().size(), 1u);
  const CompiledGraph& a = *compiler.compiled()[0];
  EXPECT_THAT(a.function->source(), Not(HasSubstr("rt->copy(")));
  EXPECT_EQ(a.manifest.mutated.size(), 3 * n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_THAT(a.function->scheduled(),
                HasSubstr(absl::StrCat("store in", 4 * i, "[")));
  }
}

// Runs `body` on `text` compiled for the interpreter, then for the cpu
// backend.
void ForBothBackends(const char* text,
                     const std::function<void(CompiledFunction*)>& body) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(text, "g.txt"));
  for (const codegen::Backend* backend :
       {static_cast<const codegen::Backend*>(nullptr),
        &codegen::CpuBackend()}) {
    SCOPED_TRACE(backend == nullptr ? "interpreter" : "cpu");
    VariantCompiler compiler(parsed, {.source = "g.txt", .backend = backend});
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                         compiler.Function());
    body(f.get());
  }
}

// A graph with a None input and a bool input keeps the guards on its
// other inputs (it had none at all: a size of 1 ran the variant compiled
// for sizes of 2 and more), and a bool the graph was specialized on is
// guarded: another value is refused, never run through the graph made for
// the first.
TEST(VariantCompilerTest, NoneAndBoolInputsKeepTheGuards) {
  constexpr char kText[] = R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0][1]cpu", flag: "Sym(True)", nothing):
    neg: "f32[s0][1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
)IR";
  ForBothBackends(kText, [](CompiledFunction* f) {
    auto call = [&](int64_t n, bool flag) {
      Tensor x = Tensor::Empty({n}, DType::kFloat32).value();
      for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = i + 1;
      std::vector<Operand> args = {Operand::Of(x), Operand::Bool(flag),
                                   Operand()};
      return f->Call(absl::MakeSpan(args));
    };
    for (int64_t n : {4, 7}) {
      ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, call(n, true));
      EXPECT_EQ(out[0].tensor.GetDouble({n - 1}), -n);
    }
    EXPECT_EQ(f->compiles(), 1);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> one, call(1, true));
    EXPECT_EQ(one[0].tensor.GetDouble({0}), -1);
    EXPECT_EQ(f->compiles(), 2);
    ASSERT_EQ(f->recompiles().size(), 1u);
    EXPECT_THAT(f->recompiles()[0].reason, HasSubstr("x.size(0)"));
    EXPECT_THAT(call(4, false), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("flag")));
  });
}

// An input at any storage offset, on both backends, through one compile:
// the outputs that view it move with it, as PyTorch's view ops put them
// (they came back at the offset the graph was compiled for, or the call was
// refused by a guard on the offset).
TEST(VariantCompilerTest, ViewsOfAnInputAtAnyOffsetCompileOnce) {
  constexpr char kText[] = R"(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    neg: "f32[2, 3][3, 1]cpu" = torch.ops.aten.neg.default(x)
    t: "f32[3, 2][1, 3]cpu" = torch.ops.aten.t.default(x)
    select: "f32[3][1]cpu" = torch.ops.aten.select.int(x, 0, 1)
    return (neg, t, select)
)";
  ForBothBackends(kText, [](CompiledFunction* f) {
    for (int64_t offset : {0, 3, 5}) {
      // x[i][j] = offset + 3 * i + j.
      Tensor storage = Tensor::Empty({12}, DType::kFloat32).value();
      for (int64_t i = 0; i < 12; ++i) storage.data<float>()[i] = i;
      std::vector<Operand> args = {
          Operand::Of(*storage.AsStrided({2, 3}, {3, 1}, offset))};
      ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                           f->Call(absl::MakeSpan(args)));
      ASSERT_EQ(out.size(), 3u);
      const Tensor &neg = out[0].tensor, &t = out[1].tensor,
                   &row = out[2].tensor;
      const double o = static_cast<double>(offset);
      EXPECT_EQ(neg.GetDouble({1, 2}), -(o + 5));
      EXPECT_EQ(t.storage(), storage.storage());
      EXPECT_EQ(t.storage_offset(), offset);
      EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 3}));
      EXPECT_EQ(t.GetDouble({2, 1}), o + 5);
      EXPECT_EQ(row.storage_offset(), offset + 3);
      EXPECT_EQ(row.GetDouble({0}), o + 3);
    }
    EXPECT_EQ(f->compiles(), 1);
    EXPECT_TRUE(f->recompiles().empty());
    EXPECT_EQ(f->fallback_calls(), 0);
  });
}

// Outputs that view an input as another dtype (view.dtype) keep that dtype
// on both backends (they came back as the input's dtype: f32 where the graph
// says i32), and an input offset the new element size does not divide is
// refused as PyTorch refuses it.
TEST(VariantCompilerTest, ViewsOfAnInputAsAnotherDTypeKeepIt) {
  constexpr char kText[] = R"(def forward(self, x: "f32[2, 4][4, 1]cpu"):
    bits: "i32[2, 4][4, 1]cpu" = torch.ops.aten.view.dtype(x, torch.int32)
    wide: "f64[2, 2][2, 1]cpu" = torch.ops.aten.view.dtype(x, torch.float64)
    return (bits, wide)
)";
  ForBothBackends(kText, [](CompiledFunction* f) {
    // f32 1.0 is 0x3f800000; the f64 made of the f32 pair (0, 1.875) is
    // 0x3ff0000000000000 = 1.0.
    Tensor storage = Tensor::Empty({12}, DType::kFloat32).value();
    for (int64_t i = 0; i < 12; ++i) storage.data<float>()[i] = 0;
    storage.data<float>()[2] = 1.0f;
    storage.data<float>()[5] = 1.875f;
    for (int64_t offset : {0, 2}) {
      std::vector<Operand> args = {
          Operand::Of(*storage.AsStrided({2, 4}, {4, 1}, offset))};
      ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                           f->Call(absl::MakeSpan(args)));
      ASSERT_EQ(out.size(), 2u);
      const Tensor &bits = out[0].tensor, &wide = out[1].tensor;
      EXPECT_EQ(bits.dtype(), DType::kInt32);
      EXPECT_EQ(wide.dtype(), DType::kFloat64);
      EXPECT_EQ(bits.storage(), storage.storage());
      EXPECT_EQ(bits.storage_offset(), offset);
      EXPECT_EQ(wide.storage_offset(), offset / 2);
      EXPECT_EQ(wide.sizes(), (std::vector<int64_t>{2, 2}));
      // x[0][2 - offset] is the f32 1.0 at storage index 2.
      EXPECT_EQ(bits.GetDouble({0, 2 - offset}), 0x3f800000);
      // The f64 at byte 16 (f32 indices 4 and 5): flat index 2 - offset / 2.
      const int64_t k = 2 - offset / 2;
      EXPECT_EQ(wide.GetDouble({k / 2, k % 2}), 1.0);
    }
    std::vector<Operand> odd = {
        Operand::Of(*storage.AsStrided({2, 4}, {4, 1}, 1))};
    EXPECT_THAT(f->Call(absl::MakeSpan(odd)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("self.storage_offset() must be divisible")));
    // view.dtype reads the offset: offset 2 is a variant of its own.
    EXPECT_EQ(f->compiles(), 2);
  });
}

// A wider view of an input that begins a whole element of the new dtype
// into the storage but not into the input (x at offset 3, x[1:] as f64):
// the interpreter's value, and a one-line refusal from the cpu backend,
// whose code addresses the input from its first element (it read 4 bytes
// off before the refusal).
TEST(VariantCompilerTest, AWiderViewOffTheInputsElementGridIsRefusedByTheCpu) {
  constexpr char kText[] = R"(def forward(self, x: "f32[9][1]cpu"):
    slice_1: "f32[8][1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 1, 9)
    wide: "f64[4][1]cpu" = torch.ops.aten.view.dtype(slice_1, torch.float64)
    mul: "f64[4][1]cpu" = torch.ops.aten.mul.Tensor(wide, 2)
    return (mul,)
)";
  Tensor storage = Tensor::Empty({12}, DType::kFloat32).value();
  for (int64_t i = 0; i < 12; ++i) storage.data<float>()[i] = 0;
  storage.data<float>()[5] = 1.875f;  // the f64 at byte 16 is 1.0
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kText, "g.txt"));
  for (const codegen::Backend* backend :
       {static_cast<const codegen::Backend*>(nullptr),
        &codegen::CpuBackend()}) {
    VariantCompiler compiler(parsed, {.source = "g.txt", .backend = backend});
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                         compiler.Function());
    std::vector<Operand> args = {Operand::Of(*storage.AsStrided({9}, {1}, 3))};
    absl::StatusOr<std::vector<Operand>> out = f->Call(absl::MakeSpan(args));
    if (backend == nullptr) {
      ASSERT_OK(out.status());
      EXPECT_EQ(out->at(0).tensor.GetDouble({0}), 2.0);
    } else {
      EXPECT_THAT(out, StatusIs(absl::StatusCode::kUnimplemented,
                                HasSubstr("does not divide")));
    }
  }
}

// Without a backend the variants are compiled graphs the interpreter runs,
// through the same recompile loop: batch 1 after batch 4 recompiles (the
// 0/1 specialization) with the failing guard as the reason; arguments that
// do not fit are explained in the interpreter's words.
TEST(VariantCompilerTest, TheInterpreterBackendRecompilesThroughTheSameLoop) {
  constexpr char kText[] = R"(def forward(self, x: "f32[s0, 3][3, 1]cpu"):
    relu: "f32[s0, 3][3, 1]cpu" = torch.ops.aten.relu.default(x)
    return (relu,)
)";
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kText, "g.txt"));
  VariantCompiler compiler(parsed, {.source = "g.txt"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function());
  for (int64_t rows : {4, 5, 1, 1}) {
    Tensor x = Tensor::Empty({rows, 3}, DType::kFloat32).value();
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i - 2.0f;
    std::vector<Operand> args = {Operand::Of(x)};
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].tensor.GetDouble({0, 0}), 0.0);  // relu(-2)
    EXPECT_EQ(out[0].tensor.GetDouble({rows - 1, 2}), 3 * rows - 3.0);
  }
  EXPECT_EQ(f->compiles(), 2);
  ASSERT_EQ(f->recompiles().size(), 1u);
  EXPECT_EQ(f->recompiles()[0].reason, "2 <= x.size(0)");
  ASSERT_EQ(compiler.compiled().size(), 2u);
  EXPECT_EQ(compiler.compiled()[0]->function, nullptr);  // interpreted
  std::vector<Operand> wrong = {
      Operand::Of(Tensor::Empty({4, 3}, DType::kFloat64).value())};
  EXPECT_THAT(
      f->Call(absl::MakeSpan(wrong)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("input 0 ('x'): expected dtype f32, got f64")));
}

// y = gelu(x) * 3 + 1 over f32 [64]: a kernel the library and the
// interpreter (in double) round differently in the last bit or not at all.
constexpr char kTieredGraph[] = R"(class g(torch.nn.Module):
    def forward(self, x: "f32[64][1]cpu"):
        gelu: "f32[64][1]cpu" = torch.ops.aten.gelu.default(x)
        mul: "f32[64][1]cpu" = torch.ops.aten.mul.Tensor(gelu, 3)
        add: "f32[64][1]cpu" = torch.ops.aten.add.Tensor(mul, 1)
        return (add,)
)";

// The result of the interpreter backend (no tiers) on the same graph.
Tensor Interpreted(const Tensor& x) {
  VariantCompiler interp(Parse(kTieredGraph, "g.txt").value(),
                         {.source = "g.txt"});
  std::unique_ptr<CompiledFunction> f = interp.Function().value();
  std::vector<Operand> args = {Operand::Of(Copy(x))};
  return f->Call(absl::MakeSpan(args)).value()[0].tensor;
}

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(VariantCompilerTest, TieredTheInterpreterRunsUntilTheLibraryReplacesIt) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kTieredGraph, "g.txt"));
  MemoryCache cache;
  VariantCompiler compiler(
      parsed, {.source = "g.txt", .backend = &codegen::CpuBackend()}, &cache);
  // The build waits until the test has called twice.
  absl::Notification go;
  std::atomic<int> builds{0};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function({.tiered = true, .before_build = [&] {
                                            ++builds;
                                            go.WaitForNotification();
                                          }}));
  const Tensor x = Filled({64}, 3, false);
  const Tensor want = Interpreted(x);
  for (int call = 0; call < 2; ++call) {
    std::vector<Operand> args = {Operand::Of(Copy(x))};
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    // The interpreter's bits: the first tier ran.
    EXPECT_EQ(Floats(out[0].tensor), Floats(want));
  }
  EXPECT_EQ(f->compiles(), 1);
  EXPECT_EQ(f->upgrades(), 0);
  EXPECT_TRUE(compiler.compiled().empty());  // no library yet
  go.Notify();
  compiler.WaitForBuilds();
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(f->upgrades(), 1);
  EXPECT_TRUE(f->warnings().empty());
  ASSERT_EQ(compiler.compiled().size(), 1u);
  ASSERT_NE(compiler.compiled()[0]->function, nullptr);
  std::vector<Operand> args = {Operand::Of(Copy(x))};
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f->Call(absl::MakeSpan(args)));
  testing::ExpectTensorsClose(out[0].tensor, want, 1e-5, "the library");
  EXPECT_EQ(f->compiles(), 1);

  // A second process's compile of the same graph (a new compiler, the same
  // cache) finds the library: no first tier, no build.
  VariantCompiler warm(
      parsed, {.source = "g.txt", .backend = &codegen::CpuBackend()}, &cache);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledFunction> g,
      warm.Function({.tiered = true, .before_build = [&] { ++builds; }}));
  std::vector<Operand> again = {Operand::Of(Copy(x))};
  ASSERT_OK_AND_ASSIGN(out, g->Call(absl::MakeSpan(again)));
  testing::ExpectTensorsClose(out[0].tensor, want, 1e-5, "the library");
  warm.WaitForBuilds();
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(g->upgrades(), 0);
  ASSERT_EQ(warm.compiled().size(), 1u);
  EXPECT_EQ(warm.compiled()[0]->function->stats().cache_hit, "memory");
}

TEST(VariantCompilerTest, TieredAFailedBuildLeavesTheInterpreterWithAWarning) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kTieredGraph, "g.txt"));
  // A C++ compiler that fails (`false`); no cache, so the probe runs none.
  const char* cxx = std::getenv("LATHE_CXX");
  const std::string saved = cxx != nullptr ? cxx : "";
  setenv("LATHE_CXX", "false", 1);
  VariantCompiler compiler(
      parsed, {.source = "g.txt", .backend = &codegen::CpuBackend()});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function({.tiered = true}));
  const Tensor x = Filled({64}, 5, false);
  std::vector<Operand> args = {Operand::Of(Copy(x))};
  ASSERT_OK(f->Call(absl::MakeSpan(args)).status());
  compiler.WaitForBuilds();
  EXPECT_EQ(f->upgrades(), 0);
  ASSERT_EQ(f->warnings().size(), 1u);
  EXPECT_THAT(f->warnings()[0],
              HasSubstr("the optimized build of a variant failed (g.txt: cpu "
                        "backend: the C++ compiler failed"));
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f->Call(absl::MakeSpan(args)));
  EXPECT_EQ(Floats(out[0].tensor), Floats(Interpreted(x)));
  // Without tiers, the same compile is an error at the first call.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> plain,
                       compiler.Function());
  absl::StatusOr<std::vector<Operand>> refused =
      plain->Call(absl::MakeSpan(args));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("g.txt: cpu backend: the C++ compiler failed"));
  // The first function stays tiered: another size gets a first tier too.
  std::vector<Operand> other = {Operand::Of(Filled({64}, 6, false))};
  ASSERT_OK(f->Call(absl::MakeSpan(other)).status());
  compiler.WaitForBuilds();
  if (saved.empty()) {
    unsetenv("LATHE_CXX");
  } else {
    setenv("LATHE_CXX", saved.c_str(), 1);
  }
}

TEST(VariantCompilerTest, TieredNeedsTheCpuBackend) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kTieredGraph, "g.txt"));
  VariantCompiler interp(parsed, {.source = "g.txt"});
  EXPECT_THAT(interp.Function({.tiered = true}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "g.txt: tiered compiles need the cpu backend (its "
                       "library is the second tier; the first, the "
                       "interpreter, runs on host tensors), not interp"));
}

TEST(VariantCompilerTest, TieredFunctionDestroyedBeforeItsBuildFinishes) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kTieredGraph, "g.txt"));
  VariantCompiler compiler(
      parsed, {.source = "g.txt", .backend = &codegen::CpuBackend()});
  absl::Notification go;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledFunction> f,
                       compiler.Function({.tiered = true, .before_build = [&] {
                                            go.WaitForNotification();
                                          }}));
  std::vector<Operand> args = {Operand::Of(Filled({64}, 1, false))};
  ASSERT_OK(f->Call(absl::MakeSpan(args)).status());
  f.reset();  // the build's replacement then finds no function
  go.Notify();
  compiler.WaitForBuilds();
  EXPECT_EQ(compiler.compiled().size(), 1u);
}

}  // namespace
}  // namespace lathe
