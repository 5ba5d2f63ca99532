#include "symbolic/parser.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

// One expression of every kind, over symbols of every flavour.
std::vector<Expr> EveryKind() {
  Expr s0 = Symbol("s0", SymbolType::kInt, {.positive = true});
  Expr s1 = Symbol("s1", SymbolType::kInt, {.positive = true});
  Expr u0 = Symbol("u0", SymbolType::kInt);
  Expr i0 = Symbol("i0", SymbolType::kInt, {.nonnegative = true});
  Expr zf0 = Symbol("zf0", SymbolType::kFloat);
  return {
      Int(7),
      Int(-3),
      Float(2.5),
      Float(-0.1),
      Float(1e-300),
      Float(INFINITY),
      Float(-INFINITY),
      Float(NAN),
      IntInfinity(),
      IntInfinity(-1),
      Bool(true),
      Bool(false),
      s0,
      u0,
      zf0,
      Add({Mul(Int(2), s0), Neg(s1), Int(1)}),
      Mul({Int(-4), s0, s1}),
      Ok(PowByNatural(s0, Int(3))),
      Ok(PowByNatural(s0, s1)),
      Ok(FloatPow(zf0, Float(0.5))),
      Ok(FloorDiv(s0, Int(2))),
      Ok(FloorDiv(Add(s0, Int(1)), Mul(Int(2), s1))),
      Ok(CleanDiv(s0, s1)),
      Ok(ModularIndexing(i0, Int(4), Int(8))),
      Ok(Mod(s0, Int(3))),
      Ok(PythonMod(u0, Int(3))),
      Min(s0, u0),
      Max({Int(1), u0, s1}),
      Ok(IntTrueDiv(s0, Int(2))),
      Ok(FloatTrueDiv(zf0, ToFloat(s0))),
      ToFloat(u0),
      Ok(TruncToInt(zf0)),
      Ok(FloorToInt(zf0)),
      Ok(CeilToInt(zf0)),
      Ok(RoundToInt(zf0)),
      OpaqueUnary(UnaryFn::kSqrt, ToFloat(s0)),
      OpaqueUnary(UnaryFn::kTanh, zf0),
      Eq(s0, Int(2)),
      Ne(u0, s1),
      Lt(u0, s0),
      Le(Mul(Int(2), u0), s1),
      And(Eq(s0, s1), Lt(u0, Int(4))),
      Or(Eq(s0, s1), Lt(u0, Int(4))),
      Not(Eq(zf0, Float(1.0))),
      Ite(Eq(u0, Int(5)), s0, s1),
      Ite(Lt(zf0, Float(0.0)), Neg(zf0), zf0),
  };
}

TEST(ParserTest, PrintThenParseGivesTheSameExpressionForEveryKind) {
  std::vector<Expr> all = EveryKind();
  std::vector<Expr> symbols;
  for (Expr e : all) {
    for (Expr s : FreeSymbols(e)) symbols.push_back(s);
  }
  for (Expr e : all) {
    std::string text = ToString(e, PrintStyle::kParseable);
    absl::StatusOr<Expr> back = ParseExpr(text, symbols);
    ASSERT_OK(back) << text;
    EXPECT_EQ(*back, e) << text << " came back as "
                        << ToString(*back, PrintStyle::kParseable);
  }
}

TEST(ParserTest, PythonOperatorsMeanWhatPythonMeans) {
  Expr s0 = DefaultSymbol("s0"), u0 = DefaultSymbol("u0");
  EXPECT_EQ(Ok(ParseExpr("s0 // 2")), Ok(FloorDiv(s0, Int(2))));
  EXPECT_EQ(Ok(ParseExpr("s0 % 2")), Ok(Mod(s0, Int(2))));  // s0 >= 1
  EXPECT_EQ(Ok(ParseExpr("u0 % 2")), Ok(PythonMod(u0, Int(2))));
  EXPECT_EQ(Ok(ParseExpr("s0 / 2")), Ok(IntTrueDiv(s0, Int(2))));
  EXPECT_EQ(Ok(ParseExpr("s0 / 2.0")),
            Ok(FloatTrueDiv(ToFloat(s0), Float(2.0))));
  EXPECT_EQ(Ok(ParseExpr("-s0**2")), Neg(Ok(PowByNatural(s0, Int(2)))));
  EXPECT_EQ(Ok(ParseExpr("2**3**2")), Int(512));  // right-associative
  EXPECT_EQ(Ok(ParseExpr("s0 > 4")), Lt(Int(4), s0));
  EXPECT_EQ(Ok(ParseExpr("2 <= u0 < 8")), And(Le(Int(2), u0), Lt(u0, Int(8))));
  EXPECT_EQ(Ok(ParseExpr("u0 == 1 and not u0 > 3 or False")),
            And(Eq(u0, Int(1)), Le(u0, Int(3))));
  EXPECT_EQ(Ok(ParseExpr("math.floor(s0 / 2)")),
            Ok(FloorToInt(Ok(IntTrueDiv(s0, Int(2))))));
  EXPECT_EQ(Ok(ParseExpr("max(1, u0)")), Max(Int(1), u0));
  EXPECT_EQ(Ok(ParseExpr("Sym")), DefaultSymbol("Sym"));
  EXPECT_TRUE(DefaultSymbol("zf3").is_float());
  EXPECT_TRUE(DefaultSymbol("s3").is_positive());
  EXPECT_FALSE(DefaultSymbol("u3").is_nonnegative());
}

TEST(ParserTest, ErrorsNameTheColumn) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"s0 + ", "column 6: expected an expression, got 'end of input'"},
      {"(s0 + 1", "column 8: expected ')', got 'end of input'"},
      {"s0 $ 2", "column 4: unexpected character '$'"},
      {"s0 // 0", "column 4: division by zero in FloorDiv"},
      {"Mod(-1, 3)", "column 1: Mod is defined only for p >= 0 and q >= 1"},
      {"FloorDiv(s0)", "column 1: FloorDiv takes 2 arguments, got 1"},
      {"Frobnicate(s0)", "column 1: unknown function 'Frobnicate'"},
      {"s0 + True", "column 4: '+' needs numeric operands"},
      {"s0 and True", "column 4: 'and' needs boolean operands"},
      {"99999999999999999999", "does not fit in 64 bits"},
      {"1e999", "column 1: float literal 1e999 is out of range"},
      {"Piecewise((s0, s0 > 1))", "needs a last condition that is True"},
      {"s0 2", "column 4: unexpected '2'"},
      {"zf0 // 2.0", "column 5: '//' of floats is not supported"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseExpr(c.text), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr(c.message)))
        << c.text;
  }
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep = std::string(100000, '(') + "s0" + std::string(100000, ')');
  EXPECT_THAT(ParseExpr(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("nested too deeply")));
  EXPECT_FALSE(ParseExpr(std::string(100000, '-') + "s0").ok());
  EXPECT_FALSE(ParseExpr(std::string(100000, '~') + "True").ok());
  std::string powers = "2";
  for (int k = 0; k < 100000; ++k) powers += "**2";
  EXPECT_FALSE(ParseExpr(powers).ok());
}

}  // namespace
}  // namespace lathe::symbolic
