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
  for (const ir::Node* p : graph.Placeholders()) aot.names.push_back(p->name());
  if (graph.meta_inference() == nullptr) {
    return absl::FailedPreconditionError(
        "AOT dispatch needs a shape-propagated graph (ir::PropagateShapes)");
  }
  ASSIGN_OR_RETURN(aot.signature, FlattenComposites(graph));
  ASSIGN_OR_RETURN(aot.subclass,
                   SubclassWrapperPlan::Build(aot.signature.arguments,
                                              aot.signature.results));
  ASSIGN_OR_RETURN(aot.meta,
                   CollectViewAndMutationMeta(graph, options.mutations));
  RETURN_IF_ERROR(Functionalize(graph, env).status());
  ASSIGN_OR_RETURN(aot.plan, BuildRuntimeWrapperPlan(graph, aot.meta));
  return aot;
}

absl::StatusOr<ir::Interpretation> InterpretWithPlan(
    const ir::Graph& graph, const RuntimeWrapperPlan& plan,
    std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    const GraphRunner& runner) {
  ASSIGN_OR_RETURN(ir::Interpretation r,
                   runner ? runner(graph, inputs, constants)
                          : ir::Interpret(graph, inputs, constants));
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

absl::StatusOr<Operand> OperandOf(const ir::Value& v) {
  if (v.is_tensor()) return Operand::Of(v.tensor);
  if (!v.is_number()) return Operand();
  if (v.number.is_bool()) {
    ASSIGN_OR_RETURN(bool b, v.AsBool());
    return Operand::Bool(b);
  }
  if (v.number.is_int()) {
    ASSIGN_OR_RETURN(int64_t i, v.AsInt());
    return Operand::Int(i);
  }
  ASSIGN_OR_RETURN(double f, v.AsDouble());
  return Operand::Float(f);
}

ir::Value ValueOf(const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::kTensor:
      return ir::Value::OfTensor(o.tensor);
    case Operand::Kind::kInt:
      return ir::Value::Int(o.i);
    case Operand::Kind::kFloat:
      return ir::Value::Float(o.f);
    case Operand::Kind::kBool:
      return ir::Value::Bool(o.b);
    case Operand::Kind::kNone:
    case Operand::Kind::kComposite:
      break;
  }
  return ir::Value::None();
}

std::vector<bool> WrittenArguments(
    const std::vector<CompositeLayout>& arguments,
    const std::vector<bool>& mutated_inputs) {
  std::vector<bool> written;
  size_t slot = 0;
  for (const CompositeLayout& l : arguments) {
    bool any = false;
    for (int k = 0, n = l.Slots(/*argument=*/true); k < n; ++k, ++slot) {
      any = any || (slot < mutated_inputs.size() && mutated_inputs[slot]);
    }
    written.push_back(any);
  }
  return written;
}

UserCall UserCallOf(const std::vector<CompositeLayout>& arguments,
                    std::vector<Operand> args,
                    const std::vector<bool>& mutated_inputs,
                    const absl::flat_hash_map<int, ir::Value>& rebound,
                    std::vector<Operand> results) {
  UserCall call;
  call.results = std::move(results);
  call.mutated = WrittenArguments(arguments, mutated_inputs);
  size_t slot = 0;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const CompositeLayout& l = arguments[i];
    int n = l.Slots(/*argument=*/true);
    auto it = rebound.find(static_cast<int>(slot));
    if (l.type == nullptr && it != rebound.end() && it->second.is_tensor()) {
      call.arguments.push_back(Operand::Of(it->second.tensor));
    } else {
      call.arguments.push_back(std::move(args[i]));
    }
    slot += n;
  }
  return call;
}

absl::StatusOr<UserCall> InterpretAsUser(
    const ir::Graph& graph, const AotGraph& aot, std::vector<Operand> args,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    const GraphRunner& runner, const PlannedRunner& planned,
    const UserRunner& user) {
  if (user) return user(std::move(args), constants);
  ASSIGN_OR_RETURN(std::vector<Operand> dense, aot.subclass.Unwrap(args));
  std::vector<ir::Value> inputs;
  for (const Operand& o : dense) inputs.push_back(ValueOf(o));
  ASSIGN_OR_RETURN(
      ir::Interpretation r,
      planned ? planned(inputs, constants)
              : InterpretWithPlan(graph, aot.plan, inputs, constants, runner));
  std::vector<Operand> outs;
  for (const ir::Value& v : r.outputs) {
    ASSIGN_OR_RETURN(Operand o, OperandOf(v));
    outs.push_back(std::move(o));
  }
  ASSIGN_OR_RETURN(std::vector<Operand> results,
                   aot.subclass.Rewrap(std::move(outs)));
  // Dense inputs back to user arguments: each plain one takes its slot's
  // value after the call (the same tensor unless set_ / as_strided_ rebound
  // it).
  absl::flat_hash_map<int, ir::Value> after;
  size_t slot = 0;
  for (const CompositeLayout& l : aot.signature.arguments) {
    if (l.type == nullptr && slot < inputs.size()) {
      after[static_cast<int>(slot)] = inputs[slot];
    }
    slot += l.Slots(/*argument=*/true);
  }
  return UserCallOf(aot.signature.arguments, std::move(args), r.mutated_inputs,
                    after, std::move(results));
}

absl::Status CheckUserArguments(const SubclassWrapperPlan& subclass,
                                const std::vector<ir::InputSlot>& slots,
                                absl::Span<const Operand> args,
                                absl::Span<const ir::Value> constants) {
  ASSIGN_OR_RETURN(std::vector<Operand> dense, subclass.Unwrap(args));
  std::vector<ir::Value> values;
  values.reserve(dense.size());
  for (const Operand& o : dense) values.push_back(ValueOf(o));
  std::vector<const ir::Value*> inputs;
  for (const ir::Value& v : values) inputs.push_back(&v);
  for (const ir::Value& v : constants) inputs.push_back(&v);
  return ir::CheckInputs(slots, inputs);
}

}  // namespace lathe::aot
