// -----------------------------------------------------------------------------
// File: function_table.h
// -----------------------------------------------------------------------------
//
// How runtime/cuda fills its tables of library functions (the driver's,
// NVRTC's, cuBLASLt's, cuDNN's): each of an X-macro list's symbols
// resolved from a library opened with dlopen, a symbol the library lacks an
// error naming it; a toolkit library found under its names, then in the
// toolkit's directory; and each table loaded once per library name and
// kept for the process, with its outcome, so a failed load is not retried
// on every call.
//
// Example (driver_api.cc):
//
//   // RESOLVE(member, symbol, ret, params), one line:
//   //   RETURN_IF_ERROR(ResolveFunction(*lib, symbol, &t->member, lacks, ""));
//   LATHE_CUDA_DRIVER_FUNCTIONS(RESOLVE)
//   ...
//   return LoadOnce<CudaDriver>(library, [&] { return Load(library); });

#ifndef LATHE_RUNTIME_CUDA_FUNCTION_TABLE_H_
#define LATHE_RUNTIME_CUDA_FUNCTION_TABLE_H_

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "runtime/shared_library.h"

namespace lathe {

// OpenLibrary()
//
// `library` opened with dlopen and kept for the process, or NotFound
// naming it and why (the caller may try another name).
inline absl::StatusOr<SharedLibrary> OpenLibrary(const std::string& library) {
  absl::StatusOr<SharedLibrary> lib = SharedLibrary::Open(library,
                                                          /*keep=*/true);
  if (!lib.ok()) {
    return absl::NotFoundError(
        absl::StrCat(library, " not found (", lib.status().message(), ")"));
  }
  return lib;
}

// ResolveFunction()
//
// `*slot` = `symbol` of `lib`; when the library lacks it, a
// FailedPrecondition error: `prefix`, "has no SYMBOL", `suffix`.
template <typename Fn>
absl::Status ResolveFunction(const SharedLibrary& lib, const char* symbol,
                             Fn* slot, absl::string_view prefix,
                             absl::string_view suffix) {
  absl::StatusOr<void*> f = lib.Symbol(symbol);
  if (!f.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "has no ", symbol, suffix));
  }
  *slot = reinterpret_cast<Fn>(*f);
  return absl::OkStatus();
}

// LoadOnce()
//
// The table `load` makes for `name`, made on the first call for that name
// (one at a time) and kept, with its error, for the process's life.
template <typename Table>
absl::StatusOr<const Table*> LoadOnce(
    const std::string& name,
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<Table>>()> load) {
  static std::mutex mu;  // ThreadSanitizer sees it through pthreads
  static auto* loaded =
      new absl::flat_hash_map<std::string,
                              absl::StatusOr<std::unique_ptr<Table>>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(name);
  if (it == loaded->end()) it = loaded->emplace(name, load()).first;
  if (!it->second.ok()) return it->second.status();
  return it->second->get();
}

// CudaToolkitDir()
//
// The CUDA toolkit's directory: $CUDA_PATH, else /usr/local/cuda.
inline std::string CudaToolkitDir() {
  const char* env = std::getenv("CUDA_PATH");
  return env != nullptr && *env != '\0' ? env : "/usr/local/cuda";
}

// LoadToolkitLibrary()
//
// A toolkit library's table (NVRTC's, cuBLASLt's): from `library` when
// given, else from the first of `files` that dlopen finds, then the first
// of them in CudaToolkitDir()/lib64. `load_from` makes the table from one
// name, NotFound when that name does not load (then the next is tried).
// Errors are FailedPrecondition, one line: "no WHAT: ...", naming every
// place tried.
template <typename Table>
absl::StatusOr<std::unique_ptr<Table>> LoadToolkitLibrary(
    const std::string& library, std::initializer_list<const char*> files,
    absl::string_view what,
    absl::FunctionRef<
        absl::StatusOr<std::unique_ptr<Table>>(const std::string&)>
        load_from) {
  std::vector<std::string> names;
  if (!library.empty()) {
    names.push_back(library);
  } else {
    for (bool in_dir : {false, true}) {
      for (const char* file : files) {
        names.push_back(in_dir ? absl::StrCat(CudaToolkitDir(), "/lib64/", file)
                               : std::string(file));
      }
    }
  }
  std::vector<std::string> tried;
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<Table>> table = load_from(name);
    if (table.ok() || !absl::IsNotFound(table.status())) return table;
    if (!library.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no ", what, ": ", table.status().message()));
    }
    tried.push_back(name);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no ", what, ": none of ", absl::StrJoin(tried, ", "),
                   " loads (is the CUDA toolkit at $CUDA_PATH?)"));
}

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_FUNCTION_TABLE_H_
