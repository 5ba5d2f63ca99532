#include "symbolic/shape_env.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolic/expr.h"
#include "symbolic/parser.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

std::string Str(Expr e) { return ToString(e); }

std::vector<std::string> Strs(const std::vector<Expr>& es) {
  std::vector<std::string> out;
  for (Expr e : es) out.push_back(Str(e));
  return out;
}

Expr Sym(ShapeEnv& env, int64_t hint, int input = 0) {
  return env.CreateSymbol(hint, Source::Size(input, 0));
}

// Static answer: "true", "false" or "unknown".
std::string Static(ShapeEnv& env, Expr cond) {
  std::optional<Expr> v = env.MaybeEvaluateStatic(cond);
  if (!v) return "unknown";
  return v->is_true() ? "true" : "false";
}

// Scenario 1.
TEST(ShapeEnvTest, IntConversionGuards) {
  ShapeEnv env;
  Expr a = Sym(env, 2);
  EXPECT_EQ(Str(a), "s0");
  EXPECT_EQ(*env.GuardInt(a), 2);
  EXPECT_THAT(Strs(env.guards()), ElementsAre("Eq(s0, 2)"));
  EXPECT_EQ(env.Replace(a), Int(2));  // the guard pinned the range
}

// Scenario 2.
TEST(ShapeEnvTest, ZeroOneSpecializationHidesGuards) {
  ShapeEnv env;
  Expr a = Sym(env, 5);
  EXPECT_TRUE(*env.EvaluateBool(Ne(a, Int(1))));
  EXPECT_TRUE(env.guards().empty());
  ShapeEnv off(ShapeEnvSettings{.specialize_zero_one = false});
  Expr b = Sym(off, 5);
  EXPECT_TRUE(*off.EvaluateBool(Ne(b, Int(1))));
  EXPECT_EQ(off.guards().size(), 1u);
  EXPECT_EQ(Sym(env, 1), Int(1));
  EXPECT_EQ(Sym(env, 0), Int(0));
  EXPECT_TRUE(Sym(off, 1).is_symbol());
}

// Scenario 3.
TEST(ShapeEnvTest, DuckSizing) {
  ShapeEnv env;
  Expr a = Sym(env, 5, 0), b = Sym(env, 5, 1);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(*env.EvaluateBool(Eq(a, b)));
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(env.SourcesOf(a).size(), 2u);
  ShapeEnv no_duck(ShapeEnvSettings{.duck_shape = false});
  Expr c = Sym(no_duck, 5, 0), d = Sym(no_duck, 5, 1);
  EXPECT_NE(c, d);
  EXPECT_TRUE(*no_duck.EvaluateBool(Eq(c, d)));
  EXPECT_EQ(no_duck.guards().size(), 1u);
}

// Scenario 4.
TEST(ShapeEnvTest, TruthinessOfASizeNeedsNoGuard) {
  ShapeEnv env;
  Expr a = Sym(env, 5);
  EXPECT_TRUE(*env.EvaluateBool(Ne(a, Int(0))));
  EXPECT_TRUE(env.guards().empty());
}

// Scenario 6.
TEST(ShapeEnvTest, FloorAndCeilOfTrueDivision) {
  ShapeEnv env;
  Expr a = Sym(env, 5);
  EXPECT_EQ(*env.GuardInt(Ok(FloorToInt(Ok(IntTrueDiv(a, Int(2)))))), 2);
  EXPECT_EQ(*env.GuardInt(Ok(CeilToInt(Ok(IntTrueDiv(a, Int(2)))))), 3);
  EXPECT_THAT(Strs(env.guards()),
              ElementsAre("Eq(FloorToInt(IntTrueDiv(s0, 2)), 2)",
                          "Eq(CeilToInt(IntTrueDiv(s0, 2)), 3)"));
  // Together those guards pin s0 to 5 (lathe solves them for s0's range;
  // PyTorch would guard a third time here).
  EXPECT_EQ(env.RangeOf(a).ToString(), "[5, 5]");
  EXPECT_EQ(*env.GuardInt(Ok(FloorToInt(Mul(Float(3.0), ToFloat(a))))), 15);
  EXPECT_EQ(env.guards().size(), 2u);
  ShapeEnv fresh;
  Expr b = Sym(fresh, 5);
  EXPECT_EQ(*fresh.GuardInt(Ok(FloorToInt(Mul(Float(3.0), ToFloat(b))))), 15);
  EXPECT_THAT(Strs(fresh.guards()),
              ElementsAre("Eq(FloorToInt(3.0*ToFloat(s0)), 15)"));
}

// Scenario 7.
TEST(ShapeEnvTest, Sqrt) {
  ShapeEnv env;
  Expr a = Sym(env, 4);
  EXPECT_EQ(*env.GuardFloat(OpaqueUnary(UnaryFn::kSqrt, ToFloat(a))), 2.0);
  EXPECT_THAT(Strs(env.guards()),
              ElementsAre("Eq(OpaqueUnaryFn_sqrt(ToFloat(s0)), 2.0)"));
}

// Scenario 8.
TEST(ShapeEnvTest, IteDoesNotGuardUntilEvaluated) {
  ShapeEnv env;
  Expr t = Sym(env, 5, 0), f = Sym(env, 4, 1);
  Expr r = Ite(Eq(t, Int(5)), t, f);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(*env.GuardInt(r), 5);
  EXPECT_THAT(Strs(env.guards()),
              ElementsAre("Eq(Piecewise((s0, Eq(s0, 5)), (s1, True)), 5)"));
}

// Scenario 9.
TEST(ShapeEnvTest, DataDependentError) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  absl::StatusOr<bool> b = env.EvaluateBool(Eq(u, Int(0)));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(IsDataDependentError(b.status()));
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("Could not guard on data-dependent expression "
                        "Eq(u0, 0)"));
  env.SetUnbackedHint(u, 0);
  EXPECT_TRUE(*env.EvaluateBool(Eq(u, Int(0))));
  EXPECT_TRUE(env.guards().empty());  // a runtime assert, not a guard
  EXPECT_EQ(env.deferred_runtime_asserts().at(u).size(), 1u);
}

// Scenario 10.
TEST(ShapeEnvTest, ExpectTrueCreatesAReplacement) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  ASSERT_OK(env.ExpectTrue(Eq(u, Int(0))));
  EXPECT_EQ(env.ReplacementOf(u), Int(0));
}

// Scenario 11.
TEST(ShapeEnvTest, DeferredAssertKeyedOnTheUnbackedSymbol) {
  ShapeEnv env;
  Expr s = Sym(env, 5);
  Expr u = env.CreateUnbacked();
  ASSERT_OK(env.ExpectTrue(Lt(u, s)));
  ASSERT_TRUE(env.deferred_runtime_asserts().contains(u));
  EXPECT_EQ(env.deferred_runtime_asserts().at(u)[0].expr, Lt(u, s));
  EXPECT_TRUE(*env.EvaluateBool(Lt(u, s)));
  EXPECT_TRUE(*env.EvaluateBool(Ne(u, s)));
  EXPECT_FALSE(*env.EvaluateBool(Gt(u, s)));
  EXPECT_FALSE(*env.EvaluateBool(Ge(u, s)));
  EXPECT_TRUE(env.guards().empty());
}

// Scenario 12.
TEST(ShapeEnvTest, AssertKeyIsTheLatestUnbackedSymbolNumerically) {
  ShapeEnv env;
  Expr u0 = env.CreateUnbacked(), u1 = env.CreateUnbacked();
  ASSERT_OK(env.ExpectTrue(Eq(Add(u0, u1), Int(10))));
  EXPECT_TRUE(env.deferred_runtime_asserts().contains(u1));
  ShapeEnv many;
  std::vector<Expr> us;
  for (int i = 0; i < 11; ++i) us.push_back(many.CreateUnbacked());
  ASSERT_OK(many.ExpectTrue(Eq(Add(us), Int(20))));
  EXPECT_TRUE(many.deferred_runtime_asserts().contains(us[10]));
  EXPECT_EQ(Str(us[10]), "u10");
}

// Scenario 13.
TEST(ShapeEnvTest, NoUnbackedSymbolIsReplacedByALaterOne) {
  ShapeEnv env;
  Expr u0 = env.CreateUnbackedSizeLike(), u1 = env.CreateUnbackedSizeLike();
  ASSERT_OK(env.ExpectTrue(Eq(u0, Mul(Int(4), u1))));
  EXPECT_EQ(env.Replace(u0), u0);
  ASSERT_OK(env.ExpectTrue(Eq(u0, Sub(Int(10), u1))));
  EXPECT_EQ(env.Replace(u0), u0);
}

// Scenario 14: each spelling of u > 4 refines the range the same way.
TEST(ShapeEnvTest, RangeRefinementFromAnAssert) {
  for (int spelling = 0; spelling < 4; ++spelling) {
    ShapeEnv env;
    Expr u = env.CreateUnbacked();
    Expr cond = spelling == 0   ? Gt(u, Int(4))
                : spelling == 1 ? Lt(Int(4), u)
                : spelling == 2 ? Ge(u, Int(5))
                                : Le(Int(5), u);
    ASSERT_OK(env.ExpectTrue(cond));
    SCOPED_TRACE(Str(cond));
    EXPECT_EQ(Static(env, Ne(u, Int(3))), "true");
    EXPECT_EQ(Static(env, Ne(u, Int(4))), "true");
    EXPECT_EQ(Static(env, Gt(u, Int(4))), "true");
    EXPECT_EQ(Static(env, Ge(u, Int(5))), "true");
    EXPECT_EQ(Static(env, Ne(u, Int(5))), "unknown");
    EXPECT_EQ(Static(env, Ne(u, Int(6))), "unknown");
  }
}

// Scenario 15.
TEST(ShapeEnvTest, RangeRefinementFromAGuard) {
  ShapeEnv env;
  Expr s = env.CreateSymbol(10, Source::Size(0, 0), DimDynamic::kDynamic);
  EXPECT_TRUE(*env.EvaluateBool(Gt(s, Int(4))));
  EXPECT_EQ(Static(env, Ge(s, Int(5))), "true");
  EXPECT_EQ(Static(env, Ne(s, Int(4))), "true");
  ShapeEnv small;
  Expr t = small.CreateSymbol(2, Source::Size(0, 0), DimDynamic::kDynamic);
  EXPECT_FALSE(*small.EvaluateBool(Gt(t, Int(4))));
  EXPECT_EQ(Static(small, Le(t, Int(4))), "true");
  EXPECT_EQ(Static(small, Ne(t, Int(5))), "true");
}

// Scenario 16.
TEST(ShapeEnvTest, StaticallyKnownTrueNeverGuards) {
  ShapeEnv env;
  Expr s2 = Sym(env, 2, 0), s3 = Sym(env, 3, 1), s4 = Sym(env, 4, 2);
  EXPECT_TRUE(env.StaticallyKnownTrue(Eq(s2, s2)));
  EXPECT_TRUE(env.StaticallyKnownTrue(Gt(Mul(s2, s3), s3)));
  EXPECT_TRUE(env.StaticallyKnownTrue(Gt(Mul(s3, s4), s4)));
  EXPECT_TRUE(
      env.StaticallyKnownTrue(Eq(Ok(Mod(Add(s3, s3), Int(2))), Int(0))));
  EXPECT_FALSE(env.StaticallyKnownTrue(Eq(Add(s2, s2), s4)));
  EXPECT_FALSE(env.StaticallyKnownTrue(Eq(Ok(Mod(s4, s2)), Int(0))));
  EXPECT_FALSE(env.StaticallyKnownTrue(Ne(s2, s3)));
  EXPECT_FALSE(env.StaticallyKnownTrue(Gt(Mul(s3, s4), s2)));
  EXPECT_FALSE(env.StaticallyKnownTrue(Eq(s2, s3)));
  EXPECT_TRUE(env.guards().empty());
}

// Scenario 17. lathe refines u to [3, 5] from the assert, so the CleanDiv
// form is also decided by ranges (PyTorch leaves it unknown: weaker ranges).
TEST(ShapeEnvTest, FloorDivAndCleanDivAxioms) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  Expr floor_eq = Eq(Ok(FloorDiv(u, Int(3))), Int(1));
  ASSERT_OK(env.ExpectTrue(floor_eq));
  EXPECT_TRUE(*env.EvaluateBool(floor_eq));
  EXPECT_EQ(env.RangeOf(u).ToString(), "[3, 5]");
  ASSERT_OK(env.ExpectTrue(Eq(Ok(Mod(u, Int(3))), Int(0))));
  EXPECT_EQ(env.Simplify(floor_eq), Eq(Ok(CleanDiv(u, Int(3))), Int(1)));
  EXPECT_TRUE(*env.EvaluateBool(floor_eq));
  EXPECT_TRUE(*env.EvaluateBool(Eq(Ok(CleanDiv(u, Int(3))), Int(1))));
  EXPECT_TRUE(env.guards().empty());
}

// Scenario 18.
TEST(ShapeEnvTest, DivisibilityChain) {
  ShapeEnv env;
  Expr s = Sym(env, 8);
  Expr half = Ok(FloorDiv(s, Int(2)));
  EXPECT_TRUE(*env.EvaluateBool(Eq(Ok(Mod(s, Int(2))), Int(0))));
  EXPECT_TRUE(*env.EvaluateBool(Eq(Ok(Mod(s, half)), Int(0))));
  EXPECT_TRUE(*env.EvaluateBool(Eq(Mul(Int(2), half), s)));
  EXPECT_TRUE(env.StaticallyKnownTrue(Eq(Ok(FloorDiv(s, half)), Int(2))));
}

// Scenario 19.
TEST(ShapeEnvTest, MaxFolding) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  EXPECT_TRUE(env.StaticallyKnownTrue(
      Eq(Max(Int(1), Max(Int(257), u)), Max(Int(257), u))));
}

// Scenario 22.
TEST(ShapeEnvTest, PreferDeferredRuntimeAsserts) {
  ShapeEnv env(
      ShapeEnvSettings{.prefer_deferred_runtime_asserts_over_guards = true});
  Expr s = Sym(env, 2);
  EXPECT_EQ(*env.GuardInt(s), 2);
  EXPECT_THAT(Strs(env.guards()), ElementsAre("Eq(s0, 2)"));
  ShapeEnv env2(
      ShapeEnvSettings{.prefer_deferred_runtime_asserts_over_guards = true});
  Expr t = Sym(env2, 2);
  ASSERT_OK(env2.ExpectTrue(Eq(t, Int(2))));
  EXPECT_TRUE(env2.guards().empty());
  ASSERT_TRUE(env2.deferred_runtime_asserts().contains(Expr()));
  EXPECT_EQ(env2.deferred_runtime_asserts().at(Expr())[0].expr, Eq(t, Int(2)));
}

// Scenario 25.
TEST(ShapeEnvTest, StrideInference) {
  ShapeEnv env;
  std::vector<Expr> sizes, strides;
  env.CreateSymbolicSizesStrides({5, 8}, {8, 1}, 0,
                                 {DimDynamic::kDynamic, DimDynamic::kDynamic},
                                 &sizes, &strides);
  EXPECT_THAT(Strs(sizes), ElementsAre("s0", "s1"));
  EXPECT_THAT(Strs(strides), ElementsAre("s1", "1"));
  ShapeEnv static_env;
  static_env.CreateSymbolicSizesStrides(
      {5, 8}, {8, 1}, 0, {DimDynamic::kStatic, DimDynamic::kStatic}, &sizes,
      &strides);
  EXPECT_THAT(Strs(sizes), ElementsAre("5", "8"));
  EXPECT_THAT(Strs(strides), ElementsAre("8", "1"));
  // A transposed view: strides through the other dimension.
  ShapeEnv t;
  t.CreateSymbolicSizesStrides({4, 6}, {1, 4}, 0, {}, &sizes, &strides);
  EXPECT_THAT(Strs(strides), ElementsAre("1", "s0"));
}

// Scenario 26.
TEST(ShapeEnvTest, TrySolveWithFloorDiv) {
  Expr a = Symbol("a", SymbolType::kInt, {.positive = true});
  Expr pos = Symbol("pos", SymbolType::kInt, {.positive = true});
  auto solved = TrySolve(Eq(Ok(FloorDiv(Add(a, Int(10)), Int(3))), Int(3)), a);
  ASSERT_TRUE(solved.has_value());
  EXPECT_EQ(Str(*solved), "a < 2");
  solved = TrySolve(Eq(Ok(FloorDiv(Sub(Int(10), a), Int(2))), Int(4)), a);
  ASSERT_TRUE(solved.has_value());
  EXPECT_EQ(Str(*solved), "a <= 2");
  Expr k = Symbol("k");
  // (k + 1)*pos, expanded.
  EXPECT_EQ(TrySolve(Gt(Ok(FloorDiv(a, pos)), k), a),
            Ge(a, Add(Mul(k, pos), pos)));
  EXPECT_EQ(TrySolve(Le(Ok(FloorDiv(a, pos)), k), a),
            Lt(a, Add(Mul(k, pos), pos)));
  Expr maybe_negative = Symbol("m");
  EXPECT_FALSE(TrySolve(Gt(Ok(FloorDiv(a, maybe_negative)), k), a).has_value());
}

TEST(ShapeEnvTest, CanonicalRelationsCompareEqual) {
  Expr s0 = Symbol("s0"), s1 = Symbol("s1");
  EXPECT_EQ(CanonicalRelation(Gt(s0, Int(4))),
            CanonicalRelation(Ge(s0, Int(5))));
  EXPECT_EQ(CanonicalRelation(Lt(Mul(Int(2), s0), Mul(Int(2), s1))),
            CanonicalRelation(Le(Add(s0, Int(1)), s1)));
  EXPECT_EQ(CanonicalRelation(Eq(Mul(Int(2), s0), Int(3))), Bool(false));
}

TEST(ShapeEnvTest, GuardOrFalseAndTrueNeverRaise) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  EXPECT_FALSE(env.GuardOrFalse(Eq(u, Int(1))));
  EXPECT_TRUE(env.GuardOrTrue(Eq(u, Int(1))));
  EXPECT_TRUE(env.GuardOrFalse(Eq(u, u)));
  EXPECT_TRUE(env.guards().empty());
}

TEST(ShapeEnvTest, SizeObliviousAssumesAtLeastTwo) {
  ShapeEnv env;
  Expr u = env.CreateUnbackedSizeLike();
  EXPECT_FALSE(env.EvaluateBool(Eq(u, Int(1))).ok());
  EXPECT_FALSE(*env.GuardSizeOblivious(Eq(u, Int(1))));
  EXPECT_TRUE(*env.GuardSizeOblivious(Ne(u, Int(0))));
}

TEST(ShapeEnvTest, GuardCounterSpecializesPastTheLimit) {
  ShapeEnv env(ShapeEnvSettings{.symbol_guard_limit_before_specialize = 3});
  Expr s = Sym(env, 12);
  for (int k : {20, 21, 22, 23}) {
    EXPECT_TRUE(*env.EvaluateBool(Ne(s, Int(k))));
  }
  EXPECT_EQ(env.Replace(s), Int(12));
  EXPECT_THAT(Strs(env.guards()), ::testing::Contains("Eq(s0, 12)"));
}

TEST(ShapeEnvTest, ExpectTrueOfAFalseConditionIsAnError) {
  ShapeEnv env;
  Expr s = Sym(env, 5);
  absl::Status st = env.ExpectTrue(Lt(s, Int(0)));
  EXPECT_THAT(std::string(st.message()), HasSubstr("always false"));
  absl::Status hint = env.ExpectTrue(Lt(s, Int(3)));
  EXPECT_THAT(std::string(hint.message()),
              HasSubstr("false for the example inputs"));
}

TEST(ShapeEnvTest, CachesAreKeyedOnTheVersion) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  EXPECT_EQ(Static(env, Gt(u, Int(4))), "unknown");
  int64_t before = env.version();
  ASSERT_OK(env.ExpectTrue(Gt(u, Int(4))));
  EXPECT_GT(env.version(), before);
  EXPECT_EQ(Static(env, Gt(u, Int(4))), "true");  // not the stale answer
}

TEST(ShapeEnvTest, BackedFloatSymbols) {
  ShapeEnv env;
  Expr zf = env.CreateFloatSymbol(0.5, Source::Scalar(1));
  EXPECT_EQ(Str(zf), "zf0");
  EXPECT_TRUE(zf.is_float());
  EXPECT_EQ(*env.GuardFloat(Mul(Float(2.0), zf)), 1.0);
  EXPECT_THAT(Strs(env.guards()), ElementsAre("Eq(2.0*zf0, 1.0)"));
}

}  // namespace
}  // namespace lathe::symbolic
namespace lathe::symbolic {
namespace {

TEST(ShapeEnvTest, ReplacementsAreResolvedTransitively) {
  ShapeEnv env;
  Expr a = Sym(env, 4, 0), b = Sym(env, 8, 1), c = Sym(env, 16, 2);
  ASSERT_TRUE(*env.EvaluateBool(Eq(c, Mul(Int(2), b))));
  ASSERT_TRUE(*env.EvaluateBool(Eq(b, Mul(Int(2), a))));
  EXPECT_EQ(env.ReplacementOf(c), Mul(Int(4), a));  // compressed
  EXPECT_EQ(env.Replace(Add(b, c)), Mul(Int(6), a));
}

TEST(ShapeEnvTest, ModOfAnUnbackedMultipleIntroducesAFreshSymbol) {
  ShapeEnv env;
  Expr u0 = env.CreateUnbacked();
  ASSERT_OK(env.ExpectTrue(Eq(Ok(PythonMod(Mul(Int(6), u0), Int(8))), Int(0))));
  EXPECT_EQ(Str(env.Replace(u0)), "4*u1");  // 6*u0 % 8 == 0  <=>  4 | u0
}

}  // namespace
}  // namespace lathe::symbolic
namespace lathe::symbolic {
namespace {

// Scenario 24.
TEST(ShapeEnvTest, CongruenceReduction) {
  Expr s = Symbol("s", SymbolType::kInt, {.positive = true});
  std::vector<Congruence> cs = {
      {s, 2, 2}, {s, 2, 8}, {s, 2, 4}, {s, 1, 2}, {Add(s, Int(32)), 16, 4}};
  ASSERT_OK_AND_ASSIGN(Expr r, ReduceCongruences(s, cs));
  EXPECT_EQ(Str(r), "Eq(Mod(s + 32, 64), 0)");
  // Every s in [0, 4096) satisfies all of them exactly when it satisfies r.
  for (int64_t v = 0; v < 4096; ++v) {
    bool all = (v / 2) % 2 == 0 && v % 2 == 0 && (v / 2) % 8 == 0 &&
               (v / 2) % 4 == 0 && v % 16 == 0 && ((v / 16) + 2) % 4 == 0;
    EXPECT_EQ(all, (v + 32) % 64 == 0) << v;
  }
  EXPECT_EQ(*ReduceCongruences(s, {}), Bool(true));
  std::vector<Congruence> contradiction = {{s, 1, 2}, {Add(s, Int(1)), 1, 2}};
  EXPECT_FALSE(ReduceCongruences(s, contradiction).ok());
  std::vector<Congruence> odd_multiple = {{Mul(Int(3), s), 1, 9}};
  EXPECT_EQ(Str(*ReduceCongruences(s, odd_multiple)), "Eq(Mod(s, 3), 0)");
}

}  // namespace
}  // namespace lathe::symbolic

namespace lathe::symbolic {
namespace {

TEST(ShapeEnvDeclareTest, HintedSymbolsAreBackedSizesUnhintedAreUnbacked) {
  ShapeEnv env;
  Expr s0 = DefaultSymbol("s0"), s1 = DefaultSymbol("s1");
  ASSERT_OK(env.DeclareSymbol(s0, Value::Int(8), Source::Size(0, 0)));
  ASSERT_OK(env.DeclareSymbol(s1, std::nullopt, Source::Size(0, 1)));
  EXPECT_EQ(env.HintOf(s0)->i, 8);
  EXPECT_FALSE(env.IsUnbacked(s0));
  EXPECT_TRUE(env.IsUnbacked(s1));
  EXPECT_EQ(env.RangeOf(s0).ToString(), "[2, int_oo]");
}

// As PyTorch's ShapeEnv: an example size of 0 or 1 is specialized (the
// symbol is replaced by the constant and the guards check it).
TEST(ShapeEnvDeclareTest, ZeroOneHintsSpecialize) {
  ShapeEnv env;
  Expr s0 = DefaultSymbol("s0"), s1 = DefaultSymbol("s1");
  ASSERT_OK(env.DeclareSymbol(s0, Value::Int(1), Source::Size(0, 0)));
  ASSERT_OK(env.DeclareSymbol(s1, Value::Int(0), Source::Size(0, 1)));
  EXPECT_EQ(env.Simplify(Add(s0, Int(2))), Int(3));
  EXPECT_EQ(env.Simplify(s1), Int(0));
  EXPECT_EQ(env.RangeOf(s0).ToString(), "[1, 1]");
  ShapeEnvSettings settings;
  settings.specialize_zero_one = false;
  ShapeEnv plain(settings);
  ASSERT_OK(plain.DeclareSymbol(s0, Value::Int(1), Source::Size(0, 0)));
  EXPECT_EQ(plain.Simplify(s0), s0);
}

TEST(ShapeEnvDeclareTest, Errors) {
  ShapeEnv env;
  Expr s0 = DefaultSymbol("s0");
  ASSERT_OK(env.DeclareSymbol(s0, Value::Int(8), Source::Size(0, 0)));
  absl::Status again = env.DeclareSymbol(s0, Value::Int(8), Source::Size(0, 0));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(), "s0 is already declared");
  absl::Status range = env.ConstrainRange(s0, 10, 20);
  EXPECT_EQ(range.message(), "hint 8 of s0 is outside the range [10, 20]");
  absl::Status type = env.DeclareSymbol(DefaultSymbol("s2"), Value::Float(1.5),
                                        Source::Size(0, 2));
  EXPECT_EQ(type.message(), "hint 1.5 does not match the type of s2");
  absl::Status notsym =
      env.DeclareSymbol(Add(s0, Int(1)), std::nullopt, Source::Size(0, 3));
  EXPECT_EQ(notsym.message(), "DeclareSymbol of s0 + 1, which is not a symbol");
}

}  // namespace
}  // namespace lathe::symbolic
