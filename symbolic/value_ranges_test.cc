#include "symbolic/value_ranges.h"

#include <cmath>

#include "gtest/gtest.h"
#include "symbolic/expr.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

ValueRange R(IntBound lo, IntBound hi) { return ValueRange::Int(lo, hi); }

// Scenario 30.
TEST(ValueRangesTest, IntInfinityArithmetic) {
  EXPECT_EQ(RangeMul(R(0, 0), ValueRange::IntUnknown()), R(0, 0));
  EXPECT_EQ(RangeAdd(R(kIntInf, kIntInf), R(1, 1)), R(kIntInf, kIntInf));
  EXPECT_EQ(RangeAdd(R(1, 1), RangeNeg(R(kIntInf, kIntInf))),
            R(-kIntInf, -kIntInf));
  EXPECT_EQ(R(2, kIntInf).ToString(), "[2, int_oo]");
  EXPECT_EQ(ValueRange::Float(-INFINITY, 0.5).ToString(), "[-oo, 0.5]");
  // int_oo overflow of int64 arithmetic saturates.
  EXPECT_EQ(RangeMul(R(1LL << 40, 1LL << 40), R(1LL << 40, 1LL << 40)),
            R(kIntInf, kIntInf));
}

TEST(ValueRangesTest, FloorDivTakesCornersAndRefusesZero) {
  EXPECT_EQ(RangeFloorDiv(R(-7, 7), R(2, 2)), R(-4, 3));
  EXPECT_EQ(RangeFloorDiv(R(1, 10), R(-2, -1)), R(-10, -1));
  EXPECT_EQ(RangeFloorDiv(R(1, 10), R(-1, 1)), ValueRange::IntUnknown());
  EXPECT_EQ(RangeFloorDiv(R(2, kIntInf), R(2, 2)), R(1, kIntInf));
}

TEST(ValueRangesTest, ModSemantics) {
  // C semantics: sign of the dividend; linear inside one quotient class.
  EXPECT_EQ(RangeCMod(R(5, 7), R(8, 8)), R(5, 7));
  EXPECT_EQ(RangeCMod(R(5, 9), R(8, 8)), R(0, 7));
  EXPECT_EQ(RangeCMod(R(-9, -5), R(8, 8)), R(-7, 0));
  EXPECT_EQ(RangeCMod(R(-3, 20), R(8, 8)), R(-3, 7));
  EXPECT_EQ(RangeCMod(R(0, 3), R(2, kIntInf)), R(0, 3));
  // Python semantics: sign of the divisor.
  EXPECT_EQ(RangePythonMod(R(-9, -5), R(8, 8)), R(0, 7));  // {7, 0, 1, 2, 3}
  EXPECT_EQ(RangePythonMod(R(-7, -5), R(8, 8)), R(1, 3));
  EXPECT_EQ(RangePythonMod(R(-100, 100), R(8, 8)), R(0, 7));
  EXPECT_EQ(RangePythonMod(R(-100, 100), R(-8, -8)), R(-7, 0));
}

TEST(ValueRangesTest, BoundOfExpressions) {
  Expr s0 = Symbol("s0", SymbolType::kInt, {.positive = true});
  Expr u = Symbol("u");
  RangeLookup lookup = [&](Expr s) -> std::optional<ValueRange> {
    if (s == s0) return R(2, kIntInf);
    if (s == u) return R(-3, 5);
    return std::nullopt;
  };
  EXPECT_EQ(Bound(Sub(s0, Int(1)), lookup), R(1, kIntInf));
  Expr v = Symbol("v");
  EXPECT_EQ(Bound(Mul(u, v), [&](Expr) { return R(-3, 5); }), R(-15, 25));
  EXPECT_EQ(Bound(Mul(u, u), lookup), R(0, 25));  // u**2, not two factors
  EXPECT_EQ(Bound(Ok(ModularIndexing(u, Int(1), Int(4))), lookup), R(0, 3));
  EXPECT_EQ(Bound(Max(Int(1), u), lookup), R(1, 5));
  EXPECT_EQ(Bound(Lt(u, s0), lookup).ToString(), "{False, True}");
  EXPECT_EQ(Bound(Lt(u, Add(s0, Int(4))), lookup).ToString(), "{True}");
  EXPECT_EQ(Bound(Eq(Mul(Int(2), s0), Int(5)), lookup).ToString(),
            "{False, True}");  // ranges alone do not see parity
  EXPECT_EQ(Bound(Eq(Mul(Int(2), s0), Int(3)), lookup).ToString(), "{False}");
  EXPECT_EQ(Bound(Ne(s0, Int(1)), lookup).ToString(), "{True}");
  EXPECT_EQ(Bound(ToFloat(u), lookup), ValueRange::Float(-3, 5));
  EXPECT_EQ(Bound(Ok(IntTrueDiv(u, s0)), lookup), ValueRange::Float(-1.5, 2.5));
  // Default ranges from assumptions.
  EXPECT_EQ(Bound(s0), R(1, kIntInf));
  EXPECT_EQ(Bound(u), ValueRange::IntUnknown());
}

TEST(ValueRangesTest, ContainsIntersectUnion) {
  EXPECT_TRUE(R(2, kIntInf).Contains(R(5, 9)));
  EXPECT_FALSE(R(2, kIntInf).Contains(R(1, 9)));
  EXPECT_EQ(R(2, 10).Intersect(R(5, kIntInf)), R(5, 10));
  EXPECT_TRUE(R(5, 4).IsEmpty());
  EXPECT_EQ(R(2, 3).Union(R(7, 9)), R(2, 9));
  EXPECT_EQ(R(4, 4).Singleton(), Int(4));
  EXPECT_FALSE(R(kIntInf, kIntInf).Singleton().has_value());
}

}  // namespace
}  // namespace lathe::symbolic
