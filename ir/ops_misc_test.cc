// Kernels of the later Core ATen ops (inverse trig and friends, activations,
// out= atan2, any.dims, var.dim, flip, repeat, sort, topk, nonzero,
// masked_scatter, scatter_reduce, FFT; the random ops are ops_random_test.cc's)
// against hand-derived values and values captured from PyTorch 2.15 on CPU
// (marked "torch:"; lathe does not depend on torch). Every RunOp call also
// checks that the op's meta function predicts the kernel's result.

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/shape_prop.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Value RunV(const std::string& target, std::vector<Value> args,
           std::vector<std::pair<std::string, Value>> kwargs = {}) {
  absl::StatusOr<Value> v = RunOp(target, std::move(args), std::move(kwargs));
  EXPECT_OK(v) << target;
  return v.ok() ? *v : Value();
}

// Element-wise equality where NaN equals NaN.
void ExpectSame(const std::vector<double>& got, const std::vector<double>& want,
                double tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << "element " << k << ": " << got[k];
    } else {
      EXPECT_NEAR(got[k], want[k], tol) << "element " << k;
    }
  }
}

// A [3, 2] tensor's transpose: [2, 3] with strides [1, 2].
Tensor Transposed(const std::vector<double>& values) {
  Tensor base = T({3, 2}, values);
  return *base.AsStrided({2, 3}, {1, 2}, 0);
}

// ---- Pointwise --------------------------------------------------------------

TEST(MiscOpsTest, InverseTrigHyperbolicAndLogs) {
  // torch: f64 [0.5, 2.0, -0.5] through each op.
  const std::vector<std::pair<std::string, std::vector<double>>> kWant = {
      {"acos", {1.0471975511965976, NAN, 2.0943951023931957}},
      {"acosh", {NAN, 1.3169578969248166, NAN}},
      {"asin", {0.5235987755982989, NAN, -0.5235987755982989}},
      {"asinh",
       {0.48121182505960347, 1.4436354751788103, -0.48121182505960347}},
      {"atan", {0.4636476090008061, 1.1071487177940904, -0.4636476090008061}},
      {"atanh", {0.5493061443340548, NAN, -0.5493061443340548}},
      {"cosh", {1.1276259652063807, 3.7621956910836314, 1.1276259652063807}},
      {"sinh", {0.5210953054937474, 3.626860407847019, -0.5210953054937474}},
      {"tan", {0.5463024898437905, -2.185039863261519, -0.5463024898437905}},
      {"log10", {-0.3010299956639812, 0.3010299956639812, NAN}},
      {"log2", {-1.0, 1.0, NAN}},
  };
  Tensor x = T({3}, {0.5, 2.0, -0.5}, DType::kFloat64);
  Tensor i = T({3}, {0, 1, 2}, DType::kInt64);
  for (const auto& [op, want] : kWant) {
    SCOPED_TRACE(op);
    std::string target = absl::StrCat("aten.", op, ".default");
    Tensor r = RunT(target, {V(x)});
    EXPECT_EQ(r.dtype(), DType::kFloat64);
    ExpectSame(Elements(r), want, 1e-15);
    // Integers promote to the default float dtype, as sin does.
    EXPECT_EQ(RunT(target, {V(i)}).dtype(), DType::kFloat32);
  }
  EXPECT_THAT(Elements(RunT("aten.log2.default", {V(i)})),
              ElementsAre(-INFINITY, 0, 1));
  // A transposed input keeps its layout.
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});
  EXPECT_THAT(RunT("aten.tan.default", {V(t)}).strides(), ElementsAre(1, 2));
}

TEST(MiscOpsTest, IsinfAndLogicalXor) {
  Tensor x = T({4}, {INFINITY, -INFINITY, NAN, 1});
  Tensor r = RunT("aten.isinf.default", {V(x)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_THAT(Elements(r), ElementsAre(1, 1, 0, 0));
  EXPECT_THAT(
      Elements(RunT("aten.isinf.default", {V(T({2}, {5, -7}, DType::kInt64))})),
      ElementsAre(0, 0));
  // torch: logical_xor([1., 0, 2], [0, 0, 3] (int64)) = [True, False, False].
  Tensor a = T({3}, {1, 0, 2}), b = T({3}, {0, 0, 3}, DType::kInt64);
  Tensor x2 = RunT("aten.logical_xor.default", {V(a), V(b)});
  EXPECT_EQ(x2.dtype(), DType::kBool);
  EXPECT_THAT(Elements(x2), ElementsAre(1, 0, 0));
  // NaN is true; broadcasting.
  EXPECT_THAT(Elements(RunT("aten.logical_xor.default",
                            {V(T({2, 1}, {NAN, 0})), V(T({2}, {0, 1}))})),
              ElementsAre(1, 0, 0, 1));
}

TEST(MiscOpsTest, Activations) {
  Tensor x = T({4}, {-1, 0, 2, NAN});
  // elu: x <= 0: (exp(x * input_scale) - 1) * alpha * scale, else x * scale.
  // torch: elu([-1., 0, 2], 2.0, 3.0, 0.5) = [-2.3608, 0, 6].
  ExpectSame(
      Elements(RunT("aten.elu.default", {V(x), Value::Float(2), Value::Float(3),
                                         Value::Float(0.5)})),
      {(std::exp(-0.5) - 1) * 6, 0, 6, NAN}, 1e-6);
  ExpectSame(Elements(RunT("aten.elu.default", {V(x)})),
             {std::exp(-1.0) - 1, 0, 2, NAN}, 1e-7);
  ExpectSame(Elements(RunT("aten.leaky_relu.default", {V(x)})),
             {-0.01, 0, 2, NAN}, 1e-9);
  ExpectSame(
      Elements(RunT("aten.leaky_relu.default", {V(x), Value::Float(0.5)})),
      {-0.5, 0, 2, NAN});
  // torch: hardtanh([-3., nan, 2], -1, 1) = [-1, nan, 1]; ints stay ints.
  ExpectSame(Elements(RunT("aten.hardtanh.default", {V(T({3}, {-3, NAN, 2}))})),
             {-1, NAN, 1});
  Tensor hi = RunT(
      "aten.hardtanh.default",
      {V(T({3}, {-3, 0, 2}, DType::kInt64)), Value::Int(-1), Value::Int(1)});
  EXPECT_EQ(hi.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(hi), ElementsAre(-1, 0, 1));
  Tensor ints = T({2}, {-1, 2}, DType::kInt64);
  EXPECT_EQ(RunError("aten.elu.default", {V(ints)}),
            "aten.elu.default: \"elu_cpu\" not implemented for 'Long'");
  EXPECT_EQ(
      RunError("aten.leaky_relu.default", {V(ints)}),
      "aten.leaky_relu.default: \"leaky_relu_cpu\" not implemented for 'Long'");
  EXPECT_EQ(RunError("aten.hardtanh.default", {V(T({1}, {1}, DType::kBool))}),
            "aten.hardtanh.default: Bool inputs not supported for hardtanh");
  // An integer tensor's bound that is no int64 (PyTorch's Scalar refuses
  // the conversion); a float tensor takes it.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(RunError("aten.hardtanh.default",
                     {V(ints), Value::Float(-inf), Value::Float(1)}),
            "aten.hardtanh.default: value -inf cannot be converted to type "
            "int64_t without overflow");
  EXPECT_EQ(RunError("aten.hardtanh.default",
                     {V(ints), Value::Float(0), Value::Float(1e19)}),
            "aten.hardtanh.default: value 1e+19 cannot be converted to type "
            "int64_t without overflow");
  ExpectSame(Elements(RunT("aten.hardtanh.default",
                           {V(T({3}, {-3, NAN, 2})), Value::Float(-inf),
                            Value::Float(1)})),
             {-3, NAN, 1});
}

TEST(MiscOpsTest, Atan2OutWritesIntoOutAndReturnsIt) {
  Tensor y = T({2, 3}, {0, 1, 1, -1, 0, 1}), x = T({3}, {1, 1, -1});
  // out is a transposed [2, 3]: it keeps its strides and storage.
  Tensor out = Transposed({9, 9, 9, 9, 9, 9});
  Value r = RunV("aten.atan2.out", {V(y), V(x)}, {{"out", V(out)}});
  EXPECT_EQ(r.tensor.storage(), out.storage());
  EXPECT_THAT(r.tensor.strides(), ElementsAre(1, 2));
  const double pi = std::acos(-1.0);
  ExpectSame(Elements(out), {0, pi / 4, 3 * pi / 4, -pi / 4, 0, 3 * pi / 4},
             1e-6);
  // torch: integer inputs compute in float32 (the promoted dtype), then
  // the result is cast to out's float64: 0.7853981852531433.
  Tensor d = *Tensor::Empty({2}, DType::kFloat64);
  RunV("aten.atan2.out",
       {V(T({2}, {1, 2}, DType::kInt64)), V(T({2}, {1, 2}, DType::kInt64))},
       {{"out", V(d)}});
  EXPECT_THAT(Elements(d), ElementsAre(0.7853981852531433, 0.7853981852531433));
  // torch's message for an out dtype the result can't be cast to.
  EXPECT_EQ(RunError("aten.atan2.out", {V(y), V(x)},
                     {{"out", V(*Tensor::Empty({2, 3}, DType::kInt64))}}),
            "aten.atan2.out: result type Float can't be cast to the desired "
            "output type Long");
  // lathe does not resize out= tensors.
  EXPECT_EQ(RunError("aten.atan2.out", {V(y), V(x)},
                     {{"out", V(*Tensor::Empty({3}, DType::kFloat32))}}),
            "aten.atan2.out: out has shape [3] but the result has shape [2, "
            "3] (resizing out= tensors is not supported)");
}

TEST(MiscOpsTest, Atan2OutInAGraphMutatesItsOutInput) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Graph> g,
      ParseGraph(
          R"g(def forward(self, a: "f32[2][1]cpu", b: "f32[2][1]cpu", o: "f32[2][1]cpu"):
    atan2: "f32[2][1]cpu" = torch.ops.aten.atan2.out(a, b, out = o)
    return (atan2,)
)g"));
  // The result is `out` itself: neither a view of self nor an in-place op.
  const Node* node = g->Find("atan2");
  EXPECT_FALSE(IsView(*node));
  EXPECT_FALSE(IsInplace(*node));
  Tensor o = T({2}, {7, 7});
  ASSERT_OK_AND_ASSIGN(
      Interpretation r,
      Interpret(*g, {V(T({2}, {1, -1})), V(T({2}, {0, 0})), V(o)}));
  EXPECT_THAT(r.mutated_inputs, ElementsAre(false, false, true));
  EXPECT_EQ(r.outputs[0].tensor.storage(), o.storage());
  const double pi = std::acos(-1.0);
  ExpectSame(Elements(o), {pi / 2, -pi / 2}, 1e-6);
}

// ---- Reductions -------------------------------------------------------------

TEST(MiscOpsTest, AnyDimsAndVarDim) {
  Tensor x = T({2, 2}, {0, 1, 0, 0}, DType::kInt64);
  // torch: any.dims(x, []) reduces nothing; dim=None reduces everything.
  Tensor none = RunT("aten.any.dims", {V(x), Ints({})});
  EXPECT_EQ(none.dtype(), DType::kBool);
  EXPECT_THAT(none.sizes(), ElementsAre(2, 2));
  EXPECT_THAT(Elements(none), ElementsAre(0, 1, 0, 0));
  Tensor all = RunT("aten.any.dims", {V(x), Value::None(), Value::Bool(true)});
  EXPECT_THAT(all.sizes(), ElementsAre(1, 1));
  EXPECT_THAT(Elements(all), ElementsAre(1));
  Tensor rows = RunT("aten.any.dims", {V(x), Ints({-1})});
  EXPECT_THAT(Elements(rows), ElementsAre(1, 0));
  // torch: uint8 in, uint8 out.
  EXPECT_EQ(RunT("aten.any.dims", {V(T({2}, {3, 0}, DType::kUInt8)), Ints({0})})
                .dtype(),
            DType::kUInt8);
  EXPECT_EQ(RunError("aten.any.dims", {V(x), Ints({0, -2})}),
            "aten.any.dims: dim 0 appears multiple times in the list of dims");

  // torch: var.dim([[1., 2, 4], [3, 3, 9]], [1], False, True) =
  // [[1.5556], [8.0]]; dim=None (and []) unbiased: 7.8667.
  Tensor v = T({2, 3}, {1, 2, 4, 3, 3, 9});
  Tensor biased = RunT(
      "aten.var.dim", {V(v), Ints({1}), Value::Bool(false), Value::Bool(true)});
  EXPECT_THAT(biased.sizes(), ElementsAre(2, 1));
  ExpectSame(Elements(biased), {14.0 / 9, 8}, 1e-6);
  ExpectSame(Elements(RunT("aten.var.dim", {V(v), Ints({1})})), {7.0 / 3, 12},
             1e-6);
  Tensor every = RunT("aten.var.dim", {V(v), Value::None()});
  EXPECT_EQ(every.dim(), 0);
  ExpectSame(Elements(every), {7.8666666}, 1e-5);
  ExpectSame(Elements(RunT("aten.var.dim", {V(v), Ints({})})), {7.8666666},
             1e-5);
  EXPECT_EQ(RunError("aten.var.dim", {V(x), Ints({0})}),
            "aten.var.dim: std and var only support floating point and complex "
            "dtypes");
}

// ---- Views, copies, indexing ------------------------------------------------

TEST(MiscOpsTest, FlipAndRepeat) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(Elements(RunT("aten.flip.default", {V(x), Ints({0})})),
              ElementsAre(4, 5, 6, 1, 2, 3));
  EXPECT_THAT(Elements(RunT("aten.flip.default", {V(x), Ints({-1, 0})})),
              ElementsAre(6, 5, 4, 3, 2, 1));
  EXPECT_THAT(Elements(RunT("aten.flip.default", {V(x), Ints({})})),
              ElementsAre(1, 2, 3, 4, 5, 6));
  // torch: flip preserves a dense permuted layout.
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});  // [[1, 3, 5], [2, 4, 6]]
  Tensor ft = RunT("aten.flip.default", {V(t), Ints({1})});
  EXPECT_THAT(ft.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(ft), ElementsAre(5, 3, 1, 6, 4, 2));
  EXPECT_EQ(RunError("aten.flip.default", {V(x), Ints({0, -2})}),
            "aten.flip.default: dim 0 appears multiple times in the list of "
            "dims");

  Tensor r = RunT("aten.repeat.default", {V(T({2}, {1, 2})), Ints({2, 3})});
  EXPECT_THAT(r.sizes(), ElementsAre(2, 6));
  EXPECT_THAT(Elements(r), ElementsAre(1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2));
  // More repeats than dims: leading dims; torch: x.t().repeat(2, 1, 1) is
  // [2, 3, 2] contiguous.
  Tensor r3 = RunT("aten.repeat.default", {V(t), Ints({2, 1, 1})});
  EXPECT_THAT(r3.sizes(), ElementsAre(2, 2, 3));
  EXPECT_THAT(r3.strides(), ElementsAre(6, 3, 1));
  EXPECT_THAT(Elements(r3), ElementsAre(1, 3, 5, 2, 4, 6, 1, 3, 5, 2, 4, 6));
  EXPECT_THAT(RunT("aten.repeat.default", {V(x), Ints({0, 2})}).sizes(),
              ElementsAre(0, 6));
  EXPECT_EQ(RunError("aten.repeat.default", {V(x), Ints({2})}),
            "aten.repeat.default: Number of dimensions of repeat dims can not "
            "be smaller than number of dimensions of tensor");
  EXPECT_EQ(RunError("aten.repeat.default", {V(x), Ints({-1, 3})}),
            "aten.repeat.default: Trying to create tensor with negative "
            "dimension -2: [-2, 9]");
}

TEST(MiscOpsTest, SortMatchesTorchIncludingTiesAndNan) {
  // torch: x and torch.sort(x) / torch.sort(x, descending=True) indices
  // (stable=False: ties come out in the order of PyTorch's CPU kernel).
  std::vector<double> x = {0, 3, 1, 0, 3, NAN, 3, 3, 1, 3, 1, 2,
                           0, 3, 2, 0, 0, NAN, 2, 1, 2, 3, 3, 2};
  const std::vector<double> kAsc = {0,  3,  16, 15, 12, 2,  19, 8,
                                    10, 23, 20, 18, 14, 11, 13, 9,
                                    7,  6,  4,  21, 22, 1,  17, 5};
  const std::vector<double> kDesc = {5,  17, 1,  22, 21, 4,  6,  7,
                                     9,  13, 23, 20, 18, 14, 11, 10,
                                     19, 8,  2,  12, 15, 16, 3,  0};
  Tensor t = T({24}, x);
  Value asc = RunV("aten.sort.default", {V(t)});
  ASSERT_EQ(asc.list.size(), 2u);
  EXPECT_EQ(asc.list[1].tensor.dtype(), DType::kInt64);
  EXPECT_THAT(Elements(asc.list[1].tensor), ElementsAreArray(kAsc));
  std::vector<double> values = Elements(asc.list[0].tensor);
  EXPECT_EQ(values[0], 0);
  EXPECT_TRUE(std::isnan(values[23]) && std::isnan(values[22]));
  Value desc =
      RunV("aten.sort.default", {V(t), Value::Int(0), Value::Bool(true)});
  EXPECT_THAT(Elements(desc.list[1].tensor), ElementsAreArray(kDesc));
  EXPECT_TRUE(std::isnan(Elements(desc.list[0].tensor)[0]));
  // torch: an ascending sort of >= 32768 1-d integers is stable (its radix
  // sort path); verified against torch.sort(stable=True) on random data.
  Tensor big = *Tensor::Empty({40000}, DType::kInt64);
  for (int64_t k = 0; k < 40000; ++k) big.SetDouble({k}, (k * 7) % 3 - 1);
  std::vector<double> want;
  for (int v : {-1, 0, 1}) {
    for (int64_t k = 0; k < 40000; ++k) {
      if ((k * 7) % 3 - 1 == v) want.push_back(k);
    }
  }
  EXPECT_EQ(Elements(RunV("aten.sort.default", {V(big)}).list[1].tensor), want);
  // Along dim 0 of a transposed tensor: the layout is kept (torch).
  Tensor tr = Transposed({3, 1, 2, 2, 1, 3});  // [[3, 2, 1], [1, 2, 3]]
  Value s0 = RunV("aten.sort.default", {V(tr), Value::Int(0)});
  EXPECT_THAT(s0.list[0].tensor.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(s0.list[0].tensor), ElementsAre(1, 2, 1, 3, 2, 3));
  EXPECT_THAT(Elements(s0.list[1].tensor), ElementsAre(1, 0, 0, 0, 1, 1));
  // torch: a broadcast (stride 0) sort dim keeps indices 0..n-1.
  Tensor row = T({4}, {2, 1, 2, 1}, DType::kInt32);
  Tensor ex = *row.AsStrided({3, 4}, {0, 1}, 0);
  Value se = RunV("aten.sort.default", {V(ex), Value::Int(0)});
  EXPECT_THAT(Elements(se.list[1].tensor),
              ElementsAre(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2));
  // torch: a stepped, permuted input ([4, 3] with strides [2, 14]) gives
  // dense strides in its dimension order, [1, 4], as empty_like does; so
  // does hardtanh, which keeps a dense input's strides verbatim.
  Tensor stepped =
      *(*Tensor::Empty({35}, DType::kFloat32)).AsStrided({4, 3}, {2, 14}, 0);
  EXPECT_THAT(RunV("aten.sort.default", {V(stepped), Value::Int(0)})
                  .list[1]
                  .tensor.strides(),
              ElementsAre(1, 4));
  EXPECT_THAT(RunT("aten.flip.default", {V(stepped), Ints({0})}).strides(),
              ElementsAre(1, 4));
  EXPECT_THAT(RunT("aten.hardtanh.default", {V(stepped)}).strides(),
              ElementsAre(1, 4));
  Tensor odd =
      *(*Tensor::Empty({3}, DType::kFloat32)).AsStrided({1, 3}, {1, 1}, 0);
  EXPECT_THAT(RunT("aten.hardtanh.default", {V(odd)}).strides(),
              ElementsAre(1, 1));
  EXPECT_THAT(RunT("aten.elu.default", {V(odd)}).strides(), ElementsAre(3, 1));
  EXPECT_EQ(RunError("aten.sort.default", {V(tr), Value::Int(2)}),
            "aten.sort.default: Dimension out of range (expected to be in "
            "range of [-2, 1], but got 2)");
}

TEST(MiscOpsTest, TopkMatchesTorchIncludingTies) {
  // torch: y (int32) and torch.topk(y, k, largest=, sorted=) indices.
  std::vector<double> y = {4, 1, 4, 4, 4, 0, 1, 2, 3, 0, 0, 0, 2, 4, 1, 3, 3,
                           3, 1, 4, 1, 2, 3, 0, 2, 1, 0, 4, 3, 1, 1, 0, 3, 1,
                           1, 2, 4, 1, 3, 4, 0, 0, 3, 2, 3, 2, 2, 0, 0, 0, 3,
                           1, 4, 1, 1, 0, 2, 4, 4, 3, 4, 3, 4, 3, 4, 3, 0, 3,
                           2, 3, 0, 1, 1, 0, 2, 2, 0, 1, 1, 0, 4, 0, 3, 1, 2,
                           3, 0, 4, 4, 3, 4, 4, 4, 0, 2, 4, 0, 3, 3, 2};
  struct Case {
    int64_t k;
    bool largest, sorted;
    std::vector<double> indices;
  };
  const std::vector<Case> kCases = {
      {30, true, true, {19, 92, 4,  95, 91, 90, 13, 3,  2,  0,
                        88, 87, 80, 27, 64, 36, 39, 62, 60, 58,
                        57, 52, 44, 97, 38, 63, 8,  65, 42, 50}},
      {30, false, true, {47, 11, 10, 9,  86, 5,  93, 96, 81, 79,
                         76, 26, 73, 48, 49, 41, 40, 55, 66, 70,
                         31, 23, 53, 33, 34, 51, 18, 37, 77, 54}},
      {1, true, true, {0}},
      {1, false, true, {5}},
      {30, true, false, {0,  52, 57, 58, 60, 62, 39, 36, 64, 27,
                         80, 87, 19, 88, 42, 65, 2,  3,  13, 90,
                         91, 8,  95, 4,  63, 92, 38, 97, 44, 50}},
  };
  Tensor t = T({100}, y, DType::kInt32);
  for (const Case& c : kCases) {
    SCOPED_TRACE(absl::StrCat("k=", c.k, " largest=", c.largest));
    Value r = RunV("aten.topk.default",
                   {V(t), Value::Int(c.k), Value::Int(-1),
                    Value::Bool(c.largest), Value::Bool(c.sorted)});
    EXPECT_EQ(r.list[0].tensor.dtype(), DType::kInt32);
    EXPECT_THAT(Elements(r.list[1].tensor), ElementsAreArray(c.indices));
    std::vector<double> values = Elements(r.list[0].tensor);
    for (size_t j = 0; j < values.size(); ++j) {
      EXPECT_EQ(values[j], y[static_cast<size_t>(c.indices[j])]);
    }
  }
  // torch: NaN is the largest; topk results are contiguous.
  Tensor f = T({5}, {3, NAN, 1, 3, 2});
  Value top = RunV("aten.topk.default", {V(f), Value::Int(2)});
  EXPECT_THAT(Elements(top.list[1].tensor), ElementsAre(1, 3));
  Tensor tr = Transposed({3, 1, 2, 2, 1, 3});  // [[3, 2, 1], [1, 2, 3]]
  Value t0 = RunV("aten.topk.default", {V(tr), Value::Int(1), Value::Int(0)});
  EXPECT_THAT(t0.list[0].tensor.sizes(), ElementsAre(1, 3));
  EXPECT_THAT(t0.list[0].tensor.strides(), ElementsAre(3, 1));
  EXPECT_THAT(Elements(t0.list[0].tensor), ElementsAre(3, 2, 3));
  EXPECT_EQ(RunError("aten.topk.default", {V(f), Value::Int(6)}),
            "aten.topk.default: selected index k out of range");
  EXPECT_EQ(RunError("aten.topk.default", {V(f), Value::Int(-1)}),
            "aten.topk.default: selected index k out of range");
  EXPECT_EQ(RunError("aten.topk.default",
                     {V(T({2}, {1, 0}, DType::kBool)), Value::Int(1)}),
            "aten.topk.default: topk does not support bool dtypes on CPU");
}

TEST(MiscOpsTest, NonzeroValuesLayoutAndUnbackedMeta) {
  // torch: nonzero([[0, 1], [2, 0]]) = [[0, 1], [1, 0]], strides (1, 2).
  Tensor x = T({2, 2}, {0, 1, 2, 0}, DType::kInt64);
  ASSERT_OK_AND_ASSIGN(
      Value r,
      OpRegistry::Global()
          .Find("aten.nonzero.default")
          ->kernel(OpCall(*OpRegistry::Global().Find("aten.nonzero.default"),
                          {V(x)}, nullptr)));
  EXPECT_EQ(r.tensor.dtype(), DType::kInt64);
  EXPECT_THAT(r.tensor.sizes(), ElementsAre(2, 2));
  EXPECT_THAT(r.tensor.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(r.tensor), ElementsAre(0, 1, 1, 0));
  const OpDef* op = OpRegistry::Global().Find("aten.nonzero.default");
  // NaN counts as nonzero; a 0-d input gives [n, 0].
  Tensor nan = op->kernel(OpCall(*op, {V(T({2}, {NAN, 0}))}, nullptr))->tensor;
  EXPECT_THAT(Elements(nan), ElementsAre(0));
  Tensor scalar = op->kernel(OpCall(*op, {V(T({}, {3}))}, nullptr))->tensor;
  EXPECT_THAT(scalar.sizes(), ElementsAre(1, 0));

  // The meta function: i64[u0, 2] with strides [1, u0], u0 a fresh unbacked
  // symbol of the call's ShapeEnv.
  symbolic::ShapeEnv env;
  ASSERT_OK_AND_ASSIGN(Value m,
                       op->meta(OpCall(*op, {ToMetaValue(V(x))}, &env)));
  const TensorMeta& meta = m.meta;
  EXPECT_EQ(meta.dtype, DType::kInt64);
  ASSERT_EQ(meta.sizes.size(), 2u);
  symbolic::Expr u = meta.sizes[0];
  ASSERT_TRUE(u.is_symbol());
  EXPECT_TRUE(env.IsUnbacked(u));
  EXPECT_TRUE(absl::StartsWith(symbolic::ToString(u), "u"))
      << symbolic::ToString(u);
  EXPECT_EQ(symbolic::ToString(meta.sizes[1]), "2");
  EXPECT_EQ(symbolic::ToString(meta.strides[0]), "1");
  EXPECT_EQ(meta.strides[1], u);
  // A second call gets a different symbol.
  ASSERT_OK_AND_ASSIGN(Value m2,
                       op->meta(OpCall(*op, {ToMetaValue(V(x))}, &env)));
  EXPECT_NE(m2.meta.sizes[0], u);
  // Without a ShapeEnv there is nothing to create the symbol in.
  EXPECT_EQ(
      op->meta(OpCall(*op, {ToMetaValue(V(x))}, nullptr)).status().message(),
      "aten.nonzero.default: no ShapeEnv for an unbacked value");
}

TEST(MiscOpsTest, NonzeroInShapePropagationBindsItsUnbackedSize) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Graph> g,
      ParseGraph(R"g(def forward(self, x: "f32[s0, 3][3, 1]cpu"):
    nonzero: "i64[u0, 2][1, u0]cpu" = torch.ops.aten.nonzero.default(x)
    sum_1: "i64[][]cpu" = torch.ops.aten.sum.default(nonzero)
    return (nonzero, sum_1)
)g"));
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(4);
  ASSERT_OK(PropagateShapes(*g, env, options));
  const Node* nz = g->Find("nonzero");
  EXPECT_EQ(nz->meta().ToAnnotation(), "i64[u0, 2][1, u0]cpu");
  ASSERT_EQ(nz->unbacked_bindings().size(), 1u);
  EXPECT_EQ(symbolic::ToString(nz->unbacked_bindings()[0].first), "u0");
  EXPECT_EQ(nz->unbacked_bindings()[0].second, ".size(0)");
  EXPECT_TRUE(env.IsUnbacked(nz->unbacked_bindings()[0].first));
  EXPECT_EQ(g->Find("sum_1")->meta().ToAnnotation(), "i64[][]cpu");
}

TEST(MiscOpsTest, SymStorageOffset) {
  Tensor base = T({6}, {0, 1, 2, 3, 4, 5});
  Tensor view = *base.AsStrided({2}, {2}, 3);
  Value off = RunV("aten.sym_storage_offset.default", {V(view)});
  EXPECT_EQ(*off.AsInt(), 3);
  // On metadata: the (symbolic) offset itself.
  const OpDef* op =
      OpRegistry::Global().Find("aten.sym_storage_offset.default");
  symbolic::ShapeEnv env;
  TensorMeta m = MetaOf(view);
  m.storage_offset = env.CreateUnbacked();
  ASSERT_OK_AND_ASSIGN(Value r,
                       op->meta(OpCall(*op, {Value::OfMeta(m)}, &env)));
  EXPECT_EQ(r.number, m.storage_offset);
}

TEST(MiscOpsTest, MaskedScatter) {
  // torch: masked_scatter(zeros(2, 3), mask, arange(1., 10).reshape(3, 3)).
  Tensor self = T({2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor mask = T({2, 3}, {1, 0, 1, 0, 1, 0}, DType::kBool);
  Tensor src = T({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_THAT(
      Elements(RunT("aten.masked_scatter.default", {V(self), V(mask), V(src)})),
      ElementsAre(1, 0, 2, 0, 3, 0));
  // A broadcast mask; a broadcast self (torch: [3] with a [2, 3] mask gives
  // [2, 3]). Results are contiguous.
  Tensor row_mask = T({3}, {1, 0, 1}, DType::kBool);
  EXPECT_THAT(Elements(RunT("aten.masked_scatter.default",
                            {V(self), V(row_mask), V(src)})),
              ElementsAre(1, 0, 2, 3, 0, 4));
  Tensor grown = RunT("aten.masked_scatter.default",
                      {V(T({3}, {7, 8, 9})), V(mask), V(src)});
  EXPECT_THAT(grown.sizes(), ElementsAre(2, 3));
  EXPECT_THAT(Elements(grown), ElementsAre(1, 8, 2, 7, 3, 9));
  Tensor tr = Transposed({1, 2, 3, 4, 5, 6});
  EXPECT_THAT(
      RunT("aten.masked_scatter.default", {V(tr), V(mask), V(src)}).strides(),
      ElementsAre(3, 1));
  EXPECT_EQ(RunError("aten.masked_scatter.default",
                     {V(self), V(mask), V(T({2}, {1, 2}))}),
            "aten.masked_scatter.default: Number of elements of source < "
            "number of ones in mask");
  EXPECT_EQ(RunError("aten.masked_scatter.default",
                     {V(self), V(T({3}, {1, 0, 1}, DType::kInt32)), V(src)}),
            "aten.masked_scatter.default: masked_scatter_ only supports "
            "boolean masks, but got mask with dtype Int");
}

TEST(MiscOpsTest, ScatterReduceMatchesTorch) {
  Tensor idx = T({6}, {0, 0, 2, 2, 2, 1}, DType::kInt64);
  struct Case {
    const char* reduce;
    bool include_self;
    std::vector<double> floats, ints;
  };
  // torch: scatter_reduce.two([1., 2, 3, 4, 5], 0, idx, [1., 2, 3, 4, 5, 6])
  // and the int64 version with src [1, 2, 3, 4, 6, 7].
  const std::vector<Case> kCases = {
      {"sum", true, {4, 8, 15, 4, 5}, {4, 9, 16, 4, 5}},
      {"sum", false, {3, 6, 12, 4, 5}, {3, 7, 13, 4, 5}},
      {"prod", true, {2, 12, 180, 4, 5}, {2, 14, 216, 4, 5}},
      {"prod", false, {2, 6, 60, 4, 5}, {2, 7, 72, 4, 5}},
      {"mean", true, {1.3333333730697632, 4, 3.75, 4, 5}, {1, 4, 4, 4, 5}},
      {"mean", false, {1.5, 6, 4, 4, 5}, {1, 7, 4, 4, 5}},
      {"amax", true, {2, 6, 5, 4, 5}, {2, 7, 6, 4, 5}},
      {"amax", false, {2, 6, 5, 4, 5}, {2, 7, 6, 4, 5}},
      {"amin", true, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}},
      {"amin", false, {1, 6, 3, 4, 5}, {1, 7, 3, 4, 5}},
  };
  Tensor self = T({5}, {1, 2, 3, 4, 5});
  Tensor src = T({6}, {1, 2, 3, 4, 5, 6});
  Tensor iself = T({5}, {1, 2, 3, 4, 5}, DType::kInt64);
  Tensor isrc = T({6}, {1, 2, 3, 4, 6, 7}, DType::kInt64);
  for (const Case& c : kCases) {
    SCOPED_TRACE(absl::StrCat(c.reduce, " include_self=", c.include_self));
    std::vector<std::pair<std::string, Value>> kw = {
        {"include_self", Value::Bool(c.include_self)}};
    Tensor f = RunT(
        "aten.scatter_reduce.two",
        {V(self), Value::Int(0), V(idx), V(src), Value::String(c.reduce)}, kw);
    EXPECT_THAT(Elements(f), ElementsAreArray(c.floats));
    Tensor i = RunT(
        "aten.scatter_reduce.two",
        {V(iself), Value::Int(0), V(idx), V(isrc), Value::String(c.reduce)},
        kw);
    EXPECT_EQ(i.dtype(), DType::kInt64);
    EXPECT_THAT(Elements(i), ElementsAreArray(c.ints));
  }
  // torch: integer mean floors (-5 / 3 -> -2).
  EXPECT_THAT(Elements(RunT(
                  "aten.scatter_reduce.two",
                  {V(T({2}, {-1, 0}, DType::kInt64)), Value::Int(0),
                   V(T({2}, {0, 0}, DType::kInt64)),
                   V(T({2}, {-2, -2}, DType::kInt64)), Value::String("mean")})),
              ElementsAre(-2, 0));
  // torch: NaN propagates through amax, from self and from src.
  Tensor ns = T({3}, {1, NAN, 3}), ni = T({4}, {0, 1, 2, 0}, DType::kInt64),
         nsrc = T({4}, {NAN, 5, 1, 2});
  ExpectSame(Elements(RunT("aten.scatter_reduce.two",
                           {V(ns), Value::Int(0), V(ni), V(nsrc),
                            Value::String("amax")})),
             {NAN, NAN, 3});
  ExpectSame(Elements(RunT(
                 "aten.scatter_reduce.two",
                 {V(ns), Value::Int(0), V(ni), V(nsrc), Value::String("amax")},
                 {{"include_self", Value::Bool(false)}})),
             {NAN, 5, 1});
  // torch: the result is contiguous even for a transposed self.
  Tensor tr = Transposed({1, 2, 3, 4, 5, 6});
  EXPECT_THAT(RunT("aten.scatter_reduce.two",
                   {V(tr), Value::Int(0), V(T({1, 1}, {1}, DType::kInt64)),
                    V(T({1, 1}, {10})), Value::String("sum")})
                  .strides(),
              ElementsAre(3, 1));
  // torch's scatter_shape_check message.
  EXPECT_EQ(RunError("aten.scatter_reduce.two",
                     {V(*Tensor::Empty({2, 3}, DType::kFloat32)), Value::Int(0),
                      V(*Tensor::Empty({1, 4}, DType::kInt64)),
                      V(*Tensor::Empty({2, 4}, DType::kFloat32)),
                      Value::String("sum")}),
            "aten.scatter_reduce.two: Expected index [1, 4] to be no larger "
            "than self [2, 3] apart from dimension 0 and to be no larger size "
            "than src [2, 4]");
  EXPECT_EQ(
      RunError("aten.scatter_reduce.two",
               {V(self), Value::Int(0), V(idx), V(src), Value::String("max2")}),
      "aten.scatter_reduce.two: reduce argument must be either sum, "
      "prod, mean, amax or amin, got max2");
  EXPECT_EQ(
      RunError("aten.scatter_reduce.two",
               {V(self), Value::Int(0), V(idx), V(isrc), Value::String("sum")}),
      "aten.scatter_reduce.two: scatter(): Expected self.dtype to be "
      "equal to src.dtype");
}

// ---- FFT --------------------------------------------------------------------

TEST(MiscOpsTest, FftSaysComplexDtypesAreUnsupported) {
  Tensor x = T({4}, {1, 2, 3, 4});
  EXPECT_EQ(RunError("aten._fft_r2c.default",
                     {V(x), Ints({0}), Value::Int(0), Value::Bool(true)}),
            "aten._fft_r2c.default: complex dtypes are not supported");
  EXPECT_EQ(RunError("aten._fft_c2r.default",
                     {V(x), Ints({0}), Value::Int(0), Value::Int(6)}),
            "aten._fft_c2r.default: complex dtypes are not supported");
  // The meta function says the same (shape propagation stops there).
  const OpDef* op = OpRegistry::Global().Find("aten._fft_r2c.default");
  symbolic::ShapeEnv env;
  EXPECT_EQ(op->meta(OpCall(*op,
                            {ToMetaValue(V(x)), Ints({0}), Value::Int(0),
                             Value::Bool(true)},
                            &env))
                .status()
                .message(),
            "aten._fft_r2c.default: complex dtypes are not supported");
}

// ---- Corpus ops: hypot, shifts, rsub, hardsigmoid, softplus, max/min,
// linspace, roll, diag_embed, mv, empty_permuted, _unsafe_index -------------
// (values captured from torch 2.15 on CPU, marked "torch:").

TEST(MiscOpsTest, HypotShiftsAndRsub) {
  Tensor x = T({2, 3}, {3, -5, 0.5, 0, 8, -1});
  Tensor y = T({3}, {4, 12, -1.2});
  // torch: hypot(x, y) (y broadcast over rows).
  ExpectSame(
      Elements(RunT("aten.hypot.default", {V(x), V(y)})),
      {5, 13, 1.3000000715255737, 4, 14.422204971313477, 1.5620499849319458},
      1e-6);
  Tensor i8 = T({4}, {1, -8, 64, -128}, DType::kInt8);
  Tensor by = T({4}, {0, 3, 8, -1}, DType::kInt8);
  // torch: shifts in int8, where shifting by >= 8 or by a negative amount
  // gives 0 (left) or the sign fill (right).
  ExpectSame(Elements(RunT("aten.__lshift__.Scalar", {V(i8), Value::Int(1)})),
             {2, -16, -128, 0});
  ExpectSame(Elements(RunT("aten.__lshift__.Tensor", {V(i8), V(by)})),
             {1, -64, 0, 0});
  ExpectSame(Elements(RunT("aten.__rshift__.Scalar", {V(i8), Value::Int(2)})),
             {0, -2, 16, -32});
  ExpectSame(Elements(RunT("aten.__rshift__.Tensor", {V(i8), V(by)})),
             {1, -1, 0, -1});
  Tensor u8 = T({2}, {200, 1}, DType::kUInt8);
  // torch: uint8 has no sign to fill with.
  ExpectSame(Elements(RunT("aten.__rshift__.Scalar", {V(u8), Value::Int(9)})),
             {0, 0});
  ExpectSame(Elements(RunT("aten.__rshift__.Scalar", {V(u8), Value::Int(7)})),
             {1, 0});
  ExpectSame(Elements(RunT("aten.__lshift__.Scalar", {V(u8), Value::Int(1)})),
             {144, 2});
  // torch: rsub.Scalar(tensor([1, 2, 3]), 10, alpha=2) = 10 - 2 * self.
  Tensor r = RunT("aten.rsub.Scalar", {V(T({3}, {1, 2, 3}, DType::kInt64)),
                                       Value::Int(10), Value::Int(2)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  ExpectSame(Elements(r), {8, 6, 4});
  // torch: rsub.Tensor(tensor([1.5, 2.]), tensor([[1], [2]]), alpha=0.5).
  Tensor rt = RunT("aten.rsub.Tensor",
                   {V(T({2}, {1.5, 2})), V(T({2, 1}, {1, 2}, DType::kInt64))},
                   {{"alpha", Value::Float(0.5)}});
  EXPECT_EQ(rt.dtype(), DType::kFloat32);
  EXPECT_THAT(rt.sizes(), ElementsAre(2, 2));
  ExpectSame(Elements(rt), {0.25, 0, 1.25, 1});
}

TEST(MiscOpsTest, HardsigmoidAndSoftplus) {
  const double nan = std::nan("");
  Tensor h = T({8}, {-4, -3, -1.5, 0, 1, 3, 5, nan});
  // torch: hardsigmoid(h); softplus(h); softplus(h, beta=2, threshold=3).
  ExpectSame(Elements(RunT("aten.hardsigmoid.default", {V(h)})),
             {0, 0, 0.25, 0.5, 0.6666666865348816, 1, 1, nan}, 1e-7);
  ExpectSame(Elements(RunT("aten.softplus.default", {V(h)})),
             {0.018149929121136665, 0.04858735203742981, 0.20141328871250153,
              0.6931471824645996, 1.31326162815094, 3.0485873222351074,
              5.006715297698975, nan},
             1e-6);
  ExpectSame(
      Elements(
          RunT("aten.softplus.default", {V(h), Value::Int(2), Value::Int(3)})),
      {0.00016770318325143307, 0.0012378426035866141, 0.024293676018714905,
       0.3465735912322998, 1.0634640455245972, 3, 5, nan},
      1e-6);
  // A transposed input keeps its layout (TensorIterator).
  Tensor t =
      RunT("aten.hardsigmoid.default", {V(Transposed({0, 1, 2, 3, 4, 5}))});
  EXPECT_THAT(t.strides(), ElementsAre(1, 2));
}

TEST(MiscOpsTest, MaxMinOfAllElements) {
  Tensor x = T({2, 3}, {3, -5, 0.5, 0, 8, -1});
  Tensor mx = RunT("aten.max.default", {V(x)});
  EXPECT_EQ(mx.dim(), 0);
  EXPECT_EQ(mx.GetDouble({}), 8);
  EXPECT_EQ(RunT("aten.min.default", {V(x)}).GetDouble({}), -5);
  Tensor ints =
      RunT("aten.max.default", {V(T({2, 2}, {1, 7, 3, -2}, DType::kInt64))});
  EXPECT_EQ(ints.dtype(), DType::kInt64);
  EXPECT_EQ(ints.GetDouble({}), 7);
  // torch: max(tensor([1., nan, 2.])) is nan.
  EXPECT_TRUE(
      std::isnan(RunT("aten.max.default", {V(T({3}, {1, std::nan(""), 2}))})
                     .GetDouble({})));
}

TEST(MiscOpsTest, LinspaceRollDiagEmbedMvEmptyPermuted) {
  // torch: linspace(-1, 2, 5); linspace(0, 1, 7) (float32 steps from both
  // ends); linspace(5, -5, 4, dtype=int32) (truncated); linspace(3, 7, 1).
  ExpectSame(Elements(RunT("aten.linspace.default",
                           {Value::Int(-1), Value::Int(2), Value::Int(5)})),
             {-1, -0.25, 0.5, 1.25, 2});
  ExpectSame(Elements(RunT("aten.linspace.default",
                           {Value::Int(0), Value::Int(1), Value::Int(7)})),
             {0, 0.1666666716337204, 0.3333333432674408, 0.5,
              0.6666666269302368, 0.8333333134651184, 1});
  Tensor li = RunT("aten.linspace.default",
                   {Value::Int(5), Value::Int(-5), Value::Int(4)},
                   {{"dtype", Value::OfDType(DType::kInt32)}});
  EXPECT_EQ(li.dtype(), DType::kInt32);
  ExpectSame(Elements(li), {5, 1, -1, -5});
  ExpectSame(Elements(RunT("aten.linspace.default",
                           {Value::Int(3), Value::Int(7), Value::Int(1)})),
             {3});
  std::vector<double> twelve;
  for (int i = 0; i < 12; ++i) twelve.push_back(i);
  Tensor r = T({3, 4}, twelve, DType::kInt64);
  // torch: roll(r, [1, -1], [0, 1]); roll(r, [5]) (flattened);
  // roll(r, [-2], [1]).
  ExpectSame(
      Elements(RunT("aten.roll.default", {V(r), Ints({1, -1}), Ints({0, 1})})),
      {9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4});
  ExpectSame(Elements(RunT("aten.roll.default", {V(r), Ints({5})})),
             {7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6});
  Tensor rolled = RunT("aten.roll.default", {V(Transposed({0, 1, 2, 3, 4, 5})),
                                             Ints({1}), Ints({1})});
  EXPECT_THAT(rolled.strides(), ElementsAre(3, 1));  // contiguous
  // Transposed(...) is [[0, 2, 4], [1, 3, 5]].
  ExpectSame(Elements(rolled), {4, 0, 2, 5, 1, 3});
  // torch: diag_embed([[1, 2], [3, 4]], offset=-1, dim1=0, dim2=2).
  Tensor de = RunT("aten.diag_embed.default",
                   {V(T({2, 2}, {1, 2, 3, 4})), Value::Int(-1), Value::Int(0),
                    Value::Int(2)});
  EXPECT_THAT(de.sizes(), ElementsAre(3, 2, 3));
  ExpectSame(Elements(de),
             {0, 0, 0, 0, 0, 0, 1, 0, 0, 3, 0, 0, 0, 2, 0, 0, 4, 0});
  // torch: diag_embed(tensor([1, 2]), 1).
  Tensor de2 = RunT("aten.diag_embed.default",
                    {V(T({2}, {1, 2}, DType::kInt64)), Value::Int(1)});
  ExpectSame(Elements(de2), {0, 1, 0, 0, 0, 2, 0, 0, 0});
  // Hand-derived: [[3, -5, .5], [0, 8, -1]] @ [1, 2, 3] = [-5.5, 13].
  ExpectSame(
      Elements(RunT("aten.mv.default", {V(T({2, 3}, {3, -5, 0.5, 0, 8, -1})),
                                        V(T({3}, {1, 2, 3}))})),
      {-5.5, 13});
  ExpectSame(Elements(RunT("aten.mv.default",
                           {V(T({2, 2}, {1, 2, 3, 4}, DType::kInt64)),
                            V(T({2}, {5, -6}, DType::kInt64))})),
             {-7, -9});
  // torch: empty_permuted([2, 3, 4], [1, 2, 0]).stride() == (1, 8, 2).
  Tensor ep =
      RunT("aten.empty_permuted.default", {Ints({2, 3, 4}), Ints({1, 2, 0})});
  EXPECT_THAT(ep.strides(), ElementsAre(1, 8, 2));
}

TEST(MiscOpsTest, CorpusOpsErrors) {
  // torch's messages.
  EXPECT_THAT(
      RunError("aten.__lshift__.Scalar", {V(T({1}, {1})), Value::Int(1)}),
      HasSubstr("\"lshift_cpu\" not implemented for 'Float'"));
  EXPECT_THAT(RunError("aten.hypot.default", {V(T({1}, {3}, DType::kInt64)),
                                              V(T({1}, {4}, DType::kInt64))}),
              HasSubstr("\"hypot_cpu\" not implemented for 'Long'"));
  EXPECT_THAT(RunError("aten.rsub.Scalar",
                       {V(T({1}, {1}, DType::kBool)), Value::Int(2)}),
              HasSubstr("Subtraction, the `-` operator, with a bool tensor"));
  EXPECT_THAT(RunError("aten.min.default", {V(T({2, 0}, {}))}),
              HasSubstr("min(): Expected reduction dim to be specified for "
                        "input.numel() == 0."));
  EXPECT_THAT(RunError("aten.linspace.default",
                       {Value::Int(0), Value::Int(1), Value::Int(-1)}),
              HasSubstr("number of steps must be non-negative"));
  Tensor r = T({3, 4}, std::vector<double>(12, 0));
  EXPECT_THAT(RunError("aten.roll.default", {V(r), Ints({1, 2}), Ints({0})}),
              HasSubstr("shifts and dimensions must align. shifts: 2, dims:1"));
  EXPECT_THAT(RunError("aten.diag_embed.default",
                       {V(r), Value::Int(0), Value::Int(-3), Value::Int(0)}),
              HasSubstr("diagonal dimensions cannot be identical -3, 0"));
  EXPECT_THAT(RunError("aten.mv.default", {V(r), V(T({5}, {1, 2, 3, 4, 5}))}),
              HasSubstr("size mismatch, got input (3), mat (3x4), vec (5)"));
  EXPECT_THAT(
      RunError("aten.empty_permuted.default", {Ints({2, 3}), Ints({0, 0})}),
      HasSubstr("Duplicate dim not allowed"));
  // _unsafe_index still checks its indices (torch's index message).
  EXPECT_THAT(
      RunError("aten._unsafe_index.Tensor",
               {V(r), Value::List({V(T({2}, {0, 3}, DType::kInt64))})}),
      HasSubstr("index 3 is out of bounds for dimension 0 with size 3"));
}

// attention_masked (corpus): viewing an expanded permute, a non-contiguous
// tensor, as its own symbolic shape kept s0 symbolic; view specialized it
// to its hint, and a later expand to [s0, ...] failed.
TEST(MiscOpsTest, ViewOfANonContiguousTensorKeepsSymbolicSizes) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Graph> g,
      ParseGraph(
          R"g(def forward(self, arg0_1: "Sym(s0)", arg1_1: "Sym(s1)", x: "f32[s0, 4, s1][4*s1, s1, 1]cpu"):
    permute: "f32[s0, s1, 4][4*s1, 1, s1]cpu" = torch.ops.aten.permute.default(x, [0, 2, 1])
    expand: "f32[s0, s1, 4][4*s1, 1, s1]cpu" = torch.ops.aten.expand.default(permute, [arg0_1, arg1_1, 4])
    view: "f32[s0, s1, 4][4*s1, 1, s1]cpu" = torch.ops.aten.view.default(expand, [arg0_1, arg1_1, 4])
    view_1: "f32[s0, 4*s1][4*s1, 1]cpu" = torch.ops.aten.view.default(x, [arg0_1, -1])
    expand_1: "f32[s0, s1, 4][4*s1, 1, s1]cpu" = torch.ops.aten.expand.default(view, [arg0_1, arg1_1, 4])
    return (expand_1, view_1)
)g"));
  symbolic::ShapeEnv env;
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(2);
  options.hints["s1"] = symbolic::Value::Int(8);
  ASSERT_OK(PropagateShapes(*g, env, options));
  EXPECT_EQ(g->Find("view")->meta().ToAnnotation(),
            "f32[s0, s1, 4][4*s1, 1, s1]cpu");
  EXPECT_EQ(g->Find("expand_1")->meta().ToAnnotation(),
            "f32[s0, s1, 4][4*s1, 1, s1]cpu");
  // A view that must merge non-mergeable dims still fails (concretely).
  Tensor t = Transposed({0, 1, 2, 3, 4, 5});
  EXPECT_THAT(RunError("aten.view.default", {V(t), Ints({6})}),
              HasSubstr("view size is not compatible"));
}

TEST(MiscOpsTest, Eye) {
  // torch: eye(3, dtype=int64); eye(2, 3) (float32 by default).
  Tensor e = RunT("aten.eye.default", {Value::Int(3)},
                  {{"dtype", Value::OfDType(DType::kInt64)}});
  EXPECT_EQ(e.dtype(), DType::kInt64);
  ExpectSame(Elements(e), {1, 0, 0, 0, 1, 0, 0, 0, 1});
  Tensor m = RunT("aten.eye.m", {Value::Int(2), Value::Int(3)});
  EXPECT_EQ(m.dtype(), DType::kFloat32);
  ExpectSame(Elements(m), {1, 0, 0, 0, 1, 0});
  EXPECT_THAT(RunError("aten.eye.default", {Value::Int(-1)}),
              HasSubstr("n must be greater or equal to 0, got -1"));
}

}  // namespace
}  // namespace lathe::ir
