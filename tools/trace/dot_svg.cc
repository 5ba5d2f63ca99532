#include "tools/trace/dot_svg.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lathe::trace {

std::string FindProgram(absl::string_view name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "", ':')) {
    if (dir.empty()) continue;
    std::string exe = absl::StrCat(dir, "/", name);
    if (access(exe.c_str(), X_OK) == 0) return exe;
  }
  return "";
}

std::optional<std::string> DotToSvg(absl::string_view dot_text,
                                    int timeout_seconds) {
  const std::string dot = FindProgram("dot");
  if (dot.empty()) return std::nullopt;
  std::string input = absl::StrCat(
      std::filesystem::temp_directory_path().string(), "/lathe-dot-XXXXXX");
  int fd = mkstemp(input.data());
  if (fd < 0) return std::nullopt;
  bool written = write(fd, dot_text.data(), dot_text.size()) ==
                 static_cast<ssize_t>(dot_text.size());
  close(fd);
  int out[2];
  if (!written || pipe2(out, O_CLOEXEC) != 0) {
    std::remove(input.c_str());
    return std::nullopt;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execl(dot.c_str(), "dot", "-Tsvg", input.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string svg;
  bool timed_out = false;
  if (pid > 0) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline =
        Clock::now() + std::chrono::seconds(timeout_seconds);
    char buf[8192];
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - Clock::now())
                      .count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      pollfd p = {out[0], POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;  // the deadline is checked above
      ssize_t n = read(out[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      svg.append(buf, n);
    }
    if (timed_out) kill(pid, SIGKILL);
  }
  close(out[0]);
  int status = 0;
  bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && !timed_out &&
            WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::remove(input.c_str());
  size_t start = svg.find("<svg");
  if (!ok || start == std::string::npos) return std::nullopt;
  return svg.substr(start);
}

}  // namespace lathe::trace
