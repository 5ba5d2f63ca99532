// The graph corpus (ir/testdata/graphs) and the AOT scenarios
// (aot/testdata/aot_corpus) compiled to native code: every graph runs
// through `lathec run --backend cpu` and through `lathec run` on the
// reference interpreter, on inputs made from its annotations, and the two
// must write the same files with the same values (floats within their
// dtype's tolerance, integers and bools exactly), mutated inputs included.
// Each graph is replayed at two sets of sizes through one compile, so a
// dynamic graph is checked at more than the size it was compiled for.
//
// A graph the interpreter itself refuses on these inputs (a data-dependent
// size, an index the made-up values put out of range) is listed, not
// compared; a graph a backend refused to compile (an op without a
// lowering) would be listed with lathec's message, and fails the test.
//
// The same corpora run through `lathec run --backend cuda --cuda-arch
// sm_80,sm_90` on the emulated CUDA device (LATHE_CUDA_DEVICE=emulated,
// unless the environment chose the GPU: tools/gpu/check.sh): every graph
// must match there too, and its kernels compile with NVRTC for both
// architectures. Neither backend may refuse a graph.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "driver/compile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "testing/runfiles.h"
#include "testing/sample.h"
#include "testing/status_matchers.h"
#include "tools/lathec_run.h"
#include "tools/testing/annotated_inputs.h"
#include "tools/testing/npy_tree.h"

namespace lathe {
namespace {

using ::lathe::testing::DirEntries;
using ::lathe::testing::RunfilePath;
using ::lathe::testing::TestTmpPath;

// The size a symbol takes in input set `set`: 2..4 in the first, 5..7 in
// the second, by the symbol's name (so s0 and s1 usually differ).
int64_t SymbolValue(int set, absl::string_view name) {
  uint64_t h = 0;  // unsigned: long names wrap instead of overflowing
  for (char c : name) h = h * 31 + static_cast<unsigned char>(c);
  return (set == 0 ? 2 : 5) + static_cast<int64_t>(h % 3);
}

// `file: message` without the test's long paths.
std::string Short(const std::string& file, const absl::Status& s,
                  const std::string& dir, const std::string& base) {
  std::string m =
      absl::StrReplaceAll(s.message(), {{dir + "/", ""}, {base, file}});
  return absl::StartsWith(m, file) ? m : absl::StrCat(file, ": ", m);
}

struct Outcome {
  int compared = 0;
  std::vector<std::string> not_graphs, interp_refused, backend_refused;
};

// Runs one graph file both ways (the interpreter and `backend`) and
// compares; failures are gtest failures.
void RunGraph(const std::string& backend, const std::string& dir,
              const std::string& file, Outcome* outcome) {
  std::string path = absl::StrCat(dir, "/", file);
  SCOPED_TRACE(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text.str());
  if (!g.ok()) {  // the fuzzers' corpus keeps malformed text too
    outcome->not_graphs.push_back(
        absl::StrCat(file, ": ", g.status().message()));
    return;
  }
  std::string base = TestTmpPath(absl::StrCat("corpus_", backend, "/", file));
  std::vector<std::string> args = {path};
  for (int set = 0; set < 2; ++set) {
    std::string inputs = absl::StrCat(base, "_in", set);
    std::error_code error;
    std::filesystem::create_directories(inputs, error);
    ASSERT_FALSE(error) << inputs << ": " << error.message();
    ASSERT_OK(testing::WriteAnnotatedInputs(
        **g, inputs, [set](absl::string_view s) { return SymbolValue(set, s); },
        set == 0 ? 0.5 : -1.25));
    args.insert(args.end(), {"--inputs", inputs});
  }
  std::vector<std::string> interp = args, compiled = args;
  interp.insert(interp.end(), {"--out", base + "_interp"});
  compiled.insert(compiled.end(),
                  {"--backend", backend, "--out", base + "_" + backend});
  // cuda: every kernel also through NVRTC for both architectures.
  if (backend == "cuda") {
    compiled.insert(compiled.end(), {"--cuda-arch", "sm_80,sm_90"});
  }
  absl::Status want = LathecRun(interp);
  if (!want.ok()) {
    outcome->interp_refused.push_back(Short(file, want, dir, base));
    return;
  }
  absl::Status got = LathecRun(compiled);
  if (absl::StrContains(got.message(),
                        absl::StrCat(": ", backend, " backend: "))) {
    outcome->backend_refused.push_back(Short(file, got, dir, base));
    return;
  }
  ASSERT_OK(got);
  std::string diff =
      testing::NpyTreeDiff(base + "_interp", base + "_" + backend);
  EXPECT_EQ(diff, "");
  if (diff.empty()) ++outcome->compared;
}

// The number of graphs that must compile and match; the goal is all.
constexpr int kGraphCorpusFloor = 24;
constexpr int kAotCorpusFloor = 55;

void RunCorpus(const std::string& backend, const std::string& name, int floor) {
  // lathec's compile cache (its precompiled preludes) in TEST_TMPDIR.
  testing::UseTestCompileCache();
  std::string dir = RunfilePath(name);
  Outcome outcome;
  int total = 0;
  // Under the sanitizers, a fixed sample (testing/sample.h).
  for (const std::string& file : DirEntries(dir)) {
    if (!absl::EndsWith(file, ".txt") || file == "README.txt") continue;
    if (testing::InSample(total++)) RunGraph(backend, dir, file, &outcome);
  }
  std::printf(
      "%s: %d of %d graphs compiled by the %s backend match the "
      "interpreter\n",
      name.c_str(), outcome.compared, total, backend.c_str());
  std::printf("  %zu are not graphs (kept as fuzz seeds):\n",
              outcome.not_graphs.size());
  for (const std::string& r : outcome.not_graphs) {
    std::printf("    %s\n", r.c_str());
  }
  std::printf("  the interpreter refuses %zu on made-up inputs:\n",
              outcome.interp_refused.size());
  for (const std::string& r : outcome.interp_refused) {
    std::printf("    %s\n", r.c_str());
  }
  std::printf("  the %s backend refuses %zu:\n", backend.c_str(),
              outcome.backend_refused.size());
  for (const std::string& r : outcome.backend_refused) {
    std::printf("    %s\n", r.c_str());
  }
  EXPECT_GE(total, 20);
  EXPECT_GE(outcome.compared, floor / testing::SampleStride());
  EXPECT_THAT(outcome.backend_refused, ::testing::IsEmpty());
}

TEST(CorpusCpuTest, GraphCorpusMatchesTheInterpreter) {
  RunCorpus("cpu", "ir/testdata/graphs", kGraphCorpusFloor);
}

TEST(CorpusCpuTest, AotScenariosMatchTheInterpreter) {
  RunCorpus("cpu", "aot/testdata/aot_corpus", kAotCorpusFloor);
}

TEST(CorpusCudaTest, GraphCorpusOnTheEmulatedDeviceMatches) {
  setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  RunCorpus("cuda", "ir/testdata/graphs", kGraphCorpusFloor);
}

TEST(CorpusCudaTest, AotScenariosOnTheEmulatedDeviceMatch) {
  setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  RunCorpus("cuda", "aot/testdata/aot_corpus", kAotCorpusFloor);
}

// The runtime wrapper plan and the composite wrapper of every AOT scenario
// the cpu backend lowers have a C form, so the whole user call runs inside
// the .so (lathe_call_user, wrapper_emitter.h), not on the host around it.
// (That those runs give the interpreter's results is the test above:
// lathec calls lathe_call_user whenever the .so has one.)
TEST(CorpusCpuTest, EveryAotPlanRunsInsideTheSo) {
  std::string dir = RunfilePath("aot/testdata/aot_corpus");
  int lowered = 0;
  std::vector<std::string> on_host;
  for (const std::string& file : DirEntries(dir)) {
    std::ifstream in(absl::StrCat(dir, "/", file));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::unique_ptr<CompiledGraph>> c =
        CompileGraphText(text.str(), {.source = file});
    if (!c.ok()) continue;  // refused before the backend (listed above)
    absl::StatusOr<codegen::LoweredGraph> g =
        codegen::Lower(*(*c)->graph, *(*c)->env);
    if (!g.ok() || !codegen::Schedule(*g).ok()) continue;
    absl::StatusOr<codegen::WrapperSource> w = codegen::EmitWrapper(
        *g, ir::InputSlots(*(*c)->graph),
        {.plan = &(*c)->aot.plan, .subclass = &(*c)->aot.subclass});
    ASSERT_OK(w.status()) << file;
    ++lowered;
    if (!w->plan_applied) {
      on_host.push_back(absl::StrCat(file, ": ", w->plan_error));
    } else if (!w->user_entry) {
      on_host.push_back(absl::StrCat(file, ": ", w->user_entry_error));
    }
  }
  std::printf(
      "%d AOT scenarios lowered; the plan or the composite wrapper runs on "
      "the host for %zu:\n",
      lowered, on_host.size());
  for (const std::string& s : on_host) std::printf("  %s\n", s.c_str());
  EXPECT_GE(lowered, kAotCorpusFloor);
  EXPECT_TRUE(on_host.empty());
}

}  // namespace
}  // namespace lathe
