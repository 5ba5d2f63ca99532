// CpuFunction's errors: an op without a lowering names the node and the op;
// a failing C++ compiler is reported with its command and leaves no
// temporary directory behind; inputs and constants that do not match their
// annotations are refused before a kernel reads them. Constants are given
// by name. (Results are checked against the interpreter by cpu_ops_test
// and tools/cpu_differential_test.)

#include "codegen/cpp/cpu_function.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "codegen/cpp/cpu_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "ir/value.h"
#include "passes/default_pipeline.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "runtime/composite.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/guards.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kUnlowered[] = R"IR(
def forward(self, x: "f32[4, 3][3, 1]cpu"):
    _pdist_forward = torch.ops.aten._pdist_forward.default(x, 2.0);  x = None
    return (_pdist_forward,)
)IR";

constexpr char kAdd[] = R"IR(
def forward(self, x: "f32[4, 6][6, 1]cpu"):
    add = torch.ops.aten.add.Tensor(x, 1);  x = None
    return (add,)
)IR";

absl::StatusOr<std::unique_ptr<CpuFunction>> CompileText(const char* text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*g, env));
  return CompileCpu(*g, env);
}

// A graph through AOT dispatch, compiled with its runtime wrapper plan and
// composite wrapper (lathe_call_user).
struct CompiledUser {
  std::unique_ptr<ir::Graph> graph;
  aot::AotGraph aot;
  std::unique_ptr<CpuFunction> function;
};
absl::StatusOr<CompiledUser> CompileUser(const char* text) {
  CompiledUser c;
  ASSIGN_OR_RETURN(c.graph, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*c.graph, env));
  ASSIGN_OR_RETURN(c.aot, aot::AotDispatch(*c.graph, env));
  ASSIGN_OR_RETURN(c.function, CompileCpu(*c.graph, env,
                                          {.plan = &c.aot.plan,
                                           .subclass = &c.aot.subclass}));
  return c;
}

int TempDirs() {
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::getenv("TEST_TMPDIR"))) {
    n += e.path().filename().string().rfind("lathe-cpu-", 0) == 0;
  }
  return n;
}

TEST(CpuFunctionTest, AnOpWithoutALoweringIsNamed) {
  EXPECT_THAT(CompileText(kUnlowered).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("node '_pdist_forward': "
                                 "aten._pdist_forward.default has no "
                                 "cpu lowering")));
}

TEST(CpuFunctionTest, ACompilerFailureIsReportedAndLeavesNoFiles) {
  int before = TempDirs();
  setenv("LATHE_CXX", "false", 1);
  absl::StatusOr<std::unique_ptr<CpuFunction>> f = CompileText(kAdd);
  unsetenv("LATHE_CXX");
  EXPECT_THAT(f.status(), StatusIs(absl::StatusCode::kInternal,
                                   HasSubstr("the C++ compiler failed")));
  EXPECT_EQ(TempDirs(), before);
}

TEST(CpuFunctionTest, TheTemporaryDirectoryGoesWithTheFunction) {
  int before = TempDirs();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(kAdd));
    EXPECT_EQ(TempDirs(), before + 1);
    EXPECT_EQ(f->stats().kernels, 1);
  }
  EXPECT_EQ(TempDirs(), before);
}

constexpr char kConstant[] = R"IR(
def forward(self, x: "f32[3][1]cpu"):
    c: "f32[3][1]cpu" = self.c
    mul = torch.ops.aten.mul.Tensor(x, c);  x = c = None
    return (mul,)
)IR";

TEST(CpuFunctionTest, ConstantsAreGivenByName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(kConstant));
  ASSERT_OK_AND_ASSIGN(
      ir::Interpretation r,
      f->Run({FilledF32({3}, 1)}, {{"c", FilledF32({3}, 10)}}));
  // [1, 2, 3] * [10, 11, 12]
  const Tensor& out = r.outputs[0].tensor;
  EXPECT_EQ(out.GetDouble({0}), 10);
  EXPECT_EQ(out.GetDouble({1}), 22);
  EXPECT_EQ(out.GetDouble({2}), 36);
  EXPECT_THAT(r.mutated_inputs, ::testing::ElementsAre(false));
}

TEST(CpuFunctionTest, AMissingConstantIsNamed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(kConstant));
  EXPECT_THAT(f->Run({FilledF32({3}, 1)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "missing constant 'self.c'"));
}

// A kernel would read past the end of a short constant or input: both are
// refused with what the annotation expected.
TEST(CpuFunctionTest, InputsAndConstantsOfTheWrongShapeAreRefused) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(kConstant));
  EXPECT_THAT(f->Run({FilledF32({3}, 1)}, {{"c", FilledF32({2}, 10)}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "constant 'self.c' size(0): expected 3, got 2"));
  EXPECT_THAT(f->Run({FilledF32({2}, 1)}, {{"c", FilledF32({3}, 10)}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 0 ('x') size(0): expected 3, got 2"));
  EXPECT_THAT(f->Run({ir::Value::Int(3)}, {{"c", FilledF32({3}, 10)}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 0 ('x'): expected a tensor")));
}

constexpr char kIndexSelect[] = R"IR(
def forward(self, x: "f32[4, 6][6, 1]cpu", i: "i64[2][1]cpu"):
    index_select = torch.ops.aten.index_select.default(x, 0, i);  x = i = None
    return (index_select,)
)IR";

constexpr char kIndex[] = R"IR(
def forward(self, x: "f32[4, 6][6, 1]cpu", i: "i64[2][1]cpu"):
    index = torch.ops.aten.index.Tensor(x, [i]);  x = i = None
    return (index,)
)IR";

ir::Value Ints(std::vector<int64_t> values) {
  Tensor t =
      *Tensor::Empty({static_cast<int64_t>(values.size())}, DType::kInt64);
  for (size_t k = 0; k < values.size(); ++k) t.data<int64_t>()[k] = values[k];
  return ir::Value::OfTensor(t);
}

// A graph compiled with the guards its tensor inputs get under `hints`.
struct Guarded {
  symbolic::GuardSet guards;
  std::unique_ptr<CpuFunction> function;
};
absl::StatusOr<Guarded> CompileGuarded(
    const char* text, absl::flat_hash_map<std::string, symbolic::Value> hints) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  std::vector<symbolic::InputSpec> specs;
  for (const ir::Node* p : g->Placeholders()) {
    const ir::TensorMeta& m = p->meta().tensor;
    specs.push_back(
        symbolic::InputSpec::Tensor(m.sizes, m.strides, m.storage_offset));
  }
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*g, env, {.hints = std::move(hints)}));
  Guarded c;
  ASSIGN_OR_RETURN(c.guards, symbolic::ProduceGuards(env, specs));
  ASSIGN_OR_RETURN(
      c.function,
      CompileCpu(*g, env, {.guards = &c.guards, .guard_inputs = specs}));
  return c;
}

// x = 0, 1, ..., 23 as [4, 6]: row r starts at 6r.
TEST(CpuFunctionTest, IndirectLoadsReadTheIndexedRows) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f,
                       CompileText(kIndexSelect));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation r,
                       f->Run({FilledF32({4, 6}, 0), Ints({3, 0})}));
  const Tensor& out = r.outputs[0].tensor;
  EXPECT_EQ(out.GetDouble({0, 0}), 18);
  EXPECT_EQ(out.GetDouble({0, 5}), 23);
  EXPECT_EQ(out.GetDouble({1, 2}), 2);
  // index.Tensor counts negative indices from the end.
  ASSERT_OK_AND_ASSIGN(f, CompileText(kIndex));
  ASSERT_OK_AND_ASSIGN(r, f->Run({FilledF32({4, 6}, 0), Ints({-1, 1})}));
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({0, 1}), 19);
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({1, 1}), 7);
}

// An index outside its dim stops the run before any load leaves the
// buffer, with the interpreter's message: the node, the index as given
// and the dim's size.
TEST(CpuFunctionTest, AnIndexOutOfRangeIsARunErrorNamingTheNode) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f,
                       CompileText(kIndexSelect));
  EXPECT_THAT(f->Run({FilledF32({4, 6}, 0), Ints({1, 9})}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'index_select': aten.index_select.default: index "
                       "out of range in self (index 9, size 4)"));
  // index_select does not wrap negative indices; index.Tensor wraps once.
  EXPECT_THAT(f->Run({FilledF32({4, 6}, 0), Ints({-1, 0})}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(f, CompileText(kIndex));
  EXPECT_THAT(f->Run({FilledF32({4, 6}, 0), Ints({0, -5})}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'index': aten.index.Tensor: index -5 is out of "
                       "bounds for dimension 0 with size 4"));
}

// ---- The host function (wrapper_emitter.h) ---------------------------------

constexpr char kDynamicAdd[] = R"IR(
def forward(self, x: "f32[s0, 4][4, 1]cpu", y: "f32[s0, 4][4, 1]cpu"):
    add = torch.ops.aten.add.Tensor(x, y);  x = y = None
    return (add,)
)IR";

// One .so serves every size of s0; two inputs that disagree on it, a
// layout the graph was not compiled for and a wrong dtype are refused (by
// the compiled check; the message is ir::CheckInputs's).
TEST(CpuFunctionTest, TheHostFunctionBindsAndChecksSymbols) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f,
                       CompileText(kDynamicAdd));
  for (int64_t n : {2, 5}) {
    ASSERT_OK_AND_ASSIGN(
        ir::Interpretation r,
        f->Run({FilledF32({n, 4}, 0), FilledF32({n, 4}, 100)}));
    const Tensor& out = r.outputs[0].tensor;
    EXPECT_EQ(out.sizes(), (std::vector<int64_t>{n, 4}));
    EXPECT_EQ(out.GetDouble({n - 1, 3}), 2 * (4 * n - 1) + 100);
  }
  EXPECT_THAT(f->Run({FilledF32({3, 4}, 0), FilledF32({2, 4}, 0)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 1 ('y') size(0): s0 is 3 from an earlier input, "
                       "got 2"));
  ir::Value transposed = FilledF32({4, 3}, 0);
  ASSERT_OK_AND_ASSIGN(transposed.tensor,
                       Tensor::Wrap(transposed.tensor.storage(),
                                    DType::kFloat32, {3, 4}, {1, 3}, 0));
  EXPECT_THAT(f->Run({transposed, FilledF32({3, 4}, 0)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 0 ('x') stride(0): expected 4, got 1"));
  ir::Value ints = ir::Value::OfTensor(*Tensor::Empty({3, 4}, DType::kInt32));
  EXPECT_THAT(f->Run({FilledF32({3, 4}, 0), ints}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 1 ('y'): expected dtype f32, got i32"));
}

// s0 is bound by y's size (checked) and also appears as x's stride 0,
// which nothing checks because that dimension has one element: the kernel
// takes the checked value (y's size 5), not x's stride (3).
TEST(CpuFunctionTest, ASymbolTakesItsCheckedValue) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(R"IR(
def forward(self, x: "f32[1, 3][s0, 1]cpu", y: "f32[s0][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(y, 2);  y = None
    return (mul,)
)IR"));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation r,
                       f->Run({FilledF32({1, 3}, 0), FilledF32({5}, 1)}));
  const Tensor& out = r.outputs[0].tensor;
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(out.GetDouble({4}), 10);
}

// A storage the memory limit refuses ends the call with an error, holding
// nothing (ASan's leak check runs this test too).
TEST(CpuFunctionTest, AnAllocationTheLimitRefusesIsAnError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f,
                       CompileText(kDynamicAdd));
  ir::Value x = FilledF32({1000, 4}, 0), y = FilledF32({1000, 4}, 0);
  const int64_t limit = HostMemoryLimit();
  SetHostMemoryLimit(HostMemoryInUse() + 1000);
  absl::StatusOr<ir::Interpretation> r = f->Run({x, y});
  SetHostMemoryLimit(limit);
  // The allocator's own message, as the interpreter gives it: the result
  // is 1000 * 4 floats.
  EXPECT_THAT(r.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   HasSubstr("allocating 16000 bytes would "
                                             "exceed the memory limit of")));
  EXPECT_OK(f->Run({x, y}).status());
}

// The guards compiled into the .so (lathe_guards) admit what the guard set
// admits: s0 and s1 of at least 2 (0/1 specialization), y's size equal to
// x's second, and x contiguous as compiled.
TEST(CpuFunctionTest, TheCompiledGuardsAgreeWithTheGuardSet) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[s0, s1][s1, 1]cpu", y: "f32[s1][1]cpu"):
    add = torch.ops.aten.add.Tensor(x, y);  x = y = None
    return (add,)
)IR";
  // Hints, as lathec gives from the first input set: sizes of 2 and more
  // compile for every such size (0/1 specialization).
  ASSERT_OK_AND_ASSIGN(
      Guarded c, CompileGuarded(kText, {{"s0", symbolic::Value::Int(3)},
                                        {"s1", symbolic::Value::Int(5)}}));
  const symbolic::GuardSet& guards = c.guards;
  const std::unique_ptr<CpuFunction>& f = c.function;
  struct Case {
    std::vector<int64_t> xs, xt, ys;
    bool admitted;
  };
  const std::vector<Case> cases = {
      {{3, 5}, {5, 1}, {5}, true},  {{2, 2}, {2, 1}, {2}, true},
      {{1, 5}, {5, 1}, {5}, false}, {{3, 1}, {1, 1}, {1}, false},
      {{3, 5}, {5, 1}, {4}, false}, {{3, 5}, {1, 3}, {5}, false},
      {{3, 5}, {6, 1}, {5}, false},
  };
  int admitted = 0;
  for (const Case& c : cases) {
    std::vector<int64_t> one = {1};
    std::vector<symbolic::GuardInput> in = {
        symbolic::GuardInput::Tensor(c.xs, c.xt, 0),
        symbolic::GuardInput::Tensor(c.ys, one, 0)};
    SCOPED_TRACE(::testing::PrintToString(c.xs) +
                 ::testing::PrintToString(c.xt) +
                 ::testing::PrintToString(c.ys));
    int failed = -1;
    EXPECT_EQ(guards.Check(in, &failed), c.admitted);
    EXPECT_EQ(f->Admits(in), c.admitted);
    EXPECT_EQ(f->FailedGuard(in), c.admitted ? LATHE_GUARDS_HOLD : failed);
    admitted += f->Admits(in);
  }
  EXPECT_EQ(admitted, 2);
}

// Guards that compare a size, stride or offset with a constant run from
// tables (lathe_guard_rows) between the guards that are expressions: the
// compiled lathe_guards names the same first failing guard as the
// GuardSet, wherever it is, and refuses inputs of another kind or rank.
TEST(CpuFunctionTest, TheCompiledGuardsNameTheFirstFailingGuard) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[s0][1]cpu", z: "f32[4][1]cpu"):
    sum_1 = torch.ops.aten.sum.default(x)
    mul = torch.ops.aten.mul.Tensor(y, sum_1);  y = sum_1 = None
    sum_2 = torch.ops.aten.sum.default(z);  z = None
    add = torch.ops.aten.add.Tensor(mul, sum_2);  mul = sum_2 = None
    return (add,)
)IR";
  ASSERT_OK_AND_ASSIGN(
      Guarded c, CompileGuarded(kText, {{"s0", symbolic::Value::Int(5)}}));
  const symbolic::GuardSet& guards = c.guards;
  const std::unique_ptr<CpuFunction>& f = c.function;
  struct Case {
    std::vector<int64_t> xs, xt, ys, zs;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {3, 1}, {5}, {4}},  // all hold
      {{2, 3}, {3, 1}, {9}, {4}},  // all hold
      {{3, 3}, {3, 1}, {5}, {4}},  // x's first size: guard 0
      {{2, 3}, {1, 2}, {5}, {4}},  // x's strides, further into the table
      {{2, 3}, {3, 1}, {1}, {4}},  // y's size 1: an expression guard
      {{2, 3}, {3, 1}, {5}, {5}},  // z's size
      {{2, 3}, {3, 1}, {1}, {5}},  // both y and z: z's is first
  };
  std::vector<int> failures;
  for (const Case& c : cases) {
    std::vector<int64_t> one = {1};
    std::vector<symbolic::GuardInput> in = {
        symbolic::GuardInput::Tensor(c.xs, c.xt, 0),
        symbolic::GuardInput::Tensor(c.ys, one, 0),
        symbolic::GuardInput::Tensor(c.zs, one, 0)};
    SCOPED_TRACE(
        ::testing::PrintToString(c.xs) + ::testing::PrintToString(c.xt) +
        ::testing::PrintToString(c.ys) + ::testing::PrintToString(c.zs));
    int failed = -1;
    const bool holds = guards.Check(in, &failed);
    EXPECT_EQ(f->FailedGuard(in), holds ? LATHE_GUARDS_HOLD : failed);
    failures.push_back(f->FailedGuard(in));
  }
  // Hand-derived from the set's order (the equalities with constants
  // first, in input order; then y's range, 2 <= s0): two sets hold, x's
  // size is guard 0, its stride later, z's size after x's, y's range
  // last, and where z and y both fail, z's guard is the first.
  EXPECT_EQ(failures[0], LATHE_GUARDS_HOLD);
  EXPECT_EQ(failures[1], LATHE_GUARDS_HOLD);
  EXPECT_EQ(failures[2], 0);
  EXPECT_GT(failures[3], failures[2]);
  EXPECT_GT(failures[5], failures[3]);
  EXPECT_GT(failures[4], failures[5]);
  EXPECT_EQ(failures[6], failures[5]);
  // Another rank, or a number where a tensor goes.
  std::vector<int64_t> one = {1}, two = {2, 3}, three = {3, 1};
  EXPECT_EQ(f->FailedGuard({symbolic::GuardInput::Tensor(one, one, 0),
                            symbolic::GuardInput::Tensor(one, one, 0),
                            symbolic::GuardInput::Tensor(one, one, 0)}),
            LATHE_GUARDS_OTHER_INPUTS);
  EXPECT_EQ(f->FailedGuard({symbolic::GuardInput::Tensor(two, three, 0),
                            symbolic::GuardInput::Int(5),
                            symbolic::GuardInput::Tensor(one, one, 0)}),
            LATHE_GUARDS_OTHER_INPUTS);
}

// Inputs of fixed shape are checked from a table per rank
// (lathe_tensors_match; here ranks 0, 1 and 2): every input's dtype, rank,
// sizes, and the strides of its dimensions of two or more elements (a
// dimension of one element may have any stride).
TEST(CpuFunctionTest, FixedShapeInputsAreCheckedFromATablePerRank) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileText(R"IR(
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[1, 3][3, 1]cpu", z: "i64[3][1]cpu", s: "f32[][]cpu"):
    add = torch.ops.aten.add.Tensor(x, y);  x = y = None
    mul = torch.ops.aten.mul.Tensor(add, z);  add = z = None
    mul_1 = torch.ops.aten.mul.Tensor(mul, s);  mul = s = None
    return (mul_1,)
)IR"));
  Tensor z = *Tensor::Empty({3}, DType::kInt64);
  for (int64_t k = 0; k < 3; ++k) z.data<int64_t>()[k] = k + 1;
  ir::Value y = FilledF32({1, 3}, 10);
  const ir::Value two = FilledF32({}, 2);
  // y's one row with a stride of 7: never read, so admitted.
  ASSERT_OK_AND_ASSIGN(
      y.tensor,
      Tensor::Wrap(y.tensor.storage(), DType::kFloat32, {1, 3}, {7, 1}, 0));
  ASSERT_OK_AND_ASSIGN(
      ir::Interpretation r,
      f->Run({FilledF32({2, 3}, 0), y, ir::Value::OfTensor(z), two}));
  // x is 0..5 and y is 10, 11, 12 (Filled counts from its start).
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({1, 2}), (5 + 12) * 3 * 2);
  EXPECT_THAT(f->Run({FilledF32({2, 3}, 0), FilledF32({2, 3}, 0),
                      ir::Value::OfTensor(z), two})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 1 ('y') size(0): expected 1, got 2")));
  EXPECT_THAT(
      f->Run(
           {FilledF32({2, 3}, 0), FilledF32({1, 3}, 0), FilledF32({3}, 0), two})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("input 2 ('z'): expected dtype i64, got f32")));
  // Rows padded to 4 elements: only the stride of a dimension of two.
  ir::Value padded = FilledF32({8}, 0);
  ASSERT_OK_AND_ASSIGN(padded.tensor,
                       Tensor::Wrap(padded.tensor.storage(), DType::kFloat32,
                                    {2, 3}, {4, 1}, 0));
  EXPECT_THAT(
      f->Run({padded, FilledF32({1, 3}, 0), ir::Value::OfTensor(z), two})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("input 0 ('x') stride(0): expected 3, got 4")));
  EXPECT_THAT(
      f->Run({FilledF32({2, 3}, 0), FilledF32({3}, 0), ir::Value::OfTensor(z),
              two})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 1 ('y')")));
  // The 0-d input's own table: its dtype and rank.
  EXPECT_THAT(
      f->Run({FilledF32({2, 3}, 0), FilledF32({1, 3}, 0),
              ir::Value::OfTensor(z), FilledF32({1}, 2)})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 3 ('s')")));
  EXPECT_THAT(
      f->Run({FilledF32({2, 3}, 0), FilledF32({1, 3}, 0),
              ir::Value::OfTensor(z), ir::Value::OfTensor(z)})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 3 ('s')")));
}

// Runs of plain arguments around a composite are unwrapped by loops in the
// .so (two before the pair, two after): each lands in its dense slot, and a
// composite where a plain value belongs, inside a run, is refused as the
// host's Unwrap refuses it.
TEST(CpuFunctionTest, CallUserUnwrapsRunsOfPlainArguments) {
  ASSERT_OK_AND_ASSIGN(CompiledUser c, CompileUser(R"IR(
# lathe: composite p pair
def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu", p: "f32[4][1]cpu", d: "f32[4][1]cpu", e: "f32[4][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, b)
    add = torch.ops.aten.add.Tensor(mul, p)
    sub = torch.ops.aten.sub.Tensor(add, d)
    mul_1 = torch.ops.aten.mul.Tensor(sub, e)
    return (mul_1,)
)IR"));
  ASSERT_TRUE(c.function->user_entry()) << c.function->user_entry_error();
  auto args = [] {
    std::vector<Operand> a;
    a.push_back(Operand::Of(FilledF32({4}, 1).tensor));
    a.push_back(Operand::Of(FilledF32({4}, 2).tensor));
    a.push_back(*MakePair(Operand::Of(FilledF32({4}, 10).tensor),
                          Operand::Of(FilledF32({4}, 20).tensor)));
    a.push_back(Operand::Of(FilledF32({4}, 5).tensor));
    a.push_back(Operand::Of(FilledF32({4}, 3).tensor));
    return a;
  };
  ASSERT_OK_AND_ASSIGN(aot::UserCall got, c.function->CallUser(args()));
  ASSERT_OK_AND_ASSIGN(aot::UserCall want,
                       aot::InterpretAsUser(*c.graph, c.aot, args()));
  ASSERT_EQ(got.results.size(), 1u);
  ASSERT_EQ(got.results[0].kind, Operand::Kind::kComposite);
  for (int half = 0; half < 2; ++half) {
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(got.results[0].composite->inner[half].tensor.GetDouble({i}),
                want.results[0].composite->inner[half].tensor.GetDouble({i}))
          << half << " " << i;
    }
  }
  // By hand, element 3 of the second half: ((1+3)*(2+3) + 23 - 8) * 6.
  EXPECT_EQ(got.results[0].composite->inner[1].tensor.GetDouble({3}),
            (4 * 5 + 23 - 8) * 6);
  for (int k : {1, 4}) {
    std::vector<Operand> wrong = args();
    wrong[k] = *MakePair(Operand::Of(FilledF32({4}, 0).tensor),
                         Operand::Of(FilledF32({4}, 0).tensor));
    absl::Status unwrap = c.aot.subclass.Unwrap(wrong).status();
    ASSERT_FALSE(unwrap.ok()) << k;
    EXPECT_THAT(c.function->CallUser(wrong).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         std::string(unwrap.message())))
        << k;
  }
}

// The runtime wrapper plan inside the .so: x's mul_ left to the wrapper is
// copied back into x (rt->copy), y's t_ rebinds y to its transpose, and the
// output that is y itself comes back as the transposed view of y's storage.
TEST(CpuFunctionTest, ThePlanWritesBackAndRebindsInputs) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(R"IR(
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[2, 3][3, 1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    t_ = torch.ops.aten.t_.default(y)
    add = torch.ops.aten.add.Tensor(x, 1)
    return (add, y)
)IR"));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  aot::AotOptions options;
  options.mutations.keep_input_mutations = false;
  ASSERT_OK_AND_ASSIGN(aot::AotGraph aot, aot::AotDispatch(*g, env, options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f,
                       CompileCpu(*g, env, {.plan = &aot.plan}));
  ASSERT_TRUE(f->plan_applied()) << f->plan_error();
  std::vector<ir::Value> inputs = {FilledF32({2, 3}, 0), FilledF32({2, 3}, 10)};
  const Storage y_storage = inputs[1].tensor.storage();
  ASSERT_OK_AND_ASSIGN(ir::Interpretation r, f->RunWithPlan(inputs));
  // x = 0..5 doubled, in place; add = that + 1.
  EXPECT_EQ(inputs[0].tensor.GetDouble({1, 2}), 10);
  EXPECT_EQ(r.outputs[0].tensor.GetDouble({1, 2}), 11);
  // y is rebound to its transpose over the same storage, and so is the
  // output that is y.
  EXPECT_EQ(inputs[1].tensor.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(inputs[1].tensor.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(inputs[1].tensor.storage() == y_storage);
  EXPECT_EQ(r.outputs[1].tensor.GetDouble({2, 1}), 15);
  EXPECT_TRUE(r.outputs[1].tensor.storage() == y_storage);
  EXPECT_THAT(r.mutated_inputs, ::testing::ElementsAre(true, true));
  // A function compiled with its plan is not run without it.
  EXPECT_THAT(f->Run(inputs).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// The whole user call inside the .so (lathe_call_user): a pair argument is
// checked and flattened, the graph and its plan run (y written in place),
// and the pair result rebuilt — as aot::InterpretAsUser does it with the
// interpreter. A plain tensor where the pair belongs is refused with the
// message SubclassWrapperPlan::Unwrap gives.
TEST(CpuFunctionTest, CallUserUnwrapsAndRewrapsCompositesInsideTheSo) {
  ASSERT_OK_AND_ASSIGN(CompiledUser c, CompileUser(R"IR(
# lathe: composite x pair
def forward(self, x: "f32[4][1]cpu", y: "f32[4][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    return (mul, y)
)IR"));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const aot::AotGraph& aot = c.aot;
  const std::unique_ptr<CpuFunction>& f = c.function;
  ASSERT_TRUE(f->user_entry()) << f->user_entry_error();
  EXPECT_THAT(f->source(), HasSubstr("int lathe_call_user("));
  auto args = [] {
    std::vector<Operand> a;
    a.push_back(*MakePair(Operand::Of(FilledF32({4}, 0).tensor),
                          Operand::Of(FilledF32({4}, 10).tensor)));
    a.push_back(Operand::Of(FilledF32({4}, 100).tensor));
    return a;
  };
  std::vector<Operand> mine = args();
  const Tensor y = mine[1].tensor;
  ASSERT_OK_AND_ASSIGN(aot::UserCall got, f->CallUser(mine));
  ASSERT_OK_AND_ASSIGN(aot::UserCall want,
                       aot::InterpretAsUser(*g, aot, args()));
  ASSERT_EQ(got.results.size(), 2u);
  ASSERT_EQ(got.results[0].kind, Operand::Kind::kComposite);
  EXPECT_EQ(got.results[0].composite->type->name(), "pair");
  for (int half = 0; half < 2; ++half) {
    const Tensor& a = got.results[0].composite->inner[half].tensor;
    const Tensor& b = want.results[0].composite->inner[half].tensor;
    ASSERT_EQ(a.sizes(), b.sizes());
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(a.GetDouble({i}), b.GetDouble({i})) << half << " " << i;
    }
  }
  // By hand: the second half is (10 + i) * (100 + i) (y before add_).
  EXPECT_EQ(got.results[0].composite->inner[1].tensor.GetDouble({3}), 13 * 103);
  // y was written in place: 101 + i, and the second result is it.
  EXPECT_EQ(y.GetDouble({2}), 103);
  EXPECT_TRUE(got.results[1].tensor.storage() == y.storage());
  EXPECT_THAT(got.mutated, ::testing::ElementsAre(false, true));
  EXPECT_EQ(got.mutated, want.mutated);
  // A plain tensor where the pair belongs.
  std::vector<Operand> wrong = args();
  wrong[0] = Operand::Of(FilledF32({4}, 0).tensor);
  absl::Status unwrap = aot.subclass.Unwrap(wrong).status();
  ASSERT_FALSE(unwrap.ok());
  EXPECT_THAT(f->CallUser(wrong).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       std::string(unwrap.message())));
  EXPECT_THAT(std::string(unwrap.message()), HasSubstr("expected pair"));
}

TEST(CpuFunctionTest, CallUserChecksOnTheHostWhatTheSoCannot) {
  ASSERT_OK_AND_ASSIGN(CompiledUser c, CompileUser(R"IR(
# lathe: composite x pair
def forward(self, x: "f32[s0][1]cpu", y: "f32[(s0//2)][1]cpu"):
    sum_1 = torch.ops.aten.sum.default(x)
    add = torch.ops.aten.add.Tensor(y, sum_1)
    return (add,)
)IR"));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const aot::AotGraph& aot = c.aot;
  const std::unique_ptr<CpuFunction>& f = c.function;
  ASSERT_TRUE(f->user_entry()) << f->user_entry_error();
  auto args = [](int64_t n, int64_t m) {
    std::vector<Operand> a;
    a.push_back(*MakePair(Operand::Of(FilledF32({n}, 0).tensor),
                          Operand::Of(FilledF32({n}, 1).tensor)));
    a.push_back(Operand::Of(FilledF32({m}, 0).tensor));
    return a;
  };
  ASSERT_OK_AND_ASSIGN(aot::UserCall ok, f->CallUser(args(6, 3)));
  ASSERT_OK_AND_ASSIGN(aot::UserCall want,
                       aot::InterpretAsUser(*g, aot, args(6, 3)));
  EXPECT_EQ(ok.results[0].composite->inner[1].tensor.GetDouble({2}),
            want.results[0].composite->inner[1].tensor.GetDouble({2}));
  absl::StatusOr<aot::UserCall> bad = f->CallUser(args(6, 4));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("y"));
}

}  // namespace
}  // namespace lathe::codegen
