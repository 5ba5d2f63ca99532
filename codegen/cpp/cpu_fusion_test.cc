// The scheduler's loop transforms compiled and run against the interpreter
// and hand-derived values: a loop split at its indices' divisors (a reshape
// that copies, attention's head merge), a pointwise kernel over a view of a
// reduction's elements joining it, a kernel without loops kept apart from
// one with loops, and stores nothing reads dropped. Their FileCheck tests
// are codegen's split_loops_test and scheduler_test.

#include <algorithm>
#include <vector>

#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/cpu_testing.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// A reshape whose input's layout allows no view (attention's heads merged
// back: [B, H, S, D] transposed to [B, S, H, D], read as [B*S, H*D]) is a
// copy in row-major order, here read by a product and by a pointwise op;
// it once lowered as x's memory taken in the copy's layout. By hand, with x
// holding 0, 1, 2, ... and w all ones: row r = 4*b + s of the copy holds
// x[b, h, s, d] = 192*b + 64*h + 16*s + d over h < 3, d < 16, whose sum is
// 48*(192*b + 16*s) + 16*(0 + 64 + 128) + 3*(0 + 1 + ... + 15).
TEST(CpuFusionTest, AReshapeThatCopiesReadsItsInputInRowMajorOrder) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[2, 3, 4, 16][192, 64, 16, 1]cpu", w: "f32[48, 1][1, 1]cpu"):
    permute = torch.ops.aten.permute.default(x, [0, 2, 1, 3])
    view = torch.ops.aten.reshape.default(permute, [8, 48])
    mm = torch.ops.aten.mm.default(view, w)
    add = torch.ops.aten.add.Tensor(view, 1.0)
    return (mm, add)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  std::vector<ir::Value> in = {FilledF32({2, 3, 4, 16}, 0),
                               FilledF32({48, 1}, 1)};
  std::fill_n(in[1].tensor.data<float>(), 48, 1.0f);
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-6);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t s = 0; s < 4; ++s) {
      const double sum = 48 * (192 * b + 16 * s) + 16 * 192 + 3 * 120;
      EXPECT_EQ(got.outputs[0].tensor.GetDouble({4 * b + s, 0}), sum);
      // Element (r, 16*h + d) is x[b, h, s, d] + 1; h = 2, d = 5 here.
      EXPECT_EQ(got.outputs[1].tensor.GetDouble({4 * b + s, 37}),
                192 * b + 64 * 2 + 16 * s + 5 + 1);
    }
  }
}

// A softmax over [2, 3, 4, 8] whose weights are cast to bf16 over their
// [6, 4, 8] view: the cast joins the softmax's kernel (its loops split to
// [2, 3, 4] + [8]) and the x - max it wrote over its input is dropped. The
// weights match the interpreter's bit for bit, and each row sums to 1.
TEST(CpuFusionTest, ASoftmaxWithItsCastOverAViewMatchesTheInterpreter) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[2, 3, 4, 8][96, 32, 8, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(x, 0.25)
    amax = torch.ops.aten.amax.default(mul, [-1], True)
    sub_ = torch.ops.aten.sub_.Tensor(mul, amax)
    exp = torch.ops.aten.exp.default(mul)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    view = torch.ops.aten.view.default(div, [6, 4, 8])
    cast = torch.ops.prims.convert_element_type.default(view, torch.bfloat16)
    return (cast, sum_1)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  std::vector<ir::Value> in = {FilledF32({2, 3, 4, 8}, -40)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want, 1e-6);
  for (int64_t r = 0; r < 24; ++r) {
    double row = 0;
    for (int64_t k = 0; k < 8; ++k) {
      row += got.outputs[0].tensor.GetDouble({r / 4, r % 4, k});
    }
    EXPECT_NEAR(row, 1.0, 0.02) << r;  // eight bf16 roundings
  }
}

// A kernel without loops (a step counter's add_) after a reduction over
// rows stays a kernel of its own: joined to the reduction's loops it would
// run once per row. By hand, the step goes from 5 to 6.
TEST(CpuFusionTest, AKernelWithoutLoopsAfterARowReductionRunsOnce) {
  constexpr char kText[] = R"IR(
def forward(self, x: "f32[4, 8][8, 1]cpu", step: "f32[][]cpu"):
    amax = torch.ops.aten.amax.default(x, [-1], True)
    sub = torch.ops.aten.sub.Tensor(x, amax)
    add = torch.ops.aten.add.Tensor(step, 1.0)
    return (sub, add)
)IR";
  ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(kText));
  Tensor step = *Tensor::Empty({}, DType::kFloat32);
  step.data<float>()[0] = 5.0f;
  std::vector<ir::Value> in = {FilledF32({4, 8}, 0), ir::Value::OfTensor(step)};
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, c.function->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c.graph, in));
  ExpectSameOutputs(got, want);
  EXPECT_EQ(got.outputs[1].tensor.GetDouble({}), 6.0);
}

}  // namespace
}  // namespace lathe::codegen
