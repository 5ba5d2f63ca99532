// The normalization ops (ops_norm.cc): batch, group and layer norm against
// values computed by PyTorch and captured as literals (generated once with
// PyTorch 2.15 from the same inputs: Seq() reproduces them), plus their
// argument errors. Every call goes through RunOp, which also checks that the
// meta function predicts the kernel's dtype, sizes and strides.

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

TEST(NnOpsTest, BatchNorm) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // training updates running_mean/running_var in place (unbiased variance);
  // eval uses running stats and gives empty stats; no_stats; no_training;
  // float16 input with float32 running stats keeps float32 stats.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Bool(true),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {0.06694567203521729,  -0.991352915763855,  -0.08423984050750732,
            -1.1425384283065796,  -0.5669456720352173, 0.491352915763855,
            -0.4157601594924927,  0.6425384283065796,  -1.2008370161056519,
            1.974058747291565,    -0.747280478477478,  2.427615165710449,
            -0.8401674032211304,  0.06694567203521729, -0.991352915763855,
            -0.08423984050750732, 0.34016740322113037, -0.5669456720352173,
            0.491352915763855,    -0.4157601594924927, 1.5205022096633911,
            -1.2008370161056519,  1.974058747291565,   -0.747280478477478},
           0.0001, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-1.125, -0.125, 0.875}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.6047420501708984, 0.6047420501708984, 0.6047420501708984}, 0.0001,
           true);
    Expect(args[3], {3}, DType::kFloat32,
           {-1.0124999284744263, -0.012500000186264515, 0.9874999523162842},
           0.0001, true);
    Expect(args[4], {3}, DType::kFloat32,
           {1.212499976158142, 0.762499988079071, 2.112499952316284}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 1, 0.5)),
        Value::None(),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Bool(false),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {0.9999949932098389,   -0.7499962449073792, 0.7499962449073792,
            -0.9999949932098389,  -1.4141993522644043, 1.0606495141983032,
            -1.0606495141983032,  1.4141993522644043,  -2.1213150024414062,
            1.5909862518310547,   -1.5909862518310547, 2.1213150024414062,
            -0.49999749660491943, 0.9999949932098389,  -0.7499962449073792,
            0.7499962449073792,   0.7070996761322021,  -1.4141993522644043,
            1.0606495141983032,   -1.0606495141983032, 1.0606575012207031,
            -2.1213150024414062,  1.5909862518310547,  -1.5909862518310547},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(Out(r, 2), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(args[3], {3}, DType::kFloat32, {-1.0, 0.0, 1.0}, 0.0001, true);
    Expect(args[4], {3}, DType::kFloat32, {1.0, 0.5, 2.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               Value::None(),
                               V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
                               Value::Bool(true),
                               Value::Float(0.1),
                               Value::Float(0.001)};
    Value r = RunV("aten._native_batch_norm_legit.no_stats", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.7873115539550781, 0.34291648864746094, -0.7873115539550781,
            0.0851416289806366, -1.3716659545898438, 1.085141658782959,
            -1.085141658782959, 1.3716659545898438, -0.0851416289806366,
            0.7873115539550781, -0.34291648864746094, 1.7873115539550781},
           0.0001, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-0.25, 0.0, 0.25}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.4681133031845093, 0.6858329772949219, 0.4681133031845093}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 2, 2}, DType::kFloat32, 13, 6, 0.5)),
        Value::None(),
        V(Seq({3}, DType::kFloat32, 3, 1, 0.5)),
        V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
        V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
        Value::Float(0.1),
        Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit_no_training.default", args);
    Expect(Out(r, 0), {2, 3, 2, 2}, DType::kFloat32,
           {-2.4999899864196777, 0.9999924898147583,  -1.9999924898147583,
            1.4999899864196777,  -2.8283987045288086, 2.1212990283966064,
            -2.1212990283966064, 2.8283987045288086,  -0.9142099618911743,
            1.5606575012207031,  -0.5606575012207031, 1.9142099618911743,
            0.49999499320983887, -2.4999899864196777, 0.9999924898147583,
            -1.9999924898147583, 1.4141993522644043,  -2.8283987045288086,
            2.1212990283966064,  -2.1212990283966064, 1.2071049213409424,
            -0.9142099618911743, 1.5606575012207031,  -0.5606575012207031},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kFloat32, {}, 0.0001, true);
    Expect(Out(r, 2), {0}, DType::kFloat32, {}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({2, 3, 2}, DType::kFloat16, 13, 6, 0.5)),
                               Value::None(),
                               Value::None(),
                               V(Seq({3}, DType::kFloat32, 5, 2, 0.5)),
                               V(T({3}, {1.0, 0.5, 2.0}, DType::kFloat32)),
                               Value::Bool(true),
                               Value::Float(0.3),
                               Value::Float(1e-05)};
    Value r = RunV("aten._native_batch_norm_legit.default", args);
    Expect(Out(r, 0), {2, 3, 2}, DType::kFloat16,
           {-1.3134765625, 0.525390625, -1.3134765625, 0.525390625,
            -1.3134765625, 0.525390625, -0.525390625, 1.3134765625,
            -0.525390625, 1.3134765625, -0.525390625, 1.3134765625},
           0.01, true);
    Expect(Out(r, 1), {3}, DType::kFloat32, {-0.5, 0.0, 0.5}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kFloat32,
           {0.5252249836921692, 0.5252249836921692, 0.5252249836921692}, 0.0001,
           true);
    Expect(args[3], {3}, DType::kFloat32,
           {-0.8500000238418579, 0.0, 0.8500000238418579}, 0.0001, true);
    Expect(args[4], {3}, DType::kFloat32,
           {2.1500000953674316, 1.8000000715255737, 2.8499999046325684}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, GroupNorm) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // forward with weight and bias; backward with all outputs (and without
  // weight).
  {
    std::vector<Value> args = {V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
                               V(Seq({4}, DType::kFloat32, 5, 1, 0.5)),
                               V(Seq({4}, DType::kFloat32, 3, 1, 0.5)),
                               Value::Int(2),
                               Value::Int(4),
                               Value::Int(3),
                               Value::Int(2),
                               Value::Float(1e-05)};
    Value r = RunV("aten.native_group_norm.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.1260465681552887,
            -0.8478036522865295,
            -0.013074889779090881,
            0.4869250953197479,
            -0.34780365228652954,
            0.6260465383529663,
            -1.378139615058899,
            1.5434108972549438,
            -0.9607752561569214,
            -0.5,
            -0.5,
            -0.5,
            -0.8216331005096436,
            0.1432662010192871,
            -0.9824496507644653,
            -0.48244965076446533,
            0.6432662010192871,
            -0.32163310050964355,
            1.4648993015289307,
            -1.4297986030578613,
            1.947348952293396,
            -0.5,
            -0.5,
            -0.5},
           0.0001, true);
    Expect(Out(r, 1), {2, 2}, DType::kFloat32, {-0.75, 0.75, -1.0, 0.5}, 0.0001,
           true);
    Expect(Out(r, 2), {2, 2}, DType::kFloat32,
           {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
            0.6432662010192871},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 6, 2, 2}, DType::kFloat32, 17, 8, 0.5)),
        Value::None(),
        Value::None(),
        Value::Int(1),
        Value::Int(6),
        Value::Int(4),
        Value::Int(3),
        Value::Float(0.01)};
    Value r = RunV("aten.native_group_norm.default", args);
    Expect(Out(r, 0), {1, 6, 2, 2}, DType::kFloat32,
           {-1.422711968421936,   -0.09484746307134628, 1.2330169677734375,
            -0.6639322638511658,  0.6639322638511658,   -1.2330169677734375,
            0.09484746307134628,  1.422711968421936,    -0.6855029463768005,
            0.7909649610519409,   -1.3182748556137085,  0.15819299221038818,
            1.6346608400344849,   -0.47457897663116455, 1.0018888711929321,
            -1.1073509454727173,  0.679518461227417,    -1.4949406385421753,
            0.027180738747119904, 1.549302101135254,    -0.6251569986343384,
            0.8969643712043762,   -1.2774946689605713,  0.24462664127349854},
           0.0001, true);
    Expect(Out(r, 1), {1, 3}, DType::kFloat32, {-0.25, 0.125, -0.5625}, 0.0001,
           true);
    Expect(Out(r, 2), {1, 3}, DType::kFloat32,
           {0.37938985228538513, 0.42184796929359436, 0.43489181995391846},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 4, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({2, 2}, {-0.75, 0.75, -1.0, 0.5}, DType::kFloat32)),
        V(T({2, 2},
            {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
             0.6432662010192871},
            DType::kFloat32)),
        V(Seq({4}, DType::kFloat32, 5, 1, 0.5)),
        Value::Int(2),
        Value::Int(4),
        Value::Int(3),
        Value::Int(2),
        Bools({true, true, true})};
    Value r = RunV("aten.native_group_norm_backward.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.1507905125617981,   0.5654609799385071,  0.21002915501594543,
            -0.21002915501594543, -0.5654609799385071, -0.1507905125617981,
            -0.2261856198310852,  -0.8481913208961487, -0.3150436282157898,
            0.31504374742507935,  0.848191499710083,   0.22618573904037476,
            0.4491773843765259,   0.5489941835403442,  0.43254125118255615,
            -0.43254128098487854, -0.5489941835403442, -0.44917741417884827,
            -0.6737660765647888,  -0.8234912753105164, -0.6488118767738342,
            0.6488118767738342,   0.8234912157058716,  0.6737660765647888},
           0.0001, true);
    Expect(Out(r, 1), {4}, DType::kFloat32,
           {1.8130544424057007, -1.8130544424057007, 1.8130544424057007,
            -1.8130544424057007},
           0.0001, true);
    Expect(Out(r, 2), {4}, DType::kFloat32, {-9.0, -9.0, -9.0, -9.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 4, 3}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 4, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({2, 2}, {-0.75, 0.75, -1.0, 0.5}, DType::kFloat32)),
        V(T({2, 2},
            {0.5564858317375183, 0.5564858317375183, 0.6432662010192871,
             0.6432662010192871},
            DType::kFloat32)),
        Value::None(),
        Value::Int(2),
        Value::Int(4),
        Value::Int(3),
        Value::Int(2),
        Bools({true, false, true})};
    Value r = RunV("aten.native_group_norm_backward.default", args);
    Expect(Out(r, 0), {2, 4, 3}, DType::kFloat32,
           {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
           0.0001, true);
    EXPECT_TRUE(Out(r, 1).is_none());
    Expect(Out(r, 2), {4}, DType::kFloat32, {-9.0, -9.0, -9.0, -9.0}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, LayerNormBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // mean/rstd from PyTorch's native_layer_norm; all outputs with weight and
  // bias; input gradient only without weight.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        Ints({3, 4}),
        V(T({2, 1, 1}, {-2.438371815571827e-08, -0.2499999850988388},
            DType::kFloat32)),
        V(T({2, 1, 1}, {0.5135518908500671, 0.5793644785881042},
            DType::kFloat32)),
        V(Seq({3, 4}, DType::kFloat32, 5, 1, 0.5)),
        V(Seq({3, 4}, DType::kFloat32, 3, 1, 0.5)),
        Bools({true, true, true})};
    Value r = RunV("aten.native_layer_norm_backward.default", args);
    Expect(Out(r, 0), {2, 3, 4}, DType::kFloat32,
           {0.6172500848770142,   -0.04938000440597534, -0.9085915088653564,
            0.3505978584289551,   -0.5086137056350708,  0.7505757212638855,
            -0.10863584280014038, -0.7752659320831299,  0.29134202003479004,
            -0.37528806924819946, 0.6913198828697205,   0.024689793586730957,
            0.7875102758407593,   0.02785375714302063,  -0.9688147306442261,
            0.44414541125297546,  -0.552523136138916,   0.8604370355606079,
            -0.1362314522266388,  -0.895888090133667,   0.28006020188331604,
            -0.479596346616745,   0.6963518857955933,   -0.06330469250679016},
           0.0001, true);
    Expect(Out(r, 1), {3, 4}, DType::kFloat32,
           {2.093721866607666, 2.0047144889831543, 1.2740346193313599,
            1.1850272417068481, 0.4543471336364746, 0.365339994430542,
            -0.36534011363983154, -0.4543471336364746, -1.1850272417068481,
            -1.2740345001220703, -2.0047144889831543, -2.093721866607666},
           0.0001, true);
    Expect(Out(r, 2), {3, 4}, DType::kFloat32,
           {-3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0,
            -3.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(Seq({2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        Ints({4}),
        V(T({2, 3, 1}, {-1.0, 0.0, 1.0, -1.25, -0.25, 0.7500000596046448},
            DType::kFloat32)),
        V(T({2, 3, 1},
            {0.5656844973564148, 0.5656844973564148, 0.5656844973564148,
             0.6575945615768433, 0.6575945615768433, 0.6575945615768433},
            DType::kFloat32)),
        Value::None(),
        Value::None(),
        Bools({true, false, false})};
    Value r = RunV("aten.native_layer_norm_backward.default", args);
    Expect(Out(r, 0), {2, 3, 4}, DType::kFloat32,
           {0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            -5.960464477539063e-08,
            0.0,
            -5.960464477539063e-08,
            0.0},
           0.0001, true);
    EXPECT_TRUE(Out(r, 1).is_none());
    EXPECT_TRUE(Out(r, 2).is_none());
  }
}

TEST(NnOpsErrorTest, Normalization) {
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  EXPECT_EQ(RunError("aten._native_batch_norm_legit.no_stats",
                     {x, Value::None(), Value::None(), Value::Bool(false),
                      Value::Float(0.1), Value::Float(1e-5)}),
            "aten._native_batch_norm_legit.no_stats: running_mean must be "
            "defined in evaluation mode");
  EXPECT_EQ(RunError("aten._native_batch_norm_legit.no_stats",
                     {V(Seq({1, 2}, DType::kInt64, 11, 5, 1)), Value::None(),
                      Value::None(), Value::Bool(true), Value::Float(0.1),
                      Value::Float(1e-5)}),
            "aten._native_batch_norm_legit.no_stats: \"batch_norm\" not "
            "implemented for 'Long'");
  EXPECT_EQ(RunError("aten._native_batch_norm_legit_no_training.default",
                     {x, Value::None(), Value::None(),
                      V(Seq({3}, DType::kFloat32, 11, 5, 1)),
                      V(Seq({2}, DType::kFloat32, 11, 5, 1)), Value::Float(0.1),
                      Value::Float(1e-5)}),
            "aten._native_batch_norm_legit_no_training.default: running_mean "
            "should contain 2 elements not 3");
  EXPECT_EQ(
      RunError("aten.native_group_norm.default",
               {x, Value::None(), Value::None(), Value::Int(1), Value::Int(2),
                Value::Int(25), Value::Int(3), Value::Float(1e-5)}),
      "aten.native_group_norm.default: Expected number of channels in "
      "input to be divisible by num_groups, but got input of shape [1, "
      "2, 5, 5] and num_groups=3");
  Value g = V(Seq({2, 3}, DType::kFloat32, 11, 5, 0.5));
  Value stat = V(Seq({2, 1}, DType::kFloat32, 3, 0, 1));
  EXPECT_THAT(RunError("aten.native_layer_norm_backward.default",
                       {g, g, Ints({3}), stat, stat, Value::None(),
                        Value::None(), Bools({true, true, false})}),
              HasSubstr("output_mask[1] asks for the gradient of weight, "
                        "which is None"));
  EXPECT_THAT(RunError("aten.native_layer_norm_backward.default",
                       {g, g, Ints({2}), stat, stat, Value::None(),
                        Value::None(), Bools({true, false, false})}),
              HasSubstr("Given normalized_shape=[2], expected input with "
                        "shape [*, 2], but got input of size[2, 3]"));
  EXPECT_THAT(
      RunError("aten.native_group_norm_backward.default",
               {g, g, stat, stat, Value::None(), Value::Int(2), Value::Int(3),
                Value::Int(1), Value::Int(2), Bools({true, true, true})}),
      HasSubstr("divisible by num_groups"));
}

// ---- Corpus ops: batch norm twins, losses, flash attention, upsampling,
// embedding_bag_forward_only (values captured from torch 2.15 on CPU). ------

TEST(NnOpsTest, BatchNormFunctionalTwinAndNativeBatchNorm) {
  Tensor x = T({2, 2, 2}, {1, 2, 3, -1, 0, 4, 2, 2});
  Tensor w = T({2}, {1, 2}), b = T({2}, {0, -1});
  Tensor rm = T({2}, {0.5, -0.5}), rv = T({2}, {2, 1});
  Value r = RunV("aten._native_batch_norm_legit_functional.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(true),
                  Value::Float(0.1), Value::Float(1e-5)});
  ASSERT_EQ(r.list.size(), 5u);
  Expect(Out(r, 0), {2, 2, 2}, DType::kFloat32,
         {-0.5070914030075073, 0.16903042793273926, 0.9999954700469971,
          -4.33332633972168, -1.183213233947754, 1.5212740898132324,
          -0.33333492279052734, -0.33333492279052734},
         1e-5, true);
  Expect(Out(r, 1), {2}, DType::kFloat32, {1.75, 1.5}, 1e-6, true);
  Expect(Out(r, 2), {2}, DType::kFloat32,
         {0.6761218309402466, 0.6666651964187622}, 1e-5, true);
  // The new running statistics (momentum 0.1, unbiased variance) ...
  Expect(Out(r, 3), {2}, DType::kFloat32, {0.625, -0.29999998211860657}, 1e-6,
         true);
  Expect(Out(r, 4), {2}, DType::kFloat32,
         {2.0916666984558105, 1.1999999284744263}, 1e-6, true);
  // ... while the arguments are left as they were.
  EXPECT_EQ(rm.GetDouble({0}), 0.5);
  EXPECT_EQ(rv.GetDouble({1}), 1);
  // native_batch_norm in evaluation mode: running statistics, empty saved
  // statistics.
  Value e = RunV("aten.native_batch_norm.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(false),
                  Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(e, 0), {2, 2, 2}, DType::kFloat32,
         {0.3535524904727936, 1.0606575012207031, 5.999964714050293,
          -1.9999949932098389, -0.3535524904727936, 2.474867343902588,
          3.9999749660491943, 3.9999749660491943},
         1e-5, true);
  Expect(Out(e, 1), {0}, DType::kFloat32, {}, 0, true);
  // Training without weights or running statistics.
  Value n =
      RunV("aten.native_batch_norm.default",
           {V(x), Value::None(), Value::None(), Value::None(), Value::None(),
            Value::Bool(true), Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(n, 0), {2, 2, 2}, DType::kFloat32,
         {-0.5070914030075073, 0.16903042793273926, 0.9999977946281433,
          -1.6666629314422607, -1.183213233947754, 1.5212740898132324,
          0.3333325982093811, 0.3333325982093811},
         1e-5, true);
  // native_batch_norm in training mode writes the running statistics, as
  // PyTorch's CPU kernel does although its schema does not say so:
  // 0.9 * 0.5 + 0.1 * 1.75 (the batch mean) = 0.625.
  Value t = RunV("aten.native_batch_norm.default",
                 {V(x), V(w), V(b), V(rm), V(rv), Value::Bool(true),
                  Value::Float(0.1), Value::Float(1e-5)});
  Expect(Out(t, 1), {2}, DType::kFloat32, {1.75, 1.5}, 1e-6, true);
  EXPECT_NEAR(rm.GetDouble({0}), 0.625, 1e-7);
  // The mutating op is paired with its twin: results 3 and 4 are the new
  // values of arguments 3 and 4.
  const OpDef* legit =
      OpRegistry::Global().Find("aten._native_batch_norm_legit.default");
  ASSERT_NE(legit, nullptr);
  EXPECT_EQ(legit->functional,
            "aten._native_batch_norm_legit_functional.default");
  EXPECT_EQ(legit->written_results,
            (std::vector<std::pair<int, int>>{{3, 3}, {4, 4}}));
}

TEST(NnOpsErrorTest, PairMutatingChecksTheWrittenArgumentsAndResults) {
  OpRegistry r;
  OpFn none = [](const OpCall& c) -> absl::StatusOr<Value> {
    return c.Error("unused");
  };
  ASSERT_OK(r.Add("m(Tensor x, Tensor(a!) s) -> Tensor", none));
  ASSERT_OK(r.Add("f(Tensor x, Tensor s) -> (Tensor, Tensor)", none));
  // Argument 0 is not written; result 0 is the op's own; 2 does not exist.
  EXPECT_THAT(
      r.PairMutating("aten.m.default", "aten.f.default", {{0, 1}}).message(),
      HasSubstr("argument 0 is not a written argument"));
  EXPECT_THAT(
      r.PairMutating("aten.m.default", "aten.f.default", {{1, 0}}).message(),
      HasSubstr("result 0 is not one past"));
  EXPECT_FALSE(
      r.PairMutating("aten.m.default", "aten.f.default", {{1, 2}}).ok());
  EXPECT_FALSE(r.PairMutating("aten.m.default", "aten.g.default", {}).ok());
  ASSERT_OK(r.PairMutating("aten.m.default", "aten.f.default", {{1, 1}}));
  EXPECT_EQ(r.Find("aten.m.default")->functional, "aten.f.default");
  EXPECT_EQ(r.Find("aten.f.default")->inplace, "aten.m.default");
}

}  // namespace
}  // namespace lathe::ir
