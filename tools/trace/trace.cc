#include "tools/trace/trace.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "runtime/file_io.h"
#include "status_macros.h"
#include "tools/trace/json.h"

namespace lathe::trace {
namespace {

// The string member `key` of `object`, or an error naming what was there.
absl::StatusOr<std::string> StringMember(const JsonValue& object,
                                         absl::string_view key,
                                         absl::string_view where) {
  const JsonValue* v = object.Find(key);
  if (v == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a \"", key, "\" member in ", where));
  }
  if (v->kind != JsonValue::Kind::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected \"", key, "\" in ", where, " to be a string, ",
                     "found a ", JsonKindName(v->kind)));
  }
  return v->string;
}

// One line of a trace as a step.
absl::StatusOr<TraceStep> StepOf(absl::string_view line) {
  ASSIGN_OR_RETURN(JsonValue v, ParseJson(line));
  if (v.kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a step (a JSON object), found a ", JsonKindName(v.kind)));
  }
  TraceStep step;
  ASSIGN_OR_RETURN(step.name, StringMember(v, "step", "a step"));
  const JsonValue* seconds = v.Find("seconds");
  if (seconds == nullptr || seconds->kind != JsonValue::Kind::kNumber ||
      !std::isfinite(seconds->number) || seconds->number < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected \"seconds\" in step '", step.name, "' to be a number >= 0"));
  }
  step.seconds = seconds->number;
  const JsonValue* made = v.Find("made");
  if (made == nullptr) return step;
  if (made->kind != JsonValue::Kind::kArray) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected \"made\" in step '", step.name,
                     "' to be an array, found a ", JsonKindName(made->kind)));
  }
  for (size_t i = 0; i < made->array.size(); ++i) {
    const JsonValue& item = made->array[i];
    std::string where = absl::StrFormat("item %d of step '%s'", i, step.name);
    if (item.kind != JsonValue::Kind::kObject) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", where, " to be an object, found a ",
                       JsonKindName(item.kind)));
    }
    TraceItem t;
    ASSIGN_OR_RETURN(t.kind, StringMember(item, "kind", where));
    ASSIGN_OR_RETURN(t.title, StringMember(item, "title", where));
    ASSIGN_OR_RETURN(t.text, StringMember(item, "text", where));
    step.made.push_back(std::move(t));
  }
  return step;
}

}  // namespace

void Trace::Step(std::string name, double seconds,
                 std::vector<TraceItem> made) {
  steps_.push_back({std::move(name), seconds, std::move(made)});
}

std::string StepToJson(const TraceStep& step) {
  double seconds =
      std::isfinite(step.seconds) && step.seconds > 0 ? step.seconds : 0;
  std::string out = absl::StrCat(
      "{\"step\":", JsonQuote(step.name),
      ",\"seconds\":", absl::StrFormat("%.9g", seconds), ",\"made\":[");
  for (size_t i = 0; i < step.made.size(); ++i) {
    const TraceItem& item = step.made[i];
    absl::StrAppend(&out, i ? "," : "", "{\"kind\":", JsonQuote(item.kind),
                    ",\"title\":", JsonQuote(item.title),
                    ",\"text\":", JsonQuote(item.text), "}");
  }
  out.append("]}");
  return out;
}

std::string Trace::ToJsonLines() const {
  std::string out;
  for (const TraceStep& step : steps_) {
    absl::StrAppend(&out, StepToJson(step), "\n");
  }
  return out;
}

absl::Status Trace::WriteTo(const std::string& path) const {
  return WriteFileAtomic(path, ToJsonLines(), /*durable=*/false);
}

absl::StatusOr<std::vector<TraceStep>> ParseTrace(absl::string_view text,
                                                  absl::string_view source) {
  std::vector<TraceStep> steps;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == absl::string_view::npos) continue;
    absl::StatusOr<TraceStep> step = StepOf(line);
    if (!step.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": line ", line_number, ": ", step.status().message()));
    }
    steps.push_back(*std::move(step));
  }
  return steps;
}

absl::StatusOr<std::vector<TraceStep>> ReadTrace(const std::string& path,
                                                 int64_t max_bytes) {
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, max_bytes));
  return ParseTrace(text, path);
}

}  // namespace lathe::trace
