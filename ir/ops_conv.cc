// Convolution ops: convolution (forward, transposed, grouped, any number
// of spatial dims) and its backward, and col2im. Kernels are direct loops
// over row-major copies of the inputs, computed in double and rounded to
// the output dtype; results are contiguous. Output sizes are symbolic
// where they are arithmetic of symbolic sizes.

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
#include "ir/ops_nn_util.h"
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

}  // namespace

absl::Status RegisterConvOps(OpRegistry& r) {
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
      "col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] "
      "dilation, int[2] padding, int[2] stride) -> Tensor",
      Col2Im));
  return absl::OkStatus();
}

}  // namespace lathe::ir
