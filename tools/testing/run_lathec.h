// -----------------------------------------------------------------------------
// File: run_lathec.h
// -----------------------------------------------------------------------------
//
// Runs the lathec binary from a test's runfiles as a user would (a child
// process, stdout and stderr together), so that a crash or a hang is a
// failing expectation rather than the end of the test.
//
// Example:
//
//   LathecResult r = RunLathec({"run", graph, "--out", out});
//   EXPECT_FALSE(r.signaled) << r.output;
//   EXPECT_EQ(r.status, 1);

#ifndef LATHE_TOOLS_TESTING_RUN_LATHEC_H_
#define LATHE_TOOLS_TESTING_RUN_LATHEC_H_

#include <string>
#include <vector>

namespace lathe::testing {

struct LathecResult {
  int status = 0;         // the exit status (124: killed after the timeout)
  bool signaled = false;  // killed by a signal (SIGSEGV, SIGFPE, ...)
  std::string output;     // stdout and stderr
};

// RunLathec()
//
// `lathec ARGS...` (//tools:lathec in the runfiles), killed after
// `timeout_seconds`; run once more, saying so, when it failed only because
// LeakSanitizer's own tracer crashed at exit (a sanitizer fault, not a
// leak report).
LathecResult RunLathec(const std::vector<std::string>& args,
                       int timeout_seconds = 600);

// WriteTestFile()
//
// Writes `text` to TestTmpPath(`name`) and returns that path.
std::string WriteTestFile(const std::string& name, const std::string& text);

// PathExists()
//
// Whether anything (a file, a directory) is at `path`.
bool PathExists(const std::string& path);

}  // namespace lathe::testing

#endif  // LATHE_TOOLS_TESTING_RUN_LATHEC_H_
