// The walk (compile.h) with the cuda backend (codegen/cuda), end to end on
// the emulated device (LATHE_CUDA_DEVICE=
// emulated, set before anything reads it): pointwise graphs — broadcasting,
// views and strides, dtype casts, symbolic sizes, an input written in
// place — compiled through the walk (driver/compile.h) and run on host
// tensors copied to the device and back, against the interpreter; what the
// emitter cannot write yet is an error naming the node; the emitted
// kernels compile with NVRTC for sm_80 and sm_90.

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "codegen/cuda/cuda_backend.h"
#include "codegen/cuda/cuda_emitter.h"
#include "driver/compile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/op_testing.h"
#include "runtime/compile_cache.h"
#include "runtime/composite.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"
#include "testing/file_check.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {
using codegen::CudaBackend;
using codegen::DeviceKernelNames;
using codegen::EmitCuda;
using ::lathe::testing::RunFileCheck;
}  // namespace

namespace {

using ::lathe::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

class CudaBackendTest : public ::testing::Test {
 protected:
  // The emulated device unless the environment chose (tools/gpu/check.sh:
  // the GPU).
  static void SetUpTestSuite() { setenv("LATHE_CUDA_DEVICE", "emulated", 0); }
};

// The cuda backend, through lathec's compile cache (in TEST_TMPDIR), so
// each prelude is precompiled once, as for a user.
CompileOptions OnCuda() {
  testing::UseTestCompileCache();
  absl::StatusOr<CacheBackend*> cache = DefaultCompileCache();
  EXPECT_OK(cache.status());
  return {.backend = &CudaBackend(), .cache = cache.ok() ? *cache : nullptr};
}

// A [rows, cols] f32 tensor of varied values (some negative).
Tensor Ramp(std::vector<int64_t> sizes, double scale = 0.37,
            DType dtype = DType::kFloat32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((i % 23) * scale - 3.0);
  return ir::T(sizes, v, dtype);
}

// Compiles `text` for cuda, runs it and the interpreter on `inputs`
// (each on its own copy), and expects the same outputs and written inputs.
void ExpectMatchesInterpreter(const std::string& text,
                              const std::vector<Tensor>& inputs,
                              double tol = 1e-6) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(text, OnCuda()));
  ASSERT_EQ(c->function->device(), Device::Cuda(0));
  std::vector<ir::Value> mine, theirs;
  for (const Tensor& t : inputs) {
    ASSERT_OK_AND_ASSIGN(Tensor a, t.Clone());
    ASSERT_OK_AND_ASSIGN(Tensor b, t.Clone());
    mine.push_back(ir::Value::OfTensor(a));
    theirs.push_back(ir::Value::OfTensor(b));
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c->function->RunWithPlan(mine));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                       aot::InterpretWithPlan(*c->graph, c->aot.plan, theirs));
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t k = 0; k < got.outputs.size(); ++k) {
    ASSERT_TRUE(got.outputs[k].is_tensor());
    EXPECT_TRUE(got.outputs[k].tensor.device().is_cpu());
    EXPECT_EQ(got.outputs[k].tensor.sizes(), want.outputs[k].tensor.sizes());
    std::vector<double> a = ir::Elements(got.outputs[k].tensor),
                        b = ir::Elements(want.outputs[k].tensor);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
      EXPECT_NEAR(a[i], b[i], tol * (std::abs(b[i]) + 1))
          << "output " << k << " element " << i;
    }
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<double> a = ir::Elements(mine[k].tensor),
                        b = ir::Elements(theirs[k].tensor);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      EXPECT_EQ(a[i], b[i]) << "input " << k << " element " << i;
    }
  }
}

TEST_F(CudaBackendTest, TheSiluChainWithABroadcastBias) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[64, 96]", b: "f32[96]"):
    sig = torch.ops.aten.sigmoid.default(x)
    mul = torch.ops.aten.mul.Tensor(x, sig)
    mul_1 = torch.ops.aten.mul.Tensor(mul, 1.5)
    add = torch.ops.aten.add.Tensor(mul_1, b)
    return (add,)
)IR",
                           {Ramp({64, 96}), Ramp({96}, 0.1)});
}

TEST_F(CudaBackendTest, ViewsStridesAndCasts) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[8, 12]", y: "f32[12, 8]"):
    t = torch.ops.aten.t.default(y)
    add = torch.ops.aten.add.Tensor(x, t)
    sl = torch.ops.aten.slice.Tensor(add, 1, 2, 10, 3)
    h = torch.ops.prims.convert_element_type.default(sl, torch.float16)
    i = torch.ops.prims.convert_element_type.default(x, torch.int32)
    return (h, i)
)IR",
                           {Ramp({8, 12}), Ramp({12, 8}, 0.21)}, 1e-3);
}

TEST_F(CudaBackendTest, SymbolicSizesAreKernelArguments) {
  const std::string text = R"IR(
def forward(self, x: "f32[s0, 16]", y: "f32[16]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    exp = torch.ops.aten.exp.default(mul)
    return (exp,)
)IR";
  ExpectMatchesInterpreter(text, {Ramp({5, 16}, 0.05), Ramp({16}, 0.1)});
  ExpectMatchesInterpreter(text, {Ramp({1000, 16}, 0.05), Ramp({16}, 0.1)});
}

// The vector path (16-byte loads and stores: codegen/cuda/cuda_emitter.h)
// and its fallbacks: a symbolic row length that is a multiple of four or
// not (the kernel's own check picks the scalar loop), a view starting off
// a multiple, doubles and halves, against the interpreter.
TEST_F(CudaBackendTest, VectorAccessesAndTheirScalarFallback) {
  const std::string rows = R"IR(
def forward(self, x: "f32[s0, s1]", c: "f32[s0, 1]"):
    add = torch.ops.aten.add.Tensor(x, c)
    sig = torch.ops.aten.sigmoid.default(add)
    return (sig,)
)IR";
  ExpectMatchesInterpreter(rows, {Ramp({7, 12}, 0.05), Ramp({7, 1}, 0.1)});
  ExpectMatchesInterpreter(rows, {Ramp({7, 10}, 0.05), Ramp({7, 1}, 0.1)});
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[8, 9]"):
    sl = torch.ops.aten.slice.Tensor(x, 1, 1, 9)
    neg = torch.ops.aten.neg.default(sl)
    return (neg,)
)IR",
                           {Ramp({8, 9})});
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, x: "f64[8, 16]", y: "f32[16, 8]", h: "f16[8, 16]"):
    c = torch.ops.prims.convert_element_type.default(x, torch.float32)
    t = torch.ops.aten.t.default(y)
    add = torch.ops.aten.add.Tensor(c, t)
    gt = torch.ops.aten.gt.Tensor(h, add)
    return (add, gt)
)IR",
      {Ramp({8, 16}, 0.3, DType::kFloat64), Ramp({16, 8}, 0.21),
       Ramp({8, 16}, 0.25, DType::kFloat16)});
}

TEST_F(CudaBackendTest, AnInputWrittenInPlaceComesBack) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[32]", y: "f32[32]"):
    add_ = torch.ops.aten.add_.Tensor(x, y)
    mul = torch.ops.aten.mul.Tensor(x, 2.0)
    return (mul,)
)IR",
                           {Ramp({32}), Ramp({32}, 0.5)});
  // The mutation epilogue's copies: one on the device for a contiguous
  // input written whole, through the host for a transposed one.
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[8, 6]", y: "f32[6, 8]"):
    t = torch.ops.aten.t.default(y)
    mul_ = torch.ops.aten.mul_.Tensor(t, 3.0)
    add_ = torch.ops.aten.add_.Tensor(x, t)
    return (add_,)
)IR",
                           {Ramp({8, 6}), Ramp({6, 8}, 0.5)});
}

// Random draws (rand, randn, dropout) are the interpreter's counter-based
// numbers for the same seed: the uniform draws and the dropout mask exactly
// (integer arithmetic), randn to its last bits (the device's log and cos).
TEST_F(CudaBackendTest, RandomDrawsAreTheInterpreters) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[64, 40]"):
    rand = torch.ops.aten.rand.default([64, 40])
    randn = torch.ops.aten.randn.default([33, 7])
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.3, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    add = torch.ops.aten.add.Tensor(rand, x)
    return (rand, add, randn, getitem, getitem_1)
)IR",
                           {Ramp({64, 40})}, 1e-6);
}

// bfloat16 and float16 load as float, compute in float and store rounded,
// as on the cpu backend, through pointwise and row kernels.
TEST_F(CudaBackendTest, HalfTypesComputeInFloat) {
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, x: "bf16[16, 24]", y: "bf16[24]", h: "f16[16, 24]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    sigmoid = torch.ops.aten.sigmoid.default(mul)
    sum_1 = torch.ops.aten.sum.dim_IntList(sigmoid, [1])
    amax = torch.ops.aten.amax.default(h, [1])
    softmax = torch.ops.aten._softmax.default(h, 1, False)
    return (sigmoid, sum_1, amax, softmax)
)IR",
      {Ramp({16, 24}, 0.1, DType::kBFloat16), Ramp({24}, 0.2, DType::kBFloat16),
       Ramp({16, 24}, 0.15, DType::kFloat16)},
      1e-2);
  // Products of halves, rounded once: bf16's through the device's bgemm
  // (cuBLASLt's bf16 matmul into f32 on a GPU), f16's through the f32
  // routine on converted operands (mm, addmm with a bias, bmm).
  constexpr char kProducts[] = R"IR(
def forward(self, a: "bf16[8, 24]", b: "bf16[24, 5]", bias: "bf16[5]", p: "f16[2, 8, 24]", q: "f16[2, 24, 3]"):
    mm = torch.ops.aten.mm.default(a, b)
    addmm = torch.ops.aten.addmm.default(bias, a, b)
    bmm = torch.ops.aten.bmm.default(p, q)
    return (mm, addmm, bmm)
)IR";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kProducts, OnCuda()));
  EXPECT_THAT(c->function->source(), HasSubstr("rt->device->bgemm("));
  EXPECT_THAT(c->function->source(), HasSubstr("rt->device->sgemm("));
  ExpectMatchesInterpreter(
      kProducts,
      {Ramp({8, 24}, 0.1, DType::kBFloat16),
       Ramp({24, 5}, 0.05, DType::kBFloat16), Ramp({5}, 0.3, DType::kBFloat16),
       Ramp({2, 8, 24}, 0.1, DType::kFloat16),
       Ramp({2, 24, 3}, 0.07, DType::kFloat16)},
      1e-2);
}

TEST_F(CudaBackendTest, MoreElementsThanOneGridCoversOnAGpu) {
  // 256 * 65536 threads at most: the grid-stride loop's later passes. On
  // the emulated device every thread is a host call: GPU runs only
  // (tools/gpu/check.sh).
  if (std::string(std::getenv("LATHE_CUDA_DEVICE")) == "emulated") {
    GTEST_SKIP() << "17M threads on the emulated device: a GPU check";
  }
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[16789000]", y: "f32[1]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    neg = torch.ops.aten.neg.default(mul)
    return (neg,)
)IR",
                           {Ramp({16789000}), Ramp({1}, 0.5)});
}

// 1 at every `step`-th of `n` elements, 0 elsewhere.
std::vector<double> Every(int n, int step) {
  std::vector<double> v(n, 0.0);
  for (int i = 0; i < n; i += step) v[i] = 1;
  return v;
}

// Stores at loaded indices (index_put with a repeated index: the last
// write wins; accumulating; scatter_add) and under a mask (masked_select's
// compaction) run on one thread in the interpreter's order.
TEST_F(CudaBackendTest, StoresAtLoadedIndicesRunInOrder) {
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, x: "f32[8, 8]", i: "i64[5]", v: "f32[5, 8]", j: "i64[3, 8]", src: "f32[3, 8]", m: "b8[8, 8]"):
    index_put = torch.ops.aten.index_put.default(x, [i], v)
    index_put_1 = torch.ops.aten.index_put.default(x, [i], v, True)
    scatter_add = torch.ops.aten.scatter_add.default(x, 0, j, src)
    masked_select = torch.ops.aten.masked_select.default(x, m)
    return (index_put, index_put_1, scatter_add, masked_select)
)IR",
      {Ramp({8, 8}), ir::T({5}, {0, 3, 0, -1, 3}, DType::kInt64),
       Ramp({5, 8}, 0.5),
       ir::T({3, 8}, {0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7,
                      0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
             DType::kInt64),
       Ramp({3, 8}, 0.25), ir::T({8, 8}, Every(64, 3), DType::kBool)});
}

// Matrix products (a transposed operand, a batch in f64, addmm's bias),
// a convolution, sort and topk run as the device runtime's routines
// between the kernels; randperm is the interpreter's permutation.
TEST_F(CudaBackendTest, LibraryCallsRunThroughTheDeviceRuntime) {
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, a: "f32[6, 5]", b: "f32[7, 5]", c: "f64[2, 3, 4]", d: "f64[2, 4, 3]", bias: "f32[7]", x: "f32[1, 2, 7, 7]", w: "f32[3, 2, 3, 3]", s: "f32[4, 9]"):
    t = torch.ops.aten.t.default(b)
    mm = torch.ops.aten.mm.default(a, t)
    relu = torch.ops.aten.relu.default(mm)
    bmm = torch.ops.aten.bmm.default(c, d)
    addmm = torch.ops.aten.addmm.default(bias, a, t)
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    sort = torch.ops.aten.sort.default(s, 1, True)
    getitem = sort[0]
    getitem_1 = sort[1]
    topk = torch.ops.aten.topk.default(s, 3)
    getitem_2 = topk[0]
    getitem_3 = topk[1]
    randperm = torch.ops.aten.randperm.default(10, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    return (relu, bmm, addmm, convolution, getitem, getitem_1, getitem_2, getitem_3, randperm)
)IR",
      {Ramp({6, 5}), Ramp({7, 5}, 0.3), Ramp({2, 3, 4}, 0.1, DType::kFloat64),
       Ramp({2, 4, 3}, 0.2, DType::kFloat64), Ramp({7}, 0.5),
       Ramp({1, 2, 7, 7}, 0.05), Ramp({3, 2, 3, 3}, 0.11), Ramp({4, 9}, 0.7)},
      1e-5);
}

// What the emitter cannot write is an error naming the kernel's nodes: a
// library routine the device runtime lacks (no lowering calls one today;
// the program is edited to).
TEST_F(CudaBackendTest, AKernelItCannotWriteNamesTheNode) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(
def forward(self, a: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(a, a)
    return (mm,)
)IR",
                                        OnCuda()));
  codegen::Program p = c->function->lowered().program;
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_EQ(p.kernels[0].routine, "sgemm");
  p.kernels[0].routine = "sqr";
  EXPECT_THAT(EmitCuda(p), StatusIs(absl::StatusCode::kUnimplemented,
                                    "no CUDA kernel yet for the library call "
                                    "sqr (kernel k0 of mm)"));
}

// nonzero's count, scan and masked stores over a symbolic [s0, s1] input
// (the scan's kernel stores under its mask: a serial row kernel).
TEST_F(CudaBackendTest, NonzeroOfSymbolicSizes) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[s0, s1]"):
    gt = torch.ops.aten.gt.Scalar(x, 0)
    nonzero = torch.ops.aten.nonzero.default(gt)
    return (nonzero,)
)IR",
                           {Ramp({5, 7})});
}

// Indexing by loaded values: index, gather and embedding, negative indices
// wrapping as in PyTorch, against the interpreter.
TEST_F(CudaBackendTest, IndexingByLoadedValues) {
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, x: "f32[10, 12]", i: "i64[5]", g: "i64[10, 3]", w: "f32[20, 8]", t: "i64[2, 3]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    gather = torch.ops.aten.gather.default(x, 1, g)
    embedding = torch.ops.aten.embedding.default(w, t)
    sum_1 = torch.ops.aten.sum.dim_IntList(embedding, [1])
    return (index, gather, sum_1)
)IR",
      {Ramp({10, 12}), ir::T({5}, {0, 9, -1, 3, -10}, DType::kInt64),
       ir::T({10, 3}, {0, 11, 5, 1, 2, 3, 11, 0, 4, 6, 7, 8, 9, 10, 0,
                       1, 1,  1, 2, 2, 2, 3,  3, 3, 4, 4, 4, 5, 5,  5},
             DType::kInt64),
       Ramp({20, 8}, 0.2), ir::T({2, 3}, {0, 19, 7, 7, 3, 1}, DType::kInt64)});
}

// An index out of range fails the call with the check's message and its
// values, as on the cpu backend, and no access leaves its buffer (the
// emulated device's guard zones would say).
TEST_F(CudaBackendTest, AnIndexOutOfRangeIsTheChecksError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[10, 12]", i: "i64[5]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    return (index,)
)IR",
                                        OnCuda()));
  for (int64_t bad : {int64_t{10}, int64_t{-11}, int64_t{1} << 40}) {
    std::vector<ir::Value> args = {
        ir::Value::OfTensor(Ramp({10, 12})),
        ir::Value::OfTensor(
            ir::T({5}, {0, 1, static_cast<double>(bad), 2, 3}, DType::kInt64))};
    EXPECT_THAT(
        c->function->RunWithPlan(args),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(absl::StrCat("node 'index': aten.index.Tensor: "
                                        "index ",
                                        bad,
                                        " is out of bounds for dimension 0 "
                                        "with size 10"))))
        << bad;
  }
}

// Kernels that check indices share one record, zeroed once and read back
// once after the last of them: one copy each way for the call, not per
// kernel; the error is still the first failing check's, in program order.
TEST_F(CudaBackendTest, ChecksOfAGroupAreReadOnceAndTheFirstFailureWins) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[10, 12]", i: "i64[5]", y: "f32[7, 3]", j: "i64[4]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    index_1 = torch.ops.aten.index.Tensor(y, [j])
    return (index, index_1)
)IR",
                                        OnCuda()));
  auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  const std::string& host = c->function->source();
  EXPECT_EQ(count(host, "rt->device->to_device("), 1) << host;
  EXPECT_EQ(count(host, "rt->device->to_host("), 1) << host;
  auto run = [&](double bad_i, double bad_j) {
    std::vector<ir::Value> args = {
        ir::Value::OfTensor(Ramp({10, 12})),
        ir::Value::OfTensor(ir::T({5}, {0, 1, bad_i, 2, 3}, DType::kInt64)),
        ir::Value::OfTensor(Ramp({7, 3})),
        ir::Value::OfTensor(ir::T({4}, {bad_j, 1, 2, 3}, DType::kInt64))};
    return c->function->RunWithPlan(args).status();
  };
  EXPECT_OK(run(9, -7));
  EXPECT_THAT(run(10, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'index': aten.index.Tensor: index 10 "
                                 "is out of bounds for dimension 0 with size "
                                 "10")));
  EXPECT_THAT(run(0, 7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'index_1': aten.index.Tensor: index 7 "
                                 "is out of bounds for dimension 0 with size "
                                 "7")));
  EXPECT_THAT(run(-11, 7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'index': aten.index.Tensor: index -11 "
                                 "is out of bounds")));
}

// Scans: a block-wide chunk at a time with the running value carried
// (rows shorter than a warp, longer than a block), along the inner and
// the outer dimension, with a reduction of the scan in the same graph.
TEST_F(CudaBackendTest, ScansCarryAcrossChunks) {
  for (std::vector<int64_t> sizes :
       std::vector<std::vector<int64_t>>{{4, 8}, {3, 1000}, {70, 33}}) {
    SCOPED_TRACE(sizes[1]);
    ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[s0, s1]"):
    cumsum = torch.ops.aten.cumsum.default(x, 1)
    cumsum_1 = torch.ops.aten.cumsum.default(x, 0)
    mul = torch.ops.aten.mul.Tensor(x, 0.01)
    exp = torch.ops.aten.exp.default(mul)
    cumprod = torch.ops.aten.cumprod.default(exp, 1)
    amax = torch.ops.aten.amax.default(cumsum, [1])
    logcumsumexp = torch.ops.aten.logcumsumexp.default(x, 1)
    return (cumsum, cumsum_1, cumprod, amax, logcumsumexp)
)IR",
                             {Ramp(sizes, 0.11)}, 1e-4);
  }
}

// Row kernels (a block per row, codegen/cuda/cuda_emitter.h): rows shorter
// than a warp, longer than a block, not a multiple of either; reductions
// over the inner and the outer dimension and over everything; softmax and
// layer norm (a reduction's epilogue in the same kernel).
TEST_F(CudaBackendTest, ReductionsAndTheirEpilogues) {
  for (std::vector<int64_t> sizes :
       std::vector<std::vector<int64_t>>{{4, 8}, {3, 1000}, {70, 33}}) {
    SCOPED_TRACE(sizes[1]);
    const std::vector<Tensor> x = {Ramp(sizes, 0.11)};
    ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[s0, s1]"):
    total = torch.ops.aten.sum.dim_IntList(x, [1])
    cols = torch.ops.aten.sum.dim_IntList(x, [0])
    everything = torch.ops.aten.sum.default(x)
    amax = torch.ops.aten.amax.default(x, [1])
    amin = torch.ops.aten.amin.default(x, [0])
    return (total, cols, everything, amax, amin)
)IR",
                             x, 1e-5);
    ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[s0, s1]"):
    softmax = torch.ops.aten._softmax.default(x, 1, False)
    return (softmax,)
)IR",
                             x, 1e-5);
    const std::string d = absl::StrCat(sizes[1]);
    ExpectMatchesInterpreter(
        absl::StrCat("def forward(self, x: \"f32[s0, ", d, "]\", w: \"f32[", d,
                     "]\", b: \"f32[", d,
                     "]\"):\n"
                     "    ln = torch.ops.aten.native_layer_norm.default(x, [",
                     d, R"IR(], w, b, 1e-05)
    getitem = ln[0]
    getitem_1 = ln[1]
    getitem_2 = ln[2]
    return (getitem, getitem_1, getitem_2)
)IR"),
        {x[0], Ramp({sizes[1]}, 0.05), Ramp({sizes[1]}, 0.02)}, 1e-4);
  }
}

// Welford's rows longer than a thread's chunk (16 values each, summed in
// f32 shifted by the chunk's first value, then merged in double): rows of
// 70,000 values around a mean of 1000, each thread's share many chunks,
// every thread's first value an outlier (-1e4, the shift of its first
// chunk: one-pass shifted sums cancel most there), against the
// interpreter's Welford in double. (Chunks of 256 miss by 7e-6.)
TEST_F(CudaBackendTest, WelfordRowsLongerThanAThreadsChunk) {
  std::vector<double> v;
  for (int i = 0; i < 2 * 70000; ++i) {
    v.push_back(i % 70000 < 256
                    ? -1e4
                    : 1000.0 + (i % 97) * 0.031 - (i % 5) * 0.4 + (i >= 70000));
  }
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[2, 70000]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1, keepdim = True)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    return (getitem, getitem_1)
)IR",
                           {ir::T({2, 70000}, v)}, 1e-6);
}

// Infinities in Welford's rows: the mean is the sum's (inf, -inf, NaN for
// both signs or a NaN), whether the infinity begins a thread's chunk or
// not, as the interpreter's; the variance is NaN.
TEST_F(CudaBackendTest, WelfordMeansOfInfinitiesAreTheSums) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v;
  for (int i = 0; i < 7 * 300; ++i) v.push_back(0.5 * (i % 300 % 13));
  v[0 * 300 + 0] = inf;
  v[1 * 300 + 5] = inf;
  v[2 * 300 + 260] = inf;
  v[3 * 300 + 3] = -inf;
  v[3 * 300 + 270] = inf;
  v[4 * 300 + 100] = NAN;
  v[6 * 300 + 256] = -inf;
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[7, 300]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    return (getitem, getitem_1)
)IR",
                           {ir::T({7, 300}, v)}, 1e-6);
}

// f32 values whose squared deviations overflow f32 (beyond about 1e18):
// each is merged alone in double, so the variance is finite where it fits
// f32, as the interpreter's and PyTorch's: rows of +-2e18 alternating,
// 3e18 with one -3e18, and small values; a long row of +-2e18; and 3e38
// next to -3e38, whose variance is beyond f32 (inf, as theirs).
TEST_F(CudaBackendTest, WelfordOfHugeFloatsIsSummedInDouble) {
  std::vector<double> v, w, y;
  for (int i = 0; i < 600; ++i) v.push_back(i % 2 == 0 ? 2e18 : -2e18);
  for (int i = 0; i < 600; ++i) v.push_back(i == 300 ? -3e18 : 3e18);
  for (int i = 0; i < 600; ++i) v.push_back(0.5 * (i % 13));
  for (int i = 0; i < 100000; ++i) w.push_back(i % 2 == 0 ? 2e18 : -2e18);
  for (int i = 0; i < 600; ++i) {
    y.push_back(i == 10 ? 3e38 : i == 11 ? -3e38 : 0.5 * (i % 13));
  }
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[3, 600]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    return (getitem, getitem_1)
)IR",
                           {ir::T({3, 600}, v)}, 1e-5);
  for (const auto& [n, values] :
       {std::make_pair(100000, w), std::make_pair(600, y)}) {
    ExpectMatchesInterpreter(absl::StrCat(R"IR(
def forward(self, x: "f32[)IR",
                                          n, R"IR(]"):
    var = torch.ops.aten.var.correction(x, None, correction = 0)
    return (var,)
)IR"),
                             {ir::T({n}, values)}, 1e-5);
  }
}

// Long reductions over few rows run split across blocks (codegen/cuda/
// split_reductions.h: a partial kernel per chunk, then the partials in
// order): a whole-tensor sum with an epilogue, max and sum over two
// dimensions, a transposed walk, prod, any and all, NaN through a split
// max; and an argmax that stays one block per row.
TEST_F(CudaBackendTest, LongReductionsSplitAcrossBlocks) {
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[100000]"):
    sum_1 = torch.ops.aten.sum.default(x)
    mul = torch.ops.aten.mul.Tensor(sum_1, 2.0)
    return (mul,)
)IR",
                           {Ramp({100000}, 0.013)}, 1e-5);
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[2, 128, 256]"):
    amax = torch.ops.aten.amax.default(x, [1, 2])
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1, 2])
    add = torch.ops.aten.add.Tensor(amax, sum_1)
    return (add,)
)IR",
                           {Ramp({2, 128, 256}, 0.07)}, 1e-5);
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[3000, 10]"):
    t = torch.ops.aten.t.default(x)
    sum_1 = torch.ops.aten.sum.dim_IntList(t, [0, 1])
    amin = torch.ops.aten.amin.default(t, [1])
    return (sum_1, amin)
)IR",
                           {Ramp({3000, 10}, 0.21)}, 1e-5);
  std::vector<double> exact, flags, nan_row;
  for (int i = 0; i < 32768; ++i) {
    // Powers of two whose running products stay near 1: exact in any
    // order (a product of 32768 inexact factors is not the same twice).
    exact.push_back(i % 3 == 0 ? 2.0 : i % 3 == 1 ? 0.5 : 1.0);
    flags.push_back(i == 20001 ? 0 : 1);
    nan_row.push_back(i == 17000 ? std::nan("") : i % 11);
  }
  ExpectMatchesInterpreter(
      R"IR(
def forward(self, x: "f32[32768]", b: "b8[32768]", n: "f32[32768]"):
    prod = torch.ops.aten.prod.default(x)
    any_1 = torch.ops.aten.any.default(b)
    all_1 = torch.ops.aten.all.default(b)
    amax = torch.ops.aten.amax.default(n, [0])
    argmax = torch.ops.aten.argmax.default(x)
    return (prod, any_1, all_1, amax, argmax)
)IR",
      {ir::T({32768}, exact), ir::T({32768}, flags, DType::kBool),
       ir::T({32768}, nan_row)},
      1e-5);
}

// argmax/argmin take the first index of the extreme, and NaN counts as
// the extreme, in rows of negative values and of infinities too; max with
// NaN is NaN; prod, any and all.
TEST_F(CudaBackendTest, ArgReductionsTiesAndNaN) {
  std::vector<double> v;
  for (int i = 0; i < 6 * 100; ++i) v.push_back((i * 7) % 5);  // ties
  v[2 * 100 + 57] = std::nan("");
  v[2 * 100 + 90] = std::nan("");
  v[4 * 100 + 3] = -9;
  v[4 * 100 + 80] = -9;
  // Rows of only negative values, of only +inf and of only -inf.
  for (int i = 0; i < 100; ++i) {
    v[1 * 100 + i] = -1 - (i * 13) % 7;
    v[3 * 100 + i] = std::numeric_limits<double>::infinity();
    v[5 * 100 + i] = -std::numeric_limits<double>::infinity();
  }
  ExpectMatchesInterpreter(R"IR(
def forward(self, x: "f32[6, 100]"):
    argmax = torch.ops.aten.argmax.default(x, 1)
    argmin = torch.ops.aten.argmin.default(x, 1)
    amax = torch.ops.aten.amax.default(x, [1])
    prod = torch.ops.aten.prod.dim_int(x, 1)
    gt = torch.ops.aten.gt.Scalar(x, 3.5)
    any_1 = torch.ops.aten.any.dim(gt, 1)
    all_1 = torch.ops.aten.all.dim(gt, 1)
    return (argmax, argmin, amax, prod, any_1, all_1)
)IR",
                           {ir::T({6, 100}, v)});
}

constexpr char kNeg[] = R"IR(
def forward(self, x: "f32[4]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)IR";

TEST_F(CudaBackendTest, TheHostFunctionLaunchesKernelsByIndex) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kNeg, OnCuda()));
  EXPECT_THAT(c->function->source(), HasSubstr("rt->device->launch("));
  EXPECT_THAT(c->function->source(), HasSubstr("lathe_device_kernels[]"));
}

TEST_F(CudaBackendTest, HostTensorsGivenToTheLoadedLibraryAreRefused) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kNeg, OnCuda()));
  std::vector<Operand> args = {Operand::Of(Ramp({4}))};
  ArgViews views;
  views.Build(args);
  std::vector<Operand> results, rebound;
  const LoadedGraph& g = *c->function->user_call();
  const int rc = g.Invoke(views.span(), kDefaultSeed, &results, &rebound);
  EXPECT_EQ(rc, kCallWrongDevice);
  EXPECT_THAT(g.CallStatus(rc),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a tensor argument is on another device")));
}

TEST_F(CudaBackendTest, KernelsIndexInInt32WhenTheyFitAndInt64Otherwise) {
  for (auto [sizes, type] : std::vector<std::pair<std::string, std::string>>{
           {"f32[64, 96]", "int32_t"}, {"f32[s0, 96]", "int64_t"}}) {
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<CompiledGraph> c,
        CompileGraphText(absl::StrCat("def forward(self, x: \"", sizes,
                                      "\"):\n    neg = "
                                      "torch.ops.aten.neg.default(x)\n    "
                                      "return (neg,)\n"),
                         OnCuda()));
    EXPECT_OK(RunFileCheck(c->function->source(), absl::StrCat(R"(
CHECK: extern "C" __global__ void __launch_bounds__(256) k{{[0-9]+}}(
CHECK: for ()",
                                                               type, " i = ")))
        << sizes;
  }
}

// The vector path's loads and stores are single 128-bit instructions in
// the PTX NVRTC makes (not four 32-bit ones), the read-only inputs through
// the non-coherent cache.
TEST_F(CudaBackendTest, VectorAccessesAre128BitInstructionsInThePtx) {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  GTEST_SKIP() << "no CUDA toolkit";
#endif
  ASSERT_OK_AND_ASSIGN(const Nvrtc* nvrtc, LoadNvrtc());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[64, 96]", b: "f32[96]"):
    sig = torch.ops.aten.sigmoid.default(x)
    mul = torch.ops.aten.mul.Tensor(x, sig)
    add = torch.ops.aten.add.Tensor(mul, b)
    return (add,)
)IR",
                                        OnCuda()));
  ASSERT_OK_AND_ASSIGN(std::string kernels,
                       EmitCuda(c->function->lowered().program));
  ASSERT_OK_AND_ASSIGN(CudaImage image,
                       CompileCuda(*nvrtc, kernels, "kernels.cu", 90));
  EXPECT_OK(RunFileCheck(image.ptx, R"(
CHECK: ld.global.nc.v4.f32
CHECK: ld.global.nc.v4.f32
CHECK: st.global.v4.f32
)"));
}

TEST_F(CudaBackendTest, EmittedKernelsCompileWithNvrtcForSm80AndSm90) {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  GTEST_SKIP() << "no CUDA toolkit";
#endif
  ASSERT_OK_AND_ASSIGN(const Nvrtc* nvrtc, LoadNvrtc());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[s0, 16]", y: "f16[16]", z: "i64[s0, 1]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    sig = torch.ops.aten.sigmoid.default(mul)
    add = torch.ops.aten.add.Tensor(sig, z)
    rem = torch.ops.aten.mul.Tensor(z, 3)
    return (add, rem)
)IR",
                                        OnCuda()));
  ASSERT_OK_AND_ASSIGN(std::string kernels,
                       EmitCuda(c->function->lowered().program));
  // And row kernels: every reduction kind, softmax's and layer norm's
  // epilogues, scans, index checks, a split reduction's two kernels.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> rows,
                       CompileGraphText(R"IR(
def forward(self, x: "f32[s0, 64]", w: "f32[64]", b: "f32[64]", h: "f16[s0, 64]", i: "i64[s0, 3]", l: "f32[4, 20000]"):
    softmax = torch.ops.aten._softmax.default(x, 1, False)
    ln = torch.ops.aten.native_layer_norm.default(x, [64], w, b, 1e-05)
    getitem = ln[0]
    argmin = torch.ops.aten.argmin.default(h, 1)
    prod = torch.ops.aten.prod.dim_int(x, 0)
    gt = torch.ops.aten.gt.Scalar(x, 0.5)
    any_1 = torch.ops.aten.any.dim(gt, 1)
    all_1 = torch.ops.aten.all.dim(gt, 0)
    total = torch.ops.aten.sum.default(h)
    cumsum = torch.ops.aten.cumsum.default(x, 1)
    cumprod = torch.ops.aten.cumprod.default(h, 0)
    gather = torch.ops.aten.gather.default(x, 1, i)
    long_rows = torch.ops.aten.sum.dim_IntList(l, [1])
    return (softmax, getitem, argmin, prod, any_1, all_1, total, cumsum, cumprod, gather, long_rows)
)IR",
                                        OnCuda()));
  ASSERT_OK_AND_ASSIGN(std::string row_kernels,
                       EmitCuda(rows->function->lowered().program));
  EXPECT_THAT(row_kernels, HasSubstr("_part("));
  for (int arch : {80, 90}) {
    ASSERT_OK_AND_ASSIGN(CudaImage image, CompileCuda(*nvrtc, row_kernels,
                                                      "row_kernels.cu", arch));
    for (const std::string& name :
         DeviceKernelNames(rows->function->lowered().program)) {
      EXPECT_THAT(image.ptx, HasSubstr(absl::StrCat(".entry ", name, "(")));
    }
  }
  for (int arch : {80, 90}) {
    ASSERT_OK_AND_ASSIGN(CudaImage image,
                         CompileCuda(*nvrtc, kernels, "kernels.cu", arch));
    EXPECT_FALSE(image.cubin.empty());
    for (const std::string& name :
         DeviceKernelNames(c->function->lowered().program)) {
      EXPECT_THAT(image.ptx, HasSubstr(absl::StrCat(".entry ", name, "(")));
    }
  }
}

}  // namespace
}  // namespace lathe
