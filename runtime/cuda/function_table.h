// -----------------------------------------------------------------------------
// File: function_table.h
// -----------------------------------------------------------------------------
//
// How runtime/cuda fills its tables of library functions (the driver's,
// NVRTC's): each of an X-macro list's symbols resolved from a library
// opened with dlopen, a symbol the library lacks an error naming it; and
// each table loaded once per library name and kept for the process, with
// its outcome, so a failed load is not retried on every call.
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

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/shared_library.h"

namespace lathe {

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

}  // namespace lathe

#endif  // LATHE_RUNTIME_CUDA_FUNCTION_TABLE_H_
