// Every node PyTorch 2.15 annotated in the torch corpus (graphs it printed
// with their metas: ir/testdata/torch_corpus) gets the same meta from
// lathe's shape propagation: dtype, sizes, strides and device. A view or
// copy that follows a multi-output or layout-changing op (attention,
// sort, pooling, convolution...) relies on that op's strides being
// PyTorch's; this is the audit that finds the ones that are not.

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
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"
#include "testing/runfiles.h"

namespace lathe::ir {
namespace {

// `m` as an annotation, with the stride of every size-1 dim written as
// "*": no index reads it, and PyTorch itself is not consistent there (its
// eager view's computeStride and its fake tensors' reference view give a
// size-1 dim different strides).
std::string Canonical(const TensorMeta& m) {
  const TensorMeta& c = m;
  std::vector<std::string> strides;
  for (size_t d = 0; d < c.sizes.size(); ++d) {
    strides.push_back(c.sizes[d] == symbolic::Int(1)
                          ? "*"
                          : symbolic::ToString(c.strides[d]));
  }
  return absl::StrCat(ShortName(c.dtype), "[",
                      absl::StrJoin(c.sizes, ", ",
                                    [](std::string* out, symbolic::Expr e) {
                                      out->append(symbolic::ToString(e));
                                    }),
                      "][", absl::StrJoin(strides, ", "), "]",
                      c.device.ToString());
}

// The annotation of every annotated tensor node of `g` whose sizes are all
// numbers, by name (a data-dependent size's unbacked symbol is numbered
// as each tracer goes, so PyTorch's u3 may be lathe's u1).
absl::flat_hash_map<std::string, std::string> Annotations(const Graph& g) {
  absl::flat_hash_map<std::string, std::string> out;
  for (const auto& n : g.nodes()) {
    if (n->kind() != Node::Kind::kCall) continue;
    if (n->meta().kind != ValueMeta::Kind::kTensor) continue;
    bool concrete = true;
    for (symbolic::Expr e : n->meta().tensor.sizes) {
      concrete &= e.kind() == symbolic::ExprKind::kInteger;
    }
    if (concrete) out[n->name()] = Canonical(n->meta().tensor);
  }
  return out;
}

TEST(TorchCorpusMetaTest, EveryAnnotatedNodeGetsPyTorchsMeta) {
  std::string root = lathe::testing::RunfilePath("ir/testdata/torch_corpus");
  DIR* dir = opendir(root.c_str());
  ASSERT_NE(dir, nullptr) << root;
  std::vector<std::string> cases;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    // make_fx(f) on real tensors and torch.compile's static forward
    // graphs: every size and stride a number.
    if (absl::EndsWith(name, "__real") || absl::EndsWith(name, "__aot")) {
      cases.push_back(name);
    }
  }
  closedir(dir);
  std::sort(cases.begin(), cases.end());
  int checked = 0;
  std::vector<std::string> wrong;
  for (const std::string& name : cases) {
    absl::StatusOr<std::string> text = lathe::testing::ReadRunfile(
        absl::StrCat("ir/testdata/torch_corpus/", name, "/graph.txt"));
    ASSERT_TRUE(text.ok()) << name;
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(*text);
    ASSERT_TRUE(g.ok()) << name << ": " << g.status();
    absl::flat_hash_map<std::string, std::string> want = Annotations(**g);
    symbolic::ShapeEnv env;
    absl::Status st = PropagateShapes(**g, env);
    ASSERT_TRUE(st.ok()) << name << ": " << st;
    for (const auto& n : (*g)->nodes()) {
      auto it = want.find(n->name());
      if (it == want.end()) continue;
      ++checked;
      std::string got = n->meta().kind == ValueMeta::Kind::kTensor
                            ? Canonical(n->meta().tensor)
                            : "(not a tensor)";
      if (got != it->second) {
        wrong.push_back(absl::StrCat(name, ": ", n->name(), " (", n->target(),
                                     "): PyTorch ", it->second, ", lathe ",
                                     got));
      }
    }
  }
  EXPECT_GE(checked, 1500);
  for (const std::string& w : wrong) ADD_FAILURE() << w;
}

}  // namespace
}  // namespace lathe::ir
