// -----------------------------------------------------------------------------
// File: random.h
// -----------------------------------------------------------------------------
//
// The random number generator of lathe's random ops (rand, randn, randperm,
// native_dropout). It is counter-based: draw k of a stream is a pure
// function of (seed, k) — the SplitMix64 output for state seed + (k + 1) *
// golden gamma — so results depend only on the seed and on how many draws
// came before, never on threads or on the order kernels are called in.
//
// The interpreter owns one Generator per run (Interpret's `seed`, default
// kDefaultSeed): the random ops of a graph advance its offset in graph
// order, so the same graph run twice with the same seed gives the same
// numbers, and a different seed gives different ones. A kernel called
// outside an interpreter (no generator on its OpCall) draws from a fresh
// Generator(kDefaultSeed): every such call gives the same numbers.
//
// The numbers are not PyTorch's (its CPU generator is an MT19937 whose
// state lathe does not model); only their distributions match.
//
// Example:
//
//   Generator g(/*seed=*/7);
//   uint64_t first = g.Reserve(n);        // draws first .. first + n - 1
//   double u = g.Uniform(first, 24);      // in [0, 1), 24 random bits

#ifndef LATHE_IR_RANDOM_H_
#define LATHE_IR_RANDOM_H_

#include <cstdint>

#include "runtime/kernel_runtime.h"

namespace lathe::ir {

class Generator {
 public:
  // Compiled code's default seed too (runtime/kernel_runtime.h).
  static constexpr uint64_t kDefaultSeed = lathe::kDefaultSeed;

  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}

  uint64_t seed() const { return seed_; }
  // How many draws were reserved so far.
  uint64_t offset() const { return offset_; }

  // Reserve()
  //
  // Reserves `n` draws for one op call; returns the counter of the first.
  uint64_t Reserve(uint64_t n) {
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }

  // Bits()
  //
  // The 64 random bits of draw `counter`.
  uint64_t Bits(uint64_t counter) const {
    uint64_t z = seed_ + (counter + 1) * 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
  }

  // Uniform()
  //
  // Draw `counter` as a double in [0, 1) with `bits` random bits (at most
  // 53): a multiple of 2^-bits, so it stays below 1 when rounded to a dtype
  // with `bits` significand bits (24 for float32, 11 for float16, ...).
  double Uniform(uint64_t counter, int bits) const {
    return static_cast<double>(Bits(counter) >> (64 - bits)) /
           static_cast<double>(uint64_t{1} << bits);
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace lathe::ir

#endif  // LATHE_IR_RANDOM_H_
