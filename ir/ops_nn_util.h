// -----------------------------------------------------------------------------
// File: ops_nn_util.h
// -----------------------------------------------------------------------------
//
// What the neural-network ops' files (ops_nn.cc, ops_conv.cc, ops_pool.cc,
// ops_norm.cc, ops_loss.cc) share: their argument checks (an int list of n
// values, PyTorch's "not implemented for" dtype error), their results
// (contiguous, or in the layout PyTorch's CPU kernels suggest) and size
// helpers. Internal to the op registry.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::vector<int64_t> stride,
//                    IntParam(c, "stride", 2, "stride", &kernel));
//   RETURN_IF_ERROR(NeedFloat(c, dtype, "max_pool2d"));
//   ASSIGN_OR_RETURN(Value out, SuggestedResult(c, running, dtype, self,
//   sizes));

#ifndef LATHE_IR_OPS_NN_UTIL_H_
#define LATHE_IR_OPS_NN_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::ir {

// CheckAttentionMask()
//
// An attention's additive mask (none: OK) as PyTorch's CPU flash kernel
// takes it: rank 2 or 4, of the query's dtype `dt`, broadcasting to the
// scores' [B, H, L, S]; else an error starting with `name`.
absl::Status CheckAttentionMask(const OpCall& c, const Value& mask, DType dt,
                                const std::vector<symbolic::Expr>& score_sizes,
                                absl::string_view name);

// One attention's values for its backward, row-major in double: q [B, H,
// L, E], k and v [B, H, S, E], the forward's out and its gradient [B, H,
// L, E], its logsumexp [B, H, L]; the additive mask as a view broadcast to
// [B, H, L, S] (none: null).
struct AttentionProblem {
  int64_t B = 0, H = 0, L = 0, S = 0, E = 0;
  double scale = 1;
  bool causal = false;  // -inf above the diagonal
  std::vector<double> q, k, v, grad, out, lse;
  const Tensor* mask = nullptr;
};

// The gradients of softmax(q k^T * scale + mask) v, row-major: dq, dk, dv
// and, when asked for, the scores' own [B, H, L, S] (an additive mask's,
// before its broadcast is summed away).
struct AttentionGrads {
  std::vector<double> dq, dk, dv, scores;
};

// AttentionBackward()
//
// The gradients of `a` as PyTorch's CPU flash kernel computes them
// (ops_attention.cc; the CPU kernel's backward in ops_backward.cc runs it).
AttentionGrads AttentionBackward(const AttentionProblem& a, bool scores);

inline void FillInts(const Tensor& out, const std::vector<int64_t>& v) {
  size_t k = 0;
  ForEachIndex(out.sizes(),
               [&](absl::Span<const int64_t> i) { StoreInt(out, i, v[k++]); });
}

// "[1, 2, 5, 5]" for a tensor's (possibly symbolic) sizes.
inline std::string SizeString(const Value& v) {
  return ShapeString(SizesOf(v));
}

inline absl::StatusOr<std::vector<int64_t>> Concrete(const OpCall& c,
                                                     const Value& v) {
  return ConcreteSizes(c, SizesOf(v));
}

// The product of symbolic sizes.
inline symbolic::Expr NumelOf(absl::Span<const symbolic::Expr> sizes) {
  return sizes.empty() ? symbolic::Int(1) : symbolic::Mul(sizes);
}

inline int64_t Product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// PyTorch's "not implemented for" error unless `dtype` is floating point
// (or also int64 with `allow_long`).
inline absl::Status NeedFloat(const OpCall& c, DType dtype,
                              absl::string_view kernel,
                              bool allow_long = false) {
  if (IsFloatingPoint(dtype) || (allow_long && dtype == DType::kInt64)) {
    return absl::OkStatus();
  }
  return c.Error(absl::StrCat("\"", kernel, "\" not implemented for '",
                              ScalarTypeName(dtype), "'"));
}

// An int list argument of `n` values: one value is repeated; `empty` (when
// given) replaces an empty list.
inline absl::StatusOr<std::vector<int64_t>> IntParam(
    const OpCall& c, absl::string_view name, size_t n, absl::string_view what,
    const std::vector<int64_t>* empty = nullptr) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, c.arg(name).AsIntList());
  if (v.empty() && empty != nullptr) return *empty;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) {
    return c.Error(absl::StrCat(what, " must either be a single int, or a ",
                                "tuple of ", n == 2 ? "two" : "three",
                                " ints"));
  }
  return v;
}

// A contiguous result (a new tensor when running, metadata otherwise).
inline absl::StatusOr<Value> Result(const OpCall& c, bool running, DType dtype,
                                    const Value& like,
                                    std::vector<symbolic::Expr> sizes) {
  return ResultOrEmpty(c, running, dtype, DeviceOf(like), std::move(sizes));
}

// A result of `sizes` in `like`'s suggested memory format: channels-last
// where `like` is laid out so (and has the result's rank), as PyTorch's CPU
// pooling, upsampling, padding and normalization kernels allocate;
// contiguous otherwise.
inline absl::StatusOr<Value> SuggestedResult(
    const OpCall& c, bool running, DType dtype, const Value& like,
    std::vector<symbolic::Expr> sizes) {
  std::vector<symbolic::Expr> strides =
      RankOf(like) == static_cast<int64_t>(sizes.size()) &&
              SuggestsChannelsLast(c.env(), like)
          ? ChannelsLastStrides(sizes)
          : ContiguousStrides(sizes);
  return ResultOrEmpty(c, running, dtype, DeviceOf(like), std::move(sizes),
                       std::move(strides));
}

// Checks that `v` (unless None) is a vector of `n` elements.
inline absl::Status VectorOf(const OpCall& c, const Value& v, int64_t n,
                             absl::string_view name) {
  if (v.is_none()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<int64_t> s, Concrete(c, v));
  if (Product(s) != n) {
    return c.Error(absl::StrCat(name, " should contain ", n, " elements not ",
                                Product(s)));
  }
  return absl::OkStatus();
}

}  // namespace lathe::ir

#endif  // LATHE_IR_OPS_NN_UTIL_H_
