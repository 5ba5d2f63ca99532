// -----------------------------------------------------------------------------
// File: expect_close.h
// -----------------------------------------------------------------------------
//
// Test helper (testonly): gtest assertions that a tensor equals the
// oracle's — same sizes and dtype, integers and bools exactly, NaN where
// the oracle has NaN, other floats within `relative` (of max(1, |want|)).
//
// Example:
//
//   ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor, 1e-6,
//                      "output 0");

#ifndef LATHE_TOOLS_TESTING_EXPECT_CLOSE_H_
#define LATHE_TOOLS_TESTING_EXPECT_CLOSE_H_

#include <string>

#include "runtime/tensor.h"

namespace lathe::testing {

// Adds a gtest failure naming `what` at the first element that differs.
void ExpectTensorsClose(const Tensor& got, const Tensor& want, double relative,
                        const std::string& what);

}  // namespace lathe::testing

#endif  // LATHE_TOOLS_TESTING_EXPECT_CLOSE_H_
