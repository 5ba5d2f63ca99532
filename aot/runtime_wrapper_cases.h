// -----------------------------------------------------------------------------
// File: runtime_wrapper_cases.h
// -----------------------------------------------------------------------------
//
// Graphs whose runtime-wrapper plans are printed as C++ at build time
// (emit_runtime_wrappers, a genrule) and compiled into the codegen test and
// the benchmark, which run each generated function next to
// RuntimeWrapperPlan::Run on the same functional-graph outputs. Test-only.
//
// Example:
//
//   for (const WrapperCase& c : WrapperCases()) {
//     ASSIGN_OR_RETURN(PreparedCase p, Prepare(c));  // fresh inputs, fw
//     GeneratedWrapperFor(c.name)(absl::MakeSpan(p.inputs), p.fw, &outs);
//   }

#ifndef LATHE_AOT_RUNTIME_WRAPPER_CASES_H_
#define LATHE_AOT_RUNTIME_WRAPPER_CASES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/aot_dispatch.h"
#include "aot/subclass_wrapper_plan.h"
#include "ir/graph.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"

namespace lathe::aot {

struct WrapperCase {
  std::string name;  // a C++ identifier
  std::string graph;
  std::vector<std::vector<int64_t>> input_sizes;  // f32, contiguous
};

// The cases: reference scenarios 1, 3, 6, 11, 16, 17, 18, 20, 24, a symbolic
// view, and the epilogue benchmark's (1/4/16 mutated inputs of 4 KiB and
// 1 MiB, named epilogue_<n>x<bytes>).
const std::vector<WrapperCase>& WrapperCases();

// A case compiled (every mutation left to the wrapper) and, after
// Prepare(), fresh inputs (1, 2, 3, ... per input) and the functional
// graph's outputs on them.
struct PreparedCase {
  std::unique_ptr<ir::Graph> graph;
  AotGraph aot;
  std::vector<Tensor> inputs, fw;
};
absl::StatusOr<PreparedCase> Compile(const WrapperCase& c);
absl::StatusOr<PreparedCase> Prepare(const WrapperCase& c);

// The function CppSource() printed for a case, compiled (defined in the
// generated file).
using GeneratedWrapper = absl::Status (*)(absl::Span<Tensor> in,
                                          absl::Span<const Tensor> fw,
                                          std::vector<Tensor>* out);
GeneratedWrapper GeneratedWrapperFor(const std::string& name);

// Composite layouts whose SubclassWrapperPlans are printed and compiled the
// same way: pair, nested_pair (a pair of pairs) and mixed (a frozen pair, a
// plain tensor and a pair with a symbolic size, then trailing arguments).
struct SubclassCase {
  std::string name;
  std::vector<CompositeLayout> arguments, results;
};
const std::vector<SubclassCase>& SubclassCases();

// The two functions SubclassWrapperPlan::CppSource() printed for a case.
using GeneratedUnwrap = absl::Status (*)(absl::Span<const Operand> args,
                                         std::vector<Operand>* out);
using GeneratedRewrap = absl::Status (*)(absl::Span<Operand> dense,
                                         std::vector<Operand>* out);
struct GeneratedSubclass {
  GeneratedUnwrap unwrap = nullptr;
  GeneratedRewrap rewrap = nullptr;
};
GeneratedSubclass GeneratedSubclassFor(const std::string& name);

}  // namespace lathe::aot

#endif  // LATHE_AOT_RUNTIME_WRAPPER_CASES_H_
