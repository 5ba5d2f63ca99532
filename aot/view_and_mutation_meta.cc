#include "aot/view_and_mutation_meta.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/interpreter.h"
#include "ir/known_ops.h"
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
  return n.op() == ir::Known().getitem && ir::IsView(n);
}

// Whether `n` reaches its tensor through detach() (so writing it is hidden
// from autograd).
bool ThroughDetach(const Node* n) {
  while (ir::IsView(*n) || ir::IsInplace(*n)) {
    if (n->op() == ir::Known().detach) return true;
    n = n->args()[0].node;
  }
  return false;
}

// PyTorch's _check_if_mutation_can_be_in_graph, without the mode flag: the
// mutations autograd need not see.
bool CanBeInGraph(const InputInfo& i) {
  return (i.mutates_data || i.mutates_storage_metadata) &&
         ((!i.mutates_metadata && !i.requires_grad) ||
          i.mutations_hidden_from_autograd || i.mutations_under_no_grad);
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
    ir::Graph& graph, const ViewAndMutationOptions& options) {
  if (graph.meta_inference() == nullptr) {
    return absl::FailedPreconditionError(
        "collecting view and mutation meta needs a shape-propagated graph "
        "(ir::PropagateShapes)");
  }
  ViewAndMutationMeta meta;
  std::vector<Node*> inputs = graph.Placeholders();
  meta.inputs.resize(inputs.size());
  const ir::GraphAttributes& attributes = graph.attributes();
  absl::flat_hash_map<ir::StorageId, int> input_of;  // storage -> input index
  absl::flat_hash_map<const Node*, int> index_of;    // input -> its index
  absl::flat_hash_map<const Node*, bool> rg;
  for (size_t i = 0; i < inputs.size(); ++i) {
    index_of[inputs[i]] = static_cast<int>(i);
    if (inputs[i]->meta().kind == ir::ValueMeta::Kind::kTensor) {
      input_of[inputs[i]->meta().tensor.storage] = static_cast<int>(i);
    }
    meta.inputs[i].requires_grad =
        attributes.requires_grad.count(inputs[i]->name()) > 0;
    meta.inputs[i].is_leaf = attributes.non_leaf.count(inputs[i]->name()) == 0;
    rg[inputs[i]] = meta.inputs[i].requires_grad;
  }
  absl::flat_hash_map<ir::StorageId, const Node*> maker;
  // A tensor object's view after its last set_ / t_-like rebinding.
  absl::flat_hash_map<const Node*, ir::TensorMeta> final_meta;
  std::vector<int> mutations(inputs.size(), 0), hidden(inputs.size(), 0),
      no_grad(inputs.size(), 0);
  bool grad_enabled = true;
  for (const auto& node : graph.nodes()) {
    const Node& n = *node;
    if (n.kind() == Node::Kind::kOutput || n.kind() == Node::Kind::kPlaceholder)
      continue;
    if (n.op() == ir::Known().set_grad_enabled && n.args().size() == 1 &&
        n.args()[0].kind == Arg::Kind::kBool) {
      grad_enabled = n.args()[0].b;
      continue;
    }
    // requires_grad: grad is on, any tensor input does, the op is not
    // detach, and the result is floating point.
    bool any = false;
    for (const Node* in : n.Inputs()) any = any || rg[in];
    bool floating = n.meta().kind == ir::ValueMeta::Kind::kTensor &&
                    IsFloatingPoint(n.meta().tensor.dtype);
    rg[&n] = grad_enabled && any && n.op() != ir::Known().detach &&
             (floating || n.meta().kind == ir::ValueMeta::Kind::kTuple);
    if (n.meta().kind == ir::ValueMeta::Kind::kTensor && MakesStorage(n)) {
      maker.emplace(n.meta().tensor.storage, &n);
    }
    if (!ir::IsInplace(n)) continue;
    const Node* target = n.args()[0].node;
    if (target->meta().kind != ir::ValueMeta::Kind::kTensor) continue;
    // set_ and t_-like ops rebind a tensor object: an input's counts when
    // the object is the input. Data writes land in a storage: an input's
    // when it is the input's.
    auto input_index = [&](const Node* object) {
      auto it = index_of.find(object);
      return it == index_of.end() ? -1 : it->second;
    };
    int i = -1;
    if (n.op() == ir::Known().set_ || ir::MutatesMetadata(n)) {
      final_meta[ir::TensorObject(n)] = n.meta().tensor;
      i = input_index(ir::TensorObject(n));
    } else if (auto in = input_of.find(target->meta().tensor.storage);
               in != input_of.end()) {
      i = in->second;
      meta.inputs[i].mutates_data = true;
    }
    // Grad mode and detach are judged per tensor object too: a write
    // through `a` after a.set_(b) lands in b's storage but is a's mutation.
    const Node* root = target;
    while (ir::IsView(*root) || ir::IsInplace(*root))
      root = root->args()[0].node;
    int j = input_index(root);
    for (int k : {i, j == i ? -1 : j}) {
      if (k < 0) continue;
      ++mutations[k];
      hidden[k] += ThroughDetach(target);
      no_grad[k] += !grad_enabled;
    }
  }
  // Rebindings count only when the final view differs (two t_() or a set_
  // back to the original storage cancel out).
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto final = final_meta.find(inputs[i]);
    if (final == final_meta.end()) continue;
    const ir::TensorMeta &m = inputs[i]->meta().tensor, &view = final->second;
    InputInfo& info = meta.inputs[i];
    info.mutates_storage_metadata = view.storage != m.storage;
    info.mutates_metadata =
        info.mutates_storage_metadata || view.sizes != m.sizes ||
        view.strides != m.strides || view.storage_offset != m.storage_offset;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    InputInfo& info = meta.inputs[i];
    if (info.mutates_storage_metadata) info.mutates_data = false;
    info.mutations_hidden_from_autograd =
        mutations[i] > 0 && hidden[i] == mutations[i];
    info.mutations_under_no_grad =
        mutations[i] > 0 && no_grad[i] == mutations[i];
    if (!info.mutates_data && !info.mutates_metadata) continue;
    bool in_graph = CanBeInGraph(info);
    if (info.mutates_storage_metadata && !in_graph) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Encountered a set_ on a graph input ('", inputs[i]->name(),
          "'), but the input has other mutations that we cannot keep in the "
          "graph (requires_grad=",
          info.requires_grad ? "True" : "False", ", mutations under no_grad=",
          info.mutations_under_no_grad ? "True" : "False",
          ", hidden from autograd=",
          info.mutations_hidden_from_autograd ? "True" : "False", ")"));
    }
    info.mutation_type = in_graph && options.keep_input_mutations
                             ? MutationType::kMutatedInGraph
                             : MutationType::kMutatedOutGraph;
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
  // An output is its tensor object as the graph left it.
  auto meta_of = [&](const Node* o) -> const ir::TensorMeta& {
    auto it = final_meta.find(ir::TensorObject(*o));
    return it != final_meta.end() ? it->second : o->meta().tensor;
  };
  absl::flat_hash_map<ir::StorageId, int> aliases, multi_output_aliases;
  for (const Node* o : outs) {
    if (o == nullptr || o->meta().kind != ir::ValueMeta::Kind::kTensor)
      continue;
    ++aliases[meta_of(o).storage];
    if (IsMultiOutputView(*o)) ++multi_output_aliases[meta_of(o).storage];
  }
  for (const Node* o : outs) {
    OutputInfo info;
    if (o == nullptr || o->meta().kind != ir::ValueMeta::Kind::kTensor) {
      meta.outputs.push_back(info);
      continue;
    }
    info.requires_grad = rg[o];
    info.tensor = meta_of(o);
    ir::StorageId s = info.tensor.storage;
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
    } else if (!info.requires_grad && aliases[s] > 1) {
      // `return (out, out.detach())` (#100348): the same view of an
      // intermediate that requires grad is regenerated from that output.
      for (size_t j = 0; j < outs.size(); ++j) {
        const Node* other = outs[j];
        if (other == nullptr || other == o ||
            other->meta().kind != ir::ValueMeta::Kind::kTensor || !rg[other])
          continue;
        const ir::TensorMeta &a = info.tensor, &b = meta_of(other);
        if (b.storage == s && a.sizes == b.sizes && a.strides == b.strides &&
            a.storage_offset == b.storage_offset) {
          info.type = OutputType::kAliasOfIntermediateBaseIsUserOutput;
          info.base_index = static_cast<int>(j);
          break;
        }
      }
    }
    meta.outputs.push_back(info);
  }
  return meta;
}

}  // namespace lathe::aot
