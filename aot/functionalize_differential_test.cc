// Differential test: random graphs that take views of inputs and
// intermediates and mutate them in place (data, t_/unsqueeze_, set_), under
// no_grad as inference runs. Each must give the plain interpreter's outputs
// and input updates bit for bit twice: functionalized (epilogue in the
// graph) and run by the interpreter; and through AotDispatch, the functional
// graph interpreted and then the RuntimeWrapperPlan (mutations kept in the
// graph or all applied by the plan, alternately), where outputs must also
// alias the inputs they alias in eager.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aot/aot_dispatch.h"
#include "aot/functionalize.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "runtime/tensor.h"

namespace lathe::aot {
namespace {

constexpr char kHeader[] =
    "def forward(self, x: \"f32[4, 6][6, 1]cpu\", y: \"f32[6][1]cpu\", z: "
    "\"f32[4, 6][6, 1]cpu\"):\n"
    "    _set_grad_enabled = torch._C._set_grad_enabled(False)\n";

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

// Whether AOT rejects `text` as PyTorch would (a write to a storage set_
// left behind): not a program to compare.
bool RejectedByAot(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  symbolic::ShapeEnv env;
  return g.ok() && AotDispatch(**g, env).status().code() ==
                       absl::StatusCode::kInvalidArgument;
}

int rejected_by_aot = 0;  // candidate lines, over the whole run

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
    // (Only set_ can make AOT reject a program.)
    if (text.find("set_.source") != std::string::npos && RejectedByAot(text)) {
      ++rejected_by_aot;
      continue;
    }
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
  EXPECT_GT(mutating, 400);         // most graphs really mutate something
  EXPECT_LT(rejected_by_aot, 500);  // frozen storage is rare
}

// Equal sizes and values, and strides too when `layout`.
void ExpectSameTensor(const Tensor& got, const Tensor& want,
                      const std::string& what, bool layout = true) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (layout) {
    ASSERT_EQ(got.strides(), want.strides()) << what;
  }
  ForEachIndex(want.sizes(), [&](absl::Span<const int64_t> j) {
    ASSERT_EQ(got.GetDouble(j), want.GetDouble(j)) << what;
  });
}

TEST(FunctionalizeDifferentialTest, RandomGraphsThroughThePlanMatchEager) {
  std::mt19937 rng(20261122);
  int with_epilogue = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::string text = RandomGraph(rng, 10);
    bool keep = trial % 2 == 0;
    SCOPED_TRACE(absl::StrCat("trial ", trial, " keep ", keep, ":\n", text));
    std::vector<ir::Value> a = Inputs(), b = Inputs();
    const std::vector<ir::Value> b_original = b;  // the caller's objects
    absl::StatusOr<ir::Interpretation> want = RunText(text, a);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
    ASSERT_TRUE(g.ok());
    symbolic::ShapeEnv env;
    AotOptions options;
    options.mutations.keep_input_mutations = keep;
    absl::StatusOr<AotGraph> aot = AotDispatch(**g, env, options);
    ASSERT_TRUE(aot.ok()) << aot.status();
    with_epilogue += !aot->plan.epilogue().empty();
    absl::StatusOr<ir::Interpretation> got =
        InterpretWithPlan(**g, aot->plan, b);
    ASSERT_TRUE(got.ok()) << got.status() << "\n"
                          << ir::PrintGraph(**g) << aot->plan.CppSource();
    ASSERT_EQ(got->outputs.size(), want->outputs.size());
    bool has_set = text.find("set_.source") != std::string::npos;
    for (size_t i = 0; i < want->outputs.size(); ++i) {
      const Tensor &w = want->outputs[i].tensor, &o = got->outputs[i].tensor;
      // An output aliasing an input is that view of it, layout and all; a
      // fresh output may be laid out as the functional op made it.
      bool views_input = false;
      for (size_t k = 0; k < a.size(); ++k) {
        views_input = views_input || w.storage() == a[k].tensor.storage();
      }
      ExpectSameTensor(o, w,
                       absl::StrCat("output ", i, "\n", ir::PrintGraph(**g),
                                    aot->plan.CppSource()),
                       views_input && !has_set);
      // set_ may leave eager aliasing a storage the functional graph copied
      // (as in PyTorch); otherwise aliasing an input must be kept.
      for (size_t k = 0; k < a.size() && !has_set; ++k) {
        ASSERT_EQ(w.storage() == a[k].tensor.storage(),
                  o.storage() == b_original[k].tensor.storage())
            << "output " << i << " aliases input " << k << " in one only";
      }
    }
    // The inputs' original storages hold what eager left in them.
    for (size_t k = 0; k < a.size(); ++k) {
      ExpectSameTensor(b_original[k].tensor, a[k].tensor,
                       absl::StrCat("input ", k));
    }
  }
  EXPECT_GT(with_epilogue, 200);  // the plan really applies mutations
}

}  // namespace
}  // namespace lathe::aot
