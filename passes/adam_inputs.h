// -----------------------------------------------------------------------------
// File: adam_inputs.h
// -----------------------------------------------------------------------------
//
// Inputs for the seed-000 Adam step (testdata/adam10_sym.txt) in tests:
// random parameters, gradients and moments (v non-negative, as a second
// moment is), and the float inputs lr, beta1 = 0.9, beta2 = 0.999, step.
//
// Example:
//
//   std::mt19937 rng(3);
//   std::vector<ir::Value> in = AdamInputs(*graph, /*lr=*/1e-3, /*step=*/2,
//                                          rng);
//   std::vector<ir::Value> copy = CopyInputs(in);   // same values, own storage

#ifndef LATHE_PASSES_ADAM_INPUTS_H_
#define LATHE_PASSES_ADAM_INPUTS_H_

#include <random>
#include <vector>

#include "ir/graph.h"
#include "ir/value.h"

namespace lathe::passes {

// One value per placeholder of `graph`, in order.
std::vector<ir::Value> AdamInputs(const ir::Graph& graph, double lr,
                                  double step, std::mt19937& rng);

// `inputs` with every tensor copied into its own storage.
std::vector<ir::Value> CopyInputs(const std::vector<ir::Value>& inputs);

}  // namespace lathe::passes

#endif  // LATHE_PASSES_ADAM_INPUTS_H_
