// Runs the lathec binary as a user would and checks its files, output and
// exit status.

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/arrange_arguments.h"
#include "runtime/artifact.h"
#include "runtime/composite.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"
#include "tools/testing/run_lathec.h"

namespace lathe {
namespace {

using ::lathe::testing::LathecResult;
using ::lathe::testing::PathExists;
using ::lathe::testing::RunfilePath;
using ::lathe::testing::RunLathec;
using ::lathe::testing::StatusIs;
using ::lathe::testing::TestTmpPath;
using ::lathe::testing::WriteTestFile;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Save(const std::string& name, const Tensor& t) {
  std::string path = TestTmpPath(name);
  EXPECT_OK(WriteNpy(path, t));
  return path;
}

Tensor Filled(std::vector<int64_t> sizes, double v, DType d = DType::kFloat32) {
  Tensor t = *Tensor::Empty(sizes, d);
  ForEachIndex(t.sizes(),
               [&](absl::Span<const int64_t> i) { t.SetDouble(i, v); });
  return t;
}

TEST(LathecTest, RunWritesOutputsAndMutatedInputs) {
  std::string param = Save("param.npy", Filled({16, 32}, 1.0));
  std::string grad = Save("grad.npy", Filled({16, 32}, 2.0));
  std::string lr = Save("lr.npy", Filled({}, 0.25, DType::kFloat64));
  std::string out = TestTmpPath("sgd_out");
  LathecResult r =
      RunLathec({"run", RunfilePath("ir/testdata/graphs/09_sgd_step.txt"),
                 "--input", "param=" + param, "--input", "grad=" + grad,
                 "--input", "lr=" + lr, "--out", out});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("out0.npy: f32[16, 32][32, 1]cpu"));
  EXPECT_THAT(r.output, HasSubstr("mutated/param.npy: f32[16, 32][32, 1]cpu"));
  for (const char* name : {"out0.npy", "mutated/param.npy"}) {
    Tensor t = *ReadNpy(out + "/" + name);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      EXPECT_EQ(t.GetDouble(i), 0.5);
    });
  }
  EXPECT_FALSE(PathExists(out + "/grad.npy"));  // not mutated
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reference scenario 6 through AOT: the input is written and restrided by
// the runtime-wrapper plan, which --dump-dir shows as C++.
TEST(LathecTest, RunAppliesTheRuntimeWrapperPlan) {
  std::string graph =
      WriteTestFile("transpose_mul.txt", R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 3][3, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul_ = torch.ops.aten.mul_.Tensor(transpose_, 2)
    unsqueeze = torch.ops.aten.unsqueeze.default(a, 0)
    return (unsqueeze,)
)");
  Tensor a = *Tensor::Empty({2, 3}, DType::kFloat32);
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = static_cast<float>(i);
  std::string out = TestTmpPath("plan_out"), dump = TestTmpPath("plan_dump");
  LathecResult r = RunLathec({"run", graph, "--input", "a=" + Save("pa.npy", a),
                              "--out", out, "--dump-dir", dump});
  ASSERT_EQ(r.status, 0) << r.output;
  // a is now a0.T * 2 (3x2), and out0 that with a leading 1.
  Tensor got_a = *ReadNpy(out + "/mutated/a.npy"),
         out0 = *ReadNpy(out + "/out0.npy");
  EXPECT_EQ(got_a.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(got_a.GetDouble({2, 1}), 2 * 5);  // a0[1][2] * 2
  EXPECT_EQ(got_a.GetDouble({0, 1}), 2 * 3);  // a0[1][0] * 2
  EXPECT_EQ(out0.sizes(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(out0.GetDouble({0, 2, 1}), 2 * 5);
  std::string source = ReadText(dump + "/runtime_wrapper_plan.cc");
  EXPECT_THAT(source, HasSubstr("lathe::CopyTensor(in[0], fw[0]));  // "
                                "a.detach().copy_"));
  EXPECT_THAT(source, HasSubstr("in[0].AsStrided({3, 2}, {1, 3}, 0));  // "
                                "a.as_strided_"));
  EXPECT_THAT(ReadText(dump + "/00-aot_dispatch.txt"),
              HasSubstr("torch.ops.aten.mul.Tensor("));
}

// A pair input is given as its halves; the pair result is written as its
// halves.
TEST(LathecTest, CompositeInputsAndOutputsAreTheirInnerTensors) {
  std::string graph = WriteTestFile("pair_mul.txt", R"(# lathe: composite x pair
def forward(self, x: "f32[3][1]cpu", y: "f32[3][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    return (mul,)
)");
  std::string a = Save("xa.npy", Filled({3}, 2.0));
  std::string b = Save("xb.npy", Filled({3}, -1.0));
  std::string y = Save("py.npy", Filled({3}, 4.0));
  std::string out = TestTmpPath("pair_out"), dump = TestTmpPath("pair_dump");
  LathecResult r =
      RunLathec({"run", graph, "--input", "x_a=" + a, "--input", "x_b=" + b,
                 "--input", "y=" + y, "--out", out, "--dump-dir", dump});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(ReadNpy(out + "/out0_a.npy")->GetDouble({1}), 8.0);
  EXPECT_EQ(ReadNpy(out + "/out0_b.npy")->GetDouble({1}), -4.0);
  EXPECT_THAT(ReadText(dump + "/subclass_wrapper_plan.cc"),
              HasSubstr("args[0].composite->type != type_pair"));
  LathecResult missing =
      RunLathec({"run", graph, "--input", "x_a=" + a, "--input", "y=" + y,
                 "--out", TestTmpPath("pair_missing")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.output, "lathec: missing input 'x_b'\n");
  LathecResult mismatched =
      RunLathec({"run", graph, "--input", "x_a=" + a, "--input",
                 "x_b=" + Save("xb2.npy", Filled({2}, 1.0)), "--input",
                 "y=" + y, "--out", TestTmpPath("pair_bad")});
  EXPECT_EQ(mismatched.status, 1);
  EXPECT_EQ(mismatched.output,
            "lathec: input 'x': pair: inner 'b' is f32[2][1]cpu, not of the "
            "outer sizes [3]\n");
  EXPECT_FALSE(PathExists(TestTmpPath("pair_bad")));
}

// A dynamic nested composite without a hint: its first inner tensor
// (x_a_a) gives the compile-time size.
TEST(LathecTest, NestedCompositeInputsGiveTheirHints) {
  std::string graph = WriteTestFile("nested_dynamic.txt",
                                    R"(# lathe: composite x pair(pair, pair)
def forward(self, x: "f32[s0][1]cpu"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    floordiv = sym_size_int // 2
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 0, floordiv)
    neg = torch.ops.aten.neg.default(slice_1)
    return (neg,)
)");
  std::vector<std::string> args = {"run", graph, "--out",
                                   TestTmpPath("nested_out")};
  for (const char* leaf : {"x_a_a", "x_a_b", "x_b_a", "x_b_b"}) {
    args.push_back("--input");
    args.push_back(absl::StrCat(
        leaf, "=", Save(absl::StrCat(leaf, ".npy"), Filled({6}, 2.0))));
  }
  LathecResult r = RunLathec(args);
  ASSERT_EQ(r.status, 0) << r.output;
  Tensor t = *ReadNpy(TestTmpPath("nested_out") + "/out0_b_a.npy");
  EXPECT_EQ(t.ToString(), "f32[3][1]cpu");
  EXPECT_EQ(t.GetDouble({2}), -2.0);
}

TEST(LathecTest, AotErrorsNameTheGraph) {
  std::string graph =
      WriteTestFile("set_then_mul.txt", R"(# lathe: requires_grad a
def forward(self, a: "f32[3][1]cpu", b: "f32[3][1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)");
  std::string x = Save("sx.npy", Filled({3}, 1.0));
  LathecResult r = RunLathec({"run", graph, "--input", "a=" + x, "--input",
                              "b=" + x, "--out", TestTmpPath("set_out")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, absl::StrCat("lathec: ", graph,
                                   ": Encountered a set_ on a graph input "
                                   "('a'), but the input has other mutations "
                                   "that we cannot keep in the graph "
                                   "(requires_grad=True, mutations under "
                                   "no_grad=False, hidden from "
                                   "autograd=False)\n"));
  EXPECT_FALSE(PathExists(TestTmpPath("set_out")));
}

TEST(LathecTest, ReplaysSeveralInputSets) {
  for (int k = 0; k < 2; ++k) {
    std::string dir = TestTmpPath(absl::StrCat("set", k));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Filled({3 + 2 * k, 16}, 1.0)));
    ASSERT_OK(WriteNpy(dir + "/w.npy", Filled({16, 32}, -0.5 + k)));
  }
  std::string out = TestTmpPath("replay_out");
  LathecResult r = RunLathec(
      {"run", RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt"), "--inputs",
       TestTmpPath("set0"), "--inputs", TestTmpPath("set1"), "--out", out});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith("compiles=1\n"));
  Tensor a = *ReadNpy(out + "/0/out0.npy"), b = *ReadNpy(out + "/1/out0.npy");
  EXPECT_EQ(a.ToString(), "f32[3, 32][32, 1]cpu");
  EXPECT_EQ(b.ToString(), "f32[5, 32][32, 1]cpu");
  EXPECT_EQ(a.GetDouble({2, 31}), 0.0);  // relu(16 * -0.5)
  EXPECT_EQ(b.GetDouble({4, 31}), 8.0);  // relu(16 * 0.5)
}

// As PyTorch: a first input set with a size of 1 compiles that size as the
// constant 1 (0/1 specialization), so a later size needs a second compile,
// reported with the guard that failed; a set either compile admits reuses
// it. The other order fails the first compile's `2 <= size` guard.
TEST(LathecTest, ReplaysSpecializeSizesOfOneAndRecompile) {
  for (int64_t rows : {1, 5}) {
    std::string dir = TestTmpPath(absl::StrCat("rows", rows));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Filled({rows, 16}, 1.0)));
    ASSERT_OK(WriteNpy(dir + "/w.npy", Filled({16, 32}, 0.5)));
  }
  std::string graph = RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  LathecResult r =
      RunLathec({"run", graph, "--inputs", TestTmpPath("rows1"), "--inputs",
                 TestTmpPath("rows5"), "--inputs", TestTmpPath("rows1"),
                 "--out", TestTmpPath("rows_out")});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output,
              StartsWith(absl::StrCat(
                  "compiles=2\nrecompile 1 for input set 1 (",
                  TestTmpPath("rows5"), "): guard failed: x.size(0) == 1\n")));
  EXPECT_EQ(ReadNpy(TestTmpPath("rows_out") + "/1/out0.npy")->ToString(),
            "f32[5, 32][32, 1]cpu");
  EXPECT_EQ(ReadNpy(TestTmpPath("rows_out") + "/2/out0.npy")->GetDouble({0, 0}),
            8.0);
  LathecResult back =
      RunLathec({"run", graph, "--inputs", TestTmpPath("rows5"), "--inputs",
                 TestTmpPath("rows1"), "--out", TestTmpPath("rows_out2")});
  ASSERT_EQ(back.status, 0) << back.output;
  EXPECT_THAT(back.output,
              StartsWith(absl::StrCat(
                  "compiles=2\nrecompile 1 for input set 1 (",
                  TestTmpPath("rows1"), "): guard failed: 2 <= x.size(0)\n")));
}

// A dynamic graph without hint directives compiles with the first input
// set's sizes as hints, and replays other sizes through the same plan.
TEST(LathecTest, DynamicGraphsTakeTheirHintsFromTheFirstInputs) {
  for (int k = 0; k < 2; ++k) {
    std::string dir = TestTmpPath(absl::StrCat("floordiv", k));
    mkdir(dir.c_str(), 0755);
    Tensor x = *Tensor::Empty({6 + 4 * k, 8}, DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i;
    ASSERT_OK(WriteNpy(dir + "/x.npy", x));
  }
  std::string out = TestTmpPath("floordiv_out");
  LathecResult r = RunLathec(
      {"run", RunfilePath("ir/testdata/graphs/14_dynamic_floordiv.txt"),
       "--inputs", TestTmpPath("floordiv0"), "--inputs",
       TestTmpPath("floordiv1"), "--out", out});
  ASSERT_EQ(r.status, 0) << r.output;
  Tensor a = *ReadNpy(out + "/0/out0.npy"), b = *ReadNpy(out + "/1/out0.npy");
  EXPECT_EQ(a.ToString(), "f32[3, 8][8, 1]cpu");  // x[: s0 // 2]
  EXPECT_EQ(b.ToString(), "f32[5, 8][8, 1]cpu");
  EXPECT_EQ(b.GetDouble({4, 7}), 39);
}

// On both backends: a constant is given like an input, and a missing or
// misshapen one is refused before anything reads it (the cpu backend's
// kernels would read past its end).
TEST(LathecTest, ConstantsAreGivenLikeInputs) {
  std::string graph =
      RunfilePath("ir/testdata/graphs/21_constant_and_bare_return.txt");
  std::string x = Save("cx.npy", Filled({3}, 1.0));
  std::string c = Save("c.npy", Filled({3}, 2.5));
  for (std::string backend : {"interp", "cpu"}) {
    SCOPED_TRACE(backend);
    std::string out = TestTmpPath("const_out_" + backend);
    LathecResult r = RunLathec({"run", graph, "--input", "x=" + x, "--input",
                                "_tensor_constant0=" + c, "--out", out,
                                "--backend", backend});
    ASSERT_EQ(r.status, 0) << r.output;
    Tensor t = *ReadNpy(out + "/out0.npy");
    EXPECT_EQ(t.GetDouble({2}), 3.5);
    LathecResult missing = RunLathec(
        {"run", graph, "--input", "x=" + x, "--out",
         TestTmpPath("const_missing_" + backend), "--backend", backend});
    EXPECT_EQ(missing.status, 1);
    EXPECT_EQ(
        missing.output,
        "lathec: missing constant 'self._tensor_constant0' (give it as --input "
        "_tensor_constant0=FILE.npy)\n");
    std::string wrong_out = TestTmpPath("const_wrong_" + backend);
    LathecResult wrong =
        RunLathec({"run", graph, "--input", "x=" + x, "--input",
                   "_tensor_constant0=" + Save("c2.npy", Filled({2}, 1.0)),
                   "--out", wrong_out, "--backend", backend});
    EXPECT_EQ(wrong.status, 1);
    EXPECT_EQ(wrong.output,
              "lathec: constant 'self._tensor_constant0' size(0): expected 3, "
              "got 2\n");
    EXPECT_FALSE(PathExists(wrong_out));
  }
}

// --freeze NAME=FILE.npy: the input's value is the compiled function's own
// (calls give the others); the results are the unfrozen run's, on both
// backends and from an artifact, which carries the value; `# lathe:
// constant` asks for it; the errors name the input.
TEST(LathecTest, FrozenInputsAreTheFunctionsOwn) {
  std::string graph = RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string x = Save("fz_x.npy", Filled({3, 16}, 0.5));
  std::string w = Save("fz_w.npy", Filled({16, 32}, 0.25));
  std::string want_dir = TestTmpPath("fz_want");
  ASSERT_EQ(RunLathec({"run", graph, "--input", "x=" + x, "--input", "w=" + w,
                       "--out", want_dir})
                .status,
            0);
  Tensor want = *ReadNpy(want_dir + "/out0.npy");
  for (std::string backend : {"interp", "cpu"}) {
    SCOPED_TRACE(backend);
    std::string out = TestTmpPath("fz_out_" + backend);
    LathecResult r = RunLathec({"run", graph, "--input", "x=" + x, "--freeze",
                                "w=" + w, "--out", out, "--backend", backend});
    ASSERT_EQ(r.status, 0) << r.output;
    Tensor got = *ReadNpy(out + "/out0.npy");
    ASSERT_EQ(got.sizes(), want.sizes());
    for (int64_t k = 0; k < got.numel(); ++k) {
      EXPECT_EQ(got.data<float>()[k], want.data<float>()[k]) << k;
    }
  }
  // The artifact holds w (frozen_0.npy); a run gives x alone.
  std::string artifact = TestTmpPath("fz_artifact");
  LathecResult compiled =
      RunLathec({"compile", graph, "-o", artifact, "--freeze", "w=" + w});
  ASSERT_EQ(compiled.status, 0) << compiled.output;
  EXPECT_THAT(ReadText(artifact + "/manifest.txt"),
              HasSubstr("frozen frozen_0.npy 32,1\n"));
  std::string from_artifact = TestTmpPath("fz_from_artifact");
  LathecResult ran = RunLathec({"run", "--artifact", artifact, "--input",
                                "x=" + x, "--out", from_artifact});
  ASSERT_EQ(ran.status, 0) << ran.output;
  Tensor got = *ReadNpy(from_artifact + "/out0.npy");
  for (int64_t k = 0; k < got.numel(); ++k) {
    EXPECT_EQ(got.data<float>()[k], want.data<float>()[k]) << k;
  }
  std::string marked = WriteTestFile(
      "fz_marked.txt", absl::StrCat("# lathe: constant w\n", ReadText(graph)));
  std::string out = TestTmpPath("fz_never");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"run", marked, "--input", "x=" + x, "--out", out},
       "frozen input 'w': `# lathe: constant w` needs its value (lathec "
       "--freeze w=FILE.npy)"},
      {{"run", graph, "--input", "x=" + x, "--freeze", "q=" + w, "--out", out},
       "frozen input 'q': the graph has no input of that name (its inputs: "
       "x, w)"},
      {{"run", graph, "--input", "x=" + x, "--freeze", "w=" + x, "--out", out},
       "frozen input 'w': expected f32[16, 32][32, 1]cpu, got "
       "f32[3, 16][16, 1]cpu"},
      {{"run", graph, "--input", "x=" + x, "--freeze", "w", "--out", out},
       "--freeze expects NAME=FILE.npy, got 'w'"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--freeze",
        "w=" + w, "--out", out},
       "lathec: the graph has no input named 'w'"},
  };
  for (const Case& c : cases) {
    LathecResult r = RunLathec(c.args);
    EXPECT_EQ(r.status, 1) << absl::StrJoin(c.args, " ") << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << absl::StrJoin(c.args, " ");
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
        << r.output;
    EXPECT_FALSE(PathExists(out)) << absl::StrJoin(c.args, " ");
  }
}

// With the cpu backend lathec says what it compiled: kernels after and
// before fusion, its own and the C++ compiler's time, runs and time per run;
// --dump-dir holds the loop IR before and after scheduling, the source, the
// fusion log and the fusion picture (graph.svg only when `dot` is there).
TEST(LathecTest, TheCpuBackendSaysWhatItDid) {
  std::string x = Save("mlp_x.npy", Filled({4, 16}, 0.5));
  std::string w = Save("mlp_w.npy", Filled({16, 32}, 0.25));
  std::string graph = WriteTestFile("mlp.txt", R"(
def forward(self, x: "f32[s0, 16][16, 1]cpu", w: "f32[16, 32][32, 1]cpu"):
    mm: "f32[s0, 32][32, 1]cpu" = torch.ops.aten.mm.default(x, w)
    relu: "f32[s0, 32][32, 1]cpu" = torch.ops.aten.relu.default(mm)
    return (relu,)
)");
  std::string dump = TestTmpPath("mlp_cpu_dump");
  LathecResult r = RunLathec({"run", graph, "--input", "x=" + x, "--input",
                              "w=" + w, "--out", TestTmpPath("mlp_cpu"),
                              "--backend", "cpu", "--dump-dir", dump});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(ReadText(dump + "/loop_ir.txt"),
              ::testing::HasSubstr("extern sgemm"));
  EXPECT_THAT(ReadText(dump + "/loop_ir_scheduled.txt"),
              ::testing::HasSubstr("kernel k"));
  // The kernels, the host function and the compiled guards (s0 >= 2).
  EXPECT_THAT(ReadText(dump + "/kernel.cc"),
              ::testing::AllOf(::testing::HasSubstr("static void k0("),
                               ::testing::HasSubstr("int lathe_call("),
                               ::testing::HasSubstr("int lathe_guards(")));
  EXPECT_TRUE(PathExists(dump + "/fusion.log"));
  EXPECT_THAT(ReadText(dump + "/graph.dot"),
              ::testing::AllOf(::testing::HasSubstr("subgraph cluster_k0"),
                               ::testing::HasSubstr("\"mm\" -> \"relu\"")));
  bool have_dot = std::system("command -v dot > /dev/null 2>&1") == 0;
  EXPECT_EQ(PathExists(dump + "/graph.svg"), have_dot);
  if (have_dot) {
    EXPECT_THAT(ReadText(dump + "/graph.svg"), ::testing::HasSubstr("<svg"));
  }
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex(
                  "cpu backend: [0-9]+ kernels \\([0-9]+ before fusion\\); "
                  "lathe [0-9.]+ ms, C\\+\\+ compiler [0-9]+ ms( \\([a-z]+ "
                  "cache hit\\))?; 1 "
                  "run\\(s\\), "
                  "[0-9.]+ ms each\n"));
  // relu(x @ w) with x = 0.5, w = 0.25 over 16 terms: 2.
  Tensor t = *ReadNpy(TestTmpPath("mlp_cpu") + "/out0.npy");
  EXPECT_EQ(t.GetDouble({3, 31}), 2.0);
}

// --autotune: the first compile measures and says what it chose, the
// second reads the choices from the disk cache; the run's results are the
// untuned ones.
TEST(LathecTest, AutotuneMeasuresOnceThenReadsTheCache) {
  std::string x = Save("tune_x.npy", Filled({64, 256}, 0.5));
  std::string w = Save("tune_w.npy", Filled({256, 512}, 0.25));
  std::string graph = WriteTestFile("tune.txt", R"(
def forward(self, x: "f32[64, 256][256, 1]cpu", w: "f32[256, 512][512, 1]cpu"):
    mm: "f32[64, 512][512, 1]cpu" = torch.ops.aten.mm.default(x, w)
    relu: "f32[64, 512][512, 1]cpu" = torch.ops.aten.relu.default(mm)
    return (relu,)
)");
  const std::string cache = TestTmpPath("tune_cache");
  ASSERT_EQ(mkdir(cache.c_str(), 0700), 0);
  ASSERT_EQ(setenv("LATHE_CACHE_DIR", cache.c_str(), 1), 0);
  LathecResult cold = RunLathec({"run", graph, "--input", "x=" + x, "--input",
                                 "w=" + w, "--out", TestTmpPath("tune_1"),
                                 "--backend", "cpu", "--autotune"});
  LathecResult warm =
      RunLathec({"compile", graph, "-o", TestTmpPath("tune_2"), "--autotune"});
  unsetenv("LATHE_CACHE_DIR");
  ASSERT_EQ(cold.status, 0) << cold.output;
  EXPECT_THAT(cold.output, ::testing::ContainsRegex(
                               "autotune: k0 threads=[0-9]+( \\(team\\))? "
                               "\\(median of [0-9]+: "));
  EXPECT_THAT(cold.output,
              ::testing::ContainsRegex(
                  "autotune: 2 tunable kernels, [0-2] off the whole team, "
                  "[0-9]+ calls\n"));
  ASSERT_EQ(warm.status, 0) << warm.output;
  EXPECT_THAT(warm.output,
              ::testing::ContainsRegex(
                  "autotune: 2 tunable kernels, [0-2] off the whole team, "
                  "from the disk cache \\(nothing measured\\)\n"));
  // relu(x @ w) with x = 0.5, w = 0.25 over 256 terms: 32.
  Tensor t = *ReadNpy(TestTmpPath("tune_1") + "/out0.npy");
  EXPECT_EQ(t.GetDouble({63, 511}), 32.0);
}

TEST(LathecTest, ErrorsAreOneLineAndWriteNothing) {
  std::string graph = RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string x = Save("x.npy", Filled({3, 16}, 1.0));
  std::string w = Save("w.npy", Filled({16, 32}, 1.0));
  std::string bad_graph = TestTmpPath("bad.txt");
  std::ofstream(bad_graph)
      << "def forward(self, x):\n    y = f(x\n    return (y,)\n";
  std::string garbage = TestTmpPath("garbage.npy");
  std::ofstream(garbage) << "not a numpy file";
  std::string f64 = Save("x64.npy", Filled({3, 16}, 1.0, DType::kFloat64));
  std::string out = TestTmpPath("never_written");
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  } cases[] = {
      {{"run", graph, "--input", "x=" + x, "--out", out},
       1,
       "lathec: missing input 'w'\n"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--input",
        "q=" + w, "--out", out},
       1,
       "lathec: the graph has no input named 'q'\n"},
      {{"run", graph, "--input", "x=" + garbage, "--input", "w=" + w, "--out",
        out},
       1,
       "garbage.npy: byte 0: not a .npy file"},
      {{"run", graph, "--input", "x=" + f64, "--input", "w=" + w, "--out", out},
       1,
       "lathec: input 0 ('x'): expected dtype f32, got f64\n"},
      {{"run", graph, "--input", "x=" + w, "--input", "w=" + w, "--out", out},
       1,
       "lathec: input 0 ('x') size(1): expected 16, got 32\n"},
      {{"run", bad_graph, "--input", "x=" + x, "--out", out},
       1,
       "bad.txt: line 2:12: expected ',' or ')' after an argument"},
      {{"run", TestTmpPath("missing.txt"), "--out", out},
       1,
       "missing.txt: cannot open"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w},
       1,
       "lathec: no --out DIR given\n"},
      // The same directory spelled another way, and one inside the other.
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--dump-dir", out + "/./"},
       1,
       "lathec: --dump-dir and --out must be separate directories\n"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--dump-dir", out + "/../never_written/dump"},
       1,
       "lathec: --dump-dir and --out must be separate directories\n"},
      // No pass named (use `none` for that).
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--passes="},
       1,
       "lathec: --passes expects NAME,NAME,... or none\n"},
      // A pass name lathe does not have.
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--passes", "cse,fuse_everything"},
       1,
       "lathec: unknown pass 'fuse_everything' (passes: tensorify_scalars, "
       "fold_frozen, decompose, cse, dce, constant_fold, remove_noop_ops, "
       "reinplace)\n"},
      {{"run", graph, "--input", "x" + x, "--out", out},
       1,
       "--input expects NAME=FILE.npy"},
      {{"run", graph, "--frobnicate", "--out", out},
       1,
       "lathec: unknown flag --frobnicate\n"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--trace", "/nonexistent/t.jsonl"},
       1,
       "lathec: /nonexistent/t.jsonl: cannot create a temporary file"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--backend",
        "cuda", "--out", out},
       1,
       "lathec: no CUDA device: "},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--backend",
        "tpu", "--out", out},
       1,
       "lathec: unknown backend 'tpu' (available: interp, cpu, cuda)\n"},
      {{"compile", graph}, 1, "lathec: no -o DIR given\n"},
      {{"compile", graph, "-o", out, "--inputs", "d", "--inputs", "e"},
       1,
       "lathec: give the example inputs once (--input NAME=FILE.npy ... or "
       "one --inputs DIR)\n"},
      {{"compile", graph, "-o", out, "--backend", "interp"},
       1,
       "lathec: compile makes code for --backend cpu or cuda, not 'interp'\n"},
      {{"compile", graph, "-o", out, "--cuda-arch", "sm_90"},
       1,
       "lathec: --cuda-arch needs --backend cuda\n"},
      {{"compile", graph, "-o", out, "--backend", "cuda", "--cuda-arch",
        "sm_9x"},
       1,
       "lathec: --cuda-arch expects sm_NN,sm_NN,... (e.g. sm_80,sm_90), got "
       "'sm_9x'\n"},
      {{"compile", graph, "-o", out, "--backend", "cuda"},
       1,
       "lathec: no CUDA device: "},
      {{"guards", graph, "--backend", "cpu"},
       1,
       "lathec: unknown flag --backend\n"},
      {{"guards", graph, "-o", out}, 1, "lathec: unknown flag -o\n"},
      {{"run", graph, "--artifact", out, "--out", out},
       1,
       "lathec: give either GRAPH or --artifact DIR, not both\n"},
      {{"run", "--artifact", out, "--backend", "cpu", "--out", out},
       1,
       "lathec: --backend steers a compile; an --artifact is compiled "
       "already\n"},
      {{"run", graph, "--input", "x=" + x, "--input", "w=" + w, "--out", out,
        "--autotune"},
       1,
       "lathec: --autotune tunes the cpu backend's kernels (--backend cpu), "
       "not interp's\n"},
      {{"compile", graph, "-o", out, "--backend", "cuda", "--autotune"},
       1,
       "lathec: --autotune tunes the cpu backend's kernels (--backend cpu), "
       "not cuda's\n"},
      {{"guards", graph, "--autotune"},
       1,
       "lathec: --autotune tunes the cpu backend's kernels (--backend cpu), "
       "not interp's\n"},
      {{"run", "--artifact", out, "--autotune", "--out", out},
       1,
       "lathec: --autotune steers a compile; an --artifact is compiled "
       "already\n"},
      {{"frobnicate"}, 2, "lathec: unknown command 'frobnicate'"},
  };
  for (const Case& c : cases) {
    LathecResult r = RunLathec(c.args);
    EXPECT_EQ(r.status, c.status) << absl::StrJoin(c.args, " ") << "\n"
                                  << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << absl::StrJoin(c.args, " ");
    if (c.status == 1) {
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
          << r.output;
    }
    EXPECT_FALSE(PathExists(out)) << absl::StrJoin(c.args, " ");
  }
  std::string lr = Save("lr2.npy", Filled({2}, 0.25, DType::kFloat64));
  LathecResult scalar =
      RunLathec({"run", RunfilePath("ir/testdata/graphs/09_sgd_step.txt"),
                 "--input", "param=" + Save("p.npy", Filled({16, 32}, 1.0)),
                 "--input", "grad=" + Save("g.npy", Filled({16, 32}, 1.0)),
                 "--input", "lr=" + lr, "--out", out});
  EXPECT_THAT(scalar.output,
              HasSubstr("input 'lr' is a scalar and needs a 0-d .npy"));
  EXPECT_FALSE(PathExists(out));
}

}  // namespace
}  // namespace lathe

namespace lathe {
namespace {

// The entries of `dir`, sorted (hidden ones too).
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Fresh(const std::string& name) {
  std::string dir = TestTmpPath(name);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  mkdir(dir.c_str(), 0755);
  return dir;
}

constexpr char kTransposeMul[] = R"(def forward(self, a: "f32[2, 3][3, 1]cpu"):
    t_ = torch.ops.aten.t_.default(a)
    mul_ = torch.ops.aten.mul_.Tensor(t_, 2)
    return (t_,)
)";

// A Fortran-order .npy (what np.save writes for an F-contiguous array) is
// the same value as its C-order twin: lathec lays it out as the graph was
// compiled for, and the results are those of the C-order file.
TEST(LathecHostileTest, FortranOrderInputsAreLaidOutAsAnnotated) {
  std::string dir = Fresh("fortran");
  std::string graph = WriteTestFile("fortran/g.txt", kTransposeMul);
  Tensor c = *Tensor::Empty({2, 3}, DType::kFloat32);
  for (int i = 0; i < 6; ++i) c.data<float>()[i] = static_cast<float>(i);
  Tensor f = *Tensor::Empty({6}, DType::kFloat32);
  Tensor fv = *f.AsStrided({2, 3}, {1, 2}, 0);  // F-contiguous, same values
  ForEachIndex(c.sizes(), [&](absl::Span<const int64_t> i) {
    fv.SetDouble(i, c.GetDouble(i));
  });
  std::string cf = Save("fortran/c.npy", c), ff = Save("fortran/f.npy", fv);
  EXPECT_NE(ReadText(cf), ReadText(ff));  // really two file layouts
  LathecResult rc =
      RunLathec({"run", graph, "--input", "a=" + cf, "--out", dir + "/c"});
  LathecResult rf =
      RunLathec({"run", graph, "--input", "a=" + ff, "--out", dir + "/f"});
  ASSERT_EQ(rc.status, 0) << rc.output;
  ASSERT_EQ(rf.status, 0) << rf.output;
  for (const char* file : {"/out0.npy", "/mutated/a.npy"}) {
    Tensor want = *ReadNpy(dir + "/c" + file),
           got = *ReadNpy(dir + "/f" + file);
    ASSERT_EQ(got.sizes(), (std::vector<int64_t>{3, 2})) << file;
    ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> i) {
      EXPECT_EQ(got.GetDouble(i), want.GetDouble(i)) << file;
    });
    EXPECT_EQ(got.GetDouble({2, 1}), 2 * 5);  // a[1][2] * 2, transposed
    EXPECT_EQ(got.GetDouble({0, 1}), 2 * 3);  // a[1][0] * 2
  }
}

// A mutated input named like an output cannot overwrite the output's file.
TEST(LathecHostileTest, MutatedInputsNeverCollideWithOutputs) {
  std::string dir = Fresh("collide");
  std::string graph = WriteTestFile(
      "collide/g.txt",
      R"(def forward(self, out0: "f32[2][1]cpu", y: "f32[2][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(y, 10)
    add_ = torch.ops.aten.add_.Tensor(out0, 1)
    return (mul,)
)");
  LathecResult r = RunLathec(
      {"run", graph, "--input",
       "out0=" + Save("collide/o.npy", Filled({2}, 1.0)), "--input",
       "y=" + Save("collide/y.npy", Filled({2}, 3.0)), "--out", dir + "/out"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(ReadNpy(dir + "/out/out0.npy")->GetDouble({0}), 30.0);
  EXPECT_EQ(ReadNpy(dir + "/out/mutated/out0.npy")->GetDouble({0}), 2.0);
}

// Files planted in an earlier output (a symlink named like an output or
// like a temporary file) are never written through, and stale files do
// not survive a new run.
TEST(LathecHostileTest, PlantedSymlinksAndStaleFilesAreHarmless) {
  std::string dir = Fresh("planted");
  std::string graph = RunfilePath("ir/testdata/graphs/09_sgd_step.txt");
  std::vector<std::string> args = {
      "run",
      graph,
      "--input",
      "param=" + Save("planted/p.npy", Filled({16, 32}, 1.0)),
      "--input",
      "grad=" + Save("planted/g.npy", Filled({16, 32}, 2.0)),
      "--input",
      "lr=" + Save("planted/lr.npy", Filled({}, 0.25, DType::kFloat64)),
      "--out",
      dir + "/out"};
  ASSERT_EQ(RunLathec(args).status, 0);
  std::string victim = dir + "/victim.txt";
  std::ofstream(victim) << "precious";
  for (const char* name :
       {"/out/out0.npy", "/out/out0.npy.tmp-lathe", "/out/mutated/param.npy"}) {
    std::string link = dir + name;
    unlink(link.c_str());
    ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  }
  std::ofstream(dir + "/out/stale.npy") << "old";
  LathecResult r = RunLathec(args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(ReadText(victim), "precious");
  EXPECT_THAT(List(dir + "/out"),
              ::testing::ElementsAre(".lathec-out", "mutated", "out0.npy"));
  EXPECT_EQ(ReadNpy(dir + "/out/out0.npy")->GetDouble({0, 0}), 0.5);
  // Nothing but the output is left beside it.
  EXPECT_THAT(List(dir), ::testing::ElementsAre("g.npy", "lr.npy", "out",
                                                "p.npy", "victim.txt"));
}

// A directory that is not an earlier output is never replaced.
TEST(LathecHostileTest, AForeignOutDirectoryIsRefused) {
  std::string dir = Fresh("foreign");
  std::ofstream(dir + "/notes.txt") << "mine";
  LathecResult r = RunLathec(
      {"run", RunfilePath("ir/testdata/graphs/01_mlp.txt"), "--input",
       "x=" + Save("foreign_x.npy", Filled({8, 16}, 1.0)), "--input",
       "w1=" + Save("foreign_w1.npy", Filled({16, 32}, 1.0)), "--input",
       "b1=" + Save("foreign_b1.npy", Filled({32}, 1.0)), "--input",
       "w2=" + Save("foreign_w2.npy", Filled({32, 4}, 1.0)), "--out", dir});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("exists, is not empty and is not an earlier "
                                  "output (no .lathec-out); nothing was "
                                  "written"));
  EXPECT_THAT(List(dir), ::testing::ElementsAre("notes.txt"));
}

// A failure on the second output leaves nothing: no first output, no
// temporary file, no --dump-dir.
TEST(LathecHostileTest, AFailedRunWritesNothingAtAll) {
  std::string dir = Fresh("halfway");
  std::string graph =
      WriteTestFile("halfway/g.txt", R"(def forward(self, x: "f32[2][1]cpu"):
    neg = torch.ops.aten.neg.default(x)
    expand = torch.ops.aten.expand.default(x, [1000, 1000, 2])
    clone = torch.ops.aten.clone.default(expand)
    return (neg, clone)
)");
  std::vector<std::string> args = {
      "run",        graph,
      "--input",    "x=" + Save("halfway/x.npy", Filled({2}, 1.0)),
      "--out",      dir + "/out",
      "--dump-dir", dir + "/dump"};
  ASSERT_EQ(RunLathec(args).status, 0);  // 8 MB fits the default limit
  std::error_code ec;
  std::filesystem::remove_all(dir + "/out", ec);
  std::filesystem::remove_all(dir + "/dump", ec);
  args.push_back("--max-memory");
  args.push_back("1M");
  LathecResult r = RunLathec(args);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("would exceed the memory limit"));
  EXPECT_THAT(List(dir), ::testing::ElementsAre("g.txt", "x.npy"));
}

// `return None` and None in a returned tuple, as PyTorch prints them: a
// None result has no file.
TEST(LathecTest, NoneResultsHaveNoFile) {
  std::string dir = Fresh("none");
  std::string graph =
      WriteTestFile("none/g.txt", R"(def forward(self, x: "f32[2][1]cpu"):
    neg = torch.ops.aten.neg.default(x)
    return (neg, None)
)");
  std::string x = Save("none/x.npy", Filled({2}, 1.0));
  LathecResult r =
      RunLathec({"run", graph, "--input", "x=" + x, "--out", dir + "/out"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("out1: None"));
  EXPECT_THAT(List(dir + "/out"),
              ::testing::ElementsAre(".lathec-out", "out0.npy"));
  std::string nothing =
      WriteTestFile("none/n.txt", R"(def forward(self, x: "f32[2][1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    return None
)");
  LathecResult n =
      RunLathec({"run", nothing, "--input", "x=" + x, "--out", dir + "/out2"});
  ASSERT_EQ(n.status, 0) << n.output;
  EXPECT_EQ(ReadNpy(dir + "/out2/mutated/x.npy")->GetDouble({1}), 2.0);
}

// Two runs into one --out at the same time: the directory ends up wholly
// one run's (both outputs agree), never a mix.
TEST(LathecHostileTest, ConcurrentRunsIntoOneOutDoNotMix) {
  std::string dir = Fresh("concurrent");
  std::string graph = WriteTestFile("concurrent/g.txt",
                                    R"(def forward(self, x: "f32[64][1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    mul_1 = torch.ops.aten.mul.Tensor(x, 3)
    return (mul, mul_1)
)");
  std::vector<FILE*> runs;
  for (int k = 0; k < 4; ++k) {
    std::string x =
        Save(absl::StrCat("concurrent/x", k, ".npy"), Filled({64}, 1.0 + k));
    std::string cmd =
        absl::StrCat(RunfilePath("tools/lathec"), " run '", graph,
                     "' --input 'x=", x, "' --out '", dir, "/out' 2>&1");
    runs.push_back(popen(cmd.c_str(), "r"));
  }
  for (FILE* f : runs) {
    char buf[256];
    while (fread(buf, 1, sizeof(buf), f) > 0) {
    }
    pclose(f);
  }
  Tensor a = *ReadNpy(dir + "/out/out0.npy"),
         b = *ReadNpy(dir + "/out/out1.npy");
  EXPECT_EQ(b.GetDouble({0}) * 2, a.GetDouble({0}) * 3);
  EXPECT_THAT(List(dir + "/out"),
              ::testing::ElementsAre(".lathec-out", "out0.npy", "out1.npy"));
}

// Hostile sizes: an endless .npy (a symlink to /dev/zero), graph text
// larger than the limit, and an output past --max-memory are one line each.
TEST(LathecHostileTest, UnboundedWorkIsRefused) {
  std::string dir = Fresh("unbounded");
  std::string graph = RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string w = Save("unbounded/w.npy", Filled({16, 32}, 1.0));
  LathecResult zero =
      RunLathec({"run", graph, "--input", "x=/dev/zero", "--input", "w=" + w,
                 "--max-memory", "1M", "--out", dir + "/out"});
  EXPECT_EQ(zero.status, 1);
  EXPECT_EQ(zero.output,
            "lathec: /dev/zero: byte 0: not a .npy file (missing the "
            "\\x93NUMPY magic)\n");
  LathecResult text = RunLathec({"run", "/dev/zero", "--out", dir + "/out"});
  EXPECT_EQ(text.status, 1);
  EXPECT_EQ(text.output,
            "lathec: /dev/zero: larger than the limit of 67108864 bytes\n");
  std::string big = WriteTestFile("unbounded/big.txt",
                                  R"(def forward(self, x: "f32[2][1]cpu"):
    expand = torch.ops.aten.expand.default(x, [100000, 100000, 2])
    clone = torch.ops.aten.clone.default(expand)
    return (clone,)
)");
  LathecResult huge = RunLathec(
      {"run", big, "--input", "x=" + Save("unbounded/x.npy", Filled({2}, 1.0)),
       "--max-memory", "64M", "--out", dir + "/out"});
  EXPECT_EQ(huge.status, 1);
  EXPECT_THAT(huge.output,
              HasSubstr("allocating 80000000000 bytes would exceed the "
                        "memory limit of 67108864 bytes"));
  LathecResult flag =
      RunLathec({"run", big, "--max-memory", "lots", "--out", dir});
  EXPECT_EQ(flag.output,
            "lathec: --max-memory expects a positive number of bytes (e.g. "
            "4G)\n");
  EXPECT_FALSE(PathExists(dir + "/out"));
}

// The default --max-memory leaves the machine room: a result of 45% of its
// memory is refused (never allocated) unless the user raises the limit.
TEST(LathecHostileTest, TheDefaultMemoryLimitLeavesTheMachineRoom) {
  std::string dir = Fresh("default_limit");
  int64_t n = PhysicalMemoryBytes() / 100 * 45 / 4;
  std::string graph = WriteTestFile(
      "default_limit/g.txt",
      absl::StrCat("def forward(self, x: \"f32[1][1]cpu\"):\n"
                   "    expand = torch.ops.aten.expand.default(x, [",
                   n, "])\n",
                   "    clone = torch.ops.aten.clone.default(expand)\n"
                   "    return (clone,)\n"));
  std::string x = Save("default_limit/x.npy", Filled({1}, 1.0));
  for (const char* backend : {"interp", "cpu"}) {
    LathecResult r = RunLathec({"run", graph, "--input", "x=" + x, "--backend",
                                backend, "--out", dir + "/out"});
    EXPECT_EQ(r.status, 1) << backend;
    EXPECT_THAT(r.output,
                HasSubstr(absl::StrCat("would exceed the memory limit of ",
                                       DefaultMaxMemory(), " bytes")))
        << backend;
  }
  EXPECT_FALSE(PathExists(dir + "/out"));
}

// The interpreter's copy of an expanded view holds the result and not a
// second copy of it in doubles, and lathec writes the .npy from the
// result's storage: its peak memory is the result's size and its own.
TEST(LathecHostileTest, CloningAnExpandedViewNeedsNoMoreThanItsResult) {
  std::string dir = Fresh("clone_memory");
  constexpr int64_t kElements = 25'000'000;  // 100 MB of f32
  std::string graph = WriteTestFile(
      "clone_memory/g.txt",
      absl::StrCat("def forward(self, x: \"f32[1][1]cpu\"):\n"
                   "    expand = torch.ops.aten.expand.default(x, [",
                   kElements, "])\n",
                   "    clone = torch.ops.aten.clone.default(expand)\n"
                   "    return (clone,)\n"));
  std::string x = Save("clone_memory/x.npy", Filled({1}, 1.0));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string lathec = RunfilePath("tools/lathec"), input = "x=" + x,
                out = dir + "/out";
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    execl(lathec.c_str(), lathec.c_str(), "run", graph.c_str(), "--input",
          input.c_str(), "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  ASSERT_EQ(wait4(pid, &status, 0, &usage), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int64_t peak = static_cast<int64_t>(usage.ru_maxrss) * 1024;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's shadow, redzones and quarantine add about the
  // result's size again (the copy through doubles it had added 2x more).
  EXPECT_LT(peak, kElements * 4 * 3) << "peak RSS " << peak;
#else
  // The result, and lathec's own 15 MB or so: the .npy is written from the
  // result's storage, and the copy stages nothing.
  EXPECT_LT(peak, kElements * 4 + (48 << 20)) << "peak RSS " << peak;
#endif
  Tensor got = *ReadNpy(dir + "/out/out0.npy");
  EXPECT_EQ(got.numel(), kElements);
  EXPECT_EQ(got.GetDouble({kElements - 1}), 1.0);
}

// `_local_scalar_dense: "Sym(s16)"` (an .item() PyTorch knew to be a backed
// size) takes its hint from the input it reads.
TEST(LathecTest, ABackedItemTakesItsHintFromItsInput) {
  std::string dir = Fresh("backed_item");
  std::string graph =
      WriteTestFile("backed_item/g.txt",
                    R"g(def forward(self, n: "i64[][]cpu", x: "f32[3][1]cpu"):
    _local_scalar_dense: "Sym(s16)" = torch.ops.aten._local_scalar_dense.default(n)
    new_zeros: "f32[s16][1]cpu" = torch.ops.aten.new_zeros.default(x, [_local_scalar_dense])
    add: "f32[s16][1]cpu" = torch.ops.aten.add.Tensor(new_zeros, 1)
    return (add,)
)g");
  LathecResult r =
      RunLathec({"run", graph, "--input",
                 "n=" + Save("backed_item/n.npy", Filled({}, 4, DType::kInt64)),
                 "--input", "x=" + Save("backed_item/x.npy", Filled({3}, 1.0)),
                 "--out", dir + "/out", "--dump-dir", dir + "/dump"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(ReadNpy(dir + "/out/out0.npy")->ToString(), "f32[4][1]cpu");
  // Compiled with s16 backed (hint 4), not as a fresh unbacked u0.
  EXPECT_THAT(ReadText(dir + "/dump/00-aot_dispatch.txt"),
              HasSubstr("add: \"f32[s16][1]cpu\""));
}

// Each input file is read once, so process substitution works for a
// dynamic graph (whose first input set also gives the hints).
TEST(LathecHostileTest, InputsAreReadOnceSoPipesWork) {
  std::string dir = Fresh("pipes");
  std::string x = Save("pipes/x.npy", Filled({3, 16}, 1.0));
  std::string w = Save("pipes/w.npy", Filled({16, 32}, 0.5));
  std::string cmd = absl::StrCat(
      "bash -c \"", RunfilePath("tools/lathec"), " run ",
      RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt"), " --input x=<(cat ",
      x, ") --input w=<(cat ", w, ") --out ", dir, "/out\" 2>&1");
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 0) << out;
  EXPECT_EQ(ReadNpy(dir + "/out/out0.npy")->GetDouble({2, 31}), 8.0);
}

// Issue 12's acceptance: an MLP with a dynamic batch replayed through one
// CompiledFunction at batch 2, 3, 17, 64 and 1000 compiles once; then batch
// 1 recompiles once, its reason the 0/1 specialization; every result is the
// interpreter's.
TEST(LathecTest, CpuReplaysCompileOnceAcrossBatchesThenOnceForOne) {
  const std::vector<int64_t> batches = {2, 3, 17, 64, 1000, 1};
  std::vector<std::string> args = {
      "run", RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt")};
  for (int64_t b : batches) {
    std::string dir = TestTmpPath(absl::StrCat("batch", b));
    mkdir(dir.c_str(), 0755);
    Tensor x = *Tensor::Empty({b, 16}, DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = static_cast<float>((i * 7) % 13) - 6.0f;
    }
    ASSERT_OK(WriteNpy(dir + "/x.npy", x));
    ASSERT_OK(WriteNpy(dir + "/w.npy", Filled({16, 32}, 0.125)));
    args.insert(args.end(), {"--inputs", dir});
  }
  std::vector<std::string> cpu = args, interp = args;
  cpu.insert(cpu.end(),
             {"--backend", "cpu", "--out", TestTmpPath("batches_cpu")});
  interp.insert(interp.end(), {"--out", TestTmpPath("batches_interp")});
  LathecResult r = RunLathec(cpu);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output,
              StartsWith(absl::StrCat(
                  "compiles=2\nrecompile 1 for input set 5 (",
                  TestTmpPath("batch1"), "): guard failed: 2 <= x.size(0)\n")));
  ASSERT_EQ(RunLathec(interp).status, 0);
  for (size_t k = 0; k < batches.size(); ++k) {
    Tensor got =
        *ReadNpy(TestTmpPath(absl::StrCat("batches_cpu/", k, "/out0.npy")));
    Tensor want =
        *ReadNpy(TestTmpPath(absl::StrCat("batches_interp/", k, "/out0.npy")));
    ASSERT_EQ(got.ToString(), want.ToString());
    for (int64_t i = 0; i < got.numel(); ++i) {
      // Sums of 16 products of small multiples of 1/8: exact in f32.
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << k << " " << i;
    }
  }
}

// Each command parses its graph text once, however many compiles follow:
// --trace records one "parse" step, then each compile's walk from shape
// propagation on (a cpu replay that recompiles, the same on the
// interpreter, and a compile).
TEST(LathecTest, EachCommandParsesItsGraphTextOnce) {
  std::string graph = RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::vector<std::string> sets;
  for (int64_t rows : {4, 1}) {
    std::string dir = TestTmpPath(absl::StrCat("parse_rows", rows));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Filled({rows, 16}, 1.0)));
    ASSERT_OK(WriteNpy(dir + "/w.npy", Filled({16, 32}, 0.5)));
    sets.insert(sets.end(), {"--inputs", dir});
  }
  auto count = [](const std::string& trace, const std::string& step) {
    int n = 0;
    std::string key = absl::StrCat("{\"step\":\"", step, "\"");
    for (size_t at = trace.find(key); at != std::string::npos;
         at = trace.find(key, at + 1)) {
      ++n;
    }
    return n;
  };
  for (std::string backend : {"cpu", "interp"}) {
    SCOPED_TRACE(backend);
    std::string trace = TestTmpPath(absl::StrCat("parse_", backend, ".jsonl"));
    std::vector<std::string> args = {"run", graph};
    args.insert(args.end(), sets.begin(), sets.end());
    args.insert(args.end(), {"--backend", backend, "--out",
                             TestTmpPath(absl::StrCat("parse_out_", backend)),
                             "--trace", trace});
    LathecResult r = RunLathec(args);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("compiles=2\n"));
    ASSERT_OK_AND_ASSIGN(std::string text, ReadFileLimited(trace, 1 << 26));
    EXPECT_EQ(count(text, "parse"), 1) << text.substr(0, 2000);
    EXPECT_EQ(count(text, "shape_prop"), 2);
    EXPECT_EQ(count(text, "lower"), backend == "cpu" ? 2 : 0);
  }
  std::string trace = TestTmpPath("parse_compile.jsonl");
  LathecResult r =
      RunLathec({"compile", graph, "-o", TestTmpPath("parse_artifact"),
                 "--inputs", sets[1], "--trace", trace});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_OK_AND_ASSIGN(std::string text, ReadFileLimited(trace, 1 << 26));
  EXPECT_EQ(count(text, "parse"), 1);
  EXPECT_EQ(count(text, "shape_prop"), 1);
  EXPECT_EQ(count(text, "load"), 1);
}

// Past --max-compiles, a set no variant admits runs on the interpreter,
// with one warning, and gives the interpreter's results.
TEST(LathecTest, PastTheCompileLimitTheInterpreterRuns) {
  std::vector<std::string> args = {
      "run", RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt")};
  for (int64_t b : {4, 1, 1}) {
    std::string dir = TestTmpPath(absl::StrCat("limit", args.size()));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Filled({b, 16}, 0.5)));
    ASSERT_OK(WriteNpy(dir + "/w.npy", Filled({16, 32}, 0.25)));
    args.insert(args.end(), {"--inputs", dir});
  }
  args.insert(args.end(), {"--backend", "cpu", "--max-compiles", "1", "--out",
                           TestTmpPath("limit_out")});
  LathecResult r = RunLathec(args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("compiles=1\n"));
  EXPECT_THAT(r.output, HasSubstr("lathe: warning: would need compile 2, past "
                                  "the limit of 1 (guard failed: 2 <= "
                                  "x.size(0)); arguments no variant admits "
                                  "run on the interpreter\n"));
  EXPECT_EQ(r.output.find("warning"), r.output.rfind("warning"));  // once
  for (int k : {1, 2}) {
    Tensor t =
        *ReadNpy(TestTmpPath(absl::StrCat("limit_out/", k, "/out0.npy")));
    EXPECT_EQ(t.ToString(), "f32[1, 32][32, 1]cpu");
    EXPECT_EQ(t.GetDouble({0, 31}), 2.0);  // relu(16 * 0.125)
  }
  LathecResult bad = RunLathec({"run", args[1], "--max-compiles", "0", "--out",
                                TestTmpPath("limit_bad")});
  EXPECT_EQ(bad.output,
            "lathec: --max-compiles expects a number from 1 to 1000\n");
}

// The cuda backend through lathec on the emulated device: `run --backend
// cuda` copies the inputs to the device and the results and the updated
// parameter back, as the interpreter's run writes them; `compile --backend
// cuda --cuda-arch sm_80,sm_90` writes the kernels for both architectures,
// their PTX and the emulated device's library, and `run --artifact` (the
// runtime alone) calls it on the device; without a device the artifact is
// refused in one line.
TEST(LathecCudaTest, RunAndArtifactOnTheEmulatedDevice) {
  const std::string graph = RunfilePath("ir/testdata/graphs/09_sgd_step.txt");
  std::vector<std::string> inputs = {
      "--input", "param=" + Save("cu_param.npy", Filled({16, 32}, 1.0)),
      "--input", "grad=" + Save("cu_grad.npy", Filled({16, 32}, 2.0)),
      "--input", "lr=" + Save("cu_lr.npy", Filled({}, 0.25, DType::kFloat64))};
  auto run = [&](std::vector<std::string> head, const std::string& out) {
    head.insert(head.end(), inputs.begin(), inputs.end());
    head.insert(head.end(), {"--out", TestTmpPath(out)});
    return RunLathec(head);
  };
  LathecResult want = run({"run", graph}, "cu_interp");
  ASSERT_EQ(want.status, 0) << want.output;
  setenv("LATHE_CUDA_DEVICE", "emulated", 1);
  LathecResult got = run({"run", graph, "--backend", "cuda"}, "cu_run");
  ASSERT_EQ(got.status, 0) << got.output;
  EXPECT_THAT(got.output, HasSubstr("cuda backend: "));
  const std::string dir = TestTmpPath("cu_artifact");
  LathecResult c = RunLathec({"compile", graph, "-o", dir, "--backend", "cuda",
                              "--cuda-arch", "sm_80,sm_90"});
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_THAT(c.output,
              HasSubstr("kernel.cc, kernels.emulated.so, kernels.ptx, "
                        "kernels.sm_80.cubin, kernels.sm_90.cubin, "
                        "manifest.txt"));
  LathecResult a = run({"run", "--artifact", dir}, "cu_art");
  ASSERT_EQ(a.status, 0) << a.output;
  for (const std::string file : {"out0.npy", "mutated/param.npy"}) {
    Tensor w = *ReadNpy(TestTmpPath("cu_interp/" + file));
    for (const std::string d : {"cu_run/", "cu_art/"}) {
      Tensor g = *ReadNpy(TestTmpPath(d + file));
      EXPECT_EQ(g.ToString(), w.ToString()) << d << file;
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> i) {
        EXPECT_EQ(g.GetDouble(i), w.GetDouble(i)) << d << file;
      });
    }
  }
  unsetenv("LATHE_CUDA_DEVICE");
  LathecResult none = run({"run", "--artifact", dir}, "cu_none");
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.output, HasSubstr("no CUDA device"));
  EXPECT_EQ(std::count(none.output.begin(), none.output.end(), '\n'), 1);
  EXPECT_FALSE(PathExists(TestTmpPath("cu_none")));
}

// Past --max-compiles the arguments no variant admits run on the
// interpreter, which reads host memory: with the cuda backend that is one
// line naming the device, never device memory read on the host.
TEST(LathecCudaTest, TheInterpreterFallbackRefusesDeviceTensors) {
  const std::string graph = TestTmpPath("cu_dynamic.txt");
  {
    std::ofstream g(graph);
    g << "def forward(self, x: \"f32[s0]\"):\n"
         "    neg = torch.ops.aten.neg.default(x)\n"
         "    return (neg,)\n";
  }
  for (int64_t n : {5, 1}) {
    std::string dir = TestTmpPath(absl::StrCat("cu_n", n));
    mkdir(dir.c_str(), 0755);
    ASSERT_OK(WriteNpy(dir + "/x.npy", Filled({n}, 1.0)));
  }
  setenv("LATHE_CUDA_DEVICE", "emulated", 1);
  LathecResult r =
      RunLathec({"run", graph, "--backend", "cuda", "--max-compiles", "1",
                 "--inputs", TestTmpPath("cu_n5"), "--inputs",
                 TestTmpPath("cu_n1"), "--out", TestTmpPath("cu_fallback")});
  unsetenv("LATHE_CUDA_DEVICE");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              HasSubstr("argument 0 is on cuda:0: the interpreter, which runs "
                        "the arguments no compiled variant admits, needs host "
                        "tensors (allow more compiles)\n"));
  EXPECT_FALSE(PathExists(TestTmpPath("cu_fallback")));
}

// `lathec compile` writes an artifact that `lathec run --artifact` (another
// process, the runtime alone) calls: the same results as the in-process cpu
// run and the interpreter, other batch sizes through its guards, and a
// size of 1 (specialized) refused with the guard named, since nothing there
// can compile.
TEST(LathecArtifactTest, CompileThenRunTheArtifact) {
  const std::string graph =
      RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string w = Save("art_w.npy", Filled({16, 32}, 0.25));
  std::string x = Save("art_x.npy", Filled({4, 16}, 0.5));
  std::string dir = TestTmpPath("mlp_artifact");
  LathecResult c = RunLathec(
      {"compile", graph, "-o", dir, "--input", "x=" + x, "--input", "w=" + w});
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_THAT(c.output, StartsWith(absl::StrCat(dir, ": kernel.so (")));
  // The dynamic batch's range guard (2 <= x.size(0)) reads its bounds from
  // guard_bounds.txt.
  EXPECT_THAT(c.output, HasSubstr("kernel.cc, guard_bounds.txt, manifest.txt "
                                  "(2 arguments, 1 results, "));
  EXPECT_EQ(ReadText(dir + "/guard_bounds.txt"), "2 9223372036854775807\n");
  std::string manifest = ReadText(dir + "/manifest.txt");
  EXPECT_THAT(manifest, StartsWith("lathe-artifact 1\n"));
  EXPECT_THAT(manifest, HasSubstr("argument x placeholder tensor f32 cpu 2 "
                                  "f32[s0, 16][16, 1]cpu\n"));
  EXPECT_THAT(manifest, HasSubstr("guard 2 <= x.size(0)\n"));
  EXPECT_TRUE(PathExists(dir + "/kernel.cc"));
  for (int64_t rows : {4, 7}) {
    std::string xr =
        Save(absl::StrCat("art_x", rows, ".npy"), Filled({rows, 16}, 0.5));
    std::string out = TestTmpPath(absl::StrCat("art_out", rows));
    LathecResult r = RunLathec({"run", "--artifact", dir, "--input", "x=" + xr,
                                "--input", "w=" + w, "--out", out});
    ASSERT_EQ(r.status, 0) << r.output;
    Tensor t = *ReadNpy(out + "/out0.npy");
    EXPECT_EQ(t.ToString(), absl::StrCat("f32[", rows, ", 32][32, 1]cpu"));
    for (const char* backend : {"interp", "cpu"}) {
      std::string ref = TestTmpPath(absl::StrCat("art_ref", rows, backend));
      LathecResult i =
          RunLathec({"run", graph, "--input", "x=" + xr, "--input", "w=" + w,
                     "--backend", backend, "--out", ref});
      ASSERT_EQ(i.status, 0) << i.output;
      Tensor want = *ReadNpy(ref + "/out0.npy");
      EXPECT_EQ(want.GetDouble({rows - 1, 31}), 2.0);  // relu(16 * 0.125)
      for (int64_t k = 0; k < t.numel(); ++k) {
        ASSERT_EQ(t.data<float>()[k], want.data<float>()[k]) << backend << k;
      }
    }
  }
  std::string one = Save("art_x1.npy", Filled({1, 16}, 0.5));
  LathecResult r =
      RunLathec({"run", "--artifact", dir, "--input", "x=" + one, "--input",
                 "w=" + w, "--out", TestTmpPath("art_out1")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "lathec: no compiled variant admits the arguments (guard failed: "
            "2 <= x.size(0)), and no compile callback\n");
  EXPECT_FALSE(PathExists(TestTmpPath("art_out1")));
  // A wrong dtype is named, and nothing is written.
  std::string xd = Save("art_xd.npy", Filled({4, 16}, 0.5, DType::kFloat64));
  r = RunLathec({"run", "--artifact", dir, "--input", "x=" + xd, "--input",
                 "w=" + w, "--out", TestTmpPath("art_outd")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "lathec: argument 0 (x): expected f32 tensor of rank 2 on cpu, got "
            "f64[4, 16][16, 1]cpu\n");
  r = RunLathec({"run", "--artifact", dir, "--input", "y=" + xd, "--out",
                 TestTmpPath("art_outd")});
  EXPECT_EQ(r.output, "lathec: the artifact has no input named 'y'\n");
}

TEST(LathecArtifactTest, ADamagedArtifactIsNamed) {
  const std::string graph =
      RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string w = Save("dmg_w.npy", Filled({16, 32}, 0.25));
  std::string x = Save("dmg_x.npy", Filled({4, 16}, 0.5));
  std::string dir = TestTmpPath("damaged_artifact");
  LathecResult c = RunLathec(
      {"compile", graph, "-o", dir, "--input", "x=" + x, "--input", "w=" + w});
  ASSERT_EQ(c.status, 0) << c.output;
  std::string source = ReadText(dir + "/kernel.cc");
  ASSERT_OK(WriteFileAtomic(dir + "/kernel.cc", source + "// edited\n"));
  LathecResult r =
      RunLathec({"run", "--artifact", dir, "--input", "x=" + x, "--input",
                 "w=" + w, "--out", TestTmpPath("dmg_out")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.output,
      absl::StrCat("lathec: ", dir, "/kernel.cc: damaged: ", source.size() + 10,
                   " bytes, the manifest says ", source.size(), "\n"));
  r = RunLathec({"run", "--artifact", TestTmpPath("no_such_artifact"),
                 "--input", "x=" + x, "--out", TestTmpPath("dmg_out")});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("no_such_artifact/manifest.txt"));
  EXPECT_FALSE(PathExists(TestTmpPath("dmg_out")));
}

// neg of a pair of pairs: its result is nested two composites deep.
constexpr char kNestedPairs[] = R"(# lathe: composite x pair(pair, pair)
def forward(self, x: "f32[4][1]cpu"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)";

// What `run --artifact` cannot read is one clear line, and nothing is
// written: a missing input, a scalar given as a tensor.
TEST(LathecArtifactTest, InputsTheArtifactCannotTakeAreNamed) {
  LathecResult c, r;
  const std::string scalars =
      RunfilePath("ir/testdata/graphs/15_scalar_inputs.txt");
  std::string x = Save("sc_x.npy", Filled({8}, 1.0));
  std::string n = Save("sc_n.npy", Filled({}, 3.0, DType::kInt64));
  std::string scale = Save("sc_scale.npy", Filled({}, 0.5, DType::kFloat64));
  std::string sdir = TestTmpPath("scalar_artifact");
  c = RunLathec({"compile", scalars, "-o", sdir, "--input", "x=" + x, "--input",
                 "n=" + n, "--input", "scale=" + scale});
  ASSERT_EQ(c.status, 0) << c.output;
  r = RunLathec({"run", "--artifact", sdir, "--input", "x=" + x, "--input",
                 "n=" + n, "--out", TestTmpPath("scalar_out")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, "lathec: missing input 'scale'\n");
  r = RunLathec({"run", "--artifact", sdir, "--input", "x=" + x, "--input",
                 "n=" + n, "--input", "scale=" + x, "--out",
                 TestTmpPath("scalar_out")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, absl::StrCat("lathec: ", x,
                                   ": input 'scale' is a scalar and needs a "
                                   "0-d .npy, got f32[8][1]cpu\n"));
  EXPECT_FALSE(PathExists(TestTmpPath("scalar_out")));
  // With the scalars given right, it runs.
  r = RunLathec({"run", "--artifact", sdir, "--input", "x=" + x, "--input",
                 "n=" + n, "--input", "scale=" + scale, "--out",
                 TestTmpPath("scalar_out")});
  EXPECT_EQ(r.status, 0) << r.output;
}

// The manifest describes a nested composite argument's whole tree, so a
// program with the runtime alone arranges it from its four leaves and calls
// the artifact: neg of pair(pair(1, 2), pair(3, 4)) element by element.
TEST(LathecArtifactTest, ANestedCompositeArgumentIsArrangedByTheRuntime) {
  std::string nested = WriteTestFile("nested_args.txt", kNestedPairs);
  std::string dir = TestTmpPath("nested_args_artifact");
  LathecResult c = RunLathec({"compile", nested, "-o", dir});
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_THAT(
      ReadText(dir + "/manifest.txt"),
      HasSubstr("argument x placeholder composite:pair f32 cpu 1 "
                "f32[4][1]cpu\ncomposite 0 pair(pair(1,1),pair(1,1))\n"));
  ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir));
  absl::flat_hash_map<std::string, Tensor> leaves;
  const char* names[] = {"x_a_a", "x_a_b", "x_b_a", "x_b_b"};
  for (int k = 0; k < 4; ++k) leaves[names[k]] = Filled({4}, k + 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args,
                       ArrangeArguments(a.manifest, leaves));
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                       a.function->Call(absl::MakeSpan(args)));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].ToString(),
            "pair(pair(f32[4][1]cpu, f32[4][1]cpu), pair(f32[4][1]cpu, "
            "f32[4][1]cpu))");
  for (int k = 0; k < 4; ++k) {
    const Operand& half = out[0].composite->inner[k / 2];
    EXPECT_EQ(half.composite->inner[k % 2].tensor.GetDouble({3}), -(k + 1));
  }
  leaves.erase("x_b_a");
  EXPECT_THAT(
      ArrangeArguments(a.manifest, leaves),
      StatusIs(absl::StatusCode::kInvalidArgument, "missing input 'x_b_a'"));
}

// `run --artifact` writes a result nested two composites deep as lathec
// run on the graph does: one file per leaf, named down the tree, each the
// negated leaf (on the interpreter and from the artifact alike). A manifest
// whose result names a type this program does not register is one line
// naming the result, and nothing is written.
TEST(LathecArtifactTest, NestedCompositeResultsAreWrittenFromAnArtifact) {
  std::string nested = WriteTestFile("nested_results.txt", kNestedPairs);
  std::string dir = TestTmpPath("nested_results_artifact");
  LathecResult c = RunLathec({"compile", nested, "-o", dir});
  ASSERT_EQ(c.status, 0) << c.output;
  const char* names[] = {"x_a_a", "x_a_b", "x_b_a", "x_b_b"};
  std::vector<std::string> inputs;
  for (int k = 0; k < 4; ++k) {
    inputs.push_back("--input");
    inputs.push_back(absl::StrCat(
        names[k], "=",
        Save(absl::StrCat("nr_", names[k], ".npy"), Filled({4}, k + 1))));
  }
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.end(), inputs.begin(), inputs.end());
    return RunLathec(args);
  };
  const std::string from_graph = TestTmpPath("nested_results_graph");
  const std::string from_artifact = TestTmpPath("nested_results_out");
  LathecResult g = run({"run", nested, "--out", from_graph});
  ASSERT_EQ(g.status, 0) << g.output;
  LathecResult r = run({"run", "--artifact", dir, "--out", from_artifact});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output,
            "out0_a_a.npy: f32[4][1]cpu\nout0_a_b.npy: f32[4][1]cpu\n"
            "out0_b_a.npy: f32[4][1]cpu\nout0_b_b.npy: f32[4][1]cpu\n");
  for (int k = 0; k < 4; ++k) {
    const std::string file = absl::StrCat("/out0", names[k] + 1, ".npy");
    for (const std::string& out : {from_graph, from_artifact}) {
      absl::StatusOr<Tensor> t = ReadNpy(out + file);
      ASSERT_OK(t.status()) << out << file;
      for (int64_t i = 0; i < 4; ++i) {
        EXPECT_EQ(t->GetDouble({i}), -(k + 1)) << out << file;
      }
    }
  }

  std::string manifest = ReadText(dir + "/manifest.txt");
  const std::string line = "result pair(pair(1,1),pair(1,1))";
  ASSERT_THAT(manifest, HasSubstr(line));
  manifest.replace(manifest.find(line), line.size(),
                   "result pair(pair(1,1),blob(1,1))");
  std::filesystem::remove(dir + "/manifest.txt");
  std::ofstream(dir + "/manifest.txt") << manifest;
  const std::string refused = TestTmpPath("nested_results_refused");
  r = run({"run", "--artifact", dir, "--out", refused});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              AllOf(StartsWith("lathec: "), HasSubstr("manifest.txt: line "),
                    EndsWith(": layout 'pair(pair(1,1),blob(1,1))': composite "
                             "type 'blob' is not registered in this "
                             "program\n")));
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1);
  EXPECT_FALSE(PathExists(refused));
  // A leaf's rank edited: the compiled code would write a rank-1 result's
  // size and stride into arrays of rank 0. The library says its ranks.
  manifest.replace(manifest.find("blob(1,1)"), 9, "pair(1,0)");
  std::filesystem::remove(dir + "/manifest.txt");
  std::ofstream(dir + "/manifest.txt") << manifest;
  r = run({"run", "--artifact", dir, "--out", refused});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              AllOf(StartsWith("lathec: "),
                    HasSubstr("kernel.so: its results have ranks [1, 1, 1, "
                              "1], the signature says [1, 1, 1, 0] (a "
                              "manifest that is not the library's?)\n")));
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1);
  EXPECT_FALSE(PathExists(refused));
}

TEST(LathecArtifactTest, GuardsPrintsTheSetAndItsCpp) {
  const std::string graph =
      RunfilePath("ir/testdata/graphs/02_mlp_dynamic.txt");
  std::string w = Save("g_w.npy", Filled({16, 32}, 0.25));
  std::string x = Save("g_x.npy", Filled({4, 16}, 0.5));
  LathecResult r =
      RunLathec({"guards", graph, "--input", "x=" + x, "--input", "w=" + w});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("  7: 2 <= x.size(0)\n"));
  EXPECT_THAT(r.output,
              HasSubstr("int lathe_guards(\n    const LatheValue* in, "
                        "int64_t num_inputs, const int64_t* bounds) {\n"));
  // The range guard reads its bounds (2 and INT64_MAX) as data.
  EXPECT_THAT(r.output, HasSubstr("bounds the range guards' bounds: {2, "
                                  "9223372036854775807}"));
  EXPECT_THAT(r.output,
              HasSubstr("if (!(bounds[0] <= in[0].sizes[0] && in[0].sizes[0] "
                        "<= bounds[1])) return 7;"));
  // With a size of 1 as the example, the guard is the specialization.
  std::string one = Save("g_x1.npy", Filled({1, 16}, 0.5));
  r = RunLathec({"guards", graph, "--input", "x=" + one, "--input", "w=" + w});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("x.size(0) == 1"));
}

}  // namespace
}  // namespace lathe
