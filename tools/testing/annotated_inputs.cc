#include "tools/testing/annotated_inputs.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "aot/flatten_composites.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"

namespace lathe::testing {
namespace {

// The tensor an annotation asks for, or false when its sizes are not
// concrete numbers within the limits after substitution.
bool MakeTensor(const ir::TensorMeta& m, const SymbolValues& symbols,
                const AnnotatedInputLimits& limits, Tensor* out) {
  symbolic::Assignment values;
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  for (const symbolic::Expr& e : m.sizes) {
    for (symbolic::Expr s : symbolic::FreeSymbols(e)) {
      values[s] = symbolic::Value::Int(symbols(s.name()));
    }
    absl::StatusOr<symbolic::Value> v = symbolic::Evaluate(e, values);
    if (!v.ok() || v->type != symbolic::ExprType::kInt || v->i < 0 ||
        v->i > limits.max_dim) {
      return false;
    }
    numel *= v->i;
    if (numel > limits.max_numel) return false;
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

}  // namespace

absl::Status WriteAnnotatedInputs(const ir::Graph& graph,
                                  const std::string& dir,
                                  const SymbolValues& symbols,
                                  double float_value,
                                  AnnotatedInputLimits limits) {
  absl::StatusOr<absl::flat_hash_map<std::string, CompositeLayout>> composites =
      aot::DeclaredComposites(graph);
  for (const auto& node : graph.nodes()) {
    const ir::ValueMeta& m = node->meta();
    std::vector<std::string> names;
    if (node->kind() == ir::Node::Kind::kGetAttr) {
      names.push_back(node->target());
    } else if (node->kind() == ir::Node::Kind::kPlaceholder) {
      CompositeLayout layout = CompositeLayout::Plain();
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
      if (!MakeTensor(m.tensor, symbols, limits, &t)) continue;
    } else if (m.kind == ir::ValueMeta::Kind::kSym) {
      bool is_float = m.sym.is_float();
      t = *Tensor::Empty({}, is_float ? DType::kFloat64 : DType::kInt64);
      t.SetDouble({}, is_float ? float_value
                               : static_cast<double>(symbols(
                                     m.sym.is_symbol() ? m.sym.name() : "")));
    } else {
      continue;
    }
    for (const std::string& n : names) {
      RETURN_IF_ERROR(WriteNpy(absl::StrCat(dir, "/", n, ".npy"), t));
    }
  }
  return absl::OkStatus();
}

}  // namespace lathe::testing
