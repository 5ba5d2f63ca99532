// -----------------------------------------------------------------------------
// File: json.h
// -----------------------------------------------------------------------------
//
// The little JSON a compile trace needs (trace.h), and nothing more: a
// string quoted for JSON (control characters, quotes and backslashes
// escaped, valid UTF-8 kept as it is, each byte of invalid UTF-8 replaced by
// U+FFFD, so the output is always valid JSON), and a strict parser for one
// JSON text (RFC 8259: objects, arrays, strings, numbers, true, false, null)
// whose errors name the column.
//
// Example:
//
//   std::string line = absl::StrCat("{\"step\":", JsonQuote(name), "}");
//   ASSIGN_OR_RETURN(JsonValue v, ParseJson(line));
//   const JsonValue* step = v.Find("step");   // null when absent

#ifndef LATHE_TOOLS_TRACE_JSON_H_
#define LATHE_TOOLS_TRACE_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::trace {

// One parsed JSON value.
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;  // UTF-8 (escapes decoded; bad ones as U+FFFD)
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in text order

  // Find()
  //
  // The member `key` of an object (the first, if repeated); null when this
  // is not an object or has no such member.
  const JsonValue* Find(absl::string_view key) const;
};

// JsonKindName()
//
// "null", "boolean", "number", "string", "array" or "object".
const char* JsonKindName(JsonValue::Kind kind);

// ValidUtf8()
//
// `text` with each byte that does not belong to a well-formed UTF-8
// sequence replaced by U+FFFD.
std::string ValidUtf8(absl::string_view text);

// JsonQuote()
//
// `text` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view text);

// ParseJson()
//
// The JSON value `text` holds (whitespace around it allowed, nothing else);
// InvalidArgument "column N: expected ..." otherwise. Nesting deeper than
// 64 is refused.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

}  // namespace lathe::trace

#endif  // LATHE_TOOLS_TRACE_JSON_H_
