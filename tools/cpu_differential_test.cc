// Differential test of the cpu backend (codegen/): random eager programs
// (ir/random_graph.h: views, in-place ops, broadcasting, a
// dynamic dimension, a float scalar input) compiled through the whole walk,
// lowered, scheduled, emitted as C++, built with the system compiler and
// run natively — then the runtime-wrapper plan — against the interpreter
// running the original program (eager semantics). Floats within 1e-5
// relative (f32 computed in f32, where the interpreter computes in double),
// integers and bools exactly; inputs the program mutates too. A dynamic
// program is replayed at several sizes through its one compile.

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_function.h"
#include "driver/compile.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/random_graph.h"
#include "ir/shape_prop.h"
#include "runtime/compile_cache.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"
#include "testing/runfiles.h"
#include "testing/sample.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

bool RejectedByAot(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (!g.ok()) return false;
  symbolic::ShapeEnv env;
  absl::Status s = ir::PropagateShapes(**g, env);
  if (s.ok()) s = aot::AotDispatch(**g, env).status();
  return !s.ok();
}

void ExpectClose(const Tensor& got, const Tensor& want,
                 const std::string& what) {
  testing::ExpectTensorsClose(got, want, 1e-5, what);
}

// The programs run in this many chunks (round-robin over the generator's
// sequence, which every chunk walks whole), each its own gtest case, so
// Bazel's shards spread them.
constexpr int kChunks = 4;

class CpuDifferentialTest : public ::testing::TestWithParam<int> {};

TEST_P(CpuDifferentialTest, RandomProgramsCompiledNativelyMatchEager) {
  testing::UseTestCompileCache();
  ASSERT_OK_AND_ASSIGN(CacheBackend * cache, DefaultCompileCache());
  std::mt19937 rng(20261123);
  constexpr int kPrograms = 300;
  int kernels = 0, unfused = 0, native = 0, planned = 0, sampled = 0;
  std::map<std::string, int> unsupported;
  for (int trial = 0; trial < kPrograms; ++trial) {
    testing::RandomGraphOptions options;
    options.lines = 8;
    options.dynamic = trial % 3 == 1;
    options.scalars = trial % 2 == 0;
    options.reject = RejectedByAot;
    testing::RandomProgram program = testing::RandomGraph(rng, options);
    // This chunk's share; under the sanitizers a fixed sample of it.
    if (!testing::InChunk(trial, GetParam(), kChunks)) continue;
    ++sampled;
    SCOPED_TRACE(absl::StrCat("trial ", trial, ":\n", program.text));
    // Through lathec's compile cache (in TEST_TMPDIR), so the prelude is
    // precompiled once, as for a user.
    absl::StatusOr<std::unique_ptr<CompiledGraph>> compiled = CompileGraphText(
        program.text,
        {.source = "g", .backend = &codegen::CpuBackend(), .cache = cache});
    constexpr absl::string_view kBackend = "g: cpu backend: ";
    if (absl::IsUnimplemented(compiled.status()) &&
        absl::StartsWith(compiled.status().message(), kBackend)) {
      // Not lowered yet (the lowering table's gaps): counted, not compared.
      ++unsupported[std::string(
          compiled.status().message().substr(kBackend.size(), 60))];
      continue;
    }
    ASSERT_OK(compiled.status());
    const CompiledGraph* c = compiled->get();
    const codegen::CpuFunction* f = c->function.get();
    ++native;
    planned += f->plan_applied();
    kernels += f->stats().kernels;
    unfused += f->stats().kernels_unfused;
    aot::GraphRunner runner = [&f](const ir::Graph&,
                                   const std::vector<ir::Value>& inputs,
                                   const auto&) { return f->Run(inputs); };
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> original,
                         ir::ParseGraph(program.text));
    for (double lr : {0.5, 0.25}) {
      std::vector<ir::Value> a = program.Inputs(lr), b = program.Inputs(lr);
      const std::vector<ir::Value> b_original = b;
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                           ir::Interpret(*original, a));
      // The plan inside the .so when its C form says it; else after it.
      ASSERT_OK_AND_ASSIGN(
          ir::Interpretation got,
          f->plan_applied()
              ? f->RunWithPlan(b)
              : aot::InterpretWithPlan(*c->graph, c->aot.plan, b, {}, runner));
      ASSERT_EQ(got.outputs.size(), want.outputs.size());
      std::string context =
          absl::StrCat(ir::PrintGraph(*c->graph), "\n", f->scheduled());
      for (size_t i = 0; i < want.outputs.size(); ++i) {
        ExpectClose(got.outputs[i].tensor, want.outputs[i].tensor,
                    absl::StrCat("output ", i, " lr ", lr, "\n", context));
      }
      for (size_t k = 0; k < a.size(); ++k) {
        if (!a[k].is_tensor()) continue;
        ExpectClose(b_original[k].tensor, a[k].tensor,
                    absl::StrCat("input ", k, " lr ", lr, "\n", context));
      }
    }
  }
  std::printf(
      "chunk %d: %d programs: %d compiled natively and compared (%d kernels "
      "after fusion, %d before; %d with the runtime wrapper plan inside the "
      ".so); not lowered yet:\n",
      GetParam(), sampled, native, kernels, unfused, planned);
  for (const auto& [why, n] : unsupported)
    std::printf("  %4d  %s\n", n, why.c_str());
  // Every program compiles (the acceptance: 300 compared per run, over
  // the chunks); a gap is listed above.
  EXPECT_EQ(native, sampled);
  EXPECT_GE(sampled, kPrograms / kChunks / testing::SampleStride());
  // Every plan the generator makes has a C form.
  EXPECT_EQ(planned, native);
}

INSTANTIATE_TEST_SUITE_P(Chunks, CpuDifferentialTest,
                         ::testing::Range(0, kChunks));

}  // namespace
}  // namespace lathe
