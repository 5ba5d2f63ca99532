#include "runtime/composite.h"

#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

Tensor F32(std::vector<int64_t> sizes) {
  return *Tensor::Empty(sizes, DType::kFloat32);
}

TEST(CompositeTest, PairFlattensAndUnflattens) {
  Tensor a = F32({4}), b = F32({4});
  ASSERT_OK_AND_ASSIGN(Operand p, MakePair(Operand::Of(a), Operand::Of(b)));
  const CompositeTensor& c = *p.composite;
  EXPECT_EQ(c.type, FindCompositeType("pair"));
  EXPECT_EQ(c.type->inner_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.inner[1].tensor.storage(), b.storage());  // the same tensor
  EXPECT_THAT(c.sizes, ::testing::ElementsAre(4));
  EXPECT_EQ(c.dtype, DType::kFloat32);
  EXPECT_EQ(p.ToString(), "pair(f32[4][1]cpu, f32[4][1]cpu)");
  // Nesting: a pair of pairs.
  ASSERT_OK_AND_ASSIGN(Operand nested, MakePair(p, p));
  EXPECT_EQ(nested.ToString(),
            "pair(pair(f32[4][1]cpu, f32[4][1]cpu), pair(f32[4][1]cpu, "
            "f32[4][1]cpu))");
}

TEST(CompositeTest, UnflattenChecksTheInnerValues) {
  EXPECT_THAT(MakePair(Operand::Of(F32({4})), Operand::Of(F32({3}))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pair: inner 'b' is f32[3][1]cpu, not of the "
                                 "outer sizes [4]")));
  Operand one[] = {Operand::Of(F32({4}))};
  EXPECT_THAT(
      FindCompositeType("pair")->Unflatten(absl::MakeSpan(one), {4}, {1}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("pair: expected 2 inner values, got 1")));
  Operand with_int[] = {Operand::Of(F32({})), Operand::Int(3)};
  EXPECT_THAT(
      FindCompositeType("pair")->Unflatten(absl::MakeSpan(with_int), {}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("inner 'b' is not a tensor (3)")));
}

TEST(CompositeTest, ScaledInt8) {
  Tensor data = *Tensor::Empty({2, 3}, DType::kInt8);
  ASSERT_OK_AND_ASSIGN(Operand s, MakeScaledInt8(data, F32({})));
  EXPECT_EQ(s.composite->dtype, DType::kFloat32);
  EXPECT_THAT(s.composite->sizes, ::testing::ElementsAre(2, 3));
  EXPECT_THAT(MakeScaledInt8(F32({2, 3}), F32({})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scaled_int8: 'data' must be i8[2, 3], got "
                                 "f32[2, 3][3, 1]cpu")));
  absl::StatusOr<Operand> vector_scale = MakeScaledInt8(data, F32({3}));
  EXPECT_FALSE(vector_scale.ok());
}

TEST(CompositeTest, RegistryRejectsATakenName) {
  EXPECT_EQ(FindCompositeType("no_such_type"), nullptr);
  absl::Status s = RegisterCompositeType(FindCompositeType("pair"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("'pair' is already registered"));
}

}  // namespace
}  // namespace lathe
