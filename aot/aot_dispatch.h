// -----------------------------------------------------------------------------
// File: aot_dispatch.h
// -----------------------------------------------------------------------------
//
// The AOTDispatch half of the walk, in one call: flatten composite inputs
// into a dense graph (with its SubclassWrapperPlan), collect the
// ViewAndMutationMeta, functionalize, and build the RuntimeWrapperPlan that
// goes around it. InterpretWithPlan() then runs the dense result the way a
// compiled artifact runs — the functional graph (here on the reference
// interpreter), then the plan — and InterpretAsUser() does the same for the
// user's function, composite arguments and results included. That is what
// `lathec run` does and what the differential tests compare with the plain
// interpreter.
//
// Example:
//
//   symbolic::ShapeEnv env;
//   RETURN_IF_ERROR(ir::PropagateShapes(*graph, env));
//   ASSIGN_OR_RETURN(AotGraph aot, AotDispatch(*graph, env));
//   std::vector<ir::Value> inputs = ...;   // rebound by set_/as_strided_
//   ASSIGN_OR_RETURN(ir::Interpretation r,
//                    InterpretWithPlan(*graph, aot.plan, inputs));

#ifndef LATHE_AOT_AOT_DISPATCH_H_
#define LATHE_AOT_AOT_DISPATCH_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/flatten_composites.h"
#include "aot/runtime_wrapper_plan.h"
#include "aot/subclass_wrapper_plan.h"
#include "aot/view_and_mutation_meta.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "ir/value.h"
#include "runtime/composite.h"
#include "symbolic/shape_env.h"

namespace lathe::aot {

struct AotOptions {
  ViewAndMutationOptions mutations;
};

struct AotGraph {
  CompositeSignature signature;    // per user argument and result
  std::vector<std::string> names;  // the user arguments' names
  SubclassWrapperPlan subclass;
  ViewAndMutationMeta meta;  // of the dense graph
  RuntimeWrapperPlan plan;
};

// AotDispatch()
//
// Rewrites `graph`, whose shapes are propagated into `env`
// (ir::PropagateShapes, the walk's first step), into the functional graph
// the plan wraps (see runtime_wrapper_plan.h for its outputs), keeping its
// metas current, and returns the meta and plan.
absl::StatusOr<AotGraph> AotDispatch(ir::Graph& graph, symbolic::ShapeEnv& env,
                                     const AotOptions& options = {});

// How the functional graph is run: the interpreter by default, or a
// compiled function (codegen) with the same contract as ir::Interpret.
using GraphRunner = std::function<absl::StatusOr<ir::Interpretation>(
    const ir::Graph& graph, const std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants)>;

// InterpretWithPlan()
//
// Interprets the functional `graph` on `inputs` (with `runner` when given),
// then runs `plan`: the
// result has the user outputs, and `mutated_inputs` marks the inputs the
// graph or the plan wrote; `inputs` holds the inputs as the plan left them
// (set_ and as_strided_ rebind entries).
absl::StatusOr<ir::Interpretation> InterpretWithPlan(
    const ir::Graph& graph, const RuntimeWrapperPlan& plan,
    std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants = {},
    const GraphRunner& runner = nullptr);

struct UserCall {
  std::vector<Operand> results;
  // Per user argument: whether the call wrote it (any inner tensor of a
  // composite), and the argument as the call left it (set_ / as_strided_
  // rebind a plain one).
  std::vector<bool> mutated;
  std::vector<Operand> arguments;
};

// OperandOf() / ValueOf()
//
// A user-facing operand as the interpreter's value and back (tensors,
// concrete numbers and booleans, None; a symbolic number is an error).
absl::StatusOr<Operand> OperandOf(const ir::Value& v);
ir::Value ValueOf(const Operand& o);

// A compiled function that runs the graph and its plan together (the cpu
// backend's generated host function), with InterpretWithPlan's contract:
// the user outputs, `mutated_inputs`, and `inputs` rebound.
using PlannedRunner = std::function<absl::StatusOr<ir::Interpretation>(
    std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants)>;

// A compiled function that also unwraps and rewraps composites (the cpu
// backend's lathe_call_user): the whole user call.
using UserRunner = std::function<absl::StatusOr<UserCall>(
    std::vector<Operand> args,
    const absl::flat_hash_map<std::string, ir::Value>& constants)>;

// WrittenArguments()
//
// Per user argument (laid out as `arguments` says), whether a call that
// wrote the dense inputs `mutated_inputs` marks wrote any of its slots.
std::vector<bool> WrittenArguments(
    const std::vector<CompositeLayout>& arguments,
    const std::vector<bool>& mutated_inputs);

// UserCallOf()
//
// The user call a dense call makes: its rewrapped `results`; per user
// argument (laid out as `arguments` says), whether the call wrote any of
// its dense inputs (`mutated_inputs`) and the argument as the call left it:
// a plain one takes the dense value `rebound` has for its slot (set_ /
// as_strided_), a composite stays (its inner tensors were written in
// place).
UserCall UserCallOf(const std::vector<CompositeLayout>& arguments,
                    std::vector<Operand> args,
                    const std::vector<bool>& mutated_inputs,
                    const absl::flat_hash_map<int, ir::Value>& rebound,
                    std::vector<Operand> results);

// CheckUserArguments()
//
// Checks the user's `args` against the dense graph's input `slots`
// (ir::InputSlots) on the host, the slow way: composite arguments unwrapped
// with `subclass` (its error when one is missing or of another type), then
// `constants` (the values after the placeholders, in slot order), each
// checked as ir::CheckInputs checks: the error names the input that does
// not fit. What both a compiled and an interpreted variant say when they
// refuse arguments.
absl::Status CheckUserArguments(const SubclassWrapperPlan& subclass,
                                const std::vector<ir::InputSlot>& slots,
                                absl::Span<const Operand> args,
                                absl::Span<const ir::Value> constants = {});

// InterpretAsUser()
//
// Calls the user's function: unwraps `args` with aot.subclass, runs
// InterpretWithPlan on the dense graph (or `planned`, which runs graph and
// plan in one), rewraps the results; or `user`, which does all of it.
absl::StatusOr<UserCall> InterpretAsUser(
    const ir::Graph& graph, const AotGraph& aot, std::vector<Operand> args,
    const absl::flat_hash_map<std::string, ir::Value>& constants = {},
    const GraphRunner& runner = nullptr, const PlannedRunner& planned = nullptr,
    const UserRunner& user = nullptr);

}  // namespace lathe::aot

#endif  // LATHE_AOT_AOT_DISPATCH_H_
