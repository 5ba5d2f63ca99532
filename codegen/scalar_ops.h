// -----------------------------------------------------------------------------
// File: scalar_ops.h
// -----------------------------------------------------------------------------
//
// The one place each pointwise op's scalar semantics is written down: the
// functions a loop-IR call (ScalarOp::Kind::kCall) may name, their arity,
// and their definitions as C++ that every emitter includes (the CPU
// emitter as is; CUDA's compiles the same text with __device__ added):
// NaN propagation of maximum/minimum (and so clamp), Python's signs for
// integer floor division and remainder, round-half-even, wrapping integer
// arithmetic, and f16/bf16 conversions (those dtypes are computed in f32:
// ComputeDType). They follow the reference kernels' semantics
// (ir/ops_pointwise.cc), which follow PyTorch's.
//
// Example:
//
//   const ScalarFn* f = FindScalarFn("maximum");   // arity 2
//   std::string src = std::string(ScalarPrelude());  // lathe_op_maximum
//   // generated code: lathe_op_maximum(a, b)

#ifndef LATHE_CODEGEN_SCALAR_OPS_H_
#define LATHE_CODEGEN_SCALAR_OPS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runtime/dtype.h"

namespace lathe::codegen {

struct ScalarFn {
  const char* name;  // "add", "maximum", "where"
  int arity;
  // Only defined for floating compute types (exp, sin): an integer
  // operand is an internal error (lowering casts first).
  bool float_only = false;
  // The result is bool whatever the operands (eq, isnan, logical_and).
  bool bool_result = false;
};

// FindScalarFn()
//
// The scalar function called `name`, or null.
const ScalarFn* FindScalarFn(absl::string_view name);

// ScalarFns()
//
// Every scalar function, in a fixed order.
const std::vector<ScalarFn>& ScalarFns();

// ComputeDType()
//
// The dtype an op whose operands are promoted to `dtype` computes in:
// float32 for float16 and bfloat16 (PyTorch's opmath type), else `dtype`.
DType ComputeDType(DType dtype);

// CType()
//
// The C++ type generated code stores `dtype` in ("float", "int64_t",
// "lathe_half", ...).
absl::string_view CType(DType dtype);

// ScalarPrelude()
//
// C++ source defining lathe_op_<name>(...) for every scalar function, the
// f16/bf16 storage types and their conversions (lathe_load_*, lathe_cast),
// and the headers they need. Generated code includes it once.
absl::string_view ScalarPrelude();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_SCALAR_OPS_H_
