// Neural-network ops: convolution (forward and backward), max/avg/adaptive
// pooling (and their backwards), batch/group/layer norm, upsampling,
// reflection/replication padding, col2im, embedding backward and bags, and
// cdist/pdist (grid_sampler_2d is in ops_grid_sampler.cc). Kernels are
// direct loops over row-major copies of the inputs, computed in double
// (integers exactly where PyTorch computes them in integers) and rounded to
// the output dtype. Results take the layouts PyTorch's CPU kernels give
// them: a channels-last input keeps pooling, upsampling, padding and
// normalization results channels-last (SuggestedResult); the rest are
// contiguous.
// Output sizes are symbolic where they are arithmetic of symbolic sizes
// (convolution and pooling included: a condition such as pooling's
// ceil_mode correction is decided under a guard); sizes that need numbers
// (upsampling scales, adaptive pools) are specialized with guards
// (ConcreteSizes).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// ---------------------------------------------------------------------------
// Shared helpers.

void FillInts(const Tensor& out, const std::vector<int64_t>& v) {
  size_t k = 0;
  ForEachIndex(out.sizes(),
               [&](absl::Span<const int64_t> i) { StoreInt(out, i, v[k++]); });
}

// "[1, 2, 5, 5]" for a tensor's (possibly symbolic) sizes.
std::string SizeString(const Value& v) { return ShapeString(SizesOf(v)); }

absl::StatusOr<std::vector<int64_t>> Concrete(const OpCall& c, const Value& v) {
  return ConcreteSizes(c, SizesOf(v));
}

// The product of symbolic sizes.
Expr NumelOf(absl::Span<const Expr> sizes) {
  return sizes.empty() ? symbolic::Int(1) : symbolic::Mul(sizes);
}

int64_t Product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// PyTorch's "not implemented for" error unless `dtype` is floating point
// (or also int64 with `allow_long`).
absl::Status NeedFloat(const OpCall& c, DType dtype, absl::string_view kernel,
                       bool allow_long = false) {
  if (IsFloatingPoint(dtype) || (allow_long && dtype == DType::kInt64)) {
    return absl::OkStatus();
  }
  return c.Error(absl::StrCat("\"", kernel, "\" not implemented for '",
                              ScalarTypeName(dtype), "'"));
}

// An int list argument of `n` values: one value is repeated; `empty` (when
// given) replaces an empty list.
absl::StatusOr<std::vector<int64_t>> IntParam(
    const OpCall& c, absl::string_view name, size_t n, absl::string_view what,
    const std::vector<int64_t>* empty = nullptr) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, c.arg(name).AsIntList());
  if (v.empty() && empty != nullptr) return *empty;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) {
    return c.Error(absl::StrCat(what, " must either be a single int, or a ",
                                "tuple of ", n == 2 ? "two" : "three",
                                " ints"));
  }
  return v;
}

// A contiguous result (a new tensor when running, metadata otherwise).
absl::StatusOr<Value> Result(const OpCall& c, bool running, DType dtype,
                             const Value& like, std::vector<Expr> sizes) {
  return ResultOrEmpty(c, running, dtype, DeviceOf(like), std::move(sizes));
}

// A result of `sizes` in `like`'s suggested memory format: channels-last
// where `like` is laid out so (and has the result's rank), as PyTorch's CPU
// pooling, upsampling, padding and normalization kernels allocate;
// contiguous otherwise.
absl::StatusOr<Value> SuggestedResult(const OpCall& c, bool running,
                                      DType dtype, const Value& like,
                                      std::vector<Expr> sizes) {
  std::vector<Expr> strides =
      RankOf(like) == static_cast<int64_t>(sizes.size()) &&
              SuggestsChannelsLast(c.env(), like)
          ? ChannelsLastStrides(sizes)
          : ContiguousStrides(sizes);
  return ResultOrEmpty(c, running, dtype, DeviceOf(like), std::move(sizes),
                       std::move(strides));
}

// ---------------------------------------------------------------------------
// Convolution.

// A convolution's geometry with 3 spatial dims (1-d and 2-d convolutions
// have leading spatial dims of size 1).
struct ConvGeometry {
  int64_t n = 0, cin = 0, cout = 0, groups = 1;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  bool transposed = false;
};

// Calls fn(input offset, weight offset, output offset) for every product
// term of the convolution (all offsets row-major).
template <typename Fn>
void ForEachConvTerm(const ConvGeometry& g, Fn fn) {
  int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  int64_t kvol = g.k[0] * g.k[1] * g.k[2];
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      for (int64_t icg = 0; icg < cin_g; ++icg) {
        int64_t ic = grp * cin_g + icg;
        for (int64_t ocg = 0; ocg < cout_g; ++ocg) {
          int64_t oc = grp * cout_g + ocg;
          int64_t wbase = g.transposed ? (ic * cout_g + ocg) * kvol
                                       : (oc * cin_g + icg) * kvol;
          // Input position x and output position o are linked by
          // x = o * stride - pad + k * dil (forward) or, transposed,
          // o = x * stride - pad + k * dil.
          const int64_t* small = g.transposed ? g.in : g.out;
          const int64_t* large = g.transposed ? g.out : g.in;
          for (int64_t a = 0; a < small[0]; ++a) {
            for (int64_t b = 0; b < small[1]; ++b) {
              for (int64_t e = 0; e < small[2]; ++e) {
                for (int64_t ka = 0; ka < g.k[0]; ++ka) {
                  int64_t pa = a * g.stride[0] - g.pad[0] + ka * g.dil[0];
                  if (pa < 0 || pa >= large[0]) continue;
                  for (int64_t kb = 0; kb < g.k[1]; ++kb) {
                    int64_t pb = b * g.stride[1] - g.pad[1] + kb * g.dil[1];
                    if (pb < 0 || pb >= large[1]) continue;
                    for (int64_t ke = 0; ke < g.k[2]; ++ke) {
                      int64_t pe = e * g.stride[2] - g.pad[2] + ke * g.dil[2];
                      if (pe < 0 || pe >= large[2]) continue;
                      int64_t small_off = (a * small[1] + b) * small[2] + e;
                      int64_t large_off = (pa * large[1] + pb) * large[2] + pe;
                      int64_t w = wbase + (ka * g.k[1] + kb) * g.k[2] + ke;
                      int64_t x = g.transposed ? small_off : large_off;
                      int64_t o = g.transposed ? large_off : small_off;
                      fn((n * g.cin + ic) * in_plane + x, w,
                         (n * g.cout + oc) * out_plane + o);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

struct ConvSetup {
  ConvGeometry g;
  std::vector<Expr> out_sizes;  // [N, C_out, spatial...]
};

// Checks a convolution's arguments (PyTorch's messages) and computes its
// output sizes. `input` and `weight` are the forward operands.
absl::StatusOr<ConvSetup> SetupConv(const OpCall& c, const Value& input,
                                    const Value& weight, const Value* bias) {
  ConvSetup s;
  int64_t wdim = RankOf(weight), idim = RankOf(input);
  if (wdim < 3 || wdim > 5) {
    return c.Error(absl::StrCat("expected weight to be 3-, 4- or 5-dimensional",
                                ", but got ", wdim, "-dimensional weight"));
  }
  if (idim != wdim) {
    return c.Error(absl::StrCat(
        "Expected ", wdim, "-dimensional input for ", wdim,
        "-dimensional weight ", SizeString(weight), ", but got ", idim,
        "-dimensional input of size ", SizeString(input), " instead"));
  }
  if (DTypeOf(input) != DTypeOf(weight)) {
    return c.Error(absl::StrCat("expected scalar type ",
                                ScalarTypeName(DTypeOf(input)), " but found ",
                                ScalarTypeName(DTypeOf(weight))));
  }
  if (DTypeOf(input) == DType::kBool) {
    return c.Error("\"slow_conv2d_cpu\" not implemented for 'Bool'");
  }
  size_t nsp = wdim - 2;
  ASSIGN_OR_RETURN(bool transposed, c.arg("transposed").AsBool());
  ASSIGN_OR_RETURN(int64_t groups, c.arg("groups").AsInt());
  std::vector<std::vector<int64_t>> params;
  for (const char* name : {"stride", "padding", "dilation", "output_padding"}) {
    ASSIGN_OR_RETURN(std::vector<int64_t> v, c.arg(name).AsIntList());
    if (v.size() == 1) v.assign(nsp, v[0]);
    if (v.size() != nsp) {
      return c.Error(absl::StrCat(
          "expected ", name, " to be a single integer value or a list of ", nsp,
          " values to match the convolution dimensions, but got ", name, "=[",
          absl::StrJoin(v, ", "), "]"));
    }
    params.push_back(v);
  }
  for (size_t d = 0; d < nsp; ++d) {
    if (params[0][d] <= 0)
      return c.Error("non-positive stride is not supported");
    if (params[1][d] < 0) return c.Error("negative padding is not supported");
    if (params[2][d] <= 0) {
      return c.Error("dilation should be greater than zero");
    }
    if (params[3][d] < 0) {
      return c.Error("negative output_padding is not supported");
    }
  }
  if (groups <= 0) return c.Error("non-positive groups is not supported");
  // Channel counts and kernel sizes stay symbolic (a weight gradient's
  // convolution has the batch as its channels, the gradient's spatial sizes
  // as its kernel): checked by Decide, which guards only what it cannot
  // prove, never specializing a size.
  std::vector<Expr> in = SizesOf(input), w = SizesOf(weight);
  const Expr g_count = symbolic::Int(groups);
  const Expr cin = in[1];
  Expr cout;
  auto divisible = [&](const Expr& e) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(Expr rem, symbolic::PythonMod(e, g_count));
    return Decide(c, symbolic::Eq(rem, symbolic::Int(0)));
  };
  auto same = [&](const Expr& a, const Expr& b) {
    return Decide(c, symbolic::Eq(a, b));
  };
  auto not_divisible_error = [&]() {
    return c.Error(absl::StrCat("Given groups=", groups,
                                ", expected weight to be divisible by ", groups,
                                " at dimension 0, but got weight of size [",
                                SizeString(weight), "] instead"));
  };
  if (!transposed) {
    ASSIGN_OR_RETURN(bool divides, divisible(w[0]));
    if (!divides) return not_divisible_error();
    Expr want = symbolic::Mul(w[1], g_count);
    ASSIGN_OR_RETURN(bool channels, same(cin, want));
    if (!channels) {
      return c.Error(absl::StrCat(
          "Given groups=", groups, ", weight of size ", SizeString(weight),
          ", expected input", SizeString(input), " to have ",
          symbolic::ToString(want), " channels, but got ",
          symbolic::ToString(cin), " channels instead"));
    }
    cout = w[0];
  } else {
    ASSIGN_OR_RETURN(bool channels, same(cin, w[0]));
    if (!channels) {
      return c.Error(absl::StrCat(
          "Given transposed=1, weight of size ", SizeString(weight),
          ", expected input", SizeString(input), " to have ",
          symbolic::ToString(w[0]), " channels, but got ",
          symbolic::ToString(cin), " channels instead"));
    }
    ASSIGN_OR_RETURN(bool divides, divisible(w[0]));
    if (!divides) return not_divisible_error();
    cout = symbolic::Mul(w[1], g_count);
  }
  if (bias != nullptr && !bias->is_none()) {
    std::vector<Expr> bs = SizesOf(*bias);
    bool fits = bs.size() == 1;
    if (fits) {
      ASSIGN_OR_RETURN(fits, same(bs[0], cout));
    }
    if (!fits) {
      return c.Error(absl::StrCat(
          "Given weight of size ", SizeString(weight),
          ", expected bias to be 1-dimensional with ", symbolic::ToString(cout),
          " elements, but got bias of size ", SizeString(*bias), " instead"));
    }
  }
  s.out_sizes = {in[0], cout};
  std::vector<std::string> padded, kernel;
  bool too_small = false;
  for (size_t d = 0; d < nsp; ++d) {
    int64_t st = params[0][d], p = params[1][d], dl = params[2][d],
            op = params[3][d];
    Expr x = in[2 + d];
    // dilation * (kernel - 1)
    Expr reach = symbolic::Mul(symbolic::Int(dl),
                               symbolic::Sub(w[2 + d], symbolic::Int(1)));
    if (!transposed) {
      Expr padded_size = symbolic::Add(x, symbolic::Int(2 * p));
      Expr span = symbolic::Add(reach, symbolic::Int(1));
      ASSIGN_OR_RETURN(bool fits, Decide(c, symbolic::Ge(padded_size, span)));
      too_small = too_small || !fits;
      padded.push_back(symbolic::ToString(padded_size));
      kernel.push_back(symbolic::ToString(span));
      ASSIGN_OR_RETURN(
          Expr q,
          symbolic::FloorDiv(
              symbolic::Sub(symbolic::Add(x, symbolic::Int(2 * p - 1)), reach),
              symbolic::Int(st)));
      s.out_sizes.push_back(symbolic::Add(q, symbolic::Int(1)));
    } else {
      if (op >= st && op >= dl) {
        return c.Error(
            "output padding must be smaller than either stride or dilation");
      }
      s.out_sizes.push_back(symbolic::Add(
          {symbolic::Mul(symbolic::Sub(x, symbolic::Int(1)), symbolic::Int(st)),
           reach, symbolic::Int(-2 * p + op + 1)}));
    }
  }
  if (too_small) {
    return c.Error(
        absl::StrCat("Calculated padded input size per channel: (",
                     absl::StrJoin(padded, " x "), "). Kernel size: (",
                     absl::StrJoin(kernel, " x "),
                     "). Kernel size can't be greater than actual input size"));
  }
  if (!input.tensor.defined()) return s;  // the geometry is for kernels
  ASSIGN_OR_RETURN(std::vector<int64_t> outs, ConcreteSizes(c, s.out_sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> ins, Concrete(c, input));
  ASSIGN_OR_RETURN(std::vector<int64_t> ws, Concrete(c, weight));
  ConvGeometry& g = s.g;
  g.n = ins[0];
  g.cin = ins[1];
  g.cout = outs[1];
  g.groups = groups;
  g.transposed = transposed;
  for (size_t d = 0; d < 3; ++d) {
    int64_t sd = static_cast<int64_t>(d) - static_cast<int64_t>(3 - nsp);
    bool real = sd >= 0;
    g.in[d] = real ? ins[2 + sd] : 1;
    g.out[d] = real ? outs[2 + sd] : 1;
    g.k[d] = real ? ws[2 + sd] : 1;
    g.stride[d] = real ? params[0][sd] : 1;
    g.pad[d] = real ? params[1][sd] : 0;
    g.dil[d] = real ? params[2][sd] : 1;
  }
  return s;
}

absl::StatusOr<Value> Convolution(const OpCall& c) {
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  ASSIGN_OR_RETURN(ConvSetup s, SetupConv(c, input, weight, &bias));
  bool running = input.tensor.defined();
  // A channels-last input gives a channels-last result (PyTorch's CPU
  // meta: the input's suggested memory format).
  ASSIGN_OR_RETURN(
      Value out,
      ResultOrEmpty(c, running, DTypeOf(input), DeviceOf(input), s.out_sizes,
                    SuggestsChannelsLast(c.env(), input)
                        ? ChannelsLastStrides(s.out_sizes)
                        : ContiguousStrides(s.out_sizes)));
  if (!running) return out;
  std::vector<double> x = RowMajorValues(input.tensor),
                      w = RowMajorValues(weight.tensor);
  std::vector<double> y(out.tensor.numel(), 0.0);
  ForEachConvTerm(
      s.g, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += x[xi] * w[wi]; });
  if (!bias.is_none()) {
    std::vector<double> b = RowMajorValues(bias.tensor);
    int64_t plane = s.g.out[0] * s.g.out[1] * s.g.out[2];
    for (size_t i = 0; i < y.size(); ++i) y[i] += b[(i / plane) % s.g.cout];
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

absl::StatusOr<Value> ConvolutionBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_output");
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(ConvSetup s, SetupConv(c, input, weight, nullptr));
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  std::vector<Expr> gs = SizesOf(grad);
  ASSIGN_OR_RETURN(bool same, SameShape(c, gs, s.out_sizes));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_output of size ",
                                ShapeString(s.out_sizes), ", but got ",
                                ShapeString(gs)));
  }
  if (DTypeOf(grad) != DTypeOf(input)) {
    return c.Error(absl::StrCat("expected scalar type ",
                                ScalarTypeName(DTypeOf(input)), " but found ",
                                ScalarTypeName(DTypeOf(grad))));
  }
  bool running = input.tensor.defined();
  DType dt = DTypeOf(input);
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0], Result(c, running, dt, input, SizesOf(input)));
  }
  if (mask[1]) {
    ASSIGN_OR_RETURN(outs[1], Result(c, running, dt, input, SizesOf(weight)));
  }
  if (mask[2]) {
    ASSIGN_OR_RETURN(outs[2], Result(c, running, dt, input, {s.out_sizes[1]}));
  }
  if (running) {
    std::vector<double> x = RowMajorValues(input.tensor),
                        w = RowMajorValues(weight.tensor),
                        gy = RowMajorValues(grad.tensor);
    std::vector<double> gx(x.size(), 0.0), gw(w.size(), 0.0), gb(s.g.cout, 0.0);
    ForEachConvTerm(s.g, [&](int64_t xi, int64_t wi, int64_t yi) {
      gx[xi] += gy[yi] * w[wi];
      gw[wi] += gy[yi] * x[xi];
    });
    int64_t plane = s.g.out[0] * s.g.out[1] * s.g.out[2];
    for (size_t i = 0; i < gy.size(); ++i) gb[(i / plane) % s.g.cout] += gy[i];
    if (mask[0]) WriteRowMajor(outs[0].tensor, gx);
    if (mask[1]) WriteRowMajor(outs[1].tensor, gw);
    if (mask[2]) WriteRowMajor(outs[2].tensor, gb);
  }
  return Value::List(std::move(outs));
}

// ---------------------------------------------------------------------------
// Pooling.

// A pooling window geometry with 3 spatial dims (2-d pools have depth 1).
struct PoolGeometry {
  int64_t planes = 0;  // batch * channels
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  std::vector<Expr> in_sizes, out_sizes;
  bool ceil_mode = false, count_include_pad = true;
  bool has_divisor = false;
  int64_t divisor = 0;
};

// Checks a max/avg pool's arguments (PyTorch's messages) and computes its
// geometry; `nsp` is 2 or 3.
absl::StatusOr<PoolGeometry> SetupPool(const OpCall& c, const Value& self,
                                       int nsp, bool max) {
  std::string name = absl::StrCat(max ? "max_pool" : "avg_pool", nsp, "d");
  ASSIGN_OR_RETURN(
      std::vector<int64_t> k,
      IntParam(c, "kernel_size", nsp, absl::StrCat(name, ": kernel_size")));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> st,
      IntParam(c, "stride", nsp, absl::StrCat(name, ": stride"), &k));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> pad,
      IntParam(c, "padding", nsp, absl::StrCat(name, ": padding")));
  std::vector<int64_t> dil(nsp, 1);
  if (max) {
    ASSIGN_OR_RETURN(
        dil, IntParam(c, "dilation", nsp, absl::StrCat(name, ": dilation")));
  }
  PoolGeometry g;
  ASSIGN_OR_RETURN(g.ceil_mode, c.arg("ceil_mode").AsBool());
  if (!max) {
    ASSIGN_OR_RETURN(g.count_include_pad, c.arg("count_include_pad").AsBool());
    const Value& div = c.arg("divisor_override");
    if (!div.is_none()) {
      g.has_divisor = true;
      ASSIGN_OR_RETURN(g.divisor, div.AsInt());
      if (g.divisor == 0) return c.Error("divisor must be not zero");
    }
  }
  for (int d = 0; d < nsp; ++d) {
    if (st[d] == 0) return c.Error("stride should not be zero");
    if (k[d] <= 0) {
      return c.Error(absl::StrCat("kernel size should be greater than zero, ",
                                  "but got kernel_size=[",
                                  absl::StrJoin(k, ", "), "]"));
    }
    if (st[d] < 0) {
      return c.Error(
          absl::StrCat("stride should be greater than zero, but got stride=[",
                       absl::StrJoin(st, ", "), "]"));
    }
    if (dil[d] <= 0) {
      return c.Error(absl::StrCat(
          "dilation should be greater than zero, but got dilation=[",
          absl::StrJoin(dil, ", "), "]"));
    }
  }
  int64_t rank = RankOf(self);
  std::vector<Expr> sizes = SizesOf(self);
  bool empty_plane = false;
  if (rank == nsp + 1 || rank == nsp + 2) {
    for (int64_t d = rank - nsp - 1; d < rank; ++d) {
      if (sizes[d].is_constant(0)) empty_plane = true;
    }
  }
  if ((rank != nsp + 1 && rank != nsp + 2) || empty_plane) {
    return c.Error(absl::StrCat("non-empty ", nsp + 1, "D or ", nsp + 2,
                                "D (batch mode) tensor expected for input"));
  }
  for (int d = 0; d < nsp; ++d) {
    if (pad[d] > ((k[d] - 1) * dil[d] + 1) / 2) {
      return c.Error(absl::StrCat(
          "pad should be at most half of effective kernel size, but got pad=",
          pad[d], ", kernel_size=", k[d], " and dilation=", dil[d]));
    }
  }
  // PyTorch's pooling_output_shape over symbolic sizes: the ceil_mode
  // correction decided under a guard, not by specializing the size.
  std::vector<Expr> spatial(sizes.end() - nsp, sizes.end());
  std::vector<Expr> out(nsp);
  bool small = false;
  for (int d = 0; d < nsp; ++d) {
    Expr num = symbolic::Add(
        spatial[d], symbolic::Int(2 * pad[d] - dil[d] * (k[d] - 1) - 1 +
                                  (g.ceil_mode ? st[d] - 1 : 0)));
    ASSIGN_OR_RETURN(Expr q, symbolic::FloorDiv(num, symbolic::Int(st[d])));
    out[d] = symbolic::Add(q, symbolic::Int(1));
    if (g.ceil_mode) {
      ASSIGN_OR_RETURN(
          bool past,
          Decide(c, symbolic::Ge(
                        symbolic::Mul(symbolic::Sub(out[d], symbolic::Int(1)),
                                      symbolic::Int(st[d])),
                        symbolic::Add(spatial[d], symbolic::Int(pad[d])))));
      if (past) out[d] = symbolic::Sub(out[d], symbolic::Int(1));
    }
    ASSIGN_OR_RETURN(bool fits,
                     Decide(c, symbolic::Ge(out[d], symbolic::Int(1))));
    if (!fits) small = true;
  }
  g.in_sizes = sizes;
  g.out_sizes.assign(sizes.begin(), sizes.end() - nsp);
  g.out_sizes.insert(g.out_sizes.end(), out.begin(), out.end());
  if (small) {
    std::vector<std::string> ins, outs;
    ins.push_back(symbolic::ToString(sizes[rank - nsp - 1]));
    outs.push_back(symbolic::ToString(sizes[rank - nsp - 1]));
    for (int d = 0; d < nsp; ++d) {
      ins.push_back(symbolic::ToString(spatial[d]));
      outs.push_back(symbolic::ToString(out[d]));
    }
    return c.Error(absl::StrCat("Given input size: (", absl::StrJoin(ins, "x"),
                                "). Calculated output size: (",
                                absl::StrJoin(outs, "x"),
                                "). Output size is too small"));
  }
  if (!self.tensor.defined()) return g;  // the geometry is for kernels
  std::vector<Expr> lead(sizes.begin(), sizes.end() - nsp);
  ASSIGN_OR_RETURN(std::vector<int64_t> lead_n, ConcreteSizes(c, lead));
  ASSIGN_OR_RETURN(std::vector<int64_t> in_n, ConcreteSizes(c, spatial));
  ASSIGN_OR_RETURN(std::vector<int64_t> out_n, ConcreteSizes(c, out));
  g.planes = Product(lead_n);
  for (int d = 0; d < 3; ++d) {
    int sd = d - (3 - nsp);
    bool real = sd >= 0;
    g.in[d] = real ? in_n[sd] : 1;
    g.out[d] = real ? out_n[sd] : 1;
    g.k[d] = real ? k[sd] : 1;
    g.stride[d] = real ? st[sd] : 1;
    g.pad[d] = real ? pad[sd] : 0;
    g.dil[d] = real ? dil[sd] : 1;
  }
  return g;
}

// Calls fn(plane, output offset in the plane) for every output position,
// with `lo`/`hi` the window's start and end per spatial dim (before any
// clamping).
template <typename Fn>
void ForEachWindow(const PoolGeometry& g, Fn fn) {
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t a = 0; a < g.out[0]; ++a) {
      for (int64_t b = 0; b < g.out[1]; ++b) {
        for (int64_t e = 0; e < g.out[2]; ++e) {
          int64_t o[3] = {a, b, e};
          int64_t lo[3];
          for (int d = 0; d < 3; ++d) lo[d] = o[d] * g.stride[d] - g.pad[d];
          fn(p, (a * g.out[1] + b) * g.out[2] + e, lo);
        }
      }
    }
  }
}

int64_t PlaneSize(const int64_t* s) { return s[0] * s[1] * s[2]; }

// max_pool{2,3}d_with_indices: (values, int64 flat indices into each input
// plane), NaN winning as in PyTorch.
absl::StatusOr<Value> MaxPool(const OpCall& c, int nsp) {
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(PoolGeometry g, SetupPool(c, self, nsp, true));
  if (DTypeOf(self) == DType::kBool) {
    return c.Error(
        absl::StrCat("\"max_pool", nsp, "d\" not implemented for 'Bool'"));
  }
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(
      Value out, SuggestedResult(c, running, DTypeOf(self), self, g.out_sizes));
  ASSIGN_OR_RETURN(
      Value idx, SuggestedResult(c, running, DType::kInt64, self, g.out_sizes));
  if (!running) return Value::List({out, idx});
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<double> y(out.tensor.numel());
  std::vector<int64_t> yi(out.tensor.numel());
  int64_t in_plane = PlaneSize(g.in), out_plane = PlaneSize(g.out);
  ForEachWindow(g, [&](int64_t p, int64_t o, const int64_t* lo) {
    int64_t start[3], end[3];
    for (int d = 0; d < 3; ++d) {
      end[d] = std::min(lo[d] + (g.k[d] - 1) * g.dil[d] + 1, g.in[d]);
      start[d] = lo[d];
      while (start[d] < 0) start[d] += g.dil[d];
    }
    int64_t best = (start[0] * g.in[1] + start[1]) * g.in[2] + start[2];
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t a = start[0]; a < end[0]; a += g.dil[0]) {
      for (int64_t b = start[1]; b < end[1]; b += g.dil[1]) {
        for (int64_t e = start[2]; e < end[2]; e += g.dil[2]) {
          int64_t i = (a * g.in[1] + b) * g.in[2] + e;
          double v = x[p * in_plane + i];
          if (v > mx || std::isnan(v)) {
            mx = v;
            best = i;
          }
        }
      }
    }
    y[p * out_plane + o] = mx;
    yi[p * out_plane + o] = best;
  });
  WriteRowMajor(out.tensor, y);
  FillInts(idx.tensor, yi);
  return Value::List({out, idx});
}

// Checks that `v` has the pool's output sizes.
absl::Status SameAsPoolOutput(const OpCall& c, const Value& v,
                              const std::vector<Expr>& want,
                              absl::string_view what) {
  std::vector<Expr> s = SizesOf(v);
  ASSIGN_OR_RETURN(bool same, SameShape(c, s, want));
  if (!same) {
    return c.Error(absl::StrCat("Expected ", what, " of size ",
                                ShapeString(want), ", but got ",
                                ShapeString(s)));
  }
  return absl::OkStatus();
}

// max_pool{2,3}d_with_indices_backward: each gradient added at its
// window's argmax (a flat index into its input plane); the result in self's
// suggested memory format, as PyTorch's CPU kernels allocate it. An index
// outside the plane is an error (PyTorch's 3-d kernel does not check).
absl::StatusOr<Value> MaxPoolBackward(const OpCall& c, int nsp) {
  const Value& grad = c.arg("grad_output");
  const Value& self = c.arg("self");
  const Value& indices = c.arg("indices");
  ASSIGN_OR_RETURN(PoolGeometry g, SetupPool(c, self, nsp, true));
  RETURN_IF_ERROR(SameAsPoolOutput(c, grad, g.out_sizes, "grad_output"));
  RETURN_IF_ERROR(SameAsPoolOutput(c, indices, g.out_sizes, "indices"));
  if (DTypeOf(indices) != DType::kInt64) {
    return c.Error("expected indices to be an int64 tensor");
  }
  RETURN_IF_ERROR(
      NeedFloat(c, DTypeOf(self), absl::StrCat("max_pool", nsp, "d_backward")));
  bool running = self.tensor.defined();
  // An unbatched input's gradient is contiguous (a 4-d one is not a
  // channels-last batch: PyTorch refuses a channels-last unbatched 3-d
  // input).
  ASSIGN_OR_RETURN(Value out,
                   (RankOf(self) == nsp + 2 ? SuggestedResult : Result)(
                       c, running, DTypeOf(self), self, g.in_sizes));
  if (!running) return out;
  std::vector<double> gy = RowMajorValues(grad.tensor);
  std::vector<int64_t> ix = IntElements(indices.tensor);
  int64_t in_plane = PlaneSize(g.in), out_plane = PlaneSize(g.out);
  std::vector<double> gx(g.planes * in_plane, 0.0);
  for (size_t i = 0; i < gy.size(); ++i) {
    int64_t target = ix[i];
    if (target < 0 || target >= in_plane) {
      return c.Error(absl::StrCat("index ", target,
                                  " is out of bounds for an input plane of ",
                                  in_plane, " elements"));
    }
    gx[(i / out_plane) * in_plane + target] += gy[i];
  }
  WriteRowMajor(out.tensor, gx);
  return out;
}

// The window of an average pool's output position: its clamped start/end
// and PyTorch's divisor.
struct AvgWindow {
  int64_t start[3], end[3];
  int64_t divisor;
};

AvgWindow AvgPoolWindow(const PoolGeometry& g, const int64_t* lo) {
  AvgWindow w;
  int64_t pool_size = 1, count = 1;
  for (int d = 0; d < 3; ++d) {
    int64_t hi = std::min(lo[d] + g.k[d], g.in[d] + g.pad[d]);
    pool_size *= hi - lo[d];
    w.start[d] = std::max<int64_t>(lo[d], 0);
    w.end[d] = std::min(hi, g.in[d]);
    count *= std::max<int64_t>(w.end[d] - w.start[d], 0);
  }
  w.divisor = g.has_divisor         ? g.divisor
              : g.count_include_pad ? pool_size
                                    : count;
  return w;
}

// avg_pool{2,3}d: PyTorch's window divisor rules (count_include_pad,
// divisor_override); int64 inputs sum exactly and divide truncating.
absl::StatusOr<Value> AvgPool(const OpCall& c, int nsp) {
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(PoolGeometry g, SetupPool(c, self, nsp, false));
  RETURN_IF_ERROR(NeedFloat(c, DTypeOf(self),
                            absl::StrCat("avg_pool", nsp, "d"),
                            /*allow_long=*/true));
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   (nsp == 2 ? SuggestedResult : Result)(
                       c, running, DTypeOf(self), self, g.out_sizes));
  if (!running) return out;
  bool ints = DTypeOf(self) == DType::kInt64;
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<int64_t> xi =
      ints ? IntElements(self.tensor) : std::vector<int64_t>{};
  std::vector<double> y(out.tensor.numel());
  std::vector<int64_t> yi(ints ? y.size() : 0);
  int64_t in_plane = PlaneSize(g.in), out_plane = PlaneSize(g.out);
  ForEachWindow(g, [&](int64_t p, int64_t o, const int64_t* lo) {
    AvgWindow w = AvgPoolWindow(g, lo);
    double sum = 0;
    int64_t isum = 0;
    bool empty = false;
    for (int d = 0; d < 3; ++d) empty = empty || w.start[d] >= w.end[d];
    if (!empty) {
      for (int64_t a = w.start[0]; a < w.end[0]; ++a) {
        for (int64_t b = w.start[1]; b < w.end[1]; ++b) {
          for (int64_t e = w.start[2]; e < w.end[2]; ++e) {
            int64_t i = p * in_plane + (a * g.in[1] + b) * g.in[2] + e;
            if (ints) {
              isum += xi[i];
            } else {
              sum += x[i];
            }
          }
        }
      }
    }
    int64_t at = p * out_plane + o;
    if (ints) {
      yi[at] = empty ? 0 : isum / w.divisor;
    } else {
      y[at] = empty ? 0.0 : sum / w.divisor;
    }
  });
  if (ints) {
    FillInts(out.tensor, yi);
  } else {
    WriteRowMajor(out.tensor, y);
  }
  return out;
}

// avg_pool{2,3}d_backward: a 2-d result keeps a channels-last input's
// layout, a 3-d one is contiguous (PyTorch's CPU kernels); int64 shares
// are divided truncating, as PyTorch's integer kernel does.
absl::StatusOr<Value> AvgPoolBackward(const OpCall& c, int nsp) {
  const Value& grad = c.arg("grad_output");
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(PoolGeometry g, SetupPool(c, self, nsp, false));
  RETURN_IF_ERROR(NeedFloat(
      c, DTypeOf(self),
      nsp == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward_out_frame",
      /*allow_long=*/true));
  RETURN_IF_ERROR(SameAsPoolOutput(c, grad, g.out_sizes, "grad_output"));
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out, (nsp == 2 ? SuggestedResult : Result)(
                                  c, running, DTypeOf(self), self, g.in_sizes));
  if (!running) return out;
  const bool ints = DTypeOf(self) == DType::kInt64;
  std::vector<double> gy = RowMajorValues(grad.tensor);
  std::vector<int64_t> gyi =
      ints ? IntElements(grad.tensor) : std::vector<int64_t>{};
  int64_t in_plane = PlaneSize(g.in), out_plane = PlaneSize(g.out);
  std::vector<double> gx(g.planes * in_plane, 0.0);
  std::vector<int64_t> gxi(ints ? gx.size() : 0, 0);
  ForEachWindow(g, [&](int64_t p, int64_t o, const int64_t* lo) {
    AvgWindow w = AvgPoolWindow(g, lo);
    const int64_t at = p * out_plane + o;
    double share = gy[at] / w.divisor;
    int64_t share_i = ints ? gyi[at] / w.divisor : 0;
    for (int64_t a = w.start[0]; a < w.end[0]; ++a) {
      for (int64_t b = w.start[1]; b < w.end[1]; ++b) {
        for (int64_t e = w.start[2]; e < w.end[2]; ++e) {
          const int64_t i = p * in_plane + (a * g.in[1] + b) * g.in[2] + e;
          if (ints) {
            gxi[i] += share_i;
          } else {
            gx[i] += share;
          }
        }
      }
    }
  });
  if (ints) {
    FillInts(out.tensor, gxi);
  } else {
    WriteRowMajor(out.tensor, gx);
  }
  return out;
}

// Adaptive average pooling: window [floor(o * in / out),
// ceil((o + 1) * in / out)) per spatial dim.
int64_t AdaptiveStart(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
int64_t AdaptiveEnd(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

struct AdaptiveSetup {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
};

absl::StatusOr<AdaptiveSetup> SetupAdaptive(const OpCall& c, const Value& self,
                                            int nsp,
                                            const std::vector<Expr>& out_size) {
  std::string name = absl::StrCat("adaptive_avg_pool", nsp, "d");
  int64_t rank = RankOf(self);
  std::vector<Expr> sizes = SizesOf(self);
  if (rank != nsp + 1 && rank != nsp + 2) {
    return c.Error(absl::StrCat(name, "(): Expected ", nsp + 1, "D or ",
                                nsp + 2, "D tensor, but got ",
                                ShapeString(sizes)));
  }
  for (int64_t d = rank - nsp; d < rank; ++d) {
    if (sizes[d].is_constant(0)) {
      return c.Error(absl::StrCat(
          name, "(): Expected input to have non-zero size for non-batch ",
          "dimensions, but input has sizes ", ShapeString(sizes),
          " with dimension ", d, " being empty"));
    }
  }
  RETURN_IF_ERROR(NeedFloat(c, DTypeOf(self), name));
  if (static_cast<int>(out_size.size()) != nsp) {
    return c.Error(absl::StrCat(name, ": output_size must be ", nsp));
  }
  AdaptiveSetup s;
  for (const Expr& o : out_size) {
    ASSIGN_OR_RETURN(bool negative,
                     Decide(c, symbolic::Lt(o, symbolic::Int(0))));
    if (negative) {
      return c.Error(absl::StrCat(
          name, ": elements of output_size must be greater than or equal to ",
          "0 but received ", symbolic::ToString(o)));
    }
  }
  if (!self.tensor.defined()) return s;  // the geometry is for kernels
  ASSIGN_OR_RETURN(std::vector<int64_t> all, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> outs, ConcreteSizes(c, out_size));
  s.planes = Product(std::vector<int64_t>(all.begin(), all.end() - nsp));
  for (int d = 0; d < nsp; ++d) {
    s.in[3 - nsp + d] = all[rank - nsp + d];
    s.out[3 - nsp + d] = outs[d];
  }
  return s;
}

// Calls fn(input offset, output offset, window size) for every input
// element of every output window.
template <typename Fn>
void ForEachAdaptive(const AdaptiveSetup& s, Fn fn) {
  int64_t in_plane = PlaneSize(s.in), out_plane = PlaneSize(s.out);
  for (int64_t p = 0; p < s.planes; ++p) {
    for (int64_t a = 0; a < s.out[0]; ++a) {
      int64_t a0 = AdaptiveStart(a, s.in[0], s.out[0]),
              a1 = AdaptiveEnd(a, s.in[0], s.out[0]);
      for (int64_t b = 0; b < s.out[1]; ++b) {
        int64_t b0 = AdaptiveStart(b, s.in[1], s.out[1]),
                b1 = AdaptiveEnd(b, s.in[1], s.out[1]);
        for (int64_t e = 0; e < s.out[2]; ++e) {
          int64_t e0 = AdaptiveStart(e, s.in[2], s.out[2]),
                  e1 = AdaptiveEnd(e, s.in[2], s.out[2]);
          int64_t count = (a1 - a0) * (b1 - b0) * (e1 - e0);
          int64_t o = p * out_plane + (a * s.out[1] + b) * s.out[2] + e;
          for (int64_t x = a0; x < a1; ++x) {
            for (int64_t y = b0; y < b1; ++y) {
              for (int64_t z = e0; z < e1; ++z) {
                fn(p * in_plane + (x * s.in[1] + y) * s.in[2] + z, o, count);
              }
            }
          }
        }
      }
    }
  }
}

absl::StatusOr<Value> AdaptiveAvgPool(const OpCall& c, int nsp) {
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(std::vector<Expr> out_size,
                   c.arg("output_size").AsExprList());
  ASSIGN_OR_RETURN(AdaptiveSetup s, SetupAdaptive(c, self, nsp, out_size));
  std::vector<Expr> sizes = SizesOf(self);
  sizes.resize(sizes.size() - nsp);
  for (const Expr& e : out_size) sizes.push_back(e);
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out, (nsp == 2 ? SuggestedResult : Result)(
                                  c, running, DTypeOf(self), self, sizes));
  if (!running) return out;
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<double> y(out.tensor.numel(), 0.0);
  ForEachAdaptive(
      s, [&](int64_t i, int64_t o, int64_t count) { y[o] += x[i] / count; });
  WriteRowMajor(out.tensor, y);
  return out;
}

absl::StatusOr<Value> AdaptiveAvgPoolBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_output");
  const Value& self = c.arg("self");
  std::vector<Expr> gs = SizesOf(grad);
  if (gs.size() != static_cast<size_t>(RankOf(self)) || gs.size() < 3) {
    return c.Error(absl::StrCat("Expected grad_output of rank ", RankOf(self),
                                ", but got ", ShapeString(gs)));
  }
  std::vector<Expr> ss = SizesOf(self);
  for (size_t d = 0; d + 2 < gs.size(); ++d) {
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(gs[d], ss[d])));
    if (!same) {
      return c.Error(absl::StrCat("Expected grad_output of size [",
                                  symbolic::ToString(ss[d]), ", ...], but got ",
                                  ShapeString(gs)));
    }
  }
  std::vector<Expr> out_size(gs.end() - 2, gs.end());
  ASSIGN_OR_RETURN(AdaptiveSetup s, SetupAdaptive(c, self, 2, out_size));
  if (DTypeOf(grad) != DTypeOf(self)) {
    return c.Error(absl::StrCat("expected scalar type ",
                                ScalarTypeName(DTypeOf(self)), " but found ",
                                ScalarTypeName(DTypeOf(grad))));
  }
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   Result(c, running, DTypeOf(self), self, SizesOf(self)));
  if (!running) return out;
  std::vector<double> gy = RowMajorValues(grad.tensor);
  std::vector<double> gx(out.tensor.numel(), 0.0);
  ForEachAdaptive(
      s, [&](int64_t i, int64_t o, int64_t count) { gx[i] += gy[o] / count; });
  WriteRowMajor(out.tensor, gx);
  return out;
}

// ---------------------------------------------------------------------------
// Normalization.

// The dtype of batch/group norm statistics: float32 for a float16/bfloat16
// input with some float32 parameter (PyTorch's mixed type), else the
// input's.
DType StatsDType(DType input, absl::Span<const Value* const> params) {
  if (input != DType::kFloat16 && input != DType::kBFloat16) return input;
  for (const Value* v : params) {
    if (v->is_tensor() && DTypeOf(*v) == DType::kFloat32) {
      return DType::kFloat32;
    }
  }
  return input;
}

// Checks that `v` (unless None) is a vector of `n` elements.
absl::Status VectorOf(const OpCall& c, const Value& v, int64_t n,
                      absl::string_view name) {
  if (v.is_none()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<int64_t> s, Concrete(c, v));
  if (Product(s) != n) {
    return c.Error(absl::StrCat(name, " should contain ", n, " elements not ",
                                Product(s)));
  }
  return absl::OkStatus();
}

// The batch-norm family. `stats`: running_mean/var arguments exist (their
// values `rm` and `rv`, None when absent); `training`: nullopt reads the
// `training` argument; `update`: training writes the new running statistics
// into `rm` and `rv`.
absl::StatusOr<Value> BatchNorm(const OpCall& c, bool stats, const Value& rm,
                                const Value& rv,
                                std::optional<bool> fixed_training,
                                bool update) {
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  bool training;
  if (fixed_training.has_value()) {
    training = *fixed_training;
  } else {
    ASSIGN_OR_RETURN(training, c.arg("training").AsBool());
  }
  ASSIGN_OR_RETURN(double momentum, c.arg("momentum").AsDouble());
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "batch_norm"));
  int64_t rank = RankOf(input);
  RETURN_IF_ERROR(WrapDim(c, 1, rank).status());  // the channel dim
  if (!training && (rm.is_none() || rv.is_none())) {
    return c.Error(absl::StrCat(rm.is_none() ? "running_mean" : "running_var",
                                " must be defined in evaluation mode"));
  }
  std::vector<Expr> sizes = SizesOf(input);
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, {sizes[1]}));
  int64_t channels = cs[0];
  RETURN_IF_ERROR(VectorOf(c, weight, channels, "weight"));
  RETURN_IF_ERROR(VectorOf(c, bias, channels, "bias"));
  RETURN_IF_ERROR(VectorOf(c, rm, channels, "running_mean"));
  RETURN_IF_ERROR(VectorOf(c, rv, channels, "running_var"));
  DType sdt = StatsDType(dt, {&weight, &bias, &rm, &rv});  // None: skipped
  bool running = input.tensor.defined();
  std::vector<Expr> stat_sizes = {symbolic::Int(training ? channels : 0)};
  ASSIGN_OR_RETURN(Value out, SuggestedResult(c, running, dt, input, sizes));
  ASSIGN_OR_RETURN(Value mean, Result(c, running, sdt, input, stat_sizes));
  ASSIGN_OR_RETURN(Value invstd, Result(c, running, sdt, input, stat_sizes));
  if (!running) return Value::List({out, mean, invstd});
  const std::vector<int64_t>& is = input.tensor.sizes();
  std::vector<double> x = RowMajorValues(input.tensor);
  int64_t inner = Product(is, 2), n = is[0] * inner;
  std::vector<double> m(channels), r(channels);
  std::vector<double> w = weight.is_none() ? std::vector<double>(channels, 1.0)
                                           : RowMajorValues(weight.tensor);
  std::vector<double> b = bias.is_none() ? std::vector<double>(channels, 0.0)
                                         : RowMajorValues(bias.tensor);
  auto at = [&](int64_t batch, int64_t ch, int64_t i) {
    return (batch * channels + ch) * inner + i;
  };
  if (training) {
    std::vector<double> rm_v, rv_v;
    if (!update) rm_v = rv_v = std::vector<double>(channels, 0.0);
    if (update && !rm.is_none()) rm_v = RowMajorValues(rm.tensor);
    if (update && !rv.is_none()) rv_v = RowMajorValues(rv.tensor);
    for (int64_t ch = 0; ch < channels; ++ch) {
      double sum = 0;
      for (int64_t bt = 0; bt < is[0]; ++bt) {
        for (int64_t i = 0; i < inner; ++i) sum += x[at(bt, ch, i)];
      }
      double mu = sum / n, ss = 0;
      for (int64_t bt = 0; bt < is[0]; ++bt) {
        for (int64_t i = 0; i < inner; ++i) {
          double d = x[at(bt, ch, i)] - mu;
          ss += d * d;
        }
      }
      m[ch] = mu;
      r[ch] = 1.0 / std::sqrt(ss / n + eps);
      // The running statistics, updated in place with the unbiased variance.
      if (!rm.is_none()) rm_v[ch] = momentum * mu + (1 - momentum) * rm_v[ch];
      if (!rv.is_none()) {
        rv_v[ch] = momentum * ss / (n - 1) + (1 - momentum) * rv_v[ch];
      }
    }
    if (update && !rm.is_none()) WriteRowMajor(rm.tensor, rm_v);
    if (update && !rv.is_none()) WriteRowMajor(rv.tensor, rv_v);
    WriteRowMajor(mean.tensor, m);
    WriteRowMajor(invstd.tensor, r);
  } else {
    m = RowMajorValues(rm.tensor);
    r = RowMajorValues(rv.tensor);
    for (double& v : r) v = 1.0 / std::sqrt(v + eps);
  }
  std::vector<double> y(x.size());
  for (int64_t bt = 0; bt < is[0]; ++bt) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = at(bt, ch, i);
        y[k] = (x[k] - m[ch]) * r[ch] * w[ch] + b[ch];
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return Value::List({out, mean, invstd});
}

// native_batch_norm_backward(grad_out, input, weight, running_mean,
// running_var, save_mean, save_invstd, train, eps, output_mask) ->
// (grad_input, grad_weight, grad_bias), per channel c over its n elements:
// training, with the batch's statistics (save_mean, save_invstd):
//   grad_input = (dy - sum(dy) / n - (x - mean) * dot * invstd^2 / n)
//                * invstd * weight,  dot = sum(dy * (x - mean));
// evaluation, with the running ones: grad_input = dy * invstd * weight
// (invstd = 1 / sqrt(running_var + eps)); grad_weight = dot * invstd,
// grad_bias = sum(dy) in both. grad_input is laid out as input suggests;
// an output the mask leaves out is None.
absl::StatusOr<Value> BatchNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(bool train, c.arg("train").AsBool());
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  const Value& mean_v = train ? c.arg("save_mean") : c.arg("running_mean");
  const Value& var_v = train ? c.arg("save_invstd") : c.arg("running_var");
  const DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "batch_norm_backward_cpu"));
  const int64_t rank = RankOf(input);
  if (rank < 2) {
    return c.Error(absl::StrCat("Expected 2D+ input, but got input of size",
                                SizeString(input)));
  }
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), SizesOf(input)));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  if (mean_v.is_none() || var_v.is_none()) {
    return c.Error(train ? "save_mean and save_invstd must be defined in "
                           "training mode"
                         : "running_mean and running_var must be defined in "
                           "evaluation mode");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> cs,
                   ConcreteSizes(c, {SizesOf(input)[1]}));
  const int64_t channels = cs[0];
  RETURN_IF_ERROR(VectorOf(c, weight, channels, "weight"));
  RETURN_IF_ERROR(
      VectorOf(c, mean_v, channels, train ? "save_mean" : "running_mean"));
  RETURN_IF_ERROR(
      VectorOf(c, var_v, channels, train ? "save_invstd" : "running_var"));
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  const bool running = input.tensor.defined();
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0],
                     SuggestedResult(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k],
                     Result(c, running, weight.is_none() ? dt : DTypeOf(weight),
                            input, {symbolic::Int(channels)}));
  }
  if (!running) return Value::List(std::move(outs));
  const std::vector<int64_t>& is = input.tensor.sizes();
  const std::vector<double> x = RowMajorValues(input.tensor),
                            dy = RowMajorValues(grad.tensor);
  const std::vector<double> m = RowMajorValues(mean_v.tensor);
  std::vector<double> r = RowMajorValues(var_v.tensor);
  if (!train) {
    for (double& v : r) v = 1.0 / std::sqrt(v + eps);
  }
  const std::vector<double> w = weight.is_none()
                                    ? std::vector<double>(channels, 1.0)
                                    : RowMajorValues(weight.tensor);
  const int64_t inner = Product(is, 2), n = is[0] * inner;
  auto at = [&](int64_t batch, int64_t ch, int64_t i) {
    return (batch * channels + ch) * inner + i;
  };
  std::vector<double> dx(x.size()), dw(channels), db(channels);
  for (int64_t ch = 0; ch < channels; ++ch) {
    double sum = 0, dot = 0;
    for (int64_t bt = 0; bt < is[0]; ++bt) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = at(bt, ch, i);
        sum += dy[k];
        dot += dy[k] * (x[k] - m[ch]);
      }
    }
    dw[ch] = dot * r[ch];
    db[ch] = sum;
    for (int64_t bt = 0; bt < is[0]; ++bt) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = at(bt, ch, i);
        dx[k] =
            train
                ? (dy[k] - sum / n - (x[k] - m[ch]) * dot * r[ch] * r[ch] / n) *
                      r[ch] * w[ch]
                : dy[k] * r[ch] * w[ch];
      }
    }
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

// The batch-norm ops that take running statistics from their arguments.
absl::StatusOr<Value> BatchNormWithStats(const OpCall& c,
                                         std::optional<bool> training,
                                         bool update) {
  return BatchNorm(c, true, c.arg("running_mean"), c.arg("running_var"),
                   training, update);
}

// _native_batch_norm_legit_functional: _native_batch_norm_legit on copies of
// the running statistics, which it returns as two more results (the
// statistics unchanged in evaluation mode).
absl::StatusOr<Value> BatchNormFunctional(const OpCall& c) {
  Value rm = c.arg("running_mean"), rv = c.arg("running_var");
  bool running = c.arg("input").tensor.defined();
  for (Value* v : {&rm, &rv}) {
    std::vector<Expr> sizes = SizesOf(*v);
    ASSIGN_OR_RETURN(Value copy,
                     Result(c, running, DTypeOf(*v), *v, std::move(sizes)));
    if (running) RETURN_IF_ERROR(CopyInto(copy.tensor, v->tensor));
    *v = copy;
  }
  ASSIGN_OR_RETURN(Value out, BatchNorm(c, true, rm, rv, std::nullopt, true));
  out.list.push_back(rm);
  out.list.push_back(rv);
  return out;
}

struct GroupNormSetup {
  int64_t n = 0, channels = 0, hxw = 0, group = 0;
};

absl::StatusOr<GroupNormSetup> SetupGroupNorm(const OpCall& c,
                                              const Value& input) {
  GroupNormSetup s;
  std::vector<Expr> nchw;
  for (const char* name : {"N", "C", "HxW"}) {
    const Value& a = c.arg(name);
    if (!a.is_number()) return c.Error(absl::StrCat(name, " must be an int"));
    nchw.push_back(a.number);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, {nchw[1]}));
  s.channels = cs[0];
  ASSIGN_OR_RETURN(s.group, c.arg("group").AsInt());
  if (s.group <= 0 || s.channels % s.group != 0) {
    return c.Error(
        absl::StrCat("Expected number of channels in input to be divisible by ",
                     "num_groups, but got input of shape ", SizeString(input),
                     " and num_groups=", s.group));
  }
  std::vector<Expr> sizes = SizesOf(input);
  ASSIGN_OR_RETURN(bool fits,
                   Decide(c, symbolic::Eq(NumelOf(sizes), NumelOf(nchw))));
  if (!fits) {
    return c.Error(absl::StrCat(
        "Expected the input of shape ", ShapeString(sizes),
        " to have N * C * HxW = ", ShapeString(nchw), " elements"));
  }
  const Value& weight = c.arg("weight");
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ws, Concrete(c, weight));
    if (ws.size() != 1 || ws[0] != s.channels) {
      return c.Error(absl::StrCat(
          "Expected weight to be a vector of size equal to the number of ",
          "channels in input, but got weight of shape ", SizeString(weight),
          " and input of shape ", SizeString(input)));
    }
  }
  if (input.tensor.defined()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, ConcreteSizes(c, nchw));
    s.n = dims[0];
    s.hxw = dims[2];
  }
  return s;
}

absl::StatusOr<Value> GroupNorm(const OpCall& c) {
  const Value& input = c.arg("input");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "GroupNormKernelImpl"));
  ASSIGN_OR_RETURN(GroupNormSetup s, SetupGroupNorm(c, input));
  if (!bias.is_none()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> bs, Concrete(c, bias));
    if (bs.size() != 1 || bs[0] != s.channels) {
      return c.Error(absl::StrCat(
          "Expected bias to be a vector of size equal to the number of ",
          "channels in input, but got bias of shape ", SizeString(bias),
          " and input of shape ", SizeString(input)));
    }
  }
  ASSIGN_OR_RETURN(double eps, c.arg("eps").AsDouble());
  DType sdt = StatsDType(dt, {&weight, &bias});
  bool running = input.tensor.defined();
  std::vector<Expr> stat_sizes = {c.arg("N").number, symbolic::Int(s.group)};
  ASSIGN_OR_RETURN(Value out,
                   SuggestedResult(c, running, dt, input, SizesOf(input)));
  ASSIGN_OR_RETURN(Value mean, Result(c, running, sdt, input, stat_sizes));
  ASSIGN_OR_RETURN(Value rstd, Result(c, running, sdt, input, stat_sizes));
  if (!running) return Value::List({out, mean, rstd});
  std::vector<double> x = RowMajorValues(input.tensor), y(x.size());
  std::vector<double> w = weight.is_none()
                              ? std::vector<double>(s.channels, 1.0)
                              : RowMajorValues(weight.tensor);
  std::vector<double> b = bias.is_none() ? std::vector<double>(s.channels, 0.0)
                                         : RowMajorValues(bias.tensor);
  int64_t per = s.channels / s.group * s.hxw;
  std::vector<double> m(s.n * s.group), r(s.n * s.group);
  for (int64_t k = 0; k < s.n * s.group; ++k) {
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < per; ++i) sum += x[k * per + i];
    double mu = sum / per;
    for (int64_t i = 0; i < per; ++i) {
      ss += (x[k * per + i] - mu) * (x[k * per + i] - mu);
    }
    m[k] = mu;
    r[k] = 1.0 / std::sqrt(ss / per + eps);
    for (int64_t i = 0; i < per; ++i) {
      int64_t ch = (k % s.group) * (s.channels / s.group) + i / s.hxw;
      y[k * per + i] = (x[k * per + i] - mu) * r[k] * w[ch] + b[ch];
    }
  }
  WriteRowMajor(out.tensor, y);
  WriteRowMajor(mean.tensor, m);
  WriteRowMajor(rstd.tensor, r);
  return Value::List({out, mean, rstd});
}

// The input gradient of a normalization over rows of `per` elements with
// per-row mean/rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// where g = dy * gamma.
void NormInputGrad(const std::vector<double>& x, const std::vector<double>& dy,
                   const std::vector<double>& mean,
                   const std::vector<double>& rstd, int64_t per,
                   const std::function<double(int64_t)>& gamma,
                   std::vector<double>& dx) {
  int64_t rows = per == 0 ? 0 : static_cast<int64_t>(x.size()) / per;
  for (int64_t k = 0; k < rows; ++k) {
    double sg = 0, sgx = 0;
    for (int64_t i = 0; i < per; ++i) {
      int64_t e = k * per + i;
      double g = dy[e] * gamma(e);
      double xhat = (x[e] - mean[k]) * rstd[k];
      sg += g;
      sgx += g * xhat;
    }
    for (int64_t i = 0; i < per; ++i) {
      int64_t e = k * per + i;
      double g = dy[e] * gamma(e);
      double xhat = (x[e] - mean[k]) * rstd[k];
      dx[e] = rstd[k] * (g - sg / per - xhat * sgx / per);
    }
  }
}

absl::StatusOr<Value> GroupNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& mean_v = c.arg("mean");
  const Value& rstd_v = c.arg("rstd");
  const Value& weight = c.arg("weight");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "GroupNormBackwardKernelImpl"));
  ASSIGN_OR_RETURN(GroupNormSetup s, SetupGroupNorm(c, input));
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), SizesOf(input)));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  Expr stats = symbolic::Mul(c.arg("N").number, symbolic::Int(s.group));
  for (const Value* v : {&mean_v, &rstd_v}) {
    ASSIGN_OR_RETURN(bool fits,
                     Decide(c, symbolic::Eq(NumelOf(SizesOf(*v)), stats)));
    if (!fits) {
      return c.Error(absl::StrCat("Expected mean and rstd to have N * group = ",
                                  symbolic::ToString(stats),
                                  " elements, but got ", SizeString(*v)));
    }
  }
  bool running = input.tensor.defined();
  DType pdt = weight.is_none() ? dt : DTypeOf(weight);
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0], Result(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k],
                     Result(c, running, pdt, input, {c.arg("C").number}));
  }
  if (!running) return Value::List(std::move(outs));
  std::vector<double> x = RowMajorValues(input.tensor),
                      dy = RowMajorValues(grad.tensor);
  std::vector<double> m = RowMajorValues(mean_v.tensor),
                      r = RowMajorValues(rstd_v.tensor);
  std::vector<double> w = weight.is_none()
                              ? std::vector<double>(s.channels, 1.0)
                              : RowMajorValues(weight.tensor);
  int64_t per = s.channels / s.group * s.hxw;
  auto channel = [&](int64_t e) { return (e / s.hxw) % s.channels; };
  std::vector<double> dx(x.size(), 0.0), dw(s.channels, 0.0),
      db(s.channels, 0.0);
  NormInputGrad(
      x, dy, m, r, per, [&](int64_t e) { return w[channel(e)]; }, dx);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t k = e / per;
    dw[channel(e)] += dy[e] * (x[e] - m[k]) * r[k];
    db[channel(e)] += dy[e];
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

absl::StatusOr<Value> LayerNormBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_out");
  const Value& input = c.arg("input");
  const Value& mean_v = c.arg("mean");
  const Value& rstd_v = c.arg("rstd");
  const Value& weight = c.arg("weight");
  const Value& bias = c.arg("bias");
  DType dt = DTypeOf(input);
  RETURN_IF_ERROR(NeedFloat(c, dt, "LayerNormBackwardKernelImpl"));
  ASSIGN_OR_RETURN(std::vector<int64_t> norm,
                   c.arg("normalized_shape").AsIntList());
  std::vector<Expr> is = SizesOf(input);
  int64_t axis =
      static_cast<int64_t>(is.size()) - static_cast<int64_t>(norm.size());
  bool fits = !norm.empty() && axis >= 0;
  for (size_t k = 0; fits && k < norm.size(); ++k) {
    ASSIGN_OR_RETURN(
        fits, Decide(c, symbolic::Eq(is[axis + k], symbolic::Int(norm[k]))));
  }
  if (!fits) {
    return c.Error(absl::StrCat(
        "Given normalized_shape=[", absl::StrJoin(norm, ", "),
        "], expected input with shape [*, ", absl::StrJoin(norm, ", "),
        "], but got input of size", SizeString(input)));
  }
  ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(grad), is));
  if (!same) {
    return c.Error(absl::StrCat("Expected grad_out of size ", SizeString(input),
                                ", but got ", SizeString(grad)));
  }
  Expr rows = NumelOf(std::vector<Expr>(is.begin(), is.begin() + axis));
  int64_t per = Product(norm);
  for (const Value* v : {&mean_v, &rstd_v}) {
    ASSIGN_OR_RETURN(bool ok,
                     Decide(c, symbolic::Eq(NumelOf(SizesOf(*v)), rows)));
    if (!ok) {
      return c.Error(absl::StrCat("Expected mean and rstd to have ",
                                  symbolic::ToString(rows),
                                  " elements, but got ", SizeString(*v)));
    }
  }
  ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(c, 3));
  const Value* params[] = {&weight, &bias};
  for (int k : {1, 2}) {
    const Value& p = *params[k - 1];
    if (!mask[k]) continue;
    if (p.is_none()) {
      return c.Error(absl::StrCat("output_mask[", k,
                                  "] asks for the gradient of ",
                                  k == 1 ? "weight" : "bias",
                                  ", which is None (unsupported: PyTorch "
                                  "fails there too)"));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> ps, Concrete(c, p));
    if (ps != norm) {
      return c.Error(absl::StrCat(
          "Expected ", k == 1 ? "weight" : "bias",
          " to be of same shape as normalized_shape, but got ",
          k == 1 ? "weight" : "bias", " of shape ", SizeString(p),
          " and normalized_shape = [", absl::StrJoin(norm, ", "), "]"));
    }
  }
  bool running = input.tensor.defined();
  std::vector<Value> outs(3, Value::None());
  if (mask[0]) {
    ASSIGN_OR_RETURN(outs[0], Result(c, running, dt, input, SizesOf(input)));
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    ASSIGN_OR_RETURN(outs[k], Result(c, running, DTypeOf(*params[k - 1]), input,
                                     SizesOf(*params[k - 1])));
  }
  if (!running) return Value::List(std::move(outs));
  std::vector<double> x = RowMajorValues(input.tensor),
                      dy = RowMajorValues(grad.tensor);
  std::vector<double> m = RowMajorValues(mean_v.tensor),
                      r = RowMajorValues(rstd_v.tensor);
  std::vector<double> w = weight.is_none() ? std::vector<double>(per, 1.0)
                                           : RowMajorValues(weight.tensor);
  std::vector<double> dx(x.size(), 0.0), dw(per, 0.0), db(per, 0.0);
  NormInputGrad(
      x, dy, m, r, per, [&](int64_t e) { return w[e % per]; }, dx);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t k = e / per;
    dw[e % per] += dy[e] * (x[e] - m[k]) * r[k];
    db[e % per] += dy[e];
  }
  if (mask[0]) WriteRowMajor(outs[0].tensor, dx);
  if (mask[1]) WriteRowMajor(outs[1].tensor, dw);
  if (mask[2]) WriteRowMajor(outs[2].tensor, db);
  return Value::List(std::move(outs));
}

// ---------------------------------------------------------------------------
// Upsampling.

// Output sizes of upsample_*2d.vec and the per-dim scales (negative when
// not given).
struct UpsampleSetup {
  std::vector<Expr> sizes;  // [N, C, H_out, W_out]
  int64_t n = 0, channels = 0, in[2] = {0, 0}, out[2] = {0, 0};
  double scale[2] = {-1, -1};
};

absl::StatusOr<UpsampleSetup> SetupUpsample(const OpCall& c,
                                            absl::string_view kernel) {
  const Value& input = c.arg(0);
  const Value& osize = c.arg("output_size");
  // The .vec overloads take scale_factors; the others an output_size and
  // optional per-dim scales (which only change the index computation).
  bool vec = c.op().schema.ArgumentIndex("scale_factors") >= 0;
  const Value& scales = vec ? c.arg("scale_factors") : Value::None();
  UpsampleSetup s;
  if (!vec) {
    int k = 0;
    for (const char* name : {"scales_h", "scales_w"}) {
      const Value& v = c.arg(name);
      if (!v.is_none()) {
        ASSIGN_OR_RETURN(s.scale[k], v.AsDouble());
      }
      ++k;
    }
  }
  if (osize.is_none() == scales.is_none()) {
    return c.Error("Must specify exactly one of output_size and scale_factors");
  }
  std::vector<Expr> in = SizesOf(input);
  if (in.size() != 4) {
    return c.Error(absl::StrCat("It is expected input_size equals to 4, but ",
                                "got size ", in.size()));
  }
  RETURN_IF_ERROR(NeedFloat(c, DTypeOf(input), kernel));
  ASSIGN_OR_RETURN(std::vector<int64_t> is, ConcreteSizes(c, {in[2], in[3]}));
  s.in[0] = is[0];
  s.in[1] = is[1];
  if (input.tensor.defined()) {
    s.n = input.tensor.sizes()[0];
    s.channels = input.tensor.sizes()[1];
  }
  s.sizes = {in[0], in[1]};
  if (!osize.is_none()) {
    ASSIGN_OR_RETURN(std::vector<Expr> o, osize.AsExprList());
    if (o.size() != 2) {
      return c.Error(absl::StrCat("It is expected output_size equals to 2, ",
                                  "but got size ", o.size()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> oc, ConcreteSizes(c, o));
    s.out[0] = oc[0];
    s.out[1] = oc[1];
    s.sizes.push_back(o[0]);
    s.sizes.push_back(o[1]);
  } else {
    std::vector<double> f;
    for (const Value& e : scales.list) {
      ASSIGN_OR_RETURN(double v, e.AsDouble());
      f.push_back(v);
    }
    if (f.size() != 2) {
      return c.Error(absl::StrCat("It is expected scale_factors equals to 2, ",
                                  "but got size ", f.size()));
    }
    for (int d = 0; d < 2; ++d) {
      s.scale[d] = f[d];
      // (A NaN or infinite factor: the lowest or the largest size, which
      // the checks below and the memory limit refuse.)
      s.out[d] = FloorClamped(static_cast<double>(s.in[d]) * f[d],
                              std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max());
      s.sizes.push_back(symbolic::Int(s.out[d]));
    }
  }
  if (s.in[0] <= 0 || s.in[1] <= 0 || s.out[0] <= 0 || s.out[1] <= 0) {
    return c.Error(absl::StrCat(
        "Input and output sizes should be greater than 0, but got input (H: ",
        s.in[0], ", W: ", s.in[1], ") output (H: ", s.out[0], ", W: ", s.out[1],
        ")"));
  }
  return s;
}

// PyTorch's nearest_idx (computed in float, as PyTorch does).
int64_t NearestIndex(int64_t o, int64_t in, int64_t out, double scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  float s = scale > 0 ? static_cast<float>(1.0 / scale)
                      : static_cast<float>(in) / static_cast<float>(out);
  return FloorClamped(static_cast<float>(o) * s, 0, in - 1);
}

absl::StatusOr<Value> UpsampleNearest(const OpCall& c) {
  const Value& input = c.arg(0);
  ASSIGN_OR_RETURN(UpsampleSetup s,
                   SetupUpsample(c, "upsample_nearest2d_channels_last"));
  bool running = input.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   SuggestedResult(c, running, DTypeOf(input), input, s.sizes));
  if (!running) return out;
  std::vector<double> x = RowMajorValues(input.tensor), y;
  y.reserve(out.tensor.numel());
  for (int64_t p = 0; p < s.n * s.channels; ++p) {
    for (int64_t h = 0; h < s.out[0]; ++h) {
      int64_t ih = NearestIndex(h, s.in[0], s.out[0], s.scale[0]);
      for (int64_t w = 0; w < s.out[1]; ++w) {
        int64_t iw = NearestIndex(w, s.in[1], s.out[1], s.scale[1]);
        y.push_back(x[(p * s.in[0] + ih) * s.in[1] + iw]);
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

// PyTorch's linear source index and weights for output position `o`.
void LinearSource(int64_t o, int64_t in, int64_t out, double scale,
                  bool align_corners, int64_t* i0, int64_t* i1,
                  double* lambda1) {
  if (out == in) {
    *i0 = *i1 = o;
    *lambda1 = 0;
    return;
  }
  double ratio;
  if (align_corners) {
    ratio = out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0;
  } else {
    ratio = scale > 0 ? 1.0 / scale : static_cast<double>(in) / out;
  }
  double src = align_corners ? ratio * o : ratio * (o + 0.5) - 0.5;
  if (!align_corners && src < 0) src = 0;
  *i0 = FloorClamped(src, 0, in - 1);
  *lambda1 = std::min(std::max(src - *i0, 0.0), 1.0);
  *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);
}

absl::StatusOr<Value> UpsampleBilinear(const OpCall& c) {
  const Value& input = c.arg(0);
  ASSIGN_OR_RETURN(bool align, c.arg("align_corners").AsBool());
  ASSIGN_OR_RETURN(UpsampleSetup s,
                   SetupUpsample(c, "upsample_bilinear2d_channels_last"));
  bool running = input.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   SuggestedResult(c, running, DTypeOf(input), input, s.sizes));
  if (!running) return out;
  std::vector<double> x = RowMajorValues(input.tensor), y;
  y.reserve(out.tensor.numel());
  for (int64_t p = 0; p < s.n * s.channels; ++p) {
    const double* plane = x.data() + p * s.in[0] * s.in[1];
    for (int64_t h = 0; h < s.out[0]; ++h) {
      int64_t h0, h1;
      double lh;
      LinearSource(h, s.in[0], s.out[0], s.scale[0], align, &h0, &h1, &lh);
      for (int64_t w = 0; w < s.out[1]; ++w) {
        int64_t w0, w1;
        double lw;
        LinearSource(w, s.in[1], s.out[1], s.scale[1], align, &w0, &w1, &lw);
        auto at = [&](int64_t a, int64_t b) { return plane[a * s.in[1] + b]; };
        y.push_back((1 - lh) * ((1 - lw) * at(h0, w0) + lw * at(h0, w1)) +
                    lh * ((1 - lw) * at(h1, w0) + lw * at(h1, w1)));
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

// ---------------------------------------------------------------------------
// Padding.

// reflection_pad{1,2,3}d / replication_pad{1,2,3}d: the padding list is
// (left, right, top, bottom, front, back), last dim first. Their backwards
// (`backward`: grad_output the padded result's gradient) add each
// gradient element into the input element it was read from, in zeros laid
// out as the input suggests.
absl::StatusOr<Value> Pad(const OpCall& c, int nsp, bool reflect,
                          bool backward = false) {
  const Value& self = c.arg("self");
  std::string name =
      absl::StrCat(reflect ? "reflection_pad" : "replication_pad", nsp, "d");
  ASSIGN_OR_RETURN(std::vector<Expr> pad_e, c.arg("padding").AsExprList());
  if (static_cast<int>(pad_e.size()) != 2 * nsp) {
    return c.Error(absl::StrCat("padding size is expected to be ", 2 * nsp));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> pad, ConcreteSizes(c, pad_e));
  std::vector<Expr> sizes = SizesOf(self);
  int64_t rank = static_cast<int64_t>(sizes.size());
  bool ok = rank == nsp + 1 || rank == nsp + 2;
  for (int64_t d = rank - nsp - 1; ok && d < rank; ++d) {
    if (d >= 0 && sizes[d].is_constant(0)) ok = false;
  }
  if (!ok) {
    return c.Error(absl::StrCat(
        "Expected ", nsp + 1, "D or ", nsp + 2,
        "D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input, but got: ",
        ShapeString(sizes)));
  }
  if (DTypeOf(self) == DType::kBool) {
    return c.Error(absl::StrCat("\"", name, "\" not implemented for 'Bool'"));
  }
  ASSIGN_OR_RETURN(
      std::vector<int64_t> in,
      ConcreteSizes(c, std::vector<Expr>(sizes.end() - nsp, sizes.end())));
  static const char* kDimNames[] = {"D", "H", "W"};
  std::vector<int64_t> outn(nsp);
  std::vector<Expr> out_sizes(sizes.begin(), sizes.end() - nsp);
  std::vector<std::string> in_desc, out_desc;
  bool small = false;
  for (int d = 0; d < nsp; ++d) {
    // Spatial dim d (outermost first) is padded by pad[2 * (nsp - 1 - d)...].
    int64_t lo = pad[2 * (nsp - 1 - d)], hi = pad[2 * (nsp - 1 - d) + 1];
    if (reflect && (lo >= in[d] || hi >= in[d])) {
      return c.Error(absl::StrCat(
          "Argument #", 2 + 2 * nsp,
          ": Padding size should be less than the corresponding input "
          "dimension, but got: padding (",
          lo, ", ", hi, ") at dimension ", rank - nsp + d, " of input ",
          ShapeString(sizes)));
    }
    outn[d] = in[d] + lo + hi;
    small = small || outn[d] < 1;
    const char* dn = kDimNames[3 - nsp + d];
    in_desc.push_back(absl::StrCat(dn, ": ", in[d]));
    out_desc.push_back(absl::StrCat(dn, ": ", outn[d]));
    out_sizes.push_back(symbolic::Add(
        sizes[rank - nsp + d],
        symbolic::Add(pad_e[2 * (nsp - 1 - d)], pad_e[2 * (nsp - 1 - d) + 1])));
  }
  if (small) {
    if (reflect) {
      return c.Error(absl::StrCat("input (", absl::StrJoin(in_desc, ", "),
                                  ") is too small. Calculated output ",
                                  absl::StrJoin(out_desc, " ")));
    }
    return c.Error(absl::StrCat("Calculated output ",
                                absl::StrJoin(out_desc, " "),
                                " must be >= 1 in every dimension (input ",
                                absl::StrJoin(in_desc, ", "), ")"));
  }
  bool running = self.tensor.defined();
  if (backward) {
    const Value& grad = c.arg("grad_output");
    ASSIGN_OR_RETURN(bool fits, SameShape(c, SizesOf(grad), out_sizes));
    if (!fits) {
      return c.Error(absl::StrCat("grad_output of size ", SizeString(grad),
                                  " is not the padded size ",
                                  ShapeString(out_sizes)));
    }
    ASSIGN_OR_RETURN(Value gin,
                     SuggestedResult(c, running, DTypeOf(self), self, sizes));
    if (!running) return gin;
    // Summed in double, rounded once.
    const std::vector<int64_t>& gs = gin.tensor.sizes();
    std::vector<double> acc(gin.tensor.numel(), 0.0);
    ForEachIndex(grad.tensor.sizes(), [&](absl::Span<const int64_t> i) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t x = i[d];
        const int k = static_cast<int>(d - (rank - nsp));
        if (k >= 0) {
          x -= pad[2 * (nsp - 1 - k)];
          const int64_t n = in[k];
          if (reflect) {
            if (x < 0) x = -x;
            if (x >= n) x = 2 * (n - 1) - x;
          } else {
            x = std::min(std::max<int64_t>(x, 0), n - 1);
          }
        }
        at = at * gs[d] + x;
      }
      acc[at] += LoadDouble(grad.tensor, i);
    });
    WriteRowMajor(gin.tensor, acc);
    return gin;
  }
  ASSIGN_OR_RETURN(Value out,
                   SuggestedResult(c, running, DTypeOf(self), self, out_sizes));
  if (!running) return out;
  const Tensor& t = self.tensor;
  std::vector<int64_t> src(rank);
  ForEachIndex(out.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    for (int64_t d = 0; d < rank; ++d) src[d] = i[d];
    for (int d = 0; d < nsp; ++d) {
      int64_t x = i[rank - nsp + d] - pad[2 * (nsp - 1 - d)];
      int64_t n = in[d];
      if (reflect) {
        if (x < 0) x = -x;
        if (x >= n) x = 2 * (n - 1) - x;
      } else {
        x = std::min(std::max<int64_t>(x, 0), n - 1);
      }
      src[rank - nsp + d] = x;
    }
    CopyElement(out.tensor, i, t, src);
  });
  return out;
}

// ---------------------------------------------------------------------------
// col2im.

absl::StatusOr<Value> Col2Im(const OpCall& c) {
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(std::vector<Expr> osize_e,
                   c.arg("output_size").AsExprList());
  ASSIGN_OR_RETURN(std::vector<int64_t> k,
                   IntParam(c, "kernel_size", 2, "kernel_size"));
  ASSIGN_OR_RETURN(std::vector<int64_t> dil,
                   IntParam(c, "dilation", 2, "dilation"));
  ASSIGN_OR_RETURN(std::vector<int64_t> pad,
                   IntParam(c, "padding", 2, "padding"));
  ASSIGN_OR_RETURN(std::vector<int64_t> st, IntParam(c, "stride", 2, "stride"));
  if (osize_e.size() != 2) {
    return c.Error(
        absl::StrCat("It is expected output_size equals to 2, but got size ",
                     osize_e.size()));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> os, ConcreteSizes(c, osize_e));
  for (int d = 0; d < 2; ++d) {
    if (k[d] <= 0 || dil[d] <= 0 || st[d] <= 0 || pad[d] < 0) {
      return c.Error(absl::StrCat(
          "kernel size, dilation and stride should be greater than zero and ",
          "padding non-negative, but got kernel_size=(", k[0], ", ", k[1],
          "), dilation=(", dil[0], ", ", dil[1], "), padding=(", pad[0], ", ",
          pad[1], "), stride=(", st[0], ", ", st[1], ")"));
    }
  }
  std::vector<Expr> sizes = SizesOf(self);
  int64_t rank = static_cast<int64_t>(sizes.size());
  bool ok = rank == 2 || rank == 3;
  for (int64_t d = rank - 2; ok && d < rank; ++d) {
    if (sizes[d].is_constant(0)) ok = false;
  }
  if (!ok) {
    return c.Error(absl::StrCat(
        "Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
        "batch size and non-zero dimensions for input, but got: ",
        ShapeString(sizes)));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> is,
                   ConcreteSizes(c, {sizes[rank - 2], sizes[rank - 1]}));
  int64_t rows = is[0], len = is[1];
  if (rows % (k[0] * k[1]) != 0) {
    return c.Error(absl::StrCat(
        "Expected size of input's dimension ", rank - 2,
        " to be divisible by the product of kernel_size, but got input.size(",
        rank - 2, ")=", rows, " and kernel_size=(", k[0], ", ", k[1], ")"));
  }
  int64_t blocks[2];
  for (int d = 0; d < 2; ++d) {
    blocks[d] = (os[d] + 2 * pad[d] - dil[d] * (k[d] - 1) - 1) / st[d] + 1;
  }
  if (blocks[0] < 1 || blocks[1] < 1 || len != blocks[0] * blocks[1]) {
    return c.Error(absl::StrCat(
        "Given output_size=(", os[0], ", ", os[1], "), kernel_size=(", k[0],
        ", ", k[1], "), dilation=(", dil[0], ", ", dil[1], "), padding=(",
        pad[0], ", ", pad[1], "), stride=(", st[0], ", ", st[1],
        "), expected size of input's dimension ", rank - 1,
        " to match the calculated number of sliding blocks ", blocks[0], " * ",
        blocks[1], " = ", blocks[0] * blocks[1], ", but got input.size(",
        rank - 1, ")=", len, "."));
  }
  RETURN_IF_ERROR(NeedFloat(c, DTypeOf(self), "col2im_out_cpu"));
  int64_t channels = rows / (k[0] * k[1]);
  std::vector<Expr> out_sizes;
  if (rank == 3) out_sizes.push_back(sizes[0]);
  out_sizes.push_back(symbolic::Int(channels));
  out_sizes.push_back(osize_e[0]);
  out_sizes.push_back(osize_e[1]);
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   Result(c, running, DTypeOf(self), self, out_sizes));
  if (!running) return out;
  int64_t batch = rank == 3 ? self.tensor.sizes()[0] : 1;
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<double> y(batch * channels * os[0] * os[1], 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t ch = r / (k[0] * k[1]), ki = (r / k[1]) % k[0], kj = r % k[1];
      for (int64_t bh = 0; bh < blocks[0]; ++bh) {
        int64_t h = bh * st[0] - pad[0] + ki * dil[0];
        if (h < 0 || h >= os[0]) continue;
        for (int64_t bw = 0; bw < blocks[1]; ++bw) {
          int64_t w = bw * st[1] - pad[1] + kj * dil[1];
          if (w < 0 || w >= os[1]) continue;
          y[((n * channels + ch) * os[0] + h) * os[1] + w] +=
              x[(n * rows + r) * len + bh * blocks[1] + bw];
        }
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

// ---------------------------------------------------------------------------
// Embeddings.

absl::Status NeedIndices(const OpCall& c, const Value& v, absl::string_view arg,
                         absl::string_view fn) {
  DType d = DTypeOf(v);
  if (d == DType::kInt64 || d == DType::kInt32) return absl::OkStatus();
  return c.Error(absl::StrCat(
      "Expected tensor for argument ", arg,
      " to have one of the following scalar types: Long, Int; but got torch.",
      ScalarTypeName(d), "Tensor instead (while checking arguments for ", fn,
      ")"));
}

absl::StatusOr<Value> EmbeddingDenseBackward(const OpCall& c) {
  const Value& grad = c.arg("grad_output");
  const Value& indices = c.arg("indices");
  RETURN_IF_ERROR(
      NeedIndices(c, indices, "#2 'indices'", "embedding_backward"));
  const Value& nw = c.arg("num_weights");
  if (!nw.is_number()) return c.Error("num_weights must be an int");
  ASSIGN_OR_RETURN(int64_t padding_idx, c.arg("padding_idx").AsInt());
  ASSIGN_OR_RETURN(bool scale, c.arg("scale_grad_by_freq").AsBool());
  if (DTypeOf(grad) == DType::kBool) {
    return c.Error("\"embedding_dense_backward\" not implemented for 'Bool'");
  }
  std::vector<Expr> gsz = SizesOf(grad);
  if (gsz.empty()) return c.Error("grad_output must have at least 1 dim");
  ASSIGN_OR_RETURN(
      bool fits, Decide(c, symbolic::Eq(NumelOf(gsz),
                                        symbolic::Mul(NumelOf(SizesOf(indices)),
                                                      gsz.back()))));
  if (!fits) {
    return c.Error(absl::StrCat(
        "Expected grad_output to have the indices' shape ", SizeString(indices),
        " plus the embedding dim, but got ", SizeString(grad)));
  }
  bool running = grad.tensor.defined();
  ASSIGN_OR_RETURN(Value out, Result(c, running, DTypeOf(grad), grad,
                                     {nw.number, gsz.back()}));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> nwc, ConcreteSizes(c, {nw.number}));
  int64_t dim = grad.tensor.sizes().back();
  std::vector<double> gy = RowMajorValues(grad.tensor);
  std::vector<int64_t> ix = IntElements(indices.tensor);
  std::vector<double> gw(nwc[0] * dim, 0.0);
  std::vector<int64_t> counts(nwc[0], 0);
  for (int64_t i : ix) {
    if (i < 0 || i >= nwc[0]) {
      return c.Error(absl::StrCat("index ", i, " is out of bounds for ",
                                  "num_weights ", nwc[0]));
    }
    ++counts[i];
  }
  for (size_t k = 0; k < ix.size(); ++k) {
    int64_t i = ix[k];
    if (i == padding_idx) continue;
    double f = scale ? 1.0 / counts[i] : 1.0;
    for (int64_t d = 0; d < dim; ++d) gw[i * dim + d] += gy[k * dim + d] * f;
  }
  WriteRowMajor(out.tensor, gw);
  return out;
}

// _embedding_bag (CPU): (output, offset2bag, bag_size, max_indices) with
// PyTorch's shapes. offset2bag is empty on PyTorch's fast sum path (float32,
// float16 or bfloat16 weight with unit stride in dim 1, no padding_idx: the
// CPU kernel's rule; PyTorch's meta function leaves bfloat16 out).
// With include_last_offset, offsets should end at len(indices) (PyTorch's
// fast and slow paths disagree about indices past the last offset; here
// they are in no bag; offset2bag gives them the last bag, as PyTorch).
absl::StatusOr<Value> EmbeddingBag(const OpCall& c) {
  const Value& weight = c.arg("weight");
  const Value& indices = c.arg("indices");
  const Value& offsets = c.arg("offsets");
  const Value& psw = c.arg("per_sample_weights");
  ASSIGN_OR_RETURN(int64_t mode, c.arg("mode").AsInt());
  ASSIGN_OR_RETURN(bool last, c.arg("include_last_offset").AsBool());
  ASSIGN_OR_RETURN(int64_t padding_idx, c.arg("padding_idx").AsInt());
  RETURN_IF_ERROR(NeedIndices(c, indices, "#1 'indices'", "embedding_bag"));
  RETURN_IF_ERROR(NeedIndices(c, offsets, "#1 'offsets'", "embedding_bag"));
  if (DTypeOf(indices) != DTypeOf(offsets)) {
    return c.Error(absl::StrCat(
        "expected indices and offsets to have the same dtype, but got ",
        ScalarTypeName(DTypeOf(indices)), " and ",
        ScalarTypeName(DTypeOf(offsets))));
  }
  if (mode < 0 || mode > 2) {
    return c.Error("`mode` must be sum, mean, or max.");
  }
  if (!psw.is_none() && mode != 0) {
    return c.Error(
        "embedding_bag: per_sample_weights only supported with mode='sum'");
  }
  if (RankOf(weight) != 2) {
    return c.Error(
        absl::StrCat("weight has to be a 2D Tensor, but got "
                     "Tensor of dimension ",
                     RankOf(weight)));
  }
  if (RankOf(indices) != 1 || RankOf(offsets) != 1) {
    return c.Error(absl::StrCat(
        "expected 1-d indices and offsets, but got indices of size ",
        SizeString(indices), " and offsets of size ", SizeString(offsets),
        " (2-d indices are unsupported here: torch.nn.functional.embedding_bag "
        "flattens them before calling _embedding_bag)"));
  }
  DType wdt = DTypeOf(weight);
  RETURN_IF_ERROR(NeedFloat(c, wdt, "embedding_bag"));
  Expr nb = symbolic::Sub(SizesOf(offsets)[0], symbolic::Int(last ? 1 : 0));
  ASSIGN_OR_RETURN(bool no_bags, Decide(c, symbolic::Lt(nb, symbolic::Int(0))));
  if (no_bags) {
    return c.Error("include_last_offset needs at least one offset");
  }
  if (!psw.is_none()) {
    ASSIGN_OR_RETURN(bool same, SameShape(c, SizesOf(psw), SizesOf(indices)));
    if (!same) {
      return c.Error(absl::StrCat(
          "embedding_bag: If per_sample_weights (", SizeString(psw),
          ") is not None, then it must have the same shape as the input (",
          SizeString(indices), ")"));
    }
    if (DTypeOf(psw) != wdt) {
      return c.Error(absl::StrCat("expected scalar type ", ScalarTypeName(wdt),
                                  " but found ", ScalarTypeName(DTypeOf(psw))));
    }
  }
  // PyTorch's is_fast_path (meta and CPU kernel agree on it).
  auto unit = [](const Expr& e) { return e.is_constant(1); };
  std::vector<Expr> wst = StridesOf(weight);
  bool fast = (wdt == DType::kFloat32 || wdt == DType::kFloat16 ||
               wdt == DType::kBFloat16) &&
              unit(wst[1]) && padding_idx < 0 &&
              (psw.is_none() || unit(StridesOf(psw)[0]));
  bool sum_fast = mode == 0 && fast;
  DType idt = DTypeOf(offsets);
  bool running = weight.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   Result(c, running, wdt, weight, {nb, SizesOf(weight)[1]}));
  ASSIGN_OR_RETURN(Value o2b,
                   Result(c, running, idt, weight,
                          {sum_fast ? symbolic::Int(0) : SizesOf(indices)[0]}));
  ASSIGN_OR_RETURN(Value bag_size, Result(c, running, idt, weight, {nb}));
  std::vector<Expr> mi_sizes = {nb};
  if (mode == 2) mi_sizes.push_back(SizesOf(weight)[1]);
  ASSIGN_OR_RETURN(Value max_idx, Result(c, running, idt, weight, mi_sizes));
  if (!running) return Value::List({out, o2b, bag_size, max_idx});
  std::vector<int64_t> ix = IntElements(indices.tensor),
                       off = IntElements(offsets.tensor);
  const std::vector<int64_t>& ws = weight.tensor.sizes();
  int64_t n = indices.tensor.sizes()[0], dim = ws[1];
  int64_t num_bags = out.tensor.sizes()[0];
  if (!off.empty() && off[0] != 0) {
    return c.Error(absl::StrCat(
        "offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
        "has to start from position 0. However, got ",
        off[0]));
  }
  if (!off.empty() && off.back() > n) {
    return c.Error(absl::StrCat("offsets[-1] can not be greater than input's ",
                                "length ", n, " but got offsets[-1] of ",
                                off.back()));
  }
  for (size_t b = 1; b < off.size(); ++b) {
    if (off[b] < off[b - 1]) {
      return c.Error("offsets must be non-decreasing");
    }
  }
  for (int64_t i : ix) {
    if (i < 0 || i >= ws[0]) {
      return c.Error(absl::StrCat("embedding_bag: index ", i,
                                  " out of range [0, ", ws[0], ")"));
    }
  }
  std::vector<double> w = RowMajorValues(weight.tensor);
  std::vector<double> pw =
      psw.is_none() ? std::vector<double>(n, 1.0) : RowMajorValues(psw.tensor);
  std::vector<double> y(num_bags * dim, 0.0);
  std::vector<int64_t> bags(n, std::max<int64_t>(num_bags - 1, 0)),
      sizes(num_bags, 0), mi(num_bags * (mode == 2 ? dim : 1), 0);
  for (int64_t b = 0; b < num_bags; ++b) {
    // Bag b is [offsets[b], offsets[b + 1]); without include_last_offset the
    // last bag runs to the end of indices.
    int64_t start = off[b];
    int64_t end = b + 1 < static_cast<int64_t>(off.size()) ? off[b + 1] : n;
    int64_t count = 0;
    for (int64_t k = start; k < end; ++k) {
      bags[k] = b;
      int64_t i = ix[k];
      if (i == padding_idx) continue;
      for (int64_t d = 0; d < dim; ++d) {
        double v = w[i * dim + d];
        double& acc = y[b * dim + d];
        if (mode == 2) {
          if (count == 0 || v > acc) {
            acc = v;
            mi[b * dim + d] = i;
          }
        } else {
          acc += v * pw[k];
        }
      }
      ++count;
    }
    if (mode == 1 && count > 0) {
      for (int64_t d = 0; d < dim; ++d) y[b * dim + d] /= count;
    }
    if (mode != 0) sizes[b] = count;
  }
  WriteRowMajor(out.tensor, y);
  if (!sum_fast) FillInts(o2b.tensor, bags);
  FillInts(bag_size.tensor, sizes);
  // Outside max mode PyTorch's max_indices holds bag_size's values.
  FillInts(max_idx.tensor, mode == 2 ? mi : sizes);
  return Value::List({out, o2b, bag_size, max_idx});
}

// ---------------------------------------------------------------------------
// Distances.

// The p-norm of the differences of two rows.
double PDistance(const double* a, const double* b, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; ++k) {
    double d = std::fabs(a[k] - b[k]);
    if (p == 0) {
      acc += d != 0 ? 1 : 0;
    } else if (std::isinf(p)) {
      acc = std::max(acc, d);
    } else {
      acc += std::pow(d, p);
    }
  }
  if (p == 0 || std::isinf(p)) return acc;
  return std::pow(acc, 1.0 / p);
}

absl::StatusOr<Value> Cdist(const OpCall& c) {
  const Value& x1 = c.arg("x1");
  const Value& x2 = c.arg("x2");
  ASSIGN_OR_RETURN(double p, c.arg("p").AsDouble());
  for (const Value* v : {&x1, &x2}) {
    if (RankOf(*v) < 2) {
      return c.Error(absl::StrCat("cdist only supports at least 2D tensors, ",
                                  v == &x1 ? "X1" : "X2", " got: ", RankOf(*v),
                                  "D"));
    }
  }
  std::vector<Expr> s1 = SizesOf(x1), s2 = SizesOf(x2);
  ASSIGN_OR_RETURN(bool cols, Decide(c, symbolic::Eq(s1.back(), s2.back())));
  if (!cols) {
    return c.Error(absl::StrCat(
        "X1 and X2 must have the same number of columns. X1: ",
        symbolic::ToString(s1.back()), " X2: ", symbolic::ToString(s2.back())));
  }
  for (const Value* v : {&x1, &x2}) {
    if (!IsFloatingPoint(DTypeOf(*v))) {
      return c.Error(absl::StrCat("cdist only supports floating-point dtypes, ",
                                  v == &x1 ? "X1" : "X2",
                                  " got: ", ScalarTypeName(DTypeOf(*v))));
    }
  }
  if (DTypeOf(x1) != DTypeOf(x2)) {
    return c.Error(absl::StrCat("expected scalar type ",
                                ScalarTypeName(DTypeOf(x1)), " but found ",
                                ScalarTypeName(DTypeOf(x2))));
  }
  if (p < 0) return c.Error("cdist only supports non-negative p values");
  std::vector<Expr> b1(s1.begin(), s1.end() - 2), b2(s2.begin(), s2.end() - 2);
  ASSIGN_OR_RETURN(std::vector<Expr> batch, BroadcastShapes(c, {b1, b2}));
  std::vector<Expr> out_sizes = batch;
  out_sizes.push_back(s1[s1.size() - 2]);
  out_sizes.push_back(s2[s2.size() - 2]);
  bool running = x1.tensor.defined();
  ASSIGN_OR_RETURN(Value out, Result(c, running, DTypeOf(x1), x1, out_sizes));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> bs, ConcreteSizes(c, batch));
  ASSIGN_OR_RETURN(std::vector<int64_t> c1, Concrete(c, x1));
  ASSIGN_OR_RETURN(std::vector<int64_t> c2, Concrete(c, x2));
  int64_t rows1 = c1[c1.size() - 2], rows2 = c2[c2.size() - 2], m = c1.back();
  std::vector<int64_t> e1 = bs, e2 = bs;
  e1.push_back(rows1);
  e1.push_back(m);
  e2.push_back(rows2);
  e2.push_back(m);
  absl::StatusOr<Tensor> v1 = BroadcastView(x1.tensor, e1);
  absl::StatusOr<Tensor> v2 = BroadcastView(x2.tensor, e2);
  if (!v1.ok()) return c.Error(v1.status().message());
  if (!v2.ok()) return c.Error(v2.status().message());
  std::vector<double> a = RowMajorValues(*v1), b = RowMajorValues(*v2);
  int64_t nb = Product(bs);
  std::vector<double> y;
  y.reserve(nb * rows1 * rows2);
  for (int64_t k = 0; k < nb; ++k) {
    for (int64_t i = 0; i < rows1; ++i) {
      for (int64_t j = 0; j < rows2; ++j) {
        y.push_back(PDistance(a.data() + (k * rows1 + i) * m,
                              b.data() + (k * rows2 + j) * m, m, p));
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

absl::StatusOr<Value> Pdist(const OpCall& c) {
  const Value& self = c.arg("self");
  ASSIGN_OR_RETURN(double p, c.arg("p").AsDouble());
  if (RankOf(self) != 2) {
    return c.Error(absl::StrCat(
        "pdist only supports 2D tensors, got: ", RankOf(self), "D"));
  }
  if (!IsFloatingPoint(DTypeOf(self))) {
    return c.Error("pdist only supports floating-point dtypes");
  }
  if (p < 0) return c.Error("pdist only supports non-negative p values");
  Expr rows = SizesOf(self)[0];
  ASSIGN_OR_RETURN(
      Expr pairs,
      symbolic::FloorDiv(
          symbolic::Mul(rows, symbolic::Sub(rows, symbolic::Int(1))),
          symbolic::Int(2)));
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out, Result(c, running, DTypeOf(self), self, {pairs}));
  if (!running) return out;
  std::vector<double> x = RowMajorValues(self.tensor);
  int64_t n = self.tensor.sizes()[0], m = self.tensor.sizes()[1];
  std::vector<double> y;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      y.push_back(PDistance(x.data() + i * m, x.data() + j * m, m, p));
    }
  }
  WriteRowMajor(out.tensor, y);
  return out;
}

// ---------------------------------------------------------------------------
// Losses.

// PyTorch's Reduction enum: 0 none, 1 mean, 2 sum.
absl::StatusOr<int64_t> ReductionArg(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t reduction, c.arg("reduction").AsInt());
  if (reduction < 0 || reduction > 2) {
    return c.Error(
        absl::StrCat(reduction, " is not a valid value for reduction"));
  }
  return reduction;
}

// nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight): -weight[t] * self[n, t] per sample (0 where t is
// ignore_index), summed, or divided by the summed weights (mean). A 1-d
// self is one sample with a 0-d output whatever the reduction; with a 2-d
// self and no reduction, the output is [N] and total_weight 0.
absl::StatusOr<Value> NllLossForward(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  ASSIGN_OR_RETURN(int64_t ignore, c.arg("ignore_index").AsInt());
  int64_t rank = RankOf(self);
  if (rank < 1 || rank > 2) return c.Error("input tensor should be 1D or 2D");
  if (RankOf(target) > 1) {
    return c.Error(
        "0D or 1D target tensor expected, multi-target not supported");
  }
  DType tdt = DTypeOf(target);
  if (tdt != DType::kInt64 && tdt != DType::kUInt8) {
    return c.Error(
        absl::StrCat("expected target dtype to be Long or Byte, but got ",
                     ScalarTypeName(tdt)));
  }
  DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "nll_loss_out_frame"));
  std::vector<Expr> in = SizesOf(self), ts = SizesOf(target);
  bool batched = rank == 2;
  if (batched) {
    ASSIGN_OR_RETURN(
        bool same,
        Decide(c, symbolic::Eq(in[0], ts.empty() ? symbolic::Int(1) : ts[0])));
    if (!same || ts.empty()) {
      return c.Error(absl::StrCat("size mismatch (got input: ", ShapeString(in),
                                  ", target: ", ShapeString(ts), ")"));
    }
  } else if (!ts.empty()) {  // as PyTorch: a 1-d target must match self
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(in[0], ts[0])));
    if (!same) {
      return c.Error(absl::StrCat("size mismatch (got input: ", ShapeString(in),
                                  ", target: ", ShapeString(ts), ")"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> classes, ConcreteSizes(c, {in.back()}));
  int64_t n_classes = classes[0];
  RETURN_IF_ERROR(VectorOf(c, weight, n_classes, "weight"));
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes;
  if (batched && reduction == 0) out_sizes.push_back(in[0]);
  ASSIGN_OR_RETURN(Value out, Result(c, running, dt, self, out_sizes));
  ASSIGN_OR_RETURN(Value total, Result(c, running, dt, self, {}));
  if (!running) return Value::List({out, total});
  std::vector<double> x = RowMajorValues(self.tensor);
  std::vector<int64_t> t = IntElements(target.tensor);
  std::vector<double> w = weight.is_none() ? std::vector<double>(n_classes, 1.0)
                                           : RowMajorValues(weight.tensor);
  int64_t n = batched ? self.tensor.sizes()[0] : 1;
  std::vector<double> losses(n, 0.0);
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = t[i];
    if (k == ignore) continue;
    if (k < 0 || k >= n_classes) {
      return c.Error(TargetOutOfBounds(absl::StrCat(k)));
    }
    losses[i] = -w[k] * x[i * n_classes + k];
    sum += losses[i];
    wsum += w[k];
  }
  if (batched && reduction == 0) {
    WriteRowMajor(out.tensor, losses);
    WriteRowMajor(total.tensor, {0.0});
  } else {
    WriteRowMajor(out.tensor, {reduction == 1 ? sum / wsum : sum});
    WriteRowMajor(total.tensor, {wsum});
  }
  return Value::List({out, total});
}

// nll_loss2d_forward(self [N, C, H, W], target [N, H, W], weight,
// reduction, ignore_index) -> (output, total_weight): per position,
// -weight[t] * self[n, t, h, w] (0 where t is ignore_index); unreduced
// [N, H, W] (total_weight 0), else summed, or over the summed weights.
absl::StatusOr<Value> NllLoss2dForward(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  ASSIGN_OR_RETURN(int64_t ignore, c.arg("ignore_index").AsInt());
  if (RankOf(self) != 4) {
    return c.Error(absl::StrCat(
        "only batches of spatial inputs supported (4D tensors), but got input "
        "of size: ",
        SizeString(self)));
  }
  if (RankOf(target) != 3) {
    return c.Error(absl::StrCat(
        "only batches of spatial targets supported (3D tensors) but got "
        "targets of size: ",
        SizeString(target)));
  }
  if (DTypeOf(target) != DType::kInt64) {
    return c.Error(absl::StrCat("expected target dtype to be Long, but got ",
                                ScalarTypeName(DTypeOf(target))));
  }
  const DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "nll_loss2d_forward_out_frame"));
  const std::vector<Expr> in = SizesOf(self), ts = SizesOf(target);
  RETURN_IF_ERROR(CheckSpatialTarget(c, in, ts));
  ASSIGN_OR_RETURN(std::vector<int64_t> classes, ConcreteSizes(c, {in[1]}));
  const int64_t n_classes = classes[0];
  RETURN_IF_ERROR(VectorOf(c, weight, n_classes, "weight"));
  const bool running = self.tensor.defined();
  std::vector<Expr> out_sizes;
  if (reduction == 0) out_sizes = ts;
  ASSIGN_OR_RETURN(Value out, Result(c, running, dt, self, out_sizes));
  ASSIGN_OR_RETURN(Value total, Result(c, running, dt, self, {}));
  if (!running) return Value::List({out, total});
  const std::vector<int64_t>& is = self.tensor.sizes();
  const int64_t n = is[0], plane = is[2] * is[3];
  const std::vector<double> x = RowMajorValues(self.tensor);
  const std::vector<int64_t> t = IntElements(target.tensor);
  const std::vector<double> w = weight.is_none()
                                    ? std::vector<double>(n_classes, 1.0)
                                    : RowMajorValues(weight.tensor);
  std::vector<double> losses(n * plane, 0.0);
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < plane; ++i) {
      const int64_t k = t[b * plane + i];
      if (k == ignore) continue;
      if (k < 0 || k >= n_classes) {
        return c.Error(TargetOutOfBounds(absl::StrCat(k)));
      }
      const double l = -w[k] * x[(b * n_classes + k) * plane + i];
      losses[b * plane + i] = l;
      sum += l;
      wsum += w[k];
    }
  }
  if (reduction == 0) {
    WriteRowMajor(out.tensor, losses);
    WriteRowMajor(total.tensor, {0.0});
  } else {
    WriteRowMajor(out.tensor, {reduction == 1 ? sum / wsum : sum});
    WriteRowMajor(total.tensor, {wsum});
  }
  return Value::List({out, total});
}

// Writes `loss` (of each index of `sizes`) into `out` per PyTorch's
// reduction: 0 elementwise, 1 the mean, 2 the sum.
void StoreLoss(const Tensor& out, absl::Span<const int64_t> sizes,
               int64_t reduction,
               const std::function<double(absl::Span<const int64_t>)>& loss) {
  double sum = 0;
  ForEachIndex(sizes, [&](absl::Span<const int64_t> i) {
    double v = loss(i);
    if (reduction == 0) {
      StoreDouble(out, i, v);
    } else {
      sum += v;
    }
  });
  if (reduction == 1) StoreDouble(out, {}, sum / Numel(sizes));
  if (reduction == 2) StoreDouble(out, {}, sum);
}

// mse_loss / smooth_l1_loss / huber_loss(self, target, reduction[, beta or
// delta]): the elementwise loss of self - target, broadcast (with
// TensorIterator's layout when not reduced), or its mean or sum (0-d).
// smooth_l1 is 0.5 * d^2 / beta below beta and |d| - 0.5 * beta above (|d|
// for beta 0); huber is 0.5 * d^2 below delta and delta * (|d| - 0.5 *
// delta) above.
enum class Loss { kMse, kSmoothL1, kHuber };
absl::StatusOr<Value> PointwiseLoss(const OpCall& c, Loss kind) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  double beta = 0;
  if (kind == Loss::kSmoothL1) {
    ASSIGN_OR_RETURN(beta, c.arg("beta").AsDouble());
    if (beta < 0) {
      return c.Error(
          "smooth_l1_loss does not support negative values for beta.");
    }
  }
  if (kind == Loss::kHuber) {
    ASSIGN_OR_RETURN(beta, c.arg("delta").AsDouble());
    if (!(beta > 0)) {
      return c.Error(
          "huber_loss does not support non-positive values for delta.");
    }
  }
  ASSIGN_OR_RETURN(DType dt, ResultType({self, target}));
  if (!IsFloatingPoint(dt)) {
    return c.Error(absl::StrCat("\"",
                                kind == Loss::kMse        ? "mse"
                                : kind == Loss::kSmoothL1 ? "smooth_l1"
                                                          : "huber",
                                "_cpu\" not implemented for '",
                                ScalarTypeName(dt), "'"));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> sizes,
                   BroadcastShapes(c, {SizesOf(self), SizesOf(target)}));
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = PointwiseStrides(c.env(), {self, target}, sizes);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(self),
                                            out_sizes, strides));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor a, BroadcastView(self.tensor, cs));
  ASSIGN_OR_RETURN(Tensor b, BroadcastView(target.tensor, cs));
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    double d = LoadDouble(a, i) - LoadDouble(b, i);
    if (kind == Loss::kMse) return d * d;
    double ad = std::fabs(d);
    if (kind == Loss::kHuber) {
      return ad < beta ? 0.5 * ad * ad : beta * (ad - 0.5 * beta);
    }
    return ad < beta ? 0.5 * d * d / beta : ad - 0.5 * beta;
  });
  return out;
}

// binary_cross_entropy(self, target, weight, reduction): (t - 1) *
// max(log1p(-x), -100) - t * max(log(x), -100), times weight (broadcast);
// every input and target element must be in [0, 1]. Unreduced, laid out
// as empty_like(self); else its mean or sum (0-d).
absl::StatusOr<Value> BinaryCrossEntropy(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  const DType dt = DTypeOf(self);
  RETURN_IF_ERROR(NeedFloat(c, dt, "binary_cross_entropy"));
  std::vector<Expr> sizes = SizesOf(self);
  for (const Value* v : {&target, &weight}) {
    if (v->is_none()) continue;
    ASSIGN_OR_RETURN(std::vector<Expr> b,
                     BroadcastShapes(c, {sizes, SizesOf(*v)}));
    ASSIGN_OR_RETURN(bool same, SameShape(c, b, sizes));
    if (!same) {
      return c.Error(absl::StrCat("output with shape ", ShapeString(sizes),
                                  " doesn't match the broadcast shape ",
                                  ShapeString(b)));
    }
  }
  const bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = EmptyLikeStrides(c.env(), self);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(self),
                                            out_sizes, strides));
  if (!running) return out;
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor t, BroadcastView(target.tensor, cs));
  Tensor w;
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(w, BroadcastView(weight.tensor, cs));
  }
  absl::Status bad;
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    const double x = LoadDouble(self.tensor, i), y = LoadDouble(t, i);
    if (!(x >= 0 && x <= 1) && bad.ok()) {
      bad = c.Error("all elements of input should be between 0 and 1");
    }
    if (!(y >= 0 && y <= 1) && bad.ok()) {
      bad = c.Error("all elements of target should be between 0 and 1");
    }
    const double l = (y - 1) * std::max(std::log1p(-x), -100.0) -
                     y * std::max(std::log(x), -100.0);
    return w.defined() ? l * LoadDouble(w, i) : l;
  });
  RETURN_IF_ERROR(bad);
  return out;
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight,
// reduction): PyTorch's (1 - t) * x - ((pos_weight - 1) * t + 1) *
// log_sigmoid(x), times weight. As in PyTorch (which computes it in place
// on 1 - target), the result has target's shape and dtype, and the other
// operands must broadcast to it.
absl::StatusOr<Value> BceWithLogits(const OpCall& c) {
  const Value& self = c.arg("self");
  const Value& target = c.arg("target");
  const Value& weight = c.arg("weight");
  const Value& pos_weight = c.arg("pos_weight");
  ASSIGN_OR_RETURN(int64_t reduction, ReductionArg(c));
  DType dt = DTypeOf(target);
  RETURN_IF_ERROR(NeedFloat(c, dt, "binary_cross_entropy_with_logits"));
  RETURN_IF_ERROR(
      NeedFloat(c, DTypeOf(self), "binary_cross_entropy_with_logits"));
  std::vector<Expr> sizes = SizesOf(target);
  for (const Value* v : {&self, &weight, &pos_weight}) {
    if (v->is_none()) continue;
    ASSIGN_OR_RETURN(std::vector<Expr> b,
                     BroadcastShapes(c, {sizes, SizesOf(*v)}));
    ASSIGN_OR_RETURN(bool same, SameShape(c, b, sizes));
    if (!same) {
      return c.Error(absl::StrCat("output with shape ", ShapeString(sizes),
                                  " doesn't match the broadcast shape ",
                                  ShapeString(b)));
    }
  }
  bool running = self.tensor.defined();
  std::vector<Expr> out_sizes, strides;
  if (reduction == 0) {
    out_sizes = sizes;
    strides = PointwiseStrides(c.env(), {target}, sizes);
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(target),
                                            out_sizes, strides));
  if (!running) return out;
  const std::vector<int64_t>& cs = target.tensor.sizes();
  ASSIGN_OR_RETURN(Tensor x, BroadcastView(self.tensor, cs));
  Tensor w, pw;
  if (!weight.is_none()) {
    ASSIGN_OR_RETURN(w, BroadcastView(weight.tensor, cs));
  }
  if (!pos_weight.is_none()) {
    ASSIGN_OR_RETURN(pw, BroadcastView(pos_weight.tensor, cs));
  }
  StoreLoss(out.tensor, cs, reduction, [&](absl::Span<const int64_t> i) {
    double xv = LoadDouble(x, i), t = LoadDouble(target.tensor, i);
    double log_sigmoid =
        std::min(xv, 0.0) - std::log1p(std::exp(-std::fabs(xv)));
    double lw = pos_weight.is_none() ? 1 : (LoadDouble(pw, i) - 1) * t + 1;
    double loss = (1 - t) * xv - lw * log_sigmoid;
    return weight.is_none() ? loss : loss * LoadDouble(w, i);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Attention.

// _scaled_dot_product_flash_attention_for_cpu(q [B, H, L, E], k [B, H, S,
// E], v [B, H, S, E]) -> (output [B, H, L, E], logsumexp [B, H, L]):
// softmax(q k^T * scale + mask) v, where the mask is attn_mask (of q's
// dtype, broadcast to [B, H, L, S]) and, with is_causal, -inf above the
// diagonal; the output is laid out as the query (empty_like); logsumexp is
// the log of each row's softmax denominator, in float32 (float64 for float64
// inputs), laid out as PyTorch's [B, L, H] transposed. A row whose every
// score is -inf (fully masked) gives output 0 and logsumexp 0, as PyTorch's
// kernel. Dropout is not supported (dropout_p must be 0).
absl::StatusOr<Value> FlashAttentionCpu(const OpCall& c) {
  const Value& q = c.arg("query");
  const Value& k = c.arg("key");
  const Value& v = c.arg("value");
  const Value& mask = c.arg("attn_mask");
  ASSIGN_OR_RETURN(double dropout, c.arg("dropout_p").AsDouble());
  ASSIGN_OR_RETURN(bool causal, c.arg("is_causal").AsBool());
  const char* kName = "scaled_dot_product_attention_flash_attention: ";
  if (dropout != 0) {
    return c.Error(absl::StrCat(kName,
                                "dropout_p must be 0 (lathe has no "
                                "attention dropout); got ",
                                dropout));
  }
  for (const Value* t : {&q, &k, &v}) {
    if (RankOf(*t) != 4) {
      return c.Error(absl::StrCat(kName,
                                  "Accept only 4 dims inputs shape of "
                                  "{B, H, T, K}"));
    }
  }
  DType dt = DTypeOf(q);
  if (DTypeOf(k) != dt || DTypeOf(v) != dt) {
    return c.Error(absl::StrCat(kName,
                                "Expected query, key, and value to "
                                "have the same dtype"));
  }
  RETURN_IF_ERROR(NeedFloat(c, dt, "flash_attention"));
  std::vector<Expr> qs = SizesOf(q), ks = SizesOf(k), vs = SizesOf(v);
  for (int d : {0, 1}) {
    ASSIGN_OR_RETURN(bool same_k, Decide(c, symbolic::Eq(qs[d], ks[d])));
    ASSIGN_OR_RETURN(bool same_v, Decide(c, symbolic::Eq(qs[d], vs[d])));
    if (!same_k || !same_v) {
      return c.Error(absl::StrCat(kName,
                                  "Q/K/V should have the same batch "
                                  "size and number of heads"));
    }
  }
  ASSIGN_OR_RETURN(bool same_s, Decide(c, symbolic::Eq(ks[2], vs[2])));
  ASSIGN_OR_RETURN(bool same_e, Decide(c, symbolic::Eq(qs[3], ks[3])));
  ASSIGN_OR_RETURN(bool same_ev, Decide(c, symbolic::Eq(qs[3], vs[3])));
  if (!same_s) {
    return c.Error(absl::StrCat(kName,
                                "K/V should have the same sequence "
                                "length"));
  }
  if (!same_e || !same_ev) {
    return c.Error(absl::StrCat(kName, "Q/K/V should have the same head size"));
  }
  std::vector<Expr> score_sizes = {qs[0], qs[1], qs[2], ks[2]};
  if (!mask.is_none()) {
    if (RankOf(mask) != 2 && RankOf(mask) != 4) {
      return c.Error(absl::StrCat(kName, "Attention mask dim in {2, 4}"));
    }
    if (DTypeOf(mask) != dt) {
      return c.Error(absl::StrCat(kName,
                                  "Attention mask is the same data "
                                  "type as query"));
    }
    ASSIGN_OR_RETURN(std::vector<Expr> b,
                     BroadcastShapes(c, {score_sizes, SizesOf(mask)}));
    ASSIGN_OR_RETURN(bool fits, SameShape(c, b, score_sizes));
    if (!fits) {
      return c.Error(absl::StrCat(kName, "attn_mask of shape ",
                                  SizeString(mask),
                                  " does not broadcast to the scores' shape ",
                                  ShapeString(score_sizes)));
    }
  }
  DType acc = dt == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  bool running = q.tensor.defined();
  // The output is empty_like(query), as PyTorch's meta says (dense, in the
  // query's dimension order): a query that is a transposed [B, L, H, E]
  // projection (the usual case, also a chunk of one) gives an output in
  // that layout, which the view merging its heads relies on.
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dt, DeviceOf(q), qs,
                                            EmptyLikeStrides(c.env(), q)));
  // logsumexp: [B, H, L] with strides [L * H, 1, H].
  std::vector<Expr> lse_sizes = {qs[0], qs[1], qs[2]};
  std::vector<Expr> lse_strides = {symbolic::Mul({qs[2], qs[1]}),
                                   symbolic::Int(1), qs[1]};
  ASSIGN_OR_RETURN(Value lse, ResultOrEmpty(c, running, acc, DeviceOf(q),
                                            lse_sizes, lse_strides));
  if (!running) return Value::List({out, lse});
  const std::vector<int64_t>& shape = q.tensor.sizes();
  int64_t B = shape[0], H = shape[1], L = shape[2], E = shape[3];
  int64_t S = k.tensor.sizes()[2];
  double scale = 1.0 / std::sqrt(static_cast<double>(E));
  if (!c.arg("scale").is_none()) {
    ASSIGN_OR_RETURN(scale, c.arg("scale").AsDouble());
  }
  std::vector<double> qv = RowMajorValues(q.tensor),
                      kv = RowMajorValues(k.tensor),
                      vv = RowMajorValues(v.tensor);
  Tensor mask_view;
  if (!mask.is_none()) {
    ASSIGN_OR_RETURN(mask_view, BroadcastView(mask.tensor, {B, H, L, S}));
  }
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> y(qv.size()), lv(B * H * L), p(S);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      int64_t bh = b * H + h;
      for (int64_t i = 0; i < L; ++i) {
        double mx = -kInf;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) {
            dot += qv[(bh * L + i) * E + e] * kv[(bh * S + j) * E + e];
          }
          double sc = dot * scale;
          // As PyTorch's kernel: -inf above the diagonal, then the mask
          // added (a +inf or NaN there makes the row NaN).
          if (causal && j > i) sc = -kInf;
          if (!mask.is_none()) sc += LoadDouble(mask_view, {b, h, i, j});
          p[j] = sc;
          if (std::isnan(sc) || sc > mx) mx = sc;  // NaN propagates
        }
        double denom = 0;
        for (int64_t j = 0; j < S; ++j) {
          p[j] = mx == -kInf ? 0 : std::exp(p[j] - mx);
          denom += p[j];
        }
        // A fully masked row (every score -inf): as PyTorch's kernel, its
        // max taken as 0 and its sum as 1, so its output is 0 and its
        // logsumexp 0 (not 0 / 0 and -inf).
        if (mx == -kInf) {
          mx = 0;
          denom = 1;
        }
        lv[bh * L + i] = mx + std::log(denom);
        for (int64_t e = 0; e < E; ++e) {
          double acc_v = 0;
          for (int64_t j = 0; j < S; ++j) {
            acc_v += p[j] * vv[(bh * S + j) * E + e];
          }
          y[(bh * L + i) * E + e] = acc_v / denom;
        }
      }
    }
  }
  WriteRowMajor(out.tensor, y);
  WriteRowMajor(lse.tensor, lv);
  return Value::List({out, lse});
}

}  // namespace

absl::Status RegisterNnOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      r.Add("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] "
            "stride, SymInt[] padding, SymInt[] dilation, bool transposed, "
            "SymInt[] output_padding, SymInt groups) -> Tensor",
            Convolution));
  RETURN_IF_ERROR(r.Add(
      "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
      "SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] "
      "dilation, bool transposed, SymInt[] output_padding, SymInt groups, "
      "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      ConvolutionBackward));
  RETURN_IF_ERROR(r.Add(
      "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] "
      "stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) "
      "-> (Tensor, Tensor)",
      [](const OpCall& c) { return MaxPool(c, 2); }));
  RETURN_IF_ERROR(r.Add(
      "max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] "
      "stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) "
      "-> (Tensor, Tensor)",
      [](const OpCall& c) { return MaxPool(c, 3); }));
  RETURN_IF_ERROR(r.Add(
      "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, "
      "int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, "
      "bool ceil_mode, Tensor indices) -> Tensor",
      [](const OpCall& c) { return MaxPoolBackward(c, 2); }));
  RETURN_IF_ERROR(r.Add(
      "max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, "
      "int[3] kernel_size, int[3] stride, int[3] padding, int[3] dilation, "
      "bool ceil_mode, Tensor indices) -> Tensor",
      [](const OpCall& c) { return MaxPoolBackward(c, 3); }));
  RETURN_IF_ERROR(r.Add(
      "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
      "padding=0, bool ceil_mode=False, bool count_include_pad=True, int? "
      "divisor_override=None) -> Tensor",
      [](const OpCall& c) { return AvgPool(c, 2); }));
  RETURN_IF_ERROR(r.Add(
      "avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] "
      "padding=0, bool ceil_mode=False, bool count_include_pad=True, int? "
      "divisor_override=None) -> Tensor",
      [](const OpCall& c) { return AvgPool(c, 3); }));
  RETURN_IF_ERROR(
      r.Add("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] "
            "kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool "
            "count_include_pad, int? divisor_override) -> Tensor",
            [](const OpCall& c) { return AvgPoolBackward(c, 2); }));
  RETURN_IF_ERROR(
      r.Add("avg_pool3d_backward(Tensor grad_output, Tensor self, int[3] "
            "kernel_size, int[3] stride, int[3] padding, bool ceil_mode, bool "
            "count_include_pad, int? divisor_override) -> Tensor",
            [](const OpCall& c) { return AvgPoolBackward(c, 3); }));
  RETURN_IF_ERROR(r.Add(
      "_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
      [](const OpCall& c) { return AdaptiveAvgPool(c, 2); }));
  RETURN_IF_ERROR(r.Add(
      "_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor",
      [](const OpCall& c) { return AdaptiveAvgPool(c, 3); }));
  RETURN_IF_ERROR(
      r.Add("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) "
            "-> Tensor",
            AdaptiveAvgPoolBackward));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, "
      "Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float "
      "momentum, float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNormWithStats(c, std::nullopt, /*update=*/true);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, "
      "Tensor? bias, Tensor running_mean, Tensor running_var, bool training, "
      "float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor "
      "running_mean_out, Tensor running_var_out)",
      BatchNormFunctional));
  // Functionalization replaces the op that writes the running statistics by
  // its functional twin, whose results 3 and 4 are their new values.
  RETURN_IF_ERROR(r.PairMutating("aten._native_batch_norm_legit.default",
                                 "aten._native_batch_norm_legit_functional."
                                 "default",
                                 {{3, 3}, {4, 4}}));
  // native_batch_norm (running statistics optional): PyTorch's CPU kernel
  // also updates them in place in training mode although its schema does
  // not say so, and so does lathe's; functionalization first turns such a
  // call into _native_batch_norm_legit, whose schema marks the writes
  // (aot/functionalize.cc).
  RETURN_IF_ERROR(r.Add(
      "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
      "running_mean, Tensor? running_var, bool training, float momentum, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNormWithStats(c, std::nullopt, /*update=*/true);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, "
      "Tensor? bias, bool training, float momentum, float eps) -> (Tensor, "
      "Tensor, Tensor)",
      [](const OpCall& c) {
        return BatchNorm(c, false, Value::None(), Value::None(), std::nullopt,
                         false);
      }));
  RETURN_IF_ERROR(r.Add(
      "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, "
      "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [](const OpCall& c) { return BatchNormWithStats(c, false, false); }));
  RETURN_IF_ERROR(r.Add(
      "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt "
      "N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, "
      "Tensor)",
      GroupNorm));
  RETURN_IF_ERROR(r.Add(
      "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, "
      "Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int "
      "group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      GroupNormBackward));
  RETURN_IF_ERROR(r.Add(
      "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
      "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? "
      "bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      LayerNormBackward));
  RETURN_IF_ERROR(
      r.Add("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool "
            "align_corners, float[]? scale_factors) -> Tensor",
            UpsampleBilinear));
  RETURN_IF_ERROR(r.Add(
      "upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? "
      "scale_factors) -> Tensor",
      UpsampleNearest));
  RETURN_IF_ERROR(
      r.Add("reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 1, true); }));
  RETURN_IF_ERROR(
      r.Add("reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 2, true); }));
  RETURN_IF_ERROR(
      r.Add("reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 3, true); }));
  RETURN_IF_ERROR(
      r.Add("replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 1, false); }));
  RETURN_IF_ERROR(
      r.Add("replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 2, false); }));
  RETURN_IF_ERROR(
      r.Add("replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor",
            [](const OpCall& c) { return Pad(c, 3, false); }));
  for (int nsp : {1, 2, 3}) {
    for (bool reflect : {true, false}) {
      RETURN_IF_ERROR(r.Add(
          absl::StrCat(reflect ? "reflection_pad" : "replication_pad", nsp,
                       "d_backward(Tensor grad_output, Tensor self, SymInt[",
                       2 * nsp, "] padding) -> Tensor"),
          [nsp, reflect](const OpCall& c) {
            return Pad(c, nsp, reflect, /*backward=*/true);
          }));
    }
  }
  RETURN_IF_ERROR(r.Add(
      "col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] "
      "dilation, int[2] padding, int[2] stride) -> Tensor",
      Col2Im));
  RETURN_IF_ERROR(r.Add(
      "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt "
      "num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
      EmbeddingDenseBackward));
  RETURN_IF_ERROR(r.Add(
      "_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool "
      "scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? "
      "per_sample_weights=None, bool include_last_offset=False, int "
      "padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)",
      EmbeddingBag));
  RETURN_IF_ERROR(r.Add(
      "_embedding_bag_forward_only(Tensor weight, Tensor indices, Tensor "
      "offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, "
      "Tensor? per_sample_weights=None, bool include_last_offset=False, int "
      "padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)",
      EmbeddingBag));
  RETURN_IF_ERROR(
      r.Add("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool "
            "align_corners, float? scales_h=None, float? scales_w=None) -> "
            "Tensor",
            UpsampleBilinear));
  RETURN_IF_ERROR(
      r.Add("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? "
            "scales_h=None, float? scales_w=None) -> Tensor",
            UpsampleNearest));
  RETURN_IF_ERROR(r.Add(
      "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? "
      "weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
      "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> "
      "(Tensor, Tensor, Tensor)",
      BatchNormBackward));
  RETURN_IF_ERROR(
      r.Add("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int "
            "reduction, SymInt ignore_index) -> (Tensor output, Tensor "
            "total_weight)",
            NllLossForward));
  RETURN_IF_ERROR(r.Add(
      "nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int "
      "reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
      NllLoss2dForward));
  RETURN_IF_ERROR(
      r.Add("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kMse); }));
  RETURN_IF_ERROR(
      r.Add("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, "
            "float beta=1.) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kSmoothL1); }));
  RETURN_IF_ERROR(
      r.Add("huber_loss(Tensor self, Tensor target, int reduction=1, float "
            "delta=1.) -> Tensor",
            [](const OpCall& c) { return PointwiseLoss(c, Loss::kHuber); }));
  RETURN_IF_ERROR(
      r.Add("binary_cross_entropy(Tensor self, Tensor target, Tensor? "
            "weight=None, int reduction=1) -> Tensor",
            BinaryCrossEntropy));
  RETURN_IF_ERROR(r.Add(
      "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? "
      "weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor",
      BceWithLogits));
  RETURN_IF_ERROR(r.Add(
      "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, "
      "Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? "
      "attn_mask=None, float? scale=None) -> (Tensor output, Tensor "
      "logsumexp)",
      FlashAttentionCpu));
  RETURN_IF_ERROR(
      r.Add("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) "
            "-> Tensor",
            Cdist));
  RETURN_IF_ERROR(
      r.Add("_pdist_forward(Tensor self, float p=2.) -> Tensor", Pdist));
  return absl::OkStatus();
}

}  // namespace lathe::ir
