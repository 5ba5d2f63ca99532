// The walk as a library (driver/compile.h), and the acceptance test of seed
// 000: an Adam step over 10 parameters whose lr, beta1, beta2 and step are
// float symbols compiles once, specializes nothing, updates the parameters
// in place with no copy_ left, and gives the unoptimized graph's results
// for 20 (lr, step) values through that one compile.

#include "driver/compile.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "aot/aot_dispatch.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/arguments.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_testing.h"
#include "ir/ops_util.h"
#include "passes/adam_inputs.h"
#include "runtime/artifact.h"
#include "runtime/compile_cache.h"
#include "runtime/composite.h"
#include "runtime/file_io.h"
#include "runtime/kernel_abi.h"
#include "runtime/loaded_graph.h"
#include "runtime/tensor.h"
#include "symbolic/expr.h"
#include "symbolic/guards.h"
#include "symbolic/printer.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

TEST(CompileTest, EveryStepIsTimedAndEveryDumpParses) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(def forward(self, x: "f32[4]"):
    a = torch.ops.aten.neg.default(x)
    b = torch.ops.aten.neg.default(x)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)IR",
                                        {.dump = true}));
  std::vector<std::string> names;
  for (const StepTime& s : c->steps) {
    EXPECT_GE(s.seconds, 0) << s.name;
    names.push_back(s.name);
  }
  EXPECT_EQ(names.front(), "parse");
  EXPECT_EQ(names[1], "shape_prop");
  EXPECT_EQ(names[2], "aot_dispatch");
  EXPECT_EQ(names.back(), "guards");
  EXPECT_THAT(names, ::testing::Contains("reinplace"));
  ASSERT_GE(c->dumps.size(), 3u);
  EXPECT_EQ(c->dumps[0].first, "00-aot_dispatch.txt");
  EXPECT_EQ(c->dumps[1].first, "01-tensorify_scalars.txt");
  for (const auto& [name, text] : c->dumps) {
    EXPECT_OK(ir::ParseGraph(text).status()) << name;
  }
  EXPECT_THAT(c->log, ::testing::Contains("cse: b -> a"));
}

TEST(CompileTest, ErrorsNameTheSource) {
  EXPECT_THAT(CompileGraphText("def forward(self, x: \"f32[4]\"):\n"
                               "    y = torch.ops.aten.mm.default(x, x)\n"
                               "    return (y,)\n",
                               {.source = "g.txt"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("g.txt: node 'y'")));
}

TEST(CompileTest, AdamStepCompilesOnceAndUpdatesInPlace) {
  ASSERT_OK_AND_ASSIGN(std::string text, lathe::testing::ReadRunfile(
                                             "passes/testdata/adam10_sym.txt"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(text));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> original,
                       ir::ParseGraph(text));
  // No float symbol specialized: no guard mentions one.
  EXPECT_THAT(c->specialized, IsEmpty());
  for (symbolic::Expr g : c->env->guards()) {
    for (symbolic::Expr s : symbolic::FreeSymbols(g)) {
      EXPECT_FALSE(s.is_float()) << symbolic::ToString(g);
    }
  }
  // Parameters, moments updated in place: no copy_ epilogue is left.
  std::string printed = ir::PrintGraph(*c->graph);
  EXPECT_THAT(printed, Not(HasSubstr("copy_")));
  EXPECT_THAT(printed, HasSubstr("torch.ops.aten.add_.Tensor(p9, "));
  ASSERT_TRUE(c->guards.has_value());
  std::mt19937 rng(3);
  for (int k = 0; k < 20; ++k) {
    double lr = 1e-3 * (k + 1) / 3, step = k + 1;
    std::vector<ir::Value> a = passes::AdamInputs(*original, lr, step, rng);
    std::vector<ir::Value> b = passes::CopyInputs(a);
    // The one compile admits every set (the guards see new lr and step).
    std::vector<symbolic::GuardInput> inputs;
    for (const ir::Value& v : b) {
      inputs.push_back(
          v.is_tensor() ? symbolic::GuardInput::Tensor(v.tensor.sizes(),
                                                       v.tensor.strides())
                        : symbolic::GuardInput::Float(v.number.float_value()));
    }
    EXPECT_TRUE(c->guards->Check(inputs)) << "lr " << lr;
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*original, a));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got,
                         aot::InterpretWithPlan(*c->graph, c->aot.plan, b));
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_tensor()) continue;
      std::vector<double> x = ir::Elements(a[i].tensor),
                          y = ir::Elements(b[i].tensor);
      for (size_t j = 0; j < x.size(); ++j) {
        ASSERT_NEAR(y[j], x[j], 1e-6 * std::max(1.0, std::abs(x[j])))
            << "input " << i << " element " << j << " lr " << lr;
      }
    }
  }
}

// An interpreted variant's guards (CompiledGraph::FailedGuard) answer as a
// compiled lathe_guards does: arguments the guards cannot read (a None, a
// number where a tensor goes, too few) are LATHE_GUARDS_OTHER_INPUTS, so a
// recompile's reason says "other argument kinds or ranks", not guard 0.
TEST(CompileTest, FailedGuardNamesNoGuardForArgumentsItCannotRead) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0][1]cpu"):
    neg: "f32[s0][1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
)IR"));
  ASSERT_TRUE(c->guards.has_value());
  auto failed = [&](std::vector<Operand> args) {
    ArgViews views;
    views.Build(args);
    return c->FailedGuard(views);
  };
  auto f32 = [](std::vector<int64_t> sizes) {
    return Operand::Of(*Tensor::Empty(sizes, DType::kFloat32));
  };
  EXPECT_EQ(failed({f32({4})}), LATHE_GUARDS_HOLD);
  EXPECT_EQ(failed({f32({7})}), LATHE_GUARDS_HOLD);
  // A size of 1 is specialized: a guard (2 <= s0) fails, and is named.
  int one = failed({f32({1})});
  ASSERT_GE(one, 0);
  EXPECT_THAT(GuardText(*c->written, *c->guards, one), HasSubstr("x.size(0)"));
  EXPECT_EQ(failed({Operand()}), LATHE_GUARDS_OTHER_INPUTS);
  EXPECT_EQ(failed({Operand::Float(4)}), LATHE_GUARDS_OTHER_INPUTS);
  EXPECT_EQ(failed({}), LATHE_GUARDS_OTHER_INPUTS);
}

// A graph's `# lathe: range` (Dynamo's ShapeEnv says 2 <= s0 <= 15 where a
// convolution's batch heuristics asked) is data the compiled guards read,
// not source: the same graph with another range builds to the same library
// (a compile-cache hit, as Dynamo's recompile past that range is), and each
// variant keeps its own bounds, in its artifact too (guard_bounds.txt,
// checked as the library is). Bounds not as many as the library's guards
// read, or malformed, are refused.
TEST(CompileTest, AnotherRangeIsACacheHitThatKeepsItsOwnBounds) {
  const std::string body = R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0][1]cpu"):
    neg: "f32[s0][1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
)IR";
  MemoryCache cache;
  const CompileOptions options = {
      .backend = &codegen::CpuBackend(), .cache = &cache, .artifact = true};
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> bounded,
      CompileGraphText("# lathe: range s0 2 15\n" + body, options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> open,
                       CompileGraphText(body, options));
  EXPECT_EQ(bounded->function->stats().cache_hit, "");
  EXPECT_EQ(open->function->stats().cache_hit, "memory");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(bounded->manifest.signature.guard_bounds,
            (std::vector<int64_t>{2, 15}));
  EXPECT_EQ(open->manifest.signature.guard_bounds,
            (std::vector<int64_t>{2, kMax}));
  auto failed = [](const CompiledGraph& c, int64_t n) {
    const int64_t stride = 1;
    symbolic::GuardInput in = symbolic::GuardInput::Tensor(
        absl::MakeConstSpan(&n, 1), absl::MakeConstSpan(&stride, 1));
    return c.function->FailedGuard(absl::MakeConstSpan(&in, 1));
  };
  EXPECT_EQ(failed(*bounded, 8), LATHE_GUARDS_HOLD);
  EXPECT_EQ(failed(*bounded, 15), LATHE_GUARDS_HOLD);
  const int past = failed(*bounded, 16);
  ASSERT_GE(past, 0);
  EXPECT_THAT(GuardText(*bounded->written, *bounded->guards, past),
              HasSubstr("x.size(0) <= 15"));
  EXPECT_GE(failed(*bounded, 1), 0);
  EXPECT_EQ(failed(*open, 16), LATHE_GUARDS_HOLD);
  EXPECT_EQ(failed(*open, 1 << 20), LATHE_GUARDS_HOLD);
  EXPECT_GE(failed(*open, 1), 0);
  // The artifact's manifest carries the bounds; one that lost them is
  // refused at load, never read past.
  const std::string dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/range_artifact");
  ASSERT_OK(WriteArtifact(dir, bounded->manifest, bounded->files));
  {
    ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir));
    EXPECT_EQ(a.manifest.signature.guard_bounds, (std::vector<int64_t>{2, 15}));
    std::vector<Operand> args = {
        Operand::Of(*Tensor::Empty({16}, DType::kFloat32))};
    // Past the range: a recompile, which a loaded artifact cannot make.
    EXPECT_FALSE(a.Call(absl::MakeSpan(args)).ok());
    args = {Operand::Of(*Tensor::Empty({15}, DType::kFloat32))};
    EXPECT_OK(a.Call(absl::MakeSpan(args)).status());
  }
  // Without its bounds file the library is refused, never read past; a
  // bounds file the manifest lists with another checksum is damaged; one
  // with a malformed line names it.
  auto without = [&](const std::string& name, std::string replacement) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& [file, bytes] : bounded->files) {
      if (file != kGuardBoundsFile) {
        files.emplace_back(file, bytes);
      } else if (!replacement.empty()) {
        files.emplace_back(file, replacement);
      }
    }
    const std::string d =
        absl::StrCat(std::getenv("TEST_TMPDIR"), "/range_artifact_", name);
    EXPECT_OK(WriteArtifact(d, bounded->manifest, files));
    return LoadArtifact(d);
  };
  EXPECT_THAT(without("missing", ""),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("its guards read 2 bounds, the signature "
                                 "gives 0")));
  EXPECT_THAT(without("inverted", "16 15\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("guard_bounds.txt: line 1: expected a range "
                                 "guard's bounds")));
  std::string bytes;
  ASSERT_OK_AND_ASSIGN(bytes,
                       ReadFileLimited(dir + "/" + kGuardBoundsFile, 1 << 10));
  EXPECT_EQ(bytes, "2 15\n");
  ASSERT_OK(WriteFileAtomic(dir + "/" + kGuardBoundsFile, "2 99\n"));
  EXPECT_THAT(LoadArtifact(dir),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("damaged")));
}

// The same where the range bounds a count of several symbolic sizes (a
// ResNet's input [s0, 3, s1, s1], s0 in [2, 15] and s1 in [2, 32] for
// Dynamo's first graph, s0 unbounded for its second): the count is checked
// in both, so the second is still a cache hit, and the check still refuses
// a count past --max-elements in range.
TEST(CompileTest, AnotherRangeOfACountOfSeveralSizesIsACacheHit) {
  const std::string body = R"IR(# lathe: hint s0 4
# lathe: hint s1 3
# lathe: range s1 2 32
def forward(self, x: "f32[s0, s1][s1, 1]cpu"):
    neg: "f32[s0, s1][s1, 1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
)IR";
  MemoryCache cache;
  const CompileOptions options = {.backend = &codegen::CpuBackend(),
                                  .cache = &cache};
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> bounded,
      CompileGraphText("# lathe: range s0 2 15\n" + body, options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> open,
                       CompileGraphText(body, options));
  EXPECT_EQ(bounded->function->stats().cache_hit, "");
  EXPECT_EQ(open->function->stats().cache_hit, "memory");
  // Under a limit the ranges do not keep every count under, the host
  // function refuses a count past it and runs one within it.
  const int64_t limit = ir::MaxOpElements();
  ir::SetMaxOpElements(100);
  absl::StatusOr<std::unique_ptr<CompiledGraph>> small =
      CompileGraphText("# lathe: range s0 2 15\n" + body, options);
  ir::SetMaxOpElements(limit);
  ASSERT_OK(small.status());
  auto run = [&](int64_t rows, int64_t cols) {
    std::vector<ir::Value> in = {
        ir::Value::OfTensor(*Tensor::Empty({rows, cols}, DType::kFloat32))};
    return (*small)->function->RunWithPlan(in).status();
  };
  EXPECT_OK(run(10, 10));
  EXPECT_THAT(run(10, 11).message(),
              HasSubstr("is more than the 100 one op may take"));
}

// Compiled code addresses an input from its first element (as Inductor's
// does), so an input's storage offset is guarded only where the graph reads
// it from the storage's start (as_strided): AOTAutograd's backward graphs
// take saved views at any offset (q, k and v of one projection).
TEST(CompileTest, StorageOffsetsAreGuardedOnlyWhereTheGraphReadsThem) {
  auto failed = [](const CompiledGraph& c, int64_t offset) {
    Tensor base = *Tensor::Empty({8}, DType::kFloat32);
    std::vector<Operand> args = {
        Operand::Of(*base.AsStrided({4}, {1}, offset))};
    ArgViews views;
    views.Build(args);
    return c.FailedGuard(views);
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> plain,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
)IR"));
  EXPECT_EQ(failed(*plain, 0), LATHE_GUARDS_HOLD);
  EXPECT_EQ(failed(*plain, 3), LATHE_GUARDS_HOLD);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> strided,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    as_strided: "f32[2][1]cpu" = torch.ops.aten.as_strided.default(x, [2], [1], 1)
    neg: "f32[2][1]cpu" = torch.ops.aten.neg.default(as_strided)
    return (neg,)
)IR"));
  EXPECT_EQ(failed(*strided, 0), LATHE_GUARDS_HOLD);
  int k = failed(*strided, 3);
  ASSERT_GE(k, 0);
  EXPECT_THAT(GuardText(*strided->written, *strided->guards, k),
              HasSubstr("x.storage_offset() == 0"));
  // Every op tagged kStorageOffset, not only as_strided: a graph that asks
  // for the offset itself.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> asks,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    sym_storage_offset = torch.ops.aten.sym_storage_offset.default(x)
    add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(x, sym_storage_offset)
    return (add,)
)IR"));
  EXPECT_EQ(failed(*asks, 0), LATHE_GUARDS_HOLD);
  EXPECT_GE(failed(*asks, 3), 0);
  // An output that views an input moves with the input's offset (the plan
  // counts its offset from the input's), so it needs no guard; an input an
  // in-place view changes gets its new view from the storage's start, as
  // PyTorch's as_strided_ does, so its offset is guarded.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> view,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    unsqueeze: "f32[1, 4][4, 1]cpu" = torch.ops.aten.unsqueeze.default(x, 0)
    return (unsqueeze,)
)IR"));
  EXPECT_EQ(failed(*view, 0), LATHE_GUARDS_HOLD);
  EXPECT_EQ(failed(*view, 3), LATHE_GUARDS_HOLD);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> restride,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    unsqueeze_: "f32[1, 4][4, 1]cpu" = torch.ops.aten.unsqueeze_.default(x, 0)
    return (unsqueeze_,)
)IR"));
  EXPECT_EQ(failed(*restride, 0), LATHE_GUARDS_HOLD);
  k = failed(*restride, 3);
  ASSERT_GE(k, 0);
  EXPECT_THAT(GuardText(*restride->written, *restride->guards, k),
              HasSubstr("x.storage_offset() == 0"));
}

}  // namespace
}  // namespace lathe
