#include "symbolic/parser.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::symbolic {

Expr DefaultSymbol(absl::string_view name) {
  if (absl::StartsWith(name, "zf") || absl::StartsWith(name, "zuf")) {
    return Symbol(name, SymbolType::kFloat);
  }
  if (name.size() > 1 && name[0] == 's' &&
      std::all_of(name.begin() + 1, name.end(),
                  [](char c) { return absl::ascii_isdigit(c); })) {
    return Symbol(name, SymbolType::kInt, {.positive = true});
  }
  return Symbol(name, SymbolType::kInt);
}

namespace {

constexpr int kMaxDepth = 200;

enum class Tok {
  kEnd,
  kInt,
  kFloat,
  kName,
  kLParen,
  kRParen,
  kComma,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kSlashSlash,
  kPercent,
  kStarStar,
  kEqEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAmp,
  kPipe,
  kTilde,
};

struct Token {
  Tok kind;
  absl::string_view text;
  int column;  // 1-based
};

class Parser {
 public:
  Parser(absl::string_view text, absl::Span<const Expr> symbols) : text_(text) {
    for (Expr s : symbols) known_[s.name()] = s;
  }

  absl::StatusOr<Expr> Parse() {
    RETURN_IF_ERROR(Lex());
    ASSIGN_OR_RETURN(Expr e, ParseOr());
    if (Peek().kind != Tok::kEnd) {
      return Error(Peek(), absl::StrCat("unexpected '", Peek().text, "'"));
    }
    return e;
  }

 private:
  // ---- Lexing ----
  absl::Status Lex() {
    size_t i = 0;
    while (i < text_.size()) {
      char c = text_[i];
      int column = static_cast<int>(i) + 1;
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
        continue;
      }
      if (absl::ascii_isdigit(c) || (c == '.' && i + 1 < text_.size() &&
                                     absl::ascii_isdigit(text_[i + 1]))) {
        size_t j = i;
        bool is_float = false;
        while (j < text_.size() && absl::ascii_isdigit(text_[j])) ++j;
        if (j < text_.size() && text_[j] == '.') {
          is_float = true;
          ++j;
          while (j < text_.size() && absl::ascii_isdigit(text_[j])) ++j;
        }
        if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
          size_t k = j + 1;
          if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
          if (k < text_.size() && absl::ascii_isdigit(text_[k])) {
            is_float = true;
            j = k;
            while (j < text_.size() && absl::ascii_isdigit(text_[j])) ++j;
          }
        }
        tokens_.push_back({is_float ? Tok::kFloat : Tok::kInt,
                           text_.substr(i, j - i), column});
        i = j;
        continue;
      }
      if (absl::ascii_isalpha(c) || c == '_') {
        size_t j = i;
        // Dotted names: math.floor, torch.sym_float.
        while (j < text_.size() &&
               (absl::ascii_isalnum(text_[j]) || text_[j] == '_' ||
                (text_[j] == '.' && j + 1 < text_.size() &&
                 (absl::ascii_isalpha(text_[j + 1]) || text_[j + 1] == '_')))) {
          ++j;
        }
        tokens_.push_back({Tok::kName, text_.substr(i, j - i), column});
        i = j;
        continue;
      }
      auto two = text_.substr(i, 2);
      static const std::pair<absl::string_view, Tok> kTwo[] = {
          {"//", Tok::kSlashSlash}, {"**", Tok::kStarStar}, {"==", Tok::kEqEq},
          {"!=", Tok::kNe},         {"<=", Tok::kLe},       {">=", Tok::kGe}};
      bool matched = false;
      for (const auto& [spelling, kind] : kTwo) {
        if (two == spelling) {
          tokens_.push_back({kind, two, column});
          i += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      Tok kind;
      switch (c) {
        case '(':
          kind = Tok::kLParen;
          break;
        case ')':
          kind = Tok::kRParen;
          break;
        case ',':
          kind = Tok::kComma;
          break;
        case '+':
          kind = Tok::kPlus;
          break;
        case '-':
          kind = Tok::kMinus;
          break;
        case '*':
          kind = Tok::kStar;
          break;
        case '/':
          kind = Tok::kSlash;
          break;
        case '%':
          kind = Tok::kPercent;
          break;
        case '<':
          kind = Tok::kLt;
          break;
        case '>':
          kind = Tok::kGt;
          break;
        case '&':
          kind = Tok::kAmp;
          break;
        case '|':
          kind = Tok::kPipe;
          break;
        case '~':
          kind = Tok::kTilde;
          break;
        default:
          return absl::InvalidArgumentError(absl::StrCat(
              "column ", column, ": unexpected character ",
              absl::ascii_isprint(c)
                  ? absl::StrCat("'", absl::string_view(&text_[i], 1), "'")
                  : absl::StrCat("byte ", static_cast<int>(
                                              static_cast<unsigned char>(c)))));
      }
      tokens_.push_back({kind, text_.substr(i, 1), column});
      ++i;
    }
    tokens_.push_back(
        {Tok::kEnd, "end of input", static_cast<int>(text_.size()) + 1});
    return absl::OkStatus();
  }

  // ---- Helpers ----
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() {
    return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_];
  }
  bool Accept(Tok kind) {
    if (Peek().kind != kind) return false;
    Next();
    return true;
  }
  absl::Status Error(const Token& at, absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", at.column, ": ", message));
  }
  absl::Status Expect(Tok kind, absl::string_view what) {
    if (Accept(kind)) return absl::OkStatus();
    return Error(Peek(),
                 absl::StrCat("expected ", what, ", got '", Peek().text, "'"));
  }
  // Prefixes a constructor's error with the operator's column.
  absl::StatusOr<Expr> At(const Token& op, absl::StatusOr<Expr> r) {
    if (r.ok()) return r;
    return Error(op, r.status().message());
  }
  absl::Status NeedNumbers(const Token& op, std::initializer_list<Expr> args) {
    for (Expr a : args) {
      if (a.is_bool()) {
        return Error(op, absl::StrCat("'", op.text,
                                      "' needs numeric operands, got a "
                                      "boolean"));
      }
    }
    return absl::OkStatus();
  }
  absl::Status NeedBools(const Token& op, std::initializer_list<Expr> args) {
    for (Expr a : args) {
      if (!a.is_bool()) {
        return Error(op,
                     absl::StrCat("'", op.text, "' needs boolean operands"));
      }
    }
    return absl::OkStatus();
  }

  struct DepthGuard {
    explicit DepthGuard(int* depth) : depth(depth) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };

  // ---- Grammar (Python precedence, loosest first) ----
  absl::StatusOr<Expr> ParseOr() {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) {
      return Error(Peek(), "expression nested too deeply");
    }
    ASSIGN_OR_RETURN(Expr lhs, ParseAnd());
    while (Peek().kind == Tok::kPipe ||
           (Peek().kind == Tok::kName && Peek().text == "or")) {
      Token op = Next();
      ASSIGN_OR_RETURN(Expr rhs, ParseAnd());
      RETURN_IF_ERROR(NeedBools(op, {lhs, rhs}));
      lhs = Or(lhs, rhs);
    }
    return lhs;
  }

  absl::StatusOr<Expr> ParseAnd() {
    ASSIGN_OR_RETURN(Expr lhs, ParseNot());
    while (Peek().kind == Tok::kAmp ||
           (Peek().kind == Tok::kName && Peek().text == "and")) {
      Token op = Next();
      ASSIGN_OR_RETURN(Expr rhs, ParseNot());
      RETURN_IF_ERROR(NeedBools(op, {lhs, rhs}));
      lhs = And(lhs, rhs);
    }
    return lhs;
  }

  absl::StatusOr<Expr> ParseNot() {
    if (Peek().kind == Tok::kTilde ||
        (Peek().kind == Tok::kName && Peek().text == "not")) {
      Token op = Next();
      DepthGuard guard(&depth_);
      if (depth_ > kMaxDepth) return Error(op, "expression nested too deeply");
      ASSIGN_OR_RETURN(Expr a, ParseNot());
      RETURN_IF_ERROR(NeedBools(op, {a}));
      return Not(a);
    }
    return ParseComparison();
  }

  absl::StatusOr<Expr> ParseComparison() {
    ASSIGN_OR_RETURN(Expr lhs, ParseSum());
    std::vector<Expr> links;  // Python chains: a < b < c
    while (true) {
      Tok k = Peek().kind;
      if (k != Tok::kEqEq && k != Tok::kNe && k != Tok::kLt && k != Tok::kLe &&
          k != Tok::kGt && k != Tok::kGe) {
        break;
      }
      Token op = Next();
      ASSIGN_OR_RETURN(Expr rhs, ParseSum());
      if (lhs.is_bool() != rhs.is_bool() ||
          (lhs.is_bool() && k != Tok::kEqEq && k != Tok::kNe)) {
        return Error(
            op, absl::StrCat("cannot compare a boolean with '", op.text, "'"));
      }
      switch (k) {
        case Tok::kEqEq:
          links.push_back(Eq(lhs, rhs));
          break;
        case Tok::kNe:
          links.push_back(Ne(lhs, rhs));
          break;
        case Tok::kLt:
          links.push_back(Lt(lhs, rhs));
          break;
        case Tok::kLe:
          links.push_back(Le(lhs, rhs));
          break;
        case Tok::kGt:
          links.push_back(Gt(lhs, rhs));
          break;
        default:
          links.push_back(Ge(lhs, rhs));
          break;
      }
      lhs = rhs;
    }
    if (links.empty()) return lhs;
    return And(links);
  }

  absl::StatusOr<Expr> ParseSum() {
    ASSIGN_OR_RETURN(Expr lhs, ParseTerm());
    // Collect a long sum into one Add (linear, no deep recursion).
    std::vector<Expr> terms = {lhs};
    while (Peek().kind == Tok::kPlus || Peek().kind == Tok::kMinus) {
      Token op = Next();
      ASSIGN_OR_RETURN(Expr rhs, ParseTerm());
      RETURN_IF_ERROR(NeedNumbers(op, {terms.front(), rhs}));
      terms.push_back(op.kind == Tok::kPlus ? rhs : Neg(rhs));
    }
    if (terms.size() == 1) return terms[0];
    return Add(terms);
  }

  // A product is built from all its factors at once, and a leading unary
  // minus is a factor -1, so "-(a + b)*c" reads back as the product it was
  // printed from (building it pairwise would distribute -1 over a + b first).
  absl::StatusOr<Expr> ParseTerm() {
    std::vector<Expr> factors;
    Token first = Peek();
    RETURN_IF_ERROR(ParseFactors(&factors));
    auto product = [&](const Token& at) -> absl::StatusOr<Expr> {
      if (factors.size() > 1) {
        for (Expr f : factors) {
          if (f.is_bool()) {
            return Error(at, "'*' needs numeric operands, got a boolean");
          }
        }
      }
      return factors.size() == 1 ? factors[0] : Mul(factors);
    };
    while (true) {
      Tok k = Peek().kind;
      if (k == Tok::kStar) {
        Token op = Next();
        RETURN_IF_ERROR(ParseFactors(&factors));
        (void)op;
        continue;
      }
      if (k != Tok::kSlash && k != Tok::kSlashSlash && k != Tok::kPercent) {
        return product(first);
      }
      Token op = Next();
      ASSIGN_OR_RETURN(Expr lhs, product(op));
      ASSIGN_OR_RETURN(Expr rhs, ParseUnary());
      RETURN_IF_ERROR(NeedNumbers(op, {lhs, rhs}));
      Expr result;
      if (k == Tok::kSlash) {
        ASSIGN_OR_RETURN(result, At(op, lhs.is_int() && rhs.is_int()
                                            ? IntTrueDiv(lhs, rhs)
                                            : FloatTrueDiv(lhs, rhs)));
      } else if (!lhs.is_int() || !rhs.is_int()) {
        return Error(
            op, absl::StrCat("'", op.text, "' of floats is not supported"));
      } else if (k == Tok::kSlashSlash) {
        ASSIGN_OR_RETURN(result, At(op, FloorDiv(lhs, rhs)));
      } else {
        ASSIGN_OR_RETURN(result,
                         At(op, lhs.is_nonnegative() && rhs.is_positive()
                                    ? Mod(lhs, rhs)
                                    : PythonMod(lhs, rhs)));
      }
      factors = {result};
    }
  }

  // Appends the factors of one unary operand: -1 for each leading minus.
  absl::Status ParseFactors(std::vector<Expr>* factors) {
    int minus = 0;
    std::vector<Token> signs;
    while (Peek().kind == Tok::kMinus || Peek().kind == Tok::kPlus) {
      signs.push_back(Next());
      if (signs.back().kind == Tok::kMinus) ++minus;
      if (signs.size() > kMaxDepth) {
        return Error(signs.back(), "expression nested too deeply");
      }
    }
    ASSIGN_OR_RETURN(Expr operand, ParsePower());
    if (!signs.empty() && operand.is_bool()) {
      return Error(signs.back(), absl::StrCat("'", signs.back().text,
                                              "' needs numeric operands, got "
                                              "a boolean"));
    }
    if (minus % 2 == 1)
      factors->push_back(operand.is_float() ? Float(-1) : Int(-1));
    factors->push_back(operand);
    return absl::OkStatus();
  }

  absl::StatusOr<Expr> ParseUnary() {
    std::vector<Expr> factors;
    RETURN_IF_ERROR(ParseFactors(&factors));
    return factors.size() == 1 ? factors[0] : Mul(factors);
  }

  absl::StatusOr<Expr> ParsePower() {
    ASSIGN_OR_RETURN(Expr base, ParseAtom());
    if (Peek().kind != Tok::kStarStar) return base;
    Token op = Next();
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Error(op, "expression nested too deeply");
    ASSIGN_OR_RETURN(Expr exp, ParseUnary());  // right-associative
    RETURN_IF_ERROR(NeedNumbers(op, {base, exp}));
    if (base.is_int() && exp.is_int()) return At(op, PowByNatural(base, exp));
    return At(op, FloatPow(base, exp));
  }

  absl::StatusOr<std::vector<Expr>> ParseArgs(const Token& name) {
    std::vector<Expr> args;
    if (Accept(Tok::kRParen)) return args;
    while (true) {
      ASSIGN_OR_RETURN(Expr a, ParseOr());
      args.push_back(a);
      if (Accept(Tok::kRParen)) return args;
      RETURN_IF_ERROR(Expect(
          Tok::kComma, absl::StrCat("',' or ')' in arguments of ", name.text)));
    }
  }

  absl::StatusOr<Expr> ParsePiecewise(const Token& name) {
    std::vector<std::pair<Expr, Expr>> cases;
    do {
      RETURN_IF_ERROR(Expect(Tok::kLParen, "'(' opening a Piecewise case"));
      ASSIGN_OR_RETURN(Expr value, ParseOr());
      RETURN_IF_ERROR(Expect(Tok::kComma, "',' in a Piecewise case"));
      Token cond_at = Peek();
      ASSIGN_OR_RETURN(Expr cond, ParseOr());
      if (!cond.is_bool()) {
        return Error(cond_at, "a Piecewise condition must be boolean");
      }
      RETURN_IF_ERROR(Expect(Tok::kRParen, "')' closing a Piecewise case"));
      cases.push_back({value, cond});
    } while (Accept(Tok::kComma));
    RETURN_IF_ERROR(Expect(Tok::kRParen, "')' closing Piecewise"));
    return At(name, Piecewise(cases));
  }

  absl::StatusOr<Expr> ParseAtom() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kInt: {
        Token tok = Next();
        int64_t v;
        if (!absl::SimpleAtoi(tok.text, &v)) {
          return Error(tok, absl::StrCat("integer literal ", tok.text,
                                         " does not fit in 64 bits"));
        }
        return Int(v);
      }
      case Tok::kFloat: {
        Token tok = Next();
        std::string s(tok.text);
        errno = 0;
        double v = std::strtod(s.c_str(), nullptr);
        if (errno == ERANGE && std::isinf(v)) {
          return Error(tok, absl::StrCat("float literal ", tok.text,
                                         " is out of range"));
        }
        return Float(v);
      }
      case Tok::kLParen: {
        Next();
        DepthGuard guard(&depth_);
        ASSIGN_OR_RETURN(Expr e, ParseOr());
        RETURN_IF_ERROR(Expect(Tok::kRParen, "')'"));
        return e;
      }
      case Tok::kName:
        return ParseName();
      default:
        break;
    }
    {
      return Error(t,
                   absl::StrCat("expected an expression, got '", t.text, "'"));
    }
  }

  absl::StatusOr<Expr> ParseName() {
    Token name = Next();
    absl::string_view n = name.text;
    if (Peek().kind != Tok::kLParen) {
      if (n == "True") return Bool(true);
      if (n == "False") return Bool(false);
      if (n == "int_oo") return IntInfinity(1);
      if (n == "oo" || n == "inf" || n == "math.inf") {
        return Float(std::numeric_limits<double>::infinity());
      }
      if (n == "nan" || n == "math.nan") {
        return Float(std::numeric_limits<double>::quiet_NaN());
      }
      if (n == "and" || n == "or" || n == "not" || n.find('.') != n.npos) {
        return Error(name, absl::StrCat("unexpected '", n, "'"));
      }
      auto it = known_.find(n);
      if (it != known_.end()) return it->second;
      return DefaultSymbol(n);
    }
    Next();  // '('
    if (n == "Piecewise") return ParsePiecewise(name);
    ASSIGN_OR_RETURN(std::vector<Expr> a, ParseArgs(name));
    return Apply(name, a);
  }

  absl::StatusOr<Expr> Apply(const Token& name, const std::vector<Expr>& a) {
    absl::string_view n = name.text;
    auto arity = [&](size_t want) -> absl::Status {
      if (a.size() == want) return absl::OkStatus();
      return Error(name,
                   absl::StrCat(n, " takes ", want, " argument",
                                want == 1 ? "" : "s", ", got ", a.size()));
    };
    auto at_least_one = [&]() -> absl::Status {
      if (!a.empty()) return absl::OkStatus();
      return Error(name, absl::StrCat(n, " needs at least one argument"));
    };
    auto ints = [&]() -> absl::Status {
      for (Expr x : a) {
        if (!x.is_int()) {
          return Error(name, absl::StrCat(n, " takes integer arguments"));
        }
      }
      return absl::OkStatus();
    };
    auto numbers = [&]() -> absl::Status {
      for (Expr x : a) {
        if (x.is_bool()) {
          return Error(name, absl::StrCat(n, " takes numeric arguments"));
        }
      }
      return absl::OkStatus();
    };
    auto bools = [&]() -> absl::Status {
      for (Expr x : a) {
        if (!x.is_bool()) {
          return Error(name, absl::StrCat(n, " takes boolean arguments"));
        }
      }
      return absl::OkStatus();
    };
    using Binary = absl::StatusOr<Expr> (*)(Expr, Expr);
    static const auto* kBinary =
        new absl::flat_hash_map<absl::string_view, Binary>{
            {"FloorDiv", &FloorDiv},         {"CleanDiv", &CleanDiv},
            {"CeilDiv", &CeilDiv},           {"Mod", &Mod},
            {"PythonMod", &PythonMod},       {"IntTrueDiv", &IntTrueDiv},
            {"PowByNatural", &PowByNatural},
        };
    if (auto it = kBinary->find(n); it != kBinary->end()) {
      RETURN_IF_ERROR(arity(2));
      RETURN_IF_ERROR(ints());
      return At(name, it->second(a[0], a[1]));
    }
    if (n == "FloatTrueDiv" || n == "FloatPow") {
      RETURN_IF_ERROR(arity(2));
      RETURN_IF_ERROR(numbers());
      return At(name, n == "FloatPow" ? FloatPow(a[0], a[1])
                                      : FloatTrueDiv(a[0], a[1]));
    }
    if (n == "ModularIndexing") {
      RETURN_IF_ERROR(arity(3));
      RETURN_IF_ERROR(ints());
      return At(name, ModularIndexing(a[0], a[1], a[2]));
    }
    if (n == "Min" || n == "Max" || n == "min" || n == "max" ||
        n == "sym_min" || n == "sym_max" || n == "torch.sym_min" ||
        n == "torch.sym_max") {
      RETURN_IF_ERROR(at_least_one());
      RETURN_IF_ERROR(numbers());
      bool is_max = absl::EndsWithIgnoreCase(n, "max");
      return is_max ? Max(a) : Min(a);
    }
    if (n == "ToFloat" || n == "float" || n == "sym_float" ||
        n == "torch.sym_float") {
      RETURN_IF_ERROR(arity(1));
      RETURN_IF_ERROR(numbers());
      return ToFloat(a[0]);
    }
    using Unary = absl::StatusOr<Expr> (*)(Expr);
    static const auto* kToInt =
        new absl::flat_hash_map<absl::string_view, Unary>{
            {"TruncToInt", &TruncToInt},    {"int", &TruncToInt},
            {"math.trunc", &TruncToInt},    {"sym_int", &TruncToInt},
            {"torch.sym_int", &TruncToInt}, {"FloorToInt", &FloorToInt},
            {"math.floor", &FloorToInt},    {"CeilToInt", &CeilToInt},
            {"math.ceil", &CeilToInt},      {"RoundToInt", &RoundToInt},
            {"round", &RoundToInt},
        };
    if (auto it = kToInt->find(n); it != kToInt->end()) {
      RETURN_IF_ERROR(arity(1));
      RETURN_IF_ERROR(numbers());
      return At(name, it->second(a[0]));
    }
    static const auto* kFns =
        new absl::flat_hash_map<absl::string_view, UnaryFn>{
            {"sqrt", UnaryFn::kSqrt}, {"exp", UnaryFn::kExp},
            {"log", UnaryFn::kLog},   {"log2", UnaryFn::kLog2},
            {"sin", UnaryFn::kSin},   {"cos", UnaryFn::kCos},
            {"tan", UnaryFn::kTan},   {"asin", UnaryFn::kAsin},
            {"acos", UnaryFn::kAcos}, {"atan", UnaryFn::kAtan},
            {"sinh", UnaryFn::kSinh}, {"cosh", UnaryFn::kCosh},
            {"tanh", UnaryFn::kTanh},
        };
    for (absl::string_view prefix :
         {"OpaqueUnaryFn_", "math.", "torch._sym_"}) {
      if (absl::StartsWith(n, prefix)) {
        auto it = kFns->find(n.substr(prefix.size()));
        if (it != kFns->end()) {
          RETURN_IF_ERROR(arity(1));
          RETURN_IF_ERROR(numbers());
          return OpaqueUnary(it->second, a[0]);
        }
      }
    }
    if (n == "Eq" || n == "Ne") {
      RETURN_IF_ERROR(arity(2));
      if (a[0].is_bool() != a[1].is_bool()) {
        return Error(name,
                     absl::StrCat(n, " compares a boolean with a number"));
      }
      return n == "Eq" ? Eq(a[0], a[1]) : Ne(a[0], a[1]);
    }
    if (n == "Lt" || n == "Le" || n == "Gt" || n == "Ge" ||
        n == "StrictLessThan" || n == "LessThan" || n == "StrictGreaterThan" ||
        n == "GreaterThan") {
      RETURN_IF_ERROR(arity(2));
      RETURN_IF_ERROR(numbers());
      if (n == "Lt" || n == "StrictLessThan") return Lt(a[0], a[1]);
      if (n == "Le" || n == "LessThan") return Le(a[0], a[1]);
      if (n == "Gt" || n == "StrictGreaterThan") return Gt(a[0], a[1]);
      return Ge(a[0], a[1]);
    }
    if (n == "And" || n == "Or") {
      RETURN_IF_ERROR(at_least_one());
      RETURN_IF_ERROR(bools());
      return n == "And" ? And(a) : Or(a);
    }
    if (n == "Not") {
      RETURN_IF_ERROR(arity(1));
      RETURN_IF_ERROR(bools());
      return Not(a[0]);
    }
    return Error(name, absl::StrCat("unknown function '", n, "'"));
  }

  absl::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  absl::flat_hash_map<absl::string_view, Expr> known_;
};

}  // namespace

absl::StatusOr<Expr> ParseExpr(absl::string_view text,
                               absl::Span<const Expr> symbols) {
  return Parser(text, symbols).Parse();
}

}  // namespace lathe::symbolic
