// Neural-network ops: upsampling (nearest, bilinear), reflection and
// replication padding (and their backwards), embedding backward and bags,
// cdist/pdist, and CPU flash attention. Convolutions are in ops_conv.cc,
// pooling in ops_pool.cc, normalization in ops_norm.cc, losses in
// ops_loss.cc, grid_sampler_2d in ops_grid_sampler.cc; the helpers they
// share in ops_nn_util.h. Kernels are direct loops over row-major copies of
// the inputs, computed in double (integers exactly where PyTorch computes
// them in integers) and rounded to the output dtype. Results take the
// layouts PyTorch's CPU kernels give them: a channels-last input keeps
// upsampling and padding results channels-last (SuggestedResult); the rest
// are contiguous. Sizes that need numbers (upsampling scales) are
// specialized with guards (ConcreteSizes).

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
// Attention.

}  // namespace

absl::Status CheckAttentionMask(const OpCall& c, const Value& mask, DType dt,
                                const std::vector<Expr>& score_sizes,
                                absl::string_view name) {
  if (mask.is_none()) return absl::OkStatus();
  if (RankOf(mask) != 2 && RankOf(mask) != 4) {
    return c.Error(absl::StrCat(name, "Attention mask dim in {2, 4}"));
  }
  if (DTypeOf(mask) != dt) {
    return c.Error(
        absl::StrCat(name, "Attention mask is the same data type as query"));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> b,
                   BroadcastShapes(c, {score_sizes, SizesOf(mask)}));
  ASSIGN_OR_RETURN(bool fits, SameShape(c, b, score_sizes));
  if (!fits) {
    return c.Error(absl::StrCat(name, "attn_mask of shape ", SizeString(mask),
                                " does not broadcast to the scores' shape ",
                                ShapeString(score_sizes)));
  }
  return absl::OkStatus();
}

namespace {

// _scaled_dot_product_flash_attention_for_cpu(q [B, H, L, E], k [B, H, S,
// E], v [B, H, S, E]) -> (output [B, H, L, E], logsumexp [B, H, L]):
// softmax(q k^T * scale + mask) v, where the mask is attn_mask (of q's
// dtype, broadcast to [B, H, L, S]) and, with is_causal, -inf above the
// diagonal; the output is laid out as the query (empty_like); logsumexp is
// the log of each row's softmax denominator, in float32 (float64 for float64
// inputs), laid out as PyTorch's [B, L, H] transposed. A row whose every
// score is -inf (fully masked) gives output 0 and logsumexp 0, as PyTorch's
// kernel. With 16-bit inputs the weights enter the product with v
// rounded to that dtype, before their division by the row's sum, as in
// the kernel. Dropout is not supported (dropout_p must be 0).
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
  RETURN_IF_ERROR(CheckAttentionMask(c, mask, dt, score_sizes, kName));
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
        // As PyTorch's kernel: 16-bit inputs' weights enter p @ v rounded
        // to their dtype (the sum above took them unrounded). The kernel
        // takes them against a running max, block by block of 512 keys:
        // the same as this for rows of up to 512 keys.
        if (dt == DType::kBFloat16 || dt == DType::kFloat16) {
          VisitDType(dt, [&](auto tag) {
            using T = decltype(tag);
            for (int64_t j = 0; j < S; ++j)
              p[j] = ToDouble(FromDouble<T>(p[j]));
          });
        }
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
