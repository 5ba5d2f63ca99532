// Every node PyTorch 2.15 annotated in the torch corpus (graphs it printed
// with their metas: ir/testdata/torch_corpus) gets the same meta from
// lathe's shape propagation: dtype, sizes, strides and device. A view or
// copy that follows a multi-output or layout-changing op (attention,
// sort, pooling, convolution...) relies on that op's strides being
// PyTorch's; this is the audit that finds the ones that are not. Graphs
// with symbolic sizes (make_fx's symbolic mode, torch.compile's dynamic
// forward graphs) are compared at the captured inputs' sizes: lathe's
// expressions and PyTorch's must give the same numbers there.

#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "runtime/dtype.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/runfiles.h"

namespace lathe::ir {
namespace {

// The corpus cases whose names end in one of `modes`, sorted.
std::vector<std::string> Cases(std::vector<std::string> modes) {
  std::string root = lathe::testing::RunfilePath("ir/testdata/torch_corpus");
  std::vector<std::string> cases;
  DIR* dir = opendir(root.c_str());
  if (dir == nullptr) return cases;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    for (const std::string& mode : modes) {
      if (absl::EndsWith(name, mode)) cases.push_back(name);
    }
  }
  closedir(dir);
  std::sort(cases.begin(), cases.end());
  return cases;
}

// The values of the symbols in `g`'s placeholders' annotations, read from
// the case's captured inputs (inputs/NAME.npy): a size or stride that is a
// bare symbol takes the input's, a Sym placeholder its 0-d value.
absl::StatusOr<symbolic::Assignment> InputSymbols(const std::string& name,
                                                  const Graph& g) {
  symbolic::Assignment values;
  for (Node* p : g.Placeholders()) {
    const ValueMeta& m = p->meta();
    bool sym = m.kind == ValueMeta::Kind::kSym && m.sym.is_symbol();
    int symbol_dims = 0;
    if (m.kind == ValueMeta::Kind::kTensor) {
      ForEachSymbolDim(m.tensor,
                       [&](symbolic::Expr, bool, int) { ++symbol_dims; });
    }
    if (symbol_dims == 0 && !sym) continue;
    ASSIGN_OR_RETURN(Tensor t, ReadNpy(lathe::testing::RunfilePath(absl::StrCat(
                                   "ir/testdata/torch_corpus/", name,
                                   "/inputs/", p->name(), ".npy"))));
    if (sym) {
      const void* v = t.data_ptr();
      if (t.dim() != 0) return absl::InvalidArgumentError(p->name());
      switch (t.dtype()) {
        case DType::kInt64:
          values[m.sym] = symbolic::Value::Int(*static_cast<const int64_t*>(v));
          break;
        case DType::kFloat64:
          values[m.sym] =
              symbolic::Value::Float(*static_cast<const double*>(v));
          break;
        default:
          return absl::InvalidArgumentError(p->name());
      }
      continue;
    }
    if (t.dim() != m.tensor.dim()) return absl::InvalidArgumentError(p->name());
    ForEachSymbolDim(m.tensor, [&](symbolic::Expr e, bool stride, int d) {
      values[e] = symbolic::Value::Int(stride ? t.strides()[d] : t.sizes()[d]);
    });
  }
  return values;
}

// `m` as an annotation, its sizes and strides evaluated at `values` ("?"
// where a symbol has none: a data-dependent size's unbacked symbol is
// numbered as each tracer goes, so PyTorch's u3 may be lathe's u1), with
// the stride of every size-1 dim written as "*": no index reads it, and
// PyTorch itself is not consistent there (its eager view's computeStride
// and its fake tensors' reference view give a size-1 dim different
// strides).
std::string AtValues(const TensorMeta& m, const symbolic::Assignment& values) {
  auto at = [&](symbolic::Expr e) {
    absl::StatusOr<symbolic::Value> v = symbolic::Evaluate(e, values);
    return v.ok() ? symbolic::ToString(*v) : std::string("?");
  };
  std::vector<std::string> sizes, strides;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    sizes.push_back(at(m.sizes[d]));
    strides.push_back(sizes.back() == "1" ? "*" : at(m.strides[d]));
  }
  return absl::StrCat(ShortName(m.dtype), "[", absl::StrJoin(sizes, ", "), "][",
                      absl::StrJoin(strides, ", "), "]", m.device.ToString());
}

// Audits the cases of `modes`: each annotated tensor node's meta from
// shape propagation against PyTorch's, at the captured inputs' sizes.
void Audit(std::vector<std::string> modes, int at_least) {
  std::vector<std::string> cases = Cases(std::move(modes));
  int checked = 0;
  std::vector<std::string> wrong;
  for (const std::string& name : cases) {
    absl::StatusOr<std::string> text = lathe::testing::ReadRunfile(
        absl::StrCat("ir/testdata/torch_corpus/", name, "/graph.txt"));
    ASSERT_TRUE(text.ok()) << name;
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(*text);
    ASSERT_TRUE(g.ok()) << name << ": " << g.status();
    absl::StatusOr<symbolic::Assignment> values = InputSymbols(name, **g);
    ASSERT_TRUE(values.ok()) << name << ": " << values.status();
    absl::flat_hash_map<std::string, std::string> want;
    for (const auto& n : (*g)->nodes()) {
      if (n->kind() != Node::Kind::kCall ||
          n->meta().kind != ValueMeta::Kind::kTensor) {
        continue;
      }
      std::string a = AtValues(n->meta().tensor, *values);
      if (!absl::StrContains(a, "?")) want[n->name()] = a;
    }
    ShapePropOptions options;
    for (const auto& [symbol, value] : *values) {
      options.hints.emplace(std::string(symbol.name()), value);
    }
    symbolic::ShapeEnv env;
    absl::Status st = PropagateShapes(**g, env, options);
    ASSERT_TRUE(st.ok()) << name << ": " << st;
    for (const auto& n : (*g)->nodes()) {
      auto it = want.find(n->name());
      if (it == want.end()) continue;
      ++checked;
      std::string got = n->meta().kind == ValueMeta::Kind::kTensor
                            ? AtValues(n->meta().tensor, *values)
                            : "(not a tensor)";
      if (got != it->second) {
        wrong.push_back(absl::StrCat(name, ": ", n->name(), " (", n->target(),
                                     "): PyTorch ", it->second, ", lathe ",
                                     got));
      }
    }
  }
  EXPECT_GE(checked, at_least);
  for (const std::string& w : wrong) ADD_FAILURE() << w;
}

// make_fx(f) on real tensors and torch.compile's static forward graphs:
// every size and stride a number.
TEST(TorchCorpusMetaTest, EveryAnnotatedNodeGetsPyTorchsMeta) {
  Audit({"__real", "__aot"}, 1500);
}

TEST(TorchCorpusMetaTest, SymbolicGraphsGetPyTorchsMetaAtTheirInputs) {
  Audit({"__symbolic", "__aot_dyn"}, 1500);
}

// The training programs' forward and backward graphs, static and dynamic:
// the backward ops' results (batch norm's, attention's gradients laid out
// (B, T, H, E), the losses') as PyTorch lays them out.
TEST(TorchCorpusMetaTest, TrainingGraphsGetPyTorchsMeta) {
  Audit({"__train_fw", "__train_bw", "__train_dyn_fw", "__train_dyn_bw"}, 300);
}

}  // namespace
}  // namespace lathe::ir
