// -----------------------------------------------------------------------------
// File: shared_library.h
// -----------------------------------------------------------------------------
//
// A loaded shared library (dlopen) and its symbols; closed when the last
// handle goes.
//
// Example:
//
//   ASSIGN_OR_RETURN(SharedLibrary lib, SharedLibrary::Open("/tmp/g.so"));
//   ASSIGN_OR_RETURN(void* f, lib.Symbol("lathe_entry"));

#ifndef LATHE_RUNTIME_SHARED_LIBRARY_H_
#define LATHE_RUNTIME_SHARED_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lathe {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  // Loads `path` (RTLD_NOW | RTLD_LOCAL; with `keep`, never unloaded:
  // RTLD_NODELETE); errors carry dlerror's text.
  static absl::StatusOr<SharedLibrary> Open(const std::string& path,
                                            bool keep = false);
  // The address of `name`, or an error naming it and the library.
  absl::StatusOr<void*> Symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::shared_ptr<void> handle_;
  std::string path_;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_SHARED_LIBRARY_H_
