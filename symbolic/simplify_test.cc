#include "symbolic/simplify.h"

#include <optional>

#include "gtest/gtest.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/value_ranges.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

Expr Idx(absl::string_view name) {
  return Symbol(name, SymbolType::kInt, {.nonnegative = true});
}

// An index `i` in [0, hi].
SimplifyContext Ranges(std::initializer_list<std::pair<Expr, int64_t>> his) {
  SimplifyContext ctx;
  std::vector<std::pair<Expr, int64_t>> copy(his);
  ctx.ranges = [copy](Expr s) -> std::optional<ValueRange> {
    for (const auto& [sym, hi] : copy) {
      if (sym == s) return ValueRange::Int(0, hi);
    }
    return std::nullopt;
  };
  return ctx;
}

// Scenario 29: range-based index simplification.
TEST(SimplifyTest, InductorIndexRules) {
  Expr i = Idx("i"), i0 = Idx("i0"), i1 = Idx("i1");
  SimplifyContext none;
  EXPECT_EQ(Ok(Simplify(Ok(FloorDiv(Ok(ModularIndexing(i, Int(1), Int(8192))),
                                    Int(128))),
                        none)),
            Ok(ModularIndexing(i, Int(128), Int(64))));
  EXPECT_EQ(Ok(Simplify(
                Ok(FloorDiv(Ok(ModularIndexing(i, Int(2), Int(120))), Int(6))),
                none)),
            Ok(ModularIndexing(i, Int(12), Int(20))));
  Expr unchanged =
      Ok(FloorDiv(Ok(ModularIndexing(i, Int(1), Int(28))), Int(5)));
  EXPECT_EQ(Ok(Simplify(unchanged, none)), unchanged);
  EXPECT_EQ(Ok(Simplify(
                Ok(FloorDiv(Ok(ModularIndexing(i, Int(1), Int(10))), Int(10))),
                none)),
            Int(0));
  Expr sum = Add(i0, Mul(Int(128), i1));
  Expr big = Ok(FloorDiv(Mul(Int(128), i1), Int(8192)));
  EXPECT_EQ(Ok(Simplify(Ok(FloorDiv(sum, Int(8192))), Ranges({{i0, 127}}))),
            big);
  Expr kept = Ok(FloorDiv(sum, Int(8192)));
  EXPECT_EQ(Ok(Simplify(kept, Ranges({{i0, 128}}))), kept);
}

TEST(SimplifyTest, RangeRules) {
  Expr x = Idx("x");
  EXPECT_EQ(
      Ok(Simplify(Ok(ModularIndexing(x, Int(1), Int(64))), Ranges({{x, 63}}))),
      x);
  EXPECT_EQ(
      Ok(Simplify(Ok(ModularIndexing(x, Int(4), Int(64))), Ranges({{x, 255}}))),
      Ok(FloorDiv(x, Int(4))));
  EXPECT_EQ(Ok(Simplify(Ok(PythonMod(x, Int(8))), Ranges({{x, 7}}))), x);
  Expr u = Symbol("u");
  EXPECT_EQ(Ok(Simplify(Max(Int(3), u), Ranges({{u, 2}}))), Int(3));
  EXPECT_EQ(Ok(Simplify(Lt(x, Int(9)), Ranges({{x, 7}}))), Bool(true));
}

TEST(SimplifyTest, JoinsModularIndexingPieces) {
  Expr i = Idx("i");
  Expr joined = Add(Ok(ModularIndexing(i, Int(1), Int(32))),
                    Mul(Int(32), Ok(ModularIndexing(i, Int(32), Int(4)))));
  EXPECT_EQ(Ok(Simplify(joined)), Ok(ModularIndexing(i, Int(1), Int(128))));
  Expr whole = Add(Mul(Int(197), Ok(FloorDiv(i, Int(197)))),
                   Ok(ModularIndexing(i, Int(1), Int(197))));
  EXPECT_EQ(Ok(Simplify(whole)), i);
}

TEST(SimplifyTest, DivisibilityMakesCleanDivisions) {
  Expr u = Symbol("u");
  SimplifyContext ctx;
  ctx.divisible = [&](Expr a, Expr b) { return a == u && b == Int(3); };
  Expr floor_eq = Eq(Ok(FloorDiv(u, Int(3))), Int(1));
  EXPECT_EQ(Ok(Simplify(floor_eq, ctx)), Eq(Ok(CleanDiv(u, Int(3))), Int(1)));
  EXPECT_EQ(Ok(Simplify(floor_eq)), floor_eq);
  EXPECT_EQ(Ok(Simplify(Ok(TruncToInt(Ok(IntTrueDiv(u, Int(3))))), ctx)),
            Ok(CleanDiv(u, Int(3))));
  EXPECT_EQ(Ok(Simplify(Ok(PythonMod(u, Int(3))), ctx)), Int(0));
  // FloorDiv(a, CleanDiv(a, d)) = d.
  Expr s = Symbol("s", SymbolType::kInt, {.positive = true});
  SimplifyContext even;
  even.divisible = [&](Expr a, Expr b) { return a == s && b == Int(2); };
  Expr half = Ok(FloorDiv(s, Int(2)));
  EXPECT_EQ(Ok(Simplify(Ok(FloorDiv(s, half)), even)), Int(2));
}

TEST(SimplifyTest, TruncOfTrueDivisionNeedsTheQuotientSign) {
  Expr a = Symbol("a"), n = Idx("n");
  Expr p = Symbol("p", SymbolType::kInt, {.positive = true});
  Expr trunc_a = Ok(TruncToInt(Ok(IntTrueDiv(a, p))));
  EXPECT_EQ(Ok(Simplify(trunc_a)), trunc_a);  // a may be negative
  EXPECT_EQ(Ok(Simplify(Ok(TruncToInt(Ok(IntTrueDiv(n, p)))))),
            Ok(FloorDiv(n, p)));
  EXPECT_EQ(Ok(Simplify(Ok(FloorToInt(Ok(IntTrueDiv(a, p)))))),
            Ok(FloorDiv(a, p)));
}

// Every index rule, checked at every point of a small domain: offsets and
// divisors around the boundaries where dropping a remainder stops being exact.
TEST(SimplifyTest, IndexRulesAreExactOnEveryPointOfSmallDomains) {
  Expr i0 = Idx("i0"), i1 = Idx("i1");
  SimplifyContext ctx = Ranges({{i0, 7}, {i1, 15}});
  int rewritten = 0;
  for (int64_t coeff : {1, 2, 4, 8, 16}) {
    for (int64_t offset : {0, 1, 2, 7, 8, 9}) {
      for (int64_t divisor : {2, 4, 8, 16, 64, 128}) {
        Expr sum = Add({Mul(Int(coeff), i1), i0, Int(offset)});
        std::vector<Expr> exprs = {
            Ok(FloorDiv(Mul(Int(8), sum), Int(divisor))),
            Ok(FloorDiv(Add(Mul(Int(8 * coeff), i1), Add(i0, Int(offset))),
                        Int(divisor))),
            Ok(ModularIndexing(
                Add(Mul(Int(8 * coeff), i1), Add(i0, Int(offset))),
                Int(divisor), Int(4))),
            Ok(ModularIndexing(sum, Int(1), Int(divisor))),
            Ok(FloorDiv(Ok(ModularIndexing(sum, Int(1), Int(divisor))),
                        Int(coeff))),
            Add(Ok(ModularIndexing(sum, Int(1), Int(divisor))),
                Mul(Int(divisor), Ok(FloorDiv(sum, Int(divisor))))),
        };
        for (Expr e : exprs) {
          Expr simplified = Ok(Simplify(e, ctx));
          rewritten += simplified != e;
          for (int64_t a = 0; a <= 7; ++a) {
            for (int64_t b = 0; b <= 15; ++b) {
              Assignment values = {{i0, Value::Int(a)}, {i1, Value::Int(b)}};
              auto want = Evaluate(e, values),
                   got = Evaluate(simplified, values);
              ASSERT_OK(want);
              ASSERT_OK(got);
              ASSERT_EQ(want->i, got->i)
                  << ToString(e) << " -> " << ToString(simplified)
                  << " at i0=" << a << " i1=" << b;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(rewritten, 100);  // the rules really fire here
}

}  // namespace
}  // namespace lathe::symbolic
