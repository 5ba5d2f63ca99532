#include "passes/pattern_matcher.h"

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "passes/pass.h"
#include "passes/pass_testing.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// add(x, sin(x)) -> mul(x, x): a marker, not an identity.
std::unique_ptr<Pass> AddSinToMul() {
  auto pass = std::make_unique<PatternMatcherPass>();
  pass->AddPattern("add_sin",
                   CallOp("aten.add.Tensor",
                          {Arg("x"), CallOp("aten.sin.default", {Arg("x")})}),
                   [](ir::Graph& g, const Match& m) {
                     return g.InsertCall(
                         m.root, "aten.mul.Tensor",
                         {ir::Arg::Of(m.node("x")), ir::Arg::Of(m.node("x"))});
                   });
  return pass;
}

// add(x, sin(x)) with `between` between sin and add, `before` before sin
// and `after` after add (lines of graph text, each ending in a newline).
std::string SinAddWith(absl::string_view between, absl::string_view before = "",
                       absl::string_view after = "") {
  return absl::StrReplaceAll(
      R"IR(def forward(self, x: "f32[4]", y: "f32[4]"):
BEFORE    sin = torch.ops.aten.sin.default(x)
BETWEEN    add = torch.ops.aten.add.Tensor(x, sin)
AFTER    return (add,)
)IR",
      {{"BEFORE", before}, {"BETWEEN", between}, {"AFTER", after}});
}

TEST(PatternMatcherTest, RewritesAPureMatch) {
  EXPECT_OK(RunPassAndFileCheck(SinAddWith(""), AddSinToMul(), R"IR(
CHECK-NOT: sin
CHECK: mul: "f32[4]{{.*}}" = torch.ops.aten.mul.Tensor(x, x)
CHECK-NOT: add
CHECK: return (mul,)
)IR"));
}

// A pure call between the matched calls does not split the region.
TEST(PatternMatcherTest, PureCallBetweenDoesNotBlock) {
  EXPECT_OK(RunPassAndFileCheck(
      SinAddWith("    cos = torch.ops.aten.cos.default(y)\n"), AddSinToMul(),
      R"IR(
CHECK: cos: {{.*}} = torch.ops.aten.cos.default(y)
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, x)
CHECK-NEXT: return (mul,)
)IR"));
}

// A mutation before the earliest matched call or after the root leaves
// the match in one region.
TEST(PatternMatcherTest, MutationOutsideTheMatchDoesNotBlock) {
  EXPECT_OK(RunPassAndFileCheck(
      SinAddWith("", "    copy_ = torch.ops.aten.copy_.default(x, y)\n",
                 "    add_ = torch.ops.aten.add_.Tensor(x, 1)\n"),
      AddSinToMul(), R"IR(
CHECK: copy_: {{.*}} = torch.ops.aten.copy_.default(x, y)
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, x)
CHECK-NEXT: add_: {{.*}} = torch.ops.aten.add_.Tensor(x, 1)
CHECK-NEXT: return (mul,)
)IR"));
}

// Scenario 52 (test_match_with_mutation): anything that mutates or changes
// global state between the matched calls puts them in two mutation regions.
struct Between {
  const char* name;
  const char* lines;
};

void PrintTo(const Between& b, std::ostream* os) { *os << b.name; }

class MutationBetweenTest : public ::testing::TestWithParam<Between> {};

TEST_P(MutationBetweenTest, BlocksTheMatch) {
  EXPECT_OK(RunPassAndFileCheck(SinAddWith(GetParam().lines), AddSinToMul(),
                                std::nullopt));
}

INSTANTIATE_TEST_SUITE_P(
    Scenario52, MutationBetweenTest,
    ::testing::Values(
        // x.copy_(y)
        Between{"CopyIntoX",
                "    copy_ = torch.ops.aten.copy_.default(x, y)\n"},
        // x.add_(1)
        Between{"InplaceOnX", "    add_ = torch.ops.aten.add_.Tensor(x, 1)\n"},
        // x.view(4).mul_(2): a write through a view of x
        Between{"InplaceThroughAView",
                "    view = torch.ops.aten.view.default(x, [4])\n"
                "    mul_ = torch.ops.aten.mul_.Tensor(view, 2)\n"},
        // torch.atan2(y, y, out=x)
        Between{"OutEqualsX",
                "    atan2 = torch.ops.aten.atan2.out(y, y, out = x)\n"},
        // with torch.no_grad(): add(x, sin)
        Between{"NoGrad",
                "    _set_grad_enabled = torch._C._set_grad_enabled(False)\n"},
        // torch.rand(4): advances the random state
        Between{"RandomDraw", "    rand = torch.ops.aten.rand.default([4])\n"},
        // y.add_(1): a mutation of a value the match does not read still
        // ends the region, as in Inductor
        Between{"InplaceOnAnotherInput",
                "    add_ = torch.ops.aten.add_.Tensor(y, 1)\n"}),
    [](const ::testing::TestParamInfo<Between>& info) {
      return std::string(info.param.name);
    });

// Parses `text` (no shape propagation: lathe has no op for autocast or
// manual_seed, so their graphs have no metas), runs AddSinToMul and
// returns the printed graph when it changed, or nullopt when it did not
// (and the text is unchanged).
absl::StatusOr<std::optional<std::string>> RunWithoutMetas(
    absl::string_view text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::ParseGraph(text));
  const std::string before = ir::PrintGraph(*graph);
  symbolic::ShapeEnv env;
  PassContext ctx(env);
  ASSIGN_OR_RETURN(bool changed, AddSinToMul()->Run(*graph, ctx));
  std::string after = ir::PrintGraph(*graph);
  if (changed) return after;
  if (after != before) return absl::InternalError("changed, but said not");
  return std::nullopt;
}

// Dynamo's spellings of autocast and manual_seed are calls lathe has no op
// for: their effect is unknown, so each starts a mutation region.
TEST(PatternMatcherTest, AutocastBetweenBlocks) {
  // with torch.autocast("cpu"): add(x, sin)
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> after,
                       RunWithoutMetas(R"IR(def forward(self, x, y):
    sin = torch.ops.aten.sin.default(x)
    _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, True, None)
    add = torch.ops.aten.add.Tensor(x, sin)
    _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
    return (add,)
)IR"));
  EXPECT_EQ(after, std::nullopt) << *after;
  // with torch.autocast("cpu"): sin(x), then add outside it
  ASSERT_OK_AND_ASSIGN(after, RunWithoutMetas(R"IR(def forward(self, x, y):
    _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, True, None)
    sin = torch.ops.aten.sin.default(x)
    _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
    add = torch.ops.aten.add.Tensor(x, sin)
    return (add,)
)IR"));
  EXPECT_EQ(after, std::nullopt) << *after;
}

TEST(PatternMatcherTest, ManualSeedBetweenBlocks) {
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> after,
                       RunWithoutMetas(SinAddWith(
                           "    manual_seed = torch.manual_seed(1234)\n")));
  EXPECT_EQ(after, std::nullopt) << *after;
}

// The whole match inside one autocast region is one mutation region.
TEST(PatternMatcherTest, AutocastAroundTheWholeMatchDoesNotBlock) {
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> after,
                       RunWithoutMetas(R"IR(def forward(self, x, y):
    _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, True, None)
    sin = torch.ops.aten.sin.default(x)
    add = torch.ops.aten.add.Tensor(x, sin)
    _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
    return (add,)
)IR"));
  ASSERT_NE(after, std::nullopt);
  EXPECT_OK(testing::RunFileCheck(*after, R"IR(
CHECK: _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, True, None)
CHECK-NEXT: mul = torch.ops.aten.mul.Tensor(x, x)
CHECK-NEXT: _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
CHECK-NEXT: return (mul,)
)IR"));
}

// Arg("x") twice binds one node: add(y, sin(x)) is not add(x, sin(x)).
TEST(PatternMatcherTest, RepeatedArgMustBindOneNode) {
  EXPECT_OK(
      RunPassAndFileCheck(R"IR(def forward(self, x: "f32[4]", y: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    add = torch.ops.aten.add.Tensor(y, sin)
    return (add,)
)IR",
                          AddSinToMul(), std::nullopt));
}

// sin is also returned: erasing it is impossible, keeping it is not what
// the pattern says.
TEST(PatternMatcherTest, IntermediateUsedOutsideDoesNotMatch) {
  EXPECT_OK(RunPassAndFileCheck(R"IR(def forward(self, x: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    add = torch.ops.aten.add.Tensor(x, sin)
    return (add, sin)
)IR",
                                AddSinToMul(), std::nullopt));
}

// Arguments match one for one: an extra alpha= is another call.
TEST(PatternMatcherTest, ArgumentCountsMustAgree) {
  EXPECT_OK(RunPassAndFileCheck(R"IR(def forward(self, x: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    add = torch.ops.aten.add.Tensor(x, sin, alpha = 2)
    return (add,)
)IR",
                                AddSinToMul(), std::nullopt));
}

// mul(x, 1.0) -> x; Any() matches anything; a literal matches only an equal
// literal of its kind (1 is not 1.0, 2.0 is not 1.0).
TEST(PatternMatcherTest, LiteralsAndAny) {
  auto pass = std::make_unique<PatternMatcherPass>();
  pass->AddPattern(
      "mul_one",
      CallOp("aten.mul.Tensor", {Arg("x"), Literal(ir::Arg::Float(1.0))}),
      [](ir::Graph&, const Match& m) -> absl::StatusOr<ir::Node*> {
        return m.node("x");
      });
  pass->AddPattern("sub_any", CallOp("aten.sub.Tensor", {Any(), Arg("x")}),
                   [](ir::Graph& g, const Match& m) {
                     return g.InsertCall(m.root, "aten.neg.default",
                                         {m.arg("x")});
                   });
  EXPECT_OK(RunPassAndFileCheck(R"IR(def forward(self, x: "f32[4]"):
    neg = torch.ops.aten.neg.default(x)
    mul = torch.ops.aten.mul.Tensor(neg, 1.0)
    mul_1 = torch.ops.aten.mul.Tensor(neg, 1)
    mul_2 = torch.ops.aten.mul.Tensor(neg, 2.0)
    sub = torch.ops.aten.sub.Tensor(mul, mul_1)
    return (sub, mul_2)
)IR",
                                std::move(pass), R"IR(
CHECK: neg: {{.*}} = torch.ops.aten.neg.default(x)
CHECK-NEXT: mul_1: {{.*}} = torch.ops.aten.mul.Tensor(neg, 1)
CHECK-NEXT: mul_2: {{.*}} = torch.ops.aten.mul.Tensor(neg, 2.0)
CHECK-NEXT: neg_1: {{.*}} = torch.ops.aten.neg.default(mul_1)
CHECK-NEXT: return (neg_1, mul_2)
)IR"));
}

// A write into the root after it writes into the (new) replacement
// instead: the same program.
TEST(PatternMatcherTest, WriteIntoANewRootFollowsTheReplacement) {
  EXPECT_OK(RunPassAndFileCheck(
      SinAddWith("", "", "    add_ = torch.ops.aten.add_.Tensor(add, 1)\n"),
      AddSinToMul(), R"IR(
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, x)
CHECK-NEXT: add_: {{.*}} = torch.ops.aten.add_.Tensor(mul, 1)
CHECK-NEXT: return (mul,)
)IR"));
}

// mul(x, 1.0) -> x, or -> a view of x it builds: refused (and what it built
// erased) where a storage of the root or of x is written after the root.
std::unique_ptr<Pass> MulOneTo(bool view) {
  auto pass = std::make_unique<PatternMatcherPass>();
  pass->AddPattern(
      "mul_one",
      CallOp("aten.mul.Tensor", {Arg("x"), Literal(ir::Arg::Float(1.0))}),
      [view](ir::Graph& g, const Match& m) -> absl::StatusOr<ir::Node*> {
        if (!view) return m.node("x");
        return g.InsertCall(m.root, "aten.view.default",
                            {m.arg("x"), ir::Arg::List({ir::Arg::Int(4)})});
      });
  return pass;
}

// neg = -x; mul = neg * 1.0; add = mul + neg, with `before` and `after`
// (lines of graph text, each ending in a newline) around mul.
std::string MulOneWith(absl::string_view before, absl::string_view after) {
  return absl::StrReplaceAll(R"IR(def forward(self, x: "f32[4]"):
    neg = torch.ops.aten.neg.default(x)
BEFORE    mul = torch.ops.aten.mul.Tensor(neg, 1.0)
AFTER    add = torch.ops.aten.add.Tensor(mul, neg)
    return (add,)
)IR",
                             {{"BEFORE", before}, {"AFTER", after}});
}

TEST(PatternMatcherTest, NoReplacementALaterWriteWouldReach) {
  for (bool view : {false, true}) {
    // neg is written after mul: add must keep reading the old value.
    EXPECT_OK(RunPassAndFileCheck(
        MulOneWith("", "    add_ = torch.ops.aten.add_.Tensor(neg, 1)\n"),
        MulOneTo(view), std::nullopt));
    // mul is written after it: the write must not reach neg.
    EXPECT_OK(RunPassAndFileCheck(
        MulOneWith("", "    add_ = torch.ops.aten.add_.Tensor(mul, 1)\n"),
        MulOneTo(view), std::nullopt));
  }
  // Written before the root only: both rewrite.
  for (bool view : {false, true}) {
    ASSERT_OK_AND_ASSIGN(
        PassResult r,
        RunPassAndCompare(
            MulOneWith("    add_ = torch.ops.aten.add_.Tensor(neg, 1)\n", ""),
            MulOneTo(view)));
    EXPECT_TRUE(r.changed);
    EXPECT_OK(
        testing::RunFileCheck(r.after, view ? "CHECK: add: {{.*}}(view, neg)"
                                            : "CHECK: add: {{.*}}(neg, neg)"));
  }
}

// Exact rewrites, checked against the interpreter: x + x == x * 2 and
// (-a) * (-b) == a * b bit for bit. Last to first: the add is rewritten,
// then the mul it read (a repeated Arg bound to one node).
TEST(PatternMatcherTest, RewritesAgreeWithTheInterpreter) {
  auto pass = std::make_unique<PatternMatcherPass>();
  pass->AddPattern("add_self", CallOp("aten.add.Tensor", {Arg("x"), Arg("x")}),
                   [](ir::Graph& g, const Match& m) {
                     return g.InsertCall(m.root, "aten.mul.Tensor",
                                         {m.arg("x"), ir::Arg::Float(2.0)});
                   });
  pass->AddPattern(
      "mul_negs",
      CallOp("aten.mul.Tensor", {CallOp("aten.neg.default", {Arg("a")}),
                                 CallOp("aten.neg.default", {Arg("b")})}),
      [](ir::Graph& g, const Match& m) {
        return g.InsertCall(m.root, "aten.mul.Tensor",
                            {m.arg("a"), m.arg("b")});
      });
  ASSERT_OK_AND_ASSIGN(
      PassResult r,
      RunPassAndCompare(R"IR(def forward(self, x: "f32[2, 3]", y: "f32[3]"):
    neg = torch.ops.aten.neg.default(x)
    neg_1 = torch.ops.aten.neg.default(y)
    mul = torch.ops.aten.mul.Tensor(neg, neg_1)
    add = torch.ops.aten.add.Tensor(mul, mul)
    return (add,)
)IR",
                        std::move(pass)));
  EXPECT_TRUE(r.changed);
  EXPECT_OK(testing::RunFileCheck(r.after, R"IR(
CHECK-NOT: neg
CHECK: mul_2: "f32[2, 3]{{.*}}" = torch.ops.aten.mul.Tensor(x, y)
CHECK-NEXT: mul_1: "f32[2, 3]{{.*}}" = torch.ops.aten.mul.Tensor(mul_2, 2.0)
CHECK-NEXT: return (mul_1,)
)IR"));
}

// MatchPattern alone: the calls root first, the bindings.
TEST(PatternMatcherTest, MatchPatternBindsNames) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g,
                       ir::ParseGraph(R"IR(def forward(self, x, y):
    sin = torch.ops.aten.sin.default(x)
    add = torch.ops.aten.add.Tensor(x, sin)
    add_1 = torch.ops.aten.add.Tensor(y, sin)
    return (add, add_1)
)IR"));
  Pattern p = CallOp("aten.add.Tensor",
                     {Arg("x"), CallOp("aten.sin.default", {Arg("x")})});
  std::optional<Match> m = MatchPattern(p, *g->Find("add"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->root, g->Find("add"));
  EXPECT_EQ(m->nodes, (std::vector<ir::Node*>{g->Find("add"), g->Find("sin")}));
  EXPECT_EQ(m->node("x"), g->Find("x"));
  EXPECT_EQ(MatchPattern(p, *g->Find("add_1")), std::nullopt);
  EXPECT_EQ(MatchPattern(p, *g->Find("sin")), std::nullopt);
}

// RunPass with one pattern, sin(x) -> `replacement`, on sin of an f32[4].
absl::StatusOr<PassResult> ReplaceSin(Replacement replacement) {
  auto pass = std::make_unique<PatternMatcherPass>();
  pass->AddPattern("sin", CallOp("aten.sin.default", {Arg("x")}),
                   std::move(replacement));
  return RunPass(R"IR(def forward(self, x: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    return (sin,)
)IR",
                 std::move(pass));
}

// A replacement that cannot stand for the root is a bug in the pattern.
TEST(PatternMatcherTest, BadReplacementsAreErrors) {
  EXPECT_THAT(ReplaceSin([](ir::Graph& g, const Match& m) {
                return g.InsertCall(m.root, "aten.sum.default", {m.arg("x")});
              }),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("pattern sin at sin: the replacement sum is "
                                 "f32[]")));
  EXPECT_THAT(
      ReplaceSin([](ir::Graph&, const Match&) -> absl::StatusOr<ir::Node*> {
        return nullptr;
      }),
      StatusIs(absl::StatusCode::kInternal,
               HasSubstr("the replacement is null")));
  EXPECT_THAT(
      ReplaceSin([](ir::Graph&, const Match& m) -> absl::StatusOr<ir::Node*> {
        return m.root;
      }),
      StatusIs(absl::StatusCode::kInternal,
               HasSubstr("the replacement sin does not come before the root")));
}

}  // namespace
}  // namespace lathe::passes
