// -----------------------------------------------------------------------------
// File: eval_call.h
// -----------------------------------------------------------------------------
//
// Evaluates one call node on the values of its arguments: Python operators
// on numbers, or an op's reference kernel or meta function (graph builtins
// such as getitem included: they are registry ops). The
// interpreter runs graphs with it; shape propagation and InferMeta compute
// metas with it.
//
// Example:
//
//   ASSIGN_OR_RETURN(EvaluatedCall c, EvalCall(*node, values, &env));
//   c.out.meta.ToAnnotation();   // the node's meta, from its inputs' metas

#ifndef LATHE_IR_EVAL_CALL_H_
#define LATHE_IR_EVAL_CALL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/value.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

// ArgValue()
//
// A call argument as a value, with nodes looked up in `env`.
absl::StatusOr<Value> ArgValue(
    const Arg& arg, const absl::flat_hash_map<const Node*, Value>& env);

// The result of one call node, and for an op call the op and its bound
// arguments (schema order, defaults filled).
struct EvaluatedCall {
  Value out;
  const OpDef* op = nullptr;
  std::vector<Value> args;
};

// A kernel one run uses instead of an op's reference kernel: the call's
// value, or std::nullopt for the reference kernel to run it (arguments it
// does not take: another dtype, or an error the reference names).
using KernelOverride =
    std::function<std::optional<absl::StatusOr<Value>>(const OpCall&)>;
// Overrides by op target ("aten.mm.default").
using KernelOverrides = absl::flat_hash_map<std::string, KernelOverride>;

// EvalCall()
//
// Evaluates call node `n` on the values of its arguments: Python operators,
// or an op's reference kernel (shape_env null; `overrides` first, where one
// names the op) or its meta function (recording guards in shape_env).
// Random kernels draw from `generator` (null: a fresh default-seeded one).
// `bound`, when given, runs once the arguments are bound and checked, just
// before a kernel runs: the interpreter lets go there of the values this
// call reads last, so that a kernel holding a storage alone may write its
// result over it (first_tier_loops.h).
absl::StatusOr<EvaluatedCall> EvalCall(
    const Node& n, const absl::flat_hash_map<const Node*, Value>& values,
    symbolic::ShapeEnv* shape_env, Generator* generator = nullptr,
    const KernelOverrides* overrides = nullptr,
    const std::function<void()>& bound = nullptr);

// SetObjectValue()
//
// After a metadata mutation (t_, set_, ...) of `node`'s tensor object, every
// evaluated node that is that object takes `value`.
void SetObjectValue(const Node& node, const Value& value,
                    absl::flat_hash_map<const Node*, Value>& values);

// IsPythonOp()
//
// Whether `target` is a Python operator or torch.sym_* function on numbers.
bool IsPythonOp(absl::string_view target);

// EvalPythonOp()
//
// A Python operator on numbers ("operator.add", ...) or torch.sym_float,
// sym_int, sym_max, sym_min, with Python semantics; symbolic operands give
// symbolic results.
absl::StatusOr<Value> EvalPythonOp(absl::string_view target,
                                   const std::vector<Value>& args);

}  // namespace lathe::ir

#endif  // LATHE_IR_EVAL_CALL_H_
