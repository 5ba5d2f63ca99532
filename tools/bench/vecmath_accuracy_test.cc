// Each vector-math library (vecmath_kernels.h) against scalar glibc libm, the
// results lathe's generated kernels would give without one.
//
// Inputs: special values (+-0, +-inf, NaN, denormals, FLT_MAX, the exp
// overflow and underflow edges, negatives for log) and a strided sweep over
// all 2^32 float bit patterns (every 4099th by default; set
// LATHE_VECMATH_SWEEP_STRIDE=1 for an exhaustive sweep, which takes about
// half an hour of one core; LATHE_VECMATH_SWEEP_SHARD=i/n runs every n-th
// stride step from the i-th, so n processes can split it).
//
// Per library and function the test asserts:
//   - special values agree with libm: NaN where libm gives NaN, the same
//     infinity where libm gives one, and no NaN/inf where libm is finite;
//   - max ULP distance to libm's result on the rest <= a bound per library.
// It also prints, for the report, the max ULP error against a double
// precision reference (libm's own included) and signed-zero differences.
// Raw Highway (hwy_avx2, hwy_avx512) is held to that only on the inputs it
// documents (Exp: x <= 104, Log: 0 < x < inf, no NaN); a separate test
// asserts that outside them it really does differ from libm, so a Highway
// upgrade that fixes them shows up here. hwy_avx512_fixed is held to libm
// everywhere.
//
// The double reference for sigmoid is skipped below x = -88.7228: there
// expf(-x) overflows and the f32 formula 1/(1+exp(-x)) gives 0 in every
// library (libm included) where the true value is a tiny or denormal float.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tools/bench/vecmath_kernels.h"

namespace lathe::bench {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Monotonic integer key: adjacent floats differ by 1, +0 and -0 are both 0.
int64_t OrderKey(float f) {
  const uint32_t u = Bits(f);
  const int64_t mag = u & 0x7fffffffu;
  return (u & 0x80000000u) ? -mag : mag;
}

int64_t UlpDistance(float a, float b) {
  const int64_t d = OrderKey(a) - OrderKey(b);
  return d < 0 ? -d : d;
}

// |y - ref| in units of the float spacing at ref.
double UlpError(float y, double ref) {
  const double mag = std::fabs(ref);
  double ulp;
  if (mag < std::numeric_limits<float>::min()) {
    ulp = std::ldexp(1.0, -149);
  } else {
    int e;
    std::frexp(mag, &e);  // mag = m * 2^e, m in [0.5, 1)
    ulp = std::ldexp(1.0, e - 24);
  }
  return std::fabs(static_cast<double>(y) - ref) / ulp;
}

bool IsSpecial(float f) { return std::isnan(f) || std::isinf(f); }

// The largest x with a finite expf(x) (0x42b17217); the next float overflows.
constexpr float kExpOverflow = 88.72283172607421875f;

// The inputs Highway's contrib/math documents a result for.
bool InHighwayDomain(VecFn fn, float x) {
  if (std::isnan(x)) return false;
  switch (fn) {
    case kExp:
      return x <= 104.0f;
    case kLog:
      return x > 0 && x < kInf;
    case kSigmoid:
      return -x <= 104.0f;
    default:
      return true;
  }
}

bool IsRawHighway(const VecMathImpl& impl) {
  return std::string(impl.name) == "hwy_avx2" ||
         std::string(impl.name) == "hwy_avx512";
}

std::vector<float> SpecialInputs() {
  const float fmax = std::numeric_limits<float>::max();
  const float fmin = std::numeric_limits<float>::min();
  const float dmin = std::numeric_limits<float>::denorm_min();
  std::vector<float> v = {
      0.0f, -0.0f, kInf, -kInf, std::nanf(""), -std::nanf(""),
      FromBits(0x7fa00000u),  // signalling NaN
      dmin, -dmin, 2 * dmin, fmin / 2, -fmin / 2, FromBits(0x007fffffu),
      FromBits(0x807fffffu), fmin, -fmin, fmax, -fmax, 1e-30f, -1e-30f, 1e-8f,
      -1e-8f, 1e10f, -1e10f, 1e30f, -1e30f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f,
      -2.0f, 3.0f, -3.0f, 4.0f, -4.0f, 9.0f, -9.0f, 10.0f, -10.0f, 20.0f,
      -20.0f,
      // exp overflows to inf above ~88.7228; underflows to denormals below
      // ~-87.34 and to 0 below ~-103.97.
      88.0f, 88.7228f, kExpOverflow, 88.72284f, 88.7229f, 89.0f, 100.0f, 104.0f,
      105.0f, -kExpOverflow, -88.72284f, -87.0f, -87.34f, -88.0f, -100.0f,
      -103.0f, -103.97f, -104.0f, -105.0f, -150.0f, -1000.0f, 1000.0f};
  // Around every power of two (exponent edges of log), both signs.
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    for (float f : {p, std::nextafter(p, 0.0f), std::nextafter(p, kInf)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  return v;
}

struct FnStats {
  int64_t inputs = 0;
  int64_t out_of_domain = 0;  // raw Highway: inputs it documents nothing for
  int64_t max_ulp_vs_libm = 0;
  float worst_vs_libm = 0;
  double max_ulp_vs_ref = 0;
  float worst_vs_ref = 0;
  int64_t special_mismatches = 0;
  std::vector<std::string> special_examples;
  int64_t signed_zero_mismatches = 0;
};

// Runs `impl`'s `fn` over x and folds the comparison into `stats`.
bool CheckAgainstReference(VecFn fn, float x, double ref) {
  if (fn == kSigmoid && -x > kExpOverflow) return false;
  return std::isfinite(ref) &&
         std::fabs(ref) <= std::numeric_limits<float>::max();
}

void Compare(const VecMathImpl& impl, VecFn fn, const std::vector<float>& x,
             const std::vector<float>& libm, const std::vector<double>& ref,
             FnStats& stats) {
  std::vector<float> y(x.size());
  impl.fn[fn](x.data(), y.data(), static_cast<int64_t>(x.size()));
  const bool raw_highway = IsRawHighway(impl);
  for (size_t i = 0; i < x.size(); ++i) {
    if (raw_highway && !InHighwayDomain(fn, x[i])) {
      ++stats.out_of_domain;
      continue;
    }
    ++stats.inputs;
    const float got = y[i], want = libm[i];
    const bool nan_mismatch = std::isnan(got) != std::isnan(want);
    const bool inf_mismatch =
        !nan_mismatch && (std::isinf(got) || std::isinf(want)) && got != want;
    if (nan_mismatch || inf_mismatch) {
      if (stats.special_examples.size() < 6) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "%s(%a=%g) = %g, libm %g", VecFnName(fn),
                      x[i], x[i], got, want);
        stats.special_examples.push_back(buf);
      }
      ++stats.special_mismatches;
      continue;
    }
    if (IsSpecial(want)) continue;
    if (got == 0 && want == 0 && std::signbit(got) != std::signbit(want)) {
      ++stats.signed_zero_mismatches;
    }
    const int64_t ulp = UlpDistance(got, want);
    if (ulp > stats.max_ulp_vs_libm) {
      stats.max_ulp_vs_libm = ulp;
      stats.worst_vs_libm = x[i];
    }
    // A correctly rounded result is <= 0.5 ULP off: only the others can
    // raise a max that is already 0.5.
    const bool rounded = got == static_cast<float>(ref[i]);
    if (!(rounded && stats.max_ulp_vs_ref >= 0.5) &&
        CheckAgainstReference(fn, x[i], ref[i])) {
      const double err = UlpError(got, ref[i]);
      if (err > stats.max_ulp_vs_ref) {
        stats.max_ulp_vs_ref = err;
        stats.worst_vs_ref = x[i];
      }
    }
  }
}

// libm's own error against the double reference, for the report.
FnStats LibmAgainstReference(VecFn fn, const std::vector<float>& x,
                             const std::vector<float>& libm,
                             const std::vector<double>& ref) {
  FnStats s;
  for (size_t i = 0; i < x.size(); ++i) {
    if (IsSpecial(libm[i]) || !CheckAgainstReference(fn, x[i], ref[i])) {
      continue;
    }
    if (libm[i] == static_cast<float>(ref[i]) && s.max_ulp_vs_ref >= 0.5) {
      continue;
    }
    const double err = UlpError(libm[i], ref[i]);
    if (err > s.max_ulp_vs_ref) {
      s.max_ulp_vs_ref = err;
      s.worst_vs_ref = x[i];
    }
  }
  return s;
}

int64_t SweepStride() {
  const char* env = std::getenv("LATHE_VECMATH_SWEEP_STRIDE");
  if (env == nullptr || *env == '\0') return 4099;
  const long long v = std::atoll(env);
  return v >= 1 ? v : 4099;
}

// LATHE_VECMATH_SWEEP_SHARD=i/n -> {i, n}; {0, 1} when unset.
std::pair<int64_t, int64_t> SweepShard() {
  const char* env = std::getenv("LATHE_VECMATH_SWEEP_SHARD");
  long long i = 0, n = 1;
  if (env != nullptr && std::sscanf(env, "%lld/%lld", &i, &n) == 2 && n >= 1 &&
      i >= 0 && i < n) {
    return {i, n};
  }
  return {0, 1};
}

// Calls `chunk(x)` on the special inputs, then on the sweep in chunks.
template <class F>
void ForEachInputChunk(F chunk) {
  chunk(SpecialInputs());
  const int64_t stride = SweepStride();
  const auto [shard, shards] = SweepShard();
  constexpr size_t kChunk = 1 << 20;
  std::vector<float> x;
  x.reserve(kChunk);
  for (int64_t b = shard * stride; b <= 0xffffffffLL; b += shards * stride) {
    x.push_back(FromBits(static_cast<uint32_t>(b)));
    if (x.size() == kChunk) {
      chunk(x);
      x.clear();
    }
  }
  if (!x.empty()) chunk(x);
}

// Everything measured, computed once for all tests.
struct Results {
  std::vector<const VecMathImpl*> impls;
  // [impl][fn]
  std::vector<std::vector<FnStats>> stats;
  FnStats libm_vs_ref[kNumVecFns];
};

const Results& Measure() {
  static const Results* results = [] {
    auto* r = new Results;
    r->impls = AllVecMathImpls();
    r->stats.assign(r->impls.size(), std::vector<FnStats>(kNumVecFns));
    ForEachInputChunk([&](const std::vector<float>& x) {
      std::vector<float> libm(x.size());
      std::vector<double> ref(x.size());
      for (int f = 0; f < kNumVecFns; ++f) {
        const VecFn fn = static_cast<VecFn>(f);
        for (size_t i = 0; i < x.size(); ++i) {
          libm[i] = LibmScalar(fn, x[i]);
          ref[i] = DoubleReference(fn, x[i]);
        }
        FnStats own = LibmAgainstReference(fn, x, libm, ref);
        if (own.max_ulp_vs_ref > r->libm_vs_ref[f].max_ulp_vs_ref) {
          r->libm_vs_ref[f] = own;
        }
        for (size_t k = 0; k < r->impls.size(); ++k) {
          if (r->impls[k]->fn[f] == nullptr) continue;
          if (!VecMathImplSupported(*r->impls[k])) continue;
          Compare(*r->impls[k], fn, x, libm, ref, r->stats[k][f]);
        }
      }
    });
    std::printf("sweep stride %lld shard %lld/%lld\n",
                static_cast<long long>(SweepStride()),
                static_cast<long long>(SweepShard().first),
                static_cast<long long>(SweepShard().second));
    std::printf("%-18s %-8s %10s %12s %12s %14s %12s %8s\n", "impl", "fn",
                "inputs", "ulp_vs_libm", "at", "ulp_vs_double", "at",
                "specials");
    for (int f = 0; f < kNumVecFns; ++f) {
      std::printf("%-18s %-8s %10s %12s %12s %14.3f %12g %8s\n", "libm(self)",
                  VecFnName(static_cast<VecFn>(f)), "", "0", "",
                  r->libm_vs_ref[f].max_ulp_vs_ref,
                  r->libm_vs_ref[f].worst_vs_ref, "0");
    }
    for (size_t k = 0; k < r->impls.size(); ++k) {
      for (int f = 0; f < kNumVecFns; ++f) {
        const FnStats& s = r->stats[k][f];
        if (s.inputs == 0) continue;
        std::printf(
            "%-18s %-8s %10lld %12lld %12g %14.3f %12g %8lld  signed0 %lld"
            "  out_of_domain %lld\n",
            r->impls[k]->name, VecFnName(static_cast<VecFn>(f)),
            static_cast<long long>(s.inputs),
            static_cast<long long>(s.max_ulp_vs_libm), s.worst_vs_libm,
            s.max_ulp_vs_ref, s.worst_vs_ref,
            static_cast<long long>(s.special_mismatches),
            static_cast<long long>(s.signed_zero_mismatches),
            static_cast<long long>(s.out_of_domain));
        for (const std::string& e : s.special_examples) {
          std::printf("      %s\n", e.c_str());
        }
      }
    }
    std::fflush(stdout);
    return r;
  }();
  return *results;
}

// Max ULP distance to libm allowed per implementation and function
// (exp, log, tanh, sigmoid, erf); -1: the library has no such function.
struct Bound {
  const char* impl;
  int64_t max_ulp[kNumVecFns];
};

// glibc documents libmvec as <= 4 ULP; Sleef's u10 functions are <= 1 ULP
// from the exact result, so <= 2 from libm's (tanh: libm's tanhf is itself
// ~2 ULP off); u35 and Highway (documented 1-4 ULP) get 4.
constexpr Bound kBounds[] = {
    {"libm", {0, 0, 0, 0, 0}},
    {"libmvec_avx2", {4, 4, 4, 4, 4}},
    {"libmvec_avx512", {4, 4, 4, 4, 4}},
    {"sleef_avx2", {2, 2, 2, 4, 2}},
    {"sleef_avx512", {2, 2, 2, 4, 2}},
    {"sleef_avx512_u35", {-1, 4, 4, -1, -1}},
    {"hwy_avx2", {4, 4, 4, 4, -1}},
    {"hwy_avx512", {4, 4, 4, 4, -1}},
    {"hwy_avx512_fixed", {4, 4, 4, 4, -1}},
};

const Bound* FindBound(const std::string& impl) {
  for (const Bound& b : kBounds) {
    if (impl == b.impl) return &b;
  }
  return nullptr;
}

class VecMathAccuracyTest : public ::testing::TestWithParam<int> {};

TEST_P(VecMathAccuracyTest, MatchesLibm) {
  const Results& r = Measure();
  const VecMathImpl& impl = *r.impls[GetParam()];
  const Bound* bound = FindBound(impl.name);
  ASSERT_NE(bound, nullptr) << "no bound for " << impl.name;
  if (!VecMathImplSupported(impl)) {
    GTEST_SKIP() << impl.name << " needs AVX-512 (F, VL, BW, DQ)";
  }
  for (int f = 0; f < kNumVecFns; ++f) {
    const FnStats& s = r.stats[GetParam()][f];
    const char* fn = VecFnName(static_cast<VecFn>(f));
    if (bound->max_ulp[f] < 0) {
      EXPECT_EQ(impl.fn[f], nullptr) << impl.name << " " << fn;
      continue;
    }
    ASSERT_NE(impl.fn[f], nullptr) << impl.name << " " << fn;
    EXPECT_GT(s.inputs, 0);
    EXPECT_LE(s.max_ulp_vs_libm, bound->max_ulp[f])
        << impl.name << " " << fn << " at x=" << s.worst_vs_libm;
    EXPECT_EQ(s.special_mismatches, 0)
        << impl.name << " " << fn << ", e.g. "
        << (s.special_examples.empty() ? "" : s.special_examples[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllLibraries, VecMathAccuracyTest,
    ::testing::Range(0, static_cast<int>(AllVecMathImpls().size())),
    [](const ::testing::TestParamInfo<int>& info) {
      return std::string(AllVecMathImpls()[info.param]->name);
    });

// Raw Highway's special values agree with libm on its documented domain (the
// sweep above checks that); outside it they really differ in 1.0.3, which is
// why lathe would need hwy_avx512_fixed's blends. A fix upstream flips these.
TEST(HighwayLeavesSpecialsOpen, OutsideItsDocumentedDomain) {
  const std::vector<const VecMathImpl*> impls = {&HwyAvx2Impl(),
                                                 &HwyAvx512Impl()};
  if (!VecMathImplSupported(HwyAvx512Impl())) {
    GTEST_SKIP() << "Highway's kernels here need AVX-512";
  }
  for (const VecMathImpl* impl : impls) {
    // The documented gaps are real in 1.0.3 (a fix would flip these).
    float exp_in[3] = {std::nanf(""), 256.0f, 1000.0f}, exp_out[3];
    impl->fn[kExp](exp_in, exp_out, 3);
    EXPECT_FALSE(std::isnan(exp_out[0])) << impl->name << " Exp(NaN)";
    EXPECT_TRUE(std::isfinite(exp_out[1])) << impl->name << " Exp(256)";
    EXPECT_TRUE(std::isfinite(exp_out[2])) << impl->name << " Exp(1000)";
    float log_in[4] = {0.0f, -1.0f, kInf, std::nanf("")}, log_out[4];
    impl->fn[kLog](log_in, log_out, 4);
    EXPECT_TRUE(std::isfinite(log_out[0])) << impl->name << " Log(0)";
    EXPECT_TRUE(std::isfinite(log_out[1])) << impl->name << " Log(-1)";
    EXPECT_TRUE(std::isfinite(log_out[2])) << impl->name << " Log(inf)";
    EXPECT_TRUE(std::isfinite(log_out[3])) << impl->name << " Log(NaN)";
  }
}

}  // namespace
}  // namespace lathe::bench
