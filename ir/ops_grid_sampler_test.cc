// grid_sampler_2d (ops_grid_sampler.cc) against values computed by PyTorch and
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

TEST(NnOpsTest, GridSampler2d) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // every interpolation mode (bilinear, nearest, bicubic) x padding mode
  // (zeros, border, reflection) x align_corners, grid points outside [-1, 1]
  // included; NaN, +-inf and huge grid coordinates.
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 2, 2, 3}, DType::kFloat32,
        {0.0, 0.02400008589029312, -1.696700096130371, 0.18480005860328674,
         1.4773999452590942, 0.0, 0.0, 0.0830003172159195, 1.1232999563217163,
         -0.46200013160705566, -0.13279998302459717, 0.0},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.8946001529693604, -0.14174991846084595, -0.7149998545646667,
            0.9024000763893127, 1.3649998903274536, -1.3145002126693726,
            0.17040003836154938, 1.5715000629425049, 0.1399998664855957,
            -2.256000280380249, -0.15249983966350555, 0.3355000615119934},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.7799999713897705, 0.4799998998641968, -1.8050000667572021, 1.0,
            1.7799999713897705, -2.5850000381469727, 0.2200000286102295,
            1.6600000858306885, 1.1949999332427979, -2.5, -0.15999996662139893,
            0.4150000214576721},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.5199999809265137, -0.2024998664855957, -0.7149998545646667, 1.0,
            1.3649998903274536, -2.3899998664855957, 0.48000001907348633,
            2.244999885559082, 0.1399998664855957, -2.5, -0.15249983966350555,
            0.6100000143051147},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.5200004577636719, 0.4799998998641968, -1.8050000667572021, 1.0,
            1.7799999713897705, -2.2350003719329834, -0.8599996566772461,
            1.6600000858306885, 1.1949999332427979, -2.5, -0.15999996662139893,
            0.11500030010938644},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(0),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.2625002861022949, -0.5024997591972351, -0.7149998545646667,
            0.8300001621246338, 1.3649998903274536, -0.8150002956390381,
            -1.4549996852874756, 1.9449999332427979, 0.1399998664855957,
            -2.2800004482269287, -0.15249983966350555, -0.7399997115135193},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.0, 0.0, -2.0, 0.0, 2.5, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.0, -0.5, -2.0, 1.0, 2.5, -2.0, 0.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -3.0, 0.0, 2.5, 1.0, -2.5, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -2.0, 0.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-3.0, -0.5, -2.0, 1.0, 2.5, -3.0, 0.0, 2.5, 1.0, -2.5, -1.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(1),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.5, -0.5, -2.0, 1.0, 2.5, -2.0, -3.0, 2.5, 1.0, -2.5, -1.0, 1.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {0.3465399742126465, 0.009829453192651272, -1.8158605098724365,
            0.26030606031417847, 1.8798221349716187, 0.18166817724704742,
            -0.01854207180440426, 0.08387786149978638, 1.3713464736938477,
            -0.5766460299491882, -0.30160316824913025, -0.019993871450424194},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(0), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.2169888019561768, -0.18065261840820312, -0.7640554904937744,
            1.0312212705612183, 1.883468747138977, -1.8808470964431763,
            0.33187732100486755, 1.8972487449645996, 0.20124468207359314,
            -2.4487087726593018, -0.3776633143424988, 0.6136110424995422},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.8323380947113037, 0.07757406681776047, -1.87333345413208,
            1.1872563362121582, 2.1879477500915527, -2.670881748199463,
            0.16766177117824554, 2.1093335151672363, 1.385122537612915,
            -2.811513662338257, -0.36856555938720703, 0.3291184604167938},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(1), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-2.8257269859313965, -0.3088519871234894, -0.563737154006958,
            1.1115195751190186, 1.6963484287261963, -2.8430845737457275,
            0.5705419182777405, 2.590470552444458, 0.05772649496793747,
            -2.6469337940216064, -0.3585053086280823, 0.8205267190933228},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-1.4421623945236206, 0.11141782999038696, -1.882216453552246,
            1.4546500444412231, 2.2059381008148193, -2.3636324405670166,
            -1.0816818475723267, 2.1431772708892822, 1.3927364349365234,
            -3.2328999042510986, -0.35057520866394043, 0.05949382856488228},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 2, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(Seq({1, 2, 3, 2}, DType::kFloat32, 23, 11, 0.13)), Value::Int(2),
        Value::Int(2), Value::Bool(true)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 2, 2, 3}, DType::kFloat32,
           {-0.27516940236091614, -0.5232500433921814, -0.9415685534477234,
            0.9673495292663574, 1.79673433303833, -1.1087327003479004,
            -1.899287223815918, 2.3438475131988525, 0.4020618498325348,
            -2.465259075164795, -0.2581194341182709, -0.8728553056716919},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 1, 2, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(Seq({2, 2, 2, 2}, DType::kFloat64, 19, 9, 0.21)), Value::Int(0),
        Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {2, 1, 2, 2}, DType::kFloat64,
           {-0.19170000000000018, -2.5, -2.0, 0.6799999999999997,
            1.5049999999999972, -0.28000000000000025, 0.44499999999999984,
            1.3399999999999999},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {kNaN, kNaN, 0.0, kNaN}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 1, 1, 4}, DType::kFloat32,
        {-1.6999999284744263, -0.15000033378601074, -1.8499999046325684, -0.75},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(0), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(
        r, {1, 1, 1, 4}, DType::kFloat32,
        {-1.6999999284744263, -2.1500003337860107, -1.8499999046325684, -0.75},
        0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {0.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {-2.0, -0.5, -2.0, -2.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(1), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {-2.0, -2.5, -2.0, -2.5}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(0), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32, {kNaN, kNaN, 0.0, kNaN}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(1), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32,
           {kNaN, kNaN, -1.7910308837890625, kNaN}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({1, 1, 3, 4}, DType::kFloat32, 13, 6, 0.5)),
        V(T({1, 1, 4, 2},
            {kNaN, 0.20000000298023224, 0.30000001192092896, kInf,
             -999999995904.0, 0.10000000149011612, 0.5, -kInf},
            DType::kFloat32)),
        Value::Int(2), Value::Int(2), Value::Bool(false)};
    Value r = RunV("aten.grid_sampler_2d.default", args);
    Expect(r, {1, 1, 1, 4}, DType::kFloat32,
           {kNaN, kNaN, -1.7910308837890625, kNaN}, 0.0001, true);
  }
}

// Reflection padding of a grid coordinate whose count of reflections is
// past int64 (1e30 and 1e300 over a row of 4, both ways): the value is one
// of the row's (interpolated within it, never read outside), for either
// alignment. Converting that count to an integer was undefined; the
// sanitizer pass checks float-to-integer conversions.
TEST(NnOpsTest, GridSamplerReflectsCoordinatesPastInt64) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const double huge = dtype == DType::kFloat32 ? 1e30 : 1e300;
    for (bool align : {false, true}) {
      std::vector<Value> args = {V(T({1, 1, 1, 4}, {1, 2, 3, 4}, dtype)),
                                 V(T({1, 1, 2, 2}, {huge, 0, -huge, 0}, dtype)),
                                 Value::Int(0), Value::Int(2),
                                 Value::Bool(align)};
      Value r = RunV("aten.grid_sampler_2d.default", args);
      ASSERT_TRUE(r.is_tensor());
      for (int64_t k = 0; k < 2; ++k) {
        const double v = r.tensor.GetDouble({0, 0, 0, k});
        EXPECT_TRUE(v >= 1 && v <= 4)
            << v << " " << ShortName(dtype) << " " << align << " " << k;
        if (dtype != DType::kFloat64) continue;
        // By hand in f64: PyTorch's unnormalized x, reflected over [lo, lo +
        // span] (its distance from lo folded by two spans), clipped; the
        // row holds x + 1 at x, so bilinear reads the coordinate plus 1.
        const double g = k == 0 ? huge : -huge;
        const double ix = align ? (g + 1) / 2 * 3 : ((g + 1) * 4 - 1) / 2;
        const double lo = align ? 0 : -0.5, span = align ? 3 : 4;
        const double m = std::fmod(std::fabs(ix - lo), 2 * span);
        const double at =
            std::clamp((m < span ? m : 2 * span - m) + lo, 0.0, 3.0);
        EXPECT_NEAR(v, at + 1, 1e-12) << align << " " << k;
      }
    }
  }
}

TEST(NnOpsErrorTest, Col2ImAndGridSampler) {
  EXPECT_EQ(
      RunError("aten.col2im.default",
               {V(Seq({1, 4, 8}, DType::kFloat32, 11, 5, 0.5)), Ints({4, 4}),
                Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}),
      "aten.col2im.default: Given output_size=(4, 4), kernel_size=(2, "
      "2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size "
      "of input's dimension 2 to match the calculated number of sliding "
      "blocks 3 * 3 = 9, but got input.size(2)=8.");
  EXPECT_EQ(RunError("aten.col2im.default",
                     {V(Seq({1, 4, 9}, DType::kInt64, 11, 5, 1)), Ints({4, 4}),
                      Ints({2, 2}), Ints({1, 1}), Ints({0, 0}), Ints({1, 1})}),
            "aten.col2im.default: \"col2im_out_cpu\" not implemented for "
            "'Long'");
  Value x = V(Seq({1, 2, 5, 5}, DType::kFloat32, 11, 5, 0.5));
  Value grid = V(Seq({1, 3, 3, 2}, DType::kFloat32, 11, 5, 0.2));
  auto sample = [&](Value input, Value g, int64_t mode, int64_t padding) {
    return RunError(
        "aten.grid_sampler_2d.default",
        {input, g, Value::Int(mode), Value::Int(padding), Value::Bool(false)});
  };
  EXPECT_EQ(sample(x, V(Seq({2, 3, 3, 2}, DType::kFloat32, 11, 5, 0.2)), 0, 0),
            "aten.grid_sampler_2d.default: grid_sampler(): expected grid and "
            "input to have same batch size, but got input with sizes [1, 2, "
            "5, 5] and grid with sizes [2, 3, 3, 2]");
  EXPECT_EQ(sample(x, V(Seq({1, 3, 3, 2}, DType::kFloat64, 11, 5, 0.2)), 0, 0),
            "aten.grid_sampler_2d.default: expected scalar type Float but "
            "found Double");
  EXPECT_THAT(sample(x, grid, 3, 0),
              HasSubstr("expected interpolation_mode to be 0 (bilinear), 1 "
                        "(nearest) or 2 (bicubic), but got 3 (unsupported)"));
  EXPECT_THAT(sample(x, grid, 0, 3),
              HasSubstr("expected padding_mode to be 0 (zeros), 1 (border) or "
                        "2 (reflection), but got 3 (unsupported)"));
  EXPECT_EQ(sample(V(Seq({1, 2, 5, 5}, DType::kInt64, 11, 5, 1)),
                   V(Seq({1, 3, 3, 2}, DType::kInt64, 11, 5, 1)), 0, 0),
            "aten.grid_sampler_2d.default: \"grid_sampler_2d_cpu_kernel_impl\" "
            "not implemented for 'Long'");
}

}  // namespace
}  // namespace lathe::ir
