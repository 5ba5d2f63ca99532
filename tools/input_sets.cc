#include "tools/input_sets.h"

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "driver/arguments.h"
#include "runtime/composite.h"
#include "runtime/npy.h"
#include "status_macros.h"

namespace lathe {

namespace {

// `files` as one set's paths; a name given twice is an error.
absl::Status AddFiles(const NamedFiles& files, InputSet& set) {
  for (const auto& [name, file] : files) {
    if (!set.paths.emplace(name, file).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' given twice"));
    }
  }
  return absl::OkStatus();
}

// The tensor that holds placeholder `p`'s sizes in `set`: its own, or for a
// composite its first inner tensor (whose sizes are the outer ones); null
// when the set lacks it.
const Tensor* OuterTensor(const ir::Node& p, const Composites& composites,
                          const InputSet& set) {
  std::vector<std::string> leaves;
  aot::LeafNames(p.name(), LayoutOf(composites, p.name()), &leaves);
  auto t = set.tensors.find(leaves[0]);
  return t == set.tensors.end() ? nullptr : &t->second;
}

}  // namespace

CompositeLayout LayoutOf(const Composites& composites,
                         const std::string& name) {
  auto it = composites.find(name);
  return it == composites.end() ? CompositeLayout::Plain() : it->second;
}

std::vector<std::string> FileNames(const ir::Graph& graph,
                                   const Composites& composites) {
  std::vector<std::string> names;
  for (const ir::Node* p : graph.Placeholders()) {
    // An unannotated parameter is a Python value make_fx baked in: no file.
    if (p->meta().kind == ir::ValueMeta::Kind::kNone) continue;
    aot::LeafNames(p->name(), LayoutOf(composites, p->name()), &names);
  }
  for (const auto& node : graph.nodes()) {
    // A frozen constant is the compiled function's own: no file.
    if (node->kind() == ir::Node::Kind::kGetAttr &&
        graph.attributes().constants.count(node->target()) == 0) {
      names.push_back(node->target());
    }
  }
  return names;
}

absl::StatusOr<std::vector<InputSet>> InputSets(
    const NamedFiles& files, const std::vector<std::string>& dirs,
    const std::vector<std::string>& names, absl::string_view what) {
  std::vector<InputSet> sets;
  for (size_t k = 0; k < dirs.size(); ++k) {
    InputSet set;
    set.label = absl::StrCat("input set ", k, " (", dirs[k], "): ");
    for (const std::string& name : names) {
      set.paths[name] = absl::StrCat(dirs[k], "/", name, ".npy");
    }
    sets.push_back(std::move(set));
  }
  if (!dirs.empty()) return sets;
  InputSet set;
  absl::flat_hash_set<std::string> known(names.begin(), names.end());
  for (const auto& file : files) {
    RETURN_IF_ERROR(AddFiles({file}, set));
    if (!known.contains(file.first)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", what, " has no input named '", file.first, "'"));
    }
  }
  sets.push_back(std::move(set));
  return sets;
}

absl::StatusOr<InputSet> ExampleSet(const NamedFiles& files,
                                    const std::vector<std::string>& dirs,
                                    const std::vector<std::string>& names) {
  InputSet set;
  RETURN_IF_ERROR(AddFiles(files, set));
  for (const std::string& dir : dirs) {
    for (const std::string& name : names) {
      set.paths[name] = absl::StrCat(dir, "/", name, ".npy");
    }
  }
  return set;
}

absl::Status ReadSet(InputSet& set) {
  for (const auto& [name, path] : set.paths) {
    absl::StatusOr<Tensor> t = ReadNpy(path);
    if (!t.ok()) {
      return absl::Status(t.status().code(),
                          absl::StrCat(set.label, t.status().message()));
    }
    set.tensors[name] = *std::move(t);
  }
  return absl::OkStatus();
}

SymbolValues ValuesOf(const ir::Graph& graph, const Composites& composites,
                      const InputSet& set) {
  // Each placeholder's value as far as its symbols go: its (outer) tensor,
  // or an int scalar.
  std::vector<Operand> args;
  for (const ir::Node* p : graph.Placeholders()) {
    const ir::ValueMeta& m = p->meta();
    const Tensor* t = OuterTensor(*p, composites, set);
    if (t == nullptr) {  // reported by the run
      args.emplace_back();
    } else if (m.kind == ir::ValueMeta::Kind::kSym && t->dim() == 0 &&
               IsIntegral(t->dtype(), false)) {
      args.push_back(Operand::Int(IntOf(*t)));
    } else {
      args.push_back(Operand::Of(*t));
    }
  }
  SymbolValues out;
  for (const auto& [symbol, value] : SymbolValuesOf(graph, args)) {
    out.hints.emplace(std::string(symbol.name()), value);
    out.values.emplace(symbol, value);
  }
  return out;
}

}  // namespace lathe
