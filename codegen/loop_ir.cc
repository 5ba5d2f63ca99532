#include "codegen/loop_ir.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "symbolic/printer.h"

namespace lathe::codegen {

const char* ReduceName(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kProd:
      return "prod";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kMin:
      return "min";
    case ReduceKind::kArgMax:
      return "argmax";
    case ReduceKind::kArgMin:
      return "argmin";
    case ReduceKind::kAny:
      return "any";
    case ReduceKind::kAll:
      return "all";
    case ReduceKind::kWelfordMean:
      return "welford_mean";
    case ReduceKind::kWelfordM2:
      return "welford_m2";
    case ReduceKind::kLogAddExp:
      return "logaddexp";
  }
  return "?";
}

symbolic::Expr IndexVar(int k) {
  return symbolic::Symbol(absl::StrCat("x", k), symbolic::SymbolType::kInt,
                          {.positive = false, .nonnegative = true});
}

symbolic::Expr SectionVar(int section, int k) {
  return symbolic::Symbol(absl::StrCat("r", section, "_", k),
                          symbolic::SymbolType::kInt,
                          {.positive = false, .nonnegative = true});
}

symbolic::Expr IndirectVar(int k) {
  return symbolic::Symbol(absl::StrCat("ind", k), symbolic::SymbolType::kInt);
}

int IndirectArgs(const ScalarOp& op) {
  if (op.kind != ScalarOp::Kind::kStore) return 0;
  return op.masked ? 2 : 1;
}

int IndirectArg(const ScalarOp& op, symbolic::Expr s) {
  for (size_t a = IndirectArgs(op); a < op.args.size(); ++a) {
    if (s == IndirectVar(static_cast<int>(a) - IndirectArgs(op))) {
      return op.args[a];
    }
  }
  return -1;
}

bool IsIndirect(const ScalarOp& op) {
  if (op.kind == ScalarOp::Kind::kStore && op.masked) return true;
  return (op.kind == ScalarOp::Kind::kLoad ||
          op.kind == ScalarOp::Kind::kStore) &&
         static_cast<int>(op.args.size()) > IndirectArgs(op);
}

symbolic::Expr Product(const std::vector<symbolic::Expr>& factors) {
  if (factors.empty()) return symbolic::Int(1);
  return symbolic::Mul(factors);
}

std::vector<int> Users(const Kernel& kernel) {
  std::vector<int> users(kernel.ops.size(), 0);
  for (const ScalarOp& op : kernel.ops) {
    for (int a : op.args) ++users[a];
    if (op.arg_index >= 0) ++users[op.arg_index];
  }
  return users;
}

std::string PrintExprs(const std::vector<symbolic::Expr>& list) {
  return absl::StrJoin(list, ", ", [](std::string* out, symbolic::Expr e) {
    out->append(symbolic::ToString(e));
  });
}

namespace {

// " (ind0=%4, ind1=%7)" for an indirect access.
std::string IndirectText(const ScalarOp& op) {
  if (static_cast<int>(op.args.size()) <= IndirectArgs(op)) return "";
  std::vector<std::string> parts;
  for (size_t a = IndirectArgs(op); a < op.args.size(); ++a) {
    parts.push_back(
        absl::StrCat("ind", a - IndirectArgs(op), "=%", op.args[a]));
  }
  return absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

std::string OpText(const Program& p, const ScalarOp& op) {
  std::string args = absl::StrJoin(op.args, ", ", [](std::string* out, int a) {
    absl::StrAppend(out, "%", a);
  });
  std::string type = std::string(ShortName(op.dtype));
  switch (op.kind) {
    case ScalarOp::Kind::kLoad:
      return absl::StrCat("load ", p.buffers[op.buffer].name, "[",
                          symbolic::ToString(op.index), "]", IndirectText(op),
                          " : ", type);
    case ScalarOp::Kind::kStore:
      return absl::StrCat("store ", p.buffers[op.buffer].name, "[",
                          symbolic::ToString(op.index), "] = %", op.args[0],
                          op.masked ? absl::StrCat(" if %", op.args[1]) : "",
                          IndirectText(op));
    case ScalarOp::Kind::kScan:
      return absl::StrCat("scan ", ReduceName(op.reduce), "(", args,
                          ") : ", type);
    case ScalarOp::Kind::kCheckIndex:
      return absl::StrCat(
          "check_index(", args, ") in [0, ", symbolic::ToString(op.index), ")",
          op.wrap ? " wrap" : "", ", check ", op.i, " : ", type);
    case ScalarOp::Kind::kConstant:
      if (IsFloatingPoint(op.dtype)) {
        return absl::StrCat("constant ", symbolic::FormatFloat(op.f), " : ",
                            type);
      }
      return absl::StrCat("constant ", op.i, " : ", type);
    case ScalarOp::Kind::kIndex:
      return absl::StrCat("index ", symbolic::ToString(op.index), " : ", type);
    case ScalarOp::Kind::kSymbol:
      return absl::StrCat("symbol ", symbolic::ToString(op.index), " : ", type);
    case ScalarOp::Kind::kCall:
      return absl::StrCat(op.fn, "(", args, ") : ", type);
    case ScalarOp::Kind::kCast:
      return absl::StrCat("cast(", args, ") : ", type);
    case ScalarOp::Kind::kReduce:
      return absl::StrCat("reduce ", ReduceName(op.reduce), "(", args,
                          op.arg_index < 0 ? ""
                          : op.reduce == ReduceKind::kWelfordM2
                              ? absl::StrCat(", mean %", op.arg_index)
                              : absl::StrCat(", index %", op.arg_index),
                          ") : ", type);
  }
  return "?";
}

}  // namespace

std::string PrintProgram(const Program& p) {
  std::string out;
  if (!p.symbols.empty()) {
    absl::StrAppend(&out, "symbols ", PrintExprs(p.symbols), "\n");
  }
  for (const Buffer& b : p.buffers) {
    absl::StrAppend(&out, "buffer ", b.name, " : ", ShortName(b.dtype), "[",
                    symbolic::ToString(b.numel), "]");
    if (b.kind == Buffer::Kind::kInput) {
      absl::StrAppend(&out, " input ", b.input);
    }
    if (b.local) absl::StrAppend(&out, " local");
    if (b.reuses >= 0) {
      absl::StrAppend(&out, " reuses ", p.buffers[b.reuses].name);
    }
    if (b.free_after >= 0 &&
        b.free_after < static_cast<int>(p.kernels.size())) {
      absl::StrAppend(&out, " freed after ", p.kernels[b.free_after].name);
    }
    out += "\n";
  }
  for (const Kernel& k : p.kernels) {
    if (k.kind == Kernel::Kind::kBind) {
      absl::StrAppend(&out, "kernel ", k.name, " bind ",
                      symbolic::ToString(k.symbol), " = ");
      if (k.extern_buffers.empty()) {
        absl::StrAppend(&out, symbolic::ToString(k.value), "\n");
      } else {
        absl::StrAppend(&out, p.buffers[k.extern_buffers[0]].name, "[",
                        symbolic::ToString(k.value), "]\n");
      }
      continue;
    }
    if (k.kind == Kernel::Kind::kAssert) {
      absl::StrAppend(&out, "kernel ", k.name, " assert ",
                      symbolic::ToString(k.value), ", check ", k.check);
      if (!k.check_values.empty()) {
        absl::StrAppend(&out, " reports [", PrintExprs(k.check_values), "]");
      }
      out += "\n";
      continue;
    }
    if (k.kind == Kernel::Kind::kExtern) {
      absl::StrAppend(&out, "kernel ", k.name, " extern ", k.routine, "(",
                      absl::StrJoin(k.extern_buffers, ", ",
                                    [&](std::string* s, int b) {
                                      s->append(p.buffers[b].name);
                                    }),
                      "; ", PrintExprs(k.extern_args), ")",
                      k.threads > 0 ? absl::StrCat(" threads=", k.threads) : "",
                      k.split_batch ? " split_batch" : "",
                      k.winograd ? " winograd" : "", "\n");
      if (k.ops.empty()) continue;
      // The fused epilogue, over one image.
      absl::StrAppend(&out, "  epilogue per image strides=[",
                      absl::StrJoin(k.image_strides, ", ",
                                    [&](std::string* s, const auto& b) {
                                      absl::StrAppend(
                                          s, p.buffers[b.first].name, ": ",
                                          symbolic::ToString(b.second));
                                    }),
                      "] ranges=[", PrintExprs(k.ranges), "]");
    } else {
      absl::StrAppend(&out, "kernel ", k.name, " ranges=[",
                      PrintExprs(k.ranges), "]");
    }
    // Loops in another order than x0, x1, ... (the scheduler's reordering):
    // the variable of each range, outermost first.
    bool canonical = true;
    for (size_t v = 0; v < k.vars.size(); ++v) {
      canonical = canonical && k.vars[v] == IndexVar(static_cast<int>(v));
    }
    if (!canonical) absl::StrAppend(&out, " order=[", PrintExprs(k.vars), "]");
    if (k.threads > 0) absl::StrAppend(&out, " threads=", k.threads);
    out += "\n";
    for (size_t s = 0; s < k.sections.size(); ++s) {
      const Section& sec = k.sections[s];
      absl::StrAppend(&out, "  section ", s,
                      sec.reduction ? " reduction" : " pointwise");
      for (size_t v = 0; v < sec.vars.size(); ++v) {
        absl::StrAppend(&out, v == 0 ? " " : ", ",
                        symbolic::ToString(sec.vars[v]), " in ",
                        symbolic::ToString(sec.ranges[v]));
      }
      out += "\n";
      for (size_t i = 0; i < k.ops.size(); ++i) {
        const ScalarOp& op = k.ops[i];
        if (op.section != static_cast<int>(s)) continue;
        if (op.kind == ScalarOp::Kind::kStore) {
          absl::StrAppend(&out, "    ", OpText(p, op), "\n");
        } else {
          absl::StrAppend(&out, "    %", i, " = ", OpText(p, op), "\n");
        }
      }
    }
  }
  return out;
}

bool FlatPointwise(const Kernel& k) {
  return k.kind == Kernel::Kind::kLoops && k.sections.size() == 1 &&
         k.sections[0].vars.empty();
}

bool RenameLoops(
    Kernel& k,
    const absl::flat_hash_map<symbolic::Expr, symbolic::Expr>& rename,
    std::vector<symbolic::Expr> vars, std::vector<symbolic::Expr> ranges) {
  std::vector<ScalarOp> ops = k.ops;
  for (ScalarOp& op : ops) {
    if (op.index.is_null()) continue;
    absl::StatusOr<symbolic::Expr> e = symbolic::Substitute(op.index, rename);
    if (!e.ok()) return false;
    op.index = *e;
  }
  k.ops = std::move(ops);
  k.vars = std::move(vars);
  k.ranges = std::move(ranges);
  return true;
}

std::optional<int64_t> IntOf(symbolic::Expr e) {
  if (e.is_null() || e.kind() != symbolic::ExprKind::kInteger) {
    return std::nullopt;
  }
  return e.int_value();
}

}  // namespace lathe::codegen
