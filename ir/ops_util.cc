#include "ir/ops_util.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "check.h"
#include "runtime/copy.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {

namespace {

int IntRank(DType d) {  // within the integer category
  switch (d) {
    case DType::kBool:
      return 0;
    case DType::kUInt8:
      return 1;
    case DType::kInt8:
      return 1;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
      return 3;
    case DType::kInt64:
      return 4;
    default:
      return -1;
  }
}

}  // namespace

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  bool fa = IsFloatingPoint(a), fb = IsFloatingPoint(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if ((a == DType::kFloat16 && b == DType::kBFloat16) ||
        (a == DType::kBFloat16 && b == DType::kFloat16)) {
      return DType::kFloat32;
    }
    auto width = [](DType d) {
      return d == DType::kFloat64 ? 3 : d == DType::kFloat32 ? 2 : 1;
    };
    return width(a) >= width(b) ? a : b;
  }
  // Both integers: uint8 with int8 needs int16; otherwise the wider.
  if ((a == DType::kUInt8 && b == DType::kInt8) ||
      (a == DType::kInt8 && b == DType::kUInt8)) {
    return DType::kInt16;
  }
  return IntRank(a) >= IntRank(b) ? a : b;
}

absl::StatusOr<bool> Decide(const OpCall& c, symbolic::Expr cond) {
  if (cond.kind() == symbolic::ExprKind::kBoolean) return cond.bool_value();
  if (c.env() == nullptr)
    return c.Error(absl::StrCat("cannot decide ", symbolic::ToString(cond)));
  return c.env()->EvaluateBool(cond);
}

absl::StatusOr<Value> ResultOrEmpty(const OpCall& call, bool running,
                                    DType dtype, Device device,
                                    std::vector<symbolic::Expr> sizes,
                                    std::vector<symbolic::Expr> strides) {
  if (strides.empty()) strides = ContiguousStrides(sizes);
  if (!running) {
    TensorMeta m;
    m.dtype = dtype;
    m.device = device;
    m.sizes = std::move(sizes);
    m.strides = std::move(strides);
    return Value::OfMeta(std::move(m));
  }
  if (!device.is_cpu()) return call.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(std::vector<int64_t> s, ConcreteSizes(call, sizes));
  ASSIGN_OR_RETURN(std::vector<int64_t> st, ConcreteSizes(call, strides));
  RETURN_IF_ERROR(CheckResultElements(call, dtype, s));
  absl::StatusOr<Tensor> t = Tensor::EmptyStrided(s, st, dtype);
  if (!t.ok()) return call.Error(t.status().message());
  return Value::OfTensor(*t);
}

std::string ShapeString(absl::Span<const symbolic::Expr> sizes) {
  std::vector<std::string> parts;
  for (symbolic::Expr e : sizes) parts.push_back(symbolic::ToString(e));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

namespace {
std::atomic<int64_t> max_op_elements{int64_t{1} << 40};
}  // namespace

void SetMaxOpElements(int64_t n) { max_op_elements.store(n); }
int64_t MaxOpElements() { return max_op_elements.load(); }

std::string TooManyElements(absl::string_view target, bool result,
                            symbolic::Expr numel, DType dtype,
                            absl::Span<const symbolic::Expr> sizes) {
  std::vector<std::string> spelled;
  for (symbolic::Expr e : sizes) spelled.push_back(symbolic::ToString(e));
  return TooManyElements(target, result, symbolic::ToString(numel), dtype,
                         spelled);
}

std::string TooManyElements(absl::string_view target, bool result,
                            absl::string_view numel, DType dtype,
                            absl::Span<const std::string> sizes) {
  return absl::StrCat(target, ": ", result ? "a result" : "an input", " of ",
                      numel, " elements (", ShortName(dtype), "[",
                      absl::StrJoin(sizes, ", "), "]) is more than the ",
                      MaxOpElements(), " one op may take (--max-elements)");
}

std::string NegativeDimension(symbolic::Expr size,
                              absl::Span<const symbolic::Expr> sizes) {
  std::vector<std::string> spelled;
  for (symbolic::Expr e : sizes) spelled.push_back(symbolic::ToString(e));
  return NegativeDimension(symbolic::ToString(size), spelled);
}

std::string NegativeDimension(absl::string_view size,
                              absl::Span<const std::string> sizes) {
  return absl::StrCat("Trying to create tensor with negative dimension ", size,
                      ": [", absl::StrJoin(sizes, ", "), "]");
}

std::string MaskedScatterSourceTooSmall() {
  return "Number of elements of source < number of ones in mask";
}

std::string IndexOutOfBounds(absl::string_view index, int64_t dim,
                             absl::string_view size) {
  return absl::StrCat("index ", index, " is out of bounds for dimension ", dim,
                      " with size ", size);
}

std::string TargetOutOfBounds(absl::string_view index) {
  return absl::StrCat("Target ", index, " is out of bounds.");
}

std::string IndexOutOfRangeInSelf(absl::string_view index,
                                  absl::string_view size) {
  return absl::StrCat("index out of range in self (index ", index, ", size ",
                      size, ")");
}

absl::Status CheckResultElements(const OpCall& call, DType dtype,
                                 absl::Span<const int64_t> sizes) {
  std::vector<symbolic::Expr> exprs;
  for (int64_t s : sizes) {
    if (s < 0) return absl::OkStatus();  // NegativeDimension's to refuse
    exprs.push_back(symbolic::Int(s));
  }
  // Saturated, as the cpu backend's host function counts.
  const int64_t numel = Numel(sizes);
  if (numel <= MaxOpElements()) return absl::OkStatus();
  return absl::InvalidArgumentError(TooManyElements(
      call.op().target, /*result=*/true, symbolic::Int(numel), dtype, exprs));
}

absl::string_view ScalarTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return "Half";
    case DType::kBFloat16:
      return "BFloat16";
    case DType::kFloat32:
      return "Float";
    case DType::kFloat64:
      return "Double";
    case DType::kInt8:
      return "Char";
    case DType::kInt16:
      return "Short";
    case DType::kInt32:
      return "Int";
    case DType::kInt64:
      return "Long";
    case DType::kUInt8:
      return "Byte";
    case DType::kBool:
      return "Bool";
  }
  return "?";
}

DType DTypeOf(const Value& v) {
  return v.tensor.defined() ? v.tensor.dtype() : v.meta.dtype;
}
Device DeviceOf(const Value& v) {
  return v.tensor.defined() ? v.tensor.device() : v.meta.device;
}
int64_t RankOf(const Value& v) {
  return v.tensor.defined() ? v.tensor.dim() : v.meta.dim();
}

std::vector<symbolic::Expr> SizesOf(const Value& v) {
  if (!v.tensor.defined()) return v.meta.sizes;
  std::vector<symbolic::Expr> out;
  for (int64_t s : v.tensor.sizes()) out.push_back(symbolic::Int(s));
  return out;
}

std::vector<symbolic::Expr> StridesOf(const Value& v) {
  if (!v.tensor.defined()) return v.meta.strides;
  std::vector<symbolic::Expr> out;
  for (int64_t s : v.tensor.strides()) out.push_back(symbolic::Int(s));
  return out;
}

absl::StatusOr<DType> ResultType(absl::Span<const Value> operands) {
  std::optional<DType> dim_result, zero_result, wrapped_result;
  auto merge = [](std::optional<DType>& acc, DType d) {
    acc = acc ? PromoteTypes(*acc, d) : d;
  };
  for (const Value& v : operands) {
    if (v.is_none()) continue;
    if (v.is_tensor()) {
      merge(RankOf(v) > 0 ? dim_result : zero_result, DTypeOf(v));
    } else if (v.is_number()) {
      symbolic::Expr e = v.number;
      DType d = e.is_bool()  ? DType::kBool
                : e.is_int() ? DType::kInt64
                             : DType::kFloat32;
      merge(wrapped_result, d);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot promote ", v.DebugString()));
    }
  }
  // combine_categories(higher, lower): the lower priority result only wins
  // when it is of a higher category.
  auto combine = [](std::optional<DType> higher,
                    std::optional<DType> lower) -> std::optional<DType> {
    if (!higher) return lower;
    if (!lower) return higher;
    if (IsFloatingPoint(*higher)) return higher;
    if (*higher == DType::kBool || IsFloatingPoint(*lower)) {
      return PromoteTypes(*higher, *lower);
    }
    return higher;
  };
  std::optional<DType> r =
      combine(dim_result, combine(zero_result, wrapped_result));
  if (!r) return absl::InvalidArgumentError("no operand to take a dtype from");
  return *r;
}

absl::StatusOr<std::vector<symbolic::Expr>> BroadcastShapes(
    const OpCall& call, absl::Span<const std::vector<symbolic::Expr>> shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<symbolic::Expr> out(rank, symbolic::Int(1));
  for (const auto& s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      symbolic::Expr& o = out[offset + i];
      symbolic::Expr d = s[i];
      if (d == o || d.is_constant(1)) continue;
      if (o.is_constant(1)) {
        o = d;
        continue;
      }
      bool equal = false;
      if (call.env() != nullptr) {
        ASSIGN_OR_RETURN(equal, call.env()->EvaluateBool(symbolic::Eq(o, d)));
      }
      if (!equal) {
        return call.Error(absl::StrCat(
            "The size of tensor a (", symbolic::ToString(o),
            ") must match the size of tensor b (", symbolic::ToString(d),
            ") at non-singleton dimension ", offset + i));
      }
    }
  }
  return out;
}

absl::StatusOr<int64_t> WrapDim(const OpCall& call, int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    return call.Error(
        absl::StrCat("Dimension out of range (expected to be in range of [", -r,
                     ", ", r - 1, "], but got ", dim, ")"));
  }
  return dim < 0 ? dim + r : dim;
}

std::vector<symbolic::Expr> ContiguousStrides(
    absl::Span<const symbolic::Expr> sizes) {
  std::vector<symbolic::Expr> strides(sizes.size(), symbolic::Int(1));
  symbolic::Expr acc = symbolic::Int(1);
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    acc = symbolic::Mul(acc, symbolic::Max(sizes[d], symbolic::Int(1)));
  }
  return strides;
}

absl::string_view TypeMetaName(DType d) {
  switch (d) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kFloat16:
      return "c10::Half";
    case DType::kBFloat16:
      return "c10::BFloat16";
    case DType::kInt64:
      return "long int";
    case DType::kInt32:
      return "int";
    case DType::kInt16:
      return "short int";
    case DType::kInt8:
      return "signed char";
    case DType::kUInt8:
      return "unsigned char";
    default:
      return "bool";
  }
}

std::string InplaceCastMessage(const OpSchema& schema, DType result,
                               DType self) {
  bool scalar_clamp =
      absl::StartsWith(schema.name, "clamp") && schema.overload != "Tensor";
  return absl::StrCat("result type ", ScalarTypeName(result),
                      " can't be cast to the desired output type ",
                      scalar_clamp ? TypeMetaName(self) : ScalarTypeName(self));
}

absl::Status CheckInternalOverlap(const OpCall& call, const Value& self) {
  std::vector<symbolic::Expr> sizes = SizesOf(self), strides = StridesOf(self);
  symbolic::Expr numel = symbolic::Int(1);
  for (const symbolic::Expr& s : sizes) numel = symbolic::Mul(numel, s);
  ASSIGN_OR_RETURN(bool empty,
                   Decide(call, symbolic::Eq(numel, symbolic::Int(0))));
  if (empty) return absl::OkStatus();
  for (size_t d = 0; d < sizes.size(); ++d) {
    ASSIGN_OR_RETURN(
        bool overlaps,
        Decide(call, symbolic::And(symbolic::Eq(strides[d], symbolic::Int(0)),
                                   symbolic::Gt(sizes[d], symbolic::Int(1)))));
    if (overlaps) {
      return call.Error(
          "unsupported operation: more than one element of the written-to "
          "tensor refers to a single memory location. Please clone() the "
          "tensor before performing the operation.");
    }
  }
  return absl::OkStatus();
}

Value MetaResult(DType dtype, Device device,
                 std::vector<symbolic::Expr> sizes) {
  TensorMeta m;
  m.dtype = dtype;
  m.device = device;
  m.strides = ContiguousStrides(sizes);
  m.sizes = std::move(sizes);
  return Value::OfMeta(std::move(m));
}

absl::StatusOr<std::vector<int64_t>> ConcreteSizes(
    const OpCall& call, absl::Span<const symbolic::Expr> sizes) {
  std::vector<int64_t> out;
  for (symbolic::Expr e : sizes) {
    if (e.kind() == symbolic::ExprKind::kInteger) {
      out.push_back(e.int_value());
      continue;
    }
    if (call.env() == nullptr) {
      return call.Error(
          absl::StrCat("size ", symbolic::ToString(e), " is not concrete"));
    }
    absl::StatusOr<int64_t> v =
        call.env()->GuardInt(e);  // specializes, as PyTorch does
    if (!v.ok()) return call.Error(v.status().message());
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<Tensor> BroadcastView(const Tensor& t,
                                     absl::Span<const int64_t> sizes) {
  if (static_cast<size_t>(t.dim()) > sizes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot broadcast ", t.ToString(), " to [",
                     absl::StrJoin(sizes, ", "), "]"));
  }
  size_t offset = sizes.size() - t.dim();
  std::vector<int64_t> strides(sizes.size(), 0);
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == sizes[offset + d]) {
      strides[offset + d] = t.strides()[d];
    } else if (t.sizes()[d] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot broadcast ", t.ToString(), " to [",
                       absl::StrJoin(sizes, ", "), "]"));
    }
  }
  return t.AsStrided(sizes, strides, t.storage_offset());
}

double LoadDouble(const Tensor& t, absl::Span<const int64_t> index) {
  return t.GetDouble(index);
}

int64_t LoadInt(const Tensor& t, absl::Span<const int64_t> index) {
  return ElementAccess(t).LoadInt(t.ElementOffset(index));
}

void StoreDouble(const Tensor& t, absl::Span<const int64_t> index, double v) {
  t.SetDouble(index, v);
}

void StoreInt(const Tensor& t, absl::Span<const int64_t> index, int64_t v) {
  ElementAccess(t).StoreInt(t.ElementOffset(index), v);
}

ElementAccess::ElementAccess(const Tensor& t)
    : base_(static_cast<char*>(t.storage().data())), item_(t.itemsize()) {
  VisitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    load_double_ = [](const char* p) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return ToDouble(v);
    };
    // Rows: a loop of the element conversions, one call per row.
    load_doubles_ = [](const char* p, int64_t byte_step, int64_t n,
                       double* out) {
      if (byte_step == static_cast<int64_t>(sizeof(T))) {
        for (int64_t j = 0; j < n; ++j) {
          T v;
          std::memcpy(&v, p + j * sizeof(T), sizeof(T));
          out[j] = ToDouble(v);
        }
        return;
      }
      for (int64_t j = 0; j < n; ++j) {
        T v;
        std::memcpy(&v, p + j * byte_step, sizeof(T));
        out[j] = ToDouble(v);
      }
    };
    store_doubles_ = [](char* p, int64_t byte_step, int64_t n,
                        const double* in) {
      for (int64_t j = 0; j < n; ++j) {
        T out = FromDouble<T>(in[j]);
        std::memcpy(p + j * byte_step, &out, sizeof(T));
      }
    };
    load_int_ = [](const char* p) -> int64_t {
      T v;
      std::memcpy(&v, p, sizeof(T));
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        return TruncateToInt<int64_t>(v.ToFloat());
      } else if constexpr (std::is_floating_point_v<T>) {
        return TruncateToInt<int64_t>(v);
      } else {
        return static_cast<int64_t>(v);
      }
    };
    store_double_ = [](char* p, double v) {
      T out = FromDouble<T>(v);
      std::memcpy(p, &out, sizeof(T));
    };
    store_int_ = [](char* p, int64_t v) {
      T out;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        out = T::FromFloat(static_cast<float>(v));
      } else if constexpr (std::is_same_v<T, bool>) {
        out = v != 0;
      } else {
        out = static_cast<T>(static_cast<uint64_t>(v));  // wraps, as PyTorch
      }
      std::memcpy(p, &out, sizeof(T));
    };
  });
}

void CopyElement(const Tensor& dst, absl::Span<const int64_t> dst_index,
                 const Tensor& src, absl::Span<const int64_t> src_index) {
  if (IsIntegral(dst.dtype(), true) && IsIntegral(src.dtype(), true)) {
    StoreInt(dst, dst_index, LoadInt(src, src_index));
  } else {
    StoreDouble(dst, dst_index, LoadDouble(src, src_index));
  }
}

absl::Status CopyInto(const Tensor& dst, const Tensor& src) {
  // src may overlap dst: read it whole first, into a copy of its own size
  // (never more than dst's: it broadcasts to dst). Otherwise nothing is
  // staged, so the working memory is bounded by the result.
  Tensor from = src;
  if (src.storage() == dst.storage()) {
    ASSIGN_OR_RETURN(from, src.Clone());
  }
  ASSIGN_OR_RETURN(Tensor view, BroadcastView(from, dst.sizes()));
  if (view.dtype() == dst.dtype() && dst.device().is_cpu() &&
      view.device() == dst.device()) {
    return CopyTensor(dst, view);
  }
  bool exact_ints =
      IsIntegral(dst.dtype(), true) && IsIntegral(src.dtype(), true);
  ForEachIndex(dst.sizes(), [&](absl::Span<const int64_t> i) {
    if (exact_ints) {
      StoreInt(dst, i, LoadInt(view, i));
    } else {
      StoreDouble(dst, i, LoadDouble(view, i));
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ScalarTensor(const Value& number, DType dtype) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({}, dtype));
  if (number.number.is_int() && IsIntegral(dtype, true)) {
    ASSIGN_OR_RETURN(int64_t v, number.AsInt());
    StoreInt(t, {}, v);
  } else {
    ASSIGN_OR_RETURN(double v, number.AsDouble());
    StoreDouble(t, {}, v);
  }
  return t;
}

Value AsMeta(const Value& v) {
  if (!v.is_tensor() || !v.tensor.defined()) return v;
  TensorMeta m;
  m.dtype = v.tensor.dtype();
  m.device = v.tensor.device();
  for (int64_t s : v.tensor.sizes()) m.sizes.push_back(symbolic::Int(s));
  for (int64_t s : v.tensor.strides()) m.strides.push_back(symbolic::Int(s));
  m.storage_offset = symbolic::Int(v.tensor.storage_offset());
  return Value::OfMeta(m);
}

absl::StatusOr<Value> ResultMetaOf(const OpCall& c) {
  std::vector<Value> args;
  for (int i = 0; i < c.num_args(); ++i) {
    Value v = AsMeta(c.arg(i));
    for (Value& item : v.list) item = AsMeta(item);  // Tensor[] (cat)
    args.push_back(std::move(v));
  }
  OpCall call(c.op(), std::move(args), c.env(), c.generator());
  return c.op().meta(call);
}

absl::StatusOr<Value> CallOp(
    const OpCall& c, bool running, absl::string_view target,
    std::vector<Value> args,
    std::vector<std::pair<std::string, Value>> kwargs) {
  const OpDef* op = OpRegistry::Global().Find(target);
  LATHE_CHECK(op != nullptr) << "no op " << target;
  ASSIGN_OR_RETURN(
      std::vector<Value> bound,
      BindArguments(op->schema, std::move(args), std::move(kwargs), target));
  OpCall call(*op, std::move(bound), c.env(), c.generator());
  absl::StatusOr<Value> out = running ? op->kernel(call) : op->meta(call);
  if (out.ok()) return out;
  absl::string_view message = out.status().message();
  absl::ConsumePrefix(&message, absl::StrCat(target, ": "));
  return c.Error(message);
}

absl::Status CheckSpatialTarget(const OpCall& call,
                                const std::vector<symbolic::Expr>& input,
                                const std::vector<symbolic::Expr>& target) {
  bool fits = input.size() == 4 && target.size() == 3;
  for (int d : {0, 2, 3}) {
    if (!fits) break;
    ASSIGN_OR_RETURN(
        fits, Decide(call, symbolic::Eq(input[d], target[d == 0 ? 0 : d - 1])));
  }
  if (fits) return absl::OkStatus();
  return call.Error(absl::StrCat(
      "input and target batch or spatial sizes don't match: target ",
      ShapeString(target), ", input ", ShapeString(input)));
}

std::vector<double> RowMajorValues(const Tensor& t) {
  std::vector<double> out;
  out.reserve(t.numel());
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    out.push_back(LoadDouble(t, i));
  });
  return out;
}

absl::StatusOr<std::vector<bool>> OutputMask(const OpCall& call, size_t n) {
  std::vector<bool> out;
  for (const Value& e : call.arg("output_mask").list) {
    ASSIGN_OR_RETURN(bool b, e.AsBool());
    out.push_back(b);
  }
  if (out.size() != n) {
    return call.Error(absl::StrCat("output_mask must have ", n, " values"));
  }
  return out;
}

absl::StatusOr<bool> SameShape(const OpCall& call,
                               const std::vector<symbolic::Expr>& a,
                               const std::vector<symbolic::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    ASSIGN_OR_RETURN(bool same, Decide(call, symbolic::Eq(a[d], b[d])));
    if (!same) return false;
  }
  return true;
}

std::vector<int64_t> IntElements(const Tensor& t) {
  std::vector<int64_t> out;
  out.reserve(t.numel());
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    out.push_back(LoadInt(t, i));
  });
  return out;
}

void WriteRowMajor(const Tensor& t, const std::vector<double>& values) {
  size_t k = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    StoreDouble(t, i, values[k++]);
  });
}

}  // namespace lathe::ir
