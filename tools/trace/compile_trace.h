// -----------------------------------------------------------------------------
// File: compile_trace.h
// -----------------------------------------------------------------------------
//
// What a compile made, as trace steps (trace.h): the walk's steps from a
// CompiledGraph (tools/compile.h; compiled with `dump` on, each graph dump
// goes with the step that made it), then, for the CPU backend, a "lower"
// step (the loop IR before and after fusion, the fusion decisions, the
// generated source, the fused graph as Graphviz text) and a "build" step
// (the compiler command, its time, the cache tier). The driver calls it
// once per compile when `--trace FILE` is given.
//
// Example:
//
//   ASSIGN_OR_RETURN(auto c, CompileGraphText(text, {.dump = true}));
//   ASSIGN_OR_RETURN(auto cpu, codegen::CpuFunction::Compile(*c->graph,
//                                                            *c->env));
//   trace::Trace t;
//   trace::RecordCompile(*c, cpu.get(), &t);
//   RETURN_IF_ERROR(t.WriteTo(path));

#ifndef LATHE_TOOLS_TRACE_COMPILE_TRACE_H_
#define LATHE_TOOLS_TRACE_COMPILE_TRACE_H_

#include "codegen/cpp/cpu_function.h"
#include "tools/compile.h"
#include "tools/trace/trace.h"

namespace lathe::trace {

// RecordCompile()
//
// Appends the steps of `compiled` and, when `cpu` is not null, its
// "lower" and "build" steps to `trace`.
void RecordCompile(const CompiledGraph& compiled,
                   const codegen::CpuFunction* cpu, Trace* trace);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_COMPILE_TRACE_H_
