#include "aot/runtime_wrapper_plan.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "aot/aot_testing.h"
#include "aot/functionalize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "runtime/tensor.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

using ::lathe::testing::RunFileCheck;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// A graph after AotDispatch, with its text and its plan's C++.
struct Compiled : CompiledText {
  std::string text;    // the functional graph
  std::string source;  // the plan's C++
};

absl::StatusOr<Compiled> Compile(const std::string& text, bool keep = true) {
  absl::StatusOr<CompiledText> compiled = CompileText(text, keep);
  if (!compiled.ok()) return compiled.status();
  Compiled c;
  static_cast<CompiledText&>(c) = std::move(*compiled);
  c.text = ir::PrintGraph(*c.graph);
  c.source = c.aot.plan.CppSource();
  return c;
}

Compiled MustCompile(const std::string& text, bool keep = true) {
  absl::StatusOr<Compiled> c = Compile(text, keep);
  EXPECT_OK(c);
  return c.ok() ? std::move(*c) : Compiled{};
}

void ExpectChecks(const std::string& what, const std::string& checks) {
  EXPECT_OK(RunFileCheck(what, checks)) << what;
}

// Runs `text` eagerly and through AotDispatch + InterpretWithPlan on equal
// fresh inputs; checks the outputs and the inputs' storages agree bitwise,
// and that an output sharing an input's storage in eager shares it here.
// Returns the AOT run's outputs and (rebound) inputs.
struct Both {
  std::vector<ir::Value> outputs, inputs;
};
Both ExpectSameAsEager(const std::string& text,
                       const std::vector<Tensor>& inputs, bool keep = true) {
  auto fresh = [&] {
    std::vector<ir::Value> v;
    for (const Tensor& t : inputs) {
      Tensor c = *Tensor::EmptyStrided(t.sizes(), t.strides(), t.dtype());
      ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
        c.SetDouble(j, t.GetDouble(j));
      });
      v.push_back(ir::Value::OfTensor(c));
    }
    return v;
  };
  std::vector<ir::Value> eager_in = fresh(), aot_in = fresh();
  std::vector<ir::Value> aot_original = aot_in;
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  if (!g.ok()) return {};
  absl::StatusOr<ir::Interpretation> want = ir::Interpret(**g, eager_in);
  EXPECT_OK(want);
  Compiled c = MustCompile(text, keep);
  if (c.graph == nullptr || !want.ok()) return {};
  absl::StatusOr<ir::Interpretation> got =
      InterpretWithPlan(*c.graph, c.aot.plan, aot_in);
  EXPECT_OK(got) << c.text;
  if (!got.ok()) return {};
  EXPECT_EQ(got->outputs.size(), want->outputs.size());
  for (size_t k = 0; k < want->outputs.size(); ++k) {
    const Tensor &w = want->outputs[k].tensor, &o = got->outputs[k].tensor;
    EXPECT_EQ(o.sizes(), w.sizes()) << "output " << k;
    EXPECT_EQ(o.strides(), w.strides()) << "output " << k;
    EXPECT_EQ(Values(o), Values(w)) << "output " << k;
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(w.storage() == eager_in[i].tensor.storage(),
                o.storage() == aot_original[i].tensor.storage())
          << "output " << k << " and input " << i << " alias in one only";
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(Values(aot_original[i].tensor), Values(eager_in[i].tensor))
        << "input " << i;
  }
  return {got->outputs, aot_in};
}

// 1. a.mul_(2); return a * 3 with a leaf that requires grad.
TEST(RuntimeWrapperPlanTest, InputMutationSimple) {
  const char* kText = R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul = torch.ops.aten.mul.Tensor(a, 3)
    return (mul,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, R"(
CHECK: [[M:mul_1]]: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(a, 2)
CHECK-NEXT: mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor([[M]], 3)
CHECK-NOT: copy_
CHECK: return ([[M]], mul)
)");
  ExpectChecks(c.source, R"(
CHECK: if (in.size() != 1 || fw.size() != 2)
CHECK: RETURN_IF_ERROR(lathe::CopyTensor(in[0], fw[0]));  // a.detach().copy_
CHECK: (*out)[0] = fw[1];  // non_alias
)");
  Both r = ExpectSameAsEager(kText, {Iota({4})});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(Values(r.inputs[0].tensor), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(Values(r.outputs[0].tensor), (std::vector<double>{6, 12, 18, 24}));
}

// 2. Two of three inputs mutated: the updated values come first, in input
// order.
TEST(RuntimeWrapperPlanTest, InputMutationMultiple) {
  const char* kText = R"(# lathe: requires_grad a
# lathe: requires_grad b
# lathe: requires_grad c
def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu", c: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul__1 = torch.ops.aten.mul_.Tensor(c, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    add_1 = torch.ops.aten.add.Tensor(add, c)
    return (add_1,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, "CHECK: return (mul, mul_1, add_1)");
  ExpectChecks(c.source, R"(
CHECK: CopyTensor(in[0], fw[0])
CHECK-NEXT: CopyTensor(in[2], fw[1])
CHECK: (*out)[0] = fw[2];
)");
  ExpectSameAsEager(kText, {Iota({4}), Iota({4}, 10), Iota({4}, 100)});
}

// 3. return the mutated input: the wrapper returns the input object.
TEST(RuntimeWrapperPlanTest, MutatedInputIsOutput) {
  const char* kText = R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)";
  Compiled c = MustCompile(kText, /*keep=*/false);
  ExpectChecks(c.text, "CHECK: return (mul, mul)");
  ExpectChecks(c.source, R"(
CHECK: CopyTensor(in[0], fw[0]));  // a.copy_
CHECK: (*out)[0] = in[0];  // is_input
)");
  Both r = ExpectSameAsEager(kText, {Iota({4})}, /*keep=*/false);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].tensor.storage(), r.inputs[0].tensor.storage());
  // Kept in the graph instead: the copy_ stays, the wrapper copies nothing.
  Compiled kept = MustCompile(kText);
  ExpectChecks(kept.text, R"(
CHECK: copy_{{.*}} = torch.ops.aten.copy_.default(a, mul)
CHECK: return (copy_,)
)");
  ExpectChecks(kept.source, "CHECK-NOT: CopyTensor");
  ExpectSameAsEager(kText, {Iota({4})});
}

// 4. An out= style write into an input (b.copy_(sin(a))), kept in the graph:
// the functional copy, then the epilogue copy_ (PyTorch folds the two); the
// graph returns the copy_, the wrapper returns b itself.
TEST(RuntimeWrapperPlanTest, InputMutationReturnKeptInGraph) {
  const char* kText =
      R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    sin = torch.ops.aten.sin.default(a)
    copy_ = torch.ops.aten.copy_.default(b, sin)
    return (copy_,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, R"(
CHECK: [[S:sin]]: {{.*}} = torch.ops.aten.sin.default(a)
CHECK: [[C:copy]]: {{.*}} = torch.ops.aten.copy.default(b, [[S]])
CHECK: [[E:copy__1]]: {{.*}} = torch.ops.aten.copy_.default(b, [[C]])
CHECK: return ([[E]],)
)");
  ExpectChecks(c.source, "CHECK-NOT: CopyTensor\nCHECK: (*out)[0] = in[1];");
  Both r = ExpectSameAsEager(kText, {Iota({4}), Iota({4}, 10)});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].tensor.storage(), r.inputs[1].tensor.storage());
}

// 9. A write through a view under no_grad, kept in the graph: regenerated
// from the functional value, copied back by the graph's copy_.
TEST(RuntimeWrapperPlanTest, HiddenMutationThroughAViewStaysInTheGraph) {
  const char* kText = R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    mul_ = torch.ops.aten.mul_.Tensor(view, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, 1)
    return (add,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, R"(
CHECK: view{{.*}} = torch.ops.aten.view.default(a, [-1])
CHECK: [[M:mul]]{{.*}} = torch.ops.aten.mul.Tensor(view, 2)
CHECK: [[V:view.*]]: {{.*}} = torch.ops.aten.view.default([[M]], [4])
CHECK: add{{.*}} = torch.ops.aten.add.Tensor([[V]], 1)
CHECK: copy_{{.*}} = torch.ops.aten.copy_.default(a, [[V]])
CHECK: return (add,)
)");
  EXPECT_TRUE(c.aot.plan.epilogue().empty());
  ExpectSameAsEager(kText, {Iota({4})});
}

// 19 and 23. A single view of an intermediate (unsafe_view_alias) and the
// elements of unbind on an input that requires grad (non_alias: the
// aliasing is hidden) are passed through.
TEST(RuntimeWrapperPlanTest, HiddenAliasesPassThrough) {
  Compiled single = MustCompile(R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 3)
    view = torch.ops.aten.view.default(mul, [-1])
    return (view,)
)");
  ExpectChecks(single.text, "CHECK: return (view,)");
  ExpectChecks(single.source,
               "CHECK: (*out)[0] = fw[0];  // unsafe_view_alias");
  const char* kUnbind = R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    unbind = torch.ops.aten.unbind.int(a)
    getitem = unbind[0]
    getitem_1 = unbind[1]
    return (getitem, getitem_1)
)";
  ExpectChecks(MustCompile(kUnbind).source, R"(
CHECK: (*out)[0] = fw[0];  // non_alias
CHECK: (*out)[1] = fw[1];  // non_alias
)");
  ExpectSameAsEager(kUnbind, {Iota({2, 2})});
}

// 5. transpose_ only: as_strided_ and no copy.
TEST(RuntimeWrapperPlanTest, MetadataMutation) {
  const char* kText =
      R"(def forward(self, a: "f32[3, 4][4, 1]cpu", b: "f32[4, 3][3, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    add = torch.ops.aten.add.Tensor(transpose_, b)
    return (add,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, "CHECK-NOT: as_strided_\nCHECK: return (add,)");
  ExpectChecks(c.source, R"(
CHECK-NOT: CopyTensor
CHECK: ASSIGN_OR_RETURN(in[0], in[0].AsStrided({4, 3}, {1, 4}, 0));  // a.as_strided_
)");
  Both r = ExpectSameAsEager(kText, {Iota({3, 4}), Iota({4, 3})});
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].tensor.sizes(), (std::vector<int64_t>{4, 3}));
}

// 6. transpose_ then mul_: copy_ into the old layout, then as_strided_.
TEST(RuntimeWrapperPlanTest, DataAndMetadataMutation) {
  const char* kText = R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul_ = torch.ops.aten.mul_.Tensor(transpose_, 2)
    add = torch.ops.aten.add.Tensor(mul_, 1)
    return (add,)
)";
  Compiled c = MustCompile(kText, /*keep=*/false);
  ExpectChecks(c.source, R"(
CHECK: CopyTensor(in[0], fw[0])
CHECK-NEXT: in[0].AsStrided({4, 3}, {1, 4}, 0)
)");
  Both r = ExpectSameAsEager(kText, {Iota({3, 4})}, /*keep=*/false);
  ASSERT_EQ(r.inputs.size(), 1u);
  // a == a0.T * 2
  EXPECT_EQ(r.inputs[0].tensor.GetDouble({1, 0}), 2 * 2);
  EXPECT_EQ(r.inputs[0].tensor.GetDouble({0, 1}), 2 * 5);
}

// 7 and 8. a.detach().mul_(2): hidden from autograd, so the graph may keep
// it; out of the graph a leaf that requires grad is written through
// detach(), one that does not with a plain copy_.
TEST(RuntimeWrapperPlanTest, DetachedMutationOfALeaf) {
  const char* kText = R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    detach = torch.ops.aten.detach.default(a)
    mul_ = torch.ops.aten.mul_.Tensor(detach, 2)
    add = torch.ops.aten.add.Tensor(a, 3)
    return (add,)
)";
  ExpectChecks(MustCompile(kText).text, "CHECK: aten.copy_.default(a, mul)");
  ExpectChecks(MustCompile(kText, false).source,
               "CHECK: CopyTensor(in[0], fw[0]));  // a.detach().copy_: a "
               "leaf that requires grad");
  ExpectSameAsEager(kText, {Iota({4})}, false);
  std::string plain = kText;
  plain.erase(0, plain.find('\n') + 1);  // no requires_grad
  ExpectChecks(MustCompile(plain, false).source,
               "CHECK: CopyTensor(in[0], fw[0]));  // a.copy_\n");
  Both r = ExpectSameAsEager(plain, {Iota({4})}, false);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(Values(r.inputs[0].tensor), (std::vector<double>{2, 4, 6, 8}));
}

// 11. set_ then a data mutation of the source, under no_grad: the input is
// rebound to the graph's value; b's copy_ stays in the graph.
TEST(RuntimeWrapperPlanTest, SetAndDataMutation) {
  const char* kText =
      R"(def forward(self, a: "f32[3, 3][3, 1]cpu", b: "f32[3, 3][3, 1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(b, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.text, R"(
CHECK: [[M:mul]]: "f32[3, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(b, 2)
CHECK: copy_{{.*}} = torch.ops.aten.copy_.default(b, [[M]])
CHECK-NOT: set_.source
CHECK: return ({{.*}}, add)
)");
  ExpectChecks(c.source, "CHECK: in[0] = fw[0];  // a.set_");
  Both r = ExpectSameAsEager(kText, {Iota({3, 3}), Iota({3, 3}, 10)});
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(Values(r.inputs[0].tensor), Values(r.inputs[1].tensor));
  EXPECT_EQ(r.inputs[0].tensor.GetDouble({0, 0}), 20);
}

// 13. set_ away and back: nothing for the wrapper to do.
TEST(RuntimeWrapperPlanTest, SetBackIsNoMutation) {
  Compiled c =
      MustCompile(R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    alias = torch.ops.aten.alias.default(a)
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    set__1 = torch.ops.aten.set_.source_Tensor(a, alias)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)");
  EXPECT_TRUE(c.aot.plan.epilogue().empty());
  ExpectChecks(c.text, "CHECK-NOT: set_.source\nCHECK: return (add,)");
}

// 14. Writing through a view taken before set_ is an error.
TEST(RuntimeWrapperPlanTest, MutationOfFrozenStorageIsAnError) {
  EXPECT_THAT(
      Compile(
          R"(def forward(self, a: "f32[3, 3][3, 1]cpu", b: "f32[3, 3][3, 1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(view, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("node 'mul_': cannot mutate tensors with frozen "
                         "storage ('view' views the storage input 'a' had "
                         "before set_ node 'set_')")));
}

// 15. A non-contiguous input (t[0::2]) mutated: the base matches eager.
TEST(RuntimeWrapperPlanTest, NonContiguousInputMutation) {
  const char* kText = R"(def forward(self, a: "f32[4][2]cpu"):
    add_ = torch.ops.aten.add_.Tensor(a, 1)
    return (a,)
)";
  Tensor base = Iota({8});
  Tensor a = *base.AsStrided({4}, {2}, 0);
  ExpectSameAsEager(kText, {a}, /*keep=*/false);
  ExpectSameAsEager(kText, {a});
}

// 16 and 17. An output that views an input is regenerated from the input,
// after the epilogue: it shares the input's storage.
TEST(RuntimeWrapperPlanTest, OutputViewsOfInputs) {
  const char* kView = R"(def forward(self, a: "f32[2, 2][2, 1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)";
  ExpectChecks(MustCompile(kView).source,
               "CHECK: ASSIGN_OR_RETURN((*out)[0], in[0].AsStrided({4}, {1}, "
               "in[0].storage_offset()));  // alias_of_input");
  ExpectSameAsEager(kView, {Iota({2, 2})});
  const char* kAddView = R"(# lathe: requires_grad a
# lathe: non_leaf a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(a, 1)
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)";
  Compiled c = MustCompile(kAddView);
  ExpectChecks(c.text, R"(
CHECK: [[A:add]]: {{.*}} = torch.ops.aten.add.Tensor(a, 1)
CHECK: [[V:view.*]]: {{.*}} = torch.ops.aten.view.default([[A]], [-1])
CHECK: return ([[A]], [[V]])
)");
  ExpectChecks(c.source, R"(
CHECK: CopyTensor(in[0], fw[0]));  // a.copy_
CHECK: (*out)[0], in[0].AsStrided({4}, {1}, in[0].storage_offset())
)");
  ExpectSameAsEager(kAddView, {Iota({2, 2})});
}

// Compiled code reads an input from its first element, so the input may
// come at any storage offset: the views of it the plan makes count from that
// offset, where PyTorch's view ops put them (they came back at the offset
// the graph was traced with).
TEST(RuntimeWrapperPlanTest, OutputViewsOfAnInputMoveWithItsOffset) {
  const char* kText = R"(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    t = torch.ops.aten.t.default(x)
    select = torch.ops.aten.select.int(x, 0, 1)
    return (t, select)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.source, R"(
CHECK: (*out)[0], in[0].AsStrided({3, 2}, {1, 3}, in[0].storage_offset())
CHECK: (*out)[1], in[0].AsStrided({3}, {1}, in[0].storage_offset() + 3)
)");
  ASSERT_NE(c.graph, nullptr);
  for (int64_t offset : {0, 3, 5}) {
    // x[i][j] = offset + 3 * i + j + 1.
    Tensor storage = Iota({12});
    std::vector<ir::Value> in = {
        ir::Value::OfTensor(*storage.AsStrided({2, 3}, {3, 1}, offset))};
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got,
                         InterpretWithPlan(*c.graph, c.aot.plan, in));
    ASSERT_EQ(got.outputs.size(), 2u);
    const Tensor &t = got.outputs[0].tensor, &row = got.outputs[1].tensor;
    const double o = static_cast<double>(offset);
    EXPECT_EQ(t.storage_offset(), offset);
    EXPECT_EQ(row.storage_offset(), offset + 3);
    EXPECT_EQ(t.storage(), storage.storage());
    EXPECT_EQ(Values(t),
              (std::vector<double>{o + 1, o + 4, o + 2, o + 5, o + 3, o + 6}));
    EXPECT_EQ(Values(row), (std::vector<double>{o + 4, o + 5, o + 6}));
  }
}

// 18. b.mul_(3); c.t_(); views of all three inputs returned.
TEST(RuntimeWrapperPlanTest, ViewsOfMutatedInputs) {
  const char* kText =
      R"(def forward(self, a: "f32[2, 3][3, 1]cpu", b: "f32[2, 3][3, 1]cpu", c: "f32[2, 3][3, 1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(b, 3)
    t_ = torch.ops.aten.t_.default(c)
    view = torch.ops.aten.view.default(a, [-1])
    view_1 = torch.ops.aten.view.default(b, [-1])
    view_2 = torch.ops.aten.unsqueeze.default(c, 0)
    return (view, view_1, view_2)
)";
  Compiled c = MustCompile(kText, false);
  ExpectChecks(c.source, R"(
CHECK: CopyTensor(in[1], fw[0])
CHECK: in[2].AsStrided({3, 2}, {1, 3}, 0));  // c.as_strided_
CHECK: (*out)[0], in[0].AsStrided
CHECK: (*out)[1], in[1].AsStrided
CHECK: (*out)[2], in[2].AsStrided({1, 3, 2}, {3, 1, 3}, 0)
)");
  ExpectSameAsEager(kText, {Iota({2, 3}), Iota({2, 3}, 10), Iota({2, 3}, 100)},
                    false);
}

// 20, 21 and 25. Views of an intermediate that requires grad alias each
// other (and their base) after the wrapper, as in eager.
TEST(RuntimeWrapperPlanTest, OutputsAliasingAnIntermediate) {
  const char* kTwoViews = R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 3)
    view = torch.ops.aten.view.default(mul, [-1])
    view_1 = torch.ops.aten.view.default(mul, [-1])
    return (view, view_1)
)";
  Compiled c = MustCompile(kTwoViews);
  ExpectChecks(c.text, "CHECK: return (view, view_1, mul)");
  ExpectChecks(c.source, R"(
CHECK: (*out)[0], fw[2].AsStrided({4}, {1}, 0));  // alias_of_intermediate_save_as_output
CHECK: (*out)[1], fw[2].AsStrided({4}, {1}, 0));  // alias_of_intermediate
)");
  Both r = ExpectSameAsEager(kTwoViews, {Iota({2, 2})});
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].tensor.storage(), r.outputs[1].tensor.storage());
  // 25: b = a.mul(2); c = b.view(-1); return b, c. Writing out[0] shows in
  // out[1].
  Both s = ExpectSameAsEager(R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 2)
    view = torch.ops.aten.view.default(mul, [-1])
    return (mul, view)
)",
                             {Iota({2, 2})});
  ASSERT_EQ(s.outputs.size(), 2u);
  s.outputs[0].tensor.SetDouble({1, 1}, 99);
  EXPECT_EQ(s.outputs[1].tensor.GetDouble({3}), 99);
}

// 24. Every alias type at once.
TEST(RuntimeWrapperPlanTest, AllAliasTypes) {
  const char* kText = R"(# lathe: requires_grad a
def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul = torch.ops.aten.mul.Tensor(transpose_, 2)
    squeeze = torch.ops.aten.squeeze.dim(mul, 0)
    transpose = torch.ops.aten.transpose.int(mul, 1, 0)
    unsqueeze = torch.ops.aten.unsqueeze.default(transpose_, 0)
    return (squeeze, transpose, unsqueeze)
)";
  ExpectChecks(MustCompile(kText).text,
               "CHECK: return (squeeze, transpose, unsqueeze{{.*}}, mul)");
  Both r = ExpectSameAsEager(kText, {Iota({3, 4})});
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(r.outputs[0].tensor.storage(), r.outputs[1].tensor.storage());
  EXPECT_EQ(r.outputs[2].tensor.storage(), r.inputs[0].tensor.storage());
}

// 26. (a.detach(), a): the same data.
TEST(RuntimeWrapperPlanTest, DetachedOutputSharesItsData) {
  Both r = ExpectSameAsEager(R"(# lathe: requires_grad x
def forward(self, x: "f32[2, 3][3, 1]cpu"):
    add = torch.ops.aten.add.Tensor(x, 1)
    t = torch.ops.aten.t.default(add)
    detach = torch.ops.aten.detach.default(t)
    return (detach, t)
)",
                             {Iota({2, 3})});
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].tensor.data_ptr(), r.outputs[1].tensor.data_ptr());
}

// 29. No mutation: no epilogue at all.
TEST(RuntimeWrapperPlanTest, NoMutationNoEpilogue) {
  Compiled c =
      MustCompile(R"(def forward(self, x: "f32[4][1]cpu", y: "f32[4][1]cpu"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)");
  EXPECT_TRUE(c.aot.plan.epilogue().empty());
  ExpectChecks(c.source, R"(
CHECK-NOT: CopyTensor
CHECK-NOT: AsStrided
CHECK: (*out)[0] = fw[0];  // non_alias
)");
}

// Symbolic layouts are evaluated from the inputs' sizes at run time.
TEST(RuntimeWrapperPlanTest, SymbolicViewOfAnInput) {
  const char* kText = R"(def forward(self, a: "f32[s0, 4][4, 1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)";
  Compiled c = MustCompile(kText);
  ExpectChecks(c.source, R"(
CHECK: const int64_t sym_s0 = in[0].sizes()[0];
CHECK: (*out)[0], in[0].AsStrided({(4 * sym_s0)}, {1}, in[0].storage_offset())
)");
  for (int64_t n : {3, 5}) {
    Both r = ExpectSameAsEager(kText, {Iota({n, 4})});
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].tensor.sizes(), (std::vector<int64_t>{4 * n}));
  }
}

// Writing through a view of a dynamic input: the view is undone with the
// source's symbolic sizes, read at run time (sym_size), so one compiled
// graph serves every size.
TEST(RuntimeWrapperPlanTest, WriteThroughAViewOfADynamicInput) {
  const char* kText = R"(# lathe: hint s0 3
def forward(self, x: "f32[s0, 4][4, 1]cpu"):
    view = torch.ops.aten.view.default(x, [-1])
    add_ = torch.ops.aten.add_.Tensor(view, 1)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul, view)
)";
  Compiled c = MustCompile(kText, /*keep=*/false);
  ExpectChecks(c.text, R"-(
CHECK: [[A:add]]: "f32[4*s0][1]cpu" = torch.ops.aten.add.Tensor(view, 1)
CHECK: [[S:sym_size_int]]: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
CHECK: [[V:view.*]]: "f32[s0, 4][4, 1]cpu" = torch.ops.aten.view.default([[A]], [[[S]], 4])
CHECK: return ([[V]],
)-");
  ExpectChecks(c.source, R"(
CHECK: const int64_t sym_s0 = in[0].sizes()[0];
CHECK: CopyTensor(in[0], fw[0])
CHECK: (*out)[1], in[0].AsStrided({(4 * sym_s0)}, {1}, in[0].storage_offset())
)");
  for (int64_t n : {3, 6}) ExpectSameAsEager(kText, {Iota({n, 4})}, false);
}

// A metadata mutation of a dynamic input: the new view's layout is symbolic.
// Functionalize computes it in the graph (sym_size, operator.mul) for its
// as_strided_ epilogue; the plan evaluates it from the input's sizes.
TEST(RuntimeWrapperPlanTest, MetadataMutationOfADynamicInput) {
  const char* kText = R"(# lathe: hint s0 3
def forward(self, x: "f32[s0, 4][4, 1]cpu"):
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(x, 0)
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    return (x,)
)";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kText));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  ASSERT_OK(Functionalize(*g, env));
  ExpectChecks(ir::PrintGraph(*g), R"-(
CHECK: [[S:sym_size_int.*]]: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
CHECK: [[M:mul.*]]: "Sym(4*s0)" = 4 * [[S]]
CHECK: copy_{{.*}} = torch.ops.aten.copy_.default(x,
CHECK: as_strided_{{.*}} = torch.ops.aten.as_strided_.default(x, [1, [[S]], 4], [[[M]], 4, 1], 0)
)-");
  Compiled c = MustCompile(kText, /*keep=*/false);
  ExpectChecks(c.source, R"(
CHECK: const int64_t sym_s0 = in[0].sizes()[0];
CHECK: CopyTensor(in[0], fw[0])
CHECK: in[0].AsStrided({1, sym_s0, 4}, {(4 * sym_s0), 4, 1}, 0)
)");
  ExpectChecks(c.text, "CHECK-NOT: sym_size\nCHECK-NOT: operator.mul");
  for (int64_t n : {3, 5}) {
    Both r = ExpectSameAsEager(kText, {Iota({n, 4})}, false);
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_EQ(r.inputs[0].tensor.sizes(), (std::vector<int64_t>{1, n, 4}));
  }
  ExpectSameAsEager(kText, {Iota({5, 4})});  // as_strided_ kept in the plan
}

// A new layout with an entry functionalize cannot compute in the graph yet
// (here s0 // 2) is an error naming the input and the entry.
TEST(RuntimeWrapperPlanTest, UnsupportedSymbolicNewLayoutIsAnError) {
  EXPECT_THAT(Compile(R"(# lathe: hint s0 4
def forward(self, x: "f32[s0][1]cpu"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    floordiv = sym_size_int // 2
    as_strided_ = torch.ops.aten.as_strided_.default(x, [floordiv], [2], 0)
    return (x,)
)"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "the new layout of input 'x': its entry (s0//2) is not "
                       "supported yet"));
}

// Wrong arity at run time is an error naming both counts.
TEST(RuntimeWrapperPlanTest, WrongArityIsAnError) {
  Compiled c = MustCompile(R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)",
                           false);
  std::vector<Tensor> in = {Iota({4})};
  std::vector<Tensor> fw = {Iota({4}), Iota({4}), Iota({4})};
  EXPECT_THAT(
      c.aot.plan.Run(absl::MakeSpan(in), fw),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("expected 1 inputs and 2 graph outputs, got 1 and 3")));
  fw = {Iota({5}), Iota({4})};
  EXPECT_THAT(c.aot.plan.Run(absl::MakeSpan(in), fw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot copy f32[5]")));
}

}  // namespace
}  // namespace lathe::aot
