// cuDNN loaded like cuBLASLt: from the toolkit where it is (no GPU needed
// to load it or to name its statuses), a missing library one line naming
// every place tried, a status a line naming the call and cuDNN's words; the
// table's types and enumerators match cudnn.h's.

#include "runtime/cuda/cudnn.h"

#include <cstddef>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

#if defined(LATHE_HAS_CUDA_TOOLKIT) && __has_include(<cudnn.h>)
#define LATHE_HAS_CUDNN_HEADERS 1
#include <cudnn.h>
#endif

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

TEST(CudnnTest, AMissingLibraryIsOneLine) {
  EXPECT_THAT(LoadCudnn("libcudnn_absent.so.7"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no cuDNN: libcudnn_absent.so.7 not found")));
}

TEST(CudnnTest, ALibraryWithoutTheConvolutionFunctionsIsNamed) {
  // libc loads but has none of cuDNN's functions.
  EXPECT_THAT(LoadCudnn("libc.so.6"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cuDNN libc.so.6 has no cudnnGetVersion")));
}

TEST(CudnnTest, TheToolkitsLibraryLoadsAndNamesItsStatuses) {
#ifndef LATHE_HAS_CUDNN_HEADERS
  GTEST_SKIP() << "no cuDNN in the CUDA toolkit";
#else
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) GTEST_SKIP() << dnn.status();  // headers without the library
  EXPECT_GE((*dnn)->version, 90000u);
  EXPECT_OK(CudnnCall(**dnn, kCudnnSuccess, "cudnnConvolutionForward"));
  EXPECT_THAT(
      CudnnCall(**dnn, CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionForward"),
      StatusIs(absl::StatusCode::kInternal,
               HasSubstr("cudnnConvolutionForward: "
                         "CUDNN_STATUS_BAD_PARAM")));
  ASSERT_OK_AND_ASSIGN(const Cudnn* again, LoadCudnn());
  EXPECT_EQ(*dnn, again);  // loaded once per name
#endif
}

#ifdef LATHE_HAS_CUDNN_HEADERS
// The declared ABI types are cudnn.h's.
static_assert(sizeof(CudnnStatus) == sizeof(cudnnStatus_t));
static_assert(sizeof(CudnnFwdAlgoPerf) ==
              sizeof(cudnnConvolutionFwdAlgoPerf_t));
static_assert(offsetof(CudnnFwdAlgoPerf, status) ==
              offsetof(cudnnConvolutionFwdAlgoPerf_t, status));
static_assert(offsetof(CudnnFwdAlgoPerf, memory) ==
              offsetof(cudnnConvolutionFwdAlgoPerf_t, memory));
static_assert(offsetof(CudnnFwdAlgoPerf, determinism) ==
              offsetof(cudnnConvolutionFwdAlgoPerf_t, determinism));
static_assert(offsetof(CudnnFwdAlgoPerf, math_type) ==
              offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType));
static_assert(sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int));
static_assert(kCudnnSuccess == CUDNN_STATUS_SUCCESS);
static_assert(kCudnnDataFloat == CUDNN_DATA_FLOAT);
static_assert(kCudnnTensorNchw == CUDNN_TENSOR_NCHW &&
              kCudnnTensorNhwc == CUDNN_TENSOR_NHWC);
static_assert(kCudnnCrossCorrelation == CUDNN_CROSS_CORRELATION);
static_assert(kCudnnFmaMath == CUDNN_FMA_MATH);
static_assert(kCudnnDeterministic == CUDNN_DETERMINISTIC);
#endif

}  // namespace
}  // namespace lathe
