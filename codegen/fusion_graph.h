// -----------------------------------------------------------------------------
// File: fusion_graph.h
// -----------------------------------------------------------------------------
//
// A Graphviz picture of a graph with its fusion groups, for `lathec run
// --dump-dir` (graph.dot, and graph.svg when `dot` is installed): one box
// per graph node, an edge per use, and one cluster per scheduled kernel
// holding the nodes whose values it computes, labeled with the kernel's name
// and what it fused. Nodes that no kernel computes on their own (views, and
// pointwise values inlined into their readers) are dashed.
//
// Example:
//
//   std::string dot = FusionDot(graph, lowered.program);  // after Schedule
//   // digraph lathe { subgraph cluster_k0 { label="k0 (k0, k1)"; ... } }

#ifndef LATHE_CODEGEN_FUSION_GRAPH_H_
#define LATHE_CODEGEN_FUSION_GRAPH_H_

#include <string>

#include "codegen/loop_ir.h"
#include "ir/graph.h"

namespace lathe::codegen {

// FusionDot()
//
// `graph` as Graphviz text, its nodes grouped by the kernels of the
// scheduled `program` that compute them.
std::string FusionDot(const ir::Graph& graph, const Program& program);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_FUSION_GRAPH_H_
