#include "codegen/cpp/cpu_function.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "runtime/copy.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::codegen {

namespace {

// A user result laid out as `l`, each plain value with the rank the next
// of `ranks` (the library's own) gives.
CompositeLayout WithRanks(CompositeLayout l, const std::vector<int>& ranks,
                          size_t* next) {
  if (l.is_plain()) {
    l.rank = ranks[(*next)++];
    return l;
  }
  for (CompositeLayout& inner : l.inner) {
    inner = WithRanks(std::move(inner), ranks, next);
  }
  return l;
}

}  // namespace

CpuFunction::~CpuFunction() {
  if (!temp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir_, ec);
  }
}

absl::StatusOr<std::unique_ptr<CpuFunction>> CpuFunction::Load(
    const ir::Graph& graph, Parts parts) {
  std::unique_ptr<CpuFunction> f(new CpuFunction());
  // Owned from here: the temporary directory goes with the function.
  f->temp_dir_ = std::move(parts.temp_dir);
  f->lowered_ = std::move(parts.lowered);
  f->source_ = std::move(parts.source);
  f->unscheduled_ = std::move(parts.unscheduled);
  f->scheduled_ = std::move(parts.scheduled);
  f->fusion_dot_ = std::move(parts.fusion_dot);
  f->built_ = std::move(parts.built);
  f->stats_ = std::move(parts.stats);
  f->slots_ = ir::InputSlots(graph);
  const std::vector<std::string>& all = f->lowered_.constants;
  f->constants_.assign(all.begin(), all.end() - f->lowered_.frozen_constants);
  std::vector<Tensor> frozen;
  for (auto it = all.end() - f->lowered_.frozen_constants; it != all.end();
       ++it) {
    auto v = parts.frozen.find(*it);
    if (v == parts.frozen.end() || !v->second.is_tensor()) {
      return absl::InternalError(
          absl::StrCat("no value for the frozen constant '", *it, "'"));
    }
    f->frozen_[*it] = v->second;
    frozen.push_back(v->second.tensor);
  }
  LATHE_CHECK(f->slots_.size() == f->lowered_.input_buffers.size())
      << "lowering's inputs are the placeholders, then the constants";
  const WrapperSource& wrapper = parts.host;
  f->host_checks_ = wrapper.host_checks;
  f->plan_applied_ = wrapper.plan_applied;
  f->plan_error_ = wrapper.plan_error;
  f->user_entry_error_ = wrapper.user_entry_error;
  if (wrapper.user_entry) f->subclass_ = *parts.subclass;
  f->rebound_inputs_ = wrapper.rebound_inputs;
  if (parts.plan != nullptr) {
    for (const aot::EpilogueStep& s : parts.plan->epilogue()) {
      f->epilogue_inputs_.push_back(s.input);
    }
  }
  f->writes_input_.assign(f->lowered_.input_buffers.size(), false);
  for (const Kernel& k : f->lowered_.program.kernels) {
    std::vector<int> written;
    for (const ScalarOp& op : k.ops) {
      if (op.kind == ScalarOp::Kind::kStore) written.push_back(op.buffer);
    }
    if (k.kind == Kernel::Kind::kExtern) {
      written.insert(written.end(), k.extern_buffers.begin(),
                     k.extern_buffers.begin() + k.extern_outputs);
    }
    for (int b : written) {
      const Buffer& buf = f->lowered_.program.buffers[b];
      if (buf.kind == Buffer::Kind::kInput) f->writes_input_[buf.input] = true;
    }
  }
  // A frozen constant is read-only for the function's life (its packed
  // form is kept): compiled code that writes one is the compiler's fault.
  const size_t first_frozen = f->writes_input_.size() -
                              static_cast<size_t>(f->lowered_.frozen_constants);
  for (size_t k = first_frozen; k < f->writes_input_.size(); ++k) {
    if (f->writes_input_[k]) {
      return absl::InternalError(absl::StrCat(
          "the compiled code writes the frozen constant '",
          f->lowered_.constants[k - (f->writes_input_.size() -
                                     f->lowered_.constants.size())],
          "'"));
    }
  }
  // The bytes the cache verified (or the compiler wrote), not the file,
  // hosted by the runtime's LoadedGraph like an artifact's.
  RETURN_IF_ERROR(KeepOpenMpLoaded());
  ASSIGN_OR_RETURN(SharedLibrary library,
                   SharedLibrary::OpenImage(f->built_.image, f->built_.path));
  f->built_.image = std::string();
  CallSignature signature;
  signature.checks = f->lowered_.program.checks;
  signature.guard_bounds = wrapper.guard_bounds;
  if (wrapper.user_entry) {
    size_t leaf = 0;
    for (const CompositeLayout& l : f->subclass_->result_layouts()) {
      signature.results.push_back(WithRanks(l, wrapper.output_ranks, &leaf));
    }
    // A rebound dense slot as the user argument it is (-1: an inner value
    // of a composite, which the caller does not rebind).
    std::vector<int> argument_of;
    const auto& arguments = f->subclass_->argument_layouts();
    for (size_t i = 0; i < arguments.size(); ++i) {
      int n = arguments[i].Slots(/*argument=*/true);
      for (int k = 0; k < n; ++k) {
        argument_of.push_back(
            arguments[i].type == nullptr && k == 0 ? static_cast<int>(i) : -1);
      }
    }
    for (int slot : f->rebound_inputs_) {
      signature.rebound_inputs.push_back(
          slot < static_cast<int>(argument_of.size()) ? argument_of[slot] : -1);
    }
    signature.rebound_ranks.assign(wrapper.output_ranks.begin() + leaf,
                                   wrapper.output_ranks.end());
  }
  std::shared_ptr<const DeviceKernels> device;
  if (parts.backend != nullptr) {
    ASSIGN_OR_RETURN(device, parts.backend->LoadDevice(f->built_, library));
  }
  f->built_.device_image = std::string();
  ASSIGN_OR_RETURN(f->loaded_, LoadedGraph::OpenGraph(
                                   std::move(library), std::move(signature),
                                   std::move(device), std::move(frozen)));
  f->user_entry_ = wrapper.user_entry && f->loaded_->has_user_entry();
  return f;
}

bool CpuFunction::Admits(absl::Span<const symbolic::GuardInput> inputs) const {
  return FailedGuard(inputs) == LATHE_GUARDS_HOLD;
}

int CpuFunction::FailedGuard(
    absl::Span<const symbolic::GuardInput> inputs) const {
  if (!loaded_->has_guards()) return LATHE_GUARDS_HOLD;
  std::vector<LatheValue> in(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const symbolic::GuardInput& g = inputs[k];
    LatheValue& c = in[k];
    switch (g.kind) {
      case symbolic::InputSpec::Kind::kTensor:
        c.kind = LATHE_VALUE_TENSOR;
        c.ndim = g.ndim;
        c.sizes = const_cast<int64_t*>(g.sizes);
        c.strides = const_cast<int64_t*>(g.strides);
        c.storage_offset = g.storage_offset;
        break;
      case symbolic::InputSpec::Kind::kInt:
        c.kind = LATHE_VALUE_INT;
        c.i = g.int_value;
        break;
      case symbolic::InputSpec::Kind::kFloat:
        c.kind = LATHE_VALUE_FLOAT;
        c.f = g.float_value;
        break;
      case symbolic::InputSpec::Kind::kBool:
        c.kind = LATHE_VALUE_BOOL;
        c.i = g.int_value;
        break;
      case symbolic::InputSpec::Kind::kNone:
        c.kind = LATHE_VALUE_NONE;
        break;
    }
  }
  return loaded_->FailedGuard(in.data(), static_cast<int64_t>(in.size()));
}

absl::StatusOr<std::vector<const ir::Value*>> CpuFunction::WithConstants(
    const std::vector<ir::Value>& given,
    const absl::flat_hash_map<std::string, ir::Value>& constants) const {
  const LoweredGraph& g = lowered_;
  size_t placeholders = g.input_buffers.size() - g.constants.size();
  if (given.size() != placeholders) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", placeholders, " inputs, got ", given.size()));
  }
  // Constants are the inputs after the placeholders; every one is checked
  // against its annotation before a kernel reads it.
  std::vector<const ir::Value*> inputs;
  for (const ir::Value& v : given) inputs.push_back(&v);
  for (const std::string& name : g.constants) {
    ASSIGN_OR_RETURN(const ir::Value* v, ConstantNamed(constants, name));
    inputs.push_back(v);
  }
  return inputs;
}

absl::StatusOr<const ir::Value*> CpuFunction::ConstantNamed(
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    const std::string& name) const {
  if (auto frozen = frozen_.find(name); frozen != frozen_.end()) {
    return &frozen->second;
  }
  auto it = constants.find(name);
  if (it == constants.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing constant 'self.", name, "'"));
  }
  return &it->second;
}

absl::StatusOr<std::vector<ir::Value>> CpuFunction::ConstantValues(
    const absl::flat_hash_map<std::string, ir::Value>& constants) const {
  std::vector<ir::Value> values;
  for (const std::string& name : lowered_.constants) {
    ASSIGN_OR_RETURN(const ir::Value* v, ConstantNamed(constants, name));
    values.push_back(*v);
  }
  return values;
}

absl::Status CpuFunction::CallError(
    int rc, const std::function<absl::Status()>& why_bad) const {
  if (rc == LATHE_CALL_BAD_INPUTS) {
    // The compiled check said no: the host's checker says why.
    RETURN_IF_ERROR(why_bad());
    return absl::InternalError(
        "the compiled input check refused inputs the annotations admit");
  }
  return CallStatus(rc, lowered_.program.checks);
}

std::vector<bool> CpuFunction::Mutated(size_t inputs) const {
  std::vector<bool> m = writes_input_;
  m.resize(inputs);
  if (plan_applied_) {
    for (int i : epilogue_inputs_) m[i] = true;
  }
  return m;
}

absl::StatusOr<std::vector<ir::Value>> CpuFunction::Call(
    const std::vector<ir::Value>& given,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    uint64_t seed) const {
  ASSIGN_OR_RETURN(std::vector<const ir::Value*> inputs,
                   WithConstants(given, constants));
  if (host_checks_) RETURN_IF_ERROR(ir::CheckInputs(slots_, inputs));
  // Kernels on a device: the tensors go there, and what they write back.
  const DeviceKernels* device = loaded_->device();
  std::vector<ir::Value> on_device;
  if (device != nullptr) {
    RETURN_IF_ERROR(ir::CheckInputs(slots_, inputs));
    on_device.reserve(inputs.size());
    for (const ir::Value* v : inputs) {
      on_device.push_back(*v);
      if (v->is_tensor()) {
        ASSIGN_OR_RETURN(on_device.back().tensor, device->ToDevice(v->tensor));
      }
    }
    for (size_t k = 0; k < inputs.size(); ++k) inputs[k] = &on_device[k];
  }
  // As the runtime passes its values to the C ABI.
  std::vector<Operand> args;
  args.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    absl::StatusOr<Operand> o = aot::OperandOf(*inputs[k]);
    if (!o.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(k < slots_.size() ? slots_[k].where : "an input", ": ",
                       o.status().message()));
    }
    args.push_back(*std::move(o));
  }
  ArgViews views;
  views.Build(args);
  // The library passes its frozen constants itself, after the others.
  const size_t given_n =
      inputs.size() - static_cast<size_t>(lowered_.frozen_constants);
  std::vector<Operand> out;
  int rc = loaded_->InvokeGraph(views.data(), static_cast<int64_t>(given_n),
                                seed, &out);
  if (rc != 0) {
    return CallError(rc, [&] { return ir::CheckInputs(slots_, inputs); });
  }
  std::vector<ir::Value> results;
  results.reserve(out.size());
  for (const Operand& o : out) results.push_back(aot::ValueOf(o));
  if (device != nullptr) {
    for (ir::Value& r : results) {
      if (!r.is_tensor()) continue;
      ASSIGN_OR_RETURN(r.tensor, device->ToHost(r.tensor));
    }
    const std::vector<bool> written = Mutated(given.size());
    for (size_t k = 0; k < given.size(); ++k) {
      if (!written[k] || !given[k].is_tensor()) continue;
      ASSIGN_OR_RETURN(Tensor back, device->ToHost(on_device[k].tensor));
      RETURN_IF_ERROR(CopyTensor(given[k].tensor, back));
    }
  }
  return results;
}

absl::Status CpuFunction::CheckUser(
    absl::Span<const Operand> args,
    const absl::flat_hash_map<std::string, ir::Value>& constants) const {
  if (!subclass_) {
    return absl::FailedPreconditionError(
        "the composite wrapper is not compiled in");
  }
  ASSIGN_OR_RETURN(std::vector<ir::Value> values, ConstantValues(constants));
  return aot::CheckUserArguments(*subclass_, slots_, args, values);
}

std::vector<bool> CpuFunction::MutatedUserInputs() const {
  const size_t placeholders =
      lowered_.input_buffers.size() - lowered_.constants.size();
  if (!subclass_) return {};
  return aot::WrittenArguments(subclass_->argument_layouts(),
                               Mutated(placeholders));
}

absl::StatusOr<aot::UserCall> CpuFunction::CallUser(
    std::vector<Operand> args,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    uint64_t seed) const {
  if (!user_entry_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the composite wrapper is not compiled in",
                     user_entry_error_.empty() ? "" : ": ", user_entry_error_));
  }
  const aot::SubclassWrapperPlan& sub = *subclass_;
  // The dense inputs checked on the host, the slow way: what the compiled
  // check refused, or every call when it cannot check some annotation.
  auto host_check = [&]() { return CheckUser(args, constants); };
  if (host_checks_) RETURN_IF_ERROR(host_check());
  // The user's values, then the constants.
  std::vector<Operand> in = args;
  for (const std::string& name : constants_) {
    ASSIGN_OR_RETURN(const ir::Value* v, ConstantNamed(constants, name));
    ASSIGN_OR_RETURN(Operand constant, aot::OperandOf(*v));
    in.push_back(std::move(constant));
  }
  // Kernels on a device: the tensors go there, and come back.
  const DeviceKernels* device = loaded_->device();
  if (device != nullptr) RETURN_IF_ERROR(host_check());
  for (Operand& o : in) {
    if (device == nullptr) break;
    if (o.kind == Operand::Kind::kComposite) {
      return absl::UnimplementedError(
          "composite arguments of a function compiled for a CUDA device");
    }
    if (o.kind == Operand::Kind::kTensor && o.tensor.defined()) {
      ASSIGN_OR_RETURN(o.tensor, device->ToDevice(o.tensor));
    }
  }
  ArgViews views;
  views.Build(in);
  std::vector<Operand> results, rebound_values;
  int rc = loaded_->Invoke(views.span(), seed, &results, &rebound_values);
  if (rc != 0) return CallError(rc, host_check);
  for (Operand& o : rebound_values) {
    if (device == nullptr) break;
    if (o.kind == Operand::Kind::kTensor && o.tensor.defined()) {
      ASSIGN_OR_RETURN(o.tensor, device->ToHost(o.tensor));
    }
  }
  for (Operand& o : results) {
    if (device == nullptr) break;
    if (o.kind == Operand::Kind::kComposite) {
      return absl::UnimplementedError(
          "composite results of a function compiled for a CUDA device");
    }
    if (o.kind == Operand::Kind::kTensor && o.tensor.defined()) {
      ASSIGN_OR_RETURN(o.tensor, device->ToHost(o.tensor));
    }
  }
  absl::flat_hash_map<int, ir::Value> rebound;
  for (size_t j = 0; j < rebound_inputs_.size(); ++j) {
    rebound[rebound_inputs_[j]] = aot::ValueOf(rebound_values[j]);
  }
  const size_t placeholders =
      lowered_.input_buffers.size() - lowered_.constants.size();
  const std::vector<bool> written = Mutated(placeholders);
  for (size_t k = 0; device != nullptr && k < args.size(); ++k) {
    if (k >= written.size() || !written[k] ||
        args[k].kind != Operand::Kind::kTensor) {
      continue;
    }
    ASSIGN_OR_RETURN(Tensor back, device->ToHost(in[k].tensor));
    RETURN_IF_ERROR(CopyTensor(args[k].tensor, back));
  }
  return aot::UserCallOf(sub.argument_layouts(), std::move(args), written,
                         rebound, std::move(results));
}

absl::StatusOr<ir::Interpretation> CpuFunction::Run(
    const std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    uint64_t seed) const {
  if (plan_applied_) {
    return absl::FailedPreconditionError(
        "compiled with its runtime wrapper: call RunWithPlan");
  }
  ir::Interpretation r;
  ASSIGN_OR_RETURN(r.outputs, Call(inputs, constants, seed));
  r.mutated_inputs = Mutated(inputs.size());
  return r;
}

absl::StatusOr<ir::Interpretation> CpuFunction::RunWithPlan(
    std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants,
    uint64_t seed) const {
  if (!plan_applied_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the runtime wrapper is not compiled in",
                     plan_error_.empty() ? "" : ": ", plan_error_));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Value> results,
                   Call(inputs, constants, seed));
  const size_t users = results.size() - rebound_inputs_.size();
  for (size_t j = 0; j < rebound_inputs_.size(); ++j) {
    inputs[rebound_inputs_[j]] = std::move(results[users + j]);
  }
  results.resize(users);
  ir::Interpretation r;
  r.outputs = std::move(results);
  r.mutated_inputs = Mutated(inputs.size());
  return r;
}

}  // namespace lathe::codegen
