// A convolution's epilogue fused into its sconv call (conv_epilogues.h):
// graph text in, scheduled for a target whose runtime takes epilogues,
// FileCheck on the call's buffers and geometry (the epilogue block's codes
// and strides derived by hand from runtime/convolution.h's layout) and on
// the log; what is not exactly an epilogue keeps its kernel. Then the same
// shapes compiled for the cpu and run against the interpreter.

#include "codegen/conv_epilogues.h"

#include "codegen/codegen_testing.h"
#include "codegen/cpp/cpu_testing.h"
#include "codegen/loop_ir.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

constexpr Routines kEpilogues = {.sconv_epilogues = true};

// relu(conv + bias): one call writes relu's buffer, channels-last as the
// convolution wrote its own (the next convolution reads it), with the bias
// (in2) as its epilogue operand. The geometry's epilogue block is its last
// 11 numbers: bias 1, one post-op, relu (3), three unused codes, the
// residual's offset and four strides (none). The convolution's own buffer
// is read by nothing and kept in registers (not allocated).
TEST(ConvEpiloguesTest, BiasAndReluBecomeTheCallsEpilogue) {
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(R"IR(
def forward(self, x: "f32[2, 3, 8, 8]", w1: "f32[4, 3, 3, 3]", b1: "f32[4]", w2: "f32[5, 4, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_1,)
)IR",
                                                 kEpilogues));
  EXPECT_EQ(s.lowered.program.kernels.size(), 2u);
  EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:      buffer [[C:buf[0-9]+]] : f32[512] local
CHECK:      kernel k0 extern sconv([[R:buf[0-9]+]], in0, in1, in2; 2, 1, 2, 3, 4, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 0, 192, 64, 8, 1, 0, 27, 9, 3, 1, 0, 256, 1, 32, 4, 0, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0)
CHECK-NEXT: kernel k2 extern sconv({{buf[0-9]+}}, [[R]], in3;
CHECK-NOT:  kernel
CHECK:      log: fuse k1 into k0: the convolution's epilogue as its post-ops (bias, relu)
CHECK:      log: [[C]]: kept in registers (every read was fused)
)"));
}

// A residual block's end, relu(conv + bias + x): x, the graph's NCHW
// input, is the residual (post-op add, 1, then relu, 3), read at its own
// strides (192, 64, 8, 1) while the call writes the result at the output's
// (NCHW too: it is returned).
TEST(ConvEpiloguesTest, AResidualIsReadAtItsOwnStrides) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[2, 4, 8, 8]", w: "f32[4, 4, 3, 3]", b: "f32[4]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    add = torch.ops.aten.add.Tensor(convolution, x)
    relu = torch.ops.aten.relu.default(add)
    return (relu,)
)IR",
                                 R"(
CHECK: kernel k0 extern sconv({{buf[0-9]+}}, in0, in1, in2, in0; 2, 1, 2, 4, 4, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 0, 256, 64, 8, 1, 0, 36, 9, 3, 1, 0, 256, 64, 8, 1, 0, 1, 2, 1, 3, 0, 0, 0, 256, 64, 8, 1)
CHECK-NOT: kernel
CHECK: log: fuse k1 into k0: the convolution's epilogue as its post-ops (bias, residual, relu)
)",
                                 kEpilogues));
}

// What reinplace leaves of a downsampling block: a's buffer (the main
// branch's result) takes c + bias added into it, then relu, in place. The
// second call's residual is its own output at the same element: the
// accumulate post-op (2), no residual operand; the first call keeps its
// bias alone.
TEST(ConvEpiloguesTest, AResidualTheResultOverwritesIsAccumulated) {
  EXPECT_OK(ScheduleAndFileCheck(R"IR(
def forward(self, x: "f32[1, 2, 4, 4]", w1: "f32[3, 2, 1, 1]", b1: "f32[3]", w2: "f32[3, 2, 1, 1]", b2: "f32[3]"):
    a = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    c = torch.ops.aten.convolution.default(x, w2, b2, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    add_ = torch.ops.aten.add_.Tensor(a, c)
    relu_ = torch.ops.aten.relu_.default(add_)
    return (relu_,)
)IR",
                                 R"(
CHECK: kernel k0 extern sconv([[A:buf[0-9]+]], in0, in1, in2; {{.*}}, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
CHECK-NEXT: kernel k2 extern sconv([[A]], in0, in3, in4; {{.*}}, 0, 1, 2, 2, 3, 0, 0, 0, 0, 0, 0, 0)
CHECK-NOT: kernel
CHECK: log: fuse k1 into k0: the convolution's epilogue as its post-ops (bias)
CHECK: log: fuse {{k[0-9]+}} into k2: the convolution's epilogue as its post-ops (bias, residual, relu, into the residual's buffer)
)",
                                 kEpilogues));
}

// Not epilogues: the convolution's result also returned (a second reader),
// an op the runtime does not take (sigmoid), and a target whose runtime
// takes none (the routines' default: the cuda backend's). Each keeps its
// kernel after the call.
TEST(ConvEpiloguesTest, WhatIsNotExactlyAnEpilogueKeepsItsKernel) {
  const char* kReturned = R"IR(
def forward(self, x: "f32[1, 2, 4, 4]", w: "f32[3, 2, 1, 1]", b: "f32[3]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    return (relu, convolution)
)IR";
  const char* kSigmoid = R"IR(
def forward(self, x: "f32[1, 2, 4, 4]", w: "f32[3, 2, 1, 1]", b: "f32[3]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    sigmoid = torch.ops.aten.sigmoid.default(convolution)
    return (sigmoid,)
)IR";
  const char* kRelu = R"IR(
def forward(self, x: "f32[1, 2, 4, 4]", w: "f32[3, 2, 1, 1]", b: "f32[3]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    return (relu,)
)IR";
  for (auto [text, routines] :
       {std::pair{kReturned, kEpilogues}, std::pair{kSigmoid, kEpilogues},
        std::pair{kRelu, Routines{}}}) {
    ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(text, routines));
    EXPECT_EQ(s.lowered.program.kernels.size(), 2u) << text;
    EXPECT_OK(FileCheckScheduled(s, R"(
CHECK:     kernel k0 extern sconv({{buf[0-9]+}}, in0, in1; {{.*}}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
CHECK:     kernel k1 ranges=
CHECK-NOT: post-ops
)"));
  }
}

// Compiled and run against the interpreter: a ResNet-shaped block with
// every fused form (bias and relu, a residual in another layout, the
// accumulate form after the default pipeline's reinplace, a plain bias into
// an NCHW output), a 1-d and a 3-d convolution with bias and relu, a batch
// of one (its loop dropped), and a convolution whose result has a second
// reader.
TEST(ConvEpiloguesTest, FusedProgramsMatchTheInterpreter) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 4, 6, 6][144, 36, 6, 1]cpu", w1: "f32[4, 4, 3, 3][36, 9, 3, 1]cpu", b1: "f32[4][1]cpu", w2: "f32[4, 4, 3, 3][36, 9, 3, 1]cpu", b2: "f32[4][1]cpu", wd: "f32[8, 4, 1, 1][4, 1, 1, 1]cpu", bd: "f32[8][1]cpu", w3: "f32[8, 4, 3, 3][36, 9, 3, 1]cpu", b3: "f32[8][1]cpu"):
    convolution = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, b2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    add = torch.ops.aten.add.Tensor(convolution_1, x)
    relu_1 = torch.ops.aten.relu.default(add)
    convolution_2 = torch.ops.aten.convolution.default(relu_1, w3, b3, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    relu_2 = torch.ops.aten.relu.default(convolution_2)
    convolution_3 = torch.ops.aten.convolution.default(relu_1, wd, bd, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)
    add_1 = torch.ops.aten.add.Tensor(relu_2, convolution_3)
    relu_3 = torch.ops.aten.relu.default(add_1)
    convolution_4 = torch.ops.aten.convolution.default(relu_3, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2)
    return (convolution_4, relu_1)
)IR");
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[1, 3, 10][30, 10, 1]cpu", w: "f32[5, 3, 3][9, 3, 1]cpu", b: "f32[5][1]cpu", y: "f32[1, 2, 4, 5, 6][240, 120, 30, 6, 1]cpu", v: "f32[3, 2, 3, 1, 2][12, 6, 2, 2, 1]cpu", c: "f32[3][1]cpu"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1], [1], [1], False, [0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(y, v, c, [1, 1, 1], [1, 0, 1], [1, 1, 1], False, [0, 0, 0], 1)
    relu_1 = torch.ops.aten.relu.default(convolution_1)
    add = torch.ops.aten.add.Tensor(relu_1, convolution_1)
    return (relu, add)
)IR");
}

}  // namespace
}  // namespace lathe::codegen
