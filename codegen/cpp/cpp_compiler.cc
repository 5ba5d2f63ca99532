#include "codegen/cpp/cpp_compiler.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/compile_cache.h"
#include "runtime/file_io.h"
#include "status_macros.h"

namespace lathe::codegen {

std::vector<std::string> CompilerFlags() {
  // -mprefer-vector-width=512: GCC tunes this CPU for 256-bit vectors
  // unless told, which halves the AVX-512 loops and libmvec calls.
  std::vector<std::string> flags = {"-std=c++17",
                                    "-O3",
                                    "-march=native",
                                    "-mprefer-vector-width=512",
                                    "-fopenmp",
                                    "-fno-math-errno",
                                    "-fPIC",
                                    "-shared",
                                    "-w"};
#if defined(__SANITIZE_ADDRESS__)
  flags.push_back("-fsanitize=address");
  // GCC reports stack-use-after-scope inside OpenMP outlined regions for
  // variables they capture from the enclosing kernel, which are in scope.
  flags.push_back("-fno-sanitize-address-use-after-scope");
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
  flags.push_back("-fsanitize=address");
#endif
#endif
#if defined(LATHE_UBSAN)
  // The sanitizer build's UBSan (.bazelrc's --config=ubsan, which defines
  // LATHE_UBSAN: GCC defines no macro for it), with its checks: any report
  // in a generated kernel stops the process.
  for (const char* f :
       {"-fsanitize=undefined", "-fsanitize=float-cast-overflow",
        "-fno-sanitize=null,alignment,vptr", "-fno-sanitize-recover=all"}) {
    flags.push_back(f);
  }
#endif
  return flags;
}

namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The command line `compiler flags... tail...` (`tail` quoted already).
std::string Command(const std::string& compiler,
                    const std::vector<std::string>& flags,
                    std::initializer_list<std::string> tail) {
  std::vector<std::string> parts = {compiler};
  parts.insert(parts.end(), flags.begin(), flags.end());
  parts.insert(parts.end(), tail.begin(), tail.end());
  return absl::StrJoin(parts, " ");
}

// The most bytes a compiled library may have to be cached.
constexpr int64_t kMaxLibraryBytes = int64_t{1} << 30;

struct CommandResult {
  int status = 0;      // pclose's; -1 when the command could not start
  std::string output;  // stdout and stderr together
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    result.status = -1;
    return result;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) {
    result.output.append(buf, n);
  }
  result.status = pclose(pipe);
  return result;
}

// The first lines of `output` joined with " | ".
std::string FirstLines(const std::string& output, size_t count) {
  std::vector<std::string> lines = absl::StrSplit(output, '\n');
  if (lines.size() > count) lines.resize(count);
  return absl::StrJoin(lines, " | ");
}

// This CPU's "model name" and "flags" lines of /proc/cpuinfo: what
// -march=native resolves to ("" where there is no /proc/cpuinfo).
std::string CpuIdentity() {
  absl::StatusOr<std::string> info =
      ReadFileLimited("/proc/cpuinfo", int64_t{64} << 20);
  if (!info.ok()) return "";
  std::string model, flags;
  for (absl::string_view line : absl::StrSplit(*info, '\n')) {
    if (model.empty() && absl::StartsWith(line, "model name")) {
      model = std::string(line);
    }
    if (flags.empty() && absl::StartsWith(line, "flags")) {
      flags = std::string(line);
    }
  }
  return absl::StrCat(model, "\n", flags);
}

}  // namespace

std::string CompilerName() {
  const char* cxx = std::getenv("LATHE_CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "g++";
}

bool LinksWithGold(const std::string& compiler) {
  // std::mutex: ThreadSanitizer sees it, not the system Abseil's.
  static std::mutex mu;
  static auto* known = new absl::flat_hash_map<std::string, bool>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = known->find(compiler);
  if (it != known->end()) return it->second;
  // The linker prints its version and stops: no file is written.
  CommandResult probe = RunCommand(absl::StrCat(
      compiler, " -fuse-ld=gold -Wl,--version -x c /dev/null -o /dev/null"));
  const bool gold =
      probe.status == 0 && absl::StrContains(probe.output, "GNU gold");
  known->emplace(compiler, gold);
  return gold;
}

absl::StatusOr<std::string> CompilerIdentity(const std::string& compiler) {
  // std::mutex: ThreadSanitizer sees it, not the system Abseil's.
  static std::mutex mu;
  static auto* known =
      new absl::flat_hash_map<std::string, absl::StatusOr<std::string>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = known->find(compiler);
  if (it != known->end()) return it->second;
  CommandResult version = RunCommand(absl::StrCat(compiler, " --version"));
  absl::StatusOr<std::string> identity;
  if (version.status != 0) {
    identity = absl::FailedPreconditionError(absl::StrCat(
        "cannot identify the C++ compiler for the compile cache: `", compiler,
        " --version` failed: ", FirstLines(version.output, 2)));
  } else {
    identity = absl::StrCat(compiler, "\n", FirstLines(version.output, 1), "\n",
                            CpuIdentity());
  }
  known->emplace(compiler, identity);
  return identity;
}

absl::StatusOr<std::optional<std::string>> PrecompilePrelude(
    absl::string_view prelude, const std::vector<std::string>& flags,
    const std::string& dir) {
  const std::string compiler = CompilerName();
  ASSIGN_OR_RETURN(std::string identity, CompilerIdentity(compiler));
  std::vector<std::string> header_flags = flags;
  header_flags.push_back("-x");
  header_flags.push_back("c++-header");
  const std::string key = CacheKey(prelude, identity, header_flags);
  // Absolute: the compiler runs from another directory's point of view.
  std::error_code ec;
  const std::string where = std::filesystem::absolute(dir, ec).string();
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot resolve ", dir, ": ", ec.message()));
  }
  // Checked on every use: the files are read in place, by path.
  RETURN_IF_ERROR(CheckPrivateDirectory(where, ::geteuid()));
  const std::string header = absl::StrCat(where, "/", key, ".h");
  const std::string precompiled = header + ".gch";
  if (CheckPrivateFile(header, ::geteuid()).ok() &&
      CheckPrivateFile(precompiled, ::geteuid()).ok()) {
    return header;  // made before
  }
  RETURN_IF_ERROR(WriteFileAtomic(header, prelude, false, 0600));
  // Built into a file of its own, created exclusively beside its place
  // (mode 0600), and renamed there, so a compiler never reads a half
  // written one.
  std::string made = precompiled + ".tmp-XXXXXX";
  const int fd = ::mkostemp(made.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create a file beside ", precompiled));
  }
  ::close(fd);
  if (RunCommand(
          Command(compiler, header_flags, {"-o", Quote(made), Quote(header)}))
              .status != 0 ||
      ::rename(made.c_str(), precompiled.c_str()) != 0) {
    ::unlink(made.c_str());
    return std::nullopt;
  }
  return header;
}

namespace {

// PrecompilePrelude's header for `prelude` and `flags` in `cache`'s private
// directory, looked at before each use (nullopt: build without it). A
// prelude the compiler could not precompile is not tried again by this
// process.
std::optional<std::string> PreludeHeader(absl::string_view prelude,
                                         const std::vector<std::string>& flags,
                                         CacheBackend* cache) {
  const std::string dir = PrivateCacheDirectory(cache);
  if (dir.empty()) return std::nullopt;
  // std::mutex: ThreadSanitizer sees it, not the system Abseil's.
  static std::mutex mu;
  static auto* failed = new absl::flat_hash_set<std::string>();
  const std::string key =
      absl::StrCat(dir, "\n", CacheKey(prelude, CompilerName(), flags));
  std::lock_guard<std::mutex> lock(mu);
  if (failed->contains(key)) return std::nullopt;
  absl::StatusOr<std::optional<std::string>> header =
      PrecompilePrelude(prelude, flags, dir);
  if (header.ok() && header->has_value()) return **header;
  failed->insert(key);
  return std::nullopt;
}

}  // namespace

absl::StatusOr<BuiltLibrary> CompileSharedLibrary(
    absl::string_view source, const std::string& dir, CacheBackend* cache,
    std::vector<std::string> flags, absl::string_view prelude,
    bool cached_only) {
  BuiltLibrary lib;
  lib.source_path = absl::StrCat(dir, "/kernel.cc");
  lib.path = absl::StrCat(dir, "/kernel.so");
  const std::string compiler = CompilerName();
  if (flags.empty()) flags = CompilerFlags();
  // The command that builds it with `f` (a cache hit reports it too).
  auto command = [&](const std::vector<std::string>& f) {
    return Command(compiler, f,
                   {"-o", Quote(lib.path), Quote(lib.source_path)});
  };
  lib.command = command(flags);
  // Not fsync'd, as the compiler's own output is not: an fsync costs
  // milliseconds, more than a whole cache hit, and both files can be made
  // again.
  RETURN_IF_ERROR(WriteFileAtomic(lib.source_path, source, false));
  std::string key;
  if (cache != nullptr) {
    ASSIGN_OR_RETURN(std::string identity, CompilerIdentity(compiler));
    key = CacheKey(source, identity, flags);
    ASSIGN_OR_RETURN(std::optional<CacheHit> hit, cache->Get(key));
    if (hit) {
      RETURN_IF_ERROR(WriteFileAtomic(lib.path, hit->bytes, false));
      lib.image = std::move(hit->bytes);
      lib.cache_hit = hit->tier;
      return lib;
    }
  }
  if (cached_only) {
    return absl::NotFoundError(
        absl::StrCat("no library for ", lib.source_path, " in the cache"));
  }
  // The linker is not part of the key: gold and ld.bfd link the same
  // objects into libraries that do the same, gold in a third of the time.
  std::vector<std::string> build_flags = flags;
  if (LinksWithGold(compiler)) build_flags.push_back("-fuse-ld=gold");
  lib.command = command(build_flags);
  auto start = std::chrono::steady_clock::now();
  CommandResult result;
  result.status = -1;  // not run
  // With the prelude precompiled, the rest of the source alone, after the
  // prelude's header (-include): the same text to the compiler. Any
  // failure builds the whole source as `command` says, whose errors are
  // the ones reported.
  std::optional<std::string> header;
  if (cache != nullptr && BeginsWithPrelude(source, prelude)) {
    header = PreludeHeader(prelude, flags, cache);
  }
  bool with_prelude = false;
  if (header) {
    const std::string rest = absl::StrCat(dir, "/kernel.rest.cc");
    if (WriteFileAtomic(rest, source.substr(prelude.size()), false).ok()) {
      result = RunCommand(Command(
          compiler, build_flags,
          {"-o", Quote(lib.path), "-include", Quote(*header), Quote(rest)}));
      with_prelude = true;
      RemoveTree(rest).IgnoreError();
    }
  }
  if (result.status != 0) {
    CommandResult plain = RunCommand(lib.command);
    // Built without it: a damaged precompiled prelude (cut short by a
    // crash) is made again by the next build.
    if (with_prelude && plain.status == 0) {
      RemoveTree(*header + ".gch").IgnoreError();
    }
    result = std::move(plain);
  }
  lib.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (result.status == -1) {
    return absl::InternalError(absl::StrCat("cannot run ", compiler));
  }
  if (result.status != 0) {
    return absl::InternalError(
        absl::StrCat("the C++ compiler failed on ", lib.source_path, " (",
                     lib.command, "): ", FirstLines(result.output, 8)));
  }
  ASSIGN_OR_RETURN(lib.image, ReadFileLimited(lib.path, kMaxLibraryBytes));
  if (cache != nullptr) {
    absl::Status stored = cache->Put(key, lib.image);
    if (!stored.ok()) lib.cache_error = stored.ToString();
  }
  return lib;
}

absl::StatusOr<std::string> TemporaryBuildDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (tmp == nullptr || *tmp == '\0') tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(
      tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/lathe-cpu-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError("cannot create a temporary directory");
  }
  return pattern;
}

}  // namespace lathe::codegen
