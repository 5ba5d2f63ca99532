// AotDispatch over the graph corpus (graphs copied from PyTorch): every graph
// compiles, and each one whose inputs can be made from its annotations runs
// through InterpretAsUser exactly as the plain interpreter runs it — outputs
// bit for bit, inputs written the same, outputs aliasing the same inputs.

#include "aot/aot_dispatch.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aot/aot_testing.h"
#include "aot/functionalize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_corpus.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

constexpr const char* kCorpus[] = {
    "01_mlp.txt",
    "02_mlp_dynamic.txt",
    "03_addmm_gelu.txt",
    "04_softmax.txt",
    "05_softmax_op.txt",
    "06_layernorm.txt",
    "07_layernorm_decomposed.txt",
    "08_attention.txt",
    "09_sgd_step.txt",
    "10_adam_step.txt",
    "11_views_of_inputs.txt",
    "12_inplace_through_view.txt",
    "13_dynamic_sym_ops.txt",
    "14_dynamic_floordiv.txt",
    "15_scalar_inputs.txt",
    "16_creation_kwargs.txt",
    "17_no_strides_no_device.txt",
    "18_cuda_and_bf16.txt",
    "19_where_clamp_inf.txt",
    "20_cat_split_index.txt",
    "21_constant_and_bare_return.txt",
    "22_unbacked_item.txt",
};

// Inputs made from the annotations: static f32 CPU tensors (values k/8 for
// small exact sums) and 0.125 for scalars; false when the graph needs
// something else (symbolic sizes, other devices or dtypes, constants).
bool MakeInputs(const ir::Graph& g, std::vector<ir::Value>* out) {
  for (const auto& n : g.nodes()) {
    if (n->kind() == ir::Node::Kind::kGetAttr) return false;
  }
  for (ir::Node* p : g.Placeholders()) {
    if (p->meta().kind == ir::ValueMeta::Kind::kSym) {
      if (!p->meta().sym.is_float()) return false;
      out->push_back(ir::Value::Float(0.125));
      continue;
    }
    const ir::TensorMeta& m = p->meta().tensor;
    if (p->meta().kind != ir::ValueMeta::Kind::kTensor ||
        m.dtype != DType::kFloat32 || !m.device.is_cpu()) {
      return false;
    }
    std::vector<int64_t> sizes;
    for (symbolic::Expr e : m.sizes) {
      if (e.kind() != symbolic::ExprKind::kInteger) return false;
      sizes.push_back(e.int_value());
    }
    out->push_back(ir::Value::OfTensor(Iota(sizes, 1.0 / 8)));
  }
  return true;
}

// Every AOT step works on the metas shape propagation (the walk's first
// step) gave the graph, and refuses a graph without them.
TEST(AotDispatchTest, StepsRefuseAGraphWithoutPropagatedShapes) {
  using ::lathe::testing::StatusIs;
  using ::testing::HasSubstr;
  constexpr char kText[] = R"IR(def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    return (add_,)
)IR";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kText));
  symbolic::ShapeEnv env;
  auto refused = [](absl::string_view step) {
    return StatusIs(absl::StatusCode::kFailedPrecondition,
                    HasSubstr(absl::StrCat(step,
                                           " needs a shape-propagated graph "
                                           "(ir::PropagateShapes)")));
  };
  EXPECT_THAT(AotDispatch(*g, env).status(), refused("AOT dispatch"));
  EXPECT_THAT(FlattenComposites(*g).status(), refused("flattening composites"));
  EXPECT_THAT(CollectViewAndMutationMeta(*g).status(),
              refused("collecting view and mutation meta"));
  EXPECT_THAT(Functionalize(*g, env).status(), refused("functionalize"));
  ASSERT_OK(ir::PropagateShapes(*g, env));
  EXPECT_OK(AotDispatch(*g, env).status());
}

TEST(AotDispatchTest, CorpusGraphsCompileAndRunAsEager) {
  int ran = 0;
  for (const char* name : kCorpus) {
    SCOPED_TRACE(name);
    std::string text = ir::ReadCorpusGraph(name);
    ASSERT_FALSE(text.empty());
    std::unique_ptr<ir::Graph> plain = *ir::ParseGraph(text);
    std::unique_ptr<ir::Graph> g = *ir::ParseGraph(text);
    symbolic::ShapeEnv env;
    ir::ShapePropOptions options;  // hints for the dynamic graphs without
    for (const char* s : {"s0", "s1", "s2", "s3"}) {  // their own
      options.hints[s] = symbolic::Value::Int(8);
    }
    ASSERT_OK(ir::PropagateShapes(*g, env, options));
    ASSERT_OK_AND_ASSIGN(AotGraph aot, AotDispatch(*g, env));
    std::vector<ir::Value> a, b;
    if (!MakeInputs(*plain, &a) || !MakeInputs(*plain, &b)) continue;
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*plain, a));
    std::vector<Operand> args;
    for (const ir::Value& v : b) {
      args.push_back(v.is_tensor() ? Operand::Of(v.tensor)
                                   : Operand::Float(*v.AsDouble()));
    }
    ASSERT_OK_AND_ASSIGN(UserCall got, InterpretAsUser(*g, aot, args));
    ASSERT_EQ(got.results.size(), want.outputs.size());
    for (size_t k = 0; k < want.outputs.size(); ++k) {
      const Tensor& w = want.outputs[k].tensor;
      const Tensor& o = got.results[k].tensor;
      EXPECT_EQ(o.sizes(), w.sizes()) << "output " << k;
      EXPECT_EQ(Values(o), Values(w)) << "output " << k;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].is_tensor()) continue;
        EXPECT_EQ(w.storage() == a[i].tensor.storage(),
                  o.storage() == b[i].tensor.storage())
            << "output " << k << ", input " << i;
      }
    }
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(got.mutated[i], want.mutated_inputs[i]) << "input " << i;
      if (a[i].is_tensor()) {
        EXPECT_EQ(Values(b[i].tensor), Values(a[i].tensor)) << "input " << i;
      }
    }
    ++ran;
  }
  RecordProperty("graphs_run", ran);
  EXPECT_GE(ran, 13);
}

// Operands and interpreter values convert both ways, booleans staying
// booleans; a symbolic number cannot be an operand.
TEST(AotDispatchTest, OperandsAndValuesConvert) {
  for (const ir::Value& v :
       {ir::Value::Int(3), ir::Value::Float(2.5), ir::Value::Bool(true),
        ir::Value::None(), ir::Value::OfTensor(Iota({2}))}) {
    ASSERT_OK_AND_ASSIGN(Operand o, OperandOf(v));
    EXPECT_EQ(ValueOf(o).DebugString(), v.DebugString());
  }
  EXPECT_EQ(OperandOf(ir::Value::Bool(false))->kind, Operand::Kind::kBool);
  absl::StatusOr<Operand> symbolic =
      OperandOf(ir::Value::Number(symbolic::Symbol("s0")));
  EXPECT_FALSE(symbolic.ok());
}

// A pair argument that fits the dense graph's inputs passes; one whose
// inner tensors, or a constant, do not fit is the error naming that dense
// input (as the interpreter names it); a plain tensor where the pair goes
// is the subclass plan's error.
TEST(AotDispatchTest, CheckUserArgumentsUnwrapsThenChecks) {
  using ::lathe::testing::StatusIs;
  ASSERT_OK_AND_ASSIGN(CompiledText c, CompileText(R"(# lathe: composite x pair
def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[3][1]cpu"):
    c: "f32[3][1]cpu" = self.c
    add: "f32[2, 3][3, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
    mul: "f32[2, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(add, c)
    return (mul,)
)"));
  // x_a, x_b, y, then self.c.
  const std::vector<ir::InputSlot> slots = ir::InputSlots(*c.graph);
  ASSERT_EQ(slots.size(), 4u);
  const ir::Value constant = ir::Value::OfTensor(Iota({3}));
  Operand pair =
      *MakePair(Operand::Of(Iota({2, 3})), Operand::Of(Iota({2, 3})));
  EXPECT_OK(CheckUserArguments(c.aot.subclass, slots,
                               {pair, Operand::Of(Iota({3}))}, {constant}));

  Operand wide =
      *MakePair(Operand::Of(Iota({2, 4})), Operand::Of(Iota({2, 4})));
  EXPECT_THAT(CheckUserArguments(c.aot.subclass, slots,
                                 {wide, Operand::Of(Iota({3}))}, {constant}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 0 ('x_a') size(1): expected 3, got 4"));

  EXPECT_THAT(
      CheckUserArguments(c.aot.subclass, slots,
                         {Operand::Of(Iota({2, 3})), Operand::Of(Iota({3}))},
                         {constant}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "argument 0: expected pair, got f32[2, 3][3, 1]cpu"));

  Tensor i64 = *Tensor::Empty({3}, DType::kInt64);
  EXPECT_THAT(
      CheckUserArguments(c.aot.subclass, slots, {pair, Operand::Of(Iota({3}))},
                         {ir::Value::OfTensor(i64)}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "constant 'self.c': expected dtype f32, got i64"));
  EXPECT_THAT(
      CheckUserArguments(c.aot.subclass, slots, {pair, Operand::Of(Iota({3}))}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "expected 4 inputs and constants, got 3"));
}

}  // namespace
}  // namespace lathe::aot
