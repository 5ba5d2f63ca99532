#include "tools/testing/run_lathec.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "testing/runfiles.h"

namespace lathe::testing {

namespace {

// `cmd` (stdout and stderr together) once, as a LathecResult.
LathecResult RunOnce(const std::string& cmd) {
  LathecResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    r.status = -1;
    r.output = "popen failed";
    return r;
  }
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // timeout exits with 128 + s when its child dies of signal s.
  r.signaled = WIFSIGNALED(status) || r.status > 128;
  return r;
}

}  // namespace

LathecResult RunLathec(const std::vector<std::string>& args,
                       int timeout_seconds) {
  std::string cmd = absl::StrCat("timeout ", timeout_seconds, " ",
                                 RunfilePath("tools/lathec"));
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  absl::StrAppend(&cmd, " 2>&1");
  LathecResult r = RunOnce(cmd);
  // Once more when the run failed only because LeakSanitizer's own
  // stop-the-world tracer crashed at exit ("Tracer caught signal 11", an
  // intermittent fault of the sanitizer, google/sanitizers#1353): never
  // after a leak report ("detected memory leaks"), which is the test's
  // business.
  if (r.status != 0 &&
      absl::StrContains(r.output,
                        "LeakSanitizer has encountered a fatal error") &&
      !absl::StrContains(r.output, "detected memory leaks")) {
    std::printf("retried after LeakSanitizer's tracer failed: %s\n",
                cmd.c_str());
    r = RunOnce(cmd);
  }
  return r;
}

std::string WriteTestFile(const std::string& name, const std::string& text) {
  std::string path = TestTmpPath(name);
  std::ofstream(path) << text;
  return path;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace lathe::testing
