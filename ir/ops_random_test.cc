// The random ops' kernels (rand, randn, randperm, native_dropout) and the
// seeded generator under them: distributions, permutations, dropout's
// scaling and mask, and the same draws for the same seed. Every RunOp call
// also checks that the op's meta function predicts the kernel's result.

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_testing.h"
#include "ir/ops_nn_testing.h"
#include "ir/random.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// A [3, 2] tensor's transpose: [2, 3] with strides [1, 2].
Tensor Transposed(const std::vector<double>& values) {
  Tensor base = T({3, 2}, values);
  return *base.AsStrided({2, 3}, {1, 2}, 0);
}

// ---- Random ops -------------------------------------------------------------

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

Moments MomentsOf(const Tensor& t) {
  std::vector<double> v = Elements(t);
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= v.size();
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= v.size() - 1;
  return m;
}

TEST(MiscOpsTest, RandAndRandnDistributions) {
  Tensor u = RunT("aten.rand.default", {Ints({100, 100})});
  EXPECT_EQ(u.dtype(), DType::kFloat32);
  EXPECT_THAT(u.sizes(), ElementsAre(100, 100));
  Moments mu = MomentsOf(u);
  // n = 10000: the mean's standard error is 0.0029, the variance's ~0.0008.
  EXPECT_NEAR(mu.mean, 0.5, 0.015);
  EXPECT_NEAR(mu.var, 1.0 / 12, 0.004);
  EXPECT_GE(mu.min, 0);
  EXPECT_LT(mu.max, 1);
  Tensor n = RunT("aten.randn.default", {Ints({10000})},
                  {{"dtype", Value::OfDType(DType::kFloat64)}});
  EXPECT_EQ(n.dtype(), DType::kFloat64);
  Moments mn = MomentsOf(n);
  EXPECT_NEAR(mn.mean, 0, 0.05);  // standard error 0.01
  EXPECT_NEAR(mn.var, 1, 0.07);   // standard error ~0.014
  // About 68.3% within one standard deviation.
  int within = 0;
  for (double x : Elements(n)) within += std::fabs(x) < 1;
  EXPECT_NEAR(within / 10000.0, 0.6827, 0.02);
  // Half precision stays below 1 too.
  EXPECT_LT(MomentsOf(RunT("aten.rand.default", {Ints({4000})},
                           {{"dtype", Value::OfDType(DType::kFloat16)}}))
                .max,
            1);
  EXPECT_EQ(RunError("aten.rand.default", {Ints({2})},
                     {{"dtype", Value::OfDType(DType::kInt64)}}),
            "aten.rand.default: \"check_uniform_bounds\" not implemented for "
            "'Long'");
  EXPECT_EQ(RunError("aten.randn.default", {Ints({2})},
                     {{"dtype", Value::OfDType(DType::kInt64)}}),
            "aten.randn.default: \"normal_kernel_cpu\" not implemented for "
            "'Long'");
}

TEST(MiscOpsTest, RandpermIsAPermutation) {
  // The schema's `dtype=4` is c10's code for int64.
  Tensor p = RunT("aten.randperm.default", {Value::Int(1000)});
  EXPECT_EQ(p.dtype(), DType::kInt64);
  std::vector<double> v = Elements(p);
  std::set<double> seen(v.begin(), v.end());
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 999);
  int fixed = 0;
  for (int k = 0; k < 1000; ++k) fixed += v[k] == k;
  EXPECT_LT(fixed, 10);  // a random permutation has ~1 fixed point
  EXPECT_EQ(RunT("aten.randperm.default", {Value::Int(5)},
                 {{"dtype", Value::OfDType(DType::kFloat32)}})
                .dtype(),
            DType::kFloat32);
  EXPECT_EQ(RunT("aten.randperm.default", {Value::Int(0)}).numel(), 0);
  EXPECT_EQ(RunError("aten.randperm.default", {Value::Int(-1)}),
            "aten.randperm.default: Trying to create tensor with negative "
            "dimension -1: [-1]");
}

TEST(MiscOpsTest, NativeDropout) {
  Tensor x = *Tensor::Empty({100, 100}, DType::kFloat32);
  ForEachIndex(x.sizes(), [&](absl::Span<const int64_t> i) {
    x.SetDouble(i, 1 + i[1] % 7);
  });
  // train=True: keep rate 1 - p, kept values scaled by 1 / (1 - p).
  Value r = RunV("aten.native_dropout.default",
                 {V(x), Value::Float(0.25), Value::Bool(true)});
  const Tensor &out = r.list[0].tensor, &mask = r.list[1].tensor;
  EXPECT_EQ(mask.dtype(), DType::kBool);
  int kept = 0;
  ForEachIndex(x.sizes(), [&](absl::Span<const int64_t> i) {
    bool keep = mask.GetDouble(i) != 0;
    kept += keep;
    EXPECT_FLOAT_EQ(out.GetDouble(i), keep ? x.GetDouble(i) / 0.75 : 0);
  });
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.015);  // standard error 0.0043
  // train=None trains too; p = 1 drops everything.
  Value all = RunV("aten.native_dropout.default",
                   {V(x), Value::Float(1), Value::None()});
  EXPECT_EQ(MomentsOf(all.list[1].tensor).max, 0);
  EXPECT_EQ(MomentsOf(all.list[0].tensor).max, 0);
  // train=False: the identity and an all-true mask, in the input's layout.
  Tensor t = Transposed({1, 2, 3, 4, 5, 6});
  Value ev = RunV("aten.native_dropout.default",
                  {V(t), Value::Float(0.5), Value::Bool(false)});
  EXPECT_THAT(Elements(ev.list[0].tensor), ElementsAreArray(Elements(t)));
  EXPECT_THAT(ev.list[0].tensor.strides(), ElementsAre(1, 2));
  EXPECT_THAT(Elements(ev.list[1].tensor), ElementsAre(1, 1, 1, 1, 1, 1));
  // torch: integer inputs are fine in eval, an error when training.
  Tensor ints = T({2}, {1, 2}, DType::kInt64);
  EXPECT_THAT(Elements(RunV("aten.native_dropout.default",
                            {V(ints), Value::Float(0.5), Value::Bool(false)})
                           .list[0]
                           .tensor),
              ElementsAre(1, 2));
  EXPECT_EQ(RunError("aten.native_dropout.default",
                     {V(ints), Value::Float(0.5), Value::Bool(true)}),
            "aten.native_dropout.default: result type Float can't be cast to "
            "the desired output type Long");
  EXPECT_EQ(RunError("aten.native_dropout.default",
                     {V(x), Value::Float(1.5), Value::Bool(true)}),
            "aten.native_dropout.default: bernoulli_ expects p to be in [0, "
            "1], but got p=-0.5");
}

// Runs a graph of random ops with `seed`; its outputs' elements.
std::vector<std::vector<double>> RunRandomGraph(uint64_t seed) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(
      R"g(def forward(self, x: "f32[64][1]cpu"):
    rand: "f32[64][1]cpu" = torch.ops.aten.rand.default([64])
    rand_1: "f32[64][1]cpu" = torch.ops.aten.rand.default([64])
    randn: "f32[8, 8][8, 1]cpu" = torch.ops.aten.randn.default([8, 8])
    randperm: "i64[64][1]cpu" = torch.ops.aten.randperm.default(64)
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem: "f32[64][1]cpu" = native_dropout[0]
    return (rand, rand_1, randn, randperm, getitem)
)g");
  EXPECT_OK(g);
  if (!g.ok()) return {};
  Tensor x = *Tensor::Empty({64}, DType::kFloat32);
  ForEachIndex(x.sizes(),
               [&](absl::Span<const int64_t> i) { x.SetDouble(i, 1); });
  absl::StatusOr<Interpretation> r = Interpret(**g, {V(x)}, {}, seed);
  EXPECT_OK(r);
  std::vector<std::vector<double>> out;
  if (r.ok()) {
    for (const Value& v : r->outputs) out.push_back(Elements(v.tensor));
  }
  return out;
}

TEST(MiscOpsTest, RandomOpsAreSeededAndDeterministic) {
  std::vector<std::vector<double>> a = RunRandomGraph(Generator::kDefaultSeed);
  std::vector<std::vector<double>> b = RunRandomGraph(Generator::kDefaultSeed);
  std::vector<std::vector<double>> c = RunRandomGraph(12345);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(a, b);  // the same graph and seed: the same numbers
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NE(a[k], c[k]) << "output " << k;
  // Two calls in one run draw different numbers.
  EXPECT_NE(a[0], a[1]);
  // The default seed is Interpret's default.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g,
                       ParseGraph(R"g(def forward(self):
    rand: "f32[64][1]cpu" = torch.ops.aten.rand.default([64])
    return (rand,)
)g"));
  ASSERT_OK_AND_ASSIGN(Interpretation d, Interpret(*g, {}));
  EXPECT_EQ(Elements(d.outputs[0].tensor), a[0]);
  // The generator: a pure function of (seed, counter).
  Generator g1(7), g2(7);
  EXPECT_EQ(g1.Reserve(3), 0u);
  EXPECT_EQ(g1.Reserve(2), 3u);
  EXPECT_EQ(g1.offset(), 5u);
  EXPECT_EQ(g1.Bits(4), g2.Bits(4));
  EXPECT_NE(g1.Bits(4), g1.Bits(5));
  EXPECT_NE(Generator(8).Bits(4), g1.Bits(4));
}

}  // namespace
}  // namespace lathe::ir
