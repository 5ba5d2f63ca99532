#include "tools/lathec_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "aot/aot_dispatch.h"
#include "aot/flatten_composites.h"
#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/wrapper_emitter.h"
#include "driver/arguments.h"
#include "driver/compile.h"
#include "driver/variant_compiler.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/known_ops.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/artifact.h"
#include "runtime/compile_cache.h"
#include "runtime/composite.h"
#include "runtime/copy.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/guards.h"
#include "symbolic/printer.h"
#include "tools/trace/compile_trace.h"
#include "tools/trace/dot_svg.h"
#include "tools/trace/trace.h"

namespace lathe {
namespace {}  // namespace

const char kLathecUsage[] =
    "usage: lathec run (GRAPH | --artifact DIR) (--input NAME=FILE.npy ... | "
    "--inputs DIR ...) [--backend interp|cpu] --out DIR [--dump-dir DIR] "
    "[--trace FILE] [--max-memory BYTES] [--max-elements N] "
    "[--max-compiles N] [--passes NAME,NAME,...|none]\n"
    "       lathec compile GRAPH -o DIR [--input NAME=FILE.npy ... | --inputs "
    "DIR] [--trace FILE]\n"
    "       lathec guards GRAPH [--input NAME=FILE.npy ... | --inputs DIR] "
    "[--trace FILE]";

namespace {

// Graph text larger than this is refused before it is parsed.
constexpr int64_t kMaxGraphBytes = int64_t{64} << 20;
// The most compiles one replay makes unless --max-compiles says otherwise.
constexpr int kMaxCompiles = 8;
// The files that mark a directory as lathec's own output (see the top).
constexpr char kOutMarker[] = ".lathec-out";
constexpr char kDumpMarker[] = ".lathec-dump";

// Where mutated inputs are written, under --out.
constexpr char kMutatedDir[] = "mutated";

// "512M" -> 536870912.
absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
    }
  }
  if (shift != 0) text.remove_suffix(1);
  int64_t n;
  if (!absl::SimpleAtoi(text, &n) || n <= 0 ||
      n > (int64_t{1} << (62 - shift))) {
    return absl::InvalidArgumentError(
        "--max-memory expects a positive number of bytes (e.g. 4G)");
  }
  return n << shift;
}

// `path` made absolute and lexically normal ("./out/" and "out" alike),
// ending in '/'.
std::string Absolute(const std::string& path) {
  std::vector<std::string> parts;
  std::string full = path;
  if (!absl::StartsWith(path, "/")) {
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) != nullptr)
      full = absl::StrCat(cwd, "/", path);
  }
  for (absl::string_view part : absl::StrSplit(full, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.emplace_back(part);
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"), parts.empty() ? "" : "/");
}

struct RunOptions {
  std::string graph;
  std::string artifact;  // --artifact DIR instead of GRAPH
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> file
  std::vector<std::string> input_dirs;
  std::string backend = "interp";
  std::string out;
  std::string dump_dir;
  std::string trace;  // --trace FILE: the compile report's trace
  int64_t max_memory = DefaultMaxMemory();
  int64_t max_elements = ir::MaxOpElements();
  std::optional<std::vector<std::string>> passes;  // default pipeline: none
  int max_compiles = kMaxCompiles;
};

absl::StatusOr<RunOptions> ParseRun(const std::vector<std::string>& args) {
  RunOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](absl::string_view flag) -> absl::StatusOr<std::string> {
      std::string prefix = absl::StrCat(flag, "=");
      if (absl::StartsWith(a, prefix)) return a.substr(prefix.size());
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      return args[++i];
    };
    if (a == "--input" || absl::StartsWith(a, "--input=")) {
      ASSIGN_OR_RETURN(std::string v, value("--input"));
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--input expects NAME=FILE.npy, got '", v, "'"));
      }
      o.inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--inputs" || absl::StartsWith(a, "--inputs=")) {
      ASSIGN_OR_RETURN(std::string v, value("--inputs"));
      o.input_dirs.push_back(v);
    } else if (a == "--artifact" || absl::StartsWith(a, "--artifact=")) {
      ASSIGN_OR_RETURN(o.artifact, value("--artifact"));
    } else if (a == "--backend" || absl::StartsWith(a, "--backend=")) {
      ASSIGN_OR_RETURN(o.backend, value("--backend"));
    } else if (a == "--out" || absl::StartsWith(a, "--out=")) {
      ASSIGN_OR_RETURN(o.out, value("--out"));
    } else if (a == "--dump-dir" || absl::StartsWith(a, "--dump-dir=")) {
      ASSIGN_OR_RETURN(o.dump_dir, value("--dump-dir"));
    } else if (a == "--trace" || absl::StartsWith(a, "--trace=")) {
      ASSIGN_OR_RETURN(o.trace, value("--trace"));
    } else if (a == "--passes" || absl::StartsWith(a, "--passes=")) {
      ASSIGN_OR_RETURN(std::string v, value("--passes"));
      o.passes.emplace();
      if (v != "none") *o.passes = absl::StrSplit(v, ',', absl::SkipEmpty());
      if (v != "none" && o.passes->empty()) {
        return absl::InvalidArgumentError(
            "--passes expects NAME,NAME,... or none");
      }
    } else if (a == "--max-compiles" ||
               absl::StartsWith(a, "--max-compiles=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-compiles"));
      if (!absl::SimpleAtoi(v, &o.max_compiles) || o.max_compiles < 1 ||
          o.max_compiles > 1000) {
        return absl::InvalidArgumentError(
            "--max-compiles expects a number from 1 to 1000");
      }
    } else if (a == "--max-memory" || absl::StartsWith(a, "--max-memory=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-memory"));
      ASSIGN_OR_RETURN(o.max_memory, ParseBytes(v));
    } else if (a == "--max-elements" ||
               absl::StartsWith(a, "--max-elements=")) {
      ASSIGN_OR_RETURN(std::string v, value("--max-elements"));
      if (!absl::SimpleAtoi(v, &o.max_elements) || o.max_elements < 1) {
        return absl::InvalidArgumentError(
            "--max-elements expects a positive number of elements");
      }
    } else if (absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else if (o.graph.empty()) {
      o.graph = a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (!o.artifact.empty() && !o.graph.empty()) {
    return absl::InvalidArgumentError(
        "give either GRAPH or --artifact DIR, not both");
  }
  // An artifact is compiled already: what would steer a compile is refused.
  for (const std::string& a : args) {
    for (const char* flag :
         {"--backend", "--dump-dir", "--trace", "--passes", "--max-compiles"}) {
      if (!o.artifact.empty() &&
          (a == flag || absl::StartsWith(a, absl::StrCat(flag, "=")))) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, " steers a compile; an --artifact is compiled already"));
      }
    }
  }
  if (o.graph.empty() && o.artifact.empty()) {
    return absl::InvalidArgumentError("no GRAPH (or --artifact DIR) given");
  }
  if (o.out.empty()) return absl::InvalidArgumentError("no --out DIR given");
  if (o.inputs.empty() == o.input_dirs.empty() &&
      !(o.inputs.empty() && o.input_dirs.empty())) {
    return absl::InvalidArgumentError(
        "use either --input or --inputs, not both");
  }
  if (!o.dump_dir.empty()) {
    auto inside = [](const std::string& a, const std::string& b) {
      std::string x = Absolute(a), y = Absolute(b);
      return absl::StartsWith(x, y) || absl::StartsWith(y, x);
    };
    if (inside(o.out, o.dump_dir)) {
      return absl::InvalidArgumentError(
          "--dump-dir and --out must be separate directories");
    }
  }
  RETURN_IF_ERROR(BackendNamed(o.backend).status());
  return o;
}

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

// An output as a tensor to save (numbers become 0-d arrays).
absl::StatusOr<Tensor> AsTensor(const ir::Value& v, int index) {
  if (v.is_tensor()) return v.tensor;
  if (v.is_number()) {
    symbolic::Expr e = v.number;
    DType d = e.is_bool()  ? DType::kBool
              : e.is_int() ? DType::kInt64
                           : DType::kFloat64;
    ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({}, d));
    if (d == DType::kInt64) {
      ASSIGN_OR_RETURN(int64_t x, v.AsInt());
      *t.data<int64_t>() = x;
    } else {
      ASSIGN_OR_RETURN(double x, v.AsDouble());
      t.SetDouble({}, x);
    }
    return t;
  }
  return absl::UnimplementedError(
      absl::StrCat("output ", index, " is ", v.DebugString(),
                   ", which cannot be saved as .npy"));
}

// A file lathec writes: its path relative to the output directory.
struct PendingFile {
  std::string path;
  Tensor tensor;  // whose storage `npy` may view
  NpyParts npy;
  std::string summary;
};

// One input set: every file it names (NAME of NAME.npy), each read once
// (so a pipe such as `--input x=<(cat x.npy)` works).
struct InputSet {
  std::string label;  // how errors name the set: "" or "input set 1 (DIR): "
  absl::flat_hash_map<std::string, std::string> paths;
  absl::flat_hash_map<std::string, Tensor> tensors;
};

using Composites = absl::flat_hash_map<std::string, aot::CompositeLayout>;

// The declared layout of input `name` (plain when not a composite).
aot::CompositeLayout LayoutOf(const Composites& composites,
                              const std::string& name) {
  auto it = composites.find(name);
  return it == composites.end() ? aot::CompositeLayout::Plain() : it->second;
}

// The names of the files a graph reads: each user argument's leaves (a
// composite's inner tensors) and each constant.
std::vector<std::string> FileNames(const ir::Graph& graph,
                                   const Composites& composites) {
  std::vector<std::string> names;
  for (const ir::Node* p : graph.Placeholders()) {
    // An unannotated parameter is a Python value make_fx baked in: no file.
    if (p->meta().kind == ir::ValueMeta::Kind::kNone) continue;
    aot::LeafNames(p->name(), LayoutOf(composites, p->name()), &names);
  }
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::Node::Kind::kGetAttr) {
      names.push_back(node->target());
    }
  }
  return names;
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

// The input sets a run reads: one per --inputs DIR (DIR/NAME.npy for each
// of `names`), or the --input files (each a name of `names`, once); `what`
// names the source of `names` in errors ("graph", "artifact").
absl::StatusOr<std::vector<InputSet>> InputSets(
    const RunOptions& o, const std::vector<std::string>& names,
    absl::string_view what) {
  std::vector<InputSet> sets;
  for (size_t k = 0; k < o.input_dirs.size(); ++k) {
    InputSet set;
    set.label = absl::StrCat("input set ", k, " (", o.input_dirs[k], "): ");
    for (const std::string& name : names) {
      set.paths[name] = absl::StrCat(o.input_dirs[k], "/", name, ".npy");
    }
    sets.push_back(std::move(set));
  }
  if (!o.input_dirs.empty()) return sets;
  InputSet set;
  absl::flat_hash_set<std::string> known(names.begin(), names.end());
  for (const auto& [name, file] : o.inputs) {
    if (!set.paths.emplace(name, file).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' given twice"));
    }
    if (!known.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", what, " has no input named '", name, "'"));
    }
  }
  sets.push_back(std::move(set));
  return sets;
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

// What an input set gives the bare symbols of the placeholders' annotations
// (sizes, strides, int scalars): the compile-time hints when the set is
// the first, and the values that lay its inputs out.
struct SymbolValues {
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  symbolic::Assignment values;
};

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

// `t` in the layout `m` (the annotation the graph was compiled for) gives
// its sizes: the same tensor when it already is, else a copy laid out so.
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

// The tensors of an operand in LeafNames order.
void Leaves(const Operand& o, std::vector<Operand>* out) {
  if (o.kind != Operand::Kind::kComposite) {
    out->push_back(o);
    return;
  }
  for (const Operand& i : o.composite->inner) Leaves(i, out);
}

// " (disk cache hit)" when the .so came from a compile cache.
std::string CacheNote(const codegen::CpuStats& st) {
  return st.cache_hit.empty() ? ""
                              : absl::StrCat(" (", st.cache_hit, " cache hit)");
}

// The compile options of a run with `hints` for the graph's symbols (as
// PyTorch compiles with example inputs: sizes 0 and 1 are specialized).
CompileOptions CompileOptionsOf(
    const RunOptions& o,
    const absl::flat_hash_map<std::string, symbolic::Value>& hints = {}) {
  CompileOptions options;
  options.source = o.graph;
  options.hints = hints;
  options.dump = !o.dump_dir.empty() || !o.trace.empty();
  options.only_passes = o.passes;
  return options;
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

// The files of a call's results and of the arguments it wrote (`written`
// per user argument), not yet written, under `prefix` ("" or "1/").
absl::StatusOr<std::vector<PendingFile>> ResultFiles(
    const aot::CompositeSignature& signature,
    const std::vector<std::string>& names_of_arguments,
    absl::Span<const Operand> results, absl::Span<const Operand> arguments,
    const std::vector<bool>& written, const std::string& prefix) {
  std::vector<PendingFile> pending;
  auto add = [&](const std::string& name, const Operand& o,
                 int index) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor t, AsTensor(aot::ValueOf(o), index));
    // A dense result is written from its own storage, not copied first.
    ASSIGN_OR_RETURN(NpyParts npy, EncodeNpyParts(t));
    std::string path = absl::StrCat(prefix, name, ".npy");
    std::string summary = absl::StrCat(path, ": ", t.ToString());
    pending.push_back({path, std::move(t), std::move(npy), summary});
    return absl::OkStatus();
  };
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k].kind == Operand::Kind::kNone) {  // no file for a None
      pending.push_back(
          {"", Tensor(), NpyParts(), absl::StrCat(prefix, "out", k, ": None")});
      continue;
    }
    std::vector<std::string> names;
    aot::LeafNames(absl::StrCat("out", k), signature.results[k], &names);
    std::vector<Operand> leaves;
    Leaves(results[k], &leaves);
    for (size_t j = 0; j < leaves.size() && j < names.size(); ++j) {
      RETURN_IF_ERROR(add(names[j], leaves[j], static_cast<int>(k)));
    }
  }
  // Mutated inputs go to mutated/, so no input name can collide with an
  // output's file.
  for (size_t i = 0; i < names_of_arguments.size() && i < written.size(); ++i) {
    if (!written[i]) continue;
    std::vector<std::string> names;
    aot::LeafNames(names_of_arguments[i], signature.arguments[i], &names);
    std::vector<Operand> leaves;
    Leaves(arguments[i], &leaves);
    for (size_t j = 0; j < leaves.size() && j < names.size(); ++j) {
      RETURN_IF_ERROR(add(absl::StrCat(kMutatedDir, "/", names[j]), leaves[j],
                          static_cast<int>(i)));
    }
  }
  return pending;
}

// Runs every set through one CompiledFunction (runtime/compiled_function.h)
// for the run's backend (a set its variants' guards refuse compiles again,
// with the first set's sizes as the first compile's hints; the interpreter
// backend's variants are compiled graphs it runs); prints compiles=N and the
// reason of each recompile for several sets.
absl::StatusOr<std::vector<PendingFile>> RunCompiled(
    const RunOptions& o, VariantCompiler& compiler, const ir::Graph& written,
    const Composites& composites, const std::vector<InputSet>& sets,
    std::vector<std::string>* report, std::vector<std::string>* stats) {
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> f,
                   compiler.Function(o.max_compiles));
  const std::vector<std::string> constants = ConstantsOf(written);
  std::vector<PendingFile> all;
  size_t reported = 0;
  double seconds = 0;
  std::vector<bool> written_args;
  for (size_t k = 0; k < sets.size(); ++k) {
    const InputSet& set = sets[k];
    SymbolValues values = ValuesOf(written, composites, set);
    auto error = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat(set.label, s.message()));
    };
    absl::StatusOr<std::vector<Operand>> args =
        LoadArguments(written, written, composites, set, values, constants);
    if (!args.ok()) return error(args.status());
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Operand>> results =
        f->Call(absl::MakeSpan(*args));
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!results.ok()) return error(results.status());
    std::vector<Recompile> recompiles = f->recompiles();
    for (; reported < recompiles.size(); ++reported) {
      report->push_back(
          absl::StrCat("recompile ", reported + 1, " for ", set.label,
                       "guard failed: ", recompiles[reported].reason));
    }
    if (compiler.compiled().empty()) {
      return absl::InternalError("the compiled function compiled nothing");
    }
    // Every variant of the graph writes the same arguments.
    const CompiledGraph& first = *compiler.compiled().front();
    written_args = compiler.WrittenArguments();
    std::string prefix = o.input_dirs.empty() ? "" : absl::StrCat(k, "/");
    ASSIGN_OR_RETURN(std::vector<PendingFile> files,
                     ResultFiles(first.aot.signature, first.aot.names, *results,
                                 *args, written_args, prefix));
    for (PendingFile& file : files) all.push_back(std::move(file));
  }
  if (!o.input_dirs.empty()) {
    report->insert(report->begin(), absl::StrCat("compiles=", f->compiles()));
  }
  // Past the limit, the function itself warned (once, on stderr).
  // What the cpu backend did, per compile.
  for (const auto& c : compiler.compiled()) {
    if (c->function == nullptr) continue;  // the interpreter's
    const codegen::CpuStats& st = c->function->stats();
    stats->push_back(absl::StrFormat(
        "cpu backend: %d kernels (%d before fusion); lathe %.1f ms, C++ "
        "compiler %.0f ms%s; %zu run(s), %.3f ms each",
        st.kernels, st.kernels_unfused, st.lower_seconds * 1e3,
        st.compiler_seconds * 1e3, CacheNote(st), sets.size(),
        (seconds - compiler.compile_seconds()) * 1e3 / sets.size()));
  }
  return all;
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

// `lathec run --artifact DIR`: the artifact's function, loaded with the
// runtime alone (no compile: a set its guards refuse is an error naming the
// guard), on every input set.
absl::Status RunArtifact(const RunOptions& o) {
  ASSIGN_OR_RETURN(LoadedArtifact a, LoadArtifact(o.artifact));
  const Manifest& m = a.manifest;
  aot::CompositeSignature signature;
  std::vector<std::string> names;
  for (const ArgumentSpec& spec : m.arguments) {
    ASSIGN_OR_RETURN(aot::CompositeLayout l,
                     FlatLayout(spec.type, -1, spec.name));
    signature.arguments.push_back(std::move(l));
    names.push_back(absl::StartsWith(spec.name, "self.") ? spec.name.substr(5)
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
    signature.results.push_back(std::move(l));
  }
  std::vector<std::string> files;
  for (size_t i = 0; i < names.size(); ++i) {
    if (m.arguments[i].kind == ArgumentSpec::Kind::kNone) continue;
    aot::LeafNames(names[i], signature.arguments[i], &files);
  }
  ASSIGN_OR_RETURN(std::vector<InputSet> sets, InputSets(o, files, "artifact"));
  std::vector<PendingFile> all;
  for (size_t k = 0; k < sets.size(); ++k) {
    InputSet& set = sets[k];
    auto error = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat(set.label, s.message()));
    };
    RETURN_IF_ERROR(ReadSet(set));
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
          meta->kind != ir::ValueMeta::Kind::kTensor ||
          t == set.tensors.end() || t->second.dim() != meta->tensor.dim()) {
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
      absl::StatusOr<Tensor> laid =
          InAnnotatedLayout(names[i], *metas[i], t, values);
      if (!laid.ok()) return error(laid.status());
      t = *std::move(laid);
    }
    // One operand per argument, from its file(s).
    auto leaf = [&](const std::string& file,
                    ArgumentSpec::Kind kind) -> absl::StatusOr<Operand> {
      auto it = set.tensors.find(file);
      if (it == set.tensors.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("missing input '", file, "'"));
      }
      const Tensor& t = it->second;
      if (kind == ArgumentSpec::Kind::kTensor) return Operand::Of(t);
      if (t.dim() != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            set.paths.at(file), ": input '", file,
            "' is a scalar and needs a 0-d .npy, got ", t.ToString()));
      }
      if (kind == ArgumentSpec::Kind::kFloat) {
        return Operand::Float(t.GetDouble({}));
      }
      if (kind == ArgumentSpec::Kind::kBool) {
        return Operand::Bool(t.GetDouble({}) != 0);
      }
      return Operand::Int(IntOf(t));
    };
    std::vector<Operand> args;
    for (size_t i = 0; i < names.size(); ++i) {
      const ArgumentSpec& spec = m.arguments[i];
      const aot::CompositeLayout& l = signature.arguments[i];
      if (spec.kind == ArgumentSpec::Kind::kNone) {
        args.emplace_back();
        continue;
      }
      if (l.type == nullptr) {
        absl::StatusOr<Operand> o = leaf(names[i], spec.kind);
        if (!o.ok()) return error(o.status());
        args.push_back(*std::move(o));
        continue;
      }
      std::vector<Operand> inner;
      for (size_t j = 0; j < l.inner.size(); ++j) {
        absl::StatusOr<Operand> o =
            leaf(aot::InnerName(names[i], l, static_cast<int>(j)),
                 ArgumentSpec::Kind::kTensor);
        if (!o.ok()) return error(o.status());
        inner.push_back(*std::move(o));
      }
      absl::StatusOr<Operand> made = Compose(l, names[i], std::move(inner));
      if (!made.ok()) return error(made.status());
      args.push_back(*std::move(made));
    }
    absl::StatusOr<std::vector<Operand>> results =
        a.function->Call(absl::MakeSpan(args));
    if (!results.ok()) return error(results.status());
    std::vector<bool> written(args.size(), false);
    for (int i : m.mutated) written[i] = true;
    std::string prefix = o.input_dirs.empty() ? "" : absl::StrCat(k, "/");
    ASSIGN_OR_RETURN(
        std::vector<PendingFile> one,
        ResultFiles(signature, names, *results, args, written, prefix));
    for (PendingFile& f : one) all.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(StagedDir out, StagedDir::Create(o.out, kOutMarker));
  for (const PendingFile& f : all) {
    if (!f.path.empty()) {
      absl::string_view parts[] = {f.npy.header, f.npy.data()};
      RETURN_IF_ERROR(out.Write(f.path, parts));
    }
  }
  RETURN_IF_ERROR(out.Commit());
  for (const PendingFile& f : all) std::printf("%s\n", f.summary.c_str());
  return absl::OkStatus();
}

}  // namespace

namespace {

// --trace FILE: one "parse" step (each command parses its text once), then
// every compile's steps with what each made (tools/trace/compile_trace.h).
absl::Status WriteTrace(const std::string& path, const ParsedGraph& parsed,
                        const std::vector<const CompiledGraph*>& compiles) {
  if (path.empty()) return absl::OkStatus();
  trace::Trace t;
  t.Step("parse", parsed.seconds, {{trace::kText, "graph", parsed.source}});
  for (const CompiledGraph* c : compiles) trace::RecordCompile(*c, &t);
  return t.WriteTo(path);
}

}  // namespace

absl::Status LathecRun(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(RunOptions o, ParseRun(args));
  SetHostMemoryLimit(o.max_memory);
  ir::SetMaxOpElements(o.max_elements);
  if (!o.artifact.empty()) return RunArtifact(o);
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(o.graph, kMaxGraphBytes));
  // The graph as written (its file names, composites and placeholders),
  // parsed once: every compile below starts from it.
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, o.graph));
  const ir::Graph* written = parsed.written.get();
  absl::StatusOr<Composites> composites = aot::DeclaredComposites(*written);
  if (!composites.ok()) {
    return absl::Status(
        composites.status().code(),
        absl::StrCat(o.graph, ": ", composites.status().message()));
  }
  std::vector<std::string> names = FileNames(*written, *composites);
  ASSIGN_OR_RETURN(std::vector<InputSet> sets, InputSets(o, names, "graph"));
  for (InputSet& set : sets) RETURN_IF_ERROR(ReadSet(set));

  // Compile with the first set's sizes as hints, and again for a set the
  // compiled variants' guards do not admit (as torch.compile recompiles),
  // through one CompiledFunction.
  std::vector<std::string> report, stats;
  CompileOptions options = CompileOptionsOf(o);
  ASSIGN_OR_RETURN(options.backend, BackendNamed(o.backend));
  CacheBackend* cache = nullptr;
  if (options.backend != nullptr) {
    ASSIGN_OR_RETURN(cache, DefaultCompileCache());
  }
  VariantCompiler compiler(parsed, options, cache);
  ASSIGN_OR_RETURN(
      std::vector<PendingFile> all,
      RunCompiled(o, compiler, *written, *composites, sets, &report, &stats));
  std::vector<const CompiledGraph*> compiles;
  for (const auto& c : compiler.compiled()) compiles.push_back(c.get());
  RETURN_IF_ERROR(WriteTrace(o.trace, parsed, compiles));
  for (const std::string& line : report) std::printf("%s\n", line.c_str());

  // Everything succeeded: stage every file beside its directory, then move
  // the directories into place (all files of the run appear, or none).
  ASSIGN_OR_RETURN(StagedDir out, StagedDir::Create(o.out, kOutMarker));
  for (const PendingFile& f : all) {
    if (!f.path.empty()) {
      absl::string_view parts[] = {f.npy.header, f.npy.data()};
      RETURN_IF_ERROR(out.Write(f.path, parts));
    }
  }
  std::optional<StagedDir> dump;
  if (!o.dump_dir.empty()) {
    const CompiledGraph& c = *compiler.compiled().front();
    const codegen::CpuFunction* cpu = c.function.get();
    const aot::RuntimeWrapperPlan& plan = c.aot.plan;
    ASSIGN_OR_RETURN(StagedDir staged,
                     StagedDir::Create(o.dump_dir, kDumpMarker));
    dump.emplace(std::move(staged));
    for (const auto& [name, text] : c.dumps) {
      RETURN_IF_ERROR(dump->Write(name, text));
    }
    std::string steps;
    for (const StepTime& step : c.steps) {
      absl::StrAppend(&steps, absl::StrFormat("%-40s %10.3f ms\n", step.name,
                                              step.seconds * 1e3));
    }
    RETURN_IF_ERROR(dump->Write("steps.txt", steps));
    RETURN_IF_ERROR(dump->Write(
        "passes.log",
        absl::StrCat(absl::StrJoin(c.log, "\n"), c.log.empty() ? "" : "\n")));
    RETURN_IF_ERROR(dump->Write(
        "runtime_wrapper_plan.cc",
        absl::StrCat(plan.has_symbolic_layouts() ? symbolic::CppPrelude() : "",
                     plan.CppSource())));
    RETURN_IF_ERROR(
        dump->Write("subclass_wrapper_plan.cc", c.aot.subclass.CppSource()));
    if (cpu != nullptr) {
      RETURN_IF_ERROR(dump->Write("loop_ir.txt", cpu->unscheduled()));
      RETURN_IF_ERROR(dump->Write("loop_ir_scheduled.txt", cpu->scheduled()));
      RETURN_IF_ERROR(dump->Write("kernel.cc", cpu->source()));
      RETURN_IF_ERROR(dump->Write(
          "fusion.log",
          absl::StrCat(absl::StrJoin(cpu->stats().fusion_log, "\n"), "\n")));
      RETURN_IF_ERROR(dump->Write("graph.dot", cpu->fusion_dot()));
      if (std::optional<std::string> svg = trace::DotToSvg(cpu->fusion_dot())) {
        RETURN_IF_ERROR(dump->Write("graph.svg", *svg));
      }
    }
  }
  RETURN_IF_ERROR(out.Commit());
  if (dump) RETURN_IF_ERROR(dump->Commit());
  for (const PendingFile& f : all) std::printf("%s\n", f.summary.c_str());
  for (const std::string& line : stats) std::printf("%s\n", line.c_str());
  return absl::OkStatus();
}

namespace {

// The options of `lathec compile` and `lathec guards`: GRAPH, -o DIR (compile
// only) and example inputs for hints (--input NAME=FILE.npy).
struct CompileCommand {
  RunOptions run;  // graph, inputs, max_memory
  std::string out;
};

absl::StatusOr<CompileCommand> ParseCompile(
    const std::vector<std::string>& args, bool needs_out) {
  CompileCommand c;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--out") {
      if (!needs_out) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag ", args[i]));
      }
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(args[i], " needs a value"));
      }
      c.out = args[++i];
    } else if (absl::StartsWith(args[i], "--out=")) {
      c.out = args[i].substr(6);
    } else if (args[i] == "--backend" ||
               absl::StartsWith(args[i], "--backend=") ||
               args[i] == "--dump-dir" ||
               absl::StartsWith(args[i], "--dump-dir=") ||
               args[i] == "--artifact" ||
               absl::StartsWith(args[i], "--artifact=")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", args[i]));
    } else {
      rest.push_back(args[i]);
    }
  }
  if (needs_out && c.out.empty()) {
    return absl::InvalidArgumentError("no -o DIR given");
  }
  rest.push_back("--out");
  rest.push_back(needs_out ? c.out : "-");
  ASSIGN_OR_RETURN(c.run, ParseRun(rest));
  if (c.run.graph.empty()) return absl::InvalidArgumentError("no GRAPH given");
  if (c.run.input_dirs.size() > 1) {
    return absl::InvalidArgumentError(
        "give the example inputs once (--input NAME=FILE.npy ... or one "
        "--inputs DIR)");
  }
  return c;
}

// The graph's compile options with hints from its example inputs, if any.
absl::StatusOr<CompileOptions> OptionsWithHints(const RunOptions& o,
                                                const ir::Graph& written) {
  CompileOptions options = CompileOptionsOf(o);
  options.dump = !o.trace.empty();
  if (o.inputs.empty() && o.input_dirs.empty()) return options;
  ASSIGN_OR_RETURN(Composites composites, aot::DeclaredComposites(written));
  InputSet set;
  for (const auto& [name, file] : o.inputs) {
    if (!set.paths.emplace(name, file).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' given twice"));
    }
  }
  for (const std::string& dir : o.input_dirs) {
    for (const std::string& name : FileNames(written, composites)) {
      set.paths[name] = absl::StrCat(dir, "/", name, ".npy");
    }
  }
  RETURN_IF_ERROR(ReadSet(set));
  options.hints = ValuesOf(written, composites, set).hints;
  return options;
}

}  // namespace

absl::Status LathecCompile(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(CompileCommand c, ParseCompile(args, /*needs_out=*/true));
  SetHostMemoryLimit(c.run.max_memory);
  ir::SetMaxOpElements(c.run.max_elements);
  ASSIGN_OR_RETURN(std::string text,
                   ReadFileLimited(c.run.graph, kMaxGraphBytes));
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, c.run.graph));
  ASSIGN_OR_RETURN(CompileOptions options,
                   OptionsWithHints(c.run, *parsed.written));
  options.backend = &codegen::CpuBackend();
  options.artifact = true;
  ASSIGN_OR_RETURN(options.cache, DefaultCompileCache());
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> compiled,
                   Compile(parsed, options));
  const CompiledGraph& a = *compiled;
  RETURN_IF_ERROR(WriteTrace(c.run.trace, parsed, {&a}));
  RETURN_IF_ERROR(WriteArtifact(c.out, a.manifest, a.files));
  const codegen::CpuStats& st = a.function->stats();
  std::printf(
      "%s: kernel.so (%zu bytes), kernel.cc, manifest.txt (%zu arguments, "
      "%zu results, %zu guards)\n"
      "cpu backend: %d kernels (%d before fusion); lathe %.1f ms, C++ "
      "compiler %.0f ms%s\n",
      c.out.c_str(), a.files[0].second.size(), a.manifest.arguments.size(),
      a.manifest.signature.results.size(), a.manifest.guards.size(), st.kernels,
      st.kernels_unfused, st.lower_seconds * 1e3, st.compiler_seconds * 1e3,
      CacheNote(st).c_str());
  return absl::OkStatus();
}

absl::Status LathecGuards(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(CompileCommand c, ParseCompile(args, /*needs_out=*/false));
  SetHostMemoryLimit(c.run.max_memory);
  ir::SetMaxOpElements(c.run.max_elements);
  ASSIGN_OR_RETURN(std::string text,
                   ReadFileLimited(c.run.graph, kMaxGraphBytes));
  ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(text, c.run.graph));
  ASSIGN_OR_RETURN(CompileOptions options,
                   OptionsWithHints(c.run, *parsed.written));
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> g, Compile(parsed, options));
  RETURN_IF_ERROR(WriteTrace(c.run.trace, parsed, {g.get()}));
  const ir::Graph* written = parsed.written.get();
  if (!g->guards) {
    std::printf("no guards: an input is of a kind guards cannot describe\n");
    return absl::OkStatus();
  }
  std::printf("%d guards:\n", g->guards->size());
  for (int i = 0; i < g->guards->size(); ++i) {
    std::printf("  %d: %s\n", i, GuardText(*written, *g->guards, i).c_str());
  }
  ASSIGN_OR_RETURN(std::string cpp,
                   codegen::EmitGuards(*g->guards, g->guard_inputs));
  std::printf("as C++ (lathe_guards in the .so; in[k] is placeholder k):\n%s",
              cpp.c_str());
  return absl::OkStatus();
}

}  // namespace lathe
