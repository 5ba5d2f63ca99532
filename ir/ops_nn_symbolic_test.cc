// The neural-network ops' meta functions on symbolic sizes (shape
// propagation: what stays symbolic, what is specialized with guards) and a
// small network (convolution, batch norm in training, max pool) through
// shape propagation and the interpreter.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/ops_nn_testing.h"
#include "ir/shape_prop.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Meta functions on symbolic sizes (shape propagation): simple size
// arithmetic stays symbolic; what needs numbers is specialized with guards.
class NnSymbolicTest : public ::testing::Test {
 protected:
  symbolic::Expr Sym(int64_t hint, int dim) {
    return env_.CreateSymbol(hint, symbolic::Source::Size(0, dim));
  }
  // Contiguous metadata of `sizes`.
  static Value Meta(std::vector<symbolic::Expr> sizes,
                    DType dtype = DType::kFloat32) {
    TensorMeta m;
    m.dtype = dtype;
    m.sizes = sizes;
    m.strides.assign(sizes.size(), symbolic::Int(1));
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
      m.strides[d] = symbolic::Mul(m.strides[d + 1], sizes[d + 1]);
    }
    m.storage_offset = symbolic::Int(0);
    return Value::OfMeta(std::move(m));
  }
  std::string MetaOf(const std::string& target, std::vector<Value> args) {
    const OpDef* op = OpRegistry::Global().Find(target);
    EXPECT_NE(op, nullptr) << target;
    if (op == nullptr) return "";
    absl::StatusOr<std::vector<Value>> bound =
        BindArguments(op->schema, std::move(args), {}, target);
    EXPECT_OK(bound);
    if (!bound.ok()) return "";
    absl::StatusOr<Value> out = op->meta(OpCall(*op, *bound, &env_));
    EXPECT_OK(out) << target;
    return out.ok() ? Describe(*out) : "";
  }
  symbolic::ShapeEnv env_;
};

TEST_F(NnSymbolicTest, OutputSizesStaySymbolicWhereTheyAreArithmetic) {
  symbolic::Expr s0 = Sym(2, 0), s1 = Sym(9, 2);
  symbolic::Expr three = symbolic::Int(3);
  // Convolution: (s1 + 2 - 3) // 2 + 1 for stride 2, padding 1, kernel 3.
  EXPECT_THAT(
      MetaOf("aten.convolution.default",
             {Meta({s0, three, s1}), Meta({symbolic::Int(4), three, three}),
              Value::None(), Ints({2}), Ints({1}), Ints({1}),
              Value::Bool(false), Ints({0}), Value::Int(1)}),
      HasSubstr("f32[s0, 4, ((s1 - 1)//2) + 1]"));
  // Transposed: (s1 - 1) * 2 - 2 + 3 + 1.
  EXPECT_THAT(
      MetaOf("aten.convolution.default",
             {Meta({s0, three, s1}), Meta({three, symbolic::Int(2), three}),
              Value::None(), Ints({2}), Ints({1}), Ints({1}), Value::Bool(true),
              Ints({1}), Value::Int(1)}),
      HasSubstr("f32[s0, 2, 2*s1]"));
  EXPECT_THAT(MetaOf("aten.reflection_pad1d.default",
                     {Meta({s0, three, s1}), Ints({2, 1})}),
              HasSubstr("f32[s0, 3, s1 + 3]"));
  EXPECT_THAT(MetaOf("aten._adaptive_avg_pool2d.default",
                     {Meta({s0, three, s1, s1}), Ints({2, 2})}),
              HasSubstr("f32[s0, 3, 2, 2]"));
  EXPECT_THAT(
      MetaOf("aten._native_batch_norm_legit.no_stats",
             {Meta({s0, three, s1}), Value::None(), Value::None(),
              Value::Bool(true), Value::Float(0.1), Value::Float(1e-5)}),
      HasSubstr("(f32[s0, 3, s1]"));
  EXPECT_THAT(MetaOf("aten._pdist_forward.default",
                     {Meta({s1, three}), Value::Float(2)}),
              HasSubstr("f32[(s1*(s1 - 1)//2)]"));
  EXPECT_THAT(MetaOf("aten._cdist_forward.default",
                     {Meta({s0, s1, three}), Meta({symbolic::Int(4), three}),
                      Value::Float(2), Value::None()}),
              HasSubstr("f32[s0, s1, 4]"));
  EXPECT_THAT(MetaOf("aten.embedding_dense_backward.default",
                     {Meta({s0, three}), Meta({s0}, DType::kInt64),
                      Value::Int(7), Value::Int(-1), Value::Bool(false)}),
              HasSubstr("f32[7, 3]"));
  // Pooling keeps the spatial sizes symbolic, ceil_mode too (its
  // correction, (out - 1) * stride >= in + padding, decided under a guard).
  EXPECT_THAT(MetaOf("aten.max_pool2d_with_indices.default",
                     {Meta({s0, three, s1, s1}), Ints({2, 2}), Ints({2, 2}),
                      Ints({0, 0}), Ints({1, 1}), Value::Bool(true)}),
              HasSubstr("(f32[s0, 3, ((s1 - 1)//2) + 1, ((s1 - 1)//2) + 1]"));
  EXPECT_THAT(MetaOf("aten.avg_pool2d.default",
                     {Meta({s0, three, s1, s1}), Ints({3, 3}), Ints({2, 2}),
                      Ints({1, 1}), Value::Bool(false), Value::Bool(true),
                      Value::None()}),
              HasSubstr("f32[s0, 3, ((s1 - 1)//2) + 1, ((s1 - 1)//2) + 1]"));
}

TEST_F(NnSymbolicTest, AWeightGradientsConvolutionIsNotSpecialized) {
  // convolution_backward's weight gradient is a convolution whose channels
  // are the batch and whose kernel is the gradient's spatial size: both
  // symbolic under dynamic=True. Its output sizes stay symbolic and no
  // guard pins a size to its hint (which recompiled every batch).
  symbolic::Expr n = env_.CreateSymbol(6, symbolic::Source::Size(0, 0));
  symbolic::Expr h = env_.CreateSymbol(16, symbolic::Source::Size(0, 2));
  symbolic::Expr three = symbolic::Int(3), eight = symbolic::Int(8);
  symbolic::Expr k = symbolic::Add(h, symbolic::Int(-2));  // a 3x3 valid conv
  // input [3, n, h, h] (the forward's input, channels first), weight
  // [8, n, k, k] (the output gradient, channels first).
  std::string m =
      MetaOf("aten.convolution.default",
             {Meta({three, n, h, h}), Meta({eight, n, k, k}), Value::None(),
              Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
              Ints({0, 0}), Value::Int(1)});
  EXPECT_THAT(m, HasSubstr("f32[3, 8, 3, 3]"));
  for (const symbolic::Expr& g : env_.guards()) {
    EXPECT_THAT(symbolic::ToString(g),
                Not(AnyOf(HasSubstr("== 6"), HasSubstr("== 16"))));
  }
  // Channels that do not match are still refused, with the sizes.
  const OpDef* op = OpRegistry::Global().Find("aten.convolution.default");
  ASSERT_NE(op, nullptr);
  absl::StatusOr<std::vector<Value>> bound =
      BindArguments(op->schema,
                    {Meta({three, n, h, h}), Meta({eight, h, k, k}),
                     Value::None(), Ints({1, 1}), Ints({0, 0}), Ints({1, 1}),
                     Value::Bool(false), Ints({0, 0}), Value::Int(1)},
                    {}, "conv");
  ASSERT_OK(bound);
  EXPECT_THAT(op->meta(OpCall(*op, *bound, &env_)).status().message(),
              HasSubstr("to have s1 channels, but got s0 channels instead"));
}

TEST_F(NnSymbolicTest, BatchSizesNeedNoHint) {
  // A batch size without a value (as a graph's unhinted s0): meta functions
  // must not ask for its number.
  symbolic::Expr b = env_.CreateUnbackedSizeLike();
  std::string u = symbolic::ToString(b);
  symbolic::Expr two = symbolic::Int(2), three = symbolic::Int(3),
                 four = symbolic::Int(4);
  Value x = Meta({b, two, four, four});
  auto has_batch = [&](const std::string& d) {
    EXPECT_THAT(d, HasSubstr(absl::StrCat("[", u, ", "))) << d;
  };
  has_batch(MetaOf("aten.convolution.default",
                   {x, Meta({three, two, three, three}), Value::None(),
                    Ints({1, 1}), Ints({1, 1}), Ints({1, 1}),
                    Value::Bool(false), Ints({0, 0}), Value::Int(1)}));
  has_batch(MetaOf(
      "aten.convolution_backward.default",
      {Meta({b, three, four, four}), x, Meta({three, two, three, three}),
       Ints({3}), Ints({1, 1}), Ints({1, 1}), Ints({1, 1}), Value::Bool(false),
       Ints({0, 0}), Value::Int(1), Bools({true, true, true})}));
  has_batch(MetaOf("aten.max_pool2d_with_indices.default",
                   {x, Ints({2, 2}), Ints({}), Ints({0, 0}), Ints({1, 1}),
                    Value::Bool(true)}));
  has_batch(MetaOf("aten.max_pool2d_with_indices_backward.default",
                   {Meta({b, two, two, two}), x, Ints({2, 2}), Ints({2, 2}),
                    Ints({0, 0}), Ints({1, 1}), Value::Bool(false),
                    Meta({b, two, two, two}, DType::kInt64)}));
  has_batch(MetaOf("aten.avg_pool2d.default",
                   {x, Ints({3, 3}), Ints({2, 2}), Ints({1, 1}),
                    Value::Bool(true), Value::Bool(false), Value::None()}));
  has_batch(MetaOf(
      "aten.avg_pool2d_backward.default",
      {Meta({b, two, two, two}), x, Ints({2, 2}), Ints({2, 2}), Ints({0, 0}),
       Value::Bool(false), Value::Bool(true), Value::None()}));
  has_batch(MetaOf("aten._adaptive_avg_pool2d.default", {x, Ints({3, 3})}));
  has_batch(MetaOf("aten._adaptive_avg_pool2d_backward.default",
                   {Meta({b, two, three, three}), x}));
  has_batch(MetaOf("aten._native_batch_norm_legit.no_stats",
                   {x, Value::None(), Value::None(), Value::Bool(true),
                    Value::Float(0.1), Value::Float(1e-5)}));
  has_batch(
      MetaOf("aten.native_group_norm.default",
             {x, Value::None(), Value::None(), Value::Number(b), Value::Int(2),
              Value::Int(16), Value::Int(2), Value::Float(1e-5)}));
  has_batch(MetaOf("aten.native_group_norm_backward.default",
                   {x, x, Meta({b, two}), Meta({b, two}), Value::None(),
                    Value::Number(b), Value::Int(2), Value::Int(16),
                    Value::Int(2), Bools({true, true, true})}));
  has_batch(MetaOf(
      "aten.native_layer_norm_backward.default",
      {x, x, Ints({4, 4}), Meta({b, two, symbolic::Int(1), symbolic::Int(1)}),
       Meta({b, two, symbolic::Int(1), symbolic::Int(1)}), Value::None(),
       Value::None(), Bools({true, false, false})}));
  has_batch(MetaOf("aten.upsample_bilinear2d.vec",
                   {x, Ints({5, 7}), Value::Bool(false), Value::None()}));
  has_batch(MetaOf("aten.upsample_nearest2d.vec",
                   {x, Value::None(), Floats({2.0, 1.5})}));
  has_batch(MetaOf("aten.reflection_pad2d.default", {x, Ints({1, 2, 3, 0})}));
  has_batch(MetaOf("aten.replication_pad2d.default", {x, Ints({1, 2, 3, 0})}));
  has_batch(MetaOf("aten.col2im.default",
                   {Meta({b, symbolic::Int(8), symbolic::Int(9)}), Ints({4, 4}),
                    Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}));
  has_batch(MetaOf("aten.grid_sampler_2d.default",
                   {x, Meta({b, three, three, two}), Value::Int(0),
                    Value::Int(0), Value::Bool(false)}));
  has_batch(MetaOf("aten._cdist_forward.default",
                   {Meta({b, three, four}), Meta({two, four}), Value::Float(2),
                    Value::None()}));
  // Data-dependent counts: the embedding ops' index counts.
  EXPECT_THAT(MetaOf("aten.embedding_dense_backward.default",
                     {Meta({b, three}), Meta({b}, DType::kInt64), Value::Int(7),
                      Value::Int(-1), Value::Bool(false)}),
              HasSubstr("f32[7, 3]"));
  EXPECT_THAT(MetaOf("aten._embedding_bag.default",
                     {Meta({symbolic::Int(5), three}), Meta({b}, DType::kInt64),
                      Meta({four}, DType::kInt64), Value::Bool(false),
                      Value::Int(1), Value::Bool(false), Value::None(),
                      Value::Bool(true), Value::Int(-1)}),
              HasSubstr(absl::StrCat("(f32[3, 3][3, 1]cpu+0, i64[", u, "]")));
}

// A small network through shape propagation (dynamic batch) and the
// interpreter: batch norm in training mode writes its running statistics
// into the graph's inputs, which the interpreter reports as mutated.
constexpr char kConvBnPool[] = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0, 2, 6, 6][72, 36, 6, 1]cpu", w: "f32[3, 2, 3, 3][18, 9, 3, 1]cpu", rm: "f32[3][1]cpu", rv: "f32[3][1]cpu"):
        convolution: "f32[s0, 3, 6, 6][108, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  x = w = None
        _native_batch_norm_legit = torch.ops.aten._native_batch_norm_legit.default(convolution, None, None, rm, rv, True, 0.1, 1e-05);  convolution = rm = rv = None
        getitem: "f32[s0, 3, 6, 6][108, 36, 6, 1]cpu" = _native_batch_norm_legit[0];  _native_batch_norm_legit = None
        max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(getitem, [2, 2], [2, 2]);  getitem = None
        getitem_1: "f32[s0, 3, 3, 3][27, 9, 3, 1]cpu" = max_pool2d_with_indices[0];  max_pool2d_with_indices = None
        return (getitem_1,)
)";

TEST(NnGraphTest, ConvBatchNormPoolPropagatesAndRuns) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kConvBnPool));
  symbolic::ShapeEnv env;
  ASSERT_OK(PropagateShapes(*g, env));
  EXPECT_EQ(g->Find("getitem_1")->meta().tensor.ToAnnotation(),
            "f32[s0, 3, 3, 3][27, 9, 3, 1]cpu");
  Tensor x = Seq({2, 2, 6, 6}, DType::kFloat32, 13, 6, 0.5);
  Tensor w = Seq({3, 2, 3, 3}, DType::kFloat32, 7, 3, 0.5);
  Tensor rm = T({3}, {0, 0, 0}), rv = T({3}, {1, 1, 1});
  ASSERT_OK_AND_ASSIGN(Interpretation r,
                       Interpret(*g, {V(x), V(w), V(rm), V(rv)}));
  EXPECT_EQ(r.outputs[0].tensor.ToString(), "f32[2, 3, 3, 3][27, 9, 3, 1]cpu");
  EXPECT_EQ(r.mutated_inputs, (std::vector<bool>{false, false, true, true}));
  // The running statistics moved by momentum 0.1 towards the batch's.
  Value conv =
      *RunOp("aten.convolution.default",
             {V(x), V(w), Value::None(), Ints({1, 1}), Ints({1, 1}),
              Ints({1, 1}), Value::Bool(false), Ints({0, 0}), Value::Int(1)});
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, ss = 0, n = 2 * 36;
    ForEachIndex(conv.tensor.sizes(), [&](absl::Span<const int64_t> i) {
      if (i[1] == c) sum += conv.tensor.GetDouble(i);
    });
    double mean = sum / n;
    ForEachIndex(conv.tensor.sizes(), [&](absl::Span<const int64_t> i) {
      if (i[1] == c) {
        double d = conv.tensor.GetDouble(i) - mean;
        ss += d * d;
      }
    });
    EXPECT_NEAR(rm.GetDouble({c}), 0.1 * mean, 1e-5);
    EXPECT_NEAR(rv.GetDouble({c}), 0.9 + 0.1 * ss / (n - 1), 1e-4);
  }
}

}  // namespace
}  // namespace lathe::ir
