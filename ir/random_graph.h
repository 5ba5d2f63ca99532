// -----------------------------------------------------------------------------
// File: random_graph.h
// -----------------------------------------------------------------------------
//
// The shared generator of random eager programs for differential tests:
// graphs over inputs x: f32[4, 6], y: f32[6], z: f32[4, 6] that take views
// of inputs and intermediates (slice, select, diagonal, t, unsqueeze, view,
// reshape, permute, as_strided), mutate them in place (add_, mul_, fill_,
// copy_, clamp_, t_, unsqueeze_, set_, sub_), broadcast (y against [4, 6]), and
// — when asked — read a dynamic first dimension (x: f32[s0, 6]) and a float
// scalar input (lr: Sym(zf0)) through Tensor and Scalar arguments. Each
// candidate line is kept only if the interpreter (eager semantics) runs it.
//
// Example:
//
//   std::mt19937 rng(1);
//   RandomProgram p = RandomGraph(rng, {.lines = 10, .scalars = true});
//   Interpret(*ParseGraph(p.text), p.Inputs(0.5));

#ifndef LATHE_IR_RANDOM_GRAPH_H_
#define LATHE_IR_RANDOM_GRAPH_H_

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ir/value.h"

namespace lathe::testing {

struct RandomGraphOptions {
  int lines = 10;
  // x's first dimension is the symbol s0 (hint 4), z's too.
  bool dynamic = false;
  // A float scalar input lr: Sym(zf0) (hint 0.5), read by mul/add/div with
  // alpha= and Tensor arguments.
  bool scalars = false;
  // Lines the caller refuses (e.g. programs AOT rejects): not kept.
  std::function<bool(const std::string& text)> reject;
};

struct RandomProgram {
  std::string text;
  RandomGraphOptions options;
  // Fresh inputs (deterministic values), lr = `lr` when the graph has it.
  std::vector<ir::Value> Inputs(double lr = 0.5) const;
};

// A random program of about `options.lines` lines.
RandomProgram RandomGraph(std::mt19937& rng, const RandomGraphOptions& options);

}  // namespace lathe::testing

#endif  // LATHE_IR_RANDOM_GRAPH_H_
