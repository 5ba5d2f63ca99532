// -----------------------------------------------------------------------------
// File: file_check.h
// -----------------------------------------------------------------------------
//
// Runs LLVM's FileCheck (from @llvm_filecheck) from a test, so pass and
// lowering tests can be written as textual IR in, CHECK lines out.
//
// Example:
//
//   EXPECT_OK(RunFileCheck(printed_graph, R"(
//     CHECK: %[[MM:.*]] = aten.mm
//     CHECK-NEXT: aten.relu(%[[MM]])
//   )"));
//
// A test target using it needs no extra data dependency: this library carries
// FileCheck in its runfiles.

#ifndef LATHE_TESTING_FILE_CHECK_H_
#define LATHE_TESTING_FILE_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::testing {

// RunFileCheck()
//
// Checks `input` against the FileCheck directives in `checks` (CHECK,
// CHECK-NEXT, CHECK-NOT, ...). OK when they all match; otherwise an error
// carrying FileCheck's diagnostics.
absl::Status RunFileCheck(absl::string_view input, absl::string_view checks);

// FileCheckPath()
//
// The FileCheck binary this test runs: $LATHE_FILECHECK if set, otherwise the
// one in the test's runfiles.
absl::StatusOr<std::string> FileCheckPath();

}  // namespace lathe::testing

#endif  // LATHE_TESTING_FILE_CHECK_H_
