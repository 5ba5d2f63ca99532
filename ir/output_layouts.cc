#include "ir/output_layouts.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ops_util.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

// Decides the comparisons a layout rule makes: numbers at once, symbolic
// ones statically or at the ShapeEnv's hints (with a guard). After one it
// cannot decide, failed() holds and every answer is false: the rule's
// caller then gives contiguous strides.
class Decider {
 public:
  explicit Decider(symbolic::ShapeEnv* env) : env_(env) {}

  bool failed() const { return failed_; }
  bool Eq(Expr a, Expr b) { return Holds(a, b, /*less=*/false); }
  bool Lt(Expr a, Expr b) { return Holds(a, b, /*less=*/true); }
  bool Eq(Expr a, int64_t b) { return Eq(a, symbolic::Int(b)); }

 private:
  bool Holds(Expr a, Expr b, bool less) {
    if (failed_) return false;
    if (a == b) return !less;
    if (a.kind() == symbolic::ExprKind::kInteger &&
        b.kind() == symbolic::ExprKind::kInteger) {
      return less ? a.int_value() < b.int_value()
                  : a.int_value() == b.int_value();
    }
    Expr cond = less ? symbolic::Lt(a, b) : symbolic::Eq(a, b);
    if (cond.kind() == symbolic::ExprKind::kBoolean) return cond.bool_value();
    absl::StatusOr<bool> known =
        env_ != nullptr ? env_->EvaluateBool(cond)
                        : absl::StatusOr<bool>(absl::UnknownError(""));
    if (!known.ok()) {
      failed_ = true;
      return false;
    }
    return *known;
  }

  symbolic::ShapeEnv* env_;
  bool failed_ = false;
};

// The dims of a 4-d (5-d) tensor from the fastest-moving in, channels last:
// C, W, H, N (C, W, H, D, N).
std::vector<int64_t> ChannelsLastOrder(size_t rank) {
  return rank == 4 ? std::vector<int64_t>{1, 3, 2, 0}
                   : std::vector<int64_t>{1, 4, 3, 2, 0};
}

// is_non_overlapping_and_dense for a tensor that is not empty: its dims of
// size other than 1, by stride, chain densely from 1.
bool Dense(Decider& is, absl::Span<const Expr> sizes,
           absl::Span<const Expr> strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!is.Eq(sizes[d], 1)) dims.push_back(d);
  }
  auto before = [&](size_t x, size_t y) {  // by (stride, size)
    return is.Lt(strides[x], strides[y]) ||
           (is.Eq(strides[x], strides[y]) && is.Lt(sizes[x], sizes[y]));
  };
  for (size_t i = 1; i < dims.size(); ++i) {
    for (size_t j = i; j > 0 && before(dims[j], dims[j - 1]); --j) {
      std::swap(dims[j], dims[j - 1]);
    }
  }
  Expr expected = symbolic::Int(1);
  for (size_t d : dims) {
    if (!is.Eq(strides[d], expected)) return false;
    expected = symbolic::Mul(expected, sizes[d]);
  }
  return true;
}

// The dims ordered fastest-moving first by the operands' strides, as
// TensorIterator's reorder_dimensions and infer_dense_strides sort them:
// an insertion sort from the last dim in, where a stride of 0 says
// nothing, a smaller stride keeps the order, a larger one (or an equal one
// over a larger size) swaps, and the next operand breaks a tie.
std::vector<int64_t> DimOrder(Decider& is, absl::Span<const Expr> sizes,
                              const std::vector<std::vector<Expr>>& strides) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> perm(ndim);
  for (int64_t d = 0; d < ndim; ++d) perm[d] = ndim - 1 - d;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const std::vector<Expr>& st : strides) {
      Expr s0 = st[d0], s1 = st[d1];
      if (is.Eq(s0, 0) || is.Eq(s1, 0)) continue;
      if (is.Lt(s0, s1)) return -1;
      if (is.Lt(s1, s0)) return 1;
      if (is.Lt(sizes[d1], sizes[d0])) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      int cmp = should_swap(perm[dim0], perm[dim1]);
      if (cmp > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  return perm;
}

// Dense strides laying `sizes` out in `perm`'s order (perm[0] fastest); an
// empty dim does not scale the others.
std::vector<Expr> DenseStrides(Decider& is, absl::Span<const Expr> sizes,
                               const std::vector<int64_t>& perm) {
  std::vector<Expr> out(sizes.size());
  Expr next = symbolic::Int(1);
  for (int64_t d : perm) {
    out[d] = next;
    if (!is.Eq(sizes[d], 0)) next = symbolic::Mul(next, sizes[d]);
  }
  return out;
}

// Whether `strides` lay `sizes` out channels last, size-1 dims ignored.
bool ChannelsLastDense(Decider& is, absl::Span<const Expr> sizes,
                       absl::Span<const Expr> strides) {
  Expr expected = symbolic::Int(1);
  for (int64_t d : ChannelsLastOrder(sizes.size())) {
    if (is.Eq(sizes[d], 1)) continue;
    if (!is.Eq(strides[d], expected)) return false;
    expected = symbolic::Mul(expected, sizes[d]);
  }
  return true;
}

// Whether every tensor operand is contiguous at the full shape `sizes`,
// spelled as `contiguous` (the usual case, decided without comparisons).
bool AllPlainlyContiguous(absl::Span<const Value> operands,
                          absl::Span<const Expr> sizes,
                          const std::vector<Expr>& contiguous) {
  for (const Value& v : operands) {
    if (!v.is_tensor()) continue;
    std::vector<Expr> s = SizesOf(v), st = StridesOf(v);
    if (!std::equal(s.begin(), s.end(), sizes.begin(), sizes.end()) ||
        st != contiguous) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<Expr> PointwiseStrides(symbolic::ShapeEnv* env,
                                   absl::Span<const Value> operands,
                                   absl::Span<const Expr> sizes) {
  std::vector<Expr> contiguous = ContiguousStrides(sizes);
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  if (ndim <= 1 || AllPlainlyContiguous(operands, sizes, contiguous)) {
    return contiguous;
  }
  Decider is(env);
  int64_t numel = 1;
  bool overflow = false;
  for (Expr s : sizes) {
    if (is.Eq(s, 0)) return contiguous;
    // Too many elements to address: shape propagation reports the result.
    if (s.kind() == symbolic::ExprKind::kInteger) {
      overflow |= __builtin_mul_overflow(numel, s.int_value(), &numel);
    }
  }
  if (overflow) return contiguous;
  // Each tensor operand's strides broadcast to the output shape.
  std::vector<std::vector<Expr>> strides;
  bool same_shape = true;
  for (const Value& v : operands) {
    if (!v.is_tensor()) {
      // A number is a wrapped 0-d tensor operand: it rules out the fast
      // setup (as a 0-d tensor does) and adds no strides.
      if (v.is_number()) same_shape = false;
      continue;
    }
    std::vector<Expr> s = SizesOf(v), st = StridesOf(v);
    if (s.size() != sizes.size()) same_shape = false;
    std::vector<Expr> b(ndim, symbolic::Int(0));
    int64_t offset = ndim - static_cast<int64_t>(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      bool broadcast = is.Eq(s[d], 1) && !is.Eq(sizes[offset + d], 1);
      if (!broadcast) b[offset + d] = st[d];
      if (!is.Eq(s[d], sizes[offset + d])) same_shape = false;
    }
    strides.push_back(std::move(b));
  }
  if (strides.empty() || is.failed()) return contiguous;
  if (same_shape) {  // TensorIterator's fast setup
    bool all_contiguous = true, same_dense = true;
    for (const std::vector<Expr>& st : strides) {
      for (int64_t d = 0; d < ndim; ++d) {
        if (!is.Eq(sizes[d], 1) && !is.Eq(st[d], contiguous[d])) {
          all_contiguous = false;
        }
        if (!is.Eq(st[d], strides[0][d])) same_dense = false;
      }
      if (!Dense(is, sizes, st)) same_dense = false;
    }
    if (is.failed() || all_contiguous) return contiguous;
    // Then channels-last (4-d) / channels-last-3d (5-d): every operand
    // is_contiguous(ChannelsLast), size-1 dims ignored, gives that format.
    if (ndim == 4 || ndim == 5) {
      bool all_channels_last = true;
      for (const std::vector<Expr>& st : strides) {
        all_channels_last &= ChannelsLastDense(is, sizes, st);
      }
      if (is.failed()) return contiguous;
      if (all_channels_last) return ChannelsLastStrides(sizes);
    }
    if (same_dense) return strides[0];
  }
  std::vector<int64_t> perm = DimOrder(is, sizes, strides);
  bool inverted = true;
  for (int64_t j = 0; j < ndim; ++j) {
    inverted = inverted && perm[j] == ndim - 1 - j;
  }
  if (is.failed() || inverted) return contiguous;
  std::vector<Expr> out = DenseStrides(is, sizes, perm);
  return is.failed() ? contiguous : out;
}

std::vector<Expr> PreservedStrides(symbolic::ShapeEnv* env,
                                   absl::Span<const Expr> sizes,
                                   absl::Span<const Expr> strides) {
  std::vector<Expr> contiguous = ContiguousStrides(sizes);
  if (std::equal(strides.begin(), strides.end(), contiguous.begin(),
                 contiguous.end())) {
    return contiguous;
  }
  Decider is(env);
  for (Expr s : sizes) {
    if (is.Eq(s, 0)) return contiguous;
  }
  bool dense = Dense(is, sizes, strides);
  if (is.failed() || !dense) return contiguous;
  return std::vector<Expr>(strides.begin(), strides.end());
}

std::vector<Expr> EmptyLikeStrides(symbolic::ShapeEnv* env, const Value& self) {
  std::vector<Expr> sizes = SizesOf(self), strides = StridesOf(self);
  std::vector<Expr> contiguous = ContiguousStrides(sizes);
  if (strides == contiguous) return contiguous;
  Decider is(env);
  for (Expr s : sizes) {
    if (is.Eq(s, 0)) return is.failed() ? contiguous : strides;
  }
  bool dense = Dense(is, sizes, strides);
  if (is.failed()) return contiguous;
  if (dense) return strides;
  // infer_dense_strides: dense, in self's dimension order.
  std::vector<int64_t> perm = DimOrder(is, sizes, {strides});
  std::vector<Expr> out = DenseStrides(is, sizes, perm);
  return is.failed() ? contiguous : out;
}

std::optional<std::vector<int64_t>> OuterToInner(
    symbolic::ShapeEnv* env, absl::Span<const Expr> strides) {
  Decider is(env);
  std::vector<int64_t> order(strides.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
  for (size_t i = 1; i < order.size(); ++i) {
    for (size_t j = i; j > 0 && is.Lt(strides[order[j - 1]], strides[order[j]]);
         --j) {
      std::swap(order[j], order[j - 1]);
    }
  }
  if (is.failed()) return std::nullopt;
  return order;
}

bool SuggestsChannelsLast(symbolic::ShapeEnv* env, const Value& t) {
  std::vector<Expr> sizes = SizesOf(t), strides = StridesOf(t);
  if (sizes.size() != 4 && sizes.size() != 5) return false;
  Decider is(env);
  // c10's is_channels_last_strides_{2,3}d_s{4,5}.
  if (is.Eq(strides[1], 0)) return false;
  Expr min = symbolic::Int(0);
  for (int64_t d : ChannelsLastOrder(sizes.size())) {
    if (is.Eq(sizes[d], 0) || is.Lt(strides[d], min)) return false;
    if (d == 0 && is.Eq(min, strides[1])) return false;
    min = strides[d];
    if (is.Lt(symbolic::Int(1), sizes[d])) min = symbolic::Mul(min, sizes[d]);
  }
  return !is.failed();
}

std::vector<Expr> ChannelsLastStrides(absl::Span<const Expr> sizes) {
  std::vector<Expr> out(sizes.size());
  Expr next = symbolic::Int(1);
  for (int64_t d : ChannelsLastOrder(sizes.size())) {
    out[d] = next;
    next = symbolic::Mul(next, sizes[d]);
  }
  return out;
}

}  // namespace lathe::ir
