// How much of the op registry the cpu backend lowers: every registered op
// is asked codegen::HasLowering, and the ones that do not lower directly are
// looked up in the decompose pass's table (the default pipeline rewrites
// them into ops that do before lowering). The test prints "N of M registry
// ops lower on cpu directly, K more through decompose" and the sorted lists
// (the gaps are the to-do list), and fails when N drops below a floor a
// little under today's count, so a change that loses lowerings is noticed.
// Raise the floor as lowerings are added.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "codegen/lowering.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "passes/decompose.h"

namespace lathe::codegen {
namespace {

// Today: 360 of 401 directly, 39 more through decompose. The floor leaves
// room for a few renames.
constexpr int kFloor = 355;

TEST(LoweringCoverageTest, CountsTheRegistryOpsThatLower) {
  const ir::OpRegistry& registry = ir::OpRegistry::Global();
  std::vector<std::string> decomposed_list = passes::DecomposedTargets();
  absl::flat_hash_set<std::string> decomposed(decomposed_list.begin(),
                                              decomposed_list.end());
  std::vector<std::string> lowered, through, missing;
  for (const std::string& target : registry.Targets()) {  // sorted
    const ir::OpDef* op = registry.Find(target);
    ASSERT_NE(op, nullptr) << target;
    if (HasLowering(*op)) {
      lowered.push_back(target);
    } else {
      (decomposed.contains(target) ? through : missing).push_back(target);
    }
  }
  const int n = static_cast<int>(lowered.size());
  const int m = n + static_cast<int>(through.size() + missing.size());
  std::printf(
      "%d of %d registry ops lower on cpu directly, %zu more through "
      "decompose\n",
      n, m, through.size());
  std::printf("lower (%d):\n", n);
  for (const std::string& t : lowered) std::printf("  %s\n", t.c_str());
  std::printf("lower through decompose (%zu):\n", through.size());
  for (const std::string& t : through) std::printf("  %s\n", t.c_str());
  std::printf("do not lower (%zu):\n", missing.size());
  for (const std::string& t : missing) std::printf("  %s\n", t.c_str());
  EXPECT_GE(n, kFloor) << "fewer registry ops lower than the floor; a "
                          "lowering was lost (or the floor needs lowering "
                          "with a reason)";
}

// HasLowering agrees with the table for a few ops whose status is certain:
// the three ways an op lowers (directly, as a view, through its functional
// twin) and one op without a lowering.
TEST(LoweringCoverageTest, KnownOps) {
  const ir::OpRegistry& registry = ir::OpRegistry::Global();
  for (const char* target :
       {"aten.add.Tensor", "aten.sum.dim_IntList", "aten.mm.default",
        "aten.permute.default", "aten.slice.Tensor", "aten.add_.Tensor",
        "aten.copy_.default", "aten.slice_scatter.default", "aten.sort.default",
        "aten.topk.default"}) {
    const ir::OpDef* op = registry.Find(target);
    ASSERT_NE(op, nullptr) << target;
    EXPECT_TRUE(HasLowering(*op)) << target;
  }
  const ir::OpDef* unlowered = registry.Find("aten._pdist_forward.default");
  ASSERT_NE(unlowered, nullptr);
  EXPECT_FALSE(HasLowering(*unlowered));
}

}  // namespace
}  // namespace lathe::codegen
