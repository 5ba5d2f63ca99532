#include "passes/dce.h"

#include <optional>

#include "gtest/gtest.h"
#include "passes/pass_testing.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

TEST(DceTest, ErasesDeadChains) {
  EXPECT_OK(RunPassAndFileCheck<Dce>(R"IR(def forward(self, x: "f32[4]"):
    a = torch.ops.aten.relu.default(x)
    b = torch.ops.aten.neg.default(a)
    c = torch.ops.aten.exp.default(x)
    return (c,)
)IR",
                                     R"IR(
CHECK-NOT: relu
CHECK-NOT: neg
CHECK: c: "f32[4][1]cpu" = torch.ops.aten.exp.default(x)
CHECK: return (c,)
)IR"));
}

// Asserts, random ops and the epilogue's writes have effects: they stay.
TEST(DceTest, KeepsEffects) {
  EXPECT_OK(RunPassAndFileCheck<Dce>(
      R"IR(def forward(self, x: "f32[4]", n: "Sym(s0)"):
    ge = n >= 0
    _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "n >= 0")
    r = torch.ops.aten.rand.default([2])
    c = torch.ops.aten.exp.default(x)
    copy_ = torch.ops.aten.copy_.default(x, c)
    return (c,)
)IR",
      std::nullopt));
}

}  // namespace
}  // namespace lathe::passes
