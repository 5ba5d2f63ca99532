// -----------------------------------------------------------------------------
// File: trace.h
// -----------------------------------------------------------------------------
//
// A compile's structured trace: one record per step of the walk (its name,
// how long it took, and what it made — the graph after a pass, the loop IR
// before and after fusion, the fusion decisions, the generated source, the
// guards, the build command, the cache tier), written as JSON Lines, one
// JSON object per step:
//
//   {"step":"cse","seconds":0.000412,"made":[{"kind":"graph","title":
//    "02-cse.txt","text":"class GraphModule..."}]}
//
// The driver's `--trace FILE` writes one (RecordCompile, compile_trace.h,
// turns a compile's results into steps); `lathec report FILE -o
// report.html` reads it back (ReadTrace) and renders it (report.h). The format
// is the contract between the two: the reader ignores members it does not know,
// and an item kind it does not know is shown as text.
//
// Example:
//
//   trace::Trace t;
//   t.Step("parse", 0.0004);
//   t.Step("cse", 0.0012, {{trace::kGraph, "02-cse.txt", PrintGraph(g)}});
//   RETURN_IF_ERROR(t.WriteTo("/tmp/mlp.trace.jsonl"));
//   ASSIGN_OR_RETURN(std::vector<trace::TraceStep> steps,
//                    trace::ReadTrace("/tmp/mlp.trace.jsonl"));

#ifndef LATHE_TOOLS_TRACE_TRACE_H_
#define LATHE_TOOLS_TRACE_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::trace {

// The kinds of thing a step makes (TraceItem::kind).
inline constexpr char kGraph[] = "graph";           // graph text after a step
inline constexpr char kLoopIr[] = "loop_ir";        // loop IR (before/after)
inline constexpr char kFusionLog[] = "fusion_log";  // fusion decisions
inline constexpr char kSource[] = "source";         // generated C++
inline constexpr char kGuards[] = "guards";         // the guard set
inline constexpr char kDot[] = "dot";               // Graphviz text
inline constexpr char kCommand[] = "command";       // a build command line
inline constexpr char kCache[] = "cache";           // cache tier, or "miss"
inline constexpr char kText[] = "text";             // anything else

// One thing a step made.
struct TraceItem {
  std::string kind;   // one of the kinds above
  std::string title;  // e.g. "02-cse.txt", "kernel.cc"
  std::string text;
};

// One step of a compile.
struct TraceStep {
  std::string name;  // "parse", "aot_dispatch", a pass's name, "build", ...
  double seconds = 0;
  std::vector<TraceItem> made;
};

// The largest trace ReadTrace reads unless told otherwise (256 MiB).
inline constexpr int64_t kMaxTraceBytes = int64_t{256} << 20;

// A trace being recorded: steps in the order they ran.
class Trace {
 public:
  // Step()
  //
  // Records step `name`, which took `seconds` and made `made`.
  void Step(std::string name, double seconds, std::vector<TraceItem> made = {});

  const std::vector<TraceStep>& steps() const { return steps_; }

  // ToJsonLines()
  //
  // The trace as JSON Lines: one object per step, each line ending in '\n'.
  std::string ToJsonLines() const;

  // WriteTo()
  //
  // Replaces `path` with ToJsonLines(), atomically (a reader sees the whole
  // trace or none); an error naming `path`.
  absl::Status WriteTo(const std::string& path) const;

 private:
  std::vector<TraceStep> steps_;
};

// StepToJson()
//
// One step as one line of JSON (no newline).
std::string StepToJson(const TraceStep& step);

// ParseTrace()
//
// The steps of JSON Lines `text` (blank lines skipped); InvalidArgument
// "SOURCE: line N: expected ..." for the first line that is not a step.
absl::StatusOr<std::vector<TraceStep>> ParseTrace(absl::string_view text,
                                                  absl::string_view source);

// ReadTrace()
//
// ParseTrace of the file at `path` (at most `max_bytes`), errors naming it.
absl::StatusOr<std::vector<TraceStep>> ReadTrace(
    const std::string& path, int64_t max_bytes = kMaxTraceBytes);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_TRACE_H_
