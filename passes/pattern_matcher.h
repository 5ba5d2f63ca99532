// -----------------------------------------------------------------------------
// File: pattern_matcher.h
// -----------------------------------------------------------------------------
//
// pattern_matcher: Inductor-style rewrites of small trees of calls. A
// Pattern is a tree: CallOp(target, args) matches a call of that target
// whose arguments match `args` one for one; Arg("x") matches any argument
// and binds it to "x" (a name used twice must bind the same node, or equal
// literals, as Inductor's repeated KeywordArg); Any() matches any argument;
// Literal(v) matches an equal literal (same kind, floats bit for bit). The
// pass tries each call, last to first, against the patterns registered for
// its target (in the order added); on the first match the replacement
// builds new nodes with Graph::InsertCall before the matched root and
// returns the node that replaces it; the pass then makes the root's users
// use that node, erases the matched calls nothing uses any more and
// refreshes the users' metas.
//
// A match is rewritten only when it is safe:
//  - every matched call but the root is used only by matched calls (a
//    value used outside the match would have to be kept);
//  - the matched calls have no effect (Node::HasEffect) and lie in one
//    mutation region, as Inductor's compute_mutation_region_ids says: the
//    region id goes up at every call that writes an argument (in place,
//    out=, copy_), switches grad mode, draws random numbers or asserts, and
//    at every call lathe has no op for (autocast enter/exit, manual_seed:
//    their effect is unknown). So nothing mutating or global comes between
//    the earliest matched call and the root (scenario 52);
//  - the root's users may read the replacement instead: it has the root's
//    storages, or both are new, or no op writes a storage of either after
//    the root (else a later write into an input would reach the users, or
//    a write through a view would miss its base). Otherwise the pass
//    erases what the replacement built and leaves the match as it was.
// A replacement whose value has another dtype or other sizes than the
// root's is an error (the pattern is wrong).
//
// Where it runs: anywhere; not in the default pipeline (it has no patterns
// yet). Without metas (no shape propagation) the storage rule has nothing
// to check and new nodes have no metas.
//
// Example:
//
//   PatternMatcherPass p;
//   p.AddPattern("add_sin_to_mul",
//                CallOp("aten.add.Tensor",
//                       {Arg("x"), CallOp("aten.sin.default", {Arg("x")})}),
//                [](ir::Graph& g, const Match& m) {
//                  return g.InsertCall(m.root, "aten.mul.Tensor",
//                                      {m.arg("x"), m.arg("x")});
//                });
//
//   s = sin(x); a = add(x, s)               ->  mul = mul(x, x)
//   s = sin(x); copy_(x, y); a = add(x, s)  ->  unchanged (a write between)

#ifndef LATHE_PASSES_PATTERN_MATCHER_H_
#define LATHE_PASSES_PATTERN_MATCHER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

// A tree that matches a call and its arguments; build it with CallOp, Arg,
// Any and Literal.
struct Pattern {
  enum class Kind : uint8_t { kCall, kArg, kAny, kLiteral };
  Kind kind = Kind::kAny;
  std::string target;         // kCall: "aten.add.Tensor"
  std::vector<Pattern> args;  // kCall: the positional arguments
  std::vector<std::pair<std::string, Pattern>> kwargs;  // kCall
  std::string name;                                     // kArg
  ir::Arg literal;                                      // kLiteral
};

// CallOp()
//
// Matches a call of `target` with exactly these positional arguments and
// keyword arguments (any order).
Pattern CallOp(std::string target, std::vector<Pattern> args,
               std::vector<std::pair<std::string, Pattern>> kwargs = {});

// Arg()
//
// Matches any argument and binds it to `name`.
Pattern Arg(std::string name);

// Any()
//
// Matches any argument, binding nothing.
Pattern Any();

// Literal()
//
// Matches an argument equal to `value`, a literal (no node): same kind,
// floats bit for bit.
Pattern Literal(ir::Arg value);

// What a pattern matched.
struct Match {
  ir::Node* root = nullptr;
  // The matched calls, root first, each once.
  std::vector<ir::Node*> nodes;
  // What each Arg name is bound to.
  absl::flat_hash_map<std::string, ir::Arg> bindings;

  // The node bound to `name` (which must be bound to a node).
  ir::Node* node(absl::string_view name) const;
  // The argument bound to `name` (which must be bound).
  const ir::Arg& arg(absl::string_view name) const;
};

// Builds the replacement of a match (with Graph::InsertCall before
// match.root) and returns the node that replaces the root.
using Replacement =
    std::function<absl::StatusOr<ir::Node*>(ir::Graph&, const Match&)>;

// MatchPattern()
//
// Matches `pattern` (a CallOp) rooted at `node`, checking only the tree and
// the bindings (not uses, effects or mutation regions); nullopt when it
// does not match.
std::optional<Match> MatchPattern(const Pattern& pattern, ir::Node& node);

// Rewrites the matches of its patterns that are safe to rewrite (see the
// file comment), each root at most once per run.
class PatternMatcherPass : public Pass {
 public:
  absl::string_view name() const override { return "pattern_matcher"; }

  // AddPattern()
  //
  // Registers `pattern` (a CallOp) and what replaces its matches; `name`
  // is for the log.
  void AddPattern(std::string name, Pattern pattern, Replacement replacement);

  // Rewrites every safe match; true when any was rewritten.
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;

 private:
  struct Entry {
    std::string name;
    Pattern pattern;
    Replacement replacement;
  };
  std::vector<Entry> entries_;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_PATTERN_MATCHER_H_
