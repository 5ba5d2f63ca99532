// -----------------------------------------------------------------------------
// File: sample.h
// -----------------------------------------------------------------------------
//
// Which cases of a big corpus a test run covers. The plain test pass runs
// every case; the sanitizer pass (--config=sanitizers sets
// LATHE_TEST_SAMPLE=N in .bazelrc) runs a fixed sample, every Nth case in
// the corpus's own order, so its time does not grow with the corpus. A
// corpus split into chunks (one gtest case each, so Bazel's shards spread
// them) takes its cases round-robin.
//
// Example:
//
//   for (size_t i = 0; i < cases.size(); ++i) {
//     if (!lathe::testing::InChunk(i, chunk, kChunks)) continue;
//     ...
//   }

#ifndef LATHE_TESTING_SAMPLE_H_
#define LATHE_TESTING_SAMPLE_H_

#include <cstddef>

namespace lathe::testing {

// LATHE_TEST_SAMPLE when it is a number >= 1, else 1 (every case).
int SampleStride();

// Whether case `i` (0-based, in a fixed order) is in the sample.
bool InSample(size_t i);

// Whether case `i` belongs to chunk `chunk` of `chunks` (round-robin) and
// is in the sample (every SampleStride()th case of the chunk).
bool InChunk(size_t i, int chunk, int chunks);

}  // namespace lathe::testing

#endif  // LATHE_TESTING_SAMPLE_H_
