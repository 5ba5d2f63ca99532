// lathec: lathe's command-line compiler driver.
//
//   lathec run GRAPH --input NAME=FILE.npy ... [--backend interp] --out DIR
//       compiles the graph through AOT dispatch (functionalization and its
//       runtime-wrapper plan), runs the functional graph and then the plan,
//       and writes DIR/out0.npy, out1.npy, ... and
//       DIR/NAME.npy for every input the graph mutated; a scalar input is a
//       0-d .npy (float64 -> float, int64 -> int). A constant the graph
//       reads (`self.NAME`) is given the same way: --input NAME=FILE.npy.
//   lathec run GRAPH --inputs DIR1 --inputs DIR2 ... --out DIR
//       replays several input sets (DIRk/NAME.npy) and writes DIR/<k>/...
//   A composite input (`# lathe: composite NAME TYPE`) is given as its inner
//   tensors, NAME_a.npy, NAME_b.npy, ...; a composite output is written the
//   same way (out0_a.npy, ...).
//   --dump-dir DIR
//       also writes DIR/functionalize.txt (the functional graph),
//       DIR/runtime_wrapper_plan.cc and DIR/subclass_wrapper_plan.cc (the
//       plans as C++).
//
// Every error is one line on stderr ("lathec: ...") with exit status 1 (2 for
// usage); nothing is written unless the whole run succeeded.

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "aot/aot_dispatch.h"
#include "aot/flatten_composites.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/composite.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe {
namespace {

constexpr char kUsage[] =
    "usage: lathec run GRAPH (--input NAME=FILE.npy ... | --inputs DIR ...) "
    "[--backend interp] --out DIR [--dump-dir DIR]";

struct RunOptions {
  std::string graph;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> file
  std::vector<std::string> input_dirs;
  std::string backend = "interp";
  std::string out;
  std::string dump_dir;
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
    } else if (a == "--backend" || absl::StartsWith(a, "--backend=")) {
      ASSIGN_OR_RETURN(o.backend, value("--backend"));
    } else if (a == "--out" || absl::StartsWith(a, "--out=")) {
      ASSIGN_OR_RETURN(o.out, value("--out"));
    } else if (a == "--dump-dir" || absl::StartsWith(a, "--dump-dir=")) {
      ASSIGN_OR_RETURN(o.dump_dir, value("--dump-dir"));
    } else if (absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else if (o.graph.empty()) {
      o.graph = a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (o.graph.empty()) return absl::InvalidArgumentError("no GRAPH given");
  if (o.out.empty()) return absl::InvalidArgumentError("no --out DIR given");
  if (o.inputs.empty() == o.input_dirs.empty() &&
      !(o.inputs.empty() && o.input_dirs.empty())) {
    return absl::InvalidArgumentError(
        "use either --input or --inputs, not both");
  }
  if (o.backend != "interp") {
    return absl::UnimplementedError(absl::StrCat(
        "backend '", o.backend, "' is not available yet (available: interp)"));
  }
  return o;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A placeholder's value from a .npy file.
absl::StatusOr<ir::Value> LoadInput(const ir::Node& p,
                                    const std::string& file) {
  ASSIGN_OR_RETURN(Tensor t, ReadNpy(file));
  if (p.meta().kind != ir::ValueMeta::Kind::kSym) return ir::Value::OfTensor(t);
  if (t.dim() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": input '", p.name(),
                     "' is a scalar and needs a 0-d .npy, got ", t.ToString()));
  }
  if (t.dtype() == DType::kBool) return ir::Value::Bool(t.GetDouble({}) != 0);
  if (IsFloatingPoint(t.dtype())) return ir::Value::Float(t.GetDouble({}));
  int64_t v = 0;
  VisitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      v = *static_cast<const T*>(t.data_ptr());
  });
  return ir::Value::Int(v);
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

absl::Status MakeDirs(const std::string& dir) {
  std::string path;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    path += std::string(part) + "/";
    if (part.empty()) continue;
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(absl::StrCat(
          dir, ": cannot create directory: ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

struct PendingFile {
  std::string path;
  std::string bytes;
  std::string summary;
};

// The tensors of an operand in LeafNames order.
void Leaves(const Operand& o, std::vector<Operand>* out) {
  if (o.kind != Operand::Kind::kComposite) {
    out->push_back(o);
    return;
  }
  for (const Operand& i : o.composite->inner) Leaves(i, out);
}

// User argument `name` laid out as `l`, its leaves read from `files`.
absl::StatusOr<Operand> LoadArgument(
    const ir::Graph& graph, const std::string& name,
    const aot::CompositeLayout& l,
    const absl::flat_hash_map<std::string, std::string>& files) {
  if (l.type == nullptr) {
    auto it = files.find(name);
    const ir::Node* p = graph.Find(name);
    if (it == files.end() || p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing input '", name, "'"));
    }
    ASSIGN_OR_RETURN(ir::Value v, LoadInput(*p, it->second));
    return aot::OperandOf(v);
  }
  std::vector<Operand> inner;
  for (size_t k = 0; k < l.inner.size(); ++k) {
    ASSIGN_OR_RETURN(
        Operand o,
        LoadArgument(graph, aot::InnerName(name, l, static_cast<int>(k)),
                     l.inner[k], files));
    inner.push_back(std::move(o));
  }
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

// Runs one input set and returns the files it produces (not yet written).
absl::StatusOr<std::vector<PendingFile>> RunOnce(
    const ir::Graph& graph, const aot::AotGraph& aot,
    const absl::flat_hash_map<std::string, std::string>& files,
    const std::string& out_dir) {
  std::vector<Operand> args;
  absl::flat_hash_map<std::string, bool> known;  // file names the run reads
  for (size_t i = 0; i < aot.names.size(); ++i) {
    const aot::CompositeLayout& l = aot.signature.arguments[i];
    std::vector<std::string> leaves;
    aot::LeafNames(aot.names[i], l, &leaves);
    for (const std::string& n : leaves) known[n] = true;
    ASSIGN_OR_RETURN(Operand a, LoadArgument(graph, aot.names[i], l, files));
    args.push_back(std::move(a));
  }
  // Constants (`self.NAME` attributes) are given like inputs, by NAME.
  absl::flat_hash_map<std::string, ir::Value> constants;
  for (const auto& node : graph.nodes()) {
    if (node->kind() != ir::Node::Kind::kGetAttr) continue;
    auto it = files.find(node->target());
    if (it == files.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing constant 'self.", node->target(),
                       "' (give it as --input ", node->target(), "=FILE.npy)"));
    }
    ASSIGN_OR_RETURN(ir::Value v, LoadInput(*node, it->second));
    constants[node->target()] = std::move(v);
    known[node->target()] = true;
  }
  for (const auto& [name, file] : files) {
    if (!known.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the graph has no input named '", name, "'"));
    }
  }
  ASSIGN_OR_RETURN(aot::UserCall r,
                   aot::InterpretAsUser(graph, aot, args, constants));
  std::vector<PendingFile> pending;
  auto add = [&](const std::string& name, const Operand& o,
                 int index) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor t, AsTensor(aot::ValueOf(o), index));
    ASSIGN_OR_RETURN(std::string bytes, EncodeNpy(t));
    pending.push_back({absl::StrCat(out_dir, "/", name, ".npy"),
                       std::move(bytes),
                       absl::StrCat(name, ".npy: ", t.ToString())});
    return absl::OkStatus();
  };
  for (size_t k = 0; k < r.results.size(); ++k) {
    std::vector<std::string> names;
    aot::LeafNames(absl::StrCat("out", k), aot.signature.results[k], &names);
    std::vector<Operand> leaves;
    Leaves(r.results[k], &leaves);
    for (size_t j = 0; j < leaves.size() && j < names.size(); ++j) {
      RETURN_IF_ERROR(add(names[j], leaves[j], static_cast<int>(k)));
    }
  }
  for (size_t i = 0; i < aot.names.size(); ++i) {
    if (!r.mutated[i]) continue;
    std::vector<std::string> names;
    aot::LeafNames(aot.names[i], aot.signature.arguments[i], &names);
    std::vector<Operand> leaves;
    Leaves(r.arguments[i], &leaves);
    for (size_t j = 0; j < leaves.size() && j < names.size(); ++j) {
      RETURN_IF_ERROR(add(names[j], leaves[j], static_cast<int>(i)));
    }
  }
  return pending;
}

// The .npy file that holds placeholder `p`'s first input, or "": NAME, or
// for a composite its first inner tensor (whose sizes are the outer ones).
std::string FirstFile(
    const ir::Node& p,
    const absl::flat_hash_map<std::string, aot::CompositeLayout>& composites,
    const RunOptions& o) {
  std::vector<std::string> leaves;
  auto it = composites.find(p.name());
  aot::LeafNames(
      p.name(),
      it == composites.end() ? aot::CompositeLayout::Plain() : it->second,
      &leaves);
  if (!o.input_dirs.empty()) {
    return absl::StrCat(o.input_dirs[0], "/", leaves[0], ".npy");
  }
  for (const auto& [n, file] : o.inputs) {
    if (n == leaves[0]) return file;
  }
  return "";
}

// Hints for the symbols in the placeholders' annotations, from the first
// input set (unreadable files are left to the run to report).
absl::flat_hash_map<std::string, symbolic::Value> FirstInputHints(
    const ir::Graph& graph, const RunOptions& o) {
  absl::flat_hash_map<std::string, symbolic::Value> hints;
  // A bad declaration is reported by the compile that follows.
  auto composites = aot::DeclaredComposites(graph);
  if (!composites.ok()) return hints;
  for (const ir::Node* p : graph.Placeholders()) {
    // Only inputs with a symbol to hint are read (twice, then: once here).
    const ir::ValueMeta& m = p->meta();
    bool symbolic = m.kind == ir::ValueMeta::Kind::kSym && m.sym.is_symbol();
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      ir::ForEachSymbolDim(m.tensor,
                           [&](symbolic::Expr, bool, int) { symbolic = true; });
    }
    if (!symbolic) continue;
    std::string file = FirstFile(*p, *composites, o);
    if (file.empty()) continue;
    absl::StatusOr<Tensor> t = ReadNpy(file);
    if (!t.ok()) continue;
    if (m.kind == ir::ValueMeta::Kind::kSym && m.sym.is_symbol() &&
        m.sym.is_int() && t->dim() == 0 && IsIntegral(t->dtype(), false)) {
      hints[std::string(m.sym.name())] =
          symbolic::Value::Int(static_cast<int64_t>(t->GetDouble({})));
    }
    if (m.kind != ir::ValueMeta::Kind::kTensor || m.tensor.dim() != t->dim()) {
      continue;
    }
    ir::ForEachSymbolDim(m.tensor, [&](symbolic::Expr e, bool stride, int d) {
      hints.emplace(
          std::string(e.name()),
          symbolic::Value::Int(stride ? t->strides()[d] : t->sizes()[d]));
    });
  }
  return hints;
}

absl::Status Run(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(RunOptions o, ParseRun(args));
  ASSIGN_OR_RETURN(std::string text, ReadFile(o.graph));
  absl::StatusOr<std::unique_ptr<ir::Graph>> parsed = ir::ParseGraph(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.graph, ": ", parsed.status().message()));
  }
  ir::Graph& graph = **parsed;
  // The first input set's sizes are the compile-time hints (as PyTorch
  // compiles with its example inputs).
  aot::AotOptions options;
  options.mutations.shapes.hints = FirstInputHints(graph, o);
  symbolic::ShapeEnv env;
  absl::StatusOr<aot::AotGraph> aot = aot::AotDispatch(graph, env, options);
  if (!aot.ok()) {
    return absl::Status(aot.status().code(),
                        absl::StrCat(o.graph, ": ", aot.status().message()));
  }
  const aot::RuntimeWrapperPlan& plan = aot->plan;
  // --inputs DIR reads DIR/NAME.npy for each file a user argument takes.
  std::vector<std::string> input_files;
  for (size_t i = 0; i < aot->names.size(); ++i) {
    aot::LeafNames(aot->names[i], aot->signature.arguments[i], &input_files);
  }
  std::vector<PendingFile> all;
  if (!o.dump_dir.empty()) {
    all.push_back({o.dump_dir + "/functionalize.txt", ir::PrintGraph(graph),
                   o.dump_dir + "/functionalize.txt"});
    all.push_back(
        {o.dump_dir + "/runtime_wrapper_plan.cc",
         absl::StrCat(plan.has_symbolic_layouts() ? symbolic::CppPrelude() : "",
                      plan.CppSource()),
         o.dump_dir + "/runtime_wrapper_plan.cc"});
    all.push_back({o.dump_dir + "/subclass_wrapper_plan.cc",
                   aot->subclass.CppSource(),
                   o.dump_dir + "/subclass_wrapper_plan.cc"});
  }
  if (!o.input_dirs.empty()) {
    for (size_t k = 0; k < o.input_dirs.size(); ++k) {
      absl::flat_hash_map<std::string, std::string> files;
      for (const std::string& name : input_files) {
        files[name] = absl::StrCat(o.input_dirs[k], "/", name, ".npy");
      }
      absl::StatusOr<std::vector<PendingFile>> one =
          RunOnce(graph, *aot, files, absl::StrCat(o.out, "/", k));
      if (!one.ok()) {
        return absl::Status(one.status().code(),
                            absl::StrCat("input set ", k, " (", o.input_dirs[k],
                                         "): ", one.status().message()));
      }
      for (PendingFile& f : *one) all.push_back(std::move(f));
    }
    std::printf("compiles=1\n");
  } else {
    absl::flat_hash_map<std::string, std::string> files;
    for (const auto& [name, file] : o.inputs) {
      if (!files.emplace(name, file).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", name, "' given twice"));
      }
    }
    ASSIGN_OR_RETURN(std::vector<PendingFile> one,
                     RunOnce(graph, *aot, files, o.out));
    for (PendingFile& f : one) all.push_back(std::move(f));
  }
  // Everything succeeded: now write.
  for (const PendingFile& f : all) {
    RETURN_IF_ERROR(MakeDirs(f.path.substr(0, f.path.rfind('/'))));
  }
  for (const PendingFile& f : all) {
    std::string tmp = f.path + ".tmp-lathe";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
      if (!out)
        return absl::DataLossError(absl::StrCat(f.path, ": write failed"));
    }
    if (std::rename(tmp.c_str(), f.path.c_str()) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat(f.path, ": cannot write"));
    }
    std::printf("%s\n", f.summary.c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lathe

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fprintf(args.empty() ? stderr : stdout, "%s\n", lathe::kUsage);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "compile" || args[0] == "guards") {
    std::fprintf(stderr, "lathec: '%s' is not available yet (available: run)\n",
                 args[0].c_str());
    return 1;
  }
  if (args[0] != "run") {
    std::fprintf(stderr, "lathec: unknown command '%s'\n%s\n", args[0].c_str(),
                 lathe::kUsage);
    return 2;
  }
  absl::Status s =
      lathe::Run(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!s.ok()) {
    std::string message(s.message());
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "lathec: %s\n", message.c_str());
    return 1;
  }
  return 0;
}
