// -----------------------------------------------------------------------------
// File: emulated_grid_abi.h
// -----------------------------------------------------------------------------
//
// What an emulated CUDA module (kernels built against cuda_emulation.h)
// and the runtime's grid runner (emulated_grid.h) share: a launch's shape,
// the running thread's indices, and the table of the runner's functions a
// module calls. The runner — the block's threads, their fibers, barriers
// and warps — is compiled once, into //runtime; a module holds its kernels
// and thin wrappers only, so each module builds in about half the time it
// took when every module compiled the runner too.
//
// Plain types only, so that a module built by the system compiler and the
// runtime built by Bazel agree on them. The emulated driver gives each
// module it loads the table (its exported lathe_emu_bind):
//
//   using Bind = int (*)(const lathe_emu::GridHost*);
//   int rc = reinterpret_cast<Bind>(dlsym(module, "lathe_emu_bind"))(
//       &EmulatedGrid());   // 0, or -1: built against another table

#ifndef LATHE_RUNTIME_CUDA_EMULATED_GRID_ABI_H_
#define LATHE_RUNTIME_CUDA_EMULATED_GRID_ABI_H_

#include <cstdint>

// Bumped whenever GridHost or ThreadState changes: a module binds only to a
// runner of its own version.
#define LATHE_EMU_GRID_VERSION 2

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

// The kernel thread an OS thread runs now: the module's threadIdx,
// blockIdx, blockDim and gridDim, which the runner writes as it goes.
struct ThreadState {
  uint3 thread_idx = {0, 0, 0};
  uint3 block_idx = {0, 0, 0};
  dim3 block_dim;
  dim3 grid_dim;
};

// The runner's functions a module calls.
struct GridHost {
  // LATHE_EMU_GRID_VERSION and sizeof(GridHost) of the runner's build.
  uint32_t version;
  uint32_t size;
  // Runs body(argument) for every thread of every block of `config`,
  // writing each one's indices to this OS thread's state() first: each
  // thread on a fiber of its own when `fibers` (the kernel synchronizes),
  // else as a plain call. 0, or 1 with a one-line message naming `kernel`
  // in `error`.
  int (*run_grid)(const char* kernel, bool fibers, const LaunchConfig* config,
                  void (*body)(void*), void* argument, char* error,
                  int error_size);
  // __syncthreads: returns once every thread of the block has called it.
  void (*sync_threads)();
  // A warp op named `op`: this lane's `value` exchanged with its warp's;
  // the warp's values by lane, once every lane has come.
  const uint64_t* (*warp_exchange)(uint64_t value, const char* op);
  // This thread's lane in its warp, and how many lanes its warp has.
  int (*lane)();
  int (*warp_lanes)();
  // The indices of the kernel thread this OS thread runs. The runner owns
  // them, not a thread_local of the module's: a module's dynamic TLS
  // outlives its dlclose in the threads that touched it, and
  // LeakSanitizer's scan of the threads at exit read it. (A kernel's
  // __shared__ memory is still a module thread_local: cuda_emulation.h.)
  ThreadState* (*state)();
};

}  // namespace lathe_emu

#endif  // LATHE_RUNTIME_CUDA_EMULATED_GRID_ABI_H_
