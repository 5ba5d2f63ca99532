#include "driver/variant_compiler.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/arguments.h"
#include "driver/first_tier.h"
#include "driver/freeze.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "runtime/copy.h"
#include "runtime/onednn.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"

namespace lathe {
namespace {

// Lowers this thread's scheduling priority (its nice value, by 10; Linux
// keeps one per thread, and the processes it starts inherit it): a tiered
// compile's build then takes the cores its first tier's calls leave idle,
// not those the calls it stands in for wait on. Returns the nice value it
// had (for RestorePriority; a pool worker this thread started meanwhile
// keeps the lower one: a build starts none today).
int YieldToCalls() {
  const id_t self = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, self);
  if (errno != 0) return 0;
  ::setpriority(PRIO_PROCESS, self, std::min(nice + 10, 19));
  return nice;
}

// Sets this thread's nice value back to `nice` (allowed: a thread may
// raise its priority back to its soft limit, RLIMIT_NICE permitting; where
// it is refused the thread stays lower).
void RestorePriority(int nice) {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice);
}

// Whether `graph` has an f32 matrix product (the library gives them to
// sgemm).
bool HasProducts(const ir::Graph& graph) {
  for (const auto& n : graph.nodes()) {
    const std::string& t = n->target();
    if ((t == "aten.mm.default" || t == "aten.bmm.default" ||
         t == "aten.addmm.default") &&
        n->meta().tensor.dtype == DType::kFloat32) {
      return true;
    }
  }
  return false;
}

// The longest a tiered build waits for the first call to return.
constexpr std::chrono::milliseconds kFirstCallWait{250};

}  // namespace

VariantCompiler::VariantCompiler(ParsedGraph parsed, CompileOptions options,
                                 CacheBackend* cache)
    : parsed_(std::move(parsed)), options_(std::move(options)) {
  options_.artifact = options_.backend != nullptr;
  options_.cache = cache;
}

VariantCompiler::~VariantCompiler() { WaitForBuilds(); }

void VariantCompiler::WaitForBuilds() {
  std::vector<std::thread> builds;
  {
    std::lock_guard<std::mutex> lock(tiers_mu_);
    builds.swap(builds_);
  }
  for (std::thread& t : builds) t.join();
}

absl::StatusOr<std::unique_ptr<CompiledFunction>> VariantCompiler::Function(
    FunctionOptions function_options) {
  if (function_options.tiered &&
      (options_.backend == nullptr || !options_.backend->device().is_cpu())) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.source,
        ": tiered compiles need the cpu backend (its library is the second "
        "tier; the first, the interpreter, runs on host tensors), not ",
        options_.backend == nullptr ? "interp" : options_.backend->name()));
  }
  if (function_options.tiered && options_.autotune) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.source,
        ": tiered compiles do not autotune (the tuner would time the kernels "
        "on the build thread while the first tier runs calls beside it)"));
  }
  // What follows rewrites the graph and constants earlier functions' builds
  // read.
  WaitForBuilds();
  // Frozen inputs are not arguments: the graph every compile starts from
  // reads them as constants already (each compile copies their values).
  if (!options_.frozen.empty() ||
      !parsed_.written->attributes().constants.empty()) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> frozen =
        FreezeInputs(*parsed_.written, options_.frozen, /*owned=*/nullptr);
    if (!frozen.ok()) {
      return absl::Status(
          frozen.status().code(),
          absl::StrCat(options_.source, ": ", frozen.status().message()));
    }
    parsed_.written = *std::move(frozen);
  }
  constants_ = ConstantsOf(*parsed_.written);
  ASSIGN_OR_RETURN(
      std::vector<ArgumentSpec> arguments,
      ArgumentsOf(*parsed_.written, constants_, nullptr,
                  options_.backend != nullptr ? options_.backend->device()
                                              : Device::Cpu()));
  CompiledFunction::Options o;
  o.compile = [this, function_options](absl::Span<const Operand> args) {
    return Compile(args, function_options);
  };
  o.fallback = [this](absl::Span<Operand> args, uint64_t seed) {
    return Interpret(args, seed);
  };
  // The interpreter backend explains arguments that do not fit in the
  // interpreter's words, as `lathec run` always has.
  if (options_.backend == nullptr) {
    o.explain = [this](absl::Span<const Operand> args) -> absl::Status {
      absl::StatusOr<std::shared_ptr<const CompiledGraph>> c =
          CompiledFor(args);
      if (!c.ok()) return absl::OkStatus();  // step 3's message, then
      return CheckUser(**c, args);
    };
  }
  o.max_compiles = function_options.max_compiles;
  return std::make_unique<CompiledFunction>(std::move(arguments), std::move(o));
}

absl::StatusOr<Variant> VariantCompiler::Compile(
    absl::Span<const Operand> args, const FunctionOptions& function_options) {
  auto start = std::chrono::steady_clock::now();
  CompileOptions options = options_;
  for (auto& [name, value] : HintsOf(*parsed_.written, args)) {
    options.hints.insert({name, value});
  }
  options.storage_offsets = StorageOffsetsOf(*parsed_.written, args);
  if (function_options.tiered) {
    absl::StatusOr<Variant> v =
        CompileTiered(options, function_options.before_build);
    compile_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return v;
  }
  absl::StatusOr<std::unique_ptr<CompiledGraph>> made =
      lathe::Compile(parsed_, options);
  compile_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!made.ok()) return made.status();
  if (options_.backend == nullptr) {
    const CompiledGraph& graph = **made;
    {
      std::lock_guard<std::mutex> lock(compiled_mu_);
      compiled_.push_back(*std::move(made));
    }
    return InterpretedVariant(graph);
  }
  return Compiled(std::move(made));
}

absl::StatusOr<Variant> VariantCompiler::CompileTiered(
    CompileOptions options, std::function<void()> before_build) {
  // Builds run beside other compiles: each in a directory of its own.
  options.dir.clear();
  // The probe: the whole walk, the library when the cache holds it.
  CompileOptions probe = options;
  probe.cached_only = true;
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> made,
                   lathe::Compile(parsed_, probe));
  if (made->function != nullptr) return Compiled(std::move(made));
  // A miss. The first tier: the probe's graph (after the passes and guards)
  // on the interpreter.
  const bool products = HasProducts(*made->graph);
  Variant v = InterpretedVariant(*made, &FirstTierKernels());
  {
    std::lock_guard<std::mutex> lock(tiers_mu_);
    first_tiers_.push_back(std::move(made));
  }
  // The second: the library, built on a thread of its own once the
  // function stored the first, and once the first call returned (or after
  // kFirstCallWait): the C++ compiler beside that call slowed it by a third
  // on the 2-core machine of tools/bench/README.md, even at a lower priority
  // (YieldToCalls; they share caches and memory bandwidth).
  auto returned = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  std::shared_future<void> first_call = returned->get_future().share();
  v.run = [run = std::move(v.run), returned, once](absl::Span<Operand> args,
                                                   uint64_t seed) {
    absl::StatusOr<std::vector<Operand>> out = run(args, seed);
    std::call_once(*once, [&returned] { returned->set_value(); });
    return out;
  };
  v.upgrade = [this, options, before_build, first_call,
               products](Variant::Replace replace) {
    std::lock_guard<std::mutex> lock(tiers_mu_);
    builds_.emplace_back([this, options, before_build, first_call, products,
                          replace = std::move(replace)] {
      const int nice = YieldToCalls();
      first_call.wait_for(kFirstCallWait);
      if (before_build) before_build();
      absl::StatusOr<Variant> built =
          Compiled(lathe::Compile(parsed_, options));
      // replace() takes the function's lock, which calls wait on; so may a
      // call's sgemm wait on the kernels made next.
      RestorePriority(nice);
      // oneDNN makes all of its sgemm kernels at a process's first product
      // (about 21 ms; the first tier's products take matmul primitives
      // instead): made before the library's first call.
      if (built.ok() && products) onednn::WarmProducts();
      replace(std::move(built));
    });
  };
  return v;
}

absl::StatusOr<Variant> VariantCompiler::Compiled(
    absl::StatusOr<std::unique_ptr<CompiledGraph>> made) {
  if (!made.ok()) return made.status();
  const std::vector<std::string>& constants = (*made)->function->constants();
  if (constants != constants_) {
    return absl::UnimplementedError(absl::StrCat(
        options_.source, ": the compiled graph reads the constants (",
        absl::StrJoin(constants, ", "), "), not (",
        absl::StrJoin(constants_, ", "), ") as written"));
  }
  const CompiledGraph& graph = **made;
  {
    std::lock_guard<std::mutex> lock(compiled_mu_);
    compiled_.push_back(*std::move(made));
  }
  return graph.AsVariant();
}

std::vector<const CompiledGraph*> VariantCompiler::compiled() const {
  std::lock_guard<std::mutex> lock(compiled_mu_);
  std::vector<const CompiledGraph*> out;
  out.reserve(compiled_.size());
  for (const std::unique_ptr<CompiledGraph>& c : compiled_)
    out.push_back(c.get());
  return out;
}

absl::StatusOr<std::shared_ptr<const CompiledGraph>>
VariantCompiler::CompiledFor(absl::Span<const Operand> args) {
  CompileOptions options = options_;
  options.backend = nullptr;
  options.artifact = false;
  options.dump = false;
  std::vector<std::string> key;
  for (auto& [name, value] : HintsOf(*parsed_.written, args)) {
    options.hints.insert({name, value});
  }
  for (const auto& [name, value] : options.hints) {
    key.push_back(absl::StrCat(name, "=", symbolic::ToString(value)));
  }
  options.storage_offsets = StorageOffsetsOf(*parsed_.written, args);
  for (const auto& [name, offset] : options.storage_offsets) {
    key.push_back(absl::StrCat(name, ".storage_offset()=", offset));
  }
  std::sort(key.begin(), key.end());
  const std::string hints = absl::StrJoin(key, ",");
  {
    std::lock_guard<std::mutex> lock(interpreted_mu_);
    auto it = interpreted_.find(hints);
    if (it != interpreted_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> made,
                   lathe::Compile(parsed_, options));
  std::lock_guard<std::mutex> lock(interpreted_mu_);
  // Bounded: a call per new offset or size past the compile limit must not
  // keep a graph each.
  if (interpreted_.size() >= 64) interpreted_.clear();
  return interpreted_.emplace(hints, std::move(made)).first->second;
}

absl::StatusOr<std::vector<Operand>> VariantCompiler::Interpret(
    absl::Span<Operand> args, uint64_t seed) {
  // The interpreter reads host memory: device tensors never reach it.
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k].kind == Operand::Kind::kTensor && args[k].tensor.defined() &&
        !args[k].tensor.device().is_cpu()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "argument ", k, " is on ", args[k].tensor.device().ToString(),
          ": the interpreter, which runs the arguments no compiled variant "
          "admits, needs host tensors (allow more compiles)"));
    }
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGraph> c, CompiledFor(args));
  return RunInterpreted(*c, args, seed);
}

absl::Status VariantCompiler::CheckUser(const CompiledGraph& c,
                                        absl::Span<const Operand> args) const {
  const size_t users = args.size() - constants_.size();
  std::vector<ir::Value> constants;
  for (size_t k = users; k < args.size(); ++k) {
    constants.push_back(aot::ValueOf(args[k]));
  }
  for (const ir::Value& v : FrozenValuesOf(*c.graph, c.frozen)) {
    constants.push_back(v);
  }
  return aot::CheckUserArguments(c.aot.subclass, ir::InputSlots(*c.graph),
                                 args.subspan(0, users), constants);
}

absl::StatusOr<std::vector<Operand>> VariantCompiler::RunInterpreted(
    const CompiledGraph& c, absl::Span<Operand> args, uint64_t seed,
    const ir::KernelOverrides* kernels) {
  const size_t users = args.size() - constants_.size();
  absl::flat_hash_map<std::string, ir::Value> constants;
  for (size_t k = users; k < args.size(); ++k) {
    constants[constants_[k - users]] = aot::ValueOf(args[k]);
  }
  for (const auto& [name, value] : c.frozen) constants[name] = value;
  std::vector<Operand> user(args.begin(), args.begin() + users);
  // The interpreter, drawing random numbers from the call's seed.
  aot::GraphRunner runner =
      [seed, kernels](const ir::Graph& g, const std::vector<ir::Value>& inputs,
                      const absl::flat_hash_map<std::string, ir::Value>& k) {
        return ir::Interpret(g, inputs, k, seed, kernels);
      };
  ASSIGN_OR_RETURN(aot::UserCall r,
                   aot::InterpretAsUser(*c.graph, c.aot, std::move(user),
                                        constants, runner));
  {
    std::lock_guard<std::mutex> lock(interpreted_mu_);
    written_.resize(std::max(written_.size(), r.mutated.size()), false);
    for (size_t k = 0; k < r.mutated.size(); ++k) {
      if (r.mutated[k]) written_[k] = true;
    }
  }
  for (size_t k = 0; k < users; ++k) args[k] = std::move(r.arguments[k]);
  // A result in a frozen constant's storage is the caller's copy (as the
  // compiled code returns it): the constant stays the function's own.
  for (Operand& o : r.results) {
    if (o.kind != Operand::Kind::kTensor || !o.tensor.defined()) continue;
    for (const auto& [name, value] : c.frozen) {
      if (!value.is_tensor() ||
          !(o.tensor.storage() == value.tensor.storage())) {
        continue;
      }
      ASSIGN_OR_RETURN(Tensor copy, Tensor::EmptyStrided(o.tensor.sizes(),
                                                         o.tensor.strides(),
                                                         o.tensor.dtype()));
      RETURN_IF_ERROR(CopyTensor(copy, o.tensor));
      o.tensor = std::move(copy);
      break;
    }
  }
  return std::move(r.results);
}

Variant VariantCompiler::InterpretedVariant(
    const CompiledGraph& c, const ir::KernelOverrides* kernels) {
  Variant v;
  if (c.guards) {
    for (int g = 0; g < c.guards->size(); ++g) {
      v.guards.push_back(GuardText(*parsed_.written, *c.guards, g));
    }
  }
  const CompiledGraph* graph = &c;
  v.failed_guard = [graph](const ArgViews& views) {
    return graph->FailedGuard(views);
  };
  v.run = [this, graph, kernels](absl::Span<Operand> args, uint64_t seed) {
    return RunInterpreted(*graph, args, seed, kernels);
  };
  v.check = [this, graph](absl::Span<const Operand> args) {
    return CheckUser(*graph, args);
  };
  return v;
}

std::vector<bool> VariantCompiler::WrittenArguments() const {
  if (options_.backend != nullptr) {
    std::lock_guard<std::mutex> lock(compiled_mu_);
    return compiled_.empty() ? std::vector<bool>()
                             : compiled_.front()->function->MutatedUserInputs();
  }
  std::lock_guard<std::mutex> lock(interpreted_mu_);
  return written_;
}

}  // namespace lathe
