#include "runtime/cuda/nvrtc.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda/function_table.h"
#include "runtime/file_io.h"
#include "runtime/shared_library.h"
#include "status_macros.h"

namespace lathe {
namespace {

constexpr NvrtcResult kNvrtcSuccess = 0;

// NVRTC from exactly `library`.
absl::StatusOr<std::unique_ptr<Nvrtc>> LoadFrom(const std::string& library) {
  ASSIGN_OR_RETURN(SharedLibrary lib, OpenLibrary(library));
  auto nvrtc = std::make_unique<Nvrtc>();
  nvrtc->source = library;
  const std::string lacks = absl::StrCat("NVRTC ", library, " ");
#define LATHE_NVRTC_RESOLVE(member, symbol, ret, params)              \
  RETURN_IF_ERROR(ResolveFunction(lib, symbol, &nvrtc->member, lacks, \
                                  " (a toolkit older than lathe needs?)"));
  LATHE_NVRTC_FUNCTIONS(LATHE_NVRTC_RESOLVE)
#undef LATHE_NVRTC_RESOLVE
  if (nvrtc->version(&nvrtc->major, &nvrtc->minor) != kNvrtcSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC ", library, ": nvrtcVersion failed"));
  }
  return nvrtc;
}

// OK, or an error naming `call` and NVRTC's words for `result`.
absl::Status Check(const Nvrtc& nvrtc, NvrtcResult result,
                   absl::string_view call) {
  if (result == kNvrtcSuccess) return absl::OkStatus();
  const char* text = nvrtc.get_error_string(result);
  return absl::InternalError(absl::StrCat(
      call, ": ",
      text != nullptr ? text : absl::StrCat("NVRTC error ", result)));
}

// The name the prelude has as a header when NVRTC precompiles it.
constexpr char kPreludeHeader[] = "lathe_prelude.cuh";

// What a directory of ProcessPchDirectory's is called before its pid.
constexpr char kPchPrefix[] = "nvrtc-pch-";

// Guards the state below.
std::mutex& PchMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

// The process that made the directories (a forked child's exit leaves
// them to it), and parent -> its directory there ("" when it could not be
// made).
pid_t pch_owner = 0;
std::map<std::string, std::string>* pch_dirs = nullptr;

// Removes this process's directories (NVRTC's files in them too).
void RemovePchDirectories() {
  std::lock_guard<std::mutex> lock(PchMutex());
  if (getpid() != pch_owner) return;
  for (const auto& [parent, dir] : *pch_dirs) {
    if (!dir.empty()) RemoveTree(dir).IgnoreError();
  }
}

// This machine's name, as the directories carry it.
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// This process's directory for NVRTC's precompiled preludes inside
// `parent` (a private directory): <parent>/nvrtc-pch-<pid>-<host>-XXXXXX,
// mode 0700, made on first use, removed at exit. NVRTC names its files
// after the program, so processes sharing `parent` each need their own.
// Before it is made, the directories of this machine's processes that no
// longer run (killed before their exit) are removed, and any with this
// process's pid (a killed one's, the pid reused: this one has none yet);
// other machines' are left alone. "" when it cannot be made.
std::string ProcessPchDirectory(const std::string& parent) {
  std::lock_guard<std::mutex> lock(PchMutex());
  if (pch_dirs == nullptr) {
    pch_dirs = new std::map<std::string, std::string>;
    pch_owner = getpid();
    std::atexit(RemovePchDirectories);
  }
  auto [it, made] = pch_dirs->try_emplace(parent);
  if (!made) return it->second;
  if (!CheckPrivateDirectory(parent, geteuid()).ok()) return "";
  const std::string host = HostName();
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(parent);
  for (const std::string& name :
       names.ok() ? *names : std::vector<std::string>{}) {
    if (!absl::StartsWith(name, kPchPrefix)) continue;
    const std::string rest = name.substr(sizeof(kPchPrefix) - 1);
    const size_t dash = rest.find('-');
    pid_t pid = 0;
    // <pid>-<host>-XXXXXX
    if (dash == std::string::npos ||
        !absl::SimpleAtoi(rest.substr(0, dash), &pid) || pid <= 0 ||
        rest.size() != dash + 1 + host.size() + 7 ||
        rest.compare(dash + 1, host.size(), host) != 0) {
      continue;
    }
    if (pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH)) {
      RemoveTree(absl::StrCat(parent, "/", name)).IgnoreError();
    }
  }
  std::string dir =
      absl::StrCat(parent, "/", kPchPrefix, getpid(), "-", host, "-XXXXXX");
  if (host.find('/') != std::string::npos || mkdtemp(dir.data()) == nullptr) {
    return "";
  }
  return it->second = dir;
}

// What this process knows of each prelude, architecture and options:
// whether a source beginning with it was compiled before (precompiling
// costs more than one compile saves: it pays from the second on), and
// whether the compile after its precompiled form failed where the whole
// text compiled (it is not tried again).
struct PreludeHistory {
  absl::flat_hash_set<size_t> seen, failed;
};
PreludeHistory& History() {
  static auto* history = new PreludeHistory;
  return *history;
}

}  // namespace

absl::StatusOr<const Nvrtc*> LoadNvrtc(const std::string& library) {
  return LoadOnce<Nvrtc>(library, [&] {
    return LoadToolkitLibrary<Nvrtc>(
        library, {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "NVRTC",
        LoadFrom);
  });
}

bool NvrtcAtLeast(const Nvrtc& nvrtc, int major, int minor) {
  return nvrtc.major > major || (nvrtc.major == major && nvrtc.minor >= minor);
}

bool NvrtcPrecompiles(const Nvrtc& nvrtc) { return NvrtcAtLeast(nvrtc, 12, 8); }

namespace {

// `text` compiled as CompileCuda describes, with `header` (its text, or
// null) given to NVRTC as the file `kPreludeHeader`.
absl::StatusOr<CudaImage> CompileText(const Nvrtc& nvrtc,
                                      const std::string& text,
                                      absl::string_view name, int arch,
                                      const std::vector<std::string>& options,
                                      const char* header) {
  const std::string program_name(name);
  const char* const header_names[] = {kPreludeHeader};
  NvrtcProgram program = nullptr;
  if (absl::Status s =
          Check(nvrtc,
                nvrtc.create_program(
                    &program, text.c_str(), program_name.c_str(),
                    header == nullptr ? 0 : 1, &header, header_names),
                "nvrtcCreateProgram");
      !s.ok()) {
    return s;
  }
  std::unique_ptr<NvrtcProgram, std::function<void(NvrtcProgram*)>> owned(
      &program, [&nvrtc](NvrtcProgram* p) { nvrtc.destroy_program(p); });
  // The toolkit's headers (cuda_fp16.h) and libcu++'s (cuda/std/cmath).
  std::vector<std::string> all = {
      absl::StrCat("--gpu-architecture=sm_", arch), "--std=c++17",
      absl::StrCat("--include-path=", CudaToolkitDir(), "/include"),
      absl::StrCat("--include-path=", CudaToolkitDir(), "/include/cccl")};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const NvrtcResult compiled = nvrtc.compile_program(
      program, static_cast<int>(argv.size()), argv.data());
  CudaImage image;
  image.arch = arch;
  size_t size = 0;
  if (nvrtc.get_program_log_size(program, &size) == kNvrtcSuccess && size > 1) {
    image.log.resize(size);
    if (nvrtc.get_program_log(program, image.log.data()) != kNvrtcSuccess) {
      image.log.clear();
    }
    while (!image.log.empty() &&
           (image.log.back() == '\0' || image.log.back() == '\n')) {
      image.log.pop_back();
    }
  }
  if (compiled != kNvrtcSuccess) {
    const char* text = nvrtc.get_error_string(compiled);
    return absl::InvalidArgumentError(
        absl::StrCat(name, " does not compile for sm_", arch, " (",
                     text != nullptr ? text : "NVRTC error", ")",
                     image.log.empty() ? "" : ":\n", image.log));
  }
  auto fetch = [&](auto size_fn, auto get_fn, absl::string_view call,
                   std::string* out) -> absl::Status {
    size_t n = 0;
    if (absl::Status s = Check(nvrtc, size_fn(program, &n), call); !s.ok()) {
      return s;
    }
    out->resize(n);
    return Check(nvrtc, get_fn(program, out->data()), call);
  };
  if (absl::Status s = fetch(nvrtc.get_cubin_size, nvrtc.get_cubin,
                             "nvrtcGetCUBIN", &image.cubin);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          fetch(nvrtc.get_ptx_size, nvrtc.get_ptx, "nvrtcGetPTX", &image.ptx);
      !s.ok()) {
    return s;
  }
  // The PTX's terminating NUL is not part of the text.
  if (!image.ptx.empty() && image.ptx.back() == '\0') image.ptx.pop_back();
  return image;
}

}  // namespace

absl::StatusOr<CudaImage> CompileCuda(const Nvrtc& nvrtc,
                                      absl::string_view source,
                                      absl::string_view name, int arch,
                                      const std::vector<std::string>& options,
                                      const NvrtcPrelude& prelude) {
  if (arch < 10 || arch > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": no architecture sm_", arch));
  }
  const absl::string_view text = prelude.text;
  const size_t key = absl::HashOf(text, arch, options);
  bool precompile = false;
  if (BeginsWithPrelude(source, text) && !prelude.dir.empty() &&
      NvrtcPrecompiles(nvrtc)) {
    std::lock_guard<std::mutex> lock(PchMutex());
    PreludeHistory& h = History();
    precompile = !h.seen.insert(key).second && !h.failed.contains(key);
  }
  // One compile at a time through the precompiled files (NVRTC names
  // them after the program, and threads compiling at once would share
  // them); the others compile the whole text meanwhile.
  static auto* through_pch = new std::mutex;
  std::unique_lock<std::mutex> turn(*through_pch, std::defer_lock);
  const std::string dir = precompile && turn.try_lock()
                              ? ProcessPchDirectory(prelude.dir)
                              : std::string();
  if (!dir.empty()) {
    // The prelude as a header, and the rest numbered as in `source`.
    const std::string header(text);
    const std::string rest =
        absl::StrCat("#include \"", kPreludeHeader, "\"\n#line ",
                     std::count(text.begin(), text.end(), '\n') + 1, " \"",
                     absl::CEscape(name), "\"\n", source.substr(text.size()));
    std::vector<std::string> with = options;
    // 20283: NVRTC's note that the #line ends what it precompiles.
    with.insert(with.end(), {"--pch", absl::StrCat("--pch-dir=", dir),
                             "--pch-messages=false", "--diag-suppress=20283"});
    absl::StatusOr<CudaImage> image =
        CompileText(nvrtc, rest, name, arch, with, header.c_str());
    if (image.ok()) {
      image->precompiled_prelude = true;
      return image;
    }
  }
  absl::StatusOr<CudaImage> image =
      CompileText(nvrtc, std::string(source), name, arch, options, nullptr);
  if (!dir.empty() && image.ok()) {
    std::lock_guard<std::mutex> lock(PchMutex());
    History().failed.insert(key);
  }
  return image;
}

std::string SerializeCudaImage(const CudaImage& image) {
  return absl::StrCat("lathe-cuda-image 1 ", image.arch, " ",
                      image.cubin.size(), " ", image.ptx.size(), "\n",
                      image.cubin, image.ptx);
}

absl::StatusOr<CudaImage> ParseCudaImage(absl::string_view bytes) {
  const size_t eol = bytes.find('\n');
  std::vector<absl::string_view> fields =
      absl::StrSplit(bytes.substr(0, eol), ' ');
  CudaImage image;
  uint64_t cubin = 0, ptx = 0;
  if (eol == absl::string_view::npos || fields.size() != 5 ||
      fields[0] != "lathe-cuda-image" || fields[1] != "1" ||
      !absl::SimpleAtoi(fields[2], &image.arch) ||
      !absl::SimpleAtoi(fields[3], &cubin) ||
      !absl::SimpleAtoi(fields[4], &ptx) ||
      bytes.size() - eol - 1 != cubin + ptx || cubin > bytes.size() ||
      ptx > bytes.size()) {
    return absl::DataLossError("not a cached CUDA image");
  }
  image.cubin = std::string(bytes.substr(eol + 1, cubin));
  image.ptx = std::string(bytes.substr(eol + 1 + cubin, ptx));
  return image;
}

absl::StatusOr<CachedCudaImage> CompileCudaCached(
    const Nvrtc& nvrtc, absl::string_view source, absl::string_view name,
    int arch, const std::vector<std::string>& options, CacheBackend* cache,
    const NvrtcPrelude& prelude) {
  CachedCudaImage out;
  std::string key;
  if (cache != nullptr) {
    key = CacheKey(
        source,
        absl::StrCat("nvrtc ", nvrtc.major, ".", nvrtc.minor, " sm_", arch),
        options);
    absl::StatusOr<std::optional<CacheHit>> hit = cache->Get(key);
    if (hit.ok() && hit->has_value()) {
      absl::StatusOr<CudaImage> image = ParseCudaImage((*hit)->bytes);
      if (image.ok() && image->arch == arch) {
        out.image = *std::move(image);
        out.cache_hit = (*hit)->tier;
        return out;
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(out.image,
                   CompileCuda(nvrtc, source, name, arch, options, prelude));
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (cache != nullptr) {
    cache->Put(key, SerializeCudaImage(out.image)).IgnoreError();
  }
  return out;
}

}  // namespace lathe
