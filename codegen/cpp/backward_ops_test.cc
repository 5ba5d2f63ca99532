// Backward ops compiled for the cpu: the default pipeline's decompose
// rewrites the ones the backend does not lower, and each graph's outputs
// match the interpreter's on the graph as written.

#include "codegen/cpp/cpu_testing.h"
#include "gtest/gtest.h"

namespace lathe::codegen {
namespace {

TEST(CpuFunctionTest, LayerNormBackward) {
  ExpectPipelineCompiledMatches(R"IR(
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
  ExpectPipelineCompiledMatches(R"IR(
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
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, g: "f32[3, 4, 6][24, 6, 1]cpu", r: "i64[3, 4][4, 1]cpu"):
    i = torch.ops.aten.remainder.Scalar(r, 5)
    a = torch.ops.aten.embedding_dense_backward.default(g, i, 7, -1, False)
    b = torch.ops.aten.embedding_dense_backward.default(g, i, 5, 2, True)
    return (a, b)
)IR",
                                "embedding_dense_backward");
}

// Indices 3 k (mod 7), offsets [0, 0, 3, 3, 6] (an empty bag): the sum
// fast path (offset2bag rebuilt) with per_sample_weights and their
// gradient, mean with scale_grad_by_freq, max with padding_idx.
TEST(CpuFunctionTest, EmbeddingBagBackward) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, w: "f32[7, 3][3, 1]cpu", r: "i64[9][1]cpu", s: "f32[9][1]cpu", g: "f32[5, 3][3, 1]cpu"):
    i = torch.ops.aten.remainder.Scalar(r, 7)
    a = torch.ops.aten.arange.default(5, dtype = torch.int64)
    h = torch.ops.aten.floor_divide.Scalar(a, 2)
    o = torch.ops.aten.mul.Tensor(h, 3)
    e0 = torch.ops.aten._embedding_bag.default(w, i, o, False, 0, False, s)
    e0_1 = e0[1]
    e0_2 = e0[2]
    e0_3 = e0[3]
    b0 = torch.ops.aten._embedding_bag_backward.default(g, i, o, e0_1, e0_2, e0_3, 7, False, 0, False, s)
    p0 = torch.ops.aten._embedding_bag_per_sample_weights_backward.default(g, w, i, o, e0_1, 0)
    e1 = torch.ops.aten._embedding_bag.default(w, i, o, False, 1)
    e1_1 = e1[1]
    e1_2 = e1[2]
    e1_3 = e1[3]
    b1 = torch.ops.aten._embedding_bag_backward.default(g, i, o, e1_1, e1_2, e1_3, 7, True, 1, False, None)
    e2 = torch.ops.aten._embedding_bag.default(w, i, o, False, 2, False, None, False, 3)
    e2_1 = e2[1]
    e2_2 = e2[2]
    e2_3 = e2[3]
    b2 = torch.ops.aten._embedding_bag_backward.default(g, i, o, e2_1, e2_2, e2_3, 7, False, 2, False, None, 3)
    return (b0, p0, b1, b2)
)IR",
                                "_embedding_bag_backward");
}

// Bilinear with reflection (align_corners) and border, nearest with zeros;
// the grid reaches past the input (2 sin(.) spans [-2, 2]). Nearest's
// (zero) grid gradient is contiguous for a transposed grid, as PyTorch's.
TEST(CpuFunctionTest, GridSampler2dBackward) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 3, 4, 5][60, 20, 5, 1]cpu", g: "f32[2, 6, 7, 2][84, 14, 2, 1]cpu", go: "f32[2, 3, 6, 7][126, 42, 7, 1]cpu", h: "f32[2, 7, 6, 2][84, 12, 2, 1]cpu"):
    a = torch.ops.aten.grid_sampler_2d_backward.default(go, x, g, 0, 2, True, [True, True])
    a_0 = a[0]
    a_1 = a[1]
    b = torch.ops.aten.grid_sampler_2d_backward.default(go, x, g, 0, 1, False, [True, True])
    b_0 = b[0]
    b_1 = b[1]
    c = torch.ops.aten.grid_sampler_2d_backward.default(go, x, g, 1, 0, False, [True, False])
    c_0 = c[0]
    ht = torch.ops.aten.transpose.int(h, 1, 2)
    d = torch.ops.aten.grid_sampler_2d_backward.default(go, x, ht, 1, 1, True, [False, True])
    d_1 = d[1]
    return (a_0, a_1, b_0, b_1, c_0, d_1)
)IR",
                                "grid_sampler_2d_backward");
}

TEST(CpuFunctionTest, MaxPool2dWithIndicesBackward) {
  ExpectPipelineCompiledMatches(R"IR(
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
  ExpectPipelineCompiledMatches(R"IR(
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

TEST(CpuFunctionTest, AvgPool3dBackward) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 3, 5, 6, 4][360, 120, 24, 4, 1]cpu"):
    ap = torch.ops.aten.avg_pool3d.default(x, [3, 2, 2], [2, 2, 1], [1, 1, 0], True, False)
    g = torch.ops.aten.cos.default(ap)
    bw = torch.ops.aten.avg_pool3d_backward.default(g, x, [3, 2, 2], [2, 2, 1], [1, 1, 0], True, False, None)
    return (bw,)
)IR",
                                "avg_pool3d_backward");
}

TEST(CpuFunctionTest, MaxPool3dWithIndicesBackward) {
  // A channels-last input: the gradient is channels-last too.
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 3, 5, 6, 4][360, 1, 72, 12, 3]cpu"):
    mp = torch.ops.aten.max_pool3d_with_indices.default(x, [3, 2, 2], [2, 1, 2], [1, 1, 0], [1, 2, 1], True)
    v = mp[0]
    ix = mp[1]
    g = torch.ops.aten.cos.default(v)
    bw = torch.ops.aten.max_pool3d_with_indices_backward.default(g, x, [3, 2, 2], [2, 1, 2], [1, 1, 0], [1, 2, 1], True, ix)
    return (bw,)
)IR",
                                "max_pool3d_with_indices_backward");
}

TEST(CpuFunctionTest, Col2Im) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[2, 18, 12][216, 12, 1]cpu"):
    c = torch.ops.aten.col2im.default(x, [7, 8], [3, 3], [2, 1], [2, 1], [2, 3])
    return (c,)
)IR",
                                "col2im");
}

TEST(CpuFunctionTest, AdaptiveAvgPool2dBackward) {
  ExpectPipelineCompiledMatches(R"IR(
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
  ExpectPipelineCompiledMatches(R"IR(
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

// Every activation's backward in one graph (their pointwise
// decompositions fuse into one kernel).
TEST(CpuFunctionTest, ActivationBackwards) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, g: "f32[6, 9][9, 1]cpu", x: "f32[6, 9][9, 1]cpu"):
    y = torch.ops.aten.sigmoid.default(x)
    t = torch.ops.aten.tanh.default(x)
    a = torch.ops.aten.gelu_backward.default(g, x)
    b = torch.ops.aten.gelu_backward.default(g, x, approximate = 'tanh')
    c = torch.ops.aten.silu_backward.default(g, x)
    d = torch.ops.aten.threshold_backward.default(g, x, 0)
    e = torch.ops.aten.sigmoid_backward.default(g, y)
    f = torch.ops.aten.tanh_backward.default(g, t)
    h = torch.ops.aten.hardtanh_backward.default(g, x, 0.0, 1.0)
    i = torch.ops.aten.leaky_relu_backward.default(g, x, 0.2, False)
    j = torch.ops.aten.elu_backward.default(g, 1.0, 1, 1, False, x)
    k = torch.ops.aten.softplus_backward.default(g, x, 2.0, 3.0)
    l = torch.ops.aten.hardswish_backward.default(g, x)
    m = torch.ops.aten.hardsigmoid_backward.default(g, x)
    n = torch.ops.aten.mish_backward.default(g, x)
    return (a, b, c, d, e, f, h, i, j, k, l, m, n)
)IR",
                                "_backward");
}

// softmax's backwards, the losses' backwards, nll_loss's (1-d and 2-d).
TEST(CpuFunctionTest, SoftmaxAndLossBackwards) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, g: "f32[][]cpu", x: "f32[6, 5][5, 1]cpu", t: "f32[6, 5][5, 1]cpu", x4: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu"):
    y = torch.ops.aten._softmax.default(x, 1, False)
    ly = torch.ops.aten._log_softmax.default(x, 0, False)
    a = torch.ops.aten._softmax_backward_data.default(t, y, 1, torch.float32)
    b = torch.ops.aten._log_softmax_backward_data.default(t, ly, 0, torch.float32)
    c = torch.ops.aten.mse_loss_backward.default(g, x, t, 1)
    d = torch.ops.aten.smooth_l1_loss_backward.default(g, x, t, 2, 0.5)
    e = torch.ops.aten.huber_loss_backward.default(g, x, t, 1, 0.7)
    sx = torch.ops.aten.sigmoid.default(x)
    st = torch.ops.aten.sigmoid.default(t)
    f = torch.ops.aten.binary_cross_entropy_backward.default(g, sx, st, None, 1)
    i = torch.ops.aten.arange.default(6, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    tt = torch.ops.aten.remainder.Scalar(i, 5)
    tw = torch.ops.aten.sum.default(st)
    h = torch.ops.aten.nll_loss_backward.default(g, x, tt, None, 1, 2, tw)
    i4 = torch.ops.aten.arange.default(24, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
    m4 = torch.ops.aten.remainder.Scalar(i4, 5)
    t4 = torch.ops.aten.view.default(m4, [2, 3, 4])
    k = torch.ops.aten.nll_loss2d_backward.default(g, x4, t4, None, 2, 1, tw)
    return (a, b, c, d, e, f, h, k)
)IR",
                                "_backward");
}

// Batch norm's backward in training, after the forward op.
TEST(CpuFunctionTest, BatchNormBackward) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[4, 3, 5, 2][30, 10, 2, 1]cpu", w: "f32[3][1]cpu", b: "f32[3][1]cpu", rm: "f32[3][1]cpu", rv: "f32[3][1]cpu", g: "f32[4, 3, 5, 2][30, 10, 2, 1]cpu"):
    bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-05)
    mean = bn[1]
    invstd = bn[2]
    back = torch.ops.aten.native_batch_norm_backward.default(g, x, w, rm, rv, mean, invstd, True, 1e-05, [True, True, True])
    dx = back[0]
    dw = back[1]
    db = back[2]
    return (dx, dw, db)
)IR",
                                "native_batch_norm_backward");
}

// The CPU flash attention's backward after its forward, causal.
TEST(CpuFunctionTest, FlashAttentionBackward) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, q: "f32[2, 2, 4, 8][64, 32, 8, 1]cpu", k: "f32[2, 2, 6, 8][96, 48, 8, 1]cpu", v: "f32[2, 2, 6, 8][96, 48, 8, 1]cpu", g: "f32[2, 2, 4, 8][64, 32, 8, 1]cpu"):
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)
    o = f[0]
    l = f[1]
    b = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, o, l, 0.0, True)
    dq = b[0]
    dk = b[1]
    dv = b[2]
    return (dq, dk, dv)
)IR",
                                "flash_attention_for_cpu_backward");
}

// The same with scores 60x larger: most weights' shifted scores (forward
// and backward) are below -87.5, where the compiled exp is given 0 instead
// and the weight is set to 0 after. Those weights are below FLT_MIN, so
// the outputs cannot show whether they were flushed; what the test sees is
// that no NaN or inf leaks in and the rest matches the reference.
TEST(CpuFunctionTest, FlashAttentionWithScoresFarBelowTheRowMax) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, q: "f32[2, 2, 16, 8][256, 128, 8, 1]cpu", k: "f32[2, 2, 16, 8][256, 128, 8, 1]cpu", v: "f32[2, 2, 16, 8][256, 128, 8, 1]cpu", g: "f32[2, 2, 16, 8][256, 128, 8, 1]cpu"):
    big = torch.ops.aten.mul.Tensor(q, 60.0)
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(big, k, v, 0.0, False)
    o = f[0]
    l = f[1]
    b = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, big, k, v, o, l, 0.0, False)
    dq = b[0]
    dk = b[1]
    dv = b[2]
    return (o, l, dq, dk, dv)
)IR",
                                "flash_attention_for_cpu_backward");
}

// Softmax and log_softmax of scores far below their row's max (x * 200:
// most lanes past exp's underflow, many in its subnormal range) and
// softmax's backward: the weights under FLT_MIN are 0 (ExpUnmasked), which
// moves no result past the tolerance, and no NaN or inf leaks in.
TEST(CpuFunctionTest, SoftmaxWithScoresFarBelowTheRowMax) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[4, 33][33, 1]cpu", g: "f32[4, 33][33, 1]cpu"):
    big = torch.ops.aten.mul.Tensor(x, 200.0)
    s = torch.ops.aten._softmax.default(big, -1, False)
    l = torch.ops.aten._log_softmax.default(big, -1, False)
    b = torch.ops.aten._softmax_backward_data.default(g, s, -1, torch.float32)
    return (s, l, b)
)IR",
                                "_softmax.default");
}

// The CUDA kernels' attention ops (memory-efficient with a bias and its
// gradient, and causal with a per-head, per-row bias [1, H, L, 1] whose
// gradient sums the broadcast away; cuDNN, causal), forward then backward,
// on a query laid out (B, L, H, E): every one decomposed, the compiled
// results (logsumexps with their +inf padding too) and their layouts the
// interpreter's.
TEST(CpuFunctionTest, CudaAttentionOpsAndTheirBackwards) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, q: "f32[2, 2, 5, 8][80, 8, 16, 1]cpu", k: "f32[2, 2, 6, 8][96, 48, 8, 1]cpu", v: "f32[2, 2, 6, 8][96, 48, 8, 1]cpu", bias: "f32[5, 6][6, 1]cpu", g: "f32[2, 2, 5, 8][80, 40, 8, 1]cpu", heads: "f32[1, 2, 5, 1][10, 5, 1, 1]cpu"):
    f = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, bias, True)
    o = f[0]
    l = f[1]
    s = f[2]
    off = f[3]
    b = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default(g, q, k, v, bias, o, l, s, off, 0.0, [True, True, True, True])
    dq = b[0]
    dk = b[1]
    dv = b[2]
    db = b[3]
    c = torch.ops.aten._scaled_dot_product_cudnn_attention.default(q, k, v, None, True, 0.0, True)
    co = c[0]
    cl = c[1]
    cs = c[6]
    coff = c[7]
    cb = torch.ops.aten._scaled_dot_product_cudnn_attention_backward.default(g, q, k, v, co, cl, cs, coff, None, None, None, 5, 6, 0.0, True)
    cdq = cb[0]
    cdk = cb[1]
    cdv = cb[2]
    h = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, heads, True, 0.0, True)
    ho = h[0]
    hl = h[1]
    hs = h[2]
    hoff = h[3]
    hb = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default(g, q, k, v, heads, ho, hl, hs, hoff, 0.0, [True, True, True, True], True)
    hdb = hb[3]
    return (o, l, dq, dk, dv, db, co, cl, cdq, cdk, cdv, ho, hdb)
)IR",
                                "attention");
}

// The pads' backwards, and roll by a negative shift (roll's own backward).
TEST(CpuFunctionTest, PadBackwardsAndNegativeRoll) {
  ExpectPipelineCompiledMatches(R"IR(
def forward(self, x: "f32[1, 2, 4, 5][40, 20, 5, 1]cpu", g: "f32[1, 2, 7, 8][112, 56, 8, 1]cpu"):
    a = torch.ops.aten.reflection_pad2d_backward.default(g, x, [1, 2, 1, 2])
    b = torch.ops.aten.replication_pad2d_backward.default(g, x, [3, 0, 2, 1])
    c = torch.ops.aten.roll.default(g, [-1, 3], [2, 3])
    return (a, b, c)
)IR",
                                "pad2d_backward");
}

}  // namespace
}  // namespace lathe::codegen
