#include "aot/functionalize.h"

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/infer_meta.h"
#include "ir/interpreter.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::aot {
namespace {

using ir::Arg;
using ir::Node;

// native_batch_norm in training mode: PyTorch's kernel updates the running
// statistics in place although its schema does not mark them written (the
// only such op in the registry). It becomes the op whose schema says so,
// _native_batch_norm_legit (the same arguments), or its no_stats overload
// when there are no statistics, so the writes are functionalized and the
// caller's tensors updated, as in eager.
void MarkHiddenWrites(Node* n) {
  if (n->target() != "aten.native_batch_norm.default" || n->op() == nullptr) {
    return;
  }
  // The arguments by position (keywords placed by the schema).
  std::vector<Arg> args = n->args();
  for (const auto& [name, arg] : n->kwargs()) {
    int i = n->op()->schema.ArgumentIndex(name);
    if (i < 0) return;  // the op refuses it
    if (args.size() <= static_cast<size_t>(i)) args.resize(i + 1);
    args[i] = arg;
  }
  if (args.size() != 8 || args[5].kind != Arg::Kind::kBool || !args[5].b) {
    return;
  }
  bool stats = args[3].kind == Arg::Kind::kNode;
  if (stats != (args[4].kind == Arg::Kind::kNode)) return;  // the op refuses
  if (stats) {
    n->SetArgs(args, {});
    n->set_target("aten._native_batch_norm_legit.default");
  } else {
    n->SetArgs({args[0], args[1], args[2], args[5], args[6], args[7]}, {});
    n->set_target("aten._native_batch_norm_legit.no_stats");
  }
}

// What an eager value is: a view chain from the tensor that owns the storage.
struct Handle {
  Node* base = nullptr;
  std::vector<Node*>
      chain;  // view nodes from base, in order (getitem included)
};

class Functionalizer {
 public:
  Functionalizer(ir::Graph& graph, symbolic::ShapeEnv& env)
      : graph_(graph), env_(env) {}

  absl::StatusOr<bool> Run() {
    std::vector<Node*> order;
    for (const auto& n : graph_.nodes()) order.push_back(n.get());
    bool changed = false;
    for (Node* n : order) {
      if (n->kind() == Node::Kind::kPlaceholder ||
          n->kind() == Node::Kind::kGetAttr) {
        handles_[n] = {n, {}};
        continue;
      }
      if (n->kind() == Node::Kind::kCall) MarkHiddenWrites(n);
      if (const ir::OpDef* op = n->kind() == Node::Kind::kCall
                                    ? ir::OpRegistry::Global().Find(n->target())
                                    : nullptr;
          op != nullptr && !op->written_results.empty()) {
        RETURN_IF_ERROR(MutateWritten(n, op));
        changed = true;
        continue;
      }
      if (ir::IsInplace(*n)) {
        RETURN_IF_ERROR(Mutate(n, ir::OpRegistry::Global().Find(n->target())));
        changed = true;
        continue;
      }
      if (n->kind() == Node::Kind::kOutput) {
        for (Node* p : graph_.Placeholders()) {
          if (Resolve(p) == p) continue;
          ASSIGN_OR_RETURN(Node * now, Read(p, n));
          bool returned = false;
          for (Node* in : n->Inputs()) returned = returned || in == p;
          if (returned) n->ReplaceInput(p, now);
          rebound.push_back(
              {p, Resolve(p), now, handles_[Resolve(p)].base != p, returned});
        }
        // Other stale values (an unrebound input stays itself here).
        for (Node* in : n->Inputs()) {
          if (in->kind() == Node::Kind::kPlaceholder && Resolve(in) == in) {
            continue;
          }
          ASSIGN_OR_RETURN(Node * now, Read(in, n));
          if (now != in) n->ReplaceInput(in, now);
        }
        // The data epilogue; a returned input is returned as its copy_ (the
        // input itself, as in eager).
        for (Node* p : graph_.Placeholders()) {
          if (Version(p) == 0) continue;
          ASSIGN_OR_RETURN(
              Node * copy,
              graph_.InsertCall(n, "aten.copy_.default",
                                {Arg::Of(p), Arg::Of(current_[p])}));
          if (Resolve(p) == p) n->ReplaceInput(p, copy);
        }
        continue;
      }
      // A reader: stale arguments are regenerated from their base's value.
      // A view's handle extends its source's (taken before regeneration).
      bool view = ir::IsView(*n);
      Node* source = view ? n->args()[0].node : nullptr;
      RETURN_IF_ERROR(ReadArgs(n));
      if (n->kind() != Node::Kind::kCall) continue;
      if (view && handles_.contains(Resolve(source))) {
        Handle h = handles_[Resolve(source)];  // what the source means now
        if (n->op() == ir::Known().as_strided && Version(h.base) > 0) {
          // Storage-relative: it views the base's current value.
          n->ReplaceInput(n->args()[0].node, Current(h.base));
          stale_.insert(n);
        }
        h.chain.push_back(n);
        handles_[n] = h;
      } else {
        handles_[n] = {n, {}};
      }
      seen_[n] = Version(handles_[n].base);
    }
    for (Node* n : removed_) {
      stale_.erase(n);
      RETURN_IF_ERROR(graph_.Erase(n));
    }
    // Nodes that now read functional values get their metas from them (new
    // nodes got theirs when inserted).
    std::vector<Node*> stale(stale_.begin(), stale_.end());
    RETURN_IF_ERROR(ir::RefreshMetas(graph_, env_, stale).status());
    return changed;
  }

 private:
  int Version(Node* base) {
    auto it = version_.find(base);
    return it == version_.end() ? 0 : it->second;
  }

  // The current value of `node`'s eager value, inserting view replays
  // before `at` when its base changed since it was made.
  // What `node` means now: a metadata mutation (t_, ...) rebinds a tensor
  // to a new view of its storage.
  Node* Resolve(Node* node) {
    for (auto it = rebound_.find(node); it != rebound_.end();
         it = rebound_.find(node)) {
      node = it->second;
    }
    return node;
  }

  absl::StatusOr<Node*> Read(Node* node, Node* at) {
    node = Resolve(node);
    auto h = handles_.find(node);
    if (h == handles_.end()) return node;  // not a tensor we track
    Node* base = h->second.base;
    auto made = seen_.find(node);
    if (made != seen_.end() ? made->second == Version(base)
                            : Version(base) == 0) {
      return node;  // still current
    }
    return Replay(h->second, h->second.chain.size(), at);
  }

  // The value of the first `k` views of `h`'s chain applied to its base's
  // current value.
  absl::StatusOr<Node*> Replay(const Handle& h, size_t k, Node* at) {
    if (k > 0) {
      auto whole =
          replayed_.find(std::make_tuple(h.chain[k - 1], Version(h.base)));
      if (whole != replayed_.end()) return whole->second;
    }
    Node* value = Current(h.base);
    for (size_t i = 0; i < k; ++i) {
      Node* v = h.chain[i];
      auto key = std::make_tuple(v, Version(h.base));
      auto cached = replayed_.find(key);
      if (cached != replayed_.end()) {
        value = cached->second;
        continue;
      }
      std::vector<Arg> args = v->args();
      if (v->op() == ir::Known().getitem) {
        // Replay the multi-output view op, then take the element.
        Node* list = v->args()[0].node;
        auto lkey = std::make_tuple(list, Version(h.base));
        Node* replayed_list;
        if (auto l = replayed_.find(lkey); l != replayed_.end()) {
          replayed_list = l->second;
        } else {
          std::vector<Arg> largs = list->args();
          largs[0] = Arg::Of(value);
          ASSIGN_OR_RETURN(replayed_list,
                           graph_.InsertCall(at, list->target(), largs,
                                             list->kwargs(), list->name()));
          replayed_[lkey] = replayed_list;
        }
        args[0] = Arg::Of(replayed_list);
      } else if (v->op() == ir::Known().as_strided) {
        args[0] =
            Arg::Of(Current(h.base));  // storage-relative: applied to the base
      } else {
        args[0] = Arg::Of(value);
      }
      ASSIGN_OR_RETURN(value, graph_.InsertCall(at, v->target(), args,
                                                v->kwargs(), v->name()));
      replayed_[key] = value;
    }
    return value;
  }

  Node* Current(Node* base) {
    auto it = current_.find(base);
    return it == current_.end() ? base : it->second;
  }

  absl::Status ReadArgs(Node* n) {
    std::vector<Node*> inputs = n->Inputs();
    for (Node* in : inputs) {
      ASSIGN_OR_RETURN(Node * now, Read(in, n));
      if (now != in) {
        n->ReplaceInput(in, now);
        stale_.insert(n);
      }
    }
    return absl::OkStatus();
  }

  // Retires the mutating node `n`: its readers read `to` from now on (their
  // metas are refreshed at the end), and it is erased at the end, so no
  // pointer is reused meanwhile.
  void Retire(Node* n, Node* to) {
    stale_.insert(n->users().begin(), n->users().end());
    graph_.ReplaceAllUsesWith(n, to);
    removed_.push_back(n);
  }

  // `value` written back through view `v` into `src` (v's input's value).
  // `source` is v's input as first propagated (for its shape).
  absl::StatusOr<Node*> Unview(Node* v, Node* source, Node* src, Node* value,
                               Node* at) {
    auto make = [&](const std::string& target, std::vector<Arg> args) {
      return graph_.InsertCall(at, target, std::move(args));
    };
    const std::vector<Arg>& a = v->args();
    const ir::KnownOps& k = ir::Known();
    const ir::OpDef* t = v->op();
    auto sizes_of = [&](Node* n) -> absl::StatusOr<Arg> {
      std::vector<Arg> items;
      if (n->meta().kind != ir::ValueMeta::Kind::kTensor) {
        return absl::UnimplementedError(
            absl::StrCat("'", n->name(), "' has no shape"));
      }
      const std::vector<symbolic::Expr>& sizes = n->meta().tensor.sizes;
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d].kind() == symbolic::ExprKind::kInteger) {
          items.push_back(Arg::Int(sizes[d].int_value()));
          continue;
        }
        // A symbolic size is read off the view's source (its value now has
        // the same shape).
        ASSIGN_OR_RETURN(Node * size, graph_.InsertCall(
                                          at, "aten.sym_size.int",
                                          {Arg::Of(src),
                                           Arg::Int(static_cast<int64_t>(d))}));
        items.push_back(Arg::Of(size));
      }
      return Arg::List(std::move(items));
    };
    // slice, select, diagonal (as_strided addresses the storage: WriteBack
    // scatters it into the base).
    if (t != nullptr && !t->scatter.empty() && t != k.as_strided) {
      std::vector<Arg> args = {Arg::Of(src), Arg::Of(value)};
      for (size_t i = 1; i < a.size(); ++i) args.push_back(a[i]);
      return make(t->scatter, args);
    }
    if (t == k.view || t == k.unsafe_view || t == k.reshape) {
      ASSIGN_OR_RETURN(Arg sizes, sizes_of(source));
      return make("aten.view.default", {Arg::Of(value), sizes});
    }
    if (t == k.t) return make("aten.t.default", {Arg::Of(value)});
    if (t == k.transpose) {
      return make("aten.transpose.int", {Arg::Of(value), a[1], a[2]});
    }
    if (t == k.alias || t == k.detach) {
      return value;
    }
    if (t == k.unsqueeze) {
      return make("aten.squeeze.dim", {Arg::Of(value), a[1]});
    }
    if (t == k.permute && a[1].kind == Arg::Kind::kList) {
      std::vector<Arg> inverse(a[1].list.size());
      for (size_t i = 0; i < a[1].list.size(); ++i) {
        int64_t d = a[1].list[i].i;
        if (d < 0) d += static_cast<int64_t>(a[1].list.size());
        inverse[d] = Arg::Int(static_cast<int64_t>(i));
      }
      return make("aten.permute.default",
                  {Arg::Of(value), Arg::List(std::move(inverse))});
    }
    return absl::UnimplementedError(absl::StrCat("writing through view '",
                                                 v->name(), "' (", v->target(),
                                                 ") is not supported yet"));
  }

  // `value` written back as element `k` of the list op `list` (split,
  // split_with_sizes, unbind) into `src`, the list op's input's value.
  absl::StatusOr<Node*> UnviewElement(Node* list, int64_t k, Node* element,
                                      Node* src, Node* value, Node* at) {
    auto make = [&](const std::string& target, std::vector<Arg> args) {
      return graph_.InsertCall(at, target, std::move(args));
    };
    const std::vector<Arg>& a = list->args();
    auto int_arg = [&](size_t i, int64_t fallback) {
      return i < a.size() && a[i].kind == Arg::Kind::kInt ? a[i].i : fallback;
    };
    if (list->op() == ir::Known().unbind) {
      return make(
          "aten.select_scatter.default",
          {Arg::Of(src), Arg::Of(value), Arg::Int(int_arg(1, 0)), Arg::Int(k)});
    }
    int64_t dim = int_arg(2, 0);
    std::vector<symbolic::Expr> sizes = element->meta().tensor.sizes;
    int64_t rank = static_cast<int64_t>(sizes.size());
    if (dim < 0) dim += rank;
    if (dim < 0 || dim >= rank ||
        sizes[dim].kind() != symbolic::ExprKind::kInteger) {
      return absl::UnimplementedError(absl::StrCat(
          "writing through '", element->name(), "' is not supported yet"));
    }
    int64_t start = 0;
    if (list->op() == ir::Known().split && a.size() > 1 &&
        a[1].kind == Arg::Kind::kInt) {
      start = k * a[1].i;
    } else if (list->op() == ir::Known().split_with_sizes && a.size() > 1 &&
               a[1].kind == Arg::Kind::kList) {
      for (int64_t j = 0; j < k; ++j) start += a[1].list[j].i;
    } else {
      return absl::UnimplementedError(absl::StrCat(
          "writing through '", element->name(), "' is not supported yet"));
    }
    return make("aten.slice_scatter.default",
                {Arg::Of(src), Arg::Of(value), Arg::Int(dim), Arg::Int(start),
                 Arg::Int(start + sizes[dim].int_value())});
  }

  absl::Status Mutate(Node* n, const ir::OpDef* op) {
    auto unsupported = [&](const std::string& why) {
      return absl::UnimplementedError(
          absl::StrCat("node '", n->name(), "': ", why));
    };
    if (ir::MutatesMetadata(*n)) return Restride(n);
    if (op->functional.empty()) {
      return unsupported(absl::StrCat(n->target(), " has no functional twin"));
    }
    ASSIGN_OR_RETURN(Handle h, WrittenHandle(n, 0));
    Node* self = n->args()[0].node;
    RETURN_IF_ERROR(
        ReadArgs(n));  // self and the others at their current values
    // functional = op(args) in place of n.
    ASSIGN_OR_RETURN(
        Node * functional,
        graph_.InsertCall(n, op->functional, n->args(), n->kwargs()));
    RETURN_IF_ERROR(WriteBack(n, h, functional));
    // Readers of n read self's view; give them a placeholder to find.
    Retire(n, self);
    return absl::OkStatus();
  }

  // The tensor argument `i` of `n`, which `n` writes, as a tracked handle.
  absl::StatusOr<Handle> WrittenHandle(Node* n, size_t i) {
    if (i >= n->args().size() || n->args()[i].kind != Arg::Kind::kNode ||
        !handles_.contains(Resolve(n->args()[i].node))) {
      return absl::UnimplementedError(
          absl::StrCat("node '", n->name(), "': the mutated argument ", i,
                       " is not a tensor of the graph"));
    }
    Node* self = n->args()[i].node;
    Handle h = handles_[Resolve(self)];
    if (auto f = frozen_.find(h.base); f != frozen_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", n->name(),
          "': cannot mutate tensors with frozen storage ('", self->name(),
          "' views the storage input '", h.base->name(),
          "' had before set_ node '", f->second, "')"));
    }
    return h;
  }

  // An op that writes arguments besides its first (OpDef::written_results):
  // its functional twin computes the results and the written arguments'
  // new values, which are written back as an in-place op's result is, one
  // after the other (views of one base: each scatter starts from the base's
  // value after the previous one).
  absl::Status MutateWritten(Node* n, const ir::OpDef* op) {
    std::vector<std::pair<Handle, int>> writes;  // handle, twin's result
    for (const auto& [arg, result] : op->written_results) {
      ASSIGN_OR_RETURN(Handle h, WrittenHandle(n, arg));
      writes.push_back({h, result});
    }
    RETURN_IF_ERROR(ReadArgs(n));
    ASSIGN_OR_RETURN(
        Node * functional,
        graph_.InsertCall(n, op->functional, n->args(), n->kwargs()));
    for (const auto& [h, result] : writes) {
      ASSIGN_OR_RETURN(Node * value, graph_.InsertCall(n, "getitem",
                                                       {Arg::Of(functional),
                                                        Arg::Int(result)}));
      RETURN_IF_ERROR(WriteBack(n, h, value));
    }
    // The twin's first results are n's own.
    Retire(n, functional);
    return absl::OkStatus();
  }

  // Makes `functional` (inserted before `n`) the new value of the tensor
  // `h` names: written back through h's view chain into its base, innermost
  // first, and the base's version bumped.
  absl::Status WriteBack(Node* n, const Handle& h, Node* functional) {
    auto unsupported = [&](const std::string& why) {
      return absl::UnimplementedError(
          absl::StrCat("node '", n->name(), "': ", why));
    };
    Node* value = functional;
    for (size_t i = h.chain.size(); i > 0; --i) {
      Node* v = h.chain[i - 1];
      if (v->op() == ir::Known().getitem) {
        // An element of split / split_with_sizes / unbind: scatter into the
        // list op's input, then continue below the list op.
        Node* list = i >= 2 ? h.chain[i - 2] : nullptr;
        if (list == nullptr || v->args().size() < 2 ||
            v->args()[1].kind != Arg::Kind::kInt ||
            v->meta().kind != ir::ValueMeta::Kind::kTensor) {
          return unsupported(absl::StrCat("writing through '", v->name(),
                                          "' is not supported yet"));
        }
        ASSIGN_OR_RETURN(Node * src, Replay(h, i - 2, n));
        ASSIGN_OR_RETURN(value,
                         UnviewElement(list, v->args()[1].i, v, src, value, n));
        --i;  // the list op is undone too
        continue;
      }
      if (v->op() == ir::Known().as_strided) {
        // as_strided addresses the storage, not its input: scatter straight
        // into the base (which owns the storage from offset 0).
        std::vector<Arg> args = {Arg::Of(Current(h.base)), Arg::Of(value)};
        for (size_t j = 1; j < v->args().size(); ++j)
          args.push_back(v->args()[j]);
        ASSIGN_OR_RETURN(
            value, graph_.InsertCall(n, "aten.as_strided_scatter.default", args,
                                     v->kwargs()));
        break;
      }
      ASSIGN_OR_RETURN(Node * src, Replay(h, i - 1, n));
      Node* source = i >= 2 ? h.chain[i - 2] : h.base;
      ASSIGN_OR_RETURN(value, Unview(v, source, src, value, n));
    }
    current_[h.base] = value;
    ++version_[h.base];
    // The mutated view's new value is the functional result itself.
    if (h.chain.empty()) {
      current_[h.base] = functional;
    } else {
      replayed_[std::make_tuple(h.chain.back(), Version(h.base))] = functional;
    }
    return absl::OkStatus();
  }

  // t_ / transpose_ / unsqueeze_ / as_strided_: the tensor becomes a new view
  // of its storage; later reads of it read that view.
  absl::Status Restride(Node* n) {
    const ir::KnownOps& k = ir::Known();
    // The view each metadata mutation makes of its argument.
    const ir::OpDef* view = n->op() == k.t_            ? k.t
                            : n->op() == k.transpose_  ? k.transpose
                            : n->op() == k.unsqueeze_  ? k.unsqueeze
                            : n->op() == k.as_strided_ ? k.as_strided
                                                       : nullptr;
    bool set = n->op() == k.set_;
    if ((!set && view == nullptr) || n->args().empty() ||
        n->args()[0].kind != Arg::Kind::kNode ||
        (set &&
         (n->args().size() < 2 || n->args()[1].kind != Arg::Kind::kNode))) {
      return absl::UnimplementedError(
          absl::StrCat("node '", n->name(), "': ", n->target(),
                       " changes a tensor's storage; functionalizing that is "
                       "not supported yet"));
    }
    Node* self = n->args()[0].node;
    // set_(self, source): self becomes an alias of source's storage.
    Node* now = Resolve(set ? n->args()[1].node : self);
    if (!handles_.contains(now)) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", n->name(), "': the argument is not a tensor of the graph"));
    }
    if (set) {
      // The storage an input leaves behind is frozen (PyTorch #126236): a
      // write through an older view of it could not be put back.
      const Node* object = ir::TensorObject(*self);
      auto old = handles_.find(Resolve(self));
      if (old != handles_.end() && old->second.base == object &&
          object->kind() == Node::Kind::kPlaceholder) {
        frozen_[old->second.base] = n->name();
      }
      frozen_.erase(handles_[now].base);  // set_ back to it thaws it
    }
    RETURN_IF_ERROR(ReadArgs(n));
    // The new view: of self's current value, or for set_ an alias of the
    // source's (so that later rebinding the source does not move self).
    ASSIGN_OR_RETURN(
        Node * fv,
        set ? graph_.InsertCall(n, "aten.alias.default", {n->args()[1]})
            : graph_.InsertCall(n, view->target, n->args(), n->kwargs()));
    Handle h = handles_[now];
    h.chain.push_back(fv);
    handles_[fv] = h;
    // Its eager layout in the storage (fv's own meta is that of a functional
    // value).
    layouts[fv] = n->meta().tensor;
    seen_[fv] = Version(h.base);
    rebound_[self] = fv;  // keyed by the tensor object
    Retire(n, self);
    return absl::OkStatus();
  }

  ir::Graph& graph_;
  symbolic::ShapeEnv& env_;
  absl::flat_hash_map<Node*, Handle> handles_;
  absl::flat_hash_map<Node*, int> seen_;  // base version when a node was made
  // Input storages abandoned by set_ -> that set_'s name.
  absl::flat_hash_map<Node*, std::string> frozen_;
  absl::flat_hash_map<Node*, Node*> current_;
  absl::flat_hash_map<Node*, int> version_;
  absl::flat_hash_map<std::tuple<Node*, int>, Node*> replayed_;
  absl::flat_hash_map<Node*, Node*> rebound_;
  std::vector<Node*> removed_;
  absl::flat_hash_set<Node*> stale_;  // calls whose inputs were replaced

 public:
  // An input rebound by a metadata or storage mutation (t_, set_, ...).
  struct Rebound {
    Node* input;
    Node* view;        // its final view
    Node* value;       // that view's value at the output
    bool new_storage;  // set_ gave it another storage
    bool returned;     // the output returns `value` for it
  };
  std::vector<Rebound> rebound;
  absl::flat_hash_map<Node*, ir::TensorMeta> layouts;  // rebinding views
};

// Graph arguments for size expressions of the inputs (a symbolic new layout
// in the epilogue): ints as literals, symbols read with sym_size /
// sym_stride of the input that has them, sums and products with operator
// nodes. The nodes go before the epilogue.
class SizeNodes {
 public:
  explicit SizeNodes(ir::Graph& graph) : graph_(graph) {
    for (Node* p : graph.Placeholders()) {
      if (p->meta().kind != ir::ValueMeta::Kind::kTensor) continue;
      ir::ForEachSymbolDim(p->meta().tensor,
                           [&](symbolic::Expr s, bool stride, int dim) {
                             sources_.emplace(s, Source{p, stride, dim});
                           });
    }
  }

  absl::StatusOr<Arg> ArgOf(symbolic::Expr e) {
    if (e.kind() == symbolic::ExprKind::kInteger)
      return Arg::Int(e.int_value());
    if (auto it = made_.find(e); it != made_.end()) return Arg::Of(it->second);
    Node* n = nullptr;
    if (e.is_symbol()) {
      auto s = sources_.find(e);
      if (s == sources_.end()) {
        return absl::UnimplementedError(absl::StrCat(
            "it depends on ", e.name(), ", which no input size or stride is"));
      }
      ASSIGN_OR_RETURN(
          n,
          Make(s->second.stride ? "aten.sym_stride.int" : "aten.sym_size.int",
               {Arg::Of(s->second.input), Arg::Int(s->second.dim)}));
    } else if (e.kind() == symbolic::ExprKind::kAdd ||
               e.kind() == symbolic::ExprKind::kMul ||
               e.kind() == symbolic::ExprKind::kMin ||
               e.kind() == symbolic::ExprKind::kMax) {
      // A diagonal's length is a Min of two sizes.
      const char* op = e.kind() == symbolic::ExprKind::kAdd   ? "operator.add"
                       : e.kind() == symbolic::ExprKind::kMul ? "operator.mul"
                       : e.kind() == symbolic::ExprKind::kMin ? "torch.sym_min"
                                                              : "torch.sym_max";
      ASSIGN_OR_RETURN(Arg acc, ArgOf(e.arg(0)));
      for (int i = 1; i < e.num_args(); ++i) {
        ASSIGN_OR_RETURN(Arg next, ArgOf(e.arg(i)));
        ASSIGN_OR_RETURN(Node * sum, Make(op, {acc, next}));
        acc = Arg::Of(sum);
      }
      n = acc.node;
    } else {
      return absl::UnimplementedError(absl::StrCat(
          "its entry ", symbolic::ToString(e), " is not supported yet"));
    }
    made_[e] = n;
    return Arg::Of(n);
  }

 private:
  struct Source {
    Node* input;
    bool stride;
    int dim;
  };

  absl::StatusOr<Node*> Make(const std::string& target, std::vector<Arg> args) {
    // Before the first epilogue node (or the output).
    Node* before = graph_.output();
    for (const auto& n : graph_.nodes()) {
      if (ir::EpilogueKind(*n) != nullptr) {
        before = n.get();
        break;
      }
    }
    return graph_.InsertCall(before, target, std::move(args));
  }

  ir::Graph& graph_;
  absl::flat_hash_map<symbolic::Expr, Source> sources_;
  absl::flat_hash_map<symbolic::Expr, Node*> made_;
};

}  // namespace

absl::StatusOr<bool> Functionalize(ir::Graph& graph, symbolic::ShapeEnv& env) {
  if (graph.meta_inference() == nullptr) {
    return absl::FailedPreconditionError(
        "functionalize needs a shape-propagated graph (ir::PropagateShapes)");
  }
  absl::flat_hash_map<ir::StorageId, Node*> input_of_storage;
  for (Node* p : graph.Placeholders()) {
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor) continue;
    auto [it, fresh] = input_of_storage.emplace(p->meta().tensor.storage, p);
    if (!fresh) {
      return absl::UnimplementedError(
          absl::StrCat("inputs '", it->second->name(), "' and '", p->name(),
                       "' share a storage; not supported yet"));
    }
  }
  Functionalizer f(graph, env);
  ASSIGN_OR_RETURN(bool changed, f.Run());
  // The metadata epilogue: set_ for an input given another storage, else
  // as_strided_ when its final view differs (two t_() cancel out). An output
  // that returned the input returns that node (the input itself).
  SizeNodes sizes(graph);
  for (const Functionalizer::Rebound& r : f.rebound) {
    Node* p = r.input;
    std::vector<Arg> args = {Arg::Of(p)};
    std::string target = "aten.set_.source_Tensor";
    if (r.new_storage) {
      args.push_back(Arg::Of(r.value));
    } else {
      const ir::TensorMeta &from = p->meta().tensor, &to = f.layouts[r.view];
      if (from.sizes == to.sizes && from.strides == to.strides &&
          from.storage_offset == to.storage_offset) {
        continue;
      }
      target = "aten.as_strided_.default";
      auto arg = [&](symbolic::Expr e) -> absl::StatusOr<Arg> {
        absl::StatusOr<Arg> a = sizes.ArgOf(e);
        if (!a.ok()) {
          return absl::UnimplementedError(
              absl::StrCat("the new layout of input '", p->name(),
                           "': ", a.status().message()));
        }
        return a;
      };
      for (const auto* list : {&to.sizes, &to.strides}) {
        std::vector<Arg> items;
        for (symbolic::Expr e : *list) {
          ASSIGN_OR_RETURN(Arg a, arg(e));
          items.push_back(std::move(a));
        }
        args.push_back(Arg::List(std::move(items)));
      }
      ASSIGN_OR_RETURN(Arg offset, arg(to.storage_offset));
      args.push_back(std::move(offset));
    }
    ASSIGN_OR_RETURN(Node * epilogue,
                     graph.InsertCall(graph.output(), target, std::move(args)));
    if (r.returned) graph.output()->ReplaceInput(r.value, epilogue);
    changed = true;
  }
  return changed;
}

}  // namespace lathe::aot
