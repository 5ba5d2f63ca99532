// -----------------------------------------------------------------------------
// File: artifact.h
// -----------------------------------------------------------------------------
//
// A compiled function on disk, self-contained: a directory that
// `lathec compile GRAPH -o DIR` writes and LoadArtifact(DIR) opens with the
// runtime library alone (no compiler):
//
//   DIR/kernel.so      the compiled graph (lathe_call_user, lathe_guards)
//   DIR/kernel.cc      its generated source, for reading
//   DIR/bound_K.npy    the value of argument K, where the artifact holds it
//                      (an exported model's weights: lathe.aot_compile)
//   DIR/frozen_K.npy   frozen constant K (`lathec compile --freeze`): the
//                      library's own, passed after every call's arguments
//   DIR/guard_bounds.txt  the bounds of the library's range guards
//                      (`lo hi` per line; CallSignature::guard_bounds), where
//                      it has any: data, so that graphs differing only in a
//                      size's range share one library
//   DIR/manifest.txt   a versioned manifest: the arguments (dtypes, devices,
//                      annotations: symbolic sizes and strides; each
//                      composite's whole tree), the results,
//                      the guards as text, the
//                      compiler's command line, lathe's version, and the
//                      size and SHA-256 of every other file
//
// An artifact of another format, lathe version or kernel ABI, or with a
// damaged or missing file, is an error naming the file.
//
// Example:
//
//   ASSIGN_OR_RETURN(LoadedArtifact a, LoadArtifact("/tmp/mlp"));
//   ASSIGN_OR_RETURN(std::vector<Operand> out,
//                    a.function->Call(absl::MakeSpan(args)));

#ifndef LATHE_RUNTIME_ARTIFACT_H_
#define LATHE_RUNTIME_ARTIFACT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/compiled_function.h"
#include "runtime/composite_layout.h"
#include "runtime/loaded_graph.h"

namespace lathe {

// lathe's version, recorded in every artifact (and part of cache keys).
inline constexpr char kLatheVersion[] = "0.12.0";
// The manifest's own format.
inline constexpr int kArtifactFormat = 1;
// The most bytes a manifest, and any file of an artifact, may hold.
inline constexpr int64_t kMaxManifestBytes = int64_t{1} << 20;
inline constexpr int64_t kMaxArtifactFileBytes = int64_t{1} << 30;
// The file of an artifact's guard bounds, and the most range guards it
// may give bounds for.
inline constexpr char kGuardBoundsFile[] = "guard_bounds.txt";
inline constexpr int64_t kMaxGuardBoundPairs = 4096;

// GuardBoundsText()
//
// `bounds` (lo, hi per range guard) as kGuardBoundsFile holds them.
std::string GuardBoundsText(const std::vector<int64_t>& bounds);

// ParseGuardBounds()
//
// The inverse of GuardBoundsText; errors name `file` and the line.
absl::StatusOr<std::vector<int64_t>> ParseGuardBounds(absl::string_view text,
                                                      absl::string_view file);

struct ArtifactFile {
  std::string name;  // relative to the artifact directory
  int64_t bytes = 0;
  std::string sha256;
};

struct Manifest {
  int format = kArtifactFormat;
  std::string lathe_version = kLatheVersion;
  int kernel_abi = LATHE_KERNEL_ABI_VERSION;
  std::string graph;     // the graph it was compiled from ("mlp.txt")
  std::string compiler;  // the C++ compiler's command line
  // The arguments (placeholders, then constants), each with its annotation
  // as the graph writes it ("f32[s0, 784][784, 1]cpu", "Sym(zf0)").
  std::vector<ArgumentSpec> arguments;
  std::vector<std::string> annotations;
  // Each composite argument's whole tree, by argument index, as its layout
  // writes it ("pair(pair(1,1),pair(1,1))": the types down to the
  // plain tensors and their ranks). A composite argument without one (a
  // manifest written before lathe recorded them) is its type over plain
  // tensors of unknown rank.
  std::map<int, CompositeLayout> composites;
  CallSignature signature;
  std::vector<int> mutated;         // the arguments a call writes
  std::vector<std::string> guards;  // guard k as text ("x.size(0) == 1")
  // Arguments whose values the artifact holds (an exported model's
  // weights), by argument index: the .npy file among `files` holding it.
  // A call passes the others (LoadedArtifact::Call).
  std::map<int, std::string> bound;
  // The frozen constants the library reads after the arguments
  // (driver/freeze.h), in that order: each one's .npy file among `files`
  // and its strides (the file holds it in C order).
  struct Frozen {
    std::string file;
    std::vector<int64_t> strides;
  };
  std::vector<Frozen> frozen;
  std::vector<ArtifactFile> files;  // kernel.so first

  // The manifest's text, one fact per line.
  std::string ToString() const;
  // The inverse of ToString; errors name `file` and the line.
  static absl::StatusOr<Manifest> Parse(absl::string_view text,
                                        absl::string_view file);
};

// WriteArtifact()
//
// Writes `files` ({name, bytes}; the first is the .so) and their manifest
// (`manifest` with its files filled in) into `dir`, all at once: a new
// directory, or one an earlier artifact occupies.
absl::Status WriteArtifact(
    const std::string& dir, Manifest manifest,
    const std::vector<std::pair<std::string, std::string>>& files);

// Whether the artifact's kernels run on a CUDA device (it holds their
// files: runtime/cuda/cuda_kernels.h).
bool HoldsDeviceKernels(const Manifest& m);

struct LoadedArtifact {
  Manifest manifest;
  std::unique_ptr<CompiledFunction> function;
  // The bound arguments' values (Manifest::bound), read from their files.
  std::vector<std::pair<int, Operand>> bound;

  // Call()
  //
  // Calls the function on `args`, the arguments not bound, in order, with
  // the bound values in their places; an error when `args` is not as many.
  absl::StatusOr<std::vector<Operand>> Call(absl::Span<Operand> args,
                                            uint64_t seed = kDefaultSeed);

  // CallViews()
  //
  // CompiledFunction::CallViews on `views` of the arguments not bound, with
  // the bound values in their places; std::nullopt where only Call can go
  // on (a bound value that is not a plain tensor too).
  std::optional<absl::StatusOr<std::vector<Operand>>> CallViews(
      absl::Span<const LatheValue> views, uint64_t seed = kDefaultSeed);
};

// LoadArtifact()
//
// Opens the artifact in `dir` (its files checked against the manifest) as a
// function with its one variant; `options` may add a compile callback and a
// fallback.
absl::StatusOr<LoadedArtifact> LoadArtifact(
    const std::string& dir, CompiledFunction::Options options = {});

}  // namespace lathe

#endif  // LATHE_RUNTIME_ARTIFACT_H_
