// -----------------------------------------------------------------------------
// File: ops_pointwise.h
// -----------------------------------------------------------------------------
//
// What the reference kernels of elementwise ops share (ops_pointwise.cc
// defines it; ops_backward.cc's backward ops use it too): a result's
// dtype, broadcast shape and TensorIterator layout inferred from its
// operands in order, its metadata, and an elementwise evaluation in the
// op's math type (double for floats, wrapping int64 for integers),
// rounded once to the result's dtype.
//
// Example (a binary op's kernel):
//
//   ASSIGN_OR_RETURN(OutInfo info, Infer(c, {c.arg(0), c.arg(1)}, true,
//                                        false));
//   return ComputeN(c, info, {c.arg(0), c.arg(1)},
//                   [](absl::Span<const double> v) { return v[0] * v[1]; },
//                   nullptr);

#ifndef LATHE_IR_OPS_POINTWISE_H_
#define LATHE_IR_OPS_POINTWISE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "symbolic/expr.h"

namespace lathe::ir {

struct OutInfo {
  DType dtype;
  DType compute;  // the dtype operands are promoted to before computing
  Device device;
  std::vector<symbolic::Expr> sizes;
  std::vector<symbolic::Expr> strides;  // empty: contiguous
};

// Infer()
//
// The result of an elementwise op over `operands` (tensors and scalars):
// their promoted dtype (float32 for integers when `float_result`; bool
// when `bool_result`), broadcast sizes, and TensorIterator's strides.
absl::StatusOr<OutInfo> Infer(const OpCall& call, std::vector<Value> operands,
                              bool float_result, bool bool_result);

// The result's metadata.
Value ResultMeta(const OutInfo& info);

using DoubleNFn = std::function<double(absl::Span<const double>)>;
using IntNFn =
    std::function<absl::StatusOr<int64_t>(absl::Span<const int64_t>)>;

// A floating-point element function over runs of elements: out[j] from
// in[0][j], in[1][j], ... for j < n (each operand's values as doubles).
using DoubleRowFn = std::function<void(absl::Span<const double* const> in,
                                       int64_t n, double* out)>;

// ComputeN()
//
// `fd` (or `fi` on integer math types) elementwise over the broadcast
// operands into a new tensor laid out as `info` says.
absl::StatusOr<Value> ComputeN(const OpCall& call, const OutInfo& info,
                               const std::vector<Value>& operands,
                               const DoubleNFn& fd, const IntNFn& fi);

// As ComputeN, with the floating-point function given over runs of
// elements (`fd`'s values exactly, without a call per element).
absl::StatusOr<Value> ComputeRows(const OpCall& call, const OutInfo& info,
                                  const std::vector<Value>& operands,
                                  const DoubleRowFn& fd, const IntNFn& fi);

}  // namespace lathe::ir

#endif  // LATHE_IR_OPS_POINTWISE_H_
