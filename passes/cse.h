// -----------------------------------------------------------------------------
// File: cse.h
// -----------------------------------------------------------------------------
//
// cse: a call that repeats an earlier call (same target, same arguments —
// nodes by identity, numbers bit for bit, so -0.0 is not 0.0 and NaN is
// NaN) is replaced by the earlier one and erased. Never merged: ops with
// effects (they write an argument, assert, draw random numbers), and a
// fresh tensor returned by the graph when the earlier call's storage is an
// input's or an output's (that would make them alias). An op that writes an
// argument is a barrier: nothing before it merges with anything after it.
//
// Example:
//
//   a = neg(x); b = neg(x); add(a, b)   ->   a = neg(x); add(a, a)

#ifndef LATHE_PASSES_CSE_H_
#define LATHE_PASSES_CSE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class Cse : public Pass {
 public:
  absl::string_view name() const override { return "cse"; }
  // Merges repeated calls; true when any merged.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_CSE_H_
