// libFuzzer target for the graph-text parser: any text gives a graph or one
// clean error; a parsed graph is structurally sound and prints to text that
// parses and prints identically.
//
//   bazel build --config=fuzz //ir:graph_text_fuzzer
//   bazel-bin/ir/graph_text_fuzzer -max_total_time=60 ir/testdata/graphs

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/graph_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<lathe::ir::Graph>> g =
      lathe::ir::ParseGraph(text);
  if (!g.ok()) return 0;
  if (!(*g)->CheckStructure().ok()) std::abort();
  std::string printed = lathe::ir::PrintGraph(**g);
  absl::StatusOr<std::unique_ptr<lathe::ir::Graph>> again =
      lathe::ir::ParseGraph(printed);
  if (!again.ok() || lathe::ir::PrintGraph(**again) != printed) std::abort();
  return 0;
}
