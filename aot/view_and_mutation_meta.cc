#include "aot/view_and_mutation_meta.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/shape_prop.h"
#include "status_macros.h"

namespace lathe::aot {
namespace {

using ir::Arg;
using ir::Node;

// Whether `n` made its storage (rather than viewing or updating another's).
bool MakesStorage(const Node& n) { return !ir::IsView(n) && !ir::IsInplace(n); }

// An element of a multi-output view (unbind, split).
bool IsMultiOutputView(const Node& n) {
  return n.kind() == Node::Kind::kCall && n.target() == "getitem" &&
         ir::IsView(n);
}

}  // namespace

std::string OutputTypeName(OutputType type) {
  switch (type) {
    case OutputType::kNonAlias:
      return "non_alias";
    case OutputType::kAliasOfInput:
      return "alias_of_input";
    case OutputType::kIsInput:
      return "is_input";
    case OutputType::kAliasOfIntermediateSaveAsOutput:
      return "alias_of_intermediate_save_as_output";
    case OutputType::kAliasOfIntermediate:
      return "alias_of_intermediate";
    case OutputType::kAliasOfIntermediateBaseIsUserOutput:
      return "alias_of_intermediate_base_is_user_output";
    case OutputType::kUnsafeViewAlias:
      return "unsafe_view_alias";
  }
  return "?";
}

absl::StatusOr<ViewAndMutationMeta> CollectViewAndMutationMeta(
    ir::Graph& graph, symbolic::ShapeEnv& env) {
  RETURN_IF_ERROR(ir::PropagateShapes(graph, env));
  ViewAndMutationMeta meta;
  std::vector<Node*> inputs = graph.Placeholders();
  meta.inputs.resize(inputs.size());
  absl::flat_hash_set<std::string> rg_names;
  for (const ir::Directive& d : graph.directives()) {
    std::vector<std::string> w = absl::StrSplit(d.text, ' ', absl::SkipEmpty());
    if (w.size() == 2 && w[0] == "requires_grad") rg_names.insert(w[1]);
  }
  absl::flat_hash_map<ir::StorageId, int> input_of;  // storage -> input index
  absl::flat_hash_map<const Node*, bool> rg;
  absl::flat_hash_map<const Node*, ir::TensorMeta>
      final_view;  // input -> its last rebinding
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->meta().kind == ir::ValueMeta::Kind::kTensor) {
      input_of[inputs[i]->meta().tensor.storage] = static_cast<int>(i);
    }
    meta.inputs[i].requires_grad = rg_names.contains(inputs[i]->name());
    rg[inputs[i]] = meta.inputs[i].requires_grad;
  }
  absl::flat_hash_map<ir::StorageId, const Node*> maker;
  for (const auto& node : graph.nodes()) {
    const Node& n = *node;
    if (n.kind() == Node::Kind::kOutput || n.kind() == Node::Kind::kPlaceholder)
      continue;
    // requires_grad: any tensor input does, and the result is floating point.
    bool any = false;
    for (const Node* in : n.Inputs()) any = any || rg[in];
    bool floating = n.meta().kind == ir::ValueMeta::Kind::kTensor &&
                    IsFloatingPoint(n.meta().tensor.dtype);
    rg[&n] = any && (floating || n.meta().kind == ir::ValueMeta::Kind::kTuple);
    if (n.meta().kind == ir::ValueMeta::Kind::kTensor && MakesStorage(n)) {
      maker.emplace(n.meta().tensor.storage, &n);
    }
    if (!ir::IsInplace(n)) continue;
    const Node* target = n.args()[0].node;
    if (target->meta().kind != ir::ValueMeta::Kind::kTensor) continue;
    auto in = input_of.find(target->meta().tensor.storage);
    if (in == input_of.end()) continue;
    InputInfo& info = meta.inputs[in->second];
    if (n.target() == "aten.set_.source_Tensor") {
      info.mutates_storage_metadata = info.mutates_metadata = true;
    } else if (ir::MutatesMetadata(n.target())) {
      if (ir::TensorObject(*target) == inputs[in->second])
        final_view[inputs[in->second]] = n.meta().tensor;
    } else {
      info.mutates_data = true;
    }
  }
  for (const auto& [input, view] : final_view) {
    const ir::TensorMeta& m = input->meta().tensor;
    int i = input_of[m.storage];
    meta.inputs[i].mutates_metadata |= view.sizes != m.sizes ||
                                       view.strides != m.strides ||
                                       view.storage_offset != m.storage_offset;
  }
  for (InputInfo& info : meta.inputs) {
    if (info.mutates_storage_metadata) info.mutates_data = false;
  }
  // Outputs, by PyTorch's rules in order.
  std::vector<const Node*> outs;
  for (const Arg& a : graph.output()->args()) {
    if (a.kind == Arg::Kind::kList) {
      for (const Arg& e : a.list)
        outs.push_back(e.kind == Arg::Kind::kNode ? e.node : nullptr);
    } else {
      outs.push_back(a.kind == Arg::Kind::kNode ? a.node : nullptr);
    }
  }
  absl::flat_hash_map<ir::StorageId, int> aliases, multi_output_aliases;
  for (const Node* o : outs) {
    if (o == nullptr || o->meta().kind != ir::ValueMeta::Kind::kTensor)
      continue;
    ++aliases[o->meta().tensor.storage];
    if (IsMultiOutputView(*o)) ++multi_output_aliases[o->meta().tensor.storage];
  }
  for (const Node* o : outs) {
    OutputInfo info;
    if (o == nullptr || o->meta().kind != ir::ValueMeta::Kind::kTensor) {
      meta.outputs.push_back(info);
      continue;
    }
    info.requires_grad = rg[o];
    ir::StorageId s = o->meta().tensor.storage;
    // The input object itself (also after set_ gave it another storage).
    auto self = std::find(inputs.begin(), inputs.end(), ir::TensorObject(*o));
    if (self != inputs.end()) {
      info.type = OutputType::kIsInput;
      info.base_index = static_cast<int>(self - inputs.begin());
      meta.outputs.push_back(info);
      continue;
    }
    if (auto in = input_of.find(s);
        in != input_of.end() &&
        !meta.inputs[in->second].mutates_storage_metadata) {
      if (info.requires_grad && multi_output_aliases[s] == aliases[s] &&
          IsMultiOutputView(*o)) {
        info.type =
            OutputType::kNonAlias;  // the aliasing is hidden from autograd
      } else {
        info.type = OutputType::kAliasOfInput;
        info.base_index = in->second;
      }
    } else if (!MakesStorage(*ir::TensorObject(*o)) && maker.contains(s) &&
               info.requires_grad && rg[maker[s]]) {
      const Node* base = maker[s];
      int non_multi = aliases[s] - multi_output_aliases[s];
      auto user = std::find(outs.begin(), outs.end(), base);
      auto added = std::find(meta.intermediate_bases.begin(),
                             meta.intermediate_bases.end(), base);
      if (aliases[s] == 1 || non_multi <= 1) {
        info.type = OutputType::kUnsafeViewAlias;
      } else if (user != outs.end()) {
        info.type = OutputType::kAliasOfIntermediateBaseIsUserOutput;
        info.base_index = static_cast<int>(user - outs.begin());
      } else if (added != meta.intermediate_bases.end()) {
        info.type = OutputType::kAliasOfIntermediate;
        info.base_index =
            static_cast<int>(added - meta.intermediate_bases.begin());
      } else {
        info.type = OutputType::kAliasOfIntermediateSaveAsOutput;
        info.base_index = static_cast<int>(meta.intermediate_bases.size());
        meta.intermediate_bases.push_back(base);
      }
    }
    meta.outputs.push_back(info);
  }
  return meta;
}

}  // namespace lathe::aot
