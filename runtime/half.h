// -----------------------------------------------------------------------------
// File: half.h
// -----------------------------------------------------------------------------
//
// IEEE half precision (f16) and bfloat16 (bf16) values with exact
// round-to-nearest-even conversion from float, as PyTorch's c10::Half and
// c10::BFloat16 do (NaN stays NaN, overflow becomes infinity, f16 subnormals
// are kept).
//
// Example:
//
//   Half h = Half::FromFloat(0.1f);  // bits 0x2e66
//   float back = h.ToFloat();        // 0.0999755859375
//   BFloat16 b = BFloat16::FromFloat(1.0f / 3);

#ifndef LATHE_RUNTIME_HALF_H_
#define LATHE_RUNTIME_HALF_H_

#include <cstdint>
#include <cstring>

namespace lathe {

// Half
//
// A 16-bit IEEE 754 binary16 value.
struct Half {
  uint16_t bits = 0;

  // FromFloat()
  //
  // The f16 nearest to `f` (ties to even).
  static Half FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    Half h;
    if (abs >= 0x7f800000u) {  // inf or nan
      h.bits = static_cast<uint16_t>(sign | 0x7c00u |
                                     (abs > 0x7f800000u ? 0x200u : 0u));
      return h;
    }
    if (abs >= 0x477ff000u) {  // rounds to >= 65520: infinity
      h.bits = static_cast<uint16_t>(sign | 0x7c00u);
      return h;
    }
    if (abs < 0x38800000u) {  // below the smallest normal f16: subnormal
      // The value is mant * 2^(E - 150) with the hidden bit in mant; in f16
      // subnormal units of 2^-24 that is mant >> (126 - E), rounded.
      int rshift = 126 - static_cast<int>(abs >> 23);  // >= 14
      if (rshift > 24) {  // below half the smallest subnormal
        h.bits = static_cast<uint16_t>(sign);
        return h;
      }
      uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      uint32_t q = mant >> rshift;
      uint32_t rem = mant & ((1u << rshift) - 1);
      uint32_t half = 1u << (rshift - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;
      h.bits = static_cast<uint16_t>(sign | q);
      return h;
    }
    // Normal: rebias exponent (127 -> 15) and round 23 -> 10 mantissa bits.
    uint32_t r = abs - 0x38000000u;  // exponent - 112
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
    h.bits = static_cast<uint16_t>(sign | q);
    return h;
  }

  // ToFloat()
  //
  // The exact float value.
  float ToFloat() const {
    uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t exp = (bits >> 10) & 0x1fu;
    uint32_t mant = bits & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
      x = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
      x = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | ((112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// BFloat16
//
// The upper 16 bits of a float, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;

  // FromFloat()
  //
  // The bf16 nearest to `f` (ties to even); NaN stays a quiet NaN.
  static BFloat16 FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    BFloat16 b;
    if ((x & 0x7fffffffu) > 0x7f800000u) {
      b.bits = static_cast<uint16_t>((x >> 16) | 0x40u);
      return b;
    }
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    b.bits = static_cast<uint16_t>((x + rounding) >> 16);
    return b;
  }

  // ToFloat()
  //
  // The exact float value.
  float ToFloat() const {
    uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_HALF_H_
