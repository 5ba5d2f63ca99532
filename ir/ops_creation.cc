// Creation and copy ops: full, zeros, ones, clone, _to_copy, copy_, and
// sym_size.int.

#include <cstdint>
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
      return c.Error(absl::StrCat(
          "Trying to create tensor with negative dimension ", s.int_value()));
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

absl::StatusOr<Value> ToCopy(const OpCall& c, bool keep_dtype) {
  const Value& self = c.arg(0);
  DType dtype = DTypeOf(self);
  if (!keep_dtype && !c.arg("dtype").is_none()) dtype = c.arg("dtype").dtype;
  Device device = DeviceOf(self);
  if (!keep_dtype && !c.arg("device").is_none())
    device = c.arg("device").device;
  if (!self.tensor.defined()) return MetaResult(dtype, device, SizesOf(self));
  if (!device.is_cpu()) return c.Error("the interpreter runs on cpu only");
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(self.tensor.sizes(), dtype));
  RETURN_IF_ERROR(CopyInto(out, self.tensor));
  return Value::OfTensor(out);
}

absl::StatusOr<Value> CopyInplace(const OpCall& c) {
  const Value& self = c.arg(0);
  const Value& src = c.arg(1);
  RETURN_IF_ERROR(
      BroadcastShapes(c, {SizesOf(self),
                          src.is_tensor() ? SizesOf(src) : std::vector<Expr>{}})
          .status());
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
  if (RankOf(self) != 0 &&
      !(self.tensor.defined() && self.tensor.numel() == 1)) {
    return c.Error(
        "a Tensor with more than one element cannot be converted to Scalar");
  }
  if (!self.tensor.defined()) {
    if (c.env() == nullptr) return c.Error("no ShapeEnv for an unbacked value");
    DType d = DTypeOf(self);
    if (IsFloatingPoint(d))
      return c.Error("float .item() needs a concrete tensor");
    return Value::Number(c.env()->CreateUnbacked());
  }
  std::vector<int64_t> zero(self.tensor.dim(), 0);
  DType d = self.tensor.dtype();
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

}  // namespace

absl::Status RegisterCreationOps(OpRegistry& r) {
  RETURN_IF_ERROR(r.Add("_local_scalar_dense(Tensor self) -> Scalar",
                        LocalScalarDense, LocalScalarDense));
  RETURN_IF_ERROR(r.Add("_assert_scalar(Scalar self, str assert_msg) -> ()",
                        AssertScalar, AssertScalar));
  auto full = [](const OpCall& c) { return Full(c, &c.arg(1), 0); };
  RETURN_IF_ERROR(
      r.Add("full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
            "Layout? layout=None, "
            "Device? device=None, bool? pin_memory=None) -> Tensor",
            full, full));
  auto zeros = [](const OpCall& c) { return Full(c, nullptr, 0); };
  RETURN_IF_ERROR(
      r.Add("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None) -> Tensor",
            zeros, zeros));
  auto ones = [](const OpCall& c) { return Full(c, nullptr, 1); };
  RETURN_IF_ERROR(
      r.Add("ones(SymInt[] size, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None) -> Tensor",
            ones, ones));
  auto clone = [](const OpCall& c) { return ToCopy(c, true); };
  RETURN_IF_ERROR(
      r.Add("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
            clone, clone));
  auto to_copy = [](const OpCall& c) { return ToCopy(c, false); };
  RETURN_IF_ERROR(
      r.Add("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? "
            "layout=None, Device? device=None, "
            "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? "
            "memory_format=None) -> Tensor",
            to_copy, to_copy));
  RETURN_IF_ERROR(
      r.Add("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> "
            "Tensor(a!)",
            CopyInplace, CopyInplace));
  RETURN_IF_ERROR(
      r.Add("sym_size.int(Tensor self, int dim) -> SymInt", SymSize, SymSize));
  return absl::OkStatus();
}

}  // namespace lathe::ir
