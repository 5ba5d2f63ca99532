// -----------------------------------------------------------------------------
// File: decompose_testing.h
// -----------------------------------------------------------------------------
//
// The decompose pass's differential check, for its tests: a graph run on
// the reference interpreter before and after the pass, on random inputs
// (NaN, infinities and -0.0 among them on request), every output compared
// within the dtype's tolerance and laid out with the same strides.
//
// Example:
//
//   ExpectSameResults(R"IR(def forward(self, x: "f32[4, 7]"):
//       a = torch.ops.aten.gelu.default(x)
//       return (a,)
//   )IR", "gelu", /*specials=*/true);

#ifndef LATHE_PASSES_DECOMPOSE_TESTING_H_
#define LATHE_PASSES_DECOMPOSE_TESTING_H_

#include <string>

namespace lathe::passes {

// Runs `text` on random inputs before and after decompose (through a
// pipeline, so the invariants are checked) and compares every output;
// `decomposed` is the op that must be gone afterwards. Each output must
// also be laid out as before (its strides).
void ExpectSameResults(const std::string& text, const std::string& decomposed,
                       bool specials = false, int trials = 3);

// A graph text over `dtype` (every "$" in `body` replaced by it).
std::string WithDType(const std::string& body, const char* dtype);

}  // namespace lathe::passes

#endif  // LATHE_PASSES_DECOMPOSE_TESTING_H_
