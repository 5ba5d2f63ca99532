#include "passes/functional_invariant.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

absl::Status Check(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  if (!g.ok()) return g.status();
  return CheckFunctional(**g);
}

TEST(FunctionalInvariantTest, AcceptsFunctionalGraphsWithAnEpilogue) {
  // Reference scenario 1 after functionalization, epilogue in the graph.
  EXPECT_OK(Check(R"IR(def forward(self, a: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(a, 2)
    mul_1 = torch.ops.aten.mul.Tensor(mul, 3)
    copy_ = torch.ops.aten.copy_.default(a, mul)
    return (mul_1,)
)IR"));
  // Scenario 6: metadata then data for one input; scenario 11: set_ and copy_.
  EXPECT_OK(Check(R"IR(def forward(self, a: "f32[3, 4]", b: "f32[4]"):
    t = torch.ops.aten.t.default(a)
    mul = torch.ops.aten.mul.Tensor(t, 2)
    as_strided_ = torch.ops.aten.as_strided_.default(a, [4, 3], [1, 4])
    copy_ = torch.ops.aten.copy_.default(a, mul)
    set_ = torch.ops.aten.set_.source_Tensor(b, mul)
    return (mul,)
)IR"));
  EXPECT_OK(Check("def forward(self, x):\n    return (x,)\n"));
}

TEST(FunctionalInvariantTest, RejectsEveryOtherMutation) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {R"IR(def forward(self, a: "f32[4]"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (mul_,)
)IR",
       "node 'mul_': aten.mul_.Tensor writes its argument 'self'; only the "
       "copy_/set_/as_strided_ "
       "epilogue may mutate"},
      {R"IR(def forward(self, a: "f32[4]"):
    clone = torch.ops.aten.clone.default(a)
    copy_ = torch.ops.aten.copy_.default(clone, a)
    return (copy_,)
)IR",
       "node 'copy_': aten.copy_.default must write a graph input"},
      {R"IR(def forward(self, a: "f32[4]"):
    copy_ = torch.ops.aten.copy_.default(a, a)
    copy__1 = torch.ops.aten.copy_.default(a, a)
    return (a,)
)IR",
       "node 'copy__1': input 'a' gets a second data mutation; each input is "
       "written at most once"},
      {R"IR(def forward(self, a: "f32[4]"):
    copy_ = torch.ops.aten.copy_.default(a, a)
    neg = torch.ops.aten.neg.default(a)
    return (neg,)
)IR",
       "node 'neg': comes after the epilogue started at 'copy_'"},
      {R"IR(def forward(self, a: "f32[4]"):
    index_put_ = torch.ops.aten.index_put_.default(a, [a], a)
    return (a,)
)IR",
       "node 'index_put_': aten.index_put_.default writes its argument 'self'"},
      {R"IR(def forward(self, a: "f32[4]"):
    y = torch.ops.aten.frob.default(a)
    return (y,)
)IR",
       "node 'y': unknown op aten.frob.default"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Check(c.text), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr(c.message)))
        << c.text;
  }
}

}  // namespace
}  // namespace lathe::passes
