// lathec: lathe's command-line compiler driver (see lathec_run.h for the
// `run` command, the only one so far).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/lathec_run.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fprintf(args.empty() ? stderr : stdout, "%s\n", lathe::kLathecUsage);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "compile" || args[0] == "guards") {
    std::fprintf(stderr, "lathec: '%s' is not available yet (available: run)\n",
                 args[0].c_str());
    return 1;
  }
  if (args[0] != "run") {
    std::fprintf(stderr, "lathec: unknown command '%s'\n%s\n", args[0].c_str(),
                 lathe::kLathecUsage);
    return 2;
  }
  absl::Status s =
      lathe::LathecRun(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!s.ok()) {
    std::string message(s.message());
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "lathec: %s\n", message.c_str());
    return 1;
  }
  return 0;
}
