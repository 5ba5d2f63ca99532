// The graph builtins: calls FX graphs make that are not ATen ops, registered
// (OpTag::kBuiltin) so that each of their nodes has an OpDef like any call.
// getitem is x[i] of a tuple or list value (a multi-output op's result);
// torch._C._set_grad_enabled is Dynamo's grad-mode switch, which has no
// effect on values (view_and_mutation_meta reads it) and is kept by
// dead-code elimination (OpTag::kSideEffect). One function each is both
// meta function and kernel: both work on metadata and tensors alike.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/value.h"
#include "status_macros.h"

namespace lathe::ir {
namespace {

// getitem(Any self, int index) -> Any: element `index` of a tuple or list
// (negative counts from the end).
absl::StatusOr<Value> GetItem(const OpCall& call) {
  const Value& self = call.arg(0);
  absl::StatusOr<int64_t> index = call.arg(1).AsInt();
  int64_t size = static_cast<int64_t>(self.list.size());
  if (!index.ok() || self.kind != Value::Kind::kList || *index < -size ||
      *index >= size) {
    return absl::InvalidArgumentError(absl::StrCat("cannot index ",
                                                   self.DebugString(), " with ",
                                                   call.arg(1).DebugString()));
  }
  return self.list[*index < 0 ? *index + size : *index];
}

// _set_grad_enabled(bool mode) -> (): grad mode only matters to autograd
// metadata; on values it is a no-op.
absl::StatusOr<Value> SetGradEnabled(const OpCall&) { return Value::None(); }

}  // namespace

absl::Status RegisterBuiltinOps(OpRegistry& r) {
  RETURN_IF_ERROR(
      r.AddBuiltin("getitem", "getitem(Any self, int index) -> Any", GetItem));
  RETURN_IF_ERROR(r.AddBuiltin("torch._C._set_grad_enabled",
                               "_set_grad_enabled(bool mode) -> ()",
                               SetGradEnabled));
  return r.Tag("torch._C._set_grad_enabled", OpTag::kSideEffect);
}

}  // namespace lathe::ir
