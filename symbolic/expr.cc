#include "symbolic/expr.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "check.h"
#include "status_macros.h"
#include "symbolic/int_math.h"

namespace lathe::symbolic {

// ---- Nodes and interning ----------------------------------------------------

namespace {

enum NodeFlags : uint8_t {
  kNonnegative = 1,
  kPositive = 2,
  kHasSymbols = 4,
};

struct SymbolData {
  std::string name;
  SymbolType type;
  SymbolAssumptions assumptions;
  std::string prefix;   // the name without its trailing digits
  int64_t suffix = -1;  // the trailing digits as a number, -1 if none
};

}  // namespace

struct ExprNode {
  ExprKind kind;
  ExprType type;
  uint8_t flags;
  UnaryFn fn;
  uint32_t num_args;
  uint64_t hash;
  union {
    int64_t i;
    double f;
  } value;
  const SymbolData* symbol;
  // For a kMul with a numeric coefficient: the product without it.
  const ExprNode* monomial;
  const Expr* args;
};

struct ExprAccess {
  static Expr Make(const ExprNode* node) { return Expr(node); }
  static const ExprNode* Node(Expr e) { return e.node_; }
};

namespace {

const ExprNode* N(Expr e) { return ExprAccess::Node(e); }
Expr E(const ExprNode* n) { return ExprAccess::Make(n); }

uint64_t Fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t Combine(uint64_t h, uint64_t v) {
  return Fmix(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

uint64_t HashString(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return Fmix(h);
}

// What identifies a node before it is interned.
struct NodeKey {
  ExprKind kind;
  ExprType type;
  UnaryFn fn;
  int64_t bits;  // value bits (int, double bits, bool, sign)
  const SymbolData* symbol;
  absl::Span<const Expr> args;
  uint64_t hash;
};

uint64_t KeyHash(ExprKind kind, ExprType type, UnaryFn fn, int64_t bits,
                 const SymbolData* symbol, absl::Span<const Expr> args) {
  uint64_t h =
      Combine(static_cast<uint64_t>(kind) * 131 +
                  static_cast<uint64_t>(type) * 7 + static_cast<uint64_t>(fn),
              static_cast<uint64_t>(bits));
  if (symbol != nullptr) {
    h = Combine(h, HashString(symbol->name));
    h = Combine(h, static_cast<uint64_t>(symbol->type) * 4 +
                       symbol->assumptions.positive * 2 +
                       symbol->assumptions.nonnegative);
  }
  for (Expr a : args) h = Combine(h, N(a)->hash);
  return h;
}

int64_t NodeBits(const ExprNode* n) { return n->value.i; }

struct NodeHash {
  using is_transparent = void;
  size_t operator()(const ExprNode* n) const { return n->hash; }
  size_t operator()(const NodeKey& k) const { return k.hash; }
};

struct NodeEq {
  using is_transparent = void;
  static bool Same(ExprKind kind, ExprType type, UnaryFn fn, int64_t bits,
                   const SymbolData* symbol, absl::Span<const Expr> args,
                   const ExprNode* n) {
    if (n->kind != kind || n->type != type || n->fn != fn ||
        NodeBits(n) != bits || n->num_args != args.size()) {
      return false;
    }
    if (symbol != n->symbol) return false;  // symbols are interned first
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] != n->args[i]) return false;
    }
    return true;
  }
  bool operator()(const ExprNode* a, const ExprNode* b) const { return a == b; }
  bool operator()(const NodeKey& k, const ExprNode* n) const {
    return Same(k.kind, k.type, k.fn, k.bits, k.symbol, k.args, n);
  }
  bool operator()(const ExprNode* n, const NodeKey& k) const {
    return (*this)(k, n);
  }
};

// Bump allocator for nodes and their argument arrays: nodes live for the
// process, so nothing is ever freed.
class Arena {
 public:
  void* Allocate(size_t bytes) {
    bytes = (bytes + 15) & ~size_t{15};
    if (bytes > remaining_) {
      size_t block = std::max(bytes, size_t{1} << 16);
      current_ = new char[block];
      remaining_ = block;
    }
    void* p = current_;
    current_ += bytes;
    remaining_ -= bytes;
    return p;
  }

 private:
  char* current_ = nullptr;
  size_t remaining_ = 0;
};

struct SymbolKeyHash {
  size_t operator()(const std::tuple<std::string, int, int>& k) const {
    return HashString(std::get<0>(k)) ^ (std::get<1>(k) * 31 + std::get<2>(k));
  }
};

class Interner {
 public:
  const ExprNode* Intern(ExprKind kind, ExprType type, UnaryFn fn, int64_t bits,
                         const SymbolData* symbol, absl::Span<const Expr> args,
                         uint8_t flags, const ExprNode* monomial) {
    uint64_t hash = KeyHash(kind, type, fn, bits, symbol, args);
    NodeKey key{kind, type, fn, bits, symbol, args, hash};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(key);
    if (it != nodes_.end()) return *it;
    auto* node = static_cast<ExprNode*>(arena_.Allocate(sizeof(ExprNode)));
    Expr* arg_copy = nullptr;
    if (!args.empty()) {
      arg_copy =
          static_cast<Expr*>(arena_.Allocate(sizeof(Expr) * args.size()));
      std::copy(args.begin(), args.end(), arg_copy);
    }
    for (Expr a : args) flags |= (N(a)->flags & kHasSymbols);
    node->kind = kind;
    node->type = type;
    node->flags = flags;
    node->fn = fn;
    node->num_args = static_cast<uint32_t>(args.size());
    node->hash = hash;
    node->value.i = bits;
    node->symbol = symbol;
    node->monomial = monomial;
    node->args = arg_copy;
    nodes_.insert(node);
    return node;
  }

  const SymbolData* SymbolFor(absl::string_view name, SymbolType type,
                              SymbolAssumptions a) {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(std::string(name), static_cast<int>(type),
                               a.positive * 2 + a.nonnegative);
    auto it = symbols_.find(key);
    if (it != symbols_.end()) return it->second;
    auto* data = new SymbolData;
    data->name = std::string(name);
    data->type = type;
    data->assumptions = a;
    size_t digits = name.size();
    while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') {
      --digits;
    }
    data->prefix = std::string(name.substr(0, digits));
    if (digits < name.size() && name.size() - digits <= 18) {
      data->suffix = 0;
      for (char c : name.substr(digits))
        data->suffix = data->suffix * 10 + (c - '0');
    }
    symbols_.emplace(key, data);
    return data;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(nodes_.size());
  }

 private:
  std::mutex mu_;
  Arena arena_;
  absl::flat_hash_set<const ExprNode*, NodeHash, NodeEq> nodes_;
  absl::flat_hash_map<std::tuple<std::string, int, int>, const SymbolData*,
                      SymbolKeyHash>
      symbols_;
};

Interner& GlobalInterner() {
  static Interner* interner = new Interner;  // never destroyed
  return *interner;
}

Expr MakeNode(ExprKind kind, ExprType type, absl::Span<const Expr> args,
              uint8_t flags = 0, UnaryFn fn = UnaryFn::kSqrt,
              const ExprNode* monomial = nullptr) {
  return E(GlobalInterner().Intern(kind, type, fn, 0, nullptr, args, flags,
                                   monomial));
}

// -0.0 and 0.0 stay two constants: a scalar operand's sign reaches the
// result (x * -0.0 is -0.0 for a positive x), as in PyTorch.
int64_t DoubleBits(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

bool IsNumber(Expr e) {
  ExprKind k = e.kind();
  return k == ExprKind::kInteger || k == ExprKind::kFloat ||
         k == ExprKind::kIntInfinity || k == ExprKind::kBoolean;
}

bool IsNumeric(Expr e) {  // a numeric (not boolean) constant
  ExprKind k = e.kind();
  return k == ExprKind::kInteger || k == ExprKind::kFloat ||
         k == ExprKind::kIntInfinity;
}

// The value of a numeric constant as a double (int_oo -> inf).
double AsDouble(Expr e) {
  switch (e.kind()) {
    case ExprKind::kInteger:
      return static_cast<double>(e.int_value());
    case ExprKind::kFloat:
      return e.float_value();
    case ExprKind::kIntInfinity:
      return e.infinity_sign() * std::numeric_limits<double>::infinity();
    default:
      LATHE_CHECK(false) << "not a numeric constant";
      return 0;
  }
}

// Saturating int64 arithmetic: overflow gives int_oo with the right sign.
Expr IntOrInfinity(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return IntInfinity(1);
  if (v < std::numeric_limits<int64_t>::min()) return IntInfinity(-1);
  return Int(static_cast<int64_t>(v));
}

// Makes ints floats when any argument is a float (Python promotion).
std::vector<Expr> Promote(absl::Span<const Expr> args) {
  bool any_float = false;
  for (Expr a : args) {
    LATHE_CHECK(a.type() != ExprType::kBool)
        << "arithmetic on a boolean expression";
    any_float |= a.is_float();
  }
  std::vector<Expr> out(args.begin(), args.end());
  if (any_float) {
    for (Expr& a : out) {
      if (a.is_int()) a = ToFloat(a);
    }
  }
  return out;
}

absl::Status DivisionByZero(absl::string_view op) {
  return absl::InvalidArgumentError(absl::StrCat("division by zero in ", op));
}

void RequireInts(absl::string_view op, std::initializer_list<Expr> args,
                 absl::Status* status) {
  for (Expr a : args) {
    if (!a.is_int()) {
      *status = absl::InvalidArgumentError(
          absl::StrCat(op, " takes integer operands"));
      return;
    }
  }
}

}  // namespace

// ---- Expr accessors ---------------------------------------------------------

ExprKind Expr::kind() const { return node_->kind; }
ExprType Expr::type() const { return node_->type; }
absl::Span<const Expr> Expr::args() const {
  return absl::Span<const Expr>(node_->args, node_->num_args);
}
int64_t Expr::int_value() const {
  LATHE_CHECK(node_->kind == ExprKind::kInteger);
  return node_->value.i;
}
double Expr::float_value() const {
  LATHE_CHECK(node_->kind == ExprKind::kFloat);
  return node_->value.f;
}
bool Expr::bool_value() const {
  LATHE_CHECK(node_->kind == ExprKind::kBoolean);
  return node_->value.i != 0;
}
int Expr::infinity_sign() const {
  LATHE_CHECK(node_->kind == ExprKind::kIntInfinity);
  return static_cast<int>(node_->value.i);
}
absl::string_view Expr::name() const {
  LATHE_CHECK(node_->kind == ExprKind::kSymbol);
  return node_->symbol->name;
}
UnaryFn Expr::unary_fn() const {
  LATHE_CHECK(node_->kind == ExprKind::kOpaqueUnary);
  return node_->fn;
}
bool Expr::is_number() const { return IsNumber(*this); }
bool Expr::is_nonnegative() const { return node_->flags & kNonnegative; }
bool Expr::is_positive() const { return node_->flags & kPositive; }
bool Expr::has_symbols() const { return node_->flags & kHasSymbols; }
uint64_t Expr::hash() const { return node_->hash; }

SymbolType TypeOfSymbol(Expr symbol) {
  LATHE_CHECK(symbol.is_symbol());
  return N(symbol)->symbol->type;
}

SymbolAssumptions AssumptionsOf(Expr symbol) {
  LATHE_CHECK(symbol.is_symbol());
  return N(symbol)->symbol->assumptions;
}

int64_t InternedCount() { return GlobalInterner().size(); }

// ---- Canonical order --------------------------------------------------------

namespace {

int KindRank(ExprKind k) {
  switch (k) {
    case ExprKind::kInteger:
    case ExprKind::kFloat:
    case ExprKind::kIntInfinity:
    case ExprKind::kBoolean:
      return 0;
    case ExprKind::kSymbol:
      return 1;
    default:
      return 2 + static_cast<int>(k);
  }
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

int Compare(Expr a, Expr b) {
  if (a == b) return 0;
  int r = Cmp(KindRank(a.kind()), KindRank(b.kind()));
  if (r != 0) return r;
  if (IsNumber(a)) {
    if (a.kind() == ExprKind::kBoolean || b.kind() == ExprKind::kBoolean) {
      r = Cmp(static_cast<int>(a.kind()), static_cast<int>(b.kind()));
      if (r != 0) return r;
      return Cmp(a.bool_value(), b.bool_value());
    }
    if (a.kind() == ExprKind::kInteger && b.kind() == ExprKind::kInteger) {
      return Cmp(a.int_value(), b.int_value());
    }
    double x = AsDouble(a), y = AsDouble(b);
    if (std::isnan(x) || std::isnan(y)) {
      r = Cmp(std::isnan(x), std::isnan(y));
    } else {
      r = Cmp(x, y);
    }
    if (r != 0) return r;
    return Cmp(static_cast<int>(a.kind()), static_cast<int>(b.kind()));
  }
  if (a.is_symbol()) {
    const SymbolData* x = N(a)->symbol;
    const SymbolData* y = N(b)->symbol;
    if ((r = Cmp(x->prefix, y->prefix)) != 0) return r;
    if ((r = Cmp(x->suffix, y->suffix)) != 0) return r;
    if ((r = Cmp(x->name, y->name)) != 0) return r;
    if ((r = Cmp(static_cast<int>(x->type), static_cast<int>(y->type))) != 0)
      return r;
    return Cmp(x->assumptions.positive * 2 + x->assumptions.nonnegative,
               y->assumptions.positive * 2 + y->assumptions.nonnegative);
  }
  if ((r = Cmp(static_cast<int>(a.kind()), static_cast<int>(b.kind()))) != 0)
    return r;
  if (a.kind() == ExprKind::kOpaqueUnary &&
      (r = Cmp(static_cast<int>(a.unary_fn()),
               static_cast<int>(b.unary_fn()))) != 0) {
    return r;
  }
  absl::Span<const Expr> xa = a.args(), xb = b.args();
  size_t n = std::min(xa.size(), xb.size());
  for (size_t i = 0; i < n; ++i) {
    if ((r = Compare(xa[i], xb[i])) != 0) return r;
  }
  r = Cmp(xa.size(), xb.size());
  if (r != 0) return r;
  return Cmp(static_cast<int>(a.type()), static_cast<int>(b.type()));
}

namespace {

struct ExprLess {
  bool operator()(Expr a, Expr b) const { return Compare(a, b) < 0; }
};

}  // namespace

// ---- Leaves -----------------------------------------------------------------

Expr Int(int64_t v) {
  uint8_t flags = (v >= 0 ? kNonnegative : 0) | (v > 0 ? kPositive : 0);
  return E(GlobalInterner().Intern(ExprKind::kInteger, ExprType::kInt,
                                   UnaryFn::kSqrt, v, nullptr, {}, flags,
                                   nullptr));
}

Expr Float(double v) {
  uint8_t flags = (v >= 0 ? kNonnegative : 0) | (v > 0 ? kPositive : 0);
  if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
  return E(GlobalInterner().Intern(ExprKind::kFloat, ExprType::kFloat,
                                   UnaryFn::kSqrt, DoubleBits(v), nullptr, {},
                                   flags, nullptr));
}

Expr IntInfinity(int sign) {
  sign = sign < 0 ? -1 : 1;
  uint8_t flags = sign > 0 ? (kNonnegative | kPositive) : 0;
  return E(GlobalInterner().Intern(ExprKind::kIntInfinity, ExprType::kInt,
                                   UnaryFn::kSqrt, sign, nullptr, {}, flags,
                                   nullptr));
}

Expr Bool(bool v) {
  return E(GlobalInterner().Intern(ExprKind::kBoolean, ExprType::kBool,
                                   UnaryFn::kSqrt, v ? 1 : 0, nullptr, {}, 0,
                                   nullptr));
}

Expr Symbol(absl::string_view name, SymbolType type,
            SymbolAssumptions assumptions) {
  if (assumptions.positive) assumptions.nonnegative = true;
  const SymbolData* data = GlobalInterner().SymbolFor(name, type, assumptions);
  uint8_t flags = kHasSymbols | (assumptions.nonnegative ? kNonnegative : 0) |
                  (assumptions.positive ? kPositive : 0);
  return E(GlobalInterner().Intern(
      ExprKind::kSymbol,
      type == SymbolType::kInt ? ExprType::kInt : ExprType::kFloat,
      UnaryFn::kSqrt, 0, data, {}, flags, nullptr));
}

// ---- Sums and products ------------------------------------------------------

namespace {

// A numeric constant being accumulated (int with overflow to int_oo, or
// float).
struct Number {
  bool is_float = false;
  __int128 i = 0;
  double f = 0;
  int inf = 0;  // integer infinity sign, or 0

  static Number Of(Expr e) {
    Number n;
    switch (e.kind()) {
      case ExprKind::kInteger:
        n.i = e.int_value();
        break;
      case ExprKind::kFloat:
        n.is_float = true;
        n.f = e.float_value();
        break;
      case ExprKind::kIntInfinity:
        n.inf = e.infinity_sign();
        break;
      default:
        LATHE_CHECK(false);
    }
    return n;
  }
  static Number One(bool is_float) {
    Number n;
    n.is_float = is_float;
    n.i = 1;
    n.f = 1;
    return n;
  }
  double AsDouble() const {
    if (inf != 0) return inf * std::numeric_limits<double>::infinity();
    return is_float ? f : static_cast<double>(i);
  }
  bool IsZero() const { return inf == 0 && (is_float ? f == 0 : i == 0); }
  bool IsOne() const { return inf == 0 && (is_float ? f == 1 : i == 1); }
  bool IsNegative() const {
    if (inf != 0) return inf < 0;
    return is_float ? f < 0 : i < 0;
  }
  void Add(const Number& o) {
    if (is_float) {
      f += o.AsDouble();
      return;
    }
    if (inf != 0 || o.inf != 0) {
      // int_oo absorbs finite values; int_oo + -int_oo stays int_oo's sign of
      // the first (it is never built by lathe itself).
      if (inf == 0) inf = o.inf;
      return;
    }
    i += o.i;
    Saturate();
  }
  void Mul(const Number& o) {
    if (is_float) {
      f *= o.AsDouble();
      return;
    }
    if (inf != 0 || o.inf != 0) {
      int sa = inf != 0 ? inf : (i > 0) - (i < 0);
      int sb = o.inf != 0 ? o.inf : (o.i > 0) - (o.i < 0);
      if (sa * sb == 0) {
        inf = 0;
        i = 0;
      } else {
        inf = sa * sb;
      }
      return;
    }
    __int128 r;
    if (__builtin_mul_overflow(i, o.i, &r)) {
      inf = ((i < 0) != (o.i < 0)) ? -1 : 1;
      return;
    }
    i = r;
    Saturate();
  }
  void Saturate() {
    if (i > std::numeric_limits<int64_t>::max()) inf = 1;
    if (i < std::numeric_limits<int64_t>::min()) inf = -1;
  }
  Expr ToExpr() const {
    if (is_float) return Float(f);
    if (inf != 0) return IntInfinity(inf);
    return Int(static_cast<int64_t>(i));
  }
};

// A term of a sum: coefficient times monomial (null monomial: a constant).
struct Term {
  Expr monomial;
  Number coeff;
  Expr original;  // the term as given, reused when nothing merges into it
};

// Splits a (non-sum) term into coefficient and monomial.
Term SplitTerm(Expr t) {
  if (t.kind() == ExprKind::kMul && IsNumeric(t.arg(0))) {
    return Term{E(N(t)->monomial), Number::Of(t.arg(0)), t};
  }
  return Term{t, Number::One(t.is_float()), t};
}

uint8_t SumFlags(absl::Span<const Expr> terms) {
  bool nonneg = true, pos = false;
  for (Expr t : terms) {
    nonneg &= t.is_nonnegative();
    pos |= t.is_positive();
  }
  return (nonneg ? kNonnegative : 0) | (nonneg && pos ? kPositive : 0);
}

uint8_t ProductFlags(absl::Span<const Expr> factors) {
  bool nonneg = true, pos = true;
  for (Expr f : factors) {
    nonneg &= f.is_nonnegative();
    pos &= f.is_positive();
  }
  return (nonneg ? kNonnegative : 0) | (pos ? kPositive : 0);
}

// Builds coeff * monomial, where monomial is a symbol, a non-Mul term, or a
// Mul without a coefficient.
Expr ScaleMonomial(const Number& coeff, Expr monomial) {
  if (coeff.IsOne()) return monomial;
  if (coeff.IsZero()) return coeff.is_float ? Float(0) : Int(0);
  std::vector<Expr> args;
  args.push_back(coeff.ToExpr());
  if (monomial.kind() == ExprKind::kMul) {
    for (Expr f : monomial.args()) args.push_back(f);
  } else {
    args.push_back(monomial);
  }
  uint8_t flags = ProductFlags(args);
  return MakeNode(ExprKind::kMul, monomial.type(), args, flags, UnaryFn::kSqrt,
                  N(monomial));
}

// A factor of a product: base ** exponent (exponent >= 1).
struct Factor {
  Expr base;
  int64_t exp;
};

Factor SplitFactor(Expr f) {
  if (f.kind() == ExprKind::kPowByNatural &&
      f.arg(1).kind() == ExprKind::kInteger) {
    return Factor{f.arg(0), f.arg(1).int_value()};
  }
  return Factor{f, 1};
}

Expr RawPow(Expr base, int64_t exp) {
  if (exp == 1) return base;
  uint8_t flags = (base.is_positive() ? kPositive : 0) |
                  ((base.is_nonnegative() || exp % 2 == 0) ? kNonnegative : 0);
  Expr args[] = {base, Int(exp)};
  return MakeNode(ExprKind::kPowByNatural, ExprType::kInt, args, flags);
}

}  // namespace

Expr Add(absl::Span<const Expr> raw_terms) {
  LATHE_CHECK(!raw_terms.empty()) << "Add of no terms";
  if (raw_terms.size() == 1) {
    LATHE_CHECK(raw_terms[0].type() != ExprType::kBool);
    return raw_terms[0];
  }
  std::vector<Expr> args = Promote(raw_terms);
  const bool is_float = args[0].is_float();
  Number constant = Number::One(is_float);
  constant.i = 0;
  constant.f = 0;
  std::vector<Term> terms;
  auto add_one = [&](Expr t) {
    if (IsNumeric(t)) {
      constant.Add(Number::Of(t));
    } else {
      terms.push_back(SplitTerm(t));
    }
  };
  for (Expr a : args) {
    if (a.kind() == ExprKind::kAdd) {
      for (Expr t : a.args()) add_one(t);
    } else {
      add_one(a);
    }
  }
  if (constant.inf != 0 && !is_float) return IntInfinity(constant.inf);
  // Terms of each input sum are already sorted: sort what is not, then merge,
  // so growing a long sum one term at a time stays linear per step.
  auto less = [](const Term& x, const Term& y) {
    return Compare(x.monomial, y.monomial) < 0;
  };
  auto sorted_end = std::is_sorted_until(terms.begin(), terms.end(), less);
  if (sorted_end != terms.end()) {
    std::stable_sort(sorted_end, terms.end(), less);
    std::inplace_merge(terms.begin(), sorted_end, terms.end(), less);
  }
  std::vector<Expr> out;
  out.reserve(terms.size() + 1);
  out.push_back(Expr());  // slot for the constant
  for (size_t i = 0; i < terms.size();) {
    Number coeff = terms[i].coeff;
    size_t j = i + 1;
    for (; j < terms.size() && terms[j].monomial == terms[i].monomial; ++j) {
      coeff.Add(terms[j].coeff);
    }
    if (j == i + 1) {
      out.push_back(terms[i].original);
    } else if (!coeff.IsZero()) {
      out.push_back(ScaleMonomial(coeff, terms[i].monomial));
    }
    i = j;
  }
  bool has_constant = !constant.IsZero();
  if (has_constant) out[0] = constant.ToExpr();
  absl::Span<const Expr> final_args = has_constant
                                          ? absl::MakeConstSpan(out)
                                          : absl::MakeConstSpan(out).subspan(1);
  if (final_args.empty()) return is_float ? Float(0) : Int(0);
  if (final_args.size() == 1) return final_args[0];
  return MakeNode(ExprKind::kAdd, is_float ? ExprType::kFloat : ExprType::kInt,
                  final_args, SumFlags(final_args));
}

Expr Add(Expr a, Expr b) {
  Expr args[] = {a, b};
  return Add(args);
}

Expr Neg(Expr a) { return Mul(a.is_float() ? Float(-1) : Int(-1), a); }

Expr Sub(Expr a, Expr b) { return Add(a, Neg(b)); }

Expr Mul(absl::Span<const Expr> raw_factors) {
  LATHE_CHECK(!raw_factors.empty()) << "Mul of no factors";
  if (raw_factors.size() == 1) {
    LATHE_CHECK(raw_factors[0].type() != ExprType::kBool);
    return raw_factors[0];
  }
  std::vector<Expr> args = Promote(raw_factors);
  const bool is_float = args[0].is_float();
  Number coeff = Number::One(is_float);
  std::vector<Factor> factors;
  auto add_one = [&](Expr f) {
    if (IsNumeric(f)) {
      coeff.Mul(Number::Of(f));
    } else {
      factors.push_back(SplitFactor(f));
    }
  };
  for (Expr a : args) {
    if (a.kind() == ExprKind::kMul) {
      for (Expr f : a.args()) add_one(f);
    } else {
      add_one(a);
    }
  }
  if (coeff.IsZero()) return is_float ? Float(0) : Int(0);
  if (coeff.inf != 0 && !is_float && factors.empty()) {
    return IntInfinity(coeff.inf);
  }
  std::stable_sort(factors.begin(), factors.end(),
                   [](const Factor& x, const Factor& y) {
                     return Compare(x.base, y.base) < 0;
                   });
  std::vector<Expr> merged;
  for (size_t i = 0; i < factors.size();) {
    int64_t exp = factors[i].exp;
    size_t j = i + 1;
    for (; j < factors.size() && factors[j].base == factors[i].base; ++j) {
      exp += factors[j].exp;
    }
    merged.push_back(is_float && exp != 1
                         ? MakeNode(ExprKind::kFloatPow, ExprType::kFloat,
                                    {factors[i].base, Float(exp)})
                         : RawPow(factors[i].base, exp));
    i = j;
  }
  if (merged.empty()) return coeff.ToExpr();
  // A numeric coefficient distributes over a lone sum: 2*(x + y) = 2*x + 2*y.
  if (merged.size() == 1 && merged[0].kind() == ExprKind::kAdd &&
      !coeff.IsOne() && coeff.inf == 0) {
    std::vector<Expr> terms;
    for (Expr t : merged[0].args()) terms.push_back(Mul(coeff.ToExpr(), t));
    return Add(terms);
  }
  if (coeff.IsOne() && merged.size() == 1) return merged[0];
  Expr monomial = merged.size() == 1
                      ? merged[0]
                      : MakeNode(ExprKind::kMul,
                                 is_float ? ExprType::kFloat : ExprType::kInt,
                                 merged, ProductFlags(merged));
  if (coeff.IsOne()) return monomial;
  return ScaleMonomial(coeff, monomial);
}

Expr Mul(Expr a, Expr b) {
  Expr args[] = {a, b};
  return Mul(args);
}

absl::StatusOr<Expr> PowByNatural(Expr base, Expr exp) {
  if (!base.is_int() || !exp.is_int()) {
    return absl::InvalidArgumentError("PowByNatural takes integer operands");
  }
  if (exp.kind() == ExprKind::kInteger) {
    int64_t e = exp.int_value();
    if (e < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PowByNatural needs a natural exponent, got ", e));
    }
    if (e == 0) return Int(1);
    if (e == 1) return base;
    if (base.kind() == ExprKind::kInteger) {
      __int128 r = 1, b = base.int_value();
      for (int64_t k = 0; k < e; ++k) {
        r *= b;
        if (r > std::numeric_limits<int64_t>::max() ||
            r < std::numeric_limits<int64_t>::min()) {
          return IntInfinity((base.int_value() < 0 && e % 2 == 1) ? -1 : 1);
        }
        if (r == 0 || r == 1) break;
      }
      if (r == 1 && base.int_value() == -1) r = (e % 2 == 0) ? 1 : -1;
      return IntOrInfinity(r);
    }
    if (base.kind() == ExprKind::kIntInfinity) {
      return IntInfinity(base.infinity_sign() < 0 && e % 2 == 1 ? -1 : 1);
    }
    if (base.kind() == ExprKind::kMul) {
      std::vector<Expr> factors;
      for (Expr f : base.args()) {
        ASSIGN_OR_RETURN(Expr p, PowByNatural(f, exp));
        factors.push_back(p);
      }
      return Mul(factors);
    }
    if (base.kind() == ExprKind::kPowByNatural &&
        base.arg(1).kind() == ExprKind::kInteger) {
      __int128 total = static_cast<__int128>(base.arg(1).int_value()) * e;
      if (total > std::numeric_limits<int64_t>::max()) {
        return absl::InvalidArgumentError("PowByNatural exponent overflows");
      }
      return RawPow(base.arg(0), static_cast<int64_t>(total));
    }
    return RawPow(base, e);
  }
  if (base.is_constant(1)) return Int(1);
  uint8_t flags = (base.is_positive() ? kPositive : 0) |
                  (base.is_nonnegative() ? kNonnegative : 0);
  Expr args[] = {base, exp};
  return MakeNode(ExprKind::kPowByNatural, ExprType::kInt, args, flags);
}

absl::StatusOr<Expr> FloatPow(Expr base, Expr exp) {
  if (base.is_bool() || exp.is_bool()) {
    return absl::InvalidArgumentError("FloatPow takes numeric operands");
  }
  if (base.is_int()) base = ToFloat(base);
  if (exp.is_int()) exp = ToFloat(exp);
  if (IsNumeric(base) && IsNumeric(exp)) {
    double b = AsDouble(base), e = AsDouble(exp);
    if (b == 0 && e < 0) {
      return absl::InvalidArgumentError(
          "0.0 cannot be raised to a negative power");
    }
    return Float(std::pow(b, e));
  }
  if (exp.kind() == ExprKind::kFloat && exp.float_value() == 1.0) return base;
  uint8_t flags = (base.is_positive() ? kPositive : 0) |
                  (base.is_nonnegative() ? kNonnegative : 0);
  Expr args[] = {base, exp};
  return MakeNode(ExprKind::kFloatPow, ExprType::kFloat, args, flags);
}

// ---- Division and modulus ---------------------------------------------------

namespace {

// A term as integer coefficient times factors (base -> exponent).
struct Monomial {
  __int128 coeff = 1;
  std::vector<Factor> factors;
};

Monomial Decompose(Expr term) {
  Monomial m;
  if (term.kind() == ExprKind::kInteger) {
    m.coeff = term.int_value();
    return m;
  }
  absl::Span<const Expr> fs;
  Expr single[1] = {term};
  if (term.kind() == ExprKind::kMul) {
    fs = term.args();
  } else {
    fs = single;
  }
  for (Expr f : fs) {
    if (f.kind() == ExprKind::kInteger) {
      m.coeff *= f.int_value();
    } else {
      m.factors.push_back(SplitFactor(f));
    }
  }
  return m;
}

std::vector<Expr> SumTerms(Expr e) {
  if (e.kind() == ExprKind::kAdd) return {e.args().begin(), e.args().end()};
  return {e};
}

std::vector<Expr> ProductFactors(Expr e) {
  if (e.kind() == ExprKind::kMul) return {e.args().begin(), e.args().end()};
  return {e};
}

bool HasFactor(Expr term, Expr factor) {
  for (Expr f : ProductFactors(term)) {
    if (f == factor) return true;
  }
  return false;
}

}  // namespace

// PyTorch's simple_floordiv_gcd: the integer gcd of all coefficients times the
// factors of q that appear syntactically in every term of p.
Expr SimpleFloorDivGcd(Expr p, Expr q) {
  auto magnitude = [](int64_t v) -> uint64_t {
    return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  };
  auto integer_factor = [&](Expr e) -> uint64_t {
    uint64_t g = 0;
    for (Expr t : SumTerms(e)) {
      uint64_t c = 1;  // a term has at most one integer factor
      for (Expr f : ProductFactors(t)) {
        if (f.kind() == ExprKind::kInteger) c = magnitude(f.int_value());
      }
      g = std::gcd(g, c);
    }
    return g;
  };
  uint64_t g = std::gcd(integer_factor(p), integer_factor(q));
  if (g == 0 ||
      g > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    g = 1;
  }
  std::vector<Expr> result = {Int(static_cast<int64_t>(g))};
  if (q.kind() != ExprKind::kAdd) {
    std::vector<Expr> terms = SumTerms(p);
    for (Expr x : ProductFactors(q)) {
      if (x.kind() == ExprKind::kInteger) continue;
      bool everywhere = true;
      for (Expr t : terms) everywhere &= HasFactor(t, x);
      if (everywhere) result.push_back(x);
    }
  }
  return Mul(result);
}

namespace {

// e / g for a g that divides every term of e (as SimpleFloorDivGcd found).
Expr DivideExact(Expr e, Expr g) {
  Monomial gm = Decompose(g);
  std::vector<Expr> out_terms;
  for (Expr t : SumTerms(e)) {
    Monomial m = Decompose(t);
    LATHE_CHECK(gm.coeff != 0 && m.coeff % gm.coeff == 0);
    std::vector<Expr> fs = {IntOrInfinity(m.coeff / gm.coeff)};
    std::vector<Factor> remaining = m.factors;
    for (const Factor& gf : gm.factors) {
      auto it =
          std::find_if(remaining.begin(), remaining.end(),
                       [&](const Factor& f) { return f.base == gf.base; });
      LATHE_CHECK(it != remaining.end() && it->exp >= gf.exp);
      it->exp -= gf.exp;
    }
    for (const Factor& f : remaining) {
      if (f.exp > 0) fs.push_back(RawPow(f.base, f.exp));
    }
    out_terms.push_back(Mul(fs));
  }
  return Add(out_terms);
}

// Whether every term of `p` is a multiple of `q`.
bool IsMultipleOf(Expr p, Expr q) {
  if (q.is_constant(1) || q.is_constant(-1)) return true;
  if (p.is_constant(0)) return true;
  Expr g = SimpleFloorDivGcd(p, q);
  return g == q || g == Neg(q);
}

// FloorDiv and CleanDiv share PyTorch's FloorDiv.eval rules.
absl::StatusOr<Expr> DivImpl(Expr a, Expr b, bool clean) {
  const char* op = clean ? "CleanDiv" : "FloorDiv";
  absl::Status status;
  RequireInts(op, {a, b}, &status);
  RETURN_IF_ERROR(status);
  if (b.is_constant(0)) return DivisionByZero(op);
  if (IsNumeric(a) && IsNumeric(b)) {
    if (a.kind() == ExprKind::kInteger && b.kind() == ExprKind::kInteger) {
      if (a.int_value() == std::numeric_limits<int64_t>::min() &&
          b.int_value() == -1) {
        return IntInfinity(1);
      }
      return Int(PyFloorDiv(a.int_value(), b.int_value()));
    }
    if (a.kind() == ExprKind::kIntInfinity &&
        b.kind() == ExprKind::kIntInfinity) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, " of two infinities is undefined"));
    }
    if (a.kind() == ExprKind::kIntInfinity) {
      return IntInfinity(a.infinity_sign() * (b.int_value() > 0 ? 1 : -1));
    }
    // finite // +-int_oo: floor of a quotient that tends to 0.
    double q = static_cast<double>(a.int_value()) / AsDouble(b);
    return Int(static_cast<int64_t>(std::floor(q == 0 ? 0.0 : q)));
  }
  if (a.is_constant(0)) return Int(0);
  if (b.is_constant(1)) return a;
  if (b.is_constant(-1)) return Neg(a);
  // FloorDiv(FloorDiv(x, d), c) = FloorDiv(x, d*c) for c > 0.
  if ((a.kind() == ExprKind::kFloorDiv || a.kind() == ExprKind::kCleanDiv) &&
      b.is_positive()) {
    return DivImpl(a.arg(0), Mul(a.arg(1), b), clean);
  }
  // (x + k*b) // b = x // b + k for a constant b.
  if (b.kind() == ExprKind::kInteger && a.kind() == ExprKind::kAdd) {
    std::vector<Expr> quotient, rest;
    for (Expr t : a.args()) {
      Monomial m = Decompose(t);
      if (m.coeff % b.int_value() == 0) {
        quotient.push_back(DivideExact(t, b));
      } else {
        rest.push_back(t);
      }
    }
    if (!quotient.empty()) {
      Expr r = rest.empty() ? Int(0) : Add(rest);
      ASSIGN_OR_RETURN(Expr q, DivImpl(r, b, clean));
      quotient.push_back(q);
      return Add(quotient);
    }
  }
  // Cancel the common factor: (g*x) // (g*y) = x // y.
  Expr g = SimpleFloorDivGcd(a, b);
  if (!g.is_constant(1)) {
    return DivImpl(DivideExact(a, g), DivideExact(b, g), clean);
  }
  uint8_t flags = (a.is_nonnegative() && b.is_positive()) ? kNonnegative : 0;
  Expr args[] = {a, b};
  return MakeNode(clean ? ExprKind::kCleanDiv : ExprKind::kFloorDiv,
                  ExprType::kInt, args, flags);
}

}  // namespace

absl::StatusOr<Expr> FloorDiv(Expr a, Expr b) { return DivImpl(a, b, false); }

absl::StatusOr<Expr> CleanDiv(Expr a, Expr b) { return DivImpl(a, b, true); }

absl::StatusOr<Expr> CeilDiv(Expr a, Expr b) {
  absl::Status status;
  RequireInts("CeilDiv", {a, b}, &status);
  RETURN_IF_ERROR(status);
  if (b.is_constant(0)) return DivisionByZero("CeilDiv");
  if (IsMultipleOf(a, b)) return CleanDiv(a, b);
  if (b.kind() == ExprKind::kInteger && b.int_value() > 0) {
    return FloorDiv(Add(a, Int(b.int_value() - 1)), b);
  }
  ASSIGN_OR_RETURN(Expr q, FloorDiv(Neg(a), b));
  return Neg(q);
}

absl::StatusOr<Expr> ModularIndexing(Expr a, Expr b, Expr c) {
  absl::Status status;
  RequireInts("ModularIndexing", {a, b, c}, &status);
  RETURN_IF_ERROR(status);
  if (b.is_constant(0) || c.is_constant(0)) {
    return DivisionByZero("ModularIndexing");
  }
  if (a.is_constant(0) || c.is_constant(1)) return Int(0);
  if (a.kind() == ExprKind::kInteger && b.kind() == ExprKind::kInteger &&
      c.kind() == ExprKind::kInteger) {
    ASSIGN_OR_RETURN(Expr q, FloorDiv(a, b));
    if (q.kind() != ExprKind::kInteger) return q;
    return Int(PyMod(q.int_value(), c.int_value()));
  }
  // ModularIndexing(x // d, b, c) = ModularIndexing(x, d*b, c) for b > 0.
  if ((a.kind() == ExprKind::kFloorDiv || a.kind() == ExprKind::kCleanDiv) &&
      b.is_positive()) {
    return ModularIndexing(a.arg(0), Mul(a.arg(1), b), c);
  }
  Expr g = SimpleFloorDivGcd(a, b);
  if (!g.is_constant(1)) {
    return ModularIndexing(DivideExact(a, g), DivideExact(b, g), c);
  }
  // Terms that are multiples of b*c do not change the result, but keep them
  // when a kept term is negative (PyTorch's Triton #619 workaround).
  if (a.kind() == ExprKind::kAdd) {
    Expr period = Mul(b, c);
    std::vector<Expr> kept;
    bool all_positive = true;
    for (Expr t : a.args()) {
      if (IsMultipleOf(t, period)) continue;
      Expr lead = t.kind() == ExprKind::kMul ? t.arg(0) : t;
      if (lead.kind() == ExprKind::kInteger && lead.int_value() < 0) {
        all_positive = false;
        break;
      }
      kept.push_back(t);
    }
    if (all_positive && kept.size() != a.args().size()) {
      return ModularIndexing(kept.empty() ? Int(0) : Add(kept), b, c);
    }
  }
  uint8_t flags = c.is_positive() ? kNonnegative : 0;
  Expr args[] = {a, b, c};
  return MakeNode(ExprKind::kModularIndexing, ExprType::kInt, args, flags);
}

namespace {

// The value of p mod 2 when the parity of p is known syntactically.
std::optional<int64_t> KnownParity(Expr p) {
  int64_t parity = 0;
  for (Expr t : SumTerms(p)) {
    Monomial m = Decompose(t);
    if (m.factors.empty()) {
      parity = (parity + static_cast<int64_t>(((m.coeff % 2) + 2) % 2)) % 2;
    } else if (m.coeff % 2 != 0) {
      return std::nullopt;
    }
  }
  return parity;
}

absl::StatusOr<Expr> ModImpl(Expr p, Expr q, bool python) {
  const char* op = python ? "PythonMod" : "Mod";
  absl::Status status;
  RequireInts(op, {p, q}, &status);
  RETURN_IF_ERROR(status);
  if (q.is_constant(0)) {
    return absl::InvalidArgumentError(absl::StrCat("modulo by zero in ", op));
  }
  if (!python) {
    if ((p.kind() == ExprKind::kInteger && p.int_value() < 0) ||
        (q.kind() == ExprKind::kInteger && q.int_value() < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Mod is defined only for p >= 0 and q >= 1, got Mod(",
          p.kind() == ExprKind::kInteger ? absl::StrCat(p.int_value()) : "p",
          ", ",
          q.kind() == ExprKind::kInteger ? absl::StrCat(q.int_value()) : "q",
          ")"));
    }
  }
  if (p.is_constant(0) || p == q || p == Neg(q) || q.is_constant(1) ||
      q.is_constant(-1)) {
    return Int(0);
  }
  if (p.kind() == ExprKind::kInteger && q.kind() == ExprKind::kInteger) {
    return Int(PyMod(p.int_value(), q.int_value()));
  }
  if (p.kind() == ExprKind::kIntInfinity ||
      q.kind() == ExprKind::kIntInfinity) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " of an infinite operand is undefined"));
  }
  if (q.is_constant(2)) {
    if (std::optional<int64_t> parity = KnownParity(p)) return Int(*parity);
  }
  if (IsMultipleOf(p, q)) return Int(0);
  uint8_t flags = (!python || q.is_positive()) ? kNonnegative : 0;
  Expr args[] = {p, q};
  return MakeNode(python ? ExprKind::kPythonMod : ExprKind::kMod,
                  ExprType::kInt, args, flags);
}

}  // namespace

absl::StatusOr<Expr> Mod(Expr a, Expr b) { return ModImpl(a, b, false); }

absl::StatusOr<Expr> PythonMod(Expr a, Expr b) { return ModImpl(a, b, true); }

// ---- Min / Max --------------------------------------------------------------

namespace {

// A lower bound of `e` known from its flags alone.
std::optional<double> SyntacticLowerBound(Expr e) {
  if (IsNumeric(e)) return AsDouble(e);
  if (e.is_positive()) return e.is_int() ? 1.0 : 0.0;
  if (e.is_nonnegative()) return 0.0;
  return std::nullopt;
}

Expr MinMax(absl::Span<const Expr> raw, bool is_max) {
  LATHE_CHECK(!raw.empty()) << (is_max ? "Max" : "Min") << " of nothing";
  std::vector<Expr> args = Promote(raw);
  const ExprKind kind = is_max ? ExprKind::kMax : ExprKind::kMin;
  std::vector<Expr> flat;
  std::optional<Expr> best;            // the extreme numeric argument
  auto better = [&](Expr x, Expr y) {  // x more extreme than y
    double a = AsDouble(x), b = AsDouble(y);
    if (std::isnan(a)) return true;
    if (a == b) return x.kind() == ExprKind::kIntInfinity;
    return is_max ? a > b : a < b;
  };
  for (Expr a : args) {
    absl::Span<const Expr> parts =
        a.kind() == kind ? a.args() : absl::Span<const Expr>(&a, 1);
    for (Expr p : parts) {
      if (IsNumeric(p)) {
        if (!best || better(p, *best)) best = p;
      } else {
        flat.push_back(p);
      }
    }
  }
  std::sort(flat.begin(), flat.end(), ExprLess());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  if (best) {
    double c = AsDouble(*best);
    if (std::isinf(c) && ((c > 0) == is_max)) return *best;  // absorbs all
    if (std::isinf(c)) {
      if (!flat.empty()) best.reset();  // -oo in Max / +oo in Min is neutral
    } else if (is_max) {
      // Max(c, x) = x when x >= c is known.
      for (Expr x : flat) {
        std::optional<double> lo = SyntacticLowerBound(x);
        if (lo && *lo >= c) {
          best.reset();
          break;
        }
      }
    } else {
      // Min(c, x) drops every x known to be >= c.
      flat.erase(std::remove_if(flat.begin(), flat.end(),
                                [&](Expr x) {
                                  std::optional<double> lo =
                                      SyntacticLowerBound(x);
                                  return lo && *lo >= c;
                                }),
                 flat.end());
    }
  }
  std::vector<Expr> out;
  if (best) out.push_back(*best);
  out.insert(out.end(), flat.begin(), flat.end());
  if (out.size() == 1) return out[0];
  bool nonneg = is_max ? false : true, pos = is_max ? false : true;
  for (Expr x : out) {
    if (is_max) {
      nonneg |= x.is_nonnegative();
      pos |= x.is_positive();
    } else {
      nonneg &= x.is_nonnegative();
      pos &= x.is_positive();
    }
  }
  return MakeNode(kind, out[0].type(), out,
                  (nonneg ? kNonnegative : 0) | (pos ? kPositive : 0));
}

}  // namespace

Expr Min(absl::Span<const Expr> args) { return MinMax(args, false); }
Expr Min(Expr a, Expr b) {
  Expr args[] = {a, b};
  return Min(args);
}
Expr Max(absl::Span<const Expr> args) { return MinMax(args, true); }
Expr Max(Expr a, Expr b) {
  Expr args[] = {a, b};
  return Max(args);
}

// ---- True division and conversions ------------------------------------------

absl::StatusOr<Expr> IntTrueDiv(Expr a, Expr b) {
  absl::Status status;
  RequireInts("IntTrueDiv", {a, b}, &status);
  RETURN_IF_ERROR(status);
  if (b.is_constant(0)) return DivisionByZero("IntTrueDiv");
  if (IsNumeric(a) && IsNumeric(b)) {
    if (a.kind() == ExprKind::kIntInfinity &&
        b.kind() == ExprKind::kIntInfinity) {
      return Float(std::numeric_limits<double>::quiet_NaN());
    }
    return Float(AsDouble(a) / AsDouble(b));
  }
  uint8_t flags = (a.is_nonnegative() && b.is_positive() ? kNonnegative : 0) |
                  (a.is_positive() && b.is_positive() ? kPositive : 0);
  Expr args[] = {a, b};
  return MakeNode(ExprKind::kIntTrueDiv, ExprType::kFloat, args, flags);
}

absl::StatusOr<Expr> FloatTrueDiv(Expr a, Expr b) {
  if (a.is_bool() || b.is_bool()) {
    return absl::InvalidArgumentError("FloatTrueDiv takes numeric operands");
  }
  if (a.is_int()) a = ToFloat(a);
  if (b.is_int()) b = ToFloat(b);
  if (b.kind() == ExprKind::kFloat && b.float_value() == 0) {
    return DivisionByZero("FloatTrueDiv");
  }
  if (IsNumeric(a) && IsNumeric(b)) return Float(AsDouble(a) / AsDouble(b));
  uint8_t flags = (a.is_nonnegative() && b.is_positive() ? kNonnegative : 0) |
                  (a.is_positive() && b.is_positive() ? kPositive : 0);
  Expr args[] = {a, b};
  return MakeNode(ExprKind::kFloatTrueDiv, ExprType::kFloat, args, flags);
}

Expr ToFloat(Expr a) {
  LATHE_CHECK(!a.is_bool()) << "ToFloat of a boolean";
  if (a.is_float()) return a;
  if (IsNumeric(a)) return Float(AsDouble(a));
  uint8_t flags = (a.is_nonnegative() ? kNonnegative : 0) |
                  (a.is_positive() ? kPositive : 0);
  return MakeNode(ExprKind::kToFloat, ExprType::kFloat, {a}, flags);
}

namespace {

absl::StatusOr<Expr> ToIntImpl(Expr a, ExprKind kind) {
  if (a.is_bool()) {
    return absl::InvalidArgumentError("float-to-int conversion of a boolean");
  }
  if (a.is_int()) return a;
  if (a.kind() == ExprKind::kFloat) {
    double v = a.float_value();
    if (std::isnan(v)) {
      return absl::InvalidArgumentError("cannot convert float NaN to integer");
    }
    if (std::isinf(v)) return IntInfinity(v > 0 ? 1 : -1);
    double r = kind == ExprKind::kTruncToInt   ? std::trunc(v)
               : kind == ExprKind::kFloorToInt ? std::floor(v)
               : kind == ExprKind::kCeilToInt  ? std::ceil(v)
                                               : std::nearbyint(v);
    if (r >= 9.2233720368547758e18) return IntInfinity(1);
    if (r < -9.2233720368547758e18) return IntInfinity(-1);
    return Int(static_cast<int64_t>(r));
  }
  uint8_t flags = a.is_nonnegative() ? kNonnegative : 0;
  if (kind == ExprKind::kCeilToInt && a.is_positive()) flags |= kPositive;
  return MakeNode(kind, ExprType::kInt, {a}, flags);
}

}  // namespace

absl::StatusOr<Expr> TruncToInt(Expr a) {
  return ToIntImpl(a, ExprKind::kTruncToInt);
}
absl::StatusOr<Expr> FloorToInt(Expr a) {
  return ToIntImpl(a, ExprKind::kFloorToInt);
}
absl::StatusOr<Expr> CeilToInt(Expr a) {
  return ToIntImpl(a, ExprKind::kCeilToInt);
}
absl::StatusOr<Expr> RoundToInt(Expr a) {
  return ToIntImpl(a, ExprKind::kRoundToInt);
}

Expr OpaqueUnary(UnaryFn fn, Expr a) {
  LATHE_CHECK(!a.is_bool()) << "math function of a boolean";
  if (a.is_int()) a = ToFloat(a);
  if (IsNumeric(a)) {
    double x = AsDouble(a);
    switch (fn) {
      case UnaryFn::kSqrt:
        return Float(std::sqrt(x));
      case UnaryFn::kExp:
        return Float(std::exp(x));
      case UnaryFn::kLog:
        return Float(std::log(x));
      case UnaryFn::kLog2:
        return Float(std::log2(x));
      case UnaryFn::kSin:
        return Float(std::sin(x));
      case UnaryFn::kCos:
        return Float(std::cos(x));
      case UnaryFn::kTan:
        return Float(std::tan(x));
      case UnaryFn::kAsin:
        return Float(std::asin(x));
      case UnaryFn::kAcos:
        return Float(std::acos(x));
      case UnaryFn::kAtan:
        return Float(std::atan(x));
      case UnaryFn::kSinh:
        return Float(std::sinh(x));
      case UnaryFn::kCosh:
        return Float(std::cosh(x));
      case UnaryFn::kTanh:
        return Float(std::tanh(x));
    }
  }
  uint8_t flags = 0;
  if (fn == UnaryFn::kSqrt) flags = kNonnegative;
  if (fn == UnaryFn::kExp || fn == UnaryFn::kCosh)
    flags = kNonnegative | kPositive;
  return MakeNode(ExprKind::kOpaqueUnary, ExprType::kFloat, {a}, flags, fn);
}

// ---- Relations and logic ----------------------------------------------------

namespace {

// Makes the operands of a relation the same type.
std::pair<Expr, Expr> RelOperands(Expr a, Expr b) {
  if (a.is_bool() || b.is_bool()) {
    LATHE_CHECK(a.is_bool() && b.is_bool())
        << "relation between a boolean and a number";
    return {a, b};
  }
  if (a.is_float() && b.is_int()) b = ToFloat(b);
  if (a.is_int() && b.is_float()) a = ToFloat(a);
  return {a, b};
}

// -1, 0, +1 for numeric constants (nan compares as unordered: nullopt).
std::optional<int> NumericOrder(Expr a, Expr b) {
  if (a.kind() == ExprKind::kInteger && b.kind() == ExprKind::kInteger) {
    return Cmp(a.int_value(), b.int_value());
  }
  double x = AsDouble(a), y = AsDouble(b);
  if (std::isnan(x) || std::isnan(y)) return std::nullopt;
  if (x == y && a.kind() != b.kind()) {
    // int_oo < oo: the integer infinity sorts below the float one.
    if (a.kind() == ExprKind::kIntInfinity && b.kind() == ExprKind::kFloat)
      return -a.infinity_sign();
    if (b.kind() == ExprKind::kIntInfinity && a.kind() == ExprKind::kFloat)
      return b.infinity_sign();
  }
  return Cmp(x, y);
}

Expr MakeRel(ExprKind kind, Expr a, Expr b) {
  Expr args[] = {a, b};
  return MakeNode(kind, ExprType::kBool, args);
}

}  // namespace

Expr Eq(Expr a, Expr b) {
  if (IsNumber(a) && IsNumber(b)) {  // before promotion: int_oo != oo
    if (a.is_bool() || b.is_bool()) {
      LATHE_CHECK(a.is_bool() && b.is_bool())
          << "relation between a boolean and a number";
      return Bool(a.bool_value() == b.bool_value());
    }
    std::optional<int> order = NumericOrder(a, b);
    return Bool(order && *order == 0);
  }
  std::tie(a, b) = RelOperands(a, b);
  if (a == b) return Bool(true);
  if (a.is_int()) {
    Expr d = Sub(a, b);
    if (IsNumeric(d)) return Bool(d.is_constant(0));
    if (d.is_positive() || Neg(d).is_positive()) return Bool(false);
  }
  // Symmetric: one order only, a constant on the right as in Eq(s0, 2).
  if (a.is_number() || (!b.is_number() && Compare(b, a) < 0)) std::swap(a, b);
  return MakeRel(ExprKind::kEq, a, b);
}

Expr Ne(Expr a, Expr b) {
  Expr eq = Eq(a, b);
  if (eq.kind() == ExprKind::kBoolean) return Bool(!eq.bool_value());
  return MakeRel(ExprKind::kNe, eq.arg(0), eq.arg(1));
}

Expr Lt(Expr a, Expr b) {
  LATHE_CHECK(!a.is_bool() && !b.is_bool()) << "ordering of booleans";
  if (IsNumeric(a) && IsNumeric(b)) {  // before promotion: int_oo < oo
    std::optional<int> order = NumericOrder(a, b);
    return Bool(order && *order < 0);
  }
  std::tie(a, b) = RelOperands(a, b);
  if (a == b) return Bool(false);
  if (a.is_int()) {
    Expr d = Sub(b, a);  // a < b  <=>  d > 0
    if (IsNumeric(d)) return Bool(AsDouble(d) > 0);
    if (d.is_positive()) return Bool(true);
    if (Neg(d).is_nonnegative()) return Bool(false);
  }
  return MakeRel(ExprKind::kLt, a, b);
}

Expr Le(Expr a, Expr b) {
  LATHE_CHECK(!a.is_bool() && !b.is_bool()) << "ordering of booleans";
  if (IsNumeric(a) && IsNumeric(b)) {  // before promotion: int_oo < oo
    std::optional<int> order = NumericOrder(a, b);
    return Bool(order && *order <= 0);
  }
  std::tie(a, b) = RelOperands(a, b);
  if (a == b) return Bool(true);
  if (a.is_int()) {
    Expr d = Sub(b, a);  // a <= b  <=>  d >= 0
    if (IsNumeric(d)) return Bool(AsDouble(d) >= 0);
    if (d.is_nonnegative()) return Bool(true);
    if (Neg(d).is_positive()) return Bool(false);
  }
  return MakeRel(ExprKind::kLe, a, b);
}

Expr Gt(Expr a, Expr b) { return Lt(b, a); }
Expr Ge(Expr a, Expr b) { return Le(b, a); }

namespace {

Expr AndOr(absl::Span<const Expr> raw, bool is_and) {
  const ExprKind kind = is_and ? ExprKind::kAnd : ExprKind::kOr;
  std::vector<Expr> flat;
  for (Expr a : raw) {
    LATHE_CHECK(a.is_bool()) << (is_and ? "And" : "Or") << " of a non-boolean";
    absl::Span<const Expr> parts =
        a.kind() == kind ? a.args() : absl::Span<const Expr>(&a, 1);
    for (Expr p : parts) {
      if (p.kind() == ExprKind::kBoolean) {
        if (p.bool_value() != is_and) return p;  // absorbing element
        continue;                                // neutral element
      }
      flat.push_back(p);
    }
  }
  std::sort(flat.begin(), flat.end(), ExprLess());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  if (flat.empty()) return Bool(is_and);
  if (flat.size() == 1) return flat[0];
  return MakeNode(kind, ExprType::kBool, flat);
}

}  // namespace

Expr And(absl::Span<const Expr> args) { return AndOr(args, true); }
Expr And(Expr a, Expr b) {
  Expr args[] = {a, b};
  return And(args);
}
Expr Or(absl::Span<const Expr> args) { return AndOr(args, false); }
Expr Or(Expr a, Expr b) {
  Expr args[] = {a, b};
  return Or(args);
}

Expr Not(Expr a) {
  LATHE_CHECK(a.is_bool()) << "Not of a non-boolean";
  switch (a.kind()) {
    case ExprKind::kBoolean:
      return Bool(!a.bool_value());
    case ExprKind::kNot:
      return a.arg(0);
    case ExprKind::kEq:
      return Ne(a.arg(0), a.arg(1));
    case ExprKind::kNe:
      return Eq(a.arg(0), a.arg(1));
    case ExprKind::kLt:
      if (a.arg(0).is_int()) return Le(a.arg(1), a.arg(0));
      break;
    case ExprKind::kLe:
      if (a.arg(0).is_int()) return Lt(a.arg(1), a.arg(0));
      break;
    default:
      break;
  }
  return MakeNode(ExprKind::kNot, ExprType::kBool, {a});
}

absl::StatusOr<Expr> Piecewise(absl::Span<const std::pair<Expr, Expr>> cases) {
  std::vector<Expr> values, conds;
  bool any_float = false;
  for (const auto& [value, cond] : cases) {
    if (!cond.is_bool()) {
      return absl::InvalidArgumentError("Piecewise condition is not boolean");
    }
    if (cond.is_false()) continue;
    values.push_back(value);
    conds.push_back(cond);
    any_float |= value.is_float();
    if (cond.is_true()) break;
  }
  if (conds.empty() || !conds.back().is_true()) {
    return absl::InvalidArgumentError(
        "Piecewise needs a last condition that is True");
  }
  for (Expr v : values) {
    if (v.is_bool() != values[0].is_bool()) {
      return absl::InvalidArgumentError(
          "Piecewise mixes boolean and numeric values");
    }
  }
  if (any_float) {
    for (Expr& v : values) {
      if (v.is_int()) v = ToFloat(v);
    }
  }
  if (std::all_of(values.begin(), values.end(),
                  [&](Expr v) { return v == values[0]; })) {
    return values[0];
  }
  std::vector<Expr> args;
  bool nonneg = true, pos = true;
  for (size_t i = 0; i < values.size(); ++i) {
    args.push_back(values[i]);
    args.push_back(conds[i]);
    nonneg &= values[i].is_nonnegative();
    pos &= values[i].is_positive();
  }
  return MakeNode(ExprKind::kPiecewise, values[0].type(), args,
                  (nonneg ? kNonnegative : 0) | (pos ? kPositive : 0));
}

Expr Ite(Expr cond, Expr then, Expr otherwise) {
  std::pair<Expr, Expr> cases[] = {{then, cond}, {otherwise, Bool(true)}};
  absl::StatusOr<Expr> r = Piecewise(cases);
  LATHE_CHECK(r.ok()) << r.status().message();
  return *r;
}

// ---- Traversal --------------------------------------------------------------

std::vector<Expr> FreeSymbols(Expr e) {
  std::vector<Expr> out;
  if (!e.has_symbols()) return out;
  absl::flat_hash_set<Expr> seen;
  std::vector<Expr> stack = {e};
  while (!stack.empty()) {
    Expr x = stack.back();
    stack.pop_back();
    if (!x.has_symbols() || !seen.insert(x).second) continue;
    if (x.is_symbol()) {
      out.push_back(x);
      continue;
    }
    for (Expr a : x.args()) stack.push_back(a);
  }
  std::sort(out.begin(), out.end(), ExprLess());
  return out;
}

absl::StatusOr<Expr> Rebuild(Expr like, absl::Span<const Expr> a) {
  switch (like.kind()) {
    case ExprKind::kInteger:
    case ExprKind::kFloat:
    case ExprKind::kIntInfinity:
    case ExprKind::kBoolean:
    case ExprKind::kSymbol:
      return like;
    case ExprKind::kAdd:
      return Add(a);
    case ExprKind::kMul:
      return Mul(a);
    case ExprKind::kPowByNatural:
      return PowByNatural(a[0], a[1]);
    case ExprKind::kFloatPow:
      return FloatPow(a[0], a[1]);
    case ExprKind::kFloorDiv:
      return FloorDiv(a[0], a[1]);
    case ExprKind::kCleanDiv:
      return CleanDiv(a[0], a[1]);
    case ExprKind::kModularIndexing:
      return ModularIndexing(a[0], a[1], a[2]);
    case ExprKind::kMod:
      return Mod(a[0], a[1]);
    case ExprKind::kPythonMod:
      return PythonMod(a[0], a[1]);
    case ExprKind::kMin:
      return Min(a);
    case ExprKind::kMax:
      return Max(a);
    case ExprKind::kIntTrueDiv:
      return IntTrueDiv(a[0], a[1]);
    case ExprKind::kFloatTrueDiv:
      return FloatTrueDiv(a[0], a[1]);
    case ExprKind::kToFloat:
      return ToFloat(a[0]);
    case ExprKind::kTruncToInt:
      return TruncToInt(a[0]);
    case ExprKind::kFloorToInt:
      return FloorToInt(a[0]);
    case ExprKind::kCeilToInt:
      return CeilToInt(a[0]);
    case ExprKind::kRoundToInt:
      return RoundToInt(a[0]);
    case ExprKind::kOpaqueUnary:
      return OpaqueUnary(like.unary_fn(), a[0]);
    case ExprKind::kEq:
      return Eq(a[0], a[1]);
    case ExprKind::kNe:
      return Ne(a[0], a[1]);
    case ExprKind::kLt:
      return Lt(a[0], a[1]);
    case ExprKind::kLe:
      return Le(a[0], a[1]);
    case ExprKind::kAnd:
      return And(a);
    case ExprKind::kOr:
      return Or(a);
    case ExprKind::kNot:
      return Not(a[0]);
    case ExprKind::kPiecewise: {
      std::vector<std::pair<Expr, Expr>> cases;
      for (size_t i = 0; i + 1 < a.size(); i += 2)
        cases.push_back({a[i], a[i + 1]});
      return Piecewise(cases);
    }
  }
  return absl::InternalError("unknown expression kind");
}

absl::StatusOr<Expr> Substitute(
    Expr e, const absl::flat_hash_map<Expr, Expr>& replacements) {
  absl::flat_hash_map<Expr, Expr> memo;
  // Iterative post-order so deep expressions do not exhaust the stack.
  std::vector<std::pair<Expr, bool>> stack = {{e, false}};
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    stack.pop_back();
    if (memo.contains(x)) continue;
    if (auto it = replacements.find(x); it != replacements.end()) {
      memo[x] = it->second;
      continue;
    }
    if (!x.has_symbols() || x.num_args() == 0) {
      memo[x] = x;
      continue;
    }
    if (!expanded) {
      stack.push_back({x, true});
      for (Expr a : x.args()) stack.push_back({a, false});
      continue;
    }
    std::vector<Expr> args;
    bool changed = false;
    for (Expr a : x.args()) {
      args.push_back(memo.at(a));
      changed |= args.back() != a;
    }
    if (!changed) {
      memo[x] = x;
      continue;
    }
    ASSIGN_OR_RETURN(memo[x], Rebuild(x, args));
  }
  return memo.at(e);
}

}  // namespace lathe::symbolic
