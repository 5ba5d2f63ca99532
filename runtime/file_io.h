// -----------------------------------------------------------------------------
// File: file_io.h
// -----------------------------------------------------------------------------
//
// Files read and written without harm: a read is bounded (a symlink to
// /dev/zero or a huge file is one clear error, not an exhausted heap) and
// reads its source once, so pipes work (`--input x=<(cat x.npy)`); a single
// file is written through a unique temporary file created exclusively,
// fsync'd and renamed into place; a whole directory of files is staged
// beside its destination and moved there in one step, so a reader sees
// every file of a run or none. A file whose contents will run (a compile
// cache entry) is read only when it and its directory are its owner's
// alone (CheckPrivateDirectory, ReadPrivateFile).
//
// Example:
//
//   ASSIGN_OR_RETURN(std::string text, ReadFileLimited("g.txt", 64 << 20));
//   ASSIGN_OR_RETURN(StagedDir out, StagedDir::Create("out", ".lathec"));
//   RETURN_IF_ERROR(out.Write("out0.npy", bytes));
//   RETURN_IF_ERROR(out.Commit());   // "out" now holds exactly these files
//
// A StagedDir that is destroyed without Commit() removes what it staged.

#ifndef LATHE_RUNTIME_FILE_IO_H_
#define LATHE_RUNTIME_FILE_IO_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace lathe {

// ReadFileLimited()
//
// The contents of `path` (a file, pipe or device), read once; an error
// naming the path when it cannot be opened or holds more than `max_bytes`.
absl::StatusOr<std::string> ReadFileLimited(const std::string& path,
                                            int64_t max_bytes);

// WriteFileAtomic()
//
// Replaces `path` with `bytes`: a fresh temporary file in the same
// directory (created with O_EXCL, so a planted file or symlink is never
// followed), fsync'd, then renamed over `path`. Without `durable` the
// fsync is skipped (a file that can be made again, where milliseconds
// count): still whole or absent for every reader, but a system crash may
// lose it.
// The file gets permissions `mode`.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view bytes,
                             bool durable = true, int mode = 0644);
// As above, the file being `parts` one after the other (a header and a
// tensor's own bytes, written without joining them first).
absl::Status WriteFileAtomic(const std::string& path,
                             absl::Span<const absl::string_view> parts,
                             bool durable = true, int mode = 0644);

// MakeDirectories()
//
// Creates directory `dir` and its missing parents (mkdir -p), each with
// permissions `mode` (less the umask).
absl::Status MakeDirectories(const std::string& dir, int mode = 0755);

// CheckPrivateDirectory()
//
// OK when `dir` is a directory owned by user `owner` that neither its
// group nor others can write (what ssh asks of ~/.ssh); NotFound when it
// does not exist; otherwise a PermissionDenied error naming it and why.
absl::Status CheckPrivateDirectory(const std::string& dir, uid_t owner);

// CheckPrivateFile()
//
// OK when `path` is a regular file (not a symlink) owned by user `owner`
// and writable by no one else; otherwise an error naming the path and why
// (NotFound when absent). For a file another program reads in place.
absl::Status CheckPrivateFile(const std::string& path, uid_t owner);

// ReadPrivateFile()
//
// The contents of `path` when it is a regular file (not a symlink, FIFO,
// device or directory; none is ever opened in a way that can block)
// owned by user `owner`, writable by no one else, and at most `max_bytes`
// long; otherwise an error naming the path and why (NotFound when absent).
absl::StatusOr<std::string> ReadPrivateFile(const std::string& path,
                                            int64_t max_bytes, uid_t owner);

// ListDirectory()
//
// The names of the entries of directory `dir`, sorted, without "." and
// ".."; an error naming `dir` when it cannot be read.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir);

// RemoveTree()
//
// Removes `path` and, for a directory, everything under it, never following
// symbolic links.
absl::Status RemoveTree(const std::string& path);

// A directory of files that appears at its destination all at once.
class StagedDir {
 public:
  // Create()
  //
  // Stages files for directory `dest` in a new private directory beside it.
  // `marker` names a file written into the staged directory; Commit() may
  // replace an existing `dest` only when it is empty or has that marker (a
  // previous run's output), never a directory of other files.
  static absl::StatusOr<StagedDir> Create(const std::string& dest,
                                          const std::string& marker);

  StagedDir(StagedDir&& other) noexcept;
  StagedDir& operator=(StagedDir&& other) = delete;
  StagedDir(const StagedDir&) = delete;
  ~StagedDir();

  // Write()
  //
  // Writes `relative` (e.g. "0/out0.npy"; no "..", no leading "/") into the
  // staged directory, creating its parent directories.
  absl::Status Write(const std::string& relative, absl::string_view bytes);
  // As above, the file being `parts` one after the other.
  absl::Status Write(const std::string& relative,
                     absl::Span<const absl::string_view> parts);

  // Commit()
  //
  // Moves the staged directory to `dest` in one rename (an atomic exchange
  // when `dest` exists, whose old contents are then removed).
  absl::Status Commit();

  const std::string& dest() const { return dest_; }

 private:
  StagedDir(std::string dest, std::string staging, std::string marker)
      : dest_(std::move(dest)),
        staging_(std::move(staging)),
        marker_(std::move(marker)) {}

  std::string dest_;
  std::string staging_;  // empty once committed or moved from
  std::string marker_;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_FILE_IO_H_
