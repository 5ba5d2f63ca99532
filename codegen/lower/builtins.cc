// The graph builtins' lowering rules: getitem takes an element of a tuple
// value (a multi-output op's lowered results), and the grad-mode switch
// (torch._C._set_grad_enabled) has no value. Lowerer::LowerNode applies a
// builtin's rule alone, without a tensor op's element checks and
// realization.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "ir/known_ops.h"

namespace lathe::codegen::lower {
namespace {

// getitem(tuple, i): the tuple's element i.
absl::StatusOr<NodeValue> LowerGetitem(Lowerer& L, const Call& c) {
  const Node& n = c.node();
  const NodeValue& t = L.value(n.args()[0].node);
  int64_t i = n.args()[1].i;
  if (t.kind != NodeValue::Kind::kTuple || i < 0 ||
      i >= static_cast<int64_t>(t.elements.size())) {
    return absl::UnimplementedError(
        absl::StrCat("node '", n.name(), "': getitem of a non-tuple"));
  }
  return t.elements[i];
}

// torch._C._set_grad_enabled(mode): no effect on values.
absl::StatusOr<NodeValue> LowerSetGradEnabled(Lowerer&, const Call&) {
  return NodeValue();
}

}  // namespace

void RegisterBuiltins(LoweringTable& T) {
  T.Add(ir::Known().getitem, LowerGetitem);
  T.Add(ir::Known().set_grad_enabled, LowerSetGradEnabled);
}

}  // namespace lathe::codegen::lower
