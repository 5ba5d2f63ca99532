#include "runtime/copy.h"

#include <cstdint>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::testing::HasSubstr;

Tensor Iota(std::vector<int64_t> sizes) {
  Tensor t = Tensor::Empty(sizes, DType::kFloat32).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i + 1);
  return t;
}

TEST(CopyTensorTest, ContiguousIsAnExactCopy) {
  Tensor src = Iota({3, 4});
  Tensor dst = Tensor::Empty({3, 4}, DType::kFloat32).value();
  ASSERT_OK(CopyTensor(dst, src));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(dst.data<float>()[i], i + 1);
}

TEST(CopyTensorTest, StridedDestinationGetsEachElement) {
  // dst is the transpose of a 4x3 buffer: dst[i][j] lives at j*3 + i.
  Tensor buffer = Tensor::Empty({4, 3}, DType::kFloat32).value();
  Tensor dst = buffer.AsStrided({3, 4}, {1, 3}, 0).value();
  Tensor src = Iota({3, 4});
  ASSERT_OK(CopyTensor(dst, src));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(buffer.data<float>()[j * 3 + i], i * 4 + j + 1);
    }
  }
}

TEST(CopyTensorTest, SameLayoutWithOffsetCopiesTheBlock) {
  Tensor big = Iota({10});
  Tensor dst = big.AsStrided({4}, {1}, 6).value();  // big[6:10]
  Tensor src = big.AsStrided({4}, {1}, 0).value();  // big[0:4]
  ASSERT_OK(CopyTensor(dst, src));
  std::vector<float> want = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(big.data<float>()[i], want[i]) << i;
}

TEST(CopyTensorTest, OverlappingStridedSourceIsReadBeforeWriting) {
  // dst = big[1:5] with stride 1, src = big[0:8:2]: eager reads all first.
  Tensor big = Iota({8});
  Tensor dst = big.AsStrided({4}, {1}, 1).value();
  Tensor src = big.AsStrided({4}, {2}, 0).value();
  ASSERT_OK(CopyTensor(dst, src));
  std::vector<float> want = {1, 1, 3, 5, 7, 6, 7, 8};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(big.data<float>()[i], want[i]) << i;
}

TEST(CopyTensorTest, MismatchIsAnError) {
  Tensor dst = Tensor::Empty({2, 3}, DType::kFloat32).value();
  absl::Status s = CopyTensor(dst, Iota({3, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cannot copy f32[3, 2][2, 1]cpu into "
                                     "f32[2, 3][3, 1]cpu"));
  Tensor ints = Tensor::Empty({2, 3}, DType::kInt32).value();
  EXPECT_FALSE(CopyTensor(ints, dst).ok());
  EXPECT_FALSE(CopyTensor(Tensor(), dst).ok());
}

}  // namespace
}  // namespace lathe
