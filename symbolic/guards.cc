#include "symbolic/guards.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/int_math.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {

InputSpec InputSpec::Tensor(std::vector<Expr> sizes, std::vector<Expr> strides,
                            Expr storage_offset) {
  InputSpec s;
  s.kind = Kind::kTensor;
  s.sizes = std::move(sizes);
  s.strides = std::move(strides);
  s.storage_offset = storage_offset;
  return s;
}

InputSpec InputSpec::Scalar(Expr value) {
  InputSpec s;
  s.kind = value.is_float()  ? Kind::kFloat
           : value.is_bool() ? Kind::kBool
                             : Kind::kInt;
  s.value = value;
  return s;
}

InputSpec InputSpec::None() {
  InputSpec s;
  s.kind = Kind::kNone;
  return s;
}

GuardInput GuardInput::Tensor(absl::Span<const int64_t> sizes,
                              absl::Span<const int64_t> strides,
                              int64_t storage_offset) {
  GuardInput g;
  g.kind = InputSpec::Kind::kTensor;
  g.sizes = sizes.data();
  g.strides = strides.data();
  g.ndim = static_cast<int64_t>(std::min(sizes.size(), strides.size()));
  g.storage_offset = storage_offset;
  return g;
}

GuardInput GuardInput::Int(int64_t v) {
  GuardInput g;
  g.kind = InputSpec::Kind::kInt;
  g.int_value = v;
  return g;
}

GuardInput GuardInput::Float(double v) {
  GuardInput g;
  g.kind = InputSpec::Kind::kFloat;
  g.float_value = v;
  return g;
}

GuardInput GuardInput::Bool(bool v) {
  GuardInput g;
  g.kind = InputSpec::Kind::kBool;
  g.int_value = v ? 1 : 0;
  return g;
}

GuardInput GuardInput::None() {
  GuardInput g;
  g.kind = InputSpec::Kind::kNone;
  return g;
}

namespace {

// Opcodes beyond ExprKind's values.
constexpr uint8_t kOpLoadSlot = 200;
constexpr uint8_t kOpConst = 201;
constexpr uint8_t kOpEqSource = 202;  // top == source value

// Python code for a guard, with symbols spelled by `name`.
std::string Py(Expr e, const std::function<std::string(Expr)>& name) {
  auto args = [&](absl::string_view sep) {
    std::vector<std::string> parts;
    for (Expr a : e.args()) parts.push_back(Py(a, name));
    return absl::StrCat("(", absl::StrJoin(parts, sep), ")");
  };
  auto call = [&](absl::string_view fn) {
    std::vector<std::string> parts;
    for (Expr a : e.args()) parts.push_back(Py(a, name));
    return absl::StrCat(fn, "(", absl::StrJoin(parts, ", "), ")");
  };
  switch (e.kind()) {
    case ExprKind::kInteger:
      return absl::StrCat(e.int_value());
    case ExprKind::kFloat: {
      double v = e.float_value();
      if (std::isnan(v)) return "math.nan";
      if (std::isinf(v)) return v > 0 ? "math.inf" : "-math.inf";
      return FormatFloat(v);
    }
    case ExprKind::kIntInfinity:
      return e.infinity_sign() > 0 ? "math.inf" : "-math.inf";
    case ExprKind::kBoolean:
      return e.bool_value() ? "True" : "False";
    case ExprKind::kSymbol:
      return name(e);
    case ExprKind::kAdd:
      return args(" + ");
    case ExprKind::kMul:
      return args(" * ");
    case ExprKind::kPowByNatural:
    case ExprKind::kFloatPow:
      return args(" ** ");
    case ExprKind::kFloorDiv:
    case ExprKind::kCleanDiv:
      return args(" // ");
    case ExprKind::kMod:
    case ExprKind::kPythonMod:
      return args(" % ");
    case ExprKind::kModularIndexing:
      return absl::StrCat("((", Py(e.arg(0), name), " // ", Py(e.arg(1), name),
                          ") % ", Py(e.arg(2), name), ")");
    case ExprKind::kMin:
      return call("min");
    case ExprKind::kMax:
      return call("max");
    case ExprKind::kIntTrueDiv:
    case ExprKind::kFloatTrueDiv:
      return args(" / ");
    case ExprKind::kToFloat:
      return call("float");
    case ExprKind::kTruncToInt:
      return call("math.trunc");
    case ExprKind::kFloorToInt:
      return call("math.floor");
    case ExprKind::kCeilToInt:
      return call("math.ceil");
    case ExprKind::kRoundToInt:
      return call("round");
    case ExprKind::kOpaqueUnary: {
      std::string fn = ToString(e);  // OpaqueUnaryFn_<name>(...)
      fn = fn.substr(std::string("OpaqueUnaryFn_").size());
      fn = fn.substr(0, fn.find('('));
      return call(absl::StrCat("math.", fn));
    }
    case ExprKind::kEq:
      return args(" == ");
    case ExprKind::kNe:
      return args(" != ");
    case ExprKind::kLt:
      return args(" < ");
    case ExprKind::kLe:
      return args(" <= ");
    case ExprKind::kAnd:
      return args(" and ");
    case ExprKind::kOr:
      return args(" or ");
    case ExprKind::kNot:
      return absl::StrCat("(not ", Py(e.arg(0), name), ")");
    case ExprKind::kPiecewise: {
      std::string out = Py(e.arg(e.num_args() - 2), name);
      for (int i = e.num_args() - 4; i >= 0; i -= 2) {
        out = absl::StrCat("(", Py(e.arg(i), name), " if ",
                           Py(e.arg(i + 1), name), " else ", out, ")");
      }
      return out;
    }
  }
  return "?";
}

// The conditions under which every division in `e` is defined, as C++
// (innermost first, so && evaluates each only once its operands are):
// Check() refuses the same inputs rather than dividing by zero or
// overflowing (INT64_MIN / -1), and so must the printed guard.
void DivisionPreconditions(Expr e, const CppPrintOptions& options,
                           std::vector<std::string>* out) {
  for (Expr a : e.args()) DivisionPreconditions(a, options, out);
  auto cpp = [&](int i) { return ToCpp(e.arg(i), options); };
  auto divisible = [&](int a, int b) {
    return absl::StrCat("(", cpp(b), " != 0 && (", cpp(b), " != -1 || ", cpp(a),
                        " != std::numeric_limits<int64_t>::min()))");
  };
  switch (e.kind()) {
    case ExprKind::kFloorDiv:
    case ExprKind::kCleanDiv:
    case ExprKind::kPythonMod:
      if (e.arg(1).kind() != ExprKind::kInteger) {
        out->push_back(divisible(0, 1));
      }
      break;
    case ExprKind::kModularIndexing:
      if (e.arg(1).kind() != ExprKind::kInteger) {
        out->push_back(divisible(0, 1));
      }
      if (e.arg(2).kind() != ExprKind::kInteger) {
        out->push_back(absl::StrCat("(", cpp(2), " != 0)"));
      }
      break;
    case ExprKind::kMod:
      out->push_back(absl::StrCat("(", cpp(0), " >= 0 && ", cpp(1), " >= 1)"));
      break;
    default:
      break;
  }
}

std::string DefaultSourceName(const Source& s) {
  switch (s.kind) {
    case Source::Kind::kSize:
      return absl::StrCat("t", s.input, "_size_", s.dim);
    case Source::Kind::kStride:
      return absl::StrCat("t", s.input, "_stride_", s.dim);
    case Source::Kind::kStorageOffset:
      return absl::StrCat("t", s.input, "_storage_offset");
    case Source::Kind::kScalar:
      return absl::StrCat("a", s.input);
  }
  return "?";
}

}  // namespace

// ---- Producing
// ---------------------------------------------------------------

absl::StatusOr<GuardSet> ProduceGuards(ShapeEnv& env,
                                       absl::Span<const InputSpec> inputs) {
  GuardSet set;
  for (const InputSpec& in : inputs) {
    set.input_shapes_.push_back(
        {in.kind, in.kind == InputSpec::Kind::kTensor
                      ? static_cast<int64_t>(in.sizes.size())
                      : 0});
  }
  // Every source with its (replaced, simplified) expression.
  std::vector<std::pair<Source, Expr>> sources;
  for (int k = 0; k < static_cast<int>(inputs.size()); ++k) {
    const InputSpec& in = inputs[k];
    if (in.kind == InputSpec::Kind::kTensor) {
      if (in.sizes.size() != in.strides.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", k, ": ", in.sizes.size(), " sizes but ",
                         in.strides.size(), " strides"));
      }
      for (size_t d = 0; d < in.sizes.size(); ++d) {
        sources.push_back({Source::Size(k, d), env.Simplify(in.sizes[d])});
      }
      for (size_t d = 0; d < in.strides.size(); ++d) {
        sources.push_back({Source::Stride(k, d), env.Simplify(in.strides[d])});
      }
      if (!in.any_storage_offset) {
        sources.push_back(
            {Source::StorageOffset(k), env.Simplify(in.storage_offset)});
      }
    } else if (in.kind != InputSpec::Kind::kNone) {
      if (in.value.is_null()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", k, ": a scalar input without a value"));
      }
      // A bool is read as 0 or 1 (guards compare numbers).
      Expr value =
          in.value.is_bool() ? Ite(in.value, Int(1), Int(0)) : in.value;
      sources.push_back({Source::Scalar(k), env.Simplify(value)});
    }
  }
  // 1. Bind each symbol at the first source that is exactly that symbol.
  absl::flat_hash_map<Expr, int> slot_of;
  std::vector<bool> binds(sources.size(), false);
  for (size_t i = 0; i < sources.size(); ++i) {
    Expr e = sources[i].second;
    if (e.is_symbol() && !slot_of.contains(e)) {
      if (slot_of.size() >= kMaxGuardSlots - 1) {  // last slot: scratch
        return absl::ResourceExhaustedError(absl::StrCat(
            "more than ", kMaxGuardSlots, " symbols in one guard set"));
      }
      slot_of[e] = static_cast<int>(set.slot_sources_.size());
      set.slot_sources_.push_back(sources[i].first);
      set.slot_symbols_.push_back(e);
      set.slot_is_float_.push_back(e.is_float());
      binds[i] = true;
    }
  }
  // Display names: bound symbols print as their source.
  absl::flat_hash_map<Expr, Source> display;
  for (size_t s = 0; s < set.slot_symbols_.size(); ++s) {
    display[set.slot_symbols_[s]] = set.slot_sources_[s];
  }
  auto source_symbol = [&](const Source& src) {
    Expr sym = Symbol(absl::StrCat("lathe_source_", DefaultSourceName(src)));
    display[sym] = src;
    return sym;
  };

  // Compiles `e` into set.code_, checking its symbols are bound.
  std::function<absl::Status(Expr, int*, int*)> compile =
      [&](Expr e, int* depth, int* max_depth) -> absl::Status {
    GuardSet::Instr in{};
    in.type = static_cast<uint8_t>(e.type());
    switch (e.kind()) {
      case ExprKind::kInteger:
      case ExprKind::kBoolean:
        in.op = kOpConst;
        in.i = e.kind() == ExprKind::kInteger ? e.int_value() : e.bool_value();
        break;
      case ExprKind::kIntInfinity:
        in.op = kOpConst;
        in.i = e.infinity_sign() > 0 ? std::numeric_limits<int64_t>::max()
                                     : std::numeric_limits<int64_t>::min();
        break;
      case ExprKind::kFloat:
        in.op = kOpConst;
        in.f = e.float_value();
        break;
      case ExprKind::kSymbol: {
        auto it = slot_of.find(e);
        if (it == slot_of.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "guard needs symbol ", e.name(), ", which no input provides"));
        }
        in.op = kOpLoadSlot;
        in.index = it->second;
        break;
      }
      default:
        for (Expr a : e.args()) RETURN_IF_ERROR(compile(a, depth, max_depth));
        in.op = static_cast<uint8_t>(e.kind());
        in.count = static_cast<uint16_t>(e.num_args());
        if (e.kind() == ExprKind::kOpaqueUnary) {
          in.index = static_cast<int32_t>(e.unary_fn());
        }
        *depth -= e.num_args();
        break;
    }
    set.code_.push_back(in);
    *max_depth = std::max(*max_depth, ++*depth);
    if (*max_depth > kMaxGuardStack) {
      return absl::ResourceExhaustedError("guard expression too deep");
    }
    return absl::OkStatus();
  };
  auto add_program = [&](Expr e, const Source* eq_source) -> absl::Status {
    GuardSet::Guard g;
    g.fast = GuardSet::Fast::kProgram;
    g.begin = static_cast<int32_t>(set.code_.size());
    int depth = 0, max_depth = 0;
    RETURN_IF_ERROR(compile(e, &depth, &max_depth));
    if (eq_source != nullptr) {
      GuardSet::Instr cmp{};
      cmp.op = kOpEqSource;
      cmp.type = static_cast<uint8_t>(ExprType::kBool);
      g.source = *eq_source;
      set.code_.push_back(cmp);
    }
    g.end = static_cast<int32_t>(set.code_.size());
    set.guards_.push_back(g);
    return absl::OkStatus();
  };

  // 1 (cont.). Every other source equals its expression.
  for (size_t i = 0; i < sources.size(); ++i) {
    if (binds[i]) continue;
    const auto& [src, e] = sources[i];
    Expr lhs = source_symbol(src);
    if (e.kind() == ExprKind::kInteger) {
      GuardSet::Guard g;
      g.fast = GuardSet::Fast::kSourceEqConst;
      g.source = src;
      g.lo = e.int_value();
      set.guards_.push_back(g);
    } else if (e.is_symbol() && slot_of.contains(e)) {
      GuardSet::Guard g;
      g.fast = GuardSet::Fast::kSourceEqSlot;
      g.source = src;
      g.slot = slot_of[e];
      set.guards_.push_back(g);
    } else {
      RETURN_IF_ERROR(add_program(e, &src));
    }
    set.exprs_.push_back(Eq(lhs, e));
  }
  // 2. Recorded guards, minus those the ranges and replacements imply.
  absl::flat_hash_set<Expr> seen;
  for (Expr guard : env.guards()) {
    // Replacements only: simplifying with divisibility facts would erase the
    // very guards those facts came from.
    Expr g = env.Replace(guard);
    if (g.is_true()) continue;
    if (std::optional<Expr> v = env.MaybeEvaluateStaticWithoutAxioms(g)) {
      if (v->is_true()) continue;
    }
    if (!seen.insert(CanonicalRelation(g)).second) continue;
    RETURN_IF_ERROR(add_program(g, nullptr));
    set.exprs_.push_back(g);
  }
  // 3. Ranges of bound int symbols; 4. NaN checks of float symbols.
  for (size_t s = 0; s < set.slot_symbols_.size(); ++s) {
    Expr sym = set.slot_symbols_[s];
    if (sym.is_float()) {
      GuardSet::Guard g;
      g.fast = GuardSet::Fast::kSlotNotNan;
      g.slot = static_cast<int32_t>(s);
      set.guards_.push_back(g);
      set.exprs_.push_back(Eq(sym, sym));  // placeholder: printed as isnan
      continue;
    }
    ValueRange r = env.RangeOf(sym);
    bool nonnegative_source =
        set.slot_sources_[s].kind != Source::Kind::kScalar;
    IntBound lo = r.int_lo(), hi = r.int_hi();
    bool has_lo = lo != -kIntInf && !(nonnegative_source && lo <= 0);
    bool has_hi = hi != kIntInf;
    if (!has_lo && !has_hi) continue;
    GuardSet::Guard g;
    g.fast = GuardSet::Fast::kSlotInRange;
    g.slot = static_cast<int32_t>(s);
    g.lo =
        has_lo ? static_cast<int64_t>(lo) : std::numeric_limits<int64_t>::min();
    g.hi =
        has_hi ? static_cast<int64_t>(hi) : std::numeric_limits<int64_t>::max();
    set.guards_.push_back(g);
    std::vector<Expr> parts;
    if (has_lo) parts.push_back(Le(Int(g.lo), sym));
    if (has_hi) parts.push_back(Le(sym, Int(g.hi)));
    set.exprs_.push_back(And(parts));
  }
  set.display_ = std::move(display);
  return set;
}

// ---- Checking
// ----------------------------------------------------------------

bool GuardSet::Read(const GuardInput& in, const Source& s, int64_t* v) const {
  switch (s.kind) {
    case Source::Kind::kSize:
      if (in.kind != InputSpec::Kind::kTensor || s.dim >= in.ndim) return false;
      *v = in.sizes[s.dim];
      return true;
    case Source::Kind::kStride:
      if (in.kind != InputSpec::Kind::kTensor || s.dim >= in.ndim) return false;
      *v = in.strides[s.dim];
      return true;
    case Source::Kind::kStorageOffset:
      if (in.kind != InputSpec::Kind::kTensor) return false;
      *v = in.storage_offset;
      return true;
    case Source::Kind::kScalar:
      if (in.kind != InputSpec::Kind::kInt &&
          in.kind != InputSpec::Kind::kBool) {
        return false;
      }
      *v = in.int_value;
      return true;
  }
  return false;
}

namespace {

union Cell {
  int64_t i;
  double f;
};

double AsF(const Cell& c, uint8_t type) {
  return type == static_cast<uint8_t>(ExprType::kFloat)
             ? c.f
             : static_cast<double>(c.i);
}

}  // namespace

bool GuardSet::Run(const Guard& g, const int64_t* islots,
                   const double* fslots) const {
  Cell stack[kMaxGuardStack];
  uint8_t types[kMaxGuardStack];
  int sp = 0;
  constexpr uint8_t kI = static_cast<uint8_t>(ExprType::kInt);
  constexpr uint8_t kF = static_cast<uint8_t>(ExprType::kFloat);
  for (int32_t pc = g.begin; pc < g.end; ++pc) {
    const Instr& in = code_[pc];
    Cell r{};
    if (in.op == kOpConst) {
      if (in.type == kF) {
        r.f = in.f;
      } else {
        r.i = in.i;
      }
    } else if (in.op == kOpLoadSlot) {
      if (slot_is_float_[in.index]) {
        r.f = fslots[in.index];
      } else {
        r.i = islots[in.index];
      }
    } else if (in.op == kOpEqSource) {
      // Operand: the expression; the source was read into islots' tail.
      return stack[sp - 1].i == islots[kMaxGuardSlots - 1];
    } else {
      const int n = in.count;
      Cell* a = stack + sp - n;
      const uint8_t* t = types + sp - n;
      bool fl = in.type == kF;
      switch (static_cast<ExprKind>(in.op)) {
        case ExprKind::kAdd:
        case ExprKind::kMul: {
          bool add = in.op == static_cast<uint8_t>(ExprKind::kAdd);
          if (fl) {
            double acc = add ? 0 : 1;
            for (int k = 0; k < n; ++k)
              acc = add ? acc + AsF(a[k], t[k]) : acc * AsF(a[k], t[k]);
            r.f = acc;
          } else {
            int64_t acc = add ? 0 : 1;
            for (int k = 0; k < n; ++k) {
              if (add ? __builtin_add_overflow(acc, a[k].i, &acc)
                      : __builtin_mul_overflow(acc, a[k].i, &acc)) {
                return false;
              }
            }
            r.i = acc;
          }
          break;
        }
        case ExprKind::kPowByNatural: {
          if (a[1].i < 0) return false;
          int64_t acc = 1;
          for (int64_t k = 0; k < a[1].i; ++k) {
            if (__builtin_mul_overflow(acc, a[0].i, &acc)) return false;
          }
          r.i = acc;
          break;
        }
        case ExprKind::kFloatPow:
          r.f = std::pow(AsF(a[0], t[0]), AsF(a[1], t[1]));
          break;
        case ExprKind::kFloorDiv:
        case ExprKind::kCleanDiv:
          if (a[1].i == 0 ||
              (a[0].i == std::numeric_limits<int64_t>::min() && a[1].i == -1)) {
            return false;
          }
          r.i = PyFloorDiv(a[0].i, a[1].i);
          break;
        case ExprKind::kModularIndexing:
          if (a[1].i == 0 || a[2].i == 0 ||
              (a[0].i == std::numeric_limits<int64_t>::min() && a[1].i == -1)) {
            return false;
          }
          r.i = PyMod(PyFloorDiv(a[0].i, a[1].i), a[2].i);
          break;
        case ExprKind::kMod:
          if (a[0].i < 0 || a[1].i < 1) return false;
          r.i = a[0].i % a[1].i;
          break;
        case ExprKind::kPythonMod:
          if (a[1].i == 0 ||
              (a[0].i == std::numeric_limits<int64_t>::min() && a[1].i == -1)) {
            return false;
          }
          r.i = PyMod(a[0].i, a[1].i);
          break;
        case ExprKind::kMin:
        case ExprKind::kMax: {
          bool mx = in.op == static_cast<uint8_t>(ExprKind::kMax);
          if (fl) {
            double best = AsF(a[0], t[0]);
            for (int k = 1; k < n; ++k) {
              double v = AsF(a[k], t[k]);
              if (std::isnan(v) || (mx ? v > best : v < best)) best = v;
            }
            r.f = best;
          } else {
            int64_t best = a[0].i;
            for (int k = 1; k < n; ++k)
              best = mx ? std::max(best, a[k].i) : std::min(best, a[k].i);
            r.i = best;
          }
          break;
        }
        case ExprKind::kIntTrueDiv:
        case ExprKind::kFloatTrueDiv: {
          double d = AsF(a[1], t[1]);
          if (d == 0) return false;
          r.f = AsF(a[0], t[0]) / d;
          break;
        }
        case ExprKind::kToFloat:
          r.f = AsF(a[0], t[0]);
          break;
        case ExprKind::kTruncToInt:
        case ExprKind::kFloorToInt:
        case ExprKind::kCeilToInt:
        case ExprKind::kRoundToInt: {
          double v = AsF(a[0], t[0]);
          double w = in.op == static_cast<uint8_t>(ExprKind::kTruncToInt)
                         ? std::trunc(v)
                     : in.op == static_cast<uint8_t>(ExprKind::kFloorToInt)
                         ? std::floor(v)
                     : in.op == static_cast<uint8_t>(ExprKind::kCeilToInt)
                         ? std::ceil(v)
                         : std::nearbyint(v);
          if (!(w >= -9.2233720368547758e18 && w < 9.2233720368547758e18))
            return false;
          r.i = static_cast<int64_t>(w);
          break;
        }
        case ExprKind::kOpaqueUnary: {
          double x = AsF(a[0], t[0]);
          switch (static_cast<UnaryFn>(in.index)) {
            case UnaryFn::kSqrt:
              r.f = std::sqrt(x);
              break;
            case UnaryFn::kExp:
              r.f = std::exp(x);
              break;
            case UnaryFn::kLog:
              r.f = std::log(x);
              break;
            case UnaryFn::kLog2:
              r.f = std::log2(x);
              break;
            case UnaryFn::kSin:
              r.f = std::sin(x);
              break;
            case UnaryFn::kCos:
              r.f = std::cos(x);
              break;
            case UnaryFn::kTan:
              r.f = std::tan(x);
              break;
            case UnaryFn::kAsin:
              r.f = std::asin(x);
              break;
            case UnaryFn::kAcos:
              r.f = std::acos(x);
              break;
            case UnaryFn::kAtan:
              r.f = std::atan(x);
              break;
            case UnaryFn::kSinh:
              r.f = std::sinh(x);
              break;
            case UnaryFn::kCosh:
              r.f = std::cosh(x);
              break;
            case UnaryFn::kTanh:
              r.f = std::tanh(x);
              break;
          }
          break;
        }
        case ExprKind::kEq:
        case ExprKind::kNe:
        case ExprKind::kLt:
        case ExprKind::kLe: {
          bool floats = t[0] == kF || t[1] == kF;
          int o;
          if (floats) {
            double x = AsF(a[0], t[0]), y = AsF(a[1], t[1]);
            o = (std::isnan(x) || std::isnan(y))
                    ? 2
                    : (x < y ? -1 : (x > y ? 1 : 0));
          } else {
            o = a[0].i < a[1].i ? -1 : (a[0].i > a[1].i ? 1 : 0);
          }
          switch (static_cast<ExprKind>(in.op)) {
            case ExprKind::kEq:
              r.i = o == 0;
              break;
            case ExprKind::kNe:
              r.i = o != 0;
              break;
            case ExprKind::kLt:
              r.i = o == -1;
              break;
            default:
              r.i = o == -1 || o == 0;
              break;
          }
          break;
        }
        case ExprKind::kAnd:
        case ExprKind::kOr: {
          bool is_and = in.op == static_cast<uint8_t>(ExprKind::kAnd);
          bool acc = is_and;
          for (int k = 0; k < n; ++k)
            acc = is_and ? (acc && a[k].i) : (acc || a[k].i);
          r.i = acc;
          break;
        }
        case ExprKind::kNot:
          r.i = !a[0].i;
          break;
        case ExprKind::kPiecewise: {
          r = a[n - 2];
          for (int k = 0; k + 1 < n; k += 2) {
            if (a[k + 1].i) {
              r = a[k];
              if (t[k] == kI && fl) r.f = static_cast<double>(a[k].i);
              break;
            }
          }
          break;
        }
        default:
          return false;
      }
      sp -= n;
    }
    stack[sp] = r;
    types[sp] = in.type;
    ++sp;
  }
  return sp == 1 && stack[0].i != 0;
}

bool GuardSet::Check(absl::Span<const GuardInput> inputs, int* failed) const {
  if (failed != nullptr) *failed = -1;
  if (inputs.size() != input_shapes_.size()) return false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& [kind, rank] = input_shapes_[k];
    if (kind == InputSpec::Kind::kNone) continue;
    if (inputs[k].kind != kind ||
        (kind == InputSpec::Kind::kTensor && inputs[k].ndim != rank)) {
      return false;
    }
  }
  int64_t islots[kMaxGuardSlots];
  double fslots[kMaxGuardSlots];
  const size_t n = slot_sources_.size();
  for (size_t s = 0; s < n; ++s) {
    const Source& src = slot_sources_[s];
    const GuardInput& in = inputs[src.input];
    if (slot_is_float_[s]) {
      if (in.kind != InputSpec::Kind::kFloat) return false;
      fslots[s] = in.float_value;
    } else if (!Read(in, src, &islots[s])) {
      return false;
    }
  }
  for (size_t k = 0; k < guards_.size(); ++k) {
    const Guard& g = guards_[k];
    bool ok;
    int64_t v;
    switch (g.fast) {
      case Fast::kSourceEqConst:
        ok = Read(inputs[g.source.input], g.source, &v) && v == g.lo;
        break;
      case Fast::kSourceEqSlot:
        ok = Read(inputs[g.source.input], g.source, &v) && v == islots[g.slot];
        break;
      case Fast::kSlotInRange:
        ok = islots[g.slot] >= g.lo && islots[g.slot] <= g.hi;
        break;
      case Fast::kSlotNotNan:
        ok = !std::isnan(fslots[g.slot]);
        break;
      case Fast::kProgram:
      default:
        if (code_[g.end - 1].op == kOpEqSource) {
          if (!Read(inputs[g.source.input], g.source,
                    &islots[kMaxGuardSlots - 1])) {
            ok = false;
            break;
          }
        }
        ok = Run(g, islots, fslots);
        break;
    }
    if (!ok) {
      if (failed != nullptr) *failed = static_cast<int>(k);
      return false;
    }
  }
  return true;
}

// ---- Printing
// ----------------------------------------------------------------

std::string GuardSet::Describe(int i) const {
  if (i < 0 || i >= size()) {
    return "the inputs' number, kinds or ranks differ from the compiled ones";
  }
  auto name = [this](Expr s) {
    auto it = display_.find(s);
    return it != display_.end() ? it->second.ToString() : std::string(s.name());
  };
  const Guard& g = guards_[i];
  if (g.fast == Fast::kSlotNotNan) {
    return absl::StrCat("not math.isnan(", slot_sources_[g.slot].ToString(),
                        ")");
  }
  Expr e = exprs_[i];
  // A bool argument's guard as Python writes it: "a2 == True", not "== 1"
  // (guards compare a bool as the number 0 or 1).
  if (g.fast == Fast::kSourceEqConst &&
      g.source.kind == Source::Kind::kScalar && g.source.input >= 0 &&
      g.source.input < static_cast<int>(input_shapes_.size()) &&
      input_shapes_[g.source.input].first == InputSpec::Kind::kBool &&
      (g.lo == 0 || g.lo == 1)) {
    return absl::StrCat(g.source.ToString(),
                        " == ", g.lo == 1 ? "True" : "False");
  }
  if (g.fast == Fast::kSlotInRange) {
    std::string sym = slot_sources_[g.slot].ToString();
    std::string lo = g.lo != std::numeric_limits<int64_t>::min()
                         ? absl::StrCat(g.lo, " <= ")
                         : "";
    std::string hi = g.hi != std::numeric_limits<int64_t>::max()
                         ? absl::StrCat(" <= ", g.hi)
                         : "";
    return absl::StrCat(lo, sym, hi);
  }
  std::string text = Py(e, name);
  // Drop one level of outer parentheses for readability.
  if (text.size() > 2 && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    bool outer = true;
    for (size_t c = 0; c + 1 < text.size(); ++c) {
      depth += text[c] == '(' ? 1 : text[c] == ')' ? -1 : 0;
      if (depth == 0) {
        outer = false;
        break;
      }
    }
    if (outer) text = text.substr(1, text.size() - 2);
  }
  return text;
}

std::string GuardSet::ToString() const {
  std::string out;
  for (int i = 0; i < size(); ++i) absl::StrAppend(&out, Describe(i), "\n");
  return out;
}

std::optional<std::pair<Source, int64_t>> GuardSet::ConstantGuard(int i) const {
  const Guard& g = guards_[i];
  if (g.fast != Fast::kSourceEqConst) return std::nullopt;
  return std::make_pair(g.source, g.lo);
}

std::optional<std::tuple<Source, int64_t, int64_t>> GuardSet::RangeGuard(
    int i) const {
  const Guard& g = guards_[i];
  if (g.fast != Fast::kSlotInRange) return std::nullopt;
  return std::make_tuple(slot_sources_[g.slot], g.lo, g.hi);
}

std::string GuardSet::GuardCpp(
    int i, const std::function<std::string(const Source&)>& source_name) const {
  auto spell = [&](const Source& s) {
    return source_name ? source_name(s) : DefaultSourceName(s);
  };
  const Guard& g = guards_[i];
  if (g.fast == Fast::kSlotNotNan) {
    return absl::StrCat("!std::isnan(", spell(slot_sources_[g.slot]), ")");
  }
  CppPrintOptions options;
  options.symbol_name = [&](Expr s) {
    auto it = display_.find(s);
    return it != display_.end() ? spell(it->second) : std::string(s.name());
  };
  std::vector<std::string> parts;
  DivisionPreconditions(exprs_[i], options, &parts);
  if (parts.empty()) return symbolic::ToCpp(exprs_[i], options);
  parts.push_back(symbolic::ToCpp(exprs_[i], options));
  return absl::StrCat("(", absl::StrJoin(parts, " && "), ")");
}

std::string GuardSet::ToCpp(
    const std::function<std::string(const Source&)>& source_name) const {
  std::vector<std::string> parts;
  for (int i = 0; i < size(); ++i) parts.push_back(GuardCpp(i, source_name));
  if (parts.empty()) return "true";
  return absl::StrJoin(parts, " && ");
}

}  // namespace lathe::symbolic
