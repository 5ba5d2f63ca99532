#include "driver/variant_compiler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/arguments.h"
#include "ir/interpreter.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"

namespace lathe {

VariantCompiler::VariantCompiler(ParsedGraph parsed, CompileOptions options,
                                 CacheBackend* cache)
    : parsed_(std::move(parsed)), options_(std::move(options)) {
  options_.backend = &codegen::CpuBackend();
  options_.artifact = true;
  options_.cache = cache;
}

absl::StatusOr<std::unique_ptr<CompiledFunction>> VariantCompiler::Function(
    int max_compiles) {
  constants_ = ConstantsOf(*parsed_.written);
  ASSIGN_OR_RETURN(std::vector<ArgumentSpec> arguments,
                   ArgumentsOf(*parsed_.written, constants_));
  CompiledFunction::Options o;
  o.compile = [this](absl::Span<const Operand> args) { return Compile(args); };
  o.fallback = [this](absl::Span<Operand> args, uint64_t seed) {
    return Interpret(args, seed);
  };
  o.max_compiles = max_compiles;
  return std::make_unique<CompiledFunction>(std::move(arguments), std::move(o));
}

absl::StatusOr<Variant> VariantCompiler::Compile(
    absl::Span<const Operand> args) {
  auto start = std::chrono::steady_clock::now();
  CompileOptions options = options_;
  for (auto& [name, value] : HintsOf(*parsed_.written, args)) {
    options.hints.insert({name, value});
  }
  absl::StatusOr<std::unique_ptr<CompiledGraph>> made =
      lathe::Compile(parsed_, options);
  compile_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!made.ok()) return made.status();
  const std::vector<std::string>& constants = (*made)->function->constants();
  if (constants != constants_) {
    return absl::UnimplementedError(absl::StrCat(
        options_.source, ": the compiled graph reads the constants (",
        absl::StrJoin(constants, ", "), "), not (",
        absl::StrJoin(constants_, ", "), ") as written"));
  }
  compiled_.push_back(*std::move(made));
  return compiled_.back()->AsVariant();
}

absl::StatusOr<std::vector<Operand>> VariantCompiler::Interpret(
    absl::Span<Operand> args, uint64_t seed) {
  // The graph for these hints, compiled (up to the guards) once.
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
  std::sort(key.begin(), key.end());
  const std::string hints = absl::StrJoin(key, ",");
  std::shared_ptr<const CompiledGraph> c;
  {
    std::lock_guard<std::mutex> lock(interpreted_mu_);
    auto it = interpreted_.find(hints);
    if (it != interpreted_.end()) c = it->second;
  }
  if (c == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> made,
                     lathe::Compile(parsed_, options));
    std::lock_guard<std::mutex> lock(interpreted_mu_);
    c = interpreted_.emplace(hints, std::move(made)).first->second;
  }
  const size_t users = args.size() - constants_.size();
  absl::flat_hash_map<std::string, ir::Value> constants;
  for (size_t k = users; k < args.size(); ++k) {
    constants[constants_[k - users]] = aot::ValueOf(args[k]);
  }
  std::vector<Operand> user(args.begin(), args.begin() + users);
  // The interpreter, drawing random numbers from the call's seed.
  aot::GraphRunner runner =
      [seed](const ir::Graph& g, const std::vector<ir::Value>& inputs,
             const absl::flat_hash_map<std::string, ir::Value>& k) {
        return ir::Interpret(g, inputs, k, seed);
      };
  ASSIGN_OR_RETURN(aot::UserCall r,
                   aot::InterpretAsUser(*c->graph, c->aot, std::move(user),
                                        constants, runner));
  for (size_t k = 0; k < users; ++k) args[k] = std::move(r.arguments[k]);
  return std::move(r.results);
}

}  // namespace lathe
