#include "codegen/fusion_graph.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace lathe::codegen {
namespace {

// `s` as a Graphviz double-quoted string.
std::string Quote(absl::string_view s) {
  return absl::StrCat(
      "\"",
      absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}),
      "\"");
}

std::string NodeLabel(const ir::Node& n) {
  switch (n.kind()) {
    case ir::Node::Kind::kPlaceholder:
      return absl::StrCat(n.name(), "\ninput");
    case ir::Node::Kind::kGetAttr:
      return absl::StrCat(n.name(), "\nself.", n.target());
    case ir::Node::Kind::kOutput:
      return "output";
    case ir::Node::Kind::kCall:
      return absl::StrCat(n.name(), "\n", n.target());
  }
  return n.name();
}

}  // namespace

std::string FusionDot(const ir::Graph& graph, const Program& program) {
  // The kernel that computes each node (the first, for a node with several).
  absl::flat_hash_map<std::string, int> kernel_of;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    for (const std::string& n : program.kernels[k].nodes) {
      kernel_of.emplace(n, static_cast<int>(k));
    }
  }
  std::vector<std::vector<const ir::Node*>> members(program.kernels.size());
  std::string loose;
  for (const auto& node : graph.nodes()) {
    auto it = kernel_of.find(node->name());
    if (it != kernel_of.end()) {
      members[it->second].push_back(node.get());
      continue;
    }
    bool plain = node->kind() != ir::Node::Kind::kCall;
    absl::StrAppend(&loose, "  ", Quote(node->name()),
                    " [label=", Quote(NodeLabel(*node)),
                    plain ? "" : ", style=dashed", "];\n");
  }
  std::string out = "digraph lathe {\n  node [shape=box, fontsize=10];\n";
  out += loose;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const Kernel& kernel = program.kernels[k];
    std::string label = kernel.name;
    if (kernel.kind == Kernel::Kind::kExtern) {
      absl::StrAppend(&label, " extern ", kernel.routine);
    }
    if (kernel.fused_from.size() > 1) {
      absl::StrAppend(&label, " (fused ",
                      absl::StrJoin(kernel.fused_from, ", "), ")");
    }
    absl::StrAppend(&out, "  subgraph cluster_", kernel.name,
                    " {\n    label=", Quote(label), ";\n    style=rounded;\n");
    for (const ir::Node* n : members[k]) {
      absl::StrAppend(&out, "    ", Quote(n->name()),
                      " [label=", Quote(NodeLabel(*n)), "];\n");
    }
    out += "  }\n";
  }
  for (const auto& node : graph.nodes()) {
    for (const ir::Node* in : node->Inputs()) {
      absl::StrAppend(&out, "  ", Quote(in->name()), " -> ",
                      Quote(node->name()), ";\n");
    }
  }
  out += "}\n";
  return out;
}

}  // namespace lathe::codegen
