// -----------------------------------------------------------------------------
// File: known_ops.h
// -----------------------------------------------------------------------------
//
// The ops lathe's own steps recognize by identity (functionalization's view
// regeneration, the epilogue, the passes' special cases), resolved once
// from the registry. A step compares a node's OpDef with one of these
// instead of comparing target strings: a misspelled target fails when the
// table is built, not silently at every comparison.
//
// Example:
//
//   const KnownOps& k = Known();
//   if (n->op() == k.copy_) ...          // aten.copy_.default
//   if (n->op() == k.slice) ...          // aten.slice.Tensor

#ifndef LATHE_IR_KNOWN_OPS_H_
#define LATHE_IR_KNOWN_OPS_H_

#include "ir/op_registry.h"

namespace lathe::ir {

// Each member is the registered op its comment names; never null.
struct KnownOps {
  const OpDef* alias;               // aten.alias.default
  const OpDef* as_strided;          // aten.as_strided.default
  const OpDef* as_strided_;         // aten.as_strided_.default
  const OpDef* as_strided_scatter;  // aten.as_strided_scatter.default
  const OpDef* clone;               // aten.clone.default
  const OpDef* copy_;               // aten.copy_.default
  const OpDef* detach;              // aten.detach.default
  const OpDef* diagonal;            // aten.diagonal.default
  const OpDef* diagonal_scatter;    // aten.diagonal_scatter.default
  const OpDef* getitem;             // getitem (a graph builtin)
  const OpDef* local_scalar_dense;  // aten._local_scalar_dense.default
  const OpDef* mul;                 // aten.mul.Tensor
  const OpDef* permute;             // aten.permute.default
  const OpDef* reshape;             // aten.reshape.default
  const OpDef* scalar_tensor;       // aten.scalar_tensor.default
  const OpDef* select;              // aten.select.int
  const OpDef* select_scatter;      // aten.select_scatter.default
  const OpDef* set_;                // aten.set_.source_Tensor
  const OpDef* set_grad_enabled;    // torch._C._set_grad_enabled (builtin)
  const OpDef* slice;               // aten.slice.Tensor
  const OpDef* slice_scatter;       // aten.slice_scatter.default
  const OpDef* split;               // aten.split.Tensor
  const OpDef* split_with_sizes;    // aten.split_with_sizes.default
  const OpDef* squeeze_dim;         // aten.squeeze.dim
  const OpDef* sym_size;            // aten.sym_size.int
  const OpDef* sym_stride;          // aten.sym_stride.int
  const OpDef* t;                   // aten.t.default
  const OpDef* t_;                  // aten.t_.default
  const OpDef* to_copy;             // aten._to_copy.default
  const OpDef* transpose;           // aten.transpose.int
  const OpDef* transpose_;          // aten.transpose_.default
  const OpDef* unbind;              // aten.unbind.int
  const OpDef* unsafe_view;         // aten._unsafe_view.default
  const OpDef* unsqueeze;           // aten.unsqueeze.default
  const OpDef* unsqueeze_;          // aten.unsqueeze_.default
  const OpDef* view;                // aten.view.default
};

// The known ops of the global registry.
const KnownOps& Known();

}  // namespace lathe::ir

#endif  // LATHE_IR_KNOWN_OPS_H_
