// -----------------------------------------------------------------------------
// File: compile_trace.h
// -----------------------------------------------------------------------------
//
// What a compile made, as trace steps (trace.h): each step of the driver's
// walk (driver/compile.h) with what it made — the graph after AOT dispatch
// and after each pass (compiled with `dump` on), the passes' log, the
// guards; with a backend the loop IR before and after scheduling, the
// fusion decisions and the fused graph (Graphviz text), the generated
// source, and the build's command and cache tier. lathec calls it once per
// compile when `--trace FILE` is given (after one "parse" step of its own:
// the text is parsed once however many compiles follow).
//
// Example:
//
//   ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, "mlp.txt"));
//   ASSIGN_OR_RETURN(auto c, Compile(parsed, {.dump = true,
//                                             .backend = &CpuBackend()}));
//   trace::Trace t;
//   t.Step("parse", parsed.seconds);
//   trace::RecordCompile(*c, &t);
//   RETURN_IF_ERROR(t.WriteTo(path));

#ifndef LATHE_TOOLS_TRACE_COMPILE_TRACE_H_
#define LATHE_TOOLS_TRACE_COMPILE_TRACE_H_

#include "driver/compile.h"
#include "tools/trace/trace.h"

namespace lathe::trace {

// RecordCompile()
//
// Appends the steps of `compiled` to `trace`, each with what it made.
void RecordCompile(const CompiledGraph& compiled, Trace* trace);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_COMPILE_TRACE_H_
