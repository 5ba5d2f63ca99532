// -----------------------------------------------------------------------------
// File: variant_compiler.h
// -----------------------------------------------------------------------------
//
// The compiler side of runtime/compiled_function.h: the compile callback a
// CompiledFunction in a process that has the compiler is given, so that a
// guard miss compiles a new variant (the whole walk, compile.h, with the
// arguments' sizes as hints, as torch.compile recompiles), and the fallback
// past the limit (the interpreter, on the graph compiled once per set of
// hints). The graph text is parsed once, here.
//
// Example:
//
//   ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, "g.txt"));
//   VariantCompiler compiler(parsed, {.source = "g.txt"});
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> f, compiler.Function());
//   f->Call(absl::MakeSpan(args));   // compiles with args' sizes as hints

#ifndef LATHE_DRIVER_VARIANT_COMPILER_H_
#define LATHE_DRIVER_VARIANT_COMPILER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "driver/compile.h"
#include "runtime/cache_backend.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"

namespace lathe {

// VariantCompiler
//
// Compiles variants of one graph for a CompiledFunction for the cpu (an
// artifact's parts each), and runs arguments on the interpreter past the
// limit. Keeps every variant it compiled alive as long as itself (it must
// outlive the function). The callback is called under the function's lock,
// one at a time; the fallback may run on many threads at once.
class VariantCompiler {
 public:
  // Compiles `parsed` with `options` (the backend and artifact fields are
  // set here); with `cache` (which must outlive it), through it.
  VariantCompiler(ParsedGraph parsed, CompileOptions options,
                  CacheBackend* cache = nullptr);

  // A function that compiles on its first call, at most `max_compiles`
  // times, then falls back to the interpreter.
  absl::StatusOr<std::unique_ptr<CompiledFunction>> Function(
      int max_compiles = 8);

  // Every compile so far, in order.
  const std::vector<std::unique_ptr<CompiledGraph>>& compiled() const {
    return compiled_;
  }
  // The time its compiles took, in all (wall clock, the whole walk).
  double compile_seconds() const { return compile_seconds_; }

 private:
  absl::StatusOr<Variant> Compile(absl::Span<const Operand> args);
  absl::StatusOr<std::vector<Operand>> Interpret(absl::Span<Operand> args,
                                                 uint64_t seed);

  const ParsedGraph parsed_;
  CompileOptions options_;
  std::vector<std::string> constants_;  // the constants' names, in order
  std::vector<std::unique_ptr<CompiledGraph>> compiled_;
  double compile_seconds_ = 0;
  // The fallback's graphs, one per set of hints (compiled once each).
  std::mutex interpreted_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const CompiledGraph>>
      interpreted_;
};

}  // namespace lathe

#endif  // LATHE_DRIVER_VARIANT_COMPILER_H_
