// What the interpreter refuses, the cpu backend refuses too (issue 25,
// "Hardening" 2): views reaching outside their storage, integer division by
// zero, out-of-range gather/scatter indices and guards that would divide by
// a size of 0. Each case runs `lathec run` on both backends as a user would
// and expects one error line (the same on both where the cpu backend can
// say the same), exit status 1, no signal, no hang and no output written.

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"
#include "tools/testing/run_lathec.h"

namespace lathe {
namespace {

using ::lathe::testing::LathecResult;
using ::lathe::testing::PathExists;
using ::lathe::testing::RunLathec;
using ::lathe::testing::TestTmpPath;
using ::lathe::testing::WriteTestFile;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Tensor Ints(const std::vector<int64_t>& v) {
  Tensor t = *Tensor::Empty({static_cast<int64_t>(v.size())}, DType::kInt64);
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

Tensor Floats(int64_t n) {
  Tensor t = *Tensor::Empty({n}, DType::kFloat32);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// Runs `graph` on the inputs with --backend `backend`; expects a refusal:
// exit status 1, one line "lathec: ..." holding `expected`, no --out.
// Returns the message.
std::string ExpectRefused(const std::string& name, const std::string& graph,
                          const std::map<std::string, Tensor>& inputs,
                          const std::string& backend,
                          const std::string& expected) {
  SCOPED_TRACE(absl::StrCat(name, " --backend ", backend));
  std::string path = WriteTestFile(name + ".txt", graph);
  std::vector<std::string> args = {"run", path, "--backend", backend};
  for (const auto& [input, t] : inputs) {
    std::string file = TestTmpPath(absl::StrCat(name, "_", input, ".npy"));
    EXPECT_OK(WriteNpy(file, t));
    args.push_back("--input");
    args.push_back(absl::StrCat(input, "=", file));
  }
  std::string out = TestTmpPath(absl::StrCat(name, "_", backend, "_out"));
  args.push_back("--out");
  args.push_back(out);
  LathecResult r = RunLathec(args);
  EXPECT_FALSE(r.signaled) << r.output;
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, StartsWith("lathec: "));
  EXPECT_THAT(r.output, HasSubstr(expected));
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(PathExists(out));
  return r.output;
}

// Both backends refuse with the same message, which holds `expected`.
void ExpectBothRefuse(const std::string& name, const std::string& graph,
                      const std::map<std::string, Tensor>& inputs,
                      const std::string& expected) {
  std::string interp = ExpectRefused(name, graph, inputs, "interp", expected);
  std::string cpu = ExpectRefused(name, graph, inputs, "cpu", expected);
  // A refusal at compile time names the graph file and the backend first.
  auto from_node = [](const std::string& m) {
    size_t at = m.find("node '");
    return at == std::string::npos ? m : m.substr(at);
  };
  EXPECT_EQ(from_node(interp), from_node(cpu)) << name;
}

// ---- Views -----------------------------------------------------------------

// as_strided over 64 floats asking for 100 x 100 (it copied heap bytes into
// out0.npy), a stride of -1 (it read before the buffer), an offset past the
// end, and views of such a view (t, diagonal).
TEST(RefusalsTest, AsStridedOutsideItsStorage) {
  std::map<std::string, Tensor> x = {{"x", Floats(64)}};
  ExpectBothRefuse("as_strided_big", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [100, 100], [100, 1]);  x = None
    mul = torch.ops.aten.mul.Tensor(as_strided, 2);  as_strided = None
    return (mul,)
)",
                   x,
                   "node 'as_strided': view of 40000 bytes (sizes [100, 100], "
                   "strides [100, 1], offset 0) exceeds its storage of 256 "
                   "bytes");
  ExpectBothRefuse("as_strided_negative", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [8], [-1], 4);  x = None
    mul = torch.ops.aten.mul.Tensor(as_strided, 2);  as_strided = None
    return (mul,)
)",
                   x, "negative stride -1 in dimension 0");
  ExpectBothRefuse("as_strided_offset", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [8], [1], 60);  x = None
    mul = torch.ops.aten.mul.Tensor(as_strided, 2);  as_strided = None
    return (mul,)
)",
                   x, "exceeds its storage of 256 bytes");
  ExpectBothRefuse("as_strided_transposed", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [10, 10], [10, 1]);  x = None
    t = torch.ops.aten.t.default(as_strided);  as_strided = None
    mul = torch.ops.aten.mul.Tensor(t, 2);  t = None
    return (mul,)
)",
                   x, "exceeds its storage of 256 bytes");
  ExpectBothRefuse("as_strided_diagonal", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [10, 10], [10, 1]);  x = None
    diagonal = torch.ops.aten.diagonal.default(as_strided);  as_strided = None
    mul = torch.ops.aten.mul.Tensor(diagonal, 2);  diagonal = None
    return (mul,)
)",
                   x, "exceeds its storage of 256 bytes");
}

// fill_ through an oversized view wrote past the buffer (SIGSEGV).
TEST(RefusalsTest, AWriteThroughAnOversizedViewIsRefused) {
  ExpectBothRefuse("fill_big", R"(
def forward(self, x: "f32[64][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [100, 100], [100, 1])
    fill_ = torch.ops.aten.fill_.Scalar(as_strided, 1.0);  as_strided = None
    return (x,)
)",
                   {{"x", Floats(64)}}, "exceeds its storage of 256 bytes");
}

// A view over a storage whose size is a symbol: the host function checks
// it at run time, and its message gives the storage's bytes, as the
// interpreter's does.
TEST(RefusalsTest, ADynamicViewIsCheckedByTheHostFunction) {
  std::string graph = R"(
def forward(self, x: "f32[s0][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [8], [1]);  x = None
    mul = torch.ops.aten.mul.Tensor(as_strided, 2);  as_strided = None
    return (mul,)
)";
  ExpectBothRefuse("as_strided_dynamic", graph, {{"x", Floats(4)}},
                   "node 'as_strided': view of 32 bytes (sizes [8], strides "
                   "[1], offset 0) exceeds its storage of 16 bytes");
}

// ---- Integer arithmetic ----------------------------------------------------

// Integer division, remainder, floor_divide and fmod by zero raise as in
// PyTorch (the cpu backend gave 0).
TEST(RefusalsTest, IntegerDivisionByZeroRaises) {
  std::map<std::string, Tensor> xy = {{"x", Ints({7, -7, 8, 9})},
                                      {"y", Ints({2, 2, 0, 3})}};
  struct Op {
    std::string name, target, call;
  };
  const std::vector<Op> ops = {
      {"div_floor", "aten.div.Tensor_mode",
       "torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'floor')"},
      {"div_trunc", "aten.div.Tensor_mode",
       "torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'trunc')"},
      {"floor_divide", "aten.floor_divide.default",
       "torch.ops.aten.floor_divide.default(x, y)"},
      {"remainder", "aten.remainder.Tensor",
       "torch.ops.aten.remainder.Tensor(x, y)"},
      {"fmod", "aten.fmod.Tensor", "torch.ops.aten.fmod.Tensor(x, y)"},
  };
  for (const Op& op : ops) {
    ExpectBothRefuse(op.name,
                     absl::StrCat(R"(
def forward(self, x: "i64[4][1]cpu", y: "i64[4][1]cpu"):
    )",
                                  op.name, " = ", op.call, R"(;  x = y = None
    return ()",
                                  op.name, R"(,)
)"),
                     xy,
                     absl::StrCat("node '", op.name, "': ", op.target,
                                  ": ZeroDivisionError"));
  }
  ExpectBothRefuse("remainder_scalar", R"(
def forward(self, x: "i64[4][1]cpu"):
    remainder = torch.ops.aten.remainder.Scalar(x, 0);  x = None
    return (remainder,)
)",
                   {{"x", Ints({1, 2, 3, 4})}}, "ZeroDivisionError");
}

// A size from .item() that is negative is an error (the cpu backend made an
// empty tensor), and the host function's check names the value, as the
// interpreter does (it named the symbol u0).
TEST(RefusalsTest, ANegativeDataDependentSizeIsAnError) {
  std::string graph = R"(
def forward(self, n: "i64[][]cpu"):
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    zeros = torch.ops.aten.zeros.default([item], dtype = torch.float32)
    return (zeros,)
)";
  Tensor n = *Tensor::Empty({}, DType::kInt64);
  n.data<int64_t>()[0] = -3;
  ExpectBothRefuse("negative_item", graph, {{"n", n}},
                   // zeros decomposes into full, on both backends.
                   "node 'full': aten.full.default: Trying to create tensor "
                   "with negative dimension -3: [-3]");
}

// ---- Iteration space -------------------------------------------------------

// A kernel over 2^42 elements of an expanded view: the interpreter refused
// mul's result for --max-memory, while the cpu backend fused mul into the
// sum and looped over all of it. Both refuse the op that would take it.
TEST(RefusalsTest, AnOpOverTooManyElementsIsRefused) {
  std::map<std::string, Tensor> x = {{"x", Floats(4)}};
  ExpectBothRefuse("too_many_fused", R"(
def forward(self, x: "f32[4][1]cpu"):
    expand = torch.ops.aten.expand.default(x, [1048576, 1048576, 4]);  x = None
    mul = torch.ops.aten.mul.Tensor(expand, 2);  expand = None
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    return (sum_1,)
)",
                   x,
                   "node 'mul': aten.mul.Tensor: an input of 4398046511104 "
                   "elements (f32[1048576, 1048576, 4]) is more than the "
                   "1099511627776 one op may take (--max-elements)");
  ExpectBothRefuse("too_many_reduced", R"(
def forward(self, x: "f32[4][1]cpu"):
    expand = torch.ops.aten.expand.default(x, [1048576, 1048576, 4]);  x = None
    sum_1 = torch.ops.aten.sum.default(expand);  expand = None
    return (sum_1,)
)",
                   x, "node 'sum_1': aten.sum.default: an input of");
  // A result past the limit is refused before it is allocated (the
  // interpreter said --max-memory), the same on both backends.
  ExpectBothRefuse("too_many_broadcast", R"(
def forward(self, x: "f32[1048577, 1][1, 1]cpu", y: "f32[1048576][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, y);  x = y = None
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    return (sum_1,)
)",
                   {{"x", *Tensor::Empty({1048577, 1}, DType::kFloat32)},
                    {"y", *Tensor::Empty({1048576}, DType::kFloat32)}},
                   "node 'mul': aten.mul.Tensor: a result of 1099512676352 "
                   "elements (f32[1048577, 1048576]) is more than the "
                   "1099511627776 one op may take (--max-elements)");
}

// [n, n, n] with n = 2^21 read from data has 2^63 elements, more than
// int64 counts: the cpu backend's loop over it never ended; now both
// backends refuse the count, reported saturated at int64's largest value
// (the interpreter said "tensor extent overflows int64").
TEST(RefusalsTest, AnExtentPastInt64IsRefused) {
  std::string graph = R"(
def forward(self, n: "i64[][]cpu"):
    item = torch.ops.aten._local_scalar_dense.default(n);  n = None
    zeros = torch.ops.aten.zeros.default([item, item, item], dtype = torch.float32)
    sum_1 = torch.ops.aten.sum.default(zeros);  zeros = None
    return (sum_1,)
)";
  Tensor n = *Tensor::Empty({}, DType::kInt64);
  n.data<int64_t>()[0] = int64_t{1} << 21;
  ExpectBothRefuse("extent_overflow", graph, {{"n", n}},
                   "node 'zeros': aten.zeros.default: a result of "
                   "9223372036854775807 elements (f32[2097152, 2097152, "
                   "2097152]) is more than the 1099511627776 one op may take "
                   "(--max-elements)");
  // n = 2^14: 2^42 elements, counted in int64, the same words on both.
  n.data<int64_t>()[0] = int64_t{1} << 14;
  ExpectBothRefuse("extent_big", graph, {{"n", n}},
                   "node 'zeros': aten.zeros.default: a result of "
                   "4398046511104 elements (f32[16384, 16384, 16384]) is more "
                   "than the 1099511627776 one op may take (--max-elements)");
}

// --max-elements sets the limit; a count that is a product of sizes is
// checked by the host function (the message then spells it symbolically).
TEST(RefusalsTest, TheElementLimitIsConfigurable) {
  std::string graph = WriteTestFile("outer.txt", R"(
def forward(self, x: "f32[s0][1]cpu", y: "f32[s1][1]cpu"):
    unsqueeze = torch.ops.aten.unsqueeze.default(x, 1);  x = None
    mul = torch.ops.aten.mul.Tensor(unsqueeze, y);  unsqueeze = y = None
    return (mul,)
)");
  std::string x = TestTmpPath("outer_x.npy"), y = TestTmpPath("outer_y.npy");
  ASSERT_OK(WriteNpy(x, Floats(20)));
  ASSERT_OK(WriteNpy(y, Floats(30)));
  for (const char* backend : {"interp", "cpu"}) {
    SCOPED_TRACE(backend);
    std::string out = TestTmpPath(absl::StrCat("outer_", backend));
    std::vector<std::string> args = {"run",     graph,    "--input",   "x=" + x,
                                     "--input", "y=" + y, "--backend", backend,
                                     "--out",   out};
    LathecResult ok = RunLathec(args);
    EXPECT_EQ(ok.status, 0) << ok.output;
    args.push_back("--max-elements");
    args.push_back("599");
    LathecResult r = RunLathec(args);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("node 'mul': aten.mul.Tensor: a result of "));
    EXPECT_THAT(r.output, HasSubstr(" is more than the 599 one op may take"));
  }
  LathecResult flag = RunLathec({"run", graph, "--max-elements", "lots",
                                 "--out", TestTmpPath("outer_flag")});
  EXPECT_EQ(flag.output,
            "lathec: --max-elements expects a positive number of elements\n");
}

// Every op's result is bounded before it is allocated, not only those of
// creation and pointwise ops: the interpreter's mm allocated its 2^20
// elements first (here refused by --max-memory) and only then met
// --max-elements, so a slow kernel ran to its end before the refusal.
TEST(RefusalsTest, EveryOpsResultIsBoundedBeforeItIsAllocated) {
  std::string graph = WriteTestFile("outer_mm.txt", R"(
def forward(self, x: "f32[1024, 1][1, 1]cpu", y: "f32[1, 1024][1024, 1]cpu"):
    mm = torch.ops.aten.mm.default(x, y);  x = y = None
    return (mm,)
)");
  std::string x = TestTmpPath("mm_x.npy"), y = TestTmpPath("mm_y.npy");
  ASSERT_OK(WriteNpy(x, *Tensor::Empty({1024, 1}, DType::kFloat32)));
  ASSERT_OK(WriteNpy(y, *Tensor::Empty({1, 1024}, DType::kFloat32)));
  for (const char* backend : {"interp", "cpu"}) {
    SCOPED_TRACE(backend);
    LathecResult r = RunLathec(
        {"run", graph, "--input", "x=" + x, "--input", "y=" + y, "--backend",
         backend, "--max-elements", "1000000", "--max-memory", "3000000",
         "--out", TestTmpPath(absl::StrCat("mm_", backend))});
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("node 'mm': aten.mm.default: a result of 1048576 "
                          "elements (f32[1024, 1024]) is more than the "
                          "1000000 one op may take (--max-elements)"));
  }
}

// ---- Guards ----------------------------------------------------------------

// A replay whose size 0 the guards refuse (the compile saw 2) recompiles or
// is refused: the compiled guards (lathe_guards in the .so) evaluated
// x.size(0) // y.size(0) before 2 <= y.size(0) and died of SIGFPE.
TEST(RefusalsTest, GuardsNeverDivideByASizeOfZero) {
  std::string graph = WriteTestFile("guard_floordiv.txt", R"(
def forward(self, x: "f32[s0][1]cpu", y: "f32[s1][1]cpu"):
    sym_size_int = torch.ops.aten.sym_size.int(y, 0)
    view = torch.ops.aten.view.default(x, [sym_size_int, -1])
    sum_1 = torch.ops.aten.sum.dim_IntList(view, [1])
    add = torch.ops.aten.add.Tensor(sum_1, y)
    return (add,)
)");
  for (int64_t k : {2, 0}) {
    std::string dir = TestTmpPath(absl::StrCat("guard_set", k));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Floats(8)));
    ASSERT_OK(WriteNpy(dir + "/y.npy", Floats(k)));
  }
  std::string out = TestTmpPath("guard_out");
  LathecResult r = RunLathec(
      {"run", graph, "--inputs", TestTmpPath("guard_set2"), "--inputs",
       TestTmpPath("guard_set0"), "--backend", "cpu", "--out", out});
  EXPECT_FALSE(r.signaled) << r.output;
  // The second set recompiles, and view refuses [0, -1] of 8 elements.
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("lathec: "));
  EXPECT_THAT(r.output, HasSubstr("node 'view'"));
  EXPECT_FALSE(PathExists(out));
  // A program that loads the artifact evaluates the same guards: a set they
  // refuse is an error naming the guard.
  std::string artifact = TestTmpPath("guard_artifact");
  LathecResult compiled = RunLathec({"compile", graph, "-o", artifact,
                                     "--inputs", TestTmpPath("guard_set2")});
  ASSERT_EQ(compiled.status, 0) << compiled.output;
  LathecResult loaded = RunLathec({"run", "--artifact", artifact, "--inputs",
                                   TestTmpPath("guard_set0"), "--out", out});
  EXPECT_FALSE(loaded.signaled) << loaded.output;
  EXPECT_EQ(loaded.status, 1) << loaded.output;
  EXPECT_THAT(loaded.output,
              HasSubstr("no compiled variant admits the arguments (guard "
                        "failed: "));
  EXPECT_FALSE(PathExists(out));
}

// ---- Indices ---------------------------------------------------------------

// gather and scatter do not wrap a negative index (PyTorch raises); the
// interpreter wrapped -1.
TEST(RefusalsTest, ANegativeGatherOrScatterIndexIsOutOfBounds) {
  std::map<std::string, Tensor> in = {{"x", Floats(4)}, {"i", Ints({0, -1})}};
  // node, call, the interpreter's words for an index out of range.
  const std::vector<std::vector<std::string>> ops = {
      {"gather", "torch.ops.aten.gather.default(x, 0, i)",
       "index -1 is out of bounds"},
      {"scatter", "torch.ops.aten.scatter.value(x, 0, i, 1.0)",
       "index -1 is out of bounds"},
      {"scatter_add", "torch.ops.aten.scatter_add.default(x, 0, i, x)",
       "index -1 is out of bounds"},
      // Neighbours that never wrapped: index_select, and index.Tensor, which
      // wraps once (-5 of 4 is out of range).
      {"index_select", "torch.ops.aten.index_select.default(x, 0, i)",
       "index out of range in self (index -1, size 4)"},
      {"index", "torch.ops.aten.index.Tensor(x, [i])",
       "index -5 is out of bounds"},
  };
  for (const std::vector<std::string>& op : ops) {
    std::string graph = absl::StrCat(R"(
def forward(self, x: "f32[4][1]cpu", i: "i64[2][1]cpu"):
    )",
                                     op[0], " = ", op[1], R"(;  x = i = None
    return ()",
                                     op[0], R"(,)
)");
    if (op[0] == "index") in["i"] = Ints({0, -5});
    // "torch.ops.aten.gather.default(...)" -> "aten.gather.default"
    std::string target = op[1].substr(10, op[1].find('(') - 10);
    ExpectBothRefuse(op[0], graph, in,
                     absl::StrCat("node '", op[0], "': ", target, ": ", op[2]));
  }
}

// An index past the end: the kernel's check reports the index and the
// size, so both backends give the interpreter's message, for a constant
// size and for a symbolic one (s0 = 4), in a gather, an index_select and an
// embedding.
TEST(RefusalsTest, AnIndexPastTheEndIsNamedByItsValue) {
  struct Case {
    std::string name, x, call, words;
  };
  const std::vector<Case> cases = {
      {"gather_past", "f32[4][1]cpu", "torch.ops.aten.gather.default(x, 0, i)",
       "aten.gather.default: index 5 is out of bounds for dimension 0 with "
       "size 4"},
      {"gather_past_dyn", "f32[s0][1]cpu",
       "torch.ops.aten.gather.default(x, 0, i)",
       "aten.gather.default: index 5 is out of bounds for dimension 0 with "
       "size 4"},
      {"index_past_dyn", "f32[s0][1]cpu", "torch.ops.aten.index.Tensor(x, [i])",
       "aten.index.Tensor: index 5 is out of bounds for dimension 0 with size "
       "4"},
      {"index_select_past", "f32[4][1]cpu",
       "torch.ops.aten.index_select.default(x, 0, i)",
       "aten.index_select.default: index out of range in self (index 5, size "
       "4)"},
      {"embedding_past", "f32[4, 3][3, 1]cpu",
       "torch.ops.aten.embedding.default(x, i)",
       "aten.embedding.default: index out of range in self (index 5, size 4)"},
  };
  for (const Case& c : cases) {
    std::string graph = absl::StrCat(R"(
def forward(self, x: ")",
                                     c.x, R"(", i: "i64[2][1]cpu"):
    r = )",
                                     c.call, R"(;  x = i = None
    return (r,)
)");
    Tensor x = *Tensor::Empty({4, 3}, DType::kFloat32);
    if (c.name != "embedding_past") x = Floats(4);
    ExpectBothRefuse(c.name, graph, {{"x", x}, {"i", Ints({1, 5})}},
                     absl::StrCat("node 'r': ", c.words));
  }
}

// A class past the end in nll_loss: the interpreter's words, with the
// class the kernel read.
TEST(RefusalsTest, AnNllLossTargetPastTheEndIsNamedByItsValue) {
  Tensor x = *Tensor::Empty({2, 4}, DType::kFloat32);
  for (int64_t k = 0; k < 8; ++k) x.data<float>()[k] = 0.5f;
  ExpectBothRefuse("nll_past", R"(
def forward(self, x: "f32[2, 4][4, 1]cpu", t: "i64[2][1]cpu"):
    nll = torch.ops.aten.nll_loss_forward.default(x, t, None, 1, -100);  x = t = None
    getitem = nll[0];  nll = None
    return (getitem,)
)",
                   {{"x", x}, {"t", Ints({1, 5})}},
                   "node 'nll': aten.nll_loss_forward.default: Target 5 is "
                   "out of bounds.");
}

}  // namespace
}  // namespace lathe
