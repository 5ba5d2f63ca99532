#include "ir/value.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {

Value Value::OfTensor(Tensor t) {
  Value v;
  v.kind = Kind::kTensor;
  v.tensor = std::move(t);
  return v;
}

Value Value::OfMeta(TensorMeta m) {
  Value v;
  v.kind = Kind::kTensor;
  v.meta = std::move(m);
  return v;
}

Value Value::Number(symbolic::Expr e) {
  Value v;
  v.kind = Kind::kNumber;
  v.number = e;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind = Kind::kString;
  v.string = std::move(s);
  return v;
}

Value Value::OfDType(DType d) {
  Value v;
  v.kind = Kind::kDType;
  v.dtype = d;
  return v;
}

Value Value::OfDevice(Device d) {
  Value v;
  v.kind = Kind::kDevice;
  v.device = d;
  return v;
}

Value Value::List(std::vector<Value> items) {
  Value v;
  v.kind = Kind::kList;
  v.list = std::move(items);
  return v;
}

absl::StatusOr<int64_t> Value::AsInt() const {
  if (kind == Kind::kNumber) {
    if (number.kind() == symbolic::ExprKind::kInteger)
      return number.int_value();
    if (number.kind() == symbolic::ExprKind::kBoolean)
      return number.bool_value() ? 1 : 0;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a concrete int, got ", DebugString()));
}

absl::StatusOr<double> Value::AsDouble() const {
  if (kind == Kind::kNumber) {
    switch (number.kind()) {
      case symbolic::ExprKind::kInteger:
        return static_cast<double>(number.int_value());
      case symbolic::ExprKind::kFloat:
        return number.float_value();
      case symbolic::ExprKind::kBoolean:
        return number.bool_value() ? 1.0 : 0.0;
      default:
        break;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a concrete number, got ", DebugString()));
}

absl::StatusOr<bool> Value::AsBool() const {
  if (kind == Kind::kNumber && number.kind() == symbolic::ExprKind::kBoolean) {
    return number.bool_value();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a concrete bool, got ", DebugString()));
}

absl::StatusOr<std::vector<int64_t>> Value::AsIntList() const {
  std::vector<int64_t> out;
  if (kind == Kind::kNumber) {
    ASSIGN_OR_RETURN(int64_t v, AsInt());
    return std::vector<int64_t>{v};
  }
  if (kind != Kind::kList) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a list of ints, got ", DebugString()));
  }
  for (const Value& item : list) {
    ASSIGN_OR_RETURN(int64_t v, item.AsInt());
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<symbolic::Expr>> Value::AsExprList() const {
  std::vector<symbolic::Expr> out;
  if (kind == Kind::kNumber && number.is_int())
    return std::vector<symbolic::Expr>{number};
  if (kind != Kind::kList) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a list of ints, got ", DebugString()));
  }
  for (const Value& item : list) {
    if (item.kind != Kind::kNumber || !item.number.is_int()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a list of ints, got an element ", item.DebugString()));
    }
    out.push_back(item.number);
  }
  return out;
}

std::string Value::DebugString() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
      return tensor.defined() ? tensor.ToString() : meta.ToAnnotation();
    case Kind::kNumber:
      return symbolic::ToString(number);
    case Kind::kString:
      return absl::StrCat("'", string, "'");
    case Kind::kDType:
      return std::string(TorchName(dtype));
    case Kind::kDevice:
      return device.ToString();
    case Kind::kList: {
      std::vector<std::string> items;
      for (const Value& v : list) items.push_back(v.DebugString());
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
  }
  return "?";
}

}  // namespace lathe::ir
