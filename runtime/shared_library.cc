#include "runtime/shared_library.h"

#include <dlfcn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe {

absl::StatusOr<SharedLibrary> SharedLibrary::Open(const std::string& path,
                                                  bool keep) {
  dlerror();
  void* h =
      dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (keep ? RTLD_NODELETE : 0));
  if (h == nullptr) {
    const char* e = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load ", path, ": ", e != nullptr ? e : "?"));
  }
  SharedLibrary lib;
  lib.handle_ = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  lib.path_ = path;
  return lib;
}

absl::StatusOr<void*> SharedLibrary::Symbol(const std::string& name) const {
  if (handle_ == nullptr) {
    return absl::FailedPreconditionError("no library is loaded");
  }
  dlerror();
  void* p = dlsym(handle_.get(), name.c_str());
  if (p == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path_, " has no symbol '", name, "'"));
  }
  return p;
}

}  // namespace lathe
