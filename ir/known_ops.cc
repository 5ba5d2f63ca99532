#include "ir/known_ops.h"

#include "check.h"

namespace lathe::ir {

const KnownOps& Known() {
  static const KnownOps* known = [] {
    auto op = [](absl::string_view target) {
      const OpDef* def = OpRegistry::Global().Find(target);
      LATHE_CHECK(def != nullptr) << "known op " << target << " not registered";
      return def;
    };
    auto* k = new KnownOps;
    k->alias = op("aten.alias.default");
    k->as_strided = op("aten.as_strided.default");
    k->as_strided_ = op("aten.as_strided_.default");
    k->as_strided_scatter = op("aten.as_strided_scatter.default");
    k->clone = op("aten.clone.default");
    k->copy_ = op("aten.copy_.default");
    k->detach = op("aten.detach.default");
    k->diagonal = op("aten.diagonal.default");
    k->diagonal_scatter = op("aten.diagonal_scatter.default");
    k->getitem = op("getitem");
    k->local_scalar_dense = op("aten._local_scalar_dense.default");
    k->mul = op("aten.mul.Tensor");
    k->permute = op("aten.permute.default");
    k->reshape = op("aten.reshape.default");
    k->scalar_tensor = op("aten.scalar_tensor.default");
    k->select = op("aten.select.int");
    k->select_scatter = op("aten.select_scatter.default");
    k->set_ = op("aten.set_.source_Tensor");
    k->set_grad_enabled = op("torch._C._set_grad_enabled");
    k->slice = op("aten.slice.Tensor");
    k->slice_scatter = op("aten.slice_scatter.default");
    k->split = op("aten.split.Tensor");
    k->split_with_sizes = op("aten.split_with_sizes.default");
    k->squeeze_dim = op("aten.squeeze.dim");
    k->sym_size = op("aten.sym_size.int");
    k->sym_stride = op("aten.sym_stride.int");
    k->t = op("aten.t.default");
    k->t_ = op("aten.t_.default");
    k->to_copy = op("aten._to_copy.default");
    k->transpose = op("aten.transpose.int");
    k->transpose_ = op("aten.transpose_.default");
    k->unbind = op("aten.unbind.int");
    k->unsafe_view = op("aten._unsafe_view.default");
    k->unsqueeze = op("aten.unsqueeze.default");
    k->unsqueeze_ = op("aten.unsqueeze_.default");
    k->view = op("aten.view.default");
    return k;
  }();
  return *known;
}

}  // namespace lathe::ir
