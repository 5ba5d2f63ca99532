// A compiled graph written by hand, as the compiler would emit it, for the
// runtime's call-overhead benchmark: out = the sum of any number of f32
// vectors of one length (a tiny kernel, so a call is nearly all host
// overhead). Its guards: every input is a rank-1 tensor of the first's
// length, one guard per input after the first.
#include "runtime/kernel_abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

// One output, of rank 1.
EXPORT const int64_t lathe_result_ranks[] = {1, 1};

// No range guards: no bounds.
EXPORT const int64_t lathe_guard_bound_count = 0;

EXPORT int lathe_guards(const LatheValue* in, int64_t n, const int64_t*) {
  for (int64_t k = 0; k < n; ++k) {
    if (in[k].kind != LATHE_VALUE_TENSOR || in[k].ndim != 1) {
      return LATHE_GUARDS_OTHER_INPUTS;
    }
  }
  for (int64_t k = 1; k < n; ++k) {
    if (in[k].sizes[0] != in[0].sizes[0]) return static_cast<int>(k - 1);
  }
  return LATHE_GUARDS_HOLD;
}

EXPORT int lathe_call_user(const LatheValue* in, int64_t n, LatheValue* out,
                           int64_t num_out, const LatheKernelRuntime* rt) {
  if (n < 1 || num_out != 1) return LATHE_CALL_BAD_INPUTS;
  for (int64_t k = 0; k < n; ++k) {
    if (in[k].kind != LATHE_VALUE_TENSOR || in[k].dtype != LATHE_DTYPE_F32 ||
        in[k].ndim != 1 || in[k].sizes[0] != in[0].sizes[0]) {
      return LATHE_CALL_BAD_INPUTS;
    }
  }
  const int64_t len = in[0].sizes[0];
  void* data = nullptr;
  void* storage = rt->alloc(len * static_cast<int64_t>(sizeof(float)), &data);
  if (storage == nullptr) return LATHE_CALL_NO_MEMORY;
  float* o = static_cast<float*>(data);
  for (int64_t i = 0; i < len; ++i) o[i] = 0;
  for (int64_t k = 0; k < n; ++k) {
    const float* x =
        static_cast<const float*>(in[k].data) + in[k].storage_offset;
    for (int64_t i = 0; i < len; ++i) o[i] += x[i * in[k].strides[0]];
  }
  out[0].kind = LATHE_VALUE_TENSOR;
  out[0].dtype = LATHE_DTYPE_F32;
  out[0].ndim = 1;
  out[0].sizes[0] = len;
  out[0].strides[0] = 1;
  out[0].storage_offset = 0;
  out[0].data = data;
  out[0].storage = storage;
  return 0;
}
