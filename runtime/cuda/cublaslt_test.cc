// cuBLASLt loaded like the driver and NVRTC: from the toolkit where it is
// (no GPU needed to load it or to name its statuses), a missing library one
// line naming every place tried, a status a line naming the call and
// cuBLAS's words; the table's types match cublasLt.h's.

#include "runtime/cuda/cublaslt.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

#ifdef LATHE_HAS_CUDA_TOOLKIT
#include <cublasLt.h>
#endif

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

TEST(CublasLtTest, AMissingLibraryIsOneLine) {
  EXPECT_THAT(LoadCublasLt("libcublasLt_absent.so.7"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no cuBLASLt: libcublasLt_absent.so.7 not "
                                 "found")));
}

TEST(CublasLtTest, TheToolkitsLibraryLoadsAndNamesItsStatuses) {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  GTEST_SKIP() << "no CUDA toolkit";
#else
  ASSERT_OK_AND_ASSIGN(const CublasLt* lt, LoadCublasLt());
  EXPECT_GE(lt->version, 120000u);  // CUDA 12 or later
  EXPECT_OK(CublasCall(*lt, kCublasSuccess, "cublasLtMatmul"));
  EXPECT_THAT(CublasCall(*lt, CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul"),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("cublasLtMatmul: "
                                 "CUBLAS_STATUS_INVALID_VALUE (")));
  // Loaded once per name.
  ASSERT_OK_AND_ASSIGN(const CublasLt* again, LoadCublasLt());
  EXPECT_EQ(lt, again);
#endif
}

#ifdef LATHE_HAS_CUDA_TOOLKIT
// The declared ABI types are cublasLt.h's.
static_assert(sizeof(CublasLtAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(CublasLtHeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(CublasLtHeuristicResult, workspace_size) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(CublasLtHeuristicResult, state) ==
              offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(CublasLtHeuristicResult, waves_count) ==
              offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(sizeof(CublasStatus) == sizeof(cublasStatus_t));
static_assert(kCublasOpN == CUBLAS_OP_N && kCublasOpT == CUBLAS_OP_T);
static_assert(kCublasCompute32F == CUBLAS_COMPUTE_32F &&
              kCublasCompute64F == CUBLAS_COMPUTE_64F);
static_assert(kCudaR32F == CUDA_R_32F && kCudaR64F == CUDA_R_64F &&
              kCudaR16BF == CUDA_R_16BF);
static_assert(kCublasLtMatmulDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              kCublasLtMatmulDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(kCublasLtMatrixLayoutBatchCount ==
                  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              kCublasLtMatrixLayoutStridedBatchOffset ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(kCublasLtPrefMaxWorkspaceBytes ==
                  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
              kCublasLtPrefMinAlignmentABytes ==
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
              kCublasLtPrefMinAlignmentBBytes ==
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES &&
              kCublasLtPrefMinAlignmentCBytes ==
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES &&
              kCublasLtPrefMinAlignmentDBytes ==
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
#endif

}  // namespace
}  // namespace lathe
