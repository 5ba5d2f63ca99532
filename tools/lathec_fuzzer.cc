// libFuzzer target for `lathec run` end to end: the input is graph text;
// the target writes it to a fresh directory with inputs made from its
// annotations (every placeholder, composite leaf and constant; symbolic
// sizes take 2 or 3), runs LathecRun under a 64 MiB memory limit, and
// removes everything. Any input must give a result or one clean error:
// never a crash, a sanitizer report or a hang. The input size is not
// capped, so deep nesting is reached.
//
//   bazel build --config=fuzz //tools:lathec_fuzzer
//   bazel-bin/tools/lathec_fuzzer -close_fd_mask=1 -max_total_time=600 \
//       <copy of ir/testdata/graphs>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "aot/flatten_composites.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "symbolic/evaluate.h"
#include "tools/lathec_run.h"

namespace lathe {
namespace {

// A value for each symbol of the annotations: 2 or 3, by name.
int64_t SymbolValue(absl::string_view name) {
  return 2 + static_cast<int64_t>(name.size() % 2);
}

// The tensor an annotation asks for (contiguous, small values), or none
// when its sizes are not small concrete numbers after substitution.
bool MakeTensor(const ir::TensorMeta& m, Tensor* out) {
  symbolic::Assignment values;
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  for (const symbolic::Expr& e : m.sizes) {
    for (symbolic::Expr s : symbolic::FreeSymbols(e)) {
      values[s] = symbolic::Value::Int(SymbolValue(s.name()));
    }
    absl::StatusOr<symbolic::Value> v = symbolic::Evaluate(e, values);
    if (!v.ok() || v->type != symbolic::ExprType::kInt || v->i < 0 ||
        v->i > 64) {
      return false;
    }
    numel *= v->i;
    if (numel > 4096) return false;
    sizes.push_back(v->i);
  }
  absl::StatusOr<Tensor> t = Tensor::Empty(sizes, m.dtype);
  if (!t.ok()) return false;
  int64_t k = 0;
  ForEachIndex(t->sizes(), [&](absl::Span<const int64_t> i) {
    t->SetDouble(i, static_cast<double>(k++ % 7) - 3);
  });
  *out = *t;
  return true;
}

void WriteInputs(const ir::Graph& g, const std::string& dir) {
  absl::StatusOr<absl::flat_hash_map<std::string, aot::CompositeLayout>>
      composites = aot::DeclaredComposites(g);
  for (const auto& node : g.nodes()) {
    const ir::ValueMeta& m = node->meta();
    std::vector<std::string> names;
    if (node->kind() == ir::Node::Kind::kGetAttr) {
      names.push_back(node->target());
    } else if (node->kind() == ir::Node::Kind::kPlaceholder) {
      aot::CompositeLayout layout = aot::CompositeLayout::Plain();
      if (composites.ok()) {
        auto it = composites->find(node->name());
        if (it != composites->end()) layout = it->second;
      }
      aot::LeafNames(node->name(), layout, &names);
    } else {
      continue;
    }
    Tensor t;
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      if (!MakeTensor(m.tensor, &t)) continue;
    } else if (m.kind == ir::ValueMeta::Kind::kSym) {
      bool is_float = m.sym.is_float();
      t = *Tensor::Empty({}, is_float ? DType::kFloat64 : DType::kInt64);
      t.SetDouble({}, is_float ? 0.5
                               : static_cast<double>(SymbolValue(
                                     m.sym.is_symbol() ? m.sym.name() : "")));
    } else {
      continue;
    }
    for (const std::string& n : names) {
      WriteNpy(absl::StrCat(dir, "/", n, ".npy"), t).IgnoreError();
    }
  }
}

}  // namespace
}  // namespace lathe

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lathe;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string base = absl::StrCat(tmp ? tmp : "/tmp", "/lathec_fuzz_XXXXXX");
  std::vector<char> name(base.begin(), base.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) return 0;
  std::string dir = name.data();
  std::string inputs = dir + "/inputs";
  mkdir(inputs.c_str(), 0755);
  std::ofstream(dir + "/graph.txt", std::ios::binary) << text;
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (g.ok()) WriteInputs(**g, inputs);
  LathecRun({dir + "/graph.txt", "--inputs", inputs, "--out", dir + "/out",
             "--max-memory", "64M"})
      .IgnoreError();
  RemoveTree(dir).IgnoreError();
  return 0;
}
