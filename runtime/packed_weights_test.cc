#include "runtime/packed_weights.h"

#include <cstdint>
#include <vector>

#include "dnnl.h"
#include "gtest/gtest.h"
#include "runtime/onednn.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

TEST(PackedWeightsTest, RegisteredRangesAreFrozenUntilForgotten) {
  std::vector<char> w(100);
  EXPECT_FALSE(IsFrozen(w.data(), 10));
  RegisterFrozenWeights(w.data(), 100);
  EXPECT_TRUE(IsFrozen(w.data(), 100));
  EXPECT_TRUE(IsFrozen(w.data() + 40, 60));
  EXPECT_FALSE(IsFrozen(w.data() + 40, 61));  // runs past the end
  EXPECT_FALSE(IsFrozen(w.data() + 100, 1));  // just after it
  // Registrations nest: the range stays frozen until the last one ends.
  RegisterFrozenWeights(w.data(), 100);
  ForgetFrozenWeights(w.data(), 100);
  EXPECT_TRUE(IsFrozen(w.data() + 99, 1));
  // A registration of part of it is its own, and ends alone.
  RegisterFrozenWeights(w.data(), 50);
  ForgetFrozenWeights(w.data(), 100);
  EXPECT_TRUE(IsFrozen(w.data() + 10, 40));
  EXPECT_FALSE(IsFrozen(w.data() + 10, 41));
  ForgetFrozenWeights(w.data(), 50);
  EXPECT_FALSE(IsFrozen(w.data(), 1));
  // Empty ranges register nothing and end nothing.
  RegisterFrozenWeights(w.data(), 0);
  EXPECT_FALSE(IsFrozen(w.data(), 0));
}

// A [2, 3] f32 matrix packed as its transpose (the reorder ab -> ba): done
// once, kept (a later change to w is not seen) until forgotten.
TEST(PackedWeightsTest, PackedOnceAndKeptUntilForgotten) {
  ASSERT_NE(onednn::Engine(), nullptr);
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  const dnnl_dims_t dims = {2, 3};
  dnnl_memory_desc_t ab, ba;
  ASSERT_EQ(dnnl_memory_desc_init_by_tag(&ab, 2, dims, dnnl_f32, dnnl_ab),
            dnnl_success);
  ASSERT_EQ(dnnl_memory_desc_init_by_tag(&ba, 2, dims, dnnl_f32, dnnl_ba),
            dnnl_success);
  dnnl_primitive_desc_t pd = nullptr;
  ASSERT_EQ(dnnl_reorder_primitive_desc_create(&pd, &ab, onednn::Engine(), &ba,
                                               onednn::Engine(),
                                               onednn::Attributes()),
            dnnl_success);
  dnnl_primitive_t reorder = nullptr;
  ASSERT_EQ(dnnl_primitive_create(&reorder, pd), dnnl_success);
  dnnl_primitive_desc_destroy(pd);

  const int64_t before = FrozenWeightsKept();
  const int64_t in_use = HostMemoryInUse();
  dnnl_memory_t packed = onednn::KeptPacking(w.data(), ab, ba, reorder);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(FrozenWeightsKept(), before + 1);
  // The copy counts in the host memory limit while it is kept.
  const int64_t with_copy = HostMemoryInUse();
  EXPECT_GE(with_copy, in_use + 6 * int64_t{sizeof(float)});
  void* data = nullptr;
  ASSERT_EQ(dnnl_memory_get_data_handle(packed, &data), dnnl_success);
  const float* t = static_cast<const float*>(data);
  EXPECT_EQ(std::vector<float>(t, t + 6),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));

  w[0] = 100;
  EXPECT_EQ(onednn::KeptPacking(w.data(), ab, ba, reorder), packed);
  EXPECT_EQ(t[0], 1);
  EXPECT_EQ(FrozenWeightsKept(), before + 1);

  // While another registration holds w, its copy stays.
  const int64_t bytes = 6 * sizeof(float);
  RegisterFrozenWeights(w.data(), bytes);
  RegisterFrozenWeights(w.data(), bytes);
  ForgetFrozenWeights(w.data(), bytes);
  EXPECT_EQ(FrozenWeightsKept(), before + 1);
  ForgetFrozenWeights(w.data(), bytes);
  EXPECT_EQ(FrozenWeightsKept(), before);
  // ... and no longer once forgotten (a scratchpad the packing took stays).
  EXPECT_GE(with_copy - HostMemoryInUse(), 6 * int64_t{sizeof(float)});

  // Where the limit leaves no room for the copy there is none (the
  // routine then reports that oneDNN could not run it).
  const int64_t limit = HostMemoryLimit();
  SetHostMemoryLimit(HostMemoryInUse());
  EXPECT_EQ(onednn::KeptPacking(w.data(), ab, ba, reorder), nullptr);
  EXPECT_EQ(FrozenWeightsKept(), before);
  SetHostMemoryLimit(limit);
  dnnl_primitive_destroy(reorder);
}

}  // namespace
}  // namespace lathe
