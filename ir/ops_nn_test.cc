// The neural-network ops of ops_nn.cc: upsampling, padding, distances and
// CPU flash attention (the embeddings' values are ops_embedding_test.cc's;
// their argument errors stay here) against values computed by PyTorch and
// captured as literals (generated once with PyTorch 2.15 from the same
// inputs: Seq() reproduces them), plus their argument errors. Every call goes
// through RunOp, which also checks that the meta function predicts the
// kernel's dtype, sizes and strides.

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

TEST(NnOpsTest, Upsample) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // bilinear with and without align_corners, from output_size and from
  // scale_factors (the scales set the source index); nearest up and down, with
  // scales.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::Bool(false), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 7}, DType::kFloat32,
           {-3.0,
            -1.749999761581421,
            0.25000011920928955,
            -1.000000238418579,
            -2.2499992847442627,
            -0.24999940395355225,
            1.0,
            -2.5999999046325684,
            -1.3499997854232788,
            0.6500001549720764,
            -0.600000262260437,
            -1.849999189376831,
            0.15000063180923462,
            1.4000000953674316,
            -2.0,
            -0.7499998211860657,
            1.2500001192092896,
            -3.5762786865234375e-07,
            -1.2499992847442627,
            0.7500005960464478,
            2.0,
            -1.3999998569488525,
            -0.14999964833259583,
            1.8500003814697266,
            0.5999997854232788,
            -0.64999920129776,
            1.3500007390975952,
            2.6000001430511475,
            -1.0,
            0.25000014901161194,
            2.25,
            0.9999997019767761,
            -0.2499992698431015,
            1.7500005960464478,
            3.0,
            0.0,
            -1.071428656578064,
            -2.7857143878936768,
            -1.2499995231628418,
            0.28571367263793945,
            -1.4285719394683838,
            -2.5,
            0.40000003576278687,
            -0.6714286804199219,
            -2.385714530944824,
            -0.8499996662139893,
            0.6857136487960815,
            -1.0285718441009521,
            -2.0999999046325684,
            1.0,
            -0.07142871618270874,
            -1.7857143878936768,
            -0.24999958276748657,
            1.2857136726379395,
            -0.4285719394683838,
            -1.5,
            1.6000001430511475,
            0.5285714268684387,
            -1.1857142448425293,
            0.3500005006790161,
            1.885713815689087,
            0.17142820358276367,
            -0.8999998569488525,
            2.0,
            0.9285712838172913,
            -0.7857143878936768,
            0.7500003576278687,
            2.2857136726379395,
            0.5714280605316162,
            -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::Bool(true), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 7}, DType::kFloat32,
           {-3.0, -1.25, 0.5,   -1.0, -2.5, -0.75, 1.0,  -2.5, -0.75, 1.0,
            -0.5, -2.0,  -0.25, 1.5,  -2.0, -0.25, 1.5,  0.0,  -1.5,  0.25,
            2.0,  -1.5,  0.25,  2.0,  0.5,  -1.0,  0.75, 2.5,  -1.0,  0.75,
            2.5,  1.0,   -0.5,  1.25, 3.0,  0.0,   -1.5, -3.0, -1.25, 0.5,
            -1.0, -2.5,  0.5,   -1.0, -2.5, -0.75, 1.0,  -0.5, -2.0,  1.0,
            -0.5, -2.0,  -0.25, 1.5,  0.0,  -1.5,  1.5,  0.0,  -1.5,  0.25,
            2.0,  0.5,   -1.0,  2.0,  0.5,  -1.0,  0.75, 2.5,  1.0,   -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Value::Bool(true), Floats({1.5, 2.0})};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 4, 8}, DType::kFloat32,
           {-3.0,
            -1.4999998807907104,
            2.9802322387695312e-08,
            -0.3571428060531616,
            -1.642857313156128,
            -2.000000238418579,
            -0.5000001192092896,
            1.0,
            -2.3333332538604736,
            -0.8333332538604736,
            0.6666667461395264,
            0.30952388048171997,
            -0.9761905670166016,
            -1.3333336114883423,
            0.16666650772094727,
            1.6666667461395264,
            -1.6666666269302368,
            -0.16666652262210846,
            1.3333333730697632,
            0.9761905074119568,
            -0.3095238208770752,
            -0.6666668653488159,
            0.8333332538604736,
            2.3333334922790527,
            -1.0,
            0.5,
            2.0,
            1.6428571939468384,
            0.3571428060531616,
            -2.384185791015625e-07,
            1.4999998807907104,
            3.0,
            0.0,
            -1.2857142686843872,
            -2.5714285373687744,
            -2.0,
            -0.4999999403953552,
            0.07142877578735352,
            -1.2142856121063232,
            -2.5,
            0.6666666865348816,
            -0.6190476417541504,
            -1.9047619104385376,
            -1.3333333730697632,
            0.16666677594184875,
            0.7380955219268799,
            -0.5476188659667969,
            -1.8333332538604736,
            1.3333333730697632,
            0.0476190447807312,
            -1.2380952835083008,
            -0.6666666269302368,
            0.833333432674408,
            1.4047621488571167,
            0.11904777586460114,
            -1.1666666269302368,
            2.0,
            0.7142856121063232,
            -0.5714285969734192,
            -5.960464477539063e-08,
            1.5000001192092896,
            2.0714287757873535,
            0.7857143878936768,
            -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Value::Bool(false), Floats({1.7, 0.6})};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 5, 2}, DType::kFloat32,
           {-1.8333333730697632,
            -2.5,
            -1.4509804248809814,
            -2.117647171020508,
            -0.8627450466156006,
            -1.5294116735458374,
            -0.27450981736183167,
            -0.9411764144897461,
            0.16666659712791443,
            -0.5,
            -0.9999999403953552,
            0.5,
            -0.6176470518112183,
            0.8823530077934265,
            -0.029411613941192627,
            1.4705883264541626,
            0.5588235855102539,
            2.058823585510254,
            1.0,
            2.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({2, 3}),
        Value::Bool(false), Value::None()};
    Value r = RunV("aten.upsample_bilinear2d.vec", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.1666667461395264, -0.75, 0.6666672229766846, -0.666666567325592,
            0.75, 2.1666672229766846, -0.2500000596046448, -1.0,
            -1.750000238418579, 1.25, 0.5, -0.2500004768371582},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({5, 7}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(
        r, {1, 2, 5, 7}, DType::kFloat32,
        {-3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  -3.0, -3.0, 0.5,  0.5,  -2.5,
         -2.5, 1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 2.0,  -2.0, -2.0, 1.5,
         1.5,  -1.5, -1.5, 2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5, 3.0,  0.0,
         0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5, 0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,
         -2.5, 1.0,  1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, 1.0,  1.0,  -2.0, -2.0,
         1.5,  1.5,  -1.5, 2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Ints({6, 8}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 2, 6, 8}, DType::kFloat32,
           {-3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  1.0,  -3.0, -3.0, 0.5,
            0.5,  -2.5, -2.5, 1.0,  1.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5,
            2.0,  2.0,  -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 2.0,  2.0,  -1.0,
            -1.0, 2.5,  2.5,  -0.5, -0.5, 3.0,  3.0,  -1.0, -1.0, 2.5,  2.5,
            -0.5, -0.5, 3.0,  3.0,  0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5,
            -2.5, 0.0,  0.0,  -3.0, -3.0, 0.5,  0.5,  -2.5, -2.5, 1.0,  1.0,
            -2.0, -2.0, 1.5,  1.5,  -1.5, -1.5, 1.0,  1.0,  -2.0, -2.0, 1.5,
            1.5,  -1.5, -1.5, 2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5,
            2.0,  2.0,  -1.0, -1.0, 2.5,  2.5,  -0.5, -0.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)), Value::None(),
        Floats({1.7, 0.6})};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 2, 5, 2}, DType::kFloat32,
           {-3.0, 0.5,  -3.0, 0.5,  -2.0, 1.5,  -2.0, 1.5,  -1.0, 2.5,
            0.0,  -3.0, 0.0,  -3.0, 1.0,  -2.0, 1.0,  -2.0, 2.0,  -1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 5, 5}, DType::kFloat32, 13, 6, 0.5)), Ints({3, 2}),
        Value::None()};
    Value r = RunV("aten.upsample_nearest2d.vec", args);
    Expect(r, {1, 1, 3, 2}, DType::kFloat32, {-3.0, -2.5, 1.5, 2.0, -2.5, -2.0},
           0.0001, true);
  }
}

TEST(NnOpsTest, Pad) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // reflection 1-d/2-d/3-d (borders reflect without repeating the edge; a
  // negative pad crops), replication 2-d/3-d, int64, unbatched.
  {
    std::vector<Value> args = {V(Seq({1, 2, 5}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({2, 3})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {1, 2, 10}, DType::kFloat32,
           {-1.0, 1.0, -2.5, 1.0, -1.0, 2.5,  0.5, 2.5,  -1.0, 1.0,
            0.0,  2.0, -1.5, 2.0, 0.0,  -2.0, 1.5, -2.0, 0.0,  2.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 5}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({-1, 2})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {2, 6}, DType::kFloat32,
           {1.0, -1.0, 2.5, 0.5, 2.5, -1.0, 2.0, 0.0, -2.0, 1.5, -2.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 2, 5}, DType::kInt64, 7, 3, 1)),
                               Ints({4, 1})};
    Value r = RunV("aten.reflection_pad1d.default", args);
    Expect(r, {1, 2, 10}, DType::kInt64,
           {-3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0,
            -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({1, 3, 4}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({1, 2, 2, 0})};
    Value r = RunV("aten.reflection_pad2d.default", args);
    Expect(r, {1, 5, 7}, DType::kFloat32,
           {1.5, -2.0, 1.5, -0.5, -2.5, -0.5, 1.5, -1.5, 0.5,  -1.5, 2.0, 0.0,
            2.0, -1.5, 1.0, -2.5, 1.0,  -1.0, 2.5, -1.0, 1.0,  -1.5, 0.5, -1.5,
            2.0, 0.0,  2.0, -1.5, 1.5,  -2.0, 1.5, -0.5, -2.5, -0.5, 1.5},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
        Ints({1, 1, 2, 0, 1, 1})};
    Value r = RunV("aten.reflection_pad3d.default", args);
    Expect(
        r, {1, 4, 5, 5}, DType::kFloat32,
        {-1.5, 0.5,  -1.5, 2.0,  -1.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -0.5, 1.5,
         -0.5, -2.5, -0.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -1.5, 0.5,  -1.5, 2.0,
         -1.5, 0.0,  2.0,  0.0,  -2.0, 0.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  1.0,
         -2.5, 1.0,  -1.0, 1.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  0.0,  2.0,  0.0,
         -2.0, 0.0,  -1.5, 0.5,  -1.5, 2.0,  -1.5, -1.0, 1.0,  -1.0, 2.5,  -1.0,
         -0.5, 1.5,  -0.5, -2.5, -0.5, -1.0, 1.0,  -1.0, 2.5,  -1.0, -1.5, 0.5,
         -1.5, 2.0,  -1.5, 0.0,  2.0,  0.0,  -2.0, 0.0,  0.5,  2.5,  0.5,  -1.5,
         0.5,  1.0,  -2.5, 1.0,  -1.0, 1.0,  0.5,  2.5,  0.5,  -1.5, 0.5,  0.0,
         2.0,  0.0,  -2.0, 0.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({2, 0, 1, 3})};
    Value r = RunV("aten.replication_pad2d.default", args);
    Expect(
        r, {1, 2, 7, 5}, DType::kFloat32,
        {-2.5, -2.5, -2.5, 1.0,  -1.0, -2.5, -2.5, -2.5, 1.0,  -1.0, 2.5,  2.5,
         2.5,  0.5,  -1.5, 2.0,  2.0,  2.0,  0.0,  -2.0, 2.0,  2.0,  2.0,  0.0,
         -2.0, 2.0,  2.0,  2.0,  0.0,  -2.0, 2.0,  2.0,  2.0,  0.0,  -2.0, 1.5,
         1.5,  1.5,  -0.5, -2.5, 1.5,  1.5,  1.5,  -0.5, -2.5, 1.0,  1.0,  1.0,
         -1.0, 2.5,  0.5,  0.5,  0.5,  -1.5, 2.0,  0.5,  0.5,  0.5,  -1.5, 2.0,
         0.5,  0.5,  0.5,  -1.5, 2.0,  0.5,  0.5,  0.5,  -1.5, 2.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                               Ints({-1, 2, 0, -2})};
    Value r = RunV("aten.replication_pad2d.default", args);
    Expect(r, {2, 1, 4}, DType::kFloat32,
           {1.0, -1.0, -1.0, -1.0, -0.5, -2.5, -2.5, -2.5}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 2, 3, 2}, DType::kFloat32, 11, 5, 0.5)),
        Ints({1, 0, 2, 1, 0, 2})};
    Value r = RunV("aten.replication_pad3d.default", args);
    Expect(r, {1, 1, 4, 6, 3}, DType::kFloat32,
           {-2.5, -2.5, 1.0,  -2.5, -2.5, 1.0,  -2.5, -2.5, 1.0,  -1.0, -1.0,
            2.5,  0.5,  0.5,  -1.5, 0.5,  0.5,  -1.5, 2.0,  2.0,  0.0,  2.0,
            2.0,  0.0,  2.0,  2.0,  0.0,  -2.0, -2.0, 1.5,  -0.5, -0.5, -2.5,
            -0.5, -0.5, -2.5, 2.0,  2.0,  0.0,  2.0,  2.0,  0.0,  2.0,  2.0,
            0.0,  -2.0, -2.0, 1.5,  -0.5, -0.5, -2.5, -0.5, -0.5, -2.5, 2.0,
            2.0,  0.0,  2.0,  2.0,  0.0,  2.0,  2.0,  0.0,  -2.0, -2.0, 1.5,
            -0.5, -0.5, -2.5, -0.5, -0.5, -2.5},
           0.0001, true);
  }
}

TEST(NnOpsTest, Distances) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // cdist with broadcast batch dims for p = 2, 1, 0, inf, 3; pdist for p =
  // 2, 1.5, 0, inf.
  {
    std::vector<Value> args = {
        V(Seq({2, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3, 2, 4}, DType::kFloat32, 11, 4, 0.5)), Value::Float(2.0),
        Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {2, 3, 3, 2}, DType::kFloat32,
           {3.1622776985168457, 6.595452785491943,  1.4142135381698608,
            5.787918567657471,  1.4142135381698608, 5.612485885620117,
            4.44409704208374,   7.176350116729736,  4.330127239227295,
            6.123724460601807,  5.074445724487305,  5.612485885620117,
            4.8218255043029785, 5.074445724487305,  4.27200174331665,
            4.330127239227295,  4.609772205352783,  4.44409704208374,
            7.449832439422607,  4.242640495300293,  6.745368957519531,
            2.4494898319244385, 6.595452785491943,  1.4142135381698608,
            5.267827033996582,  5.196152210235596,  4.9749369621276855,
            3.316624879837036,  5.4543561935424805, 1.7320507764816284,
            5.678908348083496,  5.93717098236084,   5.024937629699707,
            5.123475551605225,  5.123475551605225,  5.024937629699707},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(1.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {6.0, 11.0, 2.0, 11.0, 2.0, 11.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(0.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {4.0, 4.0, 2.0, 4.0, 2.0, 4.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 4}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat32, 11, 4, 0.5)),
                               Value::Float(kInf), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {2.0, 5.0, 1.0, 4.0, 1.0, 3.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 4}, DType::kFloat64, 13, 6, 0.5)),
                               V(Seq({2, 4}, DType::kFloat64, 11, 4, 0.5)),
                               Value::Float(3.0), Value::None()};
    Value r = RunV("aten._cdist_forward.default", args);
    Expect(r, {2, 3, 2}, DType::kFloat64,
           {2.6207413942088964, 5.774001751457727, 1.2599210498948732,
            4.791419857062784, 1.2599210498948732, 4.538759841617426,
            6.435254660429061, 3.530348335326063, 5.528774813678871,
            2.154434690031884, 5.30738261540007, 1.2599210498948732},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(2.0)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32,
           {6.184658527374268, 2.598076105117798, 7.842193603515625,
            5.338539123535156, 2.598076105117798, 6.184658527374268},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(1.5)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32,
           {7.3564772605896, 3.1201257705688477, 8.954895973205566,
            6.324629306793213, 3.1201257705688477, 7.3564772605896},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 5, 2, 0.5)),
                               Value::Float(0.0)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32, {3.0, 3.0, 3.0, 3.0, 3.0, 3.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::Float(kInf)};
    Value r = RunV("aten._pdist_forward.default", args);
    Expect(r, {6}, DType::kFloat32, {4.0, 1.5, 5.5, 4.0, 1.5, 4.0}, 0.0001,
           true);
  }
}

TEST(NnOpsErrorTest, UpsampleAndPad) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {x, Value::None(), Value::None()}),
            "aten.upsample_nearest2d.vec: Must specify exactly one of "
            "output_size and scale_factors");
  EXPECT_EQ(RunError("aten.upsample_bilinear2d.vec",
                     {V(Seq({2, 5}, DType::kFloat32, 11, 5, 0.5)), Ints({3, 3}),
                      Value::Bool(false), Value::None()}),
            "aten.upsample_bilinear2d.vec: It is expected input_size equals "
            "to 4, but got size 2");
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {V(Seq({1, 1, 2, 2}, DType::kInt64, 11, 5, 1)),
                      Ints({3, 3}), Value::None()}),
            "aten.upsample_nearest2d.vec: \"upsample_nearest2d_channels_last\" "
            "not implemented for 'Long'");
  // Scale factors whose output size is not positive (as PyTorch's message
  // says it), or no number: never an undefined conversion.
  EXPECT_EQ(RunError("aten.upsample_nearest2d.vec",
                     {x, Value::None(), Floats({-2, 1e-3})}),
            "aten.upsample_nearest2d.vec: Input and output sizes should be "
            "greater than 0, but got input (H: 5, W: 5) output (H: -10, W: "
            "0)");
  EXPECT_THAT(RunError("aten.upsample_nearest2d.vec",
                       {x, Value::None(), Floats({NAN, 1})}),
              HasSubstr("should be greater than 0, but got input (H: 5, W: "
                        "5) output (H: -9223372036854775808, W: 5)"));
  EXPECT_EQ(
      RunError("aten.reflection_pad1d.default",
               {V(Seq({1, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({3, 3})}),
      "aten.reflection_pad1d.default: Argument #4: Padding size should "
      "be less than the corresponding input dimension, but got: padding "
      "(3, 3) at dimension 1 of input [1, 3]");
  EXPECT_EQ(RunError("aten.reflection_pad2d.default",
                     {V(Seq({1, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                      Ints({1, 1, 3, 1})}),
            "aten.reflection_pad2d.default: Argument #6: Padding size should "
            "be less than the corresponding input dimension, but got: padding "
            "(3, 1) at dimension 1 of input [1, 3, 3]");
  EXPECT_EQ(
      RunError("aten.reflection_pad1d.default",
               {V(Seq({1, 3}, DType::kFloat32, 11, 5, 0.5)), Ints({-3, -1})}),
      "aten.reflection_pad1d.default: input (W: 3) is too small. "
      "Calculated output W: -1");
  EXPECT_EQ(RunError("aten.reflection_pad1d.default",
                     {V(Seq({3}, DType::kFloat32, 11, 5, 0.5)), Ints({1, 1})}),
            "aten.reflection_pad1d.default: Expected 2D or 3D (batch mode) "
            "tensor with possibly 0 batch size and other non-zero dimensions "
            "for input, but got: [3]");
  EXPECT_EQ(RunError("aten.replication_pad2d.default",
                     {V(Seq({1, 3, 3}, DType::kFloat32, 11, 5, 0.5)),
                      Ints({-2, -2, 1, 1})}),
            "aten.replication_pad2d.default: Calculated output H: 5 W: -1 "
            "must be >= 1 in every dimension (input H: 3, W: 3)");
  EXPECT_EQ(RunError("aten.replication_pad3d.default",
                     {V(Seq({1, 1, 2, 2}, DType::kBool, 2, 0, 1)),
                      Ints({1, 1, 1, 1, 1, 1})}),
            "aten.replication_pad3d.default: \"replication_pad3d\" not "
            "implemented for 'Bool'");
}

TEST(NnOpsErrorTest, EmbeddingsAndDistances) {
  Value w = V(Seq({5, 3}, DType::kFloat32, 11, 5, 0.5));
  Value idx = V(T({4}, {1, 2, 4, 1}, DType::kInt64));
  Value off = V(T({3}, {0, 2, 2}, DType::kInt64));
  EXPECT_EQ(RunError("aten.embedding_dense_backward.default",
                     {V(Seq({3, 4}, DType::kFloat32, 11, 5, 0.5)),
                      V(T({3}, {1, 2, 1})), Value::Int(5), Value::Int(-1),
                      Value::Bool(false)}),
            "aten.embedding_dense_backward.default: Expected tensor for "
            "argument #2 'indices' to have one of the following scalar types: "
            "Long, Int; but got torch.FloatTensor instead (while checking "
            "arguments for embedding_backward)");
  EXPECT_THAT(RunError("aten.embedding_dense_backward.default",
                       {V(Seq({3, 4}, DType::kFloat32, 11, 5, 0.5)),
                        V(T({3}, {1, 7, 1}, DType::kInt64)), Value::Int(5),
                        Value::Int(-1), Value::Bool(false)}),
              HasSubstr("index 7 is out of bounds"));
  auto bag = [&](Value indices, Value offsets, int64_t mode, Value psw) {
    return RunError(
        "aten._embedding_bag.default",
        {w, indices, offsets, Value::Bool(false), Value::Int(mode),
         Value::Bool(false), psw, Value::Bool(false), Value::Int(-1)});
  };
  EXPECT_EQ(bag(idx, off, 1, V(Seq({4}, DType::kFloat32, 11, 5, 0.5))),
            "aten._embedding_bag.default: embedding_bag: per_sample_weights "
            "only supported with mode='sum'");
  EXPECT_EQ(bag(idx, off, 3, Value::None()),
            "aten._embedding_bag.default: `mode` must be sum, mean, or max.");
  EXPECT_EQ(bag(V(T({1}, {0}, DType::kInt64)), off, 0, Value::None()),
            "aten._embedding_bag.default: offsets[-1] can not be greater than "
            "input's length 1 but got offsets[-1] of 2");
  EXPECT_EQ(bag(idx, V(T({2}, {1, 2}, DType::kInt64)), 0, Value::None()),
            "aten._embedding_bag.default: offsets[0] has to be 0, i.e., the "
            "first sequence in the mini-batch has to start from position 0. "
            "However, got 1");
  EXPECT_THAT(bag(V(T({2}, {1, 9}, DType::kInt64)), off, 0, Value::None()),
              HasSubstr("index 9 out of range [0, 5)"));
  auto cdist = [&](Value a, Value b, double p) {
    return RunError("aten._cdist_forward.default",
                    {a, b, Value::Float(p), Value::None()});
  };
  Value a = V(Seq({2, 3}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(cdist(a, V(Seq({4, 2}, DType::kFloat32, 11, 5, 0.5)), 2),
            "aten._cdist_forward.default: X1 and X2 must have the same number "
            "of columns. X1: 3 X2: 2");
  EXPECT_EQ(cdist(V(Seq({2, 3}, DType::kInt64, 11, 5, 1)),
                  V(Seq({4, 3}, DType::kInt64, 11, 5, 1)), 2),
            "aten._cdist_forward.default: cdist only supports floating-point "
            "dtypes, X1 got: Long");
  EXPECT_EQ(cdist(V(Seq({3}, DType::kFloat32, 11, 5, 1)), a, 2),
            "aten._cdist_forward.default: cdist only supports at least 2D "
            "tensors, X1 got: 1D");
  EXPECT_EQ(cdist(a, a, -1),
            "aten._cdist_forward.default: cdist only supports non-negative p "
            "values");
  EXPECT_EQ(
      RunError("aten._pdist_forward.default",
               {V(Seq({2, 3, 3}, DType::kFloat32, 11, 5, 1)), Value::Float(2)}),
      "aten._pdist_forward.default: pdist only supports 2D tensors, "
      "got: 3D");
  EXPECT_EQ(RunError("aten._pdist_forward.default", {a, Value::Float(-1)}),
            "aten._pdist_forward.default: pdist only supports non-negative p "
            "values");
}
// ---- Corpus ops: flash attention, upsampling, embedding_bag_forward_only
// (values captured from torch 2.15 on CPU). ------------------------------

TEST(NnOpsTest, FlashAttentionForCpu) {
  Tensor q = T({1, 1, 4, 2}, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8});
  Tensor k = T({1, 1, 3, 2}, {0.3, -0.1, 0.2, 0.5, -0.4, 0.6});
  Tensor v = T({1, 1, 3, 2}, {1, 2, -1, 0.5, 3, -2});
  const std::string op =
      "aten._scaled_dot_product_flash_attention_for_cpu.default";
  Value r = RunV(op, {V(q), V(k), V(v)});
  Expect(Out(r, 0), {1, 1, 4, 2}, DType::kFloat32,
         {0.9807487726211548, 0.14016903936862946, 1.1124162673950195,
          -0.061523448675870895, 0.855544924736023, 0.5213145017623901,
          0.8313760161399841, 0.16730467975139618},
         1e-5, true);
  Expect(Out(r, 1), {1, 1, 4}, DType::kFloat32,
         {1.1486245393753052, 1.1957775354385376, 0.9937063455581665,
          1.311884880065918},
         1e-5, true);
  ASSERT_OK_AND_ASSIGN(Value causal, RunOp(op, {V(q), V(k), V(v)},
                                           {{"is_causal", Value::Bool(true)},
                                            {"scale", Value::Float(0.5)}}));
  Expect(Out(causal, 0), {1, 1, 4, 2}, DType::kFloat32,
         {1, 2, -0.06739769130945206, 1.1994518041610718, 0.8924317955970764,
          0.41939133405685425, 0.8823801875114441, 0.16625775396823883},
         1e-5, true);
  Expect(Out(causal, 1), {1, 1, 4}, DType::kFloat32,
         {0.004999999888241291, 0.6979235410690308, 1.019327998161316,
          1.2476913928985596},
         1e-5, true);
  Tensor mask = *T({3}, {0, -1, 2}).AsStrided({4, 3}, {0, 1}, 0);
  ASSERT_OK_AND_ASSIGN(Value masked,
                       RunOp(op, {V(q), V(k), V(v)}, {{"attn_mask", V(mask)}}));
  Expect(Out(masked, 0), {1, 1, 4, 2}, DType::kFloat32,
         {2.6080892086029053, -1.4548908472061157, 2.682103395462036,
          -1.5701059103012085, 2.442438840866089, -1.1571012735366821,
          2.571458578109741, -1.435044288635254},
         1e-5, true);
  Expect(Out(masked, 1), {1, 1, 4}, DType::kFloat32,
         {2.2220957279205322, 2.3841116428375244, 1.864457368850708,
          2.317152500152588},
         1e-5, true);
  // Fully masked rows (every score -inf, by the mask or the causal fill and
  // the mask together): output 0 and logsumexp 0, as PyTorch's kernel
  // (torch 2.15: it takes such a row's max as 0 and its sum as 1).
  const double inf = std::numeric_limits<double>::infinity();
  Tensor rows =
      T({4, 3}, {0, -1, 2, -inf, -inf, -inf, 0, -inf, 1, -inf, -inf, -inf});
  ASSERT_OK_AND_ASSIGN(Value holes,
                       RunOp(op, {V(q), V(k), V(v)}, {{"attn_mask", V(rows)}}));
  Expect(Out(holes, 0), {1, 1, 4, 2}, DType::kFloat32,
         {2.6080892086029053, -1.4548908472061157, 0, 0, 2.223905324935913,
          -0.44781073927879333, 0, 0},
         1e-5, true);
  Expect(Out(holes, 1), {1, 1, 4}, DType::kFloat32,
         {2.2220957279205322, 0, 1.0951205492019653, 0}, 1e-5, true);
  Tensor first = T({4, 3}, {-inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  ASSERT_OK_AND_ASSIGN(
      Value causal_hole,
      RunOp(op, {V(q), V(k), V(v)},
            {{"is_causal", Value::Bool(true)}, {"attn_mask", V(first)}}));
  Expect(Out(causal_hole, 0), {1, 1, 4, 2}, DType::kFloat32,
         {0, 0, -0.0951705053448677, 1.1786221265792847, 0.8555448651313782,
          0.5213145017623901, 0.8313761353492737, 0.16730467975139618},
         1e-5, true);
  Expect(Out(causal_hole, 1), {1, 1, 4}, DType::kFloat32,
         {0, 0.7012320756912231, 0.9937063455581665, 1.311884880065918}, 1e-5,
         true);
  // PyTorch's layouts: a contiguous output, logsumexp as [B, L, H]
  // transposed (torch: strides (12, 1, 3) for [2, 3, 4]).
  Value big = RunV(op, {V(Seq({2, 3, 4, 8}, DType::kFloat32, 11, 5, 0.1)),
                        V(Seq({2, 3, 5, 8}, DType::kFloat32, 13, 6, 0.1)),
                        V(Seq({2, 3, 5, 8}, DType::kFloat32, 7, 3, 0.1))});
  EXPECT_EQ(Out(big, 0).tensor.strides(), (std::vector<int64_t>{96, 32, 8, 1}));
  EXPECT_EQ(Out(big, 1).tensor.strides(), (std::vector<int64_t>{12, 1, 3}));
}

// In bf16 the kernel rounds each weight (the exp before its division) to
// bf16 before the product with v: torch 2.15's output, which keeping the
// weights exact would miss in two elements (1.484375 for 1.4765625,
// 0.416015625 for 0.4140625).
TEST(NnOpsTest, FlashAttentionForCpuInBf16RoundsTheWeights) {
  Tensor q = T({1, 1, 2, 4}, {0.9, -1.3, 0.7, 2.1, 1.7, 0.2, -0.8, 0.5},
               DType::kBFloat16);
  Tensor k =
      T({1, 1, 5, 4}, {1.1, 0.3, -0.6, 0.9, -0.7, 1.9, 0.4,  -1.2, 0.8, -0.5,
                       1.3, 0.6, 2.2,  0.1, -0.3, 0.7, -1.5, 0.6,  0.9, 0.2},
        DType::kBFloat16);
  Tensor v =
      T({1, 1, 5, 4}, {1.3, -2.1, 0.7, 0.33, 0.9,  1.7, -1.1, 2.9, -0.45, 0.6,
                       2.3, -1.7, 1.9, -0.3, 0.15, 0.8, 0.7,  1.1, -2.6,  0.05},
        DType::kBFloat16);
  Value r = RunV("aten._scaled_dot_product_flash_attention_for_cpu.default",
                 {V(q), V(k), V(v)});
  EXPECT_THAT(Elements(Out(r, 0).tensor),
              ElementsAre(0.7421875, -0.2138671875, 1.0390625, -0.359375,
                          1.4765625, -0.6484375, 0.4140625, 0.5));
  EXPECT_EQ(Out(r, 1).tensor.dtype(), DType::kFloat32);
  EXPECT_NEAR(Elements(Out(r, 1).tensor)[0], 2.640941619873047, 1e-5);
  EXPECT_NEAR(Elements(Out(r, 1).tensor)[1], 2.707426071166992, 1e-5);
}

TEST(NnOpsTest, UpsampleNearest2dAndEmbeddingBagForwardOnly) {
  std::vector<double> six = {0, 1, 2, 3, 4, 5};
  Tensor u = T({1, 1, 2, 3}, six);
  Expect(RunV("aten.upsample_nearest2d.default", {V(u), Ints({3, 5})}),
         {1, 1, 3, 5}, DType::kFloat32,
         {0, 0, 1, 1, 2, 0, 0, 1, 1, 2, 3, 3, 4, 4, 5}, 0, true);
  // scales_h=0.9 picks rows by 1 / 0.9 instead of in / out.
  Expect(RunV("aten.upsample_nearest2d.default",
              {V(u), Ints({3, 5}), Value::Float(0.9)}),
         {1, 1, 3, 5}, DType::kFloat32,
         {0, 0, 1, 1, 2, 3, 3, 4, 4, 5, 3, 3, 4, 4, 5}, 0, true);
  Tensor w = T({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor ind = T({5}, {0, 2, 1, 3, 3}, DType::kInt64);
  Tensor off = T({2}, {0, 2}, DType::kInt64);
  Value mean = RunV("aten._embedding_bag_forward_only.default",
                    {V(w), V(ind), V(off), Value::Bool(false), Value::Int(1)});
  Expect(Out(mean, 0), {2, 2}, DType::kFloat32,
         {2, 3, 4.666666507720947, 5.666666507720947}, 1e-6, true);
  Value mx = RunV("aten._embedding_bag_forward_only.default",
                  {V(w), V(ind), V(off), Value::Bool(false), Value::Int(2)});
  Expect(Out(mx, 0), {2, 2}, DType::kFloat32, {4, 5, 6, 7}, 0, true);
  Expect(Out(mx, 3), {2, 2}, DType::kInt64, {2, 2, 3, 3}, 0, true);
}

TEST(NnOpsErrorTest, CorpusNnOps) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  // torch's messages.
  EXPECT_THAT(RunError("aten.native_batch_norm.default",
                       {V(x), Value::None(), Value::None(), Value::None(),
                        Value::None(), Value::Bool(false), Value::Float(0.1),
                        Value::Float(1e-5)}),
              HasSubstr("running_mean must be defined in evaluation mode"));
  EXPECT_THAT(RunError("aten.nll_loss_forward.default",
                       {V(x), V(T({2}, {0, 5}, DType::kInt64)), Value::None(),
                        Value::Int(1), Value::Int(-100)}),
              HasSubstr("Target 5 is out of bounds."));
  EXPECT_THAT(
      RunError("aten.nll_loss_forward.default",
               {V(x), V(T({2}, {0, 1}, DType::kInt32)), Value::None(),
                Value::Int(1), Value::Int(-100)}),
      HasSubstr("expected target dtype to be Long or Byte, but got Int"));
  EXPECT_THAT(RunError("aten.nll_loss_forward.default",
                       {V(x), V(T({3}, {0, 1, 1}, DType::kInt64)),
                        Value::None(), Value::Int(1), Value::Int(-100)}),
              HasSubstr("size mismatch (got input: [2, 3], target: [3])"));
  // torch's meta: a 1-d self takes a 0-d target, or a 1-d one of its size.
  EXPECT_EQ(RunError("aten.nll_loss_forward.default",
                     {V(T({5}, {1, 2, 3, 4, 5})), V(T({1}, {1}, DType::kInt64)),
                      Value::None(), Value::Int(1), Value::Int(-100)}),
            "aten.nll_loss_forward.default: size mismatch (got input: [5], "
            "target: [1])");
  // A 0-d or 1-d input has no channel dim: PyTorch's dim-range message.
  EXPECT_EQ(RunError("aten.native_batch_norm.default",
                     {V(T({}, {1})), Value::None(), Value::None(),
                      Value::None(), Value::None(), Value::Bool(true),
                      Value::Float(0.1), Value::Float(1e-5)}),
            "aten.native_batch_norm.default: Dimension out of range (expected "
            "to be in range of [-1, 0], but got 1)");
  EXPECT_THAT(
      RunError("aten.mse_loss.default", {V(T({2}, {1, 2}, DType::kInt64)),
                                         V(T({2}, {1, 2}, DType::kInt64))}),
      HasSubstr("\"mse_cpu\" not implemented for 'Long'"));
  Tensor q = T({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::string sdpa =
      "aten._scaled_dot_product_flash_attention_for_cpu.default";
  EXPECT_THAT(RunError(sdpa, {V(q), V(q), V(q), Value::Float(0.1)}),
              HasSubstr("dropout_p must be 0"));
  EXPECT_THAT(
      RunOp(sdpa, {V(q), V(q), V(q)},
            {{"attn_mask", V(T({2, 2}, {1, 0, 1, 1}, DType::kBool))}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Attention mask is the same data type as query")));
  EXPECT_THAT(
      RunError(sdpa, {V(q), V(T({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6})), V(q)}),
      HasSubstr("Q/K/V should have the same head size"));
}

}  // namespace
}  // namespace lathe::ir
