// Reductions: sum, mean, amax, amin (over dims, with keepdim and an optional
// dtype), and the softmax family. The kernel walks every input element once,
// accumulating in double (exact int64 for integer sums) into its output
// position.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::ir {
namespace {

enum class Reduce { kSum, kMean, kMax, kMin };

struct ReduceInfo {
  std::vector<bool> reduced;  // per input dim
  bool keepdim = false;
  DType dtype;
  std::vector<symbolic::Expr> sizes;
};

absl::StatusOr<ReduceInfo> InferReduce(const OpCall& c, Reduce kind) {
  const Value& self = c.arg(0);
  int64_t rank = RankOf(self);
  ReduceInfo info;
  info.reduced.assign(rank, false);
  int dim_arg = c.op().schema.ArgumentIndex("dim");
  std::vector<int64_t> dims;
  if (dim_arg >= 0 && !c.arg(dim_arg).is_none()) {
    ASSIGN_OR_RETURN(dims, c.arg(dim_arg).AsIntList());
  }
  if (dims.empty()) {
    info.reduced.assign(rank, true);  // all dims (amax dim=[] too)
  }
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
    if (rank == 0) continue;
    if (info.reduced[w]) {
      return c.Error(absl::StrCat(
          "dim ", w, " appears multiple times in the list of dims"));
    }
    info.reduced[w] = true;
  }
  int keep = c.op().schema.ArgumentIndex("keepdim");
  if (keep >= 0) {
    ASSIGN_OR_RETURN(info.keepdim, c.arg(keep).AsBool());
  }
  DType in = DTypeOf(self);
  int dtype_arg = c.op().schema.ArgumentIndex("dtype");
  bool explicit_dtype = dtype_arg >= 0 && !c.arg(dtype_arg).is_none();
  if (explicit_dtype) {
    info.dtype = c.arg(dtype_arg).dtype;
  } else if (kind == Reduce::kSum) {
    info.dtype = IsIntegral(in, true) ? DType::kInt64 : in;
  } else {
    info.dtype = in;
  }
  if (kind == Reduce::kMean && !IsFloatingPoint(info.dtype)) {
    return c.Error(
        absl::StrCat("mean(): could not infer output dtype. Input dtype must "
                     "be either a floating point "
                     "or complex dtype. Got: ",
                     ShortName(info.dtype)));
  }
  std::vector<symbolic::Expr> in_sizes = SizesOf(self);
  for (int64_t d = 0; d < rank; ++d) {
    if (!info.reduced[d]) {
      info.sizes.push_back(in_sizes[d]);
    } else if (info.keepdim) {
      info.sizes.push_back(symbolic::Int(1));
    } else if ((kind == Reduce::kMax || kind == Reduce::kMin) &&
               in_sizes[d].is_constant(0)) {
      return c.Error(absl::StrCat("Expected reduction dim ", d,
                                  " to have non-zero size."));
    }
  }
  return info;
}

absl::StatusOr<Value> ReduceKernel(const OpCall& c, Reduce kind) {
  ASSIGN_OR_RETURN(ReduceInfo info, InferReduce(c, kind));
  const Tensor& in = c.arg(0).tensor;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (info.reduced[d] && in.sizes()[d] == 0 &&
        (kind == Reduce::kMax || kind == Reduce::kMin)) {
      return c.Error(absl::StrCat("Expected reduction dim ", d,
                                  " to have non-zero size."));
    }
  }
  std::vector<int64_t> keep_sizes;  // the output shape with keepdim
  for (int64_t d = 0; d < in.dim(); ++d) {
    keep_sizes.push_back(info.reduced[d] ? 1 : in.sizes()[d]);
  }
  int64_t n = Numel(keep_sizes);
  bool int_sum = kind == Reduce::kSum && IsIntegral(info.dtype, true);
  std::vector<double> acc(
      n, kind == Reduce::kMax   ? -std::numeric_limits<double>::infinity()
         : kind == Reduce::kMin ? std::numeric_limits<double>::infinity()
                                : 0.0);
  std::vector<uint64_t> iacc(n, 0);
  std::vector<int64_t> strides = ::lathe::ContiguousStrides(keep_sizes);
  ForEachIndex(in.sizes(), [&](absl::Span<const int64_t> i) {
    int64_t slot = 0;
    for (int64_t d = 0; d < in.dim(); ++d) {
      if (!info.reduced[d]) slot += i[d] * strides[d];
    }
    if (int_sum) {
      iacc[slot] += static_cast<uint64_t>(LoadInt(in, i));
      return;
    }
    double v = LoadDouble(in, i);
    if (kind == Reduce::kMax || kind == Reduce::kMin) {
      // NaN wins and then stays, as in PyTorch.
      bool better = kind == Reduce::kMax ? v > acc[slot] : v < acc[slot];
      if (!std::isnan(acc[slot]) && (std::isnan(v) || better)) acc[slot] = v;
    } else {
      acc[slot] += v;
    }
  });
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(keep_sizes, info.dtype));
  int64_t reduced_count = 1;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (info.reduced[d]) reduced_count *= in.sizes()[d];
  }
  int64_t k = 0;
  ForEachIndex(keep_sizes, [&](absl::Span<const int64_t> i) {
    if (int_sum) {
      StoreInt(out, i, static_cast<int64_t>(iacc[k]));
    } else {
      double v = acc[k];
      if (kind == Reduce::kMean)
        v = reduced_count == 0 ? std::nan("") : v / reduced_count;
      StoreDouble(out, i, v);
    }
    ++k;
  });
  if (in.dim() == 0) return Value::OfTensor(out);
  std::vector<int64_t> final_sizes;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (!info.reduced[d] || info.keepdim) final_sizes.push_back(keep_sizes[d]);
  }
  ASSIGN_OR_RETURN(
      Tensor view,
      out.AsStrided(final_sizes, ::lathe::ContiguousStrides(final_sizes), 0));
  return Value::OfTensor(view);
}

absl::Status RegisterReduce(OpRegistry& r, const char* schema, Reduce kind) {
  return r.Add(
      schema,
      [kind](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(ReduceInfo info, InferReduce(c, kind));
        return MetaResult(info.dtype, DeviceOf(c.arg(0)), info.sizes);
      },
      [kind](const OpCall& c) { return ReduceKernel(c, kind); });
}

// _softmax / _log_softmax along one dim.
absl::StatusOr<Value> SoftmaxKernel(const OpCall& c, bool log) {
  const Tensor& in = c.arg(0).tensor;
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, in.dim()));
  if (!IsFloatingPoint(in.dtype())) {
    return c.Error(absl::StrCat("softmax needs a floating point input, got ",
                                ShortName(in.dtype())));
  }
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(in.sizes(), in.dtype()));
  if (in.numel() == 0) return Value::OfTensor(out);
  std::vector<int64_t> outer = in.sizes();
  if (in.dim() > 0) outer[dim] = 1;
  int64_t len = in.dim() > 0 ? in.sizes()[dim] : 1;
  ForEachIndex(outer, [&](absl::Span<const int64_t> base) {
    std::vector<int64_t> i(base.begin(), base.end());
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < len; ++k) {
      if (in.dim() > 0) i[dim] = k;
      mx = std::max(mx, LoadDouble(in, i));
    }
    double sum = 0;
    for (int64_t k = 0; k < len; ++k) {
      if (in.dim() > 0) i[dim] = k;
      sum += std::exp(LoadDouble(in, i) - mx);
    }
    for (int64_t k = 0; k < len; ++k) {
      if (in.dim() > 0) i[dim] = k;
      double x = LoadDouble(in, i) - mx;
      StoreDouble(out, i, log ? x - std::log(sum) : std::exp(x) / sum);
    }
  });
  return Value::OfTensor(out);
}

}  // namespace

absl::Status RegisterReductionOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      RegisterReduce(r,
                     "sum.dim_IntList(Tensor self, int[1]? dim, bool "
                     "keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                     Reduce::kSum));
  RETURN_IF_ERROR(
      RegisterReduce(r, "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                     Reduce::kSum));
  RETURN_IF_ERROR(
      RegisterReduce(r,
                     "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, "
                     "*, ScalarType? dtype=None) -> Tensor",
                     Reduce::kMean));
  RETURN_IF_ERROR(RegisterReduce(
      r, "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
      Reduce::kMean));
  RETURN_IF_ERROR(RegisterReduce(
      r, "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
      Reduce::kMax));
  RETURN_IF_ERROR(RegisterReduce(
      r, "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
      Reduce::kMin));
  for (bool log : {false, true}) {
    RETURN_IF_ERROR(r.Add(
        log ? "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"
            : "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
        [](const OpCall& c) -> absl::StatusOr<Value> {
          ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
          RETURN_IF_ERROR(WrapDim(c, dim, RankOf(c.arg(0))).status());
          return MetaResult(DTypeOf(c.arg(0)), DeviceOf(c.arg(0)),
                            SizesOf(c.arg(0)));
        },
        [log](const OpCall& c) { return SoftmaxKernel(c, log); }));
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir
