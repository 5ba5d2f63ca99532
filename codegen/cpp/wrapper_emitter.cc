#include "codegen/cpp/wrapper_emitter.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "codegen/scalar_ops.h"
#include "runtime/dtype.h"
#include "runtime/kernel_abi.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;
using symbolic::ExprKind;

constexpr char kBad[] = "return LATHE_CALL_BAD_INPUTS;";

// Whether `e` evaluates without a division or a float: what lathe_call may
// check itself (it cannot fault, and needs only int symbols).
bool CheckableInC(Expr e) {
  switch (e.kind()) {
    case ExprKind::kInteger:
      return true;
    case ExprKind::kSymbol:
      return e.is_int();
    case ExprKind::kAdd:
    case ExprKind::kMul:
    case ExprKind::kPowByNatural:
    case ExprKind::kMin:
    case ExprKind::kMax:
      for (Expr a : e.args()) {
        if (!CheckableInC(a)) return false;
      }
      return true;
    default:
      return false;
  }
}

// The input checks of lathe_call: ir::CheckInputs's rules, each failure a
// plain `return LATHE_CALL_BAD_INPUTS` (the host then finds the message).
class InputCheckEmitter {
 public:
  explicit InputCheckEmitter(std::string* out) : out_(out) {}

  void Slot(int k, const ir::ValueMeta& m) {
    std::string v = absl::StrCat("in[", k, "]");
    if (m.kind == ir::ValueMeta::Kind::kSym) {
      if (m.sym.is_float()) {
        absl::StrAppend(out_, "  if (", v, ".kind != LATHE_VALUE_FLOAT) ", kBad,
                        "\n");
        Bind(m.sym, absl::StrCat(v, ".f"), /*is_int=*/false, "");
      } else {
        absl::StrAppend(out_, "  if (", v, ".kind != LATHE_VALUE_INT && ", v,
                        ".kind != LATHE_VALUE_BOOL) ", kBad, "\n");
        Bind(m.sym, absl::StrCat(v, ".i"), /*is_int=*/true, "");
      }
      return;
    }
    if (m.kind != ir::ValueMeta::Kind::kTensor) return;
    const ir::TensorMeta& t = m.tensor;
    // A tensor of fixed sizes and strides is a row of one table
    // (lathe_tensors_match): one statement per size and stride made the
    // host function of a model with a hundred weights the costliest part
    // of its C++ compile.
    bool fixed = true;
    for (int64_t d = 0; d < t.dim(); ++d) {
      fixed = fixed && t.sizes[d].kind() == ExprKind::kInteger &&
              t.strides[d].kind() == ExprKind::kInteger;
    }
    if (fixed) {
      FixedTable& table = fixed_[t.dim()];
      table.rows.insert(table.rows.end(), {k, static_cast<int64_t>(t.dtype)});
      for (Expr e : t.sizes) table.rows.push_back(e.int_value());
      for (Expr e : t.strides) table.rows.push_back(e.int_value());
      ++table.count;
      return;
    }
    absl::StrAppend(out_, "  if (", v, ".kind != LATHE_VALUE_TENSOR || ", v,
                    ".dtype != ", static_cast<int>(t.dtype), " || ", v,
                    ".ndim != ", t.dim(), ") ", kBad, "\n");
    for (int64_t d = 0; d < t.dim(); ++d) {
      Bind(t.sizes[d], absl::StrCat(v, ".sizes[", d, "]"), true, "");
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      Bind(t.strides[d], absl::StrCat(v, ".strides[", d, "]"), true,
           absl::StrCat(v, ".sizes[", d, "] >= 2"));
    }
  }

  // The index j of the checked variable c<j> (with its flag h<j>) that
  // holds symbol `s` once bound, if an annotation binds it.
  std::optional<int> VarOf(Expr s) const {
    auto it = vars_.find(s);
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }

  // The checks of expressions, once every symbol is bound; false when one
  // cannot be checked here.
  bool Finish() {
    // One table per rank, so each call's rows unroll.
    for (const auto& [rank, table] : fixed_) {
      absl::StrAppend(out_, "  static const int64_t fixed_rank", rank, "[] = {",
                      absl::StrJoin(table.rows, ", "),
                      "};\n  if (!lathe_tensors_match(in, fixed_rank", rank,
                      ", ", table.count, ", ", rank, ")) ", kBad, "\n");
    }
    bool all = true;
    for (const Deferred& d : deferred_) {
      if (!CheckableInC(d.want)) {
        all = false;
        continue;
      }
      std::string cond = d.when.empty() ? "" : absl::StrCat(d.when, " && ");
      bool bound = true;
      for (Expr s : symbolic::FreeSymbols(d.want)) {
        auto it = vars_.find(s);
        if (it == vars_.end()) {
          bound = false;  // never bound: ir::CheckInputs skips it too
          break;
        }
        absl::StrAppend(&cond, "h", it->second, " && ");
      }
      if (!bound) continue;
      std::string want =
          symbolic::ToCpp(d.want, {.symbol_name = [this](Expr s) {
                            return absl::StrCat("c", vars_.at(s));
                          }});
      absl::StrAppend(out_, "  if (", cond, d.got, " != (int64_t)(", want,
                      ")) ", kBad, "\n");
    }
    return all;
  }

 private:
  // ir::CheckInputs's Bind: a symbol takes its first value and every later
  // one must equal it; a number must be equal; an expression is checked at
  // the end. `when` guards the whole check (a stride's dimension size).
  void Bind(Expr want, const std::string& got, bool is_int,
            const std::string& when) {
    std::string pre = when.empty() ? "  " : absl::StrCat("  if (", when, ") ");
    if (want.is_symbol()) {
      auto [it, inserted] = vars_.emplace(want, static_cast<int>(vars_.size()));
      int j = it->second;
      if (inserted) {
        absl::StrAppend(out_, "  ", is_int ? "int64_t" : "double", " c", j,
                        " = 0; bool h", j, " = false;\n");
      }
      std::string differs = is_int
                                ? absl::StrCat("c", j, " != ", got)
                                : absl::StrCat("__builtin_memcmp(&c", j, ", &",
                                               got, ", sizeof(double)) != 0");
      absl::StrAppend(out_, pre, "{ if (!h", j, ") { c", j, " = ", got, "; h",
                      j, " = true; } else if (", differs, ") ", kBad, " }\n");
      return;
    }
    if (want.is_number()) {
      std::string value = want.is_int() ? absl::StrCat(want.int_value(), "LL")
                                        : symbolic::ToCpp(want);
      absl::StrAppend(out_, pre, "if (", got, " != ", value, ") ", kBad, "\n");
      return;
    }
    if (is_int) deferred_.push_back({want, got, when});
  }

  struct Deferred {
    Expr want;
    std::string got, when;
  };
  std::string* out_;
  // lathe_tensors_match's tables, by rank.
  struct FixedTable {
    std::vector<int64_t> rows;
    int count = 0;
  };
  std::map<int64_t, FixedTable> fixed_;
  absl::flat_hash_map<Expr, int> vars_;  // annotation symbol -> c<j>
  std::vector<Deferred> deferred_;
};

// `e` as C++ over the variables `names` gives its symbols; a symbol without
// one sets `*unbound` ("<what> s0, which nothing binds").
std::string CppOver(Expr e, const absl::flat_hash_map<Expr, std::string>& names,
                    absl::string_view what, absl::Status* unbound) {
  return symbolic::ToCpp(e, {.symbol_name = [&](Expr s) {
                           auto it = names.find(s);
                           if (it != names.end()) return it->second;
                           *unbound = absl::InternalError(absl::StrCat(
                               what, " ", s.name(), ", which nothing binds"));
                           return std::string("0");
                         }});
}

// `e` as C++ that sets *ov (the variable `ov`) when an int64 sum or product
// overflows on the way (sums, products, small powers, min and max over
// symbols and numbers); nullopt for another kind of expression.
std::optional<std::string> CheckedCpp(
    Expr e, const std::function<std::string(Expr)>& plain) {
  auto fold = [&](const char* fn) -> std::optional<std::string> {
    std::optional<std::string> acc;
    for (Expr a : e.args()) {
      std::optional<std::string> v = CheckedCpp(a, plain);
      if (!v.has_value()) return std::nullopt;
      acc = acc.has_value() ? absl::StrCat(fn, "(", *acc, ", ", *v, ", &ov)")
                            : *v;
    }
    return acc;
  };
  switch (e.kind()) {
    case ExprKind::kInteger:
      return absl::StrCat("(int64_t)", e.int_value(), "LL");
    case ExprKind::kSymbol:
      return e.is_int() ? std::optional<std::string>(plain(e)) : std::nullopt;
    case ExprKind::kAdd:
      return fold("lathe_cadd");
    case ExprKind::kMul:
      return fold("lathe_cmul");
    case ExprKind::kPowByNatural: {
      std::optional<std::string> base = CheckedCpp(e.args()[0], plain);
      Expr exp = e.args()[1];
      if (!base.has_value() || exp.kind() != ExprKind::kInteger ||
          exp.int_value() < 1 || exp.int_value() > 8) {
        return std::nullopt;
      }
      std::string v = *base;
      for (int64_t k = 1; k < exp.int_value(); ++k) {
        v = absl::StrCat("lathe_cmul(", v, ", ", *base, ", &ov)");
      }
      return v;
    }
    case ExprKind::kMin:
    case ExprKind::kMax: {
      std::vector<std::string> parts;
      for (Expr a : e.args()) {
        std::optional<std::string> v = CheckedCpp(a, plain);
        if (!v.has_value()) return std::nullopt;
        parts.push_back(*v);
      }
      return absl::StrCat("std::", e.kind() == ExprKind::kMin ? "min" : "max",
                          "<int64_t>({", absl::StrJoin(parts, ", "), "})");
    }
    default:
      return std::nullopt;
  }
}

// The rank of `slot`'s value when it is a tensor, else -1.
int SlotRank(const ir::InputSlot& slot) {
  return slot.meta.kind == ir::ValueMeta::Kind::kTensor
             ? static_cast<int>(slot.meta.tensor.dim())
             : -1;
}

// The runtime wrapper plan as C++ after the graph's outputs fw[] are made:
// its symbols read from the inputs as they came in (in[] is never written)
// and from fw[]; the epilogue (copies into the inputs through rt->copy;
// set_ and as_strided_ as new values of the inputs they rebind); the user
// outputs as values of fw[], of the inputs or views of them. `results`
// receives what lathe_call returns, in order (the user outputs, then one
// value per rebinding step), `ranks` their ranks and `rebound` the input
// each rebinding step rebinds. An error for what the C form cannot say (a
// layout over a symbol it cannot read, a view of a number).
absl::StatusOr<std::string> EmitPlan(const aot::RuntimeWrapperPlan& plan,
                                     const LoweredGraph& g,
                                     const std::vector<ir::InputSlot>& slots,
                                     std::vector<std::string>* results,
                                     std::vector<int>* ranks,
                                     std::vector<int>* rebound) {
  const int nfw = static_cast<int>(g.outputs.size());
  if (plan.num_inputs() > static_cast<int>(slots.size()) ||
      plan.num_graph_outputs() != nfw) {
    return absl::InternalError("the plan is not the lowered graph's");
  }
  auto fw_rank = [&](int k) -> int {
    return g.outputs[k].kind == LoweredOutput::Kind::kTensor
               ? static_cast<int>(g.outputs[k].sizes.size())
               : -1;
  };
  std::string out =
      "  // The runtime wrapper plan (aot/runtime_wrapper_plan.h).\n";
  absl::flat_hash_map<Expr, std::string> names;
  for (const aot::SymbolSource& s : plan.symbols()) {
    int rank = s.from_output ? (s.index < nfw ? fw_rank(s.index) : -1)
                             : (s.index < static_cast<int>(slots.size())
                                    ? SlotRank(slots[s.index])
                                    : -1);
    if (s.dim >= rank) {
      return absl::InternalError(absl::StrCat("the plan reads ",
                                              s.symbol.name(), " where no ",
                                              "tensor has that dimension"));
    }
    std::string name = absl::StrCat("w", names.size());
    absl::StrAppend(&out, "  const int64_t ", name, " = ",
                    s.from_output ? "fw[" : "in[", s.index, "].",
                    s.stride ? "strides[" : "sizes[", s.dim, "];\n");
    names[s.symbol] = name;
  }
  absl::Status unbound = absl::OkStatus();
  auto cpp = [&](Expr e) {
    return CppOver(e, names, "the plan's layouts read", &unbound);
  };
  // A view of `base` (of rank >= 0) with `layout`: a local value's name.
  int views = 0;
  auto view = [&](const std::string& base, int base_rank,
                  const aot::Layout& l) -> absl::StatusOr<std::string> {
    if (base_rank < 0) {
      return absl::InternalError("the plan views a value that is no tensor");
    }
    std::string v = absl::StrCat("pv", views++);
    size_t rank = l.concrete ? l.int_sizes.size() : l.sizes.size();
    absl::StrAppend(
        &out, "  int64_t ", v, "_d[", rank > 0 ? 2 * rank : 1, "]; LatheValue ",
        v, " = ", base, "; ", v, ".ndim = ", rank, "; ", v, ".sizes = ", v,
        "_d; ", v, ".strides = ", v, "_d + ", rank, "; ", v,
        ".storage_offset = ",
        aot::StorageOffsetCpp(l, absl::StrCat(base, ".storage_offset"),
                              cpp(l.storage_offset)),
        ";",
        l.dtype.has_value()
            ? absl::StrCat(" ", v, ".dtype = ", static_cast<int>(*l.dtype), ";")
            : "",
        "\n");
    for (size_t d = 0; d < rank; ++d) {
      absl::StrAppend(
          &out, "  ", v, ".sizes[", d,
          "] = ", l.concrete ? absl::StrCat(l.int_sizes[d]) : cpp(l.sizes[d]),
          "; ", v, ".strides[", d, "] = ",
          l.concrete ? absl::StrCat(l.int_strides[d]) : cpp(l.strides[d]),
          ";\n");
    }
    return v;
  };
  // Each input's value now, and its rank.
  std::vector<std::string> cur;
  std::vector<int> cur_rank;
  for (int i = 0; i < plan.num_inputs(); ++i) {
    cur.push_back(absl::StrCat("in[", i, "]"));
    cur_rank.push_back(SlotRank(slots[i]));
  }
  std::vector<std::string> rebinds;
  std::vector<int> rebind_ranks;
  for (const aot::EpilogueStep& s : plan.epilogue()) {
    if (s.input < 0 || s.input >= plan.num_inputs()) {
      return absl::InternalError("an epilogue step names no input");
    }
    switch (s.kind) {
      case aot::EpilogueStep::Kind::kCopy:
      case aot::EpilogueStep::Kind::kCopyDetached:
        if (cur_rank[s.input] < 0 || fw_rank(s.updated) < 0) {
          return absl::InternalError(
              "the epilogue copies a value that is no tensor");
        }
        absl::StrAppend(&out, "  if (rt->copy(&", cur[s.input], ", &fw[",
                        s.updated, "]) != 0) return LATHE_CALL_COPY_FAILED;\n");
        break;
      case aot::EpilogueStep::Kind::kAsStrided: {
        ASSIGN_OR_RETURN(std::string v,
                         view(cur[s.input], cur_rank[s.input], s.layout));
        cur[s.input] = v;
        cur_rank[s.input] =
            static_cast<int>(s.layout.concrete ? s.layout.int_sizes.size()
                                               : s.layout.sizes.size());
        rebinds.push_back(v);
        rebind_ranks.push_back(cur_rank[s.input]);
        rebound->push_back(s.input);
        break;
      }
      case aot::EpilogueStep::Kind::kSet:
        if (fw_rank(s.updated) < 0) {
          return absl::InternalError("set_ to a value that is no tensor");
        }
        cur[s.input] = absl::StrCat("fw[", s.updated, "]");
        cur_rank[s.input] = fw_rank(s.updated);
        rebinds.push_back(cur[s.input]);
        rebind_ranks.push_back(cur_rank[s.input]);
        rebound->push_back(s.input);
        break;
    }
  }
  for (const aot::OutputStep& s : plan.outputs()) {
    switch (s.kind) {
      case aot::OutputStep::Kind::kGraphOutput:
        results->push_back(absl::StrCat("fw[", s.source, "]"));
        ranks->push_back(std::max(fw_rank(s.source), 0));
        break;
      case aot::OutputStep::Kind::kInput:
        if (cur_rank[s.source] < 0) {
          return absl::InternalError("an output is an input that is no tensor");
        }
        results->push_back(cur[s.source]);
        ranks->push_back(cur_rank[s.source]);
        break;
      case aot::OutputStep::Kind::kViewOfInput: {
        ASSIGN_OR_RETURN(std::string v,
                         view(cur[s.source], cur_rank[s.source], s.layout));
        results->push_back(v);
        ranks->push_back(static_cast<int>(s.layout.concrete
                                              ? s.layout.int_sizes.size()
                                              : s.layout.sizes.size()));
        break;
      }
      case aot::OutputStep::Kind::kViewOfGraphOutput: {
        ASSIGN_OR_RETURN(std::string v, view(absl::StrCat("fw[", s.source, "]"),
                                             fw_rank(s.source), s.layout));
        results->push_back(v);
        ranks->push_back(static_cast<int>(s.layout.concrete
                                              ? s.layout.int_sizes.size()
                                              : s.layout.sizes.size()));
        break;
      }
    }
  }
  for (size_t j = 0; j < rebinds.size(); ++j) {
    results->push_back(rebinds[j]);
    ranks->push_back(rebind_ranks[j]);
  }
  RETURN_IF_ERROR(unbound);
  return out;
}

// lathe_call_user: the composite wrapper's C form around lathe_call, whose
// results `w` describes and which takes `num_dense` inputs.
absl::StatusOr<std::string> EmitUserEntry(const aot::SubclassWrapperPlan& sub,
                                          const WrapperSource& w,
                                          int num_dense) {
  if (!w.plan_applied) {
    return absl::FailedPreconditionError(
        "the runtime wrapper plan is not compiled in");
  }
  const int n_out = static_cast<int>(w.output_ranks.size());
  const int rebound = static_cast<int>(w.rebound_inputs.size());
  const int users = n_out - rebound;
  if (users != sub.num_dense_results()) {
    return absl::InternalError(
        absl::StrCat("the composite wrapper rebuilds ", sub.num_dense_results(),
                     " dense results, the graph returns ", users));
  }
  const int n_user = static_cast<int>(sub.result_layouts().size());
  int dims = 0;
  for (int r : w.output_ranks) dims += 2 * r;
  std::string out = absl::StrCat("\n", sub.CSource("lathe_subclass"));
  absl::StrAppend(
      &out,
      "\nextern \"C\" __attribute__((visibility(\"default\"))) int "
      "lathe_call_user(\n",
      "    const LatheValue* args, int64_t num_args, LatheValue* results,\n",
      "    int64_t num_results, const LatheKernelRuntime* rt) {\n",
      "  if (num_results != ", n_user + rebound,
      " || !lathe_subclass_shaped(results, num_results)) return "
      "LATHE_CALL_BAD_INPUTS;\n",
      "  LatheValue d[", std::max(num_dense, 1), "];\n",
      "  int rc = lathe_subclass_unwrap(args, num_args, d, ", num_dense,
      ");\n  if (rc != 0) return rc;\n", "  LatheValue o[", std::max(n_out, 1),
      "] = {};\n  int64_t OD[", std::max(dims, 1), "];\n  (void)OD;\n");
  for (int k = 0, at = 0; k < n_out; ++k) {
    absl::StrAppend(&out, "  o[", k, "].sizes = OD + ", at, "; o[", k,
                    "].strides = OD + ", at + w.output_ranks[k], ";\n");
    at += 2 * w.output_ranks[k];
  }
  absl::StrAppend(&out, "  rc = lathe_call(d, ", num_dense, ", o, ", n_out,
                  ", rt);\n  if (rc != 0) return rc;\n",
                  "  lathe_subclass_rewrap(o, results);\n");
  for (int j = 0; j < rebound; ++j) {
    absl::StrAppend(&out, "  lathe_subclass_move(&results[", n_user + j,
                    "], &o[", users + j, "]);\n");
  }
  absl::StrAppend(&out, "  return 0;\n}\n");
  return out;
}

}  // namespace

absl::StatusOr<std::string> EmitGuards(
    const symbolic::GuardSet& guards,
    const std::vector<symbolic::InputSpec>& specs,
    std::vector<int64_t>* bounds) {
  absl::Status bad = absl::OkStatus();
  auto spell = [&](const symbolic::Source& s) {
    std::string v = absl::StrCat("in[", s.input, "]");
    switch (s.kind) {
      case symbolic::Source::Kind::kSize:
        return absl::StrCat(v, ".sizes[", s.dim, "]");
      case symbolic::Source::Kind::kStride:
        return absl::StrCat(v, ".strides[", s.dim, "]");
      case symbolic::Source::Kind::kStorageOffset:
        return absl::StrCat(v, ".storage_offset");
      case symbolic::Source::Kind::kScalar:
        break;
    }
    if (s.input < 0 || s.input >= static_cast<int>(specs.size())) {
      bad = absl::InternalError("a guard reads an input it was not given");
      return std::string("0");
    }
    return absl::StrCat(
        v,
        specs[s.input].kind == symbolic::InputSpec::Kind::kFloat ? ".f" : ".i");
  };
  // The guards read sizes and strides only of tensors of the rank they
  // were made for, and scalars of their kind (lathe_guard_shapes' table).
  std::vector<int64_t> shapes;
  for (const symbolic::InputSpec& spec : specs) {
    switch (spec.kind) {
      case symbolic::InputSpec::Kind::kTensor:
        shapes.insert(shapes.end(), {LATHE_VALUE_TENSOR,
                                     static_cast<int64_t>(spec.sizes.size())});
        break;
      case symbolic::InputSpec::Kind::kInt:
        shapes.insert(shapes.end(), {LATHE_VALUE_INT, 0});
        break;
      case symbolic::InputSpec::Kind::kFloat:
        shapes.insert(shapes.end(), {LATHE_VALUE_FLOAT, 0});
        break;
      case symbolic::InputSpec::Kind::kBool:
        shapes.insert(shapes.end(), {LATHE_VALUE_BOOL, 0});
        break;
      case symbolic::InputSpec::Kind::kNone:  // unread: anything
        shapes.insert(shapes.end(), {-1, 0});
        break;
    }
  }
  bounds->clear();
  std::string out = absl::StrCat(
      "extern \"C\" __attribute__((visibility(\"default\"))) int "
      "lathe_guards(\n    const LatheValue* in, int64_t num_inputs, const "
      "int64_t* bounds) {\n"
      "  (void)bounds;\n  if (num_inputs != ",
      specs.size(), ") return LATHE_GUARDS_OTHER_INPUTS;\n");
  if (!specs.empty()) {
    absl::StrAppend(&out, "  static const int64_t shapes[] = {",
                    absl::StrJoin(shapes, ", "),
                    "};\n  if (!lathe_guard_shapes(in, shapes, ", specs.size(),
                    ")) return LATHE_GUARDS_OTHER_INPUTS;\n");
  }
  // Each guard in turn, so a failure names the first that fails; a run of
  // guards that compare a tensor's size, stride or offset with a constant
  // is a table (lathe_guard_rows), which the C++ compiler reads much faster
  // than one statement per guard.
  int tables = 0;
  for (int g = 0; g < guards.size();) {
    std::vector<int64_t> rows;
    int end = g;
    for (; end < guards.size(); ++end) {
      std::optional<std::pair<symbolic::Source, int64_t>> c =
          guards.ConstantGuard(end);
      if (!c.has_value() || c->first.kind == symbolic::Source::Kind::kScalar) {
        break;
      }
      const symbolic::Source& src = c->first;
      const int what = src.kind == symbolic::Source::Kind::kSize     ? 0
                       : src.kind == symbolic::Source::Kind::kStride ? 1
                                                                     : 2;
      rows.insert(rows.end(), {src.input, what, src.dim, c->second});
    }
    if (end > g) {
      absl::StrAppend(&out, "  {\n    static const int64_t rows", tables,
                      "[] = {", absl::StrJoin(rows, ", "),
                      "};\n    const int f = lathe_guard_rows(in, rows", tables,
                      ", ", end - g, ", ", g,
                      ");\n    if (f >= 0) return f;\n  }\n");
      ++tables;
      g = end;
      continue;
    }
    // A range guard reads its bounds from `bounds`: the value range a
    // graph's `# lathe: range` directive (Dynamo's ShapeEnv) gives is data.
    if (auto range = guards.RangeGuard(g); range.has_value()) {
      const std::string v = spell(std::get<0>(*range));
      const size_t at = bounds->size();
      bounds->insert(bounds->end(), {std::get<1>(*range), std::get<2>(*range)});
      absl::StrAppend(&out, "  if (!(bounds[", at, "] <= ", v, " && ", v,
                      " <= bounds[", at + 1, "])) return ", g, ";\n");
      ++g;
      continue;
    }
    absl::StrAppend(&out, "  if (!(", guards.GuardCpp(g, spell), ")) return ",
                    g, ";\n");
    ++g;
  }
  if (!bad.ok()) return bad;
  absl::StrAppend(&out, "  return LATHE_GUARDS_HOLD;\n}\n",
                  "extern \"C\" __attribute__((visibility(\"default\"))) const "
                  "int64_t lathe_guard_bound_count = ",
                  bounds->size(), ";\n");
  return out;
}

absl::StatusOr<WrapperSource> EmitWrapper(
    const LoweredGraph& g, const std::vector<ir::InputSlot>& slots,
    const WrapperOptions& options) {
  const Program& p = g.program;
  const HostCode& host =
      options.host != nullptr ? *options.host : HostMemoryCode();
  WrapperSource w;
  std::string& out = w.text;
  // The results: the runtime wrapper plan's, or the graph's outputs.
  std::vector<std::string> results;
  std::string plan_text;
  if (options.plan != nullptr) {
    absl::StatusOr<std::string> plan = EmitPlan(
        *options.plan, g, slots, &results, &w.output_ranks, &w.rebound_inputs);
    if (plan.ok()) {
      plan_text = *std::move(plan);
      w.plan_applied = true;
    } else {
      results.clear();
      w.output_ranks.clear();
      w.rebound_inputs.clear();
      w.plan_error = std::string(plan.status().message());
    }
  }
  if (!w.plan_applied) {
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      results.push_back(absl::StrCat("fw[", k, "]"));
      w.output_ranks.push_back(static_cast<int>(g.outputs[k].sizes.size()));
    }
  }
  // Runtime symbols: S[] and F[], as the kernels read them.
  absl::flat_hash_map<Expr, std::string> names;
  int ints = 0, floats = 0;
  for (Expr s : p.symbols) {
    names[s] = s.is_float() ? absl::StrCat("F[", floats++, "]")
                            : absl::StrCat("S[", ints++, "]");
  }
  absl::Status unbound = absl::OkStatus();
  auto cpp = [&](Expr e) {
    return CppOver(e, names, "the host function reads", &unbound);
  };
  const int nb = static_cast<int>(p.buffers.size());
  const int nk = static_cast<int>(p.kernels.size());
  absl::StrAppend(
      &out, host.Prelude(p),
      "\n// The host function (codegen/cpp/wrapper_emitter.cc).\n"
      "namespace {\n"
      "// int64 sums and products that note an overflow in *ov.\n"
      "inline int64_t lathe_cadd(int64_t a, int64_t b, bool* ov) {\n"
      "  int64_t r; if (__builtin_add_overflow(a, b, &r)) *ov = true; "
      "return r;\n}\n"
      "inline int64_t lathe_cmul(int64_t a, int64_t b, bool* ov) {\n"
      "  int64_t r; if (__builtin_mul_overflow(a, b, &r)) *ov = true; "
      "return r;\n}\n"
      "// The storages this call holds, given back however it returns.\n"
      "struct LatheHeld {\n"
      "  const LatheKernelRuntime* rt;\n"
      "  void* h[",
      nb > 0 ? nb : 1,
      "];\n"
      "  ~LatheHeld() { for (void* s : h) if (s != nullptr) rt->release(s); }\n"
      "};\n"
      "// *o = *v with its own sizes and strides (the caller's arrays) and "
      "its\n"
      "// own reference to the storage.\n"
      "void lathe_put(LatheValue* o, const LatheValue* v,\n"
      "               const LatheKernelRuntime* rt) {\n"
      "  int64_t* sizes = o->sizes; int64_t* strides = o->strides;\n"
      "  *o = *v; o->sizes = sizes; o->strides = strides;\n"
      "  for (int64_t d = 0; d < v->ndim; ++d) {\n"
      "    sizes[d] = v->sizes[d]; strides[d] = v->strides[d];\n"
      "  }\n"
      "  o->storage = v->kind == LATHE_VALUE_TENSOR ? rt->retain(v->storage)"
      " : nullptr;\n"
      "}\n"
      "}  // namespace\n\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) int lathe_call(\n"
      "    const LatheValue* in, int64_t num_inputs, LatheValue* out,\n"
      "    int64_t num_outputs, const LatheKernelRuntime* rt) {\n",
      "  if (num_inputs != ", slots.size(),
      " || num_outputs != ", results.size(), ") ", kBad, "\n");
  // Inputs.
  InputCheckEmitter checks(&out);
  for (size_t k = 0; k < slots.size(); ++k) {
    checks.Slot(static_cast<int>(k), slots[k].meta);
  }
  w.host_checks = !checks.Finish();
  // Symbols.
  absl::StrAppend(&out, "  int64_t S[", ints > 0 ? ints : 1, "]; double F[",
                  floats > 0 ? floats : 1, "];\n  (void)S; (void)F;\n");
  // A symbol the input checks bound takes that (checked) value; otherwise
  // its first size or scalar source, then a stride (a stride of a dimension
  // with fewer than 2 elements is never checked, so it comes last).
  // Data-dependent symbols are bound by the program's bind steps.
  absl::flat_hash_map<Expr, bool> bound_later;
  for (const Kernel& k : p.kernels) {
    if (k.kind == Kernel::Kind::kBind) bound_later[k.symbol] = true;
  }
  for (Expr s : p.symbols) {
    if (bound_later.contains(s)) {
      absl::StrAppend(&out, "  ", names[s], " = 0;  // bound below\n");
      continue;
    }
    const SymbolSource* src = nullptr;
    for (const SymbolSource& c : g.sources) {
      if (c.symbol != s) continue;
      if (src == nullptr || (src->kind == SymbolSource::Kind::kStride &&
                             c.kind != SymbolSource::Kind::kStride)) {
        src = &c;
      }
    }
    if (src == nullptr) {
      return absl::InternalError(
          absl::StrCat("symbol ", s.name(), " has no source"));
    }
    std::string v = absl::StrCat("in[", src->input, "]");
    std::string value;
    switch (src->kind) {
      case SymbolSource::Kind::kSize:
        value = absl::StrCat(v, ".sizes[", src->dim, "]");
        break;
      case SymbolSource::Kind::kStride:
        value = absl::StrCat(v, ".strides[", src->dim, "]");
        break;
      case SymbolSource::Kind::kSeed:
        value = "static_cast<int64_t>(rt->seed)";
        break;
      case SymbolSource::Kind::kScalar:
        value = s.is_float()
                    ? absl::StrCat("(", v, ".kind == LATHE_VALUE_FLOAT ? ", v,
                                   ".f : (double)", v, ".i)")
                    : absl::StrCat(v, ".i");
        break;
    }
    if (std::optional<int> j = checks.VarOf(s); j.has_value()) {
      value = absl::StrCat("h", *j, " ? c", *j, " : ", value);
    }
    absl::StrAppend(&out, "  ", names[s], " = ", value, ";\n");
  }
  // Buffers: inputs at their first element; the others from the plan.
  absl::StrAppend(&out, "  void* B[", nb > 0 ? nb : 1,
                  "] = {};\n  LatheHeld H{rt, {}};\n  int E = 0;\n");
  // (buffer, input, item size) rows, one loop.
  std::vector<int64_t> input_rows;
  for (int b = 0; b < nb; ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind != Buffer::Kind::kInput) continue;
    input_rows.insert(input_rows.end(), {b, buf.input, ItemSize(buf.dtype)});
  }
  if (!input_rows.empty()) {
    absl::StrAppend(&out, "  static const int64_t input_buffers[] = {",
                    absl::StrJoin(input_rows, ", "),
                    "};\n  for (int r = 0; r < ", input_rows.size() / 3,
                    "; ++r) {\n    const int64_t* t = input_buffers + 3 * r;\n"
                    "    B[t[0]] = static_cast<char*>(in[t[1]].data) + "
                    "in[t[1]].storage_offset * t[2];\n  }\n");
  }
  auto allocate = [&](int b) {
    const Buffer& buf = p.buffers[b];
    if (buf.reuses >= 0) {
      absl::StrAppend(&out, "  H.h[", b, "] = H.h[", buf.reuses, "]; H.h[",
                      buf.reuses, "] = nullptr; B[", b, "] = B[", buf.reuses,
                      "];  // ", buf.name, " takes over ",
                      p.buffers[buf.reuses].name, "\n");
      return;
    }
    // An element or byte count overflowing int64 is more memory than there
    // is (sizes from data can make one).
    int64_t item = ItemSize(buf.dtype);
    std::optional<std::string> checked = CheckedCpp(buf.numel, cpp);
    absl::StrAppend(
        &out, "  { bool ov = false; int64_t n = (int64_t)(",
        checked.has_value() ? *checked : cpp(buf.numel),
        "); if (ov || __builtin_mul_overflow(n, (int64_t)", item,
        ", &n)) return LATHE_CALL_NO_MEMORY; H.h[", b, "] = rt->alloc(n > ",
        item, " ? n : ", item, ", &B[", b, "]); if (H.h[", b,
        "] == nullptr) return LATHE_CALL_NO_MEMORY; }  // ", buf.name, "\n");
  };
  auto allocated = [&](int b) {
    const Buffer& buf = p.buffers[b];
    return buf.kind == Buffer::Kind::kAllocated && !buf.local;
  };
  for (int b = 0; b < nb; ++b) {
    if (allocated(b) && p.buffers[b].allocate_before < 0) allocate(b);
  }
  for (int k = 0; k < nk; ++k) {
    for (int b = 0; b < nb; ++b) {
      if (allocated(b) && p.buffers[b].allocate_before == k) allocate(b);
    }
    const Kernel& kernel = p.kernels[k];
    if (kernel.kind == Kernel::Kind::kBind) {
      // x.item(): the element, converted as the symbol's kind says.
      std::string value = cpp(kernel.value);
      if (!kernel.extern_buffers.empty()) {
        int b = kernel.extern_buffers[0];
        value = host.LoadElement(b, p.buffers[b].dtype, value);
      }
      absl::StrAppend(&out, "  ", names[kernel.symbol], " = (",
                      kernel.symbol.is_float() ? "double" : "int64_t", ")(",
                      value, ");  // ", kernel.name, "\n");
      // A device's element copy that failed (HostCode::LoadElement sets E).
      if (!kernel.extern_buffers.empty() && &host != &HostMemoryCode()) {
        absl::StrAppend(&out, "  if (E != 0) return E;\n");
      }
      if (kernel.check >= 0) {
        absl::StrAppend(&out, "  if (", names[kernel.symbol],
                        " < -2147483648LL || ", names[kernel.symbol],
                        " > 2147483647LL) return ", kernel.check + 1, ";\n");
      }
      continue;
    }
    if (kernel.kind == Kernel::Kind::kAssert) {
      if (kernel.check_values.empty()) {
        absl::StrAppend(&out, "  if (!(", cpp(kernel.value), ")) return ",
                        kernel.check + 1, ";  // ", kernel.name, "\n");
        continue;
      }
      // A failing check reports the values its message's holes name.
      std::vector<std::string> values;
      for (Expr e : kernel.check_values) {
        values.push_back(e.is_float()
                             ? absl::StrCat("lathe_check_i64(", cpp(e), ")")
                             : absl::StrCat("(int64_t)(", cpp(e), ")"));
      }
      absl::StrAppend(&out, "  if (!(", cpp(kernel.value), ")) {  // ",
                      kernel.name, "\n    const int64_t CV[] = {",
                      absl::StrJoin(values, ", "),
                      "};\n    lathe_report(rt, CV, ", values.size(),
                      ");\n    return ", kernel.check + 1, ";\n  }\n");
      continue;
    }
    out += host.RunKernel(p, k, cpp);
    for (int b = 0; b < nb; ++b) {
      if (allocated(b) && p.buffers[b].free_after == k) {
        absl::StrAppend(&out, "  rt->release(H.h[", b, "]); H.h[", b,
                        "] = nullptr;  // ", p.buffers[b].name, "\n");
      }
    }
  }
  // The graph's outputs (fw), borrowing their storages.
  const int nfw = static_cast<int>(g.outputs.size());
  int fw_dims = 0;
  for (const LoweredOutput& o : g.outputs) {
    fw_dims += 2 * static_cast<int>(o.sizes.size());
  }
  absl::StrAppend(&out, "  LatheValue fw[", nfw > 0 ? nfw : 1,
                  "] = {};\n  int64_t FD[", fw_dims > 0 ? fw_dims : 1,
                  "];\n  (void)FD;\n");
  for (int k = 0, at = 0; k < nfw; ++k) {
    const LoweredOutput& o = g.outputs[k];
    std::string v = absl::StrCat("fw[", k, "]");
    if (o.kind == LoweredOutput::Kind::kNone) continue;  // kind NONE
    if (o.kind == LoweredOutput::Kind::kNumber) {
      if (o.number.is_float()) {
        absl::StrAppend(&out, "  ", v, ".kind = LATHE_VALUE_FLOAT; ", v,
                        ".f = (double)(", cpp(o.number), ");\n");
      } else {
        absl::StrAppend(
            &out, "  ", v, ".kind = ",
            o.number.is_bool() ? "LATHE_VALUE_BOOL" : "LATHE_VALUE_INT", "; ",
            v, ".i = (int64_t)(", cpp(o.number), ");\n");
      }
      continue;
    }
    const Buffer& buf = p.buffers[o.buffer];
    const int rank = static_cast<int>(o.sizes.size());
    absl::StrAppend(&out, "  ", v, ".kind = LATHE_VALUE_TENSOR; ", v,
                    ".dtype = ", static_cast<int>(o.dtype), "; ", v,
                    ".ndim = ", rank, "; ", v, ".sizes = FD + ", at, "; ", v,
                    ".strides = FD + ", at + rank, ";\n");
    at += 2 * rank;
    for (int d = 0; d < rank; ++d) {
      absl::StrAppend(&out, "  ", v, ".sizes[", d, "] = ", cpp(o.sizes[d]),
                      "; ", v, ".strides[", d, "] = ", cpp(o.strides[d]),
                      ";\n");
    }
    if (buf.kind == Buffer::Kind::kInput) {
      std::string i = absl::StrCat("in[", buf.input, "]");
      absl::StrAppend(&out, "  ", v, ".storage_offset = ", i,
                      ".storage_offset + ", cpp(o.offset), "; ", v,
                      ".data = ", i, ".data; ", v, ".storage = ", i,
                      ".storage;\n");
    } else {
      absl::StrAppend(&out, "  ", v, ".storage_offset = ", cpp(o.offset), "; ",
                      v, ".data = B[", o.buffer, "]; ", v, ".storage = H.h[",
                      o.buffer, "];\n");
    }
  }
  if (!unbound.ok()) return unbound;
  out += plan_text;
  for (size_t k = 0; k < results.size(); ++k) {
    absl::StrAppend(&out, "  lathe_put(&out[", k, "], &", results[k],
                    ", rt);\n");
  }
  absl::StrAppend(&out,
                  "  return 0;\n}\n\n// lathe_call's outputs: their number, "
                  "then each one's rank.\n"
                  "extern \"C\" __attribute__((visibility(\"default\"))) const "
                  "int64_t lathe_result_ranks[] = {",
                  w.output_ranks.size());
  for (int r : w.output_ranks) absl::StrAppend(&out, ", ", r);
  absl::StrAppend(&out, "};\n");
  if (options.subclass != nullptr) {
    absl::StatusOr<std::string> user =
        EmitUserEntry(*options.subclass, w, static_cast<int>(slots.size()));
    if (user.ok()) {
      out += *user;
      w.user_entry = true;
    } else {
      w.user_entry_error = std::string(user.status().message());
    }
  }
  // Guards.
  if (options.guards != nullptr) {
    ASSIGN_OR_RETURN(
        std::string guards,
        EmitGuards(*options.guards, options.guard_inputs, &w.guard_bounds));
    absl::StrAppend(&out, "\n", guards);
    w.has_guards = true;
  }
  return w;
}

}  // namespace lathe::codegen
