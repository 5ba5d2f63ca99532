#include "tools/result_files.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "status_macros.h"

namespace lathe {

namespace {

// The file that marks a directory as lathec's own output (see the top).
constexpr char kOutMarker[] = ".lathec-out";
// Where mutated inputs are written, under --out.
constexpr char kMutatedDir[] = "mutated";

// The tensors of `o`, laid out as `l` (named `name`), with their file
// names in LeafNames order; an error naming the value where `o` is not of
// that shape (a composite of another type, or of another arity).
absl::Status NamedLeaves(const std::string& name, const CompositeLayout& l,
                         const Operand& o,
                         std::vector<std::pair<std::string, Operand>>* out) {
  if (l.type == nullptr && o.kind != Operand::Kind::kComposite) {
    out->emplace_back(name, o);
    return absl::OkStatus();
  }
  if (l.type == nullptr || o.kind != Operand::Kind::kComposite ||
      o.composite->type != l.type ||
      o.composite->inner.size() != l.inner.size()) {
    return absl::InternalError(absl::StrCat(
        name, ": the call gave ", o.ToString(), " where its signature says ",
        l.type == nullptr ? "a plain value" : l.ToString()));
  }
  for (size_t k = 0; k < l.inner.size(); ++k) {
    RETURN_IF_ERROR(NamedLeaves(aot::InnerName(name, l, static_cast<int>(k)),
                                l.inner[k], o.composite->inner[k], out));
  }
  return absl::OkStatus();
}

}  // namespace

// An output as a tensor to save (numbers become 0-d arrays).
absl::StatusOr<Tensor> AsTensor(const Operand& o, int index) {
  DType d = DType::kFloat64;
  switch (o.kind) {
    case Operand::Kind::kTensor:
      return o.tensor;
    case Operand::Kind::kBool:
      d = DType::kBool;
      break;
    case Operand::Kind::kInt:
      d = DType::kInt64;
      break;
    case Operand::Kind::kFloat:
      break;
    case Operand::Kind::kNone:
    case Operand::Kind::kComposite:
      return absl::UnimplementedError(
          absl::StrCat("output ", index, " is ", o.ToString(),
                       ", which cannot be saved as .npy"));
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({}, d));
  if (d == DType::kInt64) {
    *t.data<int64_t>() = o.i;
  } else if (d == DType::kBool) {
    *t.data<bool>() = o.b;
  } else {
    *t.data<double>() = o.f;
  }
  return t;
}

absl::StatusOr<std::vector<PendingFile>> ResultFiles(
    const aot::CompositeSignature& signature,
    const std::vector<std::string>& names_of_arguments,
    absl::Span<const Operand> results, absl::Span<const Operand> arguments,
    const std::vector<bool>& written, const std::string& prefix) {
  if (results.size() != signature.results.size() ||
      arguments.size() < names_of_arguments.size() ||
      signature.arguments.size() < names_of_arguments.size()) {
    return absl::InternalError(absl::StrCat(
        "the call gave ", results.size(), " results and ", arguments.size(),
        " arguments where its signature says ", signature.results.size(),
        " and ", signature.arguments.size()));
  }
  std::vector<PendingFile> pending;
  auto add = [&](const std::string& name, const Operand& o,
                 int index) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor t, AsTensor(o, index));
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
    std::vector<std::pair<std::string, Operand>> leaves;
    RETURN_IF_ERROR(NamedLeaves(absl::StrCat("out", k), signature.results[k],
                                results[k], &leaves));
    for (const auto& [name, leaf] : leaves) {
      RETURN_IF_ERROR(add(name, leaf, static_cast<int>(k)));
    }
  }
  // Mutated inputs go to mutated/, so no input name can collide with an
  // output's file.
  for (size_t i = 0; i < names_of_arguments.size() && i < written.size(); ++i) {
    if (!written[i]) continue;
    std::vector<std::pair<std::string, Operand>> leaves;
    RETURN_IF_ERROR(NamedLeaves(names_of_arguments[i], signature.arguments[i],
                                arguments[i], &leaves));
    for (const auto& [name, leaf] : leaves) {
      RETURN_IF_ERROR(
          add(absl::StrCat(kMutatedDir, "/", name), leaf, static_cast<int>(i)));
    }
  }
  return pending;
}

absl::StatusOr<StagedDir> StageResultFiles(
    const std::string& dir, const std::vector<PendingFile>& files) {
  ASSIGN_OR_RETURN(StagedDir out, StagedDir::Create(dir, kOutMarker));
  for (const PendingFile& f : files) {
    if (!f.path.empty()) {
      absl::string_view parts[] = {f.npy.header, f.npy.data()};
      RETURN_IF_ERROR(out.Write(f.path, parts));
    }
  }
  return out;
}

}  // namespace lathe
