// The element types against hand-written facts: their order is the C ABI's
// (kernel_abi.h's LATHE_DTYPE_*), their sizes the C++ types', their names
// PyTorch's (and back), their classes, limits and significands the C++
// types', and the conversions PyTorch applies when it stores a double.

#include "runtime/dtype.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernel_abi.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// The dtype `name` parses to (as its number), or -1 when it does not.
int Parsed(absl::string_view name) {
  absl::StatusOr<DType> d = ParseDType(name);
  return d.ok() ? static_cast<int>(*d) : -1;
}

TEST(DTypeTest, TheOrderIsTheCAbis) {
  EXPECT_EQ(static_cast<int>(DType::kFloat16), LATHE_DTYPE_F16);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), LATHE_DTYPE_BF16);
  EXPECT_EQ(static_cast<int>(DType::kFloat32), LATHE_DTYPE_F32);
  EXPECT_EQ(static_cast<int>(DType::kFloat64), LATHE_DTYPE_F64);
  EXPECT_EQ(static_cast<int>(DType::kInt8), LATHE_DTYPE_I8);
  EXPECT_EQ(static_cast<int>(DType::kInt16), LATHE_DTYPE_I16);
  EXPECT_EQ(static_cast<int>(DType::kInt32), LATHE_DTYPE_I32);
  EXPECT_EQ(static_cast<int>(DType::kInt64), LATHE_DTYPE_I64);
  EXPECT_EQ(static_cast<int>(DType::kUInt8), LATHE_DTYPE_U8);
  EXPECT_EQ(static_cast<int>(DType::kBool), LATHE_DTYPE_BOOL);
  ASSERT_EQ(AllDTypes().size(), 10u);
  for (size_t k = 0; k < AllDTypes().size(); ++k) {
    EXPECT_EQ(static_cast<size_t>(AllDTypes()[k]), k);
  }
}

TEST(DTypeTest, ItemSizeIsTheCppTypes) {
  for (DType d : AllDTypes()) {
    EXPECT_EQ(
        ItemSize(d),
        VisitDType(d, [](auto tag) { return static_cast<int>(sizeof(tag)); }))
        << ShortName(d);
  }
  EXPECT_EQ(ItemSize(DType::kBFloat16), 2);
  EXPECT_EQ(ItemSize(DType::kInt64), 8);
  EXPECT_EQ(ItemSize(DType::kBool), 1);
}

TEST(DTypeTest, NamesArePyTorchsAndParseBack) {
  const char* shorts[] = {"f16", "bf16", "f32", "f64", "i8",
                          "i16", "i32",  "i64", "u8",  "b8"};
  const char* torches[] = {"torch.float16", "torch.bfloat16", "torch.float32",
                           "torch.float64", "torch.int8",     "torch.int16",
                           "torch.int32",   "torch.int64",    "torch.uint8",
                           "torch.bool"};
  for (size_t k = 0; k < AllDTypes().size(); ++k) {
    const DType d = AllDTypes()[k];
    EXPECT_EQ(ShortName(d), shorts[k]);
    EXPECT_EQ(TorchName(d), torches[k]);
    EXPECT_EQ(Parsed(shorts[k]), static_cast<int>(d)) << shorts[k];
    EXPECT_EQ(Parsed(torches[k]), static_cast<int>(d)) << torches[k];
    // The torch name without its module, as in a dtype= keyword.
    EXPECT_EQ(Parsed(std::string(torches[k]).substr(6)), static_cast<int>(d));
  }
  // PyTorch's aliases, with or without the module.
  EXPECT_EQ(Parsed("torch.half"), static_cast<int>(DType::kFloat16));
  EXPECT_EQ(Parsed("float"), static_cast<int>(DType::kFloat32));
  EXPECT_EQ(Parsed("torch.double"), static_cast<int>(DType::kFloat64));
  EXPECT_EQ(Parsed("short"), static_cast<int>(DType::kInt16));
  EXPECT_EQ(Parsed("torch.int"), static_cast<int>(DType::kInt32));
  EXPECT_EQ(Parsed("torch.long"), static_cast<int>(DType::kInt64));
}

TEST(DTypeTest, AnUnknownNameIsNamedWithWhatIsExpected) {
  for (const char* bad :
       {"f8", "", "torch.f32", "Float32", "torch.complex64", "f32 "}) {
    EXPECT_THAT(ParseDType(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat(
                             "unknown dtype '", bad,
                             "' (expected f16, bf16, f32, f64, i8, i16, i32, "
                             "i64, u8, b8 or a torch.* name)"))));
  }
}

TEST(DTypeTest, ClassesLimitsAndSignificands) {
  for (DType d : AllDTypes()) {
    const bool fp = d == DType::kFloat16 || d == DType::kBFloat16 ||
                    d == DType::kFloat32 || d == DType::kFloat64;
    EXPECT_EQ(IsFloatingPoint(d), fp) << ShortName(d);
    EXPECT_EQ(IsIntegral(d, /*include_bool=*/true), !fp) << ShortName(d);
    EXPECT_EQ(IsIntegral(d, /*include_bool=*/false), !fp && d != DType::kBool)
        << ShortName(d);
    EXPECT_EQ(IsHalfFloat(d), d == DType::kFloat16 || d == DType::kBFloat16)
        << ShortName(d);
  }
  // f16: (2 - 2^-10) * 2^15; bf16: (2 - 2^-7) * 2^127.
  EXPECT_EQ(MaxFinite(DType::kFloat16), (2 - std::ldexp(1.0, -10)) * 32768);
  EXPECT_EQ(MaxFinite(DType::kBFloat16),
            std::ldexp(2 - std::ldexp(1.0, -7), 127));
  EXPECT_EQ(MaxFinite(DType::kFloat32), std::numeric_limits<float>::max());
  EXPECT_EQ(MaxFinite(DType::kFloat64), std::numeric_limits<double>::max());
  EXPECT_EQ(SignificandBits(DType::kFloat16), 11);
  EXPECT_EQ(SignificandBits(DType::kBFloat16), 8);
  EXPECT_EQ(SignificandBits(DType::kFloat32),
            std::numeric_limits<float>::digits);
  EXPECT_EQ(SignificandBits(DType::kFloat64),
            std::numeric_limits<double>::digits);
}

// x86's truncating conversions, as PyTorch's CPU kernels make them.
TEST(DTypeTest, TruncateToIntIsX86s) {
  EXPECT_EQ(TruncateToInt<int32_t>(-3.7), -3);
  EXPECT_EQ(TruncateToInt<int32_t>(3.99), 3);
  EXPECT_EQ(TruncateToInt<int8_t>(-0.9), 0);
  // Through a 32-bit conversion, keeping the low bits.
  EXPECT_EQ(TruncateToInt<uint8_t>(-3.7), 253);
  EXPECT_EQ(TruncateToInt<int8_t>(300), 44);
  EXPECT_EQ(TruncateToInt<int16_t>(70000), 70000 - 65536);
  // Out of range, NaN and infinities: the conversion's lowest value.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(TruncateToInt<int32_t>(1e20), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(TruncateToInt<int32_t>(0x1p31),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(TruncateToInt<int32_t>(-0x1p31),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(TruncateToInt<int32_t>(0x1p31 - 1), 2147483647);
  EXPECT_EQ(TruncateToInt<int32_t>(NAN), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(TruncateToInt<int8_t>(NAN), 0);
  EXPECT_EQ(TruncateToInt<uint8_t>(inf), 0);
  EXPECT_EQ(TruncateToInt<int64_t>(0x1p63),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(TruncateToInt<int64_t>(-0x1p63),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(TruncateToInt<int64_t>(-inf), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(TruncateToInt<int64_t>(0x1p62), int64_t{1} << 62);
  EXPECT_EQ(TruncateToInt<int64_t>(-1e18), -1000000000000000000LL);
}

TEST(DTypeTest, FloorClampedIsDefinedForEveryDouble) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(FloorClamped(2.7, 0, 10), 2);
  EXPECT_EQ(FloorClamped(-2.7, -5, 10), -3);
  EXPECT_EQ(FloorClamped(9.99, 0, 10), 9);
  EXPECT_EQ(FloorClamped(10.5, 0, 10), 10);
  EXPECT_EQ(FloorClamped(-0.5, 0, 10), 0);
  EXPECT_EQ(FloorClamped(1e300, 0, 10), 10);
  EXPECT_EQ(FloorClamped(inf, 0, 10), 10);
  EXPECT_EQ(FloorClamped(-inf, 0, 10), 0);
  EXPECT_EQ(FloorClamped(NAN, 3, 10), 3);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(FloorClamped(0x1p63, 0, kMax), kMax);
  EXPECT_EQ(FloorClamped(0x1p62 + 0.5, 0, kMax), int64_t{1} << 62);
}

TEST(DTypeTest, FromDoubleRoundsAsPyTorchStores) {
  EXPECT_EQ(FromDouble<bool>(0.5), true);
  EXPECT_EQ(FromDouble<bool>(-0.0), false);
  EXPECT_EQ(FromDouble<bool>(NAN), true);
  EXPECT_EQ(FromDouble<int16_t>(-2.5), -2);
  EXPECT_EQ(FromDouble<float>(0.1), 0.1f);
  // f16: 65520 lies halfway between 65504 and the next step, 65536, which
  // is past the range: nearest-even rounds to infinity; 65519 to 65504.
  EXPECT_TRUE(std::isinf(ToDouble(FromDouble<Half>(65520))));
  EXPECT_EQ(ToDouble(FromDouble<Half>(65519)), 65504);
  // bf16 keeps 8 significand bits: 1 + 2^-8 is a tie, to even (1); so is
  // 1 + 3 * 2^-8, to even (1 + 2^-6, not 1 + 2^-7).
  EXPECT_EQ(ToDouble(FromDouble<BFloat16>(1 + std::ldexp(1.0, -8))), 1.0);
  EXPECT_EQ(ToDouble(FromDouble<BFloat16>(1 + 3 * std::ldexp(1.0, -8))),
            1 + std::ldexp(1.0, -6));
  EXPECT_TRUE(std::isnan(ToDouble(FromDouble<BFloat16>(NAN))));
}

}  // namespace
}  // namespace lathe
