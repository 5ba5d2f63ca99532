#include "passes/pattern_matcher.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "ir/eval_call.h"
#include "ir/graph.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "ir/tensor_meta.h"
#include "status_macros.h"

namespace lathe::passes {

Pattern CallOp(std::string target, std::vector<Pattern> args,
               std::vector<std::pair<std::string, Pattern>> kwargs) {
  Pattern p;
  p.kind = Pattern::Kind::kCall;
  p.target = std::move(target);
  p.args = std::move(args);
  p.kwargs = std::move(kwargs);
  return p;
}

Pattern Arg(std::string name) {
  Pattern p;
  p.kind = Pattern::Kind::kArg;
  p.name = std::move(name);
  return p;
}

Pattern Any() { return Pattern(); }

Pattern Literal(ir::Arg value) {
  LATHE_CHECK(value.kind != ir::Arg::Kind::kNode)
      << "Literal() takes a literal; use Arg() for a node";
  Pattern p;
  p.kind = Pattern::Kind::kLiteral;
  p.literal = std::move(value);
  return p;
}

ir::Node* Match::node(absl::string_view name) const {
  const ir::Arg& a = arg(name);
  LATHE_CHECK(a.kind == ir::Arg::Kind::kNode)
      << "pattern argument " << name << " is bound to a literal";
  return a.node;
}

const ir::Arg& Match::arg(absl::string_view name) const {
  auto it = bindings.find(name);
  LATHE_CHECK(it != bindings.end()) << "no pattern argument " << name;
  return it->second;
}

namespace {

bool MatchCall(const Pattern& p, ir::Node& n, Match& m);

// Whether `arg` matches `p`, binding names in `m`.
bool MatchArg(const Pattern& p, const ir::Arg& arg, Match& m) {
  switch (p.kind) {
    case Pattern::Kind::kAny:
      return true;
    case Pattern::Kind::kArg: {
      auto [it, fresh] = m.bindings.emplace(p.name, arg);
      return fresh || ir::SameArg(it->second, arg);
    }
    case Pattern::Kind::kLiteral:
      return ir::SameArg(p.literal, arg);
    case Pattern::Kind::kCall:
      return arg.kind == ir::Arg::Kind::kNode && MatchCall(p, *arg.node, m);
  }
  return false;
}

// Whether call `n` matches call pattern `p`, recording it in `m.nodes`.
bool MatchCall(const Pattern& p, ir::Node& n, Match& m) {
  if (n.kind() != ir::Node::Kind::kCall || n.target() != p.target ||
      n.args().size() != p.args.size() ||
      n.kwargs().size() != p.kwargs.size()) {
    return false;
  }
  if (!absl::c_linear_search(m.nodes, &n)) m.nodes.push_back(&n);
  for (size_t i = 0; i < p.args.size(); ++i) {
    if (!MatchArg(p.args[i], n.args()[i], m)) return false;
  }
  for (const auto& [key, sub] : p.kwargs) {
    auto it = absl::c_find_if(n.kwargs(),
                              [&](const auto& kw) { return kw.first == key; });
    if (it == n.kwargs().end() || !MatchArg(sub, it->second, m)) return false;
  }
  return true;
}

// Whether `n` starts a new mutation region: it writes an argument (in-place,
// out=), switches grad mode, draws random numbers or asserts, or is a call
// lathe has no op for (autocast enter/exit, manual_seed, ...), whose effect
// is unknown. Inductor's is_mutation_op, conservatively.
bool StartsRegion(const ir::Node& n) {
  if (n.kind() != ir::Node::Kind::kCall) return false;
  if (n.HasEffect()) return true;
  return n.op() == nullptr && !ir::IsPythonOp(n.target());
}

// What one run knows of the graph as it was when the run started, from
// one walk.
struct Analysis {
  // Each node's mutation region: the id goes up at each node that starts
  // one. Only nodes of the graph as it was, and not erased since, are here.
  absl::flat_hash_map<const ir::Node*, int> region;
  // The first node with each storage (the one that made it).
  absl::flat_hash_map<ir::StorageId, const ir::Node*> owner;
  // The last node that writes each storage (a Tensor(a!) argument).
  absl::flat_hash_map<ir::StorageId, const ir::Node*> last_write;
};

// Records `writer` as the last writer of the storages of written argument
// `arg` (a node, or a list of them).
void RecordWrite(const ir::Node& writer, const ir::Arg& arg, Analysis& a) {
  if (arg.kind == ir::Arg::Kind::kNode) {
    for (ir::StorageId s : arg.node->meta().Storages()) {
      a.last_write[s] = &writer;
    }
  }
  for (const ir::Arg& e : arg.list) RecordWrite(writer, e, a);
}

// Records in `a` the storages call `n` writes.
void RecordWrites(const ir::Node& n, Analysis& a) {
  const ir::OpDef* op = n.op();
  if (op == nullptr) return;
  auto written = [&](int i) {
    return i >= 0 && i < static_cast<int>(op->schema.arguments.size()) &&
           op->schema.arguments[i].is_written();
  };
  for (size_t i = 0; i < n.args().size(); ++i) {
    if (written(i)) RecordWrite(n, n.args()[i], a);
  }
  for (const auto& [name, arg] : n.kwargs()) {
    if (written(op->schema.ArgumentIndex(name))) RecordWrite(n, arg, a);
  }
}

Analysis Analyze(const ir::Graph& graph) {
  Analysis a;
  int id = 0;
  for (const auto& n : graph.nodes()) {
    if (StartsRegion(*n)) ++id;
    a.region[n.get()] = id;
    for (ir::StorageId s : n->meta().Storages()) a.owner.emplace(s, n.get());
    RecordWrites(*n, a);
  }
  return a;
}

// Whether match `m` can be rewritten: its calls have no effect and share
// one mutation region, and only matched calls use the values of those
// other than the root.
bool Rewritable(const Match& m, const Analysis& a) {
  auto root = a.region.find(m.root);
  if (root == a.region.end()) return false;
  for (const ir::Node* n : m.nodes) {
    auto it = a.region.find(n);
    if (it == a.region.end() || it->second != root->second ||
        StartsRegion(*n)) {
      return false;
    }
    if (n == m.root) continue;
    for (const ir::Node* user : n->users()) {
      if (!absl::c_linear_search(m.nodes, user)) return false;
    }
  }
  return true;
}

// Whether the root's users may read `repl` instead: they read the same
// storages, or both are new (the match made the root's: a write into the
// root then writes into the replacement alone), or no storage of either is
// written after the root (a replacement that shares an input's storage
// would see a later write into it; one that stands for a view would miss a
// later write through it).
bool SameWrites(const ir::Graph& graph, const Analysis& a, const Match& m,
                const ir::Node* repl) {
  const std::vector<ir::StorageId> ours = m.root->meta().Storages(),
                                   theirs = repl->meta().Storages();
  if (ours == theirs) return true;
  const bool both_new =
      absl::c_all_of(ours,
                     [&](ir::StorageId s) {
                       auto it = a.owner.find(s);
                       return it != a.owner.end() &&
                              absl::c_linear_search(m.nodes, it->second);
                     }) &&
      absl::c_none_of(theirs,
                      [&](ir::StorageId s) { return a.owner.contains(s); });
  if (both_new) return true;
  auto written_later = [&](ir::StorageId s) {
    auto it = a.last_write.find(s);
    return it != a.last_write.end() && graph.IsBefore(m.root, it->second);
  };
  return absl::c_none_of(ours, written_later) &&
         absl::c_none_of(theirs, written_later);
}

// Erases what a refused replacement built: the calls before `root` that
// are not in `a` (later roots' replacements lie after it), last first.
absl::Status EraseBuilt(ir::Graph& graph, const ir::Node* root,
                        const Analysis& a) {
  std::vector<ir::Node*> built;
  for (const auto& n : graph.nodes()) {
    if (n.get() == root) break;
    if (!a.region.contains(n.get())) built.push_back(n.get());
  }
  for (auto it = built.rbegin(); it != built.rend(); ++it) {
    RETURN_IF_ERROR(graph.Erase(*it));
  }
  return absl::OkStatus();
}

// An error unless `repl` can stand for `root`: an earlier node whose value
// has the root's kind, dtype and sizes (when both have metas).
absl::Status CheckReplacement(const ir::Graph& graph, absl::string_view name,
                              const ir::Node* root, const ir::Node* repl) {
  auto fail = [&](absl::string_view why) {
    return absl::InternalError(absl::StrCat(
        "pattern ", name, " at ", root->name(), ": the replacement ", why));
  };
  if (repl == nullptr) return fail("is null");
  if (repl == root || !graph.IsBefore(repl, root)) {
    return fail(absl::StrCat(repl->name(), " does not come before the root"));
  }
  const ir::ValueMeta &want = root->meta(), &got = repl->meta();
  if (want.kind == ir::ValueMeta::Kind::kNone ||
      got.kind == ir::ValueMeta::Kind::kNone) {
    return absl::OkStatus();
  }
  if (want.kind != got.kind || (want.kind == ir::ValueMeta::Kind::kTensor &&
                                (want.tensor.dtype != got.tensor.dtype ||
                                 want.tensor.sizes != got.tensor.sizes))) {
    return fail(absl::StrCat(repl->name(), " is ", got.ToAnnotation(), ", not ",
                             want.ToAnnotation()));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<Match> MatchPattern(const Pattern& pattern, ir::Node& node) {
  LATHE_CHECK(pattern.kind == Pattern::Kind::kCall)
      << "a pattern's root is a CallOp";
  Match m;
  m.root = &node;
  if (!MatchCall(pattern, node, m)) return std::nullopt;
  return m;
}

void PatternMatcherPass::AddPattern(std::string name, Pattern pattern,
                                    Replacement replacement) {
  LATHE_CHECK(pattern.kind == Pattern::Kind::kCall)
      << "pattern " << name << ": the root is a CallOp";
  entries_.push_back(
      Entry{std::move(name), std::move(pattern), std::move(replacement)});
}

absl::StatusOr<bool> PatternMatcherPass::Run(ir::Graph& graph,
                                             PassContext& ctx) {
  absl::flat_hash_map<absl::string_view, std::vector<const Entry*>> by_target;
  for (const Entry& e : entries_) by_target[e.pattern.target].push_back(&e);
  Analysis a = Analyze(graph);
  std::vector<ir::Node*> roots;
  for (const auto& n : graph.nodes()) {
    if (n->kind() == ir::Node::Kind::kCall && by_target.contains(n->target()))
      roots.push_back(n.get());
  }
  // Last to first, as Inductor: a match only erases nodes before its root,
  // and replacements go just before it, after every root still to try.
  std::vector<ir::Node*> edited;  // users that now read a replacement
  bool changed = false;
  for (auto r = roots.rbegin(); r != roots.rend(); ++r) {
    ir::Node* root = *r;
    if (!a.region.contains(root)) continue;  // erased by a match
    for (const Entry* e : by_target.at(root->target())) {
      std::optional<Match> m = MatchPattern(e->pattern, *root);
      if (!m.has_value() || !Rewritable(*m, a)) continue;
      ASSIGN_OR_RETURN(ir::Node * repl, e->replacement(graph, *m));
      RETURN_IF_ERROR(CheckReplacement(graph, e->name, root, repl));
      if (!SameWrites(graph, a, *m, repl)) {
        ctx.Log("pattern_matcher: ", e->name, ": not at ", root->name(),
                ": a later write would see ", repl->name());
        RETURN_IF_ERROR(EraseBuilt(graph, root, a));
        continue;
      }
      ctx.Log("pattern_matcher: ", e->name, ": ", root->name(), " -> ",
              repl->name());
      edited.insert(edited.end(), root->users().begin(), root->users().end());
      graph.ReplaceAllUsesWith(root, repl);
      // The matched calls nothing uses now, users first.
      absl::c_sort(m->nodes, [&](const ir::Node* x, const ir::Node* y) {
        return graph.IsBefore(y, x);
      });
      for (ir::Node* n : m->nodes) {
        if (!n->users().empty()) continue;
        a.region.erase(n);
        RETURN_IF_ERROR(graph.Erase(n));
      }
      changed = true;
      break;
    }
  }
  // Users read another value now (a view of it takes its storage).
  if (changed && graph.meta_inference() != nullptr) {
    RETURN_IF_ERROR(ir::RefreshMetas(graph, ctx.env(), edited).status());
  }
  return changed;
}

}  // namespace lathe::passes
