#include "tools/input_arguments.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "aot/aot_dispatch.h"
#include "driver/arguments.h"
#include "ir/tensor_meta.h"
#include "runtime/copy.h"
#include "status_macros.h"

namespace lathe {

namespace {

// A placeholder's value from its (already read) tensor.
absl::StatusOr<ir::Value> InputValue(const ir::Node& p, const Tensor& t,
                                     const std::string& file) {
  if (p.meta().kind != ir::ValueMeta::Kind::kSym) return ir::Value::OfTensor(t);
  if (t.dim() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": input '", p.name(),
                     "' is a scalar and needs a 0-d .npy, got ", t.ToString()));
  }
  if (t.dtype() == DType::kBool) return ir::Value::Bool(t.GetDouble({}) != 0);
  if (IsFloatingPoint(t.dtype())) return ir::Value::Float(t.GetDouble({}));
  return ir::Value::Int(IntOf(t));
}

// User argument `name` laid out as `l`, its leaves taken from `set`.
absl::StatusOr<Operand> LoadArgument(const ir::Graph& graph,
                                     const std::string& name,
                                     const aot::CompositeLayout& l,
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
    ASSIGN_OR_RETURN(ir::Value v, InputValue(*p, t, set.paths.at(name)));
    return aot::OperandOf(v);
  }
  std::vector<Operand> inner;
  for (size_t k = 0; k < l.inner.size(); ++k) {
    ASSIGN_OR_RETURN(
        Operand o,
        LoadArgument(graph, aot::InnerName(name, l, static_cast<int>(k)),
                     l.inner[k], set, values));
    inner.push_back(std::move(o));
  }
  return Compose(l, name, std::move(inner));
}

// The layout of an artifact's argument or result: plain, or a composite
// of a registered type over plain values (deeper nesting is refused).
absl::StatusOr<aot::CompositeLayout> FlatLayout(absl::string_view type,
                                                int inner_count,
                                                const std::string& what) {
  if (type.empty()) return aot::CompositeLayout::Plain();
  const CompositeType* t = FindCompositeType(type);
  if (t == nullptr ||
      (inner_count >= 0 &&
       inner_count != static_cast<int>(t->inner_names().size()))) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": a composite of type '", type,
        "' nested in another, which run --artifact does not read yet"));
  }
  return aot::CompositeLayout::Of(
      t, std::vector<aot::CompositeLayout>(t->inner_names().size()));
}

// An artifact's argument of `kind` from file `file` of `set`.
absl::StatusOr<Operand> ArtifactLeaf(const InputSet& set,
                                     const std::string& file,
                                     ArgumentSpec::Kind kind) {
  auto it = set.tensors.find(file);
  if (it == set.tensors.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing input '", file, "'"));
  }
  const Tensor& t = it->second;
  if (kind == ArgumentSpec::Kind::kTensor) return Operand::Of(t);
  if (t.dim() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(set.paths.at(file), ": input '", file,
                     "' is a scalar and needs a 0-d .npy, got ", t.ToString()));
  }
  if (kind == ArgumentSpec::Kind::kFloat) {
    return Operand::Float(t.GetDouble({}));
  }
  if (kind == ArgumentSpec::Kind::kBool) {
    return Operand::Bool(t.GetDouble({}) != 0);
  }
  return Operand::Int(IntOf(t));
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
  if (strides == t.strides() && off == t.storage_offset()) return t;
  // Only a layout whose elements do not overlap can hold any value.
  std::vector<int64_t> order(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) order[d] = d;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t reach = 0;  // the farthest element the faster dims reach
  bool empty = false;
  for (int64_t d : order) {
    if (t.sizes()[d] == 0) empty = true;
    if (t.sizes()[d] < 2) continue;
    int64_t span;
    if (strides[d] <= reach) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "': the graph was compiled for the layout ",
          m.ToAnnotation(),
          ", whose elements overlap; lathec cannot lay a file out that way"));
    }
    if (__builtin_mul_overflow(strides[d], t.sizes()[d] - 1, &span) ||
        __builtin_add_overflow(reach, span, &reach)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "': layout too large"));
    }
  }
  if (off < 0) return t;
  int64_t elements = empty ? 0 : off + reach + 1;
  ASSIGN_OR_RETURN(Tensor base, Tensor::Empty({elements}, t.dtype()));
  ASSIGN_OR_RETURN(Tensor out, base.AsStrided(t.sizes(), strides, off));
  RETURN_IF_ERROR(CopyTensor(out, t));
  return out;
}

// Composite argument `name` of layout `l` from its inner values (its outer
// sizes and strides are the first inner value's); the type's own rule says
// whether they fit.
absl::StatusOr<Operand> Compose(const aot::CompositeLayout& l,
                                const std::string& name,
                                std::vector<Operand> inner) {
  std::vector<int64_t> sizes(OuterSizes(inner[0]).begin(),
                             OuterSizes(inner[0]).end());
  std::vector<int64_t> strides(OuterStrides(inner[0]).begin(),
                               OuterStrides(inner[0]).end());
  absl::StatusOr<Operand> made =
      l.type->Unflatten(absl::MakeSpan(inner), sizes, strides);
  if (!made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "': ", made.status().message()));
  }
  return made;
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
    ASSIGN_OR_RETURN(ir::Value v,
                     InputValue(*node, it->second, set.paths.at(it->first)));
    ASSIGN_OR_RETURN(Operand a, aot::OperandOf(v));
    args.push_back(std::move(a));
  }
  return args;
}

absl::StatusOr<ArtifactLayout> ArtifactLayoutOf(const Manifest& m) {
  ArtifactLayout a;
  for (const ArgumentSpec& spec : m.arguments) {
    ASSIGN_OR_RETURN(aot::CompositeLayout l,
                     FlatLayout(spec.type, -1, spec.name));
    a.signature.arguments.push_back(std::move(l));
    a.names.push_back(absl::StartsWith(spec.name, "self.") ? spec.name.substr(5)
                                                           : spec.name);
  }
  for (const ResultShape& r : m.signature.results) {
    for (const ResultShape& inner : r.inner) {
      if (!inner.type.empty()) {
        return FlatLayout(inner.type, 0, "a result").status();
      }
    }
    ASSIGN_OR_RETURN(
        aot::CompositeLayout l,
        FlatLayout(r.type, static_cast<int>(r.inner.size()), "a result"));
    a.signature.results.push_back(std::move(l));
  }
  for (size_t i = 0; i < a.names.size(); ++i) {
    if (m.arguments[i].kind == ArgumentSpec::Kind::kNone) continue;
    aot::LeafNames(a.names[i], a.signature.arguments[i], &a.files);
  }
  return a;
}

absl::StatusOr<std::vector<Operand>> ArtifactArguments(const Manifest& m,
                                                       const ArtifactLayout& a,
                                                       InputSet& set) {
  const std::vector<std::string>& names = a.names;
  // Each plain tensor laid out as its annotation says (as `run GRAPH`
  // does): the symbols take the values the files give them.
  std::vector<std::optional<ir::TensorMeta>> metas(names.size());
  symbolic::Assignment values;
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<ir::ValueMeta> meta =
        i < m.annotations.size() ? ir::ParseAnnotation(m.annotations[i])
                                 : absl::InvalidArgumentError("none");
    auto t = set.tensors.find(names[i]);
    if (m.arguments[i].kind != ArgumentSpec::Kind::kTensor || !meta.ok() ||
        meta->kind != ir::ValueMeta::Kind::kTensor || t == set.tensors.end() ||
        t->second.dim() != meta->tensor.dim()) {
      continue;
    }
    ir::ForEachSymbolDim(meta->tensor, [&](symbolic::Expr e, bool stride,
                                           int d) {
      values.emplace(e, symbolic::Value::Int(stride ? t->second.strides()[d]
                                                    : t->second.sizes()[d]));
    });
    metas[i] = meta->tensor;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!metas[i]) continue;
    Tensor& t = set.tensors.at(names[i]);
    ASSIGN_OR_RETURN(t, InAnnotatedLayout(names[i], *metas[i], t, values));
  }
  // One operand per argument, from its file(s).
  std::vector<Operand> args;
  for (size_t i = 0; i < names.size(); ++i) {
    const ArgumentSpec& spec = m.arguments[i];
    const aot::CompositeLayout& l = a.signature.arguments[i];
    if (spec.kind == ArgumentSpec::Kind::kNone) {
      args.emplace_back();
      continue;
    }
    if (l.type == nullptr) {
      ASSIGN_OR_RETURN(Operand o, ArtifactLeaf(set, names[i], spec.kind));
      args.push_back(std::move(o));
      continue;
    }
    std::vector<Operand> inner;
    for (size_t j = 0; j < l.inner.size(); ++j) {
      ASSIGN_OR_RETURN(
          Operand o,
          ArtifactLeaf(set, aot::InnerName(names[i], l, static_cast<int>(j)),
                       ArgumentSpec::Kind::kTensor));
      inner.push_back(std::move(o));
    }
    ASSIGN_OR_RETURN(Operand made, Compose(l, names[i], std::move(inner)));
    args.push_back(std::move(made));
  }
  return args;
}

}  // namespace lathe
