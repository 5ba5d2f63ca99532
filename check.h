// -----------------------------------------------------------------------------
// File: check.h
// -----------------------------------------------------------------------------
//
// LATHE_CHECK: aborts with file, line and message when an internal invariant
// does not hold. Abseil 20220623 has no CHECK (absl/log came later). Use it
// for programming errors only; bad input is an absl::Status.
//
// Example:
//
//   LATHE_CHECK(index < size) << "index " << index << " out of " << size;

#ifndef LATHE_CHECK_H_
#define LATHE_CHECK_H_

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace lathe::check_internal {

// Collects the message of a failed check and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": LATHE_CHECK failed: " << condition
            << " ";
  }
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace lathe::check_internal

// LATHE_CHECK()
//
// Aborts, printing the condition and anything streamed into it, when
// `condition` is false.
#define LATHE_CHECK(condition)                                              \
  for (bool lathe_check_ok = static_cast<bool>(condition); !lathe_check_ok; \
       lathe_check_ok = true)                                               \
  ::lathe::check_internal::CheckFailure(__FILE__, __LINE__, #condition).stream()

#endif  // LATHE_CHECK_H_
