// -----------------------------------------------------------------------------
// File: cuda_emulation.h
// -----------------------------------------------------------------------------
//
// The emulated CUDA device's kernel side: with this header, CUDA C++ as
// lathe emits it compiles with the system C++ compiler and runs on the
// host, as Triton's interpreter mode runs Triton kernels. It gives CUDA's
// vocabulary (threadIdx, __syncthreads, warp shuffles and votes, atomics,
// __shared__ memory per block) over the runtime's grid runner
// (emulated_grid.h), which runs a launch's blocks and threads and reports
// what CUDA forbids (a divergent barrier or warp op) as an error naming the
// kernel. The runner is compiled once, into //runtime: a module holds only
// its kernels and the thin wrappers below, and the emulated driver binds it
// to the runner when it loads it (lathe_emu_bind). Atomics are real
// atomics.
//
// Each kernel is exported for the emulated driver with one line after it,
// which NVRTC builds compile to nothing (cuda_prelude.h):
//
//   extern "C" __global__ void scale(float* x, float a, int n) { ... }
//   LATHE_CUDA_KERNEL(scale, /*sync=*/false)
//
// which defines the launcher
//
//   extern "C" int lathe_emu_launch_scale(const lathe_emu::LaunchConfig*,
//                                         void** params, char* error,
//                                         int error_size);
//
// (params as cuLaunchKernel takes them: one pointer per argument),
// returning 0, or 1 with a one-line message in `error`; and
//
//   extern "C" int lathe_emu_params_scale(size_t* sizes, int max);
//
// the number of parameters and their sizes (the driver copies the values
// at launch, as CUDA does).
//
// A module is one translation unit: this header defines its
// lathe_emu_bind. Generated modules get emulated_grid_abi.h's text in
// place of its #include (codegen/cuda's genrule).

#ifndef LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_
#define LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

#include "runtime/cuda/emulated_grid_abi.h"

namespace lathe_emu {
// Everything here is the module's own (internal linkage), so no two loaded
// modules, or a module and the program, can share a definition.
namespace {

// The runtime's grid runner, once the emulated driver loaded this module.
const GridHost* grid_host = nullptr;

template <typename T>
uint64_t Bits(T v) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <typename T>
T FromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// The lane this thread is in its warp.
inline int Lane() { return grid_host->lane(); }

// The value lane `src` (within this lane's `width`-wide segment) gave.
template <typename T>
T Shuffle(T v, int src, int width, const char* op) {
  const uint64_t* all = grid_host->warp_exchange(Bits(v), op);
  const int lane = Lane();
  const int base = lane / width * width;
  return FromBits<T>(all[base + ((src % width) + width) % width]);
}

// The arguments of a kernel of parameters A..., read from cuLaunchKernel's
// `params`, and the kernel: what each thread runs.
template <typename... A>
struct Call {
  void (*kernel)(A...);
  void** params;

  template <size_t... I>
  void Run(std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A>*>(params[I])...);
  }
  static void Body(void* self) {
    static_cast<Call*>(self)->Run(std::index_sequence_for<A...>());
  }
};

// The sizes of a kernel's parameters (the emulated driver copies the
// arguments at launch, as CUDA does); how many there are, at most `max`
// written.
template <typename... A>
int ParamSizes(void (*)(A...), size_t* sizes, int max) {
  const size_t all[] = {sizeof(std::remove_reference_t<A>)..., 0};
  const int n = static_cast<int>(sizeof...(A));
  for (int i = 0; i < n && i < max; ++i) sizes[i] = all[i];
  return n;
}

template <typename... A>
int Launch(void (*kernel)(A...), const char* name, bool sync,
           const LaunchConfig* config, void** params, char* error,
           int error_size) {
  if (grid_host == nullptr) {
    std::snprintf(error, static_cast<size_t>(error_size),
                  "kernel %s: its module was not bound to a grid runner "
                  "(lathe_emu_bind)",
                  name);
    return 1;
  }
  Call<A...> call{kernel, params};
  return grid_host->run_grid(name, sync, config, &Call<A...>::Body, &call,
                             error, error_size);
}

// Atomics: blocks may one day run on several host threads at once.
template <typename T>
T AtomicAdd(T* p, T v) {
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T desired = old + v;
    while (!__atomic_compare_exchange(p, &old, &desired, false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      desired = old + v;
    }
    return old;
  }
}

// *p = v while replaces(*p, v); the old value (atomicMax, atomicMin).
template <typename T, typename F>
T AtomicKeep(T* p, T v, F replaces) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (replaces(old, v) &&
         !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}

}  // namespace
}  // namespace lathe_emu

// ---- CUDA C++'s vocabulary, on the host
// --------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
// Per block: each block runs on one OS thread. A module thread_local, so
// it outlives the module's dlclose in the threads that ran it (the indices
// moved to the runner for that reason: GridHost::state).
#define __shared__ static thread_local
#define __launch_bounds__(...)

#define threadIdx (::lathe_emu::grid_host->state()->thread_idx)
#define blockIdx (::lathe_emu::grid_host->state()->block_idx)
#define blockDim (::lathe_emu::grid_host->state()->block_dim)
#define gridDim (::lathe_emu::grid_host->state()->grid_dim)
#define warpSize 32

static inline void __syncthreads() { ::lathe_emu::grid_host->sync_threads(); }
static inline void __syncwarp(unsigned = 0xffffffffu) {
  ::lathe_emu::grid_host->warp_exchange(0, "__syncwarp");
}
template <typename T>
static T __shfl_sync(unsigned, T v, int src, int width = 32) {
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_sync");
}
template <typename T>
static T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  return ::lathe_emu::Shuffle(v, ::lathe_emu::Lane() ^ mask, width,
                              "__shfl_xor_sync");
}
template <typename T>
static T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ::lathe_emu::Lane() % width;
  const int src = lane + static_cast<int>(delta) < width
                      ? ::lathe_emu::Lane() + static_cast<int>(delta)
                      : ::lathe_emu::Lane();
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_down_sync");
}
template <typename T>
static T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ::lathe_emu::Lane() % width;
  const int src = lane >= static_cast<int>(delta)
                      ? ::lathe_emu::Lane() - static_cast<int>(delta)
                      : ::lathe_emu::Lane();
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_up_sync");
}
static inline unsigned __ballot_sync(unsigned, int predicate) {
  const uint64_t* all =
      ::lathe_emu::grid_host->warp_exchange(predicate != 0, "__ballot_sync");
  const int lanes = ::lathe_emu::grid_host->warp_lanes();
  unsigned bits = 0;
  for (int l = 0; l < lanes; ++l) bits |= (all[l] != 0 ? 1u : 0u) << l;
  return bits;
}
static inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}
static inline int __all_sync(unsigned mask, int predicate) {
  const int lanes = ::lathe_emu::grid_host->warp_lanes();
  const unsigned full = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  return __ballot_sync(mask, predicate) == full;
}

template <typename T>
static T atomicAdd(T* p, T v) {
  return ::lathe_emu::AtomicAdd(p, v);
}
template <typename T>
static T atomicMax(T* p, T v) {
  return ::lathe_emu::AtomicKeep(p, v, [](T a, T b) { return a < b; });
}
template <typename T>
static T atomicMin(T* p, T v) {
  return ::lathe_emu::AtomicKeep(p, v, [](T a, T b) { return b < a; });
}
template <typename T>
static T atomicExch(T* p, T v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
template <typename T>
static T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return expected;
}

// The fast-math spellings the emitter may use, as their precise selves.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

#define LATHE_CUDA_KERNEL(name, sync)                                          \
  extern "C"                                                                   \
      __attribute__((visibility("default"))) int lathe_emu_launch_##name(      \
          const ::lathe_emu::LaunchConfig* config, void** params, char* error, \
          int error_size) {                                                    \
    return ::lathe_emu::Launch(name, #name, sync, config, params, error,       \
                               error_size);                                    \
  }                                                                            \
  extern "C"                                                                   \
      __attribute__((visibility("default"))) int lathe_emu_params_##name(      \
          size_t* sizes, int max) {                                            \
    return ::lathe_emu::ParamSizes(name, sizes, max);                          \
  }

// Binds this module to the runtime's grid runner (the emulated driver calls
// it when it loads the module): 0, or -1 when the runner's table is not the
// one this module was built against.
extern "C" __attribute__((visibility("default"))) int lathe_emu_bind(
    const ::lathe_emu::GridHost* host) {
  if (host != nullptr && (host->version != LATHE_EMU_GRID_VERSION ||
                          host->size != sizeof(::lathe_emu::GridHost))) {
    return -1;
  }
  ::lathe_emu::grid_host = host;
  return 0;
}

#endif  // LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_
