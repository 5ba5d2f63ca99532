// -----------------------------------------------------------------------------
// File: arguments.h
// -----------------------------------------------------------------------------
//
// A compiled function's arguments as the graph as written declares them
// (its placeholders, then the constants it reads): their specs and
// annotations for a manifest, the values a call's arguments give the
// annotations' symbols (a compile's hints), and guards as the user reads
// them, with the placeholders by name.
//
// Example:
//
//   std::vector<std::string> constants = ConstantsOf(*written);
//   ASSIGN_OR_RETURN(std::vector<ArgumentSpec> specs,
//                    ArgumentsOf(*written, constants));
//   options.hints = HintsOf(*written, args);   // recompile for these sizes
//   options.storage_offsets = StorageOffsetsOf(*written, args);

#ifndef LATHE_DRIVER_ARGUMENTS_H_
#define LATHE_DRIVER_ARGUMENTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/flatten_composites.h"
#include "ir/graph.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"
#include "runtime/loaded_graph.h"
#include "symbolic/evaluate.h"
#include "symbolic/guards.h"

namespace lathe {

// ConstantsOf()
//
// The constants `graph` reads (`self.NAME`), each once, in graph order: the
// order they follow the placeholders in a call. Frozen ones (`# lathe:
// constant`), whose values the compiled function holds, are not among them.
std::vector<std::string> ConstantsOf(const ir::Graph& graph);

// ArgumentsOf()
//
// The arguments a call of `written` (the graph as written) takes: one per
// placeholder, then the constants it reads in `constants` order;
// `annotations` gets each one's annotation ("f32[s0, 784][784, 1]cpu",
// "Sym(zf0)", "-" for an unannotated parameter). With a CUDA `device` (the
// cuda backend's), tensors annotated on the host are expected there: the
// graph runs on the device as if it had been captured on it.
absl::StatusOr<std::vector<ArgumentSpec>> ArgumentsOf(
    const ir::Graph& written, const std::vector<std::string>& constants,
    std::vector<std::string>* annotations = nullptr,
    Device device = Device::Cpu());

// SymbolValuesOf()
//
// The values `args` (one per placeholder of `written`, then constants) give
// the bare symbols of its annotations (sizes, strides, int scalars, a
// backed .item() of an input), each as often as it is read.
std::vector<std::pair<symbolic::Expr, symbolic::Value>> SymbolValuesOf(
    const ir::Graph& written, absl::Span<const Operand> args);

// StorageOffsetsOf()
//
// The storage offsets of the tensors among `args` (one per placeholder of
// `written`) that do not begin their storage, by input name: a compile's
// CompileOptions::storage_offsets.
absl::flat_hash_map<std::string, int64_t> StorageOffsetsOf(
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

}  // namespace lathe

#endif  // LATHE_DRIVER_ARGUMENTS_H_
