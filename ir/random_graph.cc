#include "ir/random_graph.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "runtime/tensor.h"

namespace lathe::testing {
namespace {

std::string Header(const RandomGraphOptions& o) {
  std::string rows = o.dynamic ? "s0" : "4";
  std::string stride = "6";
  std::string text;
  if (o.dynamic) text += "# lathe: hint s0 4\n";
  if (o.scalars) text += "# lathe: hint zf0 0.5\n";
  absl::StrAppend(
      &text, "def forward(self, x: \"f32[", rows, ", 6][", stride,
      ", 1]cpu\", y: \"f32[6][1]cpu\", z: \"f32[", rows, ", 6][", stride,
      ", 1]cpu\"", o.scalars ? ", lr: \"Sym(zf0)\"" : "", "):\n",
      "    _set_grad_enabled = torch._C._set_grad_enabled(False)\n");
  return text;
}

bool Runs(const std::string& text, const RandomProgram& p) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  return g.ok() && ir::Interpret(**g, p.Inputs()).ok();
}

}  // namespace

std::vector<ir::Value> RandomProgram::Inputs(double lr) const {
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
  if (options.scalars) v.push_back(ir::Value::Float(lr));
  return v;
}

RandomProgram RandomGraph(std::mt19937& rng,
                          const RandomGraphOptions& options) {
  RandomProgram p;
  p.options = options;
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  const std::string header = Header(options);
  std::vector<std::string> names = {"x", "y", "z"};
  std::vector<std::string> body;
  int id = 0;
  const int kinds = 19 + (options.scalars ? 4 : 0);
  for (int attempt = 0; attempt < options.lines * 8 &&
                        static_cast<int>(body.size()) < options.lines;
       ++attempt) {
    std::string t = names[pick(static_cast<int>(names.size()))];
    std::string u = names[pick(static_cast<int>(names.size()))];
    std::string name = absl::StrCat("v", id);
    std::string call;
    switch (pick(kinds)) {
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
      case 5:  // reshape copies where view has no layout for the shape
        call =
            absl::StrCat("torch.ops.aten.", pick(2) == 0 ? "view" : "reshape",
                         ".default(", t, ", [-1])");
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
      case 18:
        call = absl::StrCat("torch.ops.aten.sub_.Tensor(", t, ", 1)");
        break;
      // With a float scalar input.
      case 19:
        call = absl::StrCat("torch.ops.aten.mul.Tensor(", t, ", lr)");
        break;
      case 20:
        call = absl::StrCat("torch.ops.aten.add_.Tensor(", t, ", ", u,
                            ", alpha = lr)");
        break;
      case 21:
        call = absl::StrCat("torch.ops.aten.div.Tensor(", t, ", lr)");
        break;
      default:
        call = absl::StrCat("torch.ops.aten.mul_.Scalar(", t, ", lr)");
        break;
    }
    std::string line = absl::StrCat("    ", name, " = ", call, "\n");
    std::vector<std::string> all = names;
    all.push_back(name);
    std::string text =
        absl::StrCat(header, absl::StrJoin(body, ""), line, "    return (",
                     absl::StrJoin(all, ", "), ")\n");
    if (!Runs(text, p)) continue;  // not a valid eager program
    if (options.reject && options.reject(text)) continue;
    body.push_back(line);
    names.push_back(name);
    ++id;
  }
  // Return a few recent values and an input.
  std::vector<std::string> outs;
  for (size_t i = names.size() > 3 ? names.size() - 3 : 0; i < names.size();
       ++i) {
    outs.push_back(names[i]);
  }
  outs.push_back("x");
  p.text = absl::StrCat(header, absl::StrJoin(body, ""), "    return (",
                        absl::StrJoin(outs, ", "), ")\n");
  return p;
}

}  // namespace lathe::testing
