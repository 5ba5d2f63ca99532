#include "codegen/split_loops.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "codegen/loop_ir.h"
#include "codegen/simplify_indices.h"
#include "symbolic/expr.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;
using symbolic::ExprKind;

// Adds to `divisors` each c by which `e` floor-divides `v` or takes its
// remainder: v // c, v % c, ModularIndexing(v, b, c) (b and b * c).
void CollectDivisors(Expr e, Expr v, std::set<int64_t>& divisors) {
  const ExprKind kind = e.kind();
  if (e.num_args() > 0 && e.arg(0) == v) {
    std::optional<int64_t> b =
        e.num_args() > 1 ? IntOf(e.arg(1)) : std::nullopt;
    if (b.has_value() &&
        (kind == ExprKind::kFloorDiv || kind == ExprKind::kMod ||
         kind == ExprKind::kPythonMod)) {
      divisors.insert(*b);
    } else if (b.has_value() && kind == ExprKind::kModularIndexing) {
      divisors.insert(*b);
      if (std::optional<int64_t> c = IntOf(e.arg(2))) divisors.insert(*b * *c);
    }
  }
  for (Expr a : e.args()) CollectDivisors(a, v, divisors);
}

// Whether `e` divides `v` anywhere (CollectDivisors finds a divisor > 1).
bool Divides(Expr e, Expr v) {
  std::set<int64_t> divisors;
  CollectDivisors(e, v, divisors);
  for (int64_t d : divisors) {
    if (d > 1) return true;
  }
  return false;
}

// Splits k's innermost loop; false, and k unchanged, when there is no
// split to make.
bool SplitOnce(Kernel& k) {
  const Expr v = k.vars.back();
  std::optional<int64_t> range = IntOf(k.ranges.back());
  if (!range.has_value()) return false;
  std::set<int64_t> divisors;
  for (const ScalarOp& op : k.ops) {
    if (!op.index.is_null()) CollectDivisors(op.index, v, divisors);
  }
  int64_t c = 0;
  for (int64_t d : divisors) {
    if (d > 1 && d < *range && *range % d == 0) {
      c = d;
      break;
    }
  }
  if (c < kMinSplitInner) return false;
  int fresh = 0;
  while (absl::c_linear_search(k.vars, IndexVar(fresh))) ++fresh;
  const Expr inner = IndexVar(fresh);
  std::vector<Expr> vars = k.vars, ranges = k.ranges;
  vars.push_back(inner);
  ranges.back() = symbolic::Int(*range / c);
  ranges.push_back(symbolic::Int(c));
  Kernel next = k;
  if (!RenameLoops(
          next, {{v, symbolic::Add(symbolic::Mul(symbolic::Int(c), v), inner)}},
          std::move(vars), std::move(ranges))) {
    return false;
  }
  SimplifyIndices(next);
  for (const ScalarOp& op : next.ops) {
    if (!op.index.is_null() && Divides(op.index, inner)) return false;
  }
  k = std::move(next);
  return true;
}

}  // namespace

std::optional<std::string> SplitLoopAtDivisions(Kernel& k) {
  if (!FlatPointwise(k) || k.vars.empty()) return std::nullopt;
  const std::vector<Expr> before = k.ranges;
  if (!SplitOnce(k)) return std::nullopt;
  return absl::StrCat("split ", k.name,
                      "'s innermost loop at its indices' "
                      "divisors: [",
                      PrintExprs(before), "] to [", PrintExprs(k.ranges), "]");
}

std::optional<Kernel> SplitToRanges(const Kernel& k,
                                    const std::vector<Expr>& ranges) {
  // A kernel without loops runs once: over `ranges` it would run again and
  // again.
  if (!FlatPointwise(k) || k.vars.empty() || ranges.size() < k.ranges.size()) {
    return std::nullopt;
  }
  std::vector<int64_t> to;
  for (const Expr& r : ranges) {
    std::optional<int64_t> v = IntOf(r);
    if (!v.has_value() || *v < 1) return std::nullopt;
    to.push_back(*v);
  }
  // From the innermost: each loop of k takes the next ranges whose product
  // is its own; its variable is their variables' row-major position.
  absl::flat_hash_map<Expr, Expr> split;
  int next = static_cast<int>(to.size());
  for (size_t d = k.vars.size(); d-- > 0;) {
    std::optional<int64_t> range = IntOf(k.ranges[d]);
    if (!range.has_value()) return std::nullopt;
    Expr position = symbolic::Int(0);
    int64_t covered = 1;
    while (covered < *range && next > 0) {
      --next;
      position = symbolic::Add(
          position, symbolic::Mul(symbolic::Int(covered), IndexVar(next)));
      covered *= to[next];
    }
    if (covered != *range) return std::nullopt;
    split[k.vars[d]] = position;
  }
  if (next != 0) return std::nullopt;  // ranges k's loops do not cover
  std::vector<Expr> vars;
  for (size_t i = 0; i < ranges.size(); ++i) {
    vars.push_back(IndexVar(static_cast<int>(i)));
  }
  Kernel out = k;
  if (!RenameLoops(out, split, std::move(vars), ranges)) return std::nullopt;
  SimplifyIndices(out);
  return out;
}

}  // namespace lathe::codegen
