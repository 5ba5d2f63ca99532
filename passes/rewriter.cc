#include "passes/rewriter.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/output_layouts.h"
#include "status_macros.h"

namespace lathe::passes::decomp {

// `x` with size-1 dims inserted at `dims` (in order).
absl::StatusOr<Node*> Unsqueezed(Rewriter& r, Node* x,
                                 const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(x, r.Binary("aten.unsqueeze.default", x, I(d)));
  }
  return x;
}

// arange(n) as int64.
absl::StatusOr<Node*> Iota(Rewriter& r, const Arg& n, const Device& device) {
  return r.Factory("aten.arange.default", {n}, DType::kInt64, device);
}

absl::StatusOr<Node*> CausalMask(Rewriter& r, const Arg& l, const Arg& s,
                                 const Device& device) {
  ASSIGN_OR_RETURN(Node * rows, Iota(r, l, device));
  ASSIGN_OR_RETURN(rows, r.Binary("aten.unsqueeze.default", rows, I(1)));
  ASSIGN_OR_RETURN(Node * cols, Iota(r, s, device));
  return r.Binary("aten.gt.Tensor", cols, A(rows));
}

absl::StatusOr<MaskedLanes> MaskLanes(Rewriter& r, Node* mask, DType dtype) {
  MaskedLanes lanes;
  if (mask == nullptr) return lanes;
  lanes.mask = mask;
  ASSIGN_OR_RETURN(Node * keep, r.Unary("aten.logical_not.default", mask));
  ASSIGN_OR_RETURN(lanes.keep, r.To(keep, dtype));
  return lanes;
}

absl::StatusOr<Node*> ExpUnmasked(Rewriter& r, Node* x,
                                  const MaskedLanes& lanes) {
  Node* mask = lanes.mask;
  // The lanes exp never sees (below kExpSkipBelow, and masked ones, where x
  // may be far above the row's max: lanes whose exp overflows take glibc's
  // scalar path as well) get copysign(0, x): 0 whatever x is (also
  // infinite or NaN), and not a constant, which GCC would fold exp of and
  // then call exp on x after all.
  ASSIGN_OR_RETURN(Node * skip,
                   r.Binary("aten.lt.Scalar", x, F(kExpSkipBelow)));
  if (mask != nullptr) {
    ASSIGN_OR_RETURN(skip, r.Binary("aten.logical_or.default", skip, A(mask)));
  }
  const TensorMeta& m = TM(x);
  ASSIGN_OR_RETURN(Node * zero, r.ScalarTensor(F(0.0), m.dtype, m.device));
  ASSIGN_OR_RETURN(Node * zeroed, r.Binary("aten.copysign.Tensor", zero, A(x)));
  ASSIGN_OR_RETURN(Node * arg,
                   r.Call("aten.where.self", {A(skip), A(zeroed), A(x)}));
  ASSIGN_OR_RETURN(Node * e, r.Unary("aten.exp.default", arg));
  ASSIGN_OR_RETURN(Node * tiny,
                   r.Binary("aten.lt.Scalar", x, F(kExpTinyBelow)));
  ASSIGN_OR_RETURN(e, r.Call("aten.where.ScalarSelf", {A(tiny), F(0.0), A(e)}));
  if (mask == nullptr) return e;
  // Masked lanes are 0: e (1 or 0 there) times 0, not a select of 0, which
  // would let GCC prove those lanes' exp unused and give it x after all.
  LATHE_CHECK(lanes.keep != nullptr && TM(lanes.keep).dtype == m.dtype)
      << "ExpUnmasked: a mask without its keep factor in x's dtype";
  return r.Binary("aten.mul.Tensor", e, A(lanes.keep));
}

// `a` op `b` for sizes (ints or SymInt nodes): operator.add / mul /
// floordiv, folded when both are ints.
absl::StatusOr<Arg> SizeOp(Rewriter& r, const char* op, const Arg& a,
                           const Arg& b) {
  absl::string_view name(op);
  if (a.kind == Arg::Kind::kInt && b.kind == Arg::Kind::kInt) {
    if (name == "operator.add") return I(a.i + b.i);
    if (name == "operator.mul") return I(a.i * b.i);
    if (name == "operator.floordiv") return I(a.i / b.i);  // both >= 0
  }
  Node* lhs = a.node;
  Arg rhs = b;
  if (a.kind == Arg::Kind::kInt) {
    if (name == "operator.floordiv") return absl::InternalError("int // sym");
    lhs = b.node;  // add and mul commute
    rhs = a;
  }
  ASSIGN_OR_RETURN(Node * n, r.Binary(op, lhs, rhs));
  return A(n);
}

absl::StatusOr<Arg> SizePlus(Rewriter& r, const Arg& size, int64_t k) {
  return k == 0 ? size : SizeOp(r, "operator.add", size, I(k));
}

// A new tensor of `sizes` filled with `value`.
absl::StatusOr<Node*> Full(Rewriter& r, std::vector<Arg> sizes, Arg value,
                           DType dtype, const Device& device) {
  return r.Factory("aten.full.default", {Arg::List(std::move(sizes)), value},
                   dtype, device);
}

absl::StatusOr<Node*> Offset2Bag(Rewriter& r, Node* offsets, const Arg& end,
                                 const Arg& n, const Device& device) {
  constexpr DType kLong = DType::kInt64;
  ASSIGN_OR_RETURN(Node * starts,
                   r.Call("aten.slice.Tensor", {A(offsets), I(0), I(1), end}));
  ASSIGN_OR_RETURN(Arg n1, SizePlus(r, n, 1));
  ASSIGN_OR_RETURN(Node * marks, Full(r, {n1}, I(0), kLong, device));
  ASSIGN_OR_RETURN(Node * ones, r.Unary("aten.ones_like.default", starts));
  ASSIGN_OR_RETURN(marks, r.Call("aten.index_add.default",
                                 {A(marks), I(0), A(starts), A(ones)}));
  ASSIGN_OR_RETURN(Node * bag, r.Call("aten.cumsum.default", {A(marks), I(0)}));
  return r.Call("aten.slice.Tensor", {A(bag), I(0), I(0), n});
}

// `x` summed over `dims` (kept as size 1 when `keepdim`); x itself for no
// dims.
absl::StatusOr<Node*> Sum(Rewriter& r, Node* x,
                          const std::vector<int64_t>& dims, bool keepdim) {
  if (dims.empty()) return x;
  return r.Call("aten.sum.dim_IntList",
                {A(x), IntList(dims), Arg::Bool(keepdim)});
}

// `x` (of `like`'s sizes, any layout) laid out as empty_like(like) (dense,
// in `like`'s dimension order: EmptyLikeStrides) through a copy in that
// memory order; x itself when it already is.
absl::StatusOr<Node*> LaidOutAs(Rewriter& r, Node* x, const TensorMeta& like) {
  std::vector<symbolic::Expr> strides =
      ir::EmptyLikeStrides(&r.env(), ir::Value::OfMeta(like));
  if (strides == TM(x).strides) return x;
  // x permuted to that layout's dims from the outermost in, made
  // contiguous, and permuted back: its elements in `like`'s memory order.
  std::optional<std::vector<int64_t>> order =
      ir::OuterToInner(&r.env(), strides);
  if (!order) {
    return absl::UnimplementedError(
        "a layout whose dims' order cannot be decided for every size");
  }
  std::vector<int64_t> back(order->size());
  for (size_t i = 0; i < order->size(); ++i) back[(*order)[i]] = i;
  ASSIGN_OR_RETURN(Node * p,
                   r.Call("aten.permute.default", {A(x), IntList(*order)}));
  ASSIGN_OR_RETURN(p, r.Contiguous(p));
  return r.Call("aten.permute.default", {A(p), IntList(back)});
}

}  // namespace lathe::passes::decomp
