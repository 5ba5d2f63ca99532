// -----------------------------------------------------------------------------
// File: verifier.h
// -----------------------------------------------------------------------------
//
// Checks that a graph is well formed before anything walks it: use-def
// order and use lists, inputs first and annotated, every target a known op
// called with the right arity and argument types, and every recorded
// annotation equal to what the op's meta function computes from its inputs
// (on a copy, in a scratch ShapeEnv: the graph is never changed).
//
// Example:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, ParseGraph(text));
//   RETURN_IF_ERROR(Verify(*g));   // "node 'mm': annotation f32[8, 4]... does
//                                  //  not match the op's meta f32[8, 16]..."

#ifndef LATHE_IR_VERIFIER_H_
#define LATHE_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"

namespace lathe::ir {

// Verify()
//
// OK when the graph is well formed and its annotations are consistent; the
// first problem otherwise, naming the node. Symbol hints come from the
// graph's attributes (`# lathe: hint`) and `options`. `written` says how the
// text wrote the annotations (ParseGraphWithStyle's style): what an
// annotation leaves out (strides, device) is not compared.
absl::Status Verify(const Graph& graph, const ShapePropOptions& options = {},
                    const PrintOptions& written = {});

}  // namespace lathe::ir

#endif  // LATHE_IR_VERIFIER_H_
