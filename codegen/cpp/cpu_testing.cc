#include "codegen/cpp/cpu_testing.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "codegen/cpp/cpp_compiler.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "codegen/fusion_graph.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/default_pipeline.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {

absl::StatusOr<std::unique_ptr<CpuFunction>> CompileCpu(
    const ir::Graph& graph, symbolic::ShapeEnv& env,
    const CpuCompileOptions& options) {
  const Backend& backend = CpuBackend();
  CpuFunction::Parts p;
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(p.lowered, Lower(graph, env, backend.routines()));
  p.stats.kernels_unfused = static_cast<int>(p.lowered.program.kernels.size());
  p.unscheduled = PrintProgram(p.lowered.program);
  ASSIGN_OR_RETURN(ScheduleResult scheduled, Schedule(p.lowered));
  p.stats.fusion_log = std::move(scheduled.log);
  p.stats.kernels = static_cast<int>(p.lowered.program.kernels.size());
  p.scheduled = PrintProgram(p.lowered.program);
  p.fusion_dot = FusionDot(graph, p.lowered.program);
  ASSIGN_OR_RETURN(std::string kernels, backend.EmitKernels(p.lowered.program));
  ASSIGN_OR_RETURN(p.host, EmitWrapper(p.lowered, ir::InputSlots(graph),
                                       {.guards = options.guards,
                                        .guard_inputs = options.guard_inputs,
                                        .plan = options.plan,
                                        .subclass = options.subclass}));
  p.source = kernels + p.host.text;
  p.stats.lower_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string dir = options.dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(dir, TemporaryBuildDir());
    p.temp_dir = dir;
  }
  absl::StatusOr<BuiltLibrary> built =
      backend.Build(kernels, p.host.text, dir, {.cache = options.cache});
  if (!built.ok()) {
    std::error_code ec;
    if (!p.temp_dir.empty()) std::filesystem::remove_all(p.temp_dir, ec);
    return built.status();
  }
  p.built = *std::move(built);
  p.stats.compiler_seconds = p.built.seconds;
  p.stats.cache_hit = p.built.cache_hit;
  p.plan = options.plan;
  p.subclass = options.subclass;
  return CpuFunction::Load(graph, std::move(p));
}

absl::StatusOr<CompiledCpu> CompileCpuText(const char* text) {
  CompiledCpu c;
  ASSIGN_OR_RETURN(c.graph, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*c.graph, env));
  ASSIGN_OR_RETURN(c.function, CompileCpu(*c.graph, env));
  return c;
}

ir::Value FilledF32(std::vector<int64_t> sizes, double first) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = static_cast<float>(first + static_cast<double>(i));
  }
  return ir::Value::OfTensor(t);
}

void ExpectSameOutputs(const ir::Interpretation& got,
                       const ir::Interpretation& want, double tol) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t k = 0; k < got.outputs.size(); ++k) {
    const Tensor &a = got.outputs[k].tensor, &b = want.outputs[k].tensor;
    ASSERT_EQ(a.sizes(), b.sizes()) << "output " << k;
    std::vector<int64_t> index(a.dim(), 0);
    for (int64_t i = 0; i < a.numel(); ++i) {
      for (int64_t d = a.dim(), rest = i; d-- > 0;) {
        index[d] = rest % a.sizes()[d];
        rest /= a.sizes()[d];
      }
      double u = a.GetDouble(index), w = b.GetDouble(index);
      if (std::isnan(w) && std::isnan(u)) continue;
      if (tol == 0 || std::isinf(w)) {
        ASSERT_EQ(u, w) << "output " << k << " element " << i;
      } else {
        ASSERT_NEAR(u, w, tol * (std::fabs(w) + 1))
            << "output " << k << " element " << i;
      }
    }
  }
}

void ExpectPipelineCompiledMatches(const char* text, const std::string& absent,
                                   double tol) {
  SCOPED_TRACE(text);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  std::unique_ptr<ir::Graph> reference = g->Clone();
  passes::PassPipeline pipeline = passes::DefaultPipeline();
  passes::PassContext ctx(env);
  ASSERT_OK(pipeline.Run(*g, ctx).status());
  if (!absent.empty()) {
    std::string after = ir::PrintGraph(*g);
    EXPECT_EQ(after.find(absent), std::string::npos) << after;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileCpu(*g, env));
  std::vector<ir::Value> in;
  int p = 0;
  for (const ir::Node* n : reference->Placeholders()) {
    const ir::TensorMeta& m = n->meta().tensor;
    std::vector<int64_t> sizes, strides;
    for (const symbolic::Expr& e : m.sizes) sizes.push_back(e.int_value());
    for (const symbolic::Expr& e : m.strides) strides.push_back(e.int_value());
    Tensor t = *Tensor::EmptyStrided(sizes, strides, m.dtype);
    int64_t k = 0;
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      t.SetDouble(i, IsFloatingPoint(m.dtype) ? 2 * std::sin(0.7 * k + p)
                                              : 3.0 * k + p);
      ++k;
    });
    in.push_back(ir::Value::OfTensor(t));
    ++p;
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*reference, in));
  ExpectSameOutputs(got, want, tol);
  for (size_t k = 0; k < got.outputs.size() && k < want.outputs.size(); ++k) {
    EXPECT_EQ(got.outputs[k].tensor.strides(), want.outputs[k].tensor.strides())
        << "output " << k;
  }
}

}  // namespace lathe::codegen
