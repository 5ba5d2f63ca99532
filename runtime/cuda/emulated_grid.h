// -----------------------------------------------------------------------------
// File: emulated_grid.h
// -----------------------------------------------------------------------------
//
// The emulated CUDA device's grid runner: how a launch of a kernel from an
// emulated module (cuda_emulation.h) runs on the host. Every block of the
// grid runs in turn; a block's threads run one after another until each
// reaches __syncthreads, then all go on (so a missing barrier shows: a
// thread reads what the threads after it have not written yet), each
// thread on a fiber of its own (ucontext) when the kernel synchronizes, as
// a plain call when it does not. Warp shuffles, votes and __syncwarp wait
// for their warp the same way. What CUDA forbids is an error naming the
// kernel: a __syncthreads that not every thread of the block reaches (a
// divergent barrier), a warp op some lanes of a warp skip, a barrier in a
// kernel exported as not synchronizing, a block of no or more than 1024
// threads.
//
// Compiled once, into //runtime; a module reaches it through the table
// EmulatedGrid() gives (emulated_grid_abi.h), which the emulated driver
// hands each module it loads.
//
// Example (a test that builds kernels into its own binary):
//
//   lathe_emu_bind(&lathe::EmulatedGrid());
//   lathe_emu_launch_scale(&config, params, error, sizeof(error));

#ifndef LATHE_RUNTIME_CUDA_EMULATED_GRID_H_
#define LATHE_RUNTIME_CUDA_EMULATED_GRID_H_

#include "runtime/cuda/emulated_grid_abi.h"

namespace lathe {

// The grid runner's table (one per process).
const lathe_emu::GridHost& EmulatedGrid();

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_EMULATED_GRID_H_
