// FusionDot on a scheduled graph: FileCheck CHECK lines on the Graphviz text
// (one cluster per kernel holding the nodes it computes; inlined nodes
// dashed outside every cluster; an edge per use).

#include "codegen/fusion_graph.h"

#include <memory>

#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "symbolic/shape_env.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// exp has two readers, so it is realized by its own kernel (k0); add, mul
// and sub are inlined into sub's kernel (k1), which the scheduler fuses
// into k0. sum is a reduction kernel of its own over other ranges.
TEST(FusionGraphTest, OneClusterPerKernelWithTheNodesItComputes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(R"IR(
def forward(self, x: "f32[4, 8]"):
    exp = torch.ops.aten.exp.default(x)
    add = torch.ops.aten.add.Tensor(exp, 1.0)
    mul = torch.ops.aten.mul.Tensor(exp, 2.0)
    sub = torch.ops.aten.sub.Tensor(add, mul)
    sum_1 = torch.ops.aten.sum.dim_IntList(sub, [1])
    return (sub, sum_1)
)IR"));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  ASSERT_OK_AND_ASSIGN(LoweredGraph lowered, Lower(*g, env));
  ASSERT_OK(Schedule(lowered).status());
  std::string dot = FusionDot(*g, lowered.program);
  EXPECT_OK(testing::RunFileCheck(dot, R"CHECK(
CHECK: digraph lathe {
CHECK-DAG: "x" [label="x\ninput"];
CHECK-DAG: "add" [label="add\naten.add.Tensor", style=dashed];
CHECK-DAG: "mul" [label="mul\naten.mul.Tensor", style=dashed];
CHECK: subgraph cluster_k0 {
CHECK-NEXT: label="k0 (fused k0, k1)";
CHECK: "exp" [label="exp\naten.exp.default"];
CHECK-NEXT: "sub" [label="sub\naten.sub.Tensor"];
CHECK-NEXT: }
CHECK: subgraph cluster_k2 {
CHECK-NEXT: label="k2";
CHECK: "sum_1"
CHECK-DAG: "exp" -> "add";
CHECK-DAG: "add" -> "sub";
CHECK-DAG: "mul" -> "sub";
CHECK-DAG: "sub" -> "sum_1";
CHECK: }
)CHECK"));
}

}  // namespace
}  // namespace lathe::codegen
