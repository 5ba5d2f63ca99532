// -----------------------------------------------------------------------------
// File: device_routines.h
// -----------------------------------------------------------------------------
//
// The kernel runtime's library routines (kernel_abi.h's sgemm, dgemm,
// bgemm, sconv and sort) on device memory, which a compiled graph's host
// function calls between its kernels through LatheDeviceRuntime: each waits for
// the work queued before it, copies the elements its operands reach (found from
// their sizes, strides and offsets) to the host, runs the host routine
// (runtime/kernel_runtime.h: oneDNN, lathe's sort) there and copies what it
// wrote back, in stream order before the work queued after it. Every copy
// goes through the driver, so the emulated device checks each operand's
// reach against its buffer. Staging runs on every device; on a GPU,
// cuBLASLt's matmul (f32 and f64 computed in their own precision, as
// PyTorch's default, no TF32; bf16 on its tensor cores, summed in f32) does the
// matrix products whose layouts it takes, and cuDNN's convolution (no TF32
// either, where PyTorch's default allows it) the convolutions. The libraries'
// algorithm choices are made once per shape and kept.
//
// Example (the host function's sgemm of two device matrices):
//
//   GemmCall g = {.batch = 1, .m = 4, .n = 3, .k = 2, .a = a, .a_rs = 2,
//                 .a_cs = 1, ...};
//   RETURN_IF_ERROR(DeviceGemm(cu, DType::kFloat32, g));

#ifndef LATHE_RUNTIME_CUDA_DEVICE_ROUTINES_H_
#define LATHE_RUNTIME_CUDA_DEVICE_ROUTINES_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/dtype.h"

namespace lathe {

// c[i] = a[i] @ b[i] for i < batch, each matrix given by its element
// strides (batch, row, column), as LatheKernelRuntime::sgemm takes them;
// the pointers are device addresses of each operand's element 0.
struct GemmCall {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_bs = 0, a_rs = 0, a_cs = 0;
  const void* b = nullptr;
  int64_t b_bs = 0, b_rs = 0, b_cs = 0;
  void* c = nullptr;
  int64_t c_bs = 0, c_rs = 0, c_cs = 0;
};

// DeviceGemm()
//
// The matrix products of `g` on device memory (`dtype` the operands': f32
// or f64, the result the same; bf16, the result f32, as the host's
// bgemm): cuBLASLt's on
// a GPU where PlanCublasLtGemm takes the layouts and the library loads,
// else through the host; an error naming the call that failed.
absl::Status DeviceGemm(const CudaDriver& cu, DType dtype, const GemmCall& g);

// How cuBLASLt's column-major matmul computes a row-major GemmCall: its
// result D is c seen column-major (c transposed), D = b^T a^T, so its
// first operand is b and its second a. Each is a column-major matrix of
// rows x cols with leading dimension ld, used as it is (kCublasOpN) or
// transposed (kCublasOpT), and a batch stride (elements; 0 broadcasts).
struct CublasLtOperand {
  int op = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, batch_stride = 0;
};
struct CublasLtGemmPlan {
  CublasLtOperand first, second, result;
};

// PlanCublasLtGemm()
//
// The plan for `g`, or nullopt when an operand has no unit stride (its
// elements are no column-major matrix), the result is transposed, or k is
// 0: DeviceGemm goes through the host then.
std::optional<CublasLtGemmPlan> PlanCublasLtGemm(const GemmCall& g);

// DeviceConv()
//
// LatheKernelRuntime::sconv on device memory (runtime/convolution.h's
// geometry): cuDNN's convolution on a GPU where PlanCudnnConv takes the
// geometry, the library loads and has an algorithm for it, else through
// the host; an error naming the call that failed.
absl::Status DeviceConv(const CudaDriver& cu, const int64_t* geometry,
                        const float* x, const float* w, float* out);

// How cuDNN's descriptor API computes an sconv geometry: x and y as strided
// tensors of `rank` dims (2 + s, at least 4: a 1-d convolution gains a unit
// dim before its spatial one), the weight as a packed filter in NCHW or
// NHWC order (cuDNN's filters have no strides), and per spatial dim (rank
// - 2 of them) the padding, stride and dilation. f32 throughout, computed
// with FMA (no TF32), as the host's routine computes it.
struct CudnnConvPlan {
  int rank = 0;
  std::array<int, 5> x_sizes{}, x_strides{}, y_sizes{}, y_strides{}, w_sizes{};
  int w_format = 0;  // kCudnnTensorNchw or kCudnnTensorNhwc
  std::array<int, 3> padding{}, stride{}, dilation{};
  int groups = 1;
  // Where x, w and y begin: each operand's element offset.
  int64_t x_offset = 0, w_offset = 0, y_offset = 0;
};

// PlanCudnnConv()
//
// The plan for `geometry`, or nullopt where cuDNN cannot take it and the
// host computes it: an empty operand or an empty sum, a size or reach past
// int32, a stride that is not positive on a dim of more than one element,
// an output whose elements overlap, or a weight packed in neither order.
std::optional<CudnnConvPlan> PlanCudnnConv(const int64_t* geometry);

// CheckCudnnConvPlan()
//
// cuDNN's own check of `plan`: its descriptors made and its output sizes
// computed by the library (no GPU needed), an error naming the call that
// refused or the sizes that differ.
absl::Status CheckCudnnConvPlan(const Cudnn& dnn, const CudnnConvPlan& plan);

// How many calls of the routines above ran in a library (cuBLASLt, cuDNN)
// and how many through the host, since the process began.
struct DeviceRoutineCounts {
  int64_t cublaslt_gemms = 0, cudnn_convolutions = 0, through_host = 0;
};
DeviceRoutineCounts DeviceRoutinesRun();

// DeviceSort()
//
// LatheKernelRuntime::sort on device memory (runtime/sort.h's geometry),
// through the host.
absl::Status DeviceSort(const CudaDriver& cu, const int64_t* geometry,
                        const void* x, void* values, int64_t* indices);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_DEVICE_ROUTINES_H_
