// The decompose pass's rules for backward ops (decompose_backward.h), each
// run on the reference interpreter before and after the pass
// (decompose_testing.h) in every float dtype, and the graphs some rules
// write, checked with FileCheck.

#include "passes/decompose_backward.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/decompose.h"
#include "passes/decompose_testing.h"
#include "passes/pass_testing.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// mean and rstd from the forward op; every output_mask; a transposed
// (non-contiguous) gradient; all dims normalized (no outer dims: the
// weight's gradient is not summed).
TEST(DecomposeDifferentialTest, LayerNormBackward) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, x: "$[2, 3, 4, 5]", w: "$[4, 5]", b: "$[4, 5]", dy: "$[2, 3, 5, 4]"):
    ln = torch.ops.aten.native_layer_norm.default(x, [4, 5], w, b, 1e-05)
    mean = ln[1]
    rstd = ln[2]
    t = torch.ops.aten.transpose.int(dy, 2, 3)
    bw = torch.ops.aten.native_layer_norm_backward.default(t, x, [4, 5], mean, rstd, w, b, [True, True, True])
    bw_0 = bw[0]
    bw_1 = bw[1]
    bw_2 = bw[2]
    ln2 = torch.ops.aten.native_layer_norm.default(x, [5], None, None, 0.001)
    mean2 = ln2[1]
    rstd2 = ln2[2]
    bw2 = torch.ops.aten.native_layer_norm_backward.default(t, x, [5], mean2, rstd2, None, None, [True, False, False])
    bw2_0 = bw2[0]
    bw3 = torch.ops.aten.native_layer_norm_backward.default(t, x, [4, 5], mean, rstd, w, b, [False, True, False])
    bw3_1 = bw3[1]
    return (bw_0, bw_1, bw_2, bw2_0, bw3_1)
)IR",
            dtype),
        "layer_norm_backward");
  }
  ExpectSameResults(
      R"IR(def forward(self, x: "f32[3, 4]", w: "f32[3, 4]", b: "f32[3, 4]", dy: "f32[3, 4]"):
    ln = torch.ops.aten.native_layer_norm.default(x, [3, 4], w, b, 1e-05)
    mean = ln[1]
    rstd = ln[2]
    bw = torch.ops.aten.native_layer_norm_backward.default(dy, x, [3, 4], mean, rstd, w, b, [True, True, True])
    bw_0 = bw[0]
    bw_1 = bw[1]
    bw_2 = bw[2]
    return (bw_0, bw_1, bw_2)
)IR",
      "layer_norm_backward");
}

TEST(DecomposeDifferentialTest, LayerNormBackwardOfSymbolicRows) {
  ExpectSameResults(R"IR(# lathe: hint s0 5
def forward(self, x: "f32[s0, 6]", w: "f32[6]", dy: "f32[s0, 6]"):
    ln = torch.ops.aten.native_layer_norm.default(x, [6], w, None, 1e-05)
    mean = ln[1]
    rstd = ln[2]
    bw = torch.ops.aten.native_layer_norm_backward.default(dy, x, [6], mean, rstd, w, None, [True, True, False])
    bw_0 = bw[0]
    bw_1 = bw[1]
    return (bw_0, bw_1)
)IR",
                    "layer_norm_backward");
}

TEST(DecomposeDifferentialTest, GroupNormBackward) {
  for (const char* dtype : {"f32", "f64", "f16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, x: "$[2, 6, 3, 2]", w: "$[6]", b: "$[6]", dy: "$[2, 6, 3, 2]", x3: "$[3, 4, 5]", dy3: "$[3, 4, 5]"):
    gn = torch.ops.aten.native_group_norm.default(x, w, b, 2, 6, 6, 3, 1e-05)
    mean = gn[1]
    rstd = gn[2]
    bw = torch.ops.aten.native_group_norm_backward.default(dy, x, mean, rstd, w, 2, 6, 6, 3, [True, True, True])
    bw_0 = bw[0]
    bw_1 = bw[1]
    bw_2 = bw[2]
    gn2 = torch.ops.aten.native_group_norm.default(x, None, None, 2, 6, 6, 2, 1e-05)
    mean2 = gn2[1]
    rstd2 = gn2[2]
    bw2 = torch.ops.aten.native_group_norm_backward.default(dy, x, mean2, rstd2, None, 2, 6, 6, 2, [True, False, True])
    bw2_0 = bw2[0]
    bw2_2 = bw2[2]
    gn3 = torch.ops.aten.native_group_norm.default(x3, None, None, 3, 4, 5, 4, 1e-05)
    mean3 = gn3[1]
    rstd3 = gn3[2]
    bw3 = torch.ops.aten.native_group_norm_backward.default(dy3, x3, mean3, rstd3, None, 3, 4, 5, 4, [True, True, False])
    bw3_0 = bw3[0]
    bw3_1 = bw3[1]
    return (bw_0, bw_1, bw_2, bw2_0, bw2_2, bw3_0, bw3_1)
)IR",
            dtype),
        "group_norm_backward");
  }
}

// Valid indices (remainder 7) with repeats, int64 and int32; padding_idx;
// scale_grad_by_freq.
TEST(DecomposeDifferentialTest, EmbeddingDenseBackward) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, g: "$[3, 4, 5]", r: "i64[3, 4]", g1: "$[9, 2]", r1: "i64[9]"):
    i = torch.ops.aten.remainder.Scalar(r, 7)
    i32 = torch.ops.prims.convert_element_type.default(i, torch.int32)
    a = torch.ops.aten.embedding_dense_backward.default(g, i, 7, -1, False)
    b = torch.ops.aten.embedding_dense_backward.default(g, i, 7, 2, False)
    c = torch.ops.aten.embedding_dense_backward.default(g, i32, 7, -1, True)
    d = torch.ops.aten.embedding_dense_backward.default(g, i, 9, 3, True)
    j = torch.ops.aten.remainder.Scalar(r1, 4)
    t = torch.ops.aten.t.default(g1)
    t2 = torch.ops.aten.t.default(t)
    e = torch.ops.aten.embedding_dense_backward.default(t2, j, 4, 0, True)
    return (a, b, c, d, e)
)IR",
            dtype),
        "embedding_dense_backward");
  }
}

// _embedding_bag's backwards after its forward (whose offset2bag is empty
// on the fast sum path: the backward rebuilds it from the offsets), every
// mode; offsets with empty bags [0, 0, 3, 3, 6] and [0, 3, 6, 9], the
// latter also with include_last_offset; per_sample_weights (and their
// gradient), padding_idx, scale_grad_by_freq.
TEST(DecomposeDifferentialTest, EmbeddingBagBackward) {
  struct Case {
    int mode;
    const char* psw;
    int padding_idx;
    bool freq;
  };
  const Case cases[] = {{0, "None", -1, false}, {0, "s", -1, true},
                        {0, "s", 4, false},     {0, "None", 4, true},
                        {1, "None", -1, false}, {1, "None", 4, true},
                        {2, "None", -1, false}, {2, "None", 4, false}};
  for (const char* dtype : {"f32", "f64", "bf16"}) {
    std::string text = WithDType(
        R"IR(def forward(self, w: "$[10, 3]", r: "i64[9]", s: "$[9]", g: "$[5, 3]"):
    i = torch.ops.aten.remainder.Scalar(r, 10)
    a = torch.ops.aten.arange.default(5, dtype = torch.int64)
    h = torch.ops.aten.floor_divide.Scalar(a, 2)
    o = torch.ops.aten.mul.Tensor(h, 3)
    o2 = torch.ops.aten.arange.start_step(0, 10, 3, dtype = torch.int64)
    g3 = torch.ops.aten.slice.Tensor(g, 0, 0, 3)
    g4 = torch.ops.aten.slice.Tensor(g, 0, 0, 4)
)IR",
        dtype);
    std::vector<std::string> outs;
    int k = 0;
    struct Offsets {
      const char* name;
      const char* last;
      const char* grad;
    };
    for (const Offsets& o :
         {Offsets{"o", "False", "g"}, Offsets{"o2", "True", "g3"},
          Offsets{"o2", "False", "g4"}}) {
      for (const Case& c : cases) {
        std::string eb = absl::StrCat("eb", k), bw = absl::StrCat("bw", k);
        ++k;
        absl::StrAppend(&text, "    ", eb,
                        " = torch.ops.aten._embedding_bag.default(w, i, ",
                        o.name, ", False, ", c.mode, ", False, ", c.psw, ", ",
                        o.last, ", ", c.padding_idx, ")\n");
        for (int item = 1; item < 4; ++item) {
          absl::StrAppend(&text, "    ", eb, "_", item, " = ", eb, "[", item,
                          "]\n");
        }
        absl::StrAppend(
            &text, "    ", bw, " = torch.ops.aten._embedding_bag_backward.",
            "default(", o.grad, ", i, ", o.name, ", ", eb, "_1, ", eb, "_2, ",
            eb, "_3, 10, ", c.freq ? "True" : "False", ", ", c.mode,
            ", False, ", c.psw, ", ", c.padding_idx, ")\n");
        outs.push_back(bw);
        if (std::string(c.psw) == "s") {
          absl::StrAppend(&text, "    p", bw,
                          " = torch.ops.aten._embedding_bag_per_sample_weights_"
                          "backward.default(",
                          o.grad, ", w, i, ", o.name, ", ", eb, "_1, 0, ",
                          c.padding_idx, ")\n");
          outs.push_back(absl::StrCat("p", bw));
        }
      }
    }
    absl::StrAppend(&text, "    return (", absl::StrJoin(outs, ", "), ")\n");
    ExpectSameResults(text, "_embedding_bag_backward");
  }
}

// grid_sampler_2d_backward, bilinear and nearest, every padding mode, with
// and without align_corners; both gradients, then each alone.
TEST(DecomposeDifferentialTest, GridSampler2dBackward) {
  for (const char* dtype : {"f32", "f64"}) {
    std::string body;
    int k = 0;
    std::vector<std::string> outs;
    for (int mode : {0, 1}) {
      for (int padding : {0, 1, 2}) {
        for (const char* align : {"False", "True"}) {
          for (const char* mask : {"TT", "TF", "FT"}) {
            std::string name = absl::StrCat("b", k++);
            absl::StrAppend(
                &body, "    ", name,
                " = torch.ops.aten.grid_sampler_2d_backward.default(go, x, g, ",
                mode, ", ", padding, ", ", align, ", [",
                mask[0] == 'T' ? "True" : "False", ", ",
                mask[1] == 'T' ? "True" : "False", "])\n");
            for (int item : {0, 1}) {
              if (mask[item] == 'F') continue;
              absl::StrAppend(&body, "    ", name, "_", item, " = ", name, "[",
                              item, "]\n");
              outs.push_back(absl::StrCat(name, "_", item));
            }
          }
        }
      }
    }
    ExpectSameResults(
        absl::StrCat("def forward(self, x: \"", dtype, "[2, 3, 4, 5]\", g: \"",
                     dtype, "[2, 6, 7, 2]\", go: \"", dtype,
                     "[2, 3, 6, 7]\"):\n", body, "    return (",
                     absl::StrJoin(outs, ", "), ")\n"),
        "grid_sampler_2d_backward");
  }
}

// Indices from the forward op: overlapping windows, stride > kernel,
// padding, dilation, ceil_mode, an unbatched input.
TEST(DecomposeDifferentialTest, MaxPool2dWithIndicesBackward) {
  struct Case {
    const char* params;  // kernel, stride, padding, dilation, ceil_mode
    const char* input;
  };
  const Case cases[] = {
      {"[3, 3], [1, 1], [1, 1], [1, 1], False", "[2, 3, 7, 8]"},
      {"[3, 3], [2, 2], [1, 1], [1, 1], False", "[2, 3, 7, 8]"},
      {"[2, 2], [3, 3], [0, 0], [1, 1], False", "[2, 3, 7, 8]"},
      {"[3, 2], [2, 2], [1, 0], [1, 1], True", "[2, 3, 8, 7]"},
      {"[2, 3], [1, 2], [1, 1], [2, 2], True", "[3, 7, 8]"},
  };
  for (const char* dtype : {"f32", "f64", "f16"}) {
    for (const Case& k : cases) {
      ExpectSameResults(
          absl::StrCat("def forward(self, x: \"", dtype, k.input,
                       "\"):\n    mp = "
                       "torch.ops.aten.max_pool2d_with_indices.default(x, ",
                       k.params, R"IR()
    v = mp[0]
    ix = mp[1]
    g = torch.ops.aten.sin.default(v)
    bw = torch.ops.aten.max_pool2d_with_indices_backward.default(g, x, )IR",
                       k.params, R"IR(, ix)
    return (bw,)
)IR"),
          "max_pool2d_with_indices_backward");
    }
  }
}

// The same over three spatial dims, batched and not.
TEST(DecomposeDifferentialTest, MaxPool3dWithIndicesBackward) {
  const char* cases[][2] = {
      {"[2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False", "[2, 3, 4, 5, 6]"},
      {"[3, 2, 2], [2, 1, 2], [1, 1, 0], [1, 2, 1], True", "[2, 2, 5, 6, 5]"},
      {"[2, 3, 2], [1, 2, 1], [1, 1, 1], [2, 1, 1], True", "[3, 5, 6, 4]"},
  };
  for (const char* dtype : {"f32", "f64", "bf16"}) {
    for (const auto& k : cases) {
      ExpectSameResults(
          absl::StrCat("def forward(self, x: \"", dtype, k[1],
                       "\"):\n    mp = "
                       "torch.ops.aten.max_pool3d_with_indices.default(x, ",
                       k[0],
                       ")\n    v = mp[0]\n    ix = mp[1]\n    g = "
                       "torch.ops.aten.sin.default(v)\n    bw = "
                       "torch.ops.aten.max_pool3d_with_indices_backward."
                       "default(g, x, ",
                       k[0], ", ix)\n    return (bw,)\n"),
          "max_pool3d_with_indices_backward");
    }
  }
}

// An avg_pool{nsp}d and its backward: the forward's arguments after x, the
// backward's after the gradient and x, and x's sizes.
struct AvgPoolCase {
  const char* forward;
  const char* backward;
  const char* input;
};

// avg_pool{nsp}d_backward of sin(avg_pool{nsp}d(x)) for each case and dtype,
// before and after decompose.
void ExpectAvgPoolBackwardsSame(int nsp, absl::Span<const AvgPoolCase> cases,
                                std::vector<const char*> dtypes) {
  const std::string op = absl::StrCat("avg_pool", nsp, "d");
  for (const char* dtype : dtypes) {
    for (const AvgPoolCase& k : cases) {
      ExpectSameResults(
          absl::StrCat("def forward(self, x: \"", dtype, k.input,
                       "\"):\n    ap = torch.ops.aten.", op, ".default(x, ",
                       k.forward, ")\n    g = torch.ops.aten.sin.default(ap)\n",
                       "    bw = torch.ops.aten.", op,
                       "_backward.default(g, x, ", k.backward,
                       ")\n    return (bw,)\n"),
          absl::StrCat(op, "_backward"));
    }
  }
}

// kernel, stride ([] = the kernel), padding, ceil_mode, count_include_pad,
// divisor_override.
TEST(DecomposeDifferentialTest, AvgPool2dBackward) {
  const AvgPoolCase cases[] = {
      {"[3, 3], [1, 1], [1, 1]", "[3, 3], [1, 1], [1, 1], False, True, None",
       "[2, 3, 7, 8]"},
      {"[3, 3], [2, 2], [1, 1], False, False",
       "[3, 3], [2, 2], [1, 1], False, False, None", "[2, 3, 7, 8]"},
      {"[2, 2], [3, 3]", "[2, 2], [3, 3], [0, 0], False, True, None",
       "[2, 3, 7, 8]"},
      {"[2, 2]", "[2, 2], [], [0, 0], False, True, None", "[2, 3, 6, 8]"},
      {"[3, 2], [2, 2], [1, 0], True",
       "[3, 2], [2, 2], [1, 0], True, True, "
       "None",
       "[2, 3, 8, 7]"},
      {"[3, 3], [2, 2], [1, 1], True, False",
       "[3, 3], [2, 2], [1, 1], True, False, None", "[3, 8, 8]"},
      {"[2, 3], [2, 1], [1, 1], True, True, 5",
       "[2, 3], [2, 1], [1, 1], True, True, 5", "[3, 7, 6]"},
  };
  ExpectAvgPoolBackwardsSame(2, cases, {"f32", "f64", "f16", "bf16"});
}

// The same over three spatial dims: each axis its own kernel, stride and
// padding; ceil_mode windows past the input; an unbatched input.
TEST(DecomposeDifferentialTest, AvgPool3dBackward) {
  const AvgPoolCase cases[] = {
      {"[3, 3, 3], [1, 1, 1], [1, 1, 1]",
       "[3, 3, 3], [1, 1, 1], [1, 1, 1], False, True, None", "[2, 2, 5, 4, 6]"},
      {"[3, 2, 2], [2, 1, 2], [1, 0, 1], True, False",
       "[3, 2, 2], [2, 1, 2], [1, 0, 1], True, False, None", "[2, 3, 6, 5, 5]"},
      {"[2, 2, 2]", "[2, 2, 2], [], [0, 0, 0], False, True, None",
       "[1, 2, 4, 6, 4]"},
      {"[2, 3, 2], [2, 2, 1], [1, 1, 0], True, True, 3",
       "[2, 3, 2], [2, 2, 1], [1, 1, 0], True, True, 3", "[3, 5, 6, 4]"},
  };
  ExpectAvgPoolBackwardsSame(3, cases, {"f32", "f64", "bf16"});
}

// Batched and not; padding, dilation and stride differing per axis, stride
// past the kernel.
TEST(DecomposeDifferentialTest, Col2Im) {
  for (const char* dtype : {"f32", "f64", "f16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, x: "$[2, 12, 12]", y: "$[9, 12]", z: "$[1, 8, 4]"):
    a = torch.ops.aten.col2im.default(x, [5, 6], [2, 3], [1, 1], [0, 1], [1, 2])
    b = torch.ops.aten.col2im.default(y, [7, 8], [3, 3], [2, 1], [2, 1], [2, 3])
    c = torch.ops.aten.col2im.default(z, [5, 5], [2, 2], [1, 1], [0, 0], [3, 3])
    return (a, b, c)
)IR",
            dtype),
        "col2im");
  }
}

// Windows that overlap (output larger than the input) and that do not; an
// unbatched input.
TEST(DecomposeDifferentialTest, AdaptiveAvgPool2dBackward) {
  for (const char* dtype : {"f32", "f64", "f16"}) {
    ExpectSameResults(
        WithDType(R"IR(def forward(self, x: "$[2, 3, 7, 5]", y: "$[3, 6, 6]"):
    a = torch.ops.aten._adaptive_avg_pool2d.default(x, [4, 3])
    ga = torch.ops.aten.sin.default(a)
    bw_a = torch.ops.aten._adaptive_avg_pool2d_backward.default(ga, x)
    b = torch.ops.aten._adaptive_avg_pool2d.default(x, [9, 7])
    gb = torch.ops.aten.sin.default(b)
    bw_b = torch.ops.aten._adaptive_avg_pool2d_backward.default(gb, x)
    c = torch.ops.aten._adaptive_avg_pool2d.default(y, [3, 2])
    gc = torch.ops.aten.sin.default(c)
    bw_c = torch.ops.aten._adaptive_avg_pool2d_backward.default(gc, y)
    d = torch.ops.aten._adaptive_avg_pool2d.default(y, [1, 1])
    gd = torch.ops.aten.sin.default(d)
    bw_d = torch.ops.aten._adaptive_avg_pool2d_backward.default(gd, y)
    return (bw_a, bw_b, bw_c, bw_d)
)IR",
                  dtype),
        "_adaptive_avg_pool2d_backward");
  }
}

// Strided, padded, dilated, grouped, transposed (with output_padding), 1-d
// and 2-d; output_mask with false entries.
TEST(DecomposeDifferentialTest, ConvolutionBackward) {
  for (const char* dtype : {"f32", "f64"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, x: "$[2, 4, 7, 6]", w: "$[6, 4, 3, 3]", w2: "$[6, 2, 3, 2]", xt: "$[2, 4, 5, 5]", wt: "$[4, 3, 3, 3]", wt2: "$[4, 2, 3, 3]", x1: "$[2, 3, 9]", w1: "$[5, 3, 4]"):
    y = torch.ops.aten.convolution.default(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    gy = torch.ops.aten.sin.default(y)
    a = torch.ops.aten.convolution_backward.default(gy, x, w, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])
    a_0 = a[0]
    a_1 = a[1]
    a_2 = a[2]
    y2 = torch.ops.aten.convolution.default(x, w2, None, [1, 2], [0, 1], [2, 1], False, [0, 0], 2)
    gy2 = torch.ops.aten.sin.default(y2)
    b = torch.ops.aten.convolution_backward.default(gy2, x, w2, None, [1, 2], [0, 1], [2, 1], False, [0, 0], 2, [True, True, False])
    b_0 = b[0]
    b_1 = b[1]
    yt = torch.ops.aten.convolution.default(xt, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    gyt = torch.ops.aten.sin.default(yt)
    c = torch.ops.aten.convolution_backward.default(gyt, xt, wt, [3], [2, 2], [1, 1], [1, 1], True, [1, 1], 1, [True, True, True])
    c_0 = c[0]
    c_1 = c[1]
    c_2 = c[2]
    yt2 = torch.ops.aten.convolution.default(xt, wt2, None, [1, 2], [0, 1], [1, 2], True, [0, 1], 2)
    gyt2 = torch.ops.aten.sin.default(yt2)
    d = torch.ops.aten.convolution_backward.default(gyt2, xt, wt2, [4], [1, 2], [0, 1], [1, 2], True, [0, 1], 2, [True, True, True])
    d_0 = d[0]
    d_1 = d[1]
    d_2 = d[2]
    y1 = torch.ops.aten.convolution.default(x1, w1, None, [5], [2], [1], False, [0], 1)
    gy1 = torch.ops.aten.sin.default(y1)
    e = torch.ops.aten.convolution_backward.default(gy1, x1, w1, [5], [5], [2], [1], False, [0], 1, [False, True, True])
    e_1 = e[1]
    e_2 = e[2]
    return (a_0, a_1, a_2, b_0, b_1, c_0, c_1, c_2, d_0, d_1, d_2, e_1, e_2)
)IR",
            dtype),
        "convolution_backward");
  }
}

// Symbolic batch and spatial sizes (a CNN under dynamic=True): the
// transposed convolution's output_padding, the input's size modulo the
// stride, is specialized under a guard; the weight gradient is cropped to
// the kernel symbolically.
TEST(DecomposeDifferentialTest, ConvolutionBackwardOverSymbolicSizes) {
  ExpectSameResults(R"IR(# lathe: hint s0 2
# lathe: hint s1 7
# lathe: hint s2 6
def forward(self, x: "f32[s0, 4, s1, s2]", w: "f32[6, 4, 3, 3]"):
    y = torch.ops.aten.convolution.default(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    gy = torch.ops.aten.sin.default(y)
    a = torch.ops.aten.convolution_backward.default(gy, x, w, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])
    a_0 = a[0]
    a_1 = a[1]
    a_2 = a[2]
    return (a_0, a_1, a_2)
)IR",
                    "convolution_backward");
}

// A result whose sizes differ from the op's in form but are equal over the
// symbols' ranges (a ResNet's last block under dynamic=True: its gradient
// is [s0, 4, 1, 1] where the input is [s0, 4, ((s1 - 1)//32) + 1, ...],
// and s1 <= 32) is the op's: the op is decomposed, not kept.
TEST(DecomposeTest, ResultsEqualOverTheSymbolsRangesAreTheOps) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(# lathe: hint s0 3
# lathe: hint s1 32
# lathe: range s1 2 32
def forward(self, g: "f32[s0, 4, 1, 1]", x: "f32[s0, 4, (((s1 - 1)//32)) + 1, (((s1 - 1)//32)) + 1]", w: "f32[4]", m: "f32[4]", v: "f32[4]"):
    a = torch.ops.aten.native_batch_norm_backward.default(g, x, w, m, v, m, v, True, 1e-05, [True, True, True])
    a_0 = a[0]
    a_1 = a[1]
    a_2 = a[2]
    return (a_0, a_1, a_2)
)IR",
      R"(
CHECK-NOT: native_batch_norm_backward
CHECK: aten.sum
CHECK: return
)"));
}

// What the backward decompositions leave: a transposed convolution whose
// output_padding reaches the stride (allowed below the dilation), and
// pools over symbolic spatial sizes.
TEST(DecomposeTest, LeavesBackwardOpsItCannotDecompose) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(# lathe: hint s0 6
def forward(self, x: "f32[1, 2, 5]", w: "f32[2, 3, 3]", g: "f32[1, 3, 10]", y: "f32[1, 2, s0, 6]", gy: "f32[1, 2, 3, 3]"):
    c = torch.ops.aten.convolution_backward.default(g, x, w, [3], [1], [0], [2], True, [1], 1, [True, False, False])
    c_0 = c[0]
    a = torch.ops.aten._adaptive_avg_pool2d_backward.default(gy, y)
    return (c_0, a)
)IR",
      std::nullopt));
}

// Rows at padding_idx are zeroed before the index_add into zeros of
// [num_weights, D].
TEST(DecomposeTest, EmbeddingDenseBackwardIsAnIndexAdd) {
  EXPECT_OK(RunPassAndFileCheck<Decompose>(
      R"IR(def forward(self, g: "f32[2, 3, 4]", i: "i64[2, 3]"):
    e = torch.ops.aten.embedding_dense_backward.default(g, i, 10, 2, False)
    return (e,)
)IR",
      R"IR(
CHECK: [[G:[a-z_0-9]+]]: "f32[6, 4][4, 1]cpu" = torch.ops.aten.view.default(g, [6, 4])
CHECK: [[I:[a-z_0-9]+]]: "i64[6][1]cpu" = torch.ops.aten.view.default(i, [6])
CHECK: [[KEEP:[a-z_0-9]+]]: "b8[6][1]cpu" = torch.ops.aten.ne.Scalar([[I]], 2)
CHECK: [[K:[a-z_0-9]+]]: "b8[6, 1][1, 1]cpu" = torch.ops.aten.unsqueeze.default([[KEEP]], 1)
CHECK: [[W:[a-z_0-9]+]]: "f32[6, 4][4, 1]cpu" = torch.ops.aten.where.ScalarOther([[K]], [[G]], 0.0)
CHECK: [[Z:[a-z_0-9]+]]: "f32[10, 4][4, 1]cpu" = torch.ops.aten.full.default([10, 4], 0,
CHECK: [[OUT:[a-z_0-9]+]]: "f32[10, 4][4, 1]cpu" = torch.ops.aten.index_add.default([[Z]], 0, [[I]], [[W]])
CHECK-NOT: embedding_dense_backward
CHECK: return ([[OUT]],)
)IR"));
}

// native_batch_norm_backward in training (the batch's statistics from the
// forward op) and evaluation (running statistics), with and without a
// weight, every output_mask; 2-d and 4-d inputs.
TEST(DecomposeDifferentialTest, BatchNormBackward) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, g: "$[4, 3, 2, 5]", x: "$[4, 3, 2, 5]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]", g2: "$[6, 3]", x2: "$[6, 3]"):
    bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-05)
    mean = bn[1]
    invstd = bn[2]
    back = torch.ops.aten.native_batch_norm_backward.default(g, x, w, rm, rv, mean, invstd, True, 1e-05, [True, True, True])
    dx = back[0]
    dw = back[1]
    db = back[2]
    av = torch.ops.aten.abs.default(rv)
    ev = torch.ops.aten.native_batch_norm_backward.default(g, x, None, rm, av, None, None, False, 1e-05, [True, False, False])
    ex = ev[0]
    bn2 = torch.ops.aten._native_batch_norm_legit_functional.default(x2, None, None, rm, rv, True, 0.1, 1e-05)
    m2 = bn2[1]
    i2 = bn2[2]
    back2 = torch.ops.aten.native_batch_norm_backward.default(g2, x2, None, None, None, m2, i2, True, 1e-05, [True, False, True])
    dx2 = back2[0]
    db2 = back2[2]
    return (dx, dw, db, ex, dx2, db2)
)IR",
            dtype),
        "native_batch_norm_backward");
  }
}

// The CPU flash attention's backward after its forward (their logsumexp):
// causal with a query shorter than the keys, an additive mask, a scale, a
// mask whose last row is all -inf (a fully masked row: output, logsumexp
// and gradients 0 there, as PyTorch's kernel). In
// f64 and the 16-bit floats: in f32 the cancellation in dO v^T -
// rowsum(dO * out) leaves absolute errors of a few 1e-6 against the double
// reference, past this check's bound; the f32 path is checked against
// PyTorch's own values in the torch corpus (train_transformer_sdpa).
TEST(DecomposeDifferentialTest, FlashAttentionBackward) {
  for (const char* dtype : {"f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, q: "$[2, 2, 3, 4]", k: "$[2, 2, 5, 4]", v: "$[2, 2, 5, 4]", g: "$[2, 2, 3, 4]", m: "$[3, 5]"):
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)
    o = f[0]
    l = f[1]
    b = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, o, l, 0.0, True)
    dq = b[0]
    dk = b[1]
    dv = b[2]
    f2 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, False, attn_mask = m, scale = 0.3)
    o2 = f2[0]
    l2 = f2[1]
    b2 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, o2, l2, 0.0, False, attn_mask = m, scale = 0.3)
    dq2 = b2[0]
    dk2 = b2[1]
    dv2 = b2[2]
    s = torch.ops.aten.slice.Tensor(m, 0, 0, 2)
    t = torch.ops.aten.slice.Tensor(m, 0, 2, 3)
    n = torch.ops.aten.full_like.default(t, -inf)
    h = torch.ops.aten.cat.default([s, n])
    f3 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, False, attn_mask = h)
    o3 = f3[0]
    l3 = f3[1]
    b3 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, o3, l3, 0.0, False, attn_mask = h)
    dq3 = b3[0]
    dk3 = b3[1]
    dv3 = b3[2]
    return (dq, dk, dv, dq2, dk2, dv2, o3, l3, dq3, dk3, dv3)
)IR",
            dtype),
        "flash_attention_for_cpu_backward");
  }
}

// The padding ops' backwards: 1-, 2- and 3-d, reflection (a padding as
// wide as the input allows) and replication (wider than the input).
TEST(DecomposeDifferentialTest, PadBackwards) {
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    ExpectSameResults(
        WithDType(
            R"IR(def forward(self, x1: "$[2, 5]", g1: "$[2, 10]", x2: "$[1, 2, 4, 5]", g2: "$[1, 2, 7, 8]", x3: "$[2, 3, 2, 4]", g3: "$[2, 5, 4, 6]"):
    a = torch.ops.aten.reflection_pad1d_backward.default(g1, x1, [4, 1])
    b = torch.ops.aten.replication_pad1d_backward.default(g1, x1, [0, 5])
    c = torch.ops.aten.reflection_pad2d_backward.default(g2, x2, [1, 2, 1, 2])
    d = torch.ops.aten.replication_pad2d_backward.default(g2, x2, [3, 0, 2, 1])
    e = torch.ops.aten.reflection_pad3d_backward.default(g3, x3, [1, 1, 1, 1, 1, 1])
    f = torch.ops.aten.replication_pad3d_backward.default(g3, x3, [0, 2, 2, 0, 1, 1])
    return (a, b, c, d, e, f)
)IR",
            dtype),
        "pad");
  }
}

}  // namespace
}  // namespace lathe::passes
