// Pooling ops: max, average and adaptive average pooling in 2 and 3
// spatial dims, and their backwards. Kernels are direct loops computed in
// double (integers exactly where PyTorch computes them in integers) and
// rounded to the output dtype; a channels-last input keeps its results
// channels-last (SuggestedResult). Output sizes are symbolic (pooling's
// ceil_mode correction is decided under a guard); adaptive pools'
// specialize with guards (ConcreteSizes).

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

}  // namespace

absl::Status RegisterPoolOps(OpRegistry& r) {
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
  return absl::OkStatus();
}

}  // namespace lathe::ir
