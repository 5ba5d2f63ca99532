// Reductions: sum, mean, amax, amin, max/min (of all elements), prod, any, all,
// var, argmax, argmin, max/min.dim (over dims, with keepdim and an optional
// dtype), cumsum, layer norm, and the softmax family. The kernel walks every
// input element once, accumulating in double (exact int64 for integer sums)
// into its output position.

#include <algorithm>
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

enum class Reduce {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kAny,
  kAll,
  kVar,
  kArgMax,
  kArgMin
};

struct ReduceInfo {
  std::vector<bool> reduced;  // per input dim
  bool keepdim = false;
  bool flatten =
      false;  // argmax/argmin without a dim: over the flattened tensor
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
  // All dims for an empty list (amax dim=[] too), except any.dims, whose
  // dim=[] reduces nothing (dim=None reduces all), as in PyTorch.
  bool none_for_empty = c.op().target == "aten.any.dims" && dim_arg >= 0 &&
                        !c.arg(dim_arg).is_none();
  if (dims.empty() && !none_for_empty) {
    info.reduced.assign(rank, true);
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
  } else if (kind == Reduce::kSum || kind == Reduce::kProd) {
    info.dtype = IsIntegral(in, true) ? DType::kInt64 : in;
  } else if (kind == Reduce::kAny || kind == Reduce::kAll) {
    info.dtype = in == DType::kUInt8 ? DType::kUInt8 : DType::kBool;
  } else if (kind == Reduce::kArgMax || kind == Reduce::kArgMin) {
    info.dtype = DType::kInt64;
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
  if (kind == Reduce::kVar && !IsFloatingPoint(info.dtype)) {
    return c.Error(
        "std and var only support floating point and complex dtypes");
  }
  bool arg = kind == Reduce::kArgMax || kind == Reduce::kArgMin;
  bool needs_elements = kind == Reduce::kMax || kind == Reduce::kMin || arg;
  std::vector<symbolic::Expr> in_sizes = SizesOf(self);
  info.flatten = arg && (dim_arg < 0 || c.arg(dim_arg).is_none());
  if (info.flatten) {
    // argmax(dim=None): the flattened tensor; keepdim keeps every dim as 1.
    for (int64_t d = 0; d < rank; ++d) {
      if (info.keepdim) info.sizes.push_back(symbolic::Int(1));
    }
    return info;
  }
  bool whole = c.op().target == "aten.max.default" ||
               c.op().target == "aten.min.default";
  for (int64_t d = 0; whole && d < rank; ++d) {
    if (in_sizes[d].is_constant(0)) {
      return c.Error(absl::StrCat(
          c.op().schema.name, "(): Expected reduction dim to be specified for ",
          "input.numel() == 0. Specify the reduction dim with the 'dim' ",
          "argument."));
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!info.reduced[d]) {
      info.sizes.push_back(in_sizes[d]);
    } else if (info.keepdim) {
      info.sizes.push_back(symbolic::Int(1));
    } else if (needs_elements && in_sizes[d].is_constant(0)) {
      return c.Error(absl::StrCat("Expected reduction dim ", d,
                                  " to have non-zero size."));
    }
  }
  return info;
}

// The elements of `in` in index order, in runs along the last dimension:
// f(slot, slot_step, offset, step, n, run) with the output slot of the
// run's first element (`strides`: the keepdim output's, 0 for the reduced
// dims), how far the slot moves per element, the run's element offset and
// stride in `in`, its length and its values as doubles.
template <typename F>
void ForEachRun(const Tensor& in, const std::vector<bool>& reduced,
                absl::Span<const int64_t> strides, F&& f) {
  if (Numel(in.sizes()) == 0) return;
  const int64_t rank = in.dim();
  const int64_t len = rank == 0 ? 1 : in.sizes()[rank - 1];
  const int64_t step = rank == 0 ? 0 : in.strides()[rank - 1];
  const int64_t slot_step =
      rank == 0 || reduced[rank - 1] ? 0 : strides[rank - 1];
  const ElementAccess access(in);
  constexpr int64_t kRun = 256;
  std::vector<double> run(kRun);
  std::vector<int64_t> index(rank, 0);  // the row's first element
  const absl::Span<const int64_t> sizes(in.sizes());
  ForEachIndex(sizes.subspan(0, rank == 0 ? 0 : rank - 1),
               [&](absl::Span<const int64_t> outer) {
                 std::copy(outer.begin(), outer.end(), index.begin());
                 int64_t slot = 0;
                 for (size_t d = 0; d < outer.size(); ++d) {
                   if (!reduced[d]) slot += outer[d] * strides[d];
                 }
                 const int64_t at = in.ElementOffset(index);
                 for (int64_t j0 = 0; j0 < len; j0 += kRun) {
                   const int64_t n = std::min(kRun, len - j0);
                   access.LoadDoubles(at + j0 * step, step, n, run.data());
                   f(slot + j0 * slot_step, slot_step, at + j0 * step, step, n,
                     run.data());
                 }
               });
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
  auto add = [&](int64_t slot, double v) {
    if (kind == Reduce::kMax || kind == Reduce::kMin) {
      // NaN wins and then stays, as in PyTorch.
      bool better = kind == Reduce::kMax ? v > acc[slot] : v < acc[slot];
      if (!std::isnan(acc[slot]) && (std::isnan(v) || better)) acc[slot] = v;
    } else {
      acc[slot] += v;
    }
  };
  const ElementAccess access(in);
  ForEachRun(in, info.reduced, strides,
             [&](int64_t slot, int64_t slot_step, int64_t at, int64_t step,
                 int64_t len, const double* run) {
               if (!int_sum) {
                 for (int64_t j = 0; j < len; ++j)
                   add(slot + j * slot_step, run[j]);
                 return;
               }
               for (int64_t j = 0; j < len; ++j) {
                 iacc[slot + j * slot_step] +=
                     static_cast<uint64_t>(access.LoadInt(at + j * step));
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

// The elements of each output position (reduced dims kept as size 1), for
// the reductions that need more than a running accumulator.
struct Slots {
  std::vector<int64_t> keep_sizes;
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> ints;  // for integer inputs
};

Slots GatherSlots(const Tensor& in, const std::vector<bool>& reduced,
                  bool ints) {
  Slots s;
  for (int64_t d = 0; d < in.dim(); ++d)
    s.keep_sizes.push_back(reduced[d] ? 1 : in.sizes()[d]);
  int64_t n = Numel(s.keep_sizes);
  s.values.resize(n);
  if (ints) s.ints.resize(n);
  std::vector<int64_t> strides = ::lathe::ContiguousStrides(s.keep_sizes);
  const ElementAccess access(in);
  ForEachRun(in, reduced, strides,
             [&](int64_t slot, int64_t slot_step, int64_t at, int64_t step,
                 int64_t len, const double* run) {
               for (int64_t j = 0; j < len; ++j) {
                 s.values[slot + j * slot_step].push_back(run[j]);
                 if (ints) {
                   s.ints[slot + j * slot_step].push_back(
                       access.LoadInt(at + j * step));
                 }
               }
             });
  return s;
}

// Shapes a keepdim result as `sizes` (dropping reduced dims when needed).
absl::StatusOr<Value> Finish(const OpCall& c, const Tensor& keep,
                             const ReduceInfo& info) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, info.sizes));
  ASSIGN_OR_RETURN(Tensor view,
                   keep.AsStrided(sizes, ::lathe::ContiguousStrides(sizes), 0));
  return Value::OfTensor(view);
}

// The index of the first maximum (or minimum) of `v`; NaN counts as the
// largest (and smallest), as in PyTorch.
int64_t ArgBest(const std::vector<double>& v, bool max) {
  int64_t best = 0;
  for (size_t k = 1; k < v.size(); ++k) {
    if (std::isnan(v[best])) break;
    if (std::isnan(v[k]) || (max ? v[k] > v[best] : v[k] < v[best])) best = k;
  }
  return best;
}

// The correction of var/var_mean (default 1; var.dim's unbiased=False is 0).
absl::StatusOr<double> Correction(const OpCall& c) {
  int u = c.op().schema.ArgumentIndex("unbiased");
  if (u >= 0) {
    ASSIGN_OR_RETURN(bool unbiased, c.arg(u).AsBool());
    return unbiased ? 1.0 : 0.0;
  }
  int i = c.op().schema.ArgumentIndex("correction");
  if (i < 0 || c.arg(i).is_none()) return 1.0;
  return c.arg(i).AsDouble();
}

absl::StatusOr<Value> SlotKernel(const OpCall& c, Reduce kind, bool with_mean) {
  ASSIGN_OR_RETURN(ReduceInfo info, InferReduce(c, kind));
  const Tensor& in = c.arg(0).tensor;
  bool arg = kind == Reduce::kArgMax || kind == Reduce::kArgMin;
  std::vector<bool> reduced = info.reduced;
  Tensor flat = in;
  if (info.flatten) {  // argmax over everything: a 1-d view of a contiguous
                       // copy
    ASSIGN_OR_RETURN(Tensor copy, in.Clone());
    ASSIGN_OR_RETURN(flat, copy.AsStrided({in.numel()}, {1}, 0));
    reduced = {true};
  }
  for (int64_t d = 0; d < flat.dim(); ++d) {
    if (reduced[d] && flat.sizes()[d] == 0 && arg) {
      return c.Error(absl::StrCat(kind == Reduce::kArgMax ? "argmax" : "argmin",
                                  "(): Expected reduction dim ", d,
                                  " to have non-zero size."));
    }
  }
  bool ints = IsIntegral(DTypeOf(c.arg(0)), true);
  Slots s = GatherSlots(flat, reduced, ints && (kind == Reduce::kProd || arg));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(s.keep_sizes, info.dtype));
  // var_mean's mean, or max.dim's values.
  ASSIGN_OR_RETURN(
      Tensor mean,
      Tensor::Empty(s.keep_sizes, arg ? DTypeOf(c.arg(0)) : info.dtype));
  ASSIGN_OR_RETURN(double correction, Correction(c));
  int64_t k = 0;
  ForEachIndex(s.keep_sizes, [&](absl::Span<const int64_t> i) {
    const std::vector<double>& v = s.values[k];
    switch (kind) {
      case Reduce::kProd:
        if (ints) {
          uint64_t p = 1;
          for (int64_t x : s.ints[k]) p *= static_cast<uint64_t>(x);
          StoreInt(out, i, static_cast<int64_t>(p));
        } else {
          double p = 1;
          for (double x : v) p *= x;
          StoreDouble(out, i, p);
        }
        break;
      case Reduce::kAny:
      case Reduce::kAll: {
        bool any = false, all = true;
        for (double x : v) (x != 0 ? any : all) = (x != 0);
        StoreInt(out, i, kind == Reduce::kAny ? any : all);
        break;
      }
      case Reduce::kArgMax:
      case Reduce::kArgMin: {
        int64_t best = ArgBest(v, kind == Reduce::kArgMax);
        StoreInt(out, i, best);
        if (with_mean) {
          if (ints) {
            StoreInt(mean, i, s.ints[k][best]);
          } else {
            StoreDouble(mean, i, v[best]);
          }
        }
        break;
      }
      default: {  // kVar
        double m = 0;
        for (double x : v) m += x;
        m = v.empty() ? std::nan("") : m / v.size();
        double ss = 0;
        for (double x : v) ss += (x - m) * (x - m);
        StoreDouble(
            out, i,
            ss / std::max(0.0, static_cast<double>(v.size()) - correction));
        StoreDouble(mean, i, m);
      }
    }
    ++k;
  });
  ASSIGN_OR_RETURN(Value result, Finish(c, out, info));
  if (!with_mean) return result;
  ASSIGN_OR_RETURN(Value m, Finish(c, mean, info));
  if (arg) return Value::List({m, result});  // (values, indices)
  return Value::List({result, m});
}

absl::Status RegisterSlotReduce(OpRegistry& r, const char* schema, Reduce kind,
                                bool with_mean = false) {
  return r.Add(
      schema,
      [kind, with_mean](const OpCall& c) -> absl::StatusOr<Value> {
        ASSIGN_OR_RETURN(ReduceInfo info, InferReduce(c, kind));
        Value out = MetaResult(info.dtype, DeviceOf(c.arg(0)), info.sizes);
        if (!with_mean) return out;
        if (kind == Reduce::kArgMax || kind == Reduce::kArgMin) {
          return Value::List(
              {MetaResult(DTypeOf(c.arg(0)), DeviceOf(c.arg(0)), info.sizes),
               out});
        }
        return Value::List({out, out});
      },
      [kind, with_mean](const OpCall& c) {
        return SlotKernel(c, kind, with_mean);
      });
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

// native_layer_norm: (out, mean, rstd) over the trailing normalized dims.
absl::StatusOr<Value> LayerNorm(const OpCall& c) {
  const Value& x = c.arg(0);
  ASSIGN_OR_RETURN(std::vector<symbolic::Expr> norm, c.arg(1).AsExprList());
  std::vector<symbolic::Expr> sizes = SizesOf(x);
  int64_t axis =
      static_cast<int64_t>(sizes.size()) - static_cast<int64_t>(norm.size());
  bool fits = !norm.empty() && axis >= 0;
  for (size_t k = 0; fits && k < norm.size(); ++k) {
    ASSIGN_OR_RETURN(fits, Decide(c, symbolic::Eq(sizes[axis + k], norm[k])));
  }
  if (!fits) {
    return c.Error(absl::StrCat("Given normalized_shape=", ShapeString(norm),
                                ", expected input with shape [*, ",
                                ShapeString(norm).substr(1),
                                ", but got input of size", ShapeString(sizes)));
  }
  for (int k : {2, 3}) {
    if (c.arg(k).is_none()) continue;
    std::vector<symbolic::Expr> s = SizesOf(c.arg(k));
    bool same = s.size() == norm.size();
    for (size_t d = 0; same && d < s.size(); ++d) {
      ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(s[d], norm[d])));
    }
    if (!same) {
      return c.Error(
          absl::StrCat("Expected ", k == 2 ? "weight" : "bias",
                       " to be of same shape as normalized_shape, but got ",
                       k == 2 ? "weight" : "bias", " of shape ", ShapeString(s),
                       " and normalized_shape = ", ShapeString(norm)));
    }
  }
  DType dtype = DTypeOf(x);
  if (!IsFloatingPoint(dtype)) {
    return c.Error(absl::StrCat("\"LayerNormKernelImpl\" not implemented for '",
                                ScalarTypeName(dtype), "'"));
  }
  std::vector<symbolic::Expr> stat_sizes(sizes.begin(), sizes.begin() + axis);
  stat_sizes.resize(sizes.size(), symbolic::Int(1));
  bool running = x.tensor.defined();
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(x), sizes));
  ASSIGN_OR_RETURN(Value mean,
                   ResultOrEmpty(c, running, dtype, DeviceOf(x), stat_sizes));
  ASSIGN_OR_RETURN(Value rstd,
                   ResultOrEmpty(c, running, dtype, DeviceOf(x), stat_sizes));
  if (running) {
    ASSIGN_OR_RETURN(double eps, c.arg(4).AsDouble());
    std::vector<bool> reduced(sizes.size(), false);
    for (size_t d = axis; d < sizes.size(); ++d) reduced[d] = true;
    Slots s = GatherSlots(x.tensor, reduced, false);
    int64_t k = 0;
    std::vector<double> m(s.values.size()), r(s.values.size());
    ForEachIndex(s.keep_sizes, [&](absl::Span<const int64_t> i) {
      const std::vector<double>& v = s.values[k];
      double sum = 0, ss = 0;
      for (double e : v) sum += e;
      m[k] = v.empty() ? std::nan("") : sum / v.size();
      for (double e : v) ss += (e - m[k]) * (e - m[k]);
      r[k] = 1.0 / std::sqrt(ss / v.size() + eps);
      StoreDouble(mean.tensor, i, m[k]);
      StoreDouble(rstd.tensor, i, r[k]);
      ++k;
    });
    std::vector<int64_t> stat_strides =
        ::lathe::ContiguousStrides(s.keep_sizes);
    const Tensor& t = x.tensor;
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      int64_t slot = 0;
      for (int64_t d = 0; d < axis; ++d) slot += i[d] * stat_strides[d];
      std::vector<int64_t> inner(i.begin() + axis, i.end());
      double y = (LoadDouble(t, i) - m[slot]) * r[slot];
      if (!c.arg(2).is_none()) y *= LoadDouble(c.arg(2).tensor, inner);
      if (!c.arg(3).is_none()) y += LoadDouble(c.arg(3).tensor, inner);
      StoreDouble(out.tensor, i, y);
    });
  }
  return Value::List({out, mean, rstd});
}

// cumsum(self, dim, dtype): running sums along dim (integers as int64).
absl::StatusOr<Value> Cumsum(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(self)));
  DType in = DTypeOf(self);
  DType dtype = !c.arg(2).is_none()    ? c.arg(2).dtype
                : IsIntegral(in, true) ? DType::kInt64
                                       : in;
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dtype, DeviceOf(self),
                                            SizesOf(self)));
  if (!running) return out;
  const Tensor& t = self.tensor;
  bool ints = IsIntegral(dtype, true);
  std::vector<int64_t> outer = t.sizes();
  int64_t len = t.dim() == 0 ? 1 : outer[dim];
  if (t.dim() > 0) outer[dim] = std::min<int64_t>(outer[dim], 1);
  ForEachIndex(outer, [&](absl::Span<const int64_t> base) {
    std::vector<int64_t> i(base.begin(), base.end());
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t k = 0; k < len; ++k) {
      if (t.dim() > 0) i[dim] = k;
      if (ints) {
        iacc += static_cast<uint64_t>(LoadInt(t, i));
        StoreInt(out.tensor, i, static_cast<int64_t>(iacc));
      } else {
        acc += LoadDouble(t, i);
        StoreDouble(out.tensor, i, acc);
      }
    }
  });
  return out;
}

}  // namespace

absl::Status RegisterReductionOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      r.Add("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
            Cumsum));
  RETURN_IF_ERROR(
      r.Add("native_layer_norm(Tensor input, SymInt[] normalized_shape, "
            "Tensor? weight, Tensor? bias, "
            "float eps) -> (Tensor, Tensor, Tensor)",
            LayerNorm));
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
  // max()/min(): amax/amin over every element, an error when there is none.
  RETURN_IF_ERROR(
      RegisterReduce(r, "max(Tensor self) -> Tensor", Reduce::kMax));
  RETURN_IF_ERROR(
      RegisterReduce(r, "min(Tensor self) -> Tensor", Reduce::kMin));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
      Reduce::kProd));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r,
      "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor",
      Reduce::kProd));
  RETURN_IF_ERROR(
      RegisterSlotReduce(r, "any(Tensor self) -> Tensor", Reduce::kAny));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
      Reduce::kAny));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
      Reduce::kAny));
  RETURN_IF_ERROR(
      RegisterSlotReduce(r, "all(Tensor self) -> Tensor", Reduce::kAll));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
      Reduce::kAll));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
      Reduce::kArgMax));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
      Reduce::kArgMin));
  RETURN_IF_ERROR(
      RegisterSlotReduce(r,
                         "max.dim(Tensor self, int dim, bool keepdim=False) -> "
                         "(Tensor values, Tensor indices)",
                         Reduce::kArgMax, /*with_mean=*/true));
  RETURN_IF_ERROR(
      RegisterSlotReduce(r,
                         "min.dim(Tensor self, int dim, bool keepdim=False) -> "
                         "(Tensor values, Tensor indices)",
                         Reduce::kArgMin, /*with_mean=*/true));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r,
      "var.correction(Tensor self, int[1]? dim=None, *, Scalar? "
      "correction=None, bool keepdim=False) -> Tensor",
      Reduce::kVar));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r,
      "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool "
      "keepdim=False) -> Tensor",
      Reduce::kVar));
  RETURN_IF_ERROR(RegisterSlotReduce(
      r,
      "var_mean.correction(Tensor self, int[1]? dim=None, *, "
      "Scalar? correction=None, bool keepdim=False) -> "
      "(Tensor, Tensor)",
      Reduce::kVar, /*with_mean=*/true));
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
