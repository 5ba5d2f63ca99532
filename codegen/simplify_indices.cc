#include "codegen/simplify_indices.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "codegen/loop_ir.h"
#include "symbolic/expr.h"
#include "symbolic/simplify.h"
#include "symbolic/value_ranges.h"

namespace lathe::codegen {

std::optional<absl::flat_hash_map<symbolic::Expr, symbolic::ValueRange>>
LoopVariableRanges(const Kernel& k) {
  absl::flat_hash_map<symbolic::Expr, symbolic::ValueRange> ranges;
  bool empty = false;
  auto add = [&](const std::vector<symbolic::Expr>& vars,
                 const std::vector<symbolic::Expr>& extents) {
    for (size_t v = 0; v < vars.size() && v < extents.size(); ++v) {
      const symbolic::Expr& e = extents[v];
      const bool constant = e.kind() == symbolic::ExprKind::kInteger;
      if (constant && e.int_value() <= 0) {
        empty = true;
        continue;
      }
      ranges[vars[v]] = symbolic::ValueRange::Int(
          0,
          constant ? symbolic::IntBound(e.int_value()) - 1 : symbolic::kIntInf);
    }
  };
  add(k.vars, k.ranges);
  for (const Section& s : k.sections) add(s.vars, s.ranges);
  if (empty) return std::nullopt;
  return ranges;
}

bool SimplifyIndices(Kernel& k) {
  if (k.kind != Kernel::Kind::kLoops) return false;
  std::optional<absl::flat_hash_map<symbolic::Expr, symbolic::ValueRange>>
      known = LoopVariableRanges(k);
  if (!known) return false;
  const auto& ranges = *known;
  symbolic::SimplifyContext context;
  context.ranges =
      [&](symbolic::Expr symbol) -> std::optional<symbolic::ValueRange> {
    auto it = ranges.find(symbol);
    if (it == ranges.end()) return std::nullopt;
    return it->second;
  };
  bool changed = false;
  for (ScalarOp& op : k.ops) {
    if (op.kind != ScalarOp::Kind::kLoad && op.kind != ScalarOp::Kind::kStore &&
        op.kind != ScalarOp::Kind::kIndex) {
      continue;
    }
    absl::StatusOr<symbolic::Expr> e = symbolic::Simplify(op.index, context);
    if (e.ok() && !(*e == op.index)) {
      op.index = *std::move(e);
      changed = true;
    }
  }
  return changed;
}

}  // namespace lathe::codegen
