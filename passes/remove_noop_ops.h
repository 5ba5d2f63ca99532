// -----------------------------------------------------------------------------
// File: remove_noop_ops.h
// -----------------------------------------------------------------------------
//
// remove_noop_ops: a call that gives back one of its arguments unchanged —
// a full-range slice, a view to the same shape, a clone, a cast to the same
// dtype, a one-input cat, ... (reference §2.1's registry, one table keyed
// by target) — is replaced by that argument and erased, when the two have
// statically equal metas (sizes, strides, dtype, device).
//
// Never removed, so that the graph's aliasing stays what it was (Rules A
// and B, over all outputs):
//   A. a copy (clone, copy, a cast) whose storage is an output's when its
//      source's storage is an input's or an output's: removing it would make
//      them share a storage;
//   B. a view returned by the graph whose source is an input or another
//      output: removing it would make an output the very same value;
// and a copy whose source is written in place before one of the copy's
// uses (the copy_ epilogue), or whose own storage is written (PyTorch
// #174187).
//
// Preconditions: shapes propagated (every node has its meta). Runs anywhere
// between functionalization and reinplace.
//
// Example:
//
//   mm = mm(a, b); clone = clone(mm); return (clone,)  ->  return (mm,)
//   clone = clone(x); return (clone,)                  ->  unchanged (Rule A)
//   y = clone(x); copy_(x, y); return (y,)             ->  unchanged (Rule A)

#ifndef LATHE_PASSES_REMOVE_NOOP_OPS_H_
#define LATHE_PASSES_REMOVE_NOOP_OPS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class RemoveNoopOps : public Pass {
 public:
  absl::string_view name() const override { return "remove_noop_ops"; }
  // Replaces each no-op call by its source; true when any was removed.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_REMOVE_NOOP_OPS_H_
