// -----------------------------------------------------------------------------
// File: status_macros.h
// -----------------------------------------------------------------------------
//
// Early-return macros for absl::Status and absl::StatusOr. Abseil 20220623
// (Debian bookworm's libabsl-dev) predates absl/status/status_macros.h, so
// lathe keeps these two in one place, as XLA keeps its own.
//
// Example:
//
//   absl::StatusOr<Graph> Load(std::string_view path) {
//     ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     ASSIGN_OR_RETURN(auto graph, ParseGraph(text));
//     RETURN_IF_ERROR(Verify(graph));
//     return graph;
//   }
//
// Both work in any function whose return type is constructible from an
// absl::Status (Status itself, StatusOr<T>).

#ifndef LATHE_STATUS_MACROS_H_
#define LATHE_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lathe::status_macros_internal {

// AsStatus()
//
// The status of a Status or a StatusOr, so RETURN_IF_ERROR takes either.
inline const absl::Status& AsStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace lathe::status_macros_internal

// RETURN_IF_ERROR()
//
// Evaluates `expr` (an absl::Status or absl::StatusOr) once; if it is not OK,
// returns its status from the enclosing function.
#define RETURN_IF_ERROR(expr)                                  \
  do {                                                         \
    const auto& lathe_status_macros_value = (expr);            \
    if (ABSL_PREDICT_FALSE(!lathe_status_macros_value.ok())) { \
      return ::lathe::status_macros_internal::AsStatus(        \
          lathe_status_macros_value);                          \
    }                                                          \
  } while (false)

// ASSIGN_OR_RETURN()
//
// Evaluates `rexpr` (an absl::StatusOr<T>) once; if it is not OK, returns its
// status from the enclosing function, otherwise moves its value into `lhs`.
// `lhs` may declare a variable (`auto x`, `std::unique_ptr<T> p`) or name an
// existing one. A type with a comma in it (`std::pair<int, int> p`) needs a
// `using` alias first. Not for use as the sole statement of an unbraced if.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                     \
  LATHE_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(                             \
      LATHE_STATUS_MACROS_CONCAT(lathe_status_or_value_, __LINE__), lhs, \
      rexpr)

#define LATHE_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                              \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                             \
    return std::move(statusor).status();                                \
  }                                                                     \
  lhs = *std::move(statusor)

#define LATHE_STATUS_MACROS_CONCAT_INNER(x, y) x##y
#define LATHE_STATUS_MACROS_CONCAT(x, y) LATHE_STATUS_MACROS_CONCAT_INNER(x, y)

#endif  // LATHE_STATUS_MACROS_H_
