#include "codegen/cuda/split_reductions.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// Blocks the split aims for over all rows, and the fewest points a chunk
// keeps (fewer, and the second pass costs more than it saves).
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kMinChunk = 2048;
constexpr int64_t kMinChunks = 8;

// The value of `e` if it is a static integer, else -1.
int64_t Static(Expr e) {
  return e.kind() == symbolic::ExprKind::kInteger ? e.int_value() : -1;
}

bool Combinable(ReduceKind r) {
  switch (r) {
    case ReduceKind::kSum:
    case ReduceKind::kProd:
    case ReduceKind::kMax:
    case ReduceKind::kMin:
    case ReduceKind::kAny:
    case ReduceKind::kAll:
      return true;
    default:
      return false;  // arg reductions and Welford carry more than a value
  }
}

// How `k` splits (chunks > 0), or why it stays whole: `why`, for the log
// ("" when there is nothing worth saying: not a long reduction over few
// rows).
struct Plan {
  std::string why;
  int64_t rows = 0, points = 0, chunks = 0;
};

Plan PlanSplit(const Kernel& k) {
  Plan plan;
  if (k.kind != Kernel::Kind::kLoops || k.sections.empty() ||
      !k.sections[0].reduction || k.sections[0].vars.empty()) {
    return plan;  // not a row kernel that starts with a reduction
  }
  plan.rows = Static(Product(k.ranges));
  plan.points = Static(Product(k.sections[0].ranges));
  if (plan.rows < 0 || plan.points < 0 || plan.points < kSplitMinPoints ||
      plan.rows > kSplitMaxRows) {
    return plan;  // short or dynamic rows, or rows enough
  }
  std::vector<bool> in_first(k.ops.size(), false);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    const ScalarOp& op = k.ops[i];
    if (op.kind == ScalarOp::Kind::kStore && IsIndirect(op)) {
      plan.why = "it stores at loaded indices (a serial kernel)";
      return plan;
    }
    if (op.section != 0) {
      // A later section reads the first's reductions only.
      for (int a : op.args) {
        if (in_first[a] && k.ops[a].kind != ScalarOp::Kind::kReduce) {
          plan.why = "a later section reads a value of the first";
          return plan;
        }
      }
      continue;
    }
    in_first[i] = true;
    switch (op.kind) {
      case ScalarOp::Kind::kStore:
      case ScalarOp::Kind::kScan:
      case ScalarOp::Kind::kCheckIndex:
        plan.why = "its first section stores, scans or checks an index";
        return plan;
      case ScalarOp::Kind::kReduce:
        if (!Combinable(op.reduce)) {
          plan.why = absl::StrCat("its ", ReduceName(op.reduce),
                                  " carries more than one value");
          return plan;
        }
        break;
      default:
        break;
    }
  }
  // The most chunks up to the target that divide the row exactly.
  int64_t most = std::min(kTargetBlocks / std::max<int64_t>(plan.rows, 1),
                          plan.points / kMinChunk);
  for (int64_t c = most; c >= kMinChunks; --c) {
    if (plan.points % c == 0) {
      plan.chunks = c;
      return plan;
    }
  }
  plan.why = absl::StrCat("no chunk count from ", kMinChunks, " to ", most,
                          " divides its ", plan.points, " points");
  return plan;
}

// The row index of `k`'s outer loops, flattened (the first var outermost).
Expr RowIndex(const Kernel& k) {
  Expr row = symbolic::Int(0);
  for (size_t v = 0; v < k.vars.size(); ++v) {
    row = symbolic::Add(symbolic::Mul(row, k.ranges[v]), k.vars[v]);
  }
  return row;
}

// Substitutes `values` into `e`, which must take them.
Expr Substituted(Expr e, const absl::flat_hash_map<Expr, Expr>& values) {
  if (e.is_null()) return e;
  absl::StatusOr<Expr> out = symbolic::Substitute(e, values);
  LATHE_CHECK(out.ok()) << out.status();
  return *out;
}

// `e` at the section's point `at` (its flat position over `vars`, the
// innermost fastest): base + c * at when e steps through the vars as a
// row-major walk scaled by c (a contiguous row), else each var's own
// formula (`from_flat`).
Expr AtPoint(Expr e, const std::vector<Expr>& vars,
             const std::vector<Expr>& ranges, Expr at,
             const absl::flat_hash_map<Expr, Expr>& from_flat) {
  if (e.is_null()) return e;
  absl::flat_hash_map<Expr, Expr> origin;
  for (Expr v : vars) origin[v] = symbolic::Int(0);
  const Expr base = Substituted(e, origin);
  int64_t scale = 0, stride = 1;
  for (int v = static_cast<int>(vars.size()) - 1; v >= 0; --v) {
    const Expr step = symbolic::Expand(symbolic::Sub(
        Substituted(e, {{vars[v], symbolic::Add(vars[v], symbolic::Int(1))}}),
        e));
    const int64_t d = Static(step);
    if (step.kind() != symbolic::ExprKind::kInteger || d % stride != 0 ||
        (scale != 0 && d / stride != scale)) {
      return Substituted(e, from_flat);
    }
    scale = d / stride;
    stride *= Static(ranges[v]);
  }
  return symbolic::Add(base, symbolic::Mul(symbolic::Int(scale), at));
}

// Splits kernel `k` (planned) into its partial kernel and itself, adding
// the workspace buffers to `p`.
std::pair<Kernel, Kernel> Split(Program& p, const Kernel& k, const Plan& plan) {
  const Section& first = k.sections[0];
  const int64_t chunk = plan.points / plan.chunks;
  const Expr chunks = symbolic::Int(plan.chunks);
  const Expr row = RowIndex(k);

  // The partial kernel: k's loops and one more over the chunks; its first
  // section over a chunk's points, flattened, then the partials' stores.
  Kernel part;
  part.kind = Kernel::Kind::kLoops;
  part.name = absl::StrCat(k.name, "_part");
  part.vars = k.vars;
  part.ranges = k.ranges;
  const Expr g = IndexVar(static_cast<int>(k.vars.size()));
  part.vars.push_back(g);
  part.ranges.push_back(chunks);
  const Expr c = SectionVar(0, static_cast<int>(first.vars.size()));
  part.sections.push_back(
      Section{{c}, {symbolic::Int(chunk)}, /*reduction=*/true});
  part.sections.push_back(Section{});
  part.nodes = k.nodes;
  // Each of the first section's variables from the chunk's point:
  // var = (g * chunk + c) // stride % range, the innermost fastest.
  const Expr at = symbolic::Add(symbolic::Mul(g, symbolic::Int(chunk)), c);
  absl::flat_hash_map<Expr, Expr> from_chunk;
  Expr stride = symbolic::Int(1);
  for (int v = static_cast<int>(first.vars.size()) - 1; v >= 0; --v) {
    absl::StatusOr<Expr> var =
        v == 0 ? symbolic::FloorDiv(at, stride)
               : symbolic::ModularIndexing(at, stride, first.ranges[v]);
    LATHE_CHECK(var.ok()) << var.status();
    from_chunk[first.vars[v]] = *var;
    stride = symbolic::Mul(stride, first.ranges[v]);
  }

  // The whole kernel again: its first section reduces the partials.
  Kernel whole = k;
  whole.sections[0] = Section{{SectionVar(0, 0)}, {chunks}, /*reduction=*/true};
  whole.ops.clear();
  std::vector<int> moved(k.ops.size(), -1);  // old op -> whole's op
  const Expr slot = symbolic::Add(symbolic::Mul(row, chunks), g);
  const Expr slot_in_whole =
      symbolic::Add(symbolic::Mul(row, chunks), SectionVar(0, 0));
  // The first section's ops, which need not come first in k.ops (a
  // sibling reduction's join it later: scheduler.cc), renumbered for part.
  std::vector<int> in_part(k.ops.size(), -1);  // old op -> part's op
  for (size_t i = 0; i < k.ops.size(); ++i) {
    ScalarOp op = k.ops[i];
    if (op.section != 0) continue;
    op.index = AtPoint(op.index, first.vars, first.ranges, at, from_chunk);
    for (int& a : op.args) {
      a = in_part[a];
      LATHE_CHECK(a >= 0) << "the first section reads its own values only";
    }
    part.ops.push_back(op);
    in_part[i] = static_cast<int>(part.ops.size()) - 1;
    if (op.kind != ScalarOp::Kind::kReduce) continue;
    // Its partials: a [rows, chunks] workspace.
    Buffer w;
    w.name = absl::StrCat(k.name, "_partial", i);
    w.dtype = op.dtype;
    w.numel = symbolic::Int(plan.rows * plan.chunks);
    const int b = static_cast<int>(p.buffers.size());
    p.buffers.push_back(std::move(w));
    ScalarOp store;
    store.kind = ScalarOp::Kind::kStore;
    store.dtype = op.dtype;
    store.buffer = b;
    store.index = slot;
    store.args = {static_cast<int>(part.ops.size()) - 1};
    store.section = 1;
    part.ops.push_back(store);
    ScalarOp load;
    load.kind = ScalarOp::Kind::kLoad;
    load.dtype = op.dtype;
    load.buffer = b;
    load.index = slot_in_whole;
    load.section = 0;
    whole.ops.push_back(load);
    ScalarOp reduce = k.ops[i];
    LATHE_CHECK(reduce.arg_index < 0) << "planned: Combinable reductions only";
    reduce.args = {static_cast<int>(whole.ops.size()) - 1};
    whole.ops.push_back(reduce);
    moved[i] = static_cast<int>(whole.ops.size()) - 1;
  }
  for (size_t i = 0; i < k.ops.size(); ++i) {
    ScalarOp op = k.ops[i];
    if (op.section == 0) continue;
    for (int& a : op.args) {
      a = moved[a];
      LATHE_CHECK(a >= 0) << "planned: later sections read reductions only";
    }
    moved[i] = static_cast<int>(whole.ops.size());
    whole.ops.push_back(std::move(op));
  }
  return {std::move(part), std::move(whole)};
}

}  // namespace

void SplitReductions(Program& program, std::vector<std::string>* log) {
  std::vector<Kernel> out;
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const Kernel& k = program.kernels[i];
    const Plan plan = PlanSplit(k);
    if (plan.chunks == 0) {
      if (!plan.why.empty()) {
        log->push_back(absl::StrCat(
            "keep ", k.name, "'s reduction in one block per row: ", plan.why));
      }
      out.push_back(k);
      continue;
    }
    const int at = static_cast<int>(out.size());
    const int buffers_before = static_cast<int>(program.buffers.size());
    auto [part, whole] = Split(program, k, plan);
    // The memory plan: kernels from `at` on move up by one; the workspace
    // lives from the partial kernel (at) to the whole one (at + 1).
    for (int b = 0; b < buffers_before; ++b) {
      Buffer& buf = program.buffers[b];
      if (buf.allocate_before > at) ++buf.allocate_before;
      if (buf.free_after >= at) ++buf.free_after;
    }
    for (size_t b = buffers_before; b < program.buffers.size(); ++b) {
      program.buffers[b].allocate_before = at;
      program.buffers[b].free_after = at + 1;
    }
    log->push_back(absl::StrCat("split ", k.name, "'s reduction over ",
                                plan.points, " points into ", plan.chunks,
                                " chunks of ", plan.points / plan.chunks, " (",
                                part.name, ", then ", k.name, ")"));
    out.push_back(std::move(part));
    out.push_back(std::move(whole));
  }
  program.kernels = std::move(out);
}

}  // namespace lathe::codegen
