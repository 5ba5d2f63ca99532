// -----------------------------------------------------------------------------
// File: reinplace.h
// -----------------------------------------------------------------------------
//
// reinplace: turns functional calls back into in-place ones where nobody
// can tell (Inductor's reinplace_inplaceable_ops, reference §2.2), so a
// program that updates a buffer stops copying it. It adds mutation, so it
// runs last (AddsMutation()).
//
// What it rewrites, walking the graph in order:
//   - a call whose op has an in-place twin (OpDef::inplace: add -> add_,
//     index_put -> index_put_, fill -> fill_, ...) becomes the twin;
//   - a view scatter (slice/select/diagonal/as_strided_scatter) becomes
//     its view of the input plus copy_(view, src) when should_reinplace_
//     scatter says the in-place form pays (rules 1-5 of §2.2);
//   - a copy_ epilogue that then copies a value into itself (copy_(x, y)
//     where y is now x, or a view of x laid out as x) is erased, its uses
//     taking x; a scatter that writes a reinplaced view back into its base
//     (diagonal_scatter(b, add_(diagonal(b), ..), ..)) is its base.
//
// A call writing argument `m` (same StorageId = overlap) is reinplaced only
// when:
//   - it is no pointwise op that is an intermediate value's only reader,
//     unless scatters write its result back: lowering computes both inside
//     their readers' loops, where in place `m` would first be stored (relu
//     after a convolution's bias, read by a max pool: a kernel and a pass
//     over memory); a value read before it too is stored anyway;
//   - `m` holds no element twice (no stride 0: an expanded argument cannot
//     be written) and the result has m's dtype, device and sizes (and
//     strides, unless only the erased scatters and copy_ read it);
//   - no other argument reads m's storage (a pointwise op may read m
//     itself);
//   - nothing reads m's storage after the call (a later use), short of the
//     copy_ epilogue into it, shape queries (sym_size, ...) and the scatters
//     above;
//   - when m's storage is a graph input's: the program writes that input
//     anyway (the first write after the call is a copy_ into the input
//     itself), the result and its views do not reach the output or a set_
//     (the result would alias the input; PyTorch #195484), and nothing
//     reads them from that copy_ on unless it copies them back (they would
//     read what it wrote; PyTorch #198096);
//   - otherwise: the result and a scatter writing it back are not both
//     returned (two outputs would share m's storage).
// Nodes it creates or edits get their metas and unbacked bindings
// (Graph::InsertCall, RefreshMetas).
//
// Preconditions: shapes propagated; the graph is functional but for the
// copy_/set_/as_strided_ epilogue into inputs (a graph that already mutates
// anything else is left as it is).
//
// Example:
//
//   cos = cos(x); index_put = index_put(cos, [i], v); return (index_put,)
//     -> cos = cos(x); index_put = index_put_(cos, [i], v); ...
//   add = add(x, 1); copy_ = copy_(x, add); return (mul(add, 2),)
//     -> add = add_(x, 1); return (mul(add, 2),)

#ifndef LATHE_PASSES_REINPLACE_H_
#define LATHE_PASSES_REINPLACE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class Reinplace : public Pass {
 public:
  absl::string_view name() const override { return "reinplace"; }
  // Reinplaces what it safely can; true when anything changed.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
  // It writes in place: the functional invariant ends here.
  bool AddsMutation() const override { return true; }
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_REINPLACE_H_
