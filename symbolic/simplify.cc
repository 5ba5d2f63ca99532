#include "symbolic/simplify.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/value_ranges.h"

namespace lathe::symbolic {
namespace {

// A positive int64 constant's value, if `e` is one.
std::optional<int64_t> PositiveConstant(Expr e) {
  if (e.kind() == ExprKind::kInteger && e.int_value() > 0) return e.int_value();
  return std::nullopt;
}

int64_t IntegerCoefficient(Expr term) {
  if (term.kind() == ExprKind::kInteger) return term.int_value();
  if (term.kind() == ExprKind::kMul &&
      term.arg(0).kind() == ExprKind::kInteger) {
    return term.arg(0).int_value();
  }
  return 1;
}

class Simplifier {
 public:
  explicit Simplifier(const SimplifyContext& context) : ctx_(context) {}

  absl::StatusOr<Expr> Run(Expr root) {
    // Iterative post-order: operands first, then local rules at each node.
    std::vector<std::pair<Expr, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [x, expanded] = stack.back();
      stack.pop_back();
      if (done_.contains(x)) continue;
      if (x.num_args() == 0) {
        done_[x] = x;
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
        args.push_back(done_.at(a));
        changed |= args.back() != a;
      }
      Expr rebuilt = x;
      if (changed) {
        ASSIGN_OR_RETURN(rebuilt, Rebuild(x, args));
      }
      ASSIGN_OR_RETURN(Expr local, Local(rebuilt));
      done_[x] = local;
    }
    return done_.at(root);
  }

 private:
  ValueRange Range(Expr e) { return Bound(e, ctx_.ranges); }

  bool Divisible(Expr a, Expr b) {
    if (!ctx_.divisible) return false;
    return ctx_.divisible(a, b);
  }

  // Applies node-level rules until none fires; a rewrite's result has
  // simplified operands, so only its top needs another look.
  absl::StatusOr<Expr> Local(Expr e) {
    for (int round = 0; round < 16; ++round) {
      ASSIGN_OR_RETURN(std::optional<Expr> next, Once(e));
      if (!next || *next == e) return e;
      // The rewrite may have built new operands; simplify them too.
      e = *next;
      if (e.num_args() > 0) {
        std::vector<Expr> args;
        bool changed = false;
        for (Expr a : e.args()) {
          Simplifier inner(ctx_);
          ASSIGN_OR_RETURN(Expr s, inner.Run(a));
          args.push_back(s);
          changed |= s != a;
        }
        if (changed) {
          ASSIGN_OR_RETURN(e, Rebuild(e, args));
        }
      }
    }
    return e;
  }

  // g*X + r with 0 <= r < g and g | divisor: the part g*X, when there is one.
  std::optional<Expr> DropSmallRemainder(Expr a, int64_t divisor) {
    if (a.kind() != ExprKind::kAdd) return std::nullopt;
    std::vector<int64_t> candidates;
    for (Expr t : a.args()) {
      int64_t k = IntegerCoefficient(t);
      int64_t g = std::gcd(k < 0 ? -k : k, divisor);
      if (g > 1) candidates.push_back(g);
    }
    std::sort(candidates.rbegin(), candidates.rend());
    candidates.erase(std::unique(candidates.begin(), candidates.end()),
                     candidates.end());
    for (int64_t g : candidates) {
      std::vector<Expr> big, rest;
      for (Expr t : a.args()) {
        (IntegerCoefficient(t) % g == 0 ? big : rest).push_back(t);
      }
      if (big.empty() || rest.empty()) continue;
      ValueRange r = Range(Add(rest));
      if (r.type() == ExprType::kInt && r.int_lo() >= 0 && r.int_hi() < g) {
        return Add(big);
      }
    }
    return std::nullopt;
  }

  // nullopt: no rule applies.
  absl::StatusOr<std::optional<Expr>> Once(Expr e) {
    switch (e.kind()) {
      case ExprKind::kFloorDiv:
      case ExprKind::kCleanDiv: {
        Expr a = e.arg(0), b = e.arg(1);
        if (e.kind() == ExprKind::kFloorDiv && Divisible(a, b)) {
          return CleanDiv(a, b);
        }
        if (b.kind() == ExprKind::kCleanDiv && b.arg(0) == a) return b.arg(1);
        ValueRange ra = Range(a), rb = Range(b);
        if (ra.int_lo() >= 0 && rb.int_lo() > 0 && ra.int_hi() < rb.int_lo()) {
          return Int(0);
        }
        if (std::optional<int64_t> d2 = PositiveConstant(b)) {
          if (a.kind() == ExprKind::kModularIndexing) {
            std::optional<int64_t> m = PositiveConstant(a.arg(2));
            if (m && *m % *d2 == 0) {
              return ModularIndexing(a.arg(0), Mul(a.arg(1), b), Int(*m / *d2));
            }
          }
          if (std::optional<Expr> big = DropSmallRemainder(a, *d2)) {
            return e.kind() == ExprKind::kCleanDiv ? CleanDiv(*big, b)
                                                   : FloorDiv(*big, b);
          }
        }
        return std::optional<Expr>();
      }
      case ExprKind::kModularIndexing: {
        Expr x = e.arg(0), d = e.arg(1), m = e.arg(2);
        ValueRange rm = Range(m);
        if (rm.int_lo() > 0) {
          ASSIGN_OR_RETURN(Expr q, FloorDiv(x, d));
          ValueRange rq = Range(q);
          if (rq.int_lo() >= 0 && rq.int_hi() < rm.int_lo()) return q;
        }
        if (std::optional<int64_t> dv = PositiveConstant(d)) {
          if (std::optional<Expr> big = DropSmallRemainder(x, *dv)) {
            return ModularIndexing(*big, d, m);
          }
        }
        return std::optional<Expr>();
      }
      case ExprKind::kMod:
      case ExprKind::kPythonMod: {
        Expr p = e.arg(0), q = e.arg(1);
        if (Divisible(p, q)) return Int(0);
        ValueRange rp = Range(p), rq = Range(q);
        if (rp.int_lo() >= 0 && rq.int_lo() > 0 && rp.int_hi() < rq.int_lo()) {
          return p;
        }
        return std::optional<Expr>();
      }
      case ExprKind::kTruncToInt:
      case ExprKind::kFloorToInt:
      case ExprKind::kCeilToInt: {
        Expr div = e.arg(0);
        if (div.kind() != ExprKind::kIntTrueDiv) return std::optional<Expr>();
        Expr a = div.arg(0), b = div.arg(1);
        if (Divisible(a, b)) return CleanDiv(a, b);
        if (e.kind() == ExprKind::kFloorToInt) return FloorDiv(a, b);
        if (e.kind() == ExprKind::kCeilToInt) return CeilDiv(a, b);
        ValueRange ra = Range(a), rb = Range(b);
        bool quotient_nonnegative = (ra.int_lo() >= 0 && rb.int_lo() > 0) ||
                                    (ra.int_hi() <= 0 && rb.int_hi() < 0);
        if (quotient_nonnegative) return FloorDiv(a, b);
        return std::optional<Expr>();
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        bool is_max = e.kind() == ExprKind::kMax;
        std::vector<Expr> kept(e.args().begin(), e.args().end());
        std::vector<ValueRange> ranges;
        for (Expr a : kept) ranges.push_back(Range(a));
        for (size_t i = 0; i < kept.size() && kept.size() > 1;) {
          bool dominated = false;
          for (size_t j = 0; j < kept.size() && !dominated; ++j) {
            if (i == j) continue;
            // Max drops a when some b >= a always; Min when some b <= a.
            dominated =
                is_max ? Le(ranges[i].upper(), ranges[j].lower()).is_true()
                       : Le(ranges[j].upper(), ranges[i].lower()).is_true();
          }
          if (dominated) {
            kept.erase(kept.begin() + i);
            ranges.erase(ranges.begin() + i);
          } else {
            ++i;
          }
        }
        if (kept.size() == static_cast<size_t>(e.num_args())) {
          return std::optional<Expr>();
        }
        return is_max ? Max(kept) : Min(kept);
      }
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe:
      case ExprKind::kAnd:
      case ExprKind::kOr:
      case ExprKind::kNot: {
        if (!ctx_.decide_relations) return std::optional<Expr>();
        if (std::optional<Expr> v = Range(e).Singleton()) return *v;
        return std::optional<Expr>();
      }
      case ExprKind::kAdd:
        return JoinModularIndexing(e);
      default:
        return std::optional<Expr>();
    }
  }

  // c*MI(x, d, m1) + c*m1*MI(x, d*m1, m2) -> c*MI(x, d, m1*m2) and
  // c*MI(x, d, m) + c*m*FloorDiv(x, d*m) -> c*FloorDiv(x, d).
  absl::StatusOr<std::optional<Expr>> JoinModularIndexing(Expr sum) {
    struct Piece {
      int64_t coeff;
      Expr core;  // ModularIndexing or FloorDiv
    };
    std::vector<Expr> terms(sum.args().begin(), sum.args().end());
    auto piece = [](Expr t) -> std::optional<Piece> {
      int64_t c = 1;
      Expr core = t;
      if (t.kind() == ExprKind::kMul && t.num_args() == 2 &&
          t.arg(0).kind() == ExprKind::kInteger) {
        c = t.arg(0).int_value();
        core = t.arg(1);
      }
      if (core.kind() == ExprKind::kModularIndexing ||
          core.kind() == ExprKind::kFloorDiv ||
          core.kind() == ExprKind::kSymbol) {
        return Piece{c, core};
      }
      return std::nullopt;
    };
    for (size_t i = 0; i < terms.size(); ++i) {
      std::optional<Piece> p = piece(terms[i]);
      if (!p || p->core.kind() != ExprKind::kModularIndexing) continue;
      Expr x = p->core.arg(0), d = p->core.arg(1), m1 = p->core.arg(2);
      std::optional<int64_t> m1v = PositiveConstant(m1);
      if (!m1v) continue;
      Expr next_div = Mul(d, m1);
      for (size_t j = 0; j < terms.size(); ++j) {
        if (i == j) continue;
        std::optional<Piece> q = piece(terms[j]);
        if (!q) continue;
        __int128 want = static_cast<__int128>(p->coeff) * *m1v;
        if (q->coeff != want) continue;
        std::optional<Expr> joined;
        if (q->core.kind() == ExprKind::kModularIndexing &&
            q->core.arg(0) == x && q->core.arg(1) == next_div) {
          if (PositiveConstant(q->core.arg(2))) {
            ASSIGN_OR_RETURN(joined,
                             ModularIndexing(x, d, Mul(m1, q->core.arg(2))));
          }
        } else {
          // FloorDiv(x, d*m), or x itself when d*m == ... (x // 1 is x).
          ASSIGN_OR_RETURN(Expr floor_next, FloorDiv(x, next_div));
          if (q->core == floor_next) {
            ASSIGN_OR_RETURN(joined, FloorDiv(x, d));
          }
        }
        if (!joined) continue;
        std::vector<Expr> rest;
        for (size_t k = 0; k < terms.size(); ++k) {
          if (k != i && k != j) rest.push_back(terms[k]);
        }
        rest.push_back(Mul(Int(p->coeff), *joined));
        return Add(rest);
      }
    }
    return std::optional<Expr>();
  }

  const SimplifyContext& ctx_;
  absl::flat_hash_map<Expr, Expr> done_;
};

}  // namespace

absl::StatusOr<Expr> Simplify(Expr e, const SimplifyContext& context) {
  return Simplifier(context).Run(e);
}

}  // namespace lathe::symbolic
