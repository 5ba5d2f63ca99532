#include "aot/aot_dispatch.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aot/functionalize.h"
#include "status_macros.h"

namespace lathe::aot {

absl::StatusOr<AotGraph> AotDispatch(ir::Graph& graph, symbolic::ShapeEnv& env,
                                     const AotOptions& options) {
  AotGraph aot;
  ASSIGN_OR_RETURN(aot.meta,
                   CollectViewAndMutationMeta(graph, env, options.mutations));
  RETURN_IF_ERROR(Functionalize(graph, env, options.shapes).status());
  ASSIGN_OR_RETURN(aot.plan, BuildRuntimeWrapperPlan(graph, aot.meta));
  return aot;
}

absl::StatusOr<ir::Interpretation> InterpretWithPlan(
    const ir::Graph& graph, const RuntimeWrapperPlan& plan,
    std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants) {
  ASSIGN_OR_RETURN(ir::Interpretation r,
                   ir::Interpret(graph, inputs, constants));
  std::vector<Tensor> in(inputs.size()), fw(r.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tensor()) in[i] = inputs[i].tensor;
  }
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    if (r.outputs[k].is_tensor()) fw[k] = r.outputs[k].tensor;
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, plan.Run(absl::MakeSpan(in), fw));
  for (const EpilogueStep& s : plan.epilogue()) {
    r.mutated_inputs[s.input] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tensor()) inputs[i].tensor = in[i];
  }
  std::vector<ir::Value> user;
  for (size_t k = 0; k < outs.size(); ++k) {
    const OutputStep& s = plan.outputs()[k];
    if (s.kind == OutputStep::Kind::kGraphOutput &&
        !r.outputs[s.source].is_tensor()) {
      user.push_back(r.outputs[s.source]);  // a number or None
    } else {
      user.push_back(ir::Value::OfTensor(std::move(outs[k])));
    }
  }
  r.outputs = std::move(user);
  return r;
}

}  // namespace lathe::aot
