// The library routines on device memory (the emulated device), against
// hand-derived values: a product with a transposed operand into a strided
// result whose gaps keep their values, a broadcast batch in f64, a 1-d
// convolution of an operand at an offset, a descending sort; an operand
// that reaches past its buffer is the driver's error, never an access;
// cuBLASLt's plans for row-major layouts (a GPU runs them: check.sh).

#include "runtime/cuda/device_routines.h"

#include <cstdlib>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/sort.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;

class DeviceRoutinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The emulated device unless the environment chose (check.sh: the
    // GPU, where the products are cuBLASLt's).
    ::setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
    ASSERT_OK(UseCudaStorage());
    ASSERT_OK_AND_ASSIGN(cu_, CudaDevice());
    ASSERT_OK(MakeCudaContextCurrent(*cu_));
  }

  // `values` as a contiguous device tensor.
  template <typename T>
  Tensor OnDevice(const std::vector<T>& values, DType dtype) {
    Tensor h =
        Tensor::Empty({static_cast<int64_t>(values.size())}, dtype).value();
    for (size_t i = 0; i < values.size(); ++i) h.data<T>()[i] = values[i];
    return ToDevice(h, Device::Cuda(0)).value();
  }

  template <typename T>
  std::vector<T> Back(const Tensor& d) {
    Tensor h = ToHost(d).value();
    return std::vector<T>(h.data<T>(), h.data<T>() + h.numel());
  }

  const CudaDriver* cu_ = nullptr;
};

TEST_F(DeviceRoutinesTest, GemmWithATransposedOperandKeepsTheResultsGaps) {
  // a = [[1, 2, 3], [4, 5, 6]]; b = [[1, 2], [0, 1], [-1, 0]] held
  // transposed (row stride 1, column stride 3); c is [2, 2] with row
  // stride 3 in a [2, 3] buffer whose last column is 99.
  Tensor a = OnDevice<float>({1, 2, 3, 4, 5, 6}, DType::kFloat32);
  Tensor b = OnDevice<float>({1, 0, -1, 2, 1, 0}, DType::kFloat32);
  Tensor c = OnDevice<float>({0, 0, 99, 0, 0, 99}, DType::kFloat32);
  GemmCall g = {.batch = 1, .m = 2, .n = 2, .k = 3};
  g.a = a.storage().data(), g.a_rs = 3, g.a_cs = 1;
  g.b = b.storage().data(), g.b_rs = 1, g.b_cs = 3;
  g.c = c.storage().data(), g.c_rs = 3, g.c_cs = 1;
  ASSERT_OK(DeviceGemm(*cu_, DType::kFloat32, g));
  EXPECT_THAT(Back<float>(c), ElementsAre(-2, 4, 99, -2, 13, 99));
}

TEST_F(DeviceRoutinesTest, GemmOfABroadcastBatchInF64) {
  // Two batches of [1, 2] @ [2, 1], a shared (batch stride 0).
  Tensor a = OnDevice<double>({2, 3}, DType::kFloat64);
  Tensor b = OnDevice<double>({1, 1, 10, -1}, DType::kFloat64);
  Tensor c = OnDevice<double>({0, 0}, DType::kFloat64);
  GemmCall g = {.batch = 2, .m = 1, .n = 1, .k = 2};
  g.a = a.storage().data(), g.a_bs = 0, g.a_rs = 2, g.a_cs = 1;
  g.b = b.storage().data(), g.b_bs = 2, g.b_rs = 1, g.b_cs = 1;
  g.c = c.storage().data(), g.c_bs = 1, g.c_rs = 1, g.c_cs = 1;
  ASSERT_OK(DeviceGemm(*cu_, DType::kFloat64, g));
  EXPECT_THAT(Back<double>(c), ElementsAre(5, 17));
}

TEST_F(DeviceRoutinesTest, ConvolutionOfAnOperandAtAnOffset) {
  // x = 1..5 at element 2 of its buffer, w = [1, 0, -1]: x[i] - x[i + 2].
  Tensor x = OnDevice<float>({7, 7, 1, 2, 3, 4, 5}, DType::kFloat32);
  Tensor w = OnDevice<float>({1, 0, -1}, DType::kFloat32);
  Tensor out = OnDevice<float>({0, 0, 0}, DType::kFloat32);
  const int64_t geometry[] = {1, 1, 1, 1, 1,  // s, groups, N, C, O
                              5, 3, 3,        // input, kernel, output
                              1, 0, 1,        // stride, padding, dilation
                              2, 5, 5, 1,     // x offset and strides
                              0, 3, 3, 1,     // w
                              0, 3, 3, 1};    // out
  ASSERT_OK(DeviceConv(*cu_, geometry,
                       static_cast<const float*>(x.storage().data()),
                       static_cast<const float*>(w.storage().data()),
                       static_cast<float*>(out.storage().data())));
  EXPECT_THAT(Back<float>(out), ElementsAre(-2, -2, -2));
}

TEST_F(DeviceRoutinesTest, SortDescending) {
  Tensor x = OnDevice<float>({3, 1, 2, 0}, DType::kFloat32);
  Tensor values = OnDevice<float>({0, 0, 0, 0}, DType::kFloat32);
  Tensor indices = OnDevice<int64_t>({0, 0, 0, 0}, DType::kInt64);
  const int64_t geometry[] = {static_cast<int64_t>(DType::kFloat32),
                              1,  // rank
                              0,  // dim
                              1,  // descending
                              -1,
                              2,
                              0,
                              4,
                              0,
                              1,
                              0,
                              1,
                              0,
                              1};
  ASSERT_OK(DeviceSort(*cu_, geometry, x.storage().data(),
                       values.storage().data(),
                       static_cast<int64_t*>(indices.storage().data())));
  EXPECT_THAT(Back<float>(values), ElementsAre(3, 2, 1, 0));
  EXPECT_THAT(Back<int64_t>(indices), ElementsAre(0, 2, 1, 3));
}

TEST_F(DeviceRoutinesTest, AnOperandPastItsBufferIsAnError) {
  if (cu_->source != "emulated") {
    GTEST_SKIP() << "the emulated device's check of every copy's range";
  }
  Tensor a = OnDevice<float>({1, 2}, DType::kFloat32);
  Tensor c = OnDevice<float>({0, 0}, DType::kFloat32);
  GemmCall g = {.batch = 1, .m = 2, .n = 1, .k = 1024};
  g.a = a.storage().data(), g.a_rs = 1024, g.a_cs = 1;
  g.b = a.storage().data(), g.b_rs = 1, g.b_cs = 1;
  g.c = c.storage().data(), g.c_rs = 1, g.c_cs = 1;
  EXPECT_THAT(DeviceGemm(*cu_, DType::kFloat32, g),
              StatusIs(absl::StatusCode::kInternal,
                       "cuMemcpyDtoHAsync: CUDA_ERROR_INVALID_VALUE (invalid "
                       "argument)"));
  EXPECT_THAT(Back<float>(c), ElementsAre(0, 0));
}

TEST_F(DeviceRoutinesTest, RefusesWhatTheRoutinesDoNotTake) {
  GemmCall g;
  EXPECT_THAT(DeviceGemm(*cu_, DType::kInt32, g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a device gemm of i32 (it takes float32 and float64)"));
  const int64_t conv[32] = {4};
  EXPECT_THAT(DeviceConv(*cu_, conv, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a device convolution of 4 spatial dims (it takes 1 "
                       "to 3)"));
  const int64_t sort[16] = {99, 1, 0};
  EXPECT_THAT(DeviceSort(*cu_, sort, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a device sort of dtype 99"));
}

// cuBLASLt's plans, worked out by hand (c^T = b^T a^T, column-major).
TEST(CublasLtGemmPlanTest, RowMajorOperandsAreTransposedColumnMajorOnes) {
  // a [4, 3], b [3, 5], c [4, 5], all contiguous: b^T is column-major
  // [5, 3] (ld 5), a^T [3, 4] (ld 3), c^T [5, 4] (ld 5), none transposed.
  GemmCall g = {.batch = 1, .m = 4, .n = 5, .k = 3};
  g.a_rs = 3, g.a_cs = 1, g.b_rs = 5, g.b_cs = 1, g.c_rs = 5, g.c_cs = 1;
  std::optional<CublasLtGemmPlan> p = PlanCublasLtGemm(g);
  ASSERT_TRUE(p.has_value());
  auto is = [](const CublasLtOperand& o, int op, uint64_t rows, uint64_t cols,
               int64_t ld) {
    return o.op == op && o.rows == rows && o.cols == cols && o.ld == ld;
  };
  EXPECT_TRUE(is(p->first, kCublasOpN, 5, 3, 5));
  EXPECT_TRUE(is(p->second, kCublasOpN, 3, 4, 3));
  EXPECT_TRUE(is(p->result, kCublasOpN, 5, 4, 5));
  // b held transposed (b = w^T of a [5, 3] w): b^T is w, row-major [5, 3]
  // = column-major [3, 5] (ld 3), transposed.
  g.b_rs = 1, g.b_cs = 3;
  p = PlanCublasLtGemm(g);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(is(p->first, kCublasOpT, 3, 5, 3));
  // One row of a: its row stride is never stepped.
  g.m = 1, g.a_rs = 999;
  p = PlanCublasLtGemm(g);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(is(p->second, kCublasOpN, 3, 1, 3));
}

TEST(CublasLtGemmPlanTest, LayoutsItCannotTakeGoThroughTheHost) {
  GemmCall g = {.batch = 1, .m = 4, .n = 5, .k = 3};
  g.a_rs = 3, g.a_cs = 1, g.b_rs = 5, g.b_cs = 1, g.c_rs = 5, g.c_cs = 1;
  GemmCall no_unit = g;
  no_unit.a_rs = 6, no_unit.a_cs = 2;
  EXPECT_FALSE(PlanCublasLtGemm(no_unit).has_value());
  GemmCall transposed_result = g;
  transposed_result.c_rs = 1, transposed_result.c_cs = 4;
  EXPECT_FALSE(PlanCublasLtGemm(transposed_result).has_value());
  GemmCall overlapping = g;
  overlapping.b_rs = 2;  // rows of 5 elements, 2 apart
  EXPECT_FALSE(PlanCublasLtGemm(overlapping).has_value());
  GemmCall empty_sum = g;
  empty_sum.k = 0;
  EXPECT_FALSE(PlanCublasLtGemm(empty_sum).has_value());
}

}  // namespace
}  // namespace lathe
