// -----------------------------------------------------------------------------
// File: cudnn.h
// -----------------------------------------------------------------------------
//
// The cuDNN functions lathe's CUDA convolutions call, loaded the way the
// driver, NVRTC and cuBLASLt are (function_table.h): dlopen of the
// toolkit's libcudnn (cuDNN 9's front library, which loads its own parts),
// one table, never linked, so //runtime loads on machines without it; no
// library is one line naming every place tried, and the convolutions go
// through the host then (device_routines.h). Every status becomes a Status
// naming the call and cuDNN's words for it (CudnnCall). The types are the
// library's ABI, declared here so the runtime needs no cuDNN header
// (cudnn_test checks them against cudnn.h where the toolkit has it).
//
// lathe calls cuDNN's descriptor API (cudnnConvolutionForward), which
// cuDNN 9 keeps though it marks it deprecated in favour of its graph API:
// it takes every stride lathe's operands have and needs no engine search.
//
// Example:
//
//   ASSIGN_OR_RETURN(const Cudnn* dnn, LoadCudnn());
//   CudnnHandle h = nullptr;
//   RETURN_IF_ERROR(CudnnCall(*dnn, dnn->create(&h), "cudnnCreate"));

#ifndef LATHE_RUNTIME_CUDA_CUDNN_H_
#define LATHE_RUNTIME_CUDA_CUDNN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

// cuDNN's ABI types (cudnn_graph.h's cudnnStatus_t, handles, ...).
using CudnnStatus = int;  // 0 is CUDNN_STATUS_SUCCESS
struct CudnnContext;
struct CudnnTensorStruct;
struct CudnnFilterStruct;
struct CudnnConvolutionStruct;
using CudnnHandle = CudnnContext*;
using CudnnTensorDesc = CudnnTensorStruct*;
using CudnnFilterDesc = CudnnFilterStruct*;
using CudnnConvDesc = CudnnConvolutionStruct*;
// cudnnConvolutionFwdAlgoPerf_t.
struct CudnnFwdAlgoPerf {
  int algo = 0;
  CudnnStatus status = 0;
  float time = 0;
  size_t memory = 0;
  int determinism = 0;
  int math_type = 0;
  int reserved[3] = {0, 0, 0};
};

inline constexpr CudnnStatus kCudnnSuccess = 0;
// The enumerators lathe passes (cudnn_test checks them against the headers).
inline constexpr int kCudnnDataFloat = 0;         // cudnnDataType_t
inline constexpr int kCudnnTensorNchw = 0;        // cudnnTensorFormat_t
inline constexpr int kCudnnTensorNhwc = 1;        //
inline constexpr int kCudnnCrossCorrelation = 1;  // cudnnConvolutionMode_t
inline constexpr int kCudnnFmaMath = 3;           // cudnnMathType_t: no TF32
inline constexpr int kCudnnDeterministic = 1;     // cudnnDeterminism_t

// X(member, symbol, return type, parameters): the table's functions.
#define LATHE_CUDNN_FUNCTIONS(X)                                               \
  X(get_version, "cudnnGetVersion", size_t, ())                                \
  X(get_error_string, "cudnnGetErrorString", const char*,                      \
    (CudnnStatus status))                                                      \
  X(create, "cudnnCreate", CudnnStatus, (CudnnHandle * handle))                \
  X(destroy, "cudnnDestroy", CudnnStatus, (CudnnHandle handle))                \
  X(create_tensor, "cudnnCreateTensorDescriptor", CudnnStatus,                 \
    (CudnnTensorDesc * desc))                                                  \
  X(set_tensor_nd, "cudnnSetTensorNdDescriptor", CudnnStatus,                  \
    (CudnnTensorDesc desc, int type, int rank, const int* sizes,               \
     const int* strides))                                                      \
  X(destroy_tensor, "cudnnDestroyTensorDescriptor", CudnnStatus,               \
    (CudnnTensorDesc desc))                                                    \
  X(create_filter, "cudnnCreateFilterDescriptor", CudnnStatus,                 \
    (CudnnFilterDesc * desc))                                                  \
  X(set_filter_nd, "cudnnSetFilterNdDescriptor", CudnnStatus,                  \
    (CudnnFilterDesc desc, int type, int format, int rank, const int* sizes))  \
  X(destroy_filter, "cudnnDestroyFilterDescriptor", CudnnStatus,               \
    (CudnnFilterDesc desc))                                                    \
  X(create_conv, "cudnnCreateConvolutionDescriptor", CudnnStatus,              \
    (CudnnConvDesc * desc))                                                    \
  X(set_conv_nd, "cudnnSetConvolutionNdDescriptor", CudnnStatus,               \
    (CudnnConvDesc desc, int spatial, const int* padding, const int* stride,   \
     const int* dilation, int mode, int compute_type))                         \
  X(set_conv_groups, "cudnnSetConvolutionGroupCount", CudnnStatus,             \
    (CudnnConvDesc desc, int groups))                                          \
  X(set_conv_math, "cudnnSetConvolutionMathType", CudnnStatus,                 \
    (CudnnConvDesc desc, int math_type))                                       \
  X(destroy_conv, "cudnnDestroyConvolutionDescriptor", CudnnStatus,            \
    (CudnnConvDesc desc))                                                      \
  X(output_dims, "cudnnGetConvolutionNdForwardOutputDim", CudnnStatus,         \
    (CudnnConvDesc conv, CudnnTensorDesc x, CudnnFilterDesc w, int rank,       \
     int* sizes))                                                              \
  X(forward_algorithms, "cudnnGetConvolutionForwardAlgorithm_v7", CudnnStatus, \
    (CudnnHandle handle, CudnnTensorDesc x, CudnnFilterDesc w,                 \
     CudnnConvDesc conv, CudnnTensorDesc y, int requested, int* returned,      \
     CudnnFwdAlgoPerf* results))                                               \
  X(forward_workspace, "cudnnGetConvolutionForwardWorkspaceSize", CudnnStatus, \
    (CudnnHandle handle, CudnnTensorDesc x, CudnnFilterDesc w,                 \
     CudnnConvDesc conv, CudnnTensorDesc y, int algo, size_t* bytes))          \
  X(forward, "cudnnConvolutionForward", CudnnStatus,                           \
    (CudnnHandle handle, const void* alpha, CudnnTensorDesc x_desc,            \
     const void* x, CudnnFilterDesc w_desc, const void* w, CudnnConvDesc conv, \
     int algo, void* workspace, size_t workspace_bytes, const void* beta,      \
     CudnnTensorDesc y_desc, void* y))

// The table; `source` is the library it came from, `version` its
// cudnnGetVersion() (90100 is 9.1.0).
struct Cudnn {
#define LATHE_CUDNN_MEMBER(member, symbol, ret, params) \
  ret(*member) params = nullptr;
  LATHE_CUDNN_FUNCTIONS(LATHE_CUDNN_MEMBER)
#undef LATHE_CUDNN_MEMBER
  std::string source;
  size_t version = 0;
};

// LoadCudnn()
//
// cuDNN from `library`, or, when empty, the first of libcudnn.so.9 and
// libcudnn.so that dlopen finds, then those in $CUDA_PATH/lib64 (default
// /usr/local/cuda); loaded once per name and kept. A FailedPrecondition
// error naming every place tried, the function a library lacks, or a
// cuDNN before 9 (whose front library holds no convolution).
absl::StatusOr<const Cudnn*> LoadCudnn(const std::string& library = "");

// CudnnCall()
//
// OK for kCudnnSuccess; otherwise an error naming `call` and cuDNN's
// words for `status` ("cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM").
absl::Status CudnnCall(const Cudnn& dnn, CudnnStatus status,
                       absl::string_view call);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_CUDNN_H_
