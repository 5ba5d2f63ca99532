#include "codegen/scheduler.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codegen/simplify_indices.h"
#include "codegen/split_loops.h"
#include "runtime/convolution.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

constexpr int kMaxSections = 8;

bool HasReduction(const Kernel& k) {
  for (const Section& s : k.sections) {
    if (s.reduction) return true;
  }
  return false;
}

// Drops the outer loops of extent 1 (the kept dims of a keepdim reduction,
// an in-place op on its [n, 1] result): their variable is 0 in every index
// and the rest are renumbered x0, x1, ..., so that [n, 1] and [n] are the
// same ranges to fusion. False when an index cannot be rewritten.
bool SqueezeUnitRanges(Kernel& k) {
  if (k.kind != Kernel::Kind::kLoops) return true;
  absl::flat_hash_map<Expr, Expr> rename;
  std::vector<Expr> vars, ranges;
  for (size_t v = 0; v < k.vars.size(); ++v) {
    if (k.ranges[v] == symbolic::Int(1)) {
      rename[k.vars[v]] = symbolic::Int(0);
      continue;
    }
    Expr nv = IndexVar(static_cast<int>(vars.size()));
    if (nv != k.vars[v]) rename[k.vars[v]] = nv;
    vars.push_back(nv);
    ranges.push_back(k.ranges[v]);
  }
  if (rename.empty()) return true;
  return RenameLoops(k, rename, std::move(vars), std::move(ranges));
}

// The element stride of variable `v` in `index` (its coefficient when
// index is affine in it: index(v = 1) - index(v = 0), the other variables
// 0), or nullopt when that is not a number.
std::optional<int64_t> StrideOf(Expr index, Expr v,
                                const std::vector<Expr>& vars) {
  absl::flat_hash_map<Expr, Expr> at0, at1;
  for (Expr u : vars) {
    at0[u] = symbolic::Int(0);
    at1[u] = symbolic::Int(u == v ? 1 : 0);
  }
  absl::StatusOr<Expr> a = symbolic::Substitute(index, at0);
  absl::StatusOr<Expr> b = symbolic::Substitute(index, at1);
  if (!a.ok() || !b.ok() || a->kind() != symbolic::ExprKind::kInteger ||
      b->kind() != symbolic::ExprKind::kInteger) {
    return std::nullopt;
  }
  return b->int_value() - a->int_value();
}

// Loop reordering for contiguous access (as Inductor's loop order choice):
// in a flat pointwise kernel, the outer loop over which the most bytes are
// read or written at stride 1 becomes the innermost (the simd loop); the
// others keep their order. Only when the iterations are independent: no
// indirect store, and every buffer the kernel stores to is loaded only at
// the element the same iteration stores. Returns a log entry when it moved
// a loop.
std::optional<std::string> ReorderForContiguity(Kernel& k, const Program& p) {
  if (!FlatPointwise(k) || k.vars.size() < 2) return std::nullopt;
  absl::flat_hash_map<int, std::vector<Expr>> stored;
  for (const ScalarOp& op : k.ops) {
    if (op.kind != ScalarOp::Kind::kStore) continue;
    if (IsIndirect(op)) return std::nullopt;
    stored[op.buffer].push_back(op.index);
  }
  for (const ScalarOp& op : k.ops) {
    if (op.kind != ScalarOp::Kind::kLoad) continue;
    auto it = stored.find(op.buffer);
    if (it == stored.end()) continue;
    for (Expr e : it->second) {
      if (e != op.index || IsIndirect(op)) return std::nullopt;
    }
  }
  const size_t n = k.vars.size();
  std::vector<int64_t> contiguous(n, 0);
  for (const ScalarOp& op : k.ops) {
    if (op.kind != ScalarOp::Kind::kLoad && op.kind != ScalarOp::Kind::kStore) {
      continue;
    }
    if (IsIndirect(op)) continue;
    for (size_t v = 0; v < n; ++v) {
      std::optional<int64_t> stride = StrideOf(op.index, k.vars[v], k.vars);
      if (stride.has_value() && (*stride == 1 || *stride == -1)) {
        contiguous[v] += ItemSize(p.buffers[op.buffer].dtype);
      }
    }
  }
  size_t best = n - 1;
  for (size_t v = 0; v < n; ++v) {
    if (contiguous[v] > contiguous[best]) best = v;
  }
  if (best == n - 1) return std::nullopt;
  Expr var = k.vars[best], range = k.ranges[best];
  k.vars.erase(k.vars.begin() + static_cast<std::ptrdiff_t>(best));
  k.ranges.erase(k.ranges.begin() + static_cast<std::ptrdiff_t>(best));
  k.vars.push_back(var);
  k.ranges.push_back(range);
  return absl::StrCat(
      "reorder ", k.name, ": ", var.name(), " innermost (", contiguous[best],
      " bytes per iteration at stride 1, against ", contiguous[n - 1], ")");
}

// Which ops section `s` of k holds.
struct SectionOps {
  bool scan = false, welford = false, arg = false;
};
SectionOps OpsOf(const Kernel& k, int s) {
  SectionOps has;
  for (const ScalarOp& op : k.ops) {
    if (op.section != s) continue;
    has.scan = has.scan || op.kind == ScalarOp::Kind::kScan;
    if (op.kind != ScalarOp::Kind::kReduce) continue;
    has.welford = has.welford || op.reduce == ReduceKind::kWelfordMean;
    has.arg = has.arg || op.reduce == ReduceKind::kArgMax ||
              op.reduce == ReduceKind::kArgMin;
  }
  return has;
}

// The section of a that b's first section, a reduction over the same outer
// ranges, can join as a sibling, or -1: a reduction section over the same
// inner ranges, neither with a scan, at most one with Welford ops (the
// emitter's blocked pass), both or neither with an argmax/argmin (which
// runs its section's loop in order, on one thread: the cpu emitter). b must
// read nothing a writes (b's reduction then runs before a's later sections
// store) and write nothing a reads or writes; b's first section must be a
// reduction, its others straight.
int SiblingSection(const Kernel& a, const Kernel& b) {
  if (a.ranges != b.ranges || b.sections.empty() || !b.sections[0].reduction) {
    return -1;
  }
  const SectionOps mine = OpsOf(b, 0);
  if (mine.scan) return -1;
  for (size_t s = 1; s < b.sections.size(); ++s) {
    if (b.sections[s].reduction || !b.sections[s].vars.empty()) return -1;
  }
  absl::flat_hash_set<int> a_writes, a_touches;
  for (const ScalarOp& op : a.ops) {
    if (op.kind == ScalarOp::Kind::kStore) a_writes.insert(op.buffer);
    if (op.kind == ScalarOp::Kind::kStore || op.kind == ScalarOp::Kind::kLoad) {
      a_touches.insert(op.buffer);
    }
  }
  for (const ScalarOp& op : b.ops) {
    if ((op.kind == ScalarOp::Kind::kLoad && a_writes.contains(op.buffer)) ||
        (op.kind == ScalarOp::Kind::kStore && a_touches.contains(op.buffer))) {
      return -1;
    }
  }
  for (size_t s = 0; s < a.sections.size(); ++s) {
    if (!a.sections[s].reduction ||
        a.sections[s].ranges != b.sections[0].ranges) {
      continue;
    }
    const SectionOps theirs = OpsOf(a, static_cast<int>(s));
    if (!theirs.scan && !(mine.welford && theirs.welford) &&
        mine.arg == theirs.arg) {
      return static_cast<int>(s);
    }
  }
  return -1;
}

// Tries to fuse b into a; on success a holds both and the reason is set.
std::optional<std::string> TryFuse(Kernel& a, const Kernel& b) {
  if (a.kind != Kernel::Kind::kLoops || b.kind != Kernel::Kind::kLoops) {
    return std::nullopt;
  }
  size_t na = a.ranges.size();
  // How b's variables map into a, and which section b's first section goes to.
  absl::flat_hash_map<Expr, Expr> rename;
  std::string reason;
  enum class Mode { kSameSection, kNewSections, kSibling } mode;
  int into = 0;
  std::vector<Section> added;
  int sibling = -1;
  if (a.ranges == b.ranges && FlatPointwise(b)) {
    const Section& last = a.sections.back();
    if (!last.vars.empty()) {
      mode = Mode::kNewSections;
      added.push_back(Section());
      into = static_cast<int>(a.sections.size());
    } else {
      mode = Mode::kSameSection;
      into = static_cast<int>(a.sections.size()) - 1;
    }
    reason = HasReduction(a) ? "epilogue over the reduction's outer ranges"
                             : "pointwise over the same ranges";
  } else if ((sibling = SiblingSection(a, b)) >= 0) {
    // b's reduction joins a's over the same loops (x.sum() and
    // x.var_mean(): one pass over x for both); b's epilogue follows a's
    // sections. b reads nothing a writes (SiblingSection), so no access
    // needs checking against a's.
    mode = Mode::kSibling;
    into = static_cast<int>(a.sections.size());
    const Section& theirs = a.sections[sibling];
    for (size_t v = 0; v < theirs.vars.size(); ++v) {
      rename[b.sections[0].vars[v]] = theirs.vars[v];
    }
    for (size_t s = 1; s < b.sections.size(); ++s) {
      added.push_back(b.sections[s]);
    }
    reason = "reduction beside the reduction over the same ranges";
  } else if (a.ranges == b.ranges && HasReduction(b) && HasReduction(a)) {
    mode = Mode::kNewSections;
    into = static_cast<int>(a.sections.size());
    for (size_t s = 0; s < b.sections.size(); ++s) {
      Section sec = b.sections[s];
      for (size_t v = 0; v < sec.vars.size(); ++v) {
        Expr nv = SectionVar(into + static_cast<int>(s), static_cast<int>(v));
        rename[sec.vars[v]] = nv;
        sec.vars[v] = nv;
      }
      added.push_back(sec);
    }
    reason = "reduction over the same outer ranges";
  } else if (HasReduction(a) && FlatPointwise(b) && b.ranges.size() > na &&
             std::equal(a.ranges.begin(), a.ranges.end(), b.ranges.begin()) &&
             !a.sections.back().reduction &&
             std::equal(b.ranges.begin() + na, b.ranges.end(),
                        a.sections.back().ranges.begin(),
                        a.sections.back().ranges.end())) {
    // Into a's last section when it is pointwise over the same inner ranges
    // (a chain of in-place ops on a reduction's epilogue): one loop, whose
    // stores later ops read at the same element become values.
    mode = Mode::kSameSection;
    into = static_cast<int>(a.sections.size()) - 1;
    const Section& last = a.sections.back();
    for (size_t v = na; v < b.ranges.size(); ++v) {
      rename[b.vars[v]] = last.vars[v - na];
    }
    reason =
        "pointwise into the reduction epilogue's loop over the same ranges";
  } else if (HasReduction(a) && FlatPointwise(b) && b.ranges.size() > na &&
             std::equal(a.ranges.begin(), a.ranges.end(), b.ranges.begin())) {
    mode = Mode::kNewSections;
    into = static_cast<int>(a.sections.size());
    Section sec;
    for (size_t v = na; v < b.ranges.size(); ++v) {
      Expr nv = SectionVar(into, static_cast<int>(v - na));
      rename[b.vars[v]] = nv;
      sec.vars.push_back(nv);
      sec.ranges.push_back(b.ranges[v]);
    }
    added.push_back(sec);
    reason = "pointwise over the reduction's outer ranges and its inner ones";
  } else {
    return std::nullopt;
  }
  if (a.sections.size() + added.size() > kMaxSections) return std::nullopt;
  // b's ops with renamed indices.
  std::vector<ScalarOp> ops = b.ops;
  for (ScalarOp& op : ops) {
    if (!op.index.is_null() && !rename.empty()) {
      absl::StatusOr<Expr> e = symbolic::Substitute(op.index, rename);
      if (!e.ok()) return std::nullopt;
      op.index = *e;
    }
  }
  // Accesses of a, per buffer: stores (index, value, section) and loads.
  struct Access {
    Expr index;
    int value;
    bool straight;  // in a section without loops of its own
    int section;
    bool indirect;  // an indirect or masked store: any element
  };
  absl::flat_hash_map<int, std::vector<Access>> a_stores, a_loads;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const ScalarOp& op = a.ops[i];
    bool straight = a.sections[op.section].vars.empty();
    if (op.kind == ScalarOp::Kind::kStore) {
      a_stores[op.buffer].push_back(
          {op.index, op.args[0], straight, op.section, IsIndirect(op)});
    } else if (op.kind == ScalarOp::Kind::kLoad) {
      a_loads[op.buffer].push_back({op.index, static_cast<int>(i), straight,
                                    op.section, IsIndirect(op)});
    }
  }
  // Whether b's access `op` (in a section of its own, or joining a's last)
  // touches the element a's access `s` touched in an earlier section of the
  // same outer iteration: both sections loop over the same inner ranges and
  // the indices agree once the inner variables are matched. Sections run in
  // order within an outer iteration, so the access sees a's.
  auto SameElement = [&](const ScalarOp& op, const Access& s) {
    if (mode == Mode::kSameSection && s.section == into) return false;
    const Section& mine =
        mode == Mode::kNewSections ? added[op.section] : a.sections[into];
    const Section& theirs = a.sections[s.section];
    if (mine.vars.empty() || theirs.ranges != mine.ranges) return false;
    absl::flat_hash_map<Expr, Expr> same;
    for (size_t v = 0; v < mine.vars.size(); ++v) {
      same[mine.vars[v]] = theirs.vars[v];
    }
    absl::StatusOr<Expr> at = symbolic::Substitute(op.index, same);
    return at.ok() && *at == s.index;
  };
  // Check b's accesses against a's, and find the loads that become values.
  absl::flat_hash_map<int, int> replaced;  // b op -> a op
  for (size_t i = 0; i < ops.size() && mode != Mode::kSibling; ++i) {
    const ScalarOp& op = ops[i];
    if (op.kind == ScalarOp::Kind::kLoad) {
      auto it = a_stores.find(op.buffer);
      if (it == a_stores.end()) continue;
      // An indirect load may read any element, an indirect store write
      // any: a must be done first.
      if (IsIndirect(op)) return std::nullopt;
      for (const Access& s : it->second) {
        if (s.indirect) return std::nullopt;
      }
      // Every store of the buffer must be at this element (an in-place
      // chain stores it several times): the load takes the last value.
      bool forward = true;
      for (const Access& s : it->second) {
        if (s.index != op.index ||
            !(s.straight || mode == Mode::kSameSection)) {
          forward = false;
          break;
        }
        replaced[static_cast<int>(i)] = s.value;
      }
      if (forward) continue;
      replaced.erase(static_cast<int>(i));
      // Else, in a section of its own, the load may read the memory an
      // earlier section of the same outer iteration wrote.
      for (const Access& s : it->second) {
        if (!SameElement(op, s)) return std::nullopt;
      }
    } else if (op.kind == ScalarOp::Kind::kStore) {
      for (auto* table : {&a_stores, &a_loads}) {
        auto it = table->find(op.buffer);
        if (it == table->end()) continue;
        if (IsIndirect(op)) return std::nullopt;
        for (const Access& s : it->second) {
          if (s.indirect) return std::nullopt;
          bool here =
              s.index == op.index && (mode == Mode::kSameSection || s.straight);
          if (!here && !SameElement(op, s)) return std::nullopt;
        }
      }
    }
  }
  // Merge.
  std::vector<int> map(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = replaced.find(static_cast<int>(i));
    if (it != replaced.end()) {
      map[i] = it->second;
      continue;
    }
    ScalarOp op = ops[i];
    for (int& x : op.args) x = map[x];
    if (op.arg_index >= 0) op.arg_index = map[op.arg_index];
    op.section = mode == Mode::kSameSection   ? into
                 : mode == Mode::kNewSections ? into + op.section
                 : op.section == 0            ? sibling
                                              : into + op.section - 1;
    a.ops.push_back(std::move(op));
    map[i] = static_cast<int>(a.ops.size()) - 1;
  }
  for (Section& s : added) a.sections.push_back(std::move(s));
  for (const std::string& f : b.fused_from) a.fused_from.push_back(f);
  for (const std::string& n : b.nodes) a.nodes.push_back(n);
  return reason;
}

// Drops the stores to buffers nothing reads (not outputs, not inputs) and
// marks them local: they are neither stored nor allocated.
// Removes the ops `drop` marks from k (no kept op may use one), renumbering
// the rest; whether any was removed.
bool EraseOps(Kernel& k, const std::vector<bool>& drop) {
  std::vector<ScalarOp> kept;
  std::vector<int> map(k.ops.size(), -1);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    if (drop[i]) continue;
    ScalarOp c = std::move(k.ops[i]);
    for (int& x : c.args) x = map[x];
    if (c.arg_index >= 0) c.arg_index = map[c.arg_index];
    kept.push_back(std::move(c));
    map[i] = static_cast<int>(kept.size()) - 1;
  }
  bool changed = kept.size() != k.ops.size();
  k.ops = std::move(kept);
  return changed;
}

// Which memory each allocated buffer lives in (as Inductor's buffer reuse):
// the kernels that first and last touch it bound its lifetime; a buffer takes
// over the memory of one whose last kernel came before its own first and
// whose size in bytes is the same expression (the one given back last, so
// the cache is warm); memory nothing takes over is given back after its last
// kernel. Outputs keep theirs, and take over none that is an output.
void PlanStorage(LoweredGraph& g, std::vector<std::string>& log) {
  Program& p = g.program;
  const int nb = static_cast<int>(p.buffers.size());
  const int nk = static_cast<int>(p.kernels.size());
  std::vector<int> first(nb, -1), last(nb, -1);
  for (int k = 0; k < nk; ++k) {
    auto touch = [&](int b) {
      if (first[b] < 0) first[b] = k;
      last[b] = k;
    };
    for (const ScalarOp& op : p.kernels[k].ops) {
      if (op.buffer >= 0) touch(op.buffer);
    }
    for (int b : p.kernels[k].extern_buffers) touch(b);
  }
  std::vector<bool> output(nb, false);
  for (const LoweredOutput& o : g.outputs) {
    if (o.buffer >= 0) output[o.buffer] = true;
  }
  auto planned = [&](int b) {
    const Buffer& buf = p.buffers[b];
    return buf.kind == Buffer::Kind::kAllocated && !buf.local && first[b] >= 0;
  };
  auto bytes = [&](int b) {
    return symbolic::Mul(p.buffers[b].numel,
                         symbolic::Int(ItemSize(p.buffers[b].dtype)));
  };
  for (int b = 0; b < nb; ++b) p.buffers[b].allocate_before = first[b];
  std::vector<int> free;  // memory no buffer holds, the last given back last
  for (int k = 0; k < nk; ++k) {
    for (int b = 0; b < nb; ++b) {
      if (!planned(b) || first[b] != k) continue;
      for (size_t f = free.size(); f-- > 0;) {
        if (bytes(free[f]) != bytes(b)) continue;
        p.buffers[b].reuses = free[f];
        log.push_back(absl::StrCat(p.buffers[b].name, ": reuses the memory of ",
                                   p.buffers[free[f]].name, " (",
                                   symbolic::ToString(bytes(b)), " bytes)"));
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(f));
        break;
      }
    }
    for (int b = 0; b < nb; ++b) {
      if (planned(b) && last[b] == k && !output[b]) free.push_back(b);
    }
  }
  for (int b : free) p.buffers[b].free_after = last[b];
}

void PlanMemory(LoweredGraph& g, std::vector<std::string>& log) {
  Program& p = g.program;
  // The last kernel that reads each buffer (the kernel count for an
  // output), or -1 for one nothing reads.
  const int end = static_cast<int>(p.kernels.size());
  std::vector<int> last_read(p.buffers.size(), -1);
  for (int i = 0; i < end; ++i) {
    for (const ScalarOp& op : p.kernels[i].ops) {
      if (op.kind == ScalarOp::Kind::kLoad) last_read[op.buffer] = i;
    }
    for (int b : p.kernels[i].extern_buffers) last_read[b] = i;
  }
  for (const LoweredOutput& o : g.outputs) {
    if (o.buffer >= 0) last_read[o.buffer] = end;
  }
  // A buffer nothing reads is never stored (its values stay in registers).
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    Buffer& buf = p.buffers[b];
    if (buf.kind != Buffer::Kind::kAllocated || last_read[b] >= 0) continue;
    buf.local = true;
    for (Kernel& k : p.kernels) {
      std::vector<bool> drop(k.ops.size(), false);
      for (size_t i = 0; i < k.ops.size(); ++i) {
        drop[i] = k.ops[i].kind == ScalarOp::Kind::kStore &&
                  k.ops[i].buffer == static_cast<int>(b);
      }
      EraseOps(k, drop);
    }
    log.push_back(
        absl::StrCat(buf.name, ": kept in registers (every read was fused)"));
  }
  // A store nothing reads after it is dropped: no later kernel reads the
  // buffer, nor does an op after the store in its own kernel. A kernel's
  // outer iterations run in parallel, so none reads an element another
  // stores, except a combining indirect store's own load before it (which
  // only that store reads). An in-place op on a value's last use leaves such
  // stores (a softmax's x - max written over the scores it read).
  for (int i = 0; i < end; ++i) {
    Kernel& k = p.kernels[i];
    if (k.kind != Kernel::Kind::kLoops) continue;
    std::vector<bool> drop(k.ops.size(), false);
    absl::flat_hash_set<int> loaded_after;
    for (size_t j = k.ops.size(); j-- > 0;) {
      const ScalarOp& op = k.ops[j];
      if (op.kind == ScalarOp::Kind::kLoad) loaded_after.insert(op.buffer);
      if (op.kind != ScalarOp::Kind::kStore) continue;
      const Buffer& buf = p.buffers[op.buffer];
      drop[j] = buf.kind == Buffer::Kind::kAllocated &&
                last_read[op.buffer] <= i && !loaded_after.contains(op.buffer);
      if (drop[j]) {
        log.push_back(
            absl::StrCat(buf.name, ": ", k.name,
                         "'s store dropped (nothing reads it after)"));
      }
    }
    EraseOps(k, drop);
  }
  for (Kernel& k : p.kernels) {
    // A store that a later store of the same section overwrites at the same
    // element, with no load of the buffer between, is dropped (in-place
    // chains fused into one kernel).
    std::vector<bool> drop(k.ops.size(), false);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& a = k.ops[i];
      if (a.kind != ScalarOp::Kind::kStore) continue;
      for (size_t j = i + 1; j < k.ops.size(); ++j) {
        const ScalarOp& b = k.ops[j];
        if (b.buffer != a.buffer) continue;
        if (b.kind == ScalarOp::Kind::kLoad) break;
        if (b.kind == ScalarOp::Kind::kStore) {
          drop[i] = b.index == a.index && b.section == a.section &&
                    !IsIndirect(a) && !IsIndirect(b);
          break;
        }
      }
    }
    EraseOps(k, drop);
    // Ops whose values nothing uses any more (the stored values of dropped
    // stores) are removed; a check stays (it stops the program, as the
    // interpreter would, whether or not its value is used).
    bool changed = true;
    while (changed) {
      std::vector<int> users = Users(k);
      drop.assign(k.ops.size(), false);
      for (size_t i = 0; i < k.ops.size(); ++i) {
        drop[i] = users[i] == 0 && k.ops[i].kind != ScalarOp::Kind::kStore &&
                  k.ops[i].kind != ScalarOp::Kind::kCheckIndex;
      }
      changed = EraseOps(k, drop);
    }
  }
}

// The least and greatest values of `e` over `vars` in [0, ranges), when e
// is affine in them with integer coefficients and the ranges are integers
// of at least 1; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> AffineBounds(
    Expr e, const std::vector<Expr>& vars, const std::vector<Expr>& ranges) {
  absl::flat_hash_map<Expr, Expr> at0;
  for (Expr u : vars) at0[u] = symbolic::Int(0);
  absl::StatusOr<Expr> c0 = symbolic::Substitute(e, at0);
  if (!c0.ok() || !IntOf(*c0).has_value()) return std::nullopt;
  int64_t lo = *IntOf(*c0), hi = lo;
  Expr rebuilt = *c0;
  for (size_t i = 0; i < vars.size(); ++i) {
    std::optional<int64_t> c = StrideOf(e, vars[i], vars);
    std::optional<int64_t> r = IntOf(ranges[i]);
    if (!c.has_value() || !r.has_value() || *r < 1) return std::nullopt;
    lo += std::min<int64_t>(0, *c * (*r - 1));
    hi += std::max<int64_t>(0, *c * (*r - 1));
    rebuilt = symbolic::Add(rebuilt, symbolic::Mul(symbolic::Int(*c), vars[i]));
  }
  if (symbolic::Sub(e, rebuilt) != symbolic::Int(0)) return std::nullopt;
  return std::pair{lo, hi};
}

// A boundary between two adjacent outer loops of a flat pointwise kernel:
// the number of iterations inside it (the product of the inner loop's
// range and those within it), and whether the two loops can run as one:
// every index is affine in both, and the outer loop's stride is the inner
// one's times its range.
struct LoopCut {
  int64_t inner = 1;
  bool mergeable = false;
};

// The cuts of flat pointwise kernel `k`, outermost first; nullopt when a
// range is not a number.
std::optional<std::vector<LoopCut>> LoopCuts(const Kernel& k) {
  const size_t n = k.vars.size();
  std::vector<int64_t> ranges;
  for (const Expr& r : k.ranges) {
    std::optional<int64_t> v = IntOf(r);
    if (!v.has_value()) return std::nullopt;
    ranges.push_back(*v);
  }
  std::vector<LoopCut> cuts(n > 0 ? n - 1 : 0);
  int64_t inner = 1;
  for (size_t i = cuts.size(); i-- > 0;) {
    inner *= ranges[i + 1];
    cuts[i].inner = inner;
    const Expr outer = k.vars[i], in = k.vars[i + 1];
    const absl::flat_hash_map<Expr, Expr> zero = {{outer, symbolic::Int(0)},
                                                  {in, symbolic::Int(0)}};
    bool mergeable = true;
    for (const ScalarOp& op : k.ops) {
      if (op.index.is_null()) continue;
      std::optional<int64_t> so = StrideOf(op.index, outer, k.vars);
      std::optional<int64_t> si = StrideOf(op.index, in, k.vars);
      absl::StatusOr<Expr> rest = symbolic::Substitute(op.index, zero);
      if (!so.has_value() || !si.has_value() || !rest.ok() ||
          *so != *si * ranges[i + 1] ||
          symbolic::Sub(
              op.index,
              symbolic::Add(
                  *rest,
                  symbolic::Add(symbolic::Mul(symbolic::Int(*so), outer),
                                symbolic::Mul(symbolic::Int(*si), in)))) !=
              symbolic::Int(0)) {
        mergeable = false;
        break;
      }
    }
    cuts[i].mergeable = mergeable;
  }
  return cuts;
}

// Merges the loops of flat pointwise kernel `k` across each of its `cuts`
// (LoopCuts) whose inner count is not in `keep`: each group of loops
// becomes one, x0, x1, ... from the outermost. False when an index cannot
// be rewritten.
bool MergeLoops(Kernel& k, const std::vector<LoopCut>& cuts,
                const std::set<int64_t>& keep) {
  absl::flat_hash_map<Expr, Expr> rename;
  std::vector<Expr> vars, ranges;
  for (size_t d = 0; d < k.vars.size(); ++d) {
    const bool joins_next = d + 1 < k.vars.size() && cuts[d].mergeable &&
                            keep.count(cuts[d].inner) == 0;
    const bool starts = d == 0 || !(cuts[d - 1].mergeable &&
                                    keep.count(cuts[d - 1].inner) == 0);
    if (starts) {
      vars.push_back(IndexVar(static_cast<int>(vars.size())));
      ranges.push_back(k.ranges[d]);
    } else {
      ranges.back() = symbolic::Mul(ranges.back(), k.ranges[d]);
    }
    // The group's index is its innermost loop's (the outer ones' strides
    // are multiples of it): the others become 0.
    rename[k.vars[d]] = joins_next ? symbolic::Int(0) : vars.back();
  }
  return RenameLoops(k, rename, std::move(vars), std::move(ranges));
}

// Flat pointwise kernels `a` and `b` over the same elements in different
// loop nests (a kernel over [8, 128, 2048] and one over its [1024, 2048]
// view), each with its loops merged across the boundaries that neither
// needs and not both have: the loops to fuse them in, or nullopt when one
// needs a boundary the other does not have.
std::optional<std::pair<Kernel, Kernel>> InCommonLoops(const Kernel& a,
                                                       const Kernel& b) {
  if (!FlatPointwise(a) || !FlatPointwise(b) || a.ranges == b.ranges) {
    return std::nullopt;
  }
  std::optional<std::vector<LoopCut>> ca = LoopCuts(a), cb = LoopCuts(b);
  if (!ca.has_value() || !cb.has_value()) return std::nullopt;
  auto total = [](const Kernel& k) {
    int64_t n = 1;
    for (const Expr& r : k.ranges) n *= *IntOf(r);
    return n;
  };
  if (total(a) != total(b)) return std::nullopt;
  // Kept: the boundaries one kernel needs, and those both have (so that a
  // next kernel that needs one still finds it).
  std::set<int64_t> keep, in_a, in_b;
  for (const LoopCut& c : *ca) {
    in_a.insert(c.inner);
    if (!c.mergeable) keep.insert(c.inner);
  }
  for (const LoopCut& c : *cb) {
    in_b.insert(c.inner);
    if (!c.mergeable) keep.insert(c.inner);
    if (in_a.count(c.inner) > 0) keep.insert(c.inner);
  }
  for (int64_t c : keep) {
    if (in_a.count(c) == 0 || in_b.count(c) == 0) return std::nullopt;
  }
  std::pair<Kernel, Kernel> merged{a, b};
  if (!MergeLoops(merged.first, *ca, keep) ||
      !MergeLoops(merged.second, *cb, keep) ||
      merged.first.ranges != merged.second.ranges) {
    return std::nullopt;
  }
  return merged;
}

// The loop kernel `b` after convolution `a` as a's epilogue
// (Routines::sconv_epilogue): b then runs over each image of a's output as
// soon as it is written, in the thread's cache (the bias, activation and
// pooling after a convolution). Only when one of b's outer variables runs
// over a's images and, for every buffer b touches, each access is that
// variable times one stride plus an index free of it (the image's part;
// for a's output, inside its image; never backwards, so each image's
// pointers stay inside their buffers), and when b's iterations may run in
// any order and again (sconv may run an image's epilogue twice: kernel
// ABI): no indirect access, scan or check, no buffer both read and
// written, none of a's operands written. Returns the reason.
std::optional<std::string> TryFuseEpilogue(Kernel& a, const Kernel& b) {
  if (a.kind != Kernel::Kind::kExtern || a.routine != "sconv" ||
      !a.ops.empty() || b.kind != Kernel::Kind::kLoops || b.ops.empty() ||
      a.extern_buffers.size() != 3 || a.extern_args.empty()) {
    return std::nullopt;
  }
  const std::vector<Expr>& g = a.extern_args;
  const std::optional<int64_t> s = IntOf(g[0]);
  if (!s.has_value() ||
      static_cast<int64_t>(g.size()) != SconvGeometrySize(*s)) {
    return std::nullopt;
  }
  // The geometry (runtime/convolution.h): the images, out's offset and its
  // batch stride.
  const SconvAt at{*s};
  const std::optional<int64_t> images = IntOf(g[SconvAt::kBatch]);
  const std::optional<int64_t> out_offset = IntOf(g[at.OutOffset()]);
  const std::optional<int64_t> image_stride = IntOf(g[at.OutOffset() + 1]);
  if (!images.has_value() || !out_offset.has_value() ||
      !image_stride.has_value() || *images < 1 || *out_offset != 0 ||
      *image_stride < 1) {
    return std::nullopt;
  }
  const int out = a.extern_buffers[0];
  std::set<int> loaded, stored;
  for (const ScalarOp& op : b.ops) {
    if (IsIndirect(op) || op.kind == ScalarOp::Kind::kScan ||
        op.kind == ScalarOp::Kind::kCheckIndex) {
      return std::nullopt;
    }
    if (op.kind == ScalarOp::Kind::kLoad) loaded.insert(op.buffer);
    if (op.kind == ScalarOp::Kind::kStore) stored.insert(op.buffer);
  }
  if (loaded.count(out) == 0) return std::nullopt;
  for (int st : stored) {
    if (loaded.count(st) > 0 || absl::c_linear_search(a.extern_buffers, st)) {
      return std::nullopt;
    }
  }
  // The variables b's indices range over besides the image's.
  std::vector<Expr> vars, ranges;
  for (const Section& sec : b.sections) {
    vars.insert(vars.end(), sec.vars.begin(), sec.vars.end());
    ranges.insert(ranges.end(), sec.ranges.begin(), sec.ranges.end());
  }
  for (size_t at = 0; at < b.vars.size(); ++at) {
    if (IntOf(b.ranges[at]) != images) continue;
    const Expr v = b.vars[at];
    std::vector<Expr> others = vars, other_ranges = ranges;
    for (size_t u = 0; u < b.vars.size(); ++u) {
      if (u == at) continue;
      others.push_back(b.vars[u]);
      other_ranges.push_back(b.ranges[u]);
    }
    std::vector<Expr> all = others;
    all.push_back(v);
    const absl::flat_hash_map<Expr, Expr> at0 = {{v, symbolic::Int(0)}};
    std::vector<std::pair<int, Expr>> strides;
    bool fits = true;
    for (const ScalarOp& op : b.ops) {
      if (!fits) break;
      if (op.index.is_null()) continue;
      absl::StatusOr<Expr> rest = symbolic::Substitute(op.index, at0);
      if (!rest.ok()) {
        fits = false;
        break;
      }
      if (op.kind != ScalarOp::Kind::kLoad &&
          op.kind != ScalarOp::Kind::kStore) {
        fits = *rest == op.index;  // an index value may not name the image
        continue;
      }
      std::optional<int64_t> c = StrideOf(op.index, v, all);
      if (!c.has_value() || *c < 0 ||
          symbolic::Sub(
              op.index,
              symbolic::Add(*rest, symbolic::Mul(symbolic::Int(*c), v))) !=
              symbolic::Int(0)) {
        fits = false;
        break;
      }
      auto known = absl::c_find_if(
          strides, [&](const auto& e) { return e.first == op.buffer; });
      if (known == strides.end()) {
        strides.emplace_back(op.buffer, symbolic::Int(*c));
      } else if (known->second != symbolic::Int(*c)) {
        fits = false;
      }
      if (op.buffer == out) {
        std::optional<std::pair<int64_t, int64_t>> bounds =
            AffineBounds(*rest, others, other_ranges);
        fits = fits && *c == *image_stride && bounds.has_value() &&
               bounds->first >= 0 && bounds->second < *image_stride;
      }
    }
    if (!fits) continue;
    Kernel e = b;
    e.ranges[at] = symbolic::Int(1);
    if (!SqueezeUnitRanges(e)) return std::nullopt;
    std::sort(strides.begin(), strides.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    a.vars = std::move(e.vars);
    a.ranges = std::move(e.ranges);
    a.sections = std::move(e.sections);
    a.ops = std::move(e.ops);
    a.image_strides = std::move(strides);
    a.fused_from.push_back(b.name);
    for (const std::string& f : b.fused_from) a.fused_from.push_back(f);
    for (const std::string& n : b.nodes) a.nodes.push_back(n);
    return absl::StrCat("the convolution's epilogue, over each image (",
                        symbolic::ToString(v), ")");
  }
  return std::nullopt;
}

// Fuses each convolution's next kernel into it as its epilogue where
// TryFuseEpilogue takes it.
void FuseConvolutionEpilogues(Program& p, std::vector<std::string>& log) {
  std::vector<Kernel> out;
  for (Kernel& k : p.kernels) {
    if (!out.empty()) {
      if (std::optional<std::string> why = TryFuseEpilogue(out.back(), k)) {
        log.push_back(absl::StrCat("fuse ", k.name, " into ", out.back().name,
                                   ": ", *why));
        continue;
      }
    }
    out.push_back(std::move(k));
  }
  p.kernels = std::move(out);
}

}  // namespace

absl::StatusOr<ScheduleResult> Schedule(LoweredGraph& g) {
  ScheduleResult r;
  Program& p = g.program;
  std::vector<Kernel> out;
  for (Kernel& k : p.kernels) {
    Kernel squeezed = k;
    if (SqueezeUnitRanges(squeezed)) k = std::move(squeezed);
    SimplifyIndices(k);
    if (!out.empty()) {
      Kernel merged = out.back();
      std::optional<std::string> why = TryFuse(merged, k);
      if (!why.has_value()) {
        // The same elements in other loops: fused in the loops both can
        // take.
        if (auto common = InCommonLoops(out.back(), k)) {
          merged = std::move(common->first);
          why = TryFuse(merged, common->second);
          if (why.has_value()) {
            absl::StrAppend(&*why, ", its loops merged to [",
                            PrintExprs(merged.ranges), "]");
          }
        }
      }
      if (!why.has_value() && HasReduction(out.back())) {
        // A pointwise kernel over the reduction's elements in other loops
        // (the cast of a softmax's weights over their [B*H, L, S] view):
        // its loops split to the reduction's outer and inner ranges.
        for (const Section& sec : out.back().sections) {
          if (sec.vars.empty()) continue;
          std::vector<Expr> ranges = out.back().ranges;
          ranges.insert(ranges.end(), sec.ranges.begin(), sec.ranges.end());
          std::optional<Kernel> split = SplitToRanges(k, ranges);
          if (!split.has_value()) continue;
          merged = out.back();
          why = TryFuse(merged, *split);
          if (why.has_value()) {
            absl::StrAppend(&*why, ", its loops split to [", PrintExprs(ranges),
                            "]");
            break;
          }
        }
      }
      if (why.has_value()) {
        r.log.push_back(absl::StrCat("fuse ", k.name, " into ", out.back().name,
                                     ": ", *why));
        out.back() = std::move(merged);
        continue;
      }
      r.log.push_back(absl::StrCat("keep ", k.name, " apart from ",
                                   out.back().name,
                                   ": different ranges or an access at another "
                                   "element"));
    }
    out.push_back(std::move(k));
  }
  p.kernels = std::move(out);
  for (Kernel& k : p.kernels) {
    // Fusion put one kernel's indices in the other's variables.
    SimplifyIndices(k);
    if (std::optional<std::string> why = SplitLoopAtDivisions(k)) {
      r.log.push_back(*why);
    }
    if (std::optional<std::string> why = ReorderForContiguity(k, p)) {
      r.log.push_back(*why);
    }
  }
  PlanMemory(g, r.log);
  if (g.routines.sconv_epilogue) FuseConvolutionEpilogues(p, r.log);
  PlanStorage(g, r.log);
  return r;
}

}  // namespace lathe::codegen
