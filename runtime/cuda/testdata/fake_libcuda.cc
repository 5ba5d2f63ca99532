// A stand-in for libcuda.so.1 in runtime/cuda's tests: every function of
// the table (one device, host memory for device memory), the error names
// and words the real driver gives for the codes it returns, and knobs a
// test sets through functions of its own (fake_*): the device's memory
// (cuMemAlloc past it is out of memory; 1 GiB to start) and whether events
// have completed (cuEventQuery's answer; cuEventSynchronize completes
// them). Built without LATHE_FAKE_LIBCUDA_COMPLETE it lacks cuLaunchKernel,
// as a driver older than lathe needs would.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {
using CuResult = int;
constexpr CuResult kSuccess = 0;
constexpr CuResult kInvalidValue = 1;
constexpr CuResult kOutOfMemory = 2;
}  // namespace

#define FAKE extern "C" __attribute__((visibility("default"))) CuResult
#define KNOB extern "C" __attribute__((visibility("default")))

namespace {
std::mutex mu;
size_t memory = size_t{1} << 30;  // the device's
size_t in_use = 0;                // bytes cuMemAlloc gave out
std::map<uintptr_t, size_t>* blocks = new std::map<uintptr_t, size_t>();
bool events_done = true;  // cuEventQuery's answer
int64_t allocations = 0;  // cuMemAlloc calls that succeeded
}  // namespace

KNOB void fake_set_memory(size_t bytes) {
  std::lock_guard<std::mutex> l(mu);
  memory = bytes;
}
KNOB size_t fake_memory_in_use() {
  std::lock_guard<std::mutex> l(mu);
  return in_use;
}
KNOB int64_t fake_allocations() {
  std::lock_guard<std::mutex> l(mu);
  return allocations;
}
KNOB void fake_set_events_done(bool done) {
  std::lock_guard<std::mutex> l(mu);
  events_done = done;
}

FAKE cuInit(unsigned int) { return kSuccess; }
FAKE cuDriverGetVersion(int* v) {
  *v = 13000;
  return kSuccess;
}
namespace {
// The codes the fake returns, with the real driver's names and words.
struct Known {
  CuResult code;
  const char* name;
  const char* text;
};
constexpr Known kKnown[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
};

CuResult Describe(CuResult e, bool name, const char** out) {
  for (const Known& k : kKnown) {
    if (k.code == e) {
      *out = name ? k.name : k.text;
      return kSuccess;
    }
  }
  *out = nullptr;
  return kInvalidValue;
}
}  // namespace

FAKE cuGetErrorName(CuResult e, const char** name) {
  return Describe(e, true, name);
}
FAKE cuGetErrorString(CuResult e, const char** text) {
  return Describe(e, false, text);
}
FAKE cuDeviceGetCount(int* n) {
  *n = 1;
  return kSuccess;
}
FAKE cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *d = 0;
  return kSuccess;
}
FAKE cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "fake", len);
  return kSuccess;
}
FAKE cuDeviceGetAttribute(int* v, int, int) {
  *v = 9;
  return kSuccess;
}
FAKE cuDeviceTotalMem_v2(size_t* b, int) {
  *b = size_t{1} << 30;
  return kSuccess;
}
FAKE cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int context;
  *ctx = &context;
  return kSuccess;
}
FAKE cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
FAKE cuCtxSetCurrent(void*) { return kSuccess; }
FAKE cuCtxSynchronize() { return kSuccess; }
FAKE cuMemGetInfo_v2(size_t* free, size_t* total) {
  std::lock_guard<std::mutex> l(mu);
  *total = memory;
  *free = memory - in_use;
  return kSuccess;
}
FAKE cuMemAlloc_v2(unsigned long long* p, size_t bytes) {  // NOLINT
  std::lock_guard<std::mutex> l(mu);
  if (bytes == 0) return kInvalidValue;
  if (bytes > memory - in_use) return kOutOfMemory;
  void* m = std::malloc(bytes);
  if (m == nullptr) return kOutOfMemory;
  *p = reinterpret_cast<uintptr_t>(m);
  (*blocks)[*p] = bytes;
  in_use += bytes;
  ++allocations;
  return kSuccess;
}
FAKE cuMemFree_v2(unsigned long long p) {  // NOLINT
  std::lock_guard<std::mutex> l(mu);
  auto it = blocks->find(p);
  if (it == blocks->end()) return kInvalidValue;
  in_use -= it->second;
  blocks->erase(it);
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
  return kSuccess;
}
FAKE cuMemAllocHost_v2(void** p, size_t bytes) {
  *p = std::malloc(bytes);
  return *p != nullptr ? kSuccess : kOutOfMemory;
}
FAKE cuMemFreeHost(void* p) {
  std::free(p);
  return kSuccess;
}
FAKE cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src,  // NOLINT
                          size_t n, void*) {
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, n);
  return kSuccess;
}
FAKE cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src,  // NOLINT
                          size_t n, void*) {
  std::memcpy(dst, reinterpret_cast<void*>(static_cast<uintptr_t>(src)), n);
  return kSuccess;
}
FAKE cuMemcpyDtoDAsync_v2(unsigned long long dst,                     // NOLINT
                          unsigned long long src, size_t n, void*) {  // NOLINT
  std::memmove(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)),
               reinterpret_cast<void*>(static_cast<uintptr_t>(src)), n);
  return kSuccess;
}
FAKE cuMemsetD8Async(unsigned long long dst, unsigned char v,  // NOLINT
                     size_t n, void*) {
  std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), v, n);
  return kSuccess;
}
FAKE cuStreamCreate(void** s, unsigned int) {
  *s = std::malloc(1);
  return kSuccess;
}
FAKE cuStreamDestroy_v2(void* s) {
  std::free(s);
  return kSuccess;
}
FAKE cuStreamSynchronize(void*) { return kSuccess; }
FAKE cuStreamWaitEvent(void*, void*, unsigned int) { return kSuccess; }
FAKE cuEventCreate(void** e, unsigned int) {
  *e = std::malloc(1);
  return kSuccess;
}
FAKE cuEventDestroy_v2(void* e) {
  std::free(e);
  return kSuccess;
}
FAKE cuEventRecord(void*, void*) { return kSuccess; }
FAKE cuEventQuery(void*) {
  std::lock_guard<std::mutex> l(mu);
  return events_done ? kSuccess : 600;  // CUDA_ERROR_NOT_READY
}
FAKE cuEventSynchronize(void*) {
  std::lock_guard<std::mutex> l(mu);
  events_done = true;
  return kSuccess;
}
FAKE cuEventElapsedTime(float* ms, void*, void*) {
  *ms = 0;
  return kSuccess;
}
FAKE cuModuleLoadData(void**, const void*) { return kInvalidValue; }
FAKE cuModuleUnload(void*) { return kSuccess; }
FAKE cuModuleGetFunction(void**, void*, const char*) { return kInvalidValue; }
#ifdef LATHE_FAKE_LIBCUDA_COMPLETE
FAKE cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, unsigned, void*, void**, void**) {
  return kInvalidValue;
}
FAKE cuGraphCreate(void**, unsigned) { return kInvalidValue; }
FAKE cuGraphAddKernelNode_v2(void**, void*, void* const*, size_t, const void*) {
  return kInvalidValue;
}
FAKE cuGraphAddMemcpyNode(void**, void*, void* const*, size_t, const void*,
                          void*) {
  return kInvalidValue;
}
FAKE cuGraphInstantiateWithFlags(void**, void*, unsigned long long) {
  return kInvalidValue;
}
FAKE cuGraphLaunch(void*, void*) { return kInvalidValue; }
FAKE cuGraphExecDestroy(void*) { return kInvalidValue; }
FAKE cuGraphDestroy(void*) { return kInvalidValue; }
FAKE cuCtxGetCurrent(void** ctx) {
  *ctx = nullptr;
  return kSuccess;
}
#endif
