// -----------------------------------------------------------------------------
// File: rule_helpers.h
// -----------------------------------------------------------------------------
//
// What the op families' lowering rules share (internal to
// //codegen:lowering): the call's result metas, NodeValue builders, loaders
// that map, cast or remap a TBox, number arguments, and the few rules one
// family lends another (LowerCopyLike, LowerView, ...). Each is defined in
// rule_helpers.cc unless its comment names the family file.
//
// Example:
//
//   const TensorMeta& m = OutMeta(L, c);
//   ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
//   return TensorValue(CastBox(x, m.dtype));

#ifndef LATHE_CODEGEN_LOWER_RULE_HELPERS_H_
#define LATHE_CODEGEN_LOWER_RULE_HELPERS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/scalar_ops.h"

namespace lathe::codegen::lower {

// OutMeta()
//
// The tensor meta of the call's result.
const TensorMeta& OutMeta(Lowerer& L, const Call& c);

// OutPair()
//
// The metas of a call's two results (values and indices, output and total
// weight); `what` names them in the error when the call has not two.
absl::StatusOr<std::pair<const TensorMeta*, const TensorMeta*>> OutPair(
    Lowerer& L, const Call& c, absl::string_view what);

// TensorValue()
//
// A tensor NodeValue.
NodeValue TensorValue(TBox t);

// TupleValue()
//
// A tuple NodeValue.
NodeValue TupleValue(std::vector<NodeValue> elements);

// MapBox()
//
// f applied to each element of `t`, giving `to`.
TBox MapBox(const TBox& t, DType to, std::function<int(KernelBuilder&, int)> f);

// CastBox()
//
// `t` converted to `to` element by element.
TBox CastBox(const TBox& t, DType to);

// MeanOf()
//
// What a mean does with a reduced sum: divides it by the count.
std::function<int(KernelBuilder&, int, Expr)> MeanOf(DType acc);

// NumberArg()
//
// A number argument (Scalar or float); nullopt when None.
absl::StatusOr<std::optional<double>> NumberArg(const Call& c,
                                                absl::string_view name);

// Remap()
//
// A loader over `sizes` reading `in` at map(idx) (which must stay inside
// in's sizes), optionally masked: where `valid(idx)` is false the value is
// `fill`.
using IndexMap =
    std::function<absl::StatusOr<std::vector<Expr>>(const std::vector<Expr>&)>;
using IndexMask = std::function<int(KernelBuilder&, const std::vector<Expr>&)>;
TBox Remap(const TBox& in, std::vector<Expr> sizes, IndexMap map,
           IndexMask valid = nullptr, double fill = 0);

// InRange()
//
// The bool `lo <= e < hi`.
int InRange(KernelBuilder& kb, Expr e, Expr lo, Expr hi);

// ClampIndex()
//
// e clamped into [0, size - 1].
Expr ClampIndex(Expr e, Expr size);

// ResultBuffer()
//
// A new buffer laid out as the call's result meta `m` says, the buffer of
// its storage from now on.
int ResultBuffer(Lowerer& L, const TensorMeta& m);

// WrapDim()
//
// A dim counted from the end (negative) as one from the start.
int64_t WrapDim(int64_t dim, size_t rank);

// IndirectLoad()
//
// In-memory `x` read at `sub`, whose IndirectVar(k) stand for values[k]
// (check-index ops).
int IndirectLoad(KernelBuilder& kb, const TBox& x, const std::vector<Expr>& sub,
                 std::vector<int> values);

// Expression
//
// Pointwise expressions over boxes broadcast to one result's sizes, computed
// in one dtype.
class Expression {
 public:
  Expression(Lowerer& L, DType compute, std::vector<Expr> sizes)
      : L_(L), compute_(compute), sizes_(std::move(sizes)) {}
  TBox operator()(const std::string& fn, std::vector<TBox> args) {
    DType out = FindScalarFn(fn)->bool_result ? DType::kBool : compute_;
    return L_.Pointwise(fn, std::move(args), compute_, out, sizes_);
  }
  TBox Number(double v) { return L_.NumberBox(symbolic::Float(v), compute_); }
  DType compute() const { return compute_; }

 private:
  Lowerer& L_;
  DType compute_;
  std::vector<Expr> sizes_;
};

// ReshapeLoader() (views.cc)
//
// `in` read in row-major order as a tensor of `sizes` (view/reshape of a
// value that is not in memory).
TBox ReshapeLoader(const TBox& in, std::vector<Expr> sizes);

// LowerView() (views.cc)
//
// A view op: index arithmetic over the view's meta when the base is in
// memory; otherwise a few structural views compose with the base's loader,
// and the rest realize the base first. Ops returning several views (split,
// unbind, ...) give a tuple of them.
absl::StatusOr<NodeValue> LowerView(Lowerer& L, const Call& c);

// LowerScatter() (views.cc)
//
// scatter(self, src, *args): a copy of self (laid out as the result's meta)
// with src stored where view(result, *args) sees; the view's layout comes
// from the paired view op's meta function.
absl::StatusOr<NodeValue> LowerScatter(Lowerer& L, const Call& c);

// LowerCopyLike() (pointwise.cc)
//
// A cast of self to the meta's dtype (clone, _to_copy, convert_element_type,
// contiguous, ...): a loader; realized only when needed.
absl::StatusOr<NodeValue> LowerCopyLike(Lowerer& L, const Call& c);

// MaskedRows() (data_dependent.cc)
//
// x [P..., M..., R...] (`lead` dims P) and a mask over M: the result
// [P..., u, R...], whose row j holds x's elements at the mask's j-th true
// position in row-major order, as masked_select and x[mask] give.
absl::StatusOr<NodeValue> MaskedRows(Lowerer& L, const Call& c, TBox x,
                                     const TBox& mask, size_t lead);

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_RULE_HELPERS_H_
