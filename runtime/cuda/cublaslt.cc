#include "runtime/cuda/cublaslt.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/cuda/function_table.h"
#include "runtime/shared_library.h"
#include "status_macros.h"

namespace lathe {
namespace {

// cuBLASLt from exactly `library` (NotFound when it does not load).
absl::StatusOr<std::unique_ptr<CublasLt>> LoadFrom(const std::string& library) {
  ASSIGN_OR_RETURN(SharedLibrary lib, OpenLibrary(library));
  auto lt = std::make_unique<CublasLt>();
  lt->source = library;
  const std::string lacks = absl::StrCat("cuBLASLt ", library, " ");
#define LATHE_CUBLASLT_RESOLVE(member, symbol, ret, params)        \
  RETURN_IF_ERROR(ResolveFunction(lib, symbol, &lt->member, lacks, \
                                  " (a toolkit older than lathe needs?)"));
  LATHE_CUBLASLT_FUNCTIONS(LATHE_CUBLASLT_RESOLVE)
#undef LATHE_CUBLASLT_RESOLVE
  lt->version = lt->get_version();
  return lt;
}

}  // namespace

absl::StatusOr<const CublasLt*> LoadCublasLt(const std::string& library) {
  return LoadOnce<CublasLt>(library, [&] {
    return LoadToolkitLibrary<CublasLt>(
        library, {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
        "cuBLASLt", LoadFrom);
  });
}

absl::Status CublasCall(const CublasLt& lt, CublasStatus status,
                        absl::string_view call) {
  if (status == kCublasSuccess) return absl::OkStatus();
  const char* name = lt.get_status_name(status);
  const char* text = lt.get_status_string(status);
  return absl::InternalError(absl::StrCat(
      call, ": ", name != nullptr ? name : absl::StrCat("status ", status),
      text != nullptr ? absl::StrCat(" (", text, ")") : ""));
}

}  // namespace lathe
