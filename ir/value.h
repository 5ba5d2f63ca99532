// -----------------------------------------------------------------------------
// File: value.h
// -----------------------------------------------------------------------------
//
// A value flowing through an op: a tensor (concrete, for the interpreter, or
// its TensorMeta, for shape propagation), a number or boolean (an interned
// expression: a constant when concrete, symbolic during shape propagation),
// None, a string, a dtype, a device, or a list of values.
//
// Example:
//
//   Value v = Value::Number(symbolic::Int(3));
//   v.AsInt();                     // 3
//   Value t = Value::OfTensor(tensor);

#ifndef LATHE_IR_VALUE_H_
#define LATHE_IR_VALUE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/tensor_meta.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "symbolic/expr.h"

namespace lathe::ir {

struct Value {
  enum class Kind : uint8_t {
    kNone,
    kTensor,  // `tensor` (interpreter) or `meta` (shape propagation)
    kNumber,  // int, float or bool as `number`
    kString,  // also layouts and memory formats, by name
    kDType,
    kDevice,
    kList,
  };
  Kind kind = Kind::kNone;
  Tensor tensor;
  TensorMeta meta;
  symbolic::Expr number;
  std::string string;
  DType dtype = DType::kFloat32;
  Device device;
  std::vector<Value> list;

  static Value None() { return Value(); }
  static Value OfTensor(Tensor t);
  static Value OfMeta(TensorMeta m);
  static Value Number(symbolic::Expr e);
  static Value Int(int64_t v) { return Number(symbolic::Int(v)); }
  static Value Float(double v) { return Number(symbolic::Float(v)); }
  static Value Bool(bool v) { return Number(symbolic::Bool(v)); }
  static Value String(std::string s);
  static Value OfDType(DType d);
  static Value OfDevice(Device d);
  static Value List(std::vector<Value> items);

  bool is_none() const { return kind == Kind::kNone; }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_number() const { return kind == Kind::kNumber; }

  // Concrete numbers; errors for symbolic values or other kinds.
  absl::StatusOr<int64_t> AsInt() const;
  absl::StatusOr<double> AsDouble() const;
  absl::StatusOr<bool> AsBool() const;
  // A list of concrete ints (an int also counts as a one-element list, as
  // int[1] arguments allow).
  absl::StatusOr<std::vector<int64_t>> AsIntList() const;
  // A list of int expressions (SymInt[]).
  absl::StatusOr<std::vector<symbolic::Expr>> AsExprList() const;
  // "f32[2, 3]", "3", "None", "[1, 2]" for messages.
  std::string DebugString() const;
};

// Values of a graph's constants (`self.NAME` get_attr nodes), by NAME.
using Constants = absl::flat_hash_map<std::string, Value>;

}  // namespace lathe::ir

#endif  // LATHE_IR_VALUE_H_
