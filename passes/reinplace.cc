#include "passes/reinplace.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/alias_info.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::passes {
namespace {

using ir::Node;
using symbolic::Expr;

// ---- What the pass knows of ops ---------------------------------------------

// Ops that read only their argument's metadata, never its data.
constexpr absl::string_view kMetaOnly[] = {
    "aten.sym_size.int",
    "aten.sym_stride.int",
    "aten.sym_numel.default",
    "aten.sym_storage_offset.default",
};

bool IsMetaOnlyOp(absl::string_view target) {
  for (absl::string_view t : kMetaOnly) {
    if (t == target) return true;
  }
  return false;
}

// A functional scatter that writes back a view's elements (OpDef::scatter).
bool IsViewScatter(const ir::OpDef* op) {
  return op != nullptr && !op->scattered_view.empty();
}

// Whether the scatter is lowered as a write anyway, so reinplacing never
// costs a fusion (should_reinplace_scatter rule 2).
bool AlwaysMutates(const ir::OpDef* scatter) {
  const ir::KnownOps& k = ir::Known();
  return scatter == k.diagonal_scatter || scatter == k.as_strided_scatter;
}

// ---- Small facts about nodes
// -------------------------------------------------

bool IsCall(const Node* n) { return n->kind() == Node::Kind::kCall; }

bool IsInput(const Node* n) {
  return n->kind() == Node::Kind::kPlaceholder ||
         n->kind() == Node::Kind::kGetAttr;
}

const ir::TensorMeta* TensorOf(const Node* n) {
  return n->meta().kind == ir::ValueMeta::Kind::kTensor ? &n->meta().tensor
                                                        : nullptr;
}

std::vector<ir::StorageId> StoragesOf(const Node* n) {
  return n->meta().Storages();
}

// The copy_ / set_ / as_strided_ epilogue kind of `n`, or null.
const char* EpilogueKindOf(const Node* n) {
  return IsCall(n) ? ir::EpilogueKind(*n) : nullptr;
}

bool IsCopy(const Node* n) {
  const char* kind = EpilogueKindOf(n);
  return kind != nullptr && std::strcmp(kind, "data") == 0;
}

// The node `n` writes, for an epilogue node.
const Node* Written(const Node* n) {
  return !n->args().empty() && n->args()[0].kind == ir::Arg::Kind::kNode
             ? n->args()[0].node
             : nullptr;
}

// Whether `s` is `value` or a view (chain) of it.
bool IsViewOf(const Node* s, const Node* value) {
  while (s != value) {
    if (!IsCall(s) || !ir::IsView(*s)) return false;
    s = s->args()[0].node;
  }
  return true;
}

// A use that reads only metadata: a shape query, or a view whose uses all
// are.
bool IsMetaOnlyUse(const Node* u) {
  if (!IsCall(u)) return false;
  if (IsMetaOnlyOp(u->target())) return true;
  if (!ir::IsView(*u)) return false;
  for (const Node* v : u->users()) {
    if (!IsMetaOnlyUse(v)) return false;
  }
  return true;
}

// Whether scatter call `scatter(self, src, *args)` writes exactly what view
// call `view(self, *args)` sees.
bool SameViewArgs(const Node& view, const Node& scatter) {
  const auto &va = view.args(), &sa = scatter.args();
  if (sa.size() != va.size() + 1 ||
      view.kwargs().size() != scatter.kwargs().size()) {
    return false;
  }
  for (size_t i = 1; i < va.size(); ++i) {
    if (!ir::SameArg(va[i], sa[i + 1])) return false;
  }
  for (size_t i = 0; i < view.kwargs().size(); ++i) {
    if (view.kwargs()[i].first != scatter.kwargs()[i].first ||
        !ir::SameArg(view.kwargs()[i].second, scatter.kwargs()[i].second)) {
      return false;
    }
  }
  return true;
}

void FlattenNodes(const ir::Arg& a, std::vector<Node*>& out) {
  if (a.kind == ir::Arg::Kind::kNode) out.push_back(a.node);
  for (const ir::Arg& e : a.list) FlattenNodes(e, out);
}

// is_node_realized: a value Inductor always materializes — an input, a
// library call's result (or an element of it), or one the output or a
// library call reads.
bool IsRealized(const Node* n) {
  const Node* x = n;
  while (IsCall(x) && x->op() == ir::Known().getitem) x = x->args()[0].node;
  if (IsInput(x) || (IsCall(x) && x->op() != nullptr &&
                     x->op()->HasTag(ir::OpTag::kExtern))) {
    return true;
  }
  for (const Node* u : n->users()) {
    if (u->kind() == Node::Kind::kOutput ||
        (IsCall(u) && u->op() != nullptr &&
         u->op()->HasTag(ir::OpTag::kExtern))) {
      return true;
    }
  }
  return false;
}

// ---- The rewrite ------------------------------------------------------------

// One candidate and what the checks found out about it.
struct Plan {
  Node* node = nullptr;
  Node* mutated = nullptr;             // the argument it would write
  const ir::OpDef* twin = nullptr;     // an op with an in-place twin
  const ir::OpDef* scatter = nullptr;  // or a view scatter
  std::vector<Node*> chain;            // scatters writing it back
  Node* input = nullptr;               // whose storage `mutated` is
  Node* boundary = nullptr;            // the input's next write
  Node* copy_back = nullptr;           // `boundary`, when it is a no-op
};

class Reinplacer {
 public:
  Reinplacer(ir::Graph& graph, PassContext& ctx)
      : graph_(graph), ctx_(ctx), env_(ctx.env()) {}

  absl::StatusOr<bool> Run();

 private:
  // Storage index: the nodes whose values live in each storage.
  void Index(Node* n);
  void Unindex(Node* n);
  const std::vector<Node*>& Members(ir::StorageId s) const;

  bool Eq(Expr a, Expr b) {
    return a == b || env_.StaticallyKnownTrue(symbolic::Eq(a, b));
  }
  bool SameSizes(const ir::TensorMeta& a, const ir::TensorMeta& b);
  bool SameStrides(const ir::TensorMeta& a, const ir::TensorMeta& b);
  bool SameLayout(const ir::TensorMeta& a, const ir::TensorMeta& b);
  bool NoInternalOverlap(const ir::TensorMeta& m);

  // Whether `n` is a call this pass rewrites; fills plan.{node,mutated,...}.
  bool Candidate(Node* n, Plan& plan);
  // The scatters that write `plan.node` back into the bases of its view.
  void FindChain(Plan& plan);
  // The first copy_/set_/as_strided_ into storage `s` after `n`, or null.
  Node* FirstWriteAfter(ir::StorageId s, const Node* n);
  // Whether `plan.boundary` copies the reinplaced value into the input it
  // already is.
  bool CopiesBack(const Plan& plan);
  // A use of storage `s`'s values that makes them escape: the output, or a
  // set_ / as_strided_ epilogue; null when none.
  const Node* Escape(ir::StorageId s,
                     const absl::flat_hash_set<const Node*>& exempt);
  // Why `plan.node` must stay functional; empty when it need not.
  std::string Check(Plan& plan);
  // should_reinplace_scatter (reference §2.2): why not, or empty.
  std::string ShouldReinplaceScatter(const Plan& plan);
  absl::Status Commit(const Plan& plan);

  ir::Graph& graph_;
  PassContext& ctx_;
  symbolic::ShapeEnv& env_;
  absl::flat_hash_map<ir::StorageId, std::vector<Node*>> members_;
  absl::flat_hash_map<Node*, std::vector<ir::StorageId>> indexed_;
  absl::flat_hash_map<ir::StorageId, std::vector<Node*>> inputs_;
  absl::flat_hash_set<const Node*> erased_;  // snapshot entries gone
};

void Reinplacer::Index(Node* n) {
  std::vector<ir::StorageId> storages = StoragesOf(n);
  for (ir::StorageId s : storages) members_[s].push_back(n);
  indexed_[n] = std::move(storages);
}

void Reinplacer::Unindex(Node* n) {
  auto it = indexed_.find(n);
  if (it == indexed_.end()) return;
  for (ir::StorageId s : it->second) {
    std::vector<Node*>& m = members_[s];
    m.erase(std::remove(m.begin(), m.end(), n), m.end());
  }
  indexed_.erase(it);
}

const std::vector<Node*>& Reinplacer::Members(ir::StorageId s) const {
  static const std::vector<Node*>* const kNone = new std::vector<Node*>();
  auto it = members_.find(s);
  return it == members_.end() ? *kNone : it->second;
}

bool Reinplacer::SameSizes(const ir::TensorMeta& a, const ir::TensorMeta& b) {
  if (a.dim() != b.dim()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!Eq(a.sizes[d], b.sizes[d])) return false;
  }
  return true;
}

bool Reinplacer::SameStrides(const ir::TensorMeta& a, const ir::TensorMeta& b) {
  if (a.dim() != b.dim()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!Eq(a.strides[d], b.strides[d])) return false;
  }
  return true;
}

bool Reinplacer::SameLayout(const ir::TensorMeta& a, const ir::TensorMeta& b) {
  return SameSizes(a, b) && SameStrides(a, b) &&
         Eq(a.storage_offset, b.storage_offset);
}

// Statically no two indices reach one element: the dimensions (of more
// than one element) sorted by stride each step past everything the smaller
// ones span; with symbolic strides, only a row-major layout is accepted.
bool Reinplacer::NoInternalOverlap(const ir::TensorMeta& m) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // {stride, size}
  bool concrete = true;
  for (int64_t d = 0; d < m.dim(); ++d) {
    Expr size = m.sizes[d], stride = m.strides[d];
    if (size.is_constant(0)) return true;  // no elements at all
    if (size.is_constant(1)) continue;
    if (size.kind() == symbolic::ExprKind::kInteger &&
        stride.kind() == symbolic::ExprKind::kInteger) {
      dims.push_back({stride.int_value(), size.int_value()});
    } else {
      concrete = false;
    }
  }
  if (concrete) {
    std::sort(dims.begin(), dims.end());
    int64_t span = 0;  // the largest offset the smaller dimensions reach
    for (const auto& [stride, size] : dims) {
      if (stride <= span) return false;
      if (stride > (INT64_MAX - span) / (size - 1)) return false;
      span += stride * (size - 1);
    }
    return true;
  }
  Expr expected = symbolic::Int(1);
  for (int64_t d = m.dim() - 1; d >= 0; --d) {
    if (!Eq(m.sizes[d], symbolic::Int(1)) && !Eq(m.strides[d], expected)) {
      return false;
    }
    expected = symbolic::Mul(expected, m.sizes[d]);
  }
  return true;
}

bool Reinplacer::Candidate(Node* n, Plan& plan) {
  const ir::OpDef* op = n->op();
  if (op == nullptr || op->HasTag(ir::OpTag::kRandom) ||
      op->HasTag(ir::OpTag::kSideEffect) || n->args().empty() ||
      n->args()[0].kind != ir::Arg::Kind::kNode) {
    return false;
  }
  if (IsViewScatter(op)) {
    if (n->args().size() < 2 || n->args()[1].kind != ir::Arg::Kind::kNode) {
      return false;
    }
    plan.scatter = op;
  } else if (!op->inplace.empty() && !op->schema.IsMutable()) {
    plan.twin = ir::OpRegistry::Global().Find(op->inplace);
    if (plan.twin == nullptr) return false;
  } else {
    return false;
  }
  plan.node = n;
  plan.mutated = n->args()[0].node;
  return true;
}

void Reinplacer::FindChain(Plan& plan) {
  Node* value = plan.node;
  Node* view = plan.mutated;
  while (IsCall(view) && ir::IsView(*view)) {
    if (view->op() == nullptr || view->op()->scatter.empty()) return;
    const std::string& scatter = view->op()->scatter;
    Node* base = view->args()[0].node;
    Node* found = nullptr;
    for (Node* u : value->users()) {
      if (IsCall(u) && u->target() == scatter && u->args().size() >= 2 &&
          u->args()[0].kind == ir::Arg::Kind::kNode &&
          u->args()[0].node == base &&
          u->args()[1].kind == ir::Arg::Kind::kNode &&
          u->args()[1].node == value && SameViewArgs(*view, *u)) {
        found = u;
        break;
      }
    }
    if (found == nullptr) return;
    plan.chain.push_back(found);
    value = found;
    view = base;
  }
}

Node* Reinplacer::FirstWriteAfter(ir::StorageId s, const Node* n) {
  Node* first = nullptr;
  for (Node* g : Members(s)) {
    for (Node* u : g->users()) {
      if (EpilogueKindOf(u) == nullptr || Written(u) != g ||
          !graph_.IsBefore(n, u)) {
        continue;
      }
      if (first == nullptr || graph_.IsBefore(u, first)) first = u;
    }
  }
  return first;
}

bool Reinplacer::CopiesBack(const Plan& plan) {
  const Node* c = plan.boundary;
  if (c->args().size() < 2 || c->args()[1].kind != ir::Arg::Kind::kNode) {
    return false;
  }
  const Node* s = c->args()[1].node;
  const Node* value = plan.chain.empty() ? plan.node : plan.chain.back();
  const Node* view =
      plan.chain.empty() ? plan.mutated : plan.chain.back()->args()[0].node;
  if (!IsViewOf(s, value)) return false;
  if (s == value && view == plan.input) return true;
  // Through views (the layout-preserving copy-back): `s` sees the input's
  // elements as the input does.
  const ir::TensorMeta *st = TensorOf(s), *in = TensorOf(plan.input),
                       *vt = TensorOf(value), *wt = TensorOf(view);
  return st != nullptr && in != nullptr && vt != nullptr && wt != nullptr &&
         SameLayout(*st, *in) && SameLayout(*vt, *wt);
}

const Node* Reinplacer::Escape(ir::StorageId s,
                               const absl::flat_hash_set<const Node*>& exempt) {
  for (Node* r : Members(s)) {
    for (Node* u : r->users()) {
      if (exempt.contains(u)) continue;
      if (u->kind() == Node::Kind::kOutput) return u;
      const char* kind = EpilogueKindOf(u);
      if (kind != nullptr && std::strcmp(kind, "data") != 0) return u;
    }
  }
  return nullptr;
}

std::string Reinplacer::ShouldReinplaceScatter(const Plan& plan) {
  const Node* n = plan.node;
  const Node* input = plan.mutated;
  // 1. An input whose scattered value the graph returns (PyTorch #195484).
  if (IsInput(input)) {
    absl::flat_hash_set<const Node*> exempt(plan.chain.begin(),
                                            plan.chain.end());
    if (Escape(TensorOf(n)->storage, exempt) != nullptr) {
      return "its result reaches the output and its input is a graph input "
             "(should_reinplace_scatter rule 1)";
    }
  }
  // 2. Lowered as a write anyway.
  if (AlwaysMutates(plan.scatter)) return "";
  // 3. Both sides are buffers anyway.
  if (IsRealized(input) && IsRealized(n)) return "";
  // 4. Copied back into its input: both are buffers.
  if (IsInput(input)) {
    for (const Node* u : n->users()) {
      if (IsCopy(u) && Written(u) == input) return "";
    }
  }
  // 5.
  return "the functional scatter fuses better (should_reinplace_scatter "
         "rule 5)";
}

std::string Reinplacer::Check(Plan& plan) {
  Node* n = plan.node;
  Node* m = plan.mutated;
  const ir::TensorMeta* mt = TensorOf(m);
  const ir::TensorMeta* nt = TensorOf(n);
  if (mt == nullptr || nt == nullptr || mt->storage == ir::kUnknownStorage ||
      nt->storage == mt->storage) {
    return "not a fresh tensor from a tensor of known storage";
  }
  if (nt->dtype != mt->dtype || nt->device != mt->device ||
      !SameSizes(*nt, *mt)) {
    return absl::StrCat("its result ", nt->ToAnnotation(), " is not of '",
                        m->name(), "''s dtype, device and sizes");
  }
  if (!NoInternalOverlap(*mt)) {
    return absl::StrCat("'", m->name(),
                        "' may hold an element twice (expanded or overlapping "
                        "strides)");
  }
  const bool pointwise =
      plan.twin != nullptr && n->op()->HasTag(ir::OpTag::kPointwise);
  // Another argument reading the storage it would write.
  std::vector<Node*> others;
  for (size_t i = 1; i < n->args().size(); ++i) {
    FlattenNodes(n->args()[i], others);
  }
  for (const auto& [key, arg] : n->kwargs()) FlattenNodes(arg, others);
  for (const Node* a : others) {
    std::vector<ir::StorageId> s = StoragesOf(a);
    if (std::find(s.begin(), s.end(), mt->storage) == s.end()) continue;
    // A pointwise op may read the very elements it writes.
    if (pointwise && TensorOf(a) != nullptr && SameLayout(*TensorOf(a), *mt)) {
      continue;
    }
    return absl::StrCat("its argument '", a->name(), "' reads '", m->name(),
                        "''s storage");
  }
  FindChain(plan);
  // A pointwise op that is the only reader of an intermediate value, unless
  // scatters write its result back, stays functional: lowering computes
  // both inside their readers' loops, where in place the value must first
  // be stored and read back (a kernel and a pass over memory: relu after a
  // convolution and its bias, before a max pool). A value read before it
  // too is stored anyway, and writing over it saves a buffer (softmax's
  // division over exp, which the sum read).
  if (pointwise && plan.chain.empty() && !inputs_.contains(mt->storage) &&
      absl::c_count_if(m->users(),
                       [](const Node* u) { return !IsMetaOnlyUse(u); }) <= 1) {
    return "a pointwise op, the only reader of an intermediate value, fuses "
           "into its readers";
  }
  absl::flat_hash_set<const Node*> exempt(plan.chain.begin(), plan.chain.end());
  // Whose storage it writes, and whether the program writes that input.
  if (auto it = inputs_.find(mt->storage); it != inputs_.end()) {
    if (it->second.size() != 1) return "its storage is several inputs'";
    plan.input = it->second[0];
    plan.boundary = FirstWriteAfter(mt->storage, n);
    if (plan.boundary == nullptr) {
      return absl::StrCat("the program does not write input '",
                          plan.input->name(), "' after it");
    }
    if (!IsCopy(plan.boundary) || Written(plan.boundary) != plan.input) {
      return absl::StrCat("the next write of input '", plan.input->name(),
                          "', '", plan.boundary->name(),
                          "', is no copy_ into all of it");
    }
    if (CopiesBack(plan)) plan.copy_back = plan.boundary;
  }
  // Later uses of what it would overwrite.
  for (const Node* g : Members(mt->storage)) {
    for (const Node* u : g->users()) {
      if (!graph_.IsBefore(n, u) ||
          (plan.boundary != nullptr && !graph_.IsBefore(u, plan.boundary)) ||
          exempt.contains(u) || IsMetaOnlyUse(u)) {
        continue;
      }
      return absl::StrCat("'", u->name(), "' reads '", g->name(),
                          "' (the storage it would write) after it");
    }
  }
  // Its result (and the scatters writing it back) would be m's storage
  // from now on.
  std::vector<ir::StorageId> results = {nt->storage};
  for (const Node* u : plan.chain) results.push_back(TensorOf(u)->storage);
  if (plan.input == nullptr) {
    // Two of them returned would become outputs sharing a storage.
    const Node* returned = nullptr;
    for (ir::StorageId s : results) {
      const Node* e = Escape(s, exempt);
      if (e != nullptr && returned != nullptr) {
        return "its result and a scatter writing it back both reach the "
               "output (they would alias)";
      }
      if (e != nullptr) returned = e;
    }
  } else {
    for (ir::StorageId s : results) {
      if (const Node* e = Escape(s, exempt)) {
        return absl::StrCat("its result reaches '", e->name(),
                            "': it would alias input '", plan.input->name(),
                            "'");
      }
      for (const Node* r : Members(s)) {
        for (const Node* u : r->users()) {
          if (exempt.contains(u) || u == plan.copy_back ||
              graph_.IsBefore(u, plan.boundary) || IsMetaOnlyUse(u)) {
            continue;
          }
          return absl::StrCat("'", u->name(), "' reads its result after '",
                              plan.boundary->name(), "' overwrites input '",
                              plan.input->name(), "'");
        }
      }
    }
  }
  // The values it replaces keep their layout, unless only nodes this
  // rewrite erases read them.
  auto only_erased_readers = [&](const Node* x) {
    for (const Node* u : x->users()) {
      if (!exempt.contains(u) && u != plan.copy_back) return false;
    }
    return true;
  };
  if (!SameStrides(*nt, *mt) && !only_erased_readers(n)) {
    return absl::StrCat("its result's strides differ from '", m->name(), "''s");
  }
  for (const Node* u : plan.chain) {
    const ir::TensorMeta* base = TensorOf(u->args()[0].node);
    const ir::TensorMeta* ut = TensorOf(u);
    if (base == nullptr || ut == nullptr || ut->dtype != base->dtype ||
        !SameSizes(*ut, *base) ||
        (!SameStrides(*ut, *base) && !only_erased_readers(u))) {
      return absl::StrCat("'", u->name(), "' is not laid out as its base");
    }
  }
  if (plan.scatter != nullptr) return ShouldReinplaceScatter(plan);
  // The in-place twin's meta function must accept the call as it is (a
  // data-dependent size it cannot decide refuses).
  if (plan.twin != nullptr) {
    std::string target = n->target();
    n->set_target(plan.twin->target);
    absl::StatusOr<ir::InferredMeta> twin = ir::ComputeMeta(*n, env_);
    n->set_target(target);
    if (!twin.ok()) {
      return absl::StrCat("the in-place op refuses: ", twin.status().message());
    }
  }
  return "";
}

absl::Status Reinplacer::Commit(const Plan& plan) {
  Node* n = plan.node;
  Node* m = plan.mutated;
  // The values that move into m's storage: the result, the scatters that
  // become their bases, and their views.
  std::vector<Node*> moved = Members(TensorOf(n)->storage);
  for (Node* u : plan.chain) {
    const std::vector<Node*>& more = Members(TensorOf(u)->storage);
    moved.insert(moved.end(), more.begin(), more.end());
  }
  std::vector<Node*> refresh;
  absl::flat_hash_set<const Node*> gone;
  auto erase = [&](Node* x, Node* by) -> absl::Status {
    for (Node* u : x->users()) refresh.push_back(u);
    graph_.ReplaceAllUsesWith(x, by);
    Unindex(x);
    gone.insert(x);
    erased_.insert(x);
    return graph_.Erase(x);
  };
  if (plan.twin != nullptr) {
    ctx_.Log("reinplace: ", n->name(), " -> ", plan.twin->target);
    n->set_target(plan.twin->target);
    refresh.push_back(n);
  } else {
    ctx_.Log("reinplace: ", n->name(), " -> ", plan.scatter->scattered_view,
             " of ", m->name(), " + copy_");
    std::vector<ir::Arg> view_args = {ir::Arg::Of(m)};
    view_args.insert(view_args.end(), n->args().begin() + 2, n->args().end());
    ASSIGN_OR_RETURN(Node * view,
                     graph_.InsertCall(n, plan.scatter->scattered_view,
                                       std::move(view_args), n->kwargs()));
    ASSIGN_OR_RETURN(Node * copy,
                     graph_.InsertCall(n, "aten.copy_.default",
                                       {ir::Arg::Of(view), n->args()[1]}));
    Index(view);
    Index(copy);
    RETURN_IF_ERROR(erase(n, m));
  }
  for (Node* u : plan.chain) {
    ctx_.Log("reinplace: ", u->name(), " -> ", u->args()[0].node->name(),
             " (it writes back what is already there)");
    RETURN_IF_ERROR(erase(u, u->args()[0].node));
  }
  if (plan.copy_back != nullptr) {
    ctx_.Log("reinplace: erases ", plan.copy_back->name(), " (",
             plan.input->name(), " already holds the value)");
    RETURN_IF_ERROR(erase(plan.copy_back, plan.input));
  }
  refresh.erase(std::remove_if(refresh.begin(), refresh.end(),
                               [&](Node* x) { return gone.contains(x); }),
                refresh.end());
  RETURN_IF_ERROR(ir::RefreshMetas(graph_, env_, refresh).status());
  for (Node* x : moved) {
    if (gone.contains(x)) continue;
    Unindex(x);
    Index(x);
  }
  // An in-place call is its argument: the same storage from now on.
  LATHE_CHECK(plan.twin == nullptr ||
              TensorOf(n)->storage == TensorOf(m)->storage)
      << n->name() << " was reinplaced into " << m->name();
  return absl::OkStatus();
}

absl::StatusOr<bool> Reinplacer::Run() {
  for (const auto& n : graph_.nodes()) {
    Index(n.get());
    if (IsInput(n.get())) {
      for (ir::StorageId s : StoragesOf(n.get())) inputs_[s].push_back(n.get());
    }
  }
  // The analysis holds for a functional graph with an epilogue into inputs.
  for (const auto& n : graph_.nodes()) {
    if (!IsCall(n.get()) || n->op() == nullptr ||
        !n->op()->schema.IsMutable()) {
      continue;
    }
    const Node* written = Written(n.get());
    bool epilogue = EpilogueKindOf(n.get()) != nullptr && written != nullptr &&
                    TensorOf(written) != nullptr &&
                    inputs_.contains(TensorOf(written)->storage);
    if (!epilogue) {
      ctx_.Log("reinplace: leaves the graph as it is: '", n->name(),
               "' writes in place and is no epilogue into an input");
      return false;
    }
  }
  std::vector<Node*> order;
  for (const auto& n : graph_.nodes()) order.push_back(n.get());
  bool changed = false;
  for (Node* n : order) {
    if (erased_.contains(n) || !IsCall(n)) continue;
    Plan plan;
    if (!Candidate(n, plan)) continue;
    std::string why = Check(plan);
    if (!why.empty()) {
      ctx_.Log("reinplace: keeps ", n->name(), ": ", why);
      continue;
    }
    RETURN_IF_ERROR(Commit(plan));
    changed = true;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> Reinplace::Run(ir::Graph& graph, PassContext& ctx) {
  return Reinplacer(graph, ctx).Run();
}

}  // namespace lathe::passes
