#include "runtime/shared_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
#error "CheckElfImage: name this machine's ELF e_machine"
#endif

// Writes all of `bytes` to `fd`.
bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Closes a library loaded from memfd `fd` as `loaded`. The descriptor is
// closed too unless the library stays loaded after dlclose (a library with
// unique symbols cannot be unloaded): the loader knows it by its
// /proc/self/fd/N name, which a later memfd with the same number must not
// share.
void CloseImage(void* handle, int fd, const std::string& loaded) {
  dlclose(handle);
  void* still = dlopen(loaded.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (still != nullptr) {
    dlclose(still);
    return;  // the descriptor lives on with the library
  }
  ::close(fd);
}

}  // namespace

absl::Status CheckElfImage(absl::string_view image, absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is not a loadable shared library: ", why, " (",
                     image.size(), " bytes)"));
  };
  const uint64_t size = image.size();
  Elf64_Ehdr eh;
  if (size < sizeof(eh)) return bad("shorter than an ELF header");
  std::memcpy(&eh, image.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return bad("no ELF magic number");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return bad("not a 64-bit little-endian ELF file");
  }
  if (eh.e_type != ET_DYN) return bad("not a shared object (ET_DYN)");
  if (eh.e_machine != kMachine) return bad("built for another machine");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) {
    return bad("malformed program headers");
  }
  const uint64_t ph_end =
      eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > size || ph_end > size || ph_end < eh.e_phoff) {
    return bad("its program headers lie past its end (truncated?)");
  }
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, image.data() + eh.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(ph));
    const uint64_t end = ph.p_offset + ph.p_filesz;
    if (ph.p_offset > size || end > size || end < ph.p_offset) {
      return bad(absl::StrCat("segment ", i, " (bytes ", ph.p_offset, "..", end,
                              ") lies past its end (truncated?)"));
    }
  }
  const uint64_t sh_end =
      eh.e_shoff + uint64_t{eh.e_shnum} * uint64_t{eh.e_shentsize};
  if (eh.e_shoff != 0 && (eh.e_shoff > size || sh_end > size)) {
    return bad("its section headers lie past its end (truncated?)");
  }
  return absl::OkStatus();
}

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

absl::StatusOr<SharedLibrary> SharedLibrary::OpenImage(
    absl::string_view image, const std::string& name) {
  if (absl::Status s = CheckElfImage(image, name); !s.ok()) return s;
  auto fail = [&](absl::string_view what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load ", name, ": ", what, ": ", std::strerror(errno)));
  };
  // Named after its source, as /proc/PID/maps and profilers show it.
  const std::string memfd_name =
      name.size() > 200 ? name.substr(name.size() - 200) : name;
  int fd = ::memfd_create(memfd_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return fail("memfd_create failed");
  // Sealed: neither this process nor another (through /proc/PID/fd) can
  // change the bytes once checked.
  if (!WriteAll(fd, image) ||
      ::fcntl(fd, F_ADD_SEALS,
              F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    absl::Status s = fail("cannot fill a sealed in-memory file");
    ::close(fd);
    return s;
  }
  const std::string loaded = absl::StrCat("/proc/self/fd/", fd);
  dlerror();
  void* h = dlopen(loaded.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load ", name, ": ", e != nullptr ? e : "?"));
  }
  SharedLibrary lib;
  lib.handle_ = std::shared_ptr<void>(
      h, [fd, loaded](void* p) { CloseImage(p, fd, loaded); });
  lib.path_ = name;
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

absl::StatusOr<absl::string_view> SharedLibrary::DataSymbol(
    const std::string& name) const {
  absl::StatusOr<void*> found = Symbol(name);
  if (!found.ok()) return found.status();
  void* p = *found;
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (dladdr1(p, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) == 0 ||
      sym == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": no size for symbol '", name, "'"));
  }
  return absl::string_view(static_cast<const char*>(p), sym->st_size);
}

}  // namespace lathe
