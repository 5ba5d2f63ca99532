// -----------------------------------------------------------------------------
// File: cpp_compiler.h
// -----------------------------------------------------------------------------
//
// Builds one generated translation unit into a shared library with the
// system C++ compiler (g++ by default; $LATHE_CXX overrides), with flags
// recorded so a build can be reproduced: -O3 -march=native for AVX2 /
// AVX-512 code, -fopenmp, -fno-math-errno (math calls vectorize), and the
// sanitizer flags lathe itself was built with. Given a compile cache
// (runtime/compile_cache.h), a library built before from the same source
// by the same compiler (its --version, and the CPU -march=native resolves
// to) with the same flags comes from the cache instead. The text every
// source of a backend begins with (its prelude: the kernel ABI, the scalar
// helpers, the system headers) is precompiled once into the cache's
// private directory, and a build compiles only the rest after it.
//
// Example:
//
//   ASSIGN_OR_RETURN(BuiltLibrary lib, CompileSharedLibrary(source, dir));
//   lib.path;      // dir/kernel.so
//   lib.command;   // the command line that built it
//
//   ASSIGN_OR_RETURN(CacheBackend* cache, DefaultCompileCache());
//   ASSIGN_OR_RETURN(lib, CompileSharedLibrary(source, dir, cache));
//   lib.cache_hit;  // "memory", "disk", "redis", or "" when compiled

#ifndef LATHE_CODEGEN_CPP_CPP_COMPILER_H_
#define LATHE_CODEGEN_CPP_CPP_COMPILER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/backend.h"
#include "runtime/cache_backend.h"

namespace lathe::codegen {

// CompilerFlags()
//
// The flags generated code is compiled with (also part of a cache key).
std::vector<std::string> CompilerFlags();

// LinksWithGold()
//
// Whether `compiler -fuse-ld=gold` runs binutils' gold, probed once per
// process and compiler (about 20 ms; gold is missing from some systems and
// from binutils 2.44 on). Where it does, CompileSharedLibrary links with
// it: a generated library in a third of the time of the default ld.bfd,
// about 45 ms of a 200 ms build of a small graph. The linker is not part
// of a cache key (the same objects, a library that does the same), and a
// cache hit probes nothing.
bool LinksWithGold(const std::string& compiler);

// CompilerName()
//
// The C++ compiler lathe runs: $LATHE_CXX, else g++.
std::string CompilerName();

// CompilerIdentity()
//
// What identifies `compiler` in a cache key: its name, the first line of
// `compiler --version`, and this CPU's model and feature flags (for
// -march=native); run once per process and compiler. An error when the
// compiler cannot be run.
absl::StatusOr<std::string> CompilerIdentity(const std::string& compiler);

// CompileSharedLibrary()
//
// Writes `source` to `dir`/kernel.cc and compiles it into `dir`/kernel.so;
// a compiler error returns its first lines. With a `cache`, a hit is
// written to `dir`/kernel.so without compiling, and a compiled library is
// stored (a failure to store it is only noted in cache_error). `image`
// holds the library's bytes either way (the hit the cache verified, or the
// compiler's output, read once): load those, not the file, so what runs is
// what was verified or stored. `flags` (CompilerFlags() when empty) are
// part of the key. A `prelude` that `source` begins with (the text every
// source of its kind shares, whole lines) is precompiled once in `cache`'s
// private directory (PrecompilePrelude), and the compiler reads the rest
// of the source after it (-include): the same text, in half the time.
// `command` stays the one-step command line, which builds the same
// library; any failure with the prelude runs that command, whose errors
// are the ones returned. `cached_only`: a probe of the cache, which
// compiles nothing (a miss, or no cache, is NotFound).
absl::StatusOr<BuiltLibrary> CompileSharedLibrary(
    absl::string_view source, const std::string& dir,
    CacheBackend* cache = nullptr, std::vector<std::string> flags = {},
    absl::string_view prelude = "", bool cached_only = false);

// PrecompilePrelude()
//
// `prelude` as a header in `dir` (a directory only this user can write:
// a compile cache's, PrivateCacheDirectory) with its precompiled form for
// the compiler and `flags` beside it (the header's path + ".gch", where
// the compiler looks for it); returns the header's absolute path. Both are
// named by a key of the prelude, the compiler's identity and the flags,
// made once and read in place by every later build; each call checks that
// the directory and both files are still this user's alone (a link, FIFO
// or file others could write is made again). nullopt when the compiler
// cannot precompile the prelude; an error when `dir` is not private.
absl::StatusOr<std::optional<std::string>> PrecompilePrelude(
    absl::string_view prelude, const std::vector<std::string>& flags,
    const std::string& dir);

// TemporaryBuildDir()
//
// A fresh directory for one build, under $TEST_TMPDIR, $TMPDIR or /tmp
// ("lathe-cpu-XXXXXX"); the caller removes it.
absl::StatusOr<std::string> TemporaryBuildDir();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPP_COMPILER_H_
