// -----------------------------------------------------------------------------
// File: backend.h
// -----------------------------------------------------------------------------
//
// What differs between the targets lathe compiles for, behind one interface
// the driver (driver/compile.h) calls once the loop IR is scheduled: the
// kernels' emitter, the device the function's tensors live on, the host
// function's device parts (HostCode: how it runs a kernel and reads an
// element of a buffer), the build (the system C++ compiler for the cpu;
// NVRTC for cuda's kernels) and the files an artifact holds. What every
// backend shares stays outside it: the loop IR (lowering.h, scheduler.h),
// the rest of the host function (a C++ function cpp/wrapper_emitter.h
// writes: it checks the inputs, binds the symbols, allocates the buffers
// through the runtime's allocator and runs the kernels) and its loaded form
// (cpp/cpu_function.h over runtime/loaded_graph.h).
//
// codegen/cpp implements it for the cpu (cpp/cpu_backend.h), codegen/cuda
// for CUDA devices (cuda/cuda_backend.h).
//
// Example:
//
//   const Backend& b = CpuBackend();
//   ASSIGN_OR_RETURN(std::string kernels, b.EmitKernels(lowered.program));
//   ASSIGN_OR_RETURN(BuiltLibrary lib,
//                    b.Build(kernels, host.text, dir, {.cache = cache}));
//   auto files = b.ArtifactFiles(lib, source);  // kernel.so, .cc

#ifndef LATHE_CODEGEN_BACKEND_H_
#define LATHE_CODEGEN_BACKEND_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/loop_ir.h"
#include "runtime/cache_backend.h"
#include "runtime/device.h"
#include "runtime/device_kernels.h"
#include "runtime/dtype.h"
#include "runtime/shared_library.h"
#include "symbolic/expr.h"

namespace lathe::codegen {

// What a backend's build made: a library to load, and how it was made.
struct BuiltLibrary {
  std::string source_path;  // dir/kernel.cc
  std::string path;         // dir/kernel.so
  std::string image;        // its bytes, to load (SharedLibrary::OpenImage)
  std::string command;      // the compiler command line
  double seconds = 0;       // how long the compiler ran (0: a cache hit)
  std::string cache_hit;    // the cache tier it came from; "" if compiled
  std::string cache_error;  // why storing it in the cache failed, if it did
  // A device backend's kernels, built apart from the host library: the
  // module image this process loads (a cubin, or the emulated device's
  // library), and the files an artifact holds (a cubin per architecture
  // asked for, PTX, the emulated device's library: cuda_kernels.h's names).
  std::string device_image;
  std::vector<std::pair<std::string, std::string>> device_files;
};

// How a backend builds.
struct BuildOptions {
  // The compile cache the builds go through (none: always build).
  CacheBackend* cache = nullptr;
  // cuda: the architectures an artifact holds cubins for (80 for sm_80);
  // empty: the present device's.
  std::vector<int> cuda_archs;
  // Only a library the cache holds: a miss is NotFound, nothing is built
  // (a tiered compile's probe; the cpu backend's).
  bool cached_only = false;
};

// The host function's device parts, as C++ text it splices in. The base
// class is host memory (the cpu's): a kernel is a C function the host
// calls, a buffer is read in place. A device backend overrides both: a
// launch, and a copy of the element to the host.
class HostCode {
 public:
  // An expression of the host function's symbols (S[], F[]) as C++.
  using HostCpp = std::function<std::string(symbolic::Expr)>;

  virtual ~HostCode() = default;
  // What the host function's source needs before it (the cpu's kernels
  // carry the preludes: nothing).
  virtual std::string Prelude(const Program& program) const;
  // The statements that run kernel `k` of `program` on the buffers B, the
  // symbols S and F, and the runtime rt, returning E when a check fails.
  virtual std::string RunKernel(const Program& program, int k,
                                const HostCpp& cpp) const;
  // An expression for element `index` (C++ text) of buffer `b` (B[b]) of
  // `dtype`, on the host (a symbol read from data binds to it).
  virtual std::string LoadElement(int b, DType dtype,
                                  absl::string_view index) const;
};

// Host memory's HostCode (one per process).
const HostCode& HostMemoryCode();

class Backend {
 public:
  virtual ~Backend() = default;

  // Its name on lathec's command line ("cpu").
  virtual absl::string_view name() const = 0;
  // The device the compiled function's tensors live on.
  virtual Device device() const = 0;
  // The library routines its runtime has beyond every backend's.
  virtual Routines routines() const { return {}; }
  // Rewrites a scheduled program for this backend's kernels before they
  // are emitted (the cuda backend splits long reductions over few rows),
  // appending one line per decision to `log`; the cpu's keeps it as is.
  virtual void Adapt(Program& program, std::vector<std::string>* log) const {}
  // The kernels of a scheduled program, as source the host function calls.
  virtual absl::StatusOr<std::string> EmitKernels(
      const Program& program) const = 0;
  // The kernels as the autotuner builds them (driver/autotune.h): each
  // tunable kernel's threads read from the library's table and its time
  // kept (cpp_emitter.h's CppEmitOptions::tuning_table), and the tunable
  // kernels in `tunable`. Unimplemented where the backend tunes nothing,
  // the default.
  virtual absl::StatusOr<std::string> EmitTuningKernels(
      const Program& program, TunableKernels* tunable) const;
  // The host function's device parts.
  virtual const HostCode& host_code() const = 0;
  // Builds the kernels' source and the host function's into what a
  // compiled graph loads, in `dir`; with a cache, one built before from
  // the same sources comes from it.
  virtual absl::StatusOr<BuiltLibrary> Build(
      absl::string_view kernels, absl::string_view host, const std::string& dir,
      const BuildOptions& options) const = 0;
  // The device half of what Build made, loaded for its host library (the
  // cpu's kernels are in it: null).
  virtual absl::StatusOr<std::shared_ptr<const DeviceKernels>> LoadDevice(
      const BuiltLibrary& built, const SharedLibrary& host) const;
  // The files an artifact of `built` (from `source`) holds besides its
  // manifest, by name; read before loading takes `built.image`.
  virtual std::vector<std::pair<std::string, std::string>> ArtifactFiles(
      const BuiltLibrary& built, absl::string_view source) const = 0;
};

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_BACKEND_H_
