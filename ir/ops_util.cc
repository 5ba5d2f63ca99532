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

// The dims of a 4-d (5-d) tensor from the fastest-moving in, channels last:
// C, W, H, N (C, W, H, D, N).
std::vector<int64_t> ChannelsLastOrder(size_t rank) {
  return rank == 4 ? std::vector<int64_t>{1, 3, 2, 0}
                   : std::vector<int64_t>{1, 4, 3, 2, 0};
}

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
  return absl::StrCat(target, ": ", result ? "a result" : "an input", " of ",
                      symbolic::ToString(numel), " elements (",
                      ShortName(dtype), ShapeString(sizes),
                      ") is more than the ", MaxOpElements(),
                      " one op may take (--max-elements)");
}

absl::Status CheckResultElements(const OpCall& call, DType dtype,
                                 absl::Span<const int64_t> sizes) {
  int64_t numel = 1;
  std::vector<symbolic::Expr> exprs;
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(numel, s, &numel)) return absl::OkStatus();
    exprs.push_back(symbolic::Int(s));
  }
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

namespace {

std::optional<std::vector<int64_t>> Concrete(
    absl::Span<const symbolic::Expr> v) {
  std::vector<int64_t> out;
  for (symbolic::Expr e : v) {
    if (e.kind() != symbolic::ExprKind::kInteger) return std::nullopt;
    out.push_back(e.int_value());
  }
  return out;
}

bool NonOverlappingAndDense(const std::vector<int64_t>& sizes,
                            const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) dims.push_back({strides[d], sizes[d]});
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace

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

std::vector<symbolic::Expr> PointwiseStrides(
    absl::Span<const Value> operands, absl::Span<const symbolic::Expr> sizes) {
  std::vector<symbolic::Expr> contiguous = ContiguousStrides(sizes);
  std::optional<std::vector<int64_t>> shape = Concrete(sizes);
  if (!shape) return contiguous;
  const int64_t ndim = static_cast<int64_t>(shape->size());
  int64_t numel = 1;
  for (int64_t s : *shape) {
    // Too many elements to address: shape propagation reports the result.
    if (__builtin_mul_overflow(numel, s, &numel)) return contiguous;
  }
  if (numel == 0 || ndim <= 1) return contiguous;
  // Each tensor operand's strides broadcast to the output shape.
  std::vector<std::vector<int64_t>> strides;
  bool same_shape = true;
  for (const Value& v : operands) {
    if (!v.is_tensor()) {
      // A number is a wrapped 0-d tensor operand: it rules out the fast
      // setup (as a 0-d tensor does) and adds no strides.
      if (v.is_number()) same_shape = false;
      continue;
    }
    std::optional<std::vector<int64_t>> s = Concrete(SizesOf(v)),
                                        st = Concrete(StridesOf(v));
    if (!s || !st) return contiguous;
    if (*s != *shape) same_shape = false;
    std::vector<int64_t> b(ndim, 0);
    int64_t offset = ndim - static_cast<int64_t>(s->size());
    for (size_t d = 0; d < s->size(); ++d) {
      b[offset + d] =
          ((*s)[d] == 1 && (*shape)[offset + d] != 1) ? 0 : (*st)[d];
    }
    strides.push_back(std::move(b));
  }
  if (strides.empty()) return contiguous;
  if (same_shape) {  // TensorIterator's fast setup
    bool all_contiguous = true, same_dense = true;
    for (size_t k = 0; k < strides.size(); ++k) {
      std::vector<int64_t> c = *Concrete(contiguous);
      for (int64_t d = 0; d < ndim; ++d) {
        if ((*shape)[d] != 1 && strides[k][d] != c[d]) all_contiguous = false;
      }
      if (!NonOverlappingAndDense(*shape, strides[k]) ||
          strides[k] != strides[0])
        same_dense = false;
    }
    if (all_contiguous) return contiguous;
    // Then channels-last (4-d) / channels-last-3d (5-d): every operand
    // is_contiguous(ChannelsLast), size-1 dims ignored, gives that format.
    if (ndim == 4 || ndim == 5) {
      std::vector<int64_t> order = ChannelsLastOrder(ndim);
      bool all_channels_last = true;
      for (const std::vector<int64_t>& st : strides) {
        int64_t expected = 1;
        for (int64_t d : order) {
          if ((*shape)[d] == 1) continue;
          if (st[d] != expected) all_channels_last = false;
          expected *= (*shape)[d];
        }
      }
      if (all_channels_last) return ChannelsLastStrides(sizes);
    }
    if (same_dense) {
      std::vector<symbolic::Expr> out;
      for (int64_t s : strides[0]) out.push_back(symbolic::Int(s));
      return out;
    }
  }
  // reorder_dimensions: perm[0] is the fastest-moving dim.
  std::vector<int64_t> perm(ndim);
  for (int64_t d = 0; d < ndim; ++d) perm[d] = ndim - 1 - d;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const std::vector<int64_t>& st : strides) {
      int64_t s0 = st[d0], s1 = st[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if ((*shape)[d0] > (*shape)[d1]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      int cmp = should_swap(perm[dim0], perm[dim1]);
      if (cmp > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  bool inverted = true;
  for (int64_t j = 0; j < ndim; ++j)
    inverted = inverted && perm[j] == ndim - 1 - j;
  if (inverted) return contiguous;
  std::vector<symbolic::Expr> out(ndim);
  int64_t next = 1;
  for (int64_t j = 0; j < ndim; ++j) {
    out[perm[j]] = symbolic::Int(next);
    next *= (*shape)[perm[j]];
  }
  return out;
}

bool SuggestsChannelsLast(const Value& t) {
  std::optional<std::vector<int64_t>> sizes = Concrete(SizesOf(t)),
                                      strides = Concrete(StridesOf(t));
  if (!sizes || !strides || (sizes->size() != 4 && sizes->size() != 5)) {
    return false;
  }
  std::vector<int64_t> order = ChannelsLastOrder(sizes->size());
  // c10's is_channels_last_strides_{2,3}d_s{4,5}.
  if ((*strides)[1] == 0) return false;
  int64_t min = 0;
  for (int64_t d : order) {
    if ((*sizes)[d] == 0 || (*strides)[d] < min) return false;
    if (d == 0 && min == (*strides)[1]) return false;
    min = (*strides)[d];
    if ((*sizes)[d] > 1) min *= (*sizes)[d];
  }
  return true;
}

std::vector<symbolic::Expr> ChannelsLastStrides(
    absl::Span<const symbolic::Expr> sizes) {
  std::vector<int64_t> order = ChannelsLastOrder(sizes.size());
  std::vector<symbolic::Expr> out(sizes.size());
  symbolic::Expr next = symbolic::Int(1);
  for (int64_t d : order) {
    out[d] = next;
    next = symbolic::Mul(next, sizes[d]);
  }
  return out;
}

std::vector<symbolic::Expr> PreservedStrides(
    absl::Span<const symbolic::Expr> sizes,
    absl::Span<const symbolic::Expr> strides) {
  std::vector<symbolic::Expr> contiguous = ContiguousStrides(sizes);
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size), size > 1
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d].kind() != symbolic::ExprKind::kInteger ||
        strides[d].kind() != symbolic::ExprKind::kInteger) {
      return contiguous;
    }
    if (sizes[d].int_value() == 0) return contiguous;
    if (sizes[d].int_value() != 1)
      dims.push_back({strides[d].int_value(), sizes[d].int_value()});
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return contiguous;
    expected *= size;
  }
  return std::vector<symbolic::Expr>(strides.begin(), strides.end());
}

std::vector<symbolic::Expr> EmptyLikeStrides(const Value& self) {
  std::vector<symbolic::Expr> sizes = SizesOf(self), strides = StridesOf(self);
  std::optional<std::vector<int64_t>> size = Concrete(sizes),
                                      stride = Concrete(strides);
  if (!size || !stride) return ContiguousStrides(sizes);
  const int64_t ndim = static_cast<int64_t>(size->size());
  // is_non_overlapping_and_dense: an empty tensor is; otherwise the dims of
  // size >= 2, by stride, chain densely from 1.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  bool dense = true;
  for (int64_t d = 0; d < ndim; ++d) {
    if ((*size)[d] == 0) return strides;
    if ((*size)[d] >= 2) dims.push_back({(*stride)[d], (*size)[d]});
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [st, sz] : dims) {
    if (st != expected) dense = false;
    expected *= sz;
  }
  if (dense) return strides;
  // infer_dense_strides: perm[0] is the fastest-moving dim; stride-0 dims
  // compare as ambiguous.
  std::vector<int64_t> perm(ndim);
  for (int64_t d = 0; d < ndim; ++d) perm[d] = ndim - 1 - d;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    int64_t s0 = (*stride)[d0], s1 = (*stride)[d1];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    return (*size)[d0] > (*size)[d1] ? 1 : 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      int c = should_swap(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<symbolic::Expr> out(ndim);
  int64_t curr = 1;
  for (int64_t i = 0; i < ndim; ++i) {
    out[perm[i]] = symbolic::Int(curr);
    if ((*size)[perm[i]] > 1) curr *= (*size)[perm[i]];
  }
  return out;
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
  int64_t off = t.ElementOffset(index);
  return VisitDType(t.dtype(), [&](auto tag) -> int64_t {
    using T = decltype(tag);
    T v;
    std::memcpy(&v,
                static_cast<const char*>(t.storage().data()) + off * sizeof(T),
                sizeof(T));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return static_cast<int64_t>(v.ToFloat());
    } else {
      return static_cast<int64_t>(v);
    }
  });
}

void StoreDouble(const Tensor& t, absl::Span<const int64_t> index, double v) {
  t.SetDouble(index, v);
}

void StoreInt(const Tensor& t, absl::Span<const int64_t> index, int64_t v) {
  int64_t off = t.ElementOffset(index);
  VisitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T out;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      out = T::FromFloat(static_cast<float>(v));
    } else if constexpr (std::is_same_v<T, bool>) {
      out = v != 0;
    } else {
      out = static_cast<T>(static_cast<uint64_t>(v));  // wraps, as PyTorch
    }
    std::memcpy(static_cast<char*>(t.storage().data()) + off * sizeof(T), &out,
                sizeof(T));
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

}  // namespace lathe::ir
