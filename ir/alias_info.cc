#include "ir/alias_info.h"

#include "ir/known_ops.h"
#include "ir/op_registry.h"

namespace lathe::ir {

namespace {

const OpDef* OpOf(const Node& n) {
  return n.kind() == Node::Kind::kCall ? n.op() : nullptr;
}

}  // namespace

bool IsInplace(const Node& n) {
  const OpDef* op = OpOf(n);
  return op != nullptr && !op->schema.arguments.empty() &&
         op->schema.arguments[0].is_written() && !n.args().empty() &&
         n.args()[0].kind == Arg::Kind::kNode;
}

bool IsView(const Node& n) {
  if (n.kind() != Node::Kind::kCall || n.args().empty() ||
      n.args()[0].kind != Arg::Kind::kNode) {
    return false;
  }
  const OpDef* op = OpOf(n);
  if (op == Known().getitem) return IsView(*n.args()[0].node);
  // A return aliasing a written argument (an out= overload's `out`) is
  // that argument, not a view of the first.
  return op != nullptr && !IsInplace(n) && !op->schema.returns.empty() &&
         op->schema.returns[0].alias.has_value() &&
         !op->schema.returns[0].alias->is_write;
}

const Node* TensorObject(const Node& n) {
  const Node* at = &n;
  while (IsInplace(*at)) at = at->args()[0].node;
  return at;
}

bool MutatesMetadata(const Node& n) {
  const KnownOps& k = Known();
  const OpDef* op = n.op();
  return op != nullptr &&
         (op == k.t_ || op == k.transpose_ || op == k.unsqueeze_ ||
          op == k.as_strided_ || op == k.set_);
}

const char* EpilogueKind(const Node& n) {
  const KnownOps& k = Known();
  const OpDef* op = n.op();
  if (op == nullptr) return nullptr;
  if (op == k.copy_) return "data";
  if (op == k.set_) return "storage";
  if (op == k.as_strided_) return "metadata";
  return nullptr;
}

}  // namespace lathe::ir
