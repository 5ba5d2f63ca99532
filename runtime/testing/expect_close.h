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

#ifndef LATHE_RUNTIME_TESTING_EXPECT_CLOSE_H_
#define LATHE_RUNTIME_TESTING_EXPECT_CLOSE_H_

#include <string>

#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace lathe::testing {

// The relative tolerance results of `dtype` are compared with, stated once
// for every test that compares a backend with PyTorch or the oracle: each
// side may compute in the dtype itself (PyTorch, compiled kernels) or in
// double and round once (the interpreter). Integers and bools: 0 (exact).
double DTypeTolerance(DType dtype);

// Empty when `got` matches `want` as ExpectTensorsClose asks, else what
// differs: the sizes or dtypes, or the first element (its index and both
// values).
std::string TensorDiff(const Tensor& got, const Tensor& want, double relative);

// Adds a gtest failure naming `what` at the first element that differs.
void ExpectTensorsClose(const Tensor& got, const Tensor& want, double relative,
                        const std::string& what);

}  // namespace lathe::testing

#endif  // LATHE_RUNTIME_TESTING_EXPECT_CLOSE_H_
