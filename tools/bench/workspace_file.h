// -----------------------------------------------------------------------------
// File: workspace_file.h
// -----------------------------------------------------------------------------
//
// For the benchmark binaries: a file of the workspace, from the runfiles
// (bazel run; TEST_SRCDIR or RUNFILES_DIR; the binary's own .runfiles) or,
// run by hand from the workspace root, from the source tree.
//
// Example:
//
//   SetBenchmarkBinary(argv[0]);
//   ASSIGN_OR_RETURN(std::string text,
//                    ReadWorkspaceFile("tools/bench/graphs/mlp.txt"));

#ifndef LATHE_TOOLS_BENCH_WORKSPACE_FILE_H_
#define LATHE_TOOLS_BENCH_WORKSPACE_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace lathe {

// Records the binary's path (argv[0]), whose .runfiles are searched.
void SetBenchmarkBinary(const char* argv0);

// The contents of workspace file `path`.
absl::StatusOr<std::string> ReadWorkspaceFile(const std::string& path);

}  // namespace lathe

#endif  // LATHE_TOOLS_BENCH_WORKSPACE_FILE_H_
