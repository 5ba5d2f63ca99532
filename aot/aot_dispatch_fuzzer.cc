// libFuzzer target for AOT dispatch: any graph text either fails to parse,
// or AotDispatch gives one clean error, or it gives a functional graph (the
// invariant holds, the structure is sound) and plans that print as C++.
//
//   bazel build --config=fuzz //aot:aot_dispatch_fuzzer
//   bazel-bin/aot/aot_dispatch_fuzzer -max_total_time=60 <copy of
//       aot/testdata/aot_corpus and ir/testdata/graphs>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "aot/aot_dispatch.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "passes/functional_invariant.h"
#include "symbolic/shape_env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // keep each run short
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<lathe::ir::Graph>> g =
      lathe::ir::ParseGraph(text);
  if (!g.ok()) return 0;
  lathe::symbolic::ShapeEnv env;
  lathe::ir::ShapePropOptions options;
  for (const char* s : {"s0", "s1", "s2", "s3"}) {
    options.hints[s] = lathe::symbolic::Value::Int(5);
  }
  if (!lathe::ir::PropagateShapes(**g, env, options).ok()) return 0;
  absl::StatusOr<lathe::aot::AotGraph> aot = lathe::aot::AotDispatch(**g, env);
  if (!aot.ok()) return 0;
  if (!(*g)->CheckStructure().ok()) std::abort();
  if (!lathe::passes::CheckFunctional(**g).ok()) std::abort();
  if (aot->plan.CppSource().empty() || aot->subclass.CppSource().empty()) {
    std::abort();
  }
  return 0;
}
