// -----------------------------------------------------------------------------
// File: driver_api.h
// -----------------------------------------------------------------------------
//
// The CUDA driver API functions lathe uses, as one table of function
// pointers. The runtime reaches the driver only through it: a machine with
// a GPU fills it with dlopen("libcuda.so.1") (LoadCudaDriver), the emulated
// device (next) with functions of its own. libcuda is never linked, so
// //runtime builds, links and loads on every machine; no driver, or no
// device, is a Status, never a crash.
//
// The types are the driver ABI's, declared here so the runtime needs no
// CUDA header (driver_api_test checks them against cuda.h where the
// toolkit is). Every error becomes a Status naming the call and the
// driver's own name and words for it (CudaCall).
//
// Example:
//
//   ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
//   CuDevicePtr p = 0;
//   RETURN_IF_ERROR(CudaCall(*cu, cu->mem_alloc(&p, 1 << 20), "cuMemAlloc"));

#ifndef LATHE_RUNTIME_CUDA_DRIVER_API_H_
#define LATHE_RUNTIME_CUDA_DRIVER_API_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

// The driver ABI's types (cuda.h's CUresult, CUdevice, CUdeviceptr, ...).
using CuResult = int;  // CUresult: 0 is CUDA_SUCCESS
using CuDevice = int;
using CuDevicePtr = unsigned long long;  // NOLINT: the ABI's type
struct CuCtxSt;
struct CuModSt;
struct CuFuncSt;
struct CuStreamSt;
struct CuEventSt;
struct CuGraphSt;
struct CuGraphExecSt;
struct CuGraphNodeSt;
using CuContext = CuCtxSt*;
using CuModule = CuModSt*;
using CuFunction = CuFuncSt*;
using CuStream = CuStreamSt*;
using CuEvent = CuEventSt*;
using CuGraph = CuGraphSt*;
using CuGraphExec = CuGraphExecSt*;
using CuGraphNode = CuGraphNodeSt*;

// A kernel node of a graph (cuda.h's CUDA_KERNEL_NODE_PARAMS, v2): the
// launch's configuration and its parameters, which the driver copies when
// the node is added.
struct CuKernelNodeParams {
  CuFunction func = nullptr;
  unsigned int grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned int block_x = 1, block_y = 1, block_z = 1;
  unsigned int shared_bytes = 0;
  void** params = nullptr;
  void** extra = nullptr;
  void* kernel = nullptr;  // CUkernel: unused (func is set)
  CuContext ctx = nullptr;
};

// A copy node (cuda.h's CUDA_MEMCPY3D); lathe fills only a one-row copy
// between device addresses (MemcpyNodeParams).
struct CuMemcpy3D {
  size_t src_x_bytes = 0, src_y = 0, src_z = 0, src_lod = 0;
  int src_memory_type = 0;  // CUmemorytype
  const void* src_host = nullptr;
  CuDevicePtr src_device = 0;
  void* src_array = nullptr;
  void* reserved0 = nullptr;
  size_t src_pitch = 0, src_height = 0;
  size_t dst_x_bytes = 0, dst_y = 0, dst_z = 0, dst_lod = 0;
  int dst_memory_type = 0;
  void* dst_host = nullptr;
  CuDevicePtr dst_device = 0;
  void* dst_array = nullptr;
  void* reserved1 = nullptr;
  size_t dst_pitch = 0, dst_height = 0;
  size_t width_bytes = 0, height = 0, depth = 0;
};
inline constexpr int kCuMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE

// A copy of `bytes` from device address `src` to `dst`, as a copy node.
CuMemcpy3D MemcpyNodeParams(CuDevicePtr dst, CuDevicePtr src, size_t bytes);

// The codes lathe tells apart (cuda.h's values).
inline constexpr CuResult kCudaSuccess = 0;
inline constexpr CuResult kCudaErrorOutOfMemory = 2;
inline constexpr CuResult kCudaErrorStubLibrary = 34;
inline constexpr CuResult kCudaErrorNoDevice = 100;
inline constexpr CuResult kCudaErrorNotReady = 600;
// cuDeviceGetAttribute's attributes lathe reads.
inline constexpr int kCuAttrComputeCapabilityMajor = 75;
inline constexpr int kCuAttrComputeCapabilityMinor = 76;
inline constexpr int kCuAttrMultiprocessorCount = 16;

// X(member, symbol in libcuda, return type, parameters): every function
// of the table, in one list the loader and the emulated device share.
#define LATHE_CUDA_DRIVER_FUNCTIONS(X)                                         \
  X(init, "cuInit", CuResult, (unsigned int flags))                            \
  X(driver_get_version, "cuDriverGetVersion", CuResult, (int* version))        \
  X(get_error_name, "cuGetErrorName", CuResult,                                \
    (CuResult error, const char** name))                                       \
  X(get_error_string, "cuGetErrorString", CuResult,                            \
    (CuResult error, const char** text))                                       \
  X(device_get_count, "cuDeviceGetCount", CuResult, (int* count))              \
  X(device_get, "cuDeviceGet", CuResult, (CuDevice * device, int ordinal))     \
  X(device_get_name, "cuDeviceGetName", CuResult,                              \
    (char* name, int len, CuDevice device))                                    \
  X(device_get_attribute, "cuDeviceGetAttribute", CuResult,                    \
    (int* value, int attribute, CuDevice device))                              \
  X(device_total_mem, "cuDeviceTotalMem_v2", CuResult,                         \
    (size_t * bytes, CuDevice device))                                         \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", CuResult,                  \
    (CuContext * ctx, CuDevice device))                                        \
  X(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", CuResult,             \
    (CuDevice device))                                                         \
  X(ctx_set_current, "cuCtxSetCurrent", CuResult, (CuContext ctx))             \
  X(ctx_synchronize, "cuCtxSynchronize", CuResult, ())                         \
  X(mem_get_info, "cuMemGetInfo_v2", CuResult,                                 \
    (size_t * free, size_t * total))                                           \
  X(mem_alloc, "cuMemAlloc_v2", CuResult, (CuDevicePtr * ptr, size_t bytes))   \
  X(mem_free, "cuMemFree_v2", CuResult, (CuDevicePtr ptr))                     \
  X(mem_alloc_host, "cuMemAllocHost_v2", CuResult, (void** ptr, size_t bytes)) \
  X(mem_free_host, "cuMemFreeHost", CuResult, (void* ptr))                     \
  X(memcpy_htod_async, "cuMemcpyHtoDAsync_v2", CuResult,                       \
    (CuDevicePtr dst, const void* src, size_t bytes, CuStream stream))         \
  X(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2", CuResult,                       \
    (void* dst, CuDevicePtr src, size_t bytes, CuStream stream))               \
  X(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2", CuResult,                       \
    (CuDevicePtr dst, CuDevicePtr src, size_t bytes, CuStream stream))         \
  X(memset_d8_async, "cuMemsetD8Async", CuResult,                              \
    (CuDevicePtr dst, unsigned char value, size_t n, CuStream stream))         \
  X(stream_create, "cuStreamCreate", CuResult,                                 \
    (CuStream * stream, unsigned int flags))                                   \
  X(stream_destroy, "cuStreamDestroy_v2", CuResult, (CuStream stream))         \
  X(stream_synchronize, "cuStreamSynchronize", CuResult, (CuStream stream))    \
  X(stream_wait_event, "cuStreamWaitEvent", CuResult,                          \
    (CuStream stream, CuEvent event, unsigned int flags))                      \
  X(event_create, "cuEventCreate", CuResult,                                   \
    (CuEvent * event, unsigned int flags))                                     \
  X(event_destroy, "cuEventDestroy_v2", CuResult, (CuEvent event))             \
  X(event_record, "cuEventRecord", CuResult, (CuEvent event, CuStream stream)) \
  X(event_query, "cuEventQuery", CuResult, (CuEvent event))                    \
  X(event_synchronize, "cuEventSynchronize", CuResult, (CuEvent event))        \
  X(event_elapsed_time, "cuEventElapsedTime", CuResult,                        \
    (float* ms, CuEvent start, CuEvent end))                                   \
  X(module_load_data, "cuModuleLoadData", CuResult,                            \
    (CuModule * module, const void* image))                                    \
  X(module_unload, "cuModuleUnload", CuResult, (CuModule module))              \
  X(module_get_function, "cuModuleGetFunction", CuResult,                      \
    (CuFunction * function, CuModule module, const char* name))                \
  X(launch_kernel, "cuLaunchKernel", CuResult,                                 \
    (CuFunction f, unsigned int grid_x, unsigned int grid_y,                   \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,          \
     unsigned int block_z, unsigned int shared_bytes, CuStream stream,         \
     void** params, void** extra))                                             \
  X(graph_create, "cuGraphCreate", CuResult,                                   \
    (CuGraph * graph, unsigned int flags))                                     \
  X(graph_add_kernel_node, "cuGraphAddKernelNode_v2", CuResult,                \
    (CuGraphNode * node, CuGraph graph, const CuGraphNode* dependencies,       \
     size_t num_dependencies, const CuKernelNodeParams* params))               \
  X(graph_add_memcpy_node, "cuGraphAddMemcpyNode", CuResult,                   \
    (CuGraphNode * node, CuGraph graph, const CuGraphNode* dependencies,       \
     size_t num_dependencies, const CuMemcpy3D* copy, CuContext ctx))          \
  X(graph_instantiate, "cuGraphInstantiateWithFlags", CuResult,                \
    (CuGraphExec * exec, CuGraph graph, unsigned long long flags))             \
  X(graph_launch, "cuGraphLaunch", CuResult,                                   \
    (CuGraphExec exec, CuStream stream))                                       \
  X(graph_exec_destroy, "cuGraphExecDestroy", CuResult, (CuGraphExec exec))    \
  X(graph_destroy, "cuGraphDestroy", CuResult, (CuGraph graph))                \
  X(ctx_get_current, "cuCtxGetCurrent", CuResult, (CuContext * ctx))

// The table. Where it came from (`source`: the library's path, or
// "emulated") names it in errors.
struct CudaDriver {
#define LATHE_CUDA_DRIVER_MEMBER(member, symbol, ret, params) \
  ret(*member) params = nullptr;
  LATHE_CUDA_DRIVER_FUNCTIONS(LATHE_CUDA_DRIVER_MEMBER)
#undef LATHE_CUDA_DRIVER_MEMBER
  std::string source;
};

// LoadCudaDriver()
//
// The driver from `library` (default libcuda.so.1, found as dlopen finds
// it; loaded once per path and kept for the process's life), every
// function of the table resolved and cuInit(0) run, with at least one
// device. Errors, each one line: "no CUDA device: libcuda.so.1 not found
// (...)", a library that lacks a function (naming it), and cuInit's or
// cuDeviceGetCount's error ("no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE
// (no CUDA-capable device is detected)").
absl::StatusOr<const CudaDriver*> LoadCudaDriver(
    const std::string& library = "libcuda.so.1");

// CudaCall()
//
// OK for kCudaSuccess; otherwise an error naming `call` and the driver's
// name and description of `result` ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY
// (out of memory)"; its number when the driver has no name for it).
// Out-of-memory is ResourceExhausted, the rest Internal.
absl::Status CudaCall(const CudaDriver& cu, CuResult result,
                      absl::string_view call);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_DRIVER_API_H_
