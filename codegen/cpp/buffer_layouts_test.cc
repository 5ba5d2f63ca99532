// The layouts of the buffers lowering allocates (codegen/lower/
// buffer_layouts.h): values between convolutions stored channels-last, as
// the library computes them, and every value someone can observe (a graph
// output, a view's base) in its meta's layout. FileCheck on the lowered
// program, with the strides derived by hand; then CNN-shaped programs
// compiled and run against the interpreter, outputs' strides included.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "codegen/codegen_testing.h"
#include "codegen/cpp/cpu_testing.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// conv -> relu -> max pool -> conv: the first convolution writes [2, 4, 8,
// 8] channels-last (strides N 256, C 1, H 32, W 4: the geometry's last
// four numbers); the second reads the pool's result, which it realizes
// channels-last ([2, 4, 4, 4]: 64, 1, 16, 4) with one kernel whose loads
// of the first result inline the bias and the relu; its own result is the
// graph's output, so NCHW ([2, 5, 4, 4]: 80, 16, 4, 1).
TEST(BufferLayoutsTest, ValuesBetweenConvolutionsAreChannelsLast) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[2, 3, 8, 8]", w1: "f32[4, 3, 3, 3]", b1: "f32[4]", w2: "f32[5, 4, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [2, 2])
    getitem = max_pool2d_with_indices[0]
    convolution_1 = torch.ops.aten.convolution.default(getitem, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_1,)
)IR",
                              R"(
CHECK:      kernel k0 extern sconv([[C1:buf[0-9]+]], in0, in1; 2, 1, 2, 3, 4, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 0, 192, 64, 8, 1, 0, 27, 9, 3, 1, 0, 256, 1, 32, 4, 0)
CHECK-NEXT: kernel k1 ranges=[2, 4, 4, 4]
CHECK:        load [[C1]][
CHECK:        store [[P:buf[0-9]+]][64*x0 + x1 + 16*x2 + 4*x3]
CHECK-NEXT: kernel k2 extern sconv({{buf[0-9]+}}, [[P]], in3; 2, 1, 2, 4, 5, 4, 4, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 0, 64, 1, 16, 4, 0, 36, 9, 3, 1, 0, 80, 16, 4, 1, 0)
CHECK-NOT:  kernel
)"));
}

// A transposed convolution the library computes (lower/nn.cc:
// TransposedConvolution) starts channels-last values too: its [2, 3, 8, 8]
// result (stride 2 from [2, 4, 4, 4], padding 1, output_padding 1) is
// written channels-last (N 192, C 1, H 24, W 3), and so is the relu the next
// convolution reads.
TEST(BufferLayoutsTest, TransposedConvolutionsStartChannelsLastValues) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[2, 4, 4, 4]", w1: "f32[4, 3, 3, 3]", w2: "f32[5, 3, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_1,)
)IR",
                              R"(
CHECK:      extern sconv([[T:buf[0-9]+]], {{.*}}, 0, 192, 1, 24, 3, 0)
CHECK:      store [[R:buf[0-9]+]][192*x0 + x1 + 24*x2 + 3*x3]
CHECK:      extern sconv({{buf[0-9]+}}, [[R]], in2;
)"));
}

// Three 1x1 convolutions of x ([1, 3, 4, 4] each): a is returned and b
// viewed, so both keep the meta's NCHW strides (48, 16, 4, 1); c is only
// written in place by relu_ (through its buffer) and summed, so it is
// channels-last (48, 1, 12, 3), and relu_ stores at those strides.
TEST(BufferLayoutsTest, ObservableValuesKeepTheirMetasLayout) {
  EXPECT_OK(LowerAndFileCheck(R"IR(
def forward(self, x: "f32[1, 2, 4, 4]", w: "f32[3, 2, 1, 1]"):
    a = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    b = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    view = torch.ops.aten.view.default(b, [1, 48])
    c = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    relu_ = torch.ops.aten.relu_.default(c)
    sum_1 = torch.ops.aten.sum.default(relu_)
    return (a, view, sum_1)
)IR",
                              R"(
CHECK:      kernel k0 extern sconv({{buf[0-9]+}}, in0, in1; 2, 1, 1, 2, 3, 4, 4, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 0, 32, 16, 4, 1, 0, 2, 1, 1, 1, 0, 48, 16, 4, 1, 0)
CHECK-NEXT: kernel k1 extern sconv({{buf[0-9]+}}, in0, in1; 2, 1, 1, 2, 3, 4, 4, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 0, 32, 16, 4, 1, 0, 2, 1, 1, 1, 0, 48, 16, 4, 1, 0)
CHECK-NEXT: kernel k2 extern sconv([[C:buf[0-9]+]], in0, in1; 2, 1, 1, 2, 3, 4, 4, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 0, 32, 16, 4, 1, 0, 2, 1, 1, 1, 0, 48, 1, 12, 3, 0)
CHECK-NEXT: kernel k3 ranges=[1, 3, 4, 4]
CHECK:        store [[C]][48*x0 + x1 + 12*x2 + 3*x3]
)"));
}

// A ResNet-shaped stem and block, compiled: a strided convolution with
// bias, relu, a padded 3x3 max pool whose indices are returned too, a
// second convolution plus the pool's result (the residual: two readers),
// relu, a spatial mean, a linear layer; and a ceil-mode max pool of log(x),
// whose windows hold NaNs (negative inputs), several in some (the last
// NaN's index wins, as in the interpreter and PyTorch). Values and output
// strides against the interpreter.
TEST(BufferLayoutsTest, ConvolutionalProgramsMatchTheInterpreter) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 3, 9, 9][243, 81, 9, 1]cpu", w1: "f32[8, 3, 3, 3][27, 9, 3, 1]cpu", b1: "f32[8][1]cpu", w2: "f32[8, 8, 3, 3][72, 9, 3, 1]cpu", fc: "f32[10, 8][8, 1]cpu"):
    convolution = torch.ops.aten.convolution.default(x, w1, b1, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    pool = torch.ops.aten.max_pool2d_with_indices.default(relu, [3, 3], [2, 2], [1, 1])
    p0 = pool[0]
    p1 = pool[1]
    convolution_1 = torch.ops.aten.convolution.default(p0, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    add = torch.ops.aten.add.Tensor(convolution_1, p0)
    relu_1 = torch.ops.aten.relu.default(add)
    mean = torch.ops.aten.mean.dim(relu_1, [-1, -2], True)
    view = torch.ops.aten.view.default(mean, [2, 8])
    t = torch.ops.aten.t.default(fc)
    mm = torch.ops.aten.mm.default(view, t)
    log = torch.ops.aten.log.default(x)
    pool_1 = torch.ops.aten.max_pool2d_with_indices.default(log, [2, 2], [2, 2], [1, 1], [1, 1], True)
    v = pool_1[0]
    i = pool_1[1]
    return (mm, relu_1, p1, v, i)
)IR");
}

// The same through 3-d convolutions and an average pool (5-d values,
// channels-last-3d), the input already channels-last.
TEST(BufferLayoutsTest, Convolution3dProgramsMatchTheInterpreter) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 3, 6, 6, 6][648, 1, 108, 18, 3]cpu", w1: "f32[4, 3, 3, 3, 3][81, 27, 9, 3, 1]cpu", w2: "f32[5, 4, 1, 1, 1][4, 1, 1, 1, 1]cpu", b2: "f32[5][1]cpu"):
    convolution = torch.ops.aten.convolution.default(x, w1, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)
    sigmoid = torch.ops.aten.sigmoid.default(convolution)
    avg = torch.ops.aten.avg_pool3d.default(sigmoid, [2, 2, 2], [2, 2, 2])
    convolution_1 = torch.ops.aten.convolution.default(avg, w2, b2, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)
    mul = torch.ops.aten.mul.Tensor(convolution_1, 2.0)
    return (mul, convolution)
)IR");
}

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

// The kernels after convolutions run as their epilogues, image by image
// (scheduler.h, runtime/convolution.h): bias, relu and a max pool; a
// residual add of another input, relu and a spatial mean (a reduction per
// image); a batch of 5 cut into slices of images on one thread and on a
// team of 3, a batch of 2 cut into rows on the team (its epilogues run
// after the convolution). Each program says in its fusion log that it
// fused, and matches the interpreter.
TEST(BufferLayoutsTest, ConvolutionEpiloguesMatchTheInterpreter) {
  const int team = omp_get_max_threads();
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    const std::string pool = R"IR(
def forward(self, x: "f32[N, 8, 24, 20]", w: "f32[16, 8, 3, 3]", b: "f32[16]"):
    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [2, 2])
    getitem = max_pool2d_with_indices[0]
    return (getitem,)
)IR";
    for (const std::string& text : {
             absl::StrReplaceAll(pool, {{"[N,", "[5,"}}),
             absl::StrReplaceAll(pool, {{"[N,", "[2,"}}),
             std::string(R"IR(
def forward(self, x: "f32[5, 16, 12, 12]", w: "f32[16, 16, 3, 3]", r: "f32[5, 16, 12, 12]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    add = torch.ops.aten.add.Tensor(convolution, r)
    relu = torch.ops.aten.relu.default(add)
    mean = torch.ops.aten.mean.dim(relu, [-1, -2], True)
    return (mean,)
)IR"),
         }) {
      ASSERT_OK_AND_ASSIGN(CompiledCpu c, CompileCpuText(text.c_str()));
      bool fused = false;
      for (const std::string& line : c.function->stats().fusion_log) {
        fused = fused || absl::StrContains(line, "the convolution's epilogue");
      }
      EXPECT_TRUE(fused) << c.function->scheduled();
      std::vector<ir::Value> in;
      int p = 0;
      for (const ir::Node* n : c.graph->Placeholders()) {
        const ir::TensorMeta& m = n->meta().tensor;
        std::vector<int64_t> sizes;
        for (symbolic::Expr e : m.sizes) sizes.push_back(e.int_value());
        ir::Value v = FilledF32(sizes, 0);
        for (int64_t k = 0; k < v.tensor.numel(); ++k) {
          v.tensor.data<float>()[k] = static_cast<float>(std::sin(0.7 * k + p));
        }
        in.push_back(std::move(v));
        ++p;
      }
      absl::StatusOr<ir::Interpretation> got = c.function->Run(in);
      ASSERT_OK(got.status());
      ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                           ir::Interpret(*c.graph, in));
      ExpectSameOutputs(*got, want, 1e-4);
    }
  }
  omp_set_num_threads(team);
}

}  // namespace
}  // namespace lathe::codegen
