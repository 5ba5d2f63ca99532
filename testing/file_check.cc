#include "testing/file_check.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "status_macros.h"
#include "testing/runfiles.h"

extern char** environ;

namespace lathe::testing {
namespace {

bool IsExecutable(const std::string& path) {
  return access(path.c_str(), X_OK) == 0;
}

// A file under $TEST_TMPDIR (or /tmp) holding `contents`, removed on scope
// exit.
class TempFile {
 public:
  static absl::StatusOr<TempFile> Create(absl::string_view contents) {
    std::string path = TestTmpPath("filecheck.XXXXXX");
    int fd = mkstemp(path.data());
    if (fd < 0) {
      return absl::InternalError(
          absl::StrCat("mkstemp(", path, "): ", std::strerror(errno)));
    }
    size_t written = 0;
    while (written < contents.size()) {
      ssize_t n =
          write(fd, contents.data() + written, contents.size() - written);
      if (n <= 0) {
        close(fd);
        unlink(path.c_str());
        return absl::InternalError(absl::StrCat("write(", path, ") failed"));
      }
      written += static_cast<size_t>(n);
    }
    close(fd);
    return TempFile(std::move(path));
  }
  TempFile(TempFile&& other) : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

absl::StatusOr<std::string> FileCheckPath() {
  if (const char* env = std::getenv("LATHE_FILECHECK")) return std::string(env);
  // The external repository's own runfiles directory, else its legacy place
  // under the workspace's (--legacy_external_runfiles).
  std::string candidates[] = {
      ExternalRunfilePath("llvm_filecheck", "FileCheck"),
      RunfilePath("external/llvm_filecheck/FileCheck"),
  };
  for (const std::string& path : candidates) {
    if (IsExecutable(path)) return path;
  }
  return absl::NotFoundError(
      "FileCheck not found in the test's runfiles (depend on "
      "//testing:file_check) and $LATHE_FILECHECK is not set");
}

absl::Status RunFileCheck(absl::string_view input, absl::string_view checks) {
  ASSIGN_OR_RETURN(std::string filecheck, FileCheckPath());
  ASSIGN_OR_RETURN(TempFile check_file, TempFile::Create(checks));
  ASSIGN_OR_RETURN(TempFile input_file, TempFile::Create(input));
  ASSIGN_OR_RETURN(TempFile log_file, TempFile::Create(""));

  std::string input_arg = absl::StrCat("--input-file=", input_file.path());
  std::vector<char*> argv = {filecheck.data(), input_arg.data(),
                             const_cast<char*>("--dump-input=fail"),
                             const_cast<char*>(check_file.path().c_str()),
                             nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO,
                                   log_file.path().c_str(), O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid;
  int spawn_error = posix_spawn(&pid, filecheck.c_str(), &actions, nullptr,
                                argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    return absl::InternalError(absl::StrCat("cannot run ", filecheck, ": ",
                                            std::strerror(spawn_error)));
  }
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("waitpid: ", std::strerror(errno)));
    }
  }
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
    return absl::OkStatus();
  }
  std::ifstream log(log_file.path());
  std::stringstream diagnostics;
  diagnostics << log.rdbuf();
  return absl::FailedPreconditionError(
      absl::StrCat("FileCheck failed:\n", diagnostics.str()));
}

}  // namespace lathe::testing
