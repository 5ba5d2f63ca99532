// A consumer's small library built on lathe's status macros: parses a shape
// such as "2x3x4" into its dims.
#ifndef CONSUMER_EXAMPLE_PARSE_DIMS_H_
#define CONSUMER_EXAMPLE_PARSE_DIMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace consumer {

// ParseDims()
//
// "2x3x4" -> {2, 3, 4}; an error naming the bad part otherwise.
absl::StatusOr<std::vector<int64_t>> ParseDims(absl::string_view text);

// Numel()
//
// The element count of the shape in `text`.
absl::StatusOr<int64_t> Numel(absl::string_view text);

}  // namespace consumer

#endif  // CONSUMER_EXAMPLE_PARSE_DIMS_H_
