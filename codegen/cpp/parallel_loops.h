// -----------------------------------------------------------------------------
// File: parallel_loops.h
// -----------------------------------------------------------------------------
//
// The text of a generated kernel's parallel loops (cpp_emitter.h). Each is
// a lambda over a chunk [lathe_lo, lathe_hi) of a loop's flattened
// iterations, run on the runtime's pool (runtime/thread_pool.h) through the
// source's lathe_parallel (ParallelPrelude): the calling thread starts on
// the chunks at once and no thread the scheduler holds back is waited for
// unless it holds a chunk, where an OpenMP team's barrier waits for every
// thread. The lambda takes the kernel's parameters as its own (kParamsMark,
// kArgsMark), not as captures: GCC turned a simd loop's loads through a
// captured pointer into gathers (softmax's row max ran 2x slower). A loop
// that reduces gives each chunk its own accumulators and folds them into
// the caller's under a lock (CombineInto).
//
// Example (a kernel's two outer loops, flattened):
//
//   std::string out, in = "  ";
//   const std::string lambda = OpenPooledLambda(
//       {.n = "4096", .grain = 1, .worth = "true", .threads = "0"}, in, &out);
//   in += "  ";
//   const std::string loop = OpenFlatLoop({"x0", "x1"}, {a, b}, cpp,
//                                         "int32_t", false, "", &in, &out);
//   // ... the body at `in` ...
//   absl::StrAppend(&out, loop, lambda);

#ifndef LATHE_CODEGEN_CPP_PARALLEL_LOOPS_H_
#define LATHE_CODEGEN_CPP_PARALLEL_LOOPS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "symbolic/expr.h"

namespace lathe::codegen {

// Where a pooled loop's lambda takes the kernel's parameters, and where it
// is passed them; the emitter writes them once the body has named its
// buffers.
inline constexpr char kParamsMark[] = "/*lathe:params*/";
inline constexpr char kArgsMark[] = "/*lathe:args*/";

// The generated source's lathe_parallel(rt, n, grain, worth, threads, f,
// args...): f(lo, hi, args...) over chunks of [0, n) of a multiple of
// `grain`, on the pool when `worth` and the team (`threads`, 0: the
// caller's OpenMP count) has more than one thread, else f(0, n, args...).
absl::string_view ParallelPrelude();

// A pooled loop's lambda.
struct PooledLambda {
  std::string n;               // the iterations (C++)
  int64_t grain = 1;           // a chunk is a multiple of this
  std::string worth = "true";  // whether to use threads (C++)
  std::string threads = "0";   // the team (C++; 0: the caller's)
  std::string captures;        // copied into the lambda: scalars only
  std::string params;          // after the kernel's: ", T* a, ..."
  std::string args;            // their values: ", &a, ..."
};

// Appends the opening of `l`'s lambda at `indent`; returns the text that
// closes it (the call's arguments).
std::string OpenPooledLambda(const PooledLambda& l, absl::string_view indent,
                             std::string* out);

// Appends a loop over the chunk [lathe_lo, lathe_hi) of the flattened
// iterations of loops `vars` (extents `ranges`), binding them: one loop
// (with `#pragma omp simd` and `simd_clauses` when `simd`), or the first
// indices by division and a carry step per iteration. Moves `*indent`
// inside; returns the text that closes it, at the indent it had.
std::string OpenFlatLoop(const std::vector<std::string>& vars,
                         const std::vector<symbolic::Expr>& ranges,
                         const std::function<std::string(symbolic::Expr)>& cpp,
                         absl::string_view index_type, bool simd,
                         absl::string_view simd_clauses, std::string* indent,
                         std::string* out);

// The statement that folds a chunk's partial `part` into `*target` by
// OpenMP's reduction operator `op` ("+", "*", "max", "min", "|", "&").
std::string CombineInto(absl::string_view op, absl::string_view target,
                        absl::string_view part);

// An accumulator of the caller's that a pooled loop's chunks fold theirs
// (of the same name) into: its C type, name, and OpenMP reduction operator
// ("welford": lathe_welford_merge).
struct Partial {
  std::string type, name, op;
};

// Adds `partials` to `l`'s parameters and arguments (each by pointer,
// lathe_<name>; and the caller's lock, an int lathe_held); returns the
// statements, at `indent`, that fold a chunk's into them under the lock
// ("" for none).
std::string FoldPartials(const std::vector<Partial>& partials,
                         absl::string_view indent, PooledLambda* l);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_PARALLEL_LOOPS_H_
