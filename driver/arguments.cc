#include "driver/arguments.h"

#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "aot/flatten_composites.h"
#include "ir/known_ops.h"
#include "ir/value.h"
#include "status_macros.h"

namespace lathe {

namespace {

// The argument `name` whose value `meta` describes.
absl::StatusOr<ArgumentSpec> SpecOf(const std::string& name,
                                    const ir::ValueMeta& meta,
                                    const CompositeLayout* layout) {
  ArgumentSpec a;
  a.name = name;
  switch (meta.kind) {
    case ir::ValueMeta::Kind::kNone:
      a.kind = ArgumentSpec::Kind::kNone;
      return a;
    case ir::ValueMeta::Kind::kTensor:
      a.kind = layout != nullptr && layout->type != nullptr
                   ? ArgumentSpec::Kind::kComposite
                   : ArgumentSpec::Kind::kTensor;
      if (a.kind == ArgumentSpec::Kind::kComposite) {
        a.type = std::string(layout->type->name());
      }
      a.dtype = meta.tensor.dtype;
      a.device = meta.tensor.device;
      a.rank = static_cast<int>(meta.tensor.dim());
      return a;
    case ir::ValueMeta::Kind::kSym:
      a.kind = meta.sym.is_bool()    ? ArgumentSpec::Kind::kBool
               : meta.sym.is_float() ? ArgumentSpec::Kind::kFloat
                                     : ArgumentSpec::Kind::kInt;
      return a;
    case ir::ValueMeta::Kind::kTuple:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("input '", name,
                   "' is a tuple, which a compiled function "
                   "cannot take"));
}

// A value's annotation in a manifest: "f32[s0, 784][784, 1]cpu", "Sym(zf0)",
// "-" for None.
std::string AnnotationText(const ir::ValueMeta& meta) {
  std::string a = meta.ToAnnotation();
  return a.empty() ? "-" : a;
}

// A tensor value of an operand the hints read: a tensor's own, a
// composite's outer sizes and strides.
bool OuterDims(const Operand& o, absl::Span<const int64_t>* sizes,
               absl::Span<const int64_t>* strides) {
  if (o.kind == Operand::Kind::kTensor && o.tensor.defined()) {
    *sizes = o.tensor.sizes();
    *strides = o.tensor.strides();
    return true;
  }
  if (o.kind == Operand::Kind::kComposite && o.composite != nullptr) {
    *sizes = o.composite->sizes;
    *strides = o.composite->strides;
    return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> ConstantsOf(const ir::Graph& graph) {
  std::vector<std::string> names;
  absl::flat_hash_set<std::string> seen;
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::Node::Kind::kGetAttr &&
        graph.attributes().constants.count(node->target()) == 0 &&
        seen.insert(node->target()).second) {
      names.push_back(node->target());
    }
  }
  return names;
}

absl::StatusOr<std::vector<ArgumentSpec>> ArgumentsOf(
    const ir::Graph& written, const std::vector<std::string>& constants,
    std::vector<std::string>* annotations, Device device) {
  ASSIGN_OR_RETURN(auto composites, aot::DeclaredComposites(written));
  std::vector<ArgumentSpec> out;
  for (const ir::Node* p : written.Placeholders()) {
    auto it = composites.find(p->name());
    ASSIGN_OR_RETURN(ArgumentSpec a,
                     SpecOf(p->name(), p->meta(),
                            it == composites.end() ? nullptr : &it->second));
    out.push_back(std::move(a));
    if (annotations != nullptr)
      annotations->push_back(AnnotationText(p->meta()));
  }
  for (const std::string& name : constants) {
    const ir::Node* node = nullptr;
    for (const auto& n : written.nodes()) {
      if (n->kind() == ir::Node::Kind::kGetAttr && n->target() == name) {
        node = n.get();
        break;
      }
    }
    if (node == nullptr) {
      return absl::InternalError(
          absl::StrCat("the compiled graph reads constant 'self.", name,
                       "', which the graph as written does not"));
    }
    ASSIGN_OR_RETURN(ArgumentSpec a,
                     SpecOf(absl::StrCat("self.", name), node->meta(),
                            /*layout=*/nullptr));
    a.constant = true;
    out.push_back(std::move(a));
    if (annotations != nullptr)
      annotations->push_back(AnnotationText(node->meta()));
  }
  for (ArgumentSpec& a : out) {
    const bool tensor = a.kind == ArgumentSpec::Kind::kTensor ||
                        a.kind == ArgumentSpec::Kind::kComposite;
    if (tensor && device.is_cuda() && a.device.is_cpu()) a.device = device;
  }
  return out;
}

std::vector<std::pair<symbolic::Expr, symbolic::Value>> SymbolValuesOf(
    const ir::Graph& written, absl::Span<const Operand> args) {
  std::vector<std::pair<symbolic::Expr, symbolic::Value>> out;
  std::vector<ir::Node*> placeholders = written.Placeholders();
  absl::flat_hash_map<const ir::Node*, const Operand*> given;
  for (size_t k = 0; k < placeholders.size() && k < args.size(); ++k) {
    const ir::ValueMeta& m = placeholders[k]->meta();
    const Operand& a = args[k];
    given[placeholders[k]] = &a;
    if (m.kind == ir::ValueMeta::Kind::kSym && m.sym.is_symbol() &&
        m.sym.is_int() && a.kind == Operand::Kind::kInt) {
      out.emplace_back(m.sym, symbolic::Value::Int(a.i));
    }
    absl::Span<const int64_t> sizes, strides;
    if (m.kind != ir::ValueMeta::Kind::kTensor ||
        !OuterDims(a, &sizes, &strides) ||
        static_cast<int64_t>(sizes.size()) != m.tensor.dim()) {
      continue;
    }
    ir::ForEachSymbolDim(m.tensor, [&](symbolic::Expr e, bool stride, int d) {
      out.emplace_back(e, symbolic::Value::Int(stride ? strides[d] : sizes[d]));
    });
  }
  // An .item() of an input that PyTorch annotated with a backed symbol
  // (`_local_scalar_dense: "Sym(s16)"`) takes its value from that input.
  for (const auto& node : written.nodes()) {
    const ir::ValueMeta& m = node->meta();
    if (node->op() != ir::Known().local_scalar_dense ||
        m.kind != ir::ValueMeta::Kind::kSym || !m.sym.is_symbol() ||
        !m.sym.is_int() || node->args().empty() ||
        node->args()[0].kind != ir::Arg::Kind::kNode) {
      continue;
    }
    auto it = given.find(node->args()[0].node);
    if (it == given.end()) continue;
    const Operand& a = *it->second;
    if (a.kind == Operand::Kind::kTensor && a.tensor.defined() &&
        a.tensor.dim() == 0 && IsIntegral(a.tensor.dtype(), false)) {
      out.emplace_back(m.sym, symbolic::Value::Int(IntOf(a.tensor)));
    }
  }
  return out;
}

absl::flat_hash_map<std::string, symbolic::Value> HintsOf(
    const ir::Graph& written, absl::Span<const Operand> args) {
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  for (const auto& [symbol, value] : SymbolValuesOf(written, args)) {
    hints.emplace(std::string(symbol.name()), value);
  }
  return hints;
}

absl::flat_hash_map<std::string, int64_t> StorageOffsetsOf(
    const ir::Graph& written, absl::Span<const Operand> args) {
  absl::flat_hash_map<std::string, int64_t> offsets;
  std::vector<ir::Node*> placeholders = written.Placeholders();
  for (size_t k = 0; k < placeholders.size() && k < args.size(); ++k) {
    const Operand& a = args[k];
    if (placeholders[k]->meta().kind == ir::ValueMeta::Kind::kTensor &&
        a.kind == Operand::Kind::kTensor && a.tensor.defined() &&
        a.tensor.storage_offset() != 0) {
      offsets[placeholders[k]->name()] = a.tensor.storage_offset();
    }
  }
  return offsets;
}

int64_t IntOf(const Tensor& t) {
  int64_t v = 0;
  VisitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<int64_t>(*static_cast<const T*>(t.data_ptr()));
    }
  });
  return v;
}

std::string GuardText(const ir::Graph& written,
                      const symbolic::GuardSet& guards, int i) {
  std::string text = guards.Describe(i);
  std::vector<ir::Node*> inputs = written.Placeholders();
  for (size_t k = inputs.size(); k-- > 0;) {
    text = absl::StrReplaceAll(
        text,
        {{absl::StrCat("t", k, "."), absl::StrCat(inputs[k]->name(), ".")},
         {absl::StrCat("a", k), inputs[k]->name()}});
  }
  return text;
}

}  // namespace lathe
