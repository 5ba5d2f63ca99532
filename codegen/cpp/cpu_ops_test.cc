// The compiled ops against the interpreter, on the inputs where they are
// easiest to get wrong: data-dependent sizes, runtime assertions, Welford
// reductions at their edges, scans, scatter and upsampling, float-to-integer
// conversions, metadata mutators, random ops, in-place reads, overflowing
// sizes, shared kernel functions and streamed stores (with GCC, and clang
// where it is installed). CpuFunction's own errors and the host function
// are cpu_function_test's.

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/cpu_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace lathe::codegen {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// A 0-d int64 tensor holding v.
ir::Value IntScalar(int64_t v) {
  Tensor t = *Tensor::Empty({}, DType::kInt64);
  t.data<int64_t>()[0] = v;
  return ir::Value::OfTensor(t);
}

// Data-dependent sizes: nonzero's row count and the length of x[:n.item()]
// are bound by the host function while it runs; no nonzero element (0
// rows), all of them, a negative end and one past the size included.
TEST(CpuOpsTest, DataDependentSizesMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[3, 4][4, 1]cpu", n: "i64[][]cpu"):
    gt = torch.ops.aten.gt.Scalar(x, 0)
    nonzero = torch.ops.aten.nonzero.default(gt);  gt = None
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    view = torch.ops.aten.view.default(x, [12]);  x = None
    slice_1 = torch.ops.aten.slice.Tensor(view, 0, 1, item);  view = None
    mul = torch.ops.aten.mul.Tensor(slice_1, 2);  slice_1 = None
    return (nonzero, mul)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const std::unique_ptr<CpuFunction>& f = c.function;
  for (double first : {-100.0, -5.0, 1.0}) {
    for (int64_t n : {int64_t{5}, int64_t{-3}, int64_t{0}, int64_t{20}}) {
      std::vector<ir::Value> in = {FilledF32({3, 4}, first), IntScalar(n)};
      SCOPED_TRACE(::testing::Message() << "first " << first << " n " << n);
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*g, in));
      ExpectSameOutputs(got, want);
    }
  }
  // By hand: x = -5, -4, ..., 6 has 6 positive elements, the first (1) at
  // [1, 2]; x[1:5] * 2 is -8, -6, -4, -2.
  std::vector<ir::Value> in = {FilledF32({3, 4}, -5), IntScalar(5)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  EXPECT_EQ(got.outputs[0].tensor.sizes(), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 0}), 1);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 1}), 2);
  EXPECT_EQ(got.outputs[1].tensor.sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({3}), -2);
  // A value no size may take stops the call before any allocation.
  in[1] = IntScalar(int64_t{1} << 62);
  EXPECT_THAT(f->Run(in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'item': the data-dependent u1 is outside "
                       "[-2^31, 2^31), the values the compiled program "
                       "admits"));
}

// A runtime assertion on a data-dependent value stops the call with its
// message, naming the node.
TEST(CpuOpsTest, AFailedRuntimeAssertionIsAnError) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, n: "i64[][]cpu"):
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    le = item <= 3
    _assert_scalar = torch.ops.aten._assert_scalar.default(le, "u0 <= 3 on node 'le'");  le = None
    zeros = torch.ops.aten.zeros.default([item], dtype = torch.float32)
    return (zeros,)
)IR"));
  const CpuFunction* f = c.function.get();
  ASSERT_OK_AND_ASSIGN(ir::Interpretation ok, f->Run({IntScalar(3)}));
  EXPECT_EQ(ok.outputs[0].tensor.sizes(), (std::vector<int64_t>{3}));
  EXPECT_THAT(f->Run({IntScalar(4)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node '_assert_scalar' (aten._assert_scalar.default): "
                       "u0 <= 3 on node 'le'"));
}

// var_mean is one Welford reduction over blocks of 256: rows that end
// before, at and after a block boundary, f32 and f64, a correction larger
// than the count (inf) and an empty reduction (NaN) agree with the
// interpreter; rows offset by 1e4 keep their small variance (a one-pass sum
// of squares would lose it in float32).
// Parallel loops run on the runtime's pool in chunks of their flattened
// outer loops (runtime/thread_pool.h), so a chunk may start in the middle
// of an inner row: one outer loop (a flat simd loop, chunks of 64), two and
// three collapsed (their indices carried from one iteration to the next),
// and rows with reductions inside; each over 32768 elements so that it is
// worth threads, with sizes that divide into no chunk evenly.
TEST(CpuOpsTest, ParallelLoopsOnThePoolMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[37, 41, 29][1189, 29, 1]cpu", y: "f32[70001][1]cpu", z: "f32[3, 7, 11, 157][12089, 1727, 157, 1]cpu"):
    permute = torch.ops.aten.permute.default(x, [2, 0, 1]);  x = None
    mul = torch.ops.aten.mul.Tensor(permute, 3);  permute = None
    exp = torch.ops.aten.exp.default(y);  y = None
    amax = torch.ops.aten.amax.default(z, [3], True)
    sub = torch.ops.aten.sub.Tensor(z, amax);  z = amax = None
    sum_1 = torch.ops.aten.sum.dim_IntList(sub, [3]);  sub = None
    return (mul, exp, sum_1)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  EXPECT_THAT(c.function->source(), HasSubstr("lathe_parallel(rt, "));
  // A team of 4 whatever this machine has: chunks start mid-row.
  const int team = omp_get_max_threads();
  omp_set_num_threads(4);
  std::vector<ir::Value> in = {FilledF32({37, 41, 29}, -7),
                               FilledF32({70001}, -30000),
                               FilledF32({3, 7, 11, 157}, 5)};
  // exp's inputs of a few units: scale them down.
  for (int64_t i = 0; i < 70001; ++i) {
    in[1].tensor.SetDouble({i}, (static_cast<double>(i % 97) - 48) / 16);
  }
  absl::StatusOr<ir::Interpretation> got = c.function->Run(in);
  omp_set_num_threads(team);
  ASSERT_OK(got.status());
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(*got, want, 1e-6);
}

// Reductions to one value run their loops on the pool too, each chunk with
// its own accumulators folded into the caller's under a lock: sum, prod,
// max with a NaN (the NaN flag folds), any, var_mean over two dims (a
// Welford section: chunks of its outer loop and its last loop's blocks),
// a section that reads an earlier section's value (the lambda captures it:
// x - x.mean()), and a sum over 7 rows of 10001 (chunks of the rows and of
// blocks of each row). A team of 4: chunks end mid-row.
TEST(CpuOpsTest, ReductionsToOneValueOnThePoolMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[300, 257][257, 1]cpu", n: "f32[70007][1]cpu", p: "f64[50000][1]cpu"):
    sum_1 = torch.ops.aten.sum.default(x)
    amax = torch.ops.aten.amax.default(n, [0])
    prod = torch.ops.aten.prod.default(p);  p = None
    gt = torch.ops.aten.gt.Scalar(n, 1.5)
    any_1 = torch.ops.aten.any.default(gt);  gt = None
    vm = torch.ops.aten.var_mean.correction(x, [0, 1], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    mean = torch.ops.aten.mean.default(x)
    sub = torch.ops.aten.sub.Tensor(x, mean);  x = mean = None
    view = torch.ops.aten.view.default(n, [7, 10001]);  n = None
    sum_2 = torch.ops.aten.sum.default(view);  view = None
    return (sum_1, amax, prod, any_1, getitem, getitem_1, sub, sum_2)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  EXPECT_THAT(c.function->source(), HasSubstr("lathe_lock(lathe_held);"));
  EXPECT_THAT(c.function->source(), ::testing::Not(HasSubstr("omp parallel")));
  const int team = omp_get_max_threads();
  omp_set_num_threads(4);
  Tensor p = *Tensor::Empty({50000}, DType::kFloat64);
  for (int64_t i = 0; i < 50000; ++i) {
    p.SetDouble({i}, 1 + std::sin(0.01 * i) * 1e-5);
  }
  std::vector<ir::Value> in = {FilledF32({300, 257}, -7),
                               FilledF32({70007}, -3), ir::Value::OfTensor(p)};
  for (int64_t i = 0; i < 300 * 257; ++i) {
    in[0].tensor.SetDouble({i / 257, i % 257}, std::sin(0.37 * i) + 0.01 * i);
  }
  for (int64_t i = 0; i < 70007; ++i) {
    in[1].tensor.SetDouble({i}, i == 40000 ? NAN : std::cos(0.1 * i) * 2);
  }
  absl::StatusOr<ir::Interpretation> got = c.function->Run(in);
  omp_set_num_threads(team);
  ASSERT_OK(got.status());
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(*got, want, 1e-4);
  EXPECT_TRUE(std::isnan(got->outputs[1].tensor.GetDouble({})));
}

// Sibling reductions of the same rows (scheduler.cc) share one loop: the
// sum, the max (with a NaN in one row) and the var_mean of x + 1e4 (a
// variance of about 2 on an offset of 1e4, which a one-pass sum of squares
// would lose), and the mean of x, accumulated in the Welford section's
// block pass; on a team of 4, against the interpreter.
TEST(CpuOpsTest, SiblingRowReductionsMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[37, 1000][1000, 1]cpu"):
    big = torch.ops.aten.add.Tensor(x, 10000.0)
    sum_1 = torch.ops.aten.sum.dim_IntList(big, [1])
    amax = torch.ops.aten.amax.default(big, [1])
    vm = torch.ops.aten.var_mean.correction(big, [1], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    mean = torch.ops.aten.mean.dim(x, [1]);  x = None
    return (sum_1, amax, getitem, getitem_1, mean)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  // One simd loop accumulates the max and the Welford block's sum.
  bool one_loop = false;
  for (absl::string_view line : absl::StrSplit(c.function->source(), '\n')) {
    one_loop = one_loop || (absl::StrContains(line, "reduction(max:") &&
                            absl::StrContains(line, "reduction(+:bs"));
  }
  EXPECT_TRUE(one_loop) << c.function->source();
  const int team = omp_get_max_threads();
  omp_set_num_threads(4);
  std::vector<ir::Value> in = {FilledF32({37, 1000}, 0)};
  for (int64_t i = 0; i < 37 * 1000; ++i) {
    in[0].tensor.SetDouble({i / 1000, i % 1000},
                           i == 5500 ? NAN : std::sin(0.37 * i) * 2);
  }
  absl::StatusOr<ir::Interpretation> got = c.function->Run(in);
  omp_set_num_threads(team);
  ASSERT_OK(got.status());
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(*got, want, 1e-5);
  EXPECT_TRUE(std::isnan(got->outputs[1].tensor.GetDouble({5})));
  EXPECT_FALSE(std::isnan(got->outputs[1].tensor.GetDouble({4})));
}

// A parallel loop whose inner size is 0 at run time (a slice to n.item())
// runs no iteration and matches the interpreter. (A chunk's first indices
// divide by that size: lathe_parallel returns before them. GCC's code did
// not trap without that check, the division being unused, but it is
// undefined behaviour.)
TEST(CpuOpsTest, AParallelLoopOfSizeZeroRunsNothing) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[4, 6, 8][48, 8, 1]cpu", n: "i64[][]cpu"):
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    slice_1 = torch.ops.aten.slice.Tensor(x, 1, 0, item);  x = None
    sum_1 = torch.ops.aten.sum.dim_IntList(slice_1, [2]);  slice_1 = None
    return (sum_1,)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  for (int64_t n : {0, 3, 6}) {
    std::vector<ir::Value> in = {FilledF32({4, 6, 8}, 1), IntScalar(n)};
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
    ExpectSameOutputs(got, want);
    EXPECT_EQ(got.outputs[0].tensor.numel(), 4 * n);
  }
}

TEST(CpuOpsTest, VarMeanIsAWelfordReductionThatMatchesTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[4, 1000][1000, 1]cpu", y: "f64[3, 257][257, 1]cpu", z: "f32[2, 0][1, 1]cpu"):
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    vm_1 = torch.ops.aten.var_mean.correction(y, [1], correction = 0, keepdim = True);  y = None
    getitem_2 = vm_1[0]
    getitem_3 = vm_1[1];  vm_1 = None
    var = torch.ops.aten.var.correction(x, [0], correction = 5);  x = None
    var_1 = torch.ops.aten.var.correction(z, [1], correction = 0);  z = None
    return (getitem, getitem_1, getitem_2, getitem_3, var, var_1)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const std::unique_ptr<CpuFunction>& f = c.function;
  EXPECT_THAT(f->scheduled(), HasSubstr("reduce welford_m2"));
  // x[r, k] = 1e4 + r + 0.01 k; y[r, k] = (k * 37 % 101) / 7 - r.
  Tensor x = *Tensor::Empty({4, 1000}, DType::kFloat32);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t k = 0; k < 1000; ++k) {
      x.SetDouble({r, k}, 1e4 + static_cast<double>(r) + 0.01 * k);
    }
  }
  Tensor y = *Tensor::Empty({3, 257}, DType::kFloat64);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t k = 0; k < 257; ++k) {
      y.SetDouble({r, k}, static_cast<double>(k * 37 % 101) / 7 - r);
    }
  }
  Tensor z = *Tensor::Empty({2, 0}, DType::kFloat32);
  std::vector<ir::Value> in = {ir::Value::OfTensor(x), ir::Value::OfTensor(y),
                               ir::Value::OfTensor(z)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*g, in));
  ExpectSameOutputs(got, want, 1e-5);
  // By hand: 1000 evenly spaced values 0.01 apart have (correction 1)
  // variance 0.01^2 * 1000 * 1001 / 12 = 8.341667; their mean is the middle.
  EXPECT_NEAR(got.outputs[0].tensor.GetDouble({2}), 8.341667, 1e-3);
  EXPECT_NEAR(got.outputs[1].tensor.GetDouble({2}), 1e4 + 2 + 4.995, 1e-2);
  // The empty reduction is NaN.
  EXPECT_TRUE(std::isnan(got.outputs[5].tensor.GetDouble({0})));
}

// Infinities in var_mean's rows (of two Welford blocks): the mean is the
// sum's, as the interpreter's and PyTorch's (inf, -inf, NaN for both signs
// or a NaN), whether the infinity is a block's first value (its shift), a
// later one or in the second block; the variance is NaN.
TEST(CpuOpsTest, VarMeanOfInfinitiesIsTheSums) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[7, 300][300, 1]cpu"):
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    return (getitem, getitem_1)
)IR"));
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = *Tensor::Empty({7, 300}, DType::kFloat32);
  for (int64_t r = 0; r < 7; ++r) {
    for (int64_t k = 0; k < 300; ++k) x.SetDouble({r, k}, 0.5 * (k % 13));
  }
  x.SetDouble({0, 0}, inf);
  x.SetDouble({1, 5}, inf);
  x.SetDouble({2, 260}, inf);
  x.SetDouble({3, 3}, -inf);
  x.SetDouble({3, 270}, inf);
  x.SetDouble({4, 100}, NAN);
  x.SetDouble({6, 256}, -inf);
  std::vector<ir::Value> in = {ir::Value::OfTensor(x)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-5);
  const Tensor& mean = got.outputs[1].tensor;
  for (int64_t r : {0, 1, 2}) EXPECT_EQ(mean.GetDouble({r}), inf) << r;
  EXPECT_EQ(mean.GetDouble({6}), -inf);
  for (int64_t r : {3, 4}) EXPECT_TRUE(std::isnan(mean.GetDouble({r}))) << r;
  EXPECT_TRUE(std::isfinite(mean.GetDouble({5})));
  for (int64_t r = 0; r < 7; ++r) {
    EXPECT_EQ(std::isnan(got.outputs[0].tensor.GetDouble({r})), r != 5) << r;
  }
}

// f32 values whose squared deviations overflow f32 (beyond about 1e18): a
// block's sums in f32 would be inf; in double, as the interpreter's and
// PyTorch's CPU var, the variance is finite when it fits f32. Rows of
// three Welford blocks: +-2e18 alternating (by hand: mean 0, variance
// 4e36 * 600 / 599), 3e18 but for one -3e18 in the second block, and small
// values (summed in f32 as before). And 3e38 next to -3e38 (a difference
// beyond f32 itself): the variance overflows f32, as PyTorch's.
TEST(CpuOpsTest, VarMeanOfHugeFloatsIsSummedInDouble) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[3, 600][600, 1]cpu", y: "f32[600][1]cpu"):
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    var = torch.ops.aten.var.correction(y, None, correction = 0)
    return (getitem, getitem_1, var)
)IR"));
  Tensor x = *Tensor::Empty({3, 600}, DType::kFloat32);
  Tensor y = *Tensor::Empty({600}, DType::kFloat32);
  for (int64_t k = 0; k < 600; ++k) {
    x.SetDouble({0, k}, k % 2 == 0 ? 2e18 : -2e18);
    x.SetDouble({1, k}, k == 300 ? -3e18 : 3e18);
    x.SetDouble({2, k}, 0.5 * (k % 13));
    y.SetDouble({k}, k == 10 ? 3e38 : k == 11 ? -3e38 : 0.5 * (k % 13));
  }
  std::vector<ir::Value> in = {ir::Value::OfTensor(x), ir::Value::OfTensor(y)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-5);
  const Tensor& var = got.outputs[0].tensor;
  const Tensor& mean = got.outputs[1].tensor;
  EXPECT_NEAR(var.GetDouble({0}), 4e36 * 600 / 599, 1e31);
  EXPECT_NEAR(mean.GetDouble({0}), 0, 1e12);
  // One value 6e18 below 599 others: mean 3e18 - 1e16, M2 = 6e18^2 * 599 /
  // 600.
  EXPECT_NEAR(var.GetDouble({1}), 36e36 / 600, 1e31);
  EXPECT_NEAR(mean.GetDouble({1}), 3e18 - 1e16, 1e12);
  EXPECT_TRUE(std::isfinite(var.GetDouble({2})));
  EXPECT_TRUE(std::isinf(got.outputs[2].tensor.GetDouble({})));
}

// logcumsumexp compiled, against the interpreter, along either dimension
// of a row of infinities, NaN and large values (no overflow: 1000 + log 2),
// f32 accumulated in double and f64.
TEST(CpuOpsTest, LogcumsumexpMatchesTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[3, 5][5, 1]cpu", y: "f64[2, 300][300, 1]cpu"):
    logcumsumexp = torch.ops.aten.logcumsumexp.default(x, 1)
    logcumsumexp_1 = torch.ops.aten.logcumsumexp.default(x, 0)
    logcumsumexp_2 = torch.ops.aten.logcumsumexp.default(y, -1)
    return (logcumsumexp, logcumsumexp_1, logcumsumexp_2)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  EXPECT_THAT(c.function->scheduled(), HasSubstr("scan logaddexp"));
  const double inf = std::numeric_limits<double>::infinity();
  const double row[3][5] = {{-inf, -inf, 0, inf, inf},
                            {1000, 1000, -2, NAN, 3},
                            {0.5, -0.25, 7, 1e-3, -inf}};
  Tensor x = *Tensor::Empty({3, 5}, DType::kFloat32);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t k = 0; k < 5; ++k) x.SetDouble({r, k}, row[r][k]);
  }
  Tensor y = *Tensor::Empty({2, 300}, DType::kFloat64);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t k = 0; k < 300; ++k) {
      y.SetDouble({r, k}, static_cast<double>(k * 37 % 101) / 7 - r);
    }
  }
  std::vector<ir::Value> in = {ir::Value::OfTensor(x), ir::Value::OfTensor(y)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-6);
  // By hand: log(e^1000 + e^1000) = 1000 + log 2; then NaN for the rest.
  EXPECT_NEAR(got.outputs[0].tensor.GetDouble({1, 1}), 1000 + std::log(2.0),
              1e-3);
  EXPECT_TRUE(std::isnan(got.outputs[0].tensor.GetDouble({1, 4})));
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 1}), -inf);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 4}), inf);
}

// masked_scatter and upsample_nearest2d compiled, against the interpreter
// on the same inputs: x = 0..11 as [3, 4], mask true at every third
// element, source 100, 101, ...
TEST(CpuOpsTest, MaskedScatterAndNearestUpsampleMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[3, 4][4, 1]cpu", m: "b8[3, 4][4, 1]cpu", s: "f32[2, 3][3, 1]cpu", y: "f32[1, 2, 3, 4][24, 12, 4, 1]cpu"):
    masked_scatter = torch.ops.aten.masked_scatter.default(x, m, s);  x = m = s = None
    up = torch.ops.aten.upsample_nearest2d.vec(y, None, [2.0, 2.0])
    up_1 = torch.ops.aten.upsample_nearest2d.default(y, [6, 6]);  y = None
    return (masked_scatter, up, up_1)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const std::unique_ptr<CpuFunction>& f = c.function;
  Tensor mask = *Tensor::Empty({3, 4}, DType::kBool);
  for (int64_t i = 0; i < 12; ++i) mask.data<bool>()[i] = i % 3 == 0;
  std::vector<ir::Value> in = {FilledF32({3, 4}, 0), ir::Value::OfTensor(mask),
                               FilledF32({2, 3}, 100),
                               FilledF32({1, 2, 3, 4}, 0)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*g, in));
  ASSERT_EQ(got.outputs.size(), 3u);
  ExpectSameOutputs(got, want);
  // By hand: elements 0, 3, 6, 9 take source's 100, 101, 102, 103.
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 0}), 100);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 3}), 101);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({2, 1}), 103);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({2, 2}), 10);
  // A mask with more true elements (12) than source has (6) is a run error,
  // in the interpreter's words.
  for (int64_t i = 0; i < 12; ++i) mask.data<bool>()[i] = true;
  absl::StatusOr<ir::Interpretation> short_source = f->Run(in);
  EXPECT_THAT(short_source.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'masked_scatter': "
                                 "aten.masked_scatter.default: Number of "
                                 "elements of source < number of ones in "
                                 "mask")));
  EXPECT_THAT(ir::Interpret(*g, in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'masked_scatter': "
                                 "aten.masked_scatter.default: Number of "
                                 "elements of source < number of ones in "
                                 "mask")));
}

// round.decimals (positive, zero and negative decimals, halves included),
// prims.iota and empty_permuted compiled, against the interpreter: x = -5,
// -4.875, ... (steps of 1/8) as [8, 11].
TEST(CpuOpsTest, RoundDecimalsIotaAndEmptyPermutedMatchTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[8, 11][11, 1]cpu", y: "f64[8, 11][11, 1]cpu"):
    round_1 = torch.ops.aten.round.decimals(x, decimals = 1)
    round_2 = torch.ops.aten.round.decimals(x, decimals = 0)
    round_3 = torch.ops.aten.round.decimals(y, decimals = -1)
    round_4 = torch.ops.aten.round.decimals(y, decimals = 2)
    iota = torch.ops.prims.iota.default(7, start = 3, step = -2, dtype = torch.int64, device = device(type='cpu'), requires_grad = False)
    empty_permuted = torch.ops.aten.empty_permuted.default([2, 3, 4], [0, 2, 1], dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    return (round_1, round_2, round_3, round_4, iota, empty_permuted)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  const std::unique_ptr<ir::Graph>& g = c.graph;
  const std::unique_ptr<CpuFunction>& f = c.function;
  Tensor x = *Tensor::Empty({8, 11}, DType::kFloat32);
  Tensor y = *Tensor::Empty({8, 11}, DType::kFloat64);
  for (int64_t i = 0; i < 88; ++i) {
    x.data<float>()[i] = -5.0f + 0.125f * i;
    y.data<double>()[i] = -250.0 + 6.25 * i;
  }
  std::vector<ir::Value> in = {ir::Value::OfTensor(x), ir::Value::OfTensor(y)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*g, in));
  // empty_permuted's values are unspecified: its sizes and strides count.
  const Tensor e = got.outputs[5].tensor;
  EXPECT_EQ(e.sizes(), want.outputs[5].tensor.sizes());
  EXPECT_EQ(e.strides(), want.outputs[5].tensor.strides());
  EXPECT_EQ(e.strides(), (std::vector<int64_t>{12, 1, 3}));
  got.outputs.pop_back();
  want.outputs.pop_back();
  ExpectSameOutputs(got, want);
  // By hand: -4.875 to 1 decimal is -4.9 (in float); 0.5 rounds to 0 and
  // 1.5 to 2 (half to even); -243.75 to -1 decimals is -240; iota is 3, 1,
  // -1, ... -9.
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 1}), -4.9f);
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({4, 0}), 0);  // 0.5
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({4, 8}), 2);  // 1.5
  EXPECT_EQ(got.outputs[2].tensor.GetDouble({0, 1}), -240);
  EXPECT_EQ(got.outputs[4].tensor.GetDouble({6}), -9);
}

// Floating point to integer, as PyTorch 2.15 converts on this CPU (by hand
// from torch: -3.7 -> uint8 253, 300 -> int8 44, 3e9 -> int16 0, 1e20 ->
// int32 INT32_MIN and int64 INT64_MIN), for constants the C++ compiler
// folds (it folded static_cast's undefined out-of-range conversion
// saturating: 0, 127, -1, INT32_MAX, INT64_MAX) and for values read at run
// time, against the interpreter too.
TEST(CpuOpsTest, FloatToIntegerConvertsAsPyTorchFoldedOrNot) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[5][1]cpu"):
    a = torch.ops.aten.full.default([5], -3.7, dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    b = torch.ops.aten.full.default([5], 300.0, dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    c = torch.ops.aten.full.default([5], 3e9, dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    d = torch.ops.aten.full.default([5], 1e20, dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    a_1 = torch.ops.prims.convert_element_type.default(a, torch.uint8)
    b_1 = torch.ops.prims.convert_element_type.default(b, torch.int8)
    c_1 = torch.ops.prims.convert_element_type.default(c, torch.int16)
    d_1 = torch.ops.prims.convert_element_type.default(d, torch.int32)
    d_2 = torch.ops.prims.convert_element_type.default(d, torch.int64)
    x_1 = torch.ops.prims.convert_element_type.default(x, torch.uint8)
    x_2 = torch.ops.prims.convert_element_type.default(x, torch.int32)
    return (a_1, b_1, c_1, d_1, d_2, x_1, x_2)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  Tensor x = *Tensor::Empty({5}, DType::kFloat32);
  const float xs[] = {-3.7f, 300.0f, 1e20f,
                      -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()};
  std::copy(xs, xs + 5, x.data<float>());
  std::vector<ir::Value> in = {ir::Value::OfTensor(x)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
  const double m32 = std::numeric_limits<int32_t>::min();
  const double m64 = static_cast<double>(std::numeric_limits<int64_t>::min());
  const std::vector<double> constants = {253, 44, 0, m32, m64};
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(got.outputs[k].tensor.GetDouble({2}), constants[k]) << k;
  }
  const std::vector<double> x_u8 = {253, 44, 0, 0, 0};
  const std::vector<double> x_i32 = {-3, 300, m32, m32, m32};
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(got.outputs[5].tensor.GetDouble({i}), x_u8[i]) << i;
    EXPECT_EQ(got.outputs[6].tensor.GetDouble({i}), x_i32[i]) << i;
  }
}

// A scalar -0.0 keeps its sign (as in PyTorch, where 2 * -0.0 is -0.0 and
// -2 * -0.0 is 0.0): the graph's constant reaches the kernel as -0.0, not as
// the 0.0 it compares equal to. full's zero and the folded sum carry it too.
TEST(CpuOpsTest, ANegativeZeroScalarKeepsItsSign) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[3][1]cpu"):
    a = torch.ops.aten.mul.Tensor(x, -0.0)
    b = torch.ops.aten.full.default([3], -0.0, dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    c = torch.ops.aten.add.Tensor(b, -0.0)
    return (a, b, c)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  Tensor x = *Tensor::Empty({3}, DType::kFloat32);
  const float xs[] = {2.0f, -2.0f, 0.0f};
  std::copy(xs, xs + 3, x.data<float>());
  std::vector<ir::Value> in = {ir::Value::OfTensor(x)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  const bool negative[3][3] = {{true, false, true},  // x * -0.0
                               {true, true, true},   // full -0.0
                               {true, true, true}};  // -0.0 + -0.0
  for (int k = 0; k < 3; ++k) {
    for (int64_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(absl::StrCat("output ", k, " element ", i));
      EXPECT_EQ(got.outputs[k].tensor.GetDouble({i}), 0.0);
      EXPECT_EQ(std::signbit(got.outputs[k].tensor.GetDouble({i})),
                negative[k][i]);
      EXPECT_EQ(std::signbit(want.outputs[k].tensor.GetDouble({i})),
                negative[k][i]);
    }
  }
}

// The metadata mutators (t_, transpose_, unsqueeze_, as_strided_, set_) are
// views, and as in the interpreter the tensor object takes the new view for
// the nodes after them: `add_1` reads `mul` transposed, and `add` is
// returned as unsqueeze_ and transpose_ left it. By hand: add is 2*x.t() +
// y, so add[0][1][2] (was [2][1]) = 2*x[1][2] + y[2][1] = 2*5 + 105 = 115.
TEST(CpuOpsTest, MetadataMutatorsAreViewsOfTheTensorObject) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[3, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    t_ = torch.ops.aten.t_.default(mul)
    add = torch.ops.aten.add.Tensor(t_, y)
    add_1 = torch.ops.aten.add.Tensor(mul, 1)
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(add, 0)
    transpose_ = torch.ops.aten.transpose_.default(unsqueeze_, 1, 2)
    clone = torch.ops.aten.clone.default(x)
    as_strided_ = torch.ops.aten.as_strided_.default(clone, [2, 2], [1, 2], 1)
    clone_1 = torch.ops.aten.clone.default(y)
    set_ = torch.ops.aten.set_.source_Tensor(clone_1, add_1)
    mul_1 = torch.ops.aten.mul.Tensor(clone_1, 3)
    return (add, add_1, transpose_, as_strided_, set_, mul_1)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  std::vector<ir::Value> in = {FilledF32({2, 3}, 0), FilledF32({3, 2}, 100)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
  ASSERT_EQ(got.outputs.size(), 6u);
  EXPECT_EQ(got.outputs[0].tensor.sizes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({0, 1, 2}), 115);
  EXPECT_EQ(got.outputs[1].tensor.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(got.outputs[2].tensor.sizes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(got.outputs[3].tensor.GetDouble({1, 0}), 2);  // x's element 2
  EXPECT_EQ(got.outputs[5].tensor.GetDouble({0, 1}), 3 * (2 * 3 + 1));
}

// Random ops draw the interpreter's numbers from the same seed (ir/random.h):
// rand in three dtypes, randn, randperm and native_dropout of a contiguous
// and a transposed input, exactly (randn within a few ulp of double), for
// the default seed and another one;
// another seed gives other numbers. By hand: a randperm holds 0 .. 9 once
// each, and dropout keeps x * 2 (p = 0.5) or 0.
TEST(CpuOpsTest, RandomOpsDrawTheInterpretersNumbers) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[5, 7][7, 1]cpu", n: "Sym(s0)"):
    rand = torch.ops.aten.rand.default([3, n], dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
    randn = torch.ops.aten.randn.default([6, 5], dtype = torch.float64, device = device(type='cpu'), pin_memory = False)
    rand_1 = torch.ops.aten.rand.default([8], dtype = torch.float16, device = device(type='cpu'), pin_memory = False)
    randperm = torch.ops.aten.randperm.default(10, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    t = torch.ops.aten.t.default(x)
    native_dropout_1 = torch.ops.aten.native_dropout.default(t, 0.25, True)
    getitem_2 = native_dropout_1[0]
    getitem_3 = native_dropout_1[1]
    native_dropout_2 = torch.ops.aten.native_dropout.default(x, 0.5, False)
    getitem_4 = native_dropout_2[0]
    getitem_5 = native_dropout_2[1]
    rand_2 = torch.ops.aten.rand.default([4], dtype = torch.bfloat16, device = device(type='cpu'), pin_memory = False)
    return (rand, randn, rand_1, randperm, getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5, rand_2)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  EXPECT_THAT(c.function->source(), HasSubstr("rt->seed"));
  for (int64_t n : {int64_t{4}, int64_t{9}}) {
    std::vector<ir::Value> in = {FilledF32({5, 7}, 1), ir::Value::Int(n)};
    std::vector<double> first_rand;
    for (uint64_t seed : {ir::Generator::kDefaultSeed, uint64_t{12345}}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " seed " << seed);
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got,
                           c.function->Run(in, {}, seed));
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                           ir::Interpret(*c.graph, in, {}, seed));
      // randn's log and cos are vectorized (libmvec, a few ulp of double);
      // the rest is exact.
      ir::Interpretation got_randn, want_randn;
      got_randn.outputs = {got.outputs[1]};
      want_randn.outputs = {want.outputs[1]};
      ExpectSameOutputs(got_randn, want_randn, 1e-14);
      ir::Interpretation got_rest = got, want_rest = want;
      got_rest.outputs.erase(got_rest.outputs.begin() + 1);
      want_rest.outputs.erase(want_rest.outputs.begin() + 1);
      ExpectSameOutputs(got_rest, want_rest);
      const Tensor& perm = got.outputs[3].tensor;
      std::vector<int> seen(10, 0);
      for (int64_t i = 0; i < 10; ++i) ++seen.at(perm.GetDouble({i}));
      EXPECT_EQ(seen, std::vector<int>(10, 1));
      const Tensor &out = got.outputs[4].tensor, &mask = got.outputs[5].tensor;
      int kept = 0;
      for (int64_t i = 0; i < 5; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          double x = 1 + 7 * i + j;
          bool keep = mask.GetDouble({i, j}) != 0;
          kept += keep;
          EXPECT_EQ(out.GetDouble({i, j}), keep ? 2 * x : 0);
        }
      }
      EXPECT_GT(kept, 5);
      EXPECT_LT(kept, 30);
      std::vector<double> r;
      for (int64_t j = 0; j < n; ++j) {
        r.push_back(got.outputs[0].tensor.GetDouble({0, j}));
      }
      if (first_rand.empty()) {
        first_rand = r;
      } else {
        EXPECT_NE(r, first_rand);
      }
    }
  }
}

// copy(z, y) lowers as a broadcast view of y's memory; when y is written
// afterwards (sub_), the copy keeps the values it had, and a view of it in
// another layout (diagonal) reads those. By hand, y = 1 .. 6: copy's rows
// are 2, 4, .. 12, sub_ gives 1, 3, .. 11, the diagonal is 2, 4, 6, 8.
TEST(CpuOpsTest, AValueReadingAWrittenBufferInPlaceKeepsItsValues) {
  constexpr char kText[] = R"IR(
def forward(self, y: "f32[6][1]cpu", z: "f32[4, 6][6, 1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(y, 2)
    copy = torch.ops.aten.copy.default(z, mul_)
    sub_ = torch.ops.aten.sub_.Tensor(mul_, 1)
    diagonal = torch.ops.aten.diagonal.default(copy, 0)
    return (sub_, copy, diagonal)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  auto inputs = [] {
    return std::vector<ir::Value>{FilledF32({6}, 1), FilledF32({4, 6}, 100)};
  };
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(inputs()));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                       ir::Interpret(*c.graph, inputs()));
  ExpectSameOutputs(got, want);
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({5}), 11);
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({3, 5}), 12);
  EXPECT_EQ(got.outputs[2].tensor.GetDouble({3}), 8);
}

// Hostile data-dependent sizes (review): [n, n, 8] with n = 2^31 - 1 has
// more elements than int64 counts, which is refused (past --max-elements)
// before any kernel writes, and one that fits the limit but not memory is
// refused as memory; .item() of a float16 tensor reads its value; var over
// dim 0 of a 0-d tensor is a reduction of one element.
TEST(CpuOpsTest, OverflowingSizesAndHalfItemsAreHandled) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, n: "i64[][]cpu", h: "f16[][]cpu", z: "f32[][]cpu"):
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    ones = torch.ops.aten.ones.default([item, item, 8], dtype = torch.float32)
    item_1 = torch.ops.aten._local_scalar_dense.default(h);  h = None
    mul = torch.ops.aten.mul.Tensor(z, item_1)
    var = torch.ops.aten.var.correction(z, [0], correction = 0);  z = None
    return (ones, mul, var)
)IR"));
  Tensor h = *Tensor::Empty({}, DType::kFloat16);
  h.SetDouble({}, 1.5);
  Tensor z = *Tensor::Empty({}, DType::kFloat32);
  z.SetDouble({}, 4);
  std::vector<ir::Value> in = {IntScalar(2), ir::Value::OfTensor(h),
                               ir::Value::OfTensor(z)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({}), 6);
  EXPECT_EQ(got.outputs[2].tensor.GetDouble({}), 0);
  // 8 * (2^31 - 1)^2 elements: past the element limit (checked in double,
  // before the allocation's byte count would overflow). The count, past
  // int64, is reported saturated at 2^63 - 1.
  in[0] = IntScalar(2147483647);
  EXPECT_THAT(c.function->Run(in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 'ones': aten.ones.default: a result of "
                       "9223372036854775807 elements (f32[2147483647, "
                       "2147483647, 8]) is more than the 1099511627776 one op "
                       "may take (--max-elements)"));
  // 8 * 300000^2 elements fit the limit; their bytes do not fit memory:
  // the allocator's own message, as the interpreter gives it.
  in[0] = IntScalar(300000);
  EXPECT_THAT(c.function->Run(in).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("allocating 2880000000000 bytes would exceed "
                                 "the memory limit of")));
}

// An annotation lathe_call cannot check (a division) is checked on the host
// before lathe_call_user runs, as before lathe_call.

// Kernels that share one function (the same work on other buffers, each
// layer's product and its relu and residual add) compute what the
// interpreter computes: each call binds its own buffers.
TEST(CpuOpsTest, SharedKernelFunctionsMatchTheInterpreter) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[8, 16][16, 1]cpu", w: "f32[16, 16][16, 1]cpu", v: "f32[16, 16][16, 1]cpu"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm);  mm = None
    add = torch.ops.aten.add.Tensor(relu, x);  relu = None
    mm_1 = torch.ops.aten.mm.default(add, v)
    relu_1 = torch.ops.aten.relu.default(mm_1);  mm_1 = None
    add_1 = torch.ops.aten.add.Tensor(relu_1, add);  relu_1 = None
    mm_2 = torch.ops.aten.mm.default(add_1, w)
    relu_2 = torch.ops.aten.relu.default(mm_2);  mm_2 = None
    add_2 = torch.ops.aten.add.Tensor(relu_2, add_1);  relu_2 = None
    return (add_2, add)
)IR"));
  const std::string& source = c.function->source();
  // Three layers of two kernels (the product, the relu and add), and fewer
  // functions: the layers' kernels are the same work.
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = source.find(what); at != std::string::npos;
         at = source.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_GE(count("\nstatic void k"), 6) << source;
  EXPECT_LE(count("noinline)) static void lathe_k"), 3) << source;
  std::vector<ir::Value> in;
  for (std::vector<int64_t> sizes :
       {std::vector<int64_t>{8, 16}, {16, 16}, {16, 16}}) {
    Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.data<float>()[i] = static_cast<float>((i * 37) % 11) / 8.0f - 0.625f;
    }
    in.push_back(ir::Value::OfTensor(t));
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
}

// A streamed store (an f32 output of 2^22 elements or more) against the
// interpreter: rows of 4099 floats start at every alignment, so the part
// before the first aligned element, the streamed blocks and the rest all
// run; the input is a view at offset 3.
void ExpectStreamedStoresMatchTheInterpreter() {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[1024, 4099][4099, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(mul, 1)
    return (add,)
)IR"));
  EXPECT_THAT(c.function->source(), HasSubstr("lathe_stream16(p"));
  Tensor base = *Tensor::Empty({1024 * 4099 + 3}, DType::kFloat32);
  for (int64_t i = 0; i < base.numel(); ++i) {
    base.data<float>()[i] = static_cast<float>(i % 1000) - 500.0f;
  }
  Tensor x = *Tensor::Wrap(base.storage(), DType::kFloat32, {1024, 4099},
                           {4099, 1}, 3);
  std::vector<ir::Value> in = {ir::Value::OfTensor(x)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
  // By hand: element [1, 0] is base[4102] * 2 + 1 = (102 - 500) * 2 + 1.
  EXPECT_EQ(got.outputs[0].tensor.GetDouble({1, 0}), -795);
}

TEST(CpuOpsTest, StreamedStoresMatchTheInterpreter) {
  ExpectStreamedStoresMatchTheInterpreter();
}

// A convolution's channels-last result, pooled into the channels-first one
// the flatten needs: the pool's stores, 64 elements apart along its channel
// (simd) loop, go through a tile (cpp_emitter.cc: TiledStore), stored
// row by row. Against the interpreter, with negative and NaN inputs. (A
// transposing copy of its own iterates in its result's order: no tile.)
TEST(CpuOpsTest, TiledStoresMatchTheInterpreter) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[2, 8, 16, 16][2048, 256, 16, 1]cpu", w: "f32[32, 8, 3, 3][72, 9, 3, 1]cpu", b: "f32[32][1]cpu"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [2, 2])
    getitem = max_pool2d_with_indices[0]
    view = torch.ops.aten.view.default(getitem, [2, 2048])
    return (view,)
)IR"));
  // The pool is the convolution's epilogue; its chunks are of the outer
  // loop, its tile stored with the loops swapped.
  EXPECT_OK(lathe::testing::RunFileCheck(c.function->source(), R"(
CHECK:      lathe_parallel(rt, 8, 1,
CHECK-NEXT:   for (int32_t x0 = static_cast<int32_t>(lathe_lo); x0 < static_cast<int32_t>(lathe_hi); ++x0) {
CHECK-NEXT:     alignas(64) float lathe_tile[8 * 32];
CHECK-NEXT:     for (int32_t x1 = 0; x1 < 8; ++x1) {
CHECK-NEXT:       #pragma omp simd
CHECK-NEXT:       for (int32_t x2 = 0; x2 < 32; ++x2) {
CHECK:              lathe_tile[x1 * 32 + x2] = v
CHECK:          for (int32_t x2 = 0; x2 < 32; ++x2) {
CHECK-NEXT:       #pragma omp simd
CHECK-NEXT:       for (int32_t x1 = 0; x1 < 8; ++x1) {
CHECK-NEXT:         p{{[0-9]}}[((8 * x0) + x1 + (64 * x2))] = lathe_tile[x1 * 32 + x2];
)"));
  ir::Value x = FilledF32({2, 8, 16, 16}, -1000);
  x.tensor.data<float>()[77] = std::nanf("");
  std::vector<ir::Value> in = {x, FilledF32({32, 8, 3, 3}, -300),
                               FilledF32({32}, -16)};
  for (int k = 0; k < 2; ++k) {
    Tensor& t = in[k].tensor;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 1e-3f;
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-4);
}

// Transposed f32 convolutions run as the library's convolution over the
// input spread out with zeros (lower/nn.cc: TransposedConvolution): 1-d
// with a bias, stride 3 and output_padding; 2-d grouped (2 input and 3
// output channels a group), strided, dilated along one dim, with
// output_padding; 3-d; and padding beyond the kernel's reach (the spread
// input cropped). Each is one sconv call, against the interpreter's direct
// sums. One that would spread many channels into few at a large stride
// keeps the direct form.
TEST(CpuOpsTest, TransposedConvolutionsRunOnTheLibrary) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x1: "f32[2, 4, 7][28, 7, 1]cpu", w1: "f32[4, 3, 3][9, 3, 1]cpu", b1: "f32[3][1]cpu", x2: "f32[2, 4, 5, 6][120, 30, 6, 1]cpu", w2: "f32[4, 3, 3, 2][18, 6, 2, 1]cpu", x3: "f32[1, 2, 3, 3, 3][54, 27, 9, 3, 1]cpu", w3: "f32[2, 2, 2, 2, 2][16, 8, 4, 2, 1]cpu", x4: "f32[1, 2, 4, 4][32, 16, 4, 1]cpu", w4: "f32[2, 3, 3, 3][27, 9, 3, 1]cpu"):
    a = torch.ops.aten.convolution.default(x1, w1, b1, [3], [2], [1], True, [1], 1)
    b = torch.ops.aten.convolution.default(x2, w2, None, [2, 2], [1, 0], [1, 2], True, [1, 1], 2)
    c = torch.ops.aten.convolution.default(x3, w3, None, [2, 2, 2], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1)
    d = torch.ops.aten.convolution.default(x4, w4, None, [2, 2], [3, 3], [1, 1], True, [1, 1], 1)
    return (a, b, c, d)
)IR"));
  const std::string& source = c.function->source();
  int calls = 0;
  for (size_t at = source.find("rt->sconv("); at != std::string::npos;
       at = source.find("rt->sconv(", at + 1)) {
    ++calls;
  }
  EXPECT_EQ(calls, 4);
  ASSERT_OK_AND_ASSIGN(CompiledCpu direct, CompileCpuText(R"IR(
def forward(self, x: "f32[1, 64, 3, 3][576, 9, 3, 1]cpu", w: "f32[64, 1, 8, 8][64, 64, 8, 1]cpu"):
    y = torch.ops.aten.convolution.default(x, w, None, [8, 8], [0, 0], [1, 1], True, [0, 0], 1)
    return (y,)
)IR"));
  EXPECT_THAT(direct.function->source(),
              ::testing::Not(HasSubstr("rt->sconv(")));
  std::vector<ir::Value> in;
  for (const ir::Node* p : c.graph->Placeholders()) {
    std::vector<int64_t> sizes;
    for (const symbolic::Expr& e : p->meta().tensor.sizes) {
      sizes.push_back(e.int_value());
    }
    ir::Value v = FilledF32(sizes, -static_cast<double>(in.size()) * 7 - 20);
    Tensor& t = v.tensor;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 0.05f;
    in.push_back(v);
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-4);
}

// A transposed convolution of an input with no rows still has an output
// row (stride 2, kernel 3): every element of it is zero, as the
// interpreter's, and no load reads outside the empty input (the sanitizer
// build compiles the generated code with AddressSanitizer).
TEST(CpuOpsTest, TransposedConvolutionOfAnEmptyInputIsZeros) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[1, 2, 0, 3][6, 3, 3, 1]cpu", w: "f32[2, 3, 3, 3][27, 9, 3, 1]cpu"):
    y = torch.ops.aten.convolution.default(x, w, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)
    return (y,)
)IR"));
  std::vector<ir::Value> in = {FilledF32({1, 2, 0, 3}, 1),
                               FilledF32({2, 3, 3, 3}, 1)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_GT(got.outputs[0].tensor.numel(), 0);
  ExpectSameOutputs(got, want);
}

// A copy of a channels-last tensor into a contiguous one is its own kernel,
// in its result's order: its stores are contiguous, and no tile is made.
TEST(CpuOpsTest, ATransposingCopyNeedsNoTile) {
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(R"IR(
def forward(self, x: "f32[2, 64, 16, 16][16384, 1, 1024, 64]cpu"):
    relu = torch.ops.aten.relu.default(x)
    clone = torch.ops.aten.clone.default(relu, memory_format = torch.contiguous_format)
    return (clone,)
)IR"));
  EXPECT_THAT(c.function->source(), ::testing::Not(HasSubstr("lathe_tile[")));
}

// mm.dtype / bmm.dtype: bf16 operands (bgemm) and f16 ones (sgemm on f32
// copies) with f32 results, a transposed operand included, against the
// interpreter's double products rounded to f32.
TEST(CpuOpsTest, ProductsWithAnF32ResultMatchTheInterpreter) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, a: "bf16[3, 5, 16]", b: "bf16[3, 7, 16]", c: "f16[5, 16]", d: "f16[16, 7]"):
    t = torch.ops.aten.transpose.int(b, 1, 2)
    bmm = torch.ops.aten.bmm.dtype(a, t, torch.float32)
    mm = torch.ops.aten.mm.dtype(c, d, torch.float32)
    add = torch.ops.aten.add.Tensor(bmm, mm)
    return (bmm, add)
)IR",
                                "", 1e-5);
}

// The generated code builds with clang too (LATHE_CXX), where it is
// installed: the prelude's streamed store is clang's builtin there, GCC's
// x86 one elsewhere.
TEST(CpuOpsTest, ClangBuildsTheGeneratedCode) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "clang's sanitizer instrumentation does not load into "
                  "GCC's sanitizer runtime";
#endif
  constexpr char kClang[] = "/usr/bin/clang++-14";
  if (access(kClang, X_OK) != 0) GTEST_SKIP() << "no " << kClang;
  // clang's OpenMP runtime is a package of its own (libomp-14-dev).
  const std::string probe =
      absl::StrCat(kClang, " -fopenmp -fPIC -shared -x c++ /dev/null -o '",
                   ::testing::TempDir(), "/omp_probe.so' 2>/dev/null");
  if (std::system(probe.c_str()) != 0) {
    GTEST_SKIP() << kClang << " has no OpenMP runtime";
  }
  const char* before = std::getenv("LATHE_CXX");
  const std::string saved = before == nullptr ? "" : before;
  setenv("LATHE_CXX", kClang, 1);
  ExpectStreamedStoresMatchTheInterpreter();
  if (before == nullptr) {
    unsetenv("LATHE_CXX");
  } else {
    setenv("LATHE_CXX", saved.c_str(), 1);
  }
}

}  // namespace
}  // namespace lathe::codegen
