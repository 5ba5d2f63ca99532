// -----------------------------------------------------------------------------
// File: input_sets.h
// -----------------------------------------------------------------------------
//
// The input sets `lathec` reads: which files a graph (or an artifact) takes
// (each user argument's leaves, a composite's inner tensors, and each
// constant, by name), where each set finds them (`--inputs DIR` gives
// DIR/NAME.npy; `--input NAME=FILE.npy` names them one by one), reading
// them (each file once, so a pipe works), and what a set gives the bare
// symbols of the placeholders' annotations (the compile-time hints, and the
// values that lay its inputs out). Errors name the set ("input set 1
// (DIR): ...") where there are several.
//
// Example:
//
//   ASSIGN_OR_RETURN(Composites composites, aot::DeclaredComposites(g));
//   std::vector<std::string> names = FileNames(g, composites);
//   ASSIGN_OR_RETURN(std::vector<InputSet> sets,
//                    InputSets({}, {"in0", "in1"}, names, "graph"));
//   for (InputSet& set : sets) RETURN_IF_ERROR(ReadSet(set));
//   SymbolValues first = ValuesOf(g, composites, sets[0]);  // hints

#ifndef LATHE_TOOLS_INPUT_SETS_H_
#define LATHE_TOOLS_INPUT_SETS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aot/flatten_composites.h"
#include "ir/graph.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"

namespace lathe {

// The composites a graph declares (`# lathe: composite NAME TYPE`), by
// argument name.
using Composites = absl::flat_hash_map<std::string, CompositeLayout>;

// One input set: every file it names (NAME of NAME.npy), each read once
// (so a pipe such as `--input x=<(cat x.npy)` works).
struct InputSet {
  std::string label;  // how errors name the set: "" or "input set 1 (DIR): "
  absl::flat_hash_map<std::string, std::string> paths;
  absl::flat_hash_map<std::string, Tensor> tensors;
};

// The --input flags: NAME and FILE, in the order given.
using NamedFiles = std::vector<std::pair<std::string, std::string>>;

// LayoutOf()
//
// The declared layout of input `name` (plain when not a composite).
CompositeLayout LayoutOf(const Composites& composites, const std::string& name);

// FileNames()
//
// The names of the files a graph reads: each user argument's leaves (a
// composite's inner tensors, x_a, x_b, ...; none for an unannotated
// parameter) and each constant (`self.NAME` read as NAME).
std::vector<std::string> FileNames(const ir::Graph& graph,
                                   const Composites& composites);

// InputSets()
//
// The input sets a run reads: one per directory of `dirs` (DIR/NAME.npy
// for each of `names`), or the `files` (each a name of `names`, once);
// `what` names the source of `names` in errors ("graph", "artifact").
absl::StatusOr<std::vector<InputSet>> InputSets(
    const NamedFiles& files, const std::vector<std::string>& dirs,
    const std::vector<std::string>& names, absl::string_view what);

// ExampleSet()
//
// The one set of example inputs `lathec compile` and `lathec guards` take
// for hints: the `files` (each once), and from each of `dirs` every one of
// `names`; not yet read. Names the graph does not take are not refused.
absl::StatusOr<InputSet> ExampleSet(const NamedFiles& files,
                                    const std::vector<std::string>& dirs,
                                    const std::vector<std::string>& names);

// ReadSet()
//
// Reads every file of `set` into its tensors; the error is ReadNpy's, with
// the set's label in front.
absl::Status ReadSet(InputSet& set);

// What an input set gives the bare symbols of the placeholders' annotations
// (sizes, strides, int scalars): the compile-time hints when the set is
// the first, and the values that lay its inputs out.
struct SymbolValues {
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  symbolic::Assignment values;
};

// ValuesOf()
//
// The symbol values `set` (read) gives `graph`'s placeholders: each
// placeholder's (outer) tensor, or an int scalar's value; a file the set
// lacks gives nothing (the run reports it).
SymbolValues ValuesOf(const ir::Graph& graph, const Composites& composites,
                      const InputSet& set);

}  // namespace lathe

#endif  // LATHE_TOOLS_INPUT_SETS_H_
