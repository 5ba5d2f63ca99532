#include "passes/functional_invariant.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/op_registry.h"

namespace lathe::passes {

namespace {

absl::Status Fail(const ir::Node& n, absl::string_view why) {
  return absl::FailedPreconditionError(
      absl::StrCat("node '", n.name(), "': ", why));
}

}  // namespace

absl::Status CheckFunctional(const ir::Graph& graph) {
  absl::flat_hash_set<std::pair<const ir::Node*, std::string>> written;
  const ir::Node* epilogue_start = nullptr;
  for (const auto& node : graph.nodes()) {
    const ir::Node& n = *node;
    if (n.kind() != ir::Node::Kind::kCall) continue;
    const char* kind = ir::EpilogueKind(n);
    if (kind == nullptr) {  // must be functional, and before the epilogue
      if (!ir::IsPythonOp(n.target())) {
        const ir::OpDef* op = n.op();
        if (op == nullptr) {
          return Fail(n, absl::StrCat("unknown op ", n.target()));
        }
        for (const ir::Argument& a : op->schema.arguments) {
          if (a.is_written()) {
            return Fail(
                n, absl::StrCat(n.target(), " writes its argument '", a.name,
                                "'; only the copy_/set_/as_strided_ "
                                "epilogue may mutate"));
          }
        }
      }
      if (epilogue_start != nullptr) {
        return Fail(n, absl::StrCat("comes after the epilogue started at '",
                                    epilogue_start->name(), "'"));
      }
      continue;
    }
    if (epilogue_start == nullptr) epilogue_start = &n;
    if (n.args().empty() || n.args()[0].kind != ir::Arg::Kind::kNode ||
        n.args()[0].node->kind() != ir::Node::Kind::kPlaceholder) {
      return Fail(n, absl::StrCat(n.target(), " must write a graph input"));
    }
    const ir::Node* input = n.args()[0].node;
    if (!written.insert({input, kind}).second) {
      return Fail(
          n, absl::StrCat("input '", input->name(), "' gets a second ", kind,
                          " mutation; each input is written at most "
                          "once"));
    }
  }
  return absl::OkStatus();
}

}  // namespace lathe::passes
