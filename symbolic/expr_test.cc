#include "symbolic/expr.h"

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolic/evaluate.h"
#include "symbolic/parser.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

using ::testing::HasSubstr;

Expr S(absl::string_view name) {
  return Symbol(name, SymbolType::kInt, {.positive = true});
}
Expr I(absl::string_view name) { return Symbol(name, SymbolType::kInt); }

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

std::string Str(Expr e) { return ToString(e); }

TEST(ExprTest, InterningMakesEqualityIdentity) {
  int64_t before = InternedCount();
  Expr a = Add(Mul(Int(2), S("s0")), Int(1));
  int64_t after_first = InternedCount();
  Expr b = Add(Int(1), Mul(S("s0"), Int(2)));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(InternedCount(), after_first) << "rebuilding allocated";
  EXPECT_GT(after_first, before);
  EXPECT_NE(Symbol("x", SymbolType::kInt), Symbol("x", SymbolType::kFloat));
  EXPECT_NE(Symbol("x"), Symbol("x", SymbolType::kInt, {.positive = true}));
}

TEST(ExprTest, SumsCollectLikeTermsAndFoldConstants) {
  Expr s0 = S("s0"), s1 = S("s1");
  EXPECT_EQ(Str(Add({s0, s1, s0, Int(3), Int(-3)})), "2*s0 + s1");
  EXPECT_EQ(Sub(s0, s0), Int(0));
  EXPECT_EQ(Str(Sub(Int(2), s0)), "-s0 + 2");
  EXPECT_EQ(Add(Int(2), Int(3)), Int(5));
  // A numeric coefficient distributes over a lone sum; products of sums stay.
  EXPECT_EQ(Str(Mul(Int(2), Add(s0, s1))), "2*s0 + 2*s1");
  EXPECT_EQ(Str(Mul(Add(s0, Int(1)), Add(s1, Int(1)))), "(s0 + 1)*(s1 + 1)");
  EXPECT_EQ(Str(Mul({s0, s1, s0})), "s0**2*s1");
  EXPECT_EQ(Mul(Int(0), s0), Int(0));
}

TEST(ExprTest, OrderIsDeterministicAndNatural) {
  Expr e = Add({S("s10"), S("s2"), S("s1")});
  EXPECT_EQ(Str(e), "s1 + s2 + s10");
  EXPECT_LT(Compare(S("s2"), S("s10")), 0);
}

TEST(ExprTest, IntInfinityAndFloatInfinityAreDistinct) {
  Expr int_oo = IntInfinity(), oo = Float(INFINITY);
  EXPECT_NE(int_oo, oo);
  EXPECT_EQ(Add(int_oo, Int(1)), int_oo);
  EXPECT_EQ(Sub(Int(1), int_oo), IntInfinity(-1));
  EXPECT_EQ(ToFloat(int_oo), oo);
  EXPECT_EQ(Lt(int_oo, oo), Bool(true));
  EXPECT_EQ(Min(IntInfinity(-1), Float(-INFINITY)), Float(-INFINITY));
  EXPECT_EQ(Ok(IntTrueDiv(int_oo, Int(2))), oo);
}

// Scenario 23: Python floor semantics.
TEST(ExprTest, FloorDivIsPythonFloor) {
  struct Case {
    int64_t a, b, want;
  } cases[] = {{7, 2, 3}, {-7, 2, -4}, {7, -2, -4}, {-7, -2, 3},
               {2, 1, 2}, {-2, 1, -2}, {2, -1, -2}, {-2, -1, 2}};
  for (const Case& c : cases) {
    EXPECT_EQ(Ok(FloorDiv(Int(c.a), Int(c.b))), Int(c.want))
        << c.a << " // " << c.b;
    Expr x = I("x"), y = I("y");
    Expr sym = Ok(FloorDiv(x, y));
    ASSERT_OK_AND_ASSIGN(
        Value v, Evaluate(sym, {{x, Value::Int(c.a)}, {y, Value::Int(c.b)}}));
    EXPECT_EQ(v.i, c.want);
  }
  EXPECT_EQ(Mul(Int(7), Ok(FloorDiv(Int(6), Int(2)))), Int(21));
}

TEST(ExprTest, ModulusSemantics) {
  EXPECT_EQ(Ok(PythonMod(Int(-7), Int(3))), Int(2));
  EXPECT_EQ(Ok(PythonMod(Int(7), Int(-3))), Int(-2));
  EXPECT_EQ(Ok(Mod(Int(7), Int(3))), Int(1));
  EXPECT_EQ(Ok(ModularIndexing(Int(23), Int(4), Int(3))), Int(2));  // 5 % 3
  Expr s0 = S("s0");
  EXPECT_EQ(Ok(Mod(Mul(Int(4), s0), Int(2))), Int(0));  // known parity
  EXPECT_EQ(Ok(Mod(Add(Mul(Int(4), s0), Int(3)), Int(2))), Int(1));
  EXPECT_EQ(Ok(Mod(Mul(s0, S("s1")), s0)), Int(0));
  EXPECT_TRUE(Ok(Mod(s0, Int(3))).is_nonnegative());
}

TEST(ExprTest, DivisionErrorsAreStatuses) {
  Expr x = I("x");
  EXPECT_THAT(std::string(FloorDiv(x, Int(0)).status().message()),
              HasSubstr("division by zero in FloorDiv"));
  EXPECT_FALSE(CleanDiv(x, Int(0)).ok());
  EXPECT_FALSE(CeilDiv(x, Int(0)).ok());
  EXPECT_FALSE(ModularIndexing(x, Int(0), Int(2)).ok());
  EXPECT_FALSE(ModularIndexing(x, Int(2), Int(0)).ok());
  EXPECT_FALSE(PythonMod(x, Int(0)).ok());
  EXPECT_FALSE(IntTrueDiv(x, Int(0)).ok());
  EXPECT_FALSE(FloatTrueDiv(ToFloat(x), Float(0)).ok());
  absl::Status mod = Mod(Int(-1), Int(3)).status();
  EXPECT_EQ(mod.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mod.message()),
              HasSubstr("Mod is defined only for p >= 0 and q >= 1, got "
                        "Mod(-1, 3)"));
  EXPECT_FALSE(Mod(x, Int(0)).ok());
  EXPECT_FALSE(Mod(x, Int(-2)).ok());
  EXPECT_FALSE(PowByNatural(x, Int(-1)).ok());
  EXPECT_FALSE(TruncToInt(Float(NAN)).ok());
  std::pair<Expr, Expr> no_default[] = {{x, Eq(x, Int(1))}};
  EXPECT_FALSE(Piecewise(no_default).ok());
}

// Scenario 27: simple_floordiv_gcd.
TEST(ExprTest, SimpleFloorDivGcd) {
  Expr x = I("x"), y = I("y"), z = I("z");
  EXPECT_EQ(SimpleFloorDivGcd(Mul(Int(128), x), Int(2304)), Int(128));
  EXPECT_EQ(SimpleFloorDivGcd(
                Add({Mul(Int(128), x), Mul(Int(128), y), Mul(Int(8192), z)}),
                Int(9216)),
            Int(128));
  EXPECT_EQ(SimpleFloorDivGcd(Mul(Int(49152), x), Mul(Int(96), x)),
            Mul(Int(96), x));
  EXPECT_EQ(SimpleFloorDivGcd(Mul({Int(256), x, y}), Mul(Int(8), x)),
            Mul(Int(8), x));
  EXPECT_EQ(SimpleFloorDivGcd(Add({Mul(x, y), x, y, Int(1)}), Add(x, Int(1))),
            Int(1));
}

// Scenario 28: FloorDiv / ModularIndexing constructor rules.
TEST(ExprTest, FloorDivAndModularIndexingRules) {
  Expr i = S("i"), j = S("j"), r = S("r");
  EXPECT_EQ(Ok(FloorDiv(Mul(r, i), r)), i);
  EXPECT_EQ(Ok(ModularIndexing(Mul(r, i), r, Int(10))),
            Ok(ModularIndexing(i, Int(1), Int(10))));
  EXPECT_EQ(Ok(ModularIndexing(Add(i, Mul(Int(10), j)), Int(1), Int(10))),
            Ok(ModularIndexing(i, Int(1), Int(10))));
  EXPECT_EQ(Ok(ModularIndexing(Add(i, Mul(Int(20), j)), Int(2), Int(10))),
            Ok(ModularIndexing(i, Int(2), Int(10))));
  Expr kept =
      Ok(ModularIndexing(Add(Neg(i), Mul(Int(20), j)), Int(2), Int(10)));
  EXPECT_EQ(Str(kept), "ModularIndexing(-i + 20*j, 2, 10)");
  EXPECT_EQ(Ok(ModularIndexing(Mul(Int(4), i), Int(2), Int(10))),
            Ok(ModularIndexing(Mul(Int(2), i), Int(1), Int(10))));
  EXPECT_EQ(Ok(FloorDiv(Mul(Int(4), i), Int(2))), Mul(Int(2), i));
  // Nesting and term extraction.
  EXPECT_EQ(Ok(FloorDiv(Ok(FloorDiv(i, Int(2))), Int(3))),
            Ok(FloorDiv(i, Int(6))));
  EXPECT_EQ(Str(Ok(FloorDiv(Add(i, Int(8)), Int(4)))), "(i//4) + 2");
  EXPECT_EQ(Ok(ModularIndexing(Ok(FloorDiv(i, Int(4))), Int(2), Int(8))),
            Ok(ModularIndexing(i, Int(8), Int(8))));
  EXPECT_EQ(Ok(CeilDiv(Mul(Int(4), i), Int(2))), Mul(Int(2), i));
  EXPECT_EQ(Str(Ok(CeilDiv(i, Int(4)))), "((i + 3)//4)");
}

TEST(ExprTest, MinMaxFolding) {
  Expr s0 = S("s0"), u = I("u");
  EXPECT_EQ(Max(Int(1), s0), s0);  // s0 >= 1
  EXPECT_EQ(Max(Int(0), s0), s0);
  EXPECT_EQ(Min(Int(1), s0), Int(1));
  EXPECT_EQ(Str(Max(Int(1), u)), "Max(1, u)");
  // Scenario 19's shape: nested Max flattens and folds its constants.
  EXPECT_EQ(Max(Int(1), Max(Int(257), u)), Max(Int(257), u));
  EXPECT_EQ(Max({u, u, Int(3), Int(5)}), Max(Int(5), u));
  EXPECT_EQ(Max(u, IntInfinity()), IntInfinity());
  EXPECT_EQ(Min(u, IntInfinity()), u);
}

TEST(ExprTest, RelationsFoldAndCanonicalize) {
  Expr s0 = S("s0"), s1 = S("s1");
  EXPECT_EQ(Eq(s0, s1), Eq(s1, s0));
  EXPECT_EQ(Gt(s0, s1), Lt(s1, s0));
  EXPECT_EQ(Ge(s0, s1), Le(s1, s0));
  EXPECT_EQ(Eq(Add(s0, Int(1)), s0), Bool(false));
  EXPECT_EQ(Ne(s0, Int(0)), Bool(true));  // s0 positive
  EXPECT_EQ(Lt(s0, Add(s0, Int(1))), Bool(true));
  EXPECT_EQ(Le(s0, s0), Bool(true));
  EXPECT_EQ(Not(Lt(s0, s1)), Le(s1, s0));
  EXPECT_EQ(Not(Not(Eq(s0, s1))), Eq(s0, s1));
  EXPECT_EQ(And(Eq(s0, s1), Bool(true)), Eq(s0, s1));
  EXPECT_EQ(Or(Eq(s0, s1), Bool(true)), Bool(true));
  EXPECT_EQ(And(Eq(s0, s1), Eq(s1, s0)), Eq(s0, s1));
}

TEST(ExprTest, PiecewiseAndIte) {
  Expr t = S("t"), f = S("f");
  Expr r = Ite(Eq(t, Int(5)), t, f);
  EXPECT_EQ(Str(r), "Piecewise((t, Eq(t, 5)), (f, True))");
  EXPECT_EQ(Ite(Bool(true), t, f), t);
  EXPECT_EQ(Ite(Eq(t, f), t, t), t);
  ASSERT_OK_AND_ASSIGN(Value v,
                       Evaluate(r, {{t, Value::Int(5)}, {f, Value::Int(4)}}));
  EXPECT_EQ(v.i, 5);
}

TEST(ExprTest, FloatConversions) {
  Expr a = S("a");
  EXPECT_EQ(Str(Ok(TruncToInt(Ok(IntTrueDiv(a, Int(2)))))),
            "TruncToInt(IntTrueDiv(a, 2))");
  EXPECT_EQ(Str(Mul(Float(2.0), ToFloat(a))), "2.0*ToFloat(a)");
  EXPECT_EQ(Str(OpaqueUnary(UnaryFn::kSqrt, ToFloat(a))),
            "OpaqueUnaryFn_sqrt(ToFloat(a))");
  EXPECT_EQ(Ok(RoundToInt(Float(2.5))), Int(2));  // half to even
  EXPECT_EQ(Ok(RoundToInt(Float(3.5))), Int(4));
  EXPECT_EQ(Ok(FloorToInt(Float(-0.5))), Int(-1));
  EXPECT_EQ(Ok(CeilToInt(Float(-0.5))), Int(0));
  EXPECT_EQ(Ok(TruncToInt(Float(INFINITY))), IntInfinity());
  EXPECT_EQ(Add(Int(1), Float(0.5)), Float(1.5));
  // -0.0 is its own constant, which prints with its sign (an op's scalar
  // operand: x * -0.0 is -0.0 for a positive x).
  EXPECT_NE(Float(-0.0), Float(0.0));
  EXPECT_TRUE(std::signbit(Float(-0.0).float_value()));
  EXPECT_EQ(Str(Float(-0.0)), "-0.0");
}

TEST(ExprTest, FreeSymbolsAndSubstitute) {
  Expr s0 = S("s0"), s1 = S("s1");
  Expr e = Add(Ok(FloorDiv(s0, Int(2))), Mul(s1, s0));
  EXPECT_EQ(FreeSymbols(e), (std::vector<Expr>{s0, s1}));
  Expr sub = Ok(Substitute(e, {{s0, Mul(Int(2), s1)}}));
  EXPECT_EQ(Str(sub), "s1 + 2*s1**2");
  EXPECT_EQ(Ok(Substitute(e, {{s0, Int(4)}, {s1, Int(3)}})), Int(14));
}

TEST(ExprTest, TenThousandTermSumIsLinearish) {
  std::vector<Expr> terms;
  for (int k = 0; k < 10000; ++k) {
    terms.push_back(Mul(Int(k + 1), Symbol(absl::StrCat("v", k))));
  }
  auto start = std::chrono::steady_clock::now();
  Expr sum = Add(terms);
  // Also grown one term at a time (merge, not re-sort).
  Expr grown = Int(0);
  for (int k = 0; k < 2000; ++k) grown = Add(grown, terms[k]);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(sum.num_args(), 10000);
  EXPECT_EQ(grown.num_args(), 2000);
  // Printing, parsing, evaluating and substituting a flat sum recurse only
  // one level deep.
  std::string text = ToString(sum, PrintStyle::kParseable);
  Expr reparsed = Ok(ParseExpr(text));
  EXPECT_EQ(reparsed, sum);
  Assignment values;
  for (Expr s : FreeSymbols(sum)) values[s] = Value::Int(1);
  ASSERT_OK_AND_ASSIGN(Value v, Evaluate(sum, values));
  EXPECT_EQ(v.i, 10000LL * 10001 / 2);
  // A generous bound that still catches quadratic behaviour (seconds, not
  // milliseconds); timing is reported by the benchmark, not asserted.
  EXPECT_LT(seconds, 20.0);
}

}  // namespace
}  // namespace lathe::symbolic
