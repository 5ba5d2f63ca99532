#include "symbolic/shape_env.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"
#include "symbolic/int_math.h"
#include "symbolic/printer.h"
#include "symbolic/simplify.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {

namespace {

constexpr absl::string_view kDataDependent =
    "Could not guard on data-dependent expression ";

Expr OkOr(absl::StatusOr<Expr> e, Expr fallback) {
  return e.ok() ? *e : fallback;
}

std::vector<Expr> TermsOf(Expr e) {
  if (e.kind() == ExprKind::kAdd) return {e.args().begin(), e.args().end()};
  return {e};
}

// The integer coefficient of a term and the term without it.
std::pair<int64_t, Expr> SplitCoefficient(Expr term) {
  if (term.kind() == ExprKind::kMul &&
      term.arg(0).kind() == ExprKind::kInteger) {
    std::vector<Expr> rest(term.args().begin() + 1, term.args().end());
    return {term.arg(0).int_value(), Mul(rest)};
  }
  return {1, term};
}

bool Contains(Expr e, Expr symbol) {
  if (!e.has_symbols()) return false;
  for (Expr s : FreeSymbols(e)) {
    if (s == symbol) return true;
  }
  return false;
}

bool ContainsKind(Expr e, ExprKind kind) {
  if (e.kind() == kind) return true;
  for (Expr a : e.args()) {
    if (ContainsKind(a, kind)) return true;
  }
  return false;
}

// CleanDiv spelled FloorDiv, so divisibility facts match either form.
Expr NormalizeDivisions(Expr e) {
  if (!e.has_symbols() || e.num_args() == 0) return e;
  std::vector<Expr> args;
  for (Expr a : e.args()) args.push_back(NormalizeDivisions(a));
  if (e.kind() == ExprKind::kCleanDiv)
    return OkOr(FloorDiv(args[0], args[1]), e);
  return OkOr(Rebuild(e, args), e);
}

}  // namespace

std::string Source::ToString() const {
  switch (kind) {
    case Kind::kSize:
      return absl::StrCat("t", input, ".size(", dim, ")");
    case Kind::kStride:
      return absl::StrCat("t", input, ".stride(", dim, ")");
    case Kind::kStorageOffset:
      return absl::StrCat("t", input, ".storage_offset()");
    case Kind::kScalar:
      return absl::StrCat("a", input);
  }
  return "?";
}

bool IsDataDependentError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         absl::StartsWith(status.message(), kDataDependent);
}

// ---- Expansion, canonical relations, solving -------------------------------

Expr Expand(Expr e, int max_terms) {
  if (!e.has_symbols() || e.is_bool()) return e;
  switch (e.kind()) {
    case ExprKind::kAdd: {
      std::vector<Expr> terms;
      for (Expr a : e.args()) terms.push_back(Expand(a, max_terms));
      return Add(terms);
    }
    case ExprKind::kMul:
    case ExprKind::kPowByNatural: {
      std::vector<Expr> factors;
      if (e.kind() == ExprKind::kMul) {
        for (Expr a : e.args()) factors.push_back(Expand(a, max_terms));
      } else {
        Expr exp = e.arg(1);
        if (exp.kind() != ExprKind::kInteger || exp.int_value() > 8 ||
            e.arg(0).kind() != ExprKind::kAdd) {
          return e;
        }
        Expr base = Expand(e.arg(0), max_terms);
        factors.assign(exp.int_value(), base);
      }
      std::vector<Expr> acc = {e.is_float() ? Float(1) : Int(1)};
      for (Expr f : factors) {
        std::vector<Expr> next;
        for (Expr a : acc) {
          for (Expr t : TermsOf(f)) next.push_back(Mul(a, t));
        }
        if (static_cast<int>(next.size()) > max_terms) return e;
        acc = std::move(next);
      }
      return Add(acc);
    }
    default:
      return e;
  }
}

namespace {

// A relation 0 OP p + c as (p, c): the difference of its sides, expanded.
struct Linear {
  Expr p;     // no constant term (Int(0) when none)
  int64_t c;  // the constant term
};

std::optional<Linear> Difference(Expr lhs, Expr rhs) {
  Expr d = Expand(Sub(rhs, lhs));
  if (d.kind() == ExprKind::kInteger) return Linear{Int(0), d.int_value()};
  if (d.kind() == ExprKind::kIntInfinity) return std::nullopt;
  std::vector<Expr> terms = TermsOf(d);
  int64_t c = 0;
  if (terms[0].kind() == ExprKind::kInteger) {
    c = terms[0].int_value();
    terms.erase(terms.begin());
  }
  for (Expr t : terms) {
    if (t.is_number()) return std::nullopt;  // int_oo terms
  }
  return Linear{Add(terms), c};
}

int64_t CeilDiv64(int64_t a, int64_t b) { return -PyFloorDiv(-a, b); }

}  // namespace

Expr CanonicalRelation(Expr rel) {
  ExprKind k = rel.kind();
  if (k != ExprKind::kEq && k != ExprKind::kNe && k != ExprKind::kLt &&
      k != ExprKind::kLe) {
    return rel;
  }
  if (!rel.arg(0).is_int()) return rel;
  std::optional<Linear> lin = Difference(rel.arg(0), rel.arg(1));
  if (!lin) return rel;
  // 0 OP p + c.
  Expr p = lin->p;
  int64_t c = lin->c;
  if (!p.has_symbols()) return rel;  // decided by the constructors already
  std::vector<Expr> terms = TermsOf(p);
  int64_t g = 0;
  for (Expr t : terms) {
    int64_t coeff = SplitCoefficient(t).first;
    g = std::gcd(g, coeff < 0 ? -coeff : coeff);
  }
  bool negate = SplitCoefficient(terms[0]).first < 0;
  auto scaled = [&](int64_t factor) {
    std::vector<Expr> out;
    for (Expr t : terms) {
      auto [coeff, rest] = SplitCoefficient(t);
      out.push_back(Mul(Int(coeff / factor), rest));
    }
    return Add(out);
  };
  Expr q = scaled(negate ? -g : g);  // leading coefficient positive, coprime
  switch (k) {
    case ExprKind::kEq:
    case ExprKind::kNe: {
      // p == -c  <=>  q == -c / g (or never).
      bool is_eq = k == ExprKind::kEq;
      if ((-c) % g != 0) return Bool(!is_eq);
      int64_t v = (-c) / (negate ? -g : g);
      return is_eq ? Eq(q, Int(v)) : Ne(q, Int(v));
    }
    case ExprKind::kLt:
    case ExprKind::kLe: {
      // 0 < p + c  <=>  1 - c <= p;  0 <= p + c  <=>  -c <= p.
      int64_t lo = (k == ExprKind::kLt ? 1 : 0) - c;
      // lo <= g*q (positive) or lo <= -g*q, i.e. q <= -lo/g (negated).
      if (!negate) return Le(Int(CeilDiv64(lo, g)), q);
      return Le(q, Int(PyFloorDiv(-lo, g)));
    }
    default:
      return rel;
  }
}

namespace {

enum class Rel { kEq, kLt, kLe, kGt, kGe };

struct Solved {
  Rel op;
  Expr rhs;
};

Expr BuildRel(Rel op, Expr lhs, Expr rhs) {
  switch (op) {
    case Rel::kEq:
      return Eq(lhs, rhs);
    case Rel::kLt:
      return Lt(lhs, rhs);
    case Rel::kLe:
      return Le(lhs, rhs);
    case Rel::kGt:
      return Gt(lhs, rhs);
    case Rel::kGe:
      return Ge(lhs, rhs);
  }
  return Bool(true);
}

Rel Flip(Rel op) {
  switch (op) {
    case Rel::kLt:
      return Rel::kGt;
    case Rel::kLe:
      return Rel::kGe;
    case Rel::kGt:
      return Rel::kLt;
    case Rel::kGe:
      return Rel::kLe;
    default:
      return op;
  }
}

// `rel` as a conjunction of relations `symbol OP rhs`.
std::optional<std::vector<Solved>> SolveFor(Expr rel, Expr x, int depth = 0) {
  if (depth > 4 || !rel.arg(0).is_int()) return std::nullopt;
  Rel op;
  switch (rel.kind()) {
    case ExprKind::kEq:
      op = Rel::kEq;
      break;
    case ExprKind::kLt:
      op = Rel::kLt;
      break;
    case ExprKind::kLe:
      op = Rel::kLe;
      break;
    default:
      return std::nullopt;
  }
  // lhs OP rhs  <=>  0 OP' d with d = rhs - lhs: Lt -> d > 0, Le -> d >= 0.
  Expr d = Expand(Sub(rel.arg(1), rel.arg(0)));
  std::vector<Expr> with_x, rest;
  for (Expr t : TermsOf(d)) (Contains(t, x) ? with_x : rest).push_back(t);
  if (with_x.size() != 1) return std::nullopt;
  auto [coeff, core] = SplitCoefficient(with_x[0]);
  if (coeff != 1 && coeff != -1) return std::nullopt;
  Expr others = rest.empty() ? Int(0) : Add(rest);
  // 0 OP coeff*core + others  <=>  core OP'' v.
  //   coeff = +1: -others OP core  <=>  core FLIP(OP) -others
  //   coeff = -1: core OP others
  Rel core_op = coeff == 1 ? Flip(op) : op;
  Expr v = coeff == 1 ? Neg(others) : others;
  // Flip(kLt) is kGt: "0 < core - v" means core > v, as intended.
  if (core == x) return std::vector<Solved>{{core_op, v}};
  if (core.kind() != ExprKind::kFloorDiv || !core.arg(1).is_positive()) {
    return std::nullopt;
  }
  // FloorDiv(y, k) OP v, k > 0, in terms of y.
  Expr y = core.arg(0), kdiv = core.arg(1);
  Expr lo = Mul(v, kdiv), hi = Mul(Add(v, Int(1)), kdiv);
  std::vector<Expr> on_y;
  switch (core_op) {
    case Rel::kGt:
      on_y = {Le(hi, y)};
      break;
    case Rel::kGe:
      on_y = {Le(lo, y)};
      break;
    case Rel::kLt:
      on_y = {Lt(y, lo)};
      break;
    case Rel::kLe:
      on_y = {Lt(y, hi)};
      break;
    case Rel::kEq:
      on_y = {Le(lo, y), Lt(y, hi)};
      break;
  }
  std::vector<Solved> out;
  for (Expr r : on_y) {
    if (r.kind() == ExprKind::kBoolean) {
      if (r.is_false()) return std::nullopt;
      continue;
    }
    std::optional<std::vector<Solved>> s = SolveFor(r, x, depth + 1);
    if (!s) return std::nullopt;
    out.insert(out.end(), s->begin(), s->end());
  }
  return out;
}

}  // namespace

std::optional<Expr> TrySolve(Expr rel, Expr symbol) {
  std::optional<std::vector<Solved>> solved = SolveFor(rel, symbol);
  if (!solved) return std::nullopt;
  std::vector<Expr> parts;
  for (const Solved& s : *solved)
    parts.push_back(BuildRel(s.op, symbol, s.rhs));
  return And(parts);
}

// ---- Congruences ------------------------------------------------------------

namespace {

// x with a*x == 1 (mod m), for coprime a and m >= 1.
__int128 Inverse(__int128 a, __int128 m) {
  __int128 g = m, x = 0, x1 = 1, r = ((a % m) + m) % m;
  while (r != 0) {
    __int128 q = g / r;
    std::tie(g, r) = std::make_pair(r, g - q * r);
    std::tie(x, x1) = std::make_pair(x1, x - q * x1);
  }
  return ((x % m) + m) % m;
}

__int128 Mod128(__int128 a, __int128 m) { return ((a % m) + m) % m; }

}  // namespace

absl::StatusOr<Expr> ReduceCongruences(
    Expr symbol, absl::Span<const Congruence> congruences) {
  constexpr __int128 kLimit = static_cast<__int128>(1) << 62;
  __int128 r0 = 0, m0 = 1;  // symbol == r0 (mod m0)
  for (const Congruence& c : congruences) {
    if (c.denominator < 1 || c.modulus < 1) {
      return absl::InvalidArgumentError(
          "a congruence needs a positive denominator and modulus");
    }
    std::optional<Linear> lin = Difference(Int(0), c.numerator);
    if (!lin) return absl::InvalidArgumentError("a congruence is not linear");
    __int128 a = 0;
    for (Expr t : TermsOf(lin->p)) {
      if (t.is_constant(0)) continue;
      auto [coeff, core] = SplitCoefficient(t);
      if (core != symbol) {
        return absl::InvalidArgumentError(
            absl::StrCat("congruence term ", ToString(t),
                         " is not a multiple of ", symbol.name()));
      }
      a += coeff;
    }
    // (a*s + b) / d == 0 (mod m)  <=>  a*s == -b (mod m*d).
    __int128 m = static_cast<__int128>(c.modulus) * c.denominator;
    if (m > kLimit)
      return absl::OutOfRangeError("congruence modulus too large");
    __int128 g =
        std::gcd(static_cast<int64_t>(Mod128(a, m)), static_cast<int64_t>(m));
    if (g == 0) g = m;
    __int128 rhs = Mod128(-static_cast<__int128>(lin->c), m);
    if (rhs % g != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "congruence ", ToString(c.numerator), " has no solution"));
    }
    __int128 mg = m / g;
    __int128 r = mg == 1 ? 0 : Mod128((rhs / g) * Inverse(a / g, mg), mg);
    // Combine symbol == r0 (mod m0) with symbol == r (mod mg).
    __int128 h = std::gcd(static_cast<int64_t>(m0), static_cast<int64_t>(mg));
    if ((r - r0) % h != 0) {
      return absl::InvalidArgumentError("congruences contradict each other");
    }
    __int128 lcm = m0 / h * mg;
    if (lcm > kLimit)
      return absl::OutOfRangeError("congruence modulus too large");
    __int128 step =
        mg / h == 1 ? 0
                    : Mod128(((r - r0) / h) * Inverse(m0 / h, mg / h), mg / h);
    r0 = Mod128(r0 + m0 * step, lcm);
    m0 = lcm;
  }
  if (m0 == 1) return Bool(true);
  Expr shifted = Add(symbol, Int(static_cast<int64_t>(Mod128(-r0, m0))));
  ASSIGN_OR_RETURN(Expr mod,
                   symbol.is_nonnegative()
                       ? Mod(shifted, Int(static_cast<int64_t>(m0)))
                       : PythonMod(shifted, Int(static_cast<int64_t>(m0))));
  return Eq(mod, Int(0));
}

// ---- ShapeEnv ---------------------------------------------------------------

ShapeEnv::ShapeEnv(ShapeEnvSettings settings) : settings_(settings) {}

Expr ShapeEnv::NewSymbol(absl::string_view prefix, SymbolType type,
                         SymbolAssumptions assumptions, SymbolInfo info) {
  int& counter = prefix == "u"     ? next_unbacked_
                 : prefix == "zf"  ? next_float_
                 : prefix == "zuf" ? next_unbacked_float_
                                   : next_size_;
  Expr s = Symbol(absl::StrCat(prefix, counter), type, assumptions);
  if (prefix == "u") info.unbacked_index = counter;
  ++counter;
  if (!info.unbacked) backed_.push_back(s);
  symbols_[s] = std::move(info);
  Bump();
  return s;
}

Expr ShapeEnv::CreateSymbol(int64_t hint, const Source& source,
                            DimDynamic dynamic) {
  if (dynamic == DimDynamic::kSizeLikeUnbacked) {
    Expr u = CreateUnbackedSizeLike();
    symbols_[u].sources.push_back(source);
    return u;
  }
  if (dynamic == DimDynamic::kStatic || hint < 0 ||
      (settings_.specialize_zero_one && (hint == 0 || hint == 1))) {
    return Int(hint);
  }
  bool duck = dynamic == DimDynamic::kDuck && settings_.duck_shape;
  if (duck) {
    auto it = duck_.find(hint);
    if (it != duck_.end()) {
      symbols_[it->second].sources.push_back(source);
      return it->second;
    }
  }
  SymbolInfo info;
  info.hint = Value::Int(hint);
  info.size_like = true;
  info.range = ValueRange::Int(settings_.specialize_zero_one ? 2 : 0, kIntInf);
  info.sources.push_back(source);
  SymbolAssumptions assumptions;
  if (settings_.specialize_zero_one) {
    assumptions.positive = true;
  } else {
    assumptions.nonnegative = true;
  }
  Expr s = NewSymbol("s", SymbolType::kInt, assumptions, std::move(info));
  if (duck) duck_[hint] = s;
  return s;
}

absl::Status ShapeEnv::DeclareSymbol(Expr symbol, std::optional<Value> hint,
                                     const Source& source) {
  if (!symbol.is_symbol()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeclareSymbol of ", ToString(symbol), ", which is not a symbol"));
  }
  if (symbols_.contains(symbol)) {
    return absl::AlreadyExistsError(
        absl::StrCat(symbol.name(), " is already declared"));
  }
  SymbolInfo info;
  info.sources.push_back(source);
  info.range = DefaultRange(symbol);
  if (hint) {
    if ((hint->type == ExprType::kFloat) != symbol.is_float()) {
      return absl::InvalidArgumentError(
          absl::StrCat("hint ", symbolic::ToString(*hint),
                       " does not match the type of ", symbol.name()));
    }
    info.hint = *hint;
    bool specialize = false;
    if (symbol.is_positive()) {
      info.size_like = true;
      IntBound lo = settings_.specialize_zero_one ? 2 : 1;
      info.range = ValueRange::Int(lo, kIntInf);
      // As PyTorch: an example size of 0 or 1 makes that size static.
      specialize = settings_.specialize_zero_one && !symbol.is_float() &&
                   (hint->i == 0 || hint->i == 1);
      if (specialize) info.range = ValueRange::Int(hint->i, hint->i);
    }
    if (!symbol.is_float() &&
        !info.range.Contains(ValueRange::Int(hint->i, hint->i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("hint ", hint->i, " of ", symbol.name(),
                       " is outside its range ", info.range.ToString()));
    }
    backed_.push_back(symbol);
    if (specialize) {
      symbols_[symbol] = std::move(info);
      Bump();
      SetReplacement(symbol, Int(hint->i));
      return absl::OkStatus();
    }
  } else {
    info.unbacked = true;
    info.unbacked_index = next_unbacked_++;
  }
  symbols_[symbol] = std::move(info);
  Bump();
  return absl::OkStatus();
}

Expr ShapeEnv::CreateScalarSymbol(int64_t hint, const Source& source) {
  SymbolInfo info;
  info.hint = Value::Int(hint);
  info.range = ValueRange::IntUnknown();
  info.sources.push_back(source);
  return NewSymbol("s", SymbolType::kInt, {}, std::move(info));
}

Expr ShapeEnv::CreateFloatSymbol(double hint, const Source& source) {
  SymbolInfo info;
  info.hint = Value::Float(hint);
  info.range = ValueRange::FloatUnknown();
  info.sources.push_back(source);
  return NewSymbol("zf", SymbolType::kFloat, {}, std::move(info));
}

Expr ShapeEnv::CreateUnbacked() {
  SymbolInfo info;
  info.unbacked = true;
  info.range = ValueRange::IntUnknown();
  return NewSymbol("u", SymbolType::kInt, {}, std::move(info));
}

Expr ShapeEnv::CreateUnbackedFloat() {
  SymbolInfo info;
  info.unbacked = true;
  info.range = ValueRange::FloatUnknown();
  return NewSymbol("zuf", SymbolType::kFloat, {}, std::move(info));
}

Expr ShapeEnv::CreateUnbackedSizeLike() {
  SymbolInfo info;
  info.unbacked = true;
  info.size_like = true;
  info.range = ValueRange::Int(0, kIntInf);
  return NewSymbol("u", SymbolType::kInt, {}, std::move(info));
}

void ShapeEnv::CreateSymbolicSizesStrides(absl::Span<const int64_t> sizes,
                                          absl::Span<const int64_t> strides,
                                          int input,
                                          absl::Span<const DimDynamic> dynamic,
                                          std::vector<Expr>* sizes_out,
                                          std::vector<Expr>* strides_out) {
  const size_t n = sizes.size();
  sizes_out->clear();
  bool all_static = true;
  for (size_t i = 0; i < n; ++i) {
    DimDynamic dim = i < dynamic.size() ? dynamic[i] : DimDynamic::kDuck;
    sizes_out->push_back(CreateSymbol(sizes[i], Source::Size(input, i), dim));
    all_static &= sizes_out->back().kind() == ExprKind::kInteger;
  }
  strides_out->assign(n, Expr());
  if (all_static) {
    for (size_t i = 0; i < n; ++i) (*strides_out)[i] = Int(strides[i]);
    return;
  }
  // Fastest-moving dimensions first; a stride equal to size*stride of an
  // already processed dimension is that product.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return strides[a] != strides[b] ? strides[a] < strides[b]
                                    : sizes[a] < sizes[b];
  });
  absl::flat_hash_map<int64_t, Expr> candidates;
  for (size_t i : order) {
    auto it = candidates.find(strides[i]);
    Expr stride;
    if (it != candidates.end()) {
      stride = it->second;
    } else if (strides[i] == 0 || strides[i] == 1) {
      stride = Int(strides[i]);
    } else {
      stride =
          CreateSymbol(strides[i], Source::Stride(input, i), DimDynamic::kDuck);
    }
    (*strides_out)[i] = stride;
    candidates.emplace(strides[i] * sizes[i], Mul(stride, (*sizes_out)[i]));
  }
}

std::optional<Value> ShapeEnv::HintOf(Expr symbol) const {
  auto it = symbols_.find(symbol);
  if (it == symbols_.end()) return std::nullopt;
  return it->second.hint;
}

bool ShapeEnv::IsUnbacked(Expr symbol) const {
  auto it = symbols_.find(symbol);
  return it != symbols_.end() && it->second.unbacked;
}

bool ShapeEnv::IsSizeLike(Expr symbol) const {
  auto it = symbols_.find(symbol);
  return it != symbols_.end() && it->second.size_like;
}

ValueRange ShapeEnv::RangeOf(Expr symbol) const {
  auto it = symbols_.find(symbol);
  if (it == symbols_.end()) return DefaultRange(symbol);
  return it->second.range.Intersect(DefaultRange(symbol));
}

absl::Span<const Source> ShapeEnv::SourcesOf(Expr symbol) const {
  auto it = symbols_.find(symbol);
  if (it == symbols_.end()) return {};
  return it->second.sources;
}

void ShapeEnv::SetUnbackedHint(Expr symbol, int64_t value) {
  auto it = symbols_.find(symbol);
  LATHE_CHECK(it != symbols_.end() && it->second.unbacked)
      << "SetUnbackedHint on a symbol that is not unbacked";
  it->second.hint = Value::Int(value);
  Bump();
}

absl::Status ShapeEnv::ConstrainRange(Expr symbol, IntBound lo, IntBound hi) {
  auto it = symbols_.find(symbol);
  if (it == symbols_.end()) {
    return absl::NotFoundError(
        "ConstrainRange of a symbol this ShapeEnv "
        "did not create");
  }
  ValueRange r = it->second.range.Intersect(ValueRange::Int(lo, hi));
  const std::optional<Value>& hint = it->second.hint;
  if (!it->second.unbacked && hint && hint->type == ExprType::kInt &&
      !ValueRange::Int(lo, hi).Contains(ValueRange::Int(hint->i, hint->i))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hint ", hint->i, " of ", symbol.name(), " is outside the range ",
        ValueRange::Int(lo, hi).ToString()));
  }
  if (r.IsEmpty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("range of ", symbol.name(),
                     " would be empty: ", it->second.range.ToString(), " and ",
                     ValueRange::Int(lo, hi).ToString()));
  }
  it->second.range = r;
  Bump();
  if (std::optional<Expr> v = r.Singleton()) SetReplacement(symbol, *v);
  return absl::OkStatus();
}

std::optional<Expr> ShapeEnv::ReplacementOf(Expr symbol) const {
  auto it = replacements_.find(symbol);
  if (it == replacements_.end()) return std::nullopt;
  return it->second;
}

// ---- Rewriting ----

Expr ShapeEnv::Replace(Expr e) {
  // Targets are kept fully resolved (see SetReplacement), so one pass does.
  if (replacements_.empty() || !e.has_symbols()) return e;
  return OkOr(Substitute(e, replacements_), e);
}

bool ShapeEnv::KnownDivisible(Expr a, Expr b) {
  if (divisible_.empty()) return false;
  return divisible_.contains({NormalizeDivisions(a), NormalizeDivisions(b)});
}

RangeLookup ShapeEnv::Ranges(bool size_oblivious) {
  return [this, size_oblivious](Expr s) -> std::optional<ValueRange> {
    auto it = symbols_.find(s);
    if (it == symbols_.end()) return std::nullopt;
    ValueRange r = it->second.range;
    if (size_oblivious && it->second.size_like) {
      r = r.Intersect(ValueRange::Int(2, (static_cast<IntBound>(1) << 48) - 1));
    }
    return r;
  };
}

Expr ShapeEnv::RangeAndDivisibilitySimplify(Expr e, bool size_oblivious,
                                            bool use_divisibility) {
  SimplifyContext ctx;
  ctx.ranges = Ranges(size_oblivious);
  if (use_divisibility) {
    ctx.divisible = [this](Expr a, Expr b) { return KnownDivisible(a, b); };
  }
  ctx.decide_relations = false;
  return OkOr(symbolic::Simplify(Replace(e), ctx), e);
}

Expr ShapeEnv::Simplify(Expr e) {
  if (cache_version_ != version_) {
    simplify_cache_.clear();
    static_cache_.clear();
    cache_version_ = version_;
  }
  auto it = simplify_cache_.find(e);
  if (it != simplify_cache_.end()) return it->second;
  Expr s = RangeAndDivisibilitySimplify(e, false);
  simplify_cache_[e] = s;
  return s;
}

std::optional<Value> ShapeEnv::Hint(Expr e) {
  Expr r = Replace(e);
  Assignment values;
  for (Expr s : FreeSymbols(r)) {
    std::optional<Value> h = HintOf(s);
    if (!h) return std::nullopt;
    values[s] = *h;
  }
  absl::StatusOr<Value> v = Evaluate(r, values);
  if (!v.ok()) return std::nullopt;
  return *v;
}

bool ShapeEnv::HasUnhinted(Expr e) {
  for (Expr s : FreeSymbols(Replace(e))) {
    if (!HintOf(s)) return true;
  }
  return false;
}

Expr ShapeEnv::LatestUnbacked(Expr e) {
  Expr latest;
  int64_t best = -1;
  for (Expr s : FreeSymbols(e)) {
    auto it = symbols_.find(s);
    if (it != symbols_.end() && it->second.unbacked &&
        it->second.unbacked_index > best) {
      best = it->second.unbacked_index;
      latest = s;
    }
  }
  return latest;
}

// ---- Static evaluation ----

namespace {

// Relations inside `e` (through And/Or/Not) replaced by canonical forms.
Expr CanonicalizeRelations(Expr e) {
  switch (e.kind()) {
    case ExprKind::kEq:
    case ExprKind::kNe:
    case ExprKind::kLt:
    case ExprKind::kLe:
      return CanonicalRelation(e);
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNot: {
      std::vector<Expr> args;
      for (Expr a : e.args()) args.push_back(CanonicalizeRelations(a));
      return OkOr(Rebuild(e, args), e);
    }
    default:
      return e;
  }
}

// (q, lo, hi): what a canonical relation says about polynomial q, as
// "q in [lo, hi]" when true.
struct PolyFact {
  Expr q;
  IntBound lo, hi;
};

std::optional<PolyFact> AsPolyFact(Expr canonical) {
  if (canonical.kind() == ExprKind::kLe) {
    Expr a = canonical.arg(0), b = canonical.arg(1);
    if (a.kind() == ExprKind::kInteger)
      return PolyFact{b, a.int_value(), kIntInf};
    if (b.kind() == ExprKind::kInteger)
      return PolyFact{a, -kIntInf, b.int_value()};
  }
  if (canonical.kind() == ExprKind::kEq &&
      canonical.arg(1).kind() == ExprKind::kInteger) {
    int64_t v = canonical.arg(1).int_value();
    return PolyFact{canonical.arg(0), v, v};
  }
  return std::nullopt;
}

}  // namespace

std::optional<bool> ShapeEnv::DecideByShifting(Expr rel, bool size_oblivious) {
  if (!rel.arg(0).is_int()) return std::nullopt;
  std::optional<Linear> lin = Difference(rel.arg(0), rel.arg(1));
  if (!lin) return std::nullopt;
  // Each symbol with a finite lower bound L becomes L + x', x' >= 0.
  RangeLookup base = Ranges(size_oblivious);
  absl::flat_hash_map<Expr, Expr> shift;
  absl::flat_hash_map<Expr, ValueRange> shifted_ranges;
  Expr d = Add(lin->p, Int(lin->c));
  for (Expr s : FreeSymbols(d)) {
    ValueRange r = base(s).value_or(DefaultRange(s)).Intersect(DefaultRange(s));
    if (r.type() != ExprType::kInt || r.int_lo() == -kIntInf) continue;
    Expr fresh = Symbol(absl::StrCat("lathe_shift_", s.name()),
                        SymbolType::kInt, {.nonnegative = true});
    shift[s] = Add(Int(static_cast<int64_t>(r.int_lo())), fresh);
    IntBound width = r.int_hi() == kIntInf ? kIntInf : r.int_hi() - r.int_lo();
    shifted_ranges[fresh] = ValueRange::Int(0, width);
  }
  if (shift.empty()) return std::nullopt;
  Expr moved = Expand(OkOr(Substitute(d, shift), d));
  ValueRange b = Bound(moved, [&](Expr s) -> std::optional<ValueRange> {
    auto it = shifted_ranges.find(s);
    if (it != shifted_ranges.end()) return it->second;
    return base(s);
  });
  if (b.type() != ExprType::kInt) return std::nullopt;
  switch (rel.kind()) {
    case ExprKind::kLt:  // 0 < d
      if (b.int_lo() > 0) return true;
      if (b.int_hi() <= 0) return false;
      break;
    case ExprKind::kLe:  // 0 <= d
      if (b.int_lo() >= 0) return true;
      if (b.int_hi() < 0) return false;
      break;
    case ExprKind::kEq:
    case ExprKind::kNe: {
      bool never_zero = b.int_lo() > 0 || b.int_hi() < 0;
      if (never_zero) return rel.kind() == ExprKind::kNe;
      break;
    }
    default:
      break;
  }
  return std::nullopt;
}

std::optional<Expr> ShapeEnv::StaticUncached(Expr e, bool size_oblivious,
                                             bool use_axioms) {
  Expr s = RangeAndDivisibilitySimplify(e, size_oblivious, use_axioms);
  if (s.is_number()) return s;
  if (s.is_bool()) {
    Expr c = CanonicalizeRelations(s);
    if (c.is_number()) return c;
    if (use_axioms && !axioms_.empty()) {
      Expr sub = OkOr(Substitute(c, axioms_), c);
      if (sub.is_number()) return sub;
      c = sub;
    }
    // Bounds learned on polynomials: q in [lo, hi].
    if (std::optional<PolyFact> f = use_axioms ? AsPolyFact(c) : std::nullopt) {
      auto it = poly_bounds_.find(f->q);
      if (it != poly_bounds_.end()) {
        ValueRange known = it->second;
        if (known.int_lo() >= f->lo && known.int_hi() <= f->hi) {
          return Bool(true);
        }
        if (known.int_hi() < f->lo || known.int_lo() > f->hi)
          return Bool(false);
      }
    }
    if (use_axioms &&
        (c.kind() == ExprKind::kNe || c.kind() == ExprKind::kNot)) {
      Expr eq = c.kind() == ExprKind::kNe ? Eq(c.arg(0), c.arg(1)) : c.arg(0);
      if (std::optional<PolyFact> f = AsPolyFact(eq)) {
        auto it = poly_bounds_.find(f->q);
        if (it != poly_bounds_.end() &&
            (it->second.int_hi() < f->lo || it->second.int_lo() > f->hi)) {
          return Bool(true);
        }
      }
    }
    s = c;
  }
  if (std::optional<Expr> v = Bound(s, Ranges(size_oblivious)).Singleton()) {
    return *v;
  }
  ExprKind k = s.kind();
  if (k == ExprKind::kLt || k == ExprKind::kLe || k == ExprKind::kEq ||
      k == ExprKind::kNe) {
    if (std::optional<bool> v = DecideByShifting(s, size_oblivious)) {
      return Bool(*v);
    }
  }
  return std::nullopt;
}

std::optional<Expr> ShapeEnv::MaybeEvaluateStatic(Expr e, bool size_oblivious) {
  if (e.is_number()) return e;
  if (cache_version_ != version_) {
    simplify_cache_.clear();
    static_cache_.clear();
    cache_version_ = version_;
  }
  auto key = std::make_pair(e, size_oblivious);
  auto it = static_cache_.find(key);
  if (it != static_cache_.end()) return it->second;
  std::optional<Expr> r = StaticUncached(e, size_oblivious);
  static_cache_[key] = r;
  return r;
}

std::optional<Expr> ShapeEnv::MaybeEvaluateStaticWithoutAxioms(Expr e) {
  if (e.is_number()) return e;
  return StaticUncached(e, /*size_oblivious=*/false, /*use_axioms=*/false);
}

bool ShapeEnv::StaticallyKnownTrue(Expr cond) {
  std::optional<Expr> v = MaybeEvaluateStatic(cond);
  return v && v->is_true();
}

// ---- Guarding ----

std::string ShapeEnv::DataDependentMessage(Expr e, Expr simplified) {
  std::string unhinted;
  for (Expr s : FreeSymbols(Replace(e))) {
    if (!HintOf(s))
      absl::StrAppend(&unhinted, unhinted.empty() ? "" : ", ", s.name());
  }
  return absl::StrCat(kDataDependent, ToString(e),
                      " (simplified: ", ToString(simplified), "; no value for ",
                      unhinted, ")");
}

absl::StatusOr<Expr> ShapeEnv::EvaluateImpl(Expr e,
                                            std::optional<bool> fallback,
                                            bool size_oblivious) {
  if (std::optional<Expr> v = MaybeEvaluateStatic(e, size_oblivious)) return *v;
  std::optional<Value> hint = Hint(e);
  bool uses_unbacked_hint = false;
  for (Expr s : FreeSymbols(Replace(e))) uses_unbacked_hint |= IsUnbacked(s);
  if (!hint) {
    if (fallback) return Bool(*fallback);
    return absl::FailedPreconditionError(DataDependentMessage(e, Simplify(e)));
  }
  if (fallback && uses_unbacked_hint) return Bool(*fallback);
  Expr value;
  switch (hint->type) {
    case ExprType::kBool:
      value = Bool(hint->b);
      break;
    case ExprType::kInt:
      value = hint->inf != 0 ? IntInfinity(hint->inf) : Int(hint->i);
      break;
    case ExprType::kFloat:
      value = Float(hint->f);
      break;
  }
  Expr guard = e.is_bool() ? (hint->b ? e : Not(e)) : Eq(e, value);
  if (uses_unbacked_hint) {
    // A last-resort hint of an unbacked symbol: checked at run time instead.
    Expr key = LatestUnbacked(Replace(e));
    deferred_[key].push_back(
        {guard, "from a hint given to an unbacked symbol"});
    LearnFrom(guard);
    AddAxioms(guard);
    Bump();
  } else {
    RecordGuard(guard);
  }
  return value;
}

absl::StatusOr<Expr> ShapeEnv::EvaluateExpr(Expr e) {
  return EvaluateImpl(e, std::nullopt, false);
}

absl::StatusOr<bool> ShapeEnv::EvaluateBool(Expr cond) {
  if (!cond.is_bool()) {
    return absl::InvalidArgumentError(
        absl::StrCat("EvaluateBool of a non-boolean: ", ToString(cond)));
  }
  ASSIGN_OR_RETURN(Expr v, EvaluateExpr(cond));
  return v.is_true();
}

absl::StatusOr<int64_t> ShapeEnv::GuardInt(Expr e) {
  if (!e.is_int()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GuardInt of a non-integer: ", ToString(e)));
  }
  ASSIGN_OR_RETURN(Expr v, EvaluateExpr(e));
  if (v.kind() != ExprKind::kInteger) {
    return absl::OutOfRangeError(
        absl::StrCat(ToString(e), " is ", ToString(v)));
  }
  return v.int_value();
}

absl::StatusOr<double> ShapeEnv::GuardFloat(Expr e) {
  if (e.is_bool()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GuardFloat of a boolean: ", ToString(e)));
  }
  ASSIGN_OR_RETURN(Expr v, EvaluateExpr(e));
  if (v.kind() == ExprKind::kInteger) return static_cast<double>(v.int_value());
  if (v.kind() == ExprKind::kFloat) return v.float_value();
  return absl::OutOfRangeError(absl::StrCat(ToString(e), " is ", ToString(v)));
}

bool ShapeEnv::GuardOrFalse(Expr cond) {
  absl::StatusOr<Expr> v = EvaluateImpl(cond, false, false);
  return v.ok() && v->is_true();
}

bool ShapeEnv::GuardOrTrue(Expr cond) {
  absl::StatusOr<Expr> v = EvaluateImpl(cond, true, false);
  return !v.ok() || v->is_true();
}

absl::StatusOr<bool> ShapeEnv::GuardSizeOblivious(Expr cond) {
  ASSIGN_OR_RETURN(Expr v, EvaluateImpl(cond, std::nullopt, true));
  return v.is_true();
}

absl::Status ShapeEnv::ExpectTrue(Expr cond, absl::string_view message) {
  if (!cond.is_bool()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExpectTrue of a non-boolean: ", ToString(cond)));
  }
  if (std::optional<Expr> v = MaybeEvaluateStatic(cond)) {
    if (v->is_true()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", ToString(cond), " to hold, but it is always false"));
  }
  if (!HasUnhinted(cond) &&
      !settings_.prefer_deferred_runtime_asserts_over_guards) {
    ASSIGN_OR_RETURN(bool holds, EvaluateBool(cond));
    if (holds) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", ToString(cond),
                     " to hold, but it is false for the example inputs"));
  }
  Expr stored = Simplify(cond);
  Expr key = LatestUnbacked(Replace(cond));
  deferred_[key].push_back({stored, std::string(message)});
  LearnFrom(cond);
  AddAxioms(cond);
  Bump();
  return absl::OkStatus();
}

void ShapeEnv::RecordGuard(Expr guard) {
  if (guard.is_number()) return;
  if (!guard_set_.insert(CanonicalizeRelations(guard)).second) return;
  guards_.push_back(guard);
  LearnFrom(guard);
  AddAxioms(guard);
  Bump();
  int limit = settings_.symbol_guard_limit_before_specialize;
  for (Expr s : FreeSymbols(guard)) {
    auto it = symbols_.find(s);
    if (it == symbols_.end() || it->second.unbacked) continue;
    if (++it->second.guard_count > limit && limit >= 0 &&
        !replacements_.contains(s) && it->second.hint &&
        it->second.hint->type == ExprType::kInt) {
      Expr value = Int(it->second.hint->i);
      Expr spec = Eq(s, value);
      if (guard_set_.insert(CanonicalizeRelations(spec)).second) {
        guards_.push_back(spec);
      }
      SetReplacement(s, value);
      AddAxioms(spec);
    }
  }
}

void ShapeEnv::AddAxioms(Expr fact) {
  if (fact.is_number()) return;
  if (fact.kind() == ExprKind::kAnd) {
    for (Expr a : fact.args()) AddAxioms(a);
    return;
  }
  auto add = [&](Expr e, bool value) {
    Expr c = CanonicalizeRelations(e);
    if (c.is_number()) return;
    axioms_[c] = Bool(value);
    if (!value) return;
    if (std::optional<PolyFact> f = AsPolyFact(c)) {
      ValueRange r = ValueRange::Int(f->lo, f->hi);
      auto it = poly_bounds_.find(f->q);
      ValueRange merged =
          it == poly_bounds_.end() ? r : it->second.Intersect(r);
      if (!merged.IsEmpty()) poly_bounds_[f->q] = merged;
    }
  };
  add(fact, true);
  add(Not(fact), false);
  switch (fact.kind()) {
    case ExprKind::kEq:
      add(Le(fact.arg(0), fact.arg(1)), true);
      add(Le(fact.arg(1), fact.arg(0)), true);
      break;
    case ExprKind::kLt:
      add(Le(fact.arg(0), fact.arg(1)), true);
      add(Ne(fact.arg(0), fact.arg(1)), true);
      break;
    default:
      break;
  }
}

void ShapeEnv::LearnFrom(Expr fact) {
  fact = Simplify(fact);
  if (fact.is_number()) return;
  if (fact.kind() == ExprKind::kAnd) {
    for (Expr a : fact.args()) LearnFrom(a);
    return;
  }
  ExprKind k = fact.kind();
  if (k != ExprKind::kEq && k != ExprKind::kLt && k != ExprKind::kLe) return;
  if (!fact.arg(0).is_int()) {
    // A float equality pins the float symbol (no ranges for floats here).
    if (k == ExprKind::kEq) TryReplacement(fact);
    return;
  }
  if (FreeSymbols(fact).size() > 5) return;
  RefineRanges(fact);
  if (k == ExprKind::kEq) TryReplacement(fact);
}

void ShapeEnv::RefineRanges(Expr rel) {
  for (Expr x : FreeSymbols(rel)) {
    auto it = symbols_.find(x);
    if (it == symbols_.end() || x.is_float()) continue;
    std::optional<std::vector<Solved>> solved = SolveFor(rel, x);
    if (!solved) continue;
    ValueRange r = it->second.range;
    for (const Solved& s : *solved) {
      ValueRange b = Bound(Replace(s.rhs), Ranges(false));
      if (b.type() != ExprType::kInt) continue;
      IntBound lo = -kIntInf, hi = kIntInf;
      switch (s.op) {
        case Rel::kEq:
          lo = b.int_lo();
          hi = b.int_hi();
          break;
        case Rel::kGt:
          lo = b.int_lo() == -kIntInf ? lo : b.int_lo() + 1;
          break;
        case Rel::kGe:
          lo = b.int_lo();
          break;
        case Rel::kLt:
          hi = b.int_hi() == kIntInf ? hi : b.int_hi() - 1;
          break;
        case Rel::kLe:
          hi = b.int_hi();
          break;
      }
      if (it->second.size_like && hi < 2) hi = 2;  // never below 2
      r = r.Intersect(ValueRange::Int(lo, hi));
    }
    if (r.IsEmpty() || r == it->second.range) continue;
    it->second.range = r;
    Bump();
    if (std::optional<Expr> v = r.Singleton()) SetReplacement(x, *v);
  }
}

void ShapeEnv::TryReplacement(Expr eq) {
  Expr a = eq.arg(0), b = eq.arg(1);
  // Eq(Mod(p, q), 0): q divides p.
  for (auto [lhs, rhs] : {std::make_pair(a, b), std::make_pair(b, a)}) {
    if ((lhs.kind() == ExprKind::kMod || lhs.kind() == ExprKind::kPythonMod) &&
        rhs.is_constant(0)) {
      Expr p = lhs.arg(0), q = lhs.arg(1);
      // Mod(c*u0, q) == 0 for an unbacked u0 and constant q: u0 is a
      // multiple of q / gcd(q, c), so u0 := (q / gcd(q, c)) * u1, fresh u1.
      auto [c, core] = SplitCoefficient(p);
      if (core.is_symbol() && IsUnbacked(core) &&
          q.kind() == ExprKind::kInteger && q.int_value() > 0 &&
          !replacements_.contains(core)) {
        int64_t step = q.int_value() / std::gcd(q.int_value(), c < 0 ? -c : c);
        if (step > 1) {
          Expr fresh =
              IsSizeLike(core) ? CreateUnbackedSizeLike() : CreateUnbacked();
          if (SetReplacement(core, Mul(Int(step), fresh))) return;
        }
      }
      divisible_.insert({NormalizeDivisions(p), NormalizeDivisions(q)});
      Bump();
      return;
    }
  }
  if (ContainsKind(eq, ExprKind::kMod) ||
      ContainsKind(eq, ExprKind::kPythonMod) ||
      ContainsKind(eq, ExprKind::kFloorDiv) ||
      ContainsKind(eq, ExprKind::kCleanDiv)) {
    return;
  }
  auto unbacked_index = [&](Expr s) -> int64_t {
    auto it = symbols_.find(s);
    return it != symbols_.end() && it->second.unbacked
               ? it->second.unbacked_index
               : -1;
  };
  // Whether `target` may stand for `x`: no unbacked symbol newer than x.
  auto allowed = [&](Expr x, Expr target) {
    int64_t xi = unbacked_index(x);
    for (Expr s : FreeSymbols(target)) {
      int64_t si = unbacked_index(s);
      if (si >= 0 && (xi < 0 || si > xi)) return false;
    }
    return true;
  };
  // Trivial: an unbacked or float symbol equal to an allowed expression.
  for (auto [lhs, rhs] : {std::make_pair(a, b), std::make_pair(b, a)}) {
    if (lhs.is_symbol() && (IsUnbacked(lhs) || lhs.is_float()) &&
        allowed(lhs, rhs) && SetReplacement(lhs, rhs)) {
      return;
    }
  }
  if (!eq.arg(0).is_int()) return;
  // Otherwise solve for the best symbol: backed before unbacked, larger hint
  // first, then larger name; unbacked: newest first.
  std::vector<Expr> candidates = FreeSymbols(eq);
  std::stable_sort(candidates.begin(), candidates.end(), [&](Expr x, Expr y) {
    int64_t xi = unbacked_index(x), yi = unbacked_index(y);
    if ((xi >= 0) != (yi >= 0)) return xi < 0;
    if (xi >= 0) return xi > yi;
    std::optional<Value> hx = HintOf(x), hy = HintOf(y);
    int64_t vx = hx ? hx->i : 0, vy = hy ? hy->i : 0;
    if (vx != vy) return vx > vy;
    return Compare(x, y) > 0;
  });
  for (Expr x : candidates) {
    std::optional<std::vector<Solved>> solved = SolveFor(eq, x);
    if (!solved || solved->size() != 1 || (*solved)[0].op != Rel::kEq) continue;
    Expr target = (*solved)[0].rhs;
    if (!allowed(x, target)) continue;
    if (SetReplacement(x, target)) return;
  }
}

bool ShapeEnv::SetReplacement(Expr x, Expr target) {
  target = Replace(target);
  if (target == x || Contains(target, x)) return false;
  auto it = symbols_.find(x);
  if (it == symbols_.end()) return false;
  if (x.is_float() != target.is_float()) return false;
  if (it->second.hint && !it->second.unbacked) {
    // A replacement must agree with the example values.
    std::optional<Value> h = Hint(target);
    if (h && !(*h == *it->second.hint)) return false;
  }
  if (!x.is_float()) {
    ValueRange tb = Bound(target, Ranges(false));
    ValueRange refined = it->second.range.Intersect(tb);
    if (refined.IsEmpty()) return false;
    if (!(refined == it->second.range)) {
      it->second.range = refined;
      Bump();
    }
    if (!refined.Contains(tb)) return false;  // would widen x's range
  }
  // Union-find with full path compression: every existing target that
  // mentions x now mentions x's target instead.
  for (auto& [y, t] : replacements_) {
    if (Contains(t, x)) t = OkOr(Substitute(t, {{x, target}}), t);
  }
  replacements_[x] = target;
  Bump();
  return true;
}

}  // namespace lathe::symbolic
