#include "ir/graph_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
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

std::string PyFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string sci = buf;  // "-1.5e-05"
  bool negative = sci[0] == '-';
  std::string body = negative ? sci.substr(1) : sci;
  size_t e = body.find('e');
  int exponent = std::atoi(body.c_str() + e + 1);
  if (exponent < -4 || exponent >= 16) return sci;
  std::string digits;
  for (char c : body.substr(0, e)) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent >= 0) {
    if (static_cast<int>(digits.size()) <= exponent + 1) {
      digits.append(exponent + 1 - digits.size(), '0');
      out = digits + ".0";
    } else {
      out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
  } else {
    out = "0." + std::string(-exponent - 1, '0') + digits;
  }
  return negative ? "-" + out : out;
}

std::string PyNumber(const symbolic::Value& v) {
  if (v.type == symbolic::ExprType::kFloat) return PyFloat(v.f);
  return symbolic::ToString(v);
}

namespace {

constexpr int kMaxNesting = 64;

struct BinaryOp {
  absl::string_view symbol;
  absl::string_view target;
};

// Longest symbols first so "//" is not read as "/".
constexpr BinaryOp kBinaryOps[] = {
    {"//", "operator.floordiv"}, {"**", "operator.pow"}, {"==", "operator.eq"},
    {"!=", "operator.ne"},       {"<=", "operator.le"},  {">=", "operator.ge"},
    {"+", "operator.add"},       {"-", "operator.sub"},  {"*", "operator.mul"},
    {"/", "operator.truediv"},   {"%", "operator.mod"},  {"<", "operator.lt"},
    {">", "operator.gt"},
};

// Whether `target` was spelled `torch.ops.NAMESPACE.op...`: any qualified
// name except Python's own callees (torch.sym_float, operator.add, ...),
// which the parser keeps whole.
bool IsOpTarget(absl::string_view target) {
  for (absl::string_view python :
       {"torch.", "operator.", "_operator.", "math.", "builtins."}) {
    if (absl::StartsWith(target, python)) return false;
  }
  return absl::StrContains(target, '.');
}

constexpr absl::string_view kLayouts[] = {"strided", "sparse_coo", "sparse_csr",
                                          "_mkldnn"};
constexpr absl::string_view kMemoryFormats[] = {
    "contiguous_format", "channels_last", "channels_last_3d",
    "preserve_format"};

// How each `# lathe:` directive is written (its kind, then its fields).
constexpr absl::string_view kDirectiveUsages[] = {
    "hint SYMBOL NUMBER",   "range SYMBOL LO HI",  "alias INPUT INPUT",
    "composite INPUT TYPE", "requires_grad INPUT", "non_leaf INPUT",
    "constant INPUT",
};

// One line under a cursor; errors carry "line L:C".
class LineCursor {
 public:
  LineCursor(absl::string_view text, int line) : text_(text), line_(line) {}

  absl::Status Error(absl::string_view message) const {
    return ErrorAt(pos_, message);
  }
  absl::Status ErrorAt(size_t pos, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line_, ":", pos + 1, ": ", message));
  }
  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Accept(absl::string_view s) {
    if (text_.substr(pos_, s.size()) == s) {
      pos_ += s.size();
      return true;
    }
    return false;
  }
  absl::Status Expect(absl::string_view s, absl::string_view what) {
    Skip();
    if (Accept(s)) return absl::OkStatus();
    return Error(absl::StrCat("expected ", what, Found()));
  }
  std::string Found() const {
    if (AtEnd()) return ", got the end of the line";
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
    if (start == pos_) return Error(absl::StrCat("expected ", what, Found()));
    return std::string(text_.substr(start, pos_ - start));
  }
  // A dotted name: a.b.c
  absl::StatusOr<std::string> Dotted(absl::string_view what) {
    ASSIGN_OR_RETURN(std::string name, Identifier(what));
    while (Peek() == '.') {
      ++pos_;
      ASSIGN_OR_RETURN(std::string part, Identifier("a name after '.'"));
      absl::StrAppend(&name, ".", part);
    }
    return name;
  }
  absl::StatusOr<std::string> QuotedString() {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a string");
    size_t start = pos_++;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) return ErrorAt(start, "unterminated string");
    ++pos_;
    return out;
  }
  // The run of characters up to the next space or tab (empty at the end).
  absl::string_view Word() {
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ' && text_[pos_] != '\t')
      ++pos_;
    return text_.substr(start, pos_ - start);
  }
  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }
  absl::string_view text() const { return text_; }

 private:
  absl::string_view text_;
  int line_;
  size_t pos_ = 0;
};

class GraphParser {
 public:
  explicit GraphParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<ParsedGraph> Parse() {
    graph_ = std::make_unique<Graph>();
    style_.wrap_in_class = false;
    std::vector<absl::string_view> lines = absl::StrSplit(text_, '\n');
    enum class State { kStart, kBody, kDone } state = State::kStart;
    int def_indent = -1;
    for (size_t i = 0; i < lines.size(); ++i) {
      int line_no = static_cast<int>(i) + 1;
      absl::string_view line = lines[i];
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
      int indent = static_cast<int>(line.size() - stripped.size());
      if (absl::StartsWith(stripped, "# lathe:")) {
        LineCursor c(line, line_no);
        c.set_pos(indent + 8);
        RETURN_IF_ERROR(ParseDirective(c));
        continue;
      }
      if (stripped.empty() || stripped[0] == '#') continue;
      LineCursor c(line, line_no);
      c.set_pos(indent);
      if (state == State::kDone) {
        return c.Error("text after the graph's return");
      }
      if (state == State::kStart) {
        if (absl::StartsWith(stripped, "class ")) {
          if (style_.wrap_in_class) return c.Error("a second class line");
          if (!absl::EndsWith(absl::StripTrailingAsciiWhitespace(stripped),
                              ":")) {
            return c.Error("expected ':' at the end of the class line");
          }
          style_.wrap_in_class = true;
          absl::string_view name = stripped.substr(6);
          name = name.substr(0, name.find('('));
          style_.class_name = std::string(absl::StripAsciiWhitespace(name));
          if (style_.class_name.empty()) {
            return c.Error("expected a class name");
          }
          continue;
        }
        if (!absl::StartsWith(stripped, "def ")) {
          return c.Error("expected 'def forward(self, ...):'");
        }
        RETURN_IF_ERROR(ParseDef(c));
        def_indent = indent;
        state = State::kBody;
        continue;
      }
      if (indent <= def_indent) {
        return c.Error("expected an indented statement of forward()");
      }
      if (absl::StartsWith(stripped, "return")) {
        RETURN_IF_ERROR(ParseReturn(c));
        state = State::kDone;
        continue;
      }
      if (IsDeclarationLine(stripped)) {
        RETURN_IF_ERROR(ParseDeclarations(c));
        continue;
      }
      if (absl::StrContains(stripped, "fx_pytree.tree_flatten_spec(")) {
        RETURN_IF_ERROR(ParseFlatten(c));
        continue;
      }
      RETURN_IF_ERROR(ParseAssign(c));
    }
    if (state != State::kDone) {
      LineCursor end("", static_cast<int>(lines.size()));
      return end.Error(state == State::kStart ? "no 'def forward' found"
                                              : "forward() has no return");
    }
    return ParsedGraph{std::move(graph_), std::move(style_)};
  }

 private:
  // `# lathe: KIND ...` (the cursor after "# lathe:") into the graph's
  // attributes; a line of no known kind is kept as written.
  absl::Status ParseDirective(LineCursor& c) {
    c.Skip();
    absl::string_view rest =
        absl::StripTrailingAsciiWhitespace(c.text().substr(c.pos()));
    absl::string_view kind = rest.substr(0, rest.find_first_of(" \t"));
    absl::string_view usage;
    for (absl::string_view u : kDirectiveUsages) {
      if (absl::StartsWith(u, absl::StrCat(kind, " "))) usage = u;
    }
    GraphAttributes& a = graph_->attributes();
    if (usage.empty()) {
      a.unknown.emplace_back(rest);
      return absl::OkStatus();
    }
    c.set_pos(c.pos() + kind.size());
    ASSIGN_OR_RETURN(
        std::string name,
        DirectiveName(
            c, kind == "hint" || kind == "range" ? "a symbol" : "an input name",
            usage));
    if (kind == "hint") {
      c.Skip();
      size_t at = c.pos();
      std::string word(c.Word());
      int64_t i;
      double f;
      if (absl::SimpleAtoi(word, &i)) {
        a.hints[name] = symbolic::Value::Int(i);
      } else if (absl::SimpleAtod(word, &f)) {
        a.hints[name] = symbolic::Value::Float(f);
      } else {
        c.set_pos(at);
        return DirectiveError(c, "an int or a float", usage);
      }
    } else if (kind == "range") {
      SymbolRange r;
      ASSIGN_OR_RETURN(r.lo, DirectiveInt(c, "an int LO", usage));
      c.Skip();
      size_t hi_at = c.pos();
      ASSIGN_OR_RETURN(r.hi, DirectiveInt(c, "an int HI", usage));
      if (r.lo > r.hi) {
        return c.ErrorAt(hi_at,
                         absl::StrCat("expected HI >= LO (# lathe: ", usage,
                                      "), got ", r.lo, " > ", r.hi));
      }
      a.ranges[name] = r;
    } else if (kind == "alias") {
      ASSIGN_OR_RETURN(std::string other,
                       DirectiveName(c, "a second input name", usage));
      a.alias_of[other] = name;
    } else if (kind == "composite") {
      c.Skip();
      absl::string_view type =
          absl::StripTrailingAsciiWhitespace(c.text().substr(c.pos()));
      if (type.empty()) return DirectiveError(c, "a composite type", usage);
      a.composites[name] = std::string(type);
      c.set_pos(c.text().size());
    } else if (kind == "requires_grad") {
      a.requires_grad.insert(name);
    } else if (kind == "constant") {
      a.constants.insert(name);
    } else {
      a.non_leaf.insert(name);
    }
    c.Skip();
    if (!c.AtEnd()) return DirectiveError(c, "the end of the line", usage);
    return absl::OkStatus();
  }

  // "line L:C: expected WHAT (# lathe: USAGE), got 'WORD'", at the next word.
  static absl::Status DirectiveError(LineCursor& c, absl::string_view what,
                                     absl::string_view usage) {
    c.Skip();
    size_t at = c.pos();
    absl::string_view word = c.Word();
    return c.ErrorAt(
        at, absl::StrCat("expected ", what, " (# lathe: ", usage, "), got ",
                         word.empty() ? "the end of the line"
                                      : absl::StrCat("'", word, "'")));
  }

  // A symbol or input name of a directive.
  static absl::StatusOr<std::string> DirectiveName(LineCursor& c,
                                                   absl::string_view what,
                                                   absl::string_view usage) {
    c.Skip();
    size_t at = c.pos();
    absl::string_view word = c.Word();
    bool identifier = !word.empty() && !absl::ascii_isdigit(word[0]);
    for (char ch : word) {
      identifier = identifier && (absl::ascii_isalnum(ch) || ch == '_');
    }
    c.set_pos(at);
    if (!identifier) return DirectiveError(c, what, usage);
    c.Word();
    return std::string(word);
  }

  // An integer of a directive.
  static absl::StatusOr<int64_t> DirectiveInt(LineCursor& c,
                                              absl::string_view what,
                                              absl::string_view usage) {
    c.Skip();
    size_t at = c.pos();
    int64_t v;
    if (absl::SimpleAtoi(c.Word(), &v)) return v;
    c.set_pos(at);
    return DirectiveError(c, what, usage);
  }

  absl::Status ParseDef(LineCursor& c) {
    RETURN_IF_ERROR(c.Expect("def", "'def'"));
    c.Skip();
    ASSIGN_OR_RETURN(std::string name, c.Identifier("a function name"));
    if (name != "forward")
      return c.Error("expected the function to be 'forward'");
    RETURN_IF_ERROR(c.Expect("(", "'('"));
    c.Skip();
    RETURN_IF_ERROR(c.Expect("self", "'self' as the first parameter"));
    while (true) {
      c.Skip();
      if (c.Accept(")")) break;
      RETURN_IF_ERROR(c.Expect(",", "',' or ')' between parameters"));
      c.Skip();
      if (c.Accept(")")) break;
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string pname, c.Identifier("a parameter name"));
      if (graph_->Find(pname) != nullptr) {
        return c.ErrorAt(at,
                         absl::StrCat("parameter '", pname, "' appears twice"));
      }
      ValueMeta meta;
      c.Skip();
      if (c.Accept(":")) {
        c.Skip();
        ASSIGN_OR_RETURN(meta, Annotation(c, pname));
      }
      graph_->Insert(Node::Kind::kPlaceholder, pname, pname, {}, {},
                     std::move(meta));
    }
    c.Skip();
    RETURN_IF_ERROR(c.Expect(":", "':' after the parameters"));
    c.Skip();
    if (!c.AtEnd()) return c.Error("unexpected text after 'def forward(...):'");
    return absl::OkStatus();
  }

  // `x_1: "f32[3]"; w_1: "f32[4]";`: make_fx's declarations of the
  // flattened inputs (an annotation followed by ';', never by '=').
  static bool IsDeclarationLine(absl::string_view line) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos || line.find('"') < colon) {
      return false;
    }
    size_t open = line.find('"', colon);
    if (open == absl::string_view::npos) return false;
    size_t close = line.find('"', open + 1);
    if (close == absl::string_view::npos) return false;
    absl::string_view rest =
        absl::StripLeadingAsciiWhitespace(line.substr(close + 1));
    return absl::StartsWith(rest, ";");
  }

  absl::Status ParseDeclarations(LineCursor& c) {
    while (true) {
      c.Skip();
      if (c.AtEnd()) return absl::OkStatus();
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string name, c.Identifier("a declared input"));
      c.Skip();
      RETURN_IF_ERROR(c.Expect(":", "':' after a declared input"));
      c.Skip();
      ASSIGN_OR_RETURN(ValueMeta meta, Annotation(c, name));
      if (!declared_.emplace(name, std::move(meta)).second) {
        return c.ErrorAt(at, absl::StrCat("'", name, "' is declared twice"));
      }
      c.Skip();
      RETURN_IF_ERROR(c.Expect(";", "';' after a declaration"));
    }
  }

  // `x_1, params_1, = fx_pytree.tree_flatten_spec([x, params],
  // self._in_spec)`: forward's parameters become the declared inputs.
  absl::Status ParseFlatten(LineCursor& c) {
    if (!graph_->pytree_params.empty() ||
        graph_->nodes().size() != graph_->Placeholders().size()) {
      return c.Error("tree_flatten_spec must come once, before any node");
    }
    std::vector<std::pair<std::string, size_t>> flat;  // name, column
    while (true) {
      c.Skip();
      if (c.Accept("=")) break;
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string name, c.Identifier("a flattened input"));
      flat.push_back({name, at});
      c.Skip();
      if (c.Accept("=")) break;
      RETURN_IF_ERROR(c.Expect(",", "',' or '=' after a flattened input"));
    }
    c.Skip();
    RETURN_IF_ERROR(c.Expect("fx_pytree.tree_flatten_spec(",
                             "fx_pytree.tree_flatten_spec("));
    c.Skip();
    RETURN_IF_ERROR(c.Expect("[", "'['"));
    std::vector<std::string> params;
    for (Node* p : graph_->Placeholders()) params.push_back(p->name());
    for (size_t k = 0;; ++k) {
      c.Skip();
      if (c.Accept("]")) {
        if (k != params.size()) {
          return c.Error("expected forward's parameters, in order");
        }
        break;
      }
      if (k > 0) {
        RETURN_IF_ERROR(c.Expect(",", "',' or ']'"));
        c.Skip();
      }
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string name, c.Identifier("a parameter"));
      if (k >= params.size() || name != params[k]) {
        return c.ErrorAt(at, "expected forward's parameters, in order");
      }
    }
    c.Skip();
    RETURN_IF_ERROR(c.Expect(",", "','"));
    c.Skip();
    RETURN_IF_ERROR(c.Expect("self._in_spec", "self._in_spec"));
    c.Skip();
    RETURN_IF_ERROR(c.Expect(")", "')'"));
    c.Skip();
    if (!c.AtEnd()) return c.Error("unexpected text after tree_flatten_spec");
    for (Node* p : graph_->Placeholders()) {
      if (p->meta().kind != ValueMeta::Kind::kNone) {
        return c.Error(absl::StrCat("parameter '", p->name(),
                                    "' of a pytree forward has an annotation"));
      }
      RETURN_IF_ERROR(graph_->Erase(p));
    }
    for (const auto& [name, at] : flat) {
      if (graph_->Find(name) != nullptr) {
        return c.ErrorAt(at, absl::StrCat("input '", name, "' appears twice"));
      }
      // A leaf make_fx declares nothing for is a Python value it baked into
      // the graph (a float inside a list or dict: an optimizer's lr): an
      // unannotated input, as an unannotated parameter of forward is.
      auto it = declared_.find(name);
      graph_->Insert(Node::Kind::kPlaceholder, name, name, {}, {},
                     it == declared_.end() ? ValueMeta() : it->second);
    }
    graph_->pytree_params = std::move(params);
    return absl::OkStatus();
  }

  // The quoted annotation of `name`; how it is written goes to the style
  // when not in full.
  absl::StatusOr<ValueMeta> Annotation(LineCursor& c, const std::string& name) {
    size_t at = c.pos();
    ASSIGN_OR_RETURN(std::string text, c.QuotedString());
    std::vector<AnnotationStyle> styles;
    absl::StatusOr<ValueMeta> meta = ParseAnnotation(text, &styles);
    if (!meta.ok()) {
      // The annotation's own column, shifted to the line (+1 for the quote).
      absl::string_view msg = meta.status().message();
      int col = 0;
      if (absl::StartsWith(msg, "column ")) {
        absl::string_view rest = msg.substr(7);
        size_t colon = rest.find(':');
        if (absl::SimpleAtoi(rest.substr(0, colon), &col)) {
          return c.ErrorAt(at + col, absl::StrCat("in annotation: ",
                                                  rest.substr(colon + 2)));
        }
      }
      return c.ErrorAt(at, absl::StrCat("in annotation: ", msg));
    }
    for (const AnnotationStyle& s : styles) {
      if (s != AnnotationStyle()) {
        style_.annotations[name] = std::move(styles);
        break;
      }
    }
    return *meta;
  }

  absl::StatusOr<Node*> Defined(LineCursor& c, size_t at,
                                absl::string_view name) {
    Node* n = graph_->Find(name);
    if (n == nullptr) {
      return c.ErrorAt(at, absl::StrCat("'", name, "' is not defined"));
    }
    return n;
  }

  absl::StatusOr<Arg> Value(LineCursor& c, int depth) {
    if (depth > kMaxNesting) return c.Error("argument nested too deeply");
    c.Skip();
    size_t at = c.pos();
    char ch = c.Peek();
    if (ch == '[') {
      c.Accept("[");
      std::vector<Arg> items;
      c.Skip();
      if (!c.Accept("]")) {
        while (true) {
          ASSIGN_OR_RETURN(Arg item, Value(c, depth + 1));
          items.push_back(std::move(item));
          c.Skip();
          if (c.Accept("]")) break;
          RETURN_IF_ERROR(c.Expect(",", "',' or ']' in a list"));
        }
      }
      return Arg::List(std::move(items));
    }
    if (ch == '(') {  // a tuple, e.g. torch.sym_sum((a, b))
      c.Accept("(");
      std::vector<Arg> items;
      c.Skip();
      if (!c.Accept(")")) {
        while (true) {
          ASSIGN_OR_RETURN(Arg item, Value(c, depth + 1));
          items.push_back(std::move(item));
          c.Skip();
          if (c.Accept(")")) break;
          RETURN_IF_ERROR(c.Expect(",", "',' or ')' in a tuple"));
          c.Skip();
          if (c.Accept(")")) break;
        }
      }
      Arg tuple = Arg::List(std::move(items));
      tuple.tuple = true;
      return tuple;
    }
    if (ch == '\'' || ch == '"') {
      ASSIGN_OR_RETURN(std::string s, c.QuotedString());
      return Arg::String(std::move(s));
    }
    if (absl::ascii_isdigit(ch) || ch == '-' || ch == '.') {
      size_t start = c.pos();
      if (ch == '-') c.Accept("-");
      if (c.Accept("inf"))
        return Arg::Float(-std::numeric_limits<double>::infinity());
      while (!c.AtEnd() && (absl::ascii_isalnum(c.Peek()) || c.Peek() == '.' ||
                            ((c.Peek() == '-' || c.Peek() == '+') &&
                             (c.text()[c.pos() - 1] == 'e' ||
                              c.text()[c.pos() - 1] == 'E')))) {
        c.set_pos(c.pos() + 1);
      }
      std::string num(c.text().substr(start, c.pos() - start));
      int64_t iv;
      if (absl::SimpleAtoi(num, &iv)) return Arg::Int(iv);
      double dv;
      if (num.find_first_of(".eE") != std::string::npos &&
          absl::SimpleAtod(num, &dv) && !std::isinf(dv)) {
        return Arg::Float(dv);
      }
      return c.ErrorAt(at, absl::StrCat("bad number '", num, "'"));
    }
    ASSIGN_OR_RETURN(std::string name, c.Dotted("an argument"));
    if (Node* n = graph_->Find(name)) return Arg::Of(n);
    if (name == "None") return Arg::None();
    if (name == "True") return Arg::Bool(true);
    if (name == "False") return Arg::Bool(false);
    if (name == "inf")
      return Arg::Float(std::numeric_limits<double>::infinity());
    if (name == "nan")
      return Arg::Float(std::numeric_limits<double>::quiet_NaN());
    if (name == "device") {
      RETURN_IF_ERROR(c.Expect("(", "'(' after device"));
      c.Skip();
      RETURN_IF_ERROR(c.Expect("type", "type="));
      RETURN_IF_ERROR(c.Expect("=", "'=' after type"));
      c.Skip();
      ASSIGN_OR_RETURN(std::string type, c.QuotedString());
      std::string spelled = type;
      c.Skip();
      if (c.Accept(",")) {
        RETURN_IF_ERROR(c.Expect("index", "index="));
        RETURN_IF_ERROR(c.Expect("=", "'=' after index"));
        c.Skip();
        size_t index_at = c.pos();
        ASSIGN_OR_RETURN(Arg index, Value(c, depth + 1));
        if (index.kind != Arg::Kind::kInt) {
          return c.ErrorAt(index_at, "expected an integer device index");
        }
        spelled = absl::StrCat(type, ":", index.i);
      }
      RETURN_IF_ERROR(c.Expect(")", "')' closing device(...)"));
      absl::StatusOr<Device> d = Device::Parse(spelled);
      if (!d.ok()) return c.ErrorAt(at, d.status().message());
      return Arg::OfDevice(*d);
    }
    if (absl::StartsWith(name, "torch.")) {
      absl::string_view attr = absl::string_view(name).substr(6);
      for (absl::string_view layout : kLayouts) {
        if (attr == layout) return Arg::Layout(std::string(attr));
      }
      for (absl::string_view format : kMemoryFormats) {
        if (attr == format) return Arg::MemoryFormat(std::string(attr));
      }
      absl::StatusOr<DType> d = ParseDType(name);
      if (d.ok()) return Arg::OfDType(*d);
    }
    return c.ErrorAt(at, absl::StrCat("'", name, "' is not defined"));
  }

  absl::Status CallArgs(LineCursor& c, std::vector<Arg>* args,
                        std::vector<std::pair<std::string, Arg>>* kwargs) {
    c.Skip();
    if (c.Accept(")")) return absl::OkStatus();
    while (true) {
      c.Skip();
      // keyword = value ?
      size_t save = c.pos();
      absl::StatusOr<std::string> key = c.Identifier("an argument");
      bool is_kwarg = false;
      if (key.ok()) {
        c.Skip();
        if (c.Peek() == '=' && c.text().substr(c.pos(), 2) != "==") {
          c.Accept("=");
          is_kwarg = true;
        }
      }
      if (!is_kwarg) c.set_pos(save);
      ASSIGN_OR_RETURN(Arg v, Value(c, 0));
      if (is_kwarg) {
        kwargs->push_back({*key, std::move(v)});
      } else {
        if (!kwargs->empty()) {
          return c.ErrorAt(save,
                           "a positional argument after keyword arguments");
        }
        args->push_back(std::move(v));
      }
      c.Skip();
      if (c.Accept(")")) return absl::OkStatus();
      RETURN_IF_ERROR(c.Expect(",", "',' or ')' after an argument"));
    }
  }

  // An operand of a Python operator: a node or a number.
  absl::StatusOr<Arg> Operand(LineCursor& c) {
    c.Skip();
    size_t at = c.pos();
    ASSIGN_OR_RETURN(Arg a, Value(c, 0));
    if (a.kind != Arg::Kind::kNode && a.kind != Arg::Kind::kInt &&
        a.kind != Arg::Kind::kFloat && a.kind != Arg::Kind::kBool) {
      return c.ErrorAt(at, "an operator needs a value or a number");
    }
    return a;
  }

  absl::Status ParseAssign(LineCursor& c) {
    size_t name_at = c.pos();
    ASSIGN_OR_RETURN(std::string name, c.Identifier("a statement"));
    if (graph_->Find(name) != nullptr) {
      return c.ErrorAt(name_at, absl::StrCat("'", name, "' is assigned twice"));
    }
    ValueMeta meta;
    c.Skip();
    if (c.Accept(":")) {
      c.Skip();
      ASSIGN_OR_RETURN(meta, Annotation(c, name));
    }
    RETURN_IF_ERROR(c.Expect("=", "'='"));
    c.Skip();
    size_t rhs_at = c.pos();
    Node::Kind kind = Node::Kind::kCall;
    std::string target;
    std::vector<Arg> args;
    std::vector<std::pair<std::string, Arg>> kwargs;
    if (c.Accept("self.")) {
      kind = Node::Kind::kGetAttr;
      ASSIGN_OR_RETURN(target, c.Dotted("an attribute name"));
    } else if (c.Peek() == '-' && !absl::ascii_isdigit(c.text()[c.pos() + 1])) {
      c.Accept("-");
      ASSIGN_OR_RETURN(Arg a, Operand(c));
      target = "operator.neg";
      args.push_back(std::move(a));
    } else {
      size_t at = c.pos();
      absl::StatusOr<std::string> callee =
          absl::ascii_isalpha(c.Peek()) || c.Peek() == '_'
              ? c.Dotted("an expression")
              : absl::StatusOr<std::string>(absl::NotFoundError(""));
      c.Skip();
      if (callee.ok() && c.Peek() == '(') {
        c.Accept("(");
        target = *callee;
        if (absl::StartsWith(target, "torch.ops.")) target = target.substr(10);
        RETURN_IF_ERROR(CallArgs(c, &args, &kwargs));
      } else if (callee.ok() && c.Peek() == '[') {
        c.Accept("[");
        ASSIGN_OR_RETURN(Node * base, Defined(c, at, *callee));
        c.Skip();
        size_t index_at = c.pos();
        ASSIGN_OR_RETURN(Arg index, Value(c, 0));
        if (index.kind != Arg::Kind::kInt) {
          return c.ErrorAt(index_at, "expected an integer index");
        }
        RETURN_IF_ERROR(c.Expect("]", "']'"));
        target = "getitem";
        args = {Arg::Of(base), index};
      } else {
        c.set_pos(at);
        ASSIGN_OR_RETURN(Arg lhs, Operand(c));
        c.Skip();
        const BinaryOp* op = nullptr;
        for (const BinaryOp& candidate : kBinaryOps) {
          if (c.Accept(candidate.symbol)) {
            op = &candidate;
            break;
          }
        }
        if (op == nullptr) {
          return c.ErrorAt(
              rhs_at, "expected a call, x[i], self.attr or a Python operator");
        }
        ASSIGN_OR_RETURN(Arg rhs, Operand(c));
        target = std::string(op->target);
        args = {std::move(lhs), std::move(rhs)};
      }
    }
    Node* node = graph_->Insert(kind, name, target, std::move(args),
                                std::move(kwargs), std::move(meta));
    // ;  a = b = None
    while (true) {
      c.Skip();
      if (c.AtEnd()) break;
      RETURN_IF_ERROR(c.Expect(";", "';' or the end of the line"));
      // `x = None` frees: checked, not kept (the printer computes them).
      while (true) {
        c.Skip();
        size_t at = c.pos();
        ASSIGN_OR_RETURN(std::string freed, c.Identifier("a name to free"));
        RETURN_IF_ERROR(c.Expect("=", "'=' in 'x = None'"));
        if (freed == "None")
          return c.ErrorAt(at, "expected a name before '= None'");
        ASSIGN_OR_RETURN(Node * n, Defined(c, at, freed));
        (void)n;
        c.Skip();
        if (c.Accept("None")) break;
      }
      (void)node;
    }
    return absl::OkStatus();
  }

  // `(a, (b, c))` inside a returned tuple: its values flattened into
  // `results`, its shape appended to `shape` ('%' for each value).
  absl::Status NestedResult(LineCursor& c, int depth, std::vector<Arg>* results,
                            std::string* shape) {
    if (depth > kMaxNesting) return c.Error("return nested too deeply");
    c.Skip();
    if (!c.Accept("(")) {
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string name, c.Identifier("a returned value"));
      if (name == "None") {
        results->push_back(Arg::None());
      } else {
        ASSIGN_OR_RETURN(Node * n, Defined(c, at, name));
        results->push_back(Arg::Of(n));
      }
      *shape += "%";
      return absl::OkStatus();
    }
    *shape += "(";
    int n = 0;  // elements so far
    while (true) {
      c.Skip();
      if (c.Accept(")")) break;
      if (n > 0) {
        RETURN_IF_ERROR(c.Expect(",", "',' or ')' in a returned tuple"));
        c.Skip();
        if (c.Accept(")")) break;
        *shape += ", ";
      }
      RETURN_IF_ERROR(NestedResult(c, depth + 1, results, shape));
      ++n;
    }
    *shape += n == 1 ? ",)" : ")";
    return absl::OkStatus();
  }

  absl::Status ParseReturn(LineCursor& c) {
    RETURN_IF_ERROR(c.Expect("return", "'return'"));
    c.Skip();
    std::vector<Arg> results;
    // A returned value: a node or None.
    auto one = [&]() -> absl::StatusOr<Arg> {
      size_t at = c.pos();
      ASSIGN_OR_RETURN(std::string name, c.Identifier("a returned value"));
      if (name == "None") return Arg::None();
      ASSIGN_OR_RETURN(Node * n, Defined(c, at, name));
      return Arg::Of(n);
    };
    bool pytree = c.Accept("pytree.tree_unflatten(");
    if (pytree) {
      if (graph_->pytree_params.empty()) {
        return c.Error("pytree.tree_unflatten without tree_flatten_spec");
      }
      c.Skip();
      if (c.Peek() != '[') return c.Error("expected '['");
    }
    bool tuple = c.Peek() == '(';
    if (tuple || c.Peek() == '[') {
      const char* close = tuple ? ")" : "]";
      c.Accept(tuple ? "(" : "[");
      graph_output_style_ = tuple ? OutputStyle::kTuple : OutputStyle::kList;
      c.Skip();
      std::vector<std::string> shapes;  // of each element, '%' for a value
      bool nested = false;
      if (!c.Accept(close)) {
        while (true) {
          c.Skip();
          shapes.emplace_back();
          if (tuple && c.Peek() == '(') {  // a tuple-returning op's result
            nested = true;
            RETURN_IF_ERROR(NestedResult(c, 1, &results, &shapes.back()));
          } else {
            ASSIGN_OR_RETURN(Arg a, one());
            results.push_back(std::move(a));
            shapes.back() = "%";
          }
          c.Skip();
          if (c.Accept(close)) break;
          RETURN_IF_ERROR(c.Expect(
              ",", absl::StrCat("',' or '", close, "' in the returned ",
                                tuple ? "tuple" : "list")));
          c.Skip();
          if (c.Accept(close)) break;
        }
      }
      if (nested) {
        graph_->output_template = absl::StrCat("(", absl::StrJoin(shapes, ", "),
                                               shapes.size() == 1 ? ",)" : ")");
      }
    } else {
      ASSIGN_OR_RETURN(Arg a, one());
      results.push_back(std::move(a));
      graph_output_style_ = OutputStyle::kBare;
    }
    if (pytree) {
      c.Skip();
      RETURN_IF_ERROR(c.Expect(",", "','"));
      c.Skip();
      RETURN_IF_ERROR(c.Expect("self._out_spec", "self._out_spec"));
      c.Skip();
      RETURN_IF_ERROR(c.Expect(")", "')'"));
      graph_output_style_ = OutputStyle::kPytree;
    }
    c.Skip();
    if (!c.AtEnd()) return c.Error("unexpected text after the return");
    const char* target = "output";
    if (graph_output_style_ == OutputStyle::kBare) target = "output_bare";
    if (graph_output_style_ == OutputStyle::kList) target = "output_list";
    if (graph_output_style_ == OutputStyle::kPytree) target = "output_pytree";
    graph_->Insert(Node::Kind::kOutput, graph_->UniqueName("output"), target,
                   {Arg::List(std::move(results))}, {}, {});
    return absl::OkStatus();
  }

  enum class OutputStyle { kTuple, kBare, kList, kPytree };
  // make_fx's declared inputs (pytree form), by name.
  absl::flat_hash_map<std::string, ValueMeta> declared_;
  OutputStyle graph_output_style_ = OutputStyle::kTuple;
  absl::string_view text_;
  std::unique_ptr<Graph> graph_;
  PrintOptions style_;
};

// ---- Printing ----

// Python's repr() of a str: single quotes unless the text has a ' and no ".
std::string Quote(absl::string_view s) {
  bool has_single = s.find('\'') != absl::string_view::npos;
  bool has_double = s.find('"') != absl::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    if (ch == quote || ch == '\\') out += '\\';
    out += ch;
  }
  return out + quote;
}

std::string PrintArg(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kNode:
      return a.node->name();
    case Arg::Kind::kNone:
      return "None";
    case Arg::Kind::kBool:
      return a.b ? "True" : "False";
    case Arg::Kind::kInt:
      return absl::StrCat(a.i);
    case Arg::Kind::kFloat:
      return PyFloat(a.f);
    case Arg::Kind::kString:
      return Quote(a.s);
    case Arg::Kind::kDType:
      return std::string(TorchName(a.dtype));
    case Arg::Kind::kDevice:
      if (a.device.is_cuda()) {
        return absl::StrCat("device(type='cuda', index=", a.device.index, ")");
      }
      return "device(type='cpu')";
    case Arg::Kind::kLayout:
    case Arg::Kind::kMemoryFormat:
      return absl::StrCat("torch.", a.s);
    case Arg::Kind::kList: {
      std::vector<std::string> items;
      for (const Arg& item : a.list) items.push_back(PrintArg(item));
      if (a.tuple) {
        return absl::StrCat("(", absl::StrJoin(items, ", "),
                            items.size() == 1 ? ",)" : ")");
      }
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
  }
  return "?";
}

std::string Annotated(const std::string& name, const ValueMeta& meta,
                      const PrintOptions& options) {
  if (meta.kind == ValueMeta::Kind::kNone) return name;
  auto style = options.annotations.find(name);
  return absl::StrCat(name, ": \"",
                      style == options.annotations.end()
                          ? meta.ToAnnotation()
                          : meta.ToAnnotation(style->second),
                      "\"");
}

std::string Rhs(const Node& n) {
  if (n.kind() == Node::Kind::kGetAttr)
    return absl::StrCat("self.", n.target());
  const std::string& t = n.target();
  if (t == "getitem") {
    return absl::StrCat(PrintArg(n.args()[0]), "[", PrintArg(n.args()[1]), "]");
  }
  if (t == "operator.neg") return absl::StrCat("-", PrintArg(n.args()[0]));
  for (const BinaryOp& op : kBinaryOps) {
    if (t == op.target && n.args().size() == 2) {
      return absl::StrCat(PrintArg(n.args()[0]), " ", op.symbol, " ",
                          PrintArg(n.args()[1]));
    }
  }
  std::vector<std::string> parts;
  for (const Arg& a : n.args()) parts.push_back(PrintArg(a));
  for (const auto& [key, a] : n.kwargs()) {
    parts.push_back(absl::StrCat(key, " = ", PrintArg(a)));
  }
  return absl::StrCat(IsOpTarget(t) ? "torch.ops." : "", t, "(",
                      absl::StrJoin(parts, ", "), ")");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text) {
  ASSIGN_OR_RETURN(ParsedGraph p, GraphParser(text).Parse());
  return std::move(p.graph);
}

absl::StatusOr<ParsedGraph> ParseGraphWithStyle(absl::string_view text) {
  return GraphParser(text).Parse();
}

namespace {

// The `x = None` lines as FX's code generator writes them: after each node,
// the values whose last use it is (in argument order; not those the output
// returns), and the node itself when nothing uses it.
absl::flat_hash_map<const Node*, std::vector<std::string>> Frees(
    const Graph& graph) {
  absl::flat_hash_map<const Node*, const Node*> last_use;
  for (const auto& n : graph.nodes()) {
    for (const Node* in : n->Inputs()) last_use[in] = n.get();
  }
  absl::flat_hash_map<const Node*, std::vector<std::string>> frees;
  for (const auto& n : graph.nodes()) {
    if (n->kind() == Node::Kind::kOutput ||
        n->kind() == Node::Kind::kPlaceholder) {
      continue;
    }
    std::vector<std::string>& names = frees[n.get()];
    absl::flat_hash_set<const Node*> listed;
    for (const Node* in : n->Inputs()) {
      if (last_use[in] == n.get() && listed.insert(in).second) {
        names.push_back(in->name());
      }
    }
    if (n->users().empty()) names.push_back(n->name());
    if (names.empty()) frees.erase(n.get());
  }
  return frees;
}

}  // namespace

std::string PrintGraph(const Graph& graph, const PrintOptions& options) {
  absl::flat_hash_map<const Node*, std::vector<std::string>> frees =
      Frees(graph);
  std::string out;
  const GraphAttributes& a = graph.attributes();
  for (const auto& [symbol, v] : a.hints) {
    absl::StrAppend(&out, "# lathe: hint ", symbol, " ", PyNumber(v), "\n");
  }
  for (const auto& [symbol, r] : a.ranges) {
    absl::StrAppend(&out, "# lathe: range ", symbol, " ", r.lo, " ", r.hi,
                    "\n");
  }
  for (const auto& [input, other] : a.alias_of) {
    absl::StrAppend(&out, "# lathe: alias ", other, " ", input, "\n");
  }
  for (const auto& [input, type] : a.composites) {
    absl::StrAppend(&out, "# lathe: composite ", input, " ", type, "\n");
  }
  for (const std::string& input : a.requires_grad) {
    absl::StrAppend(&out, "# lathe: requires_grad ", input, "\n");
  }
  for (const std::string& input : a.non_leaf) {
    absl::StrAppend(&out, "# lathe: non_leaf ", input, "\n");
  }
  for (const std::string& input : a.constants) {
    absl::StrAppend(&out, "# lathe: constant ", input, "\n");
  }
  for (const std::string& text : a.unknown) {
    absl::StrAppend(&out, "# lathe: ", text, "\n");
  }
  std::string indent = options.wrap_in_class ? "    " : "";
  if (options.wrap_in_class) {
    absl::StrAppend(&out, "class ", options.class_name, "(torch.nn.Module):\n");
  }
  std::string body = indent + "    ";
  std::vector<std::string> params = {"self"};
  if (graph.pytree_params.empty()) {
    for (Node* p : graph.Placeholders())
      params.push_back(Annotated(p->name(), p->meta(), options));
    absl::StrAppend(&out, indent, "def forward(", absl::StrJoin(params, ", "),
                    "):\n");
  } else {
    for (const std::string& p : graph.pytree_params) params.push_back(p);
    absl::StrAppend(&out, indent, "def forward(", absl::StrJoin(params, ", "),
                    "):\n", body);
    std::string flat;
    for (Node* p : graph.Placeholders()) {
      // A leaf make_fx baked in is declared nowhere.
      if (p->meta().kind != ValueMeta::Kind::kNone) {
        absl::StrAppend(&out, Annotated(p->name(), p->meta(), options), "; ");
      }
      absl::StrAppend(&flat, p->name(), ", ");
    }
    out.pop_back();
    absl::StrAppend(&out, "\n\n", body, flat, "= fx_pytree.tree_flatten_spec([",
                    absl::StrJoin(graph.pytree_params, ", "),
                    "], self._in_spec)\n");
  }
  for (const auto& n : graph.nodes()) {
    if (n->kind() == Node::Kind::kPlaceholder) continue;
    if (n->kind() == Node::Kind::kOutput) {
      std::vector<std::string> results;
      for (const Arg& a : n->args()[0].list) results.push_back(PrintArg(a));
      if (!graph.output_template.empty()) {
        std::string text;
        size_t k = 0;
        for (char ch : graph.output_template) {
          if (ch == '%' && k < results.size()) {
            text += results[k++];
          } else {
            text += ch;
          }
        }
        absl::StrAppend(&out, body, "return ", text, "\n");
      } else if (n->target() == "output_bare" && results.size() == 1) {
        absl::StrAppend(&out, body, "return ", results[0], "\n");
      } else if (n->target() == "output_pytree") {
        absl::StrAppend(&out, body, "return pytree.tree_unflatten([",
                        absl::StrJoin(results, ", "), "], self._out_spec)\n");
      } else if (n->target() == "output_list") {
        absl::StrAppend(&out, body, "return [", absl::StrJoin(results, ", "),
                        "]\n");
      } else {
        absl::StrAppend(&out, body, "return (", absl::StrJoin(results, ", "),
                        results.size() == 1 ? ",)" : ")", "\n");
      }
      continue;
    }
    absl::StrAppend(&out, body, Annotated(n->name(), n->meta(), options), " = ",
                    Rhs(*n));
    if (auto f = frees.find(n.get()); f != frees.end()) {
      absl::StrAppend(&out, ";  ", absl::StrJoin(f->second, " = "), " = None");
    }
    out += "\n";
  }
  return out;
}

}  // namespace lathe::ir
