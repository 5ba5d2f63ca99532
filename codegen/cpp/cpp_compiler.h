// -----------------------------------------------------------------------------
// File: cpp_compiler.h
// -----------------------------------------------------------------------------
//
// Builds one generated translation unit into a shared library with the
// system C++ compiler (g++ by default; $LATHE_CXX overrides), with flags
// recorded so a build can be reproduced: -O3 -march=native for AVX2 /
// AVX-512 code, -fopenmp, -fno-math-errno (math calls vectorize), and the
// sanitizer flags lathe itself was built with.
//
// Example:
//
//   ASSIGN_OR_RETURN(BuiltLibrary lib, CompileSharedLibrary(source, dir));
//   lib.path;      // dir/kernel.so
//   lib.command;   // the command line that built it

#ifndef LATHE_CODEGEN_CPP_CPP_COMPILER_H_
#define LATHE_CODEGEN_CPP_CPP_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::codegen {

struct BuiltLibrary {
  std::string source_path;  // dir/kernel.cc
  std::string path;         // dir/kernel.so
  std::string command;      // the compiler command line
  double seconds = 0;       // how long the compiler ran
};

// CompilerFlags()
//
// The flags generated code is compiled with (also part of a cache key).
std::vector<std::string> CompilerFlags();

// CompileSharedLibrary()
//
// Writes `source` to `dir`/kernel.cc and compiles it into `dir`/kernel.so;
// a compiler error returns its first lines.
absl::StatusOr<BuiltLibrary> CompileSharedLibrary(absl::string_view source,
                                                  const std::string& dir);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CPP_CPP_COMPILER_H_
