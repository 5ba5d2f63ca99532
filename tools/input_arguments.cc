#include "tools/input_arguments.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "driver/arguments.h"
#include "ir/tensor_meta.h"
#include "runtime/arrange_arguments.h"
#include "status_macros.h"

namespace lathe {

namespace {

// A placeholder's argument from its (already read) tensor: the tensor, or
// a number placeholder's value from a 0-d one.
absl::StatusOr<Operand> InputOperand(const ir::Node& p, const Tensor& t,
                                     const std::string& file) {
  if (p.meta().kind != ir::ValueMeta::Kind::kSym) return Operand::Of(t);
  if (t.dim() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": input '", p.name(),
                     "' is a scalar and needs a 0-d .npy, got ", t.ToString()));
  }
  if (t.dtype() == DType::kBool) return Operand::Bool(t.GetDouble({}) != 0);
  if (IsFloatingPoint(t.dtype())) return Operand::Float(t.GetDouble({}));
  return Operand::Int(IntOf(t));
}

// User argument `name` laid out as `l`, its leaves taken from `set`.
absl::StatusOr<Operand> LoadArgument(const ir::Graph& graph,
                                     const std::string& name,
                                     const CompositeLayout& l,
                                     const InputSet& set,
                                     const symbolic::Assignment& values) {
  if (l.type == nullptr) {
    auto it = set.tensors.find(name);
    const ir::Node* p = graph.Find(name);
    if (p != nullptr && p->meta().kind == ir::ValueMeta::Kind::kNone) {
      return Operand();  // baked in by make_fx; its value is not read
    }
    if (it == set.tensors.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing input '", name, "'"));
    }
    // An inner tensor of a composite the graph does not name (not yet
    // flattened) is taken as the file lays it out.
    if (p == nullptr) return Operand::Of(it->second);
    Tensor t = it->second;
    if (p->meta().kind == ir::ValueMeta::Kind::kTensor) {
      ASSIGN_OR_RETURN(t, InAnnotatedLayout(name, p->meta().tensor, t, values));
    }
    return InputOperand(*p, t, set.paths.at(name));
  }
  std::vector<Operand> inner;
  for (size_t k = 0; k < l.inner.size(); ++k) {
    ASSIGN_OR_RETURN(
        Operand o,
        LoadArgument(graph, aot::InnerName(name, l, static_cast<int>(k)),
                     l.inner[k], set, values));
    inner.push_back(std::move(o));
  }
  return Compose(*l.type, name, std::move(inner));
}

}  // namespace

// A .npy file's order (C or Fortran) is how it was saved, not part of the
// value, so lathec lays every input out as the graph expects.
absl::StatusOr<Tensor> InAnnotatedLayout(const std::string& name,
                                         const ir::TensorMeta& m,
                                         const Tensor& t,
                                         const symbolic::Assignment& values) {
  if (m.dim() != t.dim() || m.dtype != t.dtype()) return t;  // the run says
  std::vector<int64_t> strides(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    // Sizes other than the annotation's are the run's to report.
    absl::StatusOr<symbolic::Value> size =
        symbolic::Evaluate(m.sizes[d], values);
    if (!size.ok() || size->type != symbolic::ExprType::kInt ||
        size->i != t.sizes()[d]) {
      return t;
    }
    absl::StatusOr<symbolic::Value> v =
        symbolic::Evaluate(m.strides[d], values);
    if (!v.ok() || v->type != symbolic::ExprType::kInt) return t;
    strides[d] = v->i;
  }
  absl::StatusOr<symbolic::Value> offset =
      symbolic::Evaluate(m.storage_offset, values);
  int64_t off = offset.ok() && offset->type == symbolic::ExprType::kInt
                    ? offset->i
                    : t.storage_offset();
  return LaidOut(t, strides, off, name, m.ToAnnotation());
}

// The user's arguments of a set: one per placeholder of `written` (laid out
// as annotated; a composite from its inner tensors), then the constants it
// reads (`self.NAME`, given like inputs, by NAME) as `constants` names them.
// `leaves` is the graph whose placeholders annotate the files' tensors (the
// compiled one names a composite's inner tensors).
absl::StatusOr<std::vector<Operand>> LoadArguments(
    const ir::Graph& written, const ir::Graph& leaves,
    const Composites& composites, const InputSet& set,
    const SymbolValues& values, const std::vector<std::string>& constants) {
  std::vector<Operand> args;
  for (const ir::Node* p : written.Placeholders()) {
    ASSIGN_OR_RETURN(Operand a, LoadArgument(leaves, p->name(),
                                             LayoutOf(composites, p->name()),
                                             set, values.values));
    args.push_back(std::move(a));
  }
  for (const std::string& name : constants) {
    auto it = set.tensors.find(name);
    const ir::Node* node = nullptr;
    for (const auto& n : written.nodes()) {
      if (n->kind() == ir::Node::Kind::kGetAttr && n->target() == name) {
        node = n.get();
      }
    }
    if (it == set.tensors.end() || node == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing constant 'self.", name,
                       "' (give it as --input ", name, "=FILE.npy)"));
    }
    ASSIGN_OR_RETURN(Operand a,
                     InputOperand(*node, it->second, set.paths.at(it->first)));
    args.push_back(std::move(a));
  }
  return args;
}

absl::StatusOr<ArtifactLayout> ArtifactLayoutOf(const Manifest& m) {
  ArtifactLayout a;
  for (size_t k = 0; k < m.arguments.size(); ++k) {
    ASSIGN_OR_RETURN(CompositeLayout tree,
                     ArgumentTree(m, static_cast<int>(k)));
    a.signature.arguments.push_back(std::move(tree));
    a.names.push_back(InputName(m.arguments[k]));
  }
  a.signature.results = m.signature.results;
  ASSIGN_OR_RETURN(a.files, InputNames(m));
  return a;
}

absl::StatusOr<std::vector<Operand>> ArtifactArguments(
    const Manifest& m, const ArtifactLayout& /*layout*/, const InputSet& set) {
  // A number's file is named (the runtime knows no files).
  for (const ArgumentSpec& spec : m.arguments) {
    if (spec.kind != ArgumentSpec::Kind::kInt &&
        spec.kind != ArgumentSpec::Kind::kFloat &&
        spec.kind != ArgumentSpec::Kind::kBool) {
      continue;
    }
    auto it = set.tensors.find(InputName(spec));
    if (it != set.tensors.end() && it->second.dim() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          set.paths.at(it->first), ": input '", it->first,
          "' is a scalar and needs a 0-d .npy, got ", it->second.ToString()));
    }
  }
  return ArrangeArguments(m, set.tensors);
}

}  // namespace lathe
