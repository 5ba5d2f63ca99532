// The arguments of a graph as written: specs, annotations and hints.

#include "driver/arguments.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ArgumentsTest, ArgumentsAndHintsOfAGraph) {
  constexpr char kText[] = R"graph(# lathe: composite p pair
def forward(self, x: "f32[s0, 3][3, 1]cpu", p: "f32[4][1]cpu", n: "Sym(s1)", lr: "Sym(zf0)"):
    mul: "f32[s0, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(x, lr)
    add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(p, n)
    return (mul, add)
)graph";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kText));
  std::vector<std::string> annotations;
  ASSERT_OK_AND_ASSIGN(std::vector<ArgumentSpec> args,
                       ArgumentsOf(*g, {}, &annotations));
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0].ToString(), "x: f32 tensor of rank 2 on cpu");
  EXPECT_EQ(args[1].ToString(), "p: pair composite of rank 1");
  EXPECT_EQ(args[2].ToString(), "n: int");
  EXPECT_EQ(args[3].ToString(), "lr: float");
  EXPECT_EQ(annotations,
            (std::vector<std::string>{"f32[s0, 3][3, 1]cpu", "f32[4][1]cpu",
                                      "Sym(s1)", "Sym(zf0)"}));
  std::vector<Operand> values = {
      Operand::Of(Tensor::Empty({5, 3}, DType::kFloat32).value()), Operand(),
      Operand::Int(7), Operand::Float(0.5)};
  auto hints = HintsOf(*g, values);
  EXPECT_EQ(hints.at("s0").i, 5);
  EXPECT_EQ(hints.at("s1").i, 7);
  EXPECT_FALSE(hints.contains("zf0"));  // a float is never a hint to bake in
  EXPECT_THAT(ArgumentsOf(*g, {"w"}),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("reads constant 'self.w'")));
}

}  // namespace
}  // namespace lathe
