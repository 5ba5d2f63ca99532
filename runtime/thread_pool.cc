#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <mutex>
#include <thread>
#include <vector>

namespace lathe {
namespace {

// The most workers a pool starts (a team past this runs on this many).
constexpr int kMaxWorkers = 255;

// How long an idle worker, and a caller waiting for a claimed chunk, spin
// before they sleep or yield: long enough for a model's next kernel to find
// the workers awake, short against a scheduler's time slice.
constexpr std::chrono::microseconds kSpin{30};

// Chunks per participating thread: a few, so the threads that run take
// the chunks of one the scheduler holds back.
constexpr int64_t kChunksPerThread = 4;

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins on `done()` for kSpin, checking the clock every 64 pauses; whether
// it became true.
template <class F>
bool SpinUntil(F done) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      Pause();
    }
    if (std::chrono::steady_clock::now() >= end) return done();
  }
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t value) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE,
          value, nullptr, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE,
          count, nullptr, nullptr, 0);
}

// Whether this thread is one of a pool's workers.
thread_local bool in_worker = false;

// One loop: its body, its chunks, and how many workers may take them.
struct Job {
  void (*body)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n;
  int64_t chunk;
  int workers;  // workers 0 .. workers-1 take part
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

// Claims and runs the job's chunks until none are left.
void Drain(Job& job) {
  for (;;) {
    const int64_t begin =
        job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.n) return;
    const int64_t end = std::min(job.n, begin + job.chunk);
    job.body(job.ctx, begin, end);
    job.done.fetch_add(end - begin, std::memory_order_release);
  }
}

class Pool {
 public:
  void Run(int64_t n, int64_t grain, int threads,
           void (*body)(void*, int64_t, int64_t), void* ctx) {
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock() || in_worker) {
      body(ctx, 0, n);
      return;
    }
    const int workers = std::min(threads - 1, kMaxWorkers);
    while (static_cast<int>(threads_.size()) < workers) {
      const int index = static_cast<int>(threads_.size());
      threads_.emplace_back([this, index] { Work(index); });
      threads_.back().detach();
    }
    grain = std::max<int64_t>(grain, 1);
    const int64_t want = (n + kChunksPerThread * (workers + 1) - 1) /
                         (kChunksPerThread * (workers + 1));
    Job job{
        .body = body,
        .ctx = ctx,
        .n = n,
        .chunk = std::max<int64_t>(grain, (want + grain - 1) / grain * grain),
        .workers = workers};
    job_.store(&job, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      FutexWake(&epoch_, workers);
    }
    Drain(job);
    auto finished = [&] {
      return job.done.load(std::memory_order_acquire) == job.n;
    };
    if (!SpinUntil(finished)) {
      while (!finished()) sched_yield();
    }
    // No worker may still hold `job` (it lives on this stack) once this
    // returns: withdraw it, then wait out those that loaded it.
    job_.store(nullptr, std::memory_order_seq_cst);
    auto idle = [&] { return active_.load(std::memory_order_seq_cst) == 0; };
    if (!SpinUntil(idle)) {
      while (!idle()) sched_yield();
    }
  }

  int workers() {
    std::lock_guard<std::mutex> lock(busy_);
    return static_cast<int>(threads_.size());
  }

 private:
  void Work(int index) {
    in_worker = true;
    uint32_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      // seq_cst: with sleepers_ and the caller's bump of epoch_, either
      // the caller sees this worker asleep and wakes it or the worker sees
      // the new epoch.
      auto changed = [&] {
        return epoch_.load(std::memory_order_seq_cst) != seen;
      };
      if (!SpinUntil(changed)) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        // A wake between the check and the wait changes the word: the
        // futex then returns at once.
        if (!changed()) FutexWait(&epoch_, seen);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        continue;
      }
      seen = epoch_.load(std::memory_order_acquire);
      active_.fetch_add(1, std::memory_order_seq_cst);
      Job* job = job_.load(std::memory_order_seq_cst);
      if (job != nullptr && index < job->workers) Drain(*job);
      active_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  std::mutex busy_;                   // held by the thread running a loop
  std::vector<std::thread> threads_;  // detached; they never end
  std::atomic<Job*> job_{nullptr};    // the loop running, or null
  std::atomic<uint32_t> epoch_{0};    // a new loop (the workers' futex)
  std::atomic<int> sleepers_{0};      // workers asleep on epoch_
  std::atomic<int> active_{0};        // workers that may hold job_
};

std::atomic<Pool*> pool{nullptr};

// In a child of fork() the workers are gone: it starts a fresh pool (the
// parent's stays allocated; its threads do not exist here).
void ForgetPool() { pool.store(nullptr, std::memory_order_relaxed); }

Pool& ThePool() {
  Pool* p = pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  static std::once_flag at_fork;
  std::call_once(at_fork,
                 [] { pthread_atfork(nullptr, nullptr, &ForgetPool); });
  Pool* fresh = new Pool;
  if (pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) {
    return *fresh;
  }
  delete fresh;
  return *p;
}

}  // namespace

void ParallelFor(int64_t n, int64_t grain, int threads,
                 void (*body)(void* ctx, int64_t begin, int64_t end),
                 void* ctx) {
  if (n <= 0) return;
  if (threads <= 1 || n <= std::max<int64_t>(grain, 1)) {
    body(ctx, 0, n);
    return;
  }
  ThePool().Run(n, grain, threads, body, ctx);
}

int ThreadPoolWorkers() { return ThePool().workers(); }

}  // namespace lathe
