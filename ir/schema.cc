#include "ir/schema.h"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "status_macros.h"

namespace lathe::ir {
namespace {

constexpr std::pair<absl::string_view, BaseType> kBaseTypes[] = {
    {"Tensor", BaseType::kTensor},
    {"int", BaseType::kInt},
    {"SymInt", BaseType::kSymInt},
    {"float", BaseType::kFloat},
    {"SymFloat", BaseType::kSymFloat},
    {"bool", BaseType::kBool},
    {"SymBool", BaseType::kSymBool},
    {"str", BaseType::kStr},
    {"Scalar", BaseType::kScalar},
    {"ScalarType", BaseType::kScalarType},
    {"Layout", BaseType::kLayout},
    {"Device", BaseType::kDevice},
    {"MemoryFormat", BaseType::kMemoryFormat},
    {"Generator", BaseType::kGenerator},
    {"Storage", BaseType::kStorage},
    {"Stream", BaseType::kStream},
    {"Dimname", BaseType::kDimname},
    {"QScheme", BaseType::kQScheme},
    {"complex", BaseType::kComplex},
    {"Any", BaseType::kAny},
};

absl::string_view BaseName(BaseType t) {
  for (const auto& [name, type] : kBaseTypes) {
    if (type == t) return name;
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<OpSchema> Parse() {
    OpSchema s;
    Skip();
    ASSIGN_OR_RETURN(std::string first, Identifier("an operator name"));
    if (Accept("::")) {
      s.ns = first;
      ASSIGN_OR_RETURN(first, Identifier("an operator name"));
    }
    s.name = first;
    if (Accept(".")) {
      ASSIGN_OR_RETURN(s.overload, Identifier("an overload name"));
    }
    Skip();
    RETURN_IF_ERROR(Expect("(", "'(' opening the arguments"));
    bool kwarg_only = false;
    Skip();
    if (!Accept(")")) {
      while (true) {
        Skip();
        if (Accept("*")) {
          if (kwarg_only) {
            --pos_;  // point at the '*'
            return Error("a second '*'");
          }
          kwarg_only = true;
        } else {
          ASSIGN_OR_RETURN(Argument a, ParseArgument());
          a.kwarg_only = kwarg_only;
          for (const Argument& other : s.arguments) {
            if (other.name == a.name) {
              return Error(
                  absl::StrCat("argument '", a.name, "' appears twice"));
            }
          }
          s.arguments.push_back(std::move(a));
        }
        Skip();
        if (Accept(")")) break;
        RETURN_IF_ERROR(Expect(",", "')' or ',' after an argument"));
      }
    }
    Skip();
    RETURN_IF_ERROR(Expect("->", "'->' before the returns"));
    Skip();
    if (Accept("(")) {
      s.returns_parenthesized = true;
      Skip();
      if (!Accept(")")) {
        while (true) {
          Skip();
          ASSIGN_OR_RETURN(Return r, ParseReturn());
          s.returns.push_back(std::move(r));
          Skip();
          if (Accept(")")) break;
          RETURN_IF_ERROR(Expect(",", "')' or ',' after a return"));
        }
      }
    } else {
      ASSIGN_OR_RETURN(Return r, ParseReturn());
      s.returns.push_back(std::move(r));
    }
    Skip();
    if (pos_ != text_.size()) return Error("unexpected text after the returns");
    return s;
  }

 private:
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", pos_ + 1, ": ", message));
  }
  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool Accept(absl::string_view token) {
    if (text_.substr(pos_, token.size()) == token) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  absl::Status Expect(absl::string_view token, absl::string_view what) {
    if (Accept(token)) return absl::OkStatus();
    return Error(absl::StrCat("expected ", what, Found()));
  }
  std::string Found() const {
    if (pos_ >= text_.size()) return ", got the end of the schema";
    return absl::StrCat(", got '", text_.substr(pos_, 1), "'");
  }
  absl::StatusOr<std::string> Identifier(absl::string_view what) {
    size_t start = pos_;
    if (pos_ < text_.size() &&
        (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_')) {
      while (pos_ < text_.size() &&
             (absl::ascii_isalnum(text_[pos_]) || text_[pos_] == '_')) {
        ++pos_;
      }
    }
    if (pos_ == start) return Error(absl::StrCat("expected ", what, Found()));
    return std::string(text_.substr(start, pos_ - start));
  }

  absl::StatusOr<AliasInfo> ParseAlias() {
    // After '(' : a|b ['!'] ['->' c|*]  ')'
    AliasInfo info;
    auto set_name = [&]() -> absl::StatusOr<std::string> {
      Skip();
      if (Accept("*")) return std::string("*");
      return Identifier("an alias set name");
    };
    ASSIGN_OR_RETURN(std::string first, set_name());
    info.sets.push_back(first);
    while (Accept("|")) {
      ASSIGN_OR_RETURN(std::string next, set_name());
      info.sets.push_back(next);
    }
    if (Accept("!")) info.is_write = true;
    Skip();
    if (Accept("->")) {
      ASSIGN_OR_RETURN(std::string after, set_name());
      info.after_sets.push_back(after);
      while (Accept("|")) {
        ASSIGN_OR_RETURN(std::string next, set_name());
        info.after_sets.push_back(next);
      }
      if (Accept("!")) info.is_write = true;
      Skip();
    }
    RETURN_IF_ERROR(Expect(")", "')' closing the alias annotation"));
    return info;
  }

  // A type with an optional alias annotation after its base or list.
  absl::Status ParseType(SchemaType* type, std::optional<AliasInfo>* alias) {
    size_t at = pos_;
    ASSIGN_OR_RETURN(std::string base, Identifier("a type"));
    bool known = false;
    for (const auto& [name, t] : kBaseTypes) {
      if (base == name) {
        type->base = t;
        known = true;
      }
    }
    if (!known) {
      pos_ = at;
      return Error(absl::StrCat("unknown type '", base, "'"));
    }
    if (Accept("(")) {
      ASSIGN_OR_RETURN(AliasInfo a, ParseAlias());
      *alias = a;
    }
    if (Accept("?")) type->optional = true;
    if (Accept("[")) {
      type->is_list = true;
      type->element_optional = type->optional;
      type->optional = false;
      if (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) {
        size_t start = pos_;
        while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
        if (!absl::SimpleAtoi(text_.substr(start, pos_ - start),
                              &type->list_size)) {
          return Error("list size is too large");
        }
      }
      RETURN_IF_ERROR(Expect("]", "']' closing the list type"));
      if (!alias->has_value() && Accept("(")) {
        ASSIGN_OR_RETURN(AliasInfo a, ParseAlias());
        *alias = a;
      }
      if (Accept("?")) type->optional = true;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DefaultValue> ParseDefault() {
    size_t start = pos_;
    DefaultValue d;
    if (Accept("[")) {
      d.kind = DefaultValue::Kind::kList;
      int depth = 1;
      while (pos_ < text_.size() && depth > 0) {
        if (text_[pos_] == '[') ++depth;
        if (text_[pos_] == ']') --depth;
        ++pos_;
      }
      if (depth != 0) return Error("unterminated list default");
      d.text = std::string(text_.substr(start, pos_ - start));
      absl::string_view inner =
          absl::string_view(d.text).substr(1, d.text.size() - 2);
      for (absl::string_view part :
           absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
        double v;
        if (!absl::SimpleAtod(absl::StripAsciiWhitespace(part), &v)) {
          pos_ = start;
          return Error(absl::StrCat("list default element '",
                                    absl::StripAsciiWhitespace(part),
                                    "' is not a number"));
        }
        d.list_values.push_back(v);
      }
      return d;
    }
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      char quote = text_[pos_++];
      size_t body = pos_;
      while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
      if (pos_ >= text_.size()) {
        pos_ = start;
        return Error("unterminated string default");
      }
      d.kind = DefaultValue::Kind::kString;
      d.string_value = std::string(text_.substr(body, pos_ - body));
      ++pos_;
      d.text = std::string(text_.substr(start, pos_ - start));
      return d;
    }
    // A number, None/True/False, or a name such as Mean or contiguous_format.
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ')' &&
           text_[pos_] != ' ') {
      ++pos_;
    }
    d.text = std::string(text_.substr(start, pos_ - start));
    if (d.text.empty()) return Error("expected a default value");
    if (d.text == "None") {
      d.kind = DefaultValue::Kind::kNone;
    } else if (d.text == "True" || d.text == "False") {
      d.kind = DefaultValue::Kind::kBool;
      d.bool_value = d.text == "True";
    } else if (absl::SimpleAtoi(d.text, &d.int_value)) {
      d.kind = DefaultValue::Kind::kInt;
    } else if (absl::SimpleAtod(d.text, &d.float_value) &&
               d.text.find_first_of("0123456789") != std::string::npos) {
      d.kind = DefaultValue::Kind::kFloat;
    } else if (absl::ascii_isalpha(d.text[0]) || d.text[0] == '_') {
      for (char c : d.text) {
        if (!absl::ascii_isalnum(c) && c != '_' && c != '.') {
          pos_ = start;
          return Error(absl::StrCat("bad default value '", d.text, "'"));
        }
      }
      d.kind = DefaultValue::Kind::kName;
      d.string_value = d.text;
    } else {
      pos_ = start;
      return Error(absl::StrCat("bad default value '", d.text, "'"));
    }
    return d;
  }

  absl::StatusOr<Argument> ParseArgument() {
    Argument a;
    RETURN_IF_ERROR(ParseType(&a.type, &a.alias));
    Skip();
    ASSIGN_OR_RETURN(a.name, Identifier("an argument name"));
    Skip();
    if (Accept("=")) {
      Skip();
      ASSIGN_OR_RETURN(DefaultValue d, ParseDefault());
      a.default_value = std::move(d);
    }
    return a;
  }

  absl::StatusOr<Return> ParseReturn() {
    Return r;
    RETURN_IF_ERROR(ParseType(&r.type, &r.alias));
    Skip();
    if (pos_ < text_.size() &&
        (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_')) {
      ASSIGN_OR_RETURN(r.name, Identifier("a return name"));
    }
    return r;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// Prints a type with its alias annotation where the schema puts it.
std::string TypeWithAlias(const SchemaType& t,
                          const std::optional<AliasInfo>& alias) {
  std::string out(BaseName(t.base));
  // An alias on a list element ("Tensor(a)[]") precedes the brackets.
  if (alias) absl::StrAppend(&out, alias->ToString());
  if (t.is_list) {
    if (t.element_optional) out += "?";
    absl::StrAppend(&out, "[",
                    t.list_size >= 0 ? absl::StrCat(t.list_size) : "", "]");
  }
  if (t.optional) out += "?";
  return out;
}

}  // namespace

std::string SchemaType::ToString() const {
  return TypeWithAlias(*this, std::nullopt);
}

std::string AliasInfo::ToString() const {
  std::string out = absl::StrCat("(", absl::StrJoin(sets, "|"));
  if (!after_sets.empty()) {
    if (is_write) out += "!";
    absl::StrAppend(&out, " -> ", absl::StrJoin(after_sets, "|"), ")");
    return out;
  }
  if (is_write) out += "!";
  out += ")";
  return out;
}

std::string OpSchema::FullName() const {
  return overload.empty() ? name : absl::StrCat(name, ".", overload);
}

std::string OpSchema::ToString() const {
  std::string out = ns.empty() ? "" : absl::StrCat(ns, "::");
  absl::StrAppend(&out, FullName(), "(");
  bool star = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument& a = arguments[i];
    if (i > 0) out += ", ";
    if (a.kwarg_only && !star) {
      out += "*, ";
      star = true;
    }
    absl::StrAppend(&out, TypeWithAlias(a.type, a.alias), " ", a.name);
    if (a.default_value) absl::StrAppend(&out, "=", a.default_value->text);
  }
  out += ") -> ";
  std::vector<std::string> rs;
  for (const Return& r : returns) {
    std::string one = TypeWithAlias(r.type, r.alias);
    if (!r.name.empty()) absl::StrAppend(&one, " ", r.name);
    rs.push_back(one);
  }
  if (returns_parenthesized) {
    absl::StrAppend(&out, "(", absl::StrJoin(rs, ", "), ")");
  } else {
    absl::StrAppend(&out, absl::StrJoin(rs, ", "));
  }
  return out;
}

bool OpSchema::IsMutable() const {
  for (const Argument& a : arguments) {
    if (a.is_written()) return true;
  }
  return false;
}

bool OpSchema::IsInplace() const {
  return absl::EndsWith(name, "_") && !arguments.empty() &&
         arguments[0].is_written();
}

bool OpSchema::IsView() const {
  for (const Return& r : returns) {
    if (!r.alias || r.alias->is_write) continue;
    for (const Argument& a : arguments) {
      if (a.alias && !a.alias->is_write && a.alias->sets == r.alias->sets) {
        return true;
      }
    }
  }
  return false;
}

int OpSchema::ArgumentIndex(absl::string_view arg_name) const {
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name == arg_name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<OpSchema> ParseSchema(absl::string_view text) {
  return Parser(text).Parse();
}

}  // namespace lathe::ir
