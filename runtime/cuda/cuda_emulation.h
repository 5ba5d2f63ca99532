// -----------------------------------------------------------------------------
// File: cuda_emulation.h
// -----------------------------------------------------------------------------
//
// The emulated CUDA device's kernel side: with this header, CUDA C++ as
// lathe emits it compiles with the system C++ compiler and runs on the
// host, as Triton's interpreter mode runs Triton kernels. A launch runs
// every block of the grid in turn; a block's threads run one after another
// until each reaches __syncthreads, then all go on (so a missing barrier
// shows: a thread reads what the threads after it have not written yet),
// each thread on a fiber of its own (ucontext) when the kernel
// synchronizes, as a plain call when it does not. Warp shuffles, votes and
// __syncwarp wait for their warp the same way; __shared__ memory is per
// block; atomics are real atomics. What CUDA forbids is an error naming
// the kernel: a __syncthreads that not every thread of the block reaches
// (a divergent barrier), a warp op some lanes of a warp skip, a barrier in
// a kernel exported as not synchronizing.
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
// Only the host's C++ library is used: the header is compiled into each
// kernel module on its own.

#ifndef LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_
#define LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LATHE_EMU_ASAN 1
#endif

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
};

namespace lathe_emu {

// A launch's shape, as cuLaunchKernel takes it.
struct LaunchConfig {
  dim3 grid;
  dim3 block;
};

inline constexpr int kWarpSize = 32;
inline constexpr size_t kFiberStack = size_t{64} << 10;

// Where a thread of a block stands.
enum class Wait { kRunning, kBarrier, kWarp, kDone };

struct Thread {
  ucontext_t context;
  uint3 index;
  int linear = 0;
  Wait wait = Wait::kRunning;
  int warp_round = 0;  // which of the warp's two exchange buffers is next
#ifdef LATHE_EMU_ASAN
  void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
#endif
};

// The block being run on this OS thread.
struct Block {
  const char* kernel = "";
  bool fibers = false;
  std::vector<Thread> threads;
  std::vector<char> stacks;
  ucontext_t scheduler;
  Thread* current = nullptr;
  // Per warp: two rounds of 32 values, exchanged by shuffles and votes.
  std::vector<uint64_t> exchange;
  std::string error;
#ifdef LATHE_EMU_ASAN
  // The scheduler's stack, for AddressSanitizer's fiber switches.
  void* fake_stack = nullptr;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
#endif
};

inline thread_local Block* current_block = nullptr;
inline thread_local uint3 thread_idx = {0, 0, 0};
inline thread_local uint3 block_idx = {0, 0, 0};
inline thread_local dim3 block_dim;
inline thread_local dim3 grid_dim;

// Records the block's first error (later ones follow from it).
inline void Fail(Block& b, const std::string& what) {
  if (b.error.empty())
    b.error = std::string("kernel ") + b.kernel + ": " + what;
}

// Switches from the running fiber back to the block's scheduler.
inline void Yield(Block& b, Thread& t, Wait why) {
  t.wait = why;
#ifdef LATHE_EMU_ASAN
  __sanitizer_start_switch_fiber(&t.fake_stack, b.stack_bottom, b.stack_size);
#endif
  swapcontext(&t.context, &b.scheduler);
#ifdef LATHE_EMU_ASAN
  __sanitizer_finish_switch_fiber(t.fake_stack, &b.stack_bottom, &b.stack_size);
#endif
}

// __syncthreads: waits until every thread of the block has come.
inline void SyncThreads() {
  Block& b = *current_block;
  if (!b.fibers) {
    Fail(b, "__syncthreads in a kernel exported as not synchronizing");
    return;
  }
  Yield(b, *b.current, Wait::kBarrier);
}

// A warp op: the calling lane's `value` is exchanged with its warp's; the
// values of the lanes, once all have come, by lane.
inline const uint64_t* WarpExchange(uint64_t value, const char* op) {
  Block& b = *current_block;
  static thread_local uint64_t lone[kWarpSize];
  if (!b.fibers) {
    Fail(b, std::string(op) + " in a kernel exported as not synchronizing");
    std::fill(lone, lone + kWarpSize, value);
    return lone;
  }
  Thread& t = *b.current;
  const int warp = t.linear / kWarpSize;
  const int lane = t.linear % kWarpSize;
  uint64_t* round =
      &b.exchange[(static_cast<size_t>(warp) * 2 + t.warp_round % 2) *
                  kWarpSize];
  round[lane] = value;
  Yield(b, t, Wait::kWarp);
  ++t.warp_round;
  return round;
}

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
inline int Lane() {
  return current_block->current != nullptr
             ? current_block->current->linear % kWarpSize
             : 0;
}

// The value lane `src` (within this lane's `width`-wide segment) gave.
template <typename T>
T Shuffle(T v, int src, int width, const char* op) {
  const uint64_t* all = WarpExchange(Bits(v), op);
  const int lane = Lane();
  const int base = lane / width * width;
  return FromBits<T>(all[base + ((src % width) + width) % width]);
}

// Runs every thread of the current block's fibers until all are done,
// releasing barriers and warps as they fill.
inline void Schedule(Block& b) {
  const int n = static_cast<int>(b.threads.size());
  const int warps = (n + kWarpSize - 1) / kWarpSize;
  for (;;) {
    for (Thread& t : b.threads) {
      if (t.wait != Wait::kRunning) continue;
      b.current = &t;
      thread_idx = t.index;
#ifdef LATHE_EMU_ASAN
      __sanitizer_start_switch_fiber(
          &b.fake_stack,
          b.stacks.data() + static_cast<size_t>(t.linear) * kFiberStack,
          kFiberStack);
#endif
      swapcontext(&b.scheduler, &t.context);
#ifdef LATHE_EMU_ASAN
      __sanitizer_finish_switch_fiber(b.fake_stack, nullptr, nullptr);
#endif
      if (!b.error.empty()) return;
    }
    int done = 0, at_barrier = 0;
    for (const Thread& t : b.threads) {
      done += t.wait == Wait::kDone;
      at_barrier += t.wait == Wait::kBarrier;
    }
    if (done == n) return;
    bool released = false;
    // A warp goes on when all its lanes that have not returned wait at a
    // warp op; a lane that returned is one the op skipped.
    for (int w = 0; w < warps; ++w) {
      int lanes = 0, waiting = 0, returned = 0;
      for (int i = w * kWarpSize; i < std::min(n, (w + 1) * kWarpSize); ++i) {
        ++lanes;
        waiting += b.threads[i].wait == Wait::kWarp;
        returned += b.threads[i].wait == Wait::kDone;
      }
      if (waiting == 0 || waiting + returned < lanes) continue;
      if (returned > 0) {
        Fail(b, "a warp op that " + std::to_string(returned) + " of warp " +
                    std::to_string(w) + "'s " + std::to_string(lanes) +
                    " lanes returned before reaching (a divergent warp op)");
        return;
      }
      for (int i = w * kWarpSize; i < std::min(n, (w + 1) * kWarpSize); ++i) {
        b.threads[i].wait = Wait::kRunning;
      }
      released = true;
    }
    if (released) continue;
    if (at_barrier + done == n) {
      if (done > 0) {
        Fail(b, "__syncthreads reached by " + std::to_string(at_barrier) +
                    " of the block's " + std::to_string(n) +
                    " threads; the others returned (a divergent barrier)");
        return;
      }
      for (Thread& t : b.threads) t.wait = Wait::kRunning;
      continue;
    }
    Fail(b,
         "threads wait at __syncthreads while others wait at a warp op "
         "(a barrier inside a divergent branch)");
    return;
  }
}

// The body each fiber runs: the kernel, on the current thread's index.
inline thread_local void (*fiber_body)(void*) = nullptr;
inline thread_local void* fiber_argument = nullptr;

inline void FiberMain() {
  Block& b = *current_block;
#ifdef LATHE_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &b.stack_bottom, &b.stack_size);
#endif
  fiber_body(fiber_argument);
  b.current->wait = Wait::kDone;
#ifdef LATHE_EMU_ASAN
  // The fiber ends: its fake stack goes.
  __sanitizer_start_switch_fiber(nullptr, b.stack_bottom, b.stack_size);
#endif
  // Returning resumes uc_link: the scheduler.
}

// Runs `body(argument)` for every thread of every block of `config`.
inline int RunGrid(const char* kernel, bool fibers, const LaunchConfig& config,
                   void (*body)(void*), void* argument, char* error,
                   int error_size) {
  const dim3 g = config.grid, bd = config.block;
  const uint64_t threads = uint64_t{bd.x} * bd.y * bd.z;
  auto fail = [&](const std::string& what) {
    std::snprintf(error, static_cast<size_t>(error_size), "kernel %s: %s",
                  kernel, what.c_str());
    return 1;
  };
  if (threads == 0 || threads > 1024 || g.x == 0 || g.y == 0 || g.z == 0) {
    return fail("a launch of grid (" + std::to_string(g.x) + ", " +
                std::to_string(g.y) + ", " + std::to_string(g.z) +
                ") and block (" + std::to_string(bd.x) + ", " +
                std::to_string(bd.y) + ", " + std::to_string(bd.z) +
                ") (CUDA allows 1 to 1024 threads a block)");
  }
  // Held past the launch: a fault the emulated driver catches jumps out of
  // the kernel, and the next launch (or the thread's end) frees it.
  static thread_local std::unique_ptr<Block> held;
  held = std::make_unique<Block>();
  Block& b = *held;
  b.kernel = kernel;
  b.fibers = fibers;
  b.threads.resize(threads);
  if (fibers) {
    b.stacks.resize(static_cast<size_t>(threads) * kFiberStack);
    b.exchange.resize((threads + kWarpSize - 1) / kWarpSize * 2 * kWarpSize);
  }
  Block* outer = current_block;
  current_block = &b;
  fiber_body = body;
  fiber_argument = argument;
  block_dim = bd;
  grid_dim = g;
  for (unsigned z = 0; z < g.z && b.error.empty(); ++z) {
    for (unsigned y = 0; y < g.y && b.error.empty(); ++y) {
      for (unsigned x = 0; x < g.x && b.error.empty(); ++x) {
        block_idx = {x, y, z};
        int i = 0;
        for (unsigned tz = 0; tz < bd.z; ++tz) {
          for (unsigned ty = 0; ty < bd.y; ++ty) {
            for (unsigned tx = 0; tx < bd.x; ++tx, ++i) {
              Thread& t = b.threads[i];
              t = Thread();
              t.index = {tx, ty, tz};
              t.linear = i;
              if (!fibers) {
                b.current = &t;
                thread_idx = t.index;
                body(argument);
                continue;
              }
              getcontext(&t.context);
              t.context.uc_stack.ss_sp =
                  b.stacks.data() + static_cast<size_t>(i) * kFiberStack;
              t.context.uc_stack.ss_size = kFiberStack;
              t.context.uc_link = &b.scheduler;
              makecontext(&t.context, FiberMain, 0);
            }
          }
        }
        if (fibers) Schedule(b);
      }
    }
  }
  current_block = outer;
  const int rc = b.error.empty() ? 0 : 1;
  if (rc != 0) {
    std::snprintf(error, static_cast<size_t>(error_size), "%s",
                  b.error.c_str());
  }
  held.reset();
  return rc;
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
  Call<A...> call{kernel, params};
  return RunGrid(name, sync, *config, &Call<A...>::Body, &call, error,
                 error_size);
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

}  // namespace lathe_emu

// ---- CUDA C++'s vocabulary, on the host
// --------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __launch_bounds__(...)

#define threadIdx (::lathe_emu::thread_idx)
#define blockIdx (::lathe_emu::block_idx)
#define blockDim (::lathe_emu::block_dim)
#define gridDim (::lathe_emu::grid_dim)
#define warpSize 32

inline void __syncthreads() { ::lathe_emu::SyncThreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::lathe_emu::WarpExchange(0, "__syncwarp");
}
template <typename T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_sync");
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  return ::lathe_emu::Shuffle(v, ::lathe_emu::Lane() ^ mask, width,
                              "__shfl_xor_sync");
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ::lathe_emu::Lane() % width;
  const int src = lane + static_cast<int>(delta) < width
                      ? ::lathe_emu::Lane() + static_cast<int>(delta)
                      : ::lathe_emu::Lane();
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_down_sync");
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ::lathe_emu::Lane() % width;
  const int src = lane >= static_cast<int>(delta)
                      ? ::lathe_emu::Lane() - static_cast<int>(delta)
                      : ::lathe_emu::Lane();
  return ::lathe_emu::Shuffle(v, src, width, "__shfl_up_sync");
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  const uint64_t* all =
      ::lathe_emu::WarpExchange(predicate != 0, "__ballot_sync");
  const ::lathe_emu::Block& b = *::lathe_emu::current_block;
  const int first = b.current != nullptr ? b.current->linear / 32 * 32 : 0;
  const int lanes =
      std::min<int>(32, static_cast<int>(b.threads.size()) - first);
  unsigned bits = 0;
  for (int l = 0; l < lanes; ++l) bits |= (all[l] != 0 ? 1u : 0u) << l;
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  const ::lathe_emu::Block& b = *::lathe_emu::current_block;
  const int first = b.current != nullptr ? b.current->linear / 32 * 32 : 0;
  const int lanes =
      std::min<int>(32, static_cast<int>(b.threads.size()) - first);
  const unsigned full = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  return __ballot_sync(mask, predicate) == full;
}

template <typename T>
T atomicAdd(T* p, T v) {
  return ::lathe_emu::AtomicAdd(p, v);
}
template <typename T>
T atomicMax(T* p, T v) {
  return ::lathe_emu::AtomicKeep(p, v, [](T a, T b) { return a < b; });
}
template <typename T>
T atomicMin(T* p, T v) {
  return ::lathe_emu::AtomicKeep(p, v, [](T a, T b) { return b < a; });
}
template <typename T>
T atomicExch(T* p, T v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
template <typename T>
T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return expected;
}

// The fast-math spellings the emitter may use, as their precise selves.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

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

#endif  // LATHE_RUNTIME_CUDA_CUDA_EMULATION_H_
