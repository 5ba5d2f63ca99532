// The torch corpus (ir/testdata/torch_corpus, captured by capture.py from
// PyTorch 2.15 itself): every case runs through `lathec run` — AotDispatch,
// the reference interpreter and the runtime-wrapper plan — and its outputs
// and mutated inputs must match eager PyTorch's: floats within the
// tolerance their dtype needs, integers and booleans exactly. With the cpu
// backend, every case is also compiled into an artifact and run from it by
// a separate process.
//
// A case is a directory: graph.txt (print_readable text as PyTorch printed
// it), inputs/NAME.npy (one per placeholder or constant) and expected/
// (out<k>.npy and mutated/NAME.npy, the layout lathec writes).

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/runfiles.h"
#include "testing/sample.h"
#include "tools/testing/npy_tree.h"

namespace lathe {
namespace {

using ::lathe::testing::DirEntries;
using ::lathe::testing::InChunk;
using ::lathe::testing::NpyTreeDiff;
using ::lathe::testing::RunfilePath;
using ::lathe::testing::TestTmpPath;

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct Result {
  int status;
  std::string output;
};

Result RunCommand(const std::string& cmd) {
  FILE* pipe = popen(absl::StrCat(cmd, " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

// The corpus runs in this many chunks (round-robin over the sorted cases),
// each its own gtest case, so Bazel's shards spread them; the sanitizer
// pass runs a fixed sample of each (testing/sample.h).
constexpr int kChunks = 8;

// Runs lathec on every case of chunk `chunk` whose name ends in one of
// `modes` (all when empty) with `extra` arguments; the number whose files
// match eager (a case that does not is a test failure). With `artifacts`,
// each case that matched is also compiled into an artifact (`lathec
// compile`) and run from it by another process (`lathec run --artifact`,
// the runtime alone): its files must be the run's, and eager's; the count
// of those that are is added there.
int RunCases(int chunk, const std::vector<std::string>& modes,
             const std::string& extra, std::map<std::string, int>* per_mode,
             size_t* total, int* artifacts = nullptr) {
  std::string root = RunfilePath("ir/testdata/torch_corpus");
  std::vector<std::string> all, cases;
  for (const std::string& e : DirEntries(root)) {
    if (IsDir(absl::StrCat(root, "/", e))) all.push_back(e);
  }
  std::sort(all.begin(), all.end());
  // The cases of `modes`, then the chunk's share of them.
  std::vector<std::string> of_modes;
  for (const std::string& e : all) {
    std::string mode = e.substr(e.rfind("__") + 2);
    if (modes.empty() ||
        std::find(modes.begin(), modes.end(), mode) != modes.end()) {
      of_modes.push_back(e);
    }
  }
  for (size_t i = 0; i < of_modes.size(); ++i) {
    if (InChunk(i, chunk, kChunks)) cases.push_back(of_modes[i]);
  }
  *total = cases.size();
  int passed = 0;
  for (const std::string& c : cases) {
    SCOPED_TRACE(c);
    std::string dir = absl::StrCat(root, "/", c);
    std::string out = TestTmpPath(absl::StrCat("corpus_", c));
    Result r = RunCommand(absl::StrCat(RunfilePath("tools/lathec"), " run '",
                                       dir, "/graph.txt' --inputs '", dir,
                                       "/inputs' --out '", out, "'", extra));
    if (r.status != 0) {
      ADD_FAILURE() << c << extra << ": " << r.output;
      continue;
    }
    std::string diff = NpyTreeDiff(dir + "/expected", out + "/0");
    EXPECT_EQ(diff, "") << c << extra;
    bool ok = diff.empty();
    if (ok && artifacts != nullptr) {
      std::string lathec = RunfilePath("tools/lathec");
      std::string art = TestTmpPath(absl::StrCat("artifact_", c));
      std::string from = TestTmpPath(absl::StrCat("from_artifact_", c));
      Result made = RunCommand(absl::StrCat(lathec, " compile '", dir,
                                            "/graph.txt' --inputs '", dir,
                                            "/inputs' -o '", art, "'"));
      Result run = made.status != 0
                       ? made
                       : RunCommand(absl::StrCat(
                             lathec, " run --artifact '", art, "' --inputs '",
                             dir, "/inputs' --out '", from, "'"));
      if (run.status != 0) {
        ADD_FAILURE() << c << " through an artifact: " << run.output;
      } else {
        std::string same = NpyTreeDiff(out, from);
        std::string eager = NpyTreeDiff(dir + "/expected", from + "/0");
        EXPECT_EQ(same, "") << c << " through an artifact";
        EXPECT_EQ(eager, "") << c << " through an artifact";
        if (same.empty() && eager.empty()) ++*artifacts;
      }
    }
    if (ok) {
      ++passed;
      if (per_mode != nullptr) ++(*per_mode)[c.substr(c.rfind("__") + 2)];
    }
  }
  return passed;
}

class TorchCorpusTest : public ::testing::TestWithParam<int> {};

// Every case through lathec's default pipeline.
TEST_P(TorchCorpusTest, EveryCaseMatchesEagerPyTorch) {
  std::map<std::string, int> per_mode;
  size_t total = 0;
  int passed = RunCases(GetParam(), {}, "", &per_mode, &total);
  EXPECT_GE(total, 1u);
  std::printf("chunk %d: %d of %zu torch corpus cases match eager PyTorch\n",
              GetParam(), passed, total);
  for (const auto& [mode, n] : per_mode) {
    std::printf("  %s: %d\n", mode.c_str(), n);
  }
}

// Every case compiled to native code (--backend cpu): each compiles (an op
// without a lowering is a failure naming it) and matches eager PyTorch,
// and through an artifact run by another process gives the same files.
TEST_P(TorchCorpusTest, CpuBackendMatchesEagerPyTorch) {
  std::map<std::string, int> per_mode;
  size_t total = 0;
  int artifacts = 0;
  int passed =
      RunCases(GetParam(), {}, " --backend cpu", &per_mode, &total, &artifacts);
  std::printf(
      "chunk %d: --backend cpu: %d of %zu torch corpus cases compile and "
      "match eager PyTorch; through artifacts run by another process: %d "
      "give the same files\n",
      GetParam(), passed, total, artifacts);
  EXPECT_GE(total, 1u);
  EXPECT_EQ(passed, static_cast<int>(total));
  EXPECT_EQ(artifacts, passed);
}

// Every case through --backend cuda on the emulated device (unless the
// environment chose a GPU: tools/gpu/check.sh): each compiles (a kernel
// the cuda emitter cannot write is a failure naming it) and matches eager
// PyTorch, as on the cpu backend.
TEST_P(TorchCorpusTest, CudaBackendMatchesEagerPyTorch) {
  // Under the sanitizers (which check lathe's host code, the same on every
  // chunk), chunk 0's sample alone: each case builds two libraries.
  if (::lathe::testing::SampleStride() > 1 && GetParam() != 0) {
    GTEST_SKIP() << "the sanitizer pass runs chunk 0's sample";
  }
  setenv("LATHE_CUDA_DEVICE", "emulated", 0);
  std::map<std::string, int> per_mode;
  size_t total = 0;
  int passed = RunCases(GetParam(), {}, " --backend cuda", &per_mode, &total);
  std::printf(
      "chunk %d: --backend cuda: %d of %zu torch corpus cases compile and "
      "match eager PyTorch\n",
      GetParam(), passed, total);
  EXPECT_GE(total, 1u);
  EXPECT_EQ(passed, static_cast<int>(total));
}

// Each pass alone (lathec --passes NAME, invariants checked after it) on
// the AOT-captured cases, and no pass at all.
TEST_P(TorchCorpusTest, EachPassAloneMatchesEagerPyTorch) {
  std::vector<std::string> names = {
      "none", "tensorify_scalars", "decompose",       "cse",
      "dce",  "constant_fold",     "remove_noop_ops", "reinplace"};
  for (const std::string& name : names) {
    size_t total = 0;
    int passed = RunCases(GetParam(), {"aot", "aot_dyn"}, " --passes " + name,
                          nullptr, &total);
    std::printf("chunk %d: --passes %s: %d of %zu cases match eager PyTorch\n",
                GetParam(), name.c_str(), passed, total);
  }
}

// The corpus holds every case capture.py made (a case lost from the data
// would otherwise just not run).
TEST(TorchCorpusSizeTest, HoldsEveryCapturedCase) {
  std::string root = RunfilePath("ir/testdata/torch_corpus");
  size_t cases = 0;
  for (const std::string& e : DirEntries(root)) {
    if (IsDir(absl::StrCat(root, "/", e))) ++cases;
  }
  EXPECT_GE(cases, 597u);
}

INSTANTIATE_TEST_SUITE_P(Chunks, TorchCorpusTest, ::testing::Range(0, kChunks));

}  // namespace
}  // namespace lathe
