#include "driver/first_tier_loops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

// glibc's vector variants (libmvec) of the scalar functions the reference
// calls: GCC calls them from the `omp simd` loops below (built with
// -fopenmp-simd), each loop in the widest variant its target allows.
// (exp, log, sin and cos have them from glibc 2.22, the rest from 2.35;
// without them the loops call the scalar functions.)
#if defined(__GLIBC__)
extern "C" {
#define LATHE_DECLARE_SIMD(name) \
  _Pragma("omp declare simd notinbranch") double name(double) noexcept;
LATHE_DECLARE_SIMD(exp)
LATHE_DECLARE_SIMD(log)
LATHE_DECLARE_SIMD(sin)
LATHE_DECLARE_SIMD(cos)
#if __GLIBC_PREREQ(2, 35)
LATHE_DECLARE_SIMD(exp2)
LATHE_DECLARE_SIMD(expm1)
LATHE_DECLARE_SIMD(log2)
LATHE_DECLARE_SIMD(log10)
LATHE_DECLARE_SIMD(log1p)
LATHE_DECLARE_SIMD(tan)
LATHE_DECLARE_SIMD(asin)
LATHE_DECLARE_SIMD(acos)
LATHE_DECLARE_SIMD(atan)
LATHE_DECLARE_SIMD(sinh)
LATHE_DECLARE_SIMD(cosh)
LATHE_DECLARE_SIMD(tanh)
LATHE_DECLARE_SIMD(asinh)
LATHE_DECLARE_SIMD(acosh)
LATHE_DECLARE_SIMD(atanh)
LATHE_DECLARE_SIMD(erf)
#endif  // __GLIBC_PREREQ(2, 35)
#undef LATHE_DECLARE_SIMD
}
#endif  // __GLIBC__

namespace lathe {
namespace {

using Result = std::optional<absl::StatusOr<ir::Value>>;
using VectorLoop = void (*)(const float* x, int64_t n, float* y);

// One function's loop (`...`: its body, over x, n and y) three times:
// AVX-512, AVX2 and the base ISA, picked at run time (Pick).
#define LATHE_ISA_LOOPS(name, ...)                                          \
  __attribute__((target("avx512f"))) void name##_avx512(                    \
      const float* x, int64_t n, float* y) __VA_ARGS__                      \
      __attribute__((target("avx2"))) void name##_avx2(const float* x,      \
                                                       int64_t n, float* y) \
          __VA_ARGS__ void name##_base(const float* x, int64_t n, float* y) \
              __VA_ARGS__ constexpr VectorLoop name##_loops[3] = {          \
                  &name##_avx512, &name##_avx2, &name##_base};

// y = `expr`, the reference's expression of the double `v`.
#define LATHE_UNARY_LOOP(name, expr)                      \
  LATHE_ISA_LOOPS(name, {                                 \
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) { \
      const double v = x[i];                              \
      y[i] = static_cast<float>(expr);                    \
    }                                                     \
  })

// exp's argument (sign * x) is raised to -110 where it is lower, in a pass of
// its own (GCC vectorizes no loop with the select and the call together):
// exp(-110) is about 1e-48, so an f32 result, and 1 + exp(...) in double,
// are the same either way, and libmvec's exp falls back to the scalar
// function for a whole vector when one lane would underflow double (below
// -708: an attention row's scores less their maximum, often). y = `expr`, of
// the double `v` and `e` = exp(sign * v).
constexpr float kUnderflow = -110;
constexpr int64_t kChunk = 256;
#define LATHE_EXP_LOOP(name, sign, expr)                    \
  LATHE_ISA_LOOPS(name, {                                   \
    float a[kChunk];                                        \
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {            \
      const int64_t m = n - i0 < kChunk ? n - i0 : kChunk;  \
      _Pragma("omp simd") for (int64_t i = 0; i < m; ++i) { \
        const float s = (sign)*x[i0 + i];                   \
        a[i] = s < kUnderflow ? kUnderflow : s;             \
      }                                                     \
      _Pragma("omp simd") for (int64_t i = 0; i < m; ++i) { \
        [[maybe_unused]] const double v = x[i0 + i];        \
        const double e = exp(static_cast<double>(a[i]));    \
        y[i0 + i] = static_cast<float>(expr);               \
      }                                                     \
    }                                                       \
  })

LATHE_EXP_LOOP(Exp, 1, e)
// The reference's Sigmoid and Silu (ops_pointwise.cc).
LATHE_EXP_LOOP(Sigmoid, -1, 1.0 / (1.0 + e))
LATHE_EXP_LOOP(Silu, -1, v*(1.0 / (1.0 + e)))
LATHE_UNARY_LOOP(Exp2, exp2(v))
LATHE_UNARY_LOOP(Expm1, expm1(v))
LATHE_UNARY_LOOP(Log, log(v))
LATHE_UNARY_LOOP(Log2, log2(v))
LATHE_UNARY_LOOP(Log10, log10(v))
LATHE_UNARY_LOOP(Log1p, log1p(v))
LATHE_UNARY_LOOP(Sin, sin(v))
LATHE_UNARY_LOOP(Cos, cos(v))
LATHE_UNARY_LOOP(Tan, tan(v))
LATHE_UNARY_LOOP(Asin, asin(v))
LATHE_UNARY_LOOP(Acos, acos(v))
LATHE_UNARY_LOOP(Atan, atan(v))
LATHE_UNARY_LOOP(Sinh, sinh(v))
LATHE_UNARY_LOOP(Cosh, cosh(v))
LATHE_UNARY_LOOP(Tanh, tanh(v))
LATHE_UNARY_LOOP(Asinh, asinh(v))
LATHE_UNARY_LOOP(Acosh, acosh(v))
LATHE_UNARY_LOOP(Atanh, atanh(v))
LATHE_UNARY_LOOP(Erf, erf(v))
// The reference's Relu: NaN stays, -0 becomes +0.
LATHE_UNARY_LOOP(Relu, v != v ? v : (v > 0 ? v : 0.0))
#undef LATHE_EXP_LOOP
#undef LATHE_UNARY_LOOP
#undef LATHE_ISA_LOOPS

// Which of a function's three loops this CPU runs.
VectorLoop Pick(const VectorLoop (&loops)[3]) {
  static const int level = __builtin_cpu_supports("avx512f") ? 0
                           : __builtin_cpu_supports("avx2")  ? 1
                                                             : 2;
  return loops[level];
}

// Whether `v` is an f32 host tensor.
bool F32(const ir::Value& v) {
  return v.is_tensor() && v.tensor.defined() &&
         v.tensor.dtype() == DType::kFloat32 && v.tensor.device().is_cpu();
}

// f(x) of an f32 tensor into a tensor laid out as the reference lays it out
// (a new one, or x's memory where only the call holds it: FirstTierResult),
// when x is dense and the result has x's strides (the loop then walks both
// as one run of memory).
Result Unary(const ir::OpCall& c, VectorLoop loop) {
  const ir::Value& x = c.arg(0);
  if (!F32(x) || !x.tensor.is_non_overlapping_and_dense()) return std::nullopt;
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  std::optional<Tensor> out;
  if (meta.ok()) out = FirstTierResult(c, *meta, DType::kFloat32, {&x});
  if (!out || out->sizes() != x.tensor.sizes() ||
      out->strides() != x.tensor.strides()) {
    return std::nullopt;
  }
  // A dense tensor's elements are the numel() from element (0, ..., 0) (its
  // strides are positive).
  loop(x.tensor.data<float>(), x.tensor.numel(), out->data<float>());
  return ir::Value::OfTensor(*std::move(out));
}

// ---- Binary ----------------------------------------------------------------

// The operands' and the result's element strides over the result's sizes,
// with dimensions merged where every tensor steps through them as one.
struct Walk {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;  // [tensor][dim]
};

Walk Merged(const std::vector<int64_t>& sizes,
            const std::vector<const Tensor*>& tensors) {
  Walk w;
  w.strides.resize(tensors.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !w.sizes.empty();
    for (size_t k = 0; k < tensors.size() && merge; ++k) {
      merge = w.strides[k].back() == tensors[k]->strides()[d] * sizes[d];
    }
    if (merge) {
      w.sizes.back() *= sizes[d];
      for (size_t k = 0; k < tensors.size(); ++k) {
        w.strides[k].back() = tensors[k]->strides()[d];
      }
      continue;
    }
    w.sizes.push_back(sizes[d]);
    for (size_t k = 0; k < tensors.size(); ++k) {
      w.strides[k].push_back(tensors[k]->strides()[d]);
    }
  }
  if (w.sizes.empty()) {  // one element
    w.sizes.push_back(1);
    for (auto& s : w.strides) s.push_back(0);
  }
  return w;
}

// o[j * so] = f(a[j * sa], b[j * sb]) for j < n, with the common steps
// (contiguous, or one operand broadcast) as loops of their own.
template <typename F>
void Row(const float* a, int64_t sa, const float* b, int64_t sb, float* o,
         int64_t so, int64_t n, F f) {
  if (so == 1 && sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j) o[j] = f(a[j], b[j]);
  } else if (so == 1 && sa == 1 && sb == 0) {
    const float y = *b;
    for (int64_t j = 0; j < n; ++j) o[j] = f(a[j], y);
  } else if (so == 1 && sa == 0 && sb == 1) {
    const float x = *a;
    for (int64_t j = 0; j < n; ++j) o[j] = f(x, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) o[j * so] = f(a[j * sa], b[j * sb]);
  }
}

// f over the broadcast views a and b into out (all of out's sizes), a row of
// the merged walk at a time.
template <typename F>
void Elementwise(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  if (out.numel() == 0) return;
  const Walk w = Merged(out.sizes(), {&a, &b, &out});
  const size_t rank = w.sizes.size();
  const int64_t n = w.sizes[rank - 1];
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  std::vector<int64_t> index(rank - 1, 0);
  const int64_t rows = out.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t oa = 0, ob = 0, oo = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      oa += index[d] * w.strides[0][d];
      ob += index[d] * w.strides[1][d];
      oo += index[d] * w.strides[2][d];
    }
    Row(pa + oa, w.strides[0][rank - 1], pb + ob, w.strides[1][rank - 1],
        po + oo, w.strides[2][rank - 1], n, f);
    for (size_t d = rank - 1; d-- > 0;) {  // the next row's index
      if (++index[d] < w.sizes[d]) break;
      index[d] = 0;
    }
  }
}

// Whether the bytes a and b span (from their first element to their last)
// intersect.
bool SharesBytes(const Tensor& a, const Tensor& b) {
  auto span = [](const Tensor& t) {
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      last += (t.sizes()[d] - 1) * t.strides()[d];
    }
    const char* first = static_cast<const char*>(t.data_ptr());
    return std::make_pair(first, first + (last + 1) * t.itemsize());
  };
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

enum class Arith { kAdd, kSub, kMul, kDiv };

// self OP other (add and sub: self + alpha * other, negated for sub) over
// f32 operands, into a new tensor or an operand's memory only the call
// holds (FirstTierResult; `in_place`: into self), with the reference's
// expressions in double.
Result Binary(const ir::OpCall& c, Arith op, bool in_place) {
  const ir::Value& self = c.arg(0);
  const ir::Value& other = c.arg(1);
  if (!F32(self) || !(F32(other) || other.is_number())) return std::nullopt;
  double scale = op == Arith::kSub ? -1 : 1;
  if (op == Arith::kAdd || op == Arith::kSub) {
    absl::StatusOr<double> alpha = c.arg("alpha").AsDouble();
    if (!alpha.ok()) return std::nullopt;
    scale *= *alpha;
  }
  // The result: self in place (once the reference's checks pass: the
  // in-place meta function runs them and returns self), else a new tensor
  // laid out as the meta function says.
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  if (!meta.ok()) return std::nullopt;
  std::optional<Tensor> out;
  if (in_place) {
    out = self.tensor;
  } else {
    out = FirstTierResult(c, *meta, DType::kFloat32, {&self, &other});
  }
  if (!out) return std::nullopt;
  const std::vector<int64_t>& sizes = out->sizes();
  // A number is the reference's 0-d tensor of the compute dtype (f32).
  absl::StatusOr<Tensor> b = other.is_number()
                                 ? ir::ScalarTensor(other, DType::kFloat32)
                                 : absl::StatusOr<Tensor>(other.tensor);
  if (!b.ok()) return std::nullopt;
  absl::StatusOr<Tensor> va = ir::BroadcastView(self.tensor, sizes);
  absl::StatusOr<Tensor> vb = ir::BroadcastView(*b, sizes);
  if (!va.ok() || !vb.ok()) return std::nullopt;
  if (in_place) {
    // Each element of self is read once, before it is written: safe unless
    // other shares self's memory in another layout (the same storage, or
    // two storages over the same addresses: a caller's borrowed tensors).
    const Overlap overlap = GetOverlap(self.tensor, *b);
    if (!self.tensor.is_non_overlapping_and_dense() ||
        (overlap != Overlap::kNone && overlap != Overlap::kFull) ||
        (overlap == Overlap::kNone && SharesBytes(self.tensor, *b))) {
      return std::nullopt;
    }
  }
  switch (op) {
    case Arith::kAdd:
    case Arith::kSub:
      Elementwise(*va, *vb, *out, [scale](float x, float y) {
        return static_cast<float>(static_cast<double>(x) +
                                  scale * static_cast<double>(y));
      });
      break;
    case Arith::kMul:
      Elementwise(*va, *vb, *out, [](float x, float y) {
        return static_cast<float>(static_cast<double>(x) *
                                  static_cast<double>(y));
      });
      break;
    case Arith::kDiv:
      Elementwise(*va, *vb, *out, [](float x, float y) {
        return static_cast<float>(static_cast<double>(x) /
                                  static_cast<double>(y));
      });
      break;
  }
  return in_place ? self : ir::Value::OfTensor(*std::move(out));
}

// ---- Comparisons and where --------------------------------------------------

// Whether the tensors have one layout, dense: a flat loop walks them all.
bool OneDenseLayout(std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  if (!first.is_non_overlapping_and_dense()) return false;
  for (const Tensor* t : tensors) {
    if (t->sizes() != first.sizes() || t->strides() != first.strides()) {
      return false;
    }
  }
  return true;
}

enum class Cmp { kLt, kLe, kGt, kGe, kEq, kNe };

// self CMP other for an f32 tensor and a number, into a bool tensor laid out
// as self: the reference compares the f32 elements with the number as its
// 0-d f32 tensor, in double.
Result Compare(const ir::OpCall& c, Cmp cmp) {
  const ir::Value& self = c.arg(0);
  const ir::Value& other = c.arg(1);
  if (!F32(self) || !other.is_number()) return std::nullopt;
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  if (!meta.ok()) return std::nullopt;
  std::optional<Tensor> out = FirstTierResult(c, *meta, DType::kBool);
  absl::StatusOr<Tensor> number = ir::ScalarTensor(other, DType::kFloat32);
  if (!out || !number.ok() || !OneDenseLayout({&self.tensor, &*out})) {
    return std::nullopt;
  }
  const double y = *number->data<float>();
  const float* x = self.tensor.data<float>();
  auto* o = static_cast<uint8_t*>(out->data_ptr());
  const int64_t n = out->numel();
  // One loop per comparison, each the compiler's to vectorize.
  auto loop = [&](auto holds) {
    for (int64_t i = 0; i < n; ++i) o[i] = holds(static_cast<double>(x[i]));
  };
  switch (cmp) {
    case Cmp::kLt:
      loop([y](double v) { return v < y; });
      break;
    case Cmp::kLe:
      loop([y](double v) { return v <= y; });
      break;
    case Cmp::kGt:
      loop([y](double v) { return v > y; });
      break;
    case Cmp::kGe:
      loop([y](double v) { return v >= y; });
      break;
    case Cmp::kEq:
      loop([y](double v) { return v == y; });
      break;
    case Cmp::kNe:
      loop([y](double v) { return v != y; });
      break;
  }
  return ir::Value::OfTensor(*std::move(out));
}

// where(condition, self, other) of a bool condition and f32 operands (self
// a number for where.ScalarSelf, as the reference's 0-d f32 tensor), all
// of the result's layout: each element the chosen operand's.
Result Where(const ir::OpCall& c) {
  const ir::Value& cond = c.arg(0);
  const ir::Value& self = c.arg(1);
  const ir::Value& other = c.arg(2);
  if (!cond.is_tensor() || !cond.tensor.defined() ||
      cond.tensor.dtype() != DType::kBool || !cond.tensor.device().is_cpu() ||
      !(F32(self) || self.is_number()) || !F32(other)) {
    return std::nullopt;
  }
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  if (!meta.ok()) return std::nullopt;
  std::optional<Tensor> out =
      FirstTierResult(c, *meta, DType::kFloat32, {&self, &other});
  if (!out) return std::nullopt;
  std::optional<float> number;
  if (self.is_number()) {
    absl::StatusOr<Tensor> t = ir::ScalarTensor(self, DType::kFloat32);
    if (!t.ok()) return std::nullopt;
    number = *t->data<float>();
  }
  if (!(number ? OneDenseLayout({&cond.tensor, &other.tensor, &*out})
               : OneDenseLayout(
                     {&cond.tensor, &self.tensor, &other.tensor, &*out}))) {
    return std::nullopt;
  }
  const auto* pc = static_cast<const uint8_t*>(cond.tensor.data_ptr());
  const float* pb = other.tensor.data<float>();
  float* o = out->data<float>();
  const int64_t n = out->numel();
  if (number) {
    const float a = *number;
    for (int64_t i = 0; i < n; ++i) o[i] = pc[i] != 0 ? a : pb[i];
  } else {
    const float* pa = self.tensor.data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = pc[i] != 0 ? pa[i] : pb[i];
  }
  return ir::Value::OfTensor(*std::move(out));
}

// ---- Reductions along the last dimension ----------------------------------

enum class Reduce { kSum, kMean, kMax, kMin, kVar, kVarMean };

// The row length of a reduction of f32 `self` over its last dimension alone
// (the dim argument one index that wraps to it), with no dtype argument; 0
// for any other call.
int64_t LastDimRow(const ir::OpCall& c) {
  const ir::Value& self = c.arg(0);
  if (!F32(self) || self.tensor.dim() == 0 || !self.tensor.is_contiguous() ||
      self.tensor.sizes().back() == 0) {
    return 0;
  }
  const int dtype = c.op().schema.ArgumentIndex("dtype");
  if (dtype >= 0 && !c.arg(dtype).is_none()) return 0;
  absl::StatusOr<std::vector<int64_t>> dims = c.arg("dim").AsIntList();
  const int64_t rank = self.tensor.dim();
  if (!dims.ok() || dims->size() != 1 ||
      ((*dims)[0] != rank - 1 && (*dims)[0] != -1)) {
    return 0;
  }
  return self.tensor.sizes().back();
}

// A new f32 tensor laid out as meta value `m` says, when that is
// contiguous (the loops write the rows in order).
std::optional<Tensor> NewLike(const ir::OpCall& c, const ir::Value& m) {
  std::optional<Tensor> t = FirstTierResult(c, m, DType::kFloat32);
  if (!t || !t->is_contiguous()) return std::nullopt;
  return t;
}

// sum, mean, amax, amin, var and var_mean of an f32 tensor over its last
// dimension, a row at a time, with the reference's accumulations in double
// in its order (ops_reduce.cc), so its bits.
Result RowReduce(const ir::OpCall& c, Reduce kind) {
  const int64_t n = LastDimRow(c);
  if (n == 0) return std::nullopt;
  double correction = 1;
  if (kind == Reduce::kVar || kind == Reduce::kVarMean) {
    const ir::Value& v = c.arg("correction");
    if (!v.is_none()) {
      absl::StatusOr<double> d = v.AsDouble();
      if (!d.ok()) return std::nullopt;
      correction = *d;
    }
  }
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  if (!meta.ok()) return std::nullopt;
  const bool pair = kind == Reduce::kVarMean;
  if (pair && (meta->list.size() != 2)) return std::nullopt;
  std::optional<Tensor> out = NewLike(c, pair ? meta->list[0] : *meta);
  std::optional<Tensor> mean;
  if (pair) mean = NewLike(c, meta->list[1]);
  if (!out || (pair && !mean)) return std::nullopt;
  const float* x = c.arg(0).tensor.data<float>();
  float* o = out->data<float>();
  float* om = pair ? mean->data<float>() : nullptr;
  const int64_t rows = c.arg(0).tensor.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * n;
    switch (kind) {
      case Reduce::kSum:
      case Reduce::kMean: {
        double a = 0;
        for (int64_t j = 0; j < n; ++j) a += p[j];
        o[r] = static_cast<float>(kind == Reduce::kMean ? a / n : a);
        break;
      }
      case Reduce::kMax:
      case Reduce::kMin: {
        // NaN wins and then stays.
        double a = kind == Reduce::kMax ? -HUGE_VAL : HUGE_VAL;
        for (int64_t j = 0; j < n; ++j) {
          const double v = p[j];
          const bool better = kind == Reduce::kMax ? v > a : v < a;
          if (!std::isnan(a) && (std::isnan(v) || better)) a = v;
        }
        o[r] = static_cast<float>(a);
        break;
      }
      case Reduce::kVar:
      case Reduce::kVarMean: {
        double m = 0;
        for (int64_t j = 0; j < n; ++j) m += p[j];
        m = m / n;
        double ss = 0;
        for (int64_t j = 0; j < n; ++j) ss += (p[j] - m) * (p[j] - m);
        o[r] = static_cast<float>(
            ss / std::max(0.0, static_cast<double>(n) - correction));
        if (pair) om[r] = static_cast<float>(m);
        break;
      }
    }
  }
  if (!pair) return ir::Value::OfTensor(*std::move(out));
  return ir::Value::List(
      {ir::Value::OfTensor(*std::move(out)), ir::Value::OfTensor(*mean)});
}

// ---- Max pooling
// -------------------------------------------------------------

// Two ints from an int[2] argument given as one or two (kernel_size=2 is
// [2, 2]); `empty` when it is an empty list (stride's default).
std::optional<std::array<int64_t, 2>> Pair(
    const ir::Value& v, std::optional<std::array<int64_t, 2>> empty) {
  absl::StatusOr<std::vector<int64_t>> l = v.AsIntList();
  if (!l.ok() || l->size() > 2) return std::nullopt;
  if (l->empty()) return empty;
  return std::array<int64_t, 2>{l->front(), l->back()};
}

// max_pool2d_with_indices of a 4-d f32 tensor: (values, int64 flat indices
// into each input plane), the reference's windows and comparisons (a NaN
// wins, and a later NaN wins again: ops_pool.cc), into the layouts the
// reference gives.
Result MaxPool2d(const ir::OpCall& c) {
  const ir::Value& self = c.arg(0);
  if (!F32(self) || self.tensor.dim() != 4 || self.tensor.numel() == 0) {
    return std::nullopt;
  }
  const auto k = Pair(c.arg("kernel_size"), std::nullopt);
  const auto st = Pair(c.arg("stride"), k);
  const auto pad = Pair(c.arg("padding"), std::nullopt);
  const auto dil = Pair(c.arg("dilation"), std::nullopt);
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);  // its checks too
  if (!k || !st || !pad || !dil || !meta.ok() || meta->list.size() != 2) {
    return std::nullopt;
  }
  std::optional<Tensor> out =
      FirstTierResult(c, meta->list[0], DType::kFloat32);
  std::optional<Tensor> idx = FirstTierResult(c, meta->list[1], DType::kInt64);
  if (!out || !idx) return std::nullopt;
  const Tensor& x = self.tensor;
  const std::vector<int64_t>& xs = x.strides();
  const std::vector<int64_t>& os = out->strides();
  const std::vector<int64_t>& is = idx->strides();
  const int64_t in_h = x.sizes()[2], in_w = x.sizes()[3];
  const int64_t out_h = out->sizes()[2], out_w = out->sizes()[3];
  const float* px = x.data<float>();
  float* po = out->data<float>();
  int64_t* pi = idx->data<int64_t>();
  for (int64_t n = 0; n < x.sizes()[0]; ++n) {
    for (int64_t ch = 0; ch < x.sizes()[1]; ++ch) {
      const float* plane = px + n * xs[0] + ch * xs[1];
      for (int64_t oh = 0; oh < out_h; ++oh) {
        const int64_t h_lo = oh * (*st)[0] - (*pad)[0];
        const int64_t h_end =
            std::min(h_lo + ((*k)[0] - 1) * (*dil)[0] + 1, in_h);
        int64_t h0 = h_lo;
        while (h0 < 0) h0 += (*dil)[0];
        for (int64_t ow = 0; ow < out_w; ++ow) {
          const int64_t w_lo = ow * (*st)[1] - (*pad)[1];
          const int64_t w_end =
              std::min(w_lo + ((*k)[1] - 1) * (*dil)[1] + 1, in_w);
          int64_t w0 = w_lo;
          while (w0 < 0) w0 += (*dil)[1];
          int64_t best = h0 * in_w + w0;
          double mx = -HUGE_VAL;
          for (int64_t h = h0; h < h_end; h += (*dil)[0]) {
            for (int64_t w = w0; w < w_end; w += (*dil)[1]) {
              const double v = plane[h * xs[2] + w * xs[3]];
              if (v > mx || std::isnan(v)) {
                mx = v;
                best = h * in_w + w;
              }
            }
          }
          po[n * os[0] + ch * os[1] + oh * os[2] + ow * os[3]] =
              static_cast<float>(mx);
          pi[n * is[0] + ch * is[1] + oh * is[2] + ow * is[3]] = best;
        }
      }
    }
  }
  return ir::Value::List(
      {ir::Value::OfTensor(*std::move(out)), ir::Value::OfTensor(*idx)});
}

}  // namespace

std::optional<Tensor> FirstTierResult(
    const ir::OpCall& c, const ir::Value& meta, DType dtype,
    std::initializer_list<const ir::Value*> reusable) {
  if (!meta.is_tensor() || meta.meta.dtype != dtype ||
      !meta.meta.device.is_cpu()) {
    return std::nullopt;
  }
  absl::StatusOr<std::vector<int64_t>> sizes =
      ir::ConcreteSizes(c, meta.meta.sizes);
  absl::StatusOr<std::vector<int64_t>> strides =
      ir::ConcreteSizes(c, meta.meta.strides);
  if (!sizes.ok() || !strides.ok()) return std::nullopt;
  for (const ir::Value* v : reusable) {
    if (!v->is_tensor() || !v->tensor.defined()) continue;
    const Tensor& t = v->tensor;
    if (t.dtype() == dtype && t.device().is_cpu() &&
        !t.storage().is_borrowed() && t.storage().use_count() == 1 &&
        t.storage_offset() == 0 &&
        t.storage().nbytes() == t.numel() * t.itemsize() &&
        t.sizes() == *sizes && t.strides() == *strides &&
        t.is_non_overlapping_and_dense()) {
      return t;
    }
  }
  absl::StatusOr<Tensor> t =
      Tensor::UninitializedStrided(*sizes, *strides, dtype);
  if (!t.ok() || !t->is_non_overlapping_and_dense()) return std::nullopt;
  return *std::move(t);
}

void AddFirstTierLoops(ir::KernelOverrides& kernels) {
  const std::pair<const char*, const VectorLoop(*)[3]> unary[] = {
      {"exp", &Exp_loops},         {"exp2", &Exp2_loops},
      {"expm1", &Expm1_loops},     {"log", &Log_loops},
      {"log2", &Log2_loops},       {"log10", &Log10_loops},
      {"log1p", &Log1p_loops},     {"sin", &Sin_loops},
      {"cos", &Cos_loops},         {"tan", &Tan_loops},
      {"asin", &Asin_loops},       {"acos", &Acos_loops},
      {"atan", &Atan_loops},       {"sinh", &Sinh_loops},
      {"cosh", &Cosh_loops},       {"tanh", &Tanh_loops},
      {"asinh", &Asinh_loops},     {"acosh", &Acosh_loops},
      {"atanh", &Atanh_loops},     {"erf", &Erf_loops},
      {"sigmoid", &Sigmoid_loops}, {"silu", &Silu_loops},
      {"relu", &Relu_loops},
  };
  for (const auto& [name, loops] : unary) {
    const VectorLoop loop = Pick(*loops);
    kernels[absl::StrCat("aten.", name, ".default")] =
        [loop](const ir::OpCall& c) { return Unary(c, loop); };
  }
  const std::pair<const char*, Arith> binary[] = {
      {"add", Arith::kAdd},
      {"sub", Arith::kSub},
      {"mul", Arith::kMul},
      {"div", Arith::kDiv},
  };
  const std::pair<const char*, Reduce> reductions[] = {
      {"aten.sum.dim_IntList", Reduce::kSum},
      {"aten.mean.dim", Reduce::kMean},
      {"aten.amax.default", Reduce::kMax},
      {"aten.amin.default", Reduce::kMin},
      {"aten.var.correction", Reduce::kVar},
      {"aten.var_mean.correction", Reduce::kVarMean},
  };
  kernels["aten.max_pool2d_with_indices.default"] = &MaxPool2d;
  const std::pair<const char*, Cmp> comparisons[] = {
      {"lt", Cmp::kLt}, {"le", Cmp::kLe}, {"gt", Cmp::kGt},
      {"ge", Cmp::kGe}, {"eq", Cmp::kEq}, {"ne", Cmp::kNe},
  };
  for (const auto& [name, cmp] : comparisons) {
    const Cmp k = cmp;
    kernels[absl::StrCat("aten.", name, ".Scalar")] = [k](const ir::OpCall& c) {
      return Compare(c, k);
    };
  }
  kernels["aten.where.self"] = &Where;
  kernels["aten.where.ScalarSelf"] = &Where;
  for (const auto& [target, kind] : reductions) {
    const Reduce k = kind;
    kernels[target] = [k](const ir::OpCall& c) { return RowReduce(c, k); };
  }
  for (const auto& [name, op] : binary) {
    for (const char* overload : {"Tensor", "Scalar"}) {
      const Arith o = op;
      kernels[absl::StrCat("aten.", name, ".", overload)] =
          [o](const ir::OpCall& c) { return Binary(c, o, /*in_place=*/false); };
      kernels[absl::StrCat("aten.", name, "_.", overload)] =
          [o](const ir::OpCall& c) { return Binary(c, o, /*in_place=*/true); };
    }
  }
}

}  // namespace lathe
