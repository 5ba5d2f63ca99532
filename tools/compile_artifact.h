// -----------------------------------------------------------------------------
// File: compile_artifact.h
// -----------------------------------------------------------------------------
//
// The compiler side of runtime/compiled_function.h and runtime/artifact.h:
// graph text compiled for the CPU into what an artifact holds (the .so, its
// source, the manifest: the arguments as the graph declares them, the
// result shapes, the guards as the user reads them), for `lathec compile`
// to write and any process to load with the runtime alone; and the compile
// callback a CompiledFunction in a process that has the compiler is given,
// so a guard miss compiles a new variant (the interpreter past the limit).
//
// Example:
//
//   ASSIGN_OR_RETURN(CompiledArtifact a, CompileArtifact(text, {.source = g}));
//   RETURN_IF_ERROR(WriteArtifact(dir, a.manifest, a.files));
//
//   VariantCompiler compiler(text, {.source = g});
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> f, compiler.Function());
//   f->Call(absl::MakeSpan(args));   // compiles with args' sizes as hints

#ifndef LATHE_TOOLS_COMPILE_ARTIFACT_H_
#define LATHE_TOOLS_COMPILE_ARTIFACT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codegen/cpp/cpu_function.h"
#include "ir/graph.h"
#include "runtime/artifact.h"
#include "runtime/cache_backend.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"
#include "symbolic/evaluate.h"
#include "symbolic/guards.h"
#include "tools/compile.h"

namespace lathe {

struct CompiledArtifact {
  std::unique_ptr<CompiledGraph> compiled;
  std::unique_ptr<codegen::CpuFunction> cpu;
  Manifest manifest;  // without its files (WriteArtifact adds them)
  std::vector<std::pair<std::string, std::string>> files;  // kernel.so, .cc

  // This compile as a variant of a CompiledFunction (it must outlive it).
  Variant AsVariant() const;
};

// CompileArtifact()
//
// Compiles `text` for the CPU (hints from `options` and the text's own) into
// an artifact's parts; an error when the whole user call cannot run inside
// the .so (its runtime or composite wrapper would need the host).
// With `cache`, a .so built before from the same source, compiler and flags
// is taken from it (runtime/compile_cache.h), and a new one is stored.
absl::StatusOr<CompiledArtifact> CompileArtifact(
    absl::string_view text, const CompileOptions& options = {},
    CacheBackend* cache = nullptr);

// ConstantsOf()
//
// The constants `graph` reads (`self.NAME`), each once, in graph order: the
// order they follow the placeholders in a call.
std::vector<std::string> ConstantsOf(const ir::Graph& graph);

// ArgumentsOf()
//
// The arguments a call of `written` (the graph as written) takes: one per
// placeholder, then the constants it reads in `constants` order;
// `annotations` gets each one's annotation ("f32[s0, 784][784, 1]cpu",
// "Sym(zf0)", "-" for an unannotated parameter).
absl::StatusOr<std::vector<ArgumentSpec>> ArgumentsOf(
    const ir::Graph& written, const std::vector<std::string>& constants,
    std::vector<std::string>* annotations = nullptr);

// SymbolValuesOf()
//
// The values `args` (one per placeholder of `written`, then constants) give
// the bare symbols of its annotations (sizes, strides, int scalars, a
// backed .item() of an input), each as often as it is read.
std::vector<std::pair<symbolic::Expr, symbolic::Value>> SymbolValuesOf(
    const ir::Graph& written, absl::Span<const Operand> args);

// HintsOf()
//
// SymbolValuesOf by symbol name: a compile's hints for them.
absl::flat_hash_map<std::string, symbolic::Value> HintsOf(
    const ir::Graph& written, absl::Span<const Operand> args);

// IntOf()
//
// The integer a 0-d integer tensor holds, exactly (no trip through double).
int64_t IntOf(const Tensor& t);

// GuardText()
//
// Guard `i` of `guards` as the user reads it, with the placeholders of
// `written` (the graph as written) by name: "x.size(0) == 1" for
// "t0.size(0) == 1".
std::string GuardText(const ir::Graph& written,
                      const symbolic::GuardSet& guards, int i);

// VariantCompiler
//
// Compiles variants of one graph for a CompiledFunction: its compile
// callback compiles the text for the CPU with the arguments' sizes as
// hints (as torch.compile recompiles on a guard miss), and its fallback
// runs the arguments on the interpreter. Keeps every variant it compiled
// alive as long as itself (it must outlive the function). The callback is
// called under the function's lock, one at a time; the fallback may run on
// many threads at once and shares nothing.
class VariantCompiler {
 public:
  // Compiles `text`; with `cache` (which must outlive it), through it.
  VariantCompiler(std::string text, CompileOptions options,
                  CacheBackend* cache = nullptr);

  // A function that compiles on its first call, at most `max_compiles`
  // times, then falls back to the interpreter.
  absl::StatusOr<std::unique_ptr<CompiledFunction>> Function(
      int max_compiles = 8);

  // Every compile so far, in order.
  const std::vector<std::unique_ptr<CompiledArtifact>>& compiled() const {
    return compiled_;
  }
  // The time its compiles took, in all (wall clock, the whole walk).
  double compile_seconds() const { return compile_seconds_; }

 private:
  absl::StatusOr<Variant> Compile(absl::Span<const Operand> args);
  absl::StatusOr<std::vector<Operand>> Interpret(absl::Span<Operand> args,
                                                 uint64_t seed) const;

  const std::string text_;
  const CompileOptions options_;
  CacheBackend* const cache_;
  std::unique_ptr<ir::Graph> written_;
  std::vector<std::string> constants_;  // the constants' names, in order
  std::vector<std::unique_ptr<CompiledArtifact>> compiled_;
  double compile_seconds_ = 0;
};

}  // namespace lathe

#endif  // LATHE_TOOLS_COMPILE_ARTIFACT_H_
