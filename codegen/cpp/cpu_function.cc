#include "codegen/cpp/cpu_function.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "codegen/cpp/cpp_emitter.h"
#include "codegen/fusion_graph.h"
#include "codegen/scheduler.h"
#include "runtime/kernel_runtime.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"

namespace lathe::codegen {

using symbolic::Expr;

CpuFunction::~CpuFunction() {
  if (!temp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir_, ec);
  }
}

absl::StatusOr<std::unique_ptr<CpuFunction>> CpuFunction::Compile(
    const ir::Graph& graph, symbolic::ShapeEnv& env,
    const CpuCompileOptions& options) {
  std::unique_ptr<CpuFunction> f(new CpuFunction());
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(f->lowered_, Lower(graph, env));
  f->stats_.kernels_unfused =
      static_cast<int>(f->lowered_.program.kernels.size());
  f->unscheduled_ = PrintProgram(f->lowered_.program);
  ASSIGN_OR_RETURN(ScheduleResult sched, Schedule(f->lowered_));
  f->stats_.fusion_log = std::move(sched.log);
  f->scheduled_ = PrintProgram(f->lowered_.program);
  f->fusion_dot_ = FusionDot(graph, f->lowered_.program);
  f->stats_.kernels = static_cast<int>(f->lowered_.program.kernels.size());
  f->source_ = EmitCpp(f->lowered_.program);
  f->stats_.lower_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  f->slots_ = ir::InputSlots(graph);
  LATHE_CHECK(f->slots_.size() == f->lowered_.input_buffers.size())
      << "lowering's inputs are the placeholders, then the constants";
  f->writes_input_.assign(f->lowered_.input_buffers.size(), false);
  for (const Kernel& k : f->lowered_.program.kernels) {
    std::vector<int> written;
    for (const ScalarOp& op : k.ops) {
      if (op.kind == ScalarOp::Kind::kStore) written.push_back(op.buffer);
    }
    if (k.kind == Kernel::Kind::kExtern) written.push_back(k.extern_buffers[0]);
    for (int b : written) {
      const Buffer& buf = f->lowered_.program.buffers[b];
      if (buf.kind == Buffer::Kind::kInput) f->writes_input_[buf.input] = true;
    }
  }
  std::string dir = options.dir;
  if (dir.empty()) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    if (tmp == nullptr || *tmp == '\0') tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(
        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/lathe-cpu-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError("cannot create a temporary directory");
    }
    dir = pattern;
    f->temp_dir_ = dir;
  }
  ASSIGN_OR_RETURN(f->built_, CompileSharedLibrary(f->source_, dir));
  f->stats_.compiler_seconds = f->built_.seconds;
  // The OpenMP runtime the kernels link stays loaded for the process: were
  // it unloaded with the last kernel library, its thread pool and state
  // would go with it (and LeakSanitizer reports them).
  static const absl::StatusOr<SharedLibrary>* openmp =
      new absl::StatusOr<SharedLibrary>(
          SharedLibrary::Open("libgomp.so.1", /*keep=*/true));
  if (!openmp->ok()) return openmp->status();
  ASSIGN_OR_RETURN(f->library_, SharedLibrary::Open(f->built_.path));
  ASSIGN_OR_RETURN(void* entry, f->library_.Symbol("lathe_entry"));
  f->entry_ = reinterpret_cast<LatheEntryFn>(entry);
  return f;
}

absl::StatusOr<ir::Interpretation> CpuFunction::Run(
    const std::vector<ir::Value>& given,
    const absl::flat_hash_map<std::string, ir::Value>& constants) const {
  const LoweredGraph& g = lowered_;
  const Program& p = g.program;
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
    auto it = constants.find(name);
    if (it == constants.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing constant 'self.", name, "'"));
    }
    inputs.push_back(&it->second);
  }
  RETURN_IF_ERROR(ir::CheckInputs(slots_, inputs));
  // Symbols from the inputs.
  symbolic::Assignment values;
  for (const SymbolSource& s : g.sources) {
    const ir::Value& v = *inputs[s.input];
    symbolic::Value val;
    if (s.kind == SymbolSource::Kind::kScalar) {
      if (!v.is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", s.input, " is not a number"));
      }
      ASSIGN_OR_RETURN(val, symbolic::Evaluate(v.number, {}));
    } else {
      if (!v.is_tensor() || s.dim >= v.tensor.dim()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", s.input, " is not a tensor of the graph's rank"));
      }
      val = symbolic::Value::Int(s.kind == SymbolSource::Kind::kSize
                                     ? v.tensor.sizes()[s.dim]
                                     : v.tensor.strides()[s.dim]);
    }
    values[s.symbol] = val;
  }
  auto eval_int = [&](Expr e) -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(symbolic::Value v, symbolic::Evaluate(e, values));
    if (v.type != symbolic::ExprType::kInt || v.inf != 0) {
      return absl::InternalError(
          absl::StrCat(symbolic::ToString(e), " is not a finite int"));
    }
    return v.i;
  };
  std::vector<int64_t> ints;
  std::vector<double> floats;
  for (Expr s : p.symbols) {
    auto it = values.find(s);
    if (it == values.end()) {
      return absl::InternalError(
          absl::StrCat("symbol ", symbolic::ToString(s), " is not bound"));
    }
    if (s.is_float()) {
      floats.push_back(it->second.type == symbolic::ExprType::kFloat
                           ? it->second.f
                           : static_cast<double>(it->second.i));
    } else {
      ints.push_back(it->second.i);
    }
  }
  // Buffers.
  std::vector<Storage> storages(p.buffers.size());
  std::vector<void*> pointers(p.buffers.size(), nullptr);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind == Buffer::Kind::kInput) {
      const ir::Value& v = *inputs[buf.input];
      if (!v.is_tensor() || v.tensor.dtype() != buf.dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", buf.input, " is not a ",
                         ShortName(buf.dtype), " tensor"));
      }
      storages[b] = v.tensor.storage();
      pointers[b] = v.tensor.data_ptr();
      continue;
    }
    if (buf.local) continue;  // never stored (scheduler.h)
    ASSIGN_OR_RETURN(int64_t numel, eval_int(buf.numel));
    ASSIGN_OR_RETURN(storages[b],
                     Storage::AllocateUninitialized(
                         std::max<int64_t>(numel, 1) * ItemSize(buf.dtype)));
    pointers[b] = storages[b].data();
  }
  int rc = entry_(pointers.data(), ints.data(), floats.data(), KernelRuntime());
  const std::vector<std::string>& checks = lowered_.program.checks;
  if (rc > 0 && rc <= static_cast<int>(checks.size())) {
    return absl::InvalidArgumentError(checks[rc - 1]);
  }
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("the compiled graph failed (", rc, ")"));
  }
  ir::Interpretation r;
  r.mutated_inputs = writes_input_;
  r.mutated_inputs.resize(placeholders);
  for (const LoweredOutput& o : g.outputs) {
    if (o.kind == LoweredOutput::Kind::kNone) {
      r.outputs.push_back(ir::Value::None());
      continue;
    }
    if (o.kind == LoweredOutput::Kind::kNumber) {
      ASSIGN_OR_RETURN(symbolic::Value v, symbolic::Evaluate(o.number, values));
      r.outputs.push_back(ir::Value::Number(
          v.type == symbolic::ExprType::kFloat  ? symbolic::Float(v.f)
          : v.type == symbolic::ExprType::kBool ? symbolic::Bool(v.b)
                                                : symbolic::Int(v.i)));
      continue;
    }
    std::vector<int64_t> sizes, strides;
    for (Expr e : o.sizes) {
      ASSIGN_OR_RETURN(int64_t v, eval_int(e));
      sizes.push_back(v);
    }
    for (Expr e : o.strides) {
      ASSIGN_OR_RETURN(int64_t v, eval_int(e));
      strides.push_back(v);
    }
    ASSIGN_OR_RETURN(int64_t offset, eval_int(o.offset));
    const Buffer& buf = p.buffers[o.buffer];
    if (buf.kind == Buffer::Kind::kInput) {
      offset += inputs[buf.input]->tensor.storage_offset();
    }
    ASSIGN_OR_RETURN(Tensor t, Tensor::Wrap(storages[o.buffer], o.dtype, sizes,
                                            strides, offset));
    r.outputs.push_back(ir::Value::OfTensor(std::move(t)));
  }
  return r;
}

}  // namespace lathe::codegen
