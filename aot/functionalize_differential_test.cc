// Differential test: random graphs that take views of inputs and
// intermediates and mutate them in place (data, t_/unsqueeze_, set_), under
// no_grad as inference runs. Each must give the plain interpreter's outputs
// and input updates bit for bit twice: functionalized (epilogue in the
// graph) and run by the interpreter; and through AotDispatch, the functional
// graph interpreted and then the RuntimeWrapperPlan (mutations kept in the
// graph or all applied by the plan, alternately), where outputs must also
// alias the inputs they alias in eager.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aot/aot_dispatch.h"
#include "aot/functionalize.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/random_graph.h"
#include "ir/shape_prop.h"
#include "runtime/tensor.h"
#include "testing/sample.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

absl::StatusOr<ir::Interpretation> RunText(const std::string& text,
                                           std::vector<ir::Value> inputs) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (!g.ok()) return g.status();
  return ir::Interpret(**g, std::move(inputs));
}

// Whether AOT rejects `text` as PyTorch would (a write to a storage set_
// left behind): not a program to compare.
bool RejectedByAot(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  symbolic::ShapeEnv env;
  return g.ok() && ir::PropagateShapes(**g, env).ok() &&
         AotDispatch(**g, env).status().code() ==
             absl::StatusCode::kInvalidArgument;
}

int rejected_by_aot = 0;  // candidate lines, over the whole run

// A random view-and-mutation program (ir/random_graph.h) that
// AOT accepts.
testing::RandomProgram RandomGraph(std::mt19937& rng, int lines) {
  testing::RandomGraphOptions options;
  options.lines = lines;
  // Only set_ can make AOT reject a program.
  options.reject = [](const std::string& text) {
    bool rejected =
        text.find("set_.source") != std::string::npos && RejectedByAot(text);
    rejected_by_aot += rejected;
    return rejected;
  };
  return testing::RandomGraph(rng, options);
}

TEST(FunctionalizeDifferentialTest, RandomViewAndMutationGraphsMatchEager) {
  std::mt19937 rng(20261121);
  int mutating = 0;
  for (int trial = 0; trial < 500; ++trial) {
    testing::RandomProgram program = RandomGraph(rng, 10);
    // Under the sanitizers a fixed sample of the same programs.
    if (!testing::InSample(trial)) continue;
    const std::string& text = program.text;
    SCOPED_TRACE(absl::StrCat("trial ", trial, ":\n", text));
    std::vector<ir::Value> a = program.Inputs(), b = program.Inputs();
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, RunText(text, a));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
    symbolic::ShapeEnv env;
    ASSERT_OK(ir::PropagateShapes(*g, env));
    ASSERT_OK_AND_ASSIGN(bool changed, Functionalize(*g, env));
    mutating += changed;
    absl::StatusOr<ir::Interpretation> got = ir::Interpret(*g, b);
    ASSERT_OK(got) << ir::PrintGraph(*g);
    ASSERT_EQ(got->outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      const Tensor &w = want.outputs[i].tensor, &o = got->outputs[i].tensor;
      ASSERT_EQ(w.sizes(), o.sizes()) << "output " << i;
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
        ASSERT_EQ(o.GetDouble(j), w.GetDouble(j)) << "output " << i << "\n"
                                                  << ir::PrintGraph(*g);
      });
    }
    for (size_t k = 0; k < a.size(); ++k) {
      ForEachIndex(a[k].tensor.sizes(), [&](absl::Span<const int64_t> j) {
        ASSERT_EQ(b[k].tensor.GetDouble(j), a[k].tensor.GetDouble(j))
            << "input " << k << "\n"
            << ir::PrintGraph(*g);
      });
    }
  }
  EXPECT_GT(mutating, 400 / testing::SampleStride());  // most really mutate
  EXPECT_LT(rejected_by_aot, 500);                     // frozen storage is rare
}

// Equal sizes and values, and strides too when `layout`.
void ExpectSameTensor(const Tensor& got, const Tensor& want,
                      const std::string& what, bool layout = true) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (layout) {
    ASSERT_EQ(got.strides(), want.strides()) << what;
  }
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> j) {
    ASSERT_EQ(got.GetDouble(j), want.GetDouble(j)) << what;
  });
}

TEST(FunctionalizeDifferentialTest, RandomGraphsThroughThePlanMatchEager) {
  std::mt19937 rng(20261122);
  int with_epilogue = 0;
  for (int trial = 0; trial < 500; ++trial) {
    testing::RandomProgram program = RandomGraph(rng, 10);
    // Under the sanitizers a fixed sample of the same programs.
    if (!testing::InSample(trial)) continue;
    const std::string& text = program.text;
    bool keep = trial % 2 == 0;
    SCOPED_TRACE(absl::StrCat("trial ", trial, " keep ", keep, ":\n", text));
    std::vector<ir::Value> a = program.Inputs(), b = program.Inputs();
    const std::vector<ir::Value> b_original = b;  // the caller's objects
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, RunText(text, a));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
    symbolic::ShapeEnv env;
    ASSERT_OK(ir::PropagateShapes(*g, env));
    AotOptions options;
    options.mutations.keep_input_mutations = keep;
    ASSERT_OK_AND_ASSIGN(AotGraph aot, AotDispatch(*g, env, options));
    with_epilogue += !aot.plan.epilogue().empty();
    absl::StatusOr<ir::Interpretation> got = InterpretWithPlan(*g, aot.plan, b);
    ASSERT_OK(got) << ir::PrintGraph(*g) << aot.plan.CppSource();
    ASSERT_EQ(got->outputs.size(), want.outputs.size());
    bool has_set = text.find("set_.source") != std::string::npos;
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      const Tensor &w = want.outputs[i].tensor, &o = got->outputs[i].tensor;
      // An output aliasing an input is that view of it, layout and all; a
      // fresh output may be laid out as the functional op made it.
      bool views_input = false;
      for (size_t k = 0; k < a.size(); ++k) {
        views_input = views_input || w.storage() == a[k].tensor.storage();
      }
      ExpectSameTensor(o, w,
                       absl::StrCat("output ", i, "\n", ir::PrintGraph(*g),
                                    aot.plan.CppSource()),
                       views_input && !has_set);
      // set_ may leave eager aliasing a storage the functional graph copied
      // (as in PyTorch); otherwise aliasing an input must be kept.
      for (size_t k = 0; k < a.size() && !has_set; ++k) {
        ASSERT_EQ(w.storage() == a[k].tensor.storage(),
                  o.storage() == b_original[k].tensor.storage())
            << "output " << i << " aliases input " << k << " in one only";
      }
    }
    // The inputs' original storages hold what eager left in them.
    for (size_t k = 0; k < a.size(); ++k) {
      ExpectSameTensor(b_original[k].tensor, a[k].tensor,
                       absl::StrCat("input ", k));
    }
  }
  EXPECT_GT(with_epilogue, 200 / testing::SampleStride());  // plans mutate
}

}  // namespace
}  // namespace lathe::aot
