// A compiled graph written by hand, as the compiler would emit it, for the
// runtime's own tests (no compiler in the loop): out = x + y * alpha for two
// f32 vectors and a float scalar, and x += 1 in place when MUTATE is
// defined. Its guards, in this order: 0 "y.size(0) == x.size(0)",
// 1 "2 <= x.size(0)" (0/1 specialization), 2 "!isnan(alpha)"; without
// GUARDS (the variant a compile callback makes) every input is admitted.
// Its only entry is lathe_call_user, or lathe_call with GRAPH_ONLY.
#include <cmath>

#include "runtime/kernel_abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

// One output, of rank 1 (with BAD_RANKS, a count its array does not hold;
// with BAD_RANK, a rank no result has).
#ifdef BAD_RANKS
EXPORT const int64_t lathe_result_ranks[] = {5, 1};
#elif defined(BAD_RANK)
EXPORT const int64_t lathe_result_ranks[] = {1, 1000};
#else
EXPORT const int64_t lathe_result_ranks[] = {1, 1};
#endif

#ifdef GUARDS
// No range guards: no bounds.
EXPORT const int64_t lathe_guard_bound_count = 0;

EXPORT int lathe_guards(const LatheValue* in, int64_t n, const int64_t*) {
  if (!(n == 3 && in[0].kind == LATHE_VALUE_TENSOR && in[0].ndim == 1 &&
        in[1].kind == LATHE_VALUE_TENSOR && in[1].ndim == 1 &&
        in[2].kind == LATHE_VALUE_FLOAT)) {
    return LATHE_GUARDS_OTHER_INPUTS;
  }
  if (!(in[1].sizes[0] == in[0].sizes[0])) return 0;
  if (!(2 <= in[0].sizes[0])) return 1;
  if (!(!std::isnan(in[2].f))) return 2;
  return LATHE_GUARDS_HOLD;
}
#endif

// With GRAPH_ONLY the same function is the graph's own entry, lathe_call,
// and there is no lathe_call_user (a graph compiled without its composite
// wrapper); the two entries take the same arguments here.
#ifdef GRAPH_ONLY
#define ENTRY lathe_call
#else
#define ENTRY lathe_call_user
#endif

EXPORT int ENTRY(const LatheValue* in, int64_t n, LatheValue* out,
                 int64_t num_out, const LatheKernelRuntime* rt) {
  if (n != 3 || num_out != 1 || in[0].kind != LATHE_VALUE_TENSOR ||
      in[0].dtype != LATHE_DTYPE_F32 || in[0].ndim != 1 ||
      in[1].kind != LATHE_VALUE_TENSOR || in[1].dtype != LATHE_DTYPE_F32 ||
      in[1].ndim != 1 || in[2].kind != LATHE_VALUE_FLOAT ||
      in[1].sizes[0] != in[0].sizes[0]) {
    return LATHE_CALL_BAD_INPUTS;
  }
  const int64_t len = in[0].sizes[0];
  if (len > 1000000) return 1;  // index check 0: "x is too long"
  float* x = static_cast<float*>(in[0].data) + in[0].storage_offset;
  const float* y = static_cast<const float*>(in[1].data) + in[1].storage_offset;
  void* data = nullptr;
  void* storage = rt->alloc(len * static_cast<int64_t>(sizeof(float)), &data);
  if (storage == nullptr) return LATHE_CALL_NO_MEMORY;
  float* o = static_cast<float*>(data);
  for (int64_t i = 0; i < len; ++i) {
    o[i] = x[i * in[0].strides[0]] +
           y[i * in[1].strides[0]] * static_cast<float>(in[2].f);
  }
#ifdef MUTATE
  for (int64_t i = 0; i < len; ++i) x[i * in[0].strides[0]] += 1;
#endif
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
