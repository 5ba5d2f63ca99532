// The library routines on device memory (the emulated device), against
// hand-derived values: a product with a transposed operand into a strided
// result whose gaps keep their values, a broadcast batch in f64, a 1-d
// convolution of an operand at an offset, a descending sort; an operand
// that reaches past its buffer is the driver's error, never an access;
// convolutions of every kind against the host's reference loops (cuDNN's
// on a GPU, counted, through the host on the emulated device); cuBLASLt's
// and cuDNN's plans, worked out by hand (a GPU runs them: check.sh).

#include "runtime/cuda/device_routines.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/convolution.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/cudnn.h"
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

// bf16 operands (exact in bf16) into an f32 result: a batch of two
// [2, 3] @ [3, 2] products, b transposed, against hand-derived values
// (cuBLASLt's bf16 matmul on a GPU, the host's bgemm on the emulated
// device).
TEST_F(DeviceRoutinesTest, GemmOfBf16OperandsIntoF32) {
  // bf16 bit patterns of small integers: the top half of their f32 bits.
  auto bf16 = [](std::vector<float> v) {
    std::vector<uint16_t> bits;
    for (float f : v) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits.push_back(static_cast<uint16_t>(u >> 16));
    }
    return bits;
  };
  // a[0] = [[1, 2, 3], [4, 5, 6]], a[1] = -a[0]; b = [[1, 2], [0, 1],
  // [-1, 0]] held transposed, shared by both batches.
  Tensor a = OnDevice<uint16_t>(
      bf16({1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}), DType::kBFloat16);
  Tensor b = OnDevice<uint16_t>(bf16({1, 0, -1, 2, 1, 0}), DType::kBFloat16);
  Tensor c = OnDevice<float>(std::vector<float>(8, 99), DType::kFloat32);
  GemmCall g = {.batch = 2, .m = 2, .n = 2, .k = 3};
  g.a = a.storage().data(), g.a_bs = 6, g.a_rs = 3, g.a_cs = 1;
  g.b = b.storage().data(), g.b_bs = 0, g.b_rs = 1, g.b_cs = 3;
  g.c = c.storage().data(), g.c_bs = 4, g.c_rs = 2, g.c_cs = 1;
  ASSERT_OK(DeviceGemm(*cu_, DType::kBFloat16, g));
  EXPECT_THAT(Back<float>(c), ElementsAre(-2, 4, -2, 13, 2, -4, 2, -13));
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
                              0, 3, 3, 1,     // out
                              0};             // flags
  ASSERT_OK(DeviceConv(*cu_, geometry,
                       static_cast<const float*>(x.storage().data()),
                       static_cast<const float*>(w.storage().data()),
                       static_cast<float*>(out.storage().data())));
  EXPECT_THAT(Back<float>(out), ElementsAre(-2, -2, -2));
}

// An sconv geometry (runtime/convolution.h): the sizes, the window, each
// operand's offset and strides, then the flags.
struct ConvCase {
  int64_t groups, n, c, o;
  std::vector<int64_t> in, k, out, stride, padding, dilation;
  int64_t x_offset;
  std::vector<int64_t> x_strides;
  int64_t w_offset;
  std::vector<int64_t> w_strides;
  int64_t y_offset;
  std::vector<int64_t> y_strides;

  std::vector<int64_t> Geometry() const {
    std::vector<int64_t> g = {static_cast<int64_t>(in.size()), groups, n, c, o};
    for (const auto* v : {&in, &k, &out, &stride, &padding, &dilation}) {
      g.insert(g.end(), v->begin(), v->end());
    }
    for (const auto& [offset, strides] :
         {std::pair{x_offset, &x_strides}, std::pair{w_offset, &w_strides},
          std::pair{y_offset, &y_strides}}) {
      g.push_back(offset);
      g.insert(g.end(), strides->begin(), strides->end());
    }
    g.push_back(0);  // flags: the weights are not frozen
    return g;
  }
  // The elements each operand's buffer holds (its reach from element 0).
  static int64_t Extent(int64_t offset, const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& strides) {
    int64_t e = offset + 1;
    for (size_t d = 0; d < sizes.size(); ++d) e += (sizes[d] - 1) * strides[d];
    return e;
  }
  std::vector<int64_t> Sizes(char which) const {
    std::vector<int64_t> v = which == 'x' ? std::vector<int64_t>{n, c}
                             : which == 'w'
                                 ? std::vector<int64_t>{o, c / groups}
                                 : std::vector<int64_t>{n, o};
    const auto& sp = which == 'x' ? in : which == 'w' ? k : out;
    v.insert(v.end(), sp.begin(), sp.end());
    return v;
  }
};

// A 3x3 convolution of [2, 4, 6, 6] into 6 channels in 2 groups, stride 2,
// padding 1, dilation 1, all contiguous: out [2, 6, 3, 3].
ConvCase Grouped2d() {
  return {2,      2,
          4,      6,
          {6, 6}, {3, 3},
          {3, 3}, {2, 2},
          {1, 1}, {1, 1},
          0,      {144, 36, 6, 1},
          0,      {18, 9, 3, 1},
          0,      {54, 9, 3, 1}};
}

// Convolutions of every kind; all but the last are cuDNN's to take.
std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  cases.push_back(Grouped2d());
  // Channels-last input and output, a channels-last (NHWC) weight.
  cases.push_back({1,
                   2,
                   3,
                   5,
                   {7, 6},
                   {3, 2},
                   {5, 5},
                   {1, 1},
                   {0, 0},
                   {1, 1},
                   0,
                   {126, 1, 18, 3},
                   0,
                   {18, 1, 6, 3},
                   0,
                   {125, 1, 25, 5}});
  // 1-d, dilated, at offsets.
  cases.push_back({1,
                   3,
                   2,
                   4,
                   {20},
                   {3},
                   {8},
                   {2},
                   {1},
                   {3},
                   5,
                   {40, 20, 1},
                   7,
                   {6, 3, 1},
                   3,
                   {32, 8, 1}});
  // 3-d, depthwise.
  cases.push_back({3,
                   1,
                   3,
                   3,
                   {4, 5, 6},
                   {2, 3, 3},
                   {3, 3, 4},
                   {1, 1, 1},
                   {0, 0, 0},
                   {1, 1, 1},
                   0,
                   {360, 120, 30, 6, 1},
                   0,
                   {18, 18, 9, 3, 1},
                   0,
                   {108, 36, 12, 4, 1}});
  // An input broadcast along its batch (stride 0): the host takes it.
  cases.push_back({1,
                   2,
                   2,
                   2,
                   {4, 4},
                   {3, 3},
                   {2, 2},
                   {1, 1},
                   {0, 0},
                   {1, 1},
                   0,
                   {0, 16, 4, 1},
                   0,
                   {18, 9, 3, 1},
                   0,
                   {8, 4, 2, 1}});
  return cases;
}

TEST_F(DeviceRoutinesTest, ConvolutionsMatchTheHostsReference) {
  const std::vector<ConvCase> cases = ConvCases();
  const DeviceRoutineCounts before = DeviceRoutinesRun();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  int cudnn_plans = 0;
  for (const ConvCase& t : cases) {
    const std::vector<int64_t> g = t.Geometry();
    SCOPED_TRACE(::testing::PrintToString(g));
    cudnn_plans += PlanCudnnConv(g.data()).has_value();
    std::vector<float> x(
        ConvCase::Extent(t.x_offset, t.Sizes('x'), t.x_strides)),
        w(ConvCase::Extent(t.w_offset, t.Sizes('w'), t.w_strides)),
        y(ConvCase::Extent(t.y_offset, t.Sizes('y'), t.y_strides), 42.0f);
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    std::vector<float> want = y;
    SconvReference(g.data(), x.data(), w.data(), want.data());
    Tensor dx = OnDevice(x, DType::kFloat32), dw = OnDevice(w, DType::kFloat32),
           dy = OnDevice(y, DType::kFloat32);
    ASSERT_OK(DeviceConv(*cu_, g.data(),
                         static_cast<const float*>(dx.storage().data()),
                         static_cast<const float*>(dw.storage().data()),
                         static_cast<float*>(dy.storage().data())));
    const std::vector<float> got = Back<float>(dy);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
          << "element " << i;
    }
  }
  EXPECT_EQ(cudnn_plans, 4);  // all but the broadcast input
  const DeviceRoutineCounts after = DeviceRoutinesRun();
  if (cu_->source == "emulated") {
    EXPECT_EQ(after.cudnn_convolutions, before.cudnn_convolutions);
    EXPECT_EQ(after.through_host - before.through_host, 5);
  } else {
    ASSERT_OK(LoadCudnn().status());
    EXPECT_EQ(after.cudnn_convolutions - before.cudnn_convolutions, 4);
    EXPECT_EQ(after.through_host - before.through_host, 1);
  }
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
                       "a device gemm of i32 (it takes float32, float64 and "
                       "bfloat16)"));
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

// cuDNN's plans, worked out by hand.
TEST(CudnnConvPlanTest, TheGeometryAsDescriptors) {
  const std::vector<int64_t> g = Grouped2d().Geometry();
  std::optional<CudnnConvPlan> p = PlanCudnnConv(g.data());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 4);
  EXPECT_THAT(p->x_sizes, ElementsAre(2, 4, 6, 6, 0));
  EXPECT_THAT(p->x_strides, ElementsAre(144, 36, 6, 1, 0));
  EXPECT_THAT(p->w_sizes, ElementsAre(6, 2, 3, 3, 0));
  EXPECT_EQ(p->w_format, kCudnnTensorNchw);
  EXPECT_THAT(p->y_sizes, ElementsAre(2, 6, 3, 3, 0));
  EXPECT_THAT(p->padding, ElementsAre(1, 1, 0));
  EXPECT_THAT(p->stride, ElementsAre(2, 2, 0));
  EXPECT_THAT(p->dilation, ElementsAre(1, 1, 0));
  EXPECT_EQ(p->groups, 2);
}

TEST(CudnnConvPlanTest, OneSpatialDimGainsAUnitDimAndOffsetsAreKept) {
  // x [1, 1, 5] at element 2 of a 1-d convolution (the test above's).
  const int64_t g[] = {1, 1, 1, 1, 1, 5, 3, 3, 1, 0, 1, 2,
                       5, 5, 1, 0, 3, 3, 1, 0, 3, 3, 1, 0};
  std::optional<CudnnConvPlan> p = PlanCudnnConv(g);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 4);
  EXPECT_THAT(p->x_sizes, ElementsAre(1, 1, 1, 5, 0));
  EXPECT_THAT(p->x_strides, ElementsAre(5, 5, 5, 1, 0));
  EXPECT_THAT(p->w_sizes, ElementsAre(1, 1, 1, 3, 0));
  EXPECT_THAT(p->padding, ElementsAre(0, 0, 0));
  EXPECT_THAT(p->stride, ElementsAre(1, 1, 0));
  EXPECT_EQ(p->x_offset, 2);
  EXPECT_EQ(p->w_offset, 0);
}

TEST(CudnnConvPlanTest, AChannelsLastWeightIsAnNhwcFilter) {
  ConvCase t = Grouped2d();
  t.w_strides = {18, 1, 6, 2};  // [6, 2, 3, 3] held as [6, 3, 3, 2]
  std::vector<int64_t> g = t.Geometry();
  std::optional<CudnnConvPlan> p = PlanCudnnConv(g.data());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->w_format, kCudnnTensorNhwc);
}

TEST(CudnnConvPlanTest, CudnnTakesThePlansDescriptors) {
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) GTEST_SKIP() << dnn.status();
  ConvCase nhwc = Grouped2d();
  nhwc.w_strides = {18, 1, 6, 2};
  std::vector<ConvCase> cases = ConvCases();
  cases.back() = nhwc;  // for the broadcast input cuDNN does not take
  for (const ConvCase& t : cases) {
    const std::vector<int64_t> g = t.Geometry();
    std::optional<CudnnConvPlan> p = PlanCudnnConv(g.data());
    ASSERT_TRUE(p.has_value());
    EXPECT_OK(CheckCudnnConvPlan(**dnn, *p));
  }
  // A plan whose output sizes are not the window's.
  std::optional<CudnnConvPlan> p = PlanCudnnConv(Grouped2d().Geometry().data());
  p->y_sizes[3] = 4;
  EXPECT_THAT(CheckCudnnConvPlan(**dnn, *p),
              StatusIs(absl::StatusCode::kInternal,
                       "cuDNN's output sizes [2, 6, 3, 3] are not the "
                       "convolution's [2, 6, 3, 4]"));
}

TEST(CudnnConvPlanTest, WhatCudnnCannotTakeGoesThroughTheHost) {
  auto declined = [](ConvCase t) {
    const std::vector<int64_t> g = t.Geometry();
    return !PlanCudnnConv(g.data()).has_value();
  };
  ConvCase t = Grouped2d();
  EXPECT_FALSE(declined(t));
  ConvCase unpacked_weight = t;
  unpacked_weight.w_strides = {18, 9, 1, 3};  // spatial dims transposed
  EXPECT_TRUE(declined(unpacked_weight));
  ConvCase reversed_input = t;
  reversed_input.x_strides = {144, 36, 6, -1};
  EXPECT_TRUE(declined(reversed_input));
  ConvCase overlapping_output = t;
  overlapping_output.y_strides = {54, 9, 1, 1};
  EXPECT_TRUE(declined(overlapping_output));
  ConvCase empty = t;
  empty.n = 0;
  EXPECT_TRUE(declined(empty));
  ConvCase huge = t;
  huge.x_strides = {int64_t{1} << 31, 36, 6, 1};
  EXPECT_TRUE(declined(huge));
  ConvCase bad_groups = t;
  bad_groups.groups = 3;  // 4 channels
  EXPECT_TRUE(declined(bad_groups));
}

}  // namespace
}  // namespace lathe
