#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

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

// Worker starts still to refuse (RefuseThreadStartsForTest).
std::atomic<int> refused_starts{0};

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

// Whether this thread is one of a pool's workers, and whether it is
// running a loop as its caller: a loop asked for there runs inline.
thread_local bool in_worker = false;
thread_local bool in_loop = false;

class Pool {
 public:
  void Run(int64_t n, int64_t grain, int threads,
           void (*body)(void*, int64_t, int64_t), void* ctx) {
    std::unique_lock<std::mutex> lock(busy_, std::defer_lock);
    if (in_worker || in_loop || !lock.try_lock()) {
      body(ctx, 0, n);
      return;
    }
    in_loop = true;
    int workers = std::min({threads - 1, kMaxWorkers, most_});
    // A worker counts loops from the epoch before this one's, so it joins
    // this loop however late its thread starts.
    const uint32_t before = epoch_.load(std::memory_order_relaxed);
    while (started_.load(std::memory_order_relaxed) < workers) {
      if (!Start(before)) {
        // The system has no thread for it (EAGAIN: a limit): the pool
        // keeps the workers it has, and tries no more.
        most_ = workers = started_.load(std::memory_order_relaxed);
        break;
      }
      started_.fetch_add(1, std::memory_order_relaxed);
    }
    if (workers == 0) {
      body(ctx, 0, n);
      in_loop = false;
      return;
    }
    grain = std::max<int64_t>(grain, 1);
    const int64_t want = (n + kChunksPerThread * (workers + 1) - 1) /
                         (kChunksPerThread * (workers + 1));
    const int64_t chunk =
        std::max<int64_t>(grain, (want + grain - 1) / grain * grain);
    const int64_t chunks = (n + chunk - 1) / chunk;
    static_assert(kChunksPerThread * (kMaxWorkers + 1) < (1 << 16),
                  "a loop's chunk count fits the state's 16 bits");
    body_.store(body, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    chunk_.store(chunk, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    ++generation_;
    state_.store(uint64_t{generation_} << 32 | uint64_t(chunks) << 16,
                 std::memory_order_release);
    // After the state: a worker that takes a seat sees this loop's.
    seats_.store(workers, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      FutexWake(&epoch_, workers);
    }
    Drain();
    auto finished = [&] { return done_.load(std::memory_order_acquire) == n; };
    if (!SpinUntil(finished)) {
      while (!finished()) sched_yield();
    }
    in_loop = false;
  }

  int workers() const { return started_.load(std::memory_order_relaxed); }

 private:
  // Claims and runs chunks of the loop whose state it first reads until
  // none are left or another loop has begun. The state is one word
  // (generation, chunk count, next chunk) and a claim a compare-exchange of
  // it from a value whose next chunk is below its count. A claim that
  // succeeds is of a loop still running (its caller waits for that chunk),
  // so the fields read before it are that loop's: the next caller writes
  // its fields only after every chunk is done. A worker that read a loop's
  // state late, after its caller returned, claims nothing and never
  // touches its body or context; the caller never waits for a worker that
  // holds no chunk. (The count is in the word, not a field: a field read
  // while a new loop is being published could pair the old loop's final
  // state with the new loop's larger count.)
  void Drain() {
    uint64_t state = state_.load(std::memory_order_acquire);
    const uint64_t generation = state >> 32;
    for (;;) {
      if (state >> 32 != generation) return;
      const int64_t index = static_cast<int64_t>(state & 0xffff);
      if (index >= static_cast<int64_t>(state >> 16 & 0xffff)) return;
      auto* body = body_.load(std::memory_order_relaxed);
      void* ctx = ctx_.load(std::memory_order_relaxed);
      const int64_t n = n_.load(std::memory_order_relaxed);
      const int64_t chunk = chunk_.load(std::memory_order_relaxed);
      if (!state_.compare_exchange_weak(state, state + 1,
                                        std::memory_order_acquire,
                                        std::memory_order_acquire)) {
        continue;  // `state` is the new one
      }
      const int64_t begin = index * chunk;
      const int64_t end = std::min(n, begin + chunk);
      body(ctx, begin, end);
      done_.fetch_add(end - begin, std::memory_order_release);
      state = state_.load(std::memory_order_acquire);
    }
  }

  // Starts a worker (detached) that joins loops after epoch `before`;
  // false when the system refuses a thread.
  bool Start(uint32_t before) {
    if (refused_starts.load(std::memory_order_relaxed) > 0) {
      refused_starts.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    struct Args {
      Pool* pool;
      uint32_t before;
    };
    auto* args = new Args{this, before};
    pthread_t thread;
    if (pthread_create(
            &thread, nullptr,
            [](void* a) -> void* {
              const Args args = *static_cast<Args*>(a);
              delete static_cast<Args*>(a);
              args.pool->Work(args.before);
              return nullptr;
            },
            args) != 0) {
      delete args;
      return false;
    }
    pthread_detach(thread);
    return true;
  }

  void Work(uint32_t seen) {
    in_worker = true;
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
      seen = epoch_.load(std::memory_order_seq_cst);
      // A seat of the loop (as many as its caller asked for workers); a
      // worker woken for an older loop may take one of a newer.
      if (seats_.fetch_sub(1, std::memory_order_acquire) > 0) Drain();
    }
  }

  std::mutex busy_;              // held by the thread running a loop
  std::atomic<int> started_{0};  // workers (detached; never end)
  int most_ = kMaxWorkers;       // workers the system allows (under busy_)
  uint32_t generation_ = 0;      // the last loop's (under busy_)
  // generation << 32 | chunks << 16 | next chunk (32 bits of generation:
  // a worker would have to sleep through 2^32 loops to mistake one)
  std::atomic<uint64_t> state_{0};
  std::atomic<void (*)(void*, int64_t, int64_t)> body_{nullptr};
  std::atomic<void*> ctx_{nullptr};  // the loop's, as the caller gave
  std::atomic<int64_t> n_{0};        // iterations
  std::atomic<int64_t> chunk_{1};    // iterations per chunk
  std::atomic<int> seats_{0};        // workers that may still join
  std::atomic<int64_t> done_{0};     // iterations finished
  std::atomic<uint32_t> epoch_{0};   // a new loop (the workers' futex)
  std::atomic<int> sleepers_{0};     // workers asleep on epoch_
};

std::atomic<Pool*> pool{nullptr};

// In a child of fork() the workers are gone: it starts a fresh pool (the
// parent's stays allocated; its threads do not exist here).
void ForgetPool() {
  pool.store(nullptr, std::memory_order_relaxed);
  in_loop = false;  // forked from inside a loop's body
  in_worker = false;
}

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

bool InParallelFor() { return in_worker || in_loop; }

int ThreadPoolWorkers() { return ThePool().workers(); }

void RefuseThreadStartsForTest(int n) {
  refused_starts.store(n, std::memory_order_relaxed);
}

}  // namespace lathe
