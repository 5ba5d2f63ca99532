// -----------------------------------------------------------------------------
// File: dot_svg.h
// -----------------------------------------------------------------------------
//
// Graphviz text rendered as SVG by the `dot` program (Debian's graphviz),
// when it is installed: what the compile report inlines as the fused-graph
// picture. No shell is involved (the program is run directly, its input
// from a private temporary file), and a `dot` that runs too long is killed.
//
// Example:
//
//   if (std::optional<std::string> svg = DotToSvg(cpu->fusion_dot())) {
//     html += *svg;   // "<svg ...>...</svg>"
//   }

#ifndef LATHE_TOOLS_TRACE_DOT_SVG_H_
#define LATHE_TOOLS_TRACE_DOT_SVG_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace lathe::trace {

// FindProgram()
//
// The path of executable `name` in one of the directories of $PATH, or "".
std::string FindProgram(absl::string_view name);

// DotToSvg()
//
// `dot -Tsvg` of `dot_text`, from the `<svg` element on (no XML prolog), or
// nothing when `dot` is not on $PATH, fails, or runs past
// `timeout_seconds`.
std::optional<std::string> DotToSvg(absl::string_view dot_text,
                                    int timeout_seconds = 30);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_DOT_SVG_H_
