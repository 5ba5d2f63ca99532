#include "codegen/codegen_testing.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/loop_ir.h"
#include "codegen/scheduler.h"
#include "ir/graph.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"
#include "testing/file_check.h"

namespace lathe::codegen {

absl::StatusOr<LoweredGraph> LowerText(absl::string_view text,
                                       Routines routines) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*graph, env));
  return Lower(*graph, env, routines);
}

absl::StatusOr<Scheduled> ScheduleText(absl::string_view text,
                                       Routines routines) {
  Scheduled s;
  ASSIGN_OR_RETURN(s.lowered, LowerText(text, routines));
  s.kernels_before = static_cast<int>(s.lowered.program.kernels.size());
  ASSIGN_OR_RETURN(ScheduleResult r, Schedule(s.lowered));
  s.log = std::move(r.log);
  return s;
}

std::string PrintScheduled(const Scheduled& s) {
  std::string out = PrintProgram(s.lowered.program);
  for (const std::string& line : s.log)
    absl::StrAppend(&out, "log: ", line, "\n");
  return out;
}

namespace {

absl::Status FileCheckWithContext(const std::string& text,
                                  absl::string_view checks) {
  absl::Status fc = testing::RunFileCheck(text, checks);
  if (fc.ok()) return fc;
  return absl::Status(fc.code(),
                      absl::StrCat(fc.message(), "\nProgram:\n", text));
}

}  // namespace

absl::Status LowerAndFileCheck(absl::string_view text,
                               absl::string_view checks) {
  ASSIGN_OR_RETURN(LoweredGraph lowered, LowerText(text));
  return FileCheckWithContext(PrintProgram(lowered.program), checks);
}

absl::Status ScheduleAndFileCheck(absl::string_view text,
                                  absl::string_view checks) {
  ASSIGN_OR_RETURN(Scheduled s, ScheduleText(text));
  return FileCheckScheduled(s, checks);
}

absl::Status FileCheckScheduled(const Scheduled& s, absl::string_view checks) {
  return FileCheckWithContext(PrintScheduled(s), checks);
}

}  // namespace lathe::codegen
