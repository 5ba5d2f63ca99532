#include "ir/known_ops.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace lathe::ir {
namespace {

// Each member is the op its name says (a swapped line would pass silently
// at every comparison otherwise).
TEST(KnownOpsTest, EachMemberIsItsOp) {
  const KnownOps& k = Known();
  std::vector<std::pair<const OpDef*, std::string>> want = {
      {k.alias, "aten.alias.default"},
      {k.as_strided, "aten.as_strided.default"},
      {k.as_strided_, "aten.as_strided_.default"},
      {k.as_strided_scatter, "aten.as_strided_scatter.default"},
      {k.clone, "aten.clone.default"},
      {k.copy_, "aten.copy_.default"},
      {k.detach, "aten.detach.default"},
      {k.diagonal, "aten.diagonal.default"},
      {k.diagonal_scatter, "aten.diagonal_scatter.default"},
      {k.getitem, "getitem"},
      {k.local_scalar_dense, "aten._local_scalar_dense.default"},
      {k.mul, "aten.mul.Tensor"},
      {k.permute, "aten.permute.default"},
      {k.reshape, "aten.reshape.default"},
      {k.scalar_tensor, "aten.scalar_tensor.default"},
      {k.select, "aten.select.int"},
      {k.select_scatter, "aten.select_scatter.default"},
      {k.set_, "aten.set_.source_Tensor"},
      {k.set_grad_enabled, "torch._C._set_grad_enabled"},
      {k.slice, "aten.slice.Tensor"},
      {k.slice_scatter, "aten.slice_scatter.default"},
      {k.split, "aten.split.Tensor"},
      {k.split_with_sizes, "aten.split_with_sizes.default"},
      {k.squeeze_dim, "aten.squeeze.dim"},
      {k.sym_size, "aten.sym_size.int"},
      {k.sym_stride, "aten.sym_stride.int"},
      {k.t, "aten.t.default"},
      {k.t_, "aten.t_.default"},
      {k.to_copy, "aten._to_copy.default"},
      {k.transpose, "aten.transpose.int"},
      {k.transpose_, "aten.transpose_.default"},
      {k.unbind, "aten.unbind.int"},
      {k.unsafe_view, "aten._unsafe_view.default"},
      {k.unsqueeze, "aten.unsqueeze.default"},
      {k.unsqueeze_, "aten.unsqueeze_.default"},
      {k.view, "aten.view.default"},
  };
  EXPECT_EQ(want.size() * sizeof(const OpDef*), sizeof(KnownOps))
      << "a member is missing from this test";
  for (const auto& [op, target] : want) {
    ASSERT_NE(op, nullptr) << target;
    EXPECT_EQ(op->target, target);
  }
}

// The view ops and the scatters that write their elements back name each
// other (functionalize, decompose and reinplace all read these pairs).
TEST(KnownOpsTest, ViewsAndTheirScattersArePaired) {
  const KnownOps& k = Known();
  for (const auto& [view, scatter] :
       std::vector<std::pair<const OpDef*, const OpDef*>>{
           {k.slice, k.slice_scatter},
           {k.select, k.select_scatter},
           {k.diagonal, k.diagonal_scatter},
           {k.as_strided, k.as_strided_scatter}}) {
    EXPECT_EQ(view->scatter, scatter->target);
    EXPECT_EQ(scatter->scattered_view, view->target);
  }
  EXPECT_TRUE(k.view->scatter.empty());
  EXPECT_TRUE(k.t->scatter.empty());
}

}  // namespace
}  // namespace lathe::ir
