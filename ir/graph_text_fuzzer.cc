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
  absl::StatusOr<lathe::ir::ParsedGraph> g =
      lathe::ir::ParseGraphWithStyle(text);
  if (!g.ok()) return 0;
  if (!g->graph->CheckStructure().ok()) std::abort();
  // Both in the text's own style and in print_readable()'s.
  for (bool styled : {true, false}) {
    lathe::ir::PrintOptions options =
        styled ? g->style : lathe::ir::PrintOptions();
    std::string printed = lathe::ir::PrintGraph(*g->graph, options);
    absl::StatusOr<lathe::ir::ParsedGraph> again =
        lathe::ir::ParseGraphWithStyle(printed);
    if (!again.ok() ||
        lathe::ir::PrintGraph(*again->graph, again->style) != printed) {
      std::abort();
    }
  }
  return 0;
}
