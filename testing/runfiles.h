// -----------------------------------------------------------------------------
// File: runfiles.h
// -----------------------------------------------------------------------------
//
// The one way lathe's tests find their data files: a path relative to the
// workspace root, resolved in the test's runfiles ($TEST_SRCDIR/
// $TEST_WORKSPACE), and the test's scratch directory ($TEST_TMPDIR).
//
// Example:
//
//   ASSERT_OK_AND_ASSIGN(std::string text,
//                        ReadRunfile("ir/testdata/graphs/mlp.txt"));
//   std::string out = TestTmpPath("out");

#ifndef LATHE_TESTING_RUNFILES_H_
#define LATHE_TESTING_RUNFILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::testing {

// The absolute path of workspace-relative `path` in the test's runfiles.
std::string RunfilePath(absl::string_view path);

// The absolute path of `path` in external repository `repo`'s runfiles
// ($TEST_SRCDIR/`repo`/`path`), e.g. a tool from an http_archive.
std::string ExternalRunfilePath(absl::string_view repo, absl::string_view path);

// The contents of runfile `path`; NotFound naming it when it cannot be read.
absl::StatusOr<std::string> ReadRunfile(absl::string_view path);

// `name` under the test's scratch directory ($TEST_TMPDIR, else /tmp).
std::string TestTmpPath(absl::string_view name);

// Points lathe's compile cache ($LATHE_CACHE_DIR, which lathec and
// DefaultCompileCache read) at the test's scratch directory unless the
// environment chose one: Bazel runs tests without $HOME, so the cache
// would keep no disk tier and every build would parse its backend's
// prelude again instead of reading its precompiled form. Call it before
// the process's first compile (its cache is made once).
void UseTestCompileCache();

}  // namespace lathe::testing

#endif  // LATHE_TESTING_RUNFILES_H_
