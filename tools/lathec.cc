// lathec: lathe's command-line compiler driver: `run`, `compile` and
// `guards` (see lathec_run.h), and `report` (tools/trace/lathec_report.h).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/lathec_run.h"
#include "tools/trace/lathec_report.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fprintf(args.empty() ? stderr : stdout, "%s\n       %s\n",
                 lathe::kLathecUsage, lathe::trace::kLathecReportUsage);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  absl::Status s;
  if (args[0] == "run") {
    s = lathe::LathecRun(rest);
  } else if (args[0] == "compile") {
    s = lathe::LathecCompile(rest);
  } else if (args[0] == "guards") {
    s = lathe::LathecGuards(rest);
  } else if (args[0] == "report") {
    s = lathe::trace::LathecReport(rest);
  } else {
    std::fprintf(stderr, "lathec: unknown command '%s'\n%s\n       %s\n",
                 args[0].c_str(), lathe::kLathecUsage,
                 lathe::trace::kLathecReportUsage);
    return 2;
  }
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
