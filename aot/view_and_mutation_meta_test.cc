#include "aot/view_and_mutation_meta.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

// "inputs: data, -; outputs: is_input@0, non_alias" for compact checks.
std::string Summary(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  if (!g.ok()) return "";
  symbolic::ShapeEnv env;
  absl::Status shapes = ir::PropagateShapes(**g, env);
  if (!shapes.ok()) return std::string(shapes.message());
  absl::StatusOr<ViewAndMutationMeta> m = CollectViewAndMutationMeta(**g);
  EXPECT_OK(m);
  if (!m.ok()) return "";
  std::vector<std::string> ins, outs;
  for (const InputInfo& i : m->inputs) {
    std::vector<std::string> f;
    if (i.mutates_data) f.push_back("data");
    if (i.mutates_metadata) f.push_back("metadata");
    if (i.mutates_storage_metadata) f.push_back("storage");
    ins.push_back(f.empty() ? "-" : absl::StrJoin(f, "+"));
  }
  for (const OutputInfo& o : m->outputs) {
    outs.push_back(
        absl::StrCat(OutputTypeName(o.type),
                     o.base_index ? absl::StrCat("@", *o.base_index) : ""));
  }
  return absl::StrCat(
      "inputs: ", absl::StrJoin(ins, ", "),
      "; outputs: ", absl::StrJoin(outs, ", "),
      m->intermediate_bases.empty()
          ? ""
          : absl::StrCat("; bases: ", m->intermediate_bases.size()));
}

// Reference §3 scenarios, by number.
TEST(ViewAndMutationMetaTest, InputMutations) {
  // 1. a.mul_(2); return a * 3.
  EXPECT_EQ(Summary(R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul = torch.ops.aten.mul.Tensor(a, 3)
    return (mul,)
)"),
            "inputs: data; outputs: non_alias");
  // 2. a and c mutated, b not.
  EXPECT_EQ(
      Summary(
          R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu", c: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul__1 = torch.ops.aten.mul_.Tensor(c, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    add_1 = torch.ops.aten.add.Tensor(add, c)
    return (add_1,)
)"),
      "inputs: data, -, data; outputs: non_alias");
  // 3. a.mul_(2); return a: the output is the input.
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (mul_, a)
)"),
            "inputs: data; outputs: is_input@0, is_input@0");
  // 5. transpose_ is a metadata mutation; 13-like: two t_() cancel out.
  EXPECT_EQ(
      Summary(
          R"(def forward(self, a: "f32[3, 4][4, 1]cpu", b: "f32[4, 3][3, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    add = torch.ops.aten.add.Tensor(transpose_, b)
    return (add,)
)"),
      "inputs: metadata, -; outputs: non_alias");
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    t_ = torch.ops.aten.t_.default(a)
    t__1 = torch.ops.aten.t_.default(t_)
    add = torch.ops.aten.add.Tensor(t__1, 1)
    return (add,)
)"),
            "inputs: -; outputs: non_alias");
  // A write through a view of an input is a data mutation of the input.
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    select = torch.ops.aten.select.int(a, 0, 1)
    fill_ = torch.ops.aten.fill_.Scalar(select, 0)
    return (a,)
)"),
            "inputs: data; outputs: is_input@0");
  // set_ changes the storage: not a data mutation.
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    return (set_,)
)"),
            "inputs: metadata+storage, -; outputs: is_input@0");
}

// Per input: "data hidden no_grad leaf rg -> in_graph" (or the error).
std::string Modes(const std::string& text, bool keep = true) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_OK(g);
  if (!g.ok()) return "";
  symbolic::ShapeEnv env;
  absl::Status shapes = ir::PropagateShapes(**g, env);
  if (!shapes.ok()) return std::string(shapes.message());
  absl::StatusOr<ViewAndMutationMeta> m =
      CollectViewAndMutationMeta(**g, {.keep_input_mutations = keep});
  if (!m.ok()) return std::string(m.status().message());
  std::vector<std::string> ins;
  for (const InputInfo& i : m->inputs) {
    std::vector<std::string> f;
    if (i.mutates_data) f.push_back("data");
    if (i.mutates_metadata) f.push_back("metadata");
    if (i.mutates_storage_metadata) f.push_back("storage");
    if (i.mutations_hidden_from_autograd) f.push_back("hidden");
    if (i.mutations_under_no_grad) f.push_back("no_grad");
    if (!i.is_leaf) f.push_back("non_leaf");
    if (i.requires_grad) f.push_back("rg");
    const char* type[] = {"-", "in_graph", "out_graph"};
    f.push_back(absl::StrCat("-> ", type[static_cast<int>(i.mutation_type)]));
    ins.push_back(absl::StrJoin(f, " "));
  }
  return absl::StrJoin(ins, "; ");
}

TEST(ViewAndMutationMetaTest, GradModeDecidesWhereAMutationIsApplied) {
  // 1. A visible mutation of an input that requires grad: out of the graph.
  const char* kMulRg = R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)";
  EXPECT_EQ(Modes(kMulRg), "data rg -> out_graph");
  // Without requires_grad it can stay in the graph, unless the mode says no.
  const char* kMul = R"(def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)";
  EXPECT_EQ(Modes(kMul), "data -> in_graph");
  EXPECT_EQ(Modes(kMul, /*keep=*/false), "data -> out_graph");
  // 7. a.detach().mul_(2) on a leaf that requires grad: hidden.
  EXPECT_EQ(Modes(R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    detach = torch.ops.aten.detach.default(a)
    mul_ = torch.ops.aten.mul_.Tensor(detach, 2)
    add = torch.ops.aten.add.Tensor(a, 3)
    return (add,)
)"),
            "data hidden rg -> in_graph");
  // 10. under no_grad.
  EXPECT_EQ(Modes(R"(# lathe: requires_grad a
# lathe: non_leaf a
def forward(self, a: "f32[4][1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, 3)
    return (add,)
)"),
            "data no_grad non_leaf rg -> in_graph");
  // 5. A metadata-only mutation is always the wrapper's.
  EXPECT_EQ(Modes(R"(def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    return (a,)
)"),
            "metadata -> out_graph");
  // 11. set_ and a data mutation, all under no_grad: both in the graph.
  const char* kSetThenMul = R"(# lathe: requires_grad a
# lathe: requires_grad b
def forward(self, a: "f32[3, 3][3, 1]cpu", b: "f32[3, 3][3, 1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(b, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)";
  EXPECT_EQ(Modes(kSetThenMul),
            "metadata storage no_grad rg -> in_graph; data no_grad rg -> "
            "in_graph");
  // 12. The same set_, then a.mul_(2) with grad enabled.
  EXPECT_EQ(Modes(R"(# lathe: requires_grad a
# lathe: requires_grad b
def forward(self, a: "f32[3, 3][3, 1]cpu", b: "f32[3, 3][3, 1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)"),
            "Encountered a set_ on a graph input ('a'), but the input has "
            "other mutations that we cannot keep in the graph "
            "(requires_grad=True, mutations under no_grad=False, hidden from "
            "autograd=False)");
  // 13. set_ away and back again is no mutation.
  EXPECT_EQ(Modes(R"(def forward(self, a: "f32[4][1]cpu", b: "f32[4][1]cpu"):
    alias = torch.ops.aten.alias.default(a)
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    set__1 = torch.ops.aten.set_.source_Tensor(a, alias)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)"),
            "no_grad -> -; -> -");
}

TEST(ViewAndMutationMetaTest, OutputAliasing) {
  // 16. return a.view(-1).
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[2, 2][2, 1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)"),
            "inputs: -; outputs: alias_of_input@0");
  // 19. one view of an intermediate that requires grad.
  const char* kIntermediate = R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 3)
    view = torch.ops.aten.view.default(mul, [-1])
    view_1 = torch.ops.aten.view.default(mul, [-1])
    return %s
)";
  auto with = [&](const char* ret) {
    std::string s = kIntermediate;
    s.replace(s.find("%s"), 2, ret);
    return s;
  };
  EXPECT_EQ(Summary(with("(view,)")), "inputs: -; outputs: unsafe_view_alias");
  // 20. two views of one intermediate: the base becomes an extra output.
  EXPECT_EQ(Summary(with("(view, view_1)")),
            "inputs: -; outputs: alias_of_intermediate_save_as_output@0, "
            "alias_of_intermediate@0; bases: 1");
  // 21. a view and its base.
  EXPECT_EQ(Summary(with("(view, mul)")),
            "inputs: -; outputs: alias_of_intermediate_base_is_user_output@1, "
            "non_alias");
  // 22. without requires_grad nothing is an alias of an intermediate.
  EXPECT_EQ(Summary(R"(def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 3)
    view = torch.ops.aten.view.default(mul, [-1])
    return (view, mul)
)"),
            "inputs: -; outputs: non_alias, non_alias");
  // 23. multi-output views of an input that requires grad: aliasing hidden.
  EXPECT_EQ(Summary(R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    unbind = torch.ops.aten.unbind.int(a)
    getitem = unbind[0]
    getitem_1 = unbind[1]
    return (getitem, getitem_1)
)"),
            "inputs: -; outputs: non_alias, non_alias");
  // 26. (a.detach(), a) of an intermediate: the detached output is
  // regenerated from the other (#100348).
  EXPECT_EQ(Summary(R"(# lathe: requires_grad x
def forward(self, x: "f32[2, 3][3, 1]cpu"):
    add = torch.ops.aten.add.Tensor(x, 1)
    t = torch.ops.aten.t.default(add)
    detach = torch.ops.aten.detach.default(t)
    return (detach, t)
)"),
            "inputs: -; outputs: alias_of_intermediate_base_is_user_output@1, "
            "alias_of_intermediate_save_as_output@0; bases: 1");
}

}  // namespace
}  // namespace lathe::aot
