// -----------------------------------------------------------------------------
// File: output_layouts.h
// -----------------------------------------------------------------------------
//
// The strides PyTorch gives an op's new result: TensorIterator's for
// pointwise ops, preserve_format copies, empty_like, and the channels-last
// suggestion convolutions follow. Each rule compares the operands' sizes
// and strides; numbers are compared at once, symbolic ones through the
// ShapeEnv at its hints (recording a guard where the answer is not
// known for every value, as PyTorch's symbolic meta functions do), so a
// graph traced with symbolic sizes gets the layout its kernels will give.
// A comparison that cannot be decided (an unbacked symbol, or no ShapeEnv:
// `env` may be null where everything is a number) gives contiguous strides.
//
// Example:
//
//   // t: f32[s0, s1][1, s0] (a transposed input)
//   PointwiseStrides(call.env(), {t}, SizesOf(t));   // [1, s0]
//   EmptyLikeStrides(call.env(), t);                 // [1, s0]

#ifndef LATHE_IR_OUTPUT_LAYOUTS_H_
#define LATHE_IR_OUTPUT_LAYOUTS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "ir/value.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

// PointwiseStrides()
//
// The output strides PyTorch's TensorIterator gives a pointwise op whose
// tensor `operands` broadcast to `sizes`: when all operands have that shape
// and one dense layout, that layout; otherwise dims ordered by the
// operands' strides (first operand first, stride-0 dims ignored), densely.
// A number operand is a wrapped 0-d tensor (add.Scalar's other): it rules
// out the first case; pass only tensors where a number is a parameter of
// the kernel rather than an operand (clamp's bounds, pow's Scalar exponent).
std::vector<symbolic::Expr> PointwiseStrides(
    symbolic::ShapeEnv* env, absl::Span<const Value> operands,
    absl::Span<const symbolic::Expr> sizes);

// PreservedStrides()
//
// The strides of a preserve_format copy (clone, *_like): the input's own
// when they are non-overlapping and dense (and it is not empty); contiguous
// otherwise.
std::vector<symbolic::Expr> PreservedStrides(
    symbolic::ShapeEnv* env, absl::Span<const symbolic::Expr> sizes,
    absl::Span<const symbolic::Expr> strides);

// EmptyLikeStrides()
//
// The strides of PyTorch's empty_like(self) (preserve_format), which sort,
// flip, hardtanh and native_dropout allocate with: self's own when self is
// non-overlapping and dense by PyTorch's rule (size-1 dims do not count,
// and an empty tensor always is: unlike PreservedStrides, it keeps its
// strides); otherwise infer_dense_strides (dense, in self's dimension
// order).
std::vector<symbolic::Expr> EmptyLikeStrides(symbolic::ShapeEnv* env,
                                             const Value& self);

// OuterToInner()
//
// The dims by `strides`, largest first (ties in dim order): the order in
// which a dense layout of those strides holds them, outermost in; nullopt
// where a comparison cannot be decided.
std::optional<std::vector<int64_t>> OuterToInner(
    symbolic::ShapeEnv* env, absl::Span<const symbolic::Expr> strides);

// SuggestsChannelsLast()
//
// PyTorch's suggest_memory_format(t) == channels_last (or channels_last_3d):
// a 4-d (5-d) tensor laid out N, spatial..., C innermost by
// is_channels_last_strides_2d's (3d's) rule, ambiguous layouts counting as
// contiguous.
bool SuggestsChannelsLast(symbolic::ShapeEnv* env, const Value& t);

// ChannelsLastStrides()
//
// The channels-last (4-d) or channels-last-3d (5-d) strides of `sizes`.
std::vector<symbolic::Expr> ChannelsLastStrides(
    absl::Span<const symbolic::Expr> sizes);

}  // namespace lathe::ir

#endif  // LATHE_IR_OUTPUT_LAYOUTS_H_
