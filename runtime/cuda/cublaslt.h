// -----------------------------------------------------------------------------
// File: cublaslt.h
// -----------------------------------------------------------------------------
//
// The cuBLASLt functions lathe's CUDA matrix products call, loaded the
// way the driver and NVRTC are (function_table.h): dlopen of the toolkit's
// libcublasLt, one table, never linked, so //runtime loads on machines
// without it; no library is one line naming every place tried. Every
// status becomes a Status naming the call and cuBLAS's own name and words
// for it (CublasCall). The types are the library's ABI, declared here so
// the runtime needs no CUDA header (cublaslt_test checks them against
// cublasLt.h where the toolkit is).
//
// Example:
//
//   ASSIGN_OR_RETURN(const CublasLt* lt, LoadCublasLt());
//   CublasLtHandle h = nullptr;
//   RETURN_IF_ERROR(CublasCall(*lt, lt->create(&h), "cublasLtCreate"));

#ifndef LATHE_RUNTIME_CUDA_CUBLASLT_H_
#define LATHE_RUNTIME_CUDA_CUBLASLT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cuda/driver_api.h"

namespace lathe {

// cuBLASLt's ABI types (cublasLt.h's cublasStatus_t, handles, ...).
using CublasStatus = int;  // 0 is CUBLAS_STATUS_SUCCESS
struct CublasLtContext;
struct CublasLtMatmulDescOpaque;
struct CublasLtMatrixLayoutOpaque;
struct CublasLtPreferenceOpaque;
using CublasLtHandle = CublasLtContext*;
using CublasLtMatmulDesc = CublasLtMatmulDescOpaque*;
using CublasLtMatrixLayout = CublasLtMatrixLayoutOpaque*;
using CublasLtPreference = CublasLtPreferenceOpaque*;
struct CublasLtAlgo {
  uint64_t data[8];
};
struct CublasLtHeuristicResult {
  CublasLtAlgo algo;
  size_t workspace_size;
  CublasStatus state;
  float waves_count;
  int reserved[4];
};

inline constexpr CublasStatus kCublasSuccess = 0;

// The enumerators lathe's matrix products pass (cublasLt.h, cublas_api.h,
// library_types.h; cublaslt_test checks them against the headers).
inline constexpr int kCublasOpN = 0;
inline constexpr int kCublasOpT = 1;
inline constexpr int kCublasCompute32F = 68;
inline constexpr int kCublasCompute64F = 70;
inline constexpr int kCudaR32F = 0;
inline constexpr int kCudaR64F = 1;
inline constexpr int kCudaR16BF = 14;
inline constexpr int kCublasLtMatmulDescTransA = 3;                // int32
inline constexpr int kCublasLtMatmulDescTransB = 4;                // int32
inline constexpr int kCublasLtMatrixLayoutBatchCount = 5;          // int32
inline constexpr int kCublasLtMatrixLayoutStridedBatchOffset = 6;  // int64
inline constexpr int kCublasLtPrefMaxWorkspaceBytes = 1;           // uint64
inline constexpr int kCublasLtPrefMinAlignmentABytes = 5;          // uint32
inline constexpr int kCublasLtPrefMinAlignmentBBytes = 6;
inline constexpr int kCublasLtPrefMinAlignmentCBytes = 7;
inline constexpr int kCublasLtPrefMinAlignmentDBytes = 8;

// X(member, symbol, return type, parameters): the table's functions.
#define LATHE_CUBLASLT_FUNCTIONS(X)                                            \
  X(create, "cublasLtCreate", CublasStatus, (CublasLtHandle * handle))         \
  X(destroy, "cublasLtDestroy", CublasStatus, (CublasLtHandle handle))         \
  X(get_version, "cublasLtGetVersion", size_t, ())                             \
  X(get_status_name, "cublasLtGetStatusName", const char*,                     \
    (CublasStatus status))                                                     \
  X(get_status_string, "cublasLtGetStatusString", const char*,                 \
    (CublasStatus status))                                                     \
  X(matmul_desc_create, "cublasLtMatmulDescCreate", CublasStatus,              \
    (CublasLtMatmulDesc * desc, int compute_type, int scale_type))             \
  X(matmul_desc_destroy, "cublasLtMatmulDescDestroy", CublasStatus,            \
    (CublasLtMatmulDesc desc))                                                 \
  X(matmul_desc_set_attribute, "cublasLtMatmulDescSetAttribute", CublasStatus, \
    (CublasLtMatmulDesc desc, int attribute, const void* value, size_t size))  \
  X(matrix_layout_create, "cublasLtMatrixLayoutCreate", CublasStatus,          \
    (CublasLtMatrixLayout * layout, int type, uint64_t rows, uint64_t cols,    \
     int64_t ld))                                                              \
  X(matrix_layout_destroy, "cublasLtMatrixLayoutDestroy", CublasStatus,        \
    (CublasLtMatrixLayout layout))                                             \
  X(matrix_layout_set_attribute, "cublasLtMatrixLayoutSetAttribute",           \
    CublasStatus,                                                              \
    (CublasLtMatrixLayout layout, int attribute, const void* value,            \
     size_t size))                                                             \
  X(preference_create, "cublasLtMatmulPreferenceCreate", CublasStatus,         \
    (CublasLtPreference * preference))                                         \
  X(preference_destroy, "cublasLtMatmulPreferenceDestroy", CublasStatus,       \
    (CublasLtPreference preference))                                           \
  X(preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute",          \
    CublasStatus,                                                              \
    (CublasLtPreference preference, int attribute, const void* value,          \
     size_t size))                                                             \
  X(algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic", CublasStatus,        \
    (CublasLtHandle handle, CublasLtMatmulDesc desc, CublasLtMatrixLayout a,   \
     CublasLtMatrixLayout b, CublasLtMatrixLayout c, CublasLtMatrixLayout d,   \
     CublasLtPreference preference, int requested,                             \
     CublasLtHeuristicResult* results, int* returned))                         \
  X(matmul, "cublasLtMatmul", CublasStatus,                                    \
    (CublasLtHandle handle, CublasLtMatmulDesc desc, const void* alpha,        \
     const void* a, CublasLtMatrixLayout a_desc, const void* b,                \
     CublasLtMatrixLayout b_desc, const void* beta, const void* c,             \
     CublasLtMatrixLayout c_desc, void* d, CublasLtMatrixLayout d_desc,        \
     const CublasLtAlgo* algo, void* workspace, size_t workspace_size,         \
     CuStream stream))

// The table; `source` is the library it came from, `version` its
// cublasLtGetVersion() (part of a key for tuned choices).
struct CublasLt {
#define LATHE_CUBLASLT_MEMBER(member, symbol, ret, params) \
  ret(*member) params = nullptr;
  LATHE_CUBLASLT_FUNCTIONS(LATHE_CUBLASLT_MEMBER)
#undef LATHE_CUBLASLT_MEMBER
  std::string source;
  size_t version = 0;
};

// LoadCublasLt()
//
// cuBLASLt from `library`, or, when empty, the first of libcublasLt.so.13,
// libcublasLt.so.12 and libcublasLt.so that dlopen finds, then those in
// $CUDA_PATH/lib64 (default /usr/local/cuda); loaded once per name and
// kept. A FailedPrecondition error naming every place tried, or the
// function a library lacks.
absl::StatusOr<const CublasLt*> LoadCublasLt(const std::string& library = "");

// CublasCall()
//
// OK for kCublasSuccess; otherwise an error naming `call` and cuBLAS's
// name and words for `status` ("cublasLtMatmul: CUBLAS_STATUS_INVALID_VALUE
// (an unsupported value or parameter was passed to the function)").
absl::Status CublasCall(const CublasLt& lt, CublasStatus status,
                        absl::string_view call);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUBLASLT_H_
