#include "tools/trace/json.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lathe::trace {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
constexpr int kMaxDepth = 64;

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0.
size_t Utf8SequenceLength(absl::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  unsigned char b = byte(0);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(1) ? 2 : 0;
  if (b == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (b == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b >= 0xE1 && b <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b >= 0xF1 && b <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A recursive-descent parser over one text; pos_ is a byte offset.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    JsonValue v;
    absl::Status s = ParseValue(&v, 0);
    if (!s.ok()) return s;
    SkipSpace();
    if (pos_ != text_.size()) return Error("end of input after the value");
    return v;
  }

 private:
  absl::Status Error(absl::string_view expected) const {
    std::string found =
        pos_ >= text_.size()
            ? "end of input"
            : absl::StrFormat("'%s'", absl::CHexEscape(text_.substr(pos_, 1)));
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", pos_ + 1, ": expected ", expected, ", found ", found));
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::Status ParseValue(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return Error("at most 64 nested arrays or objects");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("a value");
    char c = text_[pos_];
    if (c == '{') return ParseObject(v, depth);
    if (c == '[') return ParseArray(v, depth);
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return ParseString(&v->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(v);
    if (Consume("true") || Consume("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = c == 't';
      return absl::OkStatus();
    }
    if (Consume("null")) return absl::OkStatus();
    return Error("a value");
  }

  absl::Status ParseObject(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Consume("}")) return absl::OkStatus();
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Error("a member name (a string)");
      }
      std::string key;
      absl::Status s = ParseString(&key);
      if (!s.ok()) return s;
      SkipSpace();
      if (!Consume(":")) return Error("':'");
      JsonValue member;
      s = ParseValue(&member, depth + 1);
      if (!s.ok()) return s;
      v->object.emplace_back(std::move(key), std::move(member));
      SkipSpace();
      if (Consume("}")) return absl::OkStatus();
      if (!Consume(",")) return Error("',' or '}'");
    }
  }

  absl::Status ParseArray(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (Consume("]")) return absl::OkStatus();
    while (true) {
      JsonValue element;
      absl::Status s = ParseValue(&element, depth + 1);
      if (!s.ok()) return s;
      v->array.push_back(std::move(element));
      SkipSpace();
      if (Consume("]")) return absl::OkStatus();
      if (!Consume(",")) return Error("',' or ']'");
    }
  }

  absl::Status ParseNumber(JsonValue* v) {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        ++pos_;
      }
      return pos_ > from;
    };
    Consume("-");
    if (Consume("0")) {
      // No leading zeros.
    } else if (!digits()) {
      return Error("a digit");
    }
    if (Consume(".") && !digits()) return Error("a digit after '.'");
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (!Consume("+")) Consume("-");
      if (!digits()) return Error("a digit in the exponent");
    }
    std::string literal(text_.substr(start, pos_ - start));
    v->kind = JsonValue::Kind::kNumber;
    v->number = std::strtod(literal.c_str(), nullptr);
    return absl::OkStatus();
  }

  // Four hex digits after "\u".
  absl::Status ParseHex4(uint32_t* out) {
    *out = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = pos_ < text_.size() ? text_[pos_] : '\0';
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return Error("a hex digit in a \\u escape");
      *out = *out * 16 + d;
    }
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return Error("'\"' closing the string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Error("no control character inside a string");
      if (c != '\\') {
        size_t n = Utf8SequenceLength(text_.substr(pos_));
        if (n == 0) {
          out->append(kReplacement);
          ++pos_;
        } else {
          absl::StrAppend(out, text_.substr(pos_, n));
          pos_ += n;
        }
        continue;
      }
      ++pos_;
      char e = pos_ < text_.size() ? text_[pos_] : '\0';
      ++pos_;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          absl::Status s = ParseHex4(&cp);
          if (!s.ok()) return s;
          if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
            size_t at = pos_;
            pos_ += 2;
            uint32_t low;
            s = ParseHex4(&low);
            if (!s.ok()) return s;
            if (low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
              pos_ = at;  // a lone high surrogate; read the next on its own
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) {
            out->append(kReplacement);  // a lone surrogate
          } else {
            AppendUtf8(cp, out);
          }
          break;
        }
        default:
          pos_ -= 1;
          return Error("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
      }
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(absl::string_view key) const {
  for (const auto& [name, value] : object) {
    if (name == key) return &value;
  }
  return nullptr;
}

const char* JsonKindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return "boolean";
    case JsonValue::Kind::kNumber:
      return "number";
    case JsonValue::Kind::kString:
      return "string";
    case JsonValue::Kind::kArray:
      return "array";
    case JsonValue::Kind::kObject:
      return "object";
  }
  return "value";
}

std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t n = Utf8SequenceLength(text);
    if (n == 0) {
      out.append(kReplacement);
      text.remove_prefix(1);
    } else {
      absl::StrAppend(&out, text.substr(0, n));
      text.remove_prefix(n);
    }
  }
  return out;
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  while (!text.empty()) {
    unsigned char c = static_cast<unsigned char>(text[0]);
    size_t n = Utf8SequenceLength(text);
    if (n == 0) {
      out.append(kReplacement);
      text.remove_prefix(1);
      continue;
    }
    if (n > 1) {
      absl::StrAppend(&out, text.substr(0, n));
      text.remove_prefix(n);
      continue;
    }
    text.remove_prefix(1);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return Parser(text).ParseDocument();
}

}  // namespace lathe::trace
