// -----------------------------------------------------------------------------
// File: kernel_builder.h
// -----------------------------------------------------------------------------
//
// The scalar-op level of lowering (internal to //codegen:lowering): a
// KernelBuilder appends scalar ops to one section of a kernel (reusing an
// identical earlier op), and a TBox is a tensor value being lowered: a
// loader from an index to a scalar op, plus where it lives in memory when it
// does. Linear/Contiguous/StorageNumel are the index arithmetic of layouts.
//
// Example:
//
//   KernelBuilder kb(&kernel);
//   ASSIGN_OR_RETURN(int v, box.load(kb, kernel.vars));
//   kb.Store(buffer, DType::kFloat32, Linear(kernel.vars, strides, offset), v);

#ifndef LATHE_CODEGEN_LOWER_KERNEL_BUILDER_H_
#define LATHE_CODEGEN_LOWER_KERNEL_BUILDER_H_

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "codegen/loop_ir.h"
#include "codegen/scalar_ops.h"
#include "ir/graph.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {

using ir::Arg;
using ir::Node;
using ir::OpDef;
using ir::TensorMeta;
using symbolic::Expr;

// Adds ops to one section of a kernel, reusing an identical earlier op of
// that section.
class KernelBuilder {
 public:
  explicit KernelBuilder(Kernel* kernel) : k_(kernel) {}
  Kernel& kernel() { return *k_; }
  // The section new ops go to (0 the loop body, 1 a reduction's epilogue).
  void set_section(int s) { section_ = s; }
  int section() const { return section_; }

  // Appends `op` to the current section, or returns an identical pure op's
  // id.
  int Add(ScalarOp op) {
    op.section = section_;
    bool pure = op.kind != ScalarOp::Kind::kStore &&
                op.kind != ScalarOp::Kind::kReduce &&
                op.kind != ScalarOp::Kind::kScan;
    std::string key;
    if (pure) {
      key = absl::StrCat(static_cast<int>(op.kind), "|", ShortName(op.dtype),
                         "|", op.fn, "|", absl::StrJoin(op.args, ","), "|",
                         op.buffer, "|",
                         op.index.is_null() ? "" : symbolic::ToString(op.index),
                         "|", op.f, "|", op.i, "|", section_);
      if (std::signbit(op.f)) key += "-";
      auto it = cse_.find(key);
      if (it != cse_.end()) return it->second;
    }
    k_->ops.push_back(std::move(op));
    int id = static_cast<int>(k_->ops.size()) - 1;
    if (pure) cse_[key] = id;
    return id;
  }
  // The dtype of op `op`.
  DType dtype(int op) const { return k_->ops[op].dtype; }

  // Op `op` converted to `to` (itself when it has that dtype).
  int Cast(int op, DType to) {
    if (k_->ops[op].dtype == to) return op;
    ScalarOp c;
    c.kind = ScalarOp::Kind::kCast;
    c.dtype = to;
    c.args = {op};
    return Add(std::move(c));
  }
  // A call of scalar function `fn` (scalar_ops.h) giving `dtype`.
  int Call(const std::string& fn, std::vector<int> args, DType dtype) {
    LATHE_CHECK(FindScalarFn(fn) != nullptr) << fn;
    ScalarOp c;
    c.kind = ScalarOp::Kind::kCall;
    c.fn = fn;
    c.dtype = dtype;
    c.args = std::move(args);
    return Add(std::move(c));
  }
  // The constant `v` of `dtype`.
  int Constant(double v, DType dtype) {
    ScalarOp c;
    c.kind = ScalarOp::Kind::kConstant;
    c.dtype = dtype;
    if (IsFloatingPoint(dtype)) {
      c.f = v;
    } else if (dtype == DType::kBool) {
      c.i = v != 0;
    } else {
      c.i = static_cast<int64_t>(v);
    }
    return Add(std::move(c));
  }
  // The integer constant `v` of `dtype`, exact for int64.
  int IntConstant(int64_t v, DType dtype) {
    if (IsFloatingPoint(dtype)) return Constant(static_cast<double>(v), dtype);
    ScalarOp c;
    c.kind = ScalarOp::Kind::kConstant;
    c.dtype = dtype;
    c.i = dtype == DType::kBool ? (v != 0) : v;
    return Add(std::move(c));
  }
  // Stores op `value`, cast to `dtype` (the buffer's), at buffer[index];
  // `indirect` are the checked loaded values the index names ind0, ind1...
  void Store(int buffer, DType dtype, Expr index, int value,
             const std::vector<int>& indirect = {}) {
    AddStore(buffer, dtype, std::move(index), value, -1, indirect);
  }
  // Store() only where bool op `mask` is true.
  void MaskedStore(int buffer, DType dtype, Expr index, int value, int mask,
                   const std::vector<int>& indirect = {}) {
    AddStore(buffer, dtype, std::move(index), value, mask, indirect);
  }
  // Index expression `e` (over the kernel's variables) as an int64 op.
  int Index(Expr e) {
    ScalarOp c;
    c.kind = ScalarOp::Kind::kIndex;
    c.dtype = DType::kInt64;
    c.index = e;
    return Add(std::move(c));
  }

 private:
  void AddStore(int buffer, DType dtype, Expr index, int value, int mask,
                const std::vector<int>& indirect) {
    ScalarOp st;
    st.kind = ScalarOp::Kind::kStore;
    st.buffer = buffer;
    st.dtype = dtype;
    st.index = std::move(index);
    st.args = {Cast(value, dtype)};
    st.masked = mask >= 0;
    if (st.masked) st.args.push_back(Cast(mask, DType::kBool));
    st.args.insert(st.args.end(), indirect.begin(), indirect.end());
    Add(std::move(st));
  }

  Kernel* k_;
  int section_ = 0;
  absl::flat_hash_map<std::string, int> cse_;
};

using Loader = std::function<absl::StatusOr<int>(KernelBuilder&,
                                                 const std::vector<Expr>&)>;

// A tensor value during lowering: a loader over its sizes, and where it is
// in memory when it is (buffer >= 0: strides and offset in the buffer's
// storage coordinates).
struct TBox {
  DType dtype = DType::kFloat32;
  std::vector<Expr> sizes;
  Loader load;
  int buffer = -1;
  std::vector<Expr> strides;
  Expr offset = symbolic::Int(0);
  std::set<int> reads;  // buffers the loader reads
  int cost = 1;         // ops the loader adds, roughly
};

// Linear()
//
// offset + sum of idx[d] * strides[d].
Expr Linear(const std::vector<Expr>& idx, const std::vector<Expr>& strides,
            Expr offset);

// Contiguous()
//
// The row-major strides of `sizes`.
std::vector<Expr> Contiguous(const std::vector<Expr>& sizes);

// StorageNumel()
//
// Elements a storage needs so that every index of the layout is inside.
Expr StorageNumel(const std::vector<Expr>& sizes,
                  const std::vector<Expr>& strides, Expr offset);

// IsOne()
//
// Whether `e` is the integer 1.
bool IsOne(Expr e);

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_KERNEL_BUILDER_H_
