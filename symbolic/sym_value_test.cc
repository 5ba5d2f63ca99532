#include "symbolic/sym_value.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Guards(const ShapeEnv& env) {
  std::vector<std::string> out;
  for (Expr g : env.guards()) out.push_back(ToString(g));
  return out;
}

SymInt Size(ShapeEnv& env, int64_t hint, int input = 0) {
  return SymInt(env.CreateSymbol(hint, Source::Size(input, 0)), &env);
}

// Scenario 5.
TEST(SymValueTest, SymIntOfIntTrueDivision) {
  ShapeEnv env;
  SymInt a = Size(env, 7);
  SymFloat half = *TrueDiv(a, 2);
  EXPECT_EQ(half.ToString(), "IntTrueDiv(s0, 2)");
  EXPECT_EQ(*(*SymIntOf(half)).GuardInt(), 3);
  EXPECT_THAT(Guards(env), ElementsAre("Eq(TruncToInt(IntTrueDiv(s0, 2)), 3)"));
  ShapeEnv env2;
  SymInt s = Size(env2, 3);
  EXPECT_EQ(*(*SymIntOf(SymFloat(2.0) * SymFloatOf(s))).GuardInt(), 6);
  EXPECT_THAT(Guards(env2), ElementsAre("Eq(TruncToInt(2.0*ToFloat(s0)), 6)"));
}

TEST(SymValueTest, ArithmeticNeverGuards) {
  ShapeEnv env;
  SymInt a = Size(env, 6, 0), b = Size(env, 4, 1);
  SymInt sum = a * 2 + b - 1;
  EXPECT_EQ(sum.ToString(), "2*s0 + s1 - 1");
  EXPECT_EQ(*sum.Hint(), 15);
  EXPECT_EQ((*FloorDivide(a, b)).ToString(), "(s0//s1)");
  EXPECT_EQ((*Modulo(a, b)).ToString(), "Mod(s0, s1)");  // both sizes >= 0
  SymInt u(env.CreateUnbacked(), &env);
  EXPECT_EQ((*Modulo(u, b)).ToString(), "PythonMod(u0, s1)");
  EXPECT_EQ(SymMax(a, b).ToString(), "Max(s0, s1)");
  SymBool lt = a < b;
  EXPECT_EQ(lt.ToString(), "s0 < s1");
  EXPECT_EQ(SymIte(lt, a, b).ToString(),
            "Piecewise((s0, s0 < s1), (s1, True))");
  EXPECT_TRUE(env.guards().empty());
  EXPECT_FALSE(*lt.GuardBool());
  EXPECT_THAT(Guards(env), ElementsAre("s1 <= s0"));
}

TEST(SymValueTest, ConstantsStayConstant) {
  SymInt a = 7, b = 2;
  EXPECT_TRUE((a * b).is_constant());
  EXPECT_EQ(*(*FloorDivide(-a, b)).GuardInt(), -4);
  EXPECT_EQ(*(*Modulo(-a, b)).GuardInt(), 1);
  EXPECT_EQ(*(*TrueDiv(a, b)).GuardFloat(), 3.5);
  EXPECT_EQ(*(*Power(b, 10)).GuardInt(), 1024);
  EXPECT_FALSE(FloorDivide(a, 0).ok());
  EXPECT_FALSE(Power(b, -1).ok());
}

TEST(SymValueTest, PowerGuardsANaturalExponent) {
  ShapeEnv env;
  SymInt n(env.CreateScalarSymbol(3, Source::Scalar(0)), &env);
  SymInt p = *Power(SymInt(2), n);
  EXPECT_EQ(p.ToString(), "2**s0");
  EXPECT_EQ(*p.Hint(), 8);
  EXPECT_THAT(Guards(env), ElementsAre("0 <= s0"));
}

TEST(SymValueTest, BoolConversionOfASize) {
  ShapeEnv env;
  SymInt a = Size(env, 5);
  EXPECT_TRUE(*a.GuardBool());  // a != 0: known from the range
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(SymIntOf(a == 5).ToString(),
            "Piecewise((1, Eq(s0, 5)), (0, True))");
}

}  // namespace
}  // namespace lathe::symbolic
