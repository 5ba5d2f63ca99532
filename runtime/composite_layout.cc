#include "runtime/composite_layout.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "status_macros.h"

namespace lathe {
namespace {

// The most nested composites a layout's text may have.
constexpr int kMaxDepth = 16;

// Parses one layout at `*at` of `text`.
absl::StatusOr<CompositeLayout> ParseAt(absl::string_view text, size_t* at,
                                        int depth) {
  auto error = [&](absl::string_view expected, size_t where) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout '", text, "': expected ", expected,
                     " at character ", where + 1));
  };
  if (depth > kMaxDepth) return error("fewer nested composites", *at);
  size_t start = *at;
  while (*at < text.size() && text[*at] >= '0' && text[*at] <= '9') ++*at;
  if (*at > start) {
    int rank = 0;
    if (*at - start > 2 ||
        !absl::SimpleAtoi(text.substr(start, *at - start), &rank)) {
      return error("a rank below 100", start);
    }
    return CompositeLayout::Plain(rank);
  }
  while (*at < text.size() &&
         (absl::ascii_isalnum(text[*at]) || text[*at] == '_')) {
    ++*at;
  }
  if (*at == start) return error("a rank or a composite type", start);
  absl::string_view name = text.substr(start, *at - start);
  const CompositeType* type = FindCompositeType(name);
  if (type == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("layout '", text, "': composite type '", name,
                     "' is not registered in this program"));
  }
  if (*at >= text.size() || text[*at] != '(') return error("'('", *at);
  ++*at;
  std::vector<CompositeLayout> inner;
  while (true) {
    ASSIGN_OR_RETURN(CompositeLayout in, ParseAt(text, at, depth + 1));
    inner.push_back(std::move(in));
    if (*at < text.size() && text[*at] == ',') {
      ++*at;
      continue;
    }
    if (*at < text.size() && text[*at] == ')') break;
    return error("',' or ')'", *at);
  }
  if (inner.size() != type->inner_names().size()) {
    return error(absl::StrCat(type->inner_names().size(), " inner values of ",
                              name, " before ')'"),
                 *at);
  }
  ++*at;
  CompositeLayout l = CompositeLayout::Of(type, std::move(inner));
  l.rank = l.inner[0].rank;
  return l;
}

}  // namespace

bool CompositeLayout::Complete() const {
  if (type == nullptr) return rank >= 0;
  if (inner.empty() || inner.size() != type->inner_names().size()) {
    return false;
  }
  for (const CompositeLayout& l : inner) {
    if (!l.Complete()) return false;
  }
  return true;
}

int CompositeLayout::Slots(bool argument) const {
  if (type == nullptr) return 1;
  if (argument && frozen) return 1;
  int n = 0;
  for (const CompositeLayout& l : inner) n += l.Slots(argument);
  if (argument) {
    n += static_cast<int>(symbolic_sizes.size() + symbolic_strides.size());
  }
  return n;
}

std::string CompositeLayout::ToString() const {
  if (type == nullptr) return rank < 0 ? "?" : absl::StrCat(rank);
  return absl::StrCat(
      type->name(), "(",
      absl::StrJoin(inner, ",",
                    [](std::string* out, const CompositeLayout& l) {
                      out->append(l.ToString());
                    }),
      ")");
}

absl::StatusOr<CompositeLayout> CompositeLayout::Parse(absl::string_view text) {
  size_t at = 0;
  ASSIGN_OR_RETURN(CompositeLayout l, ParseAt(text, &at, 0));
  if (at != text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout '", text, "': expected the end at character ", at + 1));
  }
  return l;
}

}  // namespace lathe
