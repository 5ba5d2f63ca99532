// -----------------------------------------------------------------------------
// File: scalar_code.h
// -----------------------------------------------------------------------------
//
// The C++ statement of one straight-line scalar op of the loop IR (a load,
// a store, a constant, an index or symbol value, a call of scalar_ops.h's
// functions, a cast), which the cpu emitter (cpp/cpp_emitter.h) and the
// cuda emitter (cuda/cuda_emitter.h) both write: a kernel's values are
// `v<i>`, buffer b's elements `b<b>[...]`, and the text compiles with the
// scalar prelude on the host and under NVRTC alike (lathe_std is std or
// libcu++). Reductions and scans are each emitter's own; an index check
// is shared but for how its failure is reported.
//
// Example:
//
//   std::string out;
//   for (int i = 0; i < k.ops.size(); ++i) {
//     if (!EmitScalarOp(k, i, index_cpp, "    ", &out)) ...;  // a reduce
//   }
//   // "    const float v2 = lathe_op_mul(v0, v1);\n"

#ifndef LATHE_CODEGEN_SCALAR_CODE_H_
#define LATHE_CODEGEN_SCALAR_CODE_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "codegen/loop_ir.h"
#include "symbolic/expr.h"

namespace lathe::codegen {

// An index expression as C++; `op` is the access it indexes (its indirect
// variables are its args' values), or null.
using IndexCpp =
    std::function<std::string(symbolic::Expr e, const ScalarOp* op)>;

// KernelSymbolName()
//
// How a kernel writes symbol `s` of an index expression: its name in
// `names` (the emitter's runtime symbols), else v<a> when it is an
// indirect variable of access `op` (null for none), else its own name.
std::string KernelSymbolName(
    symbolic::Expr s,
    const absl::flat_hash_map<symbolic::Expr, std::string>& names,
    const ScalarOp* op);

// Int32Indexing()
//
// Whether every loop index and every index computation of `p` fits in
// int32: no size is symbolic, every buffer holds fewer than 2^31
// elements, and every index expression stays within int32 on the way to
// its value (bounded from the loop extents). Otherwise loops count in int64.
bool Int32Indexing(const Program& p);

// ConstantCpp()
//
// A constant op's value as a C++ expression of its compute type.
std::string ConstantCpp(const ScalarOp& op);

// ReduceIdentity()
//
// The starting value of a `kind` reduction over `dtype` values, as C++
// (argmax/argmin: of their value).
std::string ReduceIdentity(ReduceKind kind, DType dtype);

// EmitScalarOp()
//
// Appends op `i` of `k` as one statement at `indent`, and true; false
// (nothing appended) for a reduce, a scan or an index check (EmitCheckIndex).
// Buffer b's pointer is written `buffer(b)` (default: b<b>).
using BufferName = std::function<std::string(int)>;
bool EmitScalarOp(const Kernel& k, int i, const IndexCpp& cpp,
                  absl::string_view indent, std::string* out,
                  const BufferName& buffer = {});

// EmitCheckIndex()
//
// Appends check-index op `i` of `k` at `indent`: v<i> is its argument as
// an int64, wrapped by the bound where the op says; out of range, the
// statement `fail(given, bound)` runs (the emitter's report of the
// check's code, the index as given and the bound) and v<i> becomes 0, so
// no access leaves its buffer.
using CheckFailure = std::function<std::string(const std::string& given,
                                               const std::string& bound)>;
void EmitCheckIndex(const Kernel& k, int i, const IndexCpp& cpp,
                    absl::string_view indent, const CheckFailure& fail,
                    std::string* out);

// ExternCall()
//
// Extern kernel `k`'s library routine (sgemm, dgemm, sconv, sort: every
// routine but randperm) called as `fn(first, arguments...)` (no `first`
// when empty), buffer b's pointer written `ptr(b)` and sizes `cpp(e)`: the
// call expression, after `setup`, the statement (at `indent`) declaring
// the geometry array g that sconv and sort take. A matrix product given a
// `batch_index` (a C++ variable) is the call for that one matrix of its
// batch (Kernel::split_batch). A non-empty `flags` is OR-ed into sconv's
// geometry flags (its last entry; runtime/convolution.h).
struct ExternCallText {
  std::string setup;
  std::string call;
};
ExternCallText ExternCall(const Kernel& k,
                          const std::function<std::string(symbolic::Expr)>& cpp,
                          const std::function<std::string(int)>& ptr,
                          absl::string_view fn, absl::string_view first,
                          absl::string_view indent,
                          absl::string_view batch_index = "",
                          absl::string_view flags = "");

// RandpermLoop()
//
// Statements at `indent` writing randperm kernel `k`'s permutation (args
// n, seed, first draw) to `out`, an array of `ctype`: Fisher-Yates over
// the interpreter's draws, so every backend gives its numbers.
std::string RandpermLoop(const Kernel& k,
                         const std::function<std::string(symbolic::Expr)>& cpp,
                         absl::string_view out, absl::string_view ctype,
                         absl::string_view indent);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_SCALAR_CODE_H_
