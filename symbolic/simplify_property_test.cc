// Property test: random expression trees over 3-5 symbols are evaluated
// directly with Python semantics (the reference) and compared with
//   - the expression built through expr.h's constructors (automatic rules),
//   - that expression after Simplify() with the symbols' ranges,
//   - its Bound() (the value must lie inside),
//   - ParseExpr(ToString(e, kParseable)) (must be the identical expression).
// The seed is fixed (override with LATHE_PROPERTY_SEED) and printed on
// failure.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"
#include "symbolic/parser.h"
#include "symbolic/printer.h"
#include "symbolic/simplify.h"
#include "symbolic/value_ranges.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

enum class Op {
  kConst,
  kSym,
  kAdd,
  kSub,
  kMul,
  kNeg,
  kFloorDiv,
  kCeilDiv,
  kModularIndexing,
  kMod,
  kPythonMod,
  kMin,
  kMax,
  kPow,
  kTruncDiv,      // TruncToInt(IntTrueDiv(a, b))
  kFloorTrueDiv,  // FloorToInt(IntTrueDiv(a, b))
  kIte,           // Ite(a < b, c, d)
};

struct Node {
  Op op;
  int64_t value = 0;  // kConst value, kSym index, kPow exponent
  std::vector<std::unique_ptr<Node>> kids;
};

struct SymbolSpec {
  Expr symbol;
  int64_t lo, hi;
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  static std::unique_ptr<Node> Leaf(Op op, int64_t value) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->value = value;
    return n;
  }

  static std::unique_ptr<Node> Binary(Op op, std::unique_ptr<Node> a,
                                      std::unique_ptr<Node> b) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }

  // c0*x0 + c1*x1 + ... + offset with power-of-two coefficients.
  std::unique_ptr<Node> IndexSum(int num_symbols) {
    std::unique_ptr<Node> sum = Leaf(Op::kConst, Uniform(0, 9));
    for (int64_t t = Uniform(1, 3); t > 0; --t) {
      std::unique_ptr<Node> term =
          Binary(Op::kMul, Leaf(Op::kConst, int64_t{1} << Uniform(0, 6)),
                 Leaf(Op::kSym, Uniform(0, num_symbols - 1)));
      sum = Binary(Op::kAdd, std::move(sum), std::move(term));
    }
    return sum;
  }

  std::unique_ptr<Node> Tree(int depth, int num_symbols) {
    auto n = std::make_unique<Node>();
    if (depth == 0 || Uniform(0, 9) < 2) {
      if (Uniform(0, 2) == 0) {
        n->op = Op::kConst;
        static const int64_t kConsts[] = {-6, -3, -2, -1, 0, 1, 2, 3, 4, 8, 16};
        n->value = kConsts[Uniform(0, 10)];
      } else {
        n->op = Op::kSym;
        n->value = Uniform(0, num_symbols - 1);
      }
      return n;
    }
    n->op = static_cast<Op>(
        Uniform(static_cast<int>(Op::kAdd), static_cast<int>(Op::kIte)));
    int arity = 2;
    switch (n->op) {
      case Op::kNeg:
        arity = 1;
        break;
      case Op::kModularIndexing:
        arity = 3;
        break;
      case Op::kIte:
        arity = 4;
        break;
      case Op::kPow:
        arity = 1;
        n->value = Uniform(0, 3);
        break;
      default:
        break;
    }
    for (int k = 0; k < arity; ++k)
      n->kids.push_back(Tree(depth - 1, num_symbols));
    // Index expressions: the dividend of a division is often a sum of
    // symbols with power-of-two coefficients plus an offset, as a permuted or
    // reshaped tensor's index is.
    if ((n->op == Op::kFloorDiv || n->op == Op::kModularIndexing) &&
        Uniform(0, 1) == 0) {
      n->kids[0] = IndexSum(num_symbols);
    }
    // Divisors and moduli are mostly small positive constants, as in index
    // expressions, sometimes symbolic.
    if (n->op == Op::kFloorDiv || n->op == Op::kCeilDiv || n->op == Op::kMod ||
        n->op == Op::kPythonMod || n->op == Op::kTruncDiv ||
        n->op == Op::kFloorTrueDiv || n->op == Op::kModularIndexing) {
      for (size_t k = 1; k < n->kids.size(); ++k) {
        if (Uniform(0, 2) != 0) {
          n->kids[k] = std::make_unique<Node>();
          n->kids[k]->op = Op::kConst;
          n->kids[k]->value =
              Uniform(0, 1) == 0
                  ? (int64_t{1} << Uniform(0, 6))
                  : Uniform(1, 9) * (Uniform(0, 5) == 0 ? -1 : 1);
        }
      }
    }
    return n;
  }

 private:
  std::mt19937_64 rng_;
};

// Python semantics on int64; nullopt for an undefined or overflowing value.
std::optional<int64_t> Reference(const Node& n, const std::vector<int64_t>& v) {
  std::vector<int64_t> k;
  for (const auto& kid : n.kids) {  // strict: every operand, as constructors do
    std::optional<int64_t> x = Reference(*kid, v);
    if (!x) return std::nullopt;
    k.push_back(*x);
  }
  auto floordiv = [](int64_t a, int64_t b) -> std::optional<int64_t> {
    if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  };
  auto pymod = [](int64_t a, int64_t b) -> std::optional<int64_t> {
    if (b == 0) return std::nullopt;
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  };
  int64_t r;
  switch (n.op) {
    case Op::kConst:
      return n.value;
    case Op::kSym:
      return v[n.value];
    case Op::kAdd:
      if (__builtin_add_overflow(k[0], k[1], &r)) return std::nullopt;
      return r;
    case Op::kSub:
      if (__builtin_sub_overflow(k[0], k[1], &r)) return std::nullopt;
      return r;
    case Op::kMul:
      if (__builtin_mul_overflow(k[0], k[1], &r)) return std::nullopt;
      return r;
    case Op::kNeg:
      if (k[0] == INT64_MIN) return std::nullopt;
      return -k[0];
    case Op::kFloorDiv:
      return floordiv(k[0], k[1]);
    case Op::kCeilDiv: {
      if (k[1] == 0 || k[0] == INT64_MIN) return std::nullopt;
      std::optional<int64_t> q = floordiv(-k[0], k[1]);
      if (!q || *q == INT64_MIN) return std::nullopt;
      return -*q;
    }
    case Op::kModularIndexing: {
      if (k[2] == 0) return std::nullopt;
      std::optional<int64_t> q = floordiv(k[0], k[1]);
      if (!q) return std::nullopt;
      return pymod(*q, k[2]);
    }
    case Op::kMod:
      if (k[0] < 0 || k[1] < 1) return std::nullopt;
      return k[0] % k[1];
    case Op::kPythonMod:
      return pymod(k[0], k[1]);
    case Op::kMin:
      return std::min(k[0], k[1]);
    case Op::kMax:
      return std::max(k[0], k[1]);
    case Op::kPow: {
      r = 1;
      for (int64_t e = 0; e < n.value; ++e) {
        if (__builtin_mul_overflow(r, k[0], &r)) return std::nullopt;
      }
      return r;
    }
    case Op::kTruncDiv:
    case Op::kFloorTrueDiv: {
      if (k[1] == 0) return std::nullopt;
      // Exactly representable operands: the double quotient rounds like
      // Python's int / int.
      if (k[0] > (1LL << 52) || k[0] < -(1LL << 52)) return std::nullopt;
      double q = static_cast<double>(k[0]) / static_cast<double>(k[1]);
      return static_cast<int64_t>(n.op == Op::kTruncDiv ? std::trunc(q)
                                                        : std::floor(q));
    }
    case Op::kIte:
      return k[0] < k[1] ? k[2] : k[3];
  }
  return std::nullopt;
}

absl::StatusOr<Expr> Build(const Node& n, const std::vector<SymbolSpec>& syms) {
  std::vector<Expr> k;
  for (const auto& kid : n.kids) {
    absl::StatusOr<Expr> x = Build(*kid, syms);
    if (!x.ok()) return x;
    k.push_back(*x);
  }
  switch (n.op) {
    case Op::kConst:
      return Int(n.value);
    case Op::kSym:
      return syms[n.value].symbol;
    case Op::kAdd:
      return Add(k[0], k[1]);
    case Op::kSub:
      return Sub(k[0], k[1]);
    case Op::kMul:
      return Mul(k[0], k[1]);
    case Op::kNeg:
      return Neg(k[0]);
    case Op::kFloorDiv:
      return FloorDiv(k[0], k[1]);
    case Op::kCeilDiv:
      return CeilDiv(k[0], k[1]);
    case Op::kModularIndexing:
      return ModularIndexing(k[0], k[1], k[2]);
    case Op::kMod:
      return Mod(k[0], k[1]);
    case Op::kPythonMod:
      return PythonMod(k[0], k[1]);
    case Op::kMin:
      return Min(k[0], k[1]);
    case Op::kMax:
      return Max(k[0], k[1]);
    case Op::kPow:
      return PowByNatural(k[0], Int(n.value));
    case Op::kTruncDiv:
    case Op::kFloorTrueDiv: {
      absl::StatusOr<Expr> q = IntTrueDiv(k[0], k[1]);
      if (!q.ok()) return q;
      return n.op == Op::kTruncDiv ? TruncToInt(*q) : FloorToInt(*q);
    }
    case Op::kIte:
      return Ite(Lt(k[0], k[1]), k[2], k[3]);
  }
  return absl::InternalError("unknown op");
}

TEST(SimplifyPropertyTest, SimplifiedExpressionsEvaluateLikeTheOriginal) {
  uint64_t seed = 20261121;
  if (const char* env = std::getenv("LATHE_PROPERTY_SEED")) {
    seed = std::strtoull(env, nullptr, 10);
  }
  SCOPED_TRACE(
      absl::StrCat("seed ", seed, " (rerun with LATHE_PROPERTY_SEED)"));
  Generator gen(seed);
  // Symbols whose assumptions hold for every value they are given.
  const std::vector<SymbolSpec> pool = {
      {Symbol("a0"), -20, 20},
      {Symbol("a1"), -9, 9},
      {Symbol("p0", SymbolType::kInt, {.positive = true}), 1, 20},
      {Symbol("p1", SymbolType::kInt, {.positive = true}), 1, 7},
      {Symbol("n0", SymbolType::kInt, {.nonnegative = true}), 0, 40},
      {Symbol("i0", SymbolType::kInt, {.nonnegative = true}), 0, 7},
      {Symbol("i1", SymbolType::kInt, {.nonnegative = true}), 0, 15},
  };
  std::vector<Expr> pool_symbols;
  for (const SymbolSpec& s : pool) pool_symbols.push_back(s.symbol);
  SimplifyContext ctx;
  ctx.ranges = [&](Expr s) -> std::optional<ValueRange> {
    for (const SymbolSpec& spec : pool) {
      if (spec.symbol == s) return ValueRange::Int(spec.lo, spec.hi);
    }
    return std::nullopt;
  };

  int64_t checked = 0, skipped = 0, failures = 0, rewritten = 0;
  constexpr int64_t kWanted = 100000;
  for (int64_t round = 0; checked < kWanted && round < 20 * kWanted; ++round) {
    // 3-5 symbols, in a random order.
    std::vector<SymbolSpec> syms = pool;
    std::shuffle(syms.begin(), syms.end(), std::mt19937_64(seed + round));
    syms.resize(gen.Uniform(3, 5));
    std::unique_ptr<Node> tree = gen.Tree(gen.Uniform(2, 4), syms.size());
    absl::StatusOr<Expr> built = Build(*tree, syms);
    absl::StatusOr<Expr> simplified =
        built.ok() ? Simplify(*built, ctx) : built;
    if (built.ok()) {
      // Simplify may prove a divisor is 0 throughout the ranges: then the
      // expression is undefined everywhere, which the samples must confirm.
      ASSERT_TRUE(simplified.ok() || simplified.status().code() ==
                                         absl::StatusCode::kInvalidArgument)
          << simplified.status();
      std::string text = ToString(*built, PrintStyle::kParseable);
      absl::StatusOr<Expr> reparsed = ParseExpr(text, pool_symbols);
      ASSERT_OK(reparsed) << text;
      ASSERT_EQ(*reparsed, *built) << text;
    }
    if (built.ok() && simplified.ok() && *simplified != *built) ++rewritten;
    ValueRange range = built.ok() ? Bound(*built, ctx.ranges) : ValueRange();
    for (int sample = 0; sample < 4; ++sample) {
      std::vector<int64_t> values;
      Assignment assignment;
      for (const SymbolSpec& s : syms) {
        values.push_back(gen.Uniform(s.lo, s.hi));
        assignment[s.symbol] = Value::Int(values.back());
      }
      std::optional<int64_t> want = Reference(*tree, values);
      if (!want) {
        ++skipped;
        continue;
      }
      if (!built.ok()) {
        ADD_FAILURE() << "construction failed where Python succeeds: "
                      << built.status();
        if (++failures > 10) return;
        break;
      }
      if (!simplified.ok()) {
        ADD_FAILURE() << ToString(*built) << " is defined (" << *want
                      << ") but Simplify failed: " << simplified.status();
        if (++failures > 10) return;
        continue;
      }
      for (Expr e : {*built, *simplified}) {
        absl::StatusOr<Value> got = Evaluate(e, assignment);
        if (!got.ok() && got.status().code() == absl::StatusCode::kOutOfRange) {
          continue;  // int64 overflow in a rearranged intermediate
        }
        std::string where = absl::StrCat(ToString(*built), " -> ",
                                         ToString(*simplified), " at ");
        for (size_t s = 0; s < syms.size(); ++s) {
          absl::StrAppend(&where, syms[s].symbol.name(), "=", values[s], " ");
        }
        if (!got.ok() || got->inf != 0 || got->i != *want) {
          ADD_FAILURE() << where << "evaluates to "
                        << (got.ok() ? ToString(*got) : got.status().ToString())
                        << " (as " << ToString(e) << "), Python gives "
                        << *want;
          if (++failures > 10) return;
        }
      }
      if (range.type() == ExprType::kInt &&
          (*want < range.int_lo() || *want > range.int_hi())) {
        ADD_FAILURE() << ToString(*built) << " = " << *want << " outside "
                      << range.ToString();
        if (++failures > 10) return;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, kWanted) << "too many skipped cases (" << skipped << ")";
  std::printf(
      "checked %lld cases, skipped %lld undefined; Simplify changed "
      "%lld expressions\n",
      static_cast<long long>(checked), static_cast<long long>(skipped),
      static_cast<long long>(rewritten));
}

}  // namespace
}  // namespace lathe::symbolic
