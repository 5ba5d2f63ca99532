#include "runtime/tensor.h"

#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/storage.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DTypeTest, NamesAndParsing) {
  EXPECT_EQ(AllDTypes().size(), 10u);
  for (DType d : AllDTypes()) {
    EXPECT_EQ(*ParseDType(ShortName(d)), d);
    EXPECT_EQ(*ParseDType(TorchName(d)), d);
  }
  EXPECT_EQ(*ParseDType("torch.half"), DType::kFloat16);
  EXPECT_EQ(*ParseDType("torch.long"), DType::kInt64);
  EXPECT_EQ(ItemSize(DType::kBFloat16), 2);
  EXPECT_THAT(std::string(ParseDType("f128").status().message()),
              HasSubstr("unknown dtype 'f128'"));
  EXPECT_TRUE(IsFloatingPoint(DType::kBFloat16));
  EXPECT_TRUE(IsHalfFloat(DType::kFloat16));
  EXPECT_TRUE(IsHalfFloat(DType::kBFloat16));
  EXPECT_FALSE(IsHalfFloat(DType::kFloat32));
  EXPECT_FALSE(IsHalfFloat(DType::kInt16));
  EXPECT_FALSE(IsIntegral(DType::kBool, false));
  EXPECT_TRUE(IsIntegral(DType::kBool, true));
}

TEST(DeviceTest, Parse) {
  EXPECT_EQ(Device::Parse("cpu")->ToString(), "cpu");
  EXPECT_EQ(Device::Parse("cuda")->ToString(), "cuda:0");
  EXPECT_EQ(Device::Parse("cuda:3")->index, 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:+1"}) {
    EXPECT_THAT(std::string(Device::Parse(bad).status().message()),
                HasSubstr("unknown device"))
        << bad;
  }
}

TEST(TensorTest, EmptyIsContiguousZeros) {
  Tensor t = *Tensor::Empty({2, 3}, DType::kFloat32);
  EXPECT_EQ(t.ToString(), "f32[2, 3][3, 1]cpu");
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.GetDouble({1, 2}), 0.0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  EXPECT_THAT(ContiguousStrides({2, 0, 3}), ElementsAre(3, 3, 1));
  Tensor scalar = *Tensor::Empty({}, DType::kInt64);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.ToString(), "i64[][]cpu");
}

// An int64 element beyond double's 53 bits reads back exactly; a float is
// truncated toward zero.
TEST(TensorTest, GetIntIsExact) {
  Tensor big = *Tensor::Empty({2}, DType::kInt64);
  big.data<int64_t>()[1] = (int64_t{1} << 60) + 1;
  EXPECT_EQ(big.GetInt({1}), (int64_t{1} << 60) + 1);
  Tensor f = *Tensor::Empty({}, DType::kFloat32);
  f.SetDouble({}, -2.75);
  EXPECT_EQ(f.GetInt({}), -2);
  Tensor b = *Tensor::Empty({}, DType::kBool);
  b.SetDouble({}, 1);
  EXPECT_EQ(b.GetInt({}), 1);
}

TEST(TensorTest, ViewsShareStorage) {
  Tensor a = *Tensor::Empty({2, 3}, DType::kFloat32);
  Tensor t = *a.AsStrided({3, 2}, {1, 3}, 0);  // a.t()
  t.SetDouble({2, 1}, 5.0);
  EXPECT_EQ(a.GetDouble({1, 2}), 5.0);
  EXPECT_EQ(a.storage(), t.storage());
  EXPECT_EQ(a.storage().use_count(), 2);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_non_overlapping_and_dense());
  Tensor row = *a.AsStrided({3}, {1}, 3);  // a[1]
  EXPECT_EQ(row.GetDouble({2}), 5.0);
  Tensor c = *a.Clone();
  EXPECT_NE(c.storage(), a.storage());
  EXPECT_EQ(c.GetDouble({1, 2}), 5.0);
  // A contiguous view at an offset (one copy) and a transposed one
  // (element by element) clone to a[1] and a.t(), apart from a.
  for (int64_t i = 0; i < 6; ++i) a.SetDouble({i / 3, i % 3}, i);
  Tensor row_copy = *row.Clone();
  EXPECT_EQ(row_copy.storage_offset(), 0);
  a.SetDouble({1, 0}, 70.0);
  EXPECT_EQ(row_copy.GetDouble({0}), 3.0);
  EXPECT_EQ(row_copy.GetDouble({2}), 5.0);
  Tensor t_copy = *t.Clone();
  EXPECT_TRUE(t_copy.is_contiguous());
  EXPECT_EQ(t_copy.GetDouble({0, 1}), 70.0);
  EXPECT_EQ(t_copy.GetDouble({2, 0}), 2.0);
}

TEST(TensorTest, BorrowedStoragesViewMemoryLatheDoesNotOwn) {
  float memory[6] = {0, 1, 2, 3, 4, 5};
  int64_t before = HostMemoryInUse();
  auto owner = std::make_shared<int>(7);
  {
    Storage s = Storage::Borrow(memory, sizeof(memory), Device::Cpu(), owner);
    EXPECT_TRUE(s.is_borrowed());
    EXPECT_EQ(HostMemoryInUse(), before);
    EXPECT_EQ(owner.use_count(), 2);  // kept while a handle lives
    Tensor t = *Tensor::Wrap(s, DType::kFloat32, {2, 3}, {3, 1}, 0);
    EXPECT_EQ(t.GetDouble({1, 2}), 5.0);
    t.SetDouble({0, 1}, 9.0);
    // Views past the borrowed block are refused as for lathe's own.
    EXPECT_FALSE(Tensor::Wrap(s, DType::kFloat32, {2, 3}, {3, 1}, 1).ok());
  }
  EXPECT_EQ(memory[1], 9.0f);  // written in place, not freed
  EXPECT_EQ(owner.use_count(), 1);
  EXPECT_FALSE(Tensor::Empty({1}, DType::kFloat32)->storage().is_borrowed());
}

TEST(TensorTest, ViewsOutsideTheStorageAreErrors) {
  Tensor a = *Tensor::Empty({2, 3}, DType::kFloat32);
  absl::StatusOr<Tensor> v = a.AsStrided({2, 3}, {3, 1}, 1);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("exceeds its storage of 24 bytes"));
  EXPECT_FALSE(a.AsStrided({-1}, {1}, 0).ok());
  EXPECT_FALSE(a.AsStrided({2}, {-1}, 0).ok());
  EXPECT_FALSE(a.AsStrided({2}, {1}, -1).ok());
  EXPECT_FALSE(a.AsStrided({2, 2}, {1}, 0).ok());
  EXPECT_FALSE(Tensor::Empty({1LL << 40, 1LL << 40}, DType::kFloat32).ok());
  EXPECT_OK(a.AsStrided({0, 100}, {100, 1}, 6));  // empty: no reach
}

// While a ScopedElementLimit is alive, a tensor of more elements is refused
// before it is allocated, and the innermost scope remembers the first one.
TEST(TensorTest, AnElementLimitRefusesLargerTensorsBeforeAllocating) {
  {
    ScopedElementLimit limit(10);
    EXPECT_OK(Tensor::Empty({2, 5}, DType::kFloat32).status());
    // Empty: no element, however large the other sizes.
    EXPECT_OK(Tensor::Empty({0, int64_t{1} << 40}, DType::kFloat32).status());
    EXPECT_THAT(Tensor::Empty({3, 4}, DType::kInt64).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "a tensor of 12 elements is over the limit of 10"));
    EXPECT_FALSE(Tensor::Empty({11}, DType::kFloat32).ok());
    // A count past int64 is over the limit too, counted saturated (it was
    // an extent error, which the interpreter then reported unlike the cpu
    // backend).
    const int64_t big = int64_t{1} << 21;
    EXPECT_THAT(Tensor::Empty({big, big, big}, DType::kFloat32).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "a tensor of 9223372036854775807 elements is over "
                         "the limit of 10"));
    ASSERT_TRUE(limit.refused().has_value());
    EXPECT_THAT(limit.refused()->sizes, ElementsAre(3, 4));  // the first
    EXPECT_EQ(limit.refused()->dtype, DType::kInt64);
    {
      ScopedElementLimit inner(100);
      EXPECT_OK(Tensor::Empty({11}, DType::kFloat32).status());
      EXPECT_FALSE(inner.refused().has_value());
    }
    EXPECT_FALSE(Tensor::Empty({11}, DType::kFloat32).ok());  // outer again
  }
  EXPECT_OK(Tensor::Empty({11}, DType::kFloat32).status());  // no limit
}

TEST(TensorTest, ContiguityFollowsPyTorch) {
  Tensor base = *Tensor::Empty({4, 4}, DType::kFloat32);
  EXPECT_TRUE(base.AsStrided({1, 4}, {99, 1}, 0)->is_contiguous());  // size-1
  EXPECT_FALSE(base.AsStrided({2, 2}, {4, 1}, 0)->is_contiguous());
  EXPECT_TRUE(
      base.AsStrided({2, 2}, {4, 1}, 0)->is_non_overlapping_and_dense() ==
      false);
  EXPECT_OK(base.AsStrided({4}, {0}, 0));
}

TEST(TensorTest, OverlapQueries) {
  Tensor a = *Tensor::Empty({4, 4}, DType::kFloat32);
  Tensor b = *Tensor::Empty({4, 4}, DType::kFloat32);
  Tensor row0 = *a.AsStrided({4}, {1}, 0), row1 = *a.AsStrided({4}, {1}, 4);
  Tensor col0 = *a.AsStrided({4}, {4}, 0);
  EXPECT_EQ(GetOverlap(a, b), Overlap::kNone);
  EXPECT_EQ(GetOverlap(a, *a.AsStrided({4, 4}, {4, 1}, 0)), Overlap::kFull);
  EXPECT_EQ(GetOverlap(row0, row1), Overlap::kNone);
  EXPECT_EQ(GetOverlap(a, row1), Overlap::kPartial);
  EXPECT_EQ(GetOverlap(row1, col0), Overlap::kTooHard);  // extents intersect
  EXPECT_EQ(GetOverlap(a, *a.AsStrided({0}, {1}, 0)), Overlap::kNone);
  EXPECT_TRUE(HasInternalOverlap(*a.AsStrided({4, 4}, {0, 1}, 0)));  // expand
  EXPECT_TRUE(HasInternalOverlap(*a.AsStrided({3, 3}, {1, 1}, 0)));
  EXPECT_FALSE(HasInternalOverlap(*a.AsStrided({2, 2}, {8, 1}, 0)));
  EXPECT_FALSE(HasInternalOverlap(a));
}

TEST(TensorTest, ElementConversions) {
  Tensor h = *Tensor::Empty({2}, DType::kFloat16);
  h.SetDouble({0}, 0.1);
  EXPECT_EQ(h.GetDouble({0}),
            static_cast<double>(Half::FromFloat(0.1f).ToFloat()));
  Tensor i = *Tensor::Empty({1}, DType::kInt32);
  i.SetDouble({0}, -2.7);
  EXPECT_EQ(i.GetDouble({0}), -2.0);  // toward zero
  Tensor b = *Tensor::Empty({1}, DType::kBool);
  b.SetDouble({0}, 0.5);
  EXPECT_EQ(b.GetDouble({0}), 1.0);
}

}  // namespace
}  // namespace lathe

namespace lathe {
namespace {

TEST(StorageTest, TheHostMemoryLimitRefusesAllocationsBeyondIt) {
  int64_t old = HostMemoryLimit();
  EXPECT_GT(old, 0);
  SetHostMemoryLimit(HostMemoryInUse() + 4096);
  {
    absl::StatusOr<Tensor> a = Tensor::Empty({512}, DType::kFloat32);  // 2 KiB
    ASSERT_OK(a);
    absl::StatusOr<Tensor> b = Tensor::Empty({1024}, DType::kFloat32);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(b.status().message()),
                ::testing::HasSubstr(
                    "allocating 4096 bytes would exceed the memory limit of"));
  }
  // Freed storage is given back to the budget.
  EXPECT_OK(Tensor::Empty({1000}, DType::kFloat32));
  SetHostMemoryLimit(old);
  // A 64 TiB request is refused before any memory is touched.
  EXPECT_FALSE(Tensor::Empty({int64_t{1} << 44}, DType::kFloat32).ok());
}

}  // namespace
}  // namespace lathe

namespace lathe {
namespace {

// Uninitialized storage: the size asked for, counted against the limit like
// any other, 64-byte aligned; a kept block (AllocateKept) of 2 MiB or more
// starts on a 2 MiB (huge page) boundary and counts its whole huge pages.
TEST(StorageTest, UninitializedStorageIsCountedAndKeptBlocksAreHugeAligned) {
  int64_t before = HostMemoryInUse();
  {
    absl::StatusOr<Storage> small = Storage::AllocateUninitialized(100);
    ASSERT_OK(small);
    EXPECT_EQ(small->nbytes(), 100);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
    absl::StatusOr<Storage> big =
        Storage::AllocateUninitialized((int64_t{3} << 20) + 1);
    ASSERT_OK(big);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big->data()) % 64, 0u);
    EXPECT_EQ(HostMemoryInUse() - before, 128 + (int64_t{3} << 20) + 64);
    absl::StatusOr<Storage> kept =
        Storage::AllocateKept((int64_t{3} << 20) + 1);
    ASSERT_OK(kept);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(kept->data()) % (2 << 20), 0u);
    EXPECT_EQ(HostMemoryInUse() - before,
              128 + (int64_t{3} << 20) + 64 + (int64_t{4} << 20));
    static_cast<char*>(big->data())[(int64_t{3} << 20)] = 1;  // writable
    static_cast<char*>(kept->data())[(int64_t{3} << 20)] = 1;
  }
  EXPECT_EQ(HostMemoryInUse(), before);
  EXPECT_FALSE(Storage::AllocateUninitialized(-1).ok());
  EXPECT_FALSE(Storage::AllocateKept(-1).ok());
}

#if !defined(__SANITIZE_ADDRESS__)
// Where a block of `bytes` (uninitialized, its byte 12345 set to 7) was,
// once it is freed.
void* AllocatedAndFreed(int64_t bytes) {
  absl::StatusOr<Storage> a = Storage::AllocateUninitialized(bytes);
  EXPECT_OK(a);
  if (!a.ok()) return nullptr;
  static_cast<char*>(a->data())[12345] = 7;
  return a->data();
}

// A freed large block (256 KiB or more) is kept and handed to the next
// allocation of its size (zeroed again when Allocate asks), within the
// cache's limit; small blocks are not kept.
TEST(StorageTest, FreedLargeBlocksAreReusedWithinTheCacheLimit) {
  SetHostBlockCacheLimit(0);  // empties what earlier tests left
  SetHostBlockCacheLimit(int64_t{8} << 20);
  const int64_t size = int64_t{4} << 20;
  void* first = AllocatedAndFreed(size);
  EXPECT_EQ(HostBlockCacheBytes(), size);
  {
    absl::StatusOr<Storage> b = Storage::Allocate(size);
    ASSERT_OK(b);
    EXPECT_EQ(b->data(), first);
    EXPECT_EQ(static_cast<char*>(b->data())[12345], 0);  // zeroed again
    EXPECT_EQ(HostBlockCacheBytes(), 0);
    // Another size is a fresh block; both freed overflow the limit of 8 MiB,
    // so one of them is freed, not kept.
    absl::StatusOr<Storage> c = Storage::AllocateUninitialized(size + 4096);
    ASSERT_OK(c);
    EXPECT_NE(c->data(), first);
  }
  EXPECT_LE(HostBlockCacheBytes(), int64_t{8} << 20);
  EXPECT_GT(HostBlockCacheBytes(), 0);
  const int64_t held = HostBlockCacheBytes();
  {
    absl::StatusOr<Storage> small = Storage::AllocateUninitialized(1000);
    ASSERT_OK(small);
  }
  EXPECT_EQ(HostBlockCacheBytes(), held);
  // A block of 512 KiB is kept too.
  SetHostBlockCacheLimit(0);
  SetHostBlockCacheLimit(int64_t{8} << 20);
  const int64_t mid = int64_t{512} << 10;
  void* kept = AllocatedAndFreed(mid);
  EXPECT_EQ(HostBlockCacheBytes(), mid);
  {
    absl::StatusOr<Storage> m = Storage::AllocateUninitialized(mid);
    ASSERT_OK(m);
    EXPECT_EQ(m->data(), kept);
  }
  SetHostBlockCacheLimit(0);  // empties the cache
  EXPECT_EQ(HostBlockCacheBytes(), 0);
  SetHostBlockCacheLimit(int64_t{1} << 30);
}
#endif

}  // namespace
}  // namespace lathe

namespace lathe {
namespace {

// The largest finite value of each floating dtype (bfloat16: float32's
// exponent with 7 mantissa bits, all ones).
TEST(DTypeTest, MaxFiniteIsTheLargestFiniteValue) {
  EXPECT_EQ(MaxFinite(DType::kFloat16), 65504.0);
  EXPECT_EQ(MaxFinite(DType::kBFloat16), 0x1.fep127);
  EXPECT_EQ(MaxFinite(DType::kFloat32),
            static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(MaxFinite(DType::kFloat64), std::numeric_limits<double>::max());
}

}  // namespace
}  // namespace lathe
