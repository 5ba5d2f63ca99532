// Highway 1.0.3's hwy/contrib/math (header-only, inlined), static dispatch:
// compiled with -march=native, HWY_TARGET is AVX3_DL here. ScalableTag<float>
// is 16 lanes (zmm); CappedTag<float, 8> is 8 lanes (ymm, AVX-512VL forms).
//
// Highway documents each function for a range only (Exp: [-FLT_MAX, +104],
// Log: (0, +FLT_MAX]) and does not promise libm's special values: Exp(NaN)
// is 0, Exp(x > 104) is garbage (Exp(256) = 1e-43, Exp(1000) = 8e-29),
// Log(0) is about -105, Log(+inf) about 88.7, Log(x < 0) and Log(NaN) are
// finite garbage. hwy_avx512_fixed adds the blends that restore libm's
// results (3 compares + 3 blends for Log, 2 + 2 for Exp).
// Highway 1.0.3 has no Erf.
#include <cstdint>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "tools/bench/vecmath_kernels.h"

namespace lathe::bench {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

template <class D, class Op>
HWY_INLINE void Apply(D d, const float* x, float* y, int64_t n, Op op) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(op(d, hn::LoadU(d, x + i)), d, y + i);
  }
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    hn::BlendedStore(op(d, hn::MaskedLoad(m, d, x + i)), m, d, y + i);
  }
}

struct ExpOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::Exp(d, x);
  }
};
struct LogOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::Log(d, x);
  }
};
struct TanhOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::Tanh(d, x);
  }
};
struct SigmoidOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    const V one = hn::Set(d, 1.0f);
    return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(x))));
  }
};

// libm's special values restored around Highway's functions. Exp: x above
// 88.72283172607421875 (the largest x with a finite expf) overflows to +inf
// (Highway returns garbage past +104, e.g. Exp(256) = 1e-43); NaN stays NaN
// (Highway gives 0).
template <class D, class V>
HWY_INLINE V FixedExp(D d, V x) {
  const V overflow = hn::Set(d, 88.72283172607421875f);
  const V r = hn::IfThenElse(hn::Gt(x, overflow), hn::Inf(d), hn::Exp(d, x));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}
struct FixedExpOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return FixedExp(d, x);
  }
};
struct FixedLogOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    V r = hn::Log(d, x);
    r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(hn::Inf(d)), r);
    r = hn::IfThenElse(hn::Eq(x, hn::Inf(d)), x, r);
    // x < 0 and NaN (unordered compares are false) -> NaN.
    return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), r, hn::NaN(d));
  }
};
struct FixedSigmoidOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    const V one = hn::Set(d, 1.0f);
    return hn::Div(one, hn::Add(one, FixedExp(d, hn::Neg(x))));
  }
};

template <class D, class Op>
void ArrayOp(const float* x, float* y, int64_t n) {
  Apply(D(), x, y, n, Op());
}

using D16 = hn::ScalableTag<float>;
using D8 = hn::CappedTag<float, 8>;

}  // namespace

const VecMathImpl& HwyAvx512Impl() {
  static_assert(HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL,
                "compile with -march=native on an AVX-512 machine");
  static const VecMathImpl impl = {
      "hwy_avx512",
      "hn::Exp (16 lanes)",
      true,
      {ArrayOp<D16, ExpOp>, ArrayOp<D16, LogOp>, ArrayOp<D16, TanhOp>,
       ArrayOp<D16, SigmoidOp>, nullptr}};
  return impl;
}

const VecMathImpl& HwyAvx512FixedImpl() {
  static const VecMathImpl impl = {
      "hwy_avx512_fixed",
      "hn::Exp (16 lanes) + fixups",
      true,
      {ArrayOp<D16, FixedExpOp>, ArrayOp<D16, FixedLogOp>, ArrayOp<D16, TanhOp>,
       ArrayOp<D16, FixedSigmoidOp>, nullptr}};
  return impl;
}

const VecMathImpl& HwyAvx2Impl() {
  static const VecMathImpl impl = {
      "hwy_avx2",
      "hn::Exp (8 lanes)",
      true,  // AVX3 target: 8-lane ops use AVX-512VL encodings
      {ArrayOp<D8, ExpOp>, ArrayOp<D8, LogOp>, ArrayOp<D8, TanhOp>,
       ArrayOp<D8, SigmoidOp>, nullptr}};
  return impl;
}

}  // namespace lathe::bench
