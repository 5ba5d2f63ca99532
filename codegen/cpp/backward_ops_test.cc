// Backward ops compiled for the cpu: the default pipeline's decompose
// rewrites the ones the backend does not lower, and each graph's outputs
// match the interpreter's on the graph as written.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/cpu_testing.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "passes/default_pipeline.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "runtime/tensor.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// `text` through the default pass pipeline (decompose rewrites the backward
// ops the backend does not lower), compiled, and run against the
// interpreter on the graph as written: every input element k of
// placeholder p is 2 sin(0.7 k + p) (floats) or 3 k + p (integers), and
// each output must match within tol * (|want| + 1). Checks that no call of
// `op` is left after the passes.
void ExpectCompiledBackwardMatches(const char* text, const std::string& op,
                                   double tol = 1e-4) {
  SCOPED_TRACE(text);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  std::unique_ptr<ir::Graph> reference = g->Clone();
  passes::PassPipeline pipeline = passes::DefaultPipeline();
  passes::PassContext ctx(env);
  ASSERT_OK(pipeline.Run(*g, ctx).status());
  std::string after = ir::PrintGraph(*g);
  EXPECT_EQ(after.find(op), std::string::npos) << after;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileCpu(*g, env));
  std::vector<ir::Value> in;
  int p = 0;
  for (const ir::Node* n : reference->Placeholders()) {
    const ir::TensorMeta& m = n->meta().tensor;
    std::vector<int64_t> sizes;
    for (const symbolic::Expr& e : m.sizes) sizes.push_back(e.int_value());
    Tensor t = *Tensor::Empty(sizes, m.dtype);
    int64_t k = 0;
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      t.SetDouble(i, IsFloatingPoint(m.dtype) ? 2 * std::sin(0.7 * k + p)
                                              : 3.0 * k + p);
      ++k;
    });
    in.push_back(ir::Value::OfTensor(t));
    ++p;
  }
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, f->Run(in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*reference, in));
  ExpectSameOutputs(got, want, tol);
}

TEST(CpuFunctionTest, LayerNormBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[4, 3, 16][48, 16, 1]cpu", w: "f32[16][1]cpu", b: "f32[16][1]cpu", dy: "f32[4, 3, 16][48, 16, 1]cpu"):
    ln = torch.ops.aten.native_layer_norm.default(x, [16], w, b, 1e-05)
    mean = ln[1]
    rstd = ln[2]
    bw = torch.ops.aten.native_layer_norm_backward.default(dy, x, [16], mean, rstd, w, b, [True, True, True])
    bw_0 = bw[0]
    bw_1 = bw[1]
    bw_2 = bw[2]
    return (bw_0, bw_1, bw_2)
)IR",
                                "native_layer_norm_backward");
}

TEST(CpuFunctionTest, GroupNormBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 6, 3, 4][72, 12, 4, 1]cpu", w: "f32[6][1]cpu", dy: "f32[2, 6, 3, 4][72, 12, 4, 1]cpu"):
    gn = torch.ops.aten.native_group_norm.default(x, w, None, 2, 6, 12, 3, 1e-05)
    mean = gn[1]
    rstd = gn[2]
    bw = torch.ops.aten.native_group_norm_backward.default(dy, x, mean, rstd, w, 2, 6, 12, 3, [True, True, True])
    bw_0 = bw[0]
    bw_1 = bw[1]
    bw_2 = bw[2]
    return (bw_0, bw_1, bw_2)
)IR",
                                "native_group_norm_backward");
}

// Indices 3 k (mod 5) repeat; padding_idx and scale_grad_by_freq.
TEST(CpuFunctionTest, EmbeddingDenseBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, g: "f32[3, 4, 6][24, 6, 1]cpu", r: "i64[3, 4][4, 1]cpu"):
    i = torch.ops.aten.remainder.Scalar(r, 5)
    a = torch.ops.aten.embedding_dense_backward.default(g, i, 7, -1, False)
    b = torch.ops.aten.embedding_dense_backward.default(g, i, 5, 2, True)
    return (a, b)
)IR",
                                "embedding_dense_backward");
}

TEST(CpuFunctionTest, MaxPool2dWithIndicesBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 3, 9, 8][216, 72, 8, 1]cpu"):
    mp = torch.ops.aten.max_pool2d_with_indices.default(x, [3, 3], [1, 2], [1, 1], [1, 1], True)
    v = mp[0]
    ix = mp[1]
    g = torch.ops.aten.cos.default(v)
    bw = torch.ops.aten.max_pool2d_with_indices_backward.default(g, x, [3, 3], [1, 2], [1, 1], [1, 1], True, ix)
    return (bw,)
)IR",
                                "max_pool2d_with_indices_backward");
}

TEST(CpuFunctionTest, AvgPool2dBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 3, 9, 8][216, 72, 8, 1]cpu"):
    ap = torch.ops.aten.avg_pool2d.default(x, [3, 3], [2, 2], [1, 1], True, False)
    g = torch.ops.aten.cos.default(ap)
    bw = torch.ops.aten.avg_pool2d_backward.default(g, x, [3, 3], [2, 2], [1, 1], True, False, None)
    ap2 = torch.ops.aten.avg_pool2d.default(x, [2, 3], [3, 1], [0, 1], False, True, 4)
    g2 = torch.ops.aten.cos.default(ap2)
    bw2 = torch.ops.aten.avg_pool2d_backward.default(g2, x, [2, 3], [3, 1], [0, 1], False, True, 4)
    return (bw, bw2)
)IR",
                                "avg_pool2d_backward");
}

TEST(CpuFunctionTest, Col2Im) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 18, 12][216, 12, 1]cpu"):
    c = torch.ops.aten.col2im.default(x, [7, 8], [3, 3], [2, 1], [2, 1], [2, 3])
    return (c,)
)IR",
                                "col2im");
}

TEST(CpuFunctionTest, AdaptiveAvgPool2dBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 3, 7, 5][105, 35, 5, 1]cpu"):
    a = torch.ops.aten._adaptive_avg_pool2d.default(x, [4, 3])
    g = torch.ops.aten.cos.default(a)
    bw = torch.ops.aten._adaptive_avg_pool2d_backward.default(g, x)
    b = torch.ops.aten._adaptive_avg_pool2d.default(x, [9, 7])
    g2 = torch.ops.aten.cos.default(b)
    bw2 = torch.ops.aten._adaptive_avg_pool2d_backward.default(g2, x)
    return (bw, bw2)
)IR",
                                "_adaptive_avg_pool2d_backward");
}

// A strided, padded, grouped convolution and a transposed one.
TEST(CpuFunctionTest, ConvolutionBackward) {
  ExpectCompiledBackwardMatches(R"IR(
def forward(self, x: "f32[2, 4, 7, 6][168, 42, 6, 1]cpu", w: "f32[6, 2, 3, 2][12, 6, 2, 1]cpu", xt: "f32[2, 4, 5, 5][100, 25, 5, 1]cpu", wt: "f32[4, 3, 3, 3][27, 9, 3, 1]cpu"):
    y = torch.ops.aten.convolution.default(x, w, None, [2, 1], [1, 1], [1, 2], False, [0, 0], 2)
    gy = torch.ops.aten.cos.default(y)
    a = torch.ops.aten.convolution_backward.default(gy, x, w, [6], [2, 1], [1, 1], [1, 2], False, [0, 0], 2, [True, True, True])
    a_0 = a[0]
    a_1 = a[1]
    a_2 = a[2]
    yt = torch.ops.aten.convolution.default(xt, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    gyt = torch.ops.aten.cos.default(yt)
    b = torch.ops.aten.convolution_backward.default(gyt, xt, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1, [True, True, False])
    b_0 = b[0]
    b_1 = b[1]
    return (a_0, a_1, a_2, b_0, b_1)
)IR",
                                "convolution_backward");
}

}  // namespace
}  // namespace lathe::codegen
