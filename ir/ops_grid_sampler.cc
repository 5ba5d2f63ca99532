// grid_sampler_2d and its backward, reference kernels: interpolation 0
// bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection;
// grid coordinates in the input's scalar type (float for float32), as
// PyTorch's CPU kernels compute them, everything else in double, rounded
// once to the result's dtype. Results are contiguous, as PyTorch's.
//
//   grid_sampler_2d(input [N, C, H, W], grid [N, Ho, Wo, 2], mode, padding,
//                   align_corners) -> [N, C, Ho, Wo]
//   grid_sampler_2d_backward(grad_output, input, grid, ..., output_mask)
//       -> (grad_input or None, grad_grid or None)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// Grid coordinates are computed in the input's scalar type T (float for
// float32, double for float64), as PyTorch does: large coordinates round
// like PyTorch's.
template <typename T>
T Unnormalize(T coord, int64_t size, bool align) {
  return align ? (coord + 1) / 2 * (size - 1) : ((coord + 1) * size - 1) / 2;
}

// NaN clips to 0, as PyTorch's (vectorized) CPU kernel does.
template <typename T>
T ClipCoordinate(T x, int64_t size) {
  if (std::isnan(x)) return 0;
  return std::min(static_cast<T>(size - 1), std::max(x, static_cast<T>(0)));
}

// Whether floor(v / span) (v >= 0 and finite: how often a reflection
// flips) is odd; past int64, where converting it is undefined, from v's
// remainder by two spans.
template <typename T>
bool OddFlips(T v, T span) {
  T flips = std::floor(v / span);
  return flips < static_cast<T>(0x1p62) ? static_cast<int64_t>(flips) % 2 != 0
                                        : std::fmod(v, 2 * span) >= span;
}

// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
template <typename T>
T ReflectCoordinate(T x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high || !std::isfinite(x)) return 0;
  T lo = static_cast<T>(twice_low) / 2,
    span = static_cast<T>(twice_high - twice_low) / 2;
  x = std::fabs(x - lo);
  T extra = std::fmod(x, span);
  return OddFlips(x, span) ? span - extra + lo : extra + lo;
}

// padding_mode: 0 zeros, 1 border, 2 reflection. As PyTorch, a coordinate
// that is not finite or not an int32 becomes -100 (out of bounds).
template <typename T>
T ComputeCoordinate(T x, int64_t size, int64_t padding, bool align) {
  if (padding == 1) {
    x = ClipCoordinate(x, size);
  } else if (padding == 2) {
    x = align ? ReflectCoordinate(x, 0, 2 * (size - 1))
              : ReflectCoordinate(x, -1, 2 * size - 1);
    x = ClipCoordinate(x, size);
  }
  if (!std::isfinite(x) ||
      x > static_cast<T>(std::numeric_limits<int32_t>::max() - 1) ||
      x < static_cast<T>(std::numeric_limits<int32_t>::min())) {
    return -100;
  }
  return x;
}

double CubicConvolution1(double x, double a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
double CubicConvolution2(double x, double a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}
double CubicInterp(double x0, double x1, double x2, double x3, double t) {
  const double a = -0.75;
  return x0 * CubicConvolution2(t + 1, a) + x1 * CubicConvolution1(t, a) +
         x2 * CubicConvolution1(1 - t, a) + x3 * CubicConvolution2(2 - t, a);
}

// One output point of grid_sampler_2d from an [h, w] input plane at grid
// point (px, py): interpolation `mode` 0 bilinear, 1 nearest, 2 bicubic.
template <typename T>
double SamplePoint(const double* plane, int64_t h, int64_t w, T px, T py,
                   int64_t mode, int64_t padding, bool align) {
  auto value = [&](int64_t iy, int64_t ix) {
    if (iy < 0 || iy >= h || ix < 0 || ix >= w) return 0.0;
    return plane[iy * w + ix];
  };
  T gx = Unnormalize(px, w, align), gy = Unnormalize(py, h, align);
  bool finite = std::isfinite(gx) && std::isfinite(gy);
  if (!finite && (mode == 2 || (mode == 0 && padding == 0))) {
    return std::numeric_limits<double>::quiet_NaN();  // NaN weights
  }
  if (mode == 2) {  // bicubic: coordinates padded per tap
    T fx = std::floor(gx), fy = std::floor(gy);
    double tx = gx - fx, ty = gy - fy;
    auto bounded = [&](T yy, T xx) {
      T cx = ComputeCoordinate(xx, w, padding, align);
      T cy = ComputeCoordinate(yy, h, padding, align);
      return value(static_cast<int64_t>(cy), static_cast<int64_t>(cx));
    };
    double rows[4];
    for (int i = 0; i < 4; ++i) {
      T yy = fy - 1 + i;
      rows[i] = CubicInterp(bounded(yy, fx - 1), bounded(yy, fx),
                            bounded(yy, fx + 1), bounded(yy, fx + 2), tx);
    }
    return CubicInterp(rows[0], rows[1], rows[2], rows[3], ty);
  }
  T ix = ComputeCoordinate(gx, w, padding, align);
  T iy = ComputeCoordinate(gy, h, padding, align);
  if (mode == 1) {
    return value(static_cast<int64_t>(std::nearbyint(iy)),
                 static_cast<int64_t>(std::nearbyint(ix)));
  }
  T x0 = std::floor(ix), y0 = std::floor(iy);
  double dx = ix - x0, dy = iy - y0;
  int64_t a = static_cast<int64_t>(x0), b = static_cast<int64_t>(y0);
  return value(b, a) * (1 - dx) * (1 - dy) + value(b, a + 1) * dx * (1 - dy) +
         value(b + 1, a) * (1 - dx) * dy + value(b + 1, a + 1) * dx * dy;
}

// grid_sampler_2d's argument checks (PyTorch's messages; `kernel` names
// PyTorch's kernel in the dtype error), shared with its backward.
absl::Status CheckGridSampler(const OpCall& c, const Value& input,
                              const Value& grid, int64_t mode, int64_t padding,
                              absl::string_view kernel) {
  if (DTypeOf(input) != DTypeOf(grid)) {
    return c.Error(absl::StrCat("expected scalar type ",
                                ScalarTypeName(DTypeOf(input)), " but found ",
                                ScalarTypeName(DTypeOf(grid))));
  }
  if (RankOf(input) != 4 || RankOf(grid) != 4) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected 4D input and grid with same number of "
        "dimensions, but got input with sizes ",
        ShapeString(SizesOf(input)), " and grid with sizes ",
        ShapeString(SizesOf(grid))));
  }
  std::vector<Expr> isz = SizesOf(input), gsz = SizesOf(grid);
  ASSIGN_OR_RETURN(bool same_batch, Decide(c, symbolic::Eq(isz[0], gsz[0])));
  ASSIGN_OR_RETURN(bool pairs,
                   Decide(c, symbolic::Eq(gsz[3], symbolic::Int(2))));
  if (!same_batch) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected grid and input to have same batch size, "
        "but got input with sizes ",
        ShapeString(SizesOf(input)), " and grid with sizes ",
        ShapeString(SizesOf(grid))));
  }
  if (!pairs) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected grid to have size 2 in last dimension, "
        "but got grid with sizes ",
        ShapeString(SizesOf(grid))));
  }
  if (isz[2].is_constant(0) || isz[3].is_constant(0)) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected input to have non-empty spatial dimensions, "
        "but input has sizes ",
        ShapeString(SizesOf(input)), " with dimension ",
        isz[2].is_constant(0) ? 2 : 3, " being empty"));
  }
  if (mode < 0 || mode > 2) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected interpolation_mode to be 0 (bilinear), 1 "
        "(nearest) or 2 (bicubic), but got ",
        mode, " (unsupported)"));
  }
  if (padding < 0 || padding > 2) {
    return c.Error(absl::StrCat(
        "grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) "
        "or 2 (reflection), but got ",
        padding, " (unsupported)"));
  }
  if (!IsFloatingPoint(DTypeOf(input))) {
    return c.Error(absl::StrCat("\"", kernel, "\" not implemented for '",
                                ScalarTypeName(DTypeOf(input)), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> GridSampler2d(const OpCall& c) {
  const Value& input = c.arg("input");
  const Value& grid = c.arg("grid");
  ASSIGN_OR_RETURN(int64_t mode, c.arg("interpolation_mode").AsInt());
  ASSIGN_OR_RETURN(int64_t padding, c.arg("padding_mode").AsInt());
  ASSIGN_OR_RETURN(bool align, c.arg("align_corners").AsBool());
  RETURN_IF_ERROR(CheckGridSampler(c, input, grid, mode, padding,
                                   "grid_sampler_2d_cpu_kernel_impl"));
  std::vector<Expr> isz = SizesOf(input), gsz = SizesOf(grid);
  bool running = input.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, DTypeOf(input), DeviceOf(input),
                                 {isz[0], isz[1], gsz[1], gsz[2]}));
  if (!running) return out;
  const std::vector<int64_t>& is = input.tensor.sizes();
  const std::vector<int64_t>& gs = grid.tensor.sizes();
  std::vector<double> x = RowMajorValues(input.tensor),
                      g = RowMajorValues(grid.tensor);
  bool as_double = input.tensor.dtype() == DType::kFloat64;
  int64_t n_ = is[0], ch = is[1], h = is[2], w = is[3], ho = gs[1], wo = gs[2];
  std::vector<double> y;
  y.reserve(out.tensor.numel());
  for (int64_t n = 0; n < n_; ++n) {
    for (int64_t cc = 0; cc < ch; ++cc) {
      const double* plane = x.data() + (n * ch + cc) * h * w;
      for (int64_t oy = 0; oy < ho; ++oy) {
        for (int64_t ox = 0; ox < wo; ++ox) {
          const double* p = g.data() + ((n * ho + oy) * wo + ox) * 2;
          y.push_back(as_double ? SamplePoint<double>(plane, h, w, p[0], p[1],
                                                      mode, padding, align)
                                : SamplePoint<float>(plane, h, w,
                                                     static_cast<float>(p[0]),
                                                     static_cast<float>(p[1]),
                                                     mode, padding, align));
        }
      }
    }
  }
  // y is ordered [n][c][oy][ox], the output's row-major order.
  WriteRowMajor(out.tensor, y);
  return out;
}

// The source coordinate of a grid coordinate and its derivative with
// respect to it (PyTorch's grid_sampler_compute_source_index_set_grad):
// the borders count as outside (derivative 0) when clipping, and each
// reflection flips the sign.
template <typename T>
T SourceIndexWithGrad(T coord, int64_t size, int64_t padding, bool align,
                      T* grad) {
  T g = align ? static_cast<T>(size - 1) / 2 : static_cast<T>(size) / 2;
  T x = Unnormalize(coord, size, align);
  auto clip = [&](T v, T* d) {
    const T max = static_cast<T>(size - 1);
    if (v <= 0) {
      *d = 0;
      return static_cast<T>(0);
    }
    if (v >= max) {
      *d = 0;
      return max;
    }
    *d = 1;
    return v;
  };
  if (padding == 1) {
    T d;
    x = clip(x, &d);
    g *= d;
  } else if (padding == 2) {
    const int64_t twice_low = align ? 0 : -1;
    const int64_t twice_high = align ? 2 * (size - 1) : 2 * size - 1;
    T reflect = 0;
    if (twice_low == twice_high) {
      x = 0;
    } else {
      T lo = static_cast<T>(twice_low) / 2,
        span = static_cast<T>(twice_high - twice_low) / 2;
      T v = x - lo, sign = 1;
      if (v < 0) {
        sign = -1;
        v = -v;
      }
      T extra = std::fmod(v, span);
      const bool odd = OddFlips(v, span);
      reflect = odd ? -sign : sign;
      x = odd ? span - extra + lo : extra + lo;
    }
    T d;
    x = clip(x, &d);
    g *= reflect * d;
  }
  *grad = g;
  return x;
}

// The bicubic weights of the 4 taps around t in [0, 1) and their
// derivatives (PyTorch's get_cubic_upsample_coefficients and
// get_cubic_coefficients_grad, A = -0.75).
void CubicWeights(double t, double w[4], double dw[4]) {
  const double a = -0.75;
  w[0] = CubicConvolution2(t + 1, a);
  w[1] = CubicConvolution1(t, a);
  w[2] = CubicConvolution1(1 - t, a);
  w[3] = CubicConvolution2(2 - t, a);
  double x = -1 - t;
  dw[0] = (-3 * a * x - 10 * a) * x - 8 * a;
  x = -t;
  dw[1] = (-3 * (a + 2) * x - 2 * (a + 3)) * x;
  x = 1 - t;
  dw[2] = (3 * (a + 2) * x - 2 * (a + 3)) * x;
  x = 2 - t;
  dw[3] = (3 * a * x - 10 * a) * x + 8 * a;
}

// One grid point's backward over all channels: the gradient added into the
// input planes (when `gx` is given) and the grid point's own gradient.
// `planes` and `gx` are [ch][h][w]; `gy` holds the point's output
// gradient per channel, `stride` apart.
template <typename T>
void SampleBackward(const double* planes, double* gx, int64_t ch, int64_t h,
                    int64_t w, const double* gy, int64_t stride, T px, T py,
                    int64_t mode, int64_t padding, bool align,
                    double grid_grad[2]) {
  auto inside = [&](int64_t iy, int64_t ix) {
    return iy >= 0 && iy < h && ix >= 0 && ix < w;
  };
  grid_grad[0] = grid_grad[1] = 0;
  if (mode == 2) {  // bicubic: coordinates padded per tap
    T mx, my;
    T ix = Unnormalize(px, w, align), iy = Unnormalize(py, h, align);
    mx = align ? static_cast<T>(w - 1) / 2 : static_cast<T>(w) / 2;
    my = align ? static_cast<T>(h - 1) / 2 : static_cast<T>(h) / 2;
    if (!std::isfinite(ix) || !std::isfinite(iy)) return;
    T fx = std::floor(ix), fy = std::floor(iy);
    double wx[4], dwx[4], wy[4], dwy[4];
    CubicWeights(ix - fx, wx, dwx);
    CubicWeights(iy - fy, wy, dwy);
    int64_t tx[4], ty[4];
    for (int k = 0; k < 4; ++k) {
      tx[k] = static_cast<int64_t>(
          ComputeCoordinate<T>(fx - 1 + k, w, padding, align));
      ty[k] = static_cast<int64_t>(
          ComputeCoordinate<T>(fy - 1 + k, h, padding, align));
    }
    double gix = 0, giy = 0;
    for (int64_t c = 0; c < ch; ++c) {
      const double g = gy[c * stride];
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
          if (!inside(ty[j], tx[i])) continue;
          const int64_t at = (c * h + ty[j]) * w + tx[i];
          if (gx != nullptr) gx[at] += g * wx[i] * wy[j];
          gix -= planes[at] * dwx[i] * wy[j] * g;
          giy -= planes[at] * dwy[j] * wx[i] * g;
        }
      }
    }
    grid_grad[0] = mx * gix;
    grid_grad[1] = my * giy;
    return;
  }
  T mx, my;
  T ix = SourceIndexWithGrad(px, w, padding, align, &mx);
  T iy = SourceIndexWithGrad(py, h, padding, align, &my);
  // A point that is not finite gives nothing (PyTorch's kernel gives the
  // grid NaN in some modes there; lathe's decomposition does too).
  if (!std::isfinite(ix) || !std::isfinite(iy)) return;
  // Nor does one past int32 (zeros padding: never inside the input, as the
  // forward's -100).
  if (!(std::fabs(ix) < 0x1p31 && std::fabs(iy) < 0x1p31)) return;
  // nearest: the gradient to one input point, none to the grid.
  if (mode == 1) {
    const int64_t nx = static_cast<int64_t>(std::nearbyint(ix));
    const int64_t ny = static_cast<int64_t>(std::nearbyint(iy));
    if (gx == nullptr || !inside(ny, nx)) return;
    for (int64_t c = 0; c < ch; ++c)
      gx[(c * h + ny) * w + nx] += gy[c * stride];
    return;
  }
  const T x0 = std::floor(ix), y0 = std::floor(iy);
  const int64_t a = static_cast<int64_t>(x0), b = static_cast<int64_t>(y0);
  const double dx = ix - x0, dy = iy - y0;
  // Each corner: its offset, its weight, and its weight's derivatives in
  // x and y.
  const struct {
    int64_t oy, ox;
    double weight, wx, wy;
  } corners[4] = {{0, 0, (1 - dx) * (1 - dy), -(1 - dy), -(1 - dx)},
                  {0, 1, dx * (1 - dy), 1 - dy, -dx},
                  {1, 0, (1 - dx) * dy, -dy, 1 - dx},
                  {1, 1, dx * dy, dy, dx}};
  double gix = 0, giy = 0;
  for (int64_t c = 0; c < ch; ++c) {
    const double g = gy[c * stride];
    for (const auto& k : corners) {
      if (!inside(b + k.oy, a + k.ox)) continue;
      const int64_t at = (c * h + b + k.oy) * w + a + k.ox;
      if (gx != nullptr) gx[at] += k.weight * g;
      gix += planes[at] * k.wx * g;
      giy += planes[at] * k.wy * g;
    }
  }
  grid_grad[0] = mx * gix;
  grid_grad[1] = my * giy;
}

// grid_sampler_2d_backward: (grad_input, grad_grid), each contiguous, each
// None when output_mask leaves it out; nearest gives the grid no gradient.
absl::StatusOr<Value> GridSampler2dBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_output");
  const Value& input = c.arg("input");
  const Value& grid = c.arg("grid");
  ASSIGN_OR_RETURN(int64_t mode, c.arg("interpolation_mode").AsInt());
  ASSIGN_OR_RETURN(int64_t padding, c.arg("padding_mode").AsInt());
  ASSIGN_OR_RETURN(bool align, c.arg("align_corners").AsBool());
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 2));
  RETURN_IF_ERROR(CheckGridSampler(c, input, grid, mode, padding,
                                   "grid_sampler_2d_backward_cpu"));
  std::vector<Expr> isz = SizesOf(input), gsz = SizesOf(grid);
  const std::vector<Expr> want = {isz[0], isz[1], gsz[1], gsz[2]};
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), want));
  if (!same || DTypeOf(grad) != DTypeOf(input)) {
    return c.Error(absl::StrCat("expected grad_output of size ",
                                ShapeString(want), " and dtype ",
                                ScalarTypeName(DTypeOf(input)), ", got size ",
                                ShapeString(SizesOf(grad)), " and dtype ",
                                ScalarTypeName(DTypeOf(grad))));
  }
  bool running = input.tensor.defined();
  Value gin = Value::None(), ggrid = Value::None();
  if (mask[0]) {
    ASSIGN_OR_RETURN(
        gin, ResultOrEmpty(c, running, DTypeOf(input), DeviceOf(input), isz));
  }
  if (mask[1]) {
    ASSIGN_OR_RETURN(
        ggrid, ResultOrEmpty(c, running, DTypeOf(grid), DeviceOf(grid), gsz));
  }
  if (!running) return Value::List({gin, ggrid});
  const std::vector<int64_t>& is = input.tensor.sizes();
  const std::vector<int64_t>& gs = grid.tensor.sizes();
  std::vector<double> x = RowMajorValues(input.tensor),
                      g = RowMajorValues(grid.tensor),
                      gy = RowMajorValues(grad.tensor);
  bool as_double = input.tensor.dtype() == DType::kFloat64;
  int64_t n_ = is[0], ch = is[1], h = is[2], w = is[3], ho = gs[1], wo = gs[2];
  std::vector<double> gx(mask[0] ? x.size() : 0, 0.0), gg(g.size(), 0.0);
  for (int64_t n = 0; n < n_; ++n) {
    const double* planes = x.data() + n * ch * h * w;
    double* gplanes = mask[0] ? gx.data() + n * ch * h * w : nullptr;
    for (int64_t oy = 0; oy < ho; ++oy) {
      for (int64_t ox = 0; ox < wo; ++ox) {
        const int64_t point = (n * ho + oy) * wo + ox;
        const double* p = g.data() + point * 2;
        const double* go = gy.data() + (n * ch * ho + oy) * wo + ox;
        if (as_double) {
          SampleBackward<double>(planes, gplanes, ch, h, w, go, ho * wo, p[0],
                                 p[1], mode, padding, align, &gg[point * 2]);
        } else {
          SampleBackward<float>(
              planes, gplanes, ch, h, w, go, ho * wo, static_cast<float>(p[0]),
              static_cast<float>(p[1]), mode, padding, align, &gg[point * 2]);
        }
      }
    }
  }
  if (mask[0]) WriteRowMajor(gin.tensor, gx);
  if (mask[1]) WriteRowMajor(ggrid.tensor, gg);
  return Value::List({gin, ggrid});
}

}  // namespace

absl::Status RegisterGridSamplerOps(OpRegistry& r) {
  RETURN_IF_ERROR(r.Add(
      "grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int "
      "padding_mode, bool align_corners) -> Tensor",
      GridSampler2d));
  return r.Add(
      "grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, "
      "int interpolation_mode, int padding_mode, bool align_corners, bool[2] "
      "output_mask) -> (Tensor, Tensor)",
      GridSampler2dBackward);
}

}  // namespace lathe::ir
