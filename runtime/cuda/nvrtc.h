// -----------------------------------------------------------------------------
// File: nvrtc.h
// -----------------------------------------------------------------------------
//
// NVRTC, CUDA's runtime compiler, loaded with dlopen as the driver is
// (driver_api.h): one table of the functions lathe uses, and CompileCuda,
// which builds CUDA C++ into a cubin for one architecture and keeps the
// PTX (a newer device loads the PTX when no cubin fits it). NVRTC needs no
// GPU, so kernels are compiled and checked on every machine with the
// toolkit. Every failure is a Status naming the call, or, for source that
// does not compile, the program and NVRTC's log. A prelude every source
// begins with (the kernel ABI, the scalar helpers, libcu++'s headers) is
// precompiled by NVRTC 12.8 or later (its automatic precompiled header)
// from a process's second compile of it, and each later source compiles
// only after it.
//
// Example:
//
//   ASSIGN_OR_RETURN(const Nvrtc* nvrtc, LoadNvrtc());
//   ASSIGN_OR_RETURN(CudaImage image,
//                    CompileCuda(*nvrtc, source, "kernels.cu", 90));
//   ... cu->module_load_data(&module, image.cubin.data()) ...

#ifndef LATHE_RUNTIME_CUDA_NVRTC_H_
#define LATHE_RUNTIME_CUDA_NVRTC_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cache_backend.h"

namespace lathe {

using NvrtcResult = int;  // nvrtcResult: 0 is NVRTC_SUCCESS
struct NvrtcProgramSt;
using NvrtcProgram = NvrtcProgramSt*;

// X(member, symbol, return type, parameters): the functions lathe uses.
#define LATHE_NVRTC_FUNCTIONS(X)                                            \
  X(version, "nvrtcVersion", NvrtcResult, (int* major, int* minor))         \
  X(get_error_string, "nvrtcGetErrorString", const char*,                   \
    (NvrtcResult result))                                                   \
  X(create_program, "nvrtcCreateProgram", NvrtcResult,                      \
    (NvrtcProgram * program, const char* source, const char* name,          \
     int num_headers, const char* const* headers,                           \
     const char* const* include_names))                                     \
  X(destroy_program, "nvrtcDestroyProgram", NvrtcResult,                    \
    (NvrtcProgram * program))                                               \
  X(compile_program, "nvrtcCompileProgram", NvrtcResult,                    \
    (NvrtcProgram program, int num_options, const char* const* options))    \
  X(get_program_log_size, "nvrtcGetProgramLogSize", NvrtcResult,            \
    (NvrtcProgram program, size_t * size))                                  \
  X(get_program_log, "nvrtcGetProgramLog", NvrtcResult,                     \
    (NvrtcProgram program, char* log))                                      \
  X(get_ptx_size, "nvrtcGetPTXSize", NvrtcResult,                           \
    (NvrtcProgram program, size_t * size))                                  \
  X(get_ptx, "nvrtcGetPTX", NvrtcResult, (NvrtcProgram program, char* ptx)) \
  X(get_cubin_size, "nvrtcGetCUBINSize", NvrtcResult,                       \
    (NvrtcProgram program, size_t * size))                                  \
  X(get_cubin, "nvrtcGetCUBIN", NvrtcResult,                                \
    (NvrtcProgram program, char* cubin))

// The table; `source` is the library it came from, `major`/`minor` its
// version (part of a compile cache key).
struct Nvrtc {
#define LATHE_NVRTC_MEMBER(member, symbol, ret, params) \
  ret(*member) params = nullptr;
  LATHE_NVRTC_FUNCTIONS(LATHE_NVRTC_MEMBER)
#undef LATHE_NVRTC_MEMBER
  std::string source;
  int major = 0;
  int minor = 0;
};

// LoadNvrtc()
//
// NVRTC from `library`, or, when empty, the first of libnvrtc.so.13,
// libnvrtc.so.12 and libnvrtc.so that dlopen finds, then those in
// $CUDA_PATH/lib64 (default /usr/local/cuda); loaded once per name, kept
// for the process. An error naming every place tried, or the function a
// library lacks.
absl::StatusOr<const Nvrtc*> LoadNvrtc(const std::string& library = "");

// What CompileCuda made.
struct CudaImage {
  int arch = 0;       // sm_<arch>, e.g. 90
  std::string cubin;  // an ELF the driver loads on that architecture
  std::string ptx;    // the same kernels as PTX, for a newer device
  std::string log;    // NVRTC's warnings, if any
  // Whether NVRTC compiled it after the prelude's precompiled form.
  bool precompiled_prelude = false;
};

// The text every source of a kind begins with (whole lines), and a
// directory only this user can write (a compile cache's,
// PrivateCacheDirectory) for NVRTC's precompiled form of it.
struct NvrtcPrelude {
  absl::string_view text;
  std::string dir;
};

// NvrtcAtLeast()
//
// Whether `nvrtc` is version major.minor or later.
bool NvrtcAtLeast(const Nvrtc& nvrtc, int major, int minor);

// NvrtcPrecompiles()
//
// Whether `nvrtc` precompiles a prelude (NVRTC 12.8 or later).
bool NvrtcPrecompiles(const Nvrtc& nvrtc);

// CompileCuda()
//
// `source` (named `name` in messages) compiled with C++17 for sm_<arch>
// (e.g. 80, 90), the toolkit's headers and libcu++'s on its include path
// ($CUDA_PATH/include and include/cccl), and `options` besides. Source that
// does not compile is an InvalidArgument error naming `name` and carrying
// NVRTC's log; an architecture NVRTC does not know is one too. When
// `source` begins with `prelude.text`, `prelude.dir` is set, NVRTC
// precompiles and this process compiled such a source for `arch` and
// `options` before: the prelude is given as a header (the rest's lines
// keep their numbers), precompiled once into a directory of this
// process's own inside `prelude.dir` (removed at exit) and reused
// (precompiled_prelude says so); any failure that way compiles the whole
// text again, whose errors are the ones returned, and where the whole text
// compiles, the process does not precompile that prelude again. The image
// is the same either way (unless `options` ask for line information).
absl::StatusOr<CudaImage> CompileCuda(
    const Nvrtc& nvrtc, absl::string_view source, absl::string_view name,
    int arch, const std::vector<std::string>& options = {},
    const NvrtcPrelude& prelude = {});

// What CompileCudaCached made, and how.
struct CachedCudaImage {
  CudaImage image;
  std::string cache_hit;  // the tier it came from; "" if NVRTC ran
  double seconds = 0;     // how long NVRTC ran (0: a hit)
};

// CompileCudaCached()
//
// CompileCuda through `cache` (may be null): keyed by the source, NVRTC's
// version, the architecture and the options (CacheKey), so a warm build
// runs no NVRTC; an entry that does not parse as an image of this
// architecture is a miss that the new build replaces. A build precompiles
// `prelude` as CompileCuda does.
absl::StatusOr<CachedCudaImage> CompileCudaCached(
    const Nvrtc& nvrtc, absl::string_view source, absl::string_view name,
    int arch, const std::vector<std::string>& options, CacheBackend* cache,
    const NvrtcPrelude& prelude = {});

// The cache entry of `image`, and the image from an entry (an error for
// bytes that are not one).
std::string SerializeCudaImage(const CudaImage& image);
absl::StatusOr<CudaImage> ParseCudaImage(absl::string_view bytes);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_NVRTC_H_
