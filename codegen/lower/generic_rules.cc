// The rules that follow from an op's properties rather than its name,
// added for every registry op that has no rule of its own: a scatter that
// writes back a view's elements, a view, a metadata mutator (t_, set_, ...),
// copy_, an in-place or out= overload whose functional twin has a rule, and
// a number-valued op (sym_size, x.item()).

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "ir/known_ops.h"
#include "ir/op_registry.h"
#include "status_macros.h"

namespace lathe::codegen::lower {
namespace {

const OpDef* FunctionalTwin(const OpDef& op) {
  if (op.functional.empty()) return nullptr;
  return ir::OpRegistry::Global().Find(op.functional);
}

bool IsMetadataMutator(const OpDef* op) {
  const ir::KnownOps& k = ir::Known();
  return op == k.t_ || op == k.transpose_ || op == k.unsqueeze_ ||
         op == k.as_strided_ || op == k.set_;
}

// A number-valued op: its one result a SymInt, Scalar or int.
bool IsNumberValued(const OpDef& op) {
  const std::vector<ir::Return>& returns = op.schema.returns;
  return returns.size() == 1 && !returns[0].type.is_list &&
         (returns[0].type.base == ir::BaseType::kSymInt ||
          returns[0].type.base == ir::BaseType::kScalar ||
          returns[0].type.base == ir::BaseType::kInt);
}

// t_, transpose_, unsqueeze_, as_strided_: the view their functional twin
// makes; set_: source itself. As in the interpreter, the tensor object
// (self and the in-place results that returned it) takes the new value for
// the nodes after this one.
absl::StatusOr<NodeValue> LowerMetadataMutator(Lowerer& L, const Call& c) {
  NodeValue v;
  if (&c.op() == ir::Known().set_) {
    Node* source = c.NodeAt(1);
    if (source == nullptr) return c.Error("the source is not a tensor");
    v = L.value(source);
  } else {
    ASSIGN_OR_RETURN(v, LowerView(L, c));
  }
  L.RebindTensorObject(*c.NodeAt(0), c.node(), v);
  return v;
}

// An in-place or out= overload: the functional twin computes the value
// (copy_, `twin` null: src is the value); it is stored into the written
// argument (self, or out=).
LowerFn StoreThroughTwin(LowerFn twin) {
  return [twin](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    int target_arg = 0;
    if (c.op().HasTag(ir::OpTag::kOut)) target_arg = c.Index("out");
    Node* target = c.NodeAt(target_arg);
    if (target == nullptr)
      return c.Error("the written argument is not a tensor");
    TBox value;
    if (twin == nullptr) {
      ASSIGN_OR_RETURN(value, L.Tensor(c, 1));
    } else {
      ASSIGN_OR_RETURN(NodeValue fv, twin(L, c));
      if (fv.kind != NodeValue::Kind::kTensor) {
        return c.Error("the functional twin's result is not one tensor");
      }
      value = fv.t;
    }
    RETURN_IF_ERROR(L.RealizeNode(target));
    TBox dst = L.value(target).t;
    RETURN_IF_ERROR(L.WriteInto(&c.node(), dst, value));
    // The result is the written tensor, in memory.
    NodeValue v;
    v.kind = NodeValue::Kind::kTensor;
    v.t = dst;
    v.t.reads = {dst.buffer};
    return v;
  };
}

}  // namespace

void RegisterGenericRules(LoweringTable& T) {
  const ir::OpRegistry& registry = ir::OpRegistry::Global();
  std::vector<const OpDef*> ops;
  for (const std::string& target : registry.Targets()) {
    ops.push_back(registry.Find(target));
  }
  // In-place and out= overloads whose twin has a rule of its own (a twin
  // that lowers only by the rules below does not count).
  std::vector<std::pair<const OpDef*, LowerFn>> twins;
  for (const OpDef* op : ops) {
    if (T.Find(*op) != nullptr ||
        !(op->HasTag(ir::OpTag::kInplace) || op->HasTag(ir::OpTag::kOut))) {
      continue;
    }
    const OpDef* twin = FunctionalTwin(*op);
    const LowerFn* rule = twin != nullptr ? T.Find(*twin) : nullptr;
    if (rule != nullptr) twins.emplace_back(op, *rule);
  }
  for (const OpDef* op : ops) {
    if (T.Find(*op) != nullptr || T.Refusal(*op) != nullptr) continue;
    if (!op->scattered_view.empty()) {
      T.Add(op, LowerScatter);
    } else if (op->HasTag(ir::OpTag::kView)) {
      T.Add(op, LowerView);
    } else if (IsMetadataMutator(op)) {
      T.Add(op, LowerMetadataMutator);
    } else if (op == ir::Known().copy_) {
      T.Add(op, StoreThroughTwin(nullptr));
    } else if (IsNumberValued(*op)) {
      // Lowerer::LowerNode lowers a number-valued node before the table.
      T.Add(op,
            [](Lowerer& L, const Call& c) { return L.LowerNumber(c.node()); });
    }
  }
  for (auto& [op, rule] : twins) {
    if (T.Find(*op) == nullptr) T.Add(op, StoreThroughTwin(std::move(rule)));
  }
}

}  // namespace lathe::codegen::lower
