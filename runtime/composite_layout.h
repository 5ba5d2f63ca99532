// -----------------------------------------------------------------------------
// File: composite_layout.h
// -----------------------------------------------------------------------------
//
// The one description of how a value at a compiled function's boundary is
// laid out: a plain value (a tensor of `rank` dimensions, or a number), or a
// composite of a registered type (runtime/composite.h) over inner layouts in
// flatten order, nested to any depth. The compiler builds it when it
// flattens composite inputs (aot/flatten_composites.h) and plans the wrapper
// from it (aot/subclass_wrapper_plan.h); the runtime sizes a call's result
// buffers from it (runtime/loaded_graph.h) and reads and writes it in an
// artifact's manifest ("result pair(2,2)", "composite 0 pair(1,1)").
//
// Example:
//
//   CompositeLayout pair = CompositeLayout::Of(FindCompositeType("pair"),
//       {CompositeLayout::Plain(2), CompositeLayout::Plain(2)});
//   pair.ToString();                                   // "pair(2,2)"
//   pair.Slots(/*argument=*/true);                     // 2
//   ASSIGN_OR_RETURN(CompositeLayout back,
//                    CompositeLayout::Parse("pair(2,2)"));

#ifndef LATHE_RUNTIME_COMPOSITE_LAYOUT_H_
#define LATHE_RUNTIME_COMPOSITE_LAYOUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/composite.h"

namespace lathe {

struct CompositeLayout {
  const CompositeType* type = nullptr;  // null: plain (one slot)
  // A plain value's rank (-1: not known); a composite's outer rank (its
  // first inner value's, for results).
  int rank = -1;
  std::vector<CompositeLayout> inner;  // composites, in flatten order
  // Composite arguments: the outer dimensions whose size (stride) is
  // symbolic. Each is an int slot after the inner tensors, sizes first.
  std::vector<int> symbolic_sizes, symbolic_strides;
  bool frozen = false;  // arguments: baked into the graph, an empty slot

  static CompositeLayout Plain(int rank = -1) {
    CompositeLayout l;
    l.rank = rank;
    return l;
  }
  static CompositeLayout Of(const CompositeType* type,
                            std::vector<CompositeLayout> inner) {
    CompositeLayout l;
    l.type = type;
    l.inner = std::move(inner);
    return l;
  }
  bool is_plain() const { return type == nullptr; }
  // Whether every plain value's rank is known and every composite holds
  // as many inner values as its type has, at least one (what a manifest
  // records and a call's result buffers are sized from).
  bool Complete() const;
  // The number of dense slots it takes as an argument (symbolic outer sizes
  // and strides included, a frozen one an empty slot) or as a result.
  int Slots(bool argument) const;
  // "2" for a plain value of rank 2 ("?" when not known), "pair(2,0)" for a
  // composite (the types down to the plain values).
  std::string ToString() const;
  // The inverse of ToString for known ranks: every type registered, at
  // most 16 nested composites, each as many inner values as its type has,
  // ranks below 100; an error says what was expected where.
  static absl::StatusOr<CompositeLayout> Parse(absl::string_view text);
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_COMPOSITE_LAYOUT_H_
