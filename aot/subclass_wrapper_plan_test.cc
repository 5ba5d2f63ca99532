#include "aot/subclass_wrapper_plan.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

using ::lathe::testing::RunFileCheck;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

Tensor F32(std::vector<int64_t> sizes) {
  return *Tensor::Empty(sizes, DType::kFloat32);
}

CompositeLayout PairLayout(CompositeLayout a = CompositeLayout::Plain(),
                           CompositeLayout b = CompositeLayout::Plain()) {
  return CompositeLayout::Of(FindCompositeType("pair"), {a, b});
}

// 30. A pair argument and result: unwrapped to (a, b), rebuilt from two
// slots.
TEST(SubclassWrapperPlanTest, PairInPairOut) {
  ASSERT_OK_AND_ASSIGN(
      SubclassWrapperPlan plan,
      SubclassWrapperPlan::Build({PairLayout()}, {PairLayout()}));
  EXPECT_EQ(plan.num_dense_arguments(), 2);
  EXPECT_EQ(plan.num_dense_results(), 2);
  Tensor a = F32({4}), b = F32({4});
  Operand tt = *MakePair(Operand::Of(a), Operand::Of(b));
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> dense, plan.Unwrap({tt}));
  ASSERT_EQ(dense.size(), 2u);
  EXPECT_EQ(dense[0].tensor.storage(), a.storage());
  EXPECT_EQ(dense[1].tensor.storage(), b.storage());
  Tensor o0 = F32({4}), o1 = F32({4});
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                       plan.Rewrap({Operand::Of(o0), Operand::Of(o1)}));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].kind, Operand::Kind::kComposite);
  EXPECT_EQ(out[0].composite->type, FindCompositeType("pair"));
  EXPECT_EQ(out[0].composite->inner[0].tensor.storage(), o0.storage());
  EXPECT_EQ(out[0].composite->inner[1].tensor.storage(), o1.storage());
  EXPECT_THAT(out[0].composite->sizes, ::testing::ElementsAre(4));
}

// 31. Nested pairs: unwrapped a.a, a.b, b.a, b.b; rebuilt inner first.
TEST(SubclassWrapperPlanTest, NestedPairs) {
  CompositeLayout nested = PairLayout(PairLayout(), PairLayout());
  ASSERT_OK_AND_ASSIGN(SubclassWrapperPlan plan,
                       SubclassWrapperPlan::Build({nested}, {nested}));
  std::vector<Tensor> t = {F32({2}), F32({2}), F32({2}), F32({2})};
  Operand inner_a = *MakePair(Operand::Of(t[0]), Operand::Of(t[1]));
  Operand inner_b = *MakePair(Operand::Of(t[2]), Operand::Of(t[3]));
  Operand arg = *MakePair(inner_a, inner_b);
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> dense, plan.Unwrap({arg}));
  ASSERT_EQ(dense.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(dense[k].tensor.storage(), t[k].storage()) << k;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, plan.Rewrap(dense));
  const CompositeTensor& outer = *out[0].composite;
  EXPECT_EQ(outer.inner[1].composite->inner[0].tensor.storage(),
            t[2].storage());
  EXPECT_EQ(out[0].ToString(), arg.ToString());
  // A plain where a pair is expected is an error naming the place.
  Operand half_plain = *MakePair(inner_a, Operand::Of(t[2]));
  EXPECT_THAT(plan.Unwrap({half_plain}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "argument 0.b: expected pair, got f32[2][1]cpu"));
}

// 32 and 33. A frozen argument is an empty slot; symbolic outer sizes and
// strides follow the inner tensors; trailing arguments (seed, offset) pass
// through as the same objects.
TEST(SubclassWrapperPlanTest, FrozenSymbolicAndTrailingArguments) {
  CompositeLayout frozen = PairLayout();
  frozen.frozen = true;
  CompositeLayout dynamic = PairLayout();
  dynamic.rank = 2;
  dynamic.symbolic_sizes = {0};  // [s0, 3][3, 1]
  ASSERT_OK_AND_ASSIGN(
      SubclassWrapperPlan plan,
      SubclassWrapperPlan::Build({frozen, CompositeLayout::Plain(), dynamic},
                                 {CompositeLayout::Plain()}));
  EXPECT_EQ(plan.num_dense_arguments(), 5);  // empty, plain, a, b, s0
  Operand pf = *MakePair(Operand::Of(F32({3})), Operand::Of(F32({3})));
  Tensor plain = F32({3});
  Tensor a = F32({5, 3}), b = F32({5, 3});
  Operand pd = *MakePair(Operand::Of(a), Operand::Of(b));
  Tensor seed = *Tensor::Empty({}, DType::kInt64);
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> dense,
                       plan.Unwrap({pf, Operand::Of(plain), pd,
                                    Operand::Of(seed), Operand::Int(7)}));
  ASSERT_EQ(dense.size(), 7u);
  EXPECT_EQ(dense[0].kind, Operand::Kind::kNone);
  EXPECT_EQ(dense[1].tensor.storage(), plain.storage());
  EXPECT_EQ(dense[2].tensor.storage(), a.storage());
  EXPECT_EQ(dense[3].tensor.storage(), b.storage());
  EXPECT_EQ(dense[4].kind, Operand::Kind::kInt);
  EXPECT_EQ(dense[4].i, 5);  // s0
  EXPECT_EQ(dense[5].tensor.storage(), seed.storage());
  EXPECT_EQ(dense[6].i, 7);
  std::string source = plan.CppSource("tt");
  absl::Status st = RunFileCheck(source, R"(
CHECK: absl::Status tt_unwrap(
CHECK: static const lathe::CompositeType* const type_pair = lathe::FindCompositeType("pair");
CHECK: if (args[2].kind != lathe::Operand::Kind::kComposite || args[2].composite->type != type_pair)
CHECK: argument 2: expected pair, got
CHECK: out->resize(5 + args.size() - 3);
CHECK-NEXT: (*out)[0] = lathe::Operand();  // argument 0 is frozen
CHECK-NEXT: (*out)[1] = args[1];
CHECK-NEXT: (*out)[2] = args[2].composite->inner[0];
CHECK-NEXT: (*out)[3] = args[2].composite->inner[1];
CHECK-NEXT: (*out)[4] = lathe::Operand::Int(lathe::OuterSizes(args[2])[0]);
CHECK-NEXT: for (size_t k = 3; k < args.size(); ++k) (*out)[2 + k] = args[k];
CHECK: absl::Status tt_rewrap(
CHECK: if (dense.size() != 1)
CHECK: (*out)[0] = std::move(dense[0]);
)");
  EXPECT_OK(st) << source;
}

// A symbolic outer dim the layout's rank does not have would read past the
// argument's sizes: refused when the plan is built.
TEST(SubclassWrapperPlanTest, ASymbolicDimPastTheRankIsRefused) {
  CompositeLayout dynamic = PairLayout();
  dynamic.symbolic_strides = {0};  // the rank is not known
  EXPECT_THAT(SubclassWrapperPlan::Build({dynamic}, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "layout pair(?,?): symbolic dim 0 of an outer rank "
                       "of -1"));
  dynamic.rank = 2;
  dynamic.symbolic_strides = {2};
  EXPECT_THAT(SubclassWrapperPlan::Build({dynamic}, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("symbolic dim 2 of an outer rank of 2")));
  dynamic.symbolic_strides = {1};
  EXPECT_OK(SubclassWrapperPlan::Build({dynamic}, {}).status());
}

TEST(SubclassWrapperPlanTest, RewrapChecksArityAndInnerValues) {
  ASSERT_OK_AND_ASSIGN(
      SubclassWrapperPlan plan,
      SubclassWrapperPlan::Build({}, {PairLayout(), CompositeLayout::Plain()}));
  EXPECT_THAT(plan.Rewrap({Operand::Of(F32({2})), Operand::Of(F32({2}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "expected 3 dense results, got 2"));
  EXPECT_THAT(plan.Rewrap({Operand::Of(F32({2})), Operand::Of(F32({3})),
                           Operand::Of(F32({1}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pair: inner 'b' is f32[3][1]cpu")));
  EXPECT_THAT(SubclassWrapperPlan::Build(
                  {CompositeLayout::Of(FindCompositeType("pair"), {})}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has 2 inner values")));
}

}  // namespace
}  // namespace lathe::aot
