// The caching device allocator over a stand-in driver (testdata/
// fake_libcuda.cc: host memory as device memory, a device size and event
// completion a test sets): size classes, reuse on a stream, reuse on
// another stream only once events say so (RecordStream's streams too), an
// out-of-memory that frees the cache and retries once and then names the
// size, EmptyCache, the statistics, and many threads at once.

#include "runtime/cuda/device_allocator.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/shared_library.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::RunfilePath;
using ::lathe::testing::StatusIs;

constexpr int64_t kMiB = int64_t{1} << 20;

// The stand-in driver and its knobs.
class CudaAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path =
        RunfilePath("runtime/cuda/testdata/fake_libcuda.so");
    ASSERT_OK_AND_ASSIGN(cu_, LoadCudaDriver(path));
    ASSERT_OK_AND_ASSIGN(SharedLibrary lib, SharedLibrary::Open(path, true));
    ASSERT_OK_AND_ASSIGN(void* f, lib.Symbol("fake_set_memory"));
    set_memory_ = reinterpret_cast<void (*)(size_t)>(f);
    ASSERT_OK_AND_ASSIGN(f, lib.Symbol("fake_set_events_done"));
    set_events_done_ = reinterpret_cast<void (*)(bool)>(f);
    ASSERT_OK_AND_ASSIGN(f, lib.Symbol("fake_memory_in_use"));
    in_use_ = reinterpret_cast<size_t (*)()>(f);
    set_memory_(size_t{1} << 30);
    set_events_done_(true);
    ASSERT_OK(CudaCall(*cu_, cu_->stream_create(&s1_, 0), "cuStreamCreate"));
    ASSERT_OK(CudaCall(*cu_, cu_->stream_create(&s2_, 0), "cuStreamCreate"));
  }
  void TearDown() override {
    cu_->stream_destroy(s1_);
    cu_->stream_destroy(s2_);
  }

  const CudaDriver* cu_ = nullptr;
  void (*set_memory_)(size_t) = nullptr;
  void (*set_events_done_)(bool) = nullptr;
  size_t (*in_use_)() = nullptr;
  CuStream s1_ = nullptr;
  CuStream s2_ = nullptr;
};

TEST(CudaAllocatorSizeTest, SizesAreRoundedToClasses) {
  EXPECT_EQ(CudaAllocator::RoundSize(1), 512);
  EXPECT_EQ(CudaAllocator::RoundSize(512), 512);
  EXPECT_EQ(CudaAllocator::RoundSize(513), 1024);
  EXPECT_EQ(CudaAllocator::RoundSize(kMiB), kMiB);
  EXPECT_EQ(CudaAllocator::RoundSize(kMiB + 1), 2 * kMiB);
  EXPECT_EQ(CudaAllocator::RoundSize(3 * kMiB), 4 * kMiB);
}

TEST_F(CudaAllocatorTest, ABlockGivenBackIsReusedOnItsStream) {
  CudaAllocator a(*cu_);
  ASSERT_OK_AND_ASSIGN(CudaBlock b, a.Allocate(1000, s1_));
  EXPECT_EQ(b.size, 1024);
  EXPECT_EQ(b.stream, s1_);
  ASSERT_OK(a.Free(b));
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.stats().reserved, 1024);
  // Its class again: the same memory, no new device allocation.
  ASSERT_OK_AND_ASSIGN(CudaBlock again, a.Allocate(700, s1_));
  EXPECT_EQ(again.ptr, b.ptr);
  // Another class: new memory.
  ASSERT_OK_AND_ASSIGN(CudaBlock other, a.Allocate(2000, s1_));
  EXPECT_NE(other.ptr, b.ptr);
  CudaAllocator::Stats st = a.stats();
  EXPECT_EQ(st.device_allocations, 2);
  EXPECT_EQ(st.allocated, 1024 + 2048);
  EXPECT_EQ(st.reserved, 1024 + 2048);
  EXPECT_EQ(st.peak_allocated, 1024 + 2048);
  ASSERT_OK(a.Free(again));
  ASSERT_OK(a.Free(other));
  EXPECT_EQ(a.stats().peak_allocated, 1024 + 2048);
  EXPECT_EQ(in_use_(), 1024u + 2048u);  // cached, not given back
  ASSERT_OK(a.EmptyCache());
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(in_use_(), 0u);
}

TEST_F(CudaAllocatorTest, AnotherStreamWaitsForTheEvent) {
  CudaAllocator a(*cu_);
  ASSERT_OK_AND_ASSIGN(CudaBlock b, a.Allocate(4096, s1_));
  ASSERT_OK(a.Free(b));
  // s1's work may still be using it: s2 gets new memory.
  set_events_done_(false);
  ASSERT_OK_AND_ASSIGN(CudaBlock fresh, a.Allocate(4096, s2_));
  EXPECT_NE(fresh.ptr, b.ptr);
  EXPECT_EQ(a.stats().device_allocations, 2);
  // Once s1's event has completed, s2 may take it.
  set_events_done_(true);
  ASSERT_OK_AND_ASSIGN(CudaBlock reused, a.Allocate(4096, s2_));
  EXPECT_EQ(reused.ptr, b.ptr);
  EXPECT_EQ(a.stats().device_allocations, 2);
  ASSERT_OK(a.Free(fresh));
  ASSERT_OK(a.Free(reused));
}

TEST_F(CudaAllocatorTest, RecordStreamMakesItsOwnStreamWaitToo) {
  CudaAllocator a(*cu_);
  ASSERT_OK_AND_ASSIGN(CudaBlock b, a.Allocate(4096, s1_));
  a.RecordStream(b, s2_);  // s2's kernels read it
  set_events_done_(false);
  ASSERT_OK(a.Free(b));
  ASSERT_OK_AND_ASSIGN(CudaBlock fresh, a.Allocate(4096, s1_));
  EXPECT_NE(fresh.ptr, b.ptr);  // s2's work may still read b
  set_events_done_(true);
  ASSERT_OK_AND_ASSIGN(CudaBlock reused, a.Allocate(4096, s1_));
  EXPECT_EQ(reused.ptr, b.ptr);
  ASSERT_OK(a.Free(fresh));
  ASSERT_OK(a.Free(reused));
}

TEST_F(CudaAllocatorTest, OutOfMemoryFreesTheCacheRetriesOnceThenNamesTheSize) {
  set_memory_(4 * kMiB);
  CudaAllocator a(*cu_);
  ASSERT_OK_AND_ASSIGN(CudaBlock small, a.Allocate(2 * kMiB, s1_));
  ASSERT_OK(a.Free(small));  // cached: 2 MiB of the device's 4
  // 3 MiB (a block of 4) fits only once the cache is given back.
  ASSERT_OK_AND_ASSIGN(CudaBlock big, a.Allocate(3 * kMiB, s1_));
  EXPECT_EQ(a.stats().cache_flushes, 1);
  EXPECT_EQ(a.stats().reserved, 4 * kMiB);
  EXPECT_EQ(a.stats().device_allocations, 2);
  EXPECT_THAT(a.Allocate(kMiB + 1, s1_).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "CUDA out of memory: cannot allocate 1048577 bytes (a "
                       "block of 2097152) on the device; lathe holds 4194304 "
                       "bytes in use and 4194304 reserved, its cache emptied; "
                       "the device has 0 of 4194304 bytes free"));
  ASSERT_OK(a.Free(big));
  // A size no device has is refused before the driver is asked.
  EXPECT_THAT(a.Allocate(int64_t{1} << 62, s1_).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(CudaAllocatorTest, BadSizesAndForeignBlocksAreErrors) {
  CudaAllocator a(*cu_);
  EXPECT_THAT(a.Allocate(0, s1_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device allocation of 0 bytes"));
  EXPECT_THAT(a.Allocate(-5, s1_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(CudaBlock b, a.Allocate(64, s1_));
  ASSERT_OK(a.Free(b));
  EXPECT_THAT(a.Free(b), StatusIs(absl::StatusCode::kInvalidArgument,
                                  ::testing::HasSubstr("given back already")));
  EXPECT_THAT(a.Free(CudaBlock{0x1234, 512, s1_}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device memory at 0x1234 was not given out by this "
                       "allocator, or was given back already"));
}

TEST_F(CudaAllocatorTest, ManyThreadsAtOnce) {
  CudaAllocator a(*cu_);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&a, this, t] {
      CuStream s = t % 2 == 0 ? s1_ : s2_;
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<CudaBlock> b = a.Allocate(512 * (1 + i % 4), s);
        ASSERT_TRUE(b.ok()) << b.status();
        ASSERT_TRUE(a.Free(*b).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(a.stats().allocated, 0);
  // At most one block per class per thread at a time.
  EXPECT_LE(a.stats().device_allocations, 8 * 4);
  ASSERT_OK(a.EmptyCache());
  EXPECT_EQ(in_use_(), 0u);
}

}  // namespace
}  // namespace lathe
