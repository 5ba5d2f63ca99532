// -----------------------------------------------------------------------------
// File: alias_info.h
// -----------------------------------------------------------------------------
//
// What a call does to the tensors it touches, from its op's schema: whether
// it writes its first argument (in place), returns a view of it, changes
// its metadata (t_, set_), and which node's value is the same tensor
// object. Functionalization, the interpreter and the passes ask these.
//
// Example:
//
//   if (IsView(*n)) ...                 // view, getitem of split, ...
//   const Node* obj = TensorObject(*n); // add_(x, y) -> x

#ifndef LATHE_IR_ALIAS_INFO_H_
#define LATHE_IR_ALIAS_INFO_H_

#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace lathe::ir {

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

// MutatesMetadata()
//
// Whether call `n` changes its first argument's sizes, strides or storage
// (t_, transpose_, unsqueeze_, as_strided_, set_): its result replaces that
// argument's value from then on.
bool MutatesMetadata(const Node& n);

// EpilogueKind()
//
// "data", "storage" or "metadata" for the ops of the mutation epilogue
// functionalization leaves (copy_, set_, as_strided_); null for any other
// node.
const char* EpilogueKind(const Node& n);

}  // namespace lathe::ir

#endif  // LATHE_IR_ALIAS_INFO_H_
