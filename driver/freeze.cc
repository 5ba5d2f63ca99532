#include "driver/freeze.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/alias_info.h"
#include "ir/op_registry.h"
#include "runtime/copy.h"
#include "status_macros.h"

namespace lathe {
namespace {

using ir::Node;

absl::Status Refused(const std::string& name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("frozen input '", name, "': ", why));
}

// Whether `a` (or, in a list, an element of it) is one of `nodes`.
bool Names(const ir::Arg& a, const absl::flat_hash_set<const Node*>& nodes) {
  if (a.kind == ir::Arg::Kind::kNode) return nodes.contains(a.node);
  if (a.kind != ir::Arg::Kind::kList) return false;
  for (const ir::Arg& e : a.list) {
    if (Names(e, nodes)) return true;
  }
  return false;
}

// The first node that writes `input`'s storage, in place or through a view
// of it (or changes its metadata), or null.
const Node* WriterOf(const Node* input) {
  absl::flat_hash_set<const Node*> same{input};  // views and the object
  std::vector<const Node*> work{input};
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Node* u : n->users()) {
      if (same.contains(u) || u->kind() != Node::Kind::kCall) continue;
      if (ir::MutatesMetadata(*u)) return u;
      if (const ir::OpDef* op = u->op(); op != nullptr) {
        const auto& schema = op->schema.arguments;
        for (size_t i = 0; i < u->args().size() && i < schema.size(); ++i) {
          if (schema[i].is_written() && Names(u->args()[i], same)) return u;
        }
        for (const auto& [key, a] : u->kwargs()) {
          int i = op->schema.ArgumentIndex(key);
          if (i >= 0 && schema[i].is_written() && Names(a, same)) return u;
        }
      }
      if (ir::IsView(*u) || ir::TensorObject(*u) != u) {
        same.insert(u);
        work.push_back(u);
      }
    }
  }
  return nullptr;
}

// `value` copied into a tensor laid out as `meta` says (checked to fit);
// with `check_only`, checked alone (a None value back).
absl::StatusOr<ir::Value> OwnedCopy(const std::string& name,
                                    const ir::TensorMeta& meta,
                                    const ir::Value& value,
                                    bool check_only = false) {
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < meta.dim(); ++d) {
    const symbolic::Expr& size = meta.sizes[d];
    const symbolic::Expr& stride = meta.strides[d];
    if (size.kind() != symbolic::ExprKind::kInteger ||
        stride.kind() != symbolic::ExprKind::kInteger) {
      return Refused(name, absl::StrCat("its annotation ", meta.ToAnnotation(),
                                        " has symbolic sizes or strides; a "
                                        "frozen input's are concrete"));
    }
    sizes.push_back(size.int_value());
    strides.push_back(stride.int_value());
  }
  if (!value.is_tensor() || !value.tensor.defined()) {
    return Refused(name, absl::StrCat("expected a tensor ", meta.ToAnnotation(),
                                      ", got ", value.DebugString()));
  }
  const Tensor& t = value.tensor;
  if (t.dtype() != meta.dtype ||
      !std::equal(sizes.begin(), sizes.end(), t.sizes().begin(),
                  t.sizes().end())) {
    return Refused(name, absl::StrCat("expected ", meta.ToAnnotation(),
                                      ", got ", t.ToString()));
  }
  if (!t.device().is_cpu()) {
    return Refused(name, absl::StrCat("expected a tensor on the host, got ",
                                      t.ToString()));
  }
  if (check_only) return ir::Value();
  ASSIGN_OR_RETURN(Tensor copy,
                   Tensor::EmptyStrided(sizes, strides, meta.dtype));
  RETURN_IF_ERROR(CopyTensor(copy, t));
  return ir::Value::OfTensor(std::move(copy));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ir::Graph>> FreezeInputs(
    const ir::Graph& written, const ir::Constants& values,
    ir::Constants* owned) {
  // Without `owned`, the values are checked and nothing is copied.
  ir::Constants checked;
  const bool check_only = owned == nullptr;
  if (check_only) owned = &checked;
  std::unique_ptr<ir::Graph> g = written.Clone();
  ir::GraphAttributes& a = g->attributes();
  for (const std::string& name : a.constants) {
    if (!values.contains(name)) {
      return Refused(name, absl::StrCat("`# lathe: constant ", name,
                                        "` needs its value (lathec --freeze ",
                                        name, "=FILE.npy)"));
    }
  }
  std::vector<Node*> frozen;
  size_t named = 0;
  for (Node* p : g->Placeholders()) {
    if (values.contains(p->name())) frozen.push_back(p);
  }
  // Frozen before (a graph FreezeInputs made): its constants' values again.
  for (const auto& n : g->nodes()) {
    const std::string& name = n->target();
    if (n->kind() != Node::Kind::kGetAttr || a.constants.count(name) == 0 ||
        !values.contains(name) || owned->contains(name)) {
      continue;
    }
    ++named;
    ASSIGN_OR_RETURN((*owned)[name], OwnedCopy(name, n->meta().tensor,
                                               values.at(name), check_only));
  }
  if (frozen.size() + named != values.size()) {
    std::vector<std::string> inputs;
    for (const Node* p : g->Placeholders()) inputs.push_back(p->name());
    for (const auto& [name, v] : values) {
      if ((g->Find(name) == nullptr ||
           g->Find(name)->kind() != Node::Kind::kPlaceholder) &&
          !owned->contains(name)) {
        return Refused(name, absl::StrCat("the graph has no input of that "
                                          "name (its inputs: ",
                                          absl::StrJoin(inputs, ", "), ")"));
      }
    }
  }
  // Where the constants go: before the first node that is not an input.
  Node* first = nullptr;
  for (const auto& n : g->nodes()) {
    if (n->kind() != Node::Kind::kPlaceholder) {
      first = n.get();
      break;
    }
  }
  for (Node* p : frozen) {
    const std::string name = p->name();
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor) {
      return Refused(name, "only a tensor input can be frozen");
    }
    if (a.composites.count(name) > 0 || a.alias_of.count(name) > 0 ||
        a.requires_grad.count(name) > 0) {
      return Refused(name,
                     "a composite, aliased or requires_grad input cannot be "
                     "frozen");
    }
    for (const auto& [input, other] : a.alias_of) {
      if (other == name) {
        return Refused(name, absl::StrCat("input '", input, "' aliases it"));
      }
    }
    for (const auto& n : g->nodes()) {
      if (n->kind() == Node::Kind::kGetAttr && n->target() == name) {
        return Refused(name, absl::StrCat("the graph also reads a constant "
                                          "'self.",
                                          name, "' (node '", n->name(),
                                          "'); rename one of them"));
      }
    }
    if (const Node* w = WriterOf(p); w != nullptr) {
      return Refused(name, absl::StrCat("node '", w->name(),
                                        "' writes it; a frozen input is "
                                        "read-only"));
    }
    ASSIGN_OR_RETURN(ir::Value copy, OwnedCopy(name, p->meta().tensor,
                                               values.at(name), check_only));
    (*owned)[name] = std::move(copy);
    Node* c = g->Insert(Node::Kind::kGetAttr, g->UniqueName(name), name, {}, {},
                        p->meta(), first);
    g->ReplaceAllUsesWith(p, c);
    RETURN_IF_ERROR(g->Erase(p));
    a.constants.insert(name);
  }
  return g;
}

std::vector<ir::Value> FrozenValuesOf(const ir::Graph& graph,
                                      const ir::Constants& frozen) {
  std::vector<ir::Value> out;
  for (const auto& n : graph.nodes()) {
    if (n->kind() != Node::Kind::kGetAttr ||
        graph.attributes().constants.count(n->target()) == 0) {
      continue;
    }
    auto it = frozen.find(n->target());
    out.push_back(it == frozen.end() ? ir::Value() : it->second);
  }
  return out;
}

}  // namespace lathe
