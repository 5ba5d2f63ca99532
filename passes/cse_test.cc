#include "passes/cse.h"

#include <optional>

#include "gtest/gtest.h"
#include "passes/pass_testing.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

TEST(CseTest, MergesRepeatedCalls) {
  EXPECT_OK(RunPassAndFileCheck<Cse>(R"IR(# lathe: hint s0 2
def forward(self, x: "f32[4]", n: "Sym(s0)"):
    a = torch.ops.aten.neg.default(x)
    b = torch.ops.aten.neg.default(x)
    add = torch.ops.aten.add.Tensor(a, b)
    m = n * 2
    m2 = n * 2
    v = torch.ops.aten.view.default(add, [m])
    v2 = torch.ops.aten.view.default(add, [m2])
    mul = torch.ops.aten.mul.Tensor(v, v2)
    return (mul,)
)IR",
                                     R"IR(
CHECK: a: {{.*}} = torch.ops.aten.neg.default(x)
CHECK-NOT: neg
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor(a, a)
CHECK: m: {{.*}} = n * 2
CHECK-NOT: m2
CHECK: v: {{.*}} = torch.ops.aten.view.default(add, [m])
CHECK-NOT: v2
CHECK: torch.ops.aten.mul.Tensor(v, v)
)IR"));
}

// Floats compare bit for bit: 0.0 and -0.0 differ (x + -0.0 keeps -0.0).
TEST(CseTest, FloatsCompareBitForBit) {
  EXPECT_OK(RunPassAndFileCheck<Cse>(R"IR(def forward(self, x: "f32[4]"):
    a = torch.ops.aten.add.Tensor(x, 0.0)
    b = torch.ops.aten.add.Tensor(x, -0.0)
    mul = torch.ops.aten.mul.Tensor(a, b)
    return (mul,)
)IR",
                                     std::nullopt));
}

// Random ops draw new numbers; effects are never merged.
TEST(CseTest, KeepsRandomAndEffects) {
  EXPECT_OK(RunPassAndFileCheck<Cse>(R"IR(def forward(self, x: "f32[2]"):
    r = torch.ops.aten.rand.default([2])
    r2 = torch.ops.aten.rand.default([2])
    add = torch.ops.aten.add.Tensor(r, r2)
    return (add,)
)IR",
                                     std::nullopt));
}

// A write is a barrier: the neg after copy_ reads the new x.
TEST(CseTest, MutationIsABarrier) {
  EXPECT_OK(
      RunPassAndFileCheck<Cse>(R"IR(def forward(self, x: "f32[2]", y: "f32[2]"):
    a = torch.ops.aten.neg.default(x)
    copy_ = torch.ops.aten.copy_.default(x, y)
    b = torch.ops.aten.neg.default(x)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)IR",
                               std::nullopt));
}

// Two fresh outputs stay two storages (merging would alias outputs).
TEST(CseTest, KeepsFreshOutputsApart) {
  EXPECT_OK(RunPassAndFileCheck<Cse>(R"IR(def forward(self, x: "f32[2]"):
    a = torch.ops.aten.clone.default(x)
    b = torch.ops.aten.clone.default(x)
    return (a, b)
)IR",
                                     std::nullopt));
}

// b merges into the inner a, which the graph then returns; c, equal to
// both, stays its own (merging it too would make outputs 1 and 2 one
// tensor).
TEST(CseTest, KeepsOutputsApartThatMatchOneInnerValue) {
  EXPECT_OK(RunPassAndFileCheck<Cse>(R"IR(def forward(self, x: "f32[2]"):
    a = torch.ops.aten.neg.default(x)
    m = torch.ops.aten.mul.Tensor(a, 2)
    b = torch.ops.aten.neg.default(x)
    c = torch.ops.aten.neg.default(x)
    return (m, b, c)
)IR",
                                     R"IR(
CHECK: a: {{.*}} = torch.ops.aten.neg.default(x)
CHECK-NOT: b: {{.*}} = torch.ops.aten.neg
CHECK: c: {{.*}} = torch.ops.aten.neg.default(x)
CHECK: return (m, a, c)
)IR"));
}

}  // namespace
}  // namespace lathe::passes
