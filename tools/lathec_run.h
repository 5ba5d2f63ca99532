// -----------------------------------------------------------------------------
// File: lathec_run.h
// -----------------------------------------------------------------------------
//
// `lathec run` as a library: the command lathec runs, and what its fuzzer
// drives end to end.
//
//   lathec run GRAPH --input NAME=FILE.npy ... [--backend interp] --out DIR
//       compiles the graph through AOT dispatch (functionalization and its
//       runtime-wrapper plan), runs the functional graph and then the plan,
//       and writes DIR/out0.npy, out1.npy, ... and DIR/mutated/NAME.npy for
//       every input the graph mutated; a scalar input is a 0-d .npy
//       (float64 -> float, int64 -> int). A constant the graph reads
//       (`self.NAME`) is given the same way: --input NAME=FILE.npy.
//   lathec run GRAPH --inputs DIR1 --inputs DIR2 ... --out DIR
//       replays several input sets (DIRk/NAME.npy) and writes DIR/<k>/...;
//       a set the first compile's guards do not admit (e.g. a size the
//       first set had as 1, which is specialized) is compiled again, and
//       "compiles=N" is printed with the reason for each recompile. With
//       --backend cpu the sets go through one CompiledFunction
//       (runtime/compiled_function.h); past --max-compiles N compiles
//       (default 8) a set runs on the interpreter, with one warning line.
//   lathec run --artifact DIR (--input ... | --inputs ...) --out DIR
//       calls an artifact `lathec compile` wrote, loaded with the runtime
//       alone: a set its guards refuse is an error naming the guard.
//   A composite input (`# lathe: composite NAME TYPE`) is given as its inner
//   tensors, NAME_a.npy, NAME_b.npy, ...; a composite output is written the
//   same way (out0_a.npy, ...).
//   --dump-dir DIR
//       also writes DIR/00-aot_dispatch.txt (the functional graph),
//       DIR/NN-PASS.txt (the graph after each pass of the default
//       pipeline), DIR/steps.txt (the time of each step of the walk),
//       DIR/passes.log (the passes' decisions), DIR/runtime_wrapper_plan.cc
//       and DIR/subclass_wrapper_plan.cc (the plans as C++).
//   --passes NAME,NAME,...|none
//       runs these passes (tensorify_scalars, decompose, cse, dce,
//       constant_fold, remove_noop_ops, reinplace), in this order, each once,
//       instead of the default pipeline; `none` runs no pass.
//   --max-memory BYTES (suffixes K, M, G, T)
//       the most memory the run's tensors may hold together (default: half
//       the machine's physical memory); .npy files are bounded by it too.
//   --max-elements N
//       the most elements a tensor one op takes or makes may have (default
//       2^40), on both backends: past it a kernel would run for hours.
//
// Inputs are laid out as the graph's annotations say (a Fortran-order .npy
// for a row-major input is copied into row-major order). Every error is one
// line on stderr ("lathec: ...") with exit status 1 (2 for usage). The
// files of a run are staged beside --out and moved there together, so they
// all appear or none does; an existing --out is replaced whole when it is
// empty or an earlier lathec output (it holds .lathec-out), and refused
// otherwise. The same holds for --dump-dir (.lathec-dump).
//
// Example:
//
//   absl::Status s = LathecRun({"g.txt", "--inputs", "in", "--out", "out"});
//   if (!s.ok()) std::fprintf(stderr, "lathec: %s\n", s.message().data());

#ifndef LATHE_TOOLS_LATHEC_RUN_H_
#define LATHE_TOOLS_LATHEC_RUN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace lathe {

// lathec's usage line.
extern const char kLathecUsage[];

// LathecRun()
//
// `lathec run ARGS...`: compiles, runs every input set, prints one line per
// file written (and compiles=N for --inputs) and writes the files; an error
// writes nothing.
absl::Status LathecRun(const std::vector<std::string>& args);

// LathecCompile()
//
// `lathec compile GRAPH -o DIR [--input NAME=FILE.npy ...]`: compiles the
// graph for the CPU (example inputs give the hints its text lacks) into a
// self-contained artifact directory (runtime/artifact.h) that
// `lathec run --artifact DIR` and runtime::LoadArtifact open without the
// compiler; written all at once.
absl::Status LathecCompile(const std::vector<std::string>& args);

// LathecGuards()
//
// `lathec guards GRAPH [--input NAME=FILE.npy ...]`: prints the guard set a
// compile makes, as text and as the C++ function compiled into the .so.
absl::Status LathecGuards(const std::vector<std::string>& args);

}  // namespace lathe

#endif  // LATHE_TOOLS_LATHEC_RUN_H_
