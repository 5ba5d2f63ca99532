// -----------------------------------------------------------------------------
// File: pass_testing.h
// -----------------------------------------------------------------------------
//
// The one way pass tests are written: graph text in, the pass run through a
// PassPipeline (so every invariant is checked after it), FileCheck CHECK
// lines out. With no checks the pass must report no change and leave the
// printed graph identical.
//
// Example:
//
//   EXPECT_OK(RunPassAndFileCheck<Cse>(R"(def forward(self, x: "f32[4]"):
//       a = torch.ops.aten.neg.default(x)
//       b = torch.ops.aten.neg.default(x)
//       add = torch.ops.aten.add.Tensor(a, b)
//       return (add,)
//   )", R"(
//   CHECK: add = torch.ops.aten.add.Tensor(a, a)
//   )"));
//   ASSERT_OK_AND_ASSIGN(PassResult r, RunPassAndCompare<Cse>(text));

#ifndef LATHE_PASSES_PASS_TESTING_H_
#define LATHE_PASSES_PASS_TESTING_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace lathe::passes {

// RunPass()
//
// Parses `text`, propagates shapes, runs `pass` through a pipeline that
// checks the invariants; returns the graph before and after, printed in
// `text`'s style (ParseGraphWithStyle), and whether the pass said it changed
// the graph.
struct PassResult {
  std::string before;
  std::string after;
  bool changed = false;
};
absl::StatusOr<PassResult> RunPass(absl::string_view text,
                                   std::unique_ptr<Pass> pass);

// RunPassAndFileCheck()
//
// RunPass, then FileCheck `checks` against the result (and the pass must
// report a change); with nullopt, the pass must report no change and the
// text must come out identical.
absl::Status RunPassAndFileCheck(absl::string_view text,
                                 std::unique_ptr<Pass> pass,
                                 std::optional<absl::string_view> checks);

template <typename T>
absl::Status RunPassAndFileCheck(absl::string_view text,
                                 std::optional<absl::string_view> checks) {
  return RunPassAndFileCheck(text, std::make_unique<T>(), checks);
}

// RunPassAndCompare()
//
// The differential check against the interpreter (the oracle): RunPass,
// then interprets the graph before and after it on the same deterministic
// inputs (static shapes; floats from a ramp, integers 0 and 1 so they can
// index any dimension). Outputs and the inputs' final values must agree bit
// for bit, and an output may share a storage with an input or another
// output afterwards only where it did before. Returns the pass's result.
absl::StatusOr<PassResult> RunPassAndCompare(absl::string_view text,
                                             std::unique_ptr<Pass> pass);

template <typename T>
absl::StatusOr<PassResult> RunPassAndCompare(absl::string_view text) {
  return RunPassAndCompare(text, std::make_unique<T>());
}

}  // namespace lathe::passes

#endif  // LATHE_PASSES_PASS_TESTING_H_
