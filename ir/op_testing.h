// -----------------------------------------------------------------------------
// File: op_testing.h
// -----------------------------------------------------------------------------
//
// Test helpers for ops (testonly): run an op's reference kernel and check,
// with gtest expectations, that its meta function predicts the result's
// dtype, sizes, strides and storage offset from the arguments' metadata.
//
// Example:
//
//   absl::StatusOr<Value> out = RunOp("aten.add.Tensor", {Value::OfTensor(a),
//                                                          Value::OfTensor(b)});

#ifndef LATHE_IR_OP_TESTING_H_
#define LATHE_IR_OP_TESTING_H_

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

// Runs `target`'s kernel; when it succeeds, expects the meta function to
// succeed on the arguments' metadata and to describe the same result.
absl::StatusOr<Value> RunOp(
    const std::string& target, std::vector<Value> args,
    std::vector<std::pair<std::string, Value>> kwargs = {});

}  // namespace lathe::ir

#endif  // LATHE_IR_OP_TESTING_H_
