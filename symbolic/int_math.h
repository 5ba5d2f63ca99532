// -----------------------------------------------------------------------------
// File: int_math.h
// -----------------------------------------------------------------------------
//
// Python's integer floor division and modulus on int64 (C++ truncates toward
// zero), shared by the constant folder, the evaluator and guard checks.
//
// Example:
//
//   PyFloorDiv(-7, 2);  // -4
//   PyMod(-7, 3);       // 2

#ifndef LATHE_SYMBOLIC_INT_MATH_H_
#define LATHE_SYMBOLIC_INT_MATH_H_

#include <cstdint>

namespace lathe::symbolic {

// PyFloorDiv()
//
// a // b, rounding toward -infinity. Requires b != 0 and not (INT64_MIN, -1).
inline int64_t PyFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// PyMod()
//
// a % b with the sign of b. Requires b != 0.
inline int64_t PyMod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // avoids INT64_MIN % -1
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace lathe::symbolic

#endif  // LATHE_SYMBOLIC_INT_MATH_H_
