// -----------------------------------------------------------------------------
// File: input_arguments.h
// -----------------------------------------------------------------------------
//
// The arguments `lathec run` calls a function with, arranged from one input
// set's tensors (input_sets.h): one per user argument, in order, each laid
// out as its annotation says (a .npy file's order, C or Fortran, is how it
// was saved, not part of the value, so a tensor is copied into the
// annotated strides when they differ), a Sym input from a 0-d file (float64
// -> float, int64 -> int), a composite built from its inner tensors by its
// type's own rule, then the constants the graph reads. For a graph, the
// annotations are its placeholders' (evaluated with //symbolic); an
// artifact's arguments are the runtime's to arrange from its manifest
// (runtime/arrange_arguments.h), as any program linking //runtime does.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::vector<Operand> args,
//                    LoadArguments(*written, *written, composites, set,
//                                  ValuesOf(*written, composites, set),
//                                  ConstantsOf(*written)));
//   ASSIGN_OR_RETURN(std::vector<Operand> results,
//                    f->Call(absl::MakeSpan(args)));

#ifndef LATHE_TOOLS_INPUT_ARGUMENTS_H_
#define LATHE_TOOLS_INPUT_ARGUMENTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aot/flatten_composites.h"
#include "ir/graph.h"
#include "runtime/arrange_arguments.h"
#include "runtime/artifact.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"
#include "tools/input_sets.h"

namespace lathe {

// InAnnotatedLayout()
//
// `t` in the layout `m` (the annotation the graph was compiled for) gives
// its sizes, with `values` for its symbols: the same tensor when it already
// is (or when its dtype, rank or sizes differ: the run reports those), else
// a copy laid out so. A layout whose elements overlap cannot hold any value:
// an error naming input `name`.
absl::StatusOr<Tensor> InAnnotatedLayout(const std::string& name,
                                         const ir::TensorMeta& m,
                                         const Tensor& t,
                                         const symbolic::Assignment& values);

// LoadArguments()
//
// The user's arguments of `set`: one per placeholder of `written` (laid out
// as annotated; a composite from its inner tensors), then the constants it
// reads (`self.NAME`, given like inputs, by NAME) as `constants` names them.
// `leaves` is the graph whose placeholders annotate the files' tensors (the
// compiled one names a composite's inner tensors). A file the set lacks is
// an error naming it.
absl::StatusOr<std::vector<Operand>> LoadArguments(
    const ir::Graph& written, const ir::Graph& leaves,
    const Composites& composites, const InputSet& set,
    const SymbolValues& values, const std::vector<std::string>& constants);

// An artifact's arguments and results as lathec reads and writes them.
struct ArtifactLayout {
  aot::CompositeSignature signature;  // per argument and result
  std::vector<std::string> names;     // the arguments' file names
  std::vector<std::string> files;     // the files a set gives (LeafNames)
};

// ArtifactLayoutOf()
//
// The layout of `m`'s arguments and results (their whole trees, nested
// composites included; ArgumentTree refuses a type this program does not
// register); a constant `self.NAME` is read from NAME.
absl::StatusOr<ArtifactLayout> ArtifactLayoutOf(const Manifest& m);

// ArtifactArguments()
//
// The arguments of an artifact with manifest `m` from `set` (read), as
// the runtime arranges them (ArrangeArguments: each plain tensor laid out
// as its annotation says, a number from a 0-d file, a composite from its
// inner tensors, None for a None argument); a number's file with dims is
// an error naming the file. The layout is ArtifactLayoutOf(m)'s.
absl::StatusOr<std::vector<Operand>> ArtifactArguments(
    const Manifest& m, const ArtifactLayout& layout, const InputSet& set);

}  // namespace lathe

#endif  // LATHE_TOOLS_INPUT_ARGUMENTS_H_
