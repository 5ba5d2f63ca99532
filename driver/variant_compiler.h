// -----------------------------------------------------------------------------
// File: variant_compiler.h
// -----------------------------------------------------------------------------
//
// The compiler side of runtime/compiled_function.h: the compile callback a
// CompiledFunction in a process that has the compiler is given, so that a
// guard miss compiles a new variant (the whole walk, compile.h, with the
// arguments' sizes as hints, as torch.compile recompiles), and the fallback
// past the limit (the interpreter, on the graph compiled once per set of
// hints). With a backend a variant is a loaded library; without one (the
// interpreter backend) it is the compiled graph run on the interpreter,
// behind its guards: one recompile loop serves both. The graph text is
// parsed once, by the caller.
//
// Tiered (FunctionOptions::tiered, the cpu backend): a compile the cache
// cannot answer (the whole walk runs, and the cache is probed instead of
// building) returns with the graph on the interpreter, its matrix products
// through the library's routines (first_tier.h), and builds the library on
// a thread of its own; the library replaces the interpreter for every later
// call once loaded (Variant::upgrade), and the cache keeps it for the next
// process. The build runs at a lower priority (nice +10) and starts once the
// first call returned, or 250 ms after the compile (so WaitForBuilds may
// wait that long for a function never called); the build of a graph with
// f32 products also has oneDNN make its sgemm kernels (once per process,
// about 21 ms), after the compiler and before the library replaces the
// first tier. One difference shows: a call whose written argument shares a
// storage with another runs on the interpreter, as PyTorch runs it, and is
// refused by the library once it replaced the interpreter.
//
// Example:
//
//   ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, "g.txt"));
//   VariantCompiler compiler(parsed, {.source = "g.txt"});
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> f, compiler.Function());
//   f->Call(absl::MakeSpan(args));   // compiles with args' sizes as hints
//
//   // Tiered: the first call runs on the interpreter, later ones (after
//   // the build) on the library.
//   ASSIGN_OR_RETURN(f, compiler.Function({.tiered = true}));
//   f->Call(absl::MakeSpan(args));
//   compiler.WaitForBuilds();         // f->upgrades() == 1

#ifndef LATHE_DRIVER_VARIANT_COMPILER_H_
#define LATHE_DRIVER_VARIANT_COMPILER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "driver/compile.h"
#include "ir/eval_call.h"
#include "runtime/cache_backend.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"

namespace lathe {

// How VariantCompiler::Function makes its function.
struct FunctionOptions {
  // Compiles past which arguments no variant admits run on the interpreter.
  int max_compiles = 8;
  // Tiered compiles (the cpu backend): see the file comment. Their
  // probes and builds run in temporary directories of their own
  // (CompileOptions::dir is not used).
  bool tiered = false;
  // Tests: runs on a tiered build's thread before it builds.
  std::function<void()> before_build;
};

// VariantCompiler
//
// Compiles variants of one graph for a CompiledFunction (for a backend, an
// artifact's parts each), and runs arguments on the interpreter past the
// limit. Keeps every variant it compiled alive as long as itself (it must
// outlive the function). The callback is called under the function's lock,
// one at a time; the fallback may run on many threads at once.
class VariantCompiler {
 public:
  // Compiles `parsed` with `options` (for its backend, or the interpreter
  // when it has none); with `cache` (which must outlive it), through it.
  VariantCompiler(ParsedGraph parsed, CompileOptions options,
                  CacheBackend* cache = nullptr);
  // Waits for the tiered builds it started.
  ~VariantCompiler();

  // A function that compiles on its first call, at most
  // `options.max_compiles` times, then falls back to the interpreter. Waits
  // for the builds earlier functions started.
  absl::StatusOr<std::unique_ptr<CompiledFunction>> Function(
      FunctionOptions options = {});

  // Waits for the tiered builds started so far: each has replaced its
  // first tier (or failed, with the function's warning) when it returns.
  void WaitForBuilds();

  // Every compile so far, in order: a snapshot (a compile may run on another
  // thread meanwhile); each graph lives as long as the compiler.
  std::vector<const CompiledGraph*> compiled() const;
  // The time its compiles took, in all (wall clock, the whole walk).
  double compile_seconds() const { return compile_seconds_; }
  // Which user arguments a call writes (the first compile's; for the
  // interpreter, those its calls wrote so far).
  std::vector<bool> WrittenArguments() const;

 private:
  absl::StatusOr<Variant> Compile(absl::Span<const Operand> args,
                                  const FunctionOptions& function_options);
  // A compile with a backend, as a variant (`made` is stored).
  absl::StatusOr<Variant> Compiled(
      absl::StatusOr<std::unique_ptr<CompiledGraph>> made);
  // A tiered compile: the library from the cache, or the interpreter with
  // the build of the library started on another thread (after
  // `before_build`, when given).
  absl::StatusOr<Variant> CompileTiered(CompileOptions options,
                                        std::function<void()> before_build);
  // The fallback: `args` on the interpreter, the graph compiled for their
  // hints (once per set of hints).
  absl::StatusOr<std::vector<Operand>> Interpret(absl::Span<Operand> args,
                                                 uint64_t seed);
  // `args` through `c` on the interpreter (with `kernels` for some ops: a
  // first tier's, first_tier.h).
  absl::StatusOr<std::vector<Operand>> RunInterpreted(
      const CompiledGraph& c, absl::Span<Operand> args, uint64_t seed,
      const ir::KernelOverrides* kernels = nullptr);
  // An interpreted variant of `c` (a compile without a backend; a first
  // tier with `kernels`).
  Variant InterpretedVariant(const CompiledGraph& c,
                             const ir::KernelOverrides* kernels = nullptr);
  // The graph compiled (up to the guards) for `args`' hints, once per set
  // of hints: the fallback's and the interpreter's explanations.
  absl::StatusOr<std::shared_ptr<const CompiledGraph>> CompiledFor(
      absl::Span<const Operand> args);
  // `args` checked against `c`'s annotations on the host.
  absl::Status CheckUser(const CompiledGraph& c,
                         absl::Span<const Operand> args) const;

  ParsedGraph parsed_;  // frozen by Function() when inputs are
  CompileOptions options_;
  std::vector<std::string> constants_;  // the constants' names, in order
  mutable std::mutex compiled_mu_;      // guards compiled_
  std::vector<std::unique_ptr<CompiledGraph>> compiled_;
  double compile_seconds_ = 0;
  // The fallback's graphs, one per set of hints (compiled once each).
  mutable std::mutex interpreted_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const CompiledGraph>>
      interpreted_;
  std::vector<bool> written_;  // by the interpreter's calls, so far
  // Tiered compiles: the first tiers' graphs, and the builds' threads.
  std::mutex tiers_mu_;
  std::vector<std::unique_ptr<CompiledGraph>> first_tiers_;
  std::vector<std::thread> builds_;
};

}  // namespace lathe

#endif  // LATHE_DRIVER_VARIANT_COMPILER_H_
