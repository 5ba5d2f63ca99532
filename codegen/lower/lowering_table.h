// -----------------------------------------------------------------------------
// File: lowering_table.h
// -----------------------------------------------------------------------------
//
// The lowering table (internal to //codegen:lowering): for each registry op,
// keyed by its OpDef, the rule that lowers a call of it, or the reason it is
// refused. Each op family registers its rules in its own file
// (RegisterPointwise in pointwise.cc, ...); then RegisterGenericRules adds
// the rules that follow from an op's properties (views, scatters, metadata
// mutators, in-place and out= overloads through their functional twin,
// number-valued ops). Ops are named through Op(), which CHECK-fails on a
// target the registry does not have, so a misspelled registration fails the
// first lowering of any program.
//
// Example (in a family file):
//
//   void RegisterPointwise(LoweringTable& T) {
//     T.Add(Op("aten.where.self"), WhereFn(0, 1, 2));
//   }
//   ...
//   const LowerFn* rule = Table().Find(*node.op());

#ifndef LATHE_CODEGEN_LOWER_LOWERING_TABLE_H_
#define LATHE_CODEGEN_LOWER_LOWERING_TABLE_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/lower/call.h"
#include "codegen/lower/lowerer.h"
#include "ir/op_registry.h"

namespace lathe::codegen::lower {

// How a call of one op lowers: its value, built through the Lowerer.
using LowerFn = std::function<absl::StatusOr<NodeValue>(Lowerer&, const Call&)>;

class LoweringTable {
 public:
  // Add()
  //
  // Says that `fn` lowers `op`; a second rule for one op is a CHECK failure.
  void Add(const ir::OpDef* op, LowerFn fn);

  // Refuse()
  //
  // Says that `op` does not lower, and why (printed by the coverage test).
  void Refuse(const ir::OpDef* op, std::string reason);

  // Find()
  //
  // The rule for `op`, or null.
  const LowerFn* Find(const ir::OpDef& op) const;

  // Refusal()
  //
  // The reason `op` is refused, or null.
  const std::string* Refusal(const ir::OpDef& op) const;

 private:
  absl::flat_hash_map<const ir::OpDef*, LowerFn> rules_;
  absl::flat_hash_map<const ir::OpDef*, std::string> refused_;
};

// Op()
//
// The registry's op for `target`; a target the registry does not have is a
// CHECK failure.
const ir::OpDef* Op(absl::string_view target);

// Table()
//
// The table, built on first use (thread-safe) and never changed after.
const LoweringTable& Table();

// Registration functions, one per op family (the file of the same name).
void RegisterPointwise(LoweringTable& T);
void RegisterCreation(LoweringTable& T);
void RegisterReductions(LoweringTable& T);
void RegisterViews(LoweringTable& T);
void RegisterLayout(LoweringTable& T);
void RegisterIndexing(LoweringTable& T);
void RegisterNn(LoweringTable& T);
void RegisterLosses(LoweringTable& T);
void RegisterLinalg(LoweringTable& T);
void RegisterRandom(LoweringTable& T);
void RegisterDataDependent(LoweringTable& T);
// The graph builtins (builtins.cc): getitem, the grad-mode switch.
void RegisterBuiltins(LoweringTable& T);
// After every family (generic_rules.cc): the rules that follow from an op's
// properties, for each op that has no rule yet, and the refusals.
void RegisterGenericRules(LoweringTable& T);

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_LOWERING_TABLE_H_
