#include "runtime/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "status_macros.h"

namespace lathe {
namespace {

absl::Status Errno(const std::string& path, absl::string_view what) {
  return absl::PermissionDeniedError(
      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

// Writes all of `bytes` to `fd`, then (with `sync`) fsyncs it.
absl::Status WriteAll(int fd, const std::string& path, absl::string_view bytes,
                      bool sync = true) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(path, "write failed");
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) return Errno(path, "fsync failed");
  return absl::OkStatus();
}

// "a/b" -> {"a", "b"}; "b" -> {".", "b"}; trailing slashes ignored.
std::pair<std::string, std::string> SplitPath(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 ? 0 : -1;
}

// Reads `fd` (opened from `path`) to its end and closes it; an error once
// it holds more than `max_bytes`.
absl::StatusOr<std::string> ReadToEnd(int fd, const std::string& path,
                                      int64_t max_bytes) {
  auto too_large = [&] {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": larger than the limit of ", max_bytes, " bytes"));
  };
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory, not a file"));
  }
  if (S_ISREG(st.st_mode) && st.st_size > max_bytes) {
    ::close(fd);
    return too_large();
  }
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = Errno(path, "read failed");
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > max_bytes) {
      ::close(fd);
      return too_large();
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Why `st` (of a file or directory `path`) is not private to `owner`, or
// "" when it is.
std::string NotPrivate(const struct stat& st, uid_t owner) {
  if (st.st_uid != owner) {
    return absl::StrCat("is owned by uid ", st.st_uid, ", not by uid ", owner,
                        " (the user running lathe)");
  }
  if ((st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    return absl::StrCat("is writable by its group or others (mode ", mode, ")");
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> ReadFileLimited(const std::string& path,
                                            int64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  return ReadToEnd(fd, path, max_bytes);
}

namespace {

// OK when `path` (a directory, or else a regular file never reached through
// a link) is its owner's alone; else an error naming it and why.
absl::Status CheckPrivate(const std::string& path, uid_t owner,
                          bool directory) {
  struct stat st;
  if ((directory ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) !=
      0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": does not exist"));
    }
    return Errno(path, "cannot stat");
  }
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, directory ? " is not a directory" : " is not a regular file"));
  }
  std::string why = NotPrivate(st, owner);
  if (!why.empty())
    return absl::PermissionDeniedError(absl::StrCat(path, " ", why));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPrivateDirectory(const std::string& dir, uid_t owner) {
  return CheckPrivate(dir, owner, /*directory=*/true);
}

absl::Status CheckPrivateFile(const std::string& path, uid_t owner) {
  return CheckPrivate(path, owner, /*directory=*/false);
}

absl::StatusOr<std::string> ReadPrivateFile(const std::string& path,
                                            int64_t max_bytes, uid_t owner) {
  // Looked at before it is opened, so a device is never opened at all; and
  // opened without following a link or blocking (a FIFO), then looked at
  // again through the descriptor, so a file swapped in between is caught.
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, " is not a regular file"));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string why;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "is not a regular file";
  } else {
    why = NotPrivate(st, owner);
  }
  if (!why.empty()) {
    ::close(fd);
    return absl::PermissionDeniedError(absl::StrCat(path, " ", why));
  }
  return ReadToEnd(fd, path, max_bytes);
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view bytes,
                             bool durable, int mode) {
  return WriteFileAtomic(path, absl::MakeConstSpan(&bytes, 1), durable, mode);
}

absl::Status WriteFileAtomic(const std::string& path,
                             absl::Span<const absl::string_view> parts,
                             bool durable, int mode) {
  auto [dir, base] = SplitPath(path);
  std::string tmp = absl::StrCat(dir, "/.", base, ".tmp-XXXXXX");
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);  // O_CREAT | O_EXCL
  if (fd < 0) return Errno(path, "cannot create a temporary file");
  tmp = name.data();
  absl::Status s;
  for (size_t k = 0; k < parts.size() && s.ok(); ++k) {
    s = WriteAll(fd, path, parts[k], durable && k + 1 == parts.size());
  }
  if (s.ok() && ::fchmod(fd, static_cast<mode_t>(mode)) != 0)
    s = Errno(path, "chmod failed");
  if (::close(fd) != 0 && s.ok()) s = Errno(path, "close failed");
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Errno(path, "cannot rename into place");
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

absl::Status MakeDirectories(const std::string& dir, int mode) {
  std::string path;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    absl::StrAppend(&path, part, "/");
    if (part.empty() || part == ".") continue;
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 &&
        errno != EEXIST) {
      return Errno(dir, "cannot create directory");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": cannot list: ", std::strerror(errno)));
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RemoveTree(const std::string& path) {
  if (::nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      errno != ENOENT) {
    return Errno(path, "cannot remove");
  }
  return absl::OkStatus();
}

absl::StatusOr<StagedDir> StagedDir::Create(const std::string& dest,
                                            const std::string& marker) {
  auto [parent, base] = SplitPath(dest);
  if (base.empty() || base == "." || base == ".." || base == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat(dest, ": not a directory name lathe can create"));
  }
  RETURN_IF_ERROR(MakeDirectories(parent));
  std::string tmp = absl::StrCat(parent, "/.", base, ".tmp-XXXXXX");
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {  // mode 0700: private until commit
    return Errno(dest, "cannot create a staging directory");
  }
  StagedDir staged(absl::StrCat(parent, "/", base), name.data(), marker);
  RETURN_IF_ERROR(staged.Write(marker, ""));
  return staged;
}

StagedDir::StagedDir(StagedDir&& other) noexcept
    : dest_(std::move(other.dest_)),
      staging_(std::exchange(other.staging_, "")),
      marker_(std::move(other.marker_)) {}

StagedDir::~StagedDir() {
  if (!staging_.empty()) RemoveTree(staging_).IgnoreError();
}

absl::Status StagedDir::Write(const std::string& relative,
                              absl::string_view bytes) {
  return Write(relative, absl::MakeConstSpan(&bytes, 1));
}

absl::Status StagedDir::Write(const std::string& relative,
                              absl::Span<const absl::string_view> pieces) {
  std::vector<std::string> parts = absl::StrSplit(relative, '/');
  for (const std::string& p : parts) {
    if (p.empty() || p == "." || p == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", relative, "' is not a plain relative path inside ", dest_));
    }
  }
  if (staging_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dest_, ": already committed"));
  }
  std::string path = staging_;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    absl::StrAppend(&path, "/", parts[i]);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno(path, "cannot create directory");
    }
  }
  absl::StrAppend(&path, "/", parts.back());
  std::string shown = absl::StrCat(dest_, "/", relative);
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(shown, "cannot create");
  absl::Status s;
  for (size_t k = 0; k < pieces.size() && s.ok(); ++k) {
    s = WriteAll(fd, shown, pieces[k], k + 1 == pieces.size());
  }
  if (::close(fd) != 0 && s.ok()) s = Errno(shown, "close failed");
  return s;
}

absl::Status StagedDir::Commit() {
  if (staging_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dest_, ": already committed"));
  }
  if (::chmod(staging_.c_str(), 0755) != 0) {
    return Errno(staging_, "chmod failed");
  }
  SyncDir(staging_);
  struct stat st;
  if (::lstat(dest_.c_str(), &st) != 0) {
    if (errno != ENOENT) return Errno(dest_, "cannot inspect");
    if (::rename(staging_.c_str(), dest_.c_str()) != 0) {
      return Errno(dest_, "cannot move the staged directory into place");
    }
  } else {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          dest_, ": exists and is not a directory (nothing was written)"));
    }
    struct stat mst;
    std::string mark = absl::StrCat(dest_, "/", marker_);
    bool ours = ::lstat(mark.c_str(), &mst) == 0 && S_ISREG(mst.st_mode);
    if (!ours && ::rmdir(dest_.c_str()) != 0) {  // only an empty one goes
      return absl::FailedPreconditionError(absl::StrCat(
          dest_, ": exists, is not empty and is not an earlier output (no ",
          marker_, "); nothing was written"));
    }
    if (!ours) {
      if (::rename(staging_.c_str(), dest_.c_str()) != 0) {
        return Errno(dest_, "cannot move the staged directory into place");
      }
    } else if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dest_.c_str(),
                           RENAME_EXCHANGE) != 0) {
      return Errno(dest_, "cannot exchange with the staged directory");
    } else {
      // staging_ now holds the earlier output.
      absl::Status s = RemoveTree(staging_);
      staging_.clear();
      SyncDir(SplitPath(dest_).first);
      return s;
    }
  }
  staging_.clear();
  SyncDir(SplitPath(dest_).first);
  return absl::OkStatus();
}

}  // namespace lathe
