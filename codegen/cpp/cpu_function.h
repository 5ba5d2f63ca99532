// -----------------------------------------------------------------------------
// File: cpu_function.h
// -----------------------------------------------------------------------------
//
// A graph compiled for the CPU: lowered to the loop IR, scheduled, emitted
// as C++ (the kernels, and the host function that checks the inputs, binds
// the symbols, allocates the buffers and makes the outputs: wrapper_emitter.h),
// built into a shared library with the system compiler, loaded with dlopen,
// and called like the interpreter: concrete inputs in, outputs out. Run()
// only views its values through the C ABI (runtime/kernel_abi.h) and wraps
// what comes back.
//
// driver/compile.h makes one (its tests: cpu_testing.h's CompileCpu).
//
// Example:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CpuFunction> f,
//                    CpuFunction::Load(*graph, std::move(parts)));
//   ASSIGN_OR_RETURN(ir::Interpretation r, f->Run(inputs));
//   f->stats().kernels;   // kernels after fusion

#ifndef LATHE_CODEGEN_CPP_CPU_FUNCTION_H_
#define LATHE_CODEGEN_CPP_CPU_FUNCTION_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/aot_dispatch.h"
#include "aot/runtime_wrapper_plan.h"
#include "aot/subclass_wrapper_plan.h"
#include "codegen/backend.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "codegen/lowering.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/cache_backend.h"
#include "runtime/composite.h"
#include "runtime/kernel_abi.h"
#include "runtime/loaded_graph.h"
#include "runtime/shared_library.h"
#include "symbolic/guards.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen {

struct CpuStats {
  int kernels = 0;              // after scheduling
  int kernels_unfused = 0;      // as lowered
  double lower_seconds = 0;     // lowering + scheduling + emission
  double compiler_seconds = 0;  // the C++ compiler (0 on a cache hit)
  std::string cache_hit;        // the cache tier the .so came from, or ""
  std::vector<std::string> fusion_log;
};

class CpuFunction {
 public:
  // What the driver made of one graph (driver/compile.h: lowering,
  // scheduling, the backend's kernels, the host function, the build), to
  // load.
  struct Parts {
    LoweredGraph lowered;  // scheduled
    WrapperSource host;    // the host function's facts (its text is in source)
    std::string source;    // the kernels, then the host function
    // The loop IR before and after scheduling; the fusion groups as
    // Graphviz text (fusion_graph.h).
    std::string unscheduled, scheduled, fusion_dot;
    BuiltLibrary built;
    CpuStats stats;
    // The plans compiled into the host function, if any (they must
    // outlive the function).
    const aot::RuntimeWrapperPlan* plan = nullptr;
    const aot::SubclassWrapperPlan* subclass = nullptr;
    std::string temp_dir;  // removed with the function ("": none)
    // The backend that built it, which loads its device half (null: the
    // cpu's, which has none).
    const Backend* backend = nullptr;
    // The values of the frozen constants the lowered graph reads (the
    // function holds them and passes them itself), by name.
    ir::Constants frozen;
  };

  // Load()
  //
  // Loads the library of `parts` (from its verified bytes) made for
  // `graph`: the callable function.
  static absl::StatusOr<std::unique_ptr<CpuFunction>> Load(
      const ir::Graph& graph, Parts parts);
  ~CpuFunction();

  // Runs on one input per placeholder (tensors laid out as annotated,
  // numbers for Sym inputs) and the constants the graph reads, by name: the
  // graph's outputs, and which inputs it wrote. Random ops draw from `seed`
  // as ir::Interpret's do (the same numbers). Not for a function compiled
  // with its plan.
  absl::StatusOr<ir::Interpretation> Run(
      const std::vector<ir::Value>& inputs,
      const absl::flat_hash_map<std::string, ir::Value>& constants = {},
      uint64_t seed = ir::Generator::kDefaultSeed) const;

  // RunWithPlan()
  //
  // Runs the graph and its runtime wrapper plan, as aot::InterpretWithPlan
  // does: the user outputs, which inputs the graph or the plan wrote, and
  // `inputs` rebound by its set_ and as_strided_ steps.
  absl::StatusOr<ir::Interpretation> RunWithPlan(
      std::vector<ir::Value>& inputs,
      const absl::flat_hash_map<std::string, ir::Value>& constants = {},
      uint64_t seed = ir::Generator::kDefaultSeed) const;

  // CallUser()
  //
  // The user's call, as aot::InterpretAsUser makes it: composite arguments
  // unwrapped, the graph and its plan run, composite results rebuilt, all
  // inside the .so (lathe_call_user); the constants as for Run. A missing
  // argument or a composite of another type is the error
  // SubclassWrapperPlan::Unwrap gives.
  absl::StatusOr<aot::UserCall> CallUser(
      std::vector<Operand> args,
      const absl::flat_hash_map<std::string, ir::Value>& constants = {},
      uint64_t seed = ir::Generator::kDefaultSeed) const;
  // Whether CallUser can run (a composite wrapper was compiled in); if
  // not, why.
  bool user_entry() const { return user_entry_; }
  // The loaded library, for a runtime CompiledFunction (null without a
  // user entry).
  std::shared_ptr<const LoadedGraph> user_call() const {
    return user_entry_ ? loaded_ : nullptr;
  }
  const std::string& user_entry_error() const { return user_entry_error_; }

  // Whether the plan given at compile time runs inside the .so; if not, why.
  bool plan_applied() const { return plan_applied_; }
  const std::string& plan_error() const { return plan_error_; }

  // Admits()
  //
  // The compiled guards on the user's inputs: true when they all hold.
  // Without guards at compile time, true.
  bool Admits(absl::Span<const symbolic::GuardInput> inputs) const;
  // The index of the first compiled guard that fails on `inputs`, as
  // GuardSet::Check names it, or LATHE_GUARDS_HOLD (kernel_abi.h), or
  // LATHE_GUARDS_OTHER_INPUTS for inputs of other kinds or ranks.
  int FailedGuard(absl::Span<const symbolic::GuardInput> inputs) const;

  // The constants the caller gives (`self.NAME`), in the order they follow
  // the placeholders; the frozen ones the function holds come after them.
  const std::vector<std::string>& constants() const { return constants_; }
  // Which of the user's arguments (composites whole) a user call writes;
  // empty without a user entry.
  std::vector<bool> MutatedUserInputs() const;
  // Whether some annotation is one the .so cannot check (CheckUser does).
  bool host_checks() const { return host_checks_; }
  // Checks the user's `args` (and `constants`) against the annotations on
  // the host, the slow way: the error naming the input that does not fit.
  absl::Status CheckUser(
      absl::Span<const Operand> args,
      const absl::flat_hash_map<std::string, ir::Value>& constants) const;

  const std::string& source() const { return source_; }
  // The loop IR, scheduled and planned, it was built from.
  const LoweredGraph& lowered() const { return lowered_; }
  // The loop IR before and after scheduling.
  const std::string& unscheduled() const { return unscheduled_; }
  const std::string& scheduled() const { return scheduled_; }
  // The graph with its fusion groups, as Graphviz text (fusion_graph.h).
  const std::string& fusion_dot() const { return fusion_dot_; }
  const BuiltLibrary& library() const { return built_; }
  // The address of the loaded library's exported symbol `name` (the
  // autotuner's table: driver/autotune.h), or the error naming it.
  absl::StatusOr<void*> Symbol(const std::string& name) const {
    return loaded_->library().Symbol(name);
  }
  // The device its kernels run on (tensors given on the host are copied
  // there and back by Run, RunWithPlan and CallUser).
  Device device() const {
    return loaded_->device() != nullptr ? loaded_->device()->device()
                                        : Device::Cpu();
  }
  const CpuStats& stats() const { return stats_; }

 private:
  CpuFunction() = default;
  // One call of lathe_call: its results, as values.
  absl::StatusOr<std::vector<ir::Value>> Call(
      const std::vector<ir::Value>& inputs,
      const absl::flat_hash_map<std::string, ir::Value>& constants,
      uint64_t seed) const;
  LoweredGraph lowered_;
  std::string source_, unscheduled_, scheduled_, fusion_dot_;
  BuiltLibrary built_;
  // The library, hosted as the runtime hosts an artifact's: lathe_call
  // (Run), lathe_call_user (CallUser) and lathe_guards (Admits).
  std::shared_ptr<const LoadedGraph> loaded_;
  bool user_entry_ = false;
  // The user's inputs as the C ABI sees them, then the constants.
  absl::StatusOr<std::vector<const ir::Value*>> WithConstants(
      const std::vector<ir::Value>& given,
      const absl::flat_hash_map<std::string, ir::Value>& constants) const;
  // The constant `self.NAME` by `name`: a frozen one's value, else the one
  // in `constants`, or the error naming it.
  absl::StatusOr<const ir::Value*> ConstantNamed(
      const absl::flat_hash_map<std::string, ir::Value>& constants,
      const std::string& name) const;
  std::vector<std::string> constants_;  // the caller's
  ir::Constants frozen_;
  // The constants the graph reads, in order, from `constants` by name.
  absl::StatusOr<std::vector<ir::Value>> ConstantValues(
      const absl::flat_hash_map<std::string, ir::Value>& constants) const;
  // The status of a failed lathe_call (or lathe_call_user) returning `rc`;
  // `why_bad` names a refused input.
  absl::Status CallError(int rc,
                         const std::function<absl::Status()>& why_bad) const;
  // Which inputs the call (graph and plan) wrote.
  std::vector<bool> Mutated(size_t inputs) const;
  std::optional<aot::SubclassWrapperPlan> subclass_;
  std::string user_entry_error_;
  bool host_checks_ = false;  // ir::CheckInputs before every call
  bool plan_applied_ = false;
  std::string plan_error_;
  std::vector<int> rebound_inputs_;   // per result after the user outputs
  std::vector<int> epilogue_inputs_;  // the inputs the plan writes
  std::string temp_dir_;              // removed in the destructor
  std::vector<bool> writes_input_;    // per placeholder
  std::vector<ir::InputSlot> slots_;  // what Run checks its inputs against
  CpuStats stats_;
};

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPU_FUNCTION_H_
