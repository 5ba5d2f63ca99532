// The layout rules on symbolic sizes and strides: each case's expected
// strides are derived by hand from PyTorch's rule (TensorIterator's
// reorder_dimensions, infer_dense_strides, is_channels_last_strides_2d).

#include "ir/output_layouts.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;
using symbolic::Int;
using symbolic::Mul;

class OutputLayoutsTest : public ::testing::Test {
 protected:
  Expr Sym(int64_t hint, int dim) {
    return env_.CreateSymbol(hint, symbolic::Source::Size(0, dim));
  }
  static Value T(std::vector<Expr> sizes, std::vector<Expr> strides) {
    TensorMeta m;
    m.dtype = DType::kFloat32;
    m.sizes = std::move(sizes);
    m.strides = std::move(strides);
    m.storage_offset = Int(0);
    return Value::OfMeta(std::move(m));
  }
  static std::string S(const std::vector<Expr>& strides) {
    std::string out;
    for (Expr e : strides) {
      out += (out.empty() ? "" : ", ") + symbolic::ToString(e);
    }
    return "[" + out + "]";
  }
  symbolic::ShapeEnv env_;
};

TEST_F(OutputLayoutsTest, PointwiseKeepsATransposedInputsLayout) {
  Expr s0 = Sym(3, 0), s1 = Sym(5, 1);
  Value xt = T({s0, s1}, {Int(1), s0});  // x.t() of a contiguous [s1, s0]
  EXPECT_EQ(S(PointwiseStrides(&env_, {xt}, {s0, s1})), "[1, s0]");
  // A contiguous second operand: the first operand's order wins.
  Value y = T({s0, s1}, {s1, Int(1)});
  EXPECT_EQ(S(PointwiseStrides(&env_, {xt, y}, {s0, s1})), "[1, s0]");
  EXPECT_EQ(S(PointwiseStrides(&env_, {y, xt}, {s0, s1})), "[s1, 1]");
  // A broadcast row says nothing about dim 0.
  Value row = T({s1}, {Int(1)});
  EXPECT_EQ(S(PointwiseStrides(&env_, {xt, row}, {s0, s1})), "[1, s0]");
  // Every comparison was known for all sizes: no guard.
  EXPECT_TRUE(env_.guards().empty());
}

TEST_F(OutputLayoutsTest, PointwiseOfANonDenseInputIsDenseInItsOrder) {
  Expr s0 = Sym(3, 0), s1 = Sym(5, 1), s2 = Sym(7, 2);
  // [s0, s1, s2] permuted from a contiguous [s0, s2, s1] with every other
  // element of the last dim: strides [2*s1*s2, 2, 2*s1].
  Value x =
      T({s0, s1, s2}, {Mul(Int(2), Mul(s1, s2)), Int(2), Mul(Int(2), s1)});
  EXPECT_EQ(S(PointwiseStrides(&env_, {x}, {s0, s1, s2})), "[s1*s2, 1, s1]");
  EXPECT_EQ(S(EmptyLikeStrides(&env_, x)), "[s1*s2, 1, s1]");
  // A preserve_format copy of a non-dense input is contiguous.
  EXPECT_EQ(S(PreservedStrides(&env_, {s0, s1, s2}, x.meta.strides)),
            "[s1*s2, s2, 1]");
}

TEST_F(OutputLayoutsTest, DenseInputsKeepTheirStrides) {
  Expr s0 = Sym(3, 0), s1 = Sym(5, 1);
  std::vector<Expr> transposed = {Int(1), s0};
  EXPECT_EQ(S(PreservedStrides(&env_, {s0, s1}, transposed)), "[1, s0]");
  EXPECT_EQ(S(EmptyLikeStrides(&env_, T({s0, s1}, transposed))), "[1, s0]");
}

TEST_F(OutputLayoutsTest, OuterToInnerOrdersDimsByStride) {
  Expr s0 = Sym(3, 0), s1 = Sym(5, 1), s2 = Sym(7, 2);
  // [s0, s1, s2] laid out as [s0, s2, s1]: s1*s2, 1, s1.
  std::optional<std::vector<int64_t>> order =
      OuterToInner(&env_, {Mul(s1, s2), Int(1), s1});
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(*OuterToInner(nullptr, {Int(1), Int(4), Int(4)}),
            (std::vector<int64_t>{1, 2, 0}));  // ties keep dim order
  EXPECT_FALSE(OuterToInner(nullptr, {s0, Int(1), s1}).has_value());
}

TEST_F(OutputLayoutsTest, ChannelsLastOnSymbolicSizes) {
  Expr c = Sym(3, 1), h = Sym(5, 2), w = Sym(7, 3);
  std::vector<Expr> sizes = {Int(2), c, h, w};
  std::vector<Expr> cl = ChannelsLastStrides(sizes);
  EXPECT_EQ(S(cl), "[s0*s1*s2, 1, s0*s2, s0]");
  EXPECT_TRUE(SuggestsChannelsLast(&env_, T(sizes, cl)));
  EXPECT_EQ(S(PointwiseStrides(&env_, {T(sizes, cl)}, sizes)), S(cl));
  std::vector<Expr> contiguous = {Mul(c, Mul(h, w)), Mul(h, w), w, Int(1)};
  EXPECT_FALSE(SuggestsChannelsLast(&env_, T(sizes, contiguous)));
}

TEST_F(OutputLayoutsTest, UndecidableComparisonsGiveContiguousStrides) {
  Expr s1 = Sym(5, 1);
  Expr u0 = env_.CreateUnbacked();  // may be 0, 1 or anything
  Value x = T({u0, s1}, {Int(1), u0});
  EXPECT_EQ(S(PointwiseStrides(&env_, {x}, {u0, s1})), "[s0, 1]");
  EXPECT_EQ(S(EmptyLikeStrides(&env_, x)), "[s0, 1]");
  // No ShapeEnv: symbolic comparisons cannot be made at all.
  Value xt = T({s1, s1}, {Int(1), s1});
  EXPECT_EQ(S(PointwiseStrides(nullptr, {xt}, {s1, s1})), "[s0, 1]");
}

TEST_F(OutputLayoutsTest, NumbersNeedNoShapeEnv) {
  Value xt = T({Int(3), Int(5)}, {Int(1), Int(3)});
  EXPECT_EQ(S(PointwiseStrides(nullptr, {xt}, {Int(3), Int(5)})), "[1, 3]");
  EXPECT_EQ(S(EmptyLikeStrides(nullptr, xt)), "[1, 3]");
  // An empty tensor: contiguous for a pointwise result, its own for
  // empty_like.
  Value empty = T({Int(0), Int(5)}, {Int(1), Int(7)});
  EXPECT_EQ(S(PointwiseStrides(nullptr, {empty}, {Int(0), Int(5)})), "[5, 1]");
  EXPECT_EQ(S(EmptyLikeStrides(nullptr, empty)), "[1, 7]");
}

}  // namespace
}  // namespace lathe::ir
