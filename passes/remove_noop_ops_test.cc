#include "passes/remove_noop_ops.h"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "passes/pass_testing.h"
#include "symbolic/shape_env.h"
#include "testing/status_matchers.h"

namespace lathe::passes {
namespace {

// FileCheck `checks` (nullopt: no change) and the interpreter gives the same
// outputs and input values before and after, bit for bit.
void Expect(const std::string& text, std::optional<std::string> checks) {
  std::optional<absl::string_view> c;
  if (checks.has_value()) c = *checks;
  EXPECT_OK(RunPassAndFileCheck<RemoveNoopOps>(text, c));
  EXPECT_OK(RunPassAndCompare<RemoveNoopOps>(text).status());
}

// Reference scenario 49 (README): a clone of an input that the graph
// returns stays (Rule A): removing it would return the input itself.
TEST(RemoveNoopOpsTest, KeepsAReturnedCloneOfAnInput) {
  Expect(R"IR(def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    return (clone,)
)IR",
         std::nullopt);
}

// Scenario 49: y = x.clone(); x.copy_(y); return y keeps the clone: the
// output would alias the input through the copy_ epilogue.
TEST(RemoveNoopOpsTest, KeepsACloneCopiedBackIntoItsInput) {
  Expect(R"IR(def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    copy_ = torch.ops.aten.copy_.default(x, clone)
    return (clone,)
)IR",
         std::nullopt);
}

// Scenario 50 (test_remove_pointless_clones): mm(a, b).clone() returns mm.
TEST(RemoveNoopOpsTest, RemovesACloneOfAnIntermediate) {
  Expect(R"IR(def forward(self, a: "f32[2, 3]", b: "f32[3, 4]"):
    mm = torch.ops.aten.mm.default(a, b)
    clone = torch.ops.aten.clone.default(mm)
    return (clone,)
)IR",
         R"IR(
CHECK: mm: "f32[2, 4][4, 1]cpu" = torch.ops.aten.mm.default(a, b)
CHECK-NOT: clone
CHECK: return (mm,)
)IR");
}

// A view of the removed clone now lives in mm's storage (its meta is
// refreshed: the pipeline's Verify checks it).
TEST(RemoveNoopOpsTest, RefreshesTheMetasOfTheUsers) {
  Expect(R"IR(def forward(self, a: "f32[2, 3]", b: "f32[3, 4]"):
    mm = torch.ops.aten.mm.default(a, b)
    clone = torch.ops.aten.clone.default(mm)
    view = torch.ops.aten.view.default(clone, [8])
    return (view,)
)IR",
         R"IR(
CHECK-NOT: clone
CHECK: view: "f32[8][1]cpu" = torch.ops.aten.view.default(mm, [8])
CHECK: return (view,)
)IR");
}

// Two clones of one intermediate, both returned: the first goes, the
// second then copies an output's storage (Rule A) and stays.
TEST(RemoveNoopOpsTest, KeepsTwoReturnedCopiesApart) {
  Expect(R"IR(def forward(self, a: "f32[2, 3]", b: "f32[3, 4]"):
    mm = torch.ops.aten.mm.default(a, b)
    clone = torch.ops.aten.clone.default(mm)
    clone_1 = torch.ops.aten.clone.default(mm)
    return (clone, clone_1)
)IR",
         R"IR(
CHECK: mm: {{.*}} = torch.ops.aten.mm.default(a, b)
CHECK-NEXT: clone_1: {{.*}} = torch.ops.aten.clone.default(mm)
CHECK-NEXT: return (mm, clone_1)
)IR");
}

// Scenario 51: a slice over the whole dimension (end INT64_MAX or at least
// the size) is its input; one that drops elements or steps is not.
TEST(RemoveNoopOpsTest, RemovesFullRangeSlices) {
  Expect(R"IR(def forward(self, x: "f32[4, 3]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 0, 9223372036854775807)
    slice_2 = torch.ops.aten.slice.Tensor(slice_1, 1, 0, 3)
    slice_3 = torch.ops.aten.slice.Tensor(slice_2, -1, 0, 5, 1)
    mul = torch.ops.aten.mul.Tensor(slice_3, 2)
    return (mul,)
)IR",
         R"IR(
CHECK-NOT: slice
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, 2)
)IR");
  Expect(R"IR(def forward(self, x: "f32[4, 3]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 9223372036854775807)
    slice_2 = torch.ops.aten.slice.Tensor(x, 1, 0, 2)
    slice_3 = torch.ops.aten.slice.Tensor(x, 0, 0, 4, 2)
    slice_4 = torch.ops.aten.slice.Tensor(x)
    add = torch.ops.aten.add.Tensor(slice_1, 1)
    add_1 = torch.ops.aten.add.Tensor(slice_2, 1)
    add_2 = torch.ops.aten.add.Tensor(slice_3, 1)
    add_3 = torch.ops.aten.add.Tensor(slice_4, 1)
    return (add, add_1, add_2, add_3)
)IR",
         std::nullopt);
}

// A symbolic end known to cover the dimension.
TEST(RemoveNoopOpsTest, SymbolicFullRangeSlice) {
  Expect(R"IR(# lathe: hint s0 4
def forward(self, x: "f32[s0, 3]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 0, sym_size_int)
    neg = torch.ops.aten.neg.default(slice_1)
    return (neg,)
)IR",
         R"IR(
CHECK-NOT: slice
CHECK: neg: {{.*}} = torch.ops.aten.neg.default(x)
)IR");
}

// Scenario 51: a view to the same shape is its input, unless the graph
// returns it and its source is an input or another output (Rule B), over
// all the outputs — here the second of two.
TEST(RemoveNoopOpsTest, SameShapeViewsUnlessAnOutputWouldBeAnInput) {
  Expect(R"IR(def forward(self, x: "f32[4, 2]"):
    view = torch.ops.aten.view.default(x, [4, 2])
    mul = torch.ops.aten.mul.Tensor(view, 2)
    return (mul,)
)IR",
         R"IR(
CHECK-NOT: view
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, 2)
)IR");
  Expect(R"IR(def forward(self, x: "f32[4, 2]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    view = torch.ops.aten.view.default(x, [4, 2])
    view_1 = torch.ops.aten.view.default(mul, [4, 2])
    return (mul, view, view_1)
)IR",
         std::nullopt);
  // Another shape is no no-op.
  Expect(R"IR(def forward(self, x: "f32[4, 2]"):
    view = torch.ops.aten.view.default(x, [8])
    mul = torch.ops.aten.mul.Tensor(view, 2)
    return (mul,)
)IR",
         std::nullopt);
}

// The rest of the registry, each entry once.
TEST(RemoveNoopOpsTest, RemovesEachRegistryEntry) {
  Expect(R"IR(def forward(self, x: "f32[2, 3]", i: "i64[2, 3]", y: "f32[2, 3]"):
    repeat = torch.ops.aten.repeat.default(x, [1, 1])
    constant_pad_nd = torch.ops.aten.constant_pad_nd.default(repeat, [0, 0, 0, 0])
    convert_element_type = torch.ops.prims.convert_element_type.default(constant_pad_nd, torch.float32)
    pow_1 = torch.ops.aten.pow.Tensor_Scalar(convert_element_type, 1)
    cat = torch.ops.aten.cat.default([pow_1])
    view = torch.ops.aten.view.dtype(cat, torch.float32)
    alias = torch.ops.aten.alias.default(view)
    copy = torch.ops.aten.copy.default(y, alias)
    floor = torch.ops.aten.floor.default(i)
    ceil = torch.ops.aten.ceil.default(floor)
    round_1 = torch.ops.aten.round.default(ceil)
    trunc = torch.ops.aten.trunc.default(round_1)
    slice_scatter = torch.ops.aten.slice_scatter.default(y, copy, 0, 0, 9223372036854775807)
    mul = torch.ops.aten.mul.Tensor(slice_scatter, trunc)
    return (mul,)
)IR",
         R"IR(
CHECK-NOT: repeat
CHECK-NOT: pad
CHECK-NOT: convert
CHECK-NOT: pow
CHECK-NOT: cat
CHECK-NOT: view
CHECK-NOT: alias
CHECK-NOT: copy
CHECK-NOT: floor
CHECK-NOT: ceil
CHECK-NOT: round
CHECK-NOT: trunc
CHECK-NOT: scatter
CHECK: mul: {{.*}} = torch.ops.aten.mul.Tensor(x, i)
)IR");
}

// Where an entry's condition fails, the call stays.
TEST(RemoveNoopOpsTest, KeepsCallsThatChangeTheirSource) {
  Expect(R"IR(def forward(self, x: "f32[2, 3]", y: "f32[4, 3]"):
    repeat = torch.ops.aten.repeat.default(x, [2, 1])
    constant_pad_nd = torch.ops.aten.constant_pad_nd.default(x, [0, 1])
    convert_element_type = torch.ops.prims.convert_element_type.default(x, torch.float64)
    pow_1 = torch.ops.aten.pow.Tensor_Scalar(x, 1.0)
    cat = torch.ops.aten.cat.default([x, x])
    floor = torch.ops.aten.floor.default(x)
    slice_scatter = torch.ops.aten.slice_scatter.default(y, x, 0, 0, 2)
    return (repeat, constant_pad_nd, convert_element_type, pow_1, cat, floor, slice_scatter)
)IR",
         std::nullopt);
}

// same_meta: a contiguous clone of a transposed tensor has other strides.
TEST(RemoveNoopOpsTest, KeepsACloneWithOtherStrides) {
  Expect(R"IR(def forward(self, x: "f32[2, 3]"):
    t = torch.ops.aten.t.default(x)
    clone = torch.ops.aten.clone.default(t, memory_format = torch.contiguous_format)
    mul = torch.ops.aten.mul.Tensor(clone, 2)
    return (mul,)
)IR",
         std::nullopt);
}

// PyTorch #174187: a clone read after its source is written in place keeps
// the old value; without it, the second copy_ would copy the new one.
TEST(RemoveNoopOpsTest, KeepsACloneOfAValueWrittenBeforeItsUse) {
  Expect(R"IR(def forward(self, x: "f32[4]", w: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    neg = torch.ops.aten.neg.default(x)
    copy_ = torch.ops.aten.copy_.default(x, neg)
    copy__1 = torch.ops.aten.copy_.default(w, clone)
    return ()
)IR",
         std::nullopt);
  // Read before the write: the clone can go.
  Expect(R"IR(def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    neg = torch.ops.aten.neg.default(clone)
    copy_ = torch.ops.aten.copy_.default(x, neg)
    return ()
)IR",
         R"IR(
CHECK-NOT: clone
CHECK: neg: {{.*}} = torch.ops.aten.neg.default(x)
CHECK-NEXT: copy_: {{.*}} = torch.ops.aten.copy_.default(x, neg)
)IR");
}

// ---- Differential: random graphs of no-ops around a copy_ epilogue ----------

// The graph of `text` with shapes propagated, or null when invalid.
std::unique_ptr<ir::Graph> Propagated(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  symbolic::ShapeEnv env;
  if (!g.ok() || !ir::PropagateShapes(**g, env).ok()) return nullptr;
  return std::move(*g);
}

// Clones, same-shape views, full slices, aliases, copies and one-input cats
// of x, y and what is computed from them; some of it copied into x or y at
// the end; a few values (inputs and copy_ results among them) returned.
std::string RandomGraph(std::mt19937& rng) {
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  const std::string header =
      "def forward(self, x: \"f32[4, 6]\", y: \"f32[4, 6]\"):\n";
  std::vector<std::string> names = {"x", "y"};
  std::string body;
  for (int k = 0; k < 8; ++k) {
    const std::string& t = names[pick(static_cast<int>(names.size()))];
    const std::string& u = names[pick(static_cast<int>(names.size()))];
    std::string call;
    switch (pick(9)) {
      case 0:
        call = absl::StrCat("aten.clone.default(", t, ")");
        break;
      case 1:
        call = absl::StrCat("aten.alias.default(", t, ")");
        break;
      case 2:
        call = absl::StrCat("aten.view.default(", t, ", [4, 6])");
        break;
      case 3:
        call = absl::StrCat("aten.slice.Tensor(", t, ", ", pick(2),
                            ", 0, 9223372036854775807)");
        break;
      case 4:
        call = absl::StrCat("aten.copy.default(", t, ", ", u, ")");
        break;
      case 5:
        call = absl::StrCat("aten.cat.default([", t, "])");
        break;
      case 6:
        call = absl::StrCat("aten.add.Tensor(", t, ", ", u, ")");
        break;
      case 7:
        call = absl::StrCat("aten.mul.Tensor(", t, ", ", pick(3) + 2, ")");
        break;
      default:
        call = absl::StrCat("aten.repeat.default(", t, ", [1, 1])");
        break;
    }
    std::string name = absl::StrCat("v", k);
    body += absl::StrCat("    ", name, " = torch.ops.", call, "\n");
    names.push_back(name);
  }
  // copy_ epilogue: a value of another storage into x and/or y.
  std::unique_ptr<ir::Graph> g =
      Propagated(absl::StrCat(header, body, "    return ()\n"));
  std::vector<std::string> outputs;
  int copies = 0;
  for (const char* in : {"x", "y"}) {
    if (g == nullptr || pick(3) == 0) continue;
    ir::StorageId target = g->Find(in)->meta().tensor.storage;
    std::vector<std::string> sources;
    for (const std::string& n : names) {
      if (g->Find(n)->meta().tensor.storage != target) sources.push_back(n);
    }
    if (sources.empty()) continue;
    std::string name = absl::StrCat("copy_", copies++);
    body +=
        absl::StrCat("    ", name, " = torch.ops.aten.copy_.default(", in, ", ",
                     sources[pick(static_cast<int>(sources.size()))], ")\n");
    if (pick(3) == 0) outputs.push_back(name);
  }
  for (int k = pick(3) + 1; k > 0; --k) {
    outputs.push_back(names[pick(static_cast<int>(names.size()))]);
  }
  return absl::StrCat(header, body, "    return (",
                      absl::StrJoin(outputs, ", "),
                      outputs.size() == 1 ? ",)\n" : ")\n");
}

// Every random graph gives the same outputs and final inputs, bit for bit,
// with no new sharing of storages between outputs and inputs.
TEST(RemoveNoopOpsDifferentialTest, RandomGraphsMatchTheInterpreter) {
  std::mt19937 rng(20261204);
  int changed = 0;
  constexpr int kTrials = 300;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::string text = RandomGraph(rng);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ":\n", text));
    absl::StatusOr<PassResult> r = RunPassAndCompare<RemoveNoopOps>(text);
    ASSERT_OK(r.status());
    changed += r->changed;
  }
  EXPECT_GT(changed, kTrials / 2);
}

}  // namespace
}  // namespace lathe::passes
