#include "tools/compile_artifact.h"

#include <chrono>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "aot/flatten_composites.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/known_ops.h"
#include "ir/value.h"
#include "runtime/file_io.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe {

namespace {

// The argument `name` whose value `meta` describes.
absl::StatusOr<ArgumentSpec> SpecOf(const std::string& name,
                                    const ir::ValueMeta& meta,
                                    const aot::CompositeLayout* layout) {
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
        seen.insert(node->target()).second) {
      names.push_back(node->target());
    }
  }
  return names;
}

absl::StatusOr<std::vector<ArgumentSpec>> ArgumentsOf(
    const ir::Graph& written, const std::vector<std::string>& constants,
    std::vector<std::string>* annotations) {
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

Variant CompiledArtifact::AsVariant() const {
  Variant v;
  v.graph = cpu->user_call();
  v.guards = manifest.guards;
  const codegen::CpuFunction* f = cpu.get();
  const size_t users = manifest.arguments.size() - f->constants().size();
  v.check = [f, users](absl::Span<const Operand> args) {
    absl::flat_hash_map<std::string, ir::Value> constants;
    for (size_t k = users; k < args.size(); ++k) {
      constants[f->constants()[k - users]] = aot::ValueOf(args[k]);
    }
    return f->CheckUser(args.subspan(0, users), constants);
  };
  v.check_every_call = f->host_checks();
  v.mutated = manifest.mutated;
  return v;
}

absl::StatusOr<CompiledArtifact> CompileArtifact(absl::string_view text,
                                                 const CompileOptions& options,
                                                 CacheBackend* cache) {
  CompiledArtifact a;
  // The walk names options.source in its errors; the text parses after it.
  ASSIGN_OR_RETURN(a.compiled, CompileGraphText(text, options));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> written, ir::ParseGraph(text));
  const CompiledGraph& c = *a.compiled;
  absl::StatusOr<std::unique_ptr<codegen::CpuFunction>> cpu =
      codegen::CpuFunction::Compile(*c.graph, *c.env,
                                    {.guards = c.guards ? &*c.guards : nullptr,
                                     .guard_inputs = c.guard_inputs,
                                     .plan = &c.aot.plan,
                                     .subclass = &c.aot.subclass,
                                     .cache = cache});
  if (!cpu.ok()) {
    return absl::Status(cpu.status().code(),
                        absl::StrCat(options.source, ": cpu backend: ",
                                     cpu.status().message()));
  }
  a.cpu = std::move(*cpu);
  const codegen::CpuFunction& f = *a.cpu;
  if (!f.user_entry()) {
    return absl::UnimplementedError(absl::StrCat(
        options.source, ": the user call cannot run inside the .so: ",
        f.plan_applied() ? f.user_entry_error() : f.plan_error()));
  }
  Manifest& m = a.manifest;
  m.graph = options.source;
  m.compiler = f.library().command;
  ASSIGN_OR_RETURN(m.arguments,
                   ArgumentsOf(*written, f.constants(), &m.annotations));
  m.signature = f.user_call()->signature();
  std::vector<bool> written_inputs = f.MutatedUserInputs();
  for (size_t k = 0; k < written_inputs.size(); ++k) {
    if (written_inputs[k]) m.mutated.push_back(static_cast<int>(k));
  }
  if (c.guards) {
    for (int g = 0; g < c.guards->size(); ++g) {
      m.guards.push_back(GuardText(*written, *c.guards, g));
    }
  }
  ASSIGN_OR_RETURN(std::string so,
                   ReadFileLimited(f.library().path, kMaxArtifactFileBytes));
  a.files.push_back({"kernel.so", std::move(so)});
  a.files.push_back({"kernel.cc", f.source()});
  return a;
}

VariantCompiler::VariantCompiler(std::string text, CompileOptions options,
                                 CacheBackend* cache)
    : text_(std::move(text)), options_(std::move(options)), cache_(cache) {}

absl::StatusOr<std::unique_ptr<CompiledFunction>> VariantCompiler::Function(
    int max_compiles) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> written = ir::ParseGraph(text_);
  if (!written.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options_.source, ": ", written.status().message()));
  }
  written_ = std::move(*written);
  constants_ = ConstantsOf(*written_);
  ASSIGN_OR_RETURN(std::vector<ArgumentSpec> arguments,
                   ArgumentsOf(*written_, constants_));
  CompiledFunction::Options o;
  o.compile = [this](absl::Span<const Operand> args) { return Compile(args); };
  o.fallback = [this](absl::Span<Operand> args, uint64_t seed) {
    return Interpret(args, seed);
  };
  o.max_compiles = max_compiles;
  return std::make_unique<CompiledFunction>(std::move(arguments), std::move(o));
}

absl::StatusOr<Variant> VariantCompiler::Compile(
    absl::Span<const Operand> args) {
  auto start = std::chrono::steady_clock::now();
  CompileOptions options = options_;
  for (auto& [name, value] : HintsOf(*written_, args)) {
    options.hints.insert({name, value});
  }
  absl::StatusOr<CompiledArtifact> made =
      CompileArtifact(text_, options, cache_);
  compile_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!made.ok()) return made.status();
  CompiledArtifact& a = *made;
  if (a.cpu->constants() != constants_) {
    return absl::UnimplementedError(absl::StrCat(
        options_.source, ": the compiled graph reads the constants (",
        absl::StrJoin(a.cpu->constants(), ", "), "), not (",
        absl::StrJoin(constants_, ", "), ") as written"));
  }
  compiled_.push_back(std::make_unique<CompiledArtifact>(std::move(a)));
  return compiled_.back()->AsVariant();
}

absl::StatusOr<std::vector<Operand>> VariantCompiler::Interpret(
    absl::Span<Operand> args, uint64_t seed) const {
  CompileOptions options = options_;
  options.dump = false;
  for (auto& [name, value] : HintsOf(*written_, args)) {
    options.hints.insert({name, value});
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c,
                   CompileGraphText(text_, options));
  const size_t users = args.size() - constants_.size();
  absl::flat_hash_map<std::string, ir::Value> constants;
  for (size_t k = users; k < args.size(); ++k) {
    constants[constants_[k - users]] = aot::ValueOf(args[k]);
  }
  std::vector<Operand> user(args.begin(), args.begin() + users);
  // The interpreter, drawing random numbers from the call's seed.
  aot::GraphRunner runner =
      [seed](const ir::Graph& g, const std::vector<ir::Value>& inputs,
             const absl::flat_hash_map<std::string, ir::Value>& k) {
        return ir::Interpret(g, inputs, k, seed);
      };
  ASSIGN_OR_RETURN(aot::UserCall r,
                   aot::InterpretAsUser(*c->graph, c->aot, std::move(user),
                                        constants, runner));
  for (size_t k = 0; k < users; ++k) args[k] = std::move(r.arguments[k]);
  return std::move(r.results);
}

}  // namespace lathe
