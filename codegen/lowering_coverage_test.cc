// How much of the op registry the cpu backend lowers, read from the
// lowering table (codegen::LoweringTableStatus): every registry op is
// lowered, rewritten by the decompose pass first (passes::DecomposedTargets)
// or refused with a stated reason; an op that is none of these (one just
// added to the registry without a decision) fails the test. The test prints
// "N of M registry ops lower on cpu directly, K more through decompose" and
// the sorted lists, and fails when N drops below a floor a little under
// today's count, so a change that loses lowerings is noticed. Raise the
// floor as lowerings are added.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codegen/lowering.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "passes/decompose.h"

namespace lathe::codegen {
namespace {

// Today: 370 of 460 directly (the graph builtins getitem and
// _set_grad_enabled among them), 88 more through decompose, 2 refused. The
// floor leaves room for a few renames.
constexpr int kFloor = 355;

TEST(LoweringCoverageTest, EveryRegistryOpIsLoweredDecomposedOrRefused) {
  std::vector<std::string> decomposed_list = passes::DecomposedTargets();
  absl::flat_hash_set<std::string> decomposed(decomposed_list.begin(),
                                              decomposed_list.end());
  std::vector<std::string> lowered, through, refused, undecided;
  for (const LoweringStatus& s : LoweringTableStatus()) {  // sorted
    ASSERT_NE(s.op, nullptr);
    const std::string& target = s.op->target;
    if (s.kind == LoweringStatus::Kind::kLowered) {
      lowered.push_back(target);
    } else if (decomposed.contains(target)) {
      through.push_back(target);
    } else if (s.kind == LoweringStatus::Kind::kRefused) {
      refused.push_back(absl::StrCat(target, ": ", s.reason));
    } else {
      undecided.push_back(target);
    }
  }
  const int n = static_cast<int>(lowered.size());
  const int m =
      n + static_cast<int>(through.size() + refused.size() + undecided.size());
  std::printf(
      "%d of %d registry ops lower on cpu directly, %zu more through "
      "decompose\n",
      n, m, through.size());
  std::printf("lower (%d):\n", n);
  for (const std::string& t : lowered) std::printf("  %s\n", t.c_str());
  std::printf("lower through decompose (%zu):\n", through.size());
  for (const std::string& t : through) std::printf("  %s\n", t.c_str());
  std::printf("refused (%zu):\n", refused.size());
  for (const std::string& t : refused) std::printf("  %s\n", t.c_str());
  EXPECT_GE(n, kFloor) << "fewer registry ops lower than the floor; a "
                          "lowering was lost (or the floor needs lowering "
                          "with a reason)";
  for (const std::string& t : undecided) {
    ADD_FAILURE() << t
                  << " neither lowers, decomposes nor is refused: give it a "
                     "rule in codegen/lower/ or a Refuse(Op(...), reason)";
  }
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

// The graph builtins (getitem, the grad-mode switch) are registry ops that
// lower by their rules in the table, as any op does.
TEST(LoweringCoverageTest, GraphBuiltinsLowerByTableRules) {
  for (const char* target : {"getitem", "torch._C._set_grad_enabled"}) {
    const ir::OpDef* op = ir::OpRegistry::Global().Find(target);
    ASSERT_NE(op, nullptr) << target;
    EXPECT_TRUE(op->HasTag(ir::OpTag::kBuiltin)) << target;
    EXPECT_TRUE(HasLowering(*op)) << target;
  }
}

}  // namespace
}  // namespace lathe::codegen
