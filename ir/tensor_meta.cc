#include "ir/tensor_meta.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "status_macros.h"
#include "symbolic/parser.h"
#include "symbolic/printer.h"

namespace lathe::ir {

ValueMeta ValueMeta::Tensor(TensorMeta t) {
  ValueMeta m;
  m.kind = Kind::kTensor;
  m.tensor = std::move(t);
  return m;
}

ValueMeta ValueMeta::Sym(symbolic::Expr e) {
  ValueMeta m;
  m.kind = Kind::kSym;
  m.sym = e;
  return m;
}

ValueMeta ValueMeta::Tuple(std::vector<ValueMeta> elements) {
  ValueMeta m;
  m.kind = Kind::kTuple;
  m.elements = std::move(elements);
  return m;
}

namespace {

std::string JoinExprs(const std::vector<symbolic::Expr>& es) {
  std::vector<std::string> parts;
  for (symbolic::Expr e : es) parts.push_back(symbolic::ToString(e));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string TensorMeta::ToAnnotation(AnnotationStyle style) const {
  std::string out = absl::StrCat(ShortName(dtype), "[", JoinExprs(sizes), "]");
  if (style.strides) absl::StrAppend(&out, "[", JoinExprs(strides), "]");
  if (style.device) absl::StrAppend(&out, device.ToString());
  return out;
}

bool TensorMeta::IsContiguous() const {
  symbolic::Expr expected = symbolic::Int(1);
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes[d].is_constant(1)) continue;
    if (sizes[d].is_constant(0)) return true;
    if (strides[d] != expected) return false;
    expected = symbolic::Mul(expected, sizes[d]);
  }
  return true;
}

std::vector<StorageId> ValueMeta::Storages() const {
  std::vector<StorageId> out;
  std::function<void(const ValueMeta&)> walk = [&](const ValueMeta& m) {
    if (m.kind == Kind::kTensor && m.tensor.storage != kUnknownStorage &&
        std::find(out.begin(), out.end(), m.tensor.storage) == out.end()) {
      out.push_back(m.tensor.storage);
    }
    for (const ValueMeta& e : m.elements) walk(e);
  };
  walk(*this);
  return out;
}

std::vector<symbolic::Expr> ValueMeta::Symbols() const {
  std::vector<symbolic::Expr> out;
  auto add = [&](symbolic::Expr e) {
    for (symbolic::Expr s : symbolic::FreeSymbols(e)) out.push_back(s);
  };
  std::function<void(const ValueMeta&)> walk = [&](const ValueMeta& m) {
    switch (m.kind) {
      case Kind::kTensor:
        for (const symbolic::Expr& e : m.tensor.sizes) add(e);
        for (const symbolic::Expr& e : m.tensor.strides) add(e);
        add(m.tensor.storage_offset);
        break;
      case Kind::kSym:
        add(m.sym);
        break;
      case Kind::kTuple:
        for (const ValueMeta& e : m.elements) walk(e);
        break;
      case Kind::kNone:
        break;
    }
  };
  walk(*this);
  return out;
}

namespace {

// `m`'s annotation, its tensors styled from styles[*next] on (advancing
// *next past each).
std::string Annotation(const ValueMeta& m,
                       absl::Span<const AnnotationStyle> styles, size_t* next) {
  switch (m.kind) {
    case ValueMeta::Kind::kNone:
      return "";
    case ValueMeta::Kind::kTensor: {
      size_t k = (*next)++;
      return m.tensor.ToAnnotation(k < styles.size() ? styles[k]
                                                     : AnnotationStyle());
    }
    case ValueMeta::Kind::kSym:
      return absl::StrCat("Sym(", symbolic::ToString(m.sym), ")");
    case ValueMeta::Kind::kTuple: {
      std::vector<std::string> parts;
      for (const ValueMeta& e : m.elements) {
        parts.push_back(Annotation(e, styles, next));
      }
      return absl::StrCat("(", absl::StrJoin(parts, ", "),
                          m.elements.size() == 1 ? ",)" : ")");
    }
  }
  return "";
}

}  // namespace

std::string ValueMeta::ToAnnotation(
    absl::Span<const AnnotationStyle> styles) const {
  size_t next = 0;
  return Annotation(*this, styles, &next);
}

namespace {

class AnnotationParser {
 public:
  explicit AnnotationParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<ValueMeta> Parse() {
    ASSIGN_OR_RETURN(ValueMeta m, One(0));
    Skip();
    if (pos_ != text_.size())
      return Error("unexpected text after the annotation");
    return m;
  }

  // How each tensor parsed so far is written, in order.
  const std::vector<AnnotationStyle>& styles() const { return styles_; }

 private:
  absl::Status Error(absl::string_view message, size_t at) const {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", at + 1, ": ", message));
  }
  absl::Status Error(absl::string_view message) const {
    return Error(message, pos_);
  }
  void Skip() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool Accept(absl::string_view s) {
    if (text_.substr(pos_, s.size()) == s) {
      pos_ += s.size();
      return true;
    }
    return false;
  }

  // The text up to the matching close bracket, at depth 0.
  absl::StatusOr<absl::string_view> Balanced(char open, char close) {
    size_t start = pos_;
    int depth = 1;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == open) ++depth;
      if (c == close && --depth == 0) {
        absl::string_view inner = text_.substr(start, pos_ - start);
        ++pos_;
        return inner;
      }
      ++pos_;
    }
    return Error(absl::StrCat("missing '", std::string(1, close), "'"),
                 start - 1);
  }

  // Comma-separated expressions of a size or stride list.
  absl::StatusOr<std::vector<symbolic::Expr>> Exprs(absl::string_view inner,
                                                    size_t at) {
    std::vector<symbolic::Expr> out;
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
      if (i < inner.size() && (inner[i] == '(' || inner[i] == '[')) ++depth;
      if (i < inner.size() && (inner[i] == ')' || inner[i] == ']')) --depth;
      if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
        absl::string_view piece = inner.substr(start, i - start);
        while (!piece.empty() && piece.front() == ' ') {  // point past spaces
          piece.remove_prefix(1);
          ++start;
        }
        if (absl::StripAsciiWhitespace(piece).empty()) {
          if (i == inner.size() && out.empty()) break;  // "[]": 0-d
          return Error("empty dimension", at + start);
        }
        absl::StatusOr<symbolic::Expr> e = symbolic::ParseExpr(piece);
        if (!e.ok()) {
          return Error(absl::StrCat("in '", absl::StripAsciiWhitespace(piece),
                                    "': ", e.status().message()),
                       at + start);
        }
        if (!e->is_int()) {
          return Error(
              absl::StrCat("dimension '", absl::StripAsciiWhitespace(piece),
                           "' is not an integer"),
              at + start);
        }
        out.push_back(*e);
        start = i + 1;
      }
    }
    return out;
  }

  absl::StatusOr<ValueMeta> One(int depth) {
    if (depth > 16) return Error("annotation nested too deeply");
    Skip();
    size_t at = pos_;
    if (Accept("(")) {
      std::vector<ValueMeta> elements;
      Skip();
      if (Accept(")")) return ValueMeta::Tuple({});
      while (true) {
        ASSIGN_OR_RETURN(ValueMeta e, One(depth + 1));
        elements.push_back(std::move(e));
        Skip();
        if (Accept(")")) break;
        if (!Accept(","))
          return Error("expected ',' or ')' in a tuple annotation");
        Skip();
        if (Accept(")")) break;
      }
      return ValueMeta::Tuple(std::move(elements));
    }
    if (Accept("Sym(")) {
      size_t inner_at = pos_;
      ASSIGN_OR_RETURN(absl::string_view inner, Balanced('(', ')'));
      absl::StatusOr<symbolic::Expr> e = symbolic::ParseExpr(inner);
      if (!e.ok()) {
        return Error(absl::StrCat("in Sym(...): ", e.status().message()),
                     inner_at);
      }
      return ValueMeta::Sym(*e);
    }
    // dtype[sizes][strides]device
    size_t name_start = pos_;
    while (pos_ < text_.size() && absl::ascii_isalnum(text_[pos_])) ++pos_;
    absl::string_view dtype_name = text_.substr(name_start, pos_ - name_start);
    if (dtype_name.empty())
      return Error("expected a tensor or Sym(...) annotation", at);
    absl::StatusOr<DType> dtype = ParseDType(dtype_name);
    if (!dtype.ok()) return Error(dtype.status().message(), at);
    TensorMeta t;
    AnnotationStyle style;
    t.dtype = *dtype;
    if (!Accept("[")) return Error("expected '[' and the sizes");
    size_t sizes_at = pos_;
    ASSIGN_OR_RETURN(absl::string_view sizes, Balanced('[', ']'));
    ASSIGN_OR_RETURN(t.sizes, Exprs(sizes, sizes_at));
    if (Accept("[")) {
      size_t strides_at = pos_;
      ASSIGN_OR_RETURN(absl::string_view strides, Balanced('[', ']'));
      ASSIGN_OR_RETURN(t.strides, Exprs(strides, strides_at));
      if (t.strides.size() != t.sizes.size()) {
        return Error(absl::StrCat(t.sizes.size(), " sizes but ",
                                  t.strides.size(), " strides"),
                     strides_at - 1);
      }
    } else {
      style.strides = false;
      // Contiguous strides through the sizes.
      t.strides.assign(t.sizes.size(), symbolic::Int(1));
      for (int d = static_cast<int>(t.sizes.size()) - 2; d >= 0; --d) {
        t.strides[d] = symbolic::Mul(t.strides[d + 1], t.sizes[d + 1]);
      }
    }
    size_t device_start = pos_;
    while (pos_ < text_.size() &&
           (absl::ascii_isalnum(text_[pos_]) || text_[pos_] == ':')) {
      ++pos_;
    }
    absl::string_view device = text_.substr(device_start, pos_ - device_start);
    if (device.empty()) {
      style.device = false;
    } else {
      absl::StatusOr<Device> d = Device::Parse(device);
      if (!d.ok()) return Error(d.status().message(), device_start);
      t.device = *d;
    }
    styles_.push_back(style);
    return ValueMeta::Tensor(std::move(t));
  }

  absl::string_view text_;
  size_t pos_ = 0;
  std::vector<AnnotationStyle> styles_;
};

}  // namespace

absl::StatusOr<ValueMeta> ParseAnnotation(
    absl::string_view text, std::vector<AnnotationStyle>* styles) {
  AnnotationParser parser(text);
  ASSIGN_OR_RETURN(ValueMeta m, parser.Parse());
  if (styles != nullptr) *styles = parser.styles();
  return m;
}

}  // namespace lathe::ir
