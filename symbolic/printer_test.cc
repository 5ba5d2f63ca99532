#include "symbolic/printer.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "symbolic/evaluate.h"
#include "symbolic/expr.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

TEST(PrinterTest, PythonStyleMatchesPyTorch) {
  Expr s0 = Symbol("s0", SymbolType::kInt, {.positive = true});
  Expr s1 = Symbol("s1", SymbolType::kInt, {.positive = true});
  EXPECT_EQ(ToString(Ok(FloorDiv(s0, Int(2)))), "(s0//2)");
  EXPECT_EQ(ToString(Max(Int(1), Sub(s0, Int(2)))), "Max(1, s0 - 2)");
  EXPECT_EQ(ToString(Add(Mul(Int(2), s0), Int(1))), "2*s0 + 1");
  EXPECT_EQ(ToString(Eq(s0, Int(2))), "Eq(s0, 2)");
  EXPECT_EQ(ToString(Lt(Int(4), s0)), "4 < s0");
  EXPECT_EQ(ToString(Mul(Add(s0, Int(1)), s1)), "s1*(s0 + 1)");
  EXPECT_EQ(ToString(Ok(FloorDiv(Add(s0, Int(1)), Mul(Int(2), s1)))),
            "((s0 + 1)//(2*s1))");
  // CleanDiv prints like FloorDiv in PyTorch's style, exactly when parseable.
  EXPECT_EQ(ToString(Ok(CleanDiv(s0, s1))), "(s0//s1)");
  EXPECT_EQ(ToString(Ok(CleanDiv(s0, s1)), PrintStyle::kParseable),
            "CleanDiv(s0, s1)");
  EXPECT_EQ(FormatFloat(0.1), "0.1");
  EXPECT_EQ(FormatFloat(2.0), "2.0");
  EXPECT_EQ(FormatFloat(1e300), "1e+300");
}

// Runs `program` through the system C++ compiler and returns its stdout.
std::string CompileAndRun(const std::string& program) {
  std::string src = lathe::testing::TestTmpPath("printed.cc"),
              bin = lathe::testing::TestTmpPath("printed");
  std::ofstream(src) << program;
  std::string cmd =
      absl::StrCat("c++ -std=c++17 -O0 -o ", bin, " ", src, " 2>&1 && ", bin);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

// The printed C++ computes what Evaluate computes (Python semantics), for
// negative operands too.
TEST(PrinterTest, CppOutputCompilesAndAgreesWithEvaluate) {
  Expr a = Symbol("a"), b = Symbol("b");
  Expr p = Symbol("p", SymbolType::kInt, {.positive = true});
  Expr x = Symbol("zf_x", SymbolType::kFloat);
  std::vector<Expr> exprs = {
      Add({Mul(Int(3), a), Neg(b), Int(-7)}),
      Ok(FloorDiv(a, p)),
      Ok(FloorDiv(Sub(a, b), Int(3))),
      Ok(CleanDiv(Mul(Int(6), a), Int(3))),
      Ok(ModularIndexing(a, Int(3), p)),
      Ok(PythonMod(a, b)),
      Ok(Mod(p, Int(4))),
      Min({a, b, Int(2)}),
      Max(a, p),
      Ok(PowByNatural(a, Int(3))),
      Ok(PowByNatural(Int(2), p)),
      Ok(IntTrueDiv(a, p)),
      Ok(FloatTrueDiv(x, ToFloat(p))),
      Ok(TruncToInt(Mul(Float(2.5), x))),
      Ok(FloorToInt(x)),
      Ok(CeilToInt(x)),
      Ok(RoundToInt(x)),
      OpaqueUnary(UnaryFn::kSqrt, ToFloat(p)),
      Ok(FloatPow(ToFloat(p), Float(0.5))),
      Eq(a, b),
      Ne(a, Int(-2)),
      Lt(a, b),
      Le(Mul(Int(2), a), b),
      And(Lt(a, b), Ne(a, Int(0))),
      Or(Lt(a, b), Eq(p, Int(1))),
      Not(Eq(x, Float(0.5))),
      Ite(Lt(a, Int(0)), Neg(a), Mul(Int(2), a)),
      Ok(Piecewise(std::vector<std::pair<Expr, Expr>>{{Int(1), Lt(a, Int(-2))},
                                                      {Int(2), Lt(a, Int(2))},
                                                      {Int(3), Bool(true)}})),
      Min(IntInfinity(), p),
  };
  std::vector<Assignment> cases;
  for (int64_t av : {-7, -1, 0, 5}) {
    for (int64_t bv : {-3, 2}) {
      cases.push_back({{a, Value::Int(av)},
                       {b, Value::Int(bv)},
                       {p, Value::Int(bv < 0 ? 3 : 4)},
                       {x, Value::Float(av * 0.75 + 0.5)}});
    }
  }
  std::string program =
      std::string(CppPrelude()) + "#include <cstdio>\nint main() {\n";
  std::vector<std::string> expected;
  for (const Assignment& values : cases) {
    absl::StrAppend(&program, "{\n");
    for (const auto& [sym, v] : values) {
      absl::StrAppend(&program, sym.is_float() ? "  double " : "  int64_t ",
                      sym.name(), " = ", ToString(v), ";\n");
    }
    for (Expr e : exprs) {
      absl::StatusOr<Value> want = Evaluate(e, values);
      ASSERT_OK(want) << ToString(e);
      std::string cpp = ToCpp(e);
      if (e.is_float()) {
        absl::StrAppend(&program, "  printf(\"%.17g\\n\", (double)", cpp,
                        ");\n");
        char buf[64];
        snprintf(buf, sizeof(buf), "%.17g", want->f);
        expected.push_back(buf);
      } else if (e.is_bool()) {
        absl::StrAppend(&program, "  printf(\"%d\\n\", (int)", cpp, ");\n");
        expected.push_back(want->b ? "1" : "0");
      } else {
        absl::StrAppend(&program, "  printf(\"%lld\\n\", (long long)", cpp,
                        ");\n");
        expected.push_back(want->inf != 0 ? "9223372036854775807"
                                          : absl::StrCat(want->i));
      }
    }
    absl::StrAppend(&program, "}\n");
  }
  absl::StrAppend(&program, "}\n");
  std::string out = CompileAndRun(program);
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), expected.size()) << out << "\n" << program;
  for (size_t k = 0; k < lines.size(); ++k) {
    Expr e = exprs[k % exprs.size()];
    EXPECT_EQ(lines[k], expected[k])
        << ToString(e) << " printed as " << ToCpp(e) << " (case "
        << k / exprs.size() << ")";
  }
}

// Where the caller knows a dividend is nonnegative (a kernel's loop
// variables), a floor division, ModularIndexing and Python modulo by a
// positive constant print as C++'s / and % (which GCC vectorizes; the
// helpers' sign tests it does not); otherwise, or by a divisor that is not a
// positive constant, the helpers keep Python's rounding.
TEST(PrinterTest, NonnegativeDividendsDivideAsCpp) {
  Expr x = Symbol("x", SymbolType::kInt);
  Expr y = Symbol("y", SymbolType::kInt);
  Expr n = Symbol("n", SymbolType::kInt, {.positive = true});
  const CppPrintOptions known = {.nonnegative = [&](Expr e) { return e == x; }};
  EXPECT_EQ(ToCpp(Ok(FloorDiv(x, Int(8))), known), "(x / 8)");
  EXPECT_EQ(ToCpp(Ok(ModularIndexing(x, Int(1), Int(8))), known), "(x % 8)");
  EXPECT_EQ(ToCpp(Ok(ModularIndexing(x, Int(4), Int(8))), known),
            "((x / 4) % 8)");
  EXPECT_EQ(ToCpp(Ok(PythonMod(x, Int(8))), known), "(x % 8)");
  // Not known nonnegative, or not by a positive constant: Python's rounding.
  EXPECT_EQ(ToCpp(Ok(FloorDiv(x, Int(8)))), "lathe_floordiv(x, 8)");
  EXPECT_EQ(ToCpp(Ok(FloorDiv(y, Int(8))), known), "lathe_floordiv(y, 8)");
  EXPECT_EQ(ToCpp(Ok(FloorDiv(x, n)), known), "lathe_floordiv(x, n)");
  EXPECT_EQ(ToCpp(Ok(PythonMod(x, Int(-3))), known), "lathe_pymod(x, (-3))");
  EXPECT_EQ(ToCpp(Ok(ModularIndexing(y, Int(1), Int(8))), known),
            "lathe_pymod(lathe_floordiv(y, 1), 8)");
}

}  // namespace
}  // namespace lathe::symbolic
