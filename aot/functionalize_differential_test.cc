// Differential test: random graphs that take views of inputs and
// intermediates and mutate them in place. Functionalized and run by the
// interpreter, each must give the plain interpreter's outputs and input
// updates bit for bit.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aot/functionalize.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "runtime/tensor.h"

namespace lathe::aot {
namespace {

constexpr char kHeader[] =
    "def forward(self, x: \"f32[4, 6][6, 1]cpu\", y: \"f32[6][1]cpu\", z: "
    "\"f32[4, 6][6, 1]cpu\"):\n";

std::vector<ir::Value> Inputs() {
  std::vector<ir::Value> v;
  int k = 0;
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{4, 6}, {6}, {4, 6}}) {
    Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
    int64_t i = 0;
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
      t.SetDouble(j, static_cast<double>((i++ * 7 + 3 * k) % 13) - 6);
    });
    ++k;
    v.push_back(ir::Value::OfTensor(t));
  }
  return v;
}

absl::StatusOr<ir::Interpretation> RunText(const std::string& text,
                                           std::vector<ir::Value> inputs) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (!g.ok()) return g.status();
  return ir::Interpret(**g, std::move(inputs));
}

// A random graph: each candidate line is kept only if eager runs it.
std::string RandomGraph(std::mt19937& rng, int lines) {
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  std::vector<std::string> names = {"x", "y", "z"};
  std::vector<std::string> body;
  int id = 0;
  for (int attempt = 0;
       attempt < lines * 8 && static_cast<int>(body.size()) < lines;
       ++attempt) {
    std::string t = names[pick(static_cast<int>(names.size()))];
    std::string u = names[pick(static_cast<int>(names.size()))];
    std::string name = absl::StrCat("v", id);
    std::string call;
    switch (pick(19)) {
      case 0:
        call = absl::StrCat("torch.ops.aten.slice.Tensor(", t, ", ", pick(2),
                            ", ", pick(3), ", ", 2 + pick(4), ")");
        break;
      case 1:
        call = absl::StrCat("torch.ops.aten.select.int(", t, ", ", pick(2),
                            ", ", pick(3), ")");
        break;
      case 2:
        call = absl::StrCat("torch.ops.aten.diagonal.default(", t, ", ",
                            pick(3) - 1, ")");
        break;
      case 3:
        call = absl::StrCat("torch.ops.aten.t.default(", t, ")");
        break;
      case 4:
        call = absl::StrCat("torch.ops.aten.unsqueeze.default(", t, ", ",
                            pick(2), ")");
        break;
      case 5:
        call = absl::StrCat("torch.ops.aten.view.default(", t, ", [-1])");
        break;
      case 6:
        call = absl::StrCat("torch.ops.aten.permute.default(", t, ", [1, 0])");
        break;
      case 7:
        call = absl::StrCat("torch.ops.aten.as_strided.default(", t,
                            ", [2, 2], [3, 1], ", pick(4), ")");
        break;
      case 8:
        call = absl::StrCat("torch.ops.aten.add_.Tensor(", t, ", ", u, ")");
        break;
      case 9:
        call = absl::StrCat("torch.ops.aten.mul_.Tensor(", t, ", ", pick(3) - 1,
                            ")");
        break;
      case 10:
        call =
            absl::StrCat("torch.ops.aten.fill_.Scalar(", t, ", ", pick(5), ")");
        break;
      case 11:
        call = absl::StrCat("torch.ops.aten.copy_.default(", t, ", ", u, ")");
        break;
      case 12:
        call = absl::StrCat("torch.ops.aten.clamp_.default(", t, ", -2, 2)");
        break;
      case 13:
        call = absl::StrCat("torch.ops.aten.add.Tensor(", t, ", ", u, ")");
        break;
      case 14:
        call = absl::StrCat("torch.ops.aten.clone.default(", t, ")");
        break;
      case 15:
        call = absl::StrCat("torch.ops.aten.t_.default(", t, ")");
        break;
      case 16:
        call = absl::StrCat("torch.ops.aten.unsqueeze_.default(", t, ", ",
                            pick(2), ")");
        break;
      case 17:
        call =
            absl::StrCat("torch.ops.aten.set_.source_Tensor(", t, ", ", u, ")");
        break;
      default:
        call = absl::StrCat("torch.ops.aten.sub_.Tensor(", t, ", 1)");
        break;
    }
    std::string line = absl::StrCat("    ", name, " = ", call, "\n");
    std::vector<std::string> all = names;
    all.push_back(name);
    std::string text =
        absl::StrCat(kHeader, absl::StrJoin(body, ""), line, "    return (",
                     absl::StrJoin(all, ", "), ")\n");
    if (!RunText(text, Inputs()).ok()) continue;  // not a valid eager program
    body.push_back(line);
    names.push_back(name);
    ++id;
  }
  // Return a few recent values and an input.
  std::vector<std::string> outs;
  for (size_t i = names.size() > 3 ? names.size() - 3 : 0; i < names.size();
       ++i)
    outs.push_back(names[i]);
  outs.push_back("x");
  return absl::StrCat(kHeader, absl::StrJoin(body, ""), "    return (",
                      absl::StrJoin(outs, ", "), ")\n");
}

TEST(FunctionalizeDifferentialTest, RandomViewAndMutationGraphsMatchEager) {
  std::mt19937 rng(20261121);
  int mutating = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::string text = RandomGraph(rng, 10);
    SCOPED_TRACE(absl::StrCat("trial ", trial, ":\n", text));
    std::vector<ir::Value> a = Inputs(), b = Inputs();
    absl::StatusOr<ir::Interpretation> want = RunText(text, a);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
    ASSERT_TRUE(g.ok());
    symbolic::ShapeEnv env;
    absl::StatusOr<bool> changed = Functionalize(**g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    mutating += *changed;
    absl::StatusOr<ir::Interpretation> got = ir::Interpret(**g, b);
    ASSERT_TRUE(got.ok()) << got.status() << "\n" << ir::PrintGraph(**g);
    ASSERT_EQ(got->outputs.size(), want->outputs.size());
    for (size_t i = 0; i < want->outputs.size(); ++i) {
      const Tensor &w = want->outputs[i].tensor, &o = got->outputs[i].tensor;
      ASSERT_EQ(w.sizes(), o.sizes()) << "output " << i;
      ForEachIndex(w.sizes(), [&](absl::Span<const int64_t> j) {
        ASSERT_EQ(o.GetDouble(j), w.GetDouble(j)) << "output " << i << "\n"
                                                  << ir::PrintGraph(**g);
      });
    }
    for (size_t k = 0; k < a.size(); ++k) {
      ForEachIndex(a[k].tensor.sizes(), [&](absl::Span<const int64_t> j) {
        ASSERT_EQ(b[k].tensor.GetDouble(j), a[k].tensor.GetDouble(j))
            << "input " << k << "\n"
            << ir::PrintGraph(**g);
      });
    }
  }
  EXPECT_GT(mutating, 400);  // most graphs really mutate something
}

}  // namespace
}  // namespace lathe::aot
