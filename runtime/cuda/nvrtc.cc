#include "runtime/cuda/nvrtc.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda/function_table.h"
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

}  // namespace

absl::StatusOr<const Nvrtc*> LoadNvrtc(const std::string& library) {
  return LoadOnce<Nvrtc>(library, [&] {
    return LoadToolkitLibrary<Nvrtc>(
        library, {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "NVRTC",
        LoadFrom);
  });
}

absl::StatusOr<CudaImage> CompileCuda(const Nvrtc& nvrtc,
                                      absl::string_view source,
                                      absl::string_view name, int arch,
                                      const std::vector<std::string>& options) {
  if (arch < 10 || arch > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": no architecture sm_", arch));
  }
  const std::string text(source);
  const std::string program_name(name);
  NvrtcProgram program = nullptr;
  if (absl::Status s =
          Check(nvrtc,
                nvrtc.create_program(&program, text.c_str(),
                                     program_name.c_str(), 0, nullptr, nullptr),
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
    int arch, const std::vector<std::string>& options, CacheBackend* cache) {
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
  ASSIGN_OR_RETURN(out.image, CompileCuda(nvrtc, source, name, arch, options));
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (cache != nullptr) {
    cache->Put(key, SerializeCudaImage(out.image)).IgnoreError();
  }
  return out;
}

}  // namespace lathe
