#include "passes/decompose_grid_sampler.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/rewriter.h"
#include "runtime/dtype.h"
#include "status_macros.h"

namespace lathe::passes::decomp {
namespace {

// One grid_sampler_2d call's shared pieces: the input and grid in the
// computation dtype, the input's sizes, and the builders both directions
// use. Made by Make(), which says whether the call can be decomposed.
struct Sampler {
  Rewriter& r;
  Node* x = nullptr;  // the input, [N, C, H, W]
  Node* g = nullptr;  // the grid, [N, Ho, Wo, 2]
  Arg n, channels, ih, iw;
  int64_t mode = 0, padding = 0;
  bool align = false;
  Device device;
  DType compute = DType::kFloat32;
  Node* n_idx = nullptr;  // [N, 1, 1, 1]
  Node* c_idx = nullptr;  // [C, 1, 1]

  // The call's sampler; nullopt when it cannot be decomposed (bicubic,
  // reflection over symbolic sizes, a dtype or rank it does not take).
  static absl::StatusOr<std::optional<Sampler>> Make(Rewriter& r, Node* input,
                                                     Node* grid);

  // The source coordinate of grid component `component` along an axis of
  // `size`, as eager's CPU kernel computes it: unnormalized ((c + 1) *
  // size / 2 - 0.5, or (c + 1) * (size - 1) / 2 with align_corners),
  // clamped (border) or reflected and clamped (reflection). With `grad`,
  // also its derivative with respect to the grid coordinate (PyTorch's
  // grid_sampler_compute_source_index_set_grad): 0 at and past a clamped
  // border, its sign flipped by each reflection.
  absl::StatusOr<Node*> Source(int64_t component, const Arg& size,
                               Node** grad) {
    ASSIGN_OR_RETURN(Node * c,
                     r.Call("aten.select.int", {A(g), I(3), I(component)}));
    ASSIGN_OR_RETURN(c, r.Binary("aten.add.Tensor", c, I(1)));
    ASSIGN_OR_RETURN(Arg extent, SizePlus(r, size, align ? -1 : 0));
    ASSIGN_OR_RETURN(c, r.Binary("aten.mul.Tensor", c, extent));
    ASSIGN_OR_RETURN(c, r.Binary("aten.mul.Tensor", c, F(0.5)));
    if (!align) {
      ASSIGN_OR_RETURN(c, r.Binary("aten.sub.Tensor", c, F(0.5)));
    }
    Node* d = nullptr;  // the derivative, once padding changes it
    if (grad != nullptr) {
      ASSIGN_OR_RETURN(d, r.Unary("aten.ones_like.default", c));
      ASSIGN_OR_RETURN(d, r.Binary("aten.mul.Tensor", d, extent));
      ASSIGN_OR_RETURN(d, r.Binary("aten.mul.Tensor", d, F(0.5)));
      *grad = d;
    }
    if (padding == 0) return c;
    ASSIGN_OR_RETURN(Arg last, SizePlus(r, size, -1));
    if (padding == 2) {
      // Reflect about [low, high] (doubled: -1 and 2 * size - 1, or 0 and
      // 2 * (size - 1) with align_corners).
      int64_t twice_low = align ? 0 : -1;
      int64_t twice_high = align ? 2 * (size.i - 1) : 2 * size.i - 1;
      if (twice_low == twice_high) {
        ASSIGN_OR_RETURN(c, r.Unary("aten.zeros_like.default", c));
        if (grad != nullptr) {
          ASSIGN_OR_RETURN(*grad, r.Unary("aten.zeros_like.default", c));
        }
        return c;
      }
      double low = twice_low / 2.0;
      double span = (twice_high - twice_low) / 2.0;
      ASSIGN_OR_RETURN(Node * off, r.Binary("aten.sub.Tensor", c, F(low)));
      ASSIGN_OR_RETURN(Node * dist, r.Unary("aten.abs.default", off));
      ASSIGN_OR_RETURN(Node * extra,
                       r.Binary("aten.fmod.Scalar", dist, F(span)));
      ASSIGN_OR_RETURN(Node * flips,
                       r.Binary("aten.div.Tensor", dist, F(span)));
      ASSIGN_OR_RETURN(flips, r.Unary("aten.floor.default", flips));
      ASSIGN_OR_RETURN(Node * parity,
                       r.Binary("aten.fmod.Scalar", flips, F(2)));
      ASSIGN_OR_RETURN(Node * even, r.Binary("aten.eq.Scalar", parity, F(0)));
      ASSIGN_OR_RETURN(Node * up, r.Binary("aten.add.Tensor", extra, F(low)));
      ASSIGN_OR_RETURN(Node * down,
                       r.Call("aten.rsub.Scalar", {A(extra), F(span + low)}));
      ASSIGN_OR_RETURN(c, r.Call("aten.where.self", {A(even), A(up), A(down)}));
      if (grad != nullptr) {
        // +1 where an even count of flips and the offset's sign agree.
        ASSIGN_OR_RETURN(Node * ahead, r.Binary("aten.ge.Scalar", off, F(0)));
        ASSIGN_OR_RETURN(Node * same,
                         r.Binary("aten.eq.Tensor", ahead, A(even)));
        ASSIGN_OR_RETURN(Node * sign, r.Call("aten.where.Scalar",
                                             {A(same), F(1.0), F(-1.0)}));
        ASSIGN_OR_RETURN(d, r.Binary("aten.mul.Tensor", d, A(sign)));
      }
    }
    if (grad != nullptr) {  // the clamp: 0 at and past either border
      ASSIGN_OR_RETURN(Node * above, r.Binary("aten.gt.Scalar", c, F(0.0)));
      ASSIGN_OR_RETURN(Node * below, r.Binary("aten.lt.Scalar", c, last));
      ASSIGN_OR_RETURN(Node * in,
                       r.Binary("aten.logical_and.default", above, A(below)));
      ASSIGN_OR_RETURN(*grad,
                       r.Call("aten.where.ScalarOther", {A(in), A(d), F(0.0)}));
    }
    ASSIGN_OR_RETURN(c, r.Binary("aten.clamp_min.default", c, F(0.0)));
    return r.Binary("aten.clamp_max.default", c, last);
  }

  // Whether integer-valued (cx, cy) is inside the input, [N, Ho, Wo].
  absl::StatusOr<Node*> Inside(Node* cx, Node* cy) {
    ASSIGN_OR_RETURN(Node * x_ge, r.Binary("aten.ge.Scalar", cx, I(0)));
    ASSIGN_OR_RETURN(Node * x_lt, r.Binary("aten.lt.Scalar", cx, iw));
    ASSIGN_OR_RETURN(Node * y_ge, r.Binary("aten.ge.Scalar", cy, I(0)));
    ASSIGN_OR_RETURN(Node * y_lt, r.Binary("aten.lt.Scalar", cy, ih));
    ASSIGN_OR_RETURN(Node * in,
                     r.Binary("aten.logical_and.default", y_ge, A(y_lt)));
    ASSIGN_OR_RETURN(in, r.Binary("aten.logical_and.default", x_lt, A(in)));
    return r.Binary("aten.logical_and.default", x_ge, A(in));
  }

  // `coord` as int64 where `in`, else 0 (an index that is always valid).
  absl::StatusOr<Node*> Index(Node* coord, Node* in) {
    ASSIGN_OR_RETURN(Node * i, r.To(coord, DType::kInt64));
    return r.Call("aten.where.ScalarOther", {A(in), A(i), I(0)});
  }

  // input[n, c, y, x] where (x, y) is inside the input, else 0:
  // [N, C, Ho, Wo].
  absl::StatusOr<Node*> Read(Node* cx, Node* cy) {
    ASSIGN_OR_RETURN(Node * in, Inside(cx, cy));
    ASSIGN_OR_RETURN(in, r.Binary("aten.unsqueeze.default", in, I(1)));
    std::vector<Node*> idx;
    for (Node* coord : {cy, cx}) {
      ASSIGN_OR_RETURN(Node * i,
                       r.Binary("aten.unsqueeze.default", coord, I(1)));
      ASSIGN_OR_RETURN(i, Index(i, in));
      idx.push_back(i);
    }
    ASSIGN_OR_RETURN(
        Node * v,
        r.Call("aten.index.Tensor",
               {A(x), Arg::List({A(n_idx), A(c_idx), A(idx[0]), A(idx[1])})}));
    return r.Call("aten.where.ScalarOther", {A(in), A(v), F(0.0)});
  }

  // `acc` ([N * C, H * W]) plus `v` ([N, C, Ho, Wo]) at (cx, cy) of each
  // output point, where inside the input.
  absl::StatusOr<Node*> Scatter(Node* acc, Node* v, Node* cx, Node* cy) {
    ASSIGN_OR_RETURN(Node * in, Inside(cx, cy));
    ASSIGN_OR_RETURN(Node * xi, Index(cx, in));
    ASSIGN_OR_RETURN(Node * yi, Index(cy, in));
    ASSIGN_OR_RETURN(Node * flat, r.Binary("aten.mul.Tensor", yi, iw));
    ASSIGN_OR_RETURN(flat, r.Binary("aten.add.Tensor", flat, A(xi)));
    ASSIGN_OR_RETURN(in, r.Binary("aten.unsqueeze.default", in, I(1)));
    ASSIGN_OR_RETURN(v,
                     r.Call("aten.where.ScalarOther", {A(in), A(v), F(0.0)}));
    ASSIGN_OR_RETURN(Arg planes, SizeOp(r, "operator.mul", n, channels));
    ASSIGN_OR_RETURN(Arg ho, r.Size(g, 1));
    ASSIGN_OR_RETURN(Arg wo, r.Size(g, 2));
    ASSIGN_OR_RETURN(Arg points, SizeOp(r, "operator.mul", ho, wo));
    ASSIGN_OR_RETURN(flat, r.Binary("aten.unsqueeze.default", flat, I(1)));
    ASSIGN_OR_RETURN(flat, r.Call("aten.expand.default",
                                  {A(flat), Arg::List({n, channels, ho, wo})}));
    ASSIGN_OR_RETURN(flat, r.Contiguous(flat));
    ASSIGN_OR_RETURN(flat, r.Call("aten.view.default",
                                  {A(flat), Arg::List({planes, points})}));
    ASSIGN_OR_RETURN(v, r.Contiguous(v));
    ASSIGN_OR_RETURN(
        v, r.Call("aten.view.default", {A(v), Arg::List({planes, points})}));
    return r.Call("aten.scatter_add.default", {A(acc), I(1), A(flat), A(v)});
  }
};

absl::StatusOr<std::optional<Sampler>> Sampler::Make(Rewriter& r, Node* input,
                                                     Node* grid) {
  std::optional<int64_t> mode = r.Int("interpolation_mode");
  std::optional<int64_t> padding = r.Int("padding_mode");
  std::optional<bool> align = r.Bool("align_corners");
  if (!IsTensor(input) || !IsTensor(grid) || !mode.has_value() ||
      !padding.has_value() || !align.has_value() || TM(input).dim() != 4 ||
      TM(grid).dim() != 4 || !TM(grid).sizes[3].is_constant(2) ||
      (*mode != 0 && *mode != 1) || *padding < 0 || *padding > 2 ||
      !IsFloatingPoint(TM(input).dtype)) {
    return std::nullopt;
  }
  Sampler s{r};
  s.mode = *mode;
  s.padding = *padding;
  s.align = *align;
  s.device = TM(input).device;
  s.compute = OpMath(TM(input).dtype);
  ASSIGN_OR_RETURN(s.ih, r.Size(input, 2));
  ASSIGN_OR_RETURN(s.iw, r.Size(input, 3));
  if (s.padding == 2 &&
      (s.ih.kind != Arg::Kind::kInt || s.iw.kind != Arg::Kind::kInt)) {
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(s.n, r.Size(input, 0));
  ASSIGN_OR_RETURN(s.channels, r.Size(input, 1));
  ASSIGN_OR_RETURN(s.x, r.To(input, s.compute));
  ASSIGN_OR_RETURN(s.g, r.To(grid, s.compute));
  ASSIGN_OR_RETURN(s.n_idx, Iota(r, s.n, s.device));
  ASSIGN_OR_RETURN(s.n_idx, Unsqueezed(r, s.n_idx, {1, 2, 3}));
  ASSIGN_OR_RETURN(s.c_idx, Iota(r, s.channels, s.device));
  ASSIGN_OR_RETURN(s.c_idx, Unsqueezed(r, s.c_idx, {1, 2}));
  return s;
}

// A bilinear corner: its coordinates, its weight along each axis, and its
// weight's derivatives along x and y (each [N, Ho, Wo]).
struct Corner {
  Node *cx, *cy, *weight, *dx, *dy;
};

// The four corners around (ix, iy).
absl::StatusOr<std::vector<Corner>> Corners(Rewriter& r, Node* ix, Node* iy) {
  ASSIGN_OR_RETURN(Node * x0, r.Unary("aten.floor.default", ix));
  ASSIGN_OR_RETURN(Node * y0, r.Unary("aten.floor.default", iy));
  ASSIGN_OR_RETURN(Node * x1, r.Binary("aten.add.Tensor", x0, I(1)));
  ASSIGN_OR_RETURN(Node * y1, r.Binary("aten.add.Tensor", y0, I(1)));
  // The weights toward each side: x1 - ix and ix - x0 (likewise y).
  ASSIGN_OR_RETURN(Node * wx0, r.Binary("aten.sub.Tensor", x1, A(ix)));
  ASSIGN_OR_RETURN(Node * wx1, r.Binary("aten.sub.Tensor", ix, A(x0)));
  ASSIGN_OR_RETURN(Node * wy0, r.Binary("aten.sub.Tensor", y1, A(iy)));
  ASSIGN_OR_RETURN(Node * wy1, r.Binary("aten.sub.Tensor", iy, A(y0)));
  ASSIGN_OR_RETURN(Node * nwy0, r.Unary("aten.neg.default", wy0));
  ASSIGN_OR_RETURN(Node * nwx0, r.Unary("aten.neg.default", wx0));
  ASSIGN_OR_RETURN(Node * nwy1, r.Unary("aten.neg.default", wy1));
  ASSIGN_OR_RETURN(Node * nwx1, r.Unary("aten.neg.default", wx1));
  // d(wx0 wy0)/dx = -wy0, d(wx0 wy0)/dy = -wx0, and so on.
  std::vector<Corner> out = {{x0, y0, nullptr, nwy0, nwx0},
                             {x1, y0, nullptr, wy0, nwx1},
                             {x0, y1, nullptr, nwy1, wx0},
                             {x1, y1, nullptr, wy1, wx1}};
  Node* wx[2] = {wx0, wx1};
  Node* wy[2] = {wy0, wy1};
  for (int k = 0; k < 4; ++k) {
    ASSIGN_OR_RETURN(out[k].weight,
                     r.Binary("aten.mul.Tensor", wx[k % 2], A(wy[k / 2])));
  }
  return out;
}

// grid_sampler_2d (_grid_sampler_2d in decompositions.py), bilinear and
// nearest: each corner read with aten.index.Tensor at [n, c, y, x], 0 where
// it falls outside the input, and weighted. Reflection needs static sizes;
// bicubic is left alone.
absl::StatusOr<Outputs> GridSampler2d(Rewriter& r) {
  if (!TM(r.node()).IsContiguous()) return Outputs{};
  ASSIGN_OR_RETURN(std::optional<Sampler> s,
                   Sampler::Make(r, r.Tensor("input"), r.Tensor("grid")));
  if (!s.has_value()) {
    r.Rollback();
    return Outputs{};
  }
  ASSIGN_OR_RETURN(Node * ix, s->Source(0, s->iw, nullptr));
  ASSIGN_OR_RETURN(Node * iy, s->Source(1, s->ih, nullptr));
  Node* out = nullptr;
  if (s->mode == 1) {  // nearest: round half to even, as nearbyint
    ASSIGN_OR_RETURN(Node * rx, r.Unary("aten.round.default", ix));
    ASSIGN_OR_RETURN(Node * ry, r.Unary("aten.round.default", iy));
    ASSIGN_OR_RETURN(out, s->Read(rx, ry));
  } else {
    ASSIGN_OR_RETURN(std::vector<Corner> corners, Corners(r, ix, iy));
    for (const Corner& k : corners) {
      ASSIGN_OR_RETURN(Node * w,
                       r.Binary("aten.unsqueeze.default", k.weight, I(1)));
      ASSIGN_OR_RETURN(Node * v, s->Read(k.cx, k.cy));
      ASSIGN_OR_RETURN(v, r.Binary("aten.mul.Tensor", v, A(w)));
      if (out == nullptr) {
        out = v;
      } else {
        ASSIGN_OR_RETURN(out, r.Binary("aten.add.Tensor", out, A(v)));
      }
    }
  }
  ASSIGN_OR_RETURN(out, r.To(out, TM(r.node()).dtype));
  return Outputs{out};
}

// grid_sampler_2d_backward, bilinear and nearest (as PyTorch's CPU kernel):
// each corner's share of the output gradient scatter_add-ed into zeros
// [N * C, H * W] at its flat position where it is inside the input; the
// grid's gradient sums, over channels and corners, the corner's value times
// its weight's derivative times the output gradient, times the source
// coordinate's derivative (nearest: none). In the computation dtype.
absl::StatusOr<Outputs> GridSampler2dBackward(Rewriter& r) {
  Node* grad = r.Tensor("grad_output");
  Node* input = r.Tensor("input");
  Node* grid = r.Tensor("grid");
  Arg mask = r.Get("output_mask");
  if (!IsTensor(grad) || TM(grad).dim() != 4 || mask.kind != Arg::Kind::kList ||
      mask.list.size() != 2 || mask.list[0].kind != Arg::Kind::kBool ||
      mask.list[1].kind != Arg::Kind::kBool) {
    return Outputs{};
  }
  const bool want_input = mask.list[0].b, want_grid = mask.list[1].b;
  ASSIGN_OR_RETURN(std::optional<Sampler> s, Sampler::Make(r, input, grid));
  if (!s.has_value()) {
    r.Rollback();
    return Outputs{};
  }
  Node* mx = nullptr;
  Node* my = nullptr;
  ASSIGN_OR_RETURN(Node * ix, s->Source(0, s->iw, &mx));
  ASSIGN_OR_RETURN(Node * iy, s->Source(1, s->ih, &my));
  ASSIGN_OR_RETURN(Node * go, r.To(grad, s->compute));
  Outputs outs(2, nullptr);
  Node* acc = nullptr;  // [N * C, H * W]
  if (want_input) {
    ASSIGN_OR_RETURN(Arg planes, SizeOp(r, "operator.mul", s->n, s->channels));
    ASSIGN_OR_RETURN(Arg plane, SizeOp(r, "operator.mul", s->ih, s->iw));
    ASSIGN_OR_RETURN(acc,
                     Full(r, {planes, plane}, I(0), s->compute, s->device));
  }
  if (s->mode == 1) {
    if (want_input) {
      ASSIGN_OR_RETURN(Node * rx, r.Unary("aten.round.default", ix));
      ASSIGN_OR_RETURN(Node * ry, r.Unary("aten.round.default", iy));
      ASSIGN_OR_RETURN(acc, s->Scatter(acc, go, rx, ry));
    }
    if (want_grid) {  // contiguous, whatever the grid's layout
      ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(grid));
      ASSIGN_OR_RETURN(outs[1], Full(r, std::move(sizes), I(0), TM(grid).dtype,
                                     TM(grid).device));
    }
  } else {
    ASSIGN_OR_RETURN(std::vector<Corner> corners, Corners(r, ix, iy));
    Node* gix = nullptr;  // [N, C, Ho, Wo], summed over corners
    Node* giy = nullptr;
    for (const Corner& k : corners) {
      if (want_input) {
        ASSIGN_OR_RETURN(Node * w,
                         r.Binary("aten.unsqueeze.default", k.weight, I(1)));
        ASSIGN_OR_RETURN(w, r.Binary("aten.mul.Tensor", go, A(w)));
        ASSIGN_OR_RETURN(acc, s->Scatter(acc, w, k.cx, k.cy));
      }
      if (!want_grid) continue;
      ASSIGN_OR_RETURN(Node * v, s->Read(k.cx, k.cy));
      ASSIGN_OR_RETURN(v, r.Binary("aten.mul.Tensor", v, A(go)));
      for (auto [d, sum] : {std::pair<Node*, Node**>{k.dx, &gix},
                            std::pair<Node*, Node**>{k.dy, &giy}}) {
        ASSIGN_OR_RETURN(Node * dd,
                         r.Binary("aten.unsqueeze.default", d, I(1)));
        ASSIGN_OR_RETURN(dd, r.Binary("aten.mul.Tensor", v, A(dd)));
        if (*sum == nullptr) {
          *sum = dd;
        } else {
          ASSIGN_OR_RETURN(*sum, r.Binary("aten.add.Tensor", *sum, A(dd)));
        }
      }
    }
    if (want_grid) {
      std::vector<Arg> parts;
      for (auto [sum, m] : {std::pair<Node*, Node*>{gix, mx},
                            std::pair<Node*, Node*>{giy, my}}) {
        ASSIGN_OR_RETURN(Node * t, Sum(r, sum, {1}, false));
        ASSIGN_OR_RETURN(t, r.Binary("aten.mul.Tensor", t, A(m)));
        ASSIGN_OR_RETURN(t, r.Binary("aten.unsqueeze.default", t, I(3)));
        parts.push_back(A(t));
      }
      ASSIGN_OR_RETURN(outs[1], r.Call("aten.cat.default",
                                       {Arg::List(std::move(parts)), I(3)}));
      ASSIGN_OR_RETURN(outs[1], r.To(outs[1], TM(grid).dtype));
    }
  }
  if (want_input) {
    ASSIGN_OR_RETURN(std::vector<Arg> sizes, r.Sizes(input));
    ASSIGN_OR_RETURN(outs[0], r.Call("aten.view.default",
                                     {A(acc), Arg::List(std::move(sizes))}));
    ASSIGN_OR_RETURN(outs[0], r.To(outs[0], TM(input).dtype));
  }
  return outs;
}

constexpr Decomposition kGridSamplerDecompositions[] = {
    {"aten.grid_sampler_2d.default", GridSampler2d},
    {"aten.grid_sampler_2d_backward.default", GridSampler2dBackward},
};

}  // namespace

absl::Span<const Decomposition> GridSamplerDecompositions() {
  return kGridSamplerDecompositions;
}

}  // namespace lathe::passes::decomp
