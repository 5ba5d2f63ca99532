#include "runtime/artifact.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/checksum.h"
#include "runtime/copy.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/shared_library.h"
#include "status_macros.h"

namespace lathe {

namespace {

constexpr char kManifestName[] = "manifest.txt";
constexpr char kArtifactMarker[] = ".lathe-artifact";

// `text` on one line (a manifest fact never spans two).
std::string OneLine(absl::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s.empty() ? "-" : s;
}

std::string KindName(const ArgumentSpec& a) {
  switch (a.kind) {
    case ArgumentSpec::Kind::kTensor:
      return "tensor";
    case ArgumentSpec::Kind::kComposite:
      return absl::StrCat("composite:", a.type);
    case ArgumentSpec::Kind::kInt:
      return "int";
    case ArgumentSpec::Kind::kFloat:
      return "float";
    case ArgumentSpec::Kind::kBool:
      return "bool";
    case ArgumentSpec::Kind::kNone:
      return "none";
  }
  return "?";
}

bool HasTensorFields(const ArgumentSpec& a) {
  return a.kind == ArgumentSpec::Kind::kTensor ||
         a.kind == ArgumentSpec::Kind::kComposite;
}

// A file name an artifact may hold: one plain component.
bool PlainName(absl::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == absl::string_view::npos &&
         name.find('\0') == absl::string_view::npos;
}

// Whether `m` was written by this lathe for this kernel ABI; the error
// naming `file` otherwise.
absl::Status OfThisLathe(const Manifest& m, absl::string_view file) {
  if (m.lathe_version != kLatheVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        file, ": written by lathe ", m.lathe_version, "; this is lathe ",
        kLatheVersion, " (compile the graph again)"));
  }
  if (m.kernel_abi != LATHE_KERNEL_ABI_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrCat(file, ": compiled for kernel ABI ", m.kernel_abi,
                     "; this runtime has kernel ABI ", LATHE_KERNEL_ABI_VERSION,
                     " (compile the graph again)"));
  }
  return absl::OkStatus();
}

// A layout line's error: a composite type this program does not register,
// in a manifest another lathe wrote, is named as that lathe's (the version
// lines come first).
absl::Status LayoutError(const Manifest& m, absl::string_view file,
                         absl::Status error) {
  if (error.code() != absl::StatusCode::kFailedPrecondition) return error;
  absl::Status version = OfThisLathe(m, file);
  return version.ok() ? error : version;
}

// Reads one manifest line's fields.
class LineParser {
 public:
  LineParser(absl::string_view file, int line, absl::string_view rest)
      : file_(file), line_(line), rest_(rest) {}

  // The next space-separated word, or an error expecting `what`.
  absl::StatusOr<std::string> Word(absl::string_view what) {
    if (rest_.empty()) return Expected(what);
    size_t space = rest_.find(' ');
    std::string w(rest_.substr(0, space));
    rest_ = space == absl::string_view::npos ? absl::string_view()
                                             : rest_.substr(space + 1);
    if (w.empty()) return Expected(what);
    return w;
  }
  absl::StatusOr<int64_t> Int(absl::string_view what, int64_t lo, int64_t hi) {
    ASSIGN_OR_RETURN(std::string w, Word(what));
    int64_t v = 0;
    if (!absl::SimpleAtoi(w, &v) || v < lo || v > hi) return Expected(what);
    return v;
  }
  // What is left of the line (at least one character).
  absl::StatusOr<std::string> Rest(absl::string_view what) {
    if (rest_.empty()) return Expected(what);
    std::string r(rest_);
    rest_ = absl::string_view();
    return r;
  }
  // The next word as a composite layout ("pair(1,1)"), or its error (the
  // code CompositeLayout::Parse gives) naming the line.
  absl::StatusOr<CompositeLayout> Layout(absl::string_view what) {
    ASSIGN_OR_RETURN(std::string w, Word(what));
    absl::StatusOr<CompositeLayout> l = CompositeLayout::Parse(w);
    if (!l.ok()) {
      return absl::Status(
          l.status().code(),
          absl::StrCat(file_, ": line ", line_, ": ", l.status().message()));
    }
    return l;
  }
  absl::Status End() {
    if (!rest_.empty()) return Expected("the end of the line");
    return absl::OkStatus();
  }
  absl::Status Expected(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": line ", line_, ": expected ", what));
  }

 private:
  absl::string_view file_;
  int line_;
  absl::string_view rest_;
};

absl::Status ParseArgument(LineParser& p, Manifest* m) {
  ArgumentSpec a;
  ASSIGN_OR_RETURN(a.name, p.Word("the argument's name"));
  ASSIGN_OR_RETURN(std::string role, p.Word("placeholder or constant"));
  if (role != "placeholder" && role != "constant") {
    return p.Expected("placeholder or constant");
  }
  a.constant = role == "constant";
  ASSIGN_OR_RETURN(std::string kind,
                   p.Word("tensor, composite:TYPE, int, float, bool or none"));
  if (kind == "tensor") {
    a.kind = ArgumentSpec::Kind::kTensor;
  } else if (absl::StartsWith(kind, "composite:") && kind.size() > 10) {
    a.kind = ArgumentSpec::Kind::kComposite;
    a.type = kind.substr(10);
  } else if (kind == "int") {
    a.kind = ArgumentSpec::Kind::kInt;
  } else if (kind == "float") {
    a.kind = ArgumentSpec::Kind::kFloat;
  } else if (kind == "bool") {
    a.kind = ArgumentSpec::Kind::kBool;
  } else if (kind == "none") {
    a.kind = ArgumentSpec::Kind::kNone;
  } else {
    return p.Expected("tensor, composite:TYPE, int, float, bool or none");
  }
  ASSIGN_OR_RETURN(std::string dtype, p.Word("a dtype or -"));
  ASSIGN_OR_RETURN(std::string device, p.Word("a device or -"));
  ASSIGN_OR_RETURN(int64_t rank, p.Int("a rank", 0, 64));
  a.rank = static_cast<int>(rank);
  if (HasTensorFields(a)) {
    absl::StatusOr<DType> d = ParseDType(dtype);
    if (!d.ok()) return p.Expected("a dtype (f32, i64, ...)");
    a.dtype = *d;
    absl::StatusOr<Device> dev = Device::Parse(device);
    if (!dev.ok()) return p.Expected("a device (cpu, cuda:N)");
    a.device = *dev;
  }
  ASSIGN_OR_RETURN(std::string annotation, p.Rest("the annotation"));
  m->arguments.push_back(std::move(a));
  m->annotations.push_back(std::move(annotation));
  return absl::OkStatus();
}

}  // namespace

std::string GuardBoundsText(const std::vector<int64_t>& bounds) {
  std::string out;
  for (size_t j = 0; j + 1 < bounds.size(); j += 2) {
    absl::StrAppend(&out, bounds[j], " ", bounds[j + 1], "\n");
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseGuardBounds(absl::string_view text,
                                                      absl::string_view file) {
  std::vector<int64_t> bounds;
  int line = 0;
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++line;
    std::vector<absl::string_view> words =
        absl::StrSplit(l, ' ', absl::SkipEmpty());
    int64_t lo = 0, hi = 0;
    if (line > kMaxGuardBoundPairs || words.size() != 2 ||
        !absl::SimpleAtoi(words[0], &lo) || !absl::SimpleAtoi(words[1], &hi) ||
        lo > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": line ", line,
                       ": expected a range guard's bounds 'LO HI' "
                       "(LO <= HI, int64; at most ",
                       kMaxGuardBoundPairs, " lines)"));
    }
    bounds.insert(bounds.end(), {lo, hi});
  }
  return bounds;
}

std::string Manifest::ToString() const {
  std::string out = absl::StrCat(
      "lathe-artifact ", format, "\n", "lathe-version ", lathe_version, "\n",
      "kernel-abi ", kernel_abi, "\n", "graph ", OneLine(graph), "\n",
      "compiler ", OneLine(compiler), "\n");
  for (size_t k = 0; k < arguments.size(); ++k) {
    const ArgumentSpec& a = arguments[k];
    bool tensor = HasTensorFields(a);
    absl::StrAppend(
        &out, "argument ", a.name, " ", a.constant ? "constant" : "placeholder",
        " ", KindName(a), " ", tensor ? ShortName(a.dtype) : "-", " ",
        tensor ? a.device.ToString() : "-", " ", a.rank, " ",
        OneLine(k < annotations.size() ? annotations[k] : ""), "\n");
  }
  for (const auto& [k, tree] : composites) {
    absl::StrAppend(&out, "composite ", k, " ", tree.ToString(), "\n");
  }
  for (const CompositeLayout& r : signature.results) {
    absl::StrAppend(&out, "result ", r.ToString(), "\n");
  }
  for (size_t j = 0; j < signature.rebound_inputs.size(); ++j) {
    absl::StrAppend(&out, "rebound ", signature.rebound_inputs[j], " ",
                    signature.rebound_ranks[j], "\n");
  }
  for (int k : mutated) absl::StrAppend(&out, "mutated ", k, "\n");
  for (const std::string& c : signature.checks) {
    absl::StrAppend(&out, "check ", OneLine(c), "\n");
  }
  for (const std::string& g : guards) {
    absl::StrAppend(&out, "guard ", OneLine(g), "\n");
  }
  for (const auto& [k, file] : bound) {
    absl::StrAppend(&out, "bound ", k, " ", file, "\n");
  }
  for (const Frozen& f : frozen) {
    absl::StrAppend(&out, "frozen ", f.file, " ",
                    f.strides.empty() ? "-" : absl::StrJoin(f.strides, ","),
                    "\n");
  }
  for (const ArtifactFile& f : files) {
    absl::StrAppend(&out, "file ", f.name, " ", f.bytes, " ", f.sha256, "\n");
  }
  return out;
}

absl::StatusOr<Manifest> Manifest::Parse(absl::string_view text,
                                         absl::string_view file) {
  Manifest m;
  m.files.clear();
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  bool seen_format = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    absl::string_view l = lines[i];
    size_t space = l.find(' ');
    absl::string_view key = l.substr(0, space);
    LineParser p(file, line,
                 space == absl::string_view::npos ? absl::string_view()
                                                  : l.substr(space + 1));
    if (!seen_format) {
      // The format comes first, so a newer one is named as such.
      if (key != "lathe-artifact") {
        return p.Expected("'lathe-artifact FORMAT' (not a lathe artifact?)");
      }
      ASSIGN_OR_RETURN(int64_t format, p.Int("a format number", 0, 1 << 30));
      if (format != kArtifactFormat) {
        return absl::FailedPreconditionError(
            absl::StrCat(file, ": artifact format ", format,
                         "; this lathe reads format ", kArtifactFormat));
      }
      seen_format = true;
      continue;
    }
    if (key == "lathe-version") {
      ASSIGN_OR_RETURN(m.lathe_version, p.Word("a version"));
    } else if (key == "kernel-abi") {
      ASSIGN_OR_RETURN(int64_t abi, p.Int("a kernel ABI version", 0, 1 << 30));
      m.kernel_abi = static_cast<int>(abi);
    } else if (key == "graph") {
      ASSIGN_OR_RETURN(m.graph, p.Rest("the graph's name"));
    } else if (key == "compiler") {
      ASSIGN_OR_RETURN(m.compiler, p.Rest("the compiler's command line"));
    } else if (key == "argument") {
      RETURN_IF_ERROR(ParseArgument(p, &m));
    } else if (key == "composite") {
      ASSIGN_OR_RETURN(int64_t k, p.Int("an argument index", 0, 1 << 20));
      absl::StatusOr<CompositeLayout> parsed = p.Layout("a composite's tree");
      if (!parsed.ok()) return LayoutError(m, file, parsed.status());
      CompositeLayout tree = *std::move(parsed);
      if (tree.is_plain()) return p.Expected("a composite's tree, TYPE(...)");
      if (k >= static_cast<int64_t>(m.arguments.size()) ||
          m.arguments[k].kind != ArgumentSpec::Kind::kComposite ||
          m.arguments[k].type != tree.type->name()) {
        return p.Expected(absl::StrCat("a composite argument of type '",
                                       tree.type->name(), "' as argument ", k,
                                       " (its line first)"));
      }
      m.composites[static_cast<int>(k)] = std::move(tree);
    } else if (key == "result") {
      absl::StatusOr<CompositeLayout> r = p.Layout("a result's layout");
      if (!r.ok()) return LayoutError(m, file, r.status());
      m.signature.results.push_back(*std::move(r));
    } else if (key == "rebound") {
      ASSIGN_OR_RETURN(int64_t input,
                       p.Int("an argument index (-1: none)", -1, 1 << 20));
      ASSIGN_OR_RETURN(int64_t rank, p.Int("a rank", 0, 64));
      m.signature.rebound_inputs.push_back(static_cast<int>(input));
      m.signature.rebound_ranks.push_back(static_cast<int>(rank));
    } else if (key == "mutated") {
      ASSIGN_OR_RETURN(int64_t input, p.Int("an argument index", 0, 1 << 20));
      m.mutated.push_back(static_cast<int>(input));
    } else if (key == "check") {
      ASSIGN_OR_RETURN(std::string c, p.Rest("a check's message"));
      m.signature.checks.push_back(std::move(c));
    } else if (key == "guard") {
      ASSIGN_OR_RETURN(std::string g, p.Rest("a guard"));
      m.guards.push_back(std::move(g));
    } else if (key == "bound") {
      ASSIGN_OR_RETURN(int64_t input, p.Int("an argument index", 0, 1 << 20));
      ASSIGN_OR_RETURN(std::string name, p.Word("a file name"));
      if (!PlainName(name)) return p.Expected("a file name without '/'");
      m.bound[static_cast<int>(input)] = std::move(name);
    } else if (key == "frozen") {
      Frozen f;
      ASSIGN_OR_RETURN(f.file, p.Word("a file name"));
      if (!PlainName(f.file)) return p.Expected("a file name without '/'");
      ASSIGN_OR_RETURN(std::string strides, p.Word("strides (1,2,...) or -"));
      if (strides != "-") {
        for (absl::string_view s : absl::StrSplit(strides, ',')) {
          int64_t v = 0;
          if (!absl::SimpleAtoi(s, &v) || v < 0 || v > (int64_t{1} << 40) ||
              f.strides.size() >= 64) {
            return p.Expected("strides: up to 64 non-negative ints");
          }
          f.strides.push_back(v);
        }
      }
      m.frozen.push_back(std::move(f));
    } else if (key == "file") {
      ArtifactFile f;
      ASSIGN_OR_RETURN(f.name, p.Word("a file name"));
      if (!PlainName(f.name)) return p.Expected("a file name without '/'");
      ASSIGN_OR_RETURN(f.bytes,
                       p.Int("a size in bytes", 0, kMaxArtifactFileBytes));
      ASSIGN_OR_RETURN(f.sha256, p.Word("a SHA-256 digest"));
      if (f.sha256.size() != 64) return p.Expected("a SHA-256 digest");
      m.files.push_back(std::move(f));
    } else {
      return p.Expected(absl::StrCat("a manifest key (not '", key, "')"));
    }
    RETURN_IF_ERROR(p.End());
  }
  if (!seen_format) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": empty (not a lathe artifact?)"));
  }
  for (int k : m.signature.rebound_inputs) {
    if (k >= static_cast<int>(m.arguments.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": rebound argument ", k, " does not exist"));
    }
  }
  for (int k : m.mutated) {
    if (k >= static_cast<int>(m.arguments.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": mutated argument ", k, " does not exist"));
    }
  }
  for (const auto& [k, name] : m.bound) {
    if (k >= static_cast<int>(m.arguments.size()) ||
        m.arguments[k].kind != ArgumentSpec::Kind::kTensor) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": bound argument ", k, " is not a tensor argument"));
    }
    bool listed = false;
    for (const ArtifactFile& f : m.files) listed = listed || f.name == name;
    if (!listed) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": bound argument ", k, "'s file ", name, " is not listed"));
    }
  }
  for (const Frozen& f : m.frozen) {
    bool listed = false;
    for (const ArtifactFile& a : m.files) listed = listed || a.name == f.file;
    if (!listed) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": frozen constant file ", f.file, " is not listed"));
    }
  }
  if (m.files.empty() || !absl::EndsWith(m.files[0].name, ".so")) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": expected the shared library as its first file"));
  }
  return m;
}

absl::Status WriteArtifact(
    const std::string& dir, Manifest manifest,
    const std::vector<std::pair<std::string, std::string>>& files) {
  manifest.files.clear();
  for (const auto& [name, bytes] : files) {
    if (!PlainName(name) || name == kManifestName || name == kArtifactMarker) {
      return absl::InvalidArgumentError(
          absl::StrCat("an artifact cannot hold a file named '", name, "'"));
    }
    manifest.files.push_back(
        {name, static_cast<int64_t>(bytes.size()), Sha256Hex(bytes)});
  }
  for (const ArgumentSpec& a : manifest.arguments) {
    if (!PlainName(a.name) ||
        a.name.find_first_of(" \t\n\r") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("an argument name cannot be '", a.name, "'"));
    }
  }
  auto recordable = [](const CompositeLayout& l) {
    return l.Complete() ? absl::OkStatus()
                        : absl::InvalidArgumentError(absl::StrCat(
                              "an artifact cannot record the layout ",
                              l.ToString(), " (a rank it does not know)"));
  };
  for (const auto& [k, tree] : manifest.composites) {
    RETURN_IF_ERROR(recordable(tree));
  }
  for (const CompositeLayout& r : manifest.signature.results) {
    RETURN_IF_ERROR(recordable(r));
  }
  ASSIGN_OR_RETURN(StagedDir staged, StagedDir::Create(dir, kArtifactMarker));
  for (const auto& [name, bytes] : files) {
    RETURN_IF_ERROR(staged.Write(name, bytes));
  }
  RETURN_IF_ERROR(staged.Write(kManifestName, manifest.ToString()));
  return staged.Commit();
}

bool HoldsDeviceKernels(const Manifest& m) {
  for (const ArtifactFile& f : m.files) {
    if (absl::StartsWith(f.name, kKernelsFilePrefix)) return true;
  }
  return false;
}

namespace {

// A frozen constant from its .npy bytes (C order), laid out with `strides`.
absl::StatusOr<Tensor> FrozenOf(const std::string& bytes,
                                const std::vector<int64_t>& strides) {
  ASSIGN_OR_RETURN(Tensor t, ParseNpy(bytes));
  if (static_cast<int64_t>(strides.size()) != t.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("holds ", t.ToString(),
                                                   "; the manifest gives ",
                                                   strides.size(), " strides"));
  }
  if (std::equal(strides.begin(), strides.end(), t.strides().begin(),
                 t.strides().end())) {
    return t;
  }
  ASSIGN_OR_RETURN(Tensor laid_out,
                   Tensor::EmptyStrided(t.sizes(), strides, t.dtype()));
  RETURN_IF_ERROR(CopyTensor(laid_out, t));
  return laid_out;
}

}  // namespace

absl::StatusOr<LoadedArtifact> LoadArtifact(const std::string& dir,
                                            CompiledFunction::Options options) {
  const std::string manifest_path = absl::StrCat(dir, "/", kManifestName);
  ASSIGN_OR_RETURN(std::string text,
                   ReadFileLimited(manifest_path, kMaxManifestBytes));
  ASSIGN_OR_RETURN(Manifest m, Manifest::Parse(text, manifest_path));
  RETURN_IF_ERROR(OfThisLathe(m, manifest_path));
  // Every file as the manifest says, before any is loaded; the library is
  // loaded from the bytes checked, never from its path again.
  std::string library_bytes;
  std::vector<std::pair<std::string, std::string>> kernel_files;
  std::vector<Tensor> frozen(m.frozen.size());
  LoadedArtifact a;
  for (const ArtifactFile& f : m.files) {
    const std::string path = absl::StrCat(dir, "/", f.name);
    ASSIGN_OR_RETURN(std::string bytes,
                     ReadFileLimited(path, kMaxArtifactFileBytes));
    if (static_cast<int64_t>(bytes.size()) != f.bytes ||
        Sha256Hex(bytes) != f.sha256) {
      return absl::DataLossError(
          static_cast<int64_t>(bytes.size()) != f.bytes
              ? absl::StrCat(path, ": damaged: ", bytes.size(),
                             " bytes, the manifest says ", f.bytes)
              : absl::StrCat(path,
                             ": damaged: its SHA-256 is not the "
                             "manifest's"));
    }
    if (&f == &m.files[0]) {
      library_bytes = std::move(bytes);
    } else if (f.name == kGuardBoundsFile) {
      ASSIGN_OR_RETURN(m.signature.guard_bounds, ParseGuardBounds(bytes, path));
    } else if (absl::StartsWith(f.name, kKernelsFilePrefix)) {
      kernel_files.emplace_back(f.name, std::move(bytes));
    }
    for (size_t k = 0; k < m.frozen.size(); ++k) {
      if (m.frozen[k].file != f.name) continue;
      absl::StatusOr<Tensor> t = FrozenOf(bytes, m.frozen[k].strides);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat(path, ": ", t.status().message()));
      }
      frozen[k] = *std::move(t);
    }
    for (const auto& [k, name] : m.bound) {
      if (name != f.name) continue;
      absl::StatusOr<Tensor> t = ParseNpy(bytes);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat(path, ": ", t.status().message()));
      }
      const ArgumentSpec& want = m.arguments[k];
      if (t->dtype() != want.dtype || t->dim() != want.rank) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": holds ", t->ToString(), "; argument ", k,
                         " is ", want.ToString()));
      }
      a.bound.emplace_back(k, Operand::Of(*std::move(t)));
    }
  }
  std::sort(a.bound.begin(), a.bound.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  RETURN_IF_ERROR(KeepOpenMpLoaded());
  ASSIGN_OR_RETURN(SharedLibrary library,
                   SharedLibrary::OpenImage(
                       library_bytes, absl::StrCat(dir, "/", m.files[0].name)));
  // Kernels on a device: its module, loaded for the library's kernel table.
  std::shared_ptr<const DeviceKernels> device;
  if (library.Symbol(kDeviceKernelsSymbol).ok()) {
    absl::StatusOr<std::string> image = DeviceImageFor(kernel_files);
    if (!image.ok()) {
      return absl::Status(image.status().code(),
                          absl::StrCat(dir, ": ", image.status().message()));
    }
    ASSIGN_OR_RETURN(device, LoadCudaKernels(*image, library));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedGraph> graph,
                   LoadedGraph::Open(std::move(library), m.signature,
                                     std::move(device), std::move(frozen)));
  std::vector<Variant> variants;
  Variant v;
  v.graph = std::move(graph);
  v.guards = m.guards;
  v.mutated = m.mutated;
  variants.push_back(std::move(v));
  a.function = std::make_unique<CompiledFunction>(
      m.arguments, std::move(options), std::move(variants));
  a.manifest = std::move(m);
  return a;
}

std::optional<absl::StatusOr<std::vector<Operand>>> LoadedArtifact::CallViews(
    absl::Span<const LatheValue> views, uint64_t seed) {
  if (bound.empty()) return function->CallViews(views, seed);
  const size_t n = function->arguments().size();
  if (views.size() + bound.size() != n) return std::nullopt;
  absl::InlinedVector<LatheValue, 16> all;
  all.reserve(n);
  size_t next = 0, b = 0;
  for (size_t k = 0; k < n; ++k) {
    if (b < bound.size() && bound[b].first == static_cast<int>(k)) {
      const Operand& o = bound[b++].second;
      if (o.kind != Operand::Kind::kTensor || !o.tensor.defined()) {
        return std::nullopt;
      }
      all.push_back(ViewOfTensor(o.tensor));
    } else {
      all.push_back(views[next++]);
    }
  }
  return function->CallViews(all, seed);
}

absl::StatusOr<std::vector<Operand>> LoadedArtifact::Call(
    absl::Span<Operand> args, uint64_t seed) {
  if (bound.empty()) return function->Call(args, seed);
  const size_t n = function->arguments().size();
  if (args.size() + bound.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", n - bound.size(), " arguments (the artifact holds ",
        bound.size(), " of its ", n, "), got ", args.size()));
  }
  std::vector<Operand> all;
  all.reserve(n);
  size_t next = 0, b = 0;
  for (size_t k = 0; k < n; ++k) {
    if (b < bound.size() && bound[b].first == static_cast<int>(k)) {
      all.push_back(bound[b++].second);
    } else {
      all.push_back(std::move(args[next++]));
    }
  }
  absl::StatusOr<std::vector<Operand>> out =
      function->Call(absl::MakeSpan(all), seed);
  // Arguments a call rebinds go back to the caller.
  next = b = 0;
  for (size_t k = 0; k < n; ++k) {
    if (b < bound.size() && bound[b].first == static_cast<int>(k)) {
      ++b;
    } else {
      args[next++] = std::move(all[k]);
    }
  }
  return out;
}

}  // namespace lathe
