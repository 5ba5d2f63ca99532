// -----------------------------------------------------------------------------
// File: codegen_testing.h
// -----------------------------------------------------------------------------
//
// The one way lowering and scheduling tests are written: graph text in
// (print_readable() form, parsed and shape-propagated here), the loop IR
// PrintProgram writes out, FileCheck CHECK lines against it. Scheduling
// tests also see the fusion log, one "log: <entry>" line per decision after
// the program.
//
// Example:
//
//   EXPECT_OK(LowerAndFileCheck(R"IR(def forward(self, x: "f32[4]"):
//       neg = torch.ops.aten.neg.default(x)
//       return (neg,)
//   )IR", R"(
//   CHECK: kernel k0 ranges=[4]
//   CHECK: neg(%0) : f32
//   )"));

#ifndef LATHE_CODEGEN_CODEGEN_TESTING_H_
#define LATHE_CODEGEN_CODEGEN_TESTING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/lowering.h"

namespace lathe::codegen {

// LowerText()
//
// Parses `text`, propagates shapes into a fresh ShapeEnv and lowers it for
// a target with `routines`.
absl::StatusOr<LoweredGraph> LowerText(absl::string_view text,
                                       Routines routines = {});

// ScheduleText()
//
// LowerText, then Schedule: the scheduled program and the fusion log.
struct Scheduled {
  LoweredGraph lowered;
  std::vector<std::string> log;
  int kernels_before = 0;  // as lowered
};
absl::StatusOr<Scheduled> ScheduleText(absl::string_view text,
                                       Routines routines = {});

// PrintScheduled()
//
// PrintProgram of the scheduled program, then one "log: <entry>" line per
// fusion-log entry.
std::string PrintScheduled(const Scheduled& s);

// LowerAndFileCheck()
//
// LowerText, then FileCheck `checks` against PrintProgram's text (which the
// error carries when a check fails).
absl::Status LowerAndFileCheck(absl::string_view text,
                               absl::string_view checks);

// ScheduleAndFileCheck()
//
// ScheduleText, then FileCheck `checks` against PrintScheduled's text.
absl::Status ScheduleAndFileCheck(absl::string_view text,
                                  absl::string_view checks);

// FileCheckScheduled()
//
// FileCheck `checks` against PrintScheduled(s) (for a test that also looks
// at the kernel counts).
absl::Status FileCheckScheduled(const Scheduled& s, absl::string_view checks);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CODEGEN_TESTING_H_
