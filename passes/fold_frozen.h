// -----------------------------------------------------------------------------
// File: fold_frozen.h
// -----------------------------------------------------------------------------
//
// fold_frozen: what freezing (driver/freeze.h) lets the compiler compute
// before any call, as Inductor's freezing passes do. A no-op unless the
// PassContext holds frozen values.
//
// 1. Batch norm in evaluation (native_batch_norm with training=False,
//    _native_batch_norm_legit_no_training, _native_batch_norm_legit with
//    training=False) of a convolution's result, where the convolution is
//    not transposed, nothing else reads its result, only the normalized
//    output is used, and the weights, biases and running statistics are all
//    frozen, is folded into the convolution (fuse_conv_bn_weights):
//      scale = bn_weight / sqrt(running_var + eps)
//      weight' = weight * scale (per output channel)
//      bias' = (bias - running_mean) * scale + bn_bias
//    computed in double and rounded once, f32 and f64 only.
// 2. A call whose every tensor argument is a frozen constant (and whose
//    other arguments are literals) is computed by the op's reference kernel
//    and becomes a frozen constant itself, unless it is a view (free, and
//    what reads its base's storage must keep reading it), has an effect,
//    draws random numbers, or would hold more bytes than its arguments
//    together.
//
// Each new constant is a get_attr named after the node it replaces, listed
// in attributes().constants, its value in PassContext::frozen(); what only
// the folded nodes used goes with the next dce.
//
// Example (w, b, m, v, g, bb frozen):
//   conv = convolution(x, w, None, ...); bn = native_batch_norm(conv, g,
//   bb, m, v, False, 0.1, 1e-05); y = getitem(bn, 0)
// becomes
//   conv_folded = convolution(x, self.conv_weight, self.conv_bias, ...)

#ifndef LATHE_PASSES_FOLD_FROZEN_H_
#define LATHE_PASSES_FOLD_FROZEN_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

class FoldFrozen : public Pass {
 public:
  absl::string_view name() const override { return "fold_frozen"; }
  absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) override;
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_FOLD_FROZEN_H_
