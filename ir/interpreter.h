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
#include "ir/eval_call.h"
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

// A value a graph takes: a placeholder or a constant (`self.NAME`), with
// its annotation and how errors name it.
struct InputSlot {
  ValueMeta meta;
  std::string where;  // "input 0 ('x')" or "constant 'self.c'"
};

// InputSlots()
//
// The graph's placeholders in order, then its constants in graph order:
// those the caller gives, then the frozen ones (`# lathe: constant`).
std::vector<InputSlot> InputSlots(const Graph& graph);

// CheckInputs()
//
// Checks values[k] against slots[k]'s annotation, as Interpret checks its
// inputs: dtype, rank, sizes, the strides of dimensions with more than one
// element, and one value per size symbol across all of them.
absl::Status CheckInputs(const std::vector<InputSlot>& slots,
                         const std::vector<const Value*>& values);

// Interpret()
//
// Runs `graph` with `inputs` (one per placeholder, in order) and
// `constants` (values of `self.NAME` get_attr nodes, by NAME). Each is
// checked against its annotation: dtype, rank, static sizes and
// strides-free shape, and one value per size symbol. Random ops draw from
// one Generator seeded with `seed` (random.h), in graph order: a run is
// reproducible. `overrides` replace some ops' reference kernels (a tiered
// compile's first tier: driver/first_tier.h); without them the run is the
// oracle's.
absl::StatusOr<Interpretation> Interpret(
    const Graph& graph, std::vector<Value> inputs,
    const absl::flat_hash_map<std::string, Value>& constants = {},
    uint64_t seed = Generator::kDefaultSeed,
    const KernelOverrides* overrides = nullptr);

}  // namespace lathe::ir

#endif  // LATHE_IR_INTERPRETER_H_
