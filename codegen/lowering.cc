#include "codegen/lowering.h"

#include <string>
#include <vector>

#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "ir/op_registry.h"

namespace lathe::codegen {

absl::StatusOr<LoweredGraph> Lower(const ir::Graph& graph,
                                   symbolic::ShapeEnv& env, Routines routines) {
  lower::Lowerer l(graph, env, routines);
  absl::StatusOr<LoweredGraph> lowered = l.Run();
  if (lowered.ok()) lowered->routines = routines;
  return lowered;
}

bool HasLowering(const ir::OpDef& op) {
  return lower::Table().Find(op) != nullptr;
}

std::vector<LoweringStatus> LoweringTableStatus() {
  const lower::LoweringTable& table = lower::Table();
  const ir::OpRegistry& registry = ir::OpRegistry::Global();
  std::vector<LoweringStatus> out;
  for (const std::string& target : registry.Targets()) {
    LoweringStatus s;
    s.op = registry.Find(target);
    if (table.Find(*s.op) != nullptr) {
      s.kind = LoweringStatus::Kind::kLowered;
    } else if (const std::string* reason = table.Refusal(*s.op)) {
      s.kind = LoweringStatus::Kind::kRefused;
      s.reason = *reason;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace lathe::codegen
