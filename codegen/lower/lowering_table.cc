#include "codegen/lower/lowering_table.h"

#include <string>
#include <utility>

#include "check.h"
#include "ir/op_registry.h"

namespace lathe::codegen::lower {

void LoweringTable::Add(const ir::OpDef* op, LowerFn fn) {
  LATHE_CHECK(op != nullptr);
  LATHE_CHECK(!refused_.contains(op)) << op->target << " is refused";
  bool added = rules_.emplace(op, std::move(fn)).second;
  LATHE_CHECK(added) << op->target << " has two lowering rules";
}

void LoweringTable::Refuse(const ir::OpDef* op, std::string reason) {
  LATHE_CHECK(op != nullptr);
  LATHE_CHECK(!reason.empty()) << op->target << ": a refusal needs a reason";
  LATHE_CHECK(!rules_.contains(op)) << op->target << " has a lowering rule";
  refused_[op] = std::move(reason);
}

const LowerFn* LoweringTable::Find(const ir::OpDef& op) const {
  auto it = rules_.find(&op);
  return it == rules_.end() ? nullptr : &it->second;
}

const std::string* LoweringTable::Refusal(const ir::OpDef& op) const {
  auto it = refused_.find(&op);
  return it == refused_.end() ? nullptr : &it->second;
}

const ir::OpDef* Op(absl::string_view target) {
  const ir::OpDef* op = ir::OpRegistry::Global().Find(target);
  LATHE_CHECK(op != nullptr) << "the lowering table names " << target
                             << ", which is not a registry op";
  return op;
}

const LoweringTable& Table() {
  static const LoweringTable* table = [] {
    auto* t = new LoweringTable();
    RegisterPointwise(*t);
    RegisterCreation(*t);
    RegisterReductions(*t);
    RegisterViews(*t);
    RegisterLayout(*t);
    RegisterIndexing(*t);
    RegisterNn(*t);
    RegisterLosses(*t);
    RegisterLinalg(*t);
    RegisterRandom(*t);
    RegisterDataDependent(*t);
    RegisterBuiltins(*t);
    RegisterGenericRules(*t);
    return t;
  }();
  return *table;
}

}  // namespace lathe::codegen::lower
