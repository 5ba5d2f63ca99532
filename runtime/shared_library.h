// -----------------------------------------------------------------------------
// File: shared_library.h
// -----------------------------------------------------------------------------
//
// A loaded shared library (dlopen) and its symbols; closed when the last
// handle goes. A library can be loaded from a file, or from bytes already
// in memory (OpenImage): those bytes are copied into a sealed anonymous
// file (memfd) that nobody can change, checked to be a whole ELF shared
// object, and loaded from there, so the bytes a caller verified (against a
// manifest's SHA-256, a cache entry's HMAC) are exactly the bytes that run:
// no file can be swapped or truncated between the check and the dlopen.
//
// Example:
//
//   ASSIGN_OR_RETURN(SharedLibrary lib, SharedLibrary::Open("/tmp/g.so"));
//   ASSIGN_OR_RETURN(void* f, lib.Symbol("lathe_entry"));
//
//   ASSIGN_OR_RETURN(std::string so, ReadFileLimited(path, cap));
//   RETURN_IF_ERROR(CheckAgainstManifest(so));
//   ASSIGN_OR_RETURN(lib, SharedLibrary::OpenImage(so, path));

#ifndef LATHE_RUNTIME_SHARED_LIBRARY_H_
#define LATHE_RUNTIME_SHARED_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  // Loads `path` (RTLD_NOW | RTLD_LOCAL; with `keep`, never unloaded:
  // RTLD_NODELETE); errors carry dlerror's text.
  static absl::StatusOr<SharedLibrary> Open(const std::string& path,
                                            bool keep = false);
  // Loads the library whose file contents are `image`, from a sealed
  // memfd kept open for the library's life; `name` (where the bytes came
  // from) is its path() and names it in errors. An image that is not a
  // whole 64-bit ELF shared object for this machine is refused before
  // dlopen sees it (CheckElfImage).
  static absl::StatusOr<SharedLibrary> OpenImage(absl::string_view image,
                                                 const std::string& name);
  // The address of `name`, or an error naming it and the library.
  absl::StatusOr<void*> Symbol(const std::string& name) const;
  // The bytes of data symbol `name` (its address and its ELF symbol's
  // size), or an error naming it and the library.
  absl::StatusOr<absl::string_view> DataSymbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::shared_ptr<void> handle_;
  std::string path_;
};

// CheckElfImage()
//
// OK when `image` is a 64-bit little-endian ELF shared object for this
// machine whose program headers, every segment they describe and its
// section headers lie within its bytes (a truncated library would make the
// loader touch memory past the end of the file: SIGBUS); otherwise an
// InvalidArgument error naming `name` and what is wrong.
absl::Status CheckElfImage(absl::string_view image, absl::string_view name);

}  // namespace lathe

#endif  // LATHE_RUNTIME_SHARED_LIBRARY_H_
