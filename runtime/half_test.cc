#include "runtime/half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lathe {
namespace {

float Bits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// The f16 nearest to f by brute force over all finite f16 values (ties to
// the even bit pattern): an independent reference for FromFloat.
uint16_t NearestHalf(float f,
                     const std::vector<std::pair<double, uint16_t>>& all) {
  double v = f;
  uint16_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& [value, bits] : all) {
    double d = std::fabs(value - v);
    if (d < best_d || (d == best_d && (bits & 1) == 0)) {
      best_d = d;
      best = bits;
    }
  }
  // Beyond the largest finite value by half an ulp: infinity.
  if (std::fabs(v) >= 65520.0) best = v > 0 ? 0x7c00 : 0xfc00;
  return best;
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h{static_cast<uint16_t>(b)};
    float f = h.ToFloat();
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Half::FromFloat(f).ToFloat()));
      continue;
    }
    EXPECT_EQ(Half::FromFloat(f).bits, b) << std::hex << b;
  }
  EXPECT_EQ(Half{0x3c00}.ToFloat(), 1.0f);
  EXPECT_EQ(Half{0x0001}.ToFloat(), std::ldexp(1.0f, -24));  // subnormal
  EXPECT_EQ(Half{0x7bff}.ToFloat(), 65504.0f);
}

TEST(HalfTest, RoundingMatchesABruteForceNearest) {
  std::vector<std::pair<double, uint16_t>> positives;
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    positives.push_back(
        {Half{static_cast<uint16_t>(b)}.ToFloat(), static_cast<uint16_t>(b)});
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exp(100, 145);  // around f16's range
  std::uniform_int_distribution<uint32_t> mant(0, 0x7fffff);
  for (int k = 0; k < 3000; ++k) {
    float f = Bits((static_cast<uint32_t>(exp(rng)) << 23) | mant(rng));
    EXPECT_EQ(Half::FromFloat(f).bits, NearestHalf(f, positives)) << f;
    EXPECT_EQ(Half::FromFloat(-f).bits,
              static_cast<uint16_t>(NearestHalf(f, positives) | 0x8000))
        << -f;
  }
  // Exact ties between neighbours go to the even pattern.
  float tie = (Half{0x3c00}.ToFloat() + Half{0x3c01}.ToFloat()) / 2;
  EXPECT_EQ(Half::FromFloat(tie).bits, 0x3c00);
  float tie2 = (Half{0x3c01}.ToFloat() + Half{0x3c02}.ToFloat()) / 2;
  EXPECT_EQ(Half::FromFloat(tie2).bits, 0x3c02);
  EXPECT_EQ(Half::FromFloat(0.1f).bits, 0x2e66);
  EXPECT_EQ(Half::FromFloat(1e9f).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(Half::FromFloat(NAN).ToFloat()));
}

#ifdef __FLT16_MAX__
TEST(HalfTest, AgreesWithTheCompilersFloat16) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any;
  for (int k = 0; k < 200000; ++k) {
    float f = Bits(any(rng));
    if (std::isnan(f)) continue;
    _Float16 c = static_cast<_Float16>(f);
    uint16_t bits;
    std::memcpy(&bits, &c, 2);
    ASSERT_EQ(Half::FromFloat(f).bits, bits) << f;
  }
}
#endif

TEST(BFloat16Test, RoundsToNearestEven) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any;
  for (int k = 0; k < 200000; ++k) {
    uint32_t x = any(rng);
    float f = Bits(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(BFloat16::FromFloat(f).ToFloat()));
      continue;
    }
    // The two candidates: truncation and the next bf16 away from zero.
    uint32_t lo = x & 0xffff0000u, hi = lo + 0x10000u;
    // Past the largest finite value the next pattern is infinity, which IEEE
    // rounding treats as 2^128 (one ulp further).
    auto value = [](uint32_t bits) {
      if ((bits & 0x7fffffffu) == 0x7f800000u) {
        return std::ldexp((bits >> 31) ? -1.0 : 1.0, 128);
      }
      return static_cast<double>(Bits(bits));
    };
    double dl = std::fabs(value(lo) - f);
    double dh = std::fabs(value(hi) - f);
    uint32_t want = dl < dh ? lo : dh < dl ? hi : ((lo >> 16) & 1 ? hi : lo);
    if ((lo & 0x7f800000u) == 0x7f800000u) want = lo;  // already inf
    ASSERT_EQ(BFloat16::FromFloat(f).bits, want >> 16) << f;
  }
  EXPECT_EQ(BFloat16::FromFloat(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16{0x3f80}.ToFloat(), 1.0f);
}

}  // namespace
}  // namespace lathe
