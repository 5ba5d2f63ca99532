#include "passes/decompose_testing.h"

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/decompose.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

// Random inputs for the placeholders of `graph` (a symbolic size is 5);
// with `specials`, some elements are NaN, +-inf and -0.0.
std::vector<ir::Value> RandomInputs(const ir::Graph& graph, std::mt19937& rng,
                                    bool specials) {
  std::vector<ir::Value> inputs;
  std::normal_distribution<double> normal(0.0, 2.0);
  std::uniform_int_distribution<int> small(-6, 6), pick(0, 9);
  for (const ir::Node* p : graph.Placeholders()) {
    const ir::TensorMeta& m = p->meta().tensor;
    std::vector<int64_t> sizes;
    for (const symbolic::Expr& s : m.sizes) {
      sizes.push_back(s.kind() == symbolic::ExprKind::kInteger ? s.int_value()
                                                               : 5);
    }
    Tensor t = *Tensor::Empty(sizes, m.dtype);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      double v;
      if (m.dtype == DType::kBool) {
        v = pick(rng) < 5;
      } else if (IsIntegral(m.dtype, false)) {
        v = small(rng);
      } else {
        v = normal(rng);
        if (specials) {
          int k = pick(rng);
          if (k == 0) v = std::nan("");
          if (k == 1) v = std::numeric_limits<double>::infinity();
          if (k == 2) v = -std::numeric_limits<double>::infinity();
          if (k == 3) v = -0.0;
        }
      }
      t.SetDouble(i, v);
    });
    inputs.push_back(ir::Value::OfTensor(t));
  }
  return inputs;
}

// The relative tolerance a decomposition may differ by in `dtype` (the
// reference kernels round once from double; decompositions round per op).
double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 4e-3;
    case DType::kBFloat16:
      return 3e-2;
    case DType::kFloat32:
      return 1e-5;
    case DType::kFloat64:
      return 1e-12;
    default:
      return 0;  // integers and bools: exact
  }
}

void ExpectClose(const Tensor& want, const Tensor& got,
                 const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  double tol = Tolerance(want.dtype());
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> i) {
    double w = want.GetDouble(i), g = got.GetDouble(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << what << ": want NaN, got " << g;
    } else if (std::isinf(w) || tol == 0) {
      EXPECT_EQ(w, g) << what;
    } else {
      EXPECT_LE(std::fabs(w - g), tol * (std::fabs(w) + 1e-1))
          << what << ": want " << w << ", got " << g;
    }
  });
}

}  // namespace

void ExpectSameResults(const std::string& text, const std::string& decomposed,
                       bool specials, int trials) {
  SCOPED_TRACE(text);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  std::unique_ptr<ir::Graph> before = g->Clone();
  PassPipeline pipeline;
  pipeline.AddPass<Decompose>();
  PassContext ctx(env);
  ASSERT_OK_AND_ASSIGN(PipelineReport report, pipeline.Run(*g, ctx));
  EXPECT_TRUE(report.changed);
  std::string after = ir::PrintGraph(*g);
  EXPECT_EQ(after.find(decomposed), std::string::npos) << after;
  std::mt19937 rng(1234);
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<ir::Value> inputs = RandomInputs(*before, rng, specials);
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                         ir::Interpret(*before, inputs));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*g, inputs));
    ASSERT_EQ(want.outputs.size(), got.outputs.size());
    for (size_t k = 0; k < want.outputs.size(); ++k) {
      ExpectClose(want.outputs[k].tensor, got.outputs[k].tensor,
                  absl::StrCat("output ", k, " of\n", after));
      EXPECT_EQ(want.outputs[k].tensor.strides(),
                got.outputs[k].tensor.strides())
          << "output " << k << " of\n"
          << after;
    }
  }
}

std::string WithDType(const std::string& body, const char* dtype) {
  return absl::StrReplaceAll(body, {{"$", dtype}});
}

}  // namespace lathe::passes
