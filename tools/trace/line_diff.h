// -----------------------------------------------------------------------------
// File: line_diff.h
// -----------------------------------------------------------------------------
//
// A line diff of two texts (Myers' O((N+M)D) algorithm, the one `diff`
// uses): the shortest edit script, as every line of both texts in order,
// each kept, removed or added. The compile report shows what each pass
// changed in the graph with it.
//
// Example:
//
//   for (const DiffLine& d : DiffLines("a\nb\nc\n", "a\nc\nd\n")) {
//     // {kSame "a"}, {kRemoved "b"}, {kSame "c"}, {kAdded "d"}
//   }

#ifndef LATHE_TOOLS_TRACE_LINE_DIFF_H_
#define LATHE_TOOLS_TRACE_LINE_DIFF_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace lathe::trace {

// One line of a diff.
struct DiffLine {
  enum class Op { kSame, kRemoved, kAdded };
  Op op = Op::kSame;
  std::string text;  // without its newline

  bool operator==(const DiffLine& o) const {
    return op == o.op && text == o.text;
  }
};

// The most edits DiffLines searches for before it gives the whole of
// `before` as removed and the whole of `after` as added.
inline constexpr int kMaxDiffEdits = 2000;

// DiffLines()
//
// The lines of `before` and `after` (split at '\n'; a final newline ends
// the last line rather than starting an empty one) as a shortest edit
// script, removals before additions where both are possible.
std::vector<DiffLine> DiffLines(absl::string_view before,
                                absl::string_view after,
                                int max_edits = kMaxDiffEdits);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_LINE_DIFF_H_
