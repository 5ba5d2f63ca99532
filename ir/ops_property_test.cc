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

Value V(const Tensor& t) { return Value::OfTensor(t); }
Value I(int64_t v) { return Value::Int(v); }
Value Ints(const std::vector<int64_t>& v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(I(x));
  return Value::List(std::move(items));
}

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
    if (!op->pointwise || op->inplace.empty()) continue;
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
