// Tensors on the emulated CUDA device through Storage: a storage of
// Device::Cuda(0) is refused until the CUDA runtime is started, then comes
// from the caching allocator (zeroed, and back to the cache when the last
// handle goes); ToDevice/ToHost keep values, sizes and strides (a
// transposed view, an empty tensor); wrong directions are errors; a
// pool scope keeps one thread's memory apart.

#include "runtime/cuda/cuda_storage.h"

#include <cstdlib>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/emulated_driver.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CudaStorageTest, DeviceTensorsComeFromTheAllocator) {
  // Before the runtime is started: refused.
  EXPECT_THAT(Storage::Allocate(64, Device::Cuda(0)).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "device memory (cuda:0) is allocated by the CUDA "
                       "runtime, which this program has not started"));
  ::setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  ASSERT_OK(UseCudaStorage());
  ASSERT_OK(UseCudaStorage());  // once
  const int64_t before = CudaStorageAllocator().stats().allocated;
  {
    ASSERT_OK_AND_ASSIGN(
        Tensor z, Tensor::Empty({3, 5}, DType::kFloat32, Device::Cuda(0)));
    EXPECT_EQ(z.device(), Device::Cuda(0));
    EXPECT_EQ(z.ToString(), "f32[3, 5][5, 1]cuda:0");
    EXPECT_EQ(CudaStorageAllocator().stats().allocated, before + 512);
    // Empty() zeroes: read back through a copy.
    ASSERT_OK_AND_ASSIGN(Tensor back, ToHost(z));
    EXPECT_EQ(back.device(), Device::Cpu());
    for (int64_t i = 0; i < 15; ++i) ASSERT_EQ(back.data<float>()[i], 0.0f);
    EXPECT_THAT(Storage::Allocate(64, Device::Cuda(1)).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "cuda:1: lathe uses one device, cuda:0"));
  }
  // The last handle went: the block is back in the cache.
  EXPECT_EQ(CudaStorageAllocator().stats().allocated, before);
}

TEST(CudaStorageTest, CopiesKeepValuesSizesAndStrides) {
  ::setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  ASSERT_OK(UseCudaStorage());
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Empty({2, 3}, DType::kInt32));
  for (int i = 0; i < 6; ++i) x.data<int32_t>()[i] = 10 * i;
  // A transposed view: strides [1, 3].
  ASSERT_OK_AND_ASSIGN(Tensor t, x.AsStrided({3, 2}, {1, 3}, 0));
  ASSERT_OK_AND_ASSIGN(Tensor on_device, ToDevice(t, Device::Cuda(0)));
  EXPECT_EQ(on_device.ToString(), "i32[3, 2][1, 3]cuda:0");
  ASSERT_OK_AND_ASSIGN(Tensor back, ToHost(on_device));
  EXPECT_EQ(back.ToString(), "i32[3, 2][1, 3]cpu");
  EXPECT_EQ(back.GetInt({0, 1}), 30);
  EXPECT_EQ(back.GetInt({2, 0}), 20);
  EXPECT_EQ(back.GetInt({2, 1}), 50);
  // An empty tensor copies nothing.
  ASSERT_OK_AND_ASSIGN(Tensor none, Tensor::Empty({0, 4}, DType::kFloat32));
  ASSERT_OK_AND_ASSIGN(Tensor none_on_device, ToDevice(none, Device::Cuda(0)));
  EXPECT_THAT(none_on_device.sizes(), ElementsAre(0, 4));
  // Wrong directions.
  EXPECT_THAT(ToDevice(on_device, Device::Cuda(0)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("copies a cpu tensor to a cuda device")));
  EXPECT_THAT(ToHost(x).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "ToHost copies a cuda tensor, not i32[2, 3][3, 1]cpu"));
}

// A large copy goes through the pinned staging halves, chunk by chunk (4
// MiB each; the last one partial), both ways, and keeps every value.
TEST(CudaStorageTest, LargeCopiesGoThroughPinnedStaging) {
  ::setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  ASSERT_OK(UseCudaStorage());
  const int64_t n = (int64_t{11} << 20) / 4 + 3;  // 11 MiB + 12 bytes
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Empty({n}, DType::kInt32));
  for (int64_t i = 0; i < n; ++i) {
    x.data<int32_t>()[i] = static_cast<int32_t>(i * 2654435761u);
  }
  const int64_t before = StagedCopyBytes();
  ASSERT_OK_AND_ASSIGN(Tensor d, ToDevice(x, Device::Cuda(0)));
  EXPECT_EQ(StagedCopyBytes() - before, 4 * n);
  ASSERT_OK_AND_ASSIGN(Tensor back, ToHost(d));
  EXPECT_EQ(StagedCopyBytes() - before, 8 * n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(back.data<int32_t>()[i], x.data<int32_t>()[i]) << i;
  }
  // Small copies go directly.
  ASSERT_OK_AND_ASSIGN(Tensor small, Tensor::Empty({16}, DType::kInt32));
  ASSERT_OK(ToDevice(small, Device::Cuda(0)).status());
  EXPECT_EQ(StagedCopyBytes() - before, 8 * n);
}

// A pool scoped on a thread: that thread's storages come from the pool
// and go back to it, never to the shared cache; other threads' do not; the
// pool outlives its scope while a block of it is held.
TEST(CudaStorageTest, APoolScopeKeepsItsThreadsMemoryApart) {
  ::setenv("LATHE_CUDA_DEVICE", "emulated", /*overwrite=*/0);
  ASSERT_OK(UseCudaStorage());
  const CudaAllocator& shared = CudaStorageAllocator();
  const int64_t before = shared.stats().allocated;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CudaAllocator> pool, NewCudaPool());
  std::weak_ptr<CudaAllocator> alive = pool;
  Storage kept;
  {
    CudaPoolScope scope(pool);
    ASSERT_OK_AND_ASSIGN(Storage a, Storage::Allocate(1000, Device::Cuda(0)));
    EXPECT_EQ(pool->stats().allocated, 1024);
    EXPECT_EQ(shared.stats().allocated, before);
    // Another thread, meanwhile, allocates from the shared cache.
    std::thread([&] {
      absl::StatusOr<Storage> b = Storage::Allocate(512, Device::Cuda(0));
      ASSERT_TRUE(b.ok());
      EXPECT_EQ(shared.stats().allocated, before + 512);
    }).join();
    {
      // Scopes nest: the inner pool, then the outer one again.
      ASSERT_OK_AND_ASSIGN(std::shared_ptr<CudaAllocator> inner, NewCudaPool());
      CudaPoolScope nested(inner);
      ASSERT_OK_AND_ASSIGN(Storage c, Storage::Allocate(512, Device::Cuda(0)));
      EXPECT_EQ(inner->stats().allocated, 512);
    }
    EXPECT_EQ(scope.zeroed_allocations(), 1);  // `a`: Allocate zeroes
    ASSERT_OK_AND_ASSIGN(kept,
                         Storage::AllocateUninitialized(512, Device::Cuda(0)));
    EXPECT_EQ(scope.zeroed_allocations(), 1);
    EXPECT_EQ(pool->stats().allocated, 1024 + 512);
  }
  // `a` went back to the pool, which keeps it cached; `kept` is held.
  EXPECT_EQ(pool->stats().allocated, 512);
  EXPECT_EQ(pool->stats().reserved, 1024 + 512);
  EXPECT_EQ(shared.stats().allocated, before);
  // Out of scope, allocations are the shared cache's again.
  ASSERT_OK_AND_ASSIGN(Storage d, Storage::Allocate(512, Device::Cuda(0)));
  EXPECT_EQ(shared.stats().allocated, before + 512);
  pool.reset();
  EXPECT_FALSE(alive.expired());  // `kept` holds it
  kept = Storage();
  EXPECT_TRUE(alive.expired());
}

}  // namespace
}  // namespace lathe
