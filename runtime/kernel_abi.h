/* -----------------------------------------------------------------------------
 * File: kernel_abi.h
 * -----------------------------------------------------------------------------
 *
 * The C ABI between generated code and the runtime (as AOTInductor's
 * shim): plain C types only, so a compiled .so depends on no C++ ABI of
 * lathe's. Generated source embeds this file's text (KernelAbiSource() in
 * kernel_runtime.h). A compiled graph's .so exports its host function,
 * lathe_call, its results' ranks, lathe_result_ranks, and its guards,
 * lathe_guards; the runtime fills a LatheKernelRuntime (the library
 * routines kernels call, and storage allocation) and passes it in.
 *
 * A graph compiled with its composite wrapper (aot/subclass_wrapper_plan.h)
 * also exports lathe_call_user, which takes and returns the user's values:
 * composite tensors (runtime/composite.h) as LATHE_VALUE_COMPOSITE trees.
 *
 * Example (the host calls generated code):
 *
 *   LatheValue in[2] = {...}, out[1] = {...};   // views of the tensors
 *   LatheCallFn call = (LatheCallFn)dlsym(so, "lathe_call");
 *   int rc = call(in, 2, out, 1, lathe::KernelRuntime());
 *   // rc == 0: out[0].storage is a retained handle on the result's storage
 */
#ifndef LATHE_RUNTIME_KERNEL_ABI_H_
#define LATHE_RUNTIME_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a field changes; an artifact records the one it uses. */
#define LATHE_KERNEL_ABI_VERSION 16

/* What a LatheValue holds. */
#define LATHE_VALUE_NONE 0
#define LATHE_VALUE_TENSOR 1
#define LATHE_VALUE_INT 2
#define LATHE_VALUE_FLOAT 3
#define LATHE_VALUE_BOOL 4
#define LATHE_VALUE_COMPOSITE 5

/* A LatheValue's dtype: lathe::DType's order (runtime/dtype.h). */
#define LATHE_DTYPE_F16 0
#define LATHE_DTYPE_BF16 1
#define LATHE_DTYPE_F32 2
#define LATHE_DTYPE_F64 3
#define LATHE_DTYPE_I8 4
#define LATHE_DTYPE_I16 5
#define LATHE_DTYPE_I32 6
#define LATHE_DTYPE_I64 7
#define LATHE_DTYPE_U8 8
#define LATHE_DTYPE_BOOL 9

/* One argument or result of a compiled graph's host function. A tensor is a
 * view of a storage: `data` is the storage's first byte, `storage` the
 * runtime's handle on it (retained for a result), and sizes and strides
 * (elements) point at `ndim` values each; for a result the caller provides
 * the two arrays, at the rank the graph gives that output. */
typedef struct LatheValue {
  int32_t kind;
  int32_t dtype;
  int64_t ndim;
  int64_t* sizes;
  int64_t* strides;
  int64_t storage_offset;
  void* data;
  void* storage;
  int64_t i; /* LATHE_VALUE_INT, LATHE_VALUE_BOOL */
  double f;  /* LATHE_VALUE_FLOAT */
  /* LATHE_VALUE_COMPOSITE: the registered type's name ("pair"), and its
   * `num_inner` inner values (tensors or composites) in flatten order;
   * dtype, ndim, sizes and strides are the outer ones. For a result the
   * caller provides the inner array (and, inside it, each value's sizes
   * and strides), shaped as the compiled wrapper's result layout; the
   * outer sizes and strides are the first inner value's, and so is dtype:
   * the outer dtype is the type's own rule, which the caller applies when
   * it rebuilds the composite (CompositeType::Unflatten). */
  const char* type;
  int64_t num_inner;
  struct LatheValue* inner;
} LatheValue;

/* A device's parts of the runtime (codegen/cuda's host function; NULL for
 * the cpu's): `self` is passed back to each. */
typedef struct LatheDeviceRuntime {
  void* self;
  /* Runs kernel `kernel` (the library's lathe_device_kernels[kernel]) on a
   * grid of grid[0..2] blocks of block[0..2] threads with `shared_bytes` of
   * dynamic shared memory; params as cuLaunchKernel takes them (one
   * pointer per parameter). 0 when it was queued. */
  int (*launch)(void* self, int64_t kernel, const uint32_t* grid,
                const uint32_t* block, uint32_t shared_bytes, void** params);
  /* Copies `bytes` from device address `src` to host `dst` once the work
   * queued before it is done; 0 on success. */
  int (*to_host)(void* self, void* dst, const void* src, int64_t bytes);
  /* Queues a copy of `bytes` from host `src` to device address `dst`
   * (read before it returns: `src` may be reused); 0 on success. */
  int (*to_device)(void* self, void* dst, const void* src, int64_t bytes);
  /* LatheKernelRuntime's library routines (below) on device addresses, in
   * stream order after the work queued before them; 0 on success. */
  int (*sgemm)(void* self, int64_t batch, int64_t m, int64_t n, int64_t k,
               const float* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const float* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
               float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);
  int (*dgemm)(void* self, int64_t batch, int64_t m, int64_t n, int64_t k,
               const double* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const double* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
               double* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);
  int (*sconv)(void* self, const int64_t* geometry, const float* x,
               const float* w, float* out);
  int (*sort)(void* self, const int64_t* geometry, const void* x, void* values,
              int64_t* indices);
  /* bf16 a and b (16-bit patterns) into f32 c, as LatheKernelRuntime's. */
  int (*bgemm)(void* self, int64_t batch, int64_t m, int64_t n, int64_t k,
               const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
               float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);
} LatheDeviceRuntime;

typedef struct LatheKernelRuntime {
  uint32_t abi_version;
  /* c[b] = a[b] @ b[b] for b < batch; every matrix given by its element
   * strides (batch, row, column), so transposed and broadcast operands need
   * no copy. */
  void (*sgemm)(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t a_bs, int64_t a_rs, int64_t a_cs, const float* b,
                int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c,
                int64_t c_bs, int64_t c_rs, int64_t c_cs);
  void (*dgemm)(int64_t batch, int64_t m, int64_t n, int64_t k, const double* a,
                int64_t a_bs, int64_t a_rs, int64_t a_cs, const double* b,
                int64_t b_bs, int64_t b_rs, int64_t b_cs, double* c,
                int64_t c_bs, int64_t c_rs, int64_t c_cs);
  /* sgemm's product of bf16 a and b (16-bit patterns) into f32 c, the
   * products summed in f32 (runtime/bf16_gemm.h). */
  void (*bgemm)(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
                int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
                int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c,
                int64_t c_bs, int64_t c_rs, int64_t c_cs);
  /* out = convolution(x, w), f32, no bias: the geometry array gives the
   * spatial dims s, groups, N, C, O, the input, kernel and output sizes,
   * strides, paddings and dilations (s each), then each operand's element
   * offset and 2 + s strides (x, w, out); runtime/convolution.h. A non-NULL
   * `epilogue` runs for each image n of out, epilogue(ctx, n), after that
   * image is written (where it can, on the thread that wrote it, while it
   * is in cache) and before sconv returns; it may run twice for an image
   * (a fallback writes the output again), so it must be idempotent. */
  void (*sconv)(const int64_t* geometry, const float* x, const float* w,
                float* out, void (*epilogue)(void* ctx, int64_t image),
                void* ctx);
  /* values, indices = sort(x) or topk(x) along one dim, any dtype: the
   * geometry gives the dtype, rank, dim, direction, k, the input sizes and
   * each operand's offset and strides; runtime/sort.h. */
  void (*sort)(const int64_t* geometry, const void* x, void* values,
               int64_t* indices);
  /* A new storage of `bytes` bytes (uninitialized): its handle, and its
   * first byte in *data; NULL when the memory limit or the system refuses. */
  void* (*alloc)(int64_t bytes, void** data);
  /* Another reference to a storage, and the end of one. */
  void* (*retain)(void* storage);
  void (*release)(void* storage);
  /* dst.copy_(src) for two tensors of the same dtype and sizes, through any
   * strides (the mutation epilogue: runtime/copy.h); 0 on success. */
  int (*copy)(const LatheValue* dst, const LatheValue* src);
  /* The seed of this call's random ops (rand, randn, randperm,
   * native_dropout): draw k is a pure function of (seed, k), the
   * interpreter's counter-based generator (ir/random.h). Its default
   * seed in lathe::KernelRuntime(); a caller that wants other numbers
   * calls with a copy that sets it. */
  uint64_t seed;
  /* Where a failing check reports the values its message names, or NULL
   * (then nothing is reported): check_values[0] is their count n (at most
   * LATHE_CHECK_VALUES), check_values[1..n] the values. The caller owns
   * LATHE_CHECK_VALUES + 1 slots and sets check_values[0] to 0 before the
   * call (SeededKernelRuntime). A check's message (Program::checks) is a
   * template: the hole "{k:TEXT}" is value k when reported, else TEXT (the
   * symbolic expression it stands for). */
  int64_t* check_values;
  /* The device's parts when the compiled graph's kernels run on one (then
   * alloc and copy give and copy device memory), else NULL. */
  const LatheDeviceRuntime* device;
  /* Runs body(ctx, begin, end) over [0, n) in chunks of a multiple of
   * `grain` iterations on the calling thread and up to threads - 1 of the
   * runtime's workers, returning when all are done; a worker the scheduler
   * holds back is not waited for (runtime/thread_pool.h). Generated
   * kernels' parallel loops run here, not on OpenMP's team. */
  void (*parallel_for)(int64_t n, int64_t grain, int threads,
                       void (*body)(void* ctx, int64_t begin, int64_t end),
                       void* ctx);
} LatheKernelRuntime;

#define LATHE_CHECK_VALUES 8

/* A failing host check reports its `n` values (lathe_call returns the
 * check's code next). */
static inline void lathe_report(const LatheKernelRuntime* rt,
                                const int64_t* values, int64_t n) {
  int64_t k;
  if (rt->check_values == 0) return;
  if (n > LATHE_CHECK_VALUES) n = LATHE_CHECK_VALUES;
  for (k = 0; k < n; ++k) rt->check_values[1 + k] = values[k];
  rt->check_values[0] = n;
}

/* A failing check inside a kernel, from any of its threads: the first
 * failure to set *e (0 before) to `code` wins, and only its thread reports
 * its values, so the report matches the code and no two threads write the
 * slots (the host reads them after the kernel joined its threads). */
static inline void lathe_kernel_check_failed(int* e,
                                             const LatheKernelRuntime* rt,
                                             int code, const int64_t* values,
                                             int64_t n) {
  int none = 0;
  if (__atomic_compare_exchange_n(e, &none, code, 0, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED)) {
    lathe_report(rt, values, n);
  }
}

/* A float check value (an element count as a product of float sizes) as
 * an int64, saturated (a count past int64 reads as its largest value). */
static inline int64_t lathe_check_i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775807.0) return INT64_MIN;
  return (int64_t)x;
}

/* Whether inputs of a host function are the tensors a table describes,
 * which keeps the generated code short where a graph has many inputs of
 * fixed shape: `n` rows of (input, dtype, sizes[ndim], strides[ndim]), all
 * of rank `ndim` (a graph's inputs make one table per rank); input k must
 * be a tensor of that dtype and rank, of those sizes, and of those strides
 * in each dimension with two or more elements (the strides of the others
 * are not compared). Called with a constant `ndim`, the compiler unrolls
 * each row, whose sizes and strides are compared without a branch. */
static inline int lathe_tensors_match(const LatheValue* in, const int64_t* rows,
                                      int64_t n, int64_t ndim) {
  int64_t r, d;
  uint64_t diff = 0;
  for (r = 0; r < n; ++r, rows += 2 + 2 * ndim) {
    const LatheValue* v = &in[rows[0]];
    const int64_t* want = rows + 2;
    if (v->kind != LATHE_VALUE_TENSOR || v->dtype != rows[1] ||
        v->ndim != ndim) {
      return 0;
    }
    for (d = 0; d < ndim; ++d) {
      const uint64_t read = want[d] >= 2 ? ~(uint64_t)0 : 0;
      diff |= (uint64_t)(v->sizes[d] ^ want[d]) |
              ((uint64_t)(v->strides[d] ^ want[ndim + d]) & read);
    }
  }
  return diff == 0;
}

/* Guards of the form `source == value`, `n` of them numbered from `first`
 * (lathe_guards): rows of (input, what, dim, value), `what` 0 for a size,
 * 1 for a stride, 2 for the storage offset. The number of the first that
 * fails, else -1. The inputs were checked to be tensors of the ranks the
 * guards read. */
static inline int lathe_guard_rows(const LatheValue* in, const int64_t* rows,
                                   int n, int first) {
  int r;
  for (r = 0; r < n; ++r, rows += 4) {
    const LatheValue* v = &in[rows[0]];
    const int64_t got = rows[1] == 0   ? v->sizes[rows[2]]
                        : rows[1] == 1 ? v->strides[rows[2]]
                                       : v->storage_offset;
    if (got != rows[3]) return first + r;
  }
  return -1;
}

/* Whether the inputs are of the kinds (and tensors of the ranks) the
 * guards were made for: `n` pairs (kind, ndim), kind a LATHE_VALUE_* (a
 * tensor may also be a composite, read by its outer shape) or -1 for an
 * input the guards do not read. */
static inline int lathe_guard_shapes(const LatheValue* in,
                                     const int64_t* shapes, int64_t n) {
  int64_t k;
  for (k = 0; k < n; ++k) {
    const int64_t kind = shapes[2 * k];
    if (kind < 0) continue;
    if (kind == LATHE_VALUE_TENSOR) {
      if ((in[k].kind != LATHE_VALUE_TENSOR &&
           in[k].kind != LATHE_VALUE_COMPOSITE) ||
          in[k].ndim != shapes[2 * k + 1]) {
        return 0;
      }
    } else if (in[k].kind != kind) {
      return 0;
    }
  }
  return 1;
}

/* The host function of a compiled graph (codegen/cpp/wrapper_emitter.h):
 * checks `inputs` (the placeholders, then the constants) against the
 * graph's annotations, binds its symbols, allocates its buffers, runs its
 * kernels and fills `outputs`. Returns 0; LATHE_CALL_BAD_INPUTS when an
 * input does not match (the caller says which, the slow way);
 * LATHE_CALL_NO_MEMORY; LATHE_CALL_COPY_FAILED (the mutation epilogue);
 * LATHE_CALL_DEVICE_FAILED (a launch or a copy the device refused); or
 * k > 0 when index check k - 1 failed. On failure no output holds a
 * storage. */
#define LATHE_CALL_BAD_INPUTS (-1)
#define LATHE_CALL_NO_MEMORY (-2)
#define LATHE_CALL_COPY_FAILED (-3)
#define LATHE_CALL_DEVICE_FAILED (-4)
typedef int (*LatheCallFn)(const LatheValue* inputs, int64_t num_inputs,
                           LatheValue* outputs, int64_t num_outputs,
                           const LatheKernelRuntime* rt);

/* The library's exported `const int64_t lathe_result_ranks[]`: the number
 * of lathe_call's outputs, then each one's rank (0 for a number). The
 * caller provides each output's sizes and strides at that rank; a runtime
 * told other ranks (a damaged manifest) refuses the library at load. */
#define LATHE_RESULT_RANKS_SYMBOL "lathe_result_ranks"

/* The compiled composite wrapper around lathe_call: checks each composite
 * argument's type (nested ones too), flattens the arguments into the dense
 * graph's inputs (inner tensors, then symbolic outer sizes and strides),
 * calls lathe_call, and rebuilds the user's results from the dense ones.
 * `results` holds the user results, then the dense inputs a set_ or
 * as_strided_ rebinds (lathe_call's own order). Returns what lathe_call
 * does, and LATHE_CALL_BAD_INPUTS for a missing argument or a composite of
 * another type. */
typedef int (*LatheCallUserFn)(const LatheValue* args, int64_t num_args,
                               LatheValue* results, int64_t num_results,
                               const LatheKernelRuntime* rt);

/* The compiled guard set over `inputs` (the graph's placeholders as the
 * user gave them, before composite flattening; a composite is read by its
 * outer sizes and strides): LATHE_GUARDS_HOLD when every guard holds, else
 * the index of the first that fails, or LATHE_GUARDS_OTHER_INPUTS when the
 * inputs are not of the count, kinds and ranks the guards were made for.
 * `bounds` holds the range guards' lo and hi, in guard order
 * (CallSignature::guard_bounds; an artifact's guard_bounds.txt): the
 * library exports their number as `const int64_t lathe_guard_bound_count`,
 * and a runtime whose bounds are not that many refuses the library at
 * load. */
#define LATHE_GUARDS_HOLD (-1)
#define LATHE_GUARDS_OTHER_INPUTS (-2)
#define LATHE_GUARD_BOUND_COUNT_SYMBOL "lathe_guard_bound_count"
typedef int (*LatheGuardFn)(const LatheValue* inputs, int64_t num_inputs,
                            const int64_t* bounds);

#ifdef __cplusplus
}
#endif

#endif /* LATHE_RUNTIME_KERNEL_ABI_H_ */
