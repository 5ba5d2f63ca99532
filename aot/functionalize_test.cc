#include "aot/functionalize.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_corpus.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/shape_prop.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

using ::lathe::testing::RunFileCheck;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  return g.ok() ? std::move(*g) : nullptr;
}

// The functionalized text of `text`, or the error.
absl::StatusOr<std::string> FunctionalText(const std::string& text) {
  std::unique_ptr<ir::Graph> g = Parse(text);
  if (g == nullptr) return absl::InvalidArgumentError("parse");
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*g, env));
  absl::StatusOr<bool> changed = Functionalize(*g, env);
  if (!changed.ok()) return changed.status();
  return ir::PrintGraph(*g);
}

void ExpectChecks(const std::string& text, const std::string& checks) {
  ASSERT_OK_AND_ASSIGN(std::string out, FunctionalText(text));
  EXPECT_OK(RunFileCheck(out, checks)) << out;
}

// Reference scenario 1: a.mul_(2); return a * 3.
TEST(FunctionalizeTest, InputMutationBecomesAnEpilogueCopy) {
  ExpectChecks(R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul = torch.ops.aten.mul.Tensor(a, 3)
    return (mul,)
)",
               R"(
CHECK: [[M:mul_1]]: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(a, 2)
CHECK-NEXT: mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor([[M]], 3)
CHECK-NEXT: copy_: "f32[4][1]cpu" = torch.ops.aten.copy_.default(a, [[M]])
CHECK-NEXT: return (mul,)
CHECK-NOT: mul_.Tensor
)");
}

// Scenario 2: a and c are written, b is not; each written input gets one copy_.
TEST(FunctionalizeTest, OnlyWrittenInputsGetCopies) {
  ExpectChecks(
      R"(def forward(self, a: "f32[2][1]cpu", b: "f32[2][1]cpu", c: "f32[2][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul__1 = torch.ops.aten.mul_.Tensor(c, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    add_1 = torch.ops.aten.add.Tensor(add, c)
    return (add_1,)
)",
      R"(
CHECK: [[A:mul]]: {{.*}} = torch.ops.aten.mul.Tensor(a, 2)
CHECK: [[C:mul_1]]: {{.*}} = torch.ops.aten.mul.Tensor(c, 2)
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor([[A]], b)
CHECK: add_1: {{.*}} = torch.ops.aten.add.Tensor(add, [[C]])
CHECK: copy_: {{.*}} = torch.ops.aten.copy_.default(a, [[A]])
CHECK-NEXT: copy__1: {{.*}} = torch.ops.aten.copy_.default(c, [[C]])
CHECK-NOT: copy_.default(b
)");
}

// Scenario 3: returning the mutated input returns the input itself.
TEST(FunctionalizeTest, ReturnedMutatedInputIsTheInput) {
  ExpectChecks(R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (mul_, a)
)",
               R"(
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(a, 2)
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(a, mul)
CHECK-NEXT: return (copy_, copy_)
)");
}

// Chains on an input and on an intermediate (which needs no epilogue).
TEST(FunctionalizeTest, ChainsAndIntermediates) {
  ExpectChecks(R"(def forward(self, a: "f32[4][1]cpu"):
    clone = torch.ops.aten.clone.default(a)
    add_ = torch.ops.aten.add_.Tensor(clone, 1)
    mul_ = torch.ops.aten.mul_.Tensor(add_, 2)
    sub_ = torch.ops.aten.sub_.Tensor(a, clone)
    return (mul_,)
)",
               R"(
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor(clone, 1)
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor(add, 2)
CHECK-NEXT: sub: {{.*}} = torch.ops.aten.sub.Tensor(a, mul)
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(a, sub)
CHECK-NEXT: return (mul,)
)");
}

TEST(FunctionalizeTest, UnsupportedCasesSayWhy) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      // An expand that broadcasts nothing (PyTorch refuses a write into an
      // overlapping one before functionalization sees it).
      {R"(def forward(self, a: "f32[4][1]cpu"):
    expand = torch.ops.aten.expand.default(a, [1, 4])
    add_ = torch.ops.aten.add_.Tensor(expand, 1)
    return (a,)
)",
       "writing through view 'expand' (aten.expand.default) is not supported "
       "yet"},
      {R"(# lathe: alias a b
def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(a, 1)
    return (b,)
)",
       "inputs 'a' and 'b' share a storage; not supported yet"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_THAT(
        FunctionalText(c.text),
        StatusIs(absl::StatusCode::kUnimplemented, HasSubstr(c.message)))
        << c.text;
  }
}

// Reference scenario 34: the update through a view is written back into x
// (view of the functional result), x's later readers read it, and the
// epilogue copies it into x.
TEST(FunctionalizeTest, MutationThroughAViewIsWrittenBack) {
  ExpectChecks(
      R"(def forward(self, x: "f32[4, 2][2, 1]cpu", ones: "f32[4, 2][2, 1]cpu"):
    view = torch.ops.aten.view.default(x, [4, 2])
    add_ = torch.ops.aten.add_.Tensor(view, ones)
    mul = torch.ops.aten.mul.Tensor(x, x)
    return (view,)
)",
      R"(
CHECK: view: {{.*}} = torch.ops.aten.view.default(x, [4, 2])
CHECK-NEXT: add: {{.*}} = torch.ops.aten.add.Tensor(view, ones)
CHECK-NEXT: [[B:view_1]]: {{.*}} = torch.ops.aten.view.default(add, [4, 2])
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor([[B]], [[B]])
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, [[B]])
CHECK-NEXT: return (add,)
)");
}

// A reshape of a transposed x is a copy (PyTorch's reshape copies where no
// view has the shape; shape propagation names it _reshape_copy): writing it
// leaves x alone, so x gets no epilogue copy_ and its readers read x. A
// reshape of a contiguous x is a view, written back as above.
TEST(FunctionalizeTest, AWriteToAReshapeThatCopiedIsNotWrittenBack) {
  ExpectChecks(
      R"(def forward(self, x: "f32[4, 2][2, 1]cpu", ones: "f32[8][1]cpu"):
    t = torch.ops.aten.t.default(x)
    reshape = torch.ops.aten.reshape.default(t, [8])
    add_ = torch.ops.aten.add_.Tensor(reshape, ones)
    reshape_1 = torch.ops.aten.reshape.default(x, [8])
    mul_ = torch.ops.aten.mul_.Tensor(reshape_1, 2)
    return (reshape, x)
)",
      R"(
CHECK: reshape: {{.*}} = torch.ops.aten._reshape_copy.default(t, [8])
CHECK-NEXT: add: {{.*}} = torch.ops.aten.add.Tensor(reshape, ones)
CHECK-NEXT: reshape_1: {{.*}} = torch.ops.aten.reshape.default(x, [8])
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor(reshape_1, 2)
CHECK-NEXT: [[X:view]]: {{.*}} = torch.ops.aten.view.default(mul, [4, 2])
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, [[X]])
CHECK-NEXT: return (add, copy_)
)");
}

// x set_ to its own diagonal with a dynamic first dimension: the epilogue
// restores x's new layout, whose size Min(5, s0) (the diagonal's length) it
// computes from x's sizes with torch.sym_min.
TEST(FunctionalizeTest, ARegeneratedLayoutTakesAMinOfSizes) {
  ExpectChecks(R"(# lathe: hint s0 4
def forward(self, x: "f32[s0, 6][6, 1]cpu"):
    d = torch.ops.aten.diagonal.default(x, 1)
    set_ = torch.ops.aten.set_.source_Tensor(x, d)
    return (x,)
)",
               R"(
CHECK: torch.sym_min(
CHECK: torch.ops.aten.as_strided_.default(x,
)");
}

// Scenario 35: x is written while a view y of it exists; y is regenerated.
TEST(FunctionalizeTest, ViewsOfAWrittenTensorAreRegenerated) {
  ExpectChecks(R"(def forward(self, x: "f32[8][1]cpu", ones: "f32[8][1]cpu"):
    view = torch.ops.aten.view.default(x, [4, 2])
    add_ = torch.ops.aten.add_.Tensor(x, ones)
    return (view,)
)",
               R"(
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor(x, ones)
CHECK-NEXT: [[V:view_1]]: "f32[4, 2][2, 1]cpu" = torch.ops.aten.view.default(add, [4, 2])
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, add)
CHECK-NEXT: return ([[V]],)
)");
}

// Scenario 36 and a chain of views: as_strided, slice of a transpose. The
// base's new value keeps x's layout and the regenerated view eager's.
TEST(FunctionalizeTest, ScattersUndoEachViewInTheChain) {
  ExpectChecks(R"(def forward(self, x: "f32[4][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [2], [2], 1)
    add_ = torch.ops.aten.add_.Tensor(as_strided, 1)
    return (x,)
)",
               R"(
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor(as_strided, 1)
CHECK-NEXT: [[S:as_strided_scatter]]: "f32[4][1]cpu" = torch.ops.aten.as_strided_scatter.default(x, add, [2], [2], 1)
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, [[S]])
CHECK-NEXT: return (copy_,)
)");
  ExpectChecks(R"(def forward(self, x: "f32[3, 4][4, 1]cpu"):
    t = torch.ops.aten.t.default(x)
    slice_1 = torch.ops.aten.slice.Tensor(t, 0, 1, 3)
    mul_ = torch.ops.aten.mul_.Tensor(slice_1, 2)
    return (t,)
)",
               R"(
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(slice_1, 2)
CHECK-NEXT: [[T:t_1]]: {{.*}} = torch.ops.aten.t.default(x)
CHECK-NEXT: [[SC:slice_scatter]]: {{.*}} = torch.ops.aten.slice_scatter.default([[T]], mul, 0, 1, 3)
CHECK-NEXT: [[X:t_2]]: "f32[3, 4][4, 1]cpu" = torch.ops.aten.t.default([[SC]])
CHECK-NEXT: [[OUT:t_3]]: "f32[4, 3][1, 4]cpu" = torch.ops.aten.t.default([[X]])
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, [[X]])
CHECK-NEXT: return ([[OUT]],)
)");
}

// Scenarios 5 and 6: a metadata mutation of an input becomes an as_strided_
// epilogue; data written through the new view goes back to the base first.
TEST(FunctionalizeTest, MetadataMutationsBecomeAnAsStridedEpilogue) {
  ExpectChecks(
      R"(def forward(self, a: "f32[3, 4][4, 1]cpu", b: "f32[4, 3][3, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)",
      R"(
CHECK: transpose: "f32[4, 3][1, 4]cpu" = torch.ops.aten.transpose.int(a, 1, 0)
CHECK-NEXT: add: {{.*}} = torch.ops.aten.add.Tensor(transpose, b)
CHECK-NEXT: as_strided_: {{.*}} = torch.ops.aten.as_strided_.default(a, [4, 3], [1, 4], 0)
CHECK-NEXT: return (add,)
CHECK-NOT: copy_
)");
  ExpectChecks(R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    add = torch.ops.aten.add.Tensor(a, 1)
    return (add, a)
)",
               R"(
CHECK: transpose: {{.*}} = torch.ops.aten.transpose.int(a, 1, 0)
CHECK-NEXT: mul: {{.*}} = torch.ops.aten.mul.Tensor(transpose, 2)
CHECK-NEXT: [[B:transpose_1]]: "f32[3, 4][4, 1]cpu" = torch.ops.aten.transpose.int(mul, 1, 0)
CHECK: copy_: {{.*}} = torch.ops.aten.copy_.default(a, [[B]])
CHECK-NEXT: as_strided_: {{.*}} = torch.ops.aten.as_strided_.default(a, [4, 3], [1, 4], 0)
CHECK-NEXT: return ({{.*}}, as_strided_)
)");
  // Two t_() cancel out: no epilogue at all.
  ExpectChecks(R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    t_ = torch.ops.aten.t_.default(a)
    t__1 = torch.ops.aten.t_.default(a)
    add = torch.ops.aten.add.Tensor(a, 1)
    return (add,)
)",
               R"(
CHECK-NOT: as_strided_
CHECK-NOT: copy_
CHECK: return (add,)
)");
}

// Scenario 11: a.set_(b); b.mul_(2); return a + b. a now aliases b's
// storage: it reads b's new value, and the epilogue sets a's storage to it.
TEST(FunctionalizeTest, SetMakesAnInputAliasAnother) {
  const char* kGraph =
      R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(b, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add, a)
)";
  ExpectChecks(kGraph, R"(
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(b, 2)
CHECK: add: {{.*}} = torch.ops.aten.add.Tensor([[A:alias_1]], mul)
CHECK: copy_: {{.*}} = torch.ops.aten.copy_.default(b, mul)
CHECK-NEXT: set_: {{.*}} = torch.ops.aten.set_.source_Tensor(a, [[A]])
CHECK-NEXT: return (add, set_)
)");
}

// An element of a multi-output view is written back into the list op's
// input: unbind -> select_scatter, split -> slice_scatter.
TEST(FunctionalizeTest, WritesThroughSplitAndUnbindElements) {
  ExpectChecks(R"(def forward(self, a: "f32[5, 2][2, 1]cpu"):
    split = torch.ops.aten.split.Tensor(a, 2)
    getitem = split[2]
    add_ = torch.ops.aten.add_.Tensor(getitem, 10)
    unbind = torch.ops.aten.unbind.int(a, 1)
    getitem_1 = unbind[1]
    fill_ = torch.ops.aten.fill_.Scalar(getitem_1, 7)
    return (a,)
)",
               R"(
CHECK: add: "f32[1, 2][2, 1]cpu" = torch.ops.aten.add.Tensor(getitem, 10)
CHECK-NEXT: [[S:slice_scatter]]: {{.*}} = torch.ops.aten.slice_scatter.default(a, add, 0, 4, 5)
CHECK: fill: {{.*}} = torch.ops.aten.fill.Scalar({{.*}}, 7)
CHECK-NEXT: [[U:select_scatter]]: {{.*}} = torch.ops.aten.select_scatter.default([[S]], fill, 1, 1)
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(a, [[U]])
CHECK-NEXT: return (copy_,)
)");
}

// Runs `text` plainly and functionalized on the same (deterministic) inputs:
// outputs and input updates must agree bit for bit.
void ExpectSameAsEager(const std::string& text) {
  std::unique_ptr<ir::Graph> plain = Parse(text), functional = Parse(text);
  ASSERT_NE(functional, nullptr);
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*functional, env));
  ASSERT_OK(Functionalize(*functional, env).status());
  auto inputs = [&](const ir::Graph& g) {
    std::vector<ir::Value> v;
    int k = 0;
    for (ir::Node* p : g.Placeholders()) {
      std::vector<int64_t> sizes;
      for (symbolic::Expr e : p->meta().tensor.sizes)
        sizes.push_back(e.int_value());
      Tensor t = *Tensor::Empty(sizes, p->meta().tensor.dtype);
      int64_t i = 0;
      ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
        t.SetDouble(j, (i++ * 7 + k) % 11 - 5);
      });
      ++k;
      v.push_back(ir::Value::OfTensor(t));
    }
    return v;
  };
  std::vector<ir::Value> a = inputs(*plain), b = inputs(*functional);
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*plain, a));
  absl::StatusOr<ir::Interpretation> got = ir::Interpret(*functional, b);
  ASSERT_OK(got) << ir::PrintGraph(*functional);
  ASSERT_EQ(got->outputs.size(), want.outputs.size());
  for (size_t i = 0; i < want.outputs.size(); ++i) {
    const Tensor &w = want.outputs[i].tensor, &g = got->outputs[i].tensor;
    ASSERT_EQ(w.sizes(), g.sizes()) << "output " << i;
    ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
      EXPECT_EQ(g.GetDouble(j), w.GetDouble(j)) << "output " << i;
    });
  }
  for (size_t k = 0; k < a.size(); ++k) {
    ForEachIndex(a[k].tensor.sizes(), [&](absl::Span<const int64_t> j) {
      EXPECT_EQ(b[k].tensor.GetDouble(j), a[k].tensor.GetDouble(j))
          << "input " << k;
    });
  }
}

TEST(FunctionalizeTest, ViewMutationsMatchEager) {
  const char* kGraphs[] = {
      // Scenario 34/35/36.
      R"(def forward(self, x: "f32[4, 2][2, 1]cpu", ones: "f32[4, 2][2, 1]cpu"):
    view = torch.ops.aten.view.default(x, [4, 2])
    add_ = torch.ops.aten.add_.Tensor(view, ones)
    mul = torch.ops.aten.mul.Tensor(x, x)
    return (view, mul)
)",
      R"(def forward(self, x: "f32[8][1]cpu", ones: "f32[8][1]cpu"):
    view = torch.ops.aten.view.default(x, [4, 2])
    add_ = torch.ops.aten.add_.Tensor(x, ones)
    return (view,)
)",
      R"(def forward(self, x: "f32[4][1]cpu"):
    as_strided = torch.ops.aten.as_strided.default(x, [2], [2], 1)
    add_ = torch.ops.aten.add_.Tensor(as_strided, 1)
    return (x,)
)",
      // Two views of one input, each written, read in between.
      R"(def forward(self, x: "f32[3, 4][4, 1]cpu", y: "f32[4][1]cpu"):
    select = torch.ops.aten.select.int(x, 0, 1)
    diagonal = torch.ops.aten.diagonal.default(x, 1)
    mul_ = torch.ops.aten.mul_.Tensor(select, y)
    sum_1 = torch.ops.aten.sum.default(diagonal)
    add_ = torch.ops.aten.add_.Tensor(diagonal, sum_1)
    t = torch.ops.aten.t.default(x)
    permute = torch.ops.aten.permute.default(x, [1, 0])
    unsqueeze = torch.ops.aten.unsqueeze.default(permute, 0)
    sub_ = torch.ops.aten.sub_.Tensor(unsqueeze, 1)
    return (t, select, x)
)",
      R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(b, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add, a)
)",
      // Writes through elements of split, split_with_sizes and unbind.
      R"(def forward(self, a: "f32[5, 2][2, 1]cpu", b: "f32[3, 4][4, 1]cpu"):
    split = torch.ops.aten.split.Tensor(a, 2)
    getitem = split[2]
    getitem_1 = split[1]
    add_ = torch.ops.aten.add_.Tensor(getitem, 10)
    mul_ = torch.ops.aten.mul_.Tensor(getitem_1, -1)
    unbind = torch.ops.aten.unbind.int(b, 1)
    getitem_2 = unbind[3]
    fill_ = torch.ops.aten.fill_.Scalar(getitem_2, 7)
    t = torch.ops.aten.t.default(b)
    split_with_sizes = torch.ops.aten.split_with_sizes.default(t, [1, 3])
    getitem_3 = split_with_sizes[1]
    sub_ = torch.ops.aten.sub_.Tensor(getitem_3, 1)
    return (getitem_1, a, b, getitem_2)
)",
      // A view of a view of an intermediate; the input is untouched.
      R"(def forward(self, x: "f32[2, 6][6, 1]cpu"):
    clone = torch.ops.aten.clone.default(x)
    view = torch.ops.aten.view.default(clone, [2, 3, 2])
    slice_1 = torch.ops.aten.slice.Tensor(view, 1, 0, 2)
    select = torch.ops.aten.select.int(slice_1, 2, 0)
    fill_ = torch.ops.aten.fill_.Scalar(select, 9)
    mul = torch.ops.aten.mul.Tensor(clone, 2)
    return (mul, view)
)",
  };
  for (const char* g : kGraphs) {
    SCOPED_TRACE(g);
    ExpectSameAsEager(g);
  }
}

Tensor Ramp(std::vector<int64_t> sizes, double start) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  double v = start;
  ForEachIndex(t.sizes(),
               [&](absl::Span<const int64_t> i) { t.SetDouble(i, v += 0.25); });
  return t;
}

// The optimizer steps (in-place updates of several inputs): the functional
// graph run by the interpreter gives the plain interpreter's outputs and
// input updates, bit for bit, and returned inputs still alias them.
TEST(FunctionalizeTest, OptimizerStepsMatchThePlainInterpreter) {
  for (const char* name : {"09_sgd_step.txt", "10_adam_step.txt"}) {
    SCOPED_TRACE(name);
    std::string text = ir::ReadCorpusGraph(name);
    std::unique_ptr<ir::Graph> plain = Parse(text), functional = Parse(text);
    ASSERT_NE(functional, nullptr);
    symbolic::ShapeEnv env;
    ASSERT_OK(ir::PropagateShapes(*functional, env));
    ASSERT_OK_AND_ASSIGN(bool changed, Functionalize(*functional, env));
    EXPECT_TRUE(changed);
    auto inputs = [&](const ir::Graph& g) {
      std::vector<ir::Value> v;
      double start = 0;
      for (ir::Node* p : g.Placeholders()) {
        if (p->meta().kind == ir::ValueMeta::Kind::kSym) {
          v.push_back(ir::Value::Float(0.125));
        } else {
          std::vector<int64_t> sizes;
          for (symbolic::Expr e : p->meta().tensor.sizes)
            sizes.push_back(e.int_value());
          v.push_back(ir::Value::OfTensor(Ramp(sizes, start += 1)));
        }
      }
      return v;
    };
    std::vector<ir::Value> a = inputs(*plain), b = inputs(*functional);
    ir::Interpretation want = *ir::Interpret(*plain, a);
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*functional, b));
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      const Tensor &w = want.outputs[i].tensor, &g = got.outputs[i].tensor;
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
        EXPECT_EQ(g.GetDouble(j), w.GetDouble(j));
      });
      // An output that was an input in eager is that input here too.
      for (size_t k = 0; k < a.size(); ++k) {
        if (!a[k].is_tensor()) continue;
        EXPECT_EQ(w.storage() == a[k].tensor.storage(),
                  g.storage() == b[k].tensor.storage())
            << "output " << i << ", input " << k;
      }
    }
    for (size_t k = 0; k < a.size(); ++k) {
      if (!a[k].is_tensor()) continue;
      EXPECT_EQ(want.mutated_inputs[k], got.mutated_inputs[k]) << "input " << k;
      ForEachIndex(a[k].tensor.sizes(), [&](absl::Span<const int64_t> j) {
        EXPECT_EQ(b[k].tensor.GetDouble(j), a[k].tensor.GetDouble(j));
      });
    }
  }
}

// _native_batch_norm_legit writes running_mean and running_var (arguments 3
// and 4), not its first argument: its functional twin returns their new
// values as results 3 and 4, which are copied back like any mutation, and
// the op's own results are the twin's first three.
TEST(FunctionalizeTest, AnOpWritingTwoArgumentsUsesItsFunctionalTwin) {
  const std::string text =
      R"(def forward(self, x: "f32[4, 3, 2][6, 2, 1]cpu", w: "f32[3][1]cpu", b: "f32[3][1]cpu", rm: "f32[3][1]cpu", rv: "f32[3][1]cpu"):
    bn = torch.ops.aten._native_batch_norm_legit.default(x, w, b, rm, rv, True, 0.1, 1e-05)
    getitem = bn[0]
    getitem_1 = bn[1]
    add = torch.ops.aten.add.Tensor(rm, rv)
    return (getitem, getitem_1, add)
)";
  ExpectChecks(text, R"(
CHECK: [[F:_native_batch_norm_legit_functional]]: {{.*}} = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-05)
CHECK-NEXT: [[M:getitem_[0-9]+]]: "f32[3][1]cpu" = [[F]][3]
CHECK-NEXT: [[V:getitem_[0-9]+]]: "f32[3][1]cpu" = [[F]][4]
CHECK-NEXT: getitem: "f32[4, 3, 2][6, 2, 1]cpu" = [[F]][0]
CHECK-NEXT: getitem_1: "f32[3][1]cpu" = [[F]][1]
CHECK-NEXT: add: {{.*}} = torch.ops.aten.add.Tensor([[M]], [[V]])
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(rm, [[M]])
CHECK-NEXT: copy__1: {{.*}} = torch.ops.aten.copy_.default(rv, [[V]])
CHECK-NOT: _native_batch_norm_legit.default
)");
  // Running statistics that are two rows of one buffer: both written back
  // into it, and the results match the eager (plain) interpreter's.
  const std::string rows =
      R"(def forward(self, x: "f32[4, 3, 2][6, 2, 1]cpu", stats: "f32[2, 3][3, 1]cpu"):
    rm = torch.ops.aten.select.int(stats, 0, 0)
    rv = torch.ops.aten.select.int(stats, 0, 1)
    bn = torch.ops.aten._native_batch_norm_legit.default(x, None, None, rm, rv, True, 0.5, 1e-05)
    getitem = bn[0]
    mul = torch.ops.aten.mul.Tensor(stats, 2)
    return (getitem, mul)
)";
  for (const std::string& program : {text, rows}) {
    std::unique_ptr<ir::Graph> plain = Parse(program),
                               functional = Parse(program);
    ASSERT_NE(functional, nullptr);
    symbolic::ShapeEnv env;
    ASSERT_OK(ir::PropagateShapes(*functional, env));
    ASSERT_OK(Functionalize(*functional, env).status());
    auto inputs = [&](const ir::Graph& g) {
      std::vector<ir::Value> v;
      double start = 0;
      for (ir::Node* p : g.Placeholders()) {
        std::vector<int64_t> sizes;
        for (symbolic::Expr e : p->meta().tensor.sizes)
          sizes.push_back(e.int_value());
        v.push_back(ir::Value::OfTensor(Ramp(sizes, start += 1)));
      }
      return v;
    };
    std::vector<ir::Value> a = inputs(*plain), b = inputs(*functional);
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*plain, a));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, ir::Interpret(*functional, b));
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      const Tensor &w = want.outputs[i].tensor, &g = got.outputs[i].tensor;
      ASSERT_EQ(w.sizes(), g.sizes());
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
        EXPECT_FLOAT_EQ(g.GetDouble(j), w.GetDouble(j)) << "output " << i;
      });
    }
    // The written inputs end up as eager leaves them (and were changed).
    for (size_t k = 0; k < a.size(); ++k) {
      const Tensor &w = a[k].tensor, &g = b[k].tensor;
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
        EXPECT_FLOAT_EQ(g.GetDouble(j), w.GetDouble(j)) << "input " << k;
      });
    }
    const Tensor before = inputs(*plain).back().tensor;
    bool written = false;
    ForEachIndex(before.sizes(), [&](absl::Span<const int64_t> j) {
      written = written || b.back().tensor.GetDouble(j) != before.GetDouble(j);
    });
    EXPECT_TRUE(written);
  }
}

}  // namespace
}  // namespace lathe::aot
