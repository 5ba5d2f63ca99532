// libFuzzer target for `lathec run` end to end: the input is graph text;
// the target writes it to a fresh directory with inputs made from its
// annotations (every placeholder, composite leaf and constant; symbolic
// sizes take 2 or 3), runs LathecRun under a 64 MiB memory limit, and
// removes everything. Any input must give a result or one clean error:
// never a crash, a sanitizer report or a hang. The input size is not
// capped, so deep nesting is reached.
//
//   bazel build --config=fuzz //tools:lathec_fuzzer
//   bazel-bin/tools/lathec_fuzzer -close_fd_mask=1 -max_total_time=600
//       <copy of ir/testdata/graphs>    (one command line)

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/graph_text.h"
#include "runtime/file_io.h"
#include "tools/lathec_run.h"
#include "tools/testing/annotated_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lathe;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string base = absl::StrCat(tmp ? tmp : "/tmp", "/lathec_fuzz_XXXXXX");
  std::vector<char> name(base.begin(), base.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) return 0;
  std::string dir = name.data();
  std::string inputs = dir + "/inputs";
  mkdir(inputs.c_str(), 0755);
  std::ofstream(dir + "/graph.txt", std::ios::binary) << text;
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (g.ok()) {
    // Symbolic sizes take 2 or 3, by name.
    testing::WriteAnnotatedInputs(**g, inputs, [](absl::string_view name) {
      return 2 + static_cast<int64_t>(name.size() % 2);
    }).IgnoreError();
  }
  LathecRun({dir + "/graph.txt", "--inputs", inputs, "--out", dir + "/out",
             "--max-memory", "64M"})
      .IgnoreError();
  RemoveTree(dir).IgnoreError();
  return 0;
}
