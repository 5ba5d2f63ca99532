// -----------------------------------------------------------------------------
// File: autotune.h
// -----------------------------------------------------------------------------
//
// Autotuning (lathec --autotune, CompileOptions::autotune; off unless
// asked, and in tests): how many threads each kernel of a compiled graph
// runs on, and which algorithm each 3x3 convolution runs, measured at
// compile time.
//
// A kernel is tunable when it runs on the team's threads (the runtime's
// pool, runtime/thread_pool.h): a parallel loop, a matrix product the
// runtime hands to oneDNN's sgemm (which takes the caller's thread count),
// or a batched product (sgemm or Eigen's dgemm) whose batch may be split
// over the team. The tuner builds the program once
// more with every tunable kernel reading its thread count from a table the
// library exports and adding its own time to another
// (cpp_emitter.h: CppEmitOptions::tuning_table), calls it on inputs made
// from the graph's annotations (sizes at their hints), and for each
// candidate thread count (the whole team, one, half the team) runs every
// kernel with it, in interleaved rounds. A convolution of a 3x3 kernel,
// stride 1 (two spatial dims, one group) is measured with oneDNN's direct
// algorithm (the whole team's candidate) and its Winograd algorithm (a
// quarter of the multiplies; its errors two to three times the direct
// one's, as cuDNN's Winograd kernels are chosen by torch.backends.cudnn.
// benchmark): on 3 input channels it is 4-7x slower, on 32-128 channels
// about twice as fast, on 512 slower, so only measuring says. A kernel
// takes the candidate with the least median time when it beats the whole
// team's by more than a margin; the choices become Kernel::threads (and
// split_batch, winograd), which the emitter writes into the kernels
// (num_threads, a convolution's geometry flag), so the tuned library needs
// nothing at run time and an artifact carries them.
//
// The choices are kept in the compile cache (disk and Redis tiers
// included) under a key of the tuning build's source (so the shapes, the
// dtypes and the kernels), the sizes the inputs had (a symbolic program's
// hints), the compiler and this CPU (codegen::CompilerIdentity), the
// team's size and oneDNN's version: a warm compile reads them and measures
// nothing. A program nothing can be measured for (no hint, a call that
// fails on the made inputs) is stored as the whole team everywhere.
//
// Example:
//
//   ASSIGN_OR_RETURN(TuningResult t,
//                    Autotune({.graph = graph, .env = env, .backend = &cpu,
//                              .parts = &parts, .cache = cache}));
//   for (size_t k = 0; k < t.threads.size(); ++k) {
//     codegen::Kernel& kernel = parts.lowered.program.kernels[k];
//     kernel.split_batch = t.threads[k] == kSplitBatch;
//     kernel.winograd = t.threads[k] == kWinograd;
//     kernel.threads = std::max(t.threads[k], 0);
//   }

#ifndef LATHE_DRIVER_AUTOTUNE_H_
#define LATHE_DRIVER_AUTOTUNE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codegen/backend.h"
#include "codegen/cpp/cpu_function.h"
#include "ir/graph.h"
#include "runtime/cache_backend.h"
#include "symbolic/shape_env.h"

namespace lathe {

// The choice that splits a batched product's batch over the whole team
// (Kernel::split_batch), where the others are thread counts.
inline constexpr int kSplitBatch = codegen::kTuneSplitBatch;

// The choice that runs a convolution by Winograd's algorithm
// (Kernel::winograd), on the whole team.
inline constexpr int kWinograd = codegen::kTuneWinograd;

// How the tuner measures.
struct TuningOptions {
  // Interleaved rounds: in each, one call per candidate.
  int rounds = 5;
  // A candidate must beat the whole team's median time by this fraction.
  double margin = 0.05;
  // Fewer rounds (at least one) when a call is so slow that `rounds`
  // would take longer than this.
  double budget_seconds = 10;
};

// ThreadCandidates()
//
// The choices tried with a team of `team` threads: 0 (the whole team)
// first, then 1, then team / 2 where that is a third count, then, with
// `split` (there is a batched product), kSplitBatch, then, with `winograd`
// (there is a convolution it may run), kWinograd.
std::vector<int> ThreadCandidates(int team, bool split = false,
                                  bool winograd = false);

// A measurement: times[c][r][k] is kernel k's time (ns) in round r, when
// every tunable kernel ran with candidate c.
using TuningTimes = std::vector<std::vector<std::vector<int64_t>>>;

// ChooseThreads()
//
// Per kernel (`kernels` of them): for those in `tunable.threads` or
// `tunable.winograd`, the candidate whose median time is least, if it
// beats candidates[0]'s (the whole team) by more than `margin`; 0 (the
// whole team) otherwise and for the rest. Thread counts are candidates
// only for tunable.threads, kSplitBatch only for tunable.split_batch,
// kWinograd only for tunable.winograd.
std::vector<int> ChooseThreads(absl::Span<const int> candidates,
                               const TuningTimes& times,
                               const codegen::TunableKernels& tunable,
                               int kernels, double margin);

// EncodeTuning() / DecodeTuning()
//
// The record the compile cache holds: "lathe-tuning 2 <n>\n" then the n
// choices on one line. DecodeTuning accepts only a whole record for
// `kernels` kernels whose choices are kWinograd, kSplitBatch, 0 or in
// [1, team] (a team of `team` threads); the error says what is wrong.
std::string EncodeTuning(absl::Span<const int> threads);
absl::StatusOr<std::vector<int>> DecodeTuning(absl::string_view record,
                                              int kernels, int team);

// What the driver hands the tuner (driver/compile.cc), none of it owned.
struct TuningRequest {
  const ir::Graph* graph = nullptr;  // functional, after the passes
  symbolic::ShapeEnv* env = nullptr;
  const codegen::Backend* backend = nullptr;
  // The program, scheduled, and the host function, before the build.
  const codegen::CpuFunction::Parts* parts = nullptr;
  CacheBackend* cache = nullptr;  // none: always measure
  // Only choices the cache holds: on a miss nothing is built or measured
  // (TuningResult::missed), as CompileOptions::cached_only's probe asks.
  bool cached_only = false;
  TuningOptions tuning;
};

struct TuningResult {
  // Per kernel of the program: the threads it runs on (0: the whole team),
  // or kSplitBatch, or kWinograd.
  std::vector<int> threads;
  // The cache tier the choices came from, or "" (measured, or not tuned).
  std::string cache_hit;
  int calls = 0;  // calls of the tuning build
  // TuningRequest::cached_only and the cache holds no choices.
  bool missed = false;
  // What was measured and chosen, or why nothing was ("autotune: ...").
  std::vector<std::string> log;
};

// Autotune()
//
// The threads of each kernel of `request.parts`'s program: from the cache,
// or measured (and stored). Where nothing can be measured (an input the
// annotations do not make, a size without a hint, a call that fails), every
// kernel keeps the whole team and the log says why; an error only for a
// backend that tunes nothing (the cuda one).
absl::StatusOr<TuningResult> Autotune(const TuningRequest& request);

}  // namespace lathe

#endif  // LATHE_DRIVER_AUTOTUNE_H_
