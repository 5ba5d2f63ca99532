// -----------------------------------------------------------------------------
// File: interpreter.h
// -----------------------------------------------------------------------------
//
// Runs a graph on concrete values with PyTorch's eager semantics: ops run
// their reference kernels, views share storage, in-place ops mutate through
// views (and so through the inputs), outputs may alias inputs. It is the
// oracle every later stage is tested against.
//
// Example:
//
//   ASSIGN_OR_RETURN(Interpretation r, Interpret(*graph,
//   {Value::OfTensor(x)})); r.outputs[0].tensor;        // the first returned
//   value r.mutated_inputs[0];        // whether input 0 was written

#ifndef LATHE_IR_INTERPRETER_H_
#define LATHE_IR_INTERPRETER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/value.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

struct Interpretation {
  std::vector<Value> outputs;
  std::vector<bool> mutated_inputs;  // per placeholder
};

// Interpret()
//
// Runs `graph` with `inputs` (one per placeholder, in order) and
// `constants` (values of `self.NAME` get_attr nodes, by NAME). Each is
// checked against its annotation: dtype, rank, static sizes and
// strides-free shape, and one value per size symbol. Random ops draw from
// one Generator seeded with `seed` (random.h), in graph order: a run is
// reproducible.
absl::StatusOr<Interpretation> Interpret(
    const Graph& graph, std::vector<Value> inputs,
    const absl::flat_hash_map<std::string, Value>& constants = {},
    uint64_t seed = Generator::kDefaultSeed);

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

// EvalCall()
//
// Evaluates call node `n` on the values of its arguments: getitem, Python
// operators, or an op's reference kernel (shape_env null) or its meta
// function (recording guards in shape_env). Random kernels draw from
// `generator` (null: a fresh default-seeded one).
absl::StatusOr<EvaluatedCall> EvalCall(
    const Node& n, const absl::flat_hash_map<const Node*, Value>& values,
    symbolic::ShapeEnv* shape_env, Generator* generator = nullptr);

// IsInplace()
//
// Whether call node `n` writes its first argument and returns it (add_, t_,
// set_, ...).
bool IsInplace(const Node& n);

// IsView()
//
// Whether `n` returns a view of its first argument's storage (or, for
// getitem, an element of a list of views such as split's).
bool IsView(const Node& n);

// TensorObject()
//
// The node whose value is the same tensor object as `n`'s: in-place ops
// return their (first) argument, so their results are that object.
const Node* TensorObject(const Node& n);

// SetObjectValue()
//
// After a metadata mutation (t_, set_, ...) of `node`'s tensor object, every
// evaluated node that is that object takes `value`.
void SetObjectValue(const Node& node, const Value& value,
                    absl::flat_hash_map<const Node*, Value>& values);

// Dynamo's grad-mode switch (`torch._C._set_grad_enabled(False)` in a
// graph): a no-op when running; view_and_mutation_meta reads it.
inline constexpr absl::string_view kSetGradEnabled =
    "torch._C._set_grad_enabled";

// IsPythonOp()
//
// Whether `target` is a Python operator or torch.sym_* function on numbers,
// or kSetGradEnabled.
bool IsPythonOp(absl::string_view target);

// EvalPythonOp()
//
// A Python operator on numbers ("operator.add", ...) or torch.sym_float,
// sym_int, sym_max, sym_min, with Python semantics; symbolic operands give
// symbolic results.
absl::StatusOr<Value> EvalPythonOp(absl::string_view target,
                                   const std::vector<Value>& args);

}  // namespace lathe::ir

#endif  // LATHE_IR_INTERPRETER_H_
