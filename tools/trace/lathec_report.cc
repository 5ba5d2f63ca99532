#include "tools/trace/lathec_report.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/file_io.h"
#include "status_macros.h"
#include "tools/trace/report.h"
#include "tools/trace/trace.h"

namespace lathe::trace {

absl::Status LathecReport(const std::vector<std::string>& args) {
  std::string trace_path, out;
  auto usage = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("report: ", why, " (usage: ", kLathecReportUsage, ")"));
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--out") {
      if (i + 1 >= args.size()) return usage(absl::StrCat(a, " needs a file"));
      out = args[++i];
    } else if (absl::StartsWith(a, "--out=")) {
      out = a.substr(6);
    } else if (absl::StartsWith(a, "-") && a.size() > 1) {
      return usage(absl::StrCat("unknown option '", a, "'"));
    } else if (trace_path.empty()) {
      trace_path = a;
    } else {
      return usage(
          absl::StrCat("one trace only, got '", trace_path, "' and '", a, "'"));
    }
  }
  if (trace_path.empty()) return usage("no trace given");
  if (out.empty()) return usage("no output file given (-o REPORT.html)");
  ASSIGN_OR_RETURN(std::vector<TraceStep> steps, ReadTrace(trace_path));
  ReportOptions options;
  options.title = absl::StrCat("lathe compile report: ",
                               trace_path.substr(trace_path.rfind('/') + 1));
  RETURN_IF_ERROR(WriteFileAtomic(out, RenderReport(steps, options),
                                  /*durable=*/false));
  std::printf("wrote %s (%zu step%s)\n", out.c_str(), steps.size(),
              steps.size() == 1 ? "" : "s");
  return absl::OkStatus();
}

}  // namespace lathe::trace
