// The neural-network family's lowering rules: convolution (a routine plus
// a bias epilogue), max/avg/adaptive-avg pooling and nearest upsampling.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "codegen/lower/buffer_layouts.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "codegen/scalar_ops.h"
#include "ir/output_layouts.h"
#include "runtime/convolution.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {
namespace {

// upsample_nearest2d(self, output_size, scales_h, scales_w) and its .vec
// overload (input, output_size, scale_factors): each output element reads
// the input at PyTorch's nearest index per spatial dim (ir/ops_nn.cc's
// NearestIndex: floor(o * s) in float, s = 1 / scale or in / out, at most
// in - 1). The spatial sizes are static, so that index is worked out for
// every o at compile time and expressed as FloorDiv(o * a, b) (a / b = in /
// out, or the scale's inverse as a fraction) when that quotient gives it
// for every o; otherwise (a float rounding or a clamp no quotient makes)
// the op is refused.
absl::StatusOr<NodeValue> LowerUpsampleNearest(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (x.sizes.size() != 4 || m.sizes.size() != 4) {
    return c.Error("expects a 4-d input");
  }
  double scale[2] = {0, 0};
  if (c.Index("scale_factors") >= 0) {
    const Bound& b = c.at(c.Index("scale_factors"));
    if (!b.is_none() && b.arg != nullptr && b.arg->kind == Arg::Kind::kList &&
        b.arg->list.size() == 2) {
      for (int d = 0; d < 2; ++d) {
        const Arg& e = b.arg->list[d];
        if (e.kind == Arg::Kind::kFloat) {
          scale[d] = e.f;
        } else if (e.kind == Arg::Kind::kInt) {
          scale[d] = static_cast<double>(e.i);
        } else {
          return c.Error("a scale factor that is not a known number");
        }
      }
    } else if (!b.is_none()) {
      return c.Error("scale_factors is not a list of two numbers");
    }
  } else {
    int d = 0;
    for (const char* name : {"scales_h", "scales_w"}) {
      ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, name));
      if (v.has_value()) scale[d] = *v;
      ++d;
    }
  }
  int64_t frac[2][2] = {{0, 0}, {0, 0}};  // per dim: o * a // b
  for (int d = 0; d < 2; ++d) {
    Expr in_e = x.sizes[2 + d], out_e = m.sizes[2 + d];
    if (in_e.kind() != symbolic::ExprKind::kInteger ||
        out_e.kind() != symbolic::ExprKind::kInteger) {
      return c.Error("expects static spatial sizes");
    }
    const int64_t in = in_e.int_value(), out = out_e.int_value();
    auto nearest = [&](int64_t o) -> int64_t {  // PyTorch's, in float
      if (out == in) return o;
      if (out == 2 * in) return o >> 1;
      float s = scale[d] > 0 ? static_cast<float>(1.0 / scale[d])
                             : static_cast<float>(in) / static_cast<float>(out);
      return FloorClamped(static_cast<float>(o) * s, 0, in - 1);
    };
    std::vector<std::pair<int64_t, int64_t>> fractions = {{in, out}};
    if (scale[d] > 0) {
      for (int64_t q = 1; q <= 64; ++q) {
        double p = std::round(q / scale[d]);
        if (p < 0x1p62 && std::abs(p / q - 1 / scale[d]) < 1e-9) {
          fractions.push_back({static_cast<int64_t>(p), q});
          break;
        }
      }
    }
    for (const auto& [a, b] : fractions) {
      bool all = true;
      for (int64_t o = 0; o < out && all; ++o) {
        all = (o * a) / b == nearest(o);  // in range: nearest's is
      }
      if (!all) continue;
      frac[d][0] = a;
      frac[d][1] = b;
      break;
    }
    if (frac[d][1] == 0) {
      return c.Error("a nearest index that no integer quotient gives");
    }
  }
  return TensorValue(Remap(
      x, m.sizes,
      [a0 = frac[0][0], b0 = frac[0][1], a1 = frac[1][0], b1 = frac[1][1]](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        ASSIGN_OR_RETURN(
            Expr h, symbolic::FloorDiv(symbolic::Mul(idx[2], symbolic::Int(a0)),
                                       symbolic::Int(b0)));
        ASSIGN_OR_RETURN(
            Expr w, symbolic::FloorDiv(symbolic::Mul(idx[3], symbolic::Int(a1)),
                                       symbolic::Int(b1)));
        return std::vector<Expr>{idx[0], idx[1], h, w};
      }));
}

// A per-spatial-dim int list argument (stride, padding, ...): one value
// serves every dim; `fallback` when the list is empty or the op has none.
absl::StatusOr<std::vector<int64_t>> SpatialArg(const Call& c,
                                                absl::string_view name,
                                                size_t dims,
                                                std::vector<int64_t> fallback) {
  std::vector<int64_t> out;
  if (c.Index(name) >= 0) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v,
                     c.IntList(c.Index(name)));
    out = v.value_or(std::vector<int64_t>{});
  }
  if (out.empty()) out = std::move(fallback);
  if (out.size() == 1) out.resize(dims, out[0]);
  if (out.size() != dims) {
    return c.Error(absl::StrCat(name, " has ", out.size(), " values for ", dims,
                                " spatial dims"));
  }
  return out;
}

// The window geometry of a convolution or pool over `dims` spatial dims.
struct Window {
  std::vector<int64_t> stride, padding, dilation;
  // The input position output position `o` reads at kernel offset `k`.
  Expr Position(size_t d, Expr o, Expr k) const {
    return symbolic::Add({symbolic::Mul(o, symbolic::Int(stride[d])),
                          symbolic::Int(-padding[d]),
                          symbolic::Mul(k, symbolic::Int(dilation[d]))});
  }
};

absl::StatusOr<Window> WindowArgs(const Call& c, size_t dims,
                                  std::vector<int64_t> default_stride) {
  Window w;
  ASSIGN_OR_RETURN(w.stride,
                   SpatialArg(c, "stride", dims, std::move(default_stride)));
  ASSIGN_OR_RETURN(w.padding, SpatialArg(c, "padding", dims, {0}));
  ASSIGN_OR_RETURN(w.dilation, SpatialArg(c, "dilation", dims, {1}));
  for (size_t d = 0; d < dims; ++d) {
    if (w.stride[d] <= 0 || w.dilation[d] <= 0) {
      return c.Error("stride and dilation must be positive");
    }
  }
  return w;
}

// The bool and of `masks` (true for none).
int AllOf(KernelBuilder& kb, const std::vector<int>& masks) {
  if (masks.empty()) return kb.IntConstant(1, DType::kBool);
  int m = masks[0];
  for (size_t i = 1; i < masks.size(); ++i) {
    m = kb.Call("logical_and", {m, masks[i]}, DType::kBool);
  }
  return m;
}

// An f32 convolution without transposition as one call of the runtime's
// sconv (oneDNN; runtime/convolution.h gives the geometry's layout) on the
// realized operands, into a buffer with strides `out_strides`. An input it
// realizes itself is the call's alone: stored channels-last (4-d, 5-d), the
// library's own layout, so the library does not reorder it.
absl::StatusOr<TBox> ConvolutionCall(Lowerer& L, TBox x, TBox w,
                                     const Window& win, int64_t groups,
                                     const TensorMeta& m,
                                     const std::vector<Expr>& out_strides) {
  if (x.buffer < 0 && x.sizes.size() >= 4) {
    TensorMeta layout;
    layout.sizes = x.sizes;
    layout.strides = ir::ChannelsLastStrides(x.sizes);
    ASSIGN_OR_RETURN(x, L.Realize(x, &layout));
  }
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
  size_t nsp = w.sizes.size() - 2;
  auto ints = [](const std::vector<int64_t>& v) {
    std::vector<Expr> e;
    for (int64_t i : v) e.push_back(symbolic::Int(i));
    return e;
  };
  std::vector<Expr> g = {symbolic::Int(static_cast<int64_t>(nsp)),
                         symbolic::Int(groups), x.sizes[0], x.sizes[1],
                         w.sizes[0]};
  auto append = [&g](const std::vector<Expr>& v, size_t from) {
    g.insert(g.end(), v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
  };
  append(x.sizes, 2);
  append(w.sizes, 2);
  append(m.sizes, 2);
  append(ints(win.stride), 0);
  append(ints(win.padding), 0);
  append(ints(win.dilation), 0);
  Expr zero = symbolic::Int(0);
  int out =
      L.NewBuffer(DType::kFloat32, StorageNumel(m.sizes, out_strides, zero));
  for (const auto& [offset, strides] :
       {std::pair{x.offset, x.strides}, std::pair{w.offset, w.strides},
        std::pair{zero, out_strides}}) {
    g.push_back(offset);
    append(strides, 0);
  }
  g.push_back(symbolic::Int(L.IsFrozen(w.buffer) ? kSconvFrozenWeights : 0));
  L.EmitExtern("sconv", {out, x.buffer, w.buffer}, std::move(g));
  return L.FromBuffer(out, DType::kFloat32, m.sizes, out_strides, zero);
}

// The convolution's result plus its bias (argument 2) broadcast along the
// channel dim, when there is one: a pointwise epilogue.
absl::StatusOr<NodeValue> ConvolutionBias(Lowerer& L, const Call& c,
                                          const TBox& out,
                                          const TensorMeta& m) {
  if (c.NodeAt(2) == nullptr) return TensorValue(out);
  ASSIGN_OR_RETURN(TBox bias, L.Tensor(c, 2));
  TBox b = Remap(
      bias, m.sizes,
      [](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        return std::vector<Expr>{idx[1]};
      });
  return TensorValue(
      L.Pointwise("add", {out, b}, ComputeDType(m.dtype), m.dtype, m.sizes));
}

// An f32 transposed convolution of `x` by `w` ([C_in, C_out / groups,
// k...]) into `m`, as the library's convolution (ConvolutionCall, stride 1,
// no padding, the same dilation) over x spread out: stride - 1 zeros
// between its elements, dilation * (k - 1) - padding positions before
// them (fewer, a crop, where that is negative) and as many after as the
// output needs (output_padding included), read by the weight flipped along
// its spatial dims with its channels swapped per group ([C_out, C_in /
// groups, k...]). The same sums as the transposed convolution's (the
// gradient of a strided convolution's input); the zeros cost stride^dims
// times its multiplies, which oneDNN runs where the direct form would be
// a scalar gather per product (a CNN's training step took 4.6 ms, its
// forward 0.4).
absl::StatusOr<TBox> TransposedConvolution(Lowerer& L, const TBox& x,
                                           const TBox& w, const Window& win,
                                           int64_t groups, const TensorMeta& m,
                                           const std::vector<Expr>& strides) {
  const size_t nsp = w.sizes.size() - 2;
  std::vector<Expr> spread = {x.sizes[0], x.sizes[1]};
  std::vector<Expr> before, span;  // per spatial dim
  for (size_t d = 0; d < nsp; ++d) {
    Expr reach = symbolic::Mul(symbolic::Int(win.dilation[d]),
                               symbolic::Sub(w.sizes[2 + d], symbolic::Int(1)));
    before.push_back(symbolic::Sub(reach, symbolic::Int(win.padding[d])));
    // The zero-spread input's extent: (in - 1) * stride + 1.
    span.push_back(symbolic::Add(
        symbolic::Mul(symbolic::Sub(x.sizes[2 + d], symbolic::Int(1)),
                      symbolic::Int(win.stride[d])),
        symbolic::Int(1)));
    spread.push_back(symbolic::Add(m.sizes[2 + d], reach));
  }
  auto at =
      [x, win, before,
       nsp](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
    std::vector<Expr> in = {idx[0], idx[1]};
    for (size_t d = 0; d < nsp; ++d) {
      Expr u = symbolic::Sub(idx[2 + d], before[d]);
      ASSIGN_OR_RETURN(Expr q,
                       symbolic::FloorDiv(u, symbolic::Int(win.stride[d])));
      in.push_back(ClampIndex(q, x.sizes[2 + d]));
    }
    return in;
  };
  auto holds = [win, before, span, nsp](KernelBuilder& kb,
                                        const std::vector<Expr>& idx) {
    std::vector<int> masks;
    for (size_t d = 0; d < nsp; ++d) {
      Expr u = symbolic::Sub(idx[2 + d], before[d]);
      masks.push_back(InRange(kb, u, symbolic::Int(0), span[d]));
      if (win.stride[d] == 1) continue;
      absl::StatusOr<Expr> rem =
          symbolic::PythonMod(u, symbolic::Int(win.stride[d]));
      LATHE_CHECK(rem.ok()) << rem.status();  // a positive constant divisor
      masks.push_back(kb.Call(
          "eq", {kb.Index(*rem), kb.Index(symbolic::Int(0))}, DType::kBool));
    }
    return AllOf(kb, masks);
  };
  TBox xs = Remap(x, spread, at, holds, 0);
  ASSIGN_OR_RETURN(Expr icg,
                   symbolic::FloorDiv(w.sizes[0], symbolic::Int(groups)));
  const Expr ocg = w.sizes[1];
  std::vector<Expr> flipped_sizes = {symbolic::Mul(ocg, symbolic::Int(groups)),
                                     icg};
  for (size_t d = 0; d < nsp; ++d) flipped_sizes.push_back(w.sizes[2 + d]);
  TBox wf = Remap(
      w, flipped_sizes,
      [w, icg, ocg, groups,
       nsp](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        Expr g = symbolic::Int(0), o = idx[0];
        if (groups > 1) {
          ASSIGN_OR_RETURN(g, symbolic::FloorDiv(idx[0], ocg));
          o = symbolic::Sub(idx[0], symbolic::Mul(g, ocg));
        }
        std::vector<Expr> wi = {symbolic::Add(symbolic::Mul(g, icg), idx[1]),
                                o};
        for (size_t d = 0; d < nsp; ++d) {
          wi.push_back(symbolic::Sub(
              symbolic::Sub(w.sizes[2 + d], symbolic::Int(1)), idx[2 + d]));
        }
        return wi;
      });
  Window unit;
  unit.stride.assign(nsp, 1);
  unit.padding.assign(nsp, 0);
  unit.dilation = win.dilation;
  return ConvolutionCall(L, xs, wf, unit, groups, m, strides);
}

// convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups): f32 by the library (a transposed one through
// TransposedConvolution, where TransposedOnLibrary), else per output
// element a sum over the group's input channels and the kernel offsets.
// Padding is a mask over a clamped index; a transposed convolution reads
// input position (o + padding - k*dilation) / stride where that divides.
// The bias is an epilogue.
absl::StatusOr<NodeValue> LowerConvolution(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 1));
  if (w.sizes.size() < 3 || x.sizes.size() != w.sizes.size()) {
    return c.Error("expects a batched input with the weight's rank");
  }
  size_t nsp = w.sizes.size() - 2;
  ASSIGN_OR_RETURN(Window win, WindowArgs(c, nsp, {1}));
  ASSIGN_OR_RETURN(bool transposed, c.Bool("transposed"));
  ASSIGN_OR_RETURN(int64_t groups, c.Int("groups"));
  if (groups <= 0) return c.Error("groups must be positive");
  // The library takes 1 to 3 spatial dims (shape propagation already
  // refuses more, as PyTorch does).
  if (m.dtype == DType::kFloat32 && nsp <= 3 &&
      (!transposed || TransposedOnLibrary(c.node()))) {
    // The call's result is the node's value (its layout chosen with the
    // graph's), or with a bias, the epilogue's input alone.
    bool own = c.NodeAt(2) != nullptr && m.sizes.size() >= 4;
    std::vector<Expr> strides = own ? ir::ChannelsLastStrides(m.sizes)
                                    : L.layouts().Strides(&c.node(), -1, m);
    ASSIGN_OR_RETURN(
        TBox out, transposed
                      ? TransposedConvolution(L, x, w, win, groups, m, strides)
                      : ConvolutionCall(L, x, w, win, groups, m, strides));
    return ConvolutionBias(L, c, out, m);
  }
  Expr g_count = symbolic::Int(groups);
  // Input and output channels per group.
  ASSIGN_OR_RETURN(Expr w0_per_group, symbolic::FloorDiv(w.sizes[0], g_count));
  Expr icg = transposed ? w0_per_group : w.sizes[1];
  Expr ocg = transposed ? w.sizes[1] : w0_per_group;
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  p.sizes.push_back(icg);
  for (size_t d = 0; d < nsp; ++d) p.sizes.push_back(w.sizes[2 + d]);
  p.reads = x.reads;
  p.reads.insert(w.reads.begin(), w.reads.end());
  p.cost = x.cost + w.cost + 8;
  p.load = [x, w, win, transposed, icg, ocg, nsp, acc, groups](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    Expr oc = idx[1], ic = idx[2 + nsp];
    Expr g = symbolic::Int(0);
    if (groups > 1) {
      ASSIGN_OR_RETURN(g, symbolic::FloorDiv(oc, ocg));
    }
    Expr cin = symbolic::Add(symbolic::Mul(g, icg), ic);
    std::vector<Expr> xi = {idx[0], cin};
    std::vector<Expr> wi = {
        transposed ? cin : oc,
        transposed ? symbolic::Sub(oc, symbolic::Mul(g, ocg)) : ic};
    std::vector<int> masks;
    for (size_t d = 0; d < nsp; ++d) {
      Expr o = idx[2 + d], k = idx[3 + nsp + d], in = x.sizes[2 + d];
      wi.push_back(k);
      if (!transposed) {
        Expr pos = win.Position(d, o, k);
        masks.push_back(InRange(kb, pos, symbolic::Int(0), in));
        xi.push_back(ClampIndex(pos, in));
        continue;
      }
      Expr s = symbolic::Int(win.stride[d]);
      Expr t =
          symbolic::Add({o, symbolic::Int(win.padding[d]),
                         symbolic::Mul(k, symbolic::Int(-win.dilation[d]))});
      masks.push_back(InRange(kb, t, symbolic::Int(0), symbolic::Mul(in, s)));
      ASSIGN_OR_RETURN(Expr rem, symbolic::PythonMod(t, s));
      masks.push_back(kb.Call("eq", {kb.Index(rem), kb.Index(symbolic::Int(0))},
                              DType::kBool));
      ASSIGN_OR_RETURN(Expr q, symbolic::FloorDiv(t, s));
      xi.push_back(ClampIndex(q, in));
    }
    ASSIGN_OR_RETURN(int xv, x.load(kb, xi));
    ASSIGN_OR_RETURN(int wv, w.load(kb, wi));
    int prod = kb.Call("mul", {kb.Cast(xv, acc), kb.Cast(wv, acc)}, acc);
    return kb.Call("where", {AllOf(kb, masks), prod, kb.Constant(0, acc)}, acc);
  };
  std::vector<int64_t> dims;
  for (size_t d = 0; d <= nsp; ++d) {
    dims.push_back(static_cast<int64_t>(m.sizes.size() + d));
  }
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(p, dims, ReduceKind::kSum, acc, m, nullptr));
  return ConvolutionBias(L, c, out, m);
}

// A pool's windows over `x`'s trailing spatial dims: sizes out_sizes + the
// kernel sizes, reading x at each window position (in the compute dtype),
// `fill` where the position is outside the input.
struct PoolWindows {
  TBox box;
  std::vector<Expr> in;  // the input's spatial sizes
  size_t lead = 0;       // dims before the spatial ones
  Window win;
  std::vector<int64_t> kernel;
  // The input positions the window element `idx` reads (unclamped).
  std::vector<Expr> Positions(const std::vector<Expr>& idx) const {
    std::vector<Expr> pos;
    for (size_t d = 0; d < in.size(); ++d) {
      pos.push_back(win.Position(d, idx[lead + d], idx[lead + in.size() + d]));
    }
    return pos;
  }
  // Whether every window of an output of spatial size `out` stays inside
  // the input along spatial dim d (no padding, no ceil_mode overhang), so
  // its positions need no range mask there; false where a size is symbolic.
  bool Inside(size_t d, Expr out) const {
    if (win.padding[d] != 0 || out.kind() != symbolic::ExprKind::kInteger ||
        in[d].kind() != symbolic::ExprKind::kInteger) {
      return false;
    }
    return out.int_value() < 1 || (out.int_value() - 1) * win.stride[d] +
                                          (kernel[d] - 1) * win.dilation[d] <
                                      in[d].int_value();
  }
  // The reduced dims (the kernel's).
  std::vector<int64_t> Dims() const {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < in.size(); ++d) {
      dims.push_back(static_cast<int64_t>(lead + in.size() + d));
    }
    return dims;
  }
};

absl::StatusOr<PoolWindows> PoolWindowsOf(Lowerer& L, const Call& c,
                                          const std::vector<Expr>& out_sizes,
                                          double fill) {
  PoolWindows pw;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  size_t nsp = absl::StrContains(c.op().schema.name, "3d") ? 3 : 2;
  ASSIGN_OR_RETURN(pw.kernel, SpatialArg(c, "kernel_size", nsp, {}));
  ASSIGN_OR_RETURN(pw.win, WindowArgs(c, nsp, pw.kernel));
  if (x.sizes.size() < nsp + 1 || out_sizes.size() != x.sizes.size()) {
    return c.Error("unexpected input rank");
  }
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("integer pooling is not supported by the cpu backend");
  }
  pw.lead = x.sizes.size() - nsp;
  pw.in.assign(x.sizes.begin() + pw.lead, x.sizes.end());
  DType compute = ComputeDType(x.dtype);
  TBox& p = pw.box;
  p.dtype = compute;
  p.sizes = out_sizes;
  for (int64_t k : pw.kernel) p.sizes.push_back(symbolic::Int(k));
  p.reads = x.reads;
  p.cost = x.cost + 8;
  PoolWindows geometry = pw;
  // The spatial dims whose windows may leave the input: masked.
  std::vector<bool> masked;
  for (size_t d = 0; d < nsp; ++d) {
    masked.push_back(!pw.Inside(d, out_sizes[pw.lead + d]));
  }
  p.load = [x, geometry, compute, fill, masked](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> xi(idx.begin(), idx.begin() + geometry.lead);
    std::vector<int> masks;
    std::vector<Expr> pos = geometry.Positions(idx);
    for (size_t d = 0; d < pos.size(); ++d) {
      Expr in = geometry.in[d];
      if (!masked[d]) {
        xi.push_back(pos[d]);
        continue;
      }
      masks.push_back(InRange(kb, pos[d], symbolic::Int(0), in));
      xi.push_back(ClampIndex(pos[d], in));
    }
    ASSIGN_OR_RETURN(int v, x.load(kb, xi));
    if (masks.empty()) return kb.Cast(v, compute);
    return kb.Call(
        "where",
        {AllOf(kb, masks), kb.Cast(v, compute), kb.Constant(fill, compute)},
        compute);
  };
  return pw;
}

// Windows of at most this many elements are unrolled into pointwise
// loaders (as Inductor's max pool is): every output element is independent,
// so the kernel's loops may run in any order (channels innermost over a
// channels-last input) and the loads fuse into the producer.
constexpr int64_t kUnrolledWindow = 25;

// The window's element offsets, in row-major order.
std::vector<std::vector<Expr>> WindowOffsets(const std::vector<int64_t>& k) {
  std::vector<std::vector<Expr>> out = {{}};
  for (int64_t size : k) {
    std::vector<std::vector<Expr>> next;
    for (const std::vector<Expr>& o : out) {
      for (int64_t i = 0; i < size; ++i) {
        next.push_back(o);
        next.back().push_back(symbolic::Int(i));
      }
    }
    out = std::move(next);
  }
  return out;
}

// The unrolled max pool's (values, indices) loaders over windows `pw`: in
// window order, an in-range element wins when it is the first in range,
// greater than the maximum so far, or NaN (the interpreter's and PyTorch's
// rule: the last NaN's index, the first maximum's otherwise).
std::pair<TBox, TBox> UnrolledMaxPool(const PoolWindows& pw,
                                      const TensorMeta& mv,
                                      const TensorMeta& mi) {
  std::vector<std::vector<Expr>> offsets = WindowOffsets(pw.kernel);
  DType compute = pw.box.dtype;
  std::vector<Expr> plane = Contiguous(pw.in);
  // Folds the window: (maximum, its flat index) ops.
  auto fold = [pw, offsets, compute, plane](
                  KernelBuilder& kb, const std::vector<Expr>& idx,
                  bool with_index) -> absl::StatusOr<std::pair<int, int>> {
    int mx = kb.Constant(-std::numeric_limits<double>::infinity(), compute);
    int best = kb.IntConstant(0, DType::kInt64);
    int found = kb.IntConstant(0, DType::kBool);
    for (const std::vector<Expr>& o : offsets) {
      std::vector<Expr> full = idx;
      full.insert(full.end(), o.begin(), o.end());
      ASSIGN_OR_RETURN(int v, pw.box.load(kb, full));  // -inf out of range
      int wins = kb.Call("logical_or",
                         {kb.Call("gt", {v, mx}, DType::kBool),
                          kb.Call("isnan", {v}, DType::kBool)},
                         DType::kBool);
      if (with_index) {
        std::vector<Expr> pos = pw.Positions(full);
        std::vector<int> masks;
        for (size_t d = 0; d < pos.size(); ++d) {
          if (pw.Inside(d, pw.box.sizes[pw.lead + d])) continue;
          masks.push_back(InRange(kb, pos[d], symbolic::Int(0), pw.in[d]));
        }
        int in = AllOf(kb, masks);
        int first = kb.Call("logical_not", {found}, DType::kBool);
        wins = kb.Call("logical_and",
                       {in, kb.Call("logical_or", {first, wins}, DType::kBool)},
                       DType::kBool);
        best = kb.Call(
            "where",
            {wins, kb.Index(Linear(pos, plane, symbolic::Int(0))), best},
            DType::kInt64);
        found = kb.Call("logical_or", {found, in}, DType::kBool);
      }
      mx = kb.Call("where", {wins, v, mx}, compute);
    }
    return std::make_pair(mx, best);
  };
  TBox values, indices;
  values.dtype = mv.dtype;
  values.sizes = mv.sizes;
  values.reads = pw.box.reads;
  values.cost = static_cast<int>(offsets.size()) * (pw.box.cost - 6);
  indices = values;
  indices.dtype = mi.dtype;
  DType out = mv.dtype;
  values.load = [fold, out](
                    KernelBuilder& kb,
                    const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(auto r, fold(kb, idx, false));
    return kb.Cast(r.first, out);
  };
  indices.load = [fold](KernelBuilder& kb,
                        const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(auto r, fold(kb, idx, true));
    return r.second;
  };
  return {values, indices};
}

// max_pool2d/3d_with_indices(self, kernel_size, stride, padding, dilation,
// ceil_mode): the window's maximum (NaN propagates) and the flat spatial
// index of the input element it came from. Windows past the input (padding,
// ceil_mode) see -inf there. Small windows are unrolled (UnrolledMaxPool),
// larger ones reductions.
absl::StatusOr<NodeValue> LowerMaxPool(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(values, indices)"));
  const TensorMeta mv = L.layouts().Layout(&c.node(), 0, *metas.first);
  const TensorMeta mi = L.layouts().Layout(&c.node(), 1, *metas.second);
  ASSIGN_OR_RETURN(
      PoolWindows pw,
      PoolWindowsOf(L, c, mv.sizes, -std::numeric_limits<double>::infinity()));
  int64_t window = 1;
  for (int64_t k : pw.kernel) window *= k;
  if (window <= kUnrolledWindow) {
    auto [values, indices] = UnrolledMaxPool(pw, mv, mi);
    return TupleValue({TensorValue(values), TensorValue(indices)});
  }
  ASSIGN_OR_RETURN(TBox values, L.Reduce(pw.box, pw.Dims(), ReduceKind::kMax,
                                         pw.box.dtype, mv, nullptr));
  std::vector<Expr> in_strides = Contiguous(pw.in);
  ASSIGN_OR_RETURN(
      TBox indices,
      L.Reduce(pw.box, pw.Dims(), ReduceKind::kArgMax, DType::kInt64, mi,
               nullptr, [pw, in_strides](const std::vector<Expr>& idx) {
                 return Linear(pw.Positions(idx), in_strides, symbolic::Int(0));
               }));
  return TupleValue({TensorValue(values), TensorValue(indices)});
}

// avg_pool2d/3d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override): the window's sum over the input
// elements it covers, divided by PyTorch's divisor (the override; the
// window clipped to the padded input; or the elements it covers); an empty
// window gives 0.
absl::StatusOr<NodeValue> LowerAvgPool(Lowerer& L, const Call& c) {
  const TensorMeta m = L.layouts().Layout(&c.node(), -1, OutMeta(L, c));
  ASSIGN_OR_RETURN(PoolWindows pw, PoolWindowsOf(L, c, m.sizes, 0));
  ASSIGN_OR_RETURN(bool include_pad, c.Bool("count_include_pad"));
  std::optional<int64_t> override;
  if (c.Has("divisor_override")) {
    ASSIGN_OR_RETURN(override, c.Int("divisor_override"));
    if (*override == 0) return c.Error("division by zero");
  }
  // The divisor and the covered count per output element, from the kernel's
  // outer index variables (the output's dims).
  std::vector<Expr> pool, count;
  for (size_t d = 0; d < pw.in.size(); ++d) {
    Expr lo = pw.win.Position(d, IndexVar(static_cast<int>(pw.lead + d)),
                              symbolic::Int(0));
    Expr pad = symbolic::Int(pw.win.padding[d]);
    Expr hi = symbolic::Min(symbolic::Add(lo, symbolic::Int(pw.kernel[d])),
                            symbolic::Add(pw.in[d], pad));
    pool.push_back(symbolic::Sub(hi, lo));
    Expr covered = symbolic::Sub(symbolic::Min(hi, pw.in[d]),
                                 symbolic::Max(lo, symbolic::Int(0)));
    count.push_back(symbolic::Max(covered, symbolic::Int(0)));
  }
  Expr covered = Product(count);
  Expr divisor = override.has_value() ? symbolic::Int(*override)
                 : include_pad        ? Product(pool)
                                      : covered;
  DType acc = pw.box.dtype;
  auto divide = [acc, divisor, covered](KernelBuilder& kb, int sum, Expr) {
    int q = MeanOf(acc)(kb, sum, divisor);
    int some = kb.Call("gt", {kb.Index(covered), kb.Index(symbolic::Int(0))},
                       DType::kBool);
    return kb.Call("where", {some, q, kb.Constant(0, acc)}, acc);
  };
  ASSIGN_OR_RETURN(
      TBox out, L.Reduce(pw.box, pw.Dims(), ReduceKind::kSum, acc, m, divide));
  return TensorValue(out);
}

// _adaptive_avg_pool2d/3d(self, output_size): output o of a dim averages
// input [floor(o*I/O), ceil((o+1)*I/O)); the window loop runs to the widest
// window, masked past each one's end.
absl::StatusOr<NodeValue> LowerAdaptiveAvgPool(Lowerer& L, const Call& c) {
  const TensorMeta m = L.layouts().Layout(&c.node(), -1, OutMeta(L, c));
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  size_t nsp = absl::StrContains(c.op().schema.name, "3d") ? 3 : 2;
  if (x.sizes.size() < nsp + 1 || m.sizes.size() != x.sizes.size()) {
    return c.Error("unexpected input rank");
  }
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("integer pooling is not supported by the cpu backend");
  }
  size_t lead = x.sizes.size() - nsp;
  DType acc = ComputeDType(x.dtype);
  std::vector<Expr> in(x.sizes.begin() + lead, x.sizes.end());
  std::vector<Expr> out(m.sizes.begin() + lead, m.sizes.end());
  // The window [start, end) of output index o in spatial dim d.
  auto window = [in, out](size_t d,
                          Expr o) -> absl::StatusOr<std::pair<Expr, Expr>> {
    ASSIGN_OR_RETURN(Expr start,
                     symbolic::FloorDiv(symbolic::Mul(o, in[d]), out[d]));
    ASSIGN_OR_RETURN(
        Expr end,
        symbolic::CeilDiv(
            symbolic::Mul(symbolic::Add(o, symbolic::Int(1)), in[d]), out[d]));
    return std::make_pair(start, end);
  };
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  for (size_t d = 0; d < nsp; ++d) {
    ASSIGN_OR_RETURN(Expr w, symbolic::CeilDiv(in[d], out[d]));
    p.sizes.push_back(symbolic::Add(w, symbolic::Int(1)));
  }
  p.reads = x.reads;
  p.cost = x.cost + 8;
  p.load = [x, in, lead, nsp, acc, window](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> xi(idx.begin(), idx.begin() + lead);
    std::vector<int> masks;
    for (size_t d = 0; d < nsp; ++d) {
      ASSIGN_OR_RETURN(auto se, window(d, idx[lead + d]));
      Expr pos = symbolic::Add(se.first, idx[lead + nsp + d]);
      masks.push_back(
          kb.Call("lt", {kb.Index(pos), kb.Index(se.second)}, DType::kBool));
      xi.push_back(ClampIndex(pos, in[d]));
    }
    ASSIGN_OR_RETURN(int v, x.load(kb, xi));
    return kb.Call(
        "where", {AllOf(kb, masks), kb.Cast(v, acc), kb.Constant(0, acc)}, acc);
  };
  // The divisor from the kernel's outer index variables (the output's dims).
  std::vector<Expr> counts;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < nsp; ++d) {
    ASSIGN_OR_RETURN(auto se, window(d, IndexVar(static_cast<int>(lead + d))));
    counts.push_back(symbolic::Sub(se.second, se.first));
    dims.push_back(static_cast<int64_t>(lead + nsp + d));
  }
  Expr count = Product(counts);
  auto divide = [acc, count](KernelBuilder& kb, int sum, Expr) {
    return MeanOf(acc)(kb, sum, count);
  };
  ASSIGN_OR_RETURN(TBox result,
                   L.Reduce(p, dims, ReduceKind::kSum, acc, m, divide));
  return TensorValue(result);
}

}  // namespace

void RegisterNn(LoweringTable& T) {
  T.Add(Op("aten.convolution.default"), LowerConvolution);
  T.Add(Op("aten.max_pool2d_with_indices.default"), LowerMaxPool);
  T.Add(Op("aten.max_pool3d_with_indices.default"), LowerMaxPool);
  T.Add(Op("aten.avg_pool2d.default"), LowerAvgPool);
  T.Add(Op("aten.avg_pool3d.default"), LowerAvgPool);
  T.Add(Op("aten._adaptive_avg_pool2d.default"), LowerAdaptiveAvgPool);
  T.Add(Op("aten._adaptive_avg_pool3d.default"), LowerAdaptiveAvgPool);
  T.Add(Op("aten.upsample_nearest2d.default"), LowerUpsampleNearest);
  T.Add(Op("aten.upsample_nearest2d.vec"), LowerUpsampleNearest);
}

}  // namespace lathe::codegen::lower
