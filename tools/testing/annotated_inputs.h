// -----------------------------------------------------------------------------
// File: annotated_inputs.h
// -----------------------------------------------------------------------------
//
// Test helper (testonly): input files for `lathec run` made from a graph's
// own annotations — one .npy per placeholder, composite leaf and constant
// (`self.NAME`), contiguous, with small deterministic values, every symbol
// of the sizes taking the value the caller picks. What the fuzzer and the
// corpus replays feed a graph that comes without inputs.
//
// Example:
//
//   ASSERT_OK(WriteAnnotatedInputs(graph, dir, [](absl::string_view s) {
//     return s == "s0" ? 5 : 3;
//   }));
//   LathecRun({path, "--inputs", dir, "--out", out});

#ifndef LATHE_TOOLS_TESTING_ANNOTATED_INPUTS_H_
#define LATHE_TOOLS_TESTING_ANNOTATED_INPUTS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace lathe::testing {

// The value a size or integer symbol takes, by name.
using SymbolValues = std::function<int64_t(absl::string_view)>;

// Limits on what WriteAnnotatedInputs writes: a tensor with a size past
// `max_dim` or more than `max_numel` elements is left out (the run then
// reports it missing).
struct AnnotatedInputLimits {
  int64_t max_dim = 64;
  int64_t max_numel = 4096;
};

// Writes DIR/NAME.npy for every input the annotations describe: tensor
// element k is (k % 7) - 3 in the tensor's dtype; an integer scalar takes its
// symbol's value and a float scalar `float_value`. Inputs whose sizes do not
// evaluate (or pass the limits) are skipped; only a file that cannot be
// written is an error.
absl::Status WriteAnnotatedInputs(const ir::Graph& graph,
                                  const std::string& dir,
                                  const SymbolValues& symbols,
                                  double float_value = 0.5,
                                  AnnotatedInputLimits limits = {});

}  // namespace lathe::testing

#endif  // LATHE_TOOLS_TESTING_ANNOTATED_INPUTS_H_
