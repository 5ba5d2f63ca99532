#include "runtime/cuda/cudnn.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/cuda/function_table.h"
#include "runtime/shared_library.h"
#include "status_macros.h"

namespace lathe {
namespace {

// cuDNN from exactly `library` (NotFound when it does not load).
absl::StatusOr<std::unique_ptr<Cudnn>> LoadFrom(const std::string& library) {
  ASSIGN_OR_RETURN(SharedLibrary lib, OpenLibrary(library));
  auto dnn = std::make_unique<Cudnn>();
  dnn->source = library;
  const std::string lacks = absl::StrCat("cuDNN ", library, " ");
#define LATHE_CUDNN_RESOLVE(member, symbol, ret, params)            \
  RETURN_IF_ERROR(ResolveFunction(lib, symbol, &dnn->member, lacks, \
                                  " (a cuDNN before 9?)"));
  LATHE_CUDNN_FUNCTIONS(LATHE_CUDNN_RESOLVE)
#undef LATHE_CUDNN_RESOLVE
  dnn->version = dnn->get_version();
  if (dnn->version < 90000) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuDNN ", library, " is version ", dnn->version,
                     " (lathe takes cuDNN 9 or later)"));
  }
  return dnn;
}

}  // namespace

absl::StatusOr<const Cudnn*> LoadCudnn(const std::string& library) {
  return LoadOnce<Cudnn>(library, [&] {
    return LoadToolkitLibrary<Cudnn>(library, {"libcudnn.so.9", "libcudnn.so"},
                                     "cuDNN", LoadFrom);
  });
}

absl::Status CudnnCall(const Cudnn& dnn, CudnnStatus status,
                       absl::string_view call) {
  if (status == kCudnnSuccess) return absl::OkStatus();
  const char* text = dnn.get_error_string(status);
  return absl::InternalError(
      absl::StrCat(call, ": ",
                   text != nullptr ? std::string(text)
                                   : absl::StrCat("cuDNN status ", status)));
}

}  // namespace lathe
