// Creation and copy ops: full, zeros, ones, clone, _to_copy, copy_,
// sym_size.int, sym_storage_offset, and the random ops (rand, randn,
// randperm, native_dropout), linspace, eye and empty_permuted.

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/random.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// dtype= if given, else what `fill` implies (bool, int64 or float32).
DType CreationDType(const OpCall& c, const Value* fill) {
  const Value& d = c.arg("dtype");
  if (!d.is_none()) return d.dtype;
  if (fill == nullptr) return DType::kFloat32;
  if (fill->number.is_bool()) return DType::kBool;
  return fill->number.is_int() ? DType::kInt64 : DType::kFloat32;
}

Device CreationDevice(const OpCall& c) {
  const Value& d = c.arg("device");
  return d.is_none() ? Device::Cpu() : d.device;
}

absl::StatusOr<Value> Full(const OpCall& c, const Value* fill,
                           double constant) {
  ASSIGN_OR_RETURN(std::vector<Expr> sizes, c.arg(0).AsExprList());
  for (Expr s : sizes) {
    if (s.kind() == symbolic::ExprKind::kInteger && s.int_value() < 0) {
      return c.Error(NegativeDimension(s, sizes));
    }
  }
  DType dtype = CreationDType(c, fill);
  Device device = CreationDevice(c);
  if (c.env() != nullptr || !device.is_cpu()) {
    if (c.env() == nullptr) return c.Error("the interpreter runs on cpu only");
    return MetaResult(dtype, device, sizes);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> concrete, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(concrete, dtype));
  Value value = fill != nullptr ? *fill : Value::Float(constant);
  ASSIGN_OR_RETURN(Tensor scalar, ScalarTensor(value, dtype));
  RETURN_IF_ERROR(CopyInto(out, scalar));
  return Value::OfTensor(out);
}

// A new tensor shaped like `self` as memory_format says (preserve by
// default); filled from `fill` when it is given.
absl::StatusOr<Value> Like(const OpCall& c, const Value& self, DType dtype,
                           Device device, const Tensor* fill) {
  std::vector<Expr> sizes = SizesOf(self), strides = ContiguousStrides(sizes);
  int mf = c.op().schema.ArgumentIndex("memory_format");
  std::string format =
      mf < 0 || c.arg(mf).is_none() ? "preserve_format" : c.arg(mf).string;
  if (format == "preserve_format") {
    strides = PreservedStrides(c.env(), sizes, StridesOf(self));
  } else if (format == "channels_last" || format == "channels_last_3d") {
    size_t rank = format == "channels_last" ? 4 : 5;
    if (sizes.size() != rank) {
      return c.Error(absl::StrCat("required rank ", rank, " tensor to use ",
                                  format, " format"));
    }
    strides = ChannelsLastStrides(sizes);
  } else if (format != "contiguous_format") {
    return c.Error(absl::StrCat("unsupported memory_format torch.", format));
  }
  ASSIGN_OR_RETURN(Value out, ResultOrEmpty(c, self.tensor.defined(), dtype,
                                            device, sizes, strides));
  if (fill != nullptr) RETURN_IF_ERROR(CopyInto(out.tensor, *fill));
  return out;
}

absl::StatusOr<Value> ToCopy(const OpCall& c, bool keep_dtype) {
  const Value& self = c.arg(0);
  DType dtype = DTypeOf(self);
  if (!keep_dtype && !c.arg("dtype").is_none()) dtype = c.arg("dtype").dtype;
  Device device = DeviceOf(self);
  if (!keep_dtype && !c.arg("device").is_none())
    device = c.arg("device").device;
  return Like(c, self, dtype, device,
              self.tensor.defined() ? &self.tensor : nullptr);
}

// zeros_like / ones_like / empty_like / full_like.
absl::StatusOr<Value> FullLike(const OpCall& c, const Value& fill) {
  const Value& self = c.arg(0);
  DType dtype = c.arg("dtype").is_none() ? DTypeOf(self) : c.arg("dtype").dtype;
  Device device =
      c.arg("device").is_none() ? DeviceOf(self) : c.arg("device").device;
  if (!self.tensor.defined()) return Like(c, self, dtype, device, nullptr);
  ASSIGN_OR_RETURN(Tensor scalar, ScalarTensor(fill, dtype));
  return Like(c, self, dtype, device, &scalar);
}

// src must broadcast to self's shape (not beyond it).
absl::Status CheckCopyShapes(const OpCall& c, const Value& self,
                             const Value& src) {
  std::vector<Expr> to = SizesOf(self);
  ASSIGN_OR_RETURN(
      std::vector<Expr> b,
      BroadcastShapes(
          c, {to, src.is_tensor() ? SizesOf(src) : std::vector<Expr>{}}));
  if (b.size() != to.size()) {
    return c.Error(absl::StrCat("output with shape ", ShapeString(to),
                                " doesn't match the broadcast shape ",
                                ShapeString(b)));
  }
  for (size_t d = 0; d < b.size(); ++d) {
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(b[d], to[d])));
    if (!same) {
      return c.Error(absl::StrCat("output with shape ", ShapeString(to),
                                  " doesn't match the broadcast shape ",
                                  ShapeString(b)));
    }
  }
  return absl::OkStatus();
}

// copy(self, src): src converted and broadcast into self's layout.
absl::StatusOr<Value> Copy(const OpCall& c) {
  const Value &self = c.arg(0), &src = c.arg(1);
  RETURN_IF_ERROR(CheckCopyShapes(c, self, src));
  ASSIGN_OR_RETURN(Value out,
                   Like(c, self, DTypeOf(self), DeviceOf(self), nullptr));
  if (self.tensor.defined()) RETURN_IF_ERROR(CopyInto(out.tensor, src.tensor));
  return out;
}

absl::StatusOr<Value> EmptyStrided(const OpCall& c) {
  ASSIGN_OR_RETURN(std::vector<Expr> sizes, c.arg(0).AsExprList());
  ASSIGN_OR_RETURN(std::vector<Expr> strides, c.arg(1).AsExprList());
  if (sizes.size() != strides.size()) {
    return c.Error(
        absl::StrCat("mismatch in length of strides and shape: ", sizes.size(),
                     " sizes and ", strides.size(), " strides"));
  }
  return ResultOrEmpty(c, c.env() == nullptr, CreationDType(c, nullptr),
                       CreationDevice(c), sizes, strides);
}

// constant_pad_nd(self, pad, value): pads (or, negative, crops) the last
// dims, pad = [last_lo, last_hi, second_last_lo, ...].
absl::StatusOr<Value> ConstantPad(const OpCall& c) {
  const Value& self = c.arg(0);
  ASSIGN_OR_RETURN(std::vector<Expr> pad, c.arg(1).AsExprList());
  std::vector<Expr> sizes = SizesOf(self);
  if (pad.size() % 2 != 0) {
    return c.Error(absl::StrCat(
        "Length of pad must be even but instead it equals ", pad.size()));
  }
  if (pad.size() / 2 > sizes.size()) {
    return c.Error(
        "Length of pad should be no more than twice the number of dimensions "
        "of the input.");
  }
  std::vector<Expr> out = sizes;
  std::vector<Expr> lo(sizes.size(), symbolic::Int(0));
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    size_t d = sizes.size() - 1 - k;
    lo[d] = pad[2 * k];
    out[d] = symbolic::Add(symbolic::Add(sizes[d], pad[2 * k]), pad[2 * k + 1]);
    ASSIGN_OR_RETURN(bool negative,
                     Decide(c, symbolic::Lt(out[d], symbolic::Int(0))));
    if (negative) {
      return c.Error(absl::StrCat(
          "The input size ", symbolic::ToString(sizes[d]),
          ", plus negative padding ", symbolic::ToString(pad[2 * k]), " and ",
          symbolic::ToString(pad[2 * k + 1]),
          " resulted in a negative output size, which is invalid. Check "
          "dimension ",
          d, " of your input."));
    }
  }
  bool running = self.tensor.defined();
  ASSIGN_OR_RETURN(Value result, ResultOrEmpty(c, running, DTypeOf(self),
                                               DeviceOf(self), out));
  if (!running) return result;
  ASSIGN_OR_RETURN(Tensor fill, ScalarTensor(c.arg(2), DTypeOf(self)));
  RETURN_IF_ERROR(CopyInto(result.tensor, fill));
  ASSIGN_OR_RETURN(std::vector<int64_t> l, ConcreteSizes(c, lo));
  const Tensor& in = self.tensor;
  ForEachIndex(in.sizes(), [&](absl::Span<const int64_t> i) {
    std::vector<int64_t> o(i.begin(), i.end());
    for (size_t d = 0; d < o.size(); ++d) {
      o[d] += l[d];
      if (o[d] < 0 || o[d] >= result.tensor.sizes()[d]) return;  // cropped
    }
    CopyElement(result.tensor, o, in, i);
  });
  return result;
}

absl::StatusOr<Value> SymStride(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(c.arg(0))));
  return Value::Number(StridesOf(c.arg(0))[dim]);
}

absl::StatusOr<Value> SymNumel(const OpCall& c) {
  Expr n = symbolic::Int(1);
  for (Expr s : SizesOf(c.arg(0))) n = symbolic::Mul(n, s);
  return Value::Number(n);
}

absl::StatusOr<Value> SymStorageOffset(const OpCall& c) {
  const Value& self = c.arg(0);
  if (self.tensor.defined()) return Value::Int(self.tensor.storage_offset());
  return Value::Number(self.meta.storage_offset);
}

absl::StatusOr<Value> CopyInplace(const OpCall& c) {
  const Value& self = c.arg(0);
  const Value& src = c.arg(1);
  RETURN_IF_ERROR(CheckCopyShapes(c, self, src));
  if (!self.tensor.defined()) return self;
  Tensor s;
  if (src.is_tensor()) {
    s = src.tensor;
  } else {
    ASSIGN_OR_RETURN(s, ScalarTensor(src, self.tensor.dtype()));
  }
  absl::Status st = CopyInto(self.tensor, s);
  if (!st.ok()) return c.Error(st.message());
  return self;
}

absl::StatusOr<Value> SymSize(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, RankOf(c.arg(0))));
  return Value::Number(SizesOf(c.arg(0))[dim]);
}

absl::StatusOr<Value> LocalScalarDense(const OpCall& c) {
  const Value& self = c.arg(0);
  Expr numel = symbolic::Int(1);
  for (Expr s : SizesOf(self)) numel = symbolic::Mul(numel, s);
  ASSIGN_OR_RETURN(bool one, Decide(c, symbolic::Eq(numel, symbolic::Int(1))));
  if (!one)
    return c.Error(
        "a Tensor with more than one element cannot be converted to Scalar");
  DType d = DTypeOf(self);
  if (!self.tensor.defined()) {  // data-dependent: a fresh unbacked symbol
    if (c.env() == nullptr) return c.Error("no ShapeEnv for an unbacked value");
    if (IsFloatingPoint(d))
      return Value::Number(c.env()->CreateUnbackedFloat());
    Expr u = c.env()->CreateUnbacked();
    if (d != DType::kBool) return Value::Number(u);
    RETURN_IF_ERROR(c.env()->ConstrainRange(u, 0, 1));
    return Value::Number(symbolic::Eq(u, symbolic::Int(1)));
  }
  std::vector<int64_t> zero(self.tensor.dim(), 0);
  if (d == DType::kBool) return Value::Bool(LoadInt(self.tensor, zero) != 0);
  if (IsIntegral(d, false)) return Value::Int(LoadInt(self.tensor, zero));
  return Value::Float(LoadDouble(self.tensor, zero));
}

absl::StatusOr<Value> AssertScalar(const OpCall& c) {
  const Value& cond = c.arg(0);
  if (cond.number.kind() == symbolic::ExprKind::kBoolean ||
      cond.number.kind() == symbolic::ExprKind::kInteger) {
    ASSIGN_OR_RETURN(int64_t v, cond.AsInt());
    if (v == 0) return c.Error(c.arg(1).string);
    return Value::None();
  }
  if (c.env() != nullptr) {
    RETURN_IF_ERROR(c.env()->ExpectTrue(cond.number, c.arg(1).string));
  }
  return Value::None();
}

// arange(start, end, step): ceil((end - start) / step) values.
absl::StatusOr<Value> Arange(const OpCall& c) {
  const OpSchema& schema = c.op().schema;
  int start_i = schema.ArgumentIndex("start"),
      step_i = schema.ArgumentIndex("step");
  Value start = start_i >= 0 ? c.arg(start_i) : Value::Int(0);
  Value end = c.arg("end");
  Value step = step_i >= 0 ? c.arg(step_i) : Value::Int(1);
  bool all_int = true;
  for (const Value* v : {&start, &end, &step}) {
    if (!v->number.is_int()) all_int = false;
  }
  const Value& d = c.arg("dtype");
  DType dtype = !d.is_none() ? d.dtype
                : all_int    ? DType::kInt64
                             : DType::kFloat32;
  Device device = CreationDevice(c);
  Expr size;
  if (all_int && (start.number.kind() != symbolic::ExprKind::kInteger ||
                  end.number.kind() != symbolic::ExprKind::kInteger)) {
    ASSIGN_OR_RETURN(int64_t st, step.AsInt());
    if (st == 0) return c.Error("step must be nonzero");
    ASSIGN_OR_RETURN(size,
                     symbolic::CeilDiv(symbolic::Sub(end.number, start.number),
                                       symbolic::Int(st)));
    size = symbolic::Max(symbolic::Int(0), size);
  } else {
    ASSIGN_OR_RETURN(double a, start.AsDouble());
    ASSIGN_OR_RETURN(double b, end.AsDouble());
    ASSIGN_OR_RETURN(double st, step.AsDouble());
    if (st == 0) return c.Error("step must be nonzero");
    if (!std::isfinite(st)) {
      return c.Error(absl::StrCat("step must be finite but got ", st));
    }
    if (!std::isfinite(a) || !std::isfinite(b)) {
      return c.Error(absl::StrCat("unsupported range: ", a, " -> ", b));
    }
    if ((st > 0 && b < a) || (st < 0 && b > a)) {
      return c.Error(
          "upper bound and larger bound inconsistent with step sign");
    }
    // PyTorch's check (RangeFactories.cpp): a count int64 cannot hold
    // (the conversion would be undefined).
    const double count = std::ceil((b - a) / st);
    if (!(count < 0x1p63)) return c.Error("invalid size, possible overflow?");
    size = symbolic::Int(static_cast<int64_t>(count));
  }
  if (c.env() != nullptr) return MetaResult(dtype, device, {size});
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(std::vector<int64_t> n, ConcreteSizes(c, {size}));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(n, dtype));
  ASSIGN_OR_RETURN(double a, start.AsDouble());
  ASSIGN_OR_RETURN(double st, step.AsDouble());
  for (int64_t k = 0; k < n[0]; ++k) {
    if (IsIntegral(dtype, true) && all_int) {
      ASSIGN_OR_RETURN(int64_t ai, start.AsInt());
      ASSIGN_OR_RETURN(int64_t si, step.AsInt());
      StoreInt(out, {k}, ai + k * si);
    } else {
      StoreDouble(out, {k}, a + k * st);
    }
  }
  return Value::OfTensor(out);
}

// linspace(start, end, steps): PyTorch's CPU kernel, which steps from
// `start` up to halfway and from `end` back after it, in the dtype's type
// (float32 math for float32, half and bfloat16; a double step for integer
// dtypes, truncated).
absl::StatusOr<Value> Linspace(const OpCall& c) {
  ASSIGN_OR_RETURN(int64_t steps, c.arg("steps").AsInt());
  if (steps < 0) return c.Error("number of steps must be non-negative");
  DType dtype =
      c.arg("dtype").is_none() ? DType::kFloat32 : c.arg("dtype").dtype;
  Device device = CreationDevice(c);
  if (c.env() != nullptr)
    return MetaResult(dtype, device, {symbolic::Int(steps)});
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(double a, c.arg("start").AsDouble());
  ASSIGN_OR_RETURN(double b, c.arg("end").AsDouble());
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty({steps}, dtype));
  int64_t halfway = steps / 2;
  if (steps == 1) {  // PyTorch fills start (the step would divide by 0)
    ASSIGN_OR_RETURN(Tensor sa, ScalarTensor(c.arg("start"), dtype));
    RETURN_IF_ERROR(CopyInto(out, sa));
  } else if (IsIntegral(dtype, true)) {
    ASSIGN_OR_RETURN(Tensor sa, ScalarTensor(c.arg("start"), dtype));
    ASSIGN_OR_RETURN(Tensor sb, ScalarTensor(c.arg("end"), dtype));
    double ia = static_cast<double>(LoadInt(sa, {})),
           ib = static_cast<double>(LoadInt(sb, {}));
    double step = (ib - ia) / static_cast<double>(steps - 1);
    for (int64_t k = 0; k < steps; ++k) {
      double v = k < halfway ? ia + step * k : ib - step * (steps - k - 1);
      StoreInt(out, {k}, TruncateToInt<int64_t>(v));  // 2^63: defined
    }
  } else if (dtype == DType::kFloat64) {
    double step = (b - a) / static_cast<double>(steps - 1);
    for (int64_t k = 0; k < steps; ++k) {
      StoreDouble(out, {k},
                  k < halfway ? a + step * k : b - step * (steps - k - 1));
    }
  } else {
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    float step = (fb - fa) / static_cast<float>(steps - 1);
    for (int64_t k = 0; k < steps; ++k) {
      float v = k < halfway ? fa + step * static_cast<float>(k)
                            : fb - step * static_cast<float>(steps - k - 1);
      StoreDouble(out, {k}, v);
    }
  }
  return Value::OfTensor(out);
}

// eye(n[, m]): the identity (ones on the main diagonal of an n x m matrix).
absl::StatusOr<Value> Eye(const OpCall& c) {
  Expr n = c.arg("n").number;
  Expr m = n;
  if (c.op().schema.ArgumentIndex("m") >= 0) {
    m = c.arg("m").number;
  }
  for (const auto& [name, e] :
       {std::pair<const char*, Expr>{"n", n}, {"m", m}}) {
    if (e.kind() == symbolic::ExprKind::kInteger && e.int_value() < 0) {
      return c.Error(absl::StrCat(name, " must be greater or equal to 0, got ",
                                  e.int_value()));
    }
  }
  DType dtype = CreationDType(c, nullptr);
  Device device = CreationDevice(c);
  if (c.env() != nullptr) return MetaResult(dtype, device, {n, m});
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(std::vector<int64_t> cs, ConcreteSizes(c, {n, m}));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(cs, dtype));
  ForEachIndex(cs, [&](absl::Span<const int64_t> i) {
    StoreInt(out, i, i[0] == i[1] ? 1 : 0);
  });
  return Value::OfTensor(out);
}

// empty_permuted(size, physical_layout): dense, with physical_layout[0] the
// outermost dim; zero-filled like empty.
absl::StatusOr<Value> EmptyPermuted(const OpCall& c) {
  ASSIGN_OR_RETURN(std::vector<Expr> sizes, c.arg(0).AsExprList());
  ASSIGN_OR_RETURN(std::vector<int64_t> layout, c.arg(1).AsIntList());
  if (layout.size() != sizes.size()) {
    return c.Error(absl::StrCat(
        "Number of dimensions in size does not match "
        "the length of the physical_layout; i.e. len(",
        "size) = ", sizes.size(),
        " is not equal to len(physical_layout) = ", layout.size()));
  }
  std::vector<bool> seen(sizes.size(), false);
  std::vector<Expr> physical;
  for (int64_t d : layout) {
    int64_t rank = static_cast<int64_t>(sizes.size());
    if (d < 0 || d >= rank) {
      return c.Error(absl::StrCat(
          "Dimension out of range (expected to be between 0 and ", rank - 1,
          ", but got ", d, " at index ", physical.size(),
          ").  NB: negative dims not currently supported; file an issue if "
          "you want it."));
    }
    if (seen[d]) return c.Error("Duplicate dim not allowed");
    seen[d] = true;
    physical.push_back(sizes[d]);
  }
  std::vector<Expr> pstrides = ContiguousStrides(physical);
  std::vector<Expr> strides(sizes.size());
  for (size_t i = 0; i < layout.size(); ++i) strides[layout[i]] = pstrides[i];
  ASSIGN_OR_RETURN(
      Value out, ResultOrEmpty(c, c.env() == nullptr, CreationDType(c, nullptr),
                               CreationDevice(c), sizes, strides));
  if (out.tensor.defined()) {
    ASSIGN_OR_RETURN(Tensor zero,
                     ScalarTensor(Value::Int(0), out.tensor.dtype()));
    RETURN_IF_ERROR(CopyInto(out.tensor, zero));
  }
  return out;
}

// cat(tensors, dim): sizes must match except along dim; 1-d empty tensors
// are skipped (legacy behavior).
absl::StatusOr<Value> Cat(const OpCall& c) {
  const std::vector<Value>& all = c.arg(0).list;
  if (all.empty())
    return c.Error("torch.cat(): expected a non-empty list of Tensors");
  std::vector<const Value*> ts;
  std::vector<int> numbers;
  for (size_t k = 0; k < all.size(); ++k) {
    std::vector<Expr> s = SizesOf(all[k]);
    if (s.size() == 1 && s[0].is_constant(0)) continue;
    ts.push_back(&all[k]);
    numbers.push_back(static_cast<int>(k));
  }
  ASSIGN_OR_RETURN(DType dtype, ResultType(all));
  bool running = all[0].tensor.defined();
  if (ts.empty())
    return ResultOrEmpty(c, running, dtype, DeviceOf(all[0]),
                         {symbolic::Int(0)});
  std::vector<Expr> sizes = SizesOf(*ts[0]);
  int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank == 0) {
    return c.Error(
        "zero-dimensional tensor (at position 0) cannot be concatenated");
  }
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim, WrapDim(c, dim, rank));
  for (size_t k = 1; k < ts.size(); ++k) {
    std::vector<Expr> s = SizesOf(*ts[k]);
    if (static_cast<int64_t>(s.size()) != rank) {
      return c.Error(
          absl::StrCat("Tensors must have same number of dimensions: got ",
                       rank, " and ", s.size()));
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == dim) continue;
      ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(s[d], sizes[d])));
      if (!same) {
        return c.Error(
            absl::StrCat("Sizes of tensors must match except in dimension ",
                         dim, ". Expected size ", symbolic::ToString(sizes[d]),
                         " but got size ", symbolic::ToString(s[d]),
                         " for tensor number ", numbers[k], " in the list."));
      }
    }
    sizes[dim] = symbolic::Add(sizes[dim], s[dim]);
  }
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, DeviceOf(*ts[0]), sizes));
  if (!running) return out;
  int64_t at = 0;
  for (const Value* t : ts) {
    std::vector<int64_t> part = t->tensor.sizes();
    ASSIGN_OR_RETURN(Tensor dst,
                     out.tensor.AsStrided(part, out.tensor.strides(),
                                          at * out.tensor.strides()[dim]));
    RETURN_IF_ERROR(CopyInto(dst, t->tensor));
    at += part[dim];
  }
  return out;
}

// stack(tensors, dim): equal shapes, joined along a new dim.
absl::StatusOr<Value> Stack(const OpCall& c) {
  const std::vector<Value>& ts = c.arg(0).list;
  if (ts.empty()) return c.Error("stack expects a non-empty TensorList");
  std::vector<Expr> sizes = SizesOf(ts[0]);
  for (size_t k = 1; k < ts.size(); ++k) {
    std::vector<Expr> s = SizesOf(ts[k]);
    bool same = s.size() == sizes.size();
    for (size_t d = 0; same && d < s.size(); ++d) {
      ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(s[d], sizes[d])));
    }
    if (!same) {
      return c.Error(
          absl::StrCat("stack expects each tensor to be equal size, but got ",
                       ShapeString(sizes), " at entry 0 and ", ShapeString(s),
                       " at entry ", k));
    }
  }
  ASSIGN_OR_RETURN(int64_t dim, c.arg(1).AsInt());
  ASSIGN_OR_RETURN(dim,
                   WrapDim(c, dim, static_cast<int64_t>(sizes.size()) + 1));
  ASSIGN_OR_RETURN(DType dtype, ResultType(ts));
  std::vector<Expr> out_sizes = sizes;
  out_sizes.insert(out_sizes.begin() + dim,
                   symbolic::Int(static_cast<int64_t>(ts.size())));
  bool running = ts[0].tensor.defined();
  ASSIGN_OR_RETURN(
      Value out, ResultOrEmpty(c, running, dtype, DeviceOf(ts[0]), out_sizes));
  if (!running) return out;
  std::vector<int64_t> strides = out.tensor.strides();
  strides.erase(strides.begin() + dim);
  for (size_t k = 0; k < ts.size(); ++k) {
    ASSIGN_OR_RETURN(Tensor dst,
                     out.tensor.AsStrided(
                         ts[k].tensor.sizes(), strides,
                         static_cast<int64_t>(k) * out.tensor.strides()[dim]));
    RETURN_IF_ERROR(CopyInto(dst, ts[k].tensor));
  }
  return out;
}

// fill_(self, value) / zero_(self): writes through self's strides.
absl::StatusOr<Value> FillInplace(const OpCall& c, const Value& value) {
  if (!c.arg(0).tensor.defined()) return c.arg(0);
  ASSIGN_OR_RETURN(Tensor scalar, ScalarTensor(value, c.arg(0).tensor.dtype()));
  RETURN_IF_ERROR(CopyInto(c.arg(0).tensor, scalar));
  return c.arg(0);
}

// ---- Random ops -------------------------------------------------------------
//
// rand, randn, randperm and native_dropout draw from the call's Generator
// (random.h): seeded and reproducible, PyTorch's distributions but not its
// numbers. Each call reserves its draws up front, one (two for randn) per
// element in row-major order.

// The call's generator, or `fallback` (default-seeded) outside an
// interpreter.
Generator& GeneratorOf(const OpCall& c, Generator& fallback) {
  return c.generator() != nullptr ? *c.generator() : fallback;
}

// rand(size) / randn(size): uniform in [0, 1) / standard normal (Box-Muller
// over two uniform draws). Floating dtypes only, as in PyTorch.
absl::StatusOr<Value> RandomFill(const OpCall& c, bool normal, bool running) {
  ASSIGN_OR_RETURN(std::vector<Expr> sizes, c.arg(0).AsExprList());
  for (Expr s : sizes) {
    if (s.kind() == symbolic::ExprKind::kInteger && s.int_value() < 0) {
      return c.Error(NegativeDimension(s, sizes));
    }
  }
  DType dtype = CreationDType(c, nullptr);
  if (!IsFloatingPoint(dtype)) {
    return c.Error(absl::StrCat(
        normal ? "\"normal_kernel_cpu\"" : "\"check_uniform_bounds\"",
        " not implemented for '", ScalarTypeName(dtype), "'"));
  }
  Device device = CreationDevice(c);
  if (!running) return MetaResult(dtype, device, sizes);
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(std::vector<int64_t> concrete, ConcreteSizes(c, sizes));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(concrete, dtype));
  Generator fallback;
  Generator& g = GeneratorOf(c, fallback);
  uint64_t n = static_cast<uint64_t>(out.numel());
  uint64_t at = g.Reserve(normal ? 2 * n : n);
  int bits = SignificandBits(dtype);
  const double kTwoPi = 2 * std::acos(-1.0);
  ForEachIndex(concrete, [&](absl::Span<const int64_t> i) {
    double v;
    if (normal) {
      double u1 = 1.0 - g.Uniform(at++, 53);  // in (0, 1]
      double u2 = g.Uniform(at++, 53);
      v = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
    } else {
      v = g.Uniform(at++, bits);
    }
    StoreDouble(out, i, v);
  });
  return Value::OfTensor(out);
}

// randperm(n): a random permutation of 0 .. n-1 (Fisher-Yates).
absl::StatusOr<Value> Randperm(const OpCall& c, bool running) {
  Expr n = c.arg(0).number;
  if (n.kind() == symbolic::ExprKind::kInteger && n.int_value() < 0) {
    return c.Error(NegativeDimension(n, {n}));
  }
  DType dtype = CreationDType(c, nullptr);
  if (dtype == DType::kBool) {
    return c.Error("\"randperm\" not implemented for 'Bool'");
  }
  Device device = CreationDevice(c);
  if (!running) return MetaResult(dtype, device, {n});
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(int64_t count, c.arg(0).AsInt());
  Generator fallback;
  Generator& g = GeneratorOf(c, fallback);
  uint64_t at = g.Reserve(static_cast<uint64_t>(count));
  std::vector<int64_t> perm(count);
  for (int64_t i = 0; i < count; ++i) perm[i] = i;
  for (int64_t i = count - 1; i > 0; --i) {
    uint64_t j = g.Bits(at + i) % static_cast<uint64_t>(i + 1);
    std::swap(perm[i], perm[j]);
  }
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty({count}, dtype));
  for (int64_t i = 0; i < count; ++i) StoreInt(out, {i}, perm[i]);
  return Value::OfTensor(out);
}

// native_dropout(input, p, train): (output, mask) as PyTorch's CPU kernel
// computes them. An empty input gives (input itself, empty_like(input)).
// train=False: (a clone, an all-true bool mask), both laid out as
// empty_like(input) (EmptyLikeStrides).
// train=True or None: mask = empty_like(input, bool) kept with probability
// 1 - p, output = input * mask * scale (scale = 1/(1-p), 0 for p = 1),
// laid out as that product is (TensorIterator over input and mask).
absl::StatusOr<Value> NativeDropout(const OpCall& c, bool running) {
  const Value& input = c.arg(0);
  ASSIGN_OR_RETURN(double p, c.arg(1).AsDouble());
  bool train = true;
  if (!c.arg(2).is_none()) {
    ASSIGN_OR_RETURN(train, c.arg(2).AsBool());
  }
  DType dtype = DTypeOf(input);
  Device device = DeviceOf(input);
  std::vector<Expr> sizes = SizesOf(input);
  std::vector<Expr> preserved = EmptyLikeStrides(c.env(), input);
  Expr numel = symbolic::Int(1);
  for (Expr s : sizes) numel = symbolic::Mul(numel, s);
  ASSIGN_OR_RETURN(bool empty,
                   Decide(c, symbolic::Eq(numel, symbolic::Int(0))));
  if (empty) {
    ASSIGN_OR_RETURN(
        Value mask, ResultOrEmpty(c, running, dtype, device, sizes, preserved));
    return Value::List({input, mask});
  }
  ASSIGN_OR_RETURN(Value mask, ResultOrEmpty(c, running, DType::kBool, device,
                                             sizes, preserved));
  if (!train) {
    ASSIGN_OR_RETURN(
        Value out, ResultOrEmpty(c, running, dtype, device, sizes, preserved));
    if (running) {
      RETURN_IF_ERROR(CopyInto(out.tensor, input.tensor));
      ForEachIndex(mask.tensor.sizes(), [&](absl::Span<const int64_t> i) {
        StoreInt(mask.tensor, i, 1);
      });
    }
    return Value::List({out, mask});
  }
  double p1m = 1.0 - p;
  if (!(p1m >= 0 && p1m <= 1)) {
    return c.Error(
        absl::StrCat("bernoulli_ expects p to be in [0, 1], but got p=", p1m));
  }
  if (!IsFloatingPoint(dtype)) {
    return c.Error(absl::StrCat(
        "result type Float can't be cast to the desired output type ",
        ScalarTypeName(dtype)));
  }
  TensorMeta mask_meta;
  mask_meta.dtype = DType::kBool;
  mask_meta.device = device;
  mask_meta.sizes = sizes;
  mask_meta.strides = preserved;
  std::vector<Expr> strides =
      PointwiseStrides(c.env(), {input, Value::OfMeta(mask_meta)}, sizes);
  ASSIGN_OR_RETURN(Value out,
                   ResultOrEmpty(c, running, dtype, device, sizes, strides));
  if (!running) return Value::List({out, mask});
  double scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  // mul_(scale) multiplies in the tensor's dtype (float for reduced ones).
  if (dtype != DType::kFloat64) scale = static_cast<float>(scale);
  Generator fallback;
  Generator& g = GeneratorOf(c, fallback);
  uint64_t at = g.Reserve(static_cast<uint64_t>(input.tensor.numel()));
  ForEachIndex(input.tensor.sizes(), [&](absl::Span<const int64_t> i) {
    bool keep = g.Uniform(at++, 53) < p1m;
    StoreInt(mask.tensor, i, keep);
    StoreDouble(out.tensor, i, LoadDouble(input.tensor, i) * keep * scale);
  });
  return Value::List({out, mask});
}

}  // namespace

absl::Status RegisterCreationOps(OpRegistry& r) {
  const char* kFactory =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor";
  for (const char* head :
       {"arange(Scalar end, ", "arange.start(Scalar start, Scalar end, ",
        "arange.start_step(Scalar start, Scalar end, Scalar step=1, "}) {
    RETURN_IF_ERROR(r.Add(absl::StrCat(head, kFactory), Arange));
  }
  RETURN_IF_ERROR(r.Add(
      absl::StrCat("linspace(Scalar start, Scalar end, int steps, ", kFactory),
      Linspace));
  RETURN_IF_ERROR(r.Add(absl::StrCat("eye(SymInt n, ", kFactory), Eye));
  RETURN_IF_ERROR(
      r.Add(absl::StrCat("eye.m(SymInt n, SymInt m, ", kFactory), Eye));
  RETURN_IF_ERROR(r.Add(absl::StrCat("empty_permuted(SymInt[] size, int[] "
                                     "physical_layout, ",
                                     kFactory),
                        EmptyPermuted));
  RETURN_IF_ERROR(r.Add("cat(Tensor[] tensors, int dim=0) -> Tensor", Cat));
  RETURN_IF_ERROR(
      r.Add("sym_stride.int(Tensor self, int dim) -> SymInt", SymStride));
  RETURN_IF_ERROR(r.Add("sym_numel(Tensor self) -> SymInt", SymNumel));
  RETURN_IF_ERROR(
      r.Add("sym_storage_offset(Tensor self) -> SymInt", SymStorageOffset));
  for (bool normal : {false, true}) {
    RETURN_IF_ERROR(r.Add(
        absl::StrCat(normal ? "randn" : "rand", "(SymInt[] size, ", kFactory),
        [normal](const OpCall& c) { return RandomFill(c, normal, false); },
        [normal](const OpCall& c) { return RandomFill(c, normal, true); }));
  }
  RETURN_IF_ERROR(r.Add(
      "randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? "
      "device=None, bool? pin_memory=None) -> Tensor",
      [](const OpCall& c) { return Randperm(c, false); },
      [](const OpCall& c) { return Randperm(c, true); }));
  RETURN_IF_ERROR(r.Add(
      "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
      [](const OpCall& c) { return NativeDropout(c, false); },
      [](const OpCall& c) { return NativeDropout(c, true); }));
  const char* kLike =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? "
      "pin_memory=None, MemoryFormat? memory_format=None) -> Tensor";
  for (const auto& [head, fill] : std::vector<std::pair<std::string, double>>{
           {"zeros_like(Tensor self, ", 0},
           {"ones_like(Tensor self, ", 1},
           {"empty_like(Tensor self, ", 0}}) {
    double v = fill;
    auto fn = [v](const OpCall& c) { return FullLike(c, Value::Float(v)); };
    RETURN_IF_ERROR(r.Add(absl::StrCat(head, kLike), fn));
  }
  auto full_like = [](const OpCall& c) { return FullLike(c, c.arg(1)); };
  RETURN_IF_ERROR(
      r.Add(absl::StrCat("full_like(Tensor self, Scalar fill_value, ", kLike),
            full_like));
  RETURN_IF_ERROR(
      r.Add("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
            Copy));
  RETURN_IF_ERROR(r.Add(
      "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
      ConstantPad));
  RETURN_IF_ERROR(r.Add(
      "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? "
      "dtype=None, Layout? "
      "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
      EmptyStrided));
  // empty: zero-filled, so results never depend on garbage.
  auto empty = [](const OpCall& c) { return Full(c, nullptr, 0); };
  RETURN_IF_ERROR(
      r.Add("empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, "
            "Layout? layout=None, "
            "Device? device=None, bool? pin_memory=None, MemoryFormat? "
            "memory_format=None) -> Tensor",
            empty));
  auto scalar_tensor = [](const OpCall& c) -> absl::StatusOr<Value> {
    DType dtype =
        c.arg("dtype").is_none() ? DType::kFloat32 : c.arg("dtype").dtype;
    Device device = CreationDevice(c);
    if (c.env() != nullptr) return MetaResult(dtype, device, {});
    if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
    ASSIGN_OR_RETURN(Tensor t, ScalarTensor(c.arg(0), dtype));
    return Value::OfTensor(t);
  };
  RETURN_IF_ERROR(
      r.Add("scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? "
            "device=None, bool? pin_memory=None) -> Tensor",
            scalar_tensor));
  RETURN_IF_ERROR(r.Add("stack(Tensor[] tensors, int dim=0) -> Tensor", Stack));
  auto fill = [](const OpCall& c) { return FillInplace(c, c.arg(1)); };
  RETURN_IF_ERROR(
      r.Add("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", fill));
  auto zero = [](const OpCall& c) { return FillInplace(c, Value::Int(0)); };
  RETURN_IF_ERROR(r.Add("zero_(Tensor(a!) self) -> Tensor(a!)", zero));
  RETURN_IF_ERROR(
      r.Add("_local_scalar_dense(Tensor self) -> Scalar", LocalScalarDense));
  RETURN_IF_ERROR(
      r.Add("_assert_scalar(Scalar self, str assert_msg) -> ()", AssertScalar));
  auto full = [](const OpCall& c) { return Full(c, &c.arg(1), 0); };
  RETURN_IF_ERROR(
      r.Add("full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
            "Layout? layout=None, "
            "Device? device=None, bool? pin_memory=None) -> Tensor",
            full));
  auto zeros = [](const OpCall& c) { return Full(c, nullptr, 0); };
  RETURN_IF_ERROR(
      r.Add("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None) -> Tensor",
            zeros));
  auto ones = [](const OpCall& c) { return Full(c, nullptr, 1); };
  RETURN_IF_ERROR(
      r.Add("ones(SymInt[] size, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None) -> Tensor",
            ones));
  auto clone = [](const OpCall& c) { return ToCopy(c, true); };
  RETURN_IF_ERROR(
      r.Add("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
            clone));
  auto to_copy = [](const OpCall& c) { return ToCopy(c, false); };
  RETURN_IF_ERROR(
      r.Add("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? "
            "memory_format=None) -> Tensor",
            to_copy));
  RETURN_IF_ERROR(
      r.Add("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> "
            "Tensor(a!)",
            CopyInplace));
  RETURN_IF_ERROR(
      r.Add("sym_size.int(Tensor self, int dim) -> SymInt", SymSize));
  // fill / zero: the functional twins of fill_ / zero_ (a new tensor like
  // self).
  for (const char* schema : {"fill.Scalar(Tensor self, Scalar value) -> Tensor",
                             "zero(Tensor self) -> Tensor"}) {
    auto fn = [](const OpCall& c) -> absl::StatusOr<Value> {
      const Value& self = c.arg(0);
      if (!self.tensor.defined())
        return Like(c, self, DTypeOf(self), DeviceOf(self), nullptr);
      ASSIGN_OR_RETURN(Tensor v,
                       ScalarTensor(c.num_args() > 1 ? c.arg(1) : Value::Int(0),
                                    DTypeOf(self)));
      return Like(c, self, DTypeOf(self), DeviceOf(self), &v);
    };
    RETURN_IF_ERROR(r.Add(schema, fn));
  }
  RETURN_IF_ERROR(r.Pair("aten.fill_.Scalar", "aten.fill.Scalar"));
  RETURN_IF_ERROR(r.Pair("aten.zero_.default", "aten.zero.default"));
  RETURN_IF_ERROR(r.Pair("aten.copy_.default", "aten.copy.default"));
  return absl::OkStatus();
}

}  // namespace lathe::ir
