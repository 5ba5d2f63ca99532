#include "runtime/arrange_arguments.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/compiled_function.h"
#include "runtime/copy.h"
#include "status_macros.h"

namespace lathe {

namespace {

// The values the annotations' symbols take ("s0" -> 4).
using SymbolValues = absl::flat_hash_map<std::string, int64_t>;

// A tensor annotation's sizes and strides as text.
struct AnnotatedDims {
  std::vector<std::string> sizes, strides;
};

// The bracketed list at `*at` of `text` ("[s0, 16]"), split at its
// top-level commas; `*at` moves past it.
std::optional<std::vector<std::string>> BracketList(absl::string_view text,
                                                    size_t* at) {
  if (*at >= text.size() || text[*at] != '[') return std::nullopt;
  std::vector<std::string> items;
  int depth = 0;
  size_t start = ++*at;
  for (; *at < text.size(); ++*at) {
    char c = text[*at];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth > 0) {
      --depth;
      continue;
    }
    if ((c == ',' && depth == 0) || c == ']') {
      absl::string_view item =
          absl::StripAsciiWhitespace(text.substr(start, *at - start));
      if (!item.empty()) items.emplace_back(item);
      start = *at + 1;
      if (c == ']') {
        ++*at;
        return items;
      }
    }
  }
  return std::nullopt;
}

// The sizes and strides of annotation `text` ("f32[s0, 16][16, 1]cpu"), or
// nullopt for anything else ("Sym(s0)", "-").
std::optional<AnnotatedDims> ParseDims(absl::string_view text) {
  size_t at = text.find('[');
  if (at == absl::string_view::npos) return std::nullopt;
  std::optional<std::vector<std::string>> sizes = BracketList(text, &at);
  std::optional<std::vector<std::string>> strides = BracketList(text, &at);
  if (!sizes || !strides || sizes->size() != strides->size()) {
    return std::nullopt;
  }
  return AnnotatedDims{*std::move(sizes), *std::move(strides)};
}

bool IsSymbol(absl::string_view e) {
  if (e.empty() || !(absl::ascii_isalpha(e[0]) || e[0] == '_')) return false;
  return std::all_of(e.begin(), e.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// Reads the integer expressions annotations write, as PyTorch prints them
// ("s7**2*s96", "s1*s2 + 3", "(s0//2)", "Max(1, s0)"): sums, products,
// floor divisions and nonnegative integer powers of integers, symbols,
// parenthesized expressions and Max/Min; nullopt for anything else (an
// unknown symbol or function, a division by zero, an overflow).
class Evaluator {
 public:
  Evaluator(absl::string_view text, const SymbolValues& values)
      : text_(text), values_(values) {}

  // The whole text as one expression.
  std::optional<int64_t> All() {
    std::optional<int64_t> v = Sum();
    Skip();
    if (!v || at_ != text_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  bool Take(absl::string_view token) {
    Skip();
    if (absl::StartsWith(text_.substr(at_), token)) {
      at_ += token.size();
      return true;
    }
    return false;
  }
  // Whether a lone '*' (a product, not a power) comes next.
  bool TakeTimes() {
    Skip();
    if (at_ < text_.size() && text_[at_] == '*' &&
        !absl::StartsWith(text_.substr(at_), "**")) {
      ++at_;
      return true;
    }
    return false;
  }
  std::optional<int64_t> Sum() {
    int64_t sign = Take("-") ? -1 : 1;
    std::optional<int64_t> total = Product();
    if (!total || __builtin_mul_overflow(*total, sign, &*total)) {
      return std::nullopt;
    }
    while (true) {
      if (Take("+")) {
        sign = 1;
      } else if (Take("-")) {
        sign = -1;
      } else {
        return total;
      }
      std::optional<int64_t> term = Product();
      if (!term || __builtin_mul_overflow(*term, sign, &*term) ||
          __builtin_add_overflow(*total, *term, &*total)) {
        return std::nullopt;
      }
    }
  }
  std::optional<int64_t> Product() {
    std::optional<int64_t> total = Power();
    while (total) {
      if (Take("//")) {
        std::optional<int64_t> d = Power();
        if (!d || *d == 0 || (*total == INT64_MIN && *d == -1)) {
          return std::nullopt;
        }
        int64_t q = *total / *d;
        if ((*total % *d != 0) && ((*total < 0) != (*d < 0))) --q;  // floor
        total = q;
      } else if (TakeTimes()) {
        std::optional<int64_t> f = Power();
        if (!f || __builtin_mul_overflow(*total, *f, &*total)) {
          return std::nullopt;
        }
      } else {
        break;
      }
    }
    return total;
  }
  std::optional<int64_t> Power() {
    std::optional<int64_t> base = Primary();
    if (!base || !Take("**")) return base;
    std::optional<int64_t> exponent = Primary();
    if (!exponent || *exponent < 0 || *exponent > 64) return std::nullopt;
    int64_t v = 1;
    for (int64_t i = 0; i < *exponent; ++i) {
      if (__builtin_mul_overflow(v, *base, &v)) return std::nullopt;
    }
    return v;
  }
  std::optional<int64_t> Primary() {
    if (Take("(")) {
      std::optional<int64_t> v = Sum();
      if (!v || !Take(")")) return std::nullopt;
      return v;
    }
    Skip();
    size_t start = at_;
    while (at_ < text_.size() &&
           (absl::ascii_isalnum(text_[at_]) || text_[at_] == '_')) {
      ++at_;
    }
    absl::string_view word = text_.substr(start, at_ - start);
    if ((word == "Max" || word == "Min") && Take("(")) {
      std::optional<int64_t> v = Sum();
      while (v && Take(",")) {
        std::optional<int64_t> w = Sum();
        if (!w) return std::nullopt;
        v = word == "Max" ? std::max(*v, *w) : std::min(*v, *w);
      }
      if (!v || !Take(")")) return std::nullopt;
      return v;
    }
    int64_t v = 0;
    if (!word.empty() && absl::ascii_isdigit(word[0])) {
      if (absl::SimpleAtoi(word, &v)) return v;
      return std::nullopt;
    }
    if (!IsSymbol(word)) return std::nullopt;
    auto it = values_.find(std::string(word));
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  absl::string_view text_;
  const SymbolValues& values_;
  size_t at_ = 0;
};

std::optional<int64_t> Evaluate(absl::string_view e,
                                const SymbolValues& values) {
  return Evaluator(e, values).All();
}

// `t` (argument `name`, annotated `annotation`) laid out as the annotation
// says, its symbols at `values`; `t` itself where the annotation's sizes
// are not its own or a stride cannot be evaluated (the call checks it).
absl::StatusOr<Tensor> InAnnotatedLayout(const std::string& name,
                                         absl::string_view annotation,
                                         const Tensor& t,
                                         const SymbolValues& values) {
  std::optional<AnnotatedDims> dims = ParseDims(annotation);
  if (!dims || static_cast<int64_t>(dims->sizes.size()) != t.dim()) return t;
  std::vector<int64_t> strides(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    std::optional<int64_t> size = Evaluate(dims->sizes[d], values);
    std::optional<int64_t> stride = Evaluate(dims->strides[d], values);
    if (!size || *size != t.sizes()[d] || !stride) return t;
    strides[d] = *stride;
  }
  return LaidOut(t, strides, 0, name, annotation);
}

// Each bare symbol of the plain tensor arguments' annotations bound to the
// size or stride `inputs` give it (the first one, in argument order).
SymbolValues BindSymbols(
    const Manifest& m, const absl::flat_hash_map<std::string, Tensor>& inputs) {
  SymbolValues values;
  for (size_t k = 0; k < m.arguments.size() && k < m.annotations.size(); ++k) {
    if (m.arguments[k].kind != ArgumentSpec::Kind::kTensor) continue;
    auto it = inputs.find(InputName(m.arguments[k]));
    std::optional<AnnotatedDims> dims = ParseDims(m.annotations[k]);
    if (it == inputs.end() || !dims ||
        static_cast<int64_t>(dims->sizes.size()) != it->second.dim()) {
      continue;
    }
    const Tensor& t = it->second;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (IsSymbol(dims->sizes[d]))
        values.emplace(dims->sizes[d], t.sizes()[d]);
      if (IsSymbol(dims->strides[d])) {
        values.emplace(dims->strides[d], t.strides()[d]);
      }
    }
  }
  return values;
}

absl::StatusOr<Tensor> Find(
    const absl::flat_hash_map<std::string, Tensor>& inputs,
    const std::string& name) {
  auto it = inputs.find(name);
  if (it == inputs.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing input '", name, "'"));
  }
  return it->second;
}

// A number argument from its 0-d tensor.
absl::StatusOr<Operand> Number(const Tensor& t, const std::string& name,
                               ArgumentSpec::Kind kind) {
  if (t.dim() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", name, "' is a scalar and needs a 0-d tensor, got ",
        t.ToString()));
  }
  if (kind == ArgumentSpec::Kind::kFloat) {
    return Operand::Float(t.GetDouble({}));
  }
  if (kind == ArgumentSpec::Kind::kBool) {
    return Operand::Bool(t.GetDouble({}) != 0);  // 0.5: true, as bool(0.5)
  }
  return Operand::Int(t.GetInt({}));
}

std::string InnerName(const std::string& outer, const CompositeType& type,
                      size_t k) {
  return absl::StrCat(outer, "_", type.inner_names()[k]);
}

// The composite `name` of tree `s` from its inner tensors in `inputs`.
absl::StatusOr<Operand> ComposeTree(
    const CompositeLayout& s, const std::string& name,
    const absl::flat_hash_map<std::string, Tensor>& inputs) {
  std::vector<Operand> inner;
  for (size_t k = 0; k < s.inner.size(); ++k) {
    const CompositeLayout& in = s.inner[k];
    std::string n = InnerName(name, *s.type, k);
    if (!in.is_plain()) {
      ASSIGN_OR_RETURN(Operand o, ComposeTree(in, n, inputs));
      inner.push_back(std::move(o));
      continue;
    }
    ASSIGN_OR_RETURN(Tensor t, Find(inputs, n));
    if (in.rank >= 0 && t.dim() != in.rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", n, "': inner '", s.type->inner_names()[k],
                       "' of the ", s.type->name(), " '", name, "' has rank ",
                       in.rank, ", got ", t.ToString()));
    }
    inner.push_back(Operand::Of(std::move(t)));
  }
  return Compose(*s.type, name, std::move(inner));
}

void Leaves(const CompositeLayout& s, const std::string& name,
            std::vector<std::string>* out) {
  if (s.is_plain()) {
    out->push_back(name);
    return;
  }
  for (size_t k = 0; k < s.inner.size(); ++k) {
    Leaves(s.inner[k], InnerName(name, *s.type, k), out);
  }
}

}  // namespace

std::string InputName(const ArgumentSpec& a) {
  return std::string(absl::StripPrefix(a.name, "self."));
}

absl::StatusOr<CompositeLayout> ArgumentTree(const Manifest& m, int k) {
  const ArgumentSpec& a = m.arguments.at(k);
  if (a.kind != ArgumentSpec::Kind::kComposite) {
    return CompositeLayout::Plain(a.kind == ArgumentSpec::Kind::kTensor ? a.rank
                                                                        : 0);
  }
  if (auto it = m.composites.find(k); it != m.composites.end()) {
    return it->second;  // Manifest::Parse checked its types
  }
  // A manifest from before the trees: its type over plain tensors.
  const CompositeType* type = FindCompositeType(a.type);
  if (type == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("argument '", a.name, "': composite type '", a.type,
                     "' is not registered in this program"));
  }
  return CompositeLayout::Of(
      type, std::vector<CompositeLayout>(type->inner_names().size(),
                                         CompositeLayout::Plain()));
}

absl::StatusOr<std::vector<std::string>> InputNames(const Manifest& m) {
  std::vector<std::string> names;
  for (size_t k = 0; k < m.arguments.size(); ++k) {
    if (m.arguments[k].kind == ArgumentSpec::Kind::kNone) continue;
    ASSIGN_OR_RETURN(CompositeLayout s, ArgumentTree(m, static_cast<int>(k)));
    Leaves(s, InputName(m.arguments[k]), &names);
  }
  return names;
}

absl::StatusOr<std::vector<Operand>> ArrangeArguments(
    const Manifest& m, const absl::flat_hash_map<std::string, Tensor>& inputs) {
  SymbolValues values = BindSymbols(m, inputs);
  std::vector<Operand> args;
  for (size_t k = 0; k < m.arguments.size(); ++k) {
    const ArgumentSpec& spec = m.arguments[k];
    const std::string name = InputName(spec);
    Operand o;
    switch (spec.kind) {
      case ArgumentSpec::Kind::kNone:
        break;
      case ArgumentSpec::Kind::kTensor: {
        ASSIGN_OR_RETURN(Tensor t, Find(inputs, name));
        if (k < m.annotations.size() && t.dtype() == spec.dtype) {
          ASSIGN_OR_RETURN(
              t, InAnnotatedLayout(name, m.annotations[k], t, values));
        }
        o = Operand::Of(std::move(t));
        break;
      }
      case ArgumentSpec::Kind::kInt:
      case ArgumentSpec::Kind::kFloat:
      case ArgumentSpec::Kind::kBool: {
        ASSIGN_OR_RETURN(Tensor t, Find(inputs, name));
        ASSIGN_OR_RETURN(o, Number(t, name, spec.kind));
        break;
      }
      case ArgumentSpec::Kind::kComposite: {
        ASSIGN_OR_RETURN(CompositeLayout s,
                         ArgumentTree(m, static_cast<int>(k)));
        ASSIGN_OR_RETURN(o, ComposeTree(s, name, inputs));
        break;
      }
    }
    RETURN_IF_ERROR(CheckArgument(static_cast<int>(k), spec, o));
    args.push_back(std::move(o));
  }
  return args;
}

absl::StatusOr<Operand> Compose(const CompositeType& type,
                                absl::string_view name,
                                std::vector<Operand> inner) {
  // The outer sizes and strides are the first inner value's.
  std::vector<int64_t> sizes, strides;
  if (!inner.empty()) {
    sizes.assign(OuterSizes(inner[0]).begin(), OuterSizes(inner[0]).end());
    strides.assign(OuterStrides(inner[0]).begin(),
                   OuterStrides(inner[0]).end());
  }
  absl::StatusOr<Operand> made =
      type.Unflatten(absl::MakeSpan(inner), sizes, strides);
  if (!made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "': ", made.status().message()));
  }
  return made;
}

absl::StatusOr<Tensor> LaidOut(const Tensor& t,
                               absl::Span<const int64_t> strides,
                               int64_t offset, absl::string_view name,
                               absl::string_view layout) {
  if (t.strides() == strides && t.storage_offset() == offset) return t;
  // Only a layout whose elements do not overlap can hold any value: from
  // the fastest dim out, each stride must pass the farthest element the
  // faster dims reach.
  std::vector<int64_t> order(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) order[d] = d;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t reach = 0;
  bool empty = false;
  for (int64_t d : order) {
    if (t.sizes()[d] == 0) empty = true;
    if (t.sizes()[d] < 2) continue;
    int64_t span;
    if (strides[d] <= reach) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "': the graph was compiled for the layout ", layout,
          ", whose elements overlap; no tensor can be laid out that way"));
    }
    if (__builtin_mul_overflow(strides[d], t.sizes()[d] - 1, &span) ||
        __builtin_add_overflow(reach, span, &reach)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "': layout too large"));
    }
  }
  if (offset < 0) return t;
  int64_t elements = empty ? 0 : offset + reach + 1;
  ASSIGN_OR_RETURN(Tensor base, Tensor::Empty({elements}, t.dtype()));
  ASSIGN_OR_RETURN(Tensor out, base.AsStrided(t.sizes(), strides, offset));
  RETURN_IF_ERROR(CopyTensor(out, t));
  return out;
}

}  // namespace lathe
