// -----------------------------------------------------------------------------
// File: report.h
// -----------------------------------------------------------------------------
//
// A compile trace (trace.h) as one self-contained HTML page, what
// `lathec report TRACE -o report.html` writes: inline CSS, no script, and a
// Content-Security-Policy that lets the page load nothing from anywhere.
// Its sections, each with a stable id:
//
//   #timeline      a bar per step, as long as its time relative to the
//                  longest, with its name and milliseconds
//   #passes        the graph after each step that made one, and a line diff
//                  (line_diff.h) from the graph before it
//   #kernels       the loop IR before and after fusion (and their diff), the
//                  fusion decisions and the generated source
//   #fusion-graph  the fused graph: Graphviz text rendered to inline SVG by
//                  `dot` when it is installed (dot_svg.h), else the text
//   #guards        the guards
//   #build         each build command, its time and its cache tier
//   #other         anything else a step made ("text" and unknown kinds)
//
// All trace text is HTML-escaped; a section with nothing to show says so.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::vector<trace::TraceStep> steps,
//                    trace::ReadTrace("mlp.trace.jsonl"));
//   RETURN_IF_ERROR(WriteFileAtomic("report.html",
//   trace::RenderReport(steps)));

#ifndef LATHE_TOOLS_TRACE_REPORT_H_
#define LATHE_TOOLS_TRACE_REPORT_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/trace/trace.h"

namespace lathe::trace {

struct ReportOptions {
  std::string title = "lathe compile report";
  // Graphviz text to SVG; unset: DotToSvg (the `dot` program, if any).
  std::function<std::optional<std::string>(absl::string_view)> dot_to_svg;
  // Unchanged lines kept around each change in a diff.
  int diff_context = 3;
};

// The ids of the report's sections, in page order.
inline constexpr const char* kReportSections[] = {
    "timeline", "passes", "kernels", "fusion-graph",
    "guards",   "build",  "other"};

// HtmlEscape()
//
// `text` (as valid UTF-8) with & < > " ' as character references.
std::string HtmlEscape(absl::string_view text);

// RenderReport()
//
// The HTML page for `steps`.
std::string RenderReport(const std::vector<TraceStep>& steps,
                         const ReportOptions& options = {});

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_REPORT_H_
