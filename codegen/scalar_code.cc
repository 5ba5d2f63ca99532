#include "codegen/scalar_code.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/scalar_ops.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// A bound on the magnitude of `e` and of every value computed on the way
// (loop variables at most `top`); int64 max for what it cannot bound (an
// indirect variable: a loaded int64, a symbol).
int64_t Magnitude(Expr e, const absl::flat_hash_map<Expr, int64_t>& top) {
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  auto sat_add = [](int64_t a, int64_t b) {
    return a > kInf - b ? kInf : a + b;
  };
  auto sat_mul = [](int64_t a, int64_t b) {
    return a != 0 && b > kInf / a ? kInf : a * b;
  };
  switch (e.kind()) {
    case symbolic::ExprKind::kInteger:
      return e.int_value() == std::numeric_limits<int64_t>::min()
                 ? kInf
                 : std::abs(e.int_value());
    case symbolic::ExprKind::kSymbol: {
      auto it = top.find(e);
      return it == top.end() ? kInf : it->second;
    }
    case symbolic::ExprKind::kAdd:
    case symbolic::ExprKind::kMul: {
      int64_t m = e.kind() == symbolic::ExprKind::kAdd ? 0 : 1;
      for (Expr a : e.args()) {
        int64_t b = Magnitude(a, top);
        m = e.kind() == symbolic::ExprKind::kAdd ? sat_add(m, b)
                                                 : sat_mul(m, b);
      }
      return m;
    }
    case symbolic::ExprKind::kFloorDiv:
    case symbolic::ExprKind::kCleanDiv:
    case symbolic::ExprKind::kModularIndexing:
    case symbolic::ExprKind::kMod:
    case symbolic::ExprKind::kPythonMod:
    case symbolic::ExprKind::kMin:
    case symbolic::ExprKind::kMax: {
      int64_t m = 0;
      for (Expr a : e.args()) m = std::max(m, Magnitude(a, top));
      return m;
    }
    default:
      return kInf;
  }
}

}  // namespace

bool Int32Indexing(const Program& p) {
  for (Expr s : p.symbols) {
    if (!s.is_float()) return false;
  }
  for (const Buffer& b : p.buffers) {
    if (b.numel.kind() != symbolic::ExprKind::kInteger ||
        b.numel.int_value() > std::numeric_limits<int32_t>::max()) {
      return false;
    }
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const Kernel& k : p.kernels) {
    // The largest value each loop variable takes.
    absl::flat_hash_map<Expr, int64_t> top;
    std::vector<Expr> vars = k.vars, ranges = k.ranges;
    for (const Section& s : k.sections) {
      vars.insert(vars.end(), s.vars.begin(), s.vars.end());
      ranges.insert(ranges.end(), s.ranges.begin(), s.ranges.end());
    }
    for (size_t v = 0; v < vars.size(); ++v) {
      if (ranges[v].kind() != symbolic::ExprKind::kInteger ||
          ranges[v].int_value() > kMax) {
        return false;
      }
      top[vars[v]] = std::max<int64_t>(ranges[v].int_value() - 1, 0);
    }
    // Every index expression, and every value inside it, stays within
    // int32 (a quotient's dividend may exceed the result).
    for (const ScalarOp& op : k.ops) {
      if (op.index.is_null() || op.kind == ScalarOp::Kind::kSymbol) continue;
      if (Magnitude(op.index, top) > kMax) return false;
    }
  }
  return true;
}

std::string ConstantCpp(const ScalarOp& op) {
  std::string t(CType(op.dtype));
  if (op.dtype == DType::kBool) return op.i != 0 ? "true" : "false";
  if (!IsFloatingPoint(op.dtype)) {
    if (op.i == std::numeric_limits<int64_t>::min()) {
      return absl::StrCat("static_cast<", t, ">(-9223372036854775807LL - 1)");
    }
    return absl::StrCat("static_cast<", t, ">(", op.i, "LL)");
  }
  std::string ct(CType(ComputeDType(op.dtype)));
  if (std::isnan(op.f)) {
    return absl::StrCat("lathe_std::numeric_limits<", ct, ">::quiet_NaN()");
  }
  if (std::isinf(op.f)) {
    return absl::StrCat(op.f < 0 ? "-" : "", "lathe_std::numeric_limits<", ct,
                        ">::infinity()");
  }
  return absl::StrCat("static_cast<", ct, ">(", symbolic::FormatFloat(op.f),
                      ")");
}

std::string ReduceIdentity(ReduceKind kind, DType dtype) {
  const std::string t(CType(dtype));
  const bool fp = IsFloatingPoint(dtype);
  const std::string lim = absl::StrCat("lathe_std::numeric_limits<", t, ">::");
  switch (kind) {
    case ReduceKind::kSum:
      return absl::StrCat(t, "(0)");
    case ReduceKind::kProd:
      return absl::StrCat(t, "(1)");
    case ReduceKind::kLogAddExp:
    case ReduceKind::kMax:
    case ReduceKind::kArgMax:
      return fp ? absl::StrCat("-", lim, "infinity()")
                : absl::StrCat(lim, "lowest()");
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
      return fp ? absl::StrCat(lim, "infinity()") : absl::StrCat(lim, "max()");
    case ReduceKind::kAny:
      return "false";
    case ReduceKind::kAll:
      return "true";
    case ReduceKind::kWelfordMean:  // each emitter's own accumulator
    case ReduceKind::kWelfordM2:
      break;
  }
  return "0";
}

bool EmitScalarOp(const Kernel& k, int i, const IndexCpp& cpp,
                  absl::string_view indent, std::string* out,
                  const BufferName& buffer) {
  const ScalarOp& op = k.ops[i];
  const std::string t(CType(op.dtype));
  auto arg = [&](int a) { return absl::StrCat("v", op.args[a]); };
  const std::string ptr = op.buffer < 0 ? ""
                          : buffer      ? buffer(op.buffer)
                                        : absl::StrCat("b", op.buffer);
  switch (op.kind) {
    // f16 and bf16 elements move as their 16 bits (lathe_half's one
    // member): GCC vectorizes no loop that copies the struct as a whole.
    // bool elements load as their byte (lathe_load_bool).
    case ScalarOp::Kind::kLoad:
      if (op.dtype == DType::kBool) {
        absl::StrAppend(out, indent, "const bool v", i, " = lathe_load_bool(&",
                        ptr, "[", cpp(op.index, &op), "]);\n");
        return true;
      }
      absl::StrAppend(out, indent, "const ", t, " v", i, " = ",
                      IsHalfFloat(op.dtype) ? "{" : "", ptr, "[",
                      cpp(op.index, &op), "]",
                      IsHalfFloat(op.dtype) ? ".bits}" : "", ";\n");
      return true;
    case ScalarOp::Kind::kStore:
      absl::StrAppend(
          out, indent, op.masked ? absl::StrCat("if (", arg(1), ") ") : "", ptr,
          "[", cpp(op.index, &op), "]", IsHalfFloat(op.dtype) ? ".bits" : "",
          " = ", arg(0), IsHalfFloat(op.dtype) ? ".bits" : "", ";\n");
      return true;
    case ScalarOp::Kind::kConstant: {
      const DType held =
          IsFloatingPoint(op.dtype) ? ComputeDType(op.dtype) : op.dtype;
      absl::StrAppend(out, indent, "const ", CType(held), " v", i, " = ",
                      ConstantCpp(op), ";\n");
      return true;
    }
    case ScalarOp::Kind::kIndex:
      absl::StrAppend(out, indent, "const int64_t v", i,
                      " = static_cast<int64_t>(", cpp(op.index, nullptr),
                      ");\n");
      return true;
    case ScalarOp::Kind::kSymbol:
      absl::StrAppend(out, indent, "const double v", i,
                      " = static_cast<double>(", cpp(op.index, nullptr),
                      ");\n");
      return true;
    case ScalarOp::Kind::kCall: {
      std::vector<std::string> args;
      for (size_t a = 0; a < op.args.size(); ++a) {
        args.push_back(arg(static_cast<int>(a)));
      }
      absl::StrAppend(out, indent, "const ", t, " v", i, " = lathe_op_", op.fn,
                      "(", absl::StrJoin(args, ", "), ");\n");
      return true;
    }
    case ScalarOp::Kind::kCast:
      absl::StrAppend(out, indent, "const ", t, " v", i, " = lathe_cast<", t,
                      ">(", arg(0), ");\n");
      return true;
    case ScalarOp::Kind::kReduce:
    case ScalarOp::Kind::kScan:
    case ScalarOp::Kind::kCheckIndex:
      return false;
  }
  return false;
}

std::string KernelSymbolName(
    symbolic::Expr s,
    const absl::flat_hash_map<symbolic::Expr, std::string>& names,
    const ScalarOp* op) {
  auto it = names.find(s);
  if (it != names.end()) return it->second;
  if (op != nullptr) {
    if (int a = IndirectArg(*op, s); a >= 0) return absl::StrCat("v", a);
  }
  return std::string(s.name());
}

void EmitCheckIndex(const Kernel& k, int i, const IndexCpp& cpp,
                    absl::string_view indent, const CheckFailure& fail,
                    std::string* out) {
  const ScalarOp& op = k.ops[i];
  const std::string v = absl::StrCat("v", i),
                    given =
                        absl::StrCat("static_cast<int64_t>(v", op.args[0], ")");
  absl::StrAppend(out, indent, "int64_t ", v, " = ", given, ";\n", indent,
                  "{\n", indent, "  const int64_t bound = (int64_t)(",
                  cpp(op.index, nullptr), ");\n");
  if (op.wrap) {
    absl::StrAppend(out, indent, "  if (", v, " < 0) ", v, " += bound;\n");
  }
  absl::StrAppend(out, indent, "  if (__builtin_expect(", v, " < 0 || ", v,
                  " >= bound, 0)) { ", fail(given, "bound"), " ", v,
                  " = 0; }\n", indent, "}\n");
}

ExternCallText ExternCall(const Kernel& k,
                          const std::function<std::string(symbolic::Expr)>& cpp,
                          const std::function<std::string(int)>& ptr,
                          absl::string_view fn, absl::string_view first,
                          absl::string_view indent,
                          absl::string_view batch_index,
                          absl::string_view flags) {
  ExternCallText text;
  std::vector<std::string> args;
  if (!first.empty()) args.emplace_back(first);
  const std::vector<int>& bs = k.extern_buffers;
  if (k.routine == "sconv" || k.routine == "sort") {
    // fn(geometry, inputs..., outputs...): the geometry array
    // (runtime/convolution.h, runtime/sort.h), the buffers after the
    // outputs, then the outputs.
    std::vector<std::string> g;
    for (const symbolic::Expr& e : k.extern_args) g.push_back(cpp(e));
    if (!flags.empty() && !g.empty() && k.routine == "sconv") {
      g.back() = absl::StrCat("(", g.back(), " | ", flags, ")");
    }
    text.setup = absl::StrCat(indent, "const int64_t g[] = {",
                              absl::StrJoin(g, ", "), "};\n");
    args.push_back("g");
    for (size_t b = k.extern_outputs; b < bs.size(); ++b) {
      args.push_back(ptr(bs[b]));
    }
    for (int b = 0; b < k.extern_outputs; ++b) args.push_back(ptr(bs[b]));
  } else {
    // A matrix product: batch, m, n, k, then a, b and c (buffers 1, 2 and
    // 0), each an offset pointer and its three strides.
    const std::vector<symbolic::Expr>& a = k.extern_args;
    for (int i = 0; i < 4; ++i) {
      args.push_back(i == 0 && !batch_index.empty() ? "1" : cpp(a[i]));
    }
    for (int o = 0; o < 3; ++o) {
      const int at = 4 + 4 * o;
      args.push_back(absl::StrCat(
          ptr(bs[(o + 1) % 3]), " + ", cpp(a[at]),
          batch_index.empty()
              ? ""
              : absl::StrCat(" + ", batch_index, " * (", cpp(a[at + 1]), ")")));
      for (int i = 1; i < 4; ++i) args.push_back(cpp(a[at + i]));
    }
  }
  text.call = absl::StrCat(fn, "(", absl::StrJoin(args, ", "), ")");
  return text;
}

std::string RandpermLoop(const Kernel& k,
                         const std::function<std::string(symbolic::Expr)>& cpp,
                         absl::string_view out, absl::string_view ctype,
                         absl::string_view indent) {
  const std::vector<symbolic::Expr>& a = k.extern_args;
  return absl::StrCat(
      indent, "const int64_t n = ", cpp(a[0]), ", seed = ", cpp(a[1]),
      ", at = ", cpp(a[2]), ";\n", indent, "for (int64_t i = 0; i < n; ++i) ",
      out, "[i] = lathe_cast<", ctype, ">(i);\n", indent,
      "for (int64_t i = n - 1; i > 0; --i) {\n", indent,
      "  const int64_t j = static_cast<int64_t>(lathe_rng_bits(seed, at + i) "
      "% static_cast<uint64_t>(i + 1));\n",
      indent, "  const ", ctype, " v = ", out, "[i]; ", out, "[i] = ", out,
      "[j]; ", out, "[j] = v;\n", indent, "}\n");
}

}  // namespace lathe::codegen
