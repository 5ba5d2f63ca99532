// Differential test of the whole walk before code generation: 1000 random
// programs (ir/random_graph.h: views, in-place ops, broadcasting,
// a dynamic dimension, a float scalar input) compiled by CompileGraphText —
// AOT dispatch and the default pass pipeline, with every invariant checked
// after every pass — then run as a compiled artifact runs (the optimized
// functional graph on the interpreter, then the runtime-wrapper plan). Each
// must give eager's outputs and input updates (integers bit for bit, floats
// within 1e-6 relative), keep eager's input/output aliasing, and, compiled
// once, serve a second value of the float scalar without recompiling.

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "driver/compile.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/random_graph.h"
#include "ir/shape_prop.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"
#include "testing/sample.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

// Candidate lines AOT dispatch refuses: a write to a storage set_ left
// behind (as PyTorch refuses), and — a known gap of functionalization with
// dynamic shapes, left for its own fix — a view of a mutated base whose
// regenerated layout is not contiguous symbolically.
int refused_frozen = 0, refused_dynamic_view = 0;

bool RejectedByAot(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (!g.ok()) return false;
  symbolic::ShapeEnv env;
  absl::Status s = ir::PropagateShapes(**g, env);
  if (s.ok()) s = aot::AotDispatch(**g, env).status();
  if (s.ok()) return false;
  if (absl::StrContains(s.message(), "frozen storage")) {
    ++refused_frozen;
    return true;
  }
  if (absl::StrContains(s.message(), "view size is not compatible") &&
      absl::StrContains(text, "s0")) {
    ++refused_dynamic_view;
    return true;
  }
  return false;
}

void ExpectClose(const Tensor& got, const Tensor& want,
                 const std::string& what) {
  testing::ExpectTensorsClose(got, want, 1e-6, what);
}

TEST(CompileDifferentialTest, RandomProgramsThroughTheWholeWalkMatchEager) {
  std::mt19937 rng(20261122);
  int specialized = 0;
  constexpr int kPrograms = 1000;
  for (int trial = 0; trial < kPrograms; ++trial) {
    testing::RandomGraphOptions options;
    options.lines = 8;
    options.dynamic = trial % 3 == 1;
    options.scalars = trial % 2 == 0;
    options.reject = [](const std::string& text) {
      return RejectedByAot(text);
    };
    testing::RandomProgram program = testing::RandomGraph(rng, options);
    // Under the sanitizers a fixed sample of the same programs.
    if (!testing::InSample(trial)) continue;
    SCOPED_TRACE(absl::StrCat("trial ", trial, ":\n", program.text));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                         CompileGraphText(program.text));
    specialized += !c->specialized.empty();
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> original,
                         ir::ParseGraph(program.text));
    for (double lr : {0.5, 0.25}) {
      std::vector<ir::Value> a = program.Inputs(lr), b = program.Inputs(lr);
      const std::vector<ir::Value> b_original = b;
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                           ir::Interpret(*original, a));
      ASSERT_OK_AND_ASSIGN(ir::Interpretation got,
                           aot::InterpretWithPlan(*c->graph, c->aot.plan, b));
      ASSERT_EQ(got.outputs.size(), want.outputs.size());
      bool has_set = program.text.find("set_.source") != std::string::npos;
      std::string graph = ir::PrintGraph(*c->graph);
      for (size_t i = 0; i < want.outputs.size(); ++i) {
        const Tensor &w = want.outputs[i].tensor, &o = got.outputs[i].tensor;
        ExpectClose(o, w, absl::StrCat("output ", i, " lr ", lr, "\n", graph));
        for (size_t k = 0; k < a.size() && !has_set; ++k) {
          if (!a[k].is_tensor()) continue;
          ASSERT_EQ(w.storage() == a[k].tensor.storage(),
                    o.storage() == b_original[k].tensor.storage())
              << "output " << i << " aliases input " << k << " in one only\n"
              << graph;
        }
      }
      for (size_t k = 0; k < a.size(); ++k) {
        if (!a[k].is_tensor()) continue;
        ExpectClose(b_original[k].tensor, a[k].tensor,
                    absl::StrCat("input ", k, " lr ", lr, "\n", graph));
      }
    }
  }
  // A float scalar is never specialized: every program takes a new lr.
  EXPECT_EQ(specialized, 0);
  std::printf("refused candidate lines: %d frozen storage, %d dynamic view\n",
              refused_frozen, refused_dynamic_view);
  EXPECT_LT(refused_dynamic_view, 200);
}

}  // namespace
}  // namespace lathe
