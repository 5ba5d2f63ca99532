// -----------------------------------------------------------------------------
// File: thread_pool.h
// -----------------------------------------------------------------------------
//
// The threads generated kernels' parallel loops run on (issue 30, item 6:
// graceful under contention). An OpenMP parallel region ends in a barrier
// that every thread of its team must reach, so a loop waits for a thread
// the scheduler has not run yet: beside another busy process that costs a
// time slice (milliseconds) per loop, and libgomp's spin-wait gives the
// core to the spinning thread rather than to the one it waits for. Here the
// calling thread starts on the loop's chunks at once, the workers it wakes
// claim the rest from a shared counter, and the loop is done when its
// chunks are: a worker that has not started takes none and is not waited
// for. Idle workers spin briefly, then sleep on a futex.
//
// One pool per process, grown to the largest team asked for. A loop asked
// for while the pool runs another (a second thread calling, or a kernel of
// a kernel) runs on the calling thread alone. A child of fork() starts
// with a fresh pool.
//
// Example (what generated code does through LatheKernelRuntime):
//
//   struct Rows { const float* x; float* y; int64_t cols; } rows = {...};
//   lathe::ParallelFor(/*n=*/4096, /*grain=*/1, /*threads=*/2,
//                      [](void* c, int64_t begin, int64_t end) {
//                        auto* r = static_cast<Rows*>(c);
//                        for (int64_t i = begin; i < end; ++i) ...;
//                      },
//                      &rows);

#ifndef LATHE_RUNTIME_THREAD_POOL_H_
#define LATHE_RUNTIME_THREAD_POOL_H_

#include <cstdint>

namespace lathe {

// Runs body(ctx, begin, end) over [0, n) in chunks of a multiple of `grain`
// iterations, on the calling thread and up to threads - 1 of the pool's
// workers; returns when every chunk is done.
void ParallelFor(int64_t n, int64_t grain, int threads,
                 void (*body)(void* ctx, int64_t begin, int64_t end),
                 void* ctx);

// Whether this thread is running a pool loop's chunks (a worker, or a
// caller inside ParallelFor): a loop asked for here runs on it alone.
bool InParallelFor();

// The pool's workers so far (for tests: it grows to the largest team).
int ThreadPoolWorkers();

// For tests: the pool's next `n` attempts to start a worker fail, as when
// the system has no thread to give (pthread_create's EAGAIN). The pool then
// keeps the workers it has and runs loops on them and the caller.
void RefuseThreadStartsForTest(int n);

}  // namespace lathe

#endif  // LATHE_RUNTIME_THREAD_POOL_H_
