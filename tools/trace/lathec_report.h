// -----------------------------------------------------------------------------
// File: lathec_report.h
// -----------------------------------------------------------------------------
//
// `lathec report` as a library: a compile trace (trace.h, written by
// `--trace FILE`) rendered as one self-contained HTML page (report.h).
//
//   lathec report TRACE -o report.html
//       reads TRACE (JSON Lines, one step a line) and writes the page,
//       atomically; prints "wrote report.html (N steps)". A missing or
//       malformed trace is one error naming the file and line.
//
// Example:
//
//   absl::Status s = LathecReport({"mlp.trace.jsonl", "-o", "report.html"});

#ifndef LATHE_TOOLS_TRACE_LATHEC_REPORT_H_
#define LATHE_TOOLS_TRACE_LATHEC_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace lathe::trace {

// The usage of `lathec report` (after "usage: ").
inline constexpr char kLathecReportUsage[] =
    "lathec report TRACE -o REPORT.html";

// LathecReport()
//
// `lathec report ARGS...`; InvalidArgument with the usage for bad
// arguments.
absl::Status LathecReport(const std::vector<std::string>& args);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_LATHEC_REPORT_H_
