// -----------------------------------------------------------------------------
// File: arrange_arguments.h
// -----------------------------------------------------------------------------
//
// An artifact's arguments arranged from plain tensors by name, from its
// manifest alone (no compiler): what `lathec run --artifact` does with its
// .npy files, for any program that links //runtime. Each argument, in the
// manifest's order:
//
//   tensor     the tensor named as the argument ("x"; a constant
//              "self.w" by "w"), laid out as the manifest's annotation says
//              (copied into the annotated strides when its own differ: a
//              transposed or channels-last annotation). The annotation's
//              symbols take the values the tensors give them where a size
//              or stride is a bare symbol; a stride the runtime cannot
//              evaluate (it reads sums, products, floor divisions, integer
//              powers, Max and Min of integers and symbols), or sizes other
//              than the annotation's, leave the tensor as given, for the
//              call to check;
//   number     int, float or bool: from a 0-d tensor of that name;
//   composite  built by its registered type from its inner tensors, named
//              OUTER_<inner name> all the way down ("x_a", "x_b"; for a
//              pair of pairs "x_a_a", "x_a_b", "x_b_a", "x_b_b"), as the
//              manifest's tree says (Manifest::composites);
//   none       None (no tensor read).
//
// Every error is one line naming the argument or tensor: a missing tensor,
// a scalar given as a tensor with dims, a wrong rank (the manifest's
// words, as CompiledFunction::Call gives them), a layout whose elements
// overlap, inner tensors that do not fit their composite type.
//
// Example:
//
//   ASSIGN_OR_RETURN(LoadedArtifact a, LoadArtifact("/tmp/mlp"));
//   absl::flat_hash_map<std::string, Tensor> named = {{"x", x}, {"w", w}};
//   ASSIGN_OR_RETURN(std::vector<Operand> args,
//                    ArrangeArguments(a.manifest, named));
//   ASSIGN_OR_RETURN(std::vector<Operand> out,
//                    a.function->Call(absl::MakeSpan(args)));

#ifndef LATHE_RUNTIME_ARRANGE_ARGUMENTS_H_
#define LATHE_RUNTIME_ARRANGE_ARGUMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/artifact.h"
#include "runtime/composite.h"
#include "runtime/composite_layout.h"
#include "runtime/loaded_graph.h"
#include "runtime/tensor.h"

namespace lathe {

// InputName()
//
// The name argument `a`'s tensor is given by: its own, a constant's
// without "self." ("self.w" -> "w").
std::string InputName(const ArgumentSpec& a);

// ArgumentTree()
//
// Argument `k` of `m` as a layout (a plain value's rank, -1 where the
// manifest does not say; a composite's type and inner values); an error
// naming the argument when its type is not registered in this program.
absl::StatusOr<CompositeLayout> ArgumentTree(const Manifest& m, int k);

// InputNames()
//
// The names of the tensors ArrangeArguments reads for `m`, in order: one
// per plain or number argument, a composite's leaves, none for None.
absl::StatusOr<std::vector<std::string>> InputNames(const Manifest& m);

// ArrangeArguments()
//
// One operand per argument of `m`, from the tensors in `inputs` by name
// (see the file comment); `inputs` itself is not changed.
absl::StatusOr<std::vector<Operand>> ArrangeArguments(
    const Manifest& m, const absl::flat_hash_map<std::string, Tensor>& inputs);

// Compose()
//
// Composite `name` of `type` from its `inner` values (moved from), with the
// outer sizes and strides of the first; the type's own rule says whether
// they fit, its error naming `name`.
absl::StatusOr<Operand> Compose(const CompositeType& type,
                                absl::string_view name,
                                std::vector<Operand> inner);

// LaidOut()
//
// `t` with `strides` and storage `offset`: `t` itself when it has them,
// else a copy in storage of its own. A layout whose elements overlap cannot
// hold every value: an error naming input `name` and `layout`, the
// annotation it came from.
absl::StatusOr<Tensor> LaidOut(const Tensor& t,
                               absl::Span<const int64_t> strides,
                               int64_t offset, absl::string_view name,
                               absl::string_view layout);

}  // namespace lathe

#endif  // LATHE_RUNTIME_ARRANGE_ARGUMENTS_H_
