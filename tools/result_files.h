// -----------------------------------------------------------------------------
// File: result_files.h
// -----------------------------------------------------------------------------
//
// The files `lathec run` writes for a call: OUT/out0.npy, out1.npy, ... per
// result (a composite result as its inner tensors, out0_a.npy, ...; a number
// as a 0-d array; a None result has no file), and OUT/mutated/NAME.npy for
// every argument the call wrote (in mutated/, so no input name can collide
// with an output's), each under a prefix per input set ("1/" with
// --inputs). They are made in memory first (ResultFiles), then written all
// at once (StageResultFiles, then StagedDir::Commit): all of a run's files
// appear, or none does.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::vector<PendingFile> files,
//                    ResultFiles(signature, names, results, args, written,
//                                ""));
//   ASSIGN_OR_RETURN(StagedDir out, StageResultFiles("out", files));
//   RETURN_IF_ERROR(out.Commit());

#ifndef LATHE_TOOLS_RESULT_FILES_H_
#define LATHE_TOOLS_RESULT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aot/flatten_composites.h"
#include "runtime/composite.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"

namespace lathe {

// A file lathec writes: its path relative to the output directory.
struct PendingFile {
  std::string path;  // "" for a None result, which has no file
  Tensor tensor;     // whose storage `npy` may view
  NpyParts npy;
  std::string summary;  // the line lathec prints: "out0.npy: f32[2][1]cpu"
};

// AsTensor()
//
// Result `index` as a tensor to save: a tensor itself, a number as a 0-d
// array (bool, int64 or float64); anything else is an error naming it.
absl::StatusOr<Tensor> AsTensor(const Operand& o, int index);

// ResultFiles()
//
// The files of a call's `results` and of the `arguments` it wrote
// (`written` per user argument, named `names_of_arguments`), laid out as
// `signature` says, not yet written, under `prefix` ("" or "1/"). A value
// not of the shape `signature` gives it (another count, a composite of
// another type or arity, a plain value where it gives a composite) is an
// error naming it.
absl::StatusOr<std::vector<PendingFile>> ResultFiles(
    const aot::CompositeSignature& signature,
    const std::vector<std::string>& names_of_arguments,
    absl::Span<const Operand> results, absl::Span<const Operand> arguments,
    const std::vector<bool>& written, const std::string& prefix);

// StageResultFiles()
//
// `files` staged for directory `dir` (StagedDir, marked as lathec's output:
// an existing `dir` is replaced only when empty or an earlier output);
// Commit() moves them there at once.
absl::StatusOr<StagedDir> StageResultFiles(
    const std::string& dir, const std::vector<PendingFile>& files);

}  // namespace lathe

#endif  // LATHE_TOOLS_RESULT_FILES_H_
