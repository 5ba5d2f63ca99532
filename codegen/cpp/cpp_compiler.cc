#include "codegen/cpp/cpp_compiler.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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
  flags.push_back("-fsanitize=undefined");
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

}  // namespace

absl::StatusOr<BuiltLibrary> CompileSharedLibrary(absl::string_view source,
                                                  const std::string& dir) {
  BuiltLibrary lib;
  lib.source_path = absl::StrCat(dir, "/kernel.cc");
  lib.path = absl::StrCat(dir, "/kernel.so");
  {
    std::ofstream f(lib.source_path, std::ios::binary);
    f.write(source.data(), static_cast<std::streamsize>(source.size()));
    if (!f) {
      return absl::InternalError(
          absl::StrCat("cannot write ", lib.source_path));
    }
  }
  const char* cxx = std::getenv("LATHE_CXX");
  std::string compiler = cxx != nullptr && *cxx != '\0' ? cxx : "g++";
  std::vector<std::string> parts = {compiler};
  for (const std::string& f : CompilerFlags()) parts.push_back(f);
  parts.push_back("-o");
  parts.push_back(Quote(lib.path));
  parts.push_back(Quote(lib.source_path));
  lib.command = absl::StrJoin(parts, " ");
  auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(absl::StrCat(lib.command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return absl::InternalError(absl::StrCat("cannot run ", compiler));
  }
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  int rc = pclose(pipe);
  lib.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (rc != 0) {
    std::vector<std::string> lines = absl::StrSplit(output, '\n');
    if (lines.size() > 8) lines.resize(8);
    return absl::InternalError(
        absl::StrCat("the C++ compiler failed on ", lib.source_path, " (",
                     lib.command, "): ", absl::StrJoin(lines, " | ")));
  }
  return lib;
}

}  // namespace lathe::codegen
