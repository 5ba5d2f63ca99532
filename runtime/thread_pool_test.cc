#include "runtime/thread_pool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lathe {
namespace {

// Counts how often each index runs and whether every chunk but the last
// starts and ends at a multiple of the grain.
struct Coverage {
  explicit Coverage(int64_t n, int64_t grain) : hits(n), grain(grain) {}
  std::vector<std::atomic<int>> hits;
  int64_t grain;
  std::atomic<int> misaligned{0};
  std::atomic<int> chunks{0};

  static void Body(void* ctx, int64_t begin, int64_t end) {
    auto* c = static_cast<Coverage*>(ctx);
    const int64_t n = static_cast<int64_t>(c->hits.size());
    if (begin % c->grain != 0 || (end != n && end % c->grain != 0)) {
      c->misaligned.fetch_add(1);
    }
    c->chunks.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) c->hits[i].fetch_add(1);
  }

  // The indices that did not run exactly once.
  std::vector<int64_t> Wrong() const {
    std::vector<int64_t> wrong;
    for (size_t i = 0; i < hits.size(); ++i) {
      if (hits[i].load() != 1) wrong.push_back(static_cast<int64_t>(i));
    }
    return wrong;
  }
};

// Two chunks that each wait (up to 10 s) until both have started: only
// two threads running at once get through without the timeout. Whether
// they did, and on how many threads.
struct Rendezvous {
  std::atomic<int> started{0};
  std::atomic<int> timed_out{0};
  std::mutex mu;
  std::set<std::thread::id> threads;

  static void Body(void* ctx, int64_t begin, int64_t end) {
    auto* r = static_cast<Rendezvous*>(ctx);
    {
      std::lock_guard<std::mutex> lock(r->mu);
      r->threads.insert(std::this_thread::get_id());
    }
    r->started.fetch_add(static_cast<int>(end - begin));
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (r->started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        r->timed_out.fetch_add(1);
        return;
      }
      std::this_thread::yield();
    }
  }

  // Runs the two chunks with a team of `threads`; true when they ran at
  // once on two threads.
  static bool Meet(int threads) {
    Rendezvous r;
    ParallelFor(2, 1, threads, &Body, &r);
    return r.timed_out.load() == 0 && r.threads.size() == 2;
  }
};

TEST(ThreadPoolTest, EveryIndexRunsOnceInGrainAlignedChunks) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t n : {1, 2, 7, 64, 1000, 100003}) {
      for (int64_t grain : {1, 16, 64}) {
        Coverage c(n, grain);
        ParallelFor(n, grain, threads, &Coverage::Body, &c);
        EXPECT_THAT(c.Wrong(), testing::IsEmpty())
            << "n " << n << " grain " << grain << " threads " << threads;
        EXPECT_EQ(c.misaligned.load(), 0) << n << " " << grain;
      }
    }
  }
}

TEST(ThreadPoolTest, SplitsIntoSeveralChunksPerThread) {
  Coverage c(1 << 16, 1);
  ParallelFor(1 << 16, 1, 2, &Coverage::Body, &c);
  EXPECT_THAT(c.Wrong(), testing::IsEmpty());
  EXPECT_EQ(c.chunks.load(), 8);  // 4 per thread, of equal size
  EXPECT_GE(ThreadPoolWorkers(), 1);
}

TEST(ThreadPoolTest, OneThreadOrNothingToSplitRunsOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  struct Seen {
    std::thread::id caller;
    std::atomic<int> elsewhere{0};
    std::atomic<int> calls{0};
  } seen{caller};
  auto body = [](void* ctx, int64_t, int64_t) {
    auto* s = static_cast<Seen*>(ctx);
    s->calls.fetch_add(1);
    if (std::this_thread::get_id() != s->caller) s->elsewhere.fetch_add(1);
  };
  ParallelFor(1000, 1, 1, body, &seen);
  ParallelFor(16, 16, 4, body, &seen);  // one grain: nothing to split
  EXPECT_EQ(seen.calls.load(), 2);
  EXPECT_EQ(seen.elsewhere.load(), 0);
  ParallelFor(0, 1, 4, body, &seen);  // nothing to do: no call
  EXPECT_EQ(seen.calls.load(), 2);
}

// A worker joins the caller: two chunks that wait for each other finish.
TEST(ThreadPoolTest, AWorkerRunsBesideTheCaller) {
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(Rendezvous::Meet(2)) << "round " << round;
  }
}

// After a team of 5 grew the pool, a loop asking for one worker still
// gets one (whichever of the pool's is awake), after the workers slept.
TEST(ThreadPoolTest, TheGrownPoolServesLargerAndSmallerTeams) {
  Coverage c(4096, 1);
  ParallelFor(4096, 1, 5, &Coverage::Body, &c);
  EXPECT_THAT(c.Wrong(), testing::IsEmpty());
  EXPECT_GE(ThreadPoolWorkers(), 4);
  for (int round = 0; round < 10; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // asleep
    ASSERT_TRUE(Rendezvous::Meet(2)) << "round " << round;
  }
}

// A loop inside a loop's body runs on the thread that asks for it.
TEST(ThreadPoolTest, NestedLoopsRunInline) {
  struct Outer {
    std::deque<Coverage>* inner;
  };
  std::deque<Coverage> inner;
  for (int i = 0; i < 32; ++i) inner.emplace_back(1000, 8);
  Outer outer{&inner};
  ParallelFor(
      32, 1, 4,
      [](void* ctx, int64_t begin, int64_t end) {
        auto* o = static_cast<Outer*>(ctx);
        for (int64_t i = begin; i < end; ++i) {
          ParallelFor(1000, 8, 4, &Coverage::Body, &(*o->inner)[i]);
        }
      },
      &outer);
  for (const Coverage& c : inner) EXPECT_THAT(c.Wrong(), testing::IsEmpty());
}

// Loops from several threads at once: one runs on the pool, the others on
// their callers, and every one covers its range.
TEST(ThreadPoolTest, ConcurrentCallersEachCoverTheirRange) {
  constexpr int kCallers = 4, kLoops = 200;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&wrong, t] {
      for (int l = 0; l < kLoops; ++l) {
        const int64_t n = 500 + 37 * t + l;
        Coverage c(n, 4);
        ParallelFor(n, 4, 3, &Coverage::Body, &c);
        if (!c.Wrong().empty() || c.misaligned.load() != 0) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Writes from the workers are visible to the caller when the loop returns.
TEST(ThreadPoolTest, ResultsAreVisibleAfterTheLoop) {
  for (int round = 0; round < 500; ++round) {
    std::vector<int64_t> out(4096, -1);
    ParallelFor(
        4096, 16, 2,
        [](void* ctx, int64_t begin, int64_t end) {
          auto* o = static_cast<std::vector<int64_t>*>(ctx);
          for (int64_t i = begin; i < end; ++i) (*o)[i] = i * 3;
        },
        &out);
    for (int64_t i = 0; i < 4096; ++i) {
      ASSERT_EQ(out[i], i * 3) << "round " << round;
    }
  }
}

// Loops of few chunks and of many, alternating, many times: a worker late
// for one loop must not claim a chunk of the next (with the next's body or
// bounds) nor count one twice. Each loop tags its context; every chunk
// must be the loop's own, in [0, n), and every index run once.
TEST(ThreadPoolTest, AlternatingSmallAndLargeLoopsKeepTheirChunks) {
  struct Tagged {
    int64_t tag;
    int64_t n;
    std::vector<std::atomic<int>>* hits;
    std::atomic<int>* wrong;
  };
  std::atomic<int> wrong{0};
  for (int round = 0; round < 20000; ++round) {
    const bool large = round % 2 == 1;
    const int64_t n = large ? 64 : 2;
    std::vector<std::atomic<int>> hits(n);
    Tagged t{round, n, &hits, &wrong};
    ParallelFor(
        n, 1, large ? 8 : 2,
        [](void* ctx, int64_t begin, int64_t end) {
          auto* t = static_cast<Tagged*>(ctx);
          if (begin < 0 || begin >= end || end > t->n) {
            t->wrong->fetch_add(1);
            return;
          }
          for (int64_t i = begin; i < end; ++i) (*t->hits)[i].fetch_add(1);
        },
        &t);
    for (int64_t i = 0; i < n; ++i) {
      if (hits[i].load() != 1) wrong.fetch_add(1);
    }
    ASSERT_EQ(wrong.load(), 0) << "round " << round;
  }
}

#if !defined(__SANITIZE_THREAD__) && !defined(THREAD_SANITIZER)
// A child of fork() has none of its parent's workers: it starts its own,
// which run beside it.
TEST(ThreadPoolTest, AForkedChildRunsLoops) {
  Coverage warm(4096, 1);
  ParallelFor(4096, 1, 2, &Coverage::Body, &warm);  // the parent's workers
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Coverage c(100000, 8);
    ParallelFor(100000, 8, 2, &Coverage::Body, &c);
    if (!c.Wrong().empty() || c.misaligned.load() != 0) _exit(3);
    _exit(Rendezvous::Meet(2) ? 0 : 4);  // the child's own worker
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A system with no thread to give: the pool keeps the workers it started
// (none, or one) and every loop still runs each iteration once, on them
// and the caller, without asking again. (In a child of fork(), which starts
// with no workers.)
TEST(ThreadPoolTest, LoopsRunWhenTheSystemHasNoThreads) {
  for (int granted : {0, 1}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (granted == 1) {
        Coverage first(1000, 1);
        ParallelFor(1000, 1, 2, &Coverage::Body, &first);  // one worker
        if (!first.Wrong().empty() || ThreadPoolWorkers() != 1) _exit(3);
      }
      RefuseThreadStartsForTest(1);
      for (int loop = 0; loop < 3; ++loop) {
        Coverage c(50000, 4);
        ParallelFor(50000, 4, 4, &Coverage::Body, &c);
        if (!c.Wrong().empty() || c.misaligned.load() != 0) _exit(4);
      }
      _exit(ThreadPoolWorkers() == granted ? 0 : 5);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << granted << " worker(s) granted";
  }
}
#endif

}  // namespace
}  // namespace lathe
