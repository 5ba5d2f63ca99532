// Property test: over random shapes, strides (contiguous, permuted, stepped,
// broadcast), dtypes and arguments, every op's meta function predicts
// exactly the dtype, sizes, strides and storage offset its reference kernel
// produces (RunOp checks that whenever the kernel succeeds).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/value.h"
#include "runtime/tensor.h"

namespace lathe::ir {
namespace {

class Random {
 public:
  explicit Random(uint32_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool Coin() { return Int(0, 1) == 1; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int64_t>(v.size()) - 1)];
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

void FillRandom(Random& r, const Tensor& t) {
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    t.SetDouble(i, static_cast<double>(r.Int(-6, 6)) /
                       (IsFloatingPoint(t.dtype()) ? 2 : 1));
  });
}

// A tensor of `sizes` laid out at random: contiguous, permuted, stepped
// (every other element, offset 1) or with a broadcast (stride 0) dim.
Tensor RandomLayout(Random& r, std::vector<int64_t> sizes, DType dtype) {
  int64_t rank = static_cast<int64_t>(sizes.size());
  int layout = rank == 0 ? 0 : static_cast<int>(r.Int(0, 3));
  Tensor t;
  if (layout == 1) {  // permuted
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), r.rng());
    std::vector<int64_t> base_sizes(rank);
    for (int64_t d = 0; d < rank; ++d) base_sizes[d] = sizes[perm[d]];
    Tensor base = *Tensor::Empty(base_sizes, dtype);
    std::vector<int64_t> strides(rank);
    for (int64_t d = 0; d < rank; ++d) strides[perm[d]] = base.strides()[d];
    t = *base.AsStrided(sizes, strides, 0);
  } else if (layout == 2) {  // stepped
    std::vector<int64_t> base_sizes = sizes;
    for (int64_t& s : base_sizes) s = 2 * s + 1;
    Tensor base = *Tensor::Empty(base_sizes, dtype);
    std::vector<int64_t> strides = base.strides();
    for (int64_t& s : strides) s *= 2;
    t = *base.AsStrided(sizes, strides, 1);
  } else if (layout == 3) {  // one broadcast dim
    int64_t d = r.Int(0, rank - 1);
    std::vector<int64_t> base_sizes = sizes;
    base_sizes[d] = 1;
    Tensor base = *Tensor::Empty(base_sizes, dtype);
    FillRandom(r, base);
    std::vector<int64_t> strides = base.strides();
    strides[d] = 0;
    return *base.AsStrided(sizes, strides, 0);
  } else {
    t = *Tensor::Empty(sizes, dtype);
  }
  FillRandom(r, t);
  return t;
}

std::vector<int64_t> RandomSizes(Random& r) {
  std::vector<int64_t> sizes(r.Int(0, 4));
  for (int64_t& s : sizes) s = r.Pick<int64_t>({0, 1, 1, 2, 3, 4});
  return sizes;
}

// A shape `sizes` broadcasts against: leading dims dropped, some set to 1.
std::vector<int64_t> BroadcastPartner(Random& r,
                                      const std::vector<int64_t>& sizes) {
  std::vector<int64_t> out(
      sizes.begin() + r.Int(0, static_cast<int64_t>(sizes.size())),
      sizes.end());
  for (int64_t& s : out) {
    if (r.Int(0, 3) == 0) s = 1;
  }
  return out;
}

Value I(int64_t v) { return Value::Int(v); }
// Runs an op, ignoring argument errors the kernel reports (those are the
// kernel tests' business); RunOp checks meta == kernel on success.
int ran = 0;
void Try(const std::string& target, std::vector<Value> args,
         std::vector<std::pair<std::string, Value>> kwargs = {}) {
  if (RunOp(target, std::move(args), std::move(kwargs)).ok()) ++ran;
}

TEST(OpsPropertyTest, MetaFunctionsPredictKernelResults) {
  Random r(20261121);
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64,
                                     DType::kInt64,   DType::kInt32,
                                     DType::kBool,    DType::kFloat16};
  const std::vector<std::string> unary = {
      "abs",   "neg",  "exp",   "log1p",       "sqrt",        "sigmoid", "relu",
      "floor", "sign", "isnan", "logical_not", "bitwise_not", "gelu"};
  const std::vector<std::string> binary = {
      "aten.add.Tensor",         "aten.sub.Tensor",
      "aten.mul.Tensor",         "aten.div.Tensor",
      "aten.maximum.default",    "aten.eq.Tensor",
      "aten.lt.Tensor",          "aten.remainder.Tensor",
      "aten.atan2.default",      "aten.logical_and.default",
      "aten.bitwise_xor.Tensor", "aten.pow.Tensor_Tensor"};
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> sizes = RandomSizes(r);
    DType dtype = r.Pick(dtypes);
    Tensor x = RandomLayout(r, sizes, dtype);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ": x = ", x.ToString(), "+",
                              x.storage_offset()));
    int64_t rank = x.dim();
    int64_t dim = rank == 0 ? 0 : r.Int(-rank, rank - 1);
    Tensor y = RandomLayout(r, BroadcastPartner(r, sizes), r.Pick(dtypes));
    if (r.Coin()) std::swap(x, y);
    // Pointwise.
    for (const std::string& u : unary)
      Try(absl::StrCat("aten.", u, ".default"), {V(x)});
    for (const std::string& b : binary) Try(b, {V(x), V(y)});
    Try("aten.add.Tensor", {V(x), Value::Float(0.5)}, {{"alpha", I(2)}});
    Try("aten.mul.Scalar", {V(x), I(3)});
    Try("aten.clamp.default", {V(x), Value::Float(-1), I(1)});
    Try("aten.addcmul.default", {V(x), V(y), V(x)});
    Try("aten.lerp.Scalar", {V(x), V(x), Value::Float(0.3)});
    Try("aten.where.self",
        {V(*Tensor::Empty(y.sizes(), DType::kBool)), V(x), V(y)});
    // Reductions.
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (r.Coin()) dims.push_back(r.Coin() ? d : d - rank);
    }
    Value keep = Value::Bool(r.Coin());
    Try("aten.sum.dim_IntList", {V(x), Ints(dims), keep});
    Try("aten.mean.dim", {V(x), Ints(dims), keep});
    Try("aten.amax.default", {V(x), Ints(dims), keep});
    Try("aten.var_mean.correction", {V(x), Ints(dims)}, {{"keepdim", keep}});
    Try("aten.prod.dim_int", {V(x), I(dim), keep});
    Try("aten.argmax.default", {V(x), I(dim), keep});
    Try("aten.argmin.default", {V(x)});
    Try("aten.max.dim", {V(x), I(dim), keep});
    Try("aten.any.dim", {V(x), I(dim)});
    Try("aten._softmax.default", {V(x), I(dim), Value::Bool(false)});
    // Views.
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), r.rng());
    Try("aten.permute.default", {V(x), Ints(perm)});
    Try("aten.transpose.int",
        {V(x), I(dim), I(rank == 0 ? 0 : r.Int(0, rank - 1))});
    Try("aten.t.default", {V(x)});
    Try("aten.unsqueeze.default", {V(x), I(r.Int(-rank - 1, rank))});
    Try("aten.squeeze.dim", {V(x), I(dim)});
    Try("aten.slice.Tensor",
        {V(x), I(dim), I(r.Int(-5, 5)), I(r.Int(-5, 6)), I(r.Int(1, 3))});
    Try("aten.select.int", {V(x), I(dim), I(r.Int(-2, 2))});
    Try("aten.narrow.default", {V(x), I(dim), I(r.Int(0, 2)), I(r.Int(0, 2))});
    Try("aten.diagonal.default", {V(x), I(r.Int(-2, 2))});
    Try("aten.split.Tensor", {V(x), I(r.Int(1, 3)), I(dim)});
    Try("aten.unbind.int", {V(x), I(dim)});
    std::vector<int64_t> expanded = sizes;
    expanded.insert(expanded.begin(), 2);
    Try("aten.expand.default", {V(x), Ints(expanded)});
    Try("aten.view.default", {V(x), Ints({-1})});
    Try("aten.alias.default", {V(x)});
    Try("aten.reshape.default", {V(x), Ints({-1})});
    Try("aten.squeeze.default", {V(x)});
    Try("aten.cumsum.default", {V(x), I(dim)});
    // Copies and joins.
    Try("aten.clone.default", {V(x)});
    Try("aten.zeros_like.default", {V(x)});
    Try("aten.copy.default", {V(x), V(y)});
    Try("aten.constant_pad_nd.default",
        {V(x), Ints({r.Int(-1, 2), r.Int(-1, 2)})});
    Try("aten._to_copy.default", {V(x)},
        {{"dtype", Value::OfDType(r.Pick(dtypes))}});
    Try("aten.cat.default", {Value::List({V(x), V(x)}), I(dim)});
    Try("aten.stack.default", {Value::List({V(x), V(x)}), I(r.Int(0, rank))});
    if (rank == 2) {
      Tensor w = RandomLayout(r, {sizes[1], r.Int(0, 3)}, x.dtype());
      Try("aten.mm.default", {V(x), V(w)});
    }
  }
  // The test means something only if most calls ran.
  EXPECT_GT(ran, 300 * 25);
  std::printf("%d op calls ran and matched their meta functions\n", ran);
}

// The later Core ATen ops (ops_misc_test.cc has their values). nonzero is
// left out: its meta size is a fresh unbacked symbol, never the kernel's
// number (ops_misc_test checks it).
TEST(OpsPropertyTest, MoreOpsMetaFunctionsPredictKernelResults) {
  Random r(20261122);
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64,
                                     DType::kInt64,   DType::kInt32,
                                     DType::kBool,    DType::kFloat16};
  const std::vector<std::string> unary = {
      "acos",  "acosh", "asin",       "asinh",    "atan",
      "atanh", "cosh",  "sinh",       "tan",      "log10",
      "log2",  "isinf", "leaky_relu", "hardtanh", "elu"};
  int before = ran;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> sizes = RandomSizes(r);
    DType dtype = r.Pick(dtypes);
    Tensor x = RandomLayout(r, sizes, dtype);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ": x = ", x.ToString(), "+",
                              x.storage_offset()));
    int64_t rank = x.dim();
    int64_t dim = rank == 0 ? 0 : r.Int(-rank, rank - 1);
    Tensor y = RandomLayout(r, BroadcastPartner(r, sizes), r.Pick(dtypes));
    if (r.Coin()) std::swap(x, y);
    rank = x.dim();
    dim = rank == 0 ? 0 : r.Int(-rank, rank - 1);
    Value keep = Value::Bool(r.Coin());
    // Pointwise.
    for (const std::string& u : unary)
      Try(absl::StrCat("aten.", u, ".default"), {V(x)});
    Try("aten.elu.default",
        {V(x), Value::Float(0.5), Value::Float(2), Value::Float(1.5)});
    Try("aten.hardtanh.default", {V(x), I(-1), Value::Float(2.5)});
    Try("aten.logical_xor.default", {V(x), V(y)});
    Try("aten.atan2.out", {V(x), V(x)},
        {{"out", V(RandomLayout(r, x.sizes(), r.Pick(dtypes)))}});
    // Reductions.
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (r.Coin()) dims.push_back(r.Coin() ? d : d - rank);
    }
    Try("aten.any.dims", {V(x), r.Coin() ? Ints(dims) : Value::None(), keep});
    Try("aten.var.dim", {V(x), r.Coin() ? Ints(dims) : Value::None(),
                         Value::Bool(r.Coin()), keep});
    // Copies and indexing.
    Try("aten.flip.default", {V(x), Ints(dims)});
    std::vector<int64_t> repeats;
    for (int64_t d = 0, n = rank + r.Int(0, 2); d < n; ++d)
      repeats.push_back(r.Int(0, 3));
    Try("aten.repeat.default", {V(x), Ints(repeats)});
    Try("aten.sort.default", {V(x), I(dim), Value::Bool(r.Coin())});
    int64_t len = rank == 0 ? 1 : x.sizes()[dim < 0 ? dim + rank : dim];
    Try("aten.topk.default", {V(x), I(r.Int(0, len)), I(dim),
                              Value::Bool(r.Coin()), Value::Bool(r.Coin())});
    Try("aten.sym_storage_offset.default", {V(x)});
    Tensor mask = RandomLayout(r, BroadcastPartner(r, x.sizes()), DType::kBool);
    Tensor source = RandomLayout(r, {x.numel() + 2}, x.dtype());
    Try("aten.masked_scatter.default", {V(x), V(mask), V(source)});
    if (rank > 0) {
      std::vector<int64_t> index_sizes = x.sizes();
      for (int64_t& s : index_sizes) s = r.Int(0, s);
      Tensor index = *Tensor::Empty(index_sizes, DType::kInt64);
      int64_t wrapped = dim < 0 ? dim + rank : dim;
      ForEachIndex(index.sizes(), [&](absl::Span<const int64_t> i) {
        index.SetDouble(i, r.Int(0, x.sizes()[wrapped] - 1));
      });
      Tensor src = RandomLayout(r, x.sizes(), x.dtype());
      Try("aten.scatter_reduce.two",
          {V(x), I(dim), V(index), V(src),
           Value::String(
               r.Pick<std::string>({"sum", "prod", "mean", "amax", "amin"}))},
          {{"include_self", Value::Bool(r.Coin())}});
    }
    // Random ops: their layouts are deterministic even where values are not.
    Try("aten.native_dropout.default",
        {V(x), Value::Float(0.5),
         r.Coin() ? Value::Bool(r.Coin()) : Value::None()});
    Try("aten.rand.default", {Ints(sizes)},
        {{"dtype", Value::OfDType(r.Pick(dtypes))}});
    Try("aten.randn.default", {Ints(sizes)});
    Try("aten.randperm.default", {I(r.Int(0, 5))});
  }
  EXPECT_GT(ran - before, 200 * 20);
  std::printf("%d more op calls ran and matched their meta functions\n",
              ran - before);
}

// The nn ops (ops_nn.cc) over random tiny shapes, layouts, dtypes and
// options: whenever the kernel accepts a call, its meta function must
// predict the result (RunOp checks). Backward ops get the forward's result
// shapes (and max_pool's indices, the norms' statistics).
TEST(OpsPropertyTest, NnOpsMetaFunctionsPredictKernelResults) {
  Random r(20261122);
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64,
                                     DType::kFloat16, DType::kInt64};
  const int before = ran;
  auto B = [](bool b) { return Value::Bool(b); };
  auto F = [](double d) { return Value::Float(d); };
  auto Bools = [](std::vector<bool> v) {
    std::vector<Value> items;
    for (bool b : v) items.push_back(Value::Bool(b));
    return Value::List(std::move(items));
  };
  auto Sizes = [&](int64_t n, int64_t lo, int64_t hi) {
    std::vector<int64_t> s(n);
    for (int64_t& x : s) x = r.Int(lo, hi);
    return s;
  };
  auto Cat = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // A contiguous int64 tensor of values in [lo, hi].
  auto Index = [&](std::vector<int64_t> sizes, int64_t lo, int64_t hi) {
    Tensor t = *Tensor::Empty(sizes, DType::kInt64);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      t.SetDouble(i, static_cast<double>(r.Int(lo, hi)));
    });
    return t;
  };
  std::vector<std::pair<std::string, int>> hits;  // successful calls
  auto hit = [&](const std::string& target) -> int& {
    for (auto& [t, count] : hits) {
      if (t == target) return count;
    }
    hits.push_back({target, 0});
    return hits.back().second;
  };
  auto Run = [&](const std::string& target, std::vector<Value> args) {
    absl::StatusOr<Value> v = RunOp(target, std::move(args));
    if (v.ok()) {
      ++ran;
      ++hit(target);
    }
    return v;
  };
  auto TryNn = [&](const std::string& target, std::vector<Value> args) {
    (void)Run(target, std::move(args));
  };
  for (int trial = 0; trial < 80; ++trial) {
    SCOPED_TRACE(absl::StrCat("nn trial ", trial));
    DType dt = r.Pick(dtypes);
    int64_t n = r.Int(1, 2), ch = r.Int(1, 3);
    // Convolution and its backward, 1-d to 3-d.
    {
      int64_t nsp = r.Int(1, 3), groups = r.Int(1, 2);
      int64_t cin = groups * r.Int(1, 2), cout = groups * r.Int(1, 2);
      bool transposed = r.Coin();
      std::vector<int64_t> in = {n, cin};
      std::vector<int64_t> w = transposed
                                   ? std::vector<int64_t>{cin, cout / groups}
                                   : std::vector<int64_t>{cout, cin / groups};
      std::vector<int64_t> stride, pad, dil, outpad;
      for (int64_t d = 0; d < nsp; ++d) {
        in.push_back(r.Int(1, 4));
        w.push_back(r.Int(1, 3));
        stride.push_back(r.Int(1, 2));
        pad.push_back(r.Int(0, 1));
        dil.push_back(r.Int(1, 2));
        outpad.push_back(transposed ? r.Int(0, 1) : 0);
      }
      Tensor x = RandomLayout(r, in, dt), wt = RandomLayout(r, w, dt);
      Value bias = r.Coin() ? V(RandomLayout(r, {cout}, dt)) : Value::None();
      std::vector<Value> args = {V(x),          V(wt),        bias,
                                 Ints(stride),  Ints(pad),    Ints(dil),
                                 B(transposed), Ints(outpad), I(groups)};
      absl::StatusOr<Value> y = Run("aten.convolution.default", args);
      if (y.ok()) {
        Tensor g = RandomLayout(r, y->tensor.sizes(), dt);
        TryNn("aten.convolution_backward.default",
              {V(g), V(x), V(wt), Ints({cout}), Ints(stride), Ints(pad),
               Ints(dil), B(transposed), Ints(outpad), I(groups),
               Bools({r.Coin(), r.Coin(), r.Coin()})});
      }
    }
    // Pooling (max, avg, adaptive) and backwards.
    for (int64_t nsp : {2, 3}) {
      std::vector<int64_t> lead =
          r.Coin() ? std::vector<int64_t>{ch} : std::vector<int64_t>{n, ch};
      Tensor x = RandomLayout(r, Cat(lead, Sizes(nsp, 1, 5)), dt);
      std::vector<int64_t> k = Sizes(nsp, 1, 3), pad = Sizes(nsp, 0, 1),
                           dil = Sizes(nsp, 1, 2);
      Value stride = r.Coin() ? Ints({}) : Ints(Sizes(nsp, 1, 2));
      Value ceil = B(r.Coin());
      std::string max =
          absl::StrCat("aten.max_pool", nsp, "d_with_indices.default");
      absl::StatusOr<Value> y =
          Run(max, {V(x), Ints(k), stride, Ints(pad), Ints(dil), ceil});
      if (y.ok()) {
        const Tensor& out = y->list[0].tensor;
        TryNn(absl::StrCat("aten.max_pool", nsp,
                           "d_with_indices_backward.default"),
              {V(RandomLayout(r, out.sizes(), x.dtype())), V(x), Ints(k),
               stride, Ints(pad), Ints(dil), ceil, y->list[1]});
      }
      Value cip = B(r.Coin());
      Value div = r.Coin() ? I(r.Int(1, 3)) : Value::None();
      std::string avg = absl::StrCat("aten.avg_pool", nsp, "d.default");
      absl::StatusOr<Value> a =
          Run(avg, {V(x), Ints(k), stride, Ints(pad), ceil, cip, div});
      if (a.ok()) {
        TryNn(absl::StrCat("aten.avg_pool", nsp, "d_backward.default"),
              {V(RandomLayout(r, a->tensor.sizes(), x.dtype())), V(x), Ints(k),
               stride, Ints(pad), ceil, cip, div});
      }
      std::string adaptive =
          absl::StrCat("aten._adaptive_avg_pool", nsp, "d.default");
      absl::StatusOr<Value> ad = Run(adaptive, {V(x), Ints(Sizes(nsp, 1, 3))});
      if (ad.ok() && nsp == 2) {
        TryNn("aten._adaptive_avg_pool2d_backward.default",
              {V(RandomLayout(r, ad->tensor.sizes(), x.dtype())), V(x)});
      }
    }
    // Normalization.
    {
      std::vector<int64_t> sizes = Cat({n, ch}, Sizes(r.Int(0, 2), 1, 3));
      Tensor x = RandomLayout(r, sizes, dt);
      auto param = [&](int64_t len) {
        return r.Coin()
                   ? V(RandomLayout(r, {len}, r.Coin() ? dt : DType::kFloat32))
                   : Value::None();
      };
      auto stats = [&]() {
        Tensor t = *Tensor::Empty({ch}, r.Coin() ? dt : DType::kFloat32);
        ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
          t.SetDouble(i, static_cast<double>(r.Int(1, 4)));
        });
        return V(t);
      };
      TryNn("aten._native_batch_norm_legit.default",
            {V(x), param(ch), param(ch), stats(), stats(), B(r.Coin()), F(0.1),
             F(1e-5)});
      TryNn("aten._native_batch_norm_legit.no_stats",
            {V(x), param(ch), param(ch), B(true), F(0.1), F(1e-5)});
      TryNn("aten._native_batch_norm_legit_no_training.default",
            {V(x), param(ch), param(ch), stats(), stats(), F(0.1), F(1e-5)});
      int64_t group = r.Int(1, 2);
      std::vector<int64_t> gs =
          Cat({n, group * r.Int(1, 2)}, Sizes(r.Int(0, 2), 1, 3));
      Tensor gx = RandomLayout(r, gs, dt);
      int64_t hxw = 1;
      for (size_t d = 2; d < gs.size(); ++d) hxw *= gs[d];
      Value gw = param(gs[1]);
      absl::StatusOr<Value> gn = Run(
          "aten.native_group_norm.default",
          {V(gx), gw, param(gs[1]), I(n), I(gs[1]), I(hxw), I(group), F(1e-5)});
      if (gn.ok()) {
        TryNn("aten.native_group_norm_backward.default",
              {V(RandomLayout(r, gs, dt)), V(gx), gn->list[1], gn->list[2], gw,
               I(n), I(gs[1]), I(hxw), I(group),
               Bools({r.Coin(), r.Coin(), r.Coin()})});
      }
      std::vector<int64_t> norm(sizes.end() - r.Int(1, 2), sizes.end());
      Value lw = r.Coin() ? V(RandomLayout(r, norm, dt)) : Value::None();
      Value lb = r.Coin() ? V(RandomLayout(r, norm, dt)) : Value::None();
      absl::StatusOr<Value> ln = Run("aten.native_layer_norm.default",
                                     {V(x), Ints(norm), lw, lb, F(1e-5)});
      if (ln.ok()) {
        TryNn("aten.native_layer_norm_backward.default",
              {V(RandomLayout(r, sizes, dt)), V(x), Ints(norm), ln->list[1],
               ln->list[2], lw, lb,
               Bools({r.Coin(), !lw.is_none() && r.Coin(),
                      !lb.is_none() && r.Coin()})});
      }
    }
    // Upsampling, padding, col2im, grid_sampler.
    {
      Tensor x = RandomLayout(r, {n, ch, r.Int(1, 4), r.Int(1, 4)}, dt);
      bool by_size = r.Coin();
      Value osize = by_size ? Ints(Sizes(2, 1, 5)) : Value::None();
      std::vector<Value> f = {F(r.Int(1, 5) * 0.5), F(r.Int(1, 5) * 0.5)};
      Value scales = by_size ? Value::None() : Value::List(f);
      TryNn("aten.upsample_bilinear2d.vec", {V(x), osize, B(r.Coin()), scales});
      TryNn("aten.upsample_nearest2d.vec", {V(x), osize, scales});
      for (int64_t nsp : {1, 2, 3}) {
        std::vector<int64_t> lead =
            r.Coin() ? std::vector<int64_t>{ch} : std::vector<int64_t>{n, ch};
        Tensor p = RandomLayout(r, Cat(lead, Sizes(nsp, 1, 4)), dt);
        Value pads = Ints(Sizes(2 * nsp, -1, 3));
        TryNn(absl::StrCat("aten.reflection_pad", nsp, "d.default"),
              {V(p), pads});
        if (nsp > 1) {
          TryNn(absl::StrCat("aten.replication_pad", nsp, "d.default"),
                {V(p), pads});
        }
      }
      std::vector<int64_t> k = Sizes(2, 1, 2), dil = Sizes(2, 1, 2),
                           pad = Sizes(2, 0, 1), st = Sizes(2, 1, 2),
                           os = Sizes(2, 1, 4);
      int64_t blocks = 1;
      for (int d = 0; d < 2; ++d) {
        blocks *= std::max<int64_t>(
            (os[d] + 2 * pad[d] - dil[d] * (k[d] - 1) - 1) / st[d] + 1, 0);
      }
      std::vector<int64_t> cols = {ch * k[0] * k[1], blocks};
      if (r.Coin()) cols.insert(cols.begin(), n);
      TryNn("aten.col2im.default", {V(RandomLayout(r, cols, dt)), Ints(os),
                                    Ints(k), Ints(dil), Ints(pad), Ints(st)});
      Tensor grid = RandomLayout(r, {n, r.Int(1, 3), r.Int(1, 3), 2}, dt);
      TryNn("aten.grid_sampler_2d.default",
            {V(x), V(grid), I(r.Int(0, 2)), I(r.Int(0, 2)), B(r.Coin())});
    }
    // Embeddings and distances.
    {
      int64_t nw = r.Int(1, 4), dim = r.Int(1, 3);
      std::vector<int64_t> isz = Sizes(r.Int(1, 2), 1, 3);
      TryNn("aten.embedding_dense_backward.default",
            {V(RandomLayout(r, Cat(isz, {dim}), dt)), V(Index(isz, 0, nw - 1)),
             I(nw), I(r.Int(-1, nw - 1)), B(r.Coin())});
      int64_t count = r.Int(0, 5), bags = r.Int(1, 3);
      bool last = r.Coin();
      Tensor offsets = *Tensor::Empty({bags + (last ? 1 : 0)}, DType::kInt64);
      std::vector<int64_t> off = {0};
      for (int64_t b = 1; b < bags; ++b)
        off.push_back(r.Int(off.back(), count));
      if (last) off.push_back(count);
      for (size_t b = 0; b < off.size(); ++b) {
        offsets.SetDouble({static_cast<int64_t>(b)}, off[b]);
      }
      int64_t mode = r.Int(0, 2);
      Value psw = mode == 0 && r.Coin() ? V(RandomLayout(r, {count}, dt))
                                        : Value::None();
      TryNn("aten._embedding_bag.default",
            {V(RandomLayout(r, {nw, dim}, dt)), V(Index({count}, 0, nw - 1)),
             V(offsets), B(false), I(mode), B(false), psw, B(last),
             I(r.Coin() ? -1 : r.Int(0, nw - 1))});
      const std::vector<double> ps = {0, 1, 1.5, 2, std::stod("inf")};
      int64_t m = r.Int(1, 3);
      std::vector<int64_t> b1 = Sizes(r.Int(0, 2), 1, 2);
      std::vector<int64_t> b2 = BroadcastPartner(r, b1);
      TryNn("aten._cdist_forward.default",
            {V(RandomLayout(r, Cat(b1, {r.Int(1, 3), m}), dt)),
             V(RandomLayout(r, Cat(b2, {r.Int(1, 3), m}), dt)), F(r.Pick(ps)),
             Value::None()});
      TryNn("aten._pdist_forward.default",
            {V(RandomLayout(r, {r.Int(1, 4), m}, dt)), F(r.Pick(ps))});
    }
  }
  // Every op must have run (and matched) in some trials.
  for (const char* t : {"convolution",
                        "convolution_backward",
                        "max_pool2d_with_indices",
                        "max_pool3d_with_indices",
                        "max_pool2d_with_indices_backward",
                        "max_pool3d_with_indices_backward",
                        "avg_pool2d",
                        "avg_pool3d",
                        "avg_pool2d_backward",
                        "avg_pool3d_backward",
                        "_adaptive_avg_pool2d",
                        "_adaptive_avg_pool3d",
                        "_adaptive_avg_pool2d_backward",
                        "_native_batch_norm_legit",
                        "_native_batch_norm_legit_no_training",
                        "native_group_norm",
                        "native_group_norm_backward",
                        "native_layer_norm_backward",
                        "reflection_pad1d",
                        "reflection_pad2d",
                        "reflection_pad3d",
                        "replication_pad2d",
                        "replication_pad3d",
                        "col2im",
                        "grid_sampler_2d",
                        "embedding_dense_backward",
                        "_embedding_bag",
                        "_cdist_forward",
                        "_pdist_forward"}) {
    EXPECT_GT(hit(absl::StrCat("aten.", t, ".default")), 3) << t;
  }
  for (const char* t :
       {"aten._native_batch_norm_legit.no_stats",
        "aten.upsample_bilinear2d.vec", "aten.upsample_nearest2d.vec"}) {
    EXPECT_GT(hit(t), 3) << t;
  }
  for (const auto& [t, count] : hits) std::printf("%s: %d\n", t.c_str(), count);
  EXPECT_GT(ran - before, 80 * 20);
  std::printf("%d nn op calls ran and matched their meta functions\n",
              ran - before);
}

// The ops the torch corpus needed (hypot, shifts, rsub, hardsigmoid,
// softplus, max/min, linspace, eye, roll, diag_embed, mv, empty_permuted,
// _unsafe_index, the batch-norm twins, losses, flash attention, upsampling
// and embedding_bag_forward_only) on random sizes, layouts and dtypes.
TEST(OpsPropertyTest, CorpusOpsMetaFunctionsPredictKernelResults) {
  Random r(20261122);
  std::vector<std::pair<std::string, int>> hits;  // successful calls
  auto hit = [&](const std::string& target) -> int& {
    for (auto& [t, count] : hits) {
      if (t == target) return count;
    }
    hits.push_back({target, 0});
    return hits.back().second;
  };
  auto T = [&](const std::string& target, std::vector<Value> args,
               std::vector<std::pair<std::string, Value>> kwargs = {}) {
    if (RunOp(target, std::move(args), std::move(kwargs)).ok()) {
      ++hit(target);
      ++ran;
    }
  };
  auto F = [](double v) { return Value::Float(v); };
  auto B = [](bool v) { return Value::Bool(v); };
  const std::vector<DType> dtypes = {
      DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32,
      DType::kInt8,    DType::kUInt8,   DType::kBool,  DType::kFloat16};
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat64,
                                     DType::kFloat16};
  // Integer tensors of `sizes` with values in [lo, hi].
  auto index = [&](std::vector<int64_t> sizes, int64_t lo, int64_t hi) {
    Tensor t = *Tensor::Empty(sizes, DType::kInt64);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      t.SetDouble(i, static_cast<double>(r.Int(lo, hi)));
    });
    return t;
  };
  auto pos = [&](int64_t lo, int64_t hi) { return r.Int(lo, hi); };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> sizes = RandomSizes(r);
    DType dtype = r.Pick(dtypes);
    Tensor x = RandomLayout(r, sizes, dtype);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ": x = ", x.ToString()));
    Tensor y = RandomLayout(r, BroadcastPartner(r, sizes), r.Pick(dtypes));
    if (r.Coin()) std::swap(x, y);
    int64_t rank = x.dim();
    T("aten.hypot.default", {V(x), V(y)});
    T("aten.__lshift__.Tensor", {V(x), V(y)});
    T("aten.__rshift__.Tensor", {V(x), V(y)});
    T("aten.__lshift__.Scalar", {V(x), I(r.Int(-1, 9))});
    T("aten.__rshift__.Scalar", {V(x), I(r.Int(-1, 70))});
    T("aten.rsub.Tensor", {V(x), V(y)}, {{"alpha", I(r.Int(-2, 2))}});
    T("aten.rsub.Scalar", {V(x), r.Coin() ? I(3) : F(0.5), I(2)});
    T("aten.hardsigmoid.default", {V(x)});
    T("aten.softplus.default",
      {V(x), F(r.Pick<double>({0.5, 1, 2})), I(r.Int(0, 20))});
    T("aten.max.default", {V(x)});
    T("aten.min.default", {V(x)});
    T("aten.roll.default",
      {V(x), Ints({r.Int(-5, 5)}),
       rank == 0 || r.Coin() ? Ints({}) : Ints({r.Int(-rank, rank - 1)})});
    if (rank >= 1 && x.sizes()[0] > 0) {
      int64_t d1 = r.Int(-rank - 1, rank), d2 = r.Int(-rank - 1, rank);
      T("aten.diag_embed.default", {V(x), I(r.Int(-2, 2)), I(d1), I(d2)});
      T("aten._unsafe_index.Tensor",
        {V(x), Value::List({V(index({pos(0, 3)}, 0, x.sizes()[0] - 1))})});
    }
    int64_t n = pos(0, 4), m = pos(0, 4);
    DType dt = r.Pick(
        std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kInt64});
    T("aten.mv.default",
      {V(RandomLayout(r, {n, m}, dt)), V(RandomLayout(r, {m}, dt))});
    T("aten.linspace.default",
      {F(r.Int(-4, 4) / 2.0), I(r.Int(-3, 3)), I(r.Int(0, 6))},
      {{"dtype", Value::OfDType(r.Pick(dtypes))}});
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), r.rng());
    T("aten.empty_permuted.default", {Ints(x.sizes()), Ints(perm)},
      {{"dtype", Value::OfDType(dtype)}});
    // Losses.
    T("aten.mse_loss.default", {V(x), V(y), I(r.Int(0, 2))});
    T("aten.smooth_l1_loss.default",
      {V(x), V(y), I(r.Int(0, 2)), F(r.Pick<double>({0, 0.5, 1}))});
    T("aten.binary_cross_entropy_with_logits.default",
      {V(y), V(x), r.Coin() ? V(y) : Value::None(),
       r.Coin() ? V(y) : Value::None(), I(r.Int(0, 2))});
    T("aten.eye.m", {I(r.Int(0, 4)), I(r.Int(0, 4))},
      {{"dtype", Value::OfDType(dtype)}});
    int64_t classes = pos(1, 4), batch = pos(0, 3);
    DType ft = r.Pick(floats);
    bool batched = r.Coin();
    Tensor logits = RandomLayout(r,
                                 batched ? std::vector<int64_t>{batch, classes}
                                         : std::vector<int64_t>{classes},
                                 ft);
    Tensor target =
        index(batched ? std::vector<int64_t>{batch} : std::vector<int64_t>{}, 0,
              classes - 1);
    T("aten.nll_loss_forward.default",
      {V(logits), V(target),
       r.Coin() ? V(RandomLayout(r, {classes}, ft)) : Value::None(),
       I(r.Int(0, 2)), I(r.Coin() ? -100 : r.Int(0, classes - 1))});
    // Batch norm: [N, C, *] with C channels.
    int64_t c = pos(1, 3);
    std::vector<int64_t> bs = {pos(2, 3), c};
    for (int64_t k = r.Int(0, 2); k > 0; --k) bs.push_back(pos(1, 3));
    Tensor in = RandomLayout(r, bs, ft);
    auto stat = [&](bool var) {
      Tensor t = RandomLayout(r, {c}, ft);
      if (var) {
        ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
          t.SetDouble(i, std::abs(t.GetDouble(i)) + 1);
        });
      }
      return t;
    };
    bool training = r.Coin();
    Value w = r.Coin() ? V(stat(false)) : Value::None();
    Value b = r.Coin() ? V(stat(false)) : Value::None();
    T("aten._native_batch_norm_legit_functional.default",
      {V(in), w, b, V(stat(false)), V(stat(true)), B(training), F(0.1),
       F(1e-5)});
    T("aten.native_batch_norm.default",
      {V(in), w, b, training && r.Coin() ? Value::None() : V(stat(false)),
       training && r.Coin() ? Value::None() : V(stat(true)), B(training),
       F(0.1), F(1e-5)});
    // Flash attention.
    int64_t bb = pos(1, 2), h = pos(1, 2), l = pos(1, 3), s = pos(1, 3),
            e = pos(1, 4);
    DType at =
        r.Pick(floats) == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    std::vector<std::pair<std::string, Value>> kw = {
        {"is_causal", B(r.Coin())}};
    if (r.Coin()) kw.push_back({"scale", F(0.3)});
    if (r.Coin()) {
      kw.push_back({"attn_mask",
                    V(RandomLayout(r,
                                   r.Coin() ? std::vector<int64_t>{l, s}
                                            : std::vector<int64_t>{bb, h, l, s},
                                   at))});
    }
    T("aten._scaled_dot_product_flash_attention_for_cpu.default",
      {V(RandomLayout(r, {bb, h, l, e}, at)),
       V(RandomLayout(r, {bb, h, s, e}, at)),
       V(RandomLayout(r, {bb, h, s, e}, at))},
      kw);
    // Upsampling and embedding bags.
    Tensor img =
        RandomLayout(r, {pos(1, 2), pos(1, 2), pos(1, 4), pos(1, 4)}, ft);
    T("aten.upsample_nearest2d.default",
      {V(img), Ints({pos(1, 6), pos(1, 6)}),
       r.Coin() ? F(r.Pick<double>({0.5, 1.5, 2})) : Value::None()});
    int64_t nw = pos(1, 4), count = pos(0, 5), bags = pos(1, 3);
    Tensor offsets = index({bags}, 0, count);
    std::vector<int64_t> o;
    ForEachIndex(offsets.sizes(), [&](absl::Span<const int64_t> i) {
      o.push_back(static_cast<int64_t>(offsets.GetDouble(i)));
    });
    std::sort(o.begin(), o.end());
    o[0] = 0;
    for (int64_t k = 0; k < bags; ++k) offsets.SetDouble({k}, o[k]);
    int64_t mode = r.Int(0, 2);
    T("aten._embedding_bag_forward_only.default",
      {V(RandomLayout(r, {nw, pos(1, 3)}, ft)), V(index({count}, 0, nw - 1)),
       V(offsets), B(false), I(mode), B(false),
       mode == 0 && r.Coin() ? V(RandomLayout(r, {count}, ft)) : Value::None(),
       B(r.Coin())});
  }
  for (const auto& [t, count] : hits) std::printf("%s: %d\n", t.c_str(), count);
  for (const char* t :
       {"aten.hypot.default",
        "aten.__lshift__.Tensor",
        "aten.__rshift__.Tensor",
        "aten.__lshift__.Scalar",
        "aten.__rshift__.Scalar",
        "aten.rsub.Tensor",
        "aten.rsub.Scalar",
        "aten.hardsigmoid.default",
        "aten.softplus.default",
        "aten.max.default",
        "aten.min.default",
        "aten.roll.default",
        "aten.diag_embed.default",
        "aten._unsafe_index.Tensor",
        "aten.mv.default",
        "aten.linspace.default",
        "aten.empty_permuted.default",
        "aten.mse_loss.default",
        "aten.smooth_l1_loss.default",
        "aten.binary_cross_entropy_with_logits.default",
        "aten.eye.m",
        "aten.nll_loss_forward.default",
        "aten._native_batch_norm_legit_functional.default",
        "aten.native_batch_norm.default",
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        "aten.upsample_nearest2d.default",
        "aten._embedding_bag_forward_only.default"}) {
    EXPECT_GT(hit(t), 10) << t;
  }
}

// The non-core ops (ops_extra_test.cc has their values) and the derived
// in-place twins: every unary pointwise twin runs on a copy of x laid out
// as x is (the twin writes it; overlapping layouts are refused).
TEST(OpsPropertyTest, ExtraOpsMetaFunctionsPredictKernelResults) {
  Random r(20261123);
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64,
                                     DType::kInt64,   DType::kInt32,
                                     DType::kBool,    DType::kFloat16};
  // The in-place twins of the unary pointwise ops (self the only argument
  // without a default).
  std::vector<std::string> unary_inplace;
  for (const std::string& target : OpRegistry::Global().Targets()) {
    const OpDef* op = OpRegistry::Global().Find(target);
    if (!op->HasTag(OpTag::kPointwise) || op->inplace.empty()) continue;
    int required = 0;
    for (const Argument& a : op->schema.arguments)
      required += !a.default_value.has_value();
    if (required == 1) unary_inplace.push_back(op->inplace);
  }
  EXPECT_GT(unary_inplace.size(), 35u);
  int before = ran;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> sizes = RandomSizes(r);
    DType dtype = r.Pick(dtypes);
    Tensor x = RandomLayout(r, sizes, dtype);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ": x = ", x.ToString(), "+",
                              x.storage_offset()));
    int64_t rank = x.dim();
    int64_t dim = rank == 0 ? 0 : r.Int(-rank, rank - 1);
    Tensor y = RandomLayout(r, BroadcastPartner(r, sizes), r.Pick(dtypes));
    Value keep = Value::Bool(r.Coin());
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (r.Coin()) dims.push_back(r.Coin() ? d : d - rank);
    }
    Tensor mask = RandomLayout(r, BroadcastPartner(r, sizes), DType::kBool);
    // prims and copies.
    Try("prims.convert_element_type.default",
        {V(x), Value::OfDType(r.Pick(dtypes))});
    Try("prims.fma.default", {V(x), V(y), V(x)});
    Try("prims.iota.default", {I(r.Int(0, 5))},
        {{"start", I(r.Int(-3, 3))},
         {"step", I(r.Int(1, 3))},
         {"dtype", Value::OfDType(r.Pick(dtypes))},
         {"device", Value::OfDevice(Device::Cpu())},
         {"requires_grad", Value::Bool(false)}});
    Try("aten.lift_fresh_copy.default", {V(x)});
    Try("aten.new_zeros.default", {V(x), Ints(RandomSizes(r))});
    Try("aten.new_full.default",
        {V(x), Ints(RandomSizes(r)), Value::Float(1.5)},
        {{"dtype", Value::OfDType(r.Pick(dtypes))}});
    Try("aten.new_empty_strided.default",
        {V(x), Ints(x.sizes()), Ints(x.strides())});
    // Pointwise additions.
    Try("aten.masked_fill.Scalar", {V(x), V(mask), Value::Float(-2)});
    Try("aten.masked_fill.Tensor",
        {V(x), V(mask), V(RandomLayout(r, {}, r.Pick(dtypes)))});
    for (const char* b :
         {"aten.floor_divide.default", "aten.true_divide.Tensor",
          "aten.fmax.default", "aten.fmin.default"})
      Try(b, {V(x), V(y)});
    Try("aten.floor_divide.Scalar", {V(x), I(r.Int(1, 3))});
    for (const char* u : {"aten.square.default", "aten.exp2.default",
                          "aten.isfinite.default", "aten.nan_to_num.default"})
      Try(u, {V(x)});
    Try("aten.where.ScalarOther", {V(mask), V(x), Value::Float(0.5)});
    Try("aten.where.ScalarSelf", {V(mask), I(2), V(x)});
    Try("aten.where.Scalar", {V(mask), I(2), Value::Float(0.5)});
    Try("aten.round.decimals", {V(x)}, {{"decimals", I(r.Int(-2, 2))}});
    // Reductions and scans.
    Try("aten.logsumexp.default", {V(x), Ints(dims), keep});
    Try("aten.std.correction", {V(x), r.Coin() ? Ints(dims) : Value::None()},
        {{"correction", I(r.Int(0, 2))}, {"keepdim", keep}});
    Try("aten.std.dim", {V(x), Ints(dims), Value::Bool(r.Coin()), keep});
    Try("aten.linalg_vector_norm.default",
        {V(x), r.Pick<Value>({I(2), I(1), I(0), Value::Float(3)}),
         r.Coin() ? Ints(dims) : Value::None(), keep});
    Try("aten.cumprod.default", {V(x), I(dim)});
    Try("aten.tril.default", {V(x), I(r.Int(-2, 2))});
    Try("aten.triu.default", {V(x), I(r.Int(-2, 2))});
    if (rank > 0) {
      int64_t wrapped = dim < 0 ? dim + rank : dim;
      std::vector<int64_t> source_sizes = x.sizes();
      source_sizes[wrapped] = r.Int(0, 3);
      Tensor index = *Tensor::Empty({source_sizes[wrapped]}, DType::kInt64);
      ForEachIndex(index.sizes(), [&](absl::Span<const int64_t> i) {
        index.SetDouble(i,
                        r.Int(0, std::max<int64_t>(x.sizes()[wrapped], 1) - 1));
      });
      Try("aten.index_add.default",
          {V(x), I(dim), V(index), V(RandomLayout(r, source_sizes, dtype))},
          {{"alpha", I(2)}});
    }
    // Scatter with an index that may be larger than self (refused).
    if (rank > 0) {
      std::vector<int64_t> index_sizes = x.sizes();
      for (int64_t& s : index_sizes) s = r.Int(0, s + 1);
      Tensor index = *Tensor::Empty(index_sizes, DType::kInt64);
      int64_t wrapped = dim < 0 ? dim + rank : dim;
      ForEachIndex(index.sizes(), [&](absl::Span<const int64_t> i) {
        index.SetDouble(i,
                        r.Int(0, std::max<int64_t>(x.sizes()[wrapped], 1) - 1));
      });
      Try("aten.scatter.value", {V(x), I(dim), V(index), Value::Float(1)});
    }
    // In-place twins, each on a fresh copy of x's layout.
    auto copy = [&]() {
      Tensor t = RandomLayout(r, sizes, dtype);
      return V(t);
    };
    for (const std::string& t : unary_inplace) Try(t, {copy()});
    Try("aten.sub_.Scalar", {copy(), Value::Float(0.5)});
    Try("aten.div_.Scalar", {copy(), I(2)});
    Try("aten.eq_.Tensor", {copy(), V(y)});
    Try("aten.pow_.Scalar", {copy(), I(2)});
    Try("aten.floor_divide_.Tensor", {copy(), V(y)});
    Try("aten.clamp_min_.default", {copy(), I(0)});
    Try("aten.masked_fill_.Scalar", {copy(), V(mask), I(1)});
    Try("aten.tril_.default", {copy(), I(r.Int(-1, 1))});
    Try("aten.cumprod_.default", {copy(), I(dim)});
  }
  EXPECT_GT(ran - before, 200 * 40);
  std::printf("%d extra op calls ran and matched their meta functions\n",
              ran - before);
}

}  // namespace
}  // namespace lathe::ir
