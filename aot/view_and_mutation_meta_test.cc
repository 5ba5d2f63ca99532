#include "aot/view_and_mutation_meta.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"

namespace lathe::aot {
namespace {

// "inputs: data, -; outputs: is_input@0, non_alias" for compact checks.
std::string Summary(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return "";
  symbolic::ShapeEnv env;
  absl::StatusOr<ViewAndMutationMeta> m = CollectViewAndMutationMeta(**g, env);
  EXPECT_TRUE(m.ok()) << m.status();
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
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    return (set_,)
)"),
            "inputs: metadata+storage, -; outputs: is_input@0");
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
}

}  // namespace
}  // namespace lathe::aot
