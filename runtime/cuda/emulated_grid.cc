#include "runtime/cuda/emulated_grid.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LATHE_EMU_ASAN 1
#endif

namespace lathe {
namespace {

using lathe_emu::LaunchConfig;
using lathe_emu::ThreadState;

constexpr int kWarpSize = 32;
constexpr size_t kFiberStack = size_t{64} << 10;

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
  ThreadState* state = nullptr;  // this OS thread's indices (GridHost::state)
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

thread_local Block* current_block = nullptr;

// Records the block's first error (later ones follow from it).
void Fail(Block& b, const std::string& what) {
  if (b.error.empty())
    b.error = std::string("kernel ") + b.kernel + ": " + what;
}

// Switches from the running fiber back to the block's scheduler.
void Yield(Block& b, Thread& t, Wait why) {
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
void SyncThreads() {
  Block& b = *current_block;
  if (!b.fibers) {
    Fail(b, "__syncthreads in a kernel exported as not synchronizing");
    return;
  }
  Yield(b, *b.current, Wait::kBarrier);
}

// A warp op: the calling lane's `value` is exchanged with its warp's; the
// values of the lanes, once all have come, by lane.
const uint64_t* WarpExchange(uint64_t value, const char* op) {
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

// The lane this thread is in its warp.
int Lane() {
  return current_block->current != nullptr
             ? current_block->current->linear % kWarpSize
             : 0;
}

// How many lanes this thread's warp has (the block's last may be partial).
int WarpLanes() {
  const Block& b = *current_block;
  const int first =
      b.current != nullptr ? b.current->linear / kWarpSize * kWarpSize : 0;
  return std::min<int>(kWarpSize, static_cast<int>(b.threads.size()) - first);
}

// Runs every thread of the current block's fibers until all are done,
// releasing barriers and warps as they fill.
void Schedule(Block& b) {
  const int n = static_cast<int>(b.threads.size());
  const int warps = (n + kWarpSize - 1) / kWarpSize;
  for (;;) {
    for (Thread& t : b.threads) {
      if (t.wait != Wait::kRunning) continue;
      b.current = &t;
      b.state->thread_idx = t.index;
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
thread_local void (*fiber_body)(void*) = nullptr;
thread_local void* fiber_argument = nullptr;

void FiberMain() {
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

// GridHost::run_grid.
// The kernel thread indices of this OS thread (GridHost::state).
thread_local ThreadState thread_state;
ThreadState* CurrentState() { return &thread_state; }

int RunGrid(const char* kernel, bool fibers, const LaunchConfig* config,
            void (*body)(void*), void* argument, char* error, int error_size) {
  ThreadState* state = &thread_state;
  const dim3 g = config->grid, bd = config->block;
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
  b.state = state;
  b.threads.resize(threads);
  if (fibers) {
    b.stacks.resize(static_cast<size_t>(threads) * kFiberStack);
    b.exchange.resize((threads + kWarpSize - 1) / kWarpSize * 2 * kWarpSize);
  }
  Block* outer = current_block;
  current_block = &b;
  fiber_body = body;
  fiber_argument = argument;
  state->block_dim = bd;
  state->grid_dim = g;
  for (unsigned z = 0; z < g.z && b.error.empty(); ++z) {
    for (unsigned y = 0; y < g.y && b.error.empty(); ++y) {
      for (unsigned x = 0; x < g.x && b.error.empty(); ++x) {
        state->block_idx = {x, y, z};
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
                state->thread_idx = t.index;
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

}  // namespace

const lathe_emu::GridHost& EmulatedGrid() {
  static const lathe_emu::GridHost host = {LATHE_EMU_GRID_VERSION,
                                           sizeof(lathe_emu::GridHost),
                                           &RunGrid,
                                           &SyncThreads,
                                           &WarpExchange,
                                           &Lane,
                                           &WarpLanes,
                                           &CurrentState};
  return host;
}

}  // namespace lathe
