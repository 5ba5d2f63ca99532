// -----------------------------------------------------------------------------
// File: cpu_testing.h
// -----------------------------------------------------------------------------
//
// For codegen's tests and benchmarks only: a shape-propagated graph through
// the code-generating half of the walk for the cpu (lowering, scheduling,
// the kernels, the host function, the build, loading), as the driver
// (driver/compile.h) runs it after the guards; tests below the driver call
// this instead.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   RETURN_IF_ERROR(ir::PropagateShapes(*graph, env));
//   ASSIGN_OR_RETURN(std::unique_ptr<CpuFunction> f, CompileCpu(*graph, env));

#ifndef LATHE_CODEGEN_CPP_CPU_TESTING_H_
#define LATHE_CODEGEN_CPP_CPU_TESTING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aot/runtime_wrapper_plan.h"
#include "aot/subclass_wrapper_plan.h"
#include "codegen/cpp/cpu_function.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/cache_backend.h"
#include "symbolic/guards.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen {

struct CpuCompileOptions {
  // Where the source and the .so go; a fresh temporary directory when empty
  // (removed with the function).
  std::string dir;
  // Compiled into the host function (wrapper_emitter.h's WrapperOptions).
  const symbolic::GuardSet* guards = nullptr;
  std::vector<symbolic::InputSpec> guard_inputs;
  const aot::RuntimeWrapperPlan* plan = nullptr;
  const aot::SubclassWrapperPlan* subclass = nullptr;
  // The compile cache the build goes through; none: always compile.
  CacheBackend* cache = nullptr;
};

// CompileCpu()
//
// Compiles `graph` (shape-propagated into `env`) for the cpu.
absl::StatusOr<std::unique_ptr<CpuFunction>> CompileCpu(
    const ir::Graph& graph, symbolic::ShapeEnv& env,
    const CpuCompileOptions& options = {});

// A graph and its compiled function (the graph for the interpreter).
struct CompiledCpu {
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<CpuFunction> function;
};

// CompileCpuText()
//
// The graph `text`, shape-propagated and compiled for the cpu.
absl::StatusOr<CompiledCpu> CompileCpuText(const char* text);

// FilledF32()
//
// An f32 tensor of `sizes` holding first, first + 1, ... in order.
ir::Value FilledF32(std::vector<int64_t> sizes, double first);

// ExpectSameOutputs()
//
// Expects `got`'s outputs to equal `want`'s element by element (NaN
// matching NaN), within tol * (|want| + 1) when `tol` is not 0.
void ExpectSameOutputs(const ir::Interpretation& got,
                       const ir::Interpretation& want, double tol = 0);

// ExpectPipelineCompiledMatches()
//
// `text` through the default pass pipeline, compiled, and run against the
// interpreter on the graph as written: every input element k of
// placeholder p is 2 sin(0.7 k + p) (floats) or 3 k + p (integers), and
// each output must match within tol * (|want| + 1), with the interpreter's
// strides. Where `absent` is not empty, no call of it may be left after
// the passes (a decomposed op).
void ExpectPipelineCompiledMatches(const char* text,
                                   const std::string& absent = "",
                                   double tol = 1e-4);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPU_TESTING_H_
