#include "parse_dims.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "status_macros.h"

namespace consumer {
namespace {

absl::StatusOr<int64_t> ParseDim(absl::string_view part, int index) {
  int64_t dim = 0;
  if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dim ", index, ": expected a non-negative integer, got '", part, "'"));
  }
  return dim;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseDims(absl::string_view text) {
  std::vector<int64_t> dims;
  int index = 0;
  for (absl::string_view part : absl::StrSplit(text, 'x')) {
    ASSIGN_OR_RETURN(int64_t dim, ParseDim(part, index++));
    dims.push_back(dim);
  }
  return dims;
}

absl::StatusOr<int64_t> Numel(absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ParseDims(text));
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  return numel;
}

}  // namespace consumer
