// -----------------------------------------------------------------------------
// File: op_testing.h
// -----------------------------------------------------------------------------
//
// Test helpers for ops (testonly): tensors from values and back, and running
// an op's reference kernel while checking, with gtest expectations, that its
// meta function predicts the result's dtype, sizes, strides and storage
// offset from the arguments' metadata.
//
// Example:
//
//   absl::StatusOr<Value> out = RunOp("aten.add.Tensor", {Value::OfTensor(a),
//                                                          Value::OfTensor(b)});

#ifndef LATHE_IR_OP_TESTING_H_
#define LATHE_IR_OP_TESTING_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "runtime/tensor.h"

namespace lathe::ir {

// The metadata of a concrete tensor.
TensorMeta MetaOf(const Tensor& t);

// `v` with every tensor replaced by its metadata.
Value ToMetaValue(const Value& v);

// "f32[2, 3][3, 1]cpu+0" for tensors (concrete or meta), tuples of those,
// and a number's kind ("int", "float", "bool").
std::string Describe(const Value& v);

// A tensor of `sizes` holding `values` in row-major order (EXPECTs that
// they fill it exactly).
Tensor T(std::vector<int64_t> sizes, std::vector<double> values,
         DType dtype = DType::kFloat32);

// The elements of `t` in row-major order.
std::vector<double> Elements(const Tensor& t);

// A tensor value, and a list of ints, as op arguments.
Value V(const Tensor& t);
Value Ints(const std::vector<int64_t>& v);

// RunOp's tensor result, EXPECTing success.
Tensor RunT(const std::string& target, std::vector<Value> args,
            std::vector<std::pair<std::string, Value>> kwargs = {});

// RunOp's error message, EXPECTing an error.
std::string RunError(const std::string& target, std::vector<Value> args,
                     std::vector<std::pair<std::string, Value>> kwargs = {});

// Runs `target`'s kernel; when it succeeds, expects the meta function to
// succeed on the arguments' metadata and to describe the same result.
absl::StatusOr<Value> RunOp(
    const std::string& target, std::vector<Value> args,
    std::vector<std::pair<std::string, Value>> kwargs = {});

}  // namespace lathe::ir

#endif  // LATHE_IR_OP_TESTING_H_
