#include "testing/sample.h"

#include <cstdlib>

#include "absl/strings/numbers.h"

namespace lathe::testing {

int SampleStride() {
  const char* v = std::getenv("LATHE_TEST_SAMPLE");
  int n = 1;
  if (v == nullptr || !absl::SimpleAtoi(v, &n) || n < 1) return 1;
  return n;
}

bool InSample(size_t i) { return i % SampleStride() == 0; }

bool InChunk(size_t i, int chunk, int chunks) {
  return static_cast<int>(i % chunks) == chunk && InSample(i / chunks);
}

}  // namespace lathe::testing
