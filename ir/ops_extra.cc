// The non-core ops PyTorch leaves in real graphs: prims.convert_element_type,
// prims.iota and Inductor's prims.fma; lift_fresh_copy and the new_* factories;
// masked_fill, tril/triu, logsumexp, std, linalg_vector_norm, cumprod,
// logcumsumexp, index_add (with their in-place twins); and
// RegisterInplaceTwins, which gives every functional pointwise op its
// in-place twin (abs_, eq_.Scalar, pow_.Scalar, ...) in one place.
// Reductions compute in double and round once to the result dtype; results
// are contiguous where PyTorch allocates them so.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

bool Running(const Value& v) { return v.is_tensor() && v.tensor.defined(); }

// ---- prims ------------------------------------------------------------------

// prims.convert_element_type(a, dtype): a copy of `a` in `dtype`, laid out
// as empty_like(a) (PyTorch's eager implementation copies into one).
absl::StatusOr<Value> ConvertElementType(const OpCall& c, bool running) {
  const Value& a = c.arg(0);
  DType dtype = c.arg(1).dtype;
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(a), SizesOf(a),
                                 EmptyLikeStrides(c.env(), a)));
  if (running) RETURN_IF_ERROR(CopyInto(out.tensor, a.tensor));
  return out;
}

// prims.fma(a, b, c): Inductor's fused multiply-add prim, which graphs
// torch.compile makes carry; (a * b) + c as its eager implementation
// computes it (mul.Tensor, then add.Tensor: two roundings, PyTorch's
// promotion with b or c a wrapped number).
absl::StatusOr<Value> Fma(const OpCall& c, bool running) {
  ASSIGN_OR_RETURN(Value product,
                   CallOp(c, running, "aten.mul.Tensor", {c.arg(0), c.arg(1)}));
  return CallOp(c, running, "aten.add.Tensor", {product, c.arg(2)});
}

// prims.iota(length, *, start, step, dtype, device, requires_grad): start,
// start + step, ... (length values) of an integer dtype.
absl::StatusOr<Value> Iota(const OpCall& c, bool running) {
  DType dtype = c.arg("dtype").dtype;
  if (!IsIntegral(dtype, /*include_bool=*/false)) {
    return c.Error("prims.iota only supports integer dtypes");
  }
  const Value& step = c.arg("step");
  if (step.number.kind() == symbolic::ExprKind::kInteger &&
      step.number.int_value() == 0) {
    return c.Error("step must be nonzero");
  }
  Expr length = c.arg("length").number;
  ASSIGN_OR_RETURN(bool negative,
                   Decide(c, symbolic::Lt(length, symbolic::Int(0))));
  if (negative) {
    return c.Error(NegativeDimension(length, {length}));
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dtype,
                                            c.arg("device").device, {length}));
  if (!running) return out;
  ASSIGN_OR_RETURN(int64_t start, c.arg("start").AsInt());
  ASSIGN_OR_RETURN(int64_t s, step.AsInt());
  for (int64_t i = 0; i < out.tensor.numel(); ++i) {
    StoreInt(out.tensor, {i},
             static_cast<int64_t>(static_cast<uint64_t>(start) +
                                  static_cast<uint64_t>(s) *
                                      static_cast<uint64_t>(i)));
  }
  return out;
}

// ---- new_* ------------------------------------------------------------------

// new_full / new_zeros / new_ones / new_empty(self, size, ...): full(size)
// in self's dtype and device unless given (contiguous).
absl::StatusOr<Value> NewFull(const OpCall& c, bool running,
                              const Value& fill) {
  Value dtype = c.arg("dtype");
  if (dtype.is_none()) dtype = Value::OfDType(DTypeOf(c.arg(0)));
  return CallOp(c, running, "aten.full.default", {c.arg("size"), fill},
                {{"dtype", dtype}});
}

// ---- masked_fill ------------------------------------------------------------

// The C++ type PyTorch names in "value cannot be converted to type X without
// overflow".
absl::string_view CppTypeName(DType d) {
  switch (d) {
    case DType::kInt64:
      return "int64_t";
    case DType::kInt32:
      return "int";
    case DType::kInt16:
      return "int16_t";
    case DType::kInt8:
      return "int8_t";
    case DType::kUInt8:
      return "uint8_t";
    case DType::kFloat16:
      return "c10::Half";
    case DType::kBFloat16:
      return "c10::BFloat16";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    default:
      return "bool";
  }
}

// c10::checked_convert: whether a fill value (an integer when `is_int`)
// overflows `to`. Infinities and NaN fit floating types; a negative integer
// wraps into uint8 down to -255.
bool Overflows(DType to, bool is_int, int64_t i, double d) {
  if (to == DType::kBool || to == DType::kFloat64) return false;
  double v = is_int ? static_cast<double>(i) : d;
  if (IsFloatingPoint(to)) {
    if (std::isinf(v) || std::isnan(v)) return false;
    double max = MaxFinite(to);
    return v < -max || v > max;
  }
  if (std::isnan(v)) return true;
  double lo = 0, hi = 0;
  switch (to) {
    case DType::kInt64:
      lo = -9223372036854775808.0, hi = 9223372036854775808.0;
      break;
    case DType::kInt32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::kInt16:
      lo = -32768, hi = 32767;
      break;
    case DType::kInt8:
      lo = -128, hi = 127;
      break;
    default:  // uint8
      lo = is_int ? -255 : 0, hi = 255;
      break;
  }
  return v < lo || v > hi;
}

// masked_fill(self, mask, value): self broadcast with mask, value where mask
// is true, in self's dtype; contiguous (PyTorch fills a contiguous clone).
absl::StatusOr<Value> MaskedFill(const OpCall& c, bool running) {
  const Value &self = c.arg(0), &mask = c.arg(1), &value = c.arg(2);
  if (DTypeOf(mask) != DType::kBool) {
    return c.Error(absl::StrCat(
        "masked_fill_ only supports boolean masks, but got mask with dtype ",
        TypeMetaName(DTypeOf(mask))));
  }
  if (value.is_tensor() && RankOf(value) != 0) {
    return c.Error(absl::StrCat(
        "masked_fill_ only supports a 0-dimensional value tensor, but got "
        "tensor with ",
        RankOf(value), " dimension(s)."));
  }
  // The value is converted to self's dtype with an overflow check (a value
  // tensor's only when running: its element is data).
  bool is_int = false, known = false;
  int64_t iv = 0;
  double dv = 0;
  symbolic::ExprKind kind =
      value.is_tensor() ? symbolic::ExprKind::kSymbol : value.number.kind();
  if (kind == symbolic::ExprKind::kInteger) {
    ASSIGN_OR_RETURN(iv, value.AsInt());
    is_int = known = true;
  } else if (kind == symbolic::ExprKind::kFloat) {
    ASSIGN_OR_RETURN(dv, value.AsDouble());
    known = true;
  } else if (Running(value)) {
    std::vector<int64_t> none;
    is_int = IsIntegral(value.tensor.dtype(), true);
    iv = LoadInt(value.tensor, none);
    dv = LoadDouble(value.tensor, none);
    known = true;
  }
  if (known && Overflows(DTypeOf(self), is_int, iv, dv)) {
    return c.Error(absl::StrCat("value cannot be converted to type ",
                                CppTypeName(DTypeOf(self)),
                                " without overflow"));
  }
  ASSIGN_OR_RETURN(std::vector<Expr> sizes,
                   BroadcastShapes(c, {SizesOf(self), SizesOf(mask)}));
  DType dtype = DTypeOf(self);
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(self), sizes));
  if (!running) return out;
  const Tensor& o = out.tensor;
  ASSIGN_OR_RETURN(Tensor s, BroadcastView(self.tensor, o.sizes()));
  ASSIGN_OR_RETURN(Tensor m, BroadcastView(mask.tensor, o.sizes()));
  Tensor v;
  if (value.is_tensor()) {
    v = value.tensor;
  } else {
    ASSIGN_OR_RETURN(v, ScalarTensor(value, dtype));
  }
  std::vector<int64_t> none;
  ForEachIndex(o.sizes(), [&](absl::Span<const int64_t> i) {
    if (LoadInt(m, i) != 0) {
      CopyElement(o, i, v, none);
    } else {
      CopyElement(o, i, s, i);
    }
  });
  return out;
}

// ---- tril / triu ------------------------------------------------------------

// tril/triu(self, diagonal): the lower (upper) triangle of the last two
// dims, zeros elsewhere; contiguous.
absl::StatusOr<Value> Triangle(const OpCall& c, bool running, bool lower) {
  const Value& self = c.arg(0);
  int64_t rank = RankOf(self);
  if (rank < 2) {
    return c.Error(absl::StrCat(lower ? "tril" : "triu",
                                ": input tensor must have at least 2 "
                                "dimensions"));
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, DTypeOf(self),
                                            DeviceOf(self), SizesOf(self)));
  if (!running) return out;
  ASSIGN_OR_RETURN(int64_t diagonal, c.arg(1).AsInt());
  Tensor zero = *Tensor::Empty({}, DTypeOf(self));
  StoreInt(zero, {}, 0);
  std::vector<int64_t> none;
  ForEachIndex(out.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    int64_t k = i[rank - 1] - i[rank - 2];
    bool keep = lower ? k <= diagonal : k >= diagonal;
    if (keep) {
      CopyElement(out.tensor, i, self.tensor, i);
    } else {
      CopyElement(out.tensor, i, zero, none);
    }
  });
  return out;
}

// ---- Reductions: logsumexp, std, linalg_vector_norm -------------------------

// The dims a reduction reduces: `dims` wrapped (None or empty: all).
absl::StatusOr<std::vector<bool>> ReducedDims(const OpCall& c, int64_t rank,
                                              const Value& dims) {
  std::vector<bool> reduced(rank, false);
  std::vector<int64_t> list;
  if (!dims.is_none()) {
    ASSIGN_OR_RETURN(list, dims.AsIntList());
  }
  if (list.empty()) return std::vector<bool>(rank, true);
  for (int64_t d : list) {
    ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
    if (rank == 0) continue;
    if (reduced[w]) {
      return c.Error(absl::StrCat("dim ", w,
                                  " appears multiple times in the list of "
                                  "dims"));
    }
    reduced[w] = true;
  }
  return reduced;
}

std::vector<Expr> ReducedSizes(const std::vector<Expr>& sizes,
                               const std::vector<bool>& reduced, bool keepdim) {
  std::vector<Expr> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(sizes[d]);
    } else if (keepdim) {
      out.push_back(symbolic::Int(1));
    }
  }
  return out;
}

// Groups the elements of `t` by output position: `fn(values)` gives each
// output element from its group's values (in double), written into `out`
// (contiguous) in row-major order.
template <typename Fn>
void ReduceGroups(const Tensor& t, const std::vector<bool>& reduced,
                  const Tensor& out, Fn fn) {
  std::vector<int64_t> keep_sizes = t.sizes();
  for (size_t d = 0; d < keep_sizes.size(); ++d) {
    if (reduced[d]) keep_sizes[d] = 1;
  }
  std::vector<int64_t> keep_strides = ::lathe::ContiguousStrides(keep_sizes);
  int64_t n = 1;
  for (int64_t s : keep_sizes) n *= s;
  std::vector<std::vector<double>> groups(n);
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    int64_t k = 0;
    for (size_t d = 0; d < i.size(); ++d) {
      if (!reduced[d]) k += i[d] * keep_strides[d];
    }
    groups[k].push_back(LoadDouble(t, i));
  });
  int64_t k = 0;
  ForEachIndex(out.sizes(), [&](absl::Span<const int64_t> i) {
    StoreDouble(out, i, fn(groups[k++]));
  });
}

// logsumexp(self, dim, keepdim): log(sum(exp(x - m))) + m, m the max of
// each group (0 where it is infinite); integers reduce as the default float
// dtype.
absl::StatusOr<Value> LogSumExp(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  DType dtype =
      IsFloatingPoint(DTypeOf(self)) ? DTypeOf(self) : DType::kFloat32;
  ASSIGN_OR_RETURN(std::vector<bool> reduced,
                   ReducedDims(c, RankOf(self), c.arg(1)));
  ASSIGN_OR_RETURN(bool keepdim, c.arg(2).AsBool());
  // PyTorch's quirk: with dim=[] the max keeps every dim as 1, is squeezed
  // over no dims, and adding it into the reduced result fails.
  ASSIGN_OR_RETURN(std::vector<int64_t> dim_list, c.arg(1).AsIntList());
  int64_t rank = RankOf(self);
  if (dim_list.empty() && !keepdim && rank > 0) {
    Expr numel = symbolic::Int(1);
    for (const Expr& e : SizesOf(self)) numel = symbolic::Mul(numel, e);
    ASSIGN_OR_RETURN(bool empty,
                     Decide(c, symbolic::Eq(numel, symbolic::Int(0))));
    if (!empty) {
      return c.Error(absl::StrCat(
          "output with shape [] doesn't match the broadcast shape ",
          ShapeString(std::vector<Expr>(rank, symbolic::Int(1)))));
    }
  }
  ASSIGN_OR_RETURN(
      Value out, ResultOrEmpty(c, running, dtype, DeviceOf(self),
                               ReducedSizes(SizesOf(self), reduced, keepdim)));
  if (!running) return out;
  ReduceGroups(self.tensor, reduced, out.tensor,
               [](const std::vector<double>& v) {
                 double m = -std::numeric_limits<double>::infinity();
                 for (double x : v) m = std::isnan(x) ? x : std::max(m, x);
                 if (std::isinf(m)) m = 0;
                 double sum = 0;
                 for (double x : v) sum += std::exp(x - m);
                 return std::log(sum) + m;
               });
  return out;
}

// std.correction / std.dim / std.default: the square root of the variance
// with `correction` (unbiased: 1), in self's floating dtype.
absl::StatusOr<Value> Std(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  const OpSchema& schema = c.op().schema;
  DType dtype = DTypeOf(self);
  if (!IsFloatingPoint(dtype)) {
    return c.Error(
        "std and var only support floating point and complex dtypes");
  }
  int dim_arg = schema.ArgumentIndex("dim");
  Value dims = dim_arg >= 0 ? c.arg(dim_arg) : Value::None();
  ASSIGN_OR_RETURN(std::vector<bool> reduced,
                   ReducedDims(c, RankOf(self), dims));
  bool keepdim = false;
  if (schema.ArgumentIndex("keepdim") >= 0) {
    ASSIGN_OR_RETURN(keepdim, c.arg("keepdim").AsBool());
  }
  double correction = 1;
  if (schema.ArgumentIndex("correction") >= 0) {
    if (!c.arg("correction").is_none()) {
      ASSIGN_OR_RETURN(correction, c.arg("correction").AsDouble());
    }
  } else {
    ASSIGN_OR_RETURN(bool unbiased, c.arg("unbiased").AsBool());
    correction = unbiased ? 1 : 0;
  }
  ASSIGN_OR_RETURN(
      Value out, ResultOrEmpty(c, running, dtype, DeviceOf(self),
                               ReducedSizes(SizesOf(self), reduced, keepdim)));
  if (!running) return out;
  ReduceGroups(self.tensor, reduced, out.tensor,
               [correction](const std::vector<double>& v) {
                 double n = static_cast<double>(v.size()), mean = 0, m2 = 0;
                 for (double x : v) mean += x;
                 mean /= n;
                 for (double x : v) m2 += (x - mean) * (x - mean);
                 return std::sqrt(m2 / std::max(0.0, n - correction));
               });
  return out;
}

// linalg_vector_norm(self, ord, dim, keepdim, *, dtype).
absl::StatusOr<Value> VectorNorm(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  DType in = DTypeOf(self);
  if (!IsFloatingPoint(in)) {
    return c.Error(absl::StrCat(
        "linalg.vector_norm: Expected a floating point or complex tensor as "
        "input. Got ",
        ScalarTypeName(in)));
  }
  DType dtype = in;
  if (!c.arg("dtype").is_none()) {
    dtype = c.arg("dtype").dtype;
    if (!IsFloatingPoint(dtype)) {
      return c.Error(absl::StrCat(
          "linalg.vector_norm: dtype should be floating point or complex, but "
          "got ",
          ScalarTypeName(dtype)));
    }
    if (PromoteTypes(in, dtype) != dtype) {
      return c.Error(absl::StrCat(
          "linalg.vector_norm: the dtype of the input (", ScalarTypeName(in),
          ") should be convertible without narrowing to the specified dtype (",
          ScalarTypeName(dtype), ")"));
    }
  }
  ASSIGN_OR_RETURN(double ord, c.arg("ord").AsDouble());
  int64_t rank = RankOf(self);
  ASSIGN_OR_RETURN(std::vector<bool> reduced,
                   ReducedDims(c, rank, c.arg("dim")));
  ASSIGN_OR_RETURN(bool keepdim, c.arg("keepdim").AsBool());
  std::vector<Expr> sizes = SizesOf(self);
  if (ord < 0 || std::isinf(ord)) {
    // The dims as given (PyTorch names them unwrapped).
    std::vector<int64_t> given;
    if (!c.arg("dim").is_none()) {
      ASSIGN_OR_RETURN(given, c.arg("dim").AsIntList());
    }
    if (given.empty()) {  // over every dim: the whole tensor must not be empty
      Expr numel = symbolic::Int(1);
      for (const Expr& e : sizes) numel = symbolic::Mul(numel, e);
      ASSIGN_OR_RETURN(bool empty,
                       Decide(c, symbolic::Eq(numel, symbolic::Int(0))));
      if (empty) {
        return c.Error(absl::StrCat("linalg.vector_norm cannot compute the ",
                                    ord,
                                    " norm on an empty tensor because the "
                                    "operation does not have an identity"));
      }
    }
    for (int64_t d : given) {
      if (rank == 0) break;  // a 0-d tensor holds one element
      ASSIGN_OR_RETURN(int64_t w, WrapDim(c, d, rank));
      ASSIGN_OR_RETURN(bool empty,
                       Decide(c, symbolic::Eq(sizes[w], symbolic::Int(0))));
      if (empty) {
        return c.Error(absl::StrCat(
            "linalg.vector_norm cannot compute the ", ord,
            " norm on the dimension ", d,
            "because this dimension is empty and the operation does not have "
            "an identity"));
      }
    }
  }
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(self),
                                 ReducedSizes(sizes, reduced, keepdim)));
  if (!running) return out;
  ReduceGroups(self.tensor, reduced, out.tensor,
               [ord](const std::vector<double>& v) {
                 double acc = 0;
                 if (ord == 0) {
                   for (double x : v) acc += x != 0;
                   return acc;
                 }
                 if (std::isinf(ord)) {
                   acc = ord > 0 ? 0 : std::numeric_limits<double>::infinity();
                   for (double x : v) {
                     double a = std::fabs(x);
                     if (std::isnan(a)) return a;
                     acc = ord > 0 ? std::max(acc, a) : std::min(acc, a);
                   }
                   return acc;
                 }
                 for (double x : v) acc += std::pow(std::fabs(x), ord);
                 if (ord == 1) return acc;
                 if (ord == 2) return std::sqrt(acc);
                 return std::pow(acc, 1.0 / ord);
               });
  return out;
}

// ---- cumprod ----------------------------------------------------------------

// cumprod(self, dim, *, dtype): running products along dim, laid out and
// typed as cumsum (integers and bools give int64); the product runs in
// double (float dtypes) or wrapping int64 and rounds once per element.
absl::StatusOr<Value> CumProd(const OpCall& c, bool running) {
  ASSIGN_OR_RETURN(Value out, CallOp(c, false, "aten.cumsum.default",
                                     {AsMeta(c.arg(0)), c.arg(1)},
                                     {{"dtype", c.arg("dtype")}}));
  if (!running) return out;
  // The input converted to the result dtype first (self.to(dtype)).
  Tensor x = c.arg(0).tensor;
  if (x.dtype() != out.meta.dtype) {
    ASSIGN_OR_RETURN(Tensor converted,
                     Tensor::Empty(x.sizes(), out.meta.dtype));
    RETURN_IF_ERROR(CopyInto(converted, x));
    x = converted;
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   ConcreteSizes(c, out.meta.sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   ConcreteSizes(c, out.meta.strides));
  ASSIGN_OR_RETURN(Tensor o,
                   Tensor::EmptyStrided(sizes, strides, out.meta.dtype));
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, x.dim()));
  if (o.dtype() == DType::kBool && o.dim() > 0 && o.numel() > 0) {
    return c.Error("\"cumprod_out_cpu\" not implemented for 'Bool'");
  }
  std::vector<int64_t> flat = ::lathe::ContiguousStrides(sizes);
  std::vector<double> dacc(x.numel());
  std::vector<int64_t> iacc(x.numel());
  bool ints = IsIntegral(o.dtype(), true);
  ForEachIndex(sizes, [&](absl::Span<const int64_t> i) {
    int64_t k = 0;
    for (size_t d = 0; d < i.size(); ++d) k += i[d] * flat[d];
    bool first = x.dim() == 0 || i[dim] == 0;
    if (ints) {
      int64_t prev = first ? 1 : iacc[k - flat[dim]];
      iacc[k] = static_cast<int64_t>(static_cast<uint64_t>(prev) *
                                     static_cast<uint64_t>(LoadInt(x, i)));
      StoreInt(o, i, iacc[k]);
    } else {
      double prev = first ? 1 : dacc[k - flat[dim]];
      dacc[k] = prev * LoadDouble(x, i);
      StoreDouble(o, i, dacc[k]);
    }
  });
  return Value::OfTensor(o);
}

// ---- logcumsumexp -----------------------------------------------------------

// PyTorch's _log_add_exp_helper(x, y): log(exp(x) + exp(y)) without
// overflow; NaN propagates, and two equal infinities give x.
double LogAddExp(double x, double y) {
  const double lo = std::isnan(y) ? y : std::min(x, y);
  const double hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;
}

// logcumsumexp(self, dim): log(cumsum(exp(self))) along dim, computed as
// PyTorch's CPU kernel does (a running LogAddExp from -inf, in double for
// f32 and f64 and rounded once per element); floating dtypes only; the
// result contiguous (empty_like(self).contiguous()).
absl::StatusOr<Value> LogCumSumExp(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  const DType dtype = DTypeOf(self);
  if (!IsFloatingPoint(dtype)) {
    return c.Error(
        absl::StrCat("\"logcumsumexp_out_cpu\" not implemented for '",
                     ScalarTypeName(dtype), "'"));
  }
  const std::vector<Expr> sizes = SizesOf(self);
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, static_cast<int64_t>(sizes.size())));
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, running, dtype, DeviceOf(self),
                                            sizes, ContiguousStrides(sizes)));
  if (!running) return out;
  const Tensor& x = self.tensor;
  const Tensor& o = out.tensor;
  std::vector<int64_t> flat = ::lathe::ContiguousStrides(x.sizes());
  std::vector<double> acc(x.numel());
  // f16 and bf16 accumulate in float, as PyTorch's acc_type says.
  const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  ForEachIndex(x.sizes(), [&](absl::Span<const int64_t> i) {
    int64_t k = 0;
    for (size_t d = 0; d < i.size(); ++d) k += i[d] * flat[d];
    const bool first = x.dim() == 0 || i[dim] == 0;
    const double prev =
        first ? -std::numeric_limits<double>::infinity() : acc[k - flat[dim]];
    double v = LogAddExp(LoadDouble(x, i), prev);
    if (half) v = static_cast<float>(v);
    acc[k] = v;
    StoreDouble(o, i, v);
  });
  return out;
}

// cumprod_(self, dim, *, dtype): cumprod in self's dtype (or `dtype`)
// written into self (so a bool self is refused unless empty).
absl::StatusOr<Value> CumProdInplace(const OpCall& c, bool running) {
  const Value& self = c.arg(0);
  Value dtype = c.arg("dtype");
  if (dtype.is_none()) dtype = Value::OfDType(DTypeOf(self));
  ASSIGN_OR_RETURN(Value result, CallOp(c, running, "aten.cumprod.default",
                                        {self, c.arg(1)}, {{"dtype", dtype}}));
  RETURN_IF_ERROR(CheckInternalOverlap(c, self));
  if (running) RETURN_IF_ERROR(CopyInto(self.tensor, result.tensor));
  return self;
}

// ---- index_add --------------------------------------------------------------

// index_add(self, dim, index, source, *, alpha): a contiguous copy of self
// with alpha * source's slices added at the rows `index` names.
absl::StatusOr<Value> IndexAdd(const OpCall& c, bool running) {
  const Value &self = c.arg(0), &index = c.arg(2), &source = c.arg(3);
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  int64_t rank = RankOf(self);
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  DType idx = DTypeOf(index);
  if (RankOf(index) > 1) {
    return c.Error(absl::StrCat(
        "index_add_(): Index is supposed to be a vector, but got dim: ",
        RankOf(index), " with type: ", ScalarTypeName(idx),
        " and size: ", ShapeString(SizesOf(index))));
  }
  if (idx != DType::kInt64 && idx != DType::kInt32) {
    return c.Error(absl::StrCat(
        "index_add_(): Expected dtype int32/int64 for index but got: ",
        ScalarTypeName(idx)));
  }
  if (DTypeOf(self) != DTypeOf(source)) {
    return c.Error(absl::StrCat(
        "index_add_(): self (", ScalarTypeName(DTypeOf(self)), ") and source (",
        ScalarTypeName(DTypeOf(source)), ") must have the same scalar type"));
  }
  int64_t source_rank = RankOf(source);
  if (!(dim == 0 || dim < source_rank)) {
    return c.Error(absl::StrCat("index_add_(): Indexing dim ", dim,
                                " is out of bounds of the source tensor with "
                                "dim ",
                                source_rank));
  }
  std::vector<Expr> ss = SizesOf(self), rs = SizesOf(source),
                    is = SizesOf(index);
  Expr numel = symbolic::Int(1);
  for (const Expr& e : is) numel = symbolic::Mul(numel, e);
  Expr rows = source_rank == 0 ? symbolic::Int(1) : rs[dim];
  ASSIGN_OR_RETURN(bool same_rows, Decide(c, symbolic::Eq(numel, rows)));
  if (!same_rows) {
    return c.Error(absl::StrCat("index_add_(): Number of indices (",
                                symbolic::ToString(numel),
                                ") should be equal to source.size(dim): (",
                                symbolic::ToString(rows), "), for dim: ", dim));
  }
  std::vector<Expr> a = ss, b = rs;
  if (source_rank != 0 && rank != 0) {
    a.erase(a.begin() + dim);
    b.erase(b.begin() + dim);
  }
  bool same = a.size() == b.size();
  for (size_t d = 0; same && d < a.size(); ++d) {
    ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(a[d], b[d])));
  }
  if (!same) {
    return c.Error(absl::StrCat(
        "source tensor shape must match self tensor shape, excluding the "
        "specified dimension. Got self.shape = ",
        ShapeString(ss), " source.shape = ", ShapeString(rs)));
  }
  DType dtype = DTypeOf(self);
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(self), ss));
  if (!running) return out;
  const Tensor& o = out.tensor;
  RETURN_IF_ERROR(CopyInto(o, self.tensor));
  // PyTorch's multi-dimensional path adds nothing into an empty self.
  if (rank > 1 && o.numel() == 0) return out;
  ASSIGN_OR_RETURN(Tensor alpha_t, ScalarTensor(c.arg("alpha"), dtype));
  std::vector<int64_t> none;
  double alpha_d = LoadDouble(alpha_t, none);
  int64_t alpha_i = LoadInt(alpha_t, none);
  bool ints = IsIntegral(dtype, true);
  int64_t size = rank == 0 ? 1 : o.sizes()[dim];
  absl::Status status;
  ForEachIndex(source.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    if (!status.ok()) return;
    std::vector<int64_t> row = {source_rank == 0 ? 0 : i[dim]};
    if (index.tensor.dim() == 0) row.clear();
    int64_t k = LoadInt(index.tensor, row);
    if (k < 0 || k >= size) {  // the 1-D path words it differently
      status = c.Error(rank <= 1 ? std::string("index out of range in self")
                                 : IndexOutOfBounds(absl::StrCat(k), dim,
                                                    absl::StrCat(size)));
      return;
    }
    std::vector<int64_t> at(i.begin(), i.end());
    if (rank == 0) {
      at.clear();
    } else if (source_rank == 0) {
      at.assign(1, k);
    } else {
      at[dim] = k;
    }
    if (ints) {
      StoreInt(o, at,
               static_cast<int64_t>(
                   static_cast<uint64_t>(LoadInt(o, at)) +
                   static_cast<uint64_t>(alpha_i) *
                       static_cast<uint64_t>(LoadInt(source.tensor, i))));
    } else {
      StoreDouble(o, at,
                  LoadDouble(o, at) + alpha_d * LoadDouble(source.tensor, i));
    }
  });
  RETURN_IF_ERROR(status);
  return out;
}

// Registers `schema` with fn(call, /*running=*/false) as its meta function
// and fn(call, true) as its kernel.
template <typename Fn>
absl::Status AddOp(OpRegistry& r, absl::string_view schema, Fn fn) {
  return r.Add(
      schema, [fn](const OpCall& c) { return fn(c, false); },
      [fn](const OpCall& c) { return fn(c, true); });
}

}  // namespace

absl::Status RegisterExtraOps(OpRegistry& r) {
  RETURN_IF_ERROR(AddOp(
      r, "prims::convert_element_type(Tensor a, ScalarType dtype) -> Tensor",
      ConvertElementType));
  RETURN_IF_ERROR(
      AddOp(r, "prims::fma(Tensor a, Tensor b, Tensor c) -> Tensor", Fma));
  RETURN_IF_ERROR(AddOp(r,
                        "prims::iota(SymInt length, *, SymInt start, SymInt "
                        "step, ScalarType dtype, Device device, bool "
                        "requires_grad) -> Tensor",
                        Iota));
  // lift_fresh_copy: a contiguous copy (eager PyTorch does not keep a
  // transposed layout, unlike clone).
  RETURN_IF_ERROR(
      AddOp(r, "lift_fresh_copy(Tensor self) -> Tensor",
            [](const OpCall& c, bool running) -> absl::StatusOr<Value> {
              const Value& self = c.arg(0);
              ASSIGN_OR_RETURN(Value out,
                               ResultOrEmpty(c, running, DTypeOf(self),
                                             DeviceOf(self), SizesOf(self)));
              if (running) RETURN_IF_ERROR(CopyInto(out.tensor, self.tensor));
              return out;
            }));
  const char* kFactoryTail =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor";
  RETURN_IF_ERROR(AddOp(
      r, absl::StrCat("new_zeros(Tensor self, SymInt[] size, ", kFactoryTail),
      [](const OpCall& c, bool running) {
        return NewFull(c, running, Value::Int(0));
      }));
  RETURN_IF_ERROR(AddOp(
      r, absl::StrCat("new_ones(Tensor self, SymInt[] size, ", kFactoryTail),
      [](const OpCall& c, bool running) {
        return NewFull(c, running, Value::Int(1));
      }));
  // new_empty: uninitialized in PyTorch; lathe fills zeros.
  RETURN_IF_ERROR(AddOp(
      r, absl::StrCat("new_empty(Tensor self, SymInt[] size, ", kFactoryTail),
      [](const OpCall& c, bool running) {
        return NewFull(c, running, Value::Int(0));
      }));
  RETURN_IF_ERROR(AddOp(
      r,
      absl::StrCat("new_full(Tensor self, SymInt[] size, Scalar fill_value, ",
                   kFactoryTail),
      [](const OpCall& c, bool running) {
        return NewFull(c, running, c.arg("fill_value"));
      }));
  RETURN_IF_ERROR(AddOp(
      r,
      absl::StrCat("new_empty_strided(Tensor self, SymInt[] size, SymInt[] "
                   "stride, ",
                   kFactoryTail),
      [](const OpCall& c, bool running) -> absl::StatusOr<Value> {
        Value dtype = c.arg("dtype");
        if (dtype.is_none()) dtype = Value::OfDType(DTypeOf(c.arg(0)));
        return CallOp(c, running, "aten.empty_strided.default",
                      {c.arg("size"), c.arg("stride")}, {{"dtype", dtype}});
      }));
  RETURN_IF_ERROR(AddOp(
      r, "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
      MaskedFill));
  RETURN_IF_ERROR(AddOp(
      r, "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
      MaskedFill));
  RETURN_IF_ERROR(AddOp(r, "tril(Tensor self, SymInt diagonal=0) -> Tensor",
                        [](const OpCall& c, bool running) {
                          return Triangle(c, running, true);
                        }));
  RETURN_IF_ERROR(AddOp(r, "triu(Tensor self, SymInt diagonal=0) -> Tensor",
                        [](const OpCall& c, bool running) {
                          return Triangle(c, running, false);
                        }));
  RETURN_IF_ERROR(AddOp(
      r, "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
      LogSumExp));
  RETURN_IF_ERROR(
      AddOp(r, "std(Tensor self, bool unbiased=True) -> Tensor", Std));
  RETURN_IF_ERROR(AddOp(r,
                        "std.dim(Tensor self, int[1]? dim, bool unbiased=True, "
                        "bool keepdim=False) -> Tensor",
                        Std));
  RETURN_IF_ERROR(AddOp(r,
                        "std.correction(Tensor self, int[1]? dim=None, *, "
                        "Scalar? correction=None, bool keepdim=False) -> "
                        "Tensor",
                        Std));
  RETURN_IF_ERROR(AddOp(r,
                        "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? "
                        "dim=None, bool keepdim=False, *, ScalarType? "
                        "dtype=None) -> Tensor",
                        VectorNorm));
  RETURN_IF_ERROR(AddOp(
      r, "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      CumProd));
  RETURN_IF_ERROR(
      AddOp(r, "logcumsumexp(Tensor self, int dim) -> Tensor", LogCumSumExp));
  RETURN_IF_ERROR(AddOp(r,
                        "index_add(Tensor self, int dim, Tensor index, Tensor "
                        "source, *, Scalar alpha=1) -> Tensor",
                        IndexAdd));
  // The in-place twins of these non-pointwise ops; tril_, triu_ and
  // masked_fill_ write an overlapping self (PyTorch only warns for
  // masked_fill_), index_add_ refuses one. (cumprod_ computes in self's
  // dtype: CumProdInplace.)
  const std::tuple<const char*, const char*, bool> kTwins[] = {
      {"aten.masked_fill.Scalar", "Scalar", false},
      {"aten.masked_fill.Tensor", "Tensor", false},
      {"aten.tril.default", "default", false},
      {"aten.triu.default", "default", false},
      {"aten.index_add.default", "default", true}};
  for (const auto& [target, overload, refuse_overlap] : kTwins) {
    RETURN_IF_ERROR(r.AddInplaceTwin(target, overload, refuse_overlap));
  }
  RETURN_IF_ERROR(AddOp(r,
                        "cumprod_(Tensor(a!) self, int dim, *, ScalarType? "
                        "dtype=None) -> Tensor(a!)",
                        CumProdInplace));
  RETURN_IF_ERROR(r.Pair("aten.cumprod_.default", "aten.cumprod.default"));
  return absl::OkStatus();
}

// The pointwise ops PyTorch has no in-place form of.
constexpr absl::string_view kNoInplaceTwin[] = {
    "isnan", "isinf", "isfinite", "maximum", "minimum",
    "fmax",  "fmin",  "rsub",     "softplus"};

// The in-place overloads not named as their functional twin's.
constexpr std::pair<absl::string_view, absl::string_view> kInplaceOverload[] = {
    {"aten.pow.Tensor_Scalar", "Scalar"},
    {"aten.pow.Tensor_Tensor", "Tensor"},
    {"aten.floor_divide.default", "Tensor"}};

absl::Status RegisterInplaceTwins(OpRegistry& r) {
  for (const std::string& target : r.Targets()) {
    const OpDef* op = r.Find(target);
    const OpSchema& s = op->schema;
    if (!op->HasTag(OpTag::kPointwise) || s.IsMutable() ||
        s.arguments.empty() || s.arguments[0].name != "self" ||
        s.arguments[0].type.ToString() != "Tensor" || s.returns.size() != 1 ||
        std::find(std::begin(kNoInplaceTwin), std::end(kNoInplaceTwin),
                  s.name) != std::end(kNoInplaceTwin)) {
      continue;
    }
    std::string overload = s.overload.empty() ? "default" : s.overload;
    for (const auto& [functional, inplace] : kInplaceOverload) {
      if (functional == target) overload = std::string(inplace);
    }
    RETURN_IF_ERROR(
        r.AddInplaceTwin(target, overload, /*refuse_overlap=*/true));
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir
