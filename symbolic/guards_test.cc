#include "symbolic/guards.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "symbolic/sym_value.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::symbolic {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

Expr Ok(absl::StatusOr<Expr> e) {
  EXPECT_OK(e);
  return e.ok() ? *e : Int(0);
}

// A tensor input made symbolic the way a compiler would: sizes DUCK,
// strides inferred.
InputSpec Tensor(ShapeEnv& env, int input, std::vector<int64_t> sizes,
                 std::vector<int64_t> strides) {
  std::vector<Expr> sz, st;
  env.CreateSymbolicSizesStrides(sizes, strides, input, {}, &sz, &st);
  return InputSpec::Tensor(sz, st);
}

struct Concrete {
  std::vector<int64_t> sizes, strides;
  GuardInput view() const { return GuardInput::Tensor(sizes, strides); }
};

bool Accepts(const GuardSet& g, const std::vector<Concrete>& ts,
             int* failed = nullptr) {
  std::vector<GuardInput> in;
  for (const Concrete& t : ts) in.push_back(t.view());
  return g.Check(in, failed);
}

TEST(GuardsTest, DuckSizingAndZeroOneSpecialization) {
  ShapeEnv env;
  std::vector<InputSpec> specs = {Tensor(env, 0, {8, 16}, {16, 1}),
                                  Tensor(env, 1, {8, 3}, {3, 1})};
  GuardSet g = *ProduceGuards(env, specs);
  std::string text = g.ToString();
  EXPECT_THAT(text, HasSubstr("t1.size(0) == t0.size(0)"));
  EXPECT_THAT(text, HasSubstr("2 <= t0.size(0)"));
  EXPECT_THAT(text, HasSubstr("t0.stride(0) == t0.size(1)"));
  EXPECT_THAT(text, HasSubstr("t0.stride(1) == 1"));
  EXPECT_TRUE(Accepts(g, {{{8, 16}, {16, 1}}, {{8, 3}, {3, 1}}}));
  EXPECT_TRUE(Accepts(g, {{{5, 7}, {7, 1}}, {{5, 9}, {9, 1}}}));
  int failed = -2;
  EXPECT_FALSE(Accepts(g, {{{5, 7}, {7, 1}}, {{6, 9}, {9, 1}}}, &failed));
  EXPECT_EQ(g.Describe(failed), "t1.size(0) == t0.size(0)");
  EXPECT_FALSE(Accepts(g, {{{1, 7}, {7, 1}}, {{1, 9}, {9, 1}}}, &failed));
  EXPECT_EQ(g.Describe(failed), "2 <= t0.size(0)");
  EXPECT_FALSE(Accepts(g, {{{5, 7}, {1, 5}}, {{5, 9}, {9, 1}}}, &failed));
  EXPECT_FALSE(Accepts(g, {{{5, 7, 2}, {14, 2, 1}}}, &failed));  // count
  EXPECT_EQ(failed, -1);
}

// Scenario 20.
TEST(GuardsTest, GuardExpressionRoundTrip) {
  ShapeEnv env;
  InputSpec spec = Tensor(env, 0, {6}, {1});
  Expr s = spec.sizes[0];
  ASSERT_TRUE(*env.EvaluateBool(Gt(s, Int(5))));
  ASSERT_TRUE(*env.EvaluateBool(Lt(s, Int(7))));
  GuardSet g = *ProduceGuards(env, {spec});
  EXPECT_TRUE(Accepts(g, {{{6}, {1}}}));
  EXPECT_FALSE(Accepts(g, {{{7}, {1}}}));
  EXPECT_FALSE(Accepts(g, {{{5}, {1}}}));
}

// Scenario 21.
TEST(GuardsTest, FloatValuedGuardsPrintAndEvaluate) {
  ShapeEnv env;
  InputSpec spec = Tensor(env, 0, {8}, {1});
  SymInt s(spec.sizes[0], &env);
  SymFloat half = *TrueDiv(SymFloatOf(s), SymFloat(2.0));
  ASSERT_EQ(*(*SymIntOf(half)).GuardInt(), 4);
  GuardSet g = *ProduceGuards(env, {spec});
  std::string text = g.ToString();
  EXPECT_THAT(text, HasSubstr("math.trunc("));
  EXPECT_THAT(text, HasSubstr("float("));
  EXPECT_TRUE(Accepts(g, {{{8}, {1}}}));
  EXPECT_TRUE(Accepts(g, {{{9}, {1}}}));  // trunc(4.5) == 4
  EXPECT_FALSE(Accepts(g, {{{7}, {1}}}));

  ShapeEnv env3;
  InputSpec spec3 = Tensor(env3, 0, {3}, {1});
  SymInt t(spec3.sizes[0], &env3);
  SymBool b = *TrueDiv(SymInt(2), t) == *TrueDiv(SymInt(2), SymInt(3));
  ASSERT_TRUE(*b.GuardBool());
  GuardSet g3 = *ProduceGuards(env3, {spec3});
  EXPECT_TRUE(Accepts(g3, {{{3}, {1}}}));
  EXPECT_FALSE(Accepts(g3, {{{4}, {1}}}));
}

TEST(GuardsTest, ScalarsRangesAndNan) {
  ShapeEnv env;
  Expr n = env.CreateScalarSymbol(5, Source::Scalar(0));
  Expr lr = env.CreateFloatSymbol(0.1, Source::Scalar(1));
  ASSERT_TRUE(*env.EvaluateBool(Lt(n, Int(10))));
  GuardSet g =
      *ProduceGuards(env, {InputSpec::Scalar(n), InputSpec::Scalar(lr)});
  EXPECT_THAT(g.ToString(), HasSubstr("a0 <= 9"));
  EXPECT_THAT(g.ToString(), HasSubstr("not math.isnan(a1)"));
  GuardInput ok[] = {GuardInput::Int(-3), GuardInput::Float(0.5)};
  EXPECT_TRUE(g.Check(ok));
  GuardInput big[] = {GuardInput::Int(10), GuardInput::Float(0.5)};
  EXPECT_FALSE(g.Check(big));
  GuardInput nan[] = {GuardInput::Int(1), GuardInput::Float(NAN)};
  int failed;
  EXPECT_FALSE(g.Check(nan, &failed));
  EXPECT_EQ(g.Describe(failed), "not math.isnan(a1)");
}

// An unread input (a None) and a bool input keep the guards on the others
// (the unread one takes no guard, whatever it is; a bool the graph was
// specialized on must keep its value), and the inputs' kinds and ranks are
// checked as the compiled lathe_guards checks them.
TEST(GuardsTest, NoneAndBoolInputsKeepTheOthersGuards) {
  ShapeEnv env;
  InputSpec x = Tensor(env, 1, {4}, {1});
  ASSERT_TRUE(*env.EvaluateBool(Gt(x.sizes[0], Int(3))));
  GuardSet g = *ProduceGuards(
      env, {InputSpec::None(), x, InputSpec::Scalar(Bool(true))});
  int64_t four[] = {4}, two[] = {2}, one[] = {1}, wide[] = {4, 4};
  auto in = [](GuardInput a, GuardInput t, GuardInput b) {
    return std::vector<GuardInput>{a, t, b};
  };
  EXPECT_TRUE(g.Check(in(GuardInput::None(), GuardInput::Tensor(four, one),
                         GuardInput::Bool(true))));
  int failed = -1;
  EXPECT_FALSE(g.Check(in(GuardInput::None(), GuardInput::Tensor(two, one),
                          GuardInput::Bool(true)),
                       &failed));
  EXPECT_THAT(g.Describe(failed), HasSubstr("t1.size(0)"));
  EXPECT_FALSE(g.Check(in(GuardInput::None(), GuardInput::Tensor(four, one),
                          GuardInput::Bool(false)),
                       &failed));
  EXPECT_EQ(g.Describe(failed), "a2 == True");
  GuardSet when_false = *ProduceGuards(
      env, {InputSpec::None(), x, InputSpec::Scalar(Bool(false))});
  EXPECT_FALSE(
      when_false.Check(in(GuardInput::None(), GuardInput::Tensor(four, one),
                          GuardInput::Bool(true)),
                       &failed));
  EXPECT_EQ(when_false.Describe(failed), "a2 == False");
  EXPECT_TRUE(g.Check(in(GuardInput::Float(0.5), GuardInput::Tensor(four, one),
                         GuardInput::Bool(true))));
  // Another kind where the bool or the tensor's rank was: no guard is
  // named.
  EXPECT_FALSE(g.Check(
      in(GuardInput::None(), GuardInput::Tensor(four, one), GuardInput::Int(1)),
      &failed));
  EXPECT_EQ(failed, -1);
  EXPECT_FALSE(g.Check(in(GuardInput::None(), GuardInput::Tensor(wide, wide),
                          GuardInput::Bool(true)),
                       &failed));
  EXPECT_EQ(failed, -1);
}

TEST(GuardsTest, ReplacementsBecomeInputEqualities) {
  ShapeEnv env;
  std::vector<InputSpec> specs = {Tensor(env, 0, {4}, {1}),
                                  Tensor(env, 1, {8}, {1})};
  Expr a = specs[0].sizes[0], b = specs[1].sizes[0];
  ASSERT_TRUE(*env.EvaluateBool(Eq(b, Mul(Int(2), a))));
  GuardSet g = *ProduceGuards(env, specs);
  EXPECT_THAT(g.ToString(), HasSubstr("t1.size(0) == (2 * t0.size(0))"));
  EXPECT_TRUE(Accepts(g, {{{5}, {1}}, {{10}, {1}}}));
  EXPECT_FALSE(Accepts(g, {{{5}, {1}}, {{11}, {1}}}));
}

TEST(GuardsTest, RecordedGuardsDeduplicatedAndImpliedOnesDropped) {
  ShapeEnv env;
  InputSpec spec = Tensor(env, 0, {12}, {1});
  Expr s = spec.sizes[0];
  ASSERT_TRUE(*env.EvaluateBool(Eq(Ok(Mod(s, Int(4))), Int(0))));
  ASSERT_TRUE(*env.EvaluateBool(Eq(Ok(Mod(s, Int(4))), Int(0))));
  ASSERT_TRUE(*env.EvaluateBool(Gt(s, Int(4))));
  GuardSet g = *ProduceGuards(env, {spec});
  std::string text = g.ToString();
  // stride, offset, the Mod guard once, the range (which implies s > 4).
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
  EXPECT_THAT(text, HasSubstr("(t0.size(0) % 4) == 0"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("4 < t0.size(0)")));
  EXPECT_THAT(text, HasSubstr("5 <= t0.size(0)"));
  EXPECT_TRUE(Accepts(g, {{{16}, {1}}}));
  EXPECT_FALSE(Accepts(g, {{{18}, {1}}}));
  EXPECT_FALSE(Accepts(g, {{{4}, {1}}}));
}

TEST(GuardsTest, MissingBindingIsAnError) {
  ShapeEnv env;
  Expr u = env.CreateUnbacked();
  EXPECT_THAT(
      ProduceGuards(env, {InputSpec::Tensor({Add(u, Int(1))}, {Int(1)})}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("guard needs symbol u0, which no input provides")));
}

// The C++ form, compiled, agrees with Check().
TEST(GuardsTest, CppExpressionAgreesWithCheck) {
  ShapeEnv env;
  std::vector<InputSpec> specs = {Tensor(env, 0, {8, 6}, {6, 1}),
                                  Tensor(env, 1, {8, 12}, {12, 1})};
  Expr s0 = specs[0].sizes[0], s1 = specs[0].sizes[1], s2 = specs[1].sizes[1];
  ASSERT_TRUE(*env.EvaluateBool(Eq(s2, Mul(Int(2), s1))));
  ASSERT_TRUE(*env.EvaluateBool(Lt(Ok(FloorDiv(s0, Int(3))), Int(3))));
  ASSERT_TRUE(*env.EvaluateBool(Eq(Ok(PythonMod(s0, Int(4))), Int(0))));
  // Divisions by a symbol, recorded before the symbol's range is checked:
  // the printed guard must not divide by zero where Check() refuses.
  ASSERT_TRUE(*env.EvaluateBool(Eq(Ok(FloorDiv(s0, s1)), Int(1))));
  ASSERT_TRUE(*env.EvaluateBool(Ne(Ok(PythonMod(s0, s1)), Int(0))));
  GuardSet g = *ProduceGuards(env, specs);
  std::vector<std::vector<Concrete>> cases = {
      {{{8, 6}, {6, 1}}, {{8, 12}, {12, 1}}},
      {{{4, 3}, {3, 1}}, {{4, 6}, {6, 1}}},
      {{{4, 3}, {3, 1}}, {{4, 7}, {7, 1}}},
      {{{12, 3}, {3, 1}}, {{12, 6}, {6, 1}}},
      {{{6, 3}, {3, 1}}, {{6, 6}, {6, 1}}},
      {{{8, 5}, {5, 1}}, {{8, 10}, {10, 1}}},
      {{{8, 0}, {0, 1}}, {{8, 0}, {0, 1}}},
  };
  std::string program =
      std::string(CppPrelude()) + "#include <cstdio>\nint main() {\n";
  std::vector<std::string> expected;
  for (const auto& c : cases) {
    absl::StrAppend(&program, "{\n");
    for (int t = 0; t < 2; ++t) {
      for (int d = 0; d < 2; ++d) {
        absl::StrAppend(&program, "int64_t t", t, "_size_", d, " = ",
                        c[t].sizes[d], "; int64_t t", t, "_stride_", d, " = ",
                        c[t].strides[d], ";\n");
      }
      absl::StrAppend(&program, "int64_t t", t, "_storage_offset = 0;\n");
    }
    absl::StrAppend(&program, "printf(\"%d\\n\", (int)(", g.ToCpp(),
                    "));\n}\n");
    expected.push_back(Accepts(g, c) ? "1" : "0");
  }
  absl::StrAppend(&program, "}\n");
  std::string src = lathe::testing::TestTmpPath("guards.cc"),
              bin = lathe::testing::TestTmpPath("guards");
  std::ofstream(src) << program;
  std::string cmd =
      absl::StrCat("c++ -std=c++17 -o ", bin, " ", src, " 2>&1 && ", bin);
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines, expected) << out << "\n" << g.ToCpp();
  EXPECT_EQ(expected,
            (std::vector<std::string>{"1", "1", "0", "0", "0", "1", "0"}));
}

}  // namespace
}  // namespace lathe::symbolic
